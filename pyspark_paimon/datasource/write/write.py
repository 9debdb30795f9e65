"""Executor-side writing of Arrow data into Paimon data files (Java's `FileStorePathFactory`, `DefaultBucketFunction`,
`KeyValueFileWriterFactory`, `CoreOptions`).

One :class:`TableWriter` runs per Spark write task. It buffers the incoming Arrow batches (validated and
cast to the table's Arrow schema on arrival, so a bad batch fails the task at once, naming the column), and
when the buffer exceeds ``write-buffer-size`` or the task ends it *flushes*:

1. rows are grouped by partition (one ``group_by`` over the partition columns; the partition's BinaryRow and
   directory are computed once per partition, never per row);
2. rows are routed to buckets with the vectorised Java-compatible hash (Java's `DefaultBucketFunction`), keeping an
   existing partition's bucket count (``WriteContext.partition_buckets``);
3. each (partition, bucket) gets sequence numbers continuing from the bucket's current maximum, in arrival
   order (Java's `SortMergeReaderWithMinHeap`); primary-key rows are then sorted by (key, user sequence fields, sequence
   number) and duplicate keys are folded with the table's merge engine — retractions are kept, because they must
   delete older versions that live in other files;
4. the rows are written as Parquet files of about ``target-file-size`` in the Paimon layout (PK tables:
   ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, then every table column; field ids as Java sets them)
   and described by :class:`DataFileMeta` (exact size, keys, stats, sequence range, retract count).

:meth:`TableWriter.prepare_commit` returns one :class:`CommitMessage` per (partition, bucket) for the driver
to commit; :meth:`TableWriter.abort` deletes every file the writer created. This module never imports
pyspark.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyspark_paimon.datasource.merge import merge
from pyspark_paimon.datasource.write import postpone
from pyspark_paimon.datasource.write.cross_partition import (
    BUCKET_COLUMN,
    CrossPartitionRouter,
    bootstrap,
    is_cross_partition,
)
from pyspark_paimon.datasource.write.parquet_layout import PARQUET_LAYOUT, encoding_settings, is_writer_v2
from pyspark_paimon.datasource.write.stats import (
    SYSTEM_STATS_MODE,
    collect_stats,
    collect_value_stats,
    mode_resolver,
)
from pyspark_paimon.datasource.write.store_assignment import cast_for_store
from pyspark_paimon.errors import OptionError, PaimonError, SchemaMismatchError
from pyspark_paimon.metadata.fileindex.index_spec import FileIndexSpec
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.hash_index import PartitionIndex, hash_index_files, sorted_unique
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.manifests.manifest import (
    FILE_SOURCE_APPEND,
    FILE_SOURCE_COMPACT,
    DataFileMeta,
    SimpleStats,
)
from pyspark_paimon.metadata.rows.binary_row import EMPTY_ROW, serialize_row
from pyspark_paimon.metadata.rows.bucket import bucket_ids, hash_rows
from pyspark_paimon.metadata.rows.partition import partition_path
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_FILE_PREFIX,
    CHANGELOG_PRODUCER,
    DATA_FILE_PREFIX,
    DYNAMIC_BUCKET_MAX_BUCKETS,
    DYNAMIC_BUCKET_TARGET_ROW_NUM,
    FILE_COMPRESSION,
    FILE_COMPRESSION_PER_LEVEL,
    FILE_COMPRESSION_ZSTD_LEVEL,
    FILE_SUFFIX_INCLUDE_COMPRESSION,
    IGNORE_UPDATE_BEFORE,
    PARQUET_WRITER_VERSION,
    POSTPONE_BUCKET,
    POSTPONE_DEFAULT_BUCKET_NUM,
    ROWKIND_FIELD,
    WRITE_BUFFER_SIZE,
    ConfigOption,
    CoreOptions,
    validate_table_options,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.arrow import to_parquet_arrow_schema
from pyspark_paimon.metadata.types.model import (
    AtomicType,
    DataField,
    type_to_sql,
)

__all__ = [
    "WriteContext",
    "TableWriter",
    "write_batches",
    "KEY_FIELD_PREFIX",
    "KEY_FIELD_ID_START",
    "SEQUENCE_NUMBER",
    "SEQUENCE_NUMBER_ID",
    "VALUE_KIND",
    "VALUE_KIND_ID",
    "ROW_KINDS",
    "key_file_fields",
    "system_file_fields",
]

#: Prefix and field-id offset of the key copies in PK data files (Java ``SpecialFields``).
KEY_FIELD_PREFIX = "_KEY_"
KEY_FIELD_ID_START = 2147483647 // 2  # 1073741823
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
SEQUENCE_NUMBER_ID = 2147483646
VALUE_KIND = "_VALUE_KIND"
VALUE_KIND_ID = 2147483645
# Rows per Parquet row group written (Parquet writers default to far larger groups): small enough that
# readers can merge a large key-overlap section window by window, large enough to keep pages efficient.
ROW_GROUP_ROWS = 131072


#: RowKind spelling in ``rowkind.field`` columns, in byte-value order (0 = +I, 1 = -U, 2 = +U, 3 = -D).
ROW_KINDS = ("+I", "-U", "+U", "-D")

_SEQ_FIELD = DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, AtomicType("BIGINT", nullable=False))
_KIND_FIELD = DataField(VALUE_KIND_ID, VALUE_KIND, AtomicType("TINYINT", nullable=False))
_ROW_INDEX = "__paimon_row_index"
_EPOCH = _dt.datetime(1970, 1, 1)

# ``file.compression`` value -> pyarrow codec (Paimon spells them like Parquet/Hadoop).
_CODECS = {
    "zstd": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "lz4_raw": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}


def key_file_fields(key_fields: Sequence[DataField]) -> list[DataField]:
    """The ``_KEY_<k>`` fields of a PK data file: same type, NOT NULL, id offset by 2^30 - 1."""
    return [
        DataField(KEY_FIELD_ID_START + f.id, KEY_FIELD_PREFIX + f.name, f.type.copy(nullable=False)) for f in key_fields
    ]


def system_file_fields() -> list[DataField]:
    """``_SEQUENCE_NUMBER`` (BIGINT NOT NULL) and ``_VALUE_KIND`` (TINYINT NOT NULL) with Java's ids."""
    return [_SEQ_FIELD, _KIND_FIELD]


# Buckets written at once by one writer (one per core; a Spark task's share of an executor is not visible here).
_WRITE_THREADS = max(1, os.cpu_count() or 1)


@functools.cache
def _retract_kinds() -> pa.Array:
    """The row kinds that retract (-U, -D). Built on first use, not at import: ``pa.array`` imports pandas
    (~0.2 s), which a process that only plans (Spark's streaming-source runner) never needs otherwise."""
    return pa.array([1, 3], pa.int8())


@dataclass(frozen=True)
class WriteContext:
    """Everything a write task needs, computed once on the driver and pickled to the executors.

    ``sequence_bases[(partition bytes, bucket)]`` is the bucket's next sequence number (max live + 1);
    missing buckets start at 0. ``partition_buckets[partition bytes]`` is the bucket count of an existing
    partition whose count differs from the table's ``bucket`` option (it keeps its layout until
    overwritten). ``options`` are the table options (and any write options) in force. ``hash_index``: in
    dynamic bucket mode, per partition bucket -> path of its ``HASH`` index file in the latest snapshot (each
    writer loads a partition's hashes when it first writes to it, as Java's assigners do). ``key_index``: for a
    cross-partition upsert table, where every live key is (``cross_partition.bootstrap``); None = no key yet.
    """

    fileio: FileIO
    table_path: str
    schema: TableSchema
    options: dict[str, str] = field(default_factory=dict)
    sequence_bases: dict[tuple[bytes, int], int] = field(default_factory=dict)
    partition_buckets: dict[bytes, int] = field(default_factory=dict)
    commit_user: str = ""
    hash_index: dict[bytes, dict[int, str]] = field(default_factory=dict)
    key_index: pa.Table | None = None

    @classmethod
    def for_store(cls, store: FileStore, commit_user: str, replace_all: bool = False) -> "WriteContext":
        """A context continuing ``store``'s latest snapshot (``replace_all``: an overwrite of the whole table,
        after which no partition keeps an old bucket count)."""
        schema = store.schema()
        validate_table_options(schema.options, creating=False, writing=True, table=store.table_path)
        seq_bases: dict[tuple[bytes, int], int] = {}
        partition_buckets: dict[bytes, int] = {}
        num_buckets = schema.num_buckets  # parsed once, not per live file
        latest = store.snapshots.latest()
        hash_index: dict[bytes, dict[int, str]] = {}
        if schema.primary_keys and num_buckets == -1 and latest is not None and latest.index_manifest:
            entries = read_index_manifest(store.fileio, store.manifests.path(latest.index_manifest))
            hash_index = hash_index_files(entries, FileIO.join(store.table_path, "index"))
        for e in store.live_entries(latest, cached=True):  # manifests never change
            key = (e.partition, e.bucket)
            seq_bases[key] = max(seq_bases.get(key, 0), e.file.max_sequence_number + 1)
            if e.total_buckets != num_buckets:
                partition_buckets[e.partition] = e.total_buckets
        return cls(
            fileio=store.fileio,
            table_path=store.table_path,
            schema=schema,
            options=dict(schema.options),
            sequence_bases=seq_bases,
            # A postpone-bucket table keeps its partitions' bucket counts even through a full overwrite (Java's
            # fixed-bucket writes read them from the table before writing).
            partition_buckets={} if replace_all and num_buckets != POSTPONE_BUCKET else partition_buckets,
            commit_user=commit_user,
            hash_index={} if replace_all else hash_index,
            key_index=None if replace_all or not is_cross_partition(schema) else bootstrap(store, schema, latest),
        )


@dataclass
class _BucketState:
    """Per (partition, bucket): file naming, the sequence counter and the files written so far."""

    partition: bytes
    bucket: int
    total_buckets: int
    directory: str
    uuid: str
    next_sequence: int
    file_counter: int = 0
    dir_created: bool = False
    files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    # Compaction writes its outputs at the unit's output level, marked as compaction output.
    level: int = 0
    file_source: int = FILE_SOURCE_APPEND
    # Dynamic bucket mode: the key hashes written to the bucket since the last commit message.
    key_hashes: list[np.ndarray] = field(default_factory=list)


def _local_millis_as_utc() -> int:
    """Local wall-clock time read as UTC epoch millis (what Java's ``LocalDateTime.now()`` stores)."""
    d = _dt.datetime.now() - _EPOCH
    return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000


class TableWriter:
    """Writes Arrow data of one Spark task into data files of the table in ``ctx``.

    ``task_id`` names the writer in its commit messages (versions of one key written by two writers of one job
    have no order: ``key_conflicts``) and in log output; file names use fresh UUIDs, so concurrent tasks (and
    retried attempts) never collide.
    """

    def __init__(self, ctx: WriteContext, task_id: str = "") -> None:
        self._ctx = ctx
        self._task_id = task_id
        schema = ctx.schema
        self._schema = schema
        self._opts: dict[str, str] = {**schema.options_with_defaults(), **(ctx.options or {})}
        self._options = options = CoreOptions(self._opts)
        self._fields: list[DataField] = list(schema.fields)
        self._arrow_schema = schema.arrow_schema()
        self._is_pk = bool(schema.primary_keys)
        self._num_buckets = options.bucket
        self._dynamic = self._is_pk and self._num_buckets == -1
        # Postpone-bucket tables (datasource/write/postpone.py): into real buckets, or raw into 'bucket-postpone'.
        self._postpone = self._is_pk and self._num_buckets == POSTPONE_BUCKET
        self._postpone_fixed = self._postpone and postpone.writes_real_buckets(options)
        self._postpone_prefix = ""
        self._check_supported()

        self._partition_fields = list(schema.partition_fields)
        self._key_fields = list(schema.trimmed_primary_key_fields) if self._is_pk else []
        self._key_names = [f.name for f in self._key_fields]
        self._bucket_fields = list(schema.bucket_key_fields) if self._num_buckets > 0 or self._postpone_fixed else []
        if self._num_buckets > 0 and not self._bucket_fields:
            raise OptionError(
                f"Table {ctx.table_path} has 'bucket' = {self._num_buckets} but no bucket key; set the option "
                "'bucket-key' (append tables) or define a primary key."
            )

        self._rowkind_field = self._optional_column(ROWKIND_FIELD)
        if self._rowkind_field is not None:
            t = schema.field(self._rowkind_field).type
            if getattr(t, "name", None) not in ("CHAR", "VARCHAR"):
                raise OptionError(
                    f"Option 'rowkind.field' names column '{self._rowkind_field}' of type "
                    f"{type_to_sql(t)}; it must be a STRING column holding +I, -U, +U or -D."
                )
        self._seq_fields = options.sequence_fields
        for name in self._seq_fields:
            if not schema.has_field(name):
                raise OptionError(
                    f"Option 'sequence.field' names '{name}', which is not a column of the table "
                    f"(columns: {', '.join(schema.field_names)})."
                )
        self._seq_descending = options.sequence_descending
        self._engine = options.merge_engine
        self._ignore_delete = options.ignore_delete
        # Columns the merge engine folds (partial-update / aggregation); key columns are never merged.
        pk = set(schema.primary_keys)
        self._merge_value_names = [f.name for f in self._fields if f.name not in pk]
        self._ignore_update_before = options.get(IGNORE_UPDATE_BEFORE)

        self._buffer_limit = options.get(WRITE_BUFFER_SIZE)
        self._target_size = options.target_file_size(self._is_pk)
        self._codec, self._codec_level = self._compression()
        self._level_codecs: dict[int, tuple[str, int | None]] = {0: (self._codec, self._codec_level)}
        self._writer_v2 = is_writer_v2(options.get(PARQUET_WRITER_VERSION))
        self._prefix = options.get(DATA_FILE_PREFIX)
        self._changelog_prefix = options.get(CHANGELOG_FILE_PREFIX)
        # 'changelog-producer' = input: every input row also goes to a changelog file, as Java's MergeTreeWriter
        # hands each flushed buffer's raw records to its changelog writer (sorted, before the merge).
        self._changelog_input = self._is_pk and options.get(CHANGELOG_PRODUCER) == "input"
        if self._postpone and not self._postpone_fixed:
            # Java's postpone writers write no changelog; their files get their own writer prefix.
            self._changelog_input = False
            self._postpone_prefix = postpone.writer_prefix(self._prefix, ctx.commit_user)
        self._suffix = (
            f".{options.get(FILE_COMPRESSION)}.parquet" if options.get(FILE_SUFFIX_INCLUDE_COMPRESSION) else ".parquet"
        )
        self._default_part = options.partition_default_name
        self._legacy_name = options.partition_legacy_name
        self._data_dir = options.data_file_directory  # data-file.path-directory, as Java lays files out
        self._value_mode_for = mode_resolver(self._opts, self._fields)
        # file-index.<type>.columns: every data and changelog file gets its indexes (Java's DataFileIndexWriter)
        self._file_index = FileIndexSpec.of(self._opts, self._fields, ctx.table_path)

        self._key_file_fields = key_file_fields(self._key_fields)
        file_fields = (self._key_file_fields + system_file_fields() + self._fields) if self._is_pk else self._fields
        self._file_fields = file_fields
        self._file_schema = to_parquet_arrow_schema(file_fields, field_ids=True)

        self._buffer: list[pa.Table] = []
        self._buffered_bytes = 0
        self._states: dict[tuple[bytes, int], _BucketState] = {}
        self._partition_indexes: dict[bytes, PartitionIndex] = {}
        self._compact_states: dict[tuple[bytes, int, int], _BucketState] = {}
        self._changelog_states: dict[tuple[bytes, int, int], _BucketState] = {}
        self._created: list[str] = []

    # ------------------------------------------------------------------------------------------ setup
    def _check_supported(self) -> None:
        where = self._ctx.table_path
        validate_table_options(self._opts, creating=False, writing=True, table=where)
        fmt = self._options.file_format
        if fmt != "parquet":
            raise OptionError(
                f"Table {where} has 'file.format' = '{fmt}'; pyspark-paimon writes only parquet data "
                "files. Set 'file.format' = 'parquet' (existing files stay readable)."
            )
        b = self._num_buckets
        self._router: CrossPartitionRouter | None = None
        if self._dynamic and is_cross_partition(self._schema):
            self._router = CrossPartitionRouter(
                self._schema, self._ctx.key_index, self._options.get(DYNAMIC_BUCKET_TARGET_ROW_NUM), where
            )
        if b == POSTPONE_BUCKET and not self._is_pk:
            raise OptionError(
                f"Option 'bucket' = -2 (postpone mode) of {where} needs a primary-key table; use N > 0 or -1 for an "
                "append table."
            )
        if b == 0 or b < -2:
            raise OptionError(f"Option 'bucket' = {b} of {where} is invalid; use N > 0, -1 (dynamic) or -2 (postpone).")

    def _optional_column(self, option: ConfigOption[str | None]) -> str | None:
        name = self._options.get(option)
        if name is None:
            return None
        name = name.strip()
        if not self._schema.has_field(name):
            raise OptionError(
                f"Option '{option.key}' names '{name}', which is not a column of the table "
                f"(columns: {', '.join(self._schema.field_names)})."
            )
        return name

    def _compression(self, lsm_level: int = 0) -> tuple[str, int | None]:
        raw = self._options.get(FILE_COMPRESSION).strip().lower()
        per_level = self._options.get(FILE_COMPRESSION_PER_LEVEL)
        if per_level:  # "0:lz4,5:zstd" - new files are level 0, compaction outputs their output level
            for item in per_level.split(","):
                level_key, _, level_codec = item.partition(":")
                if level_key.strip() == str(lsm_level) and level_codec.strip():
                    raw = level_codec.strip().lower()
        codec = _CODECS.get(raw)
        if codec is None:
            raise OptionError(
                f"Option 'file.compression' = '{raw}' is not supported for parquet data files; use "
                f"one of {', '.join(sorted(_CODECS))}."
            )
        level: int | None = None
        if codec == "zstd":
            level = self._options.get(FILE_COMPRESSION_ZSTD_LEVEL)
        return codec, level

    # ------------------------------------------------------------------------------------------ input
    def write(self, batch: pa.RecordBatch | pa.Table, kinds: pa.Array | None = None) -> None:
        """Validate and buffer ``batch``; flushes to files when the buffer exceeds ``write-buffer-size``.

        ``kinds`` (int8 row kinds, primary-key tables only) gives every row's kind directly, as DML does for
        its retractions and upserts; otherwise they come from ``rowkind.field`` or are all +I."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        if kinds is not None and (not self._is_pk or len(kinds) != table.num_rows):
            raise SchemaMismatchError(
                f"Explicit row kinds need a primary-key table and one kind per row ({self._ctx.table_path})."
            )
        aligned = self._align(table)
        if self._rowkind_field is not None or self._is_pk:
            row_kinds = self._row_kinds(aligned) if kinds is None else pa.chunked_array([kinds.cast(pa.int8())])
            aligned = aligned.append_column(pa.field(VALUE_KIND, pa.int8(), False), row_kinds)
            aligned = self._drop_ignored_kinds(aligned)
            if not self._is_pk:
                aligned = aligned.drop_columns([VALUE_KIND])
            if aligned.num_rows == 0:
                return
        self._buffer.append(aligned)
        self._buffered_bytes += aligned.nbytes
        if self._buffered_bytes >= self._buffer_limit:
            self.flush()

    def _align(self, table: pa.Table) -> pa.Table:
        """Columns by name in schema order, cast to the table's Arrow types; NOT NULL enforced."""
        names = table.column_names
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise SchemaMismatchError(f"The data has duplicate columns {dup}; each column may appear once.")
        index = {n: i for i, n in enumerate(names)}
        lower: dict[str, list[str]] = {}
        for n in names:
            lower.setdefault(n.lower(), []).append(n)
        chosen: list[str] = []
        missing: list[str] = []
        for f in self._fields:
            if f.name in index:
                chosen.append(f.name)
            elif len(lower.get(f.name.lower(), [])) == 1:
                chosen.append(lower[f.name.lower()][0])
            else:
                missing.append(f.name)
        if missing:
            desc = ", ".join(f"'{m}' {type_to_sql(self._schema.field(m).type)}" for m in missing)
            raise SchemaMismatchError(
                f"The data written to {self._ctx.table_path} lacks column(s) {desc}. Select every table column "
                f"({', '.join(self._schema.field_names)}), using NULL literals for unknown values."
            )
        chosen_set = set(chosen)
        extra = [n for n in names if n not in chosen_set]
        if extra:
            raise SchemaMismatchError(
                f"The data written to {self._ctx.table_path} has column(s) {extra} that the table does not have "
                f"(columns: {', '.join(self._schema.field_names)}). Drop them, or add them to the table first."
            )
        columns = []
        for f, src_name, target in zip(self._fields, chosen, self._arrow_schema):
            col = self._cast_column(table.column(index[src_name]), f, target)
            if not target.nullable and col.null_count:
                raise SchemaMismatchError(
                    f"Column '{f.name}' is NOT NULL in the table but the data holds {col.null_count} NULL "
                    "value(s); filter them out or fill them (e.g. coalesce) before writing."
                )
            columns.append(col)
        return pa.Table.from_arrays(columns, schema=self._arrow_schema)

    def _cast_column(self, col: pa.ChunkedArray, f: DataField, target: pa.Field) -> pa.ChunkedArray:
        src = col.type
        want = target.type
        try:
            if pa.types.is_dictionary(src):
                col = col.cast(src.value_type)
                src = col.type
            if pa.types.is_timestamp(src) and pa.types.is_timestamp(want):
                if want.tz is None and src.tz is not None:
                    # A zoned instant into TIMESTAMP (no zone): keep the wall clock of its zone, as Spark's
                    # cast from TIMESTAMP to TIMESTAMP_NTZ does with the session time zone.
                    col = pc.local_timestamp(col)
                if col.type != want:  # unit change (ns -> us truncates) or zone relabel (same instant)
                    col = col.cast(want, safe=False)
                return self._truncate_timestamp(col, f)
            return cast_for_store(col, want, f.name, type_to_sql(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaMismatchError(
                f"Column '{f.name}' has type {src}, which cannot be written to the table column of type "
                f"{type_to_sql(f.type)} (Arrow {want}): {e}. Cast the column to the table's type first."
            ) from None

    @staticmethod
    def _truncate_timestamp(col: pa.ChunkedArray, f: DataField) -> pa.ChunkedArray:
        """Cut sub-precision digits (TIMESTAMP(3) holds milliseconds), as Java does when it stores a value."""
        p = getattr(f.type, "precision", None)
        if p is None or p >= 6 or col.null_count == len(col):
            return col
        return pc.floor_temporal(col, multiple=10 ** (6 - p), unit="microsecond")

    def _row_kinds(self, table: pa.Table) -> pa.ChunkedArray:
        if self._rowkind_field is None:
            return pa.chunked_array([pa.array(np.zeros(table.num_rows, dtype=np.int8))])
        col = table.column(self._rowkind_field)
        idx = pc.index_in(col, value_set=pa.array(ROW_KINDS))
        invalid = pc.is_null(idx)
        if pc.any(invalid).as_py():
            bad = pc.filter(col, invalid)[0].as_py()
            raise SchemaMismatchError(
                f"Column '{self._rowkind_field}' (option 'rowkind.field') holds {bad!r}, which is not a row kind; "
                "use one of '+I', '-U', '+U', '-D'."
            )
        kinds = idx.cast(pa.int8())
        if not self._is_pk and pc.any(pc.not_equal(kinds, 0)).as_py():
            raise SchemaMismatchError(
                f"Column '{self._rowkind_field}' (option 'rowkind.field') holds retractions or updates, but "
                f"{self._ctx.table_path} is an append table, which only accepts '+I' rows."
            )
        return kinds

    def _drop_ignored_kinds(self, table: pa.Table) -> pa.Table:
        """``ignore-delete`` drops -U/-D rows and ``ignore-update-before`` drops -U rows before writing."""
        if not (self._ignore_delete or self._ignore_update_before):
            return table
        dropped = [1, 3] if self._ignore_delete else [1]
        keep = pc.invert(pc.is_in(table.column(VALUE_KIND), value_set=pa.array(dropped, pa.int8())))
        return table.filter(keep)

    # ------------------------------------------------------------------------------------------ flush
    def flush(self) -> None:
        """Write everything buffered into data files (one or more per touched partition and bucket)."""
        if not self._buffer:
            return
        table = pa.concat_tables(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
        self._buffer = []
        self._buffered_bytes = 0
        work: list[tuple[_BucketState, pa.Table]] = []
        if self._router is not None:
            table = self._router.route(table)
        for part_bytes, part_values, part_table in self._split_partitions(table):
            num_buckets = self._partition_num_buckets(part_bytes)
            total = num_buckets if num_buckets > 0 or num_buckets == POSTPONE_BUCKET else -1
            if self._router is not None:  # cross-partition upsert: the router chose every row's bucket
                for bucket, sub in _split_routed(part_table):
                    work.append((self._state(part_bytes, part_values, bucket, total), sub))
                continue
            if self._dynamic:
                for bucket, sub, hashes in self._split_dynamic(part_bytes, part_values, part_table):
                    state = self._state(part_bytes, part_values, bucket, total)
                    state.key_hashes.append(hashes)
                    work.append((state, sub))
                continue
            for bucket, sub in self._split_buckets(part_table, num_buckets):
                work.append((self._state(part_bytes, part_values, bucket, total), sub))
        # Sorting and Parquet encoding release the GIL, so buckets are written on every core at once; each bucket
        # (its state, sequence numbers and files) is written by exactly one thread, in order.
        threads = min(len(work), _WRITE_THREADS)
        if threads <= 1:
            for state, sub in work:
                self._write_bucket(state, sub)
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-write") as pool:
            for _ in pool.map(lambda item: self._write_bucket(*item), work):
                pass  # re-raises the first failure; abort() then removes every file created so far

    def _split_partitions(self, table: pa.Table) -> Iterator[tuple[bytes, tuple, pa.Table]]:
        """(BinaryRow, values, rows in arrival order) of every distinct partition.

        One ``group_by`` finds the partitions, one ``take`` groups the rows; Python runs once per partition.
        """
        if not self._partition_fields:
            yield EMPTY_ROW, (), table
            return
        keys = [f.name for f in self._partition_fields]
        types = [f.type for f in self._partition_fields]
        indexed = table.select(keys).append_column(_ROW_INDEX, pa.array(np.arange(table.num_rows, dtype=np.int64)))
        grouped = indexed.group_by(keys, use_threads=False).aggregate([(_ROW_INDEX, "list")])
        lists = grouped.column(_ROW_INDEX + "_list").combine_chunks()
        lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
        rows = lists.flatten().to_numpy(zero_copy_only=False)
        # Partition identity is the BinaryRow bytes (Java compares partitions by bytes), so groups whose
        # values encode identically are written together.
        columns = grouped.select(keys).to_pydict()
        first_of: dict[bytes, int] = {}
        parts: list[tuple[bytes, tuple]] = []
        canonical = np.empty(grouped.num_rows, dtype=np.int64)
        for g in range(grouped.num_rows):  # one iteration per distinct partition
            values = tuple(columns[k][g] for k in keys)
            part = serialize_row(list(values), types)
            if part not in first_of:
                first_of[part] = len(parts)
                parts.append((part, values))
            canonical[g] = first_of[part]
        if len(parts) == 1:
            yield parts[0][0], parts[0][1], table
            return
        row_group = np.repeat(canonical, lengths)
        order = np.lexsort((rows, row_group))  # by partition, then arrival
        ordered = table.take(pa.array(rows[order]))
        counts = np.bincount(row_group, minlength=len(parts))
        start = 0
        for i, (part, values) in enumerate(parts):
            yield part, values, ordered.slice(start, int(counts[i]))
            start += int(counts[i])

    def _partition_num_buckets(self, part: bytes) -> int:
        if self._postpone_fixed:  # the partition's real bucket count, else postpone.default-bucket-num
            known = self._ctx.partition_buckets.get(part)
            return known if known is not None and known > 0 else self._options.get(POSTPONE_DEFAULT_BUCKET_NUM)
        if self._num_buckets <= 0:
            return self._num_buckets
        existing = self._ctx.partition_buckets.get(part)
        return existing if existing is not None and existing > 0 else self._num_buckets

    def _split_buckets(self, table: pa.Table, num_buckets: int) -> Iterator[tuple[int, pa.Table]]:
        """(bucket, rows in arrival order) of every bucket present, with one vectorised hash and one take."""
        if num_buckets <= 0:
            yield (POSTPONE_BUCKET if num_buckets == POSTPONE_BUCKET else 0), table
            return
        cols = [table.column(f.name) for f in self._bucket_fields]
        ids = bucket_ids(cols, [f.type for f in self._bucket_fields], num_buckets)
        yield from _group_by_bucket(table, ids, num_buckets)

    def _split_dynamic(self, part: bytes, values: tuple, table: pa.Table) -> Iterator[tuple[int, pa.Table, np.ndarray]]:
        """Dynamic bucket mode: (bucket, rows in arrival order, the key hashes they add to the index) per bucket,
        the buckets chosen by the partition's hash index (loaded on first use) and Java's rule for new keys."""
        index = self._partition_indexes.get(part)
        if index is None:
            where = self._ctx.table_path
            if self._partition_fields:
                where += " partition " + partition_path(list(values), self._partition_fields)
            index = self._partition_indexes[part] = PartitionIndex.load(
                self._ctx.fileio,
                self._ctx.hash_index.get(part, {}),
                self._options.get(DYNAMIC_BUCKET_TARGET_ROW_NUM),
                self._options.get(DYNAMIC_BUCKET_MAX_BUCKETS),
                where,
            )
        hashes = hash_rows([table.column(f.name) for f in self._key_fields], [f.type for f in self._key_fields])
        ids, is_new = index.assign_marking_new(hashes)
        # Bucket ids are below 32768 (Java's short): numpy's stable sort of uint16 is a radix sort, 4x faster.
        order = np.argsort(ids.astype(np.uint16), kind="stable")
        sorted_ids = ids[order]
        starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
        if len(starts) == 1:
            yield int(sorted_ids[0]), table, hashes[is_new]
            return
        ordered = table.take(pa.array(order))
        ends = np.r_[starts[1:], len(order)]
        for s, e in zip(starts, ends):
            rows = order[s:e]
            yield int(sorted_ids[s]), ordered.slice(int(s), int(e - s)), hashes[rows[is_new[rows]]]

    def _state(self, part: bytes, values: tuple, bucket: int, total: int) -> _BucketState:
        key = (part, bucket)
        state = self._states.get(key)
        if state is None:
            rel = (
                partition_path(list(values), self._partition_fields, self._default_part, self._legacy_name)
                if self._partition_fields
                else ""
            )
            bucket_dir = postpone.POSTPONE_DIRECTORY if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"
            directory = FileIO.join(self._ctx.table_path, self._data_dir or "", rel, bucket_dir)
            state = _BucketState(
                part, bucket, total, directory, str(uuid.uuid4()), int(self._ctx.sequence_bases.get(key, 0))
            )
            self._states[key] = state
        return state

    # ------------------------------------------------------------------------------------------ files
    def _write_bucket(self, state: _BucketState, table: pa.Table) -> None:
        n = table.num_rows
        if state.bucket == POSTPONE_BUCKET:
            # Java's postpone writer: the rows as they came (no sort, no fold), each with the unknown sequence -1.
            table = table.append_column(
                pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(np.full(n, -1, dtype=np.int64))
            )
            for chunk in self._chunks(self._pk_physical(table)):
                self._write_file(state, chunk, None)
            return
        seq = np.arange(state.next_sequence, state.next_sequence + n, dtype=np.int64)
        state.next_sequence += n
        if self._is_pk:
            table = table.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(seq))
            table = merge.sort_for_merge(table, self._key_names, self._seq_fields, self._seq_descending)
            if self._changelog_input:  # the sorted input, before the fold
                for chunk in self._chunks(self._pk_physical(table)):
                    self._write_file(state, chunk, None, changelog=True)
            table = self._fold(table)
            physical = self._pk_physical(table)
            for chunk in self._chunks(physical):
                self._write_file(state, chunk, None)
        else:
            for start, chunk in self._chunk_offsets(table):
                self._write_file(state, chunk, (int(seq[start]), int(seq[start + chunk.num_rows - 1])))

    def _fold(self, ordered: pa.Table) -> pa.Table:
        """Fold duplicate keys of rows sorted by (key, user sequence, _SEQUENCE_NUMBER), keeping retractions."""
        return merge.merge_sorted(
            ordered,
            self._key_names,
            self._engine,
            self._opts,
            self._merge_value_names,
            drop_retracts=False,
            primary_keys=self._schema.primary_keys,
        )

    def _pk_physical(self, table: pa.Table) -> pa.Table:
        cols = [table.column(k) for k in self._key_names]
        cols += [table.column(SEQUENCE_NUMBER), table.column(VALUE_KIND)]
        cols += [table.column(f.name) for f in self._fields]
        names = [f.name for f in self._key_file_fields] + [SEQUENCE_NUMBER, VALUE_KIND] + [f.name for f in self._fields]
        return pa.Table.from_arrays(cols, names=names)

    def _chunk_offsets(self, table: pa.Table) -> Iterator[tuple[int, pa.Table]]:
        """Slices of about ``target-file-size`` in-memory bytes each (Parquet files come out smaller)."""
        n = table.num_rows
        size = table.nbytes
        if n == 0:
            return
        if size <= self._target_size:
            yield 0, table
            return
        per_file = max(1, int(self._target_size * n // max(size, 1)))
        for start in range(0, n, per_file):
            yield start, table.slice(start, per_file)

    def _chunks(self, table: pa.Table) -> Iterator[pa.Table]:
        for _, chunk in self._chunk_offsets(table):
            yield chunk

    def _to_file_table(self, chunk: pa.Table) -> pa.Table:
        """Cast to the Parquet schema: timestamp units by precision, NOT NULL flags, field ids."""
        cols = []
        for name, target in zip(chunk.column_names, self._file_schema):
            col = chunk.column(name)
            if col.type != target.type:
                col = col.cast(target.type, safe=False)  # only timestamp units differ (already truncated)
            cols.append(col)
        return pa.Table.from_arrays(cols, schema=self._file_schema)

    def _write_file(
        self, state: _BucketState, chunk: pa.Table, seq_range: tuple[int, int] | None, changelog: bool = False
    ) -> None:
        """One Parquet file of ``chunk``; a changelog file (``changelog``) shares the bucket's name counter, as
        Java's path factory numbers data and changelog files of one writer alike."""
        fileio = self._ctx.fileio
        prefix = (
            self._changelog_prefix
            if changelog
            else (self._postpone_prefix if state.bucket == POSTPONE_BUCKET else self._prefix)
        )
        name = f"{prefix}{state.uuid}-{state.file_counter}{self._suffix}"
        state.file_counter += 1
        path = FileIO.join(state.directory, name)
        if not state.dir_created:
            fileio.mkdirs(state.directory)
            state.dir_created = True
        file_table = self._to_file_table(chunk)
        self._created.append(path)  # before writing: abort must also remove a half-written file
        # Bounded row groups let readers merge big key-overlap sections window by window (arrow_read).
        codecs = self._level_codecs.get(state.level)
        if codecs is None:
            codecs = self._level_codecs[state.level] = self._compression(state.level)
        codec, codec_level = codecs
        kwargs: dict[str, Any] = {
            **PARQUET_LAYOUT,
            "compression": codec,
            "row_group_size": ROW_GROUP_ROWS,
            **encoding_settings(file_table, self._writer_v2),
        }
        if codec_level is not None:
            kwargs["compression_level"] = codec_level
        with fileio.fs.open(path, "wb") as out:
            pq.write_table(file_table, out, **kwargs)
        size = fileio.size(path)
        embedded, index_file = self._file_index.write(fileio, chunk, path, self._created)
        meta = self._file_meta(name, size, chunk, seq_range, state)
        if embedded is not None or index_file is not None:
            meta = replace(meta, embedded_index=embedded, extra_files=(index_file,) if index_file else ())
        (state.changelog_files if changelog else state.files).append(meta)

    def _file_meta(
        self, name: str, size: int, chunk: pa.Table, seq_range: tuple[int, int] | None, state: _BucketState
    ) -> DataFileMeta:
        value_stats, stats_cols = collect_value_stats(chunk, self._fields, self._opts, self._value_mode_for)
        common = dict(
            file_name=name,
            file_size=size,
            row_count=chunk.num_rows,
            value_stats=value_stats,
            schema_id=self._schema.id,
            level=state.level,
            extra_files=(),
            creation_time_millis=_local_millis_as_utc(),
            file_source=state.file_source,
            value_stats_cols=stats_cols,
        )
        if not self._is_pk:
            lo, hi = seq_range if seq_range is not None else (0, 0)
            return DataFileMeta(
                min_key=EMPTY_ROW,
                max_key=EMPTY_ROW,
                key_stats=SimpleStats.empty(),
                min_sequence_number=lo,
                max_sequence_number=hi,
                delete_row_count=0,
                **common,
            )
        key_types = [f.type for f in self._key_file_fields]
        key_cols = [chunk.column(f.name) for f in self._key_file_fields]
        last = chunk.num_rows - 1
        min_key = serialize_row([c[0].as_py() for c in key_cols], key_types)
        max_key = serialize_row([c[last].as_py() for c in key_cols], key_types)
        key_stats = collect_stats(chunk, self._key_file_fields, SYSTEM_STATS_MODE)
        seq_mm = pc.min_max(chunk.column(SEQUENCE_NUMBER))
        deletes = pc.sum(pc.is_in(chunk.column(VALUE_KIND), value_set=_retract_kinds()).cast(pa.int64())).as_py()
        return DataFileMeta(
            min_key=min_key,
            max_key=max_key,
            key_stats=key_stats,
            min_sequence_number=int(seq_mm["min"].as_py()),
            max_sequence_number=int(seq_mm["max"].as_py()),
            delete_row_count=int(deletes or 0),
            **common,
        )

    # ------------------------------------------------------------------------------------------ compaction
    def write_compacted(
        self,
        partition: bytes,
        partition_values: tuple,
        bucket: int,
        total_buckets: int,
        table: pa.Table,
        level: int,
        first_sequence: int = 0,
    ) -> None:
        """Write rows that compaction already merged and ordered into files of ``level`` (``_FILE_SOURCE`` =
        COMPACT), rolled at ``target-file-size``: nothing is re-sorted, re-folded or re-sequenced.

        Primary-key rows carry their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` and must be in key order, so the
        files come out sorted and non-overlapping; append rows are numbered from ``first_sequence`` on (what
        Java's append compaction does: the outputs continue the first input's sequence numbers). Call it as
        often as needed per bucket; :meth:`prepare_commit` returns the files, and the caller adds the inputs
        as ``compact_before``."""
        if table.num_rows == 0:
            return
        state = self._level_state(
            self._compact_states, partition, partition_values, bucket, total_buckets, level, first_sequence
        )
        if self._is_pk:
            physical = self._pk_physical(table)
            for chunk in self._chunks(physical):
                self._write_file(state, chunk, None)
            return
        data = table.select([f.name for f in self._fields])
        for _, chunk in self._chunk_offsets(data):
            lo = state.next_sequence
            state.next_sequence += chunk.num_rows
            self._write_file(state, chunk, (lo, state.next_sequence - 1))

    def write_changelog(
        self, partition: bytes, partition_values: tuple, bucket: int, total_buckets: int, table: pa.Table, level: int
    ) -> None:
        """Write changelog rows a compaction produced (keys, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` = the change's
        kind, values; in key order) into changelog files of ``level``, as Java's compaction writes them (its
        changelog writer marks them APPEND, at the compaction's output level)."""
        if table.num_rows == 0:
            return
        state = self._level_state(self._changelog_states, partition, partition_values, bucket, total_buckets, level)
        state.file_source = FILE_SOURCE_APPEND
        for chunk in self._chunks(self._pk_physical(table)):
            self._write_file(state, chunk, None, changelog=True)

    def _level_state(
        self,
        states: dict[tuple[bytes, int, int], _BucketState],
        partition: bytes,
        partition_values: tuple,
        bucket: int,
        total_buckets: int,
        level: int,
        first_sequence: int = 0,
    ) -> _BucketState:
        key = (partition, bucket, level)
        state = states.get(key)
        if state is None:
            rel = (
                partition_path(list(partition_values), self._partition_fields, self._default_part, self._legacy_name)
                if self._partition_fields
                else ""
            )
            directory = FileIO.join(self._ctx.table_path, self._data_dir or "", rel, f"bucket-{bucket}")
            state = _BucketState(
                partition,
                bucket,
                total_buckets,
                directory,
                str(uuid.uuid4()),
                first_sequence,
                level=level,
                file_source=FILE_SOURCE_COMPACT,
            )
            states[key] = state
        return state

    # ------------------------------------------------------------------------------------------ end
    def prepare_commit(self) -> list[CommitMessage]:
        """Flush and describe the new files: one message per (partition, bucket) written since the last call."""
        self.flush()
        messages = []
        for state in [*self._states.values(), *self._compact_states.values(), *self._changelog_states.values()]:
            if state.files or state.changelog_files:
                hashes = b""
                if state.key_hashes:
                    hashes = sorted_unique(np.concatenate(state.key_hashes)).astype(">i4").tobytes()
                messages.append(
                    CommitMessage(
                        state.partition,
                        state.bucket,
                        state.total_buckets,
                        tuple(state.files),
                        writer=self._task_id,
                        key_hashes=hashes,
                        changelog_files=tuple(state.changelog_files),
                    )
                )
                state.files = []
                state.key_hashes = []
                state.changelog_files = []
        return messages

    def abort(self) -> None:
        """Delete every file this writer created and drop the buffer (the task failed or was cancelled)."""
        self._buffer = []
        self._buffered_bytes = 0
        errors = []
        for path in self._created:
            try:
                self._ctx.fileio.delete(path)
            except Exception as e:  # noqa: BLE001 - any store's delete error: keep deleting the rest, report at the end
                errors.append(f"{path}: {e}")
        self._created = []
        for state in [*self._states.values(), *self._compact_states.values(), *self._changelog_states.values()]:
            state.files = []
            state.changelog_files = []
        if errors:
            raise PaimonError(
                "Could not delete some data files of the aborted write (they are not referenced "
                "by any snapshot; remove them by hand or with orphan-file cleanup): " + "; ".join(errors)
            )

    @property
    def created_files(self) -> list[str]:
        """Paths of every file written so far (for tests and cleanup)."""
        return list(self._created)


def _split_routed(table: pa.Table) -> Iterator[tuple[int, pa.Table]]:
    """(bucket, rows in arrival order) per bucket of the router's :data:`BUCKET_COLUMN`, which is dropped."""
    ids = table.column(BUCKET_COLUMN).to_numpy()
    yield from _group_by_bucket(table.drop_columns([BUCKET_COLUMN]), ids, int(ids.max()) + 1 if len(ids) else 0)


def _group_by_bucket(table: pa.Table, ids: np.ndarray, num_buckets: int) -> Iterator[tuple[int, pa.Table]]:
    """(bucket, rows in arrival order) per distinct id of ``ids`` (one per row, below ``num_buckets``), with one
    stable sort and one take."""
    # numpy's stable sort is a radix sort for 16-bit integers: 4x faster than on int32 bucket ids.
    order = np.argsort(ids.astype(np.uint16) if num_buckets <= 65536 else ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    if len(starts) == 1:
        yield int(sorted_ids[0]), table
        return
    ordered = table.take(pa.array(order))
    ends = np.r_[starts[1:], len(order)]
    for s, e in zip(starts, ends):
        yield int(sorted_ids[s]), ordered.slice(int(s), int(e - s))


def write_batches(
    ctx: WriteContext, batches: Iterator[pa.RecordBatch] | Sequence[pa.RecordBatch], task_id: str = ""
) -> list[CommitMessage]:
    """Write all ``batches`` with one :class:`TableWriter`; on any error delete its files and re-raise."""
    writer = TableWriter(ctx, task_id)
    try:
        for batch in batches:
            writer.write(batch)
        return writer.prepare_commit()
    except BaseException:
        try:
            writer.abort()
        except PaimonError:
            pass
        raise
