"""``Table.write_spark``: a write whose data files Spark's own Parquet writer writes; described and committed here.

The mirror of :mod:`~pyspark_paimon.datasource.read.jvm_read`: the Python Data Source API makes every byte of a
``format("paimon")`` write cross into a Python worker, so this path lets the JVM move the bytes and keeps for itself
what only Paimon knows. Spark writes the DataFrame (its columns cast to the table's types by Spark's CAST, NOT NULL
columns checked, Paimon's field ids in the Parquet schema) into a staging directory under the table, one file per
task and partition (``partitionBy`` on *copies* of the partition columns, so that the files keep the partition
columns, as Paimon's data files do). The driver then reads each file's footer (never its data) for the row count,
the partition values and the column statistics (:data:`~pyspark_paimon.datasource.write.stats.Summarize`, the modes
of the table applied alike), moves the file into its bucket directory under a Paimon file name, numbers each bucket's
sequence numbers as the Python writer does (from the bucket's base, file after file) and commits once through
:meth:`~pyspark_paimon.datasource.jobs.WriteJob.commit`, whose abort deletes the moved files when the commit
certainly did not land. Any failure before the commit deletes the staging directory and whatever was moved.

Why staging, then a move: Spark cannot name its output files, and Paimon's bucket directories (``bucket-0``) are not
Spark partition directories (``k=v``). A move is a rename on a local or HDFS file system, but a copy on an object
store (documented in docs/writing.md).

What this path writes: Parquet append tables, unaware-bucket (``bucket = -1``) or fixed-bucket, and fixed-bucket
primary-key tables (keys of one or more columns, a ``bucket-key`` of some of them or not) with no option that
orders, kinds or indexes versions. A fixed bucket is Paimon's hash of the bucket key, computed in Spark SQL for the
key types :mod:`~pyspark_paimon.datasource.write.bucket_sql` builds BinaryRows of, else by the
:data:`BUCKET_FUNCTION` SQL function (an Arrow UDF that receives only the key columns, registered by
``pyspark_paimon.register``), and becomes one more ``partitionBy`` directory. A primary-key table's rows are sorted
by key within each bucket by Spark, numbered from the bucket's sequence base in key order and led by ``_KEY_<k>``,
``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``. Without partition columns each bucket is one Spark partition
(``repartition`` on a value whose Spark hash lands there), so a row's number is its place in its partition
(``monotonically_increasing_id``): no window. With partition columns a window per partition and bucket numbers the
rows. A key given twice is refused either way (the window fails the Spark job; otherwise the driver finds two equal
neighbours over a file's key columns), as no version is "the last" after a shuffle. The driver reads a primary-key
file's key columns (not its values): its first and last rows are its min and max keys, its key statistics are
theirs. Everything else (dynamic or postpone buckets, other merge engines, clustering orders, file indexes, nested
and VARIANT columns, merge-schema) is refused before anything is written, naming ``df.write.format("paimon")``,
which writes all of it. Nothing here imports pyspark: it is SQL text and DataFrame methods of the frame it is given,
so classic Spark and Spark Connect alike."""

from __future__ import annotations

import functools
import json
import struct
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyspark_paimon.datasource.jobs import WriteJob
from pyspark_paimon.datasource.write.bucket_sql import bucket_stages
from pyspark_paimon.datasource.write.data_files import (
    SEQUENCE_NUMBER,
    SEQUENCE_NUMBER_ID,
    VALUE_KIND,
    VALUE_KIND_ID,
    DataFileWriter,
    key_file_fields,
    local_millis_as_utc,
)
from pyspark_paimon.datasource.write.stats import (
    SYSTEM_STATS_MODE,
    ColumnSummary,
    Summarize,
    collect_stats,
    collect_value_stats,
    mode_resolver,
)
from pyspark_paimon.datasource.write.store_assignment import assignment_problem
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import ConflictingKeysError, OptionError, PaimonError, SchemaMismatchError
from pyspark_paimon.metadata.fileindex.index_spec import FileIndexSpec
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.maintenance.orphans import JVM_STAGING_PREFIX
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row, serialize_row
from pyspark_paimon.metadata.rows.bucket import bucket_of_values, hash_bytes
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    ROWKIND_FIELD,
    SEQUENCE_FIELD,
)
from pyspark_paimon.metadata.schema.options import (
    DELETION_VECTORS_ENABLED as DELETION_VECTORS,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.ddl import parse_ddl, to_spark_type_ddl
from pyspark_paimon.metadata.types.json_codec import type_to_json
from pyspark_paimon.metadata.types.model import AtomicType, DataField, quote_ident, type_to_sql
from pyspark_paimon.metadata.variant.shredding import shredding_types

__all__ = [
    "BUCKET_FUNCTION",
    "JVM_PATH",
    "JvmPathUnsupportedError",
    "PYTHON_PATH",
    "StagedWrite",
    "refuse_unsupported",
    "stage_frame",
    "write_frame",
]

#: What a write result's ``path`` says of the two write paths.
JVM_PATH = "jvm"
PYTHON_PATH = "python"
_PYTHON_WRITE = "df.write.format('paimon')"
#: The SQL function (``datasource/spark/bucket_function.py``, registered by ``pyspark_paimon.register``) computing
#: Paimon's bucket of the bucket-key columns: ``paimon_bucket(struct of keys, bucket count, key types as JSON)``.
BUCKET_FUNCTION = "paimon_bucket"
# The copies of the partition columns Spark's partitionBy consumes (the files keep the real ones), and the bucket.
_COPY = "__paimon_part_{}"
_BUCKET = "__paimon_bucket"
# Spark's Parquet field-id metadata key (written when spark.sql.parquet.fieldId.write.enabled, the default).
_FIELD_ID = "parquet.field.id"
# pyarrow codec names of data_files -> Spark's Parquet `compression` option.
_SPARK_CODECS = {"zstd": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4_raw", "none": "none"}
# Types whose Parquet form and footer statistics Spark writes as Paimon's readers expect.
_WRITABLE = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "CHAR", "VARCHAR"}
    | {"BINARY", "VARBINARY", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ"}
)
_TIMESTAMP_TYPE_CONF = "spark.sql.parquet.outputTimestampType"
_TWICE = (
    "A primary key of {table} is written twice by one t.write_spark, which keeps no input order to pick a version "
    "by; nothing was committed. Write one row per key (e.g. the latest row of each key)."
)
# Bucket counts up to which a primary-key table's buckets each get one Spark partition (else: a window numbers rows).
_MAX_SPREAD = 4096
# monotonically_increasing_id(): the partition index above bit 33, the row's place in its partition below.
_ROW_BITS = (1 << 33) - 1
# Files moved (and footers read) at once on the driver: the work is I/O.
_MOVE_THREADS = 8


class JvmPathUnsupportedError(OptionError):
    """A table (or session) the JVM write path does not write, found before anything was written: ``engine="jvm"``
    raises it, ``engine="auto"`` takes the Python path instead (its message is the result's ``fallback``)."""


def _refusal(table: str, what: str) -> JvmPathUnsupportedError:
    return JvmPathUnsupportedError(
        f"The JVM write path (t.write_spark(engine='jvm')) cannot write table {table}: {what}. Write it with "
        f"t.write_spark(df) (engine 'auto', which takes the Python path for it, or 'python'), {_PYTHON_WRITE} or "
        "t.write_arrow, which write every table kind (docs/writing.md, 'Two write paths')."
    )


def refuse_unsupported(schema: TableSchema, table: str) -> None:
    """Raise :class:`OptionError` (naming the Python path) for a table this path does not write, before any I/O."""
    options = schema.core_options
    if schema.primary_keys:
        if options.bucket <= 0:
            raise _refusal(table, f"it is a primary-key table with 'bucket' = '{options.bucket}' (fixed counts only)")
        if options.merge_engine != "deduplicate":
            raise _refusal(table, f"its 'merge-engine' is '{options.merge_engine}' (deduplicate only)")
        if options.sequence_fields:
            raise _refusal(table, f"'{SEQUENCE_FIELD.key}' orders its versions by a column")
        if options.get(ROWKIND_FIELD):
            raise _refusal(table, f"'{ROWKIND_FIELD.key}' gives its rows their kinds")
        if options.deletion_vectors_enabled:
            raise _refusal(table, f"'{DELETION_VECTORS.key}' needs the vectors of a compaction after each write")
        if options.get(CHANGELOG_PRODUCER) != "none":
            raise _refusal(table, f"its 'changelog-producer' is '{options.get(CHANGELOG_PRODUCER)}'")
    elif options.bucket < -1 or options.bucket == 0:
        raise _refusal(table, f"it has 'bucket' = '{options.bucket}' (unaware bucket -1 or a fixed count only)")
    if options.file_format != "parquet":
        raise _refusal(table, f"its 'file.format' is '{options.file_format}'")
    if options.clustering_columns:
        raise _refusal(table, "'clustering.columns' orders the rows of every write")
    if FileIndexSpec.of(schema.options, schema.fields, table).indexes:
        raise _refusal(table, "'file-index.*' indexes are built from every file's rows")
    if shredding_types(schema.options, schema.fields):
        raise _refusal(table, "'variant.shreddingSchema' shreds VARIANT columns")
    for f in schema.fields:
        if not isinstance(f.type, AtomicType) or f.type.root not in _WRITABLE:
            raise _refusal(table, f"column '{f.name}' is {type_to_sql(f.type)} (atomic types only)")
        if f.type.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (f.type.precision or 6) > 6:
            raise _refusal(table, f"column '{f.name}' is {type_to_sql(f.type)} (at most microseconds)")


@dataclass
class StagedWrite:
    """The files of one JVM write, moved into their buckets and described, ready for ``WriteJob.commit``.
    ``moved`` lists the paths that exist in bucket directories (what a failure before the commit deletes)."""

    messages: list[CommitMessage]
    moved: list[str]
    staging: str


def stage_frame(frame: Any, store: FileStore, ctx: WriteContext) -> StagedWrite:
    """Write ``frame`` with Spark's Parquet writer and move its files into the table (uncommitted): see the module
    docstring. On any failure nothing of it is left behind (staging directory and moved files deleted)."""
    table = store.table_path
    schema = ctx.schema
    opts = {**schema.options_with_defaults(), **ctx.options}
    refuse_unsupported(schema, table)
    session = frame.sparkSession
    buckets = schema.core_options.bucket
    if buckets > 0:
        if ctx.partition_buckets:
            raise _refusal(table, "partitions of it keep another bucket count than the table's (rescaled)")
        if bucket_stages(schema.bucket_key_fields, buckets, _BUCKET) is None and not session.catalog.functionExists(
            BUCKET_FUNCTION
        ):
            raise _refusal(
                table,
                f"its rows' buckets are computed by the SQL function {BUCKET_FUNCTION}, which "
                "pyspark_paimon.register(spark) registers on Spark 4.1 and later; call it on this session first",
            )
    if any(f.type.root == "TIMESTAMP_LTZ" for f in schema.fields if isinstance(f.type, AtomicType)):
        kind = str(session.conf.get(_TIMESTAMP_TYPE_CONF, "INT96")).upper()
        if kind != "TIMESTAMP_MICROS":
            raise _refusal(
                table,
                f"it has TIMESTAMP_LTZ columns and the session's '{_TIMESTAMP_TYPE_CONF}' is {kind}, a form Paimon "
                f"does not write (set it to TIMESTAMP_MICROS to use the JVM path)",
            )
    files = DataFileWriter(store.fileio, table, schema, opts, [])
    codec, level = files.level_codec(0)
    if codec not in _SPARK_CODECS:
        raise _refusal(table, f"its 'file.compression' ({codec}) is not one Spark writes without extra libraries")
    typed = _physical(_conformed(frame, schema, table, buckets), schema, table, ctx)
    fileio = store.fileio
    staging = FileIO.join(table, f"{JVM_STAGING_PREFIX}{uuid.uuid4()}")
    moved: list[str] = []
    try:
        writer = typed.write.option("compression", _SPARK_CODECS[codec])
        if level is not None:
            writer = writer.option("parquet.compression.codec.zstd.level", str(level))
        in_dirs = buckets > 0 and not _one_partition_per_bucket(schema)
        by = [_COPY.format(i) for i in range(len(schema.partition_keys))] + ([_BUCKET] if in_dirs else [])
        if by:
            writer = writer.partitionBy(*by)
        writer.parquet(fileio.uri(staging))
        messages = _describe_and_move(store, schema, files, staging, ctx.sequence_bases, opts, moved)
    except BaseException as exc:
        _delete_quietly(fileio, moved, staging)
        if _TWICE.format(table=table) in str(exc) and not isinstance(exc, ConflictingKeysError):  # Spark's window
            raise ConflictingKeysError(_TWICE.format(table=table)) from exc
        raise
    return StagedWrite(messages, moved, staging)


def write_frame(job: WriteJob, frame: Any) -> tuple[Snapshot | None, list[CommitMessage]]:
    """Write ``frame`` into the table of ``job`` through Spark's Parquet writer and commit it once (``job``'s
    overwrite, commit user and sequence bases): the snapshot committed (None: no rows) and the messages."""
    staged = stage_frame(frame, job.store, job.context)
    try:
        snapshot = job.commit(staged.messages)  # its abort deletes the moved files when the commit did not land
    finally:
        discard(job.store, staged, files=False)
    return snapshot, staged.messages


def discard(store: FileStore, staged: StagedWrite, *, files: bool) -> None:
    """Delete the staging directory of ``staged`` (and, with ``files``, the moved files too)."""
    _delete_quietly(store.fileio, staged.moved if files else [], staged.staging)


def _delete_quietly(fileio: FileIO, paths: list[str], staging: str) -> None:
    for path in paths:
        try:
            fileio.delete(path)
        except OSError:  # an orphan either way: remove_orphan_files removes it
            pass
    try:
        fileio.delete_dir(staging)
    except OSError:
        pass


def _conformed(frame: Any, schema: TableSchema, table: str, buckets: int) -> Any:
    """``frame`` as the table's columns (Spark's CAST where the types differ and store assignment allows), NOT NULL
    columns checked, every column tagged with its Paimon field id, plus the partition copies and (``buckets`` > 0)
    each row's bucket."""
    got = {f.name: f for f in frame.schema.fields}
    names = schema.field_names
    missing = [n for n in names if n not in got]
    extra = [n for n in got if n not in set(names)]
    if missing or extra:
        raise SchemaMismatchError(
            f"The DataFrame written to {table} must have exactly the table's columns {names}: "
            + (f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"not in the table {extra}" if extra else "")
            + f". Select them (the Python path {_PYTHON_WRITE} also adds columns with merge-schema)."
        )
    exprs = []
    for f in schema.fields:
        spark_type = to_spark_type_ddl(f.type)
        expr = quote_ident(f.name)
        given = got[f.name].dataType.simpleString()
        if given.lower() != spark_type.lower():
            problem = _assignment(given, f, table)
            if problem:
                raise SchemaMismatchError(
                    f"Column '{f.name}' of the DataFrame written to {table} is {given}, the table's is "
                    f"{type_to_sql(f.type)}: {problem}. Cast it in the DataFrame."
                )
            expr = f"CAST({expr} AS {spark_type})"
        if not f.type.nullable:
            message = f"Column '{f.name}' of {table} is NOT NULL, but the DataFrame written to it holds NULL."
            expr = f"coalesce({expr}, raise_error('{_sql_text(message)}'))"
        exprs.append(f"{expr} AS {quote_ident(f.name)}")
    typed = frame.selectExpr(*exprs)
    extra = [f"{quote_ident(k)} AS {_COPY.format(i)}" for i, k in enumerate(schema.partition_keys)]
    typed = typed.selectExpr("*", *extra) if extra else typed
    return _with_bucket(typed, schema.bucket_key_fields, buckets) if buckets > 0 else typed


def _with_bucket(frame: Any, keys: list[DataField], buckets: int) -> Any:
    """``frame`` plus each row's bucket: in Spark SQL where ``bucket_sql`` builds it, else by the Arrow UDF."""
    stages = bucket_stages(keys, buckets, _BUCKET)
    if stages is None:  # a key type whose hash Spark SQL does not compute: the Arrow UDF
        struct = ", ".join(f"'k{i}', {quote_ident(f.name)}" for i, f in enumerate(keys))
        types = json.dumps([type_to_json(f.type) for f in keys])
        return frame.selectExpr(
            "*", f"{BUCKET_FUNCTION}(named_struct({struct}), {buckets}, '{_sql_text(types)}') AS {_BUCKET}"
        )
    before = set(frame.columns)
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    return frame.drop(*(c for c in frame.columns if c not in before and c != _BUCKET))


def _physical(full: Any, schema: TableSchema, table: str, ctx: WriteContext) -> Any:
    """The frame Spark writes: append tables' columns as they are; a primary-key table's rows sorted by key within
    each (partition, bucket) and led by ``_KEY_<k>``, ``_SEQUENCE_NUMBER`` (the bucket's base, then one per row in
    key order) and ``_VALUE_KIND`` (+I), with Java's field ids. A key given twice fails the Spark job (one row per
    key: which version would win is not defined after Spark's shuffle)."""
    copies = [_COPY.format(i) for i in range(len(schema.partition_keys))]
    extras = copies + ([_BUCKET] if _BUCKET in full.columns else [])
    columns = [(quote_ident(f.name), f.name, f.id) for f in schema.fields]
    if _one_partition_per_bucket(schema):
        # one Spark partition per bucket: each row's place in its sorted partition is its place in its bucket, and
        # each task writes one file of one bucket (no partitionBy, whose required order would make Spark sort by
        # the bucket first, comparing whole rows); the driver finds a file's bucket from its first key
        spread = _bucket_spread(schema.core_options.bucket) or ()
        keys = schema.trimmed_primary_key_fields
        bases = [0] * schema.core_options.bucket
        for (_, bucket), base in ctx.sequence_bases.items():
            bases[bucket] = base
        full = full.selectExpr("*", f"element_at(array({_ints(spread)}), {_BUCKET} + 1) AS __paimon_spread")
        first = f"element_at(array({_ints(bases, 'L')}), {_BUCKET} + 1)"
        full = (
            full.repartition(len(spread), "__paimon_spread")
            .sortWithinPartitions(*(f.name for f in keys))
            .selectExpr(
                "*",
                f"{first} + (monotonically_increasing_id() & {_ROW_BITS}L) AS __paimon_seq",
                "CAST(0 AS TINYINT) AS __paimon_kind",
            )
        )
        columns = [*_system_columns(keys), *columns]
        extras = []
    elif schema.primary_keys:
        keys = schema.trimmed_primary_key_fields
        names = [quote_ident(f.name) for f in keys]
        window = f"PARTITION BY {', '.join(extras)} ORDER BY {', '.join(names)}"
        message = _TWICE.format(table=table)
        same = " AND ".join(f"lag({k}) OVER ({window}) <=> {k}" for k in names)
        full = full.selectExpr(
            "*",
            f"row_number() OVER ({window}) - 1 AS __paimon_offset",
            f"if({same}, raise_error('{_sql_text(message)}'), CAST(0 AS TINYINT)) AS __paimon_kind",
        )
        bases = _bases(full.sparkSession, schema, ctx, copies)
        if bases is not None:
            on = [full[c].eqNullSafe(bases[c]) for c in extras]
            full = full.join(bases.hint("broadcast"), on=on, how="left").drop(*(bases[c] for c in extras))
            full = full.selectExpr("*", "coalesce(__paimon_base, 0L) + __paimon_offset AS __paimon_seq")
        else:
            full = full.selectExpr("*", "CAST(__paimon_offset AS BIGINT) AS __paimon_seq")
        full = full.sortWithinPartitions(*extras, *(f.name for f in keys))
        columns = [*_system_columns(keys), *columns]
    tagged = [full[c].alias(name, metadata={_FIELD_ID: field_id}) for c, name, field_id in columns]
    return full.select(*tagged, *extras)


def _system_columns(keys: list[DataField]) -> list[tuple[str, str, int]]:
    """(source column, file column, field id) of a primary-key file's leading columns: ``_KEY_<k>`` for every key
    column, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``."""
    return [
        *((quote_ident(f.name), kf.name, kf.id) for f, kf in zip(keys, key_file_fields(keys))),
        ("__paimon_seq", SEQUENCE_NUMBER, SEQUENCE_NUMBER_ID),
        ("__paimon_kind", VALUE_KIND, VALUE_KIND_ID),
    ]


def _one_partition_per_bucket(schema: TableSchema) -> bool:
    """Whether a primary-key table's write gives each bucket one Spark partition: no partition columns and a bucket
    count :func:`_bucket_spread` spreads."""
    return (
        bool(schema.primary_keys)
        and not schema.partition_keys
        and _bucket_spread(schema.core_options.bucket) is not None
    )


@functools.lru_cache(maxsize=16)
def _bucket_spread(buckets: int) -> tuple[int, ...] | None:
    """Values ``v[b]`` whose Spark hash partition among ``buckets`` partitions is ``b`` (``repartition(buckets, v[b])``
    puts bucket ``b``, and only it, into Spark partition ``b``): Spark's ``HashPartitioning`` is ``pmod`` of the
    Murmur3 hash (seed 42) of the INT, which for a 4-byte value is :func:`hash_bytes` of its little-endian bytes.
    None for bucket counts too large to spell as a literal array."""
    if buckets > _MAX_SPREAD:
        return None
    found: dict[int, int] = {}
    candidate = 0
    while len(found) < buckets:
        found.setdefault(hash_bytes(struct.pack("<i", candidate)) % buckets, candidate)
        candidate += 1
    return tuple(found[b] for b in range(buckets))


def _ints(values: Sequence[int], suffix: str = "") -> str:
    return ", ".join(f"{v}{suffix}" for v in values)


def _bases(session: Any, schema: TableSchema, ctx: WriteContext, copies: list[str]) -> Any:
    """The sequence bases of the buckets that hold files (partition copies, bucket, base) as a small DataFrame, or
    None when every bucket starts at 0."""
    if not ctx.sequence_bases:
        return None
    fields = list(schema.partition_fields)
    types = [f.type for f in fields]
    rows = [
        (*deserialize_row(partition, types), bucket, base) for (partition, bucket), base in ctx.sequence_bases.items()
    ]
    ddl = ", ".join(
        [f"{c} {to_spark_type_ddl(f.type)}" for c, f in zip(copies, fields)]
        + [f"{_BUCKET} INT", "__paimon_base BIGINT"]
    )
    return session.createDataFrame(rows, ddl)


def _assignment(given: str, f: DataField, table: str) -> str | None:
    try:
        src = parse_ddl(f"x {given}")[0][1]
        return assignment_problem(to_arrow_type(src), to_arrow_type(f.type.copy(nullable=True)))
    except (PaimonError, ValueError) as exc:
        return f"that type is not one this path converts ({exc})"


def _sql_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


# ------------------------------------------------------------------------------------------------ describe


@dataclass(frozen=True)
class _Footer:
    path: str
    rows: int
    summaries: dict[str, ColumnSummary]


def _data_files(fileio: FileIO, directory: str) -> list[str]:
    """Every Parquet file Spark left under ``directory`` (its ``_SUCCESS`` marker and hidden files skipped)."""
    out: list[str] = []
    for status in fileio.list_status(directory):
        if status.is_dir:
            out.extend(_data_files(fileio, status.path))
        elif not status.name.startswith(("_", ".")):
            out.append(status.path)
    return sorted(out)


def _footer(fileio: FileIO, path: str, columns: list[str]) -> _Footer:
    """The row count and per-column summaries of one file, from its footer alone."""
    with fileio.open_input(path) as handle:
        meta = pq.read_metadata(handle)
    by_name: dict[str, list[Any]] = {c: [] for c in columns}
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for i in range(group.num_columns):
            chunk = group.column(i)
            if chunk.path_in_schema in by_name:
                by_name[chunk.path_in_schema].append((group.num_rows, chunk.statistics))
    return _Footer(path, meta.num_rows, {c: _summary(stats) for c, stats in by_name.items()})


def _summary(groups: list[tuple[int, Any]]) -> ColumnSummary:
    """One column over a file's row groups: NULLs added up; min/max over the groups, unknown (None) as soon as a
    group holding non-NULL values recorded none (Spark drops statistics of values over 4 KiB)."""
    nulls: int | None = 0
    lo: Any = None
    hi: Any = None
    known = True
    for rows, stats in groups:
        if stats is None or not stats.has_null_count:
            nulls = None
            known = False
            continue
        if nulls is not None:
            nulls += stats.null_count
        if stats.null_count == rows:
            continue
        if not stats.has_min_max:
            known = False
            continue
        lo = stats.min if lo is None or _less(stats.min, lo) else lo
        hi = stats.max if hi is None or _less(hi, stats.max) else hi
    return ColumnSummary(lo if known else None, hi if known else None, nulls)


def _footer_summaries(footer: _Footer) -> Summarize:
    def summarize(f: DataField, root: str | None) -> ColumnSummary:
        return footer.summaries[f.name]

    return summarize


def _less(a: Any, b: Any) -> bool:
    if b != b:  # NaN is the greatest (Java's Double.compare); a file's max is NaN when it holds one
        return not (a != a)
    if a != a:
        return False
    return bool(a < b)


def _describe_and_move(
    store: FileStore,
    schema: TableSchema,
    files: DataFileWriter,
    staging: str,
    sequence_bases: dict,
    opts: dict,
    moved: list[str],
) -> list[CommitMessage]:
    fileio = store.fileio
    key_fields = key_file_fields(schema.trimmed_primary_key_fields) if schema.primary_keys else []
    bucket_keys = list(schema.bucket_key_fields) if _one_partition_per_bucket(schema) else []
    columns = [f.name for f in key_fields] + ([SEQUENCE_NUMBER] if key_fields else []) + schema.field_names
    paths = _data_files(fileio, staging)
    with ThreadPoolExecutor(max_workers=max(1, min(_MOVE_THREADS, len(paths)))) as pool:
        footers = [f for f in pool.map(lambda p: _footer(fileio, p, columns), paths) if f.rows]
    partition_fields = list(schema.partition_fields)
    part_types = [f.type for f in partition_fields]
    mode_for = mode_resolver(opts, list(schema.fields))
    write_uuid = str(uuid.uuid4())
    created = local_millis_as_utc()
    total_buckets = schema.core_options.bucket
    by_bucket: dict[tuple[bytes, int], tuple[tuple, list[DataFileMeta]]] = {}
    moves: list[tuple[str, str]] = []
    for counter, footer in enumerate(footers):
        values = tuple(_partition_value(footer, f, store.table_path) for f in partition_fields)
        partition = serialize_row(list(values), part_types)
        keys = _key_rows(fileio, footer, key_fields, bucket_keys) if key_fields else None
        if total_buckets <= 0:
            bucket = 0
        elif keys is not None and bucket_keys:
            bucket = _bucket_of_keys(footer, keys, bucket_keys, total_buckets, store.table_path)
        else:
            bucket = _bucket_of(footer.path)
        _, metas = by_bucket.setdefault((partition, bucket), (values, []))
        base = sequence_bases.get((partition, bucket), 0) + sum(m.row_count for m in metas)
        summaries = _footer_summaries(footer)
        value_stats, stats_cols = collect_value_stats(summaries, list(schema.fields), opts, mode_for)
        name = files.data_file_name(write_uuid, counter)
        directory = store.bucket_path(schema, values, bucket)
        meta = DataFileMeta(
            file_name=name,
            file_size=0,  # set once moved
            row_count=footer.rows,
            value_stats=value_stats,
            min_sequence_number=base,
            max_sequence_number=base + footer.rows - 1,
            schema_id=schema.id,
            level=0,
            creation_time_millis=created,
            value_stats_cols=stats_cols,
        )
        if keys is not None:
            meta = _with_keys(meta, footer, keys, key_fields, store.table_path)
        metas.append(meta)
        moves.append((footer.path, FileIO.join(directory, name)))

    def move(item: tuple[str, str]) -> int:
        src, dst = item
        fileio.rename(src, dst)
        moved.append(dst)
        return fileio.size(dst)

    with ThreadPoolExecutor(max_workers=max(1, min(_MOVE_THREADS, len(moves)))) as pool:
        sizes = dict(zip((dst.rsplit("/", 1)[-1] for _, dst in moves), pool.map(move, moves)))
    return [
        CommitMessage(
            partition=partition,
            bucket=bucket,
            total_buckets=total_buckets,
            new_files=tuple(replace(m, file_size=sizes[m.file_name]) for m in metas),
            writer="jvm",
        )
        for (partition, bucket), (_, metas) in by_bucket.items()
    ]


def _key_rows(fileio: FileIO, footer: _Footer, key_fields: list[DataField], bucket_keys: list[DataField]) -> pa.Table:
    """The ``_KEY_<k>`` columns of a primary-key file (and the bucket-key columns when ``bucket_keys``), read from
    the file: a few columns of it, never its values."""
    names = [f.name for f in key_fields] + [f.name for f in bucket_keys]
    with fileio.open_input(footer.path) as handle:
        return pq.read_table(handle, columns=list(dict.fromkeys(names)))


def _with_keys(
    meta: DataFileMeta, footer: _Footer, keys: pa.Table, key_fields: list[DataField], table: str
) -> DataFileMeta:
    """A primary-key file's key range (its first and last rows' keys: it holds one row per key in key order), key
    statistics (of its key columns, as the Python writer computes them) and sequence range (``_SEQUENCE_NUMBER``'s
    footer statistics). Refuses a file holding a key twice (two equal neighbours over every key column) or whose
    sequence numbers are not one per row."""
    seq = footer.summaries[SEQUENCE_NUMBER]
    if seq.min is None or seq.max is None:
        raise PaimonError(
            f"Spark wrote {footer.path} for {table} without statistics of '{SEQUENCE_NUMBER}', so its sequence range "
            f"is unknown; nothing was committed. Write with {_PYTHON_WRITE}."
        )
    if int(seq.max) - int(seq.min) + 1 != footer.rows:
        raise PaimonError(
            f"Spark wrote {footer.path} for {table} with sequence numbers {seq.min}..{seq.max} for {footer.rows} "
            f"rows; nothing was committed. Write with {_PYTHON_WRITE}."
        )
    columns = [keys.column(f.name).combine_chunks() for f in key_fields]
    same: Any = None
    for column in columns:
        later, earlier = column.slice(1), column.slice(0, max(len(column) - 1, 0))
        equal = pc.equal(later, earlier)
        if pa.types.is_floating(column.type):  # NaN keys are one key to Spark's sort and to Paimon's BinaryRow
            equal = pc.or_(equal, pc.and_(pc.is_nan(later), pc.is_nan(earlier)))
        same = equal if same is None else pc.and_(same, equal)
    if same is not None and pc.any(same).as_py():
        raise ConflictingKeysError(_TWICE.format(table=table))
    types = [f.type for f in key_fields]
    last = keys.num_rows - 1
    return replace(
        meta,
        min_key=serialize_row([c[0].as_py() for c in columns], types),
        max_key=serialize_row([c[last].as_py() for c in columns], types),
        key_stats=collect_stats(keys, key_fields, SYSTEM_STATS_MODE),
        min_sequence_number=int(seq.min),
        max_sequence_number=int(seq.max),
    )


def _bucket_of_keys(footer: _Footer, keys: pa.Table, bucket_keys: list[DataField], buckets: int, table: str) -> int:
    """The bucket of a file holding one bucket's rows (:func:`_one_partition_per_bucket`): its first row's, which its
    last row must share."""
    types = [f.type for f in bucket_keys]
    ends = {
        bucket_of_values([keys.column(f.name)[i].as_py() for f in bucket_keys], types, buckets)
        for i in (0, keys.num_rows - 1)
    }
    if len(ends) != 1:
        raise PaimonError(
            f"Spark wrote {footer.path} for {table} with keys of buckets {sorted(ends)}; nothing was committed. "
            f"Write with {_PYTHON_WRITE}."
        )
    return ends.pop()


def _bucket_of(path: str) -> int:
    """The bucket of a file Spark wrote under ``.../__paimon_bucket=<n>/`` (its partitionBy directory)."""
    for part in reversed(path.split("/")):
        if part.startswith(_BUCKET + "="):
            return int(part.split("=", 1)[1])
    raise PaimonError(f"Spark wrote {path} outside a '{_BUCKET}=<n>' directory; its bucket is unknown.")


def _partition_value(footer: _Footer, f: DataField, table: str) -> Any:
    s = footer.summaries[f.name]
    if s.nulls == footer.rows:
        return None
    if s.min is None or s.min != s.max:
        raise PaimonError(
            f"Spark wrote {footer.path} for {table} without statistics of partition column '{f.name}' (or with more "
            f"than one value of it), so its partition is unknown; nothing was committed. Write with {_PYTHON_WRITE}."
        )
    return _value(s.min, f)


def _value(value: Any, f: DataField) -> Any:
    """A footer statistic as the column's Python value (a string column's statistic may come back as bytes)."""
    if isinstance(value, bytes) and isinstance(f.type, AtomicType) and f.type.root in ("CHAR", "VARCHAR"):
        return value.decode("utf-8")
    return value
