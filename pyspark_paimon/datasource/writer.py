"""Spark writer: executors write data files, the driver commits once.

``writer()`` runs on the driver: it creates the table when it does not exist (Python sources cannot
receive ``partitionBy``, so keys and table options come from write options), checks the DataFrame's schema
against the table's, and captures what executors need (sequence-number bases per bucket). ``write()`` runs
per Spark partition and returns the files it wrote; ``commit()`` makes them one snapshot.

Failure handling follows Spark's protocol: ``abort()`` receives the messages of successful tasks. It deletes
their files only after checking that no snapshot of this job exists, because ``abort`` also runs when
``commit`` raised, possibly after the snapshot landed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from pyspark_paimon.datasource.jobs import WriteJob, overwrite_spec, parse_partition_spec, prepare_write
from pyspark_paimon.datasource.source import TableRef
from pyspark_paimon.datasource.spark_types import from_spark_type, to_spark_type
from pyspark_paimon.errors import OptionError, SchemaMismatchError, TableNotFoundError
from pyspark_paimon.metadata.commit import CommitMessage
from pyspark_paimon.metadata.options import validate_table_options
from pyspark_paimon.metadata.schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshot import MAIN_BRANCH

log = logging.getLogger(__name__)

# Write options that are not table options.
WRITE_KEYS = {"path", "paths", "warehouse", "branch", "partitionoverwritemode", "overwrite-partition",
              "primary-key", "partition", "comment"}


@dataclass
class PaimonCommitMessage(WriterCommitMessage):
    messages: tuple[CommitMessage, ...]


def _table_options(options: dict[str, str]) -> dict[str, str]:
    """Write options that configure a new table (everything but the write's own keys and storage ``fs.*``).

    Spark lower-cases option keys; Paimon option keys are lower case already, except per-field options,
    whose column names we restore from the DataFrame schema when the table is created.
    """
    return {k: v for k, v in options.items() if k not in WRITE_KEYS and not k.startswith("fs.")}


def _split_keys(text: str | None) -> list[str]:
    return [k.strip() for k in (text or "").split(",") if k.strip()]


def _restore_case(options: dict[str, str], columns: Sequence[str]) -> dict[str, str]:
    by_lower = {c.lower(): c for c in columns}
    out = {}
    for k, v in options.items():
        if k.startswith("fields."):
            parts = k.split(".")
            if len(parts) >= 3 and parts[1] in by_lower:
                k = ".".join([parts[0], by_lower[parts[1]], *parts[2:]])
        if k in ("sequence.field", "bucket-key", "rowkind.field"):
            v = ",".join(by_lower.get(c.strip().lower(), c.strip()) for c in v.split(","))
        out[k] = v
    return out


def ensure_table(ref: TableRef, schema: StructType) -> TableSchema:
    """The table's latest schema, creating the table from the DataFrame schema and options if needed."""
    store = ref.store()
    existing = store.schemas.latest()
    if existing is not None:
        return existing
    if ref.branch != MAIN_BRANCH:
        store.schema()  # raises BranchNotFoundError / TableNotFoundError with guidance
    if not ref.fileio.exists(ref.path.rsplit("/", 1)[0]):
        ref.fileio.mkdirs(ref.path.rsplit("/", 1)[0])
    columns = [f.name for f in schema.fields]
    by_lower = {c.lower(): c for c in columns}
    pks = [by_lower.get(k.lower(), k) for k in _split_keys(ref.options.get("primary-key"))]
    parts = [by_lower.get(k.lower(), k) for k in _split_keys(ref.options.get("partition"))]
    opts = _restore_case(_table_options(ref.options), columns)
    validate_table_options(opts, creating=True, table=ref.path)
    fields = [(f.name, from_spark_type(f.dataType, f.nullable, f.name)) for f in schema.fields]
    try:
        return SchemaManager(ref.fileio, ref.path).create_table(fields, parts, pks, opts,
                                                                ref.options.get("comment"))
    except Exception:
        latest = store.schemas.latest()  # created concurrently by another writer: use it
        if latest is None:
            raise
        return latest


def check_write_schema(df_schema: StructType, table: TableSchema) -> None:
    """The DataFrame must carry exactly the table's columns (any order) with compatible types."""
    df_cols = {f.name: f for f in df_schema.fields}
    missing = [c for c in table.field_names if c not in df_cols]
    extra = [c for c in df_cols if not table.has_field(c)]
    if missing or extra:
        raise SchemaMismatchError(
            f"The DataFrame's columns do not match the table's. Missing: {missing or 'none'}; not in the table: "
            f"{extra or 'none'}. Table columns: {table.field_names}. Select/rename columns to match, or evolve the "
            "table first (Table.add_column).")
    for f in table.fields:
        want = to_spark_type(f.type, f.name)
        got = df_cols[f.name].dataType
        if want != got and not _castable(got, want):
            raise SchemaMismatchError(
                f"Column '{f.name}' is {got.simpleString()} in the DataFrame but {want.simpleString()} in the table. "
                f"Cast it first, e.g. df.withColumn('{f.name}', col('{f.name}').cast('{want.simpleString()}')).")


def _castable(got, want) -> bool:  # type: ignore[no-untyped-def]
    """Widening casts Spark users expect to just work (int literal into a bigint column and the like)."""
    from pyspark.sql import types as T  # noqa: PLC0415

    ints = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
    if isinstance(want, ints) and isinstance(got, ints):
        order = {T.ByteType: 0, T.ShortType: 1, T.IntegerType: 2, T.LongType: 3}
        return order[type(got)] <= order[type(want)]
    if isinstance(want, (T.FloatType, T.DoubleType)) and isinstance(got, (*ints, T.FloatType)):
        return True
    if isinstance(want, T.StringType) and isinstance(got, (T.VarcharType, T.CharType)):
        return True
    if isinstance(want, T.DecimalType) and isinstance(got, T.DecimalType):
        return got.scale <= want.scale and got.precision - got.scale <= want.precision - want.scale
    return False


class PaimonWriter(DataSourceArrowWriter):
    def __init__(self, ref: TableRef, schema: StructType, overwrite: bool):
        self.ref = ref
        table = ensure_table(ref, schema)
        check_write_schema(schema, table)
        mode = ref.options.get("partitionoverwritemode")
        static = ref.options.get("overwrite-partition")
        if not overwrite and (mode or static):
            raise OptionError("'partitionOverwriteMode' and 'overwrite-partition' need .mode('overwrite').")
        if mode and static:
            raise OptionError("Give either 'partitionOverwriteMode' or 'overwrite-partition', not both.")
        spec = overwrite_spec(table, mode.lower() if mode else None,
                              parse_partition_spec(static) if static else None) if overwrite else None
        self.job: WriteJob = prepare_write(ref.store(), spec)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        from pyspark import TaskContext  # noqa: PLC0415

        ctx = TaskContext.get()
        task_id = f"{ctx.partitionId()}-{ctx.attemptNumber()}" if ctx else "0"
        writer = self.job.new_writer(task_id)
        try:
            for batch in iterator:
                writer.write(batch)
            return PaimonCommitMessage(tuple(writer.prepare_commit()))
        except BaseException:
            writer.abort()
            raise

    def commit(self, messages: list[PaimonCommitMessage | None]) -> None:
        flat = [m for msg in messages if msg is not None for m in msg.messages]
        self.job.commit(flat)

    def abort(self, messages: list[PaimonCommitMessage | None]) -> None:
        try:
            if self.job.committed():
                log.warning("abort after a successful commit of %s: keeping the files", self.ref.path)
                return
        except TableNotFoundError:
            return
        for msg in messages:
            if msg is None:
                continue
            for m in msg.messages:
                bucket_dir = self.job.store.bucket_path(self.job.schema, _values(self.job.schema, m.partition),
                                                        m.bucket)
                for f in m.new_files:
                    self.job.store.fileio.delete(f"{bucket_dir}/{f.file_name}")


def _values(schema: TableSchema, partition: bytes) -> tuple:
    from pyspark_paimon.metadata.binary_row import deserialize_row  # noqa: PLC0415

    return tuple(deserialize_row(partition, [f.type for f in schema.partition_fields]))
