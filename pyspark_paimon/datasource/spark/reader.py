"""Spark reader: plan on the driver, read Arrow batches in executors.

Planning (snapshot resolution, pruning, split packing) happens in ``partitions()`` in Spark's planning
worker; each ``InputPartition`` carries a group of splits so the ~30 ms cost of a Python task is paid a few
times, not once per file. It also carries the plan's read context: Spark pickles the reader for the executors
*before* it calls ``partitions()``, so an executor must never plan again (it would resolve a possibly newer
snapshot and schema than the one its splits came from, and re-read every manifest once per task).
Batches are rebuilt to exactly the Arrow schema Spark expects (Spark 4.2+ checks types, time zones and
nullability).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import inspect
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StringType, StructField, StructType

from pyspark_paimon.datasource.jobs import ReadJob, prepare_read, read_planned_split
from pyspark_paimon.datasource.read.read import coalesce_batches
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.spark.types import to_spark_schema
from pyspark_paimon.datasource.stream.stream_jobs import stream_store
from pyspark_paimon.datasource.system_tables import (
    DATA_VIEWS,
    binlog_batch,
    check_system_table,
    read_system_table,
    system_table_fields,
)
from pyspark_paimon.datasource.table_ref import TableRef
from pyspark_paimon.errors import SchemaError
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions, is_stream_read
from pyspark_paimon.planner.read_plan import read_schema
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN, StreamOptions

# Column types whose comparison semantics are identical in Spark and in our evaluation, so a filter on
# them can be applied exactly by us and hidden from Spark. Floats (NaN ordering) and binary are left to Spark.
_EXACT_TYPES = {
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "BOOLEAN",
    "CHAR",
    "VARCHAR",
    "DATE",
    "DECIMAL",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
}
_SIMPLE_OPS = {
    EqualTo: "=",
    EqualNullSafe: "<=>",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}
_COMPARISONS = (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
_TRANSLATED = (*_COMPARISONS, In, IsNull, IsNotNull, StringStartsWith)


# Spark expects TIMESTAMP (LTZ) columns of a read batch in UTC. pyspark 4.1's to_arrow_schema says so with
# `timestamp_utc=True`; 4.2 replaced that flag with `timezone=`, so the keyword is chosen once from the signature.
_UTC_TIMESTAMPS: dict[str, Any] = (
    {"timezone": "UTC"} if "timezone" in inspect.signature(to_arrow_schema).parameters else {"timestamp_utc": True}
)


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The exact Arrow schema Spark expects from ``read()`` for ``schema`` (strictly checked on 4.2+)."""
    return to_arrow_schema(schema, **_UTC_TIMESTAMPS)


def read_options_of(ref: TableRef) -> ReadOptions:
    return ReadOptions.from_options(ref.options)


def spark_schema(ref: TableRef) -> StructType:
    """The Spark schema of a read of ``ref`` (what ``DataSource.schema()`` answers, for batch and stream reads:
    Spark does not say which). Options only a stream takes make it the stream's schema: the latest schema of the
    branch it streams, behind a ``rowkind`` column with ``read.changelog``."""
    if ref.system_table:
        check_system_table(ref.store(), ref.system_table, ref.options)
        return to_spark_schema(system_table_fields(ref.system_table, ref.store(), ref.options))
    if is_stream_read(ref.options):
        opts = StreamOptions.from_options(ref.options)
        fields = to_spark_schema(stream_store(ref.store()).schema().fields).fields
        if opts.changelog:
            fields = [StructField(ROW_KIND_COLUMN, StringType(), True), *fields]
        return StructType(fields)
    return to_spark_schema(read_schema(ref.store(), read_options_of(ref)).fields)


@dataclass(frozen=True)
class PaimonPartition(InputPartition):
    index: int
    splits: tuple[DataSplit, ...]
    context: ReadContext | None = None  # the planned read's context (None only for system tables)


def _leaf(f: Filter, types: dict[str, Any]) -> Leaf | None:
    """Translate one Spark filter into a Leaf, or None when we cannot evaluate it exactly."""
    negated = False
    if isinstance(f, Not):
        inner = _leaf(f.child, types)
        return inner.negate() if inner is not None and not inner.negated else None
    if not isinstance(f, _TRANSLATED):
        return None  # StringEndsWith, StringContains...: left to Spark
    path = f.attribute
    if len(path) != 1 or path[0] not in types:
        return None
    column = path[0]
    t = types[column]
    if not (isinstance(t, AtomicType) and t.root in _EXACT_TYPES):
        return None
    if isinstance(f, IsNull):
        return Leaf(column, "is_null", None, negated)
    if isinstance(f, IsNotNull):
        return Leaf(column, "is_not_null", None, negated)
    if isinstance(f, In):
        values = tuple(f.value)
        if not all(_value_ok(v, t) for v in values if v is not None):
            return None
        return Leaf(column, "in", values, negated)
    if isinstance(f, StringStartsWith):
        return Leaf(column, "starts_with", f.value, negated) if t.root in ("CHAR", "VARCHAR") else None
    assert isinstance(f, _COMPARISONS)
    if not _value_ok(f.value, t):
        return None
    return Leaf(column, _SIMPLE_OPS[type(f)], f.value, negated)


def _value_ok(v: Any, t: AtomicType) -> bool:
    """Only literals whose Python type matches the column's; anything else is left to Spark."""
    root = t.root
    if v is None:
        return True
    if root in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return isinstance(v, int) and not isinstance(v, bool)
    if root == "BOOLEAN":
        return isinstance(v, bool)
    if root in ("CHAR", "VARCHAR"):
        return isinstance(v, str) and root == "VARCHAR"
    if root == "DATE":
        return isinstance(v, _dt.date) and not isinstance(v, _dt.datetime)
    if root == "DECIMAL":
        return isinstance(v, (decimal.Decimal, int)) and not isinstance(v, bool)
    if root == "TIMESTAMP":
        return isinstance(v, _dt.datetime) and v.tzinfo is None
    if root == "TIMESTAMP_LTZ":
        return isinstance(v, _dt.datetime) and v.tzinfo is not None
    return False


class PaimonReader(DataSourceReader):
    """Reads one snapshot of one branch. Everything set here is pickled to the executors."""

    def __init__(self, ref: TableRef, schema: StructType):
        self.ref = ref
        self.opts = read_options_of(ref)
        self.spark_schema = schema
        self.filters: tuple[Leaf, ...] = ()
        self._job: ReadJob | None = None
        # The data views ($audit_log, $binlog, $ro) are planned reads of the table; the other system tables are
        # built from metadata in one task.
        self.view = ref.system_table if ref.system_table in DATA_VIEWS else None
        self.metadata_table = ref.system_table if ref.system_table and self.view is None else None
        if ref.system_table:
            self.table_schema = None
            self.read_fields = None
        else:
            self.table_schema = read_schema(ref.store(), self.opts)
            self.read_fields = self._projection(schema, self.table_schema)

    @staticmethod
    def _projection(schema: StructType, table: TableSchema) -> tuple[str, ...] | None:
        """A user-given schema selects columns (the only column pruning Spark's Python sources allow)."""
        names = [f.name for f in schema.fields]
        if names == table.field_names:
            return None
        for name in names:
            if not table.has_field(name):
                raise SchemaError(
                    f"Column '{name}' of the schema given to spark.read.schema(...) is not in the table "
                    f"{table.field_names}. Give a subset of the table's columns."
                )
        return tuple(names)

    def _plan(self) -> ReadJob:
        if self._job is None:
            self._job = prepare_read(
                self.ref.store(), self.opts, self.filters, self.read_fields, exact_filters=self.filters, view=self.view
            )
        return self._job

    def partitions(self) -> Sequence[InputPartition]:
        if self.metadata_table:
            return [PaimonPartition(0, ())]
        job = self._plan()
        groups = job.groups(self.opts)
        return [PaimonPartition(i, tuple(g), job.context) for i, g in enumerate(groups)] or [
            PaimonPartition(0, (), job.context)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        target = spark_arrow_schema(self.spark_schema)
        ref = self.ref
        if self.metadata_table:
            batches: Iterable[pa.RecordBatch] = read_system_table(
                ref.store(), self.metadata_table, ref.options
            ).to_batches()
        else:
            assert isinstance(partition, PaimonPartition) and partition.context is not None
            ctx = partition.context
            batches = coalesce_batches(
                (batch for split in partition.splits for batch in read_planned_split(ctx, split) if batch.num_rows),
                ctx.batch_size,
            )
        for batch in batches:
            if batch.num_rows:
                yield conform(binlog_batch(batch, target) if self.view == "binlog" else batch, target)


class PaimonPushdownReader(PaimonReader):
    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 (Spark's name)
        """Accept the filters we can apply exactly (pruning + an Arrow residual); return the rest."""
        types = {f.name: f.type for f in self.table_schema.fields} if self.table_schema else {}
        accepted = []
        for f in filters:
            leaf = _leaf(f, types)
            if leaf is None or (self.read_fields is not None and leaf.column not in self.read_fields):
                yield f
            else:
                accepted.append(leaf)
        self.filters = tuple(accepted)
        self._job = None


def conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Rebuild ``batch`` with exactly Spark's expected Arrow schema (names, order, types, nullability)."""
    if batch.schema.equals(target):
        return batch
    arrays = []
    for f in target:
        col = batch.column(f.name)
        if not col.type.equals(f.type):
            col = col.cast(f.type)
        arrays.append(col)
    return pa.RecordBatch.from_arrays(arrays, schema=target)
