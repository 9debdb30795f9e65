"""Which reader serves each split of a planned read: Spark's own file readers (the JVM) or our Python source.

``Scan.to_spark`` reads one plan (``datasource.jobs.prepare_read``) through two readers. A split whose files
can be returned exactly as stored -- no merge, no retraction to drop, deletion vectors only on Parquet files
(Spark's ``_metadata.row_index`` finds the deleted positions), columns that map onto the read schema by rename,
lossless widening or NULL, no VARIANT column -- goes to Spark's built-in Parquet/ORC reader,
which runs in the JVM with pushdown and column pruning. Every other split goes to the ``paimon`` Python source,
which merges. The decision is a pure function of the plan (never of a projection or a pushed filter), so the
Python half, planned again from the same snapshot, keeps exactly the splits this module left to it
(:func:`split_key`, the ``pyspark-paimon.only-splits`` read option).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from pyspark_paimon.datasource.read.file_read import format_of
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled, has_tracking_columns
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    RowType,
    iter_fields,
)
from pyspark_paimon.planner.explain import ReaderReport
from pyspark_paimon.planner.read_plan import PlannedRead
from pyspark_paimon.planner.split import DataSplit

# File formats Spark reads without a plugin.
JVM_FORMATS = ("parquet", "orc")
# Read kinds whose merge-free splits' files hold the rows as the read returns them (chain splits relabel their
# partition columns, which the JVM half does with literals; incremental reads compare versions).
_JVM_KINDS = ("plain", "fallback", "chain")
# Partition column types whose values the JVM half writes as SQL literals (a relabelled chain partition).
_LITERAL_TYPES = ("BOOLEAN", *("TINYINT", "SMALLINT", "INT", "BIGINT"), "DECIMAL", "CHAR", "VARCHAR", "DATE")
_INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_WIDTH = {"TINYINT": 1, "SMALLINT": 2, "INT": 3, "BIGINT": 4}
_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
# Timestamps above microsecond precision may be stored as nanoseconds, which Spark's readers refuse.
_MAX_TIMESTAMP_PRECISION = 6


@dataclass
class Routing:
    """The splits of one plan by reader, and why the Python ones could not go to the JVM."""

    jvm: list[DataSplit] = field(default_factory=list)
    python: list[DataSplit] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)  # reason -> Python splits

    def summary(self) -> str:
        files = sum(len(s.files) for s in self.jvm)
        return f"jvm: {files} files, python: {len(self.python)} splits"

    def explain(self) -> ReaderReport:
        return ReaderReport(
            summary=self.summary(),
            jvm_files=sum(len(s.files) for s in self.jvm),
            jvm_splits=len(self.jvm),
            python_splits=len(self.python),
            python_reasons=dict(sorted(self.reasons.items())),
        )


def split_key(split: DataSplit, primary: bool) -> str:
    """A split's identity within one snapshot, whatever else prunes the plan: its bucket (primary-key buckets are
    read whole) and, for append splits (one file each), the file."""
    head = f"{split.partition.hex()}/{split.bucket}"
    return head if primary else f"{head}/{split.files[0].file_name}"


def route(planned: PlannedRead, ctx: ReadContext) -> Routing:
    """Send each split of ``planned`` to the JVM readers or to the Python source (see the module docstring)."""
    return route_splits(planned.kind, planned.schema, ctx, planned.plan.splits)


def route_splits(kind: str, schema: TableSchema, ctx: ReadContext, splits: Sequence[DataSplit]) -> Routing:
    """:func:`route` for splits of a read of ``kind`` under ``schema`` that no batch plan holds (a micro-batch's
    splits: :mod:`pyspark_paimon.datasource.stream.stream_frames`)."""
    out = Routing()
    whole = _whole_read_reason(kind, schema)
    primary = bool(schema.primary_keys)
    reasons = [whole or _split_reason(schema, ctx, split) for split in splits]
    # The Python half keeps splits by key; a key cut into several splits (chain key ranges) goes one way only.
    python_keys = {split_key(s, primary) for s, r in zip(splits, reasons) if r is not None}
    for split, reason in zip(splits, reasons):
        if reason is None and split_key(split, primary) in python_keys:
            reason = "bucket shared with a merged split"
        if reason is None:
            out.jvm.append(split)
        else:
            out.python.append(split)
            out.reasons[reason] = out.reasons.get(reason, 0) + 1
    return out


def _whole_read_reason(kind: str, schema: TableSchema) -> str | None:
    if kind not in _JVM_KINDS:
        return f"{kind} read"
    if has_tracking_columns(schema):
        return "row-tracking columns"  # computed from each file's first row id, which Spark's readers do not know
    if data_evolution_enabled(schema.options):
        return "data-evolution table"  # rows assembled from several files by row id
    for f in schema.fields:
        if any(x.type.root == "VARIANT" for x in iter_fields([f])):
            # Shredded VARIANT files need rebuilding (``metadata/variant``), which Spark's Parquet reader may not do.
            return f"VARIANT column '{f.name}'"
        if not isinstance(f.type, AtomicType) and (not f.type.nullable or _has_required_part(f.type)):
            # Spark's file readers make every nested part nullable; the union must keep the table's schema.
            return f"NOT NULL part inside nested column '{f.name}'"
    return None


def _has_required_part(t: DataType) -> bool:
    if isinstance(t, ArrayType):
        return not t.element.nullable or _has_required_part(t.element)
    if isinstance(t, MapType):
        return not t.value.nullable or _has_required_part(t.key) or _has_required_part(t.value)
    if isinstance(t, RowType):
        return any(not f.type.nullable or _has_required_part(f.type) for f in t.fields)
    return False


def _split_reason(schema: TableSchema, ctx: ReadContext, split: DataSplit) -> str | None:
    if split.relabel_partition:
        for name in schema.partition_keys:
            t = schema.field(name).type
            if not (isinstance(t, AtomicType) and t.root in _LITERAL_TYPES):
                return f"relabelled {t.root if isinstance(t, AtomicType) else 'nested'} partition"
    if not split.raw_convertible:
        return "merge needed"
    primary = bool(schema.primary_keys)
    options = ctx.core_options()
    for f in split.files:
        vector = f.file_name in split.deletion_files
        if primary and f.delete_row_count != 0:  # unknown (None) counts as some: row kinds would be needed
            return "retractions"
        if format_of(f, options) not in JVM_FORMATS:
            return f"{format_of(f, options)} files"
        if vector and format_of(f, options) != "parquet":
            return "deletion vectors on ORC files"  # Spark's row_index is a Parquet feature
        reason = _evolution_reason(schema, ctx.file_schema(split, f))
        if reason is not None:
            return reason
    return None


def _evolution_reason(read: TableSchema, written: TableSchema) -> str | None:
    """Why a file written under ``written`` cannot be mapped onto ``read`` by select/alias/cast, or None."""
    by_id = {x.id: x for x in written.fields}
    stored = 0
    for target in read.fields:
        source = by_id.get(target.id)
        if source is None:
            continue  # an added column: NULL
        stored += 1
        if not _castable(source, target):
            return f"column '{target.name}' changed type"
    return None if stored else "no stored column"


def _castable(source: DataField, target: DataField) -> bool:
    """Whether Spark's cast of ``source``'s values gives what our reader's Arrow cast gives: the same type,
    or a lossless widening."""
    s, t = source.type.copy(nullable=True), target.type.copy(nullable=True)
    if isinstance(s, AtomicType) and isinstance(t, AtomicType):
        return _atomic_castable(s, t)
    return s == t and not _has_wide_timestamp(t)


def _has_wide_timestamp(t: DataType) -> bool:
    if isinstance(t, AtomicType):
        return t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) > _MAX_TIMESTAMP_PRECISION
    if isinstance(t, ArrayType):
        return _has_wide_timestamp(t.element)
    if isinstance(t, MapType):
        return _has_wide_timestamp(t.key) or _has_wide_timestamp(t.value)
    if isinstance(t, RowType):
        return any(_has_wide_timestamp(x.type) for x in t.fields)
    return False


def _atomic_castable(s: AtomicType, t: AtomicType) -> bool:
    if _has_wide_timestamp(s) or _has_wide_timestamp(t):
        return False
    if s.root in ("TIMESTAMP", "TIMESTAMP_LTZ") or t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        # A larger precision only changes the stored unit (Spark reads microseconds); a smaller one cuts the stored
        # digits, which the Python reader does (as Java's cast) and Spark's would not.
        assert s.precision is not None and t.precision is not None
        return s.root == t.root and t.precision >= min(s.precision, _MAX_TIMESTAMP_PRECISION)
    if s.root in ("CHAR", "VARCHAR") and t.root in ("CHAR", "VARCHAR"):
        return True
    if s.root in ("BINARY", "VARBINARY") and t.root in ("BINARY", "VARBINARY"):
        return True
    if s.root == t.root and s.root != "DECIMAL":
        return True
    if s.root in _INTEGRAL and t.root in _INTEGRAL:
        return _WIDTH[s.root] <= _WIDTH[t.root]
    if s.root in _INTEGRAL and t.root == "DECIMAL":
        assert t.precision is not None and t.scale is not None
        return t.precision - t.scale >= _DIGITS[s.root]
    if s.root == "DECIMAL" and t.root == "DECIMAL":
        assert s.precision is not None and s.scale is not None and t.precision is not None and t.scale is not None
        return t.scale >= s.scale and t.precision - t.scale >= s.precision - s.scale
    if s.root == "FLOAT" and t.root == "DOUBLE":
        return True
    if s.root in ("TINYINT", "SMALLINT", "INT") and t.root == "DOUBLE":
        return True
    return False


__all__ = ["JVM_FORMATS", "Routing", "route", "route_splits", "split_key"]
