"""How a bucket's rows become Parquet data files and their :class:`DataFileMeta` (Java's `FileStorePathFactory`,
`KeyValueFileWriterFactory`, `RollingFileWriter`).

One place decides the physical layout of a data file (primary-key tables: ``_KEY_*``, ``_SEQUENCE_NUMBER``,
``_VALUE_KIND``, then every table column, with the field ids Java sets), where it lives (partition directory,
``data-file.path-directory``, bucket directory), what it is called (prefix, UUID, counter, suffix), how it is
encoded (codec per level, bounded row groups, ``parquet_layout``, VARIANT columns shredded as
``variant.shreddingSchema`` asks), where it rolls (``target-file-size``), and how it
is described (keys, statistics, sequence range, retract count, and its file indexes: ``file-index.<type>.columns``
builds them, embedded in the manifest or in ``<file>.index``, as Java's ``DataFileIndexWriter`` does for every data
and changelog file). The writer decides *which* rows go into a bucket;
this module only turns them into files, and remembers each file it created so an abort can delete them.
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import replace
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyspark_paimon.datasource.write import postpone
from pyspark_paimon.datasource.write.open_buckets import BucketState
from pyspark_paimon.datasource.write.parquet_layout import PARQUET_LAYOUT, encoding_settings, is_writer_v2
from pyspark_paimon.datasource.write.stats import (
    SYSTEM_STATS_MODE,
    collect_stats,
    collect_value_stats,
    mode_resolver,
)
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.fileindex.index_spec import FileIndexSpec
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta, SimpleStats
from pyspark_paimon.metadata.rows.binary_row import EMPTY_ROW, serialize_row
from pyspark_paimon.metadata.rows.partition import partition_path
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_FILE_PREFIX,
    DATA_FILE_PREFIX,
    FILE_COMPRESSION,
    FILE_COMPRESSION_PER_LEVEL,
    FILE_COMPRESSION_ZSTD_LEVEL,
    FILE_SUFFIX_INCLUDE_COMPRESSION,
    PARQUET_WRITER_VERSION,
    POSTPONE_BUCKET,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, row_tracking_enabled, tracking_fields
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.arrow import to_parquet_arrow_schema
from pyspark_paimon.metadata.types.model import AtomicType, DataField
from pyspark_paimon.metadata.variant.shredding import shred_column, shredded_arrow_type, shredding_types

__all__ = [
    "DataFileWriter",
    "KEY_FIELD_PREFIX",
    "KEY_FIELD_ID_START",
    "SEQUENCE_NUMBER",
    "SEQUENCE_NUMBER_ID",
    "VALUE_KIND",
    "VALUE_KIND_ID",
    "ROW_GROUP_ROWS",
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

_SEQ_FIELD = DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, AtomicType("BIGINT", nullable=False))
_KIND_FIELD = DataField(VALUE_KIND_ID, VALUE_KIND, AtomicType("TINYINT", nullable=False))
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


@functools.cache
def _retract_kinds() -> pa.Array:
    """The row kinds that retract (-U, -D). Built on first use, not at import: ``pa.array`` imports pandas
    (~0.2 s), which a process that only plans (Spark's streaming-source runner) never needs otherwise."""
    return pa.array([1, 3], pa.int8())


def local_millis_as_utc() -> int:
    """Local wall-clock time read as UTC epoch millis (what Java's ``LocalDateTime.now()`` stores)."""
    d = _dt.datetime.now() - _EPOCH
    return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000


def contiguous_first_id(ids: pa.ChunkedArray | pa.Array) -> int | None:
    """The first row id of a compacted file whose stored ids run ``first, first + 1, ...`` (then readers that
    compute ids from the first row id, pypaimon and pypaimon-rust, agree with Java's, which read the stored ones);
    None otherwise, as Java leaves it."""
    values = np.asarray(ids.to_numpy() if isinstance(ids, pa.Array) else ids.combine_chunks().to_numpy())
    if len(values) == 0:
        return None
    first = int(values[0])
    return first if bool(np.array_equal(values, first + np.arange(len(values), dtype=values.dtype))) else None


class DataFileWriter:
    """Writes the data and changelog files of one table's buckets (see the module docstring).

    ``postpone_writer``: the files of the postpone bucket get a writer prefix naming ``commit_user`` (a raw write
    of a postpone-bucket table). Option errors (codec, sizes, stats modes) are raised on construction.
    """

    def __init__(
        self,
        fileio: FileIO,
        table_path: str,
        schema: TableSchema,
        opts: dict[str, str],
        key_fields: Sequence[DataField],
        *,
        commit_user: str = "",
        postpone_writer: bool = False,
    ) -> None:
        self._fileio = fileio
        self._table_path = table_path
        self._schema = schema
        self._opts = opts
        self._options = options = CoreOptions(opts)
        self._fields: list[DataField] = list(schema.fields)
        self._is_pk = bool(schema.primary_keys)
        self._partition_fields = list(schema.partition_fields)
        self._target_size = options.target_file_size(self._is_pk)
        codec = self._compression()
        self._level_codecs: dict[int, tuple[str, int | None]] = {0: codec}
        self._writer_v2 = is_writer_v2(options.get(PARQUET_WRITER_VERSION))
        self._prefix = options.get(DATA_FILE_PREFIX)
        self._changelog_prefix = options.get(CHANGELOG_FILE_PREFIX)
        # Java's postpone writers' files get their own writer prefix.
        self._postpone_prefix = postpone.writer_prefix(self._prefix, commit_user) if postpone_writer else ""
        self._suffix = (
            f".{options.get(FILE_COMPRESSION)}.parquet" if options.get(FILE_SUFFIX_INCLUDE_COMPRESSION) else ".parquet"
        )
        self._default_part = options.partition_default_name
        self._legacy_name = options.partition_legacy_name
        self._data_dir = options.data_file_directory  # data-file.path-directory, as Java lays files out
        self._value_mode_for = mode_resolver(self._opts, self._fields)

        self._key_names = [f.name for f in key_fields]
        self._key_file_fields = key_file_fields(key_fields)
        file_fields = (self._key_file_fields + system_file_fields() + self._fields) if self._is_pk else self._fields
        self._file_schema = to_parquet_arrow_schema(file_fields, field_ids=True)
        # Compactions of row-tracking tables store each row's _ROW_ID and _SEQUENCE_NUMBER (Java's write type then).
        self._tracking = row_tracking_enabled(opts) and not self._is_pk
        # VARIANT columns 'variant.shreddingSchema' names are written shredded (Java's ParquetFileFormat does so).
        self._shredded = shredding_types(opts, self._fields)
        for name, requested in self._shredded.items():
            pos = self._file_schema.get_field_index(name)
            self._file_schema = self._file_schema.set(
                pos, self._file_schema.field(pos).with_type(shredded_arrow_type(requested))
            )
        self._file_index = FileIndexSpec.of(opts, self._fields, table_path)
        self._created: list[str] = []

    @property
    def tracks_rows(self) -> bool:
        """Whether compacted files of this table store ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (row tracking)."""
        return self._tracking

    def level_codec(self, level: int) -> tuple[str, int | None]:
        """The (pyarrow codec, zstd level or None) of new files of ``level`` (``file.compression``, per level)."""
        codecs = self._level_codecs.get(level)
        if codecs is None:
            codecs = self._level_codecs[level] = self._compression(level)
        return codecs

    def data_file_name(self, uuid: str, counter: int) -> str:
        """A data file's name as Java's path factory makes it: ``<data-file.prefix><uuid>-<counter><suffix>``."""
        return f"{self._prefix}{uuid}-{counter}{self._suffix}"

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

    # ------------------------------------------------------------------------------------------ layout
    def directory(self, partition_values: tuple, bucket_dir: str) -> str:
        """The directory of a bucket: ``<table>/<data-file.path-directory>/<partition path>/<bucket_dir>``."""
        rel = (
            partition_path(list(partition_values), self._partition_fields, self._default_part, self._legacy_name)
            if self._partition_fields
            else ""
        )
        return FileIO.join(self._table_path, self._data_dir or "", rel, bucket_dir)

    def pk_physical(self, table: pa.Table) -> pa.Table:
        """A primary-key file's columns: key copies, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``, every table column."""
        cols = [table.column(k) for k in self._key_names]
        cols += [table.column(SEQUENCE_NUMBER), table.column(VALUE_KIND)]
        cols += [table.column(f.name) for f in self._fields]
        names = [f.name for f in self._key_file_fields] + [SEQUENCE_NUMBER, VALUE_KIND] + [f.name for f in self._fields]
        return pa.Table.from_arrays(cols, names=names)

    def chunk_offsets(self, table: pa.Table) -> Iterator[tuple[int, pa.Table]]:
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

    def chunks(self, table: pa.Table) -> Iterator[pa.Table]:
        """:meth:`chunk_offsets` without the offsets."""
        for _, chunk in self.chunk_offsets(table):
            yield chunk

    def _to_file_table(self, chunk: pa.Table) -> pa.Table:
        """Cast to the Parquet schema: timestamp units by precision, NOT NULL flags, field ids. A chunk with the
        row-tracking columns after the table's (:meth:`write_file` with ``tracked``) keeps them, with Java's ids."""
        schema = self._file_schema
        if chunk.num_columns > len(schema):
            schema = pa.schema([*schema, *to_parquet_arrow_schema(tracking_fields(), field_ids=True)])
        cols = []
        for name, target in zip(chunk.column_names, schema):
            col = chunk.column(name)
            if name in self._shredded:
                col = shred_column(col, self._shredded[name])
            elif col.type != target.type:
                col = col.cast(target.type, safe=False)  # only timestamp units differ (already truncated)
            cols.append(col)
        return pa.Table.from_arrays(cols, schema=schema)

    # ------------------------------------------------------------------------------------------ files
    def write_file(
        self,
        state: BucketState,
        chunk: pa.Table,
        seq_range: tuple[int, int] | None,
        changelog: bool = False,
        first_row_id: int | None = None,
    ) -> None:
        """One Parquet file of ``chunk``; a changelog file (``changelog``) shares the bucket's name counter, as
        Java's path factory numbers data and changelog files of one writer alike. ``first_row_id``: the id of the
        chunk's first row (a data-evolution compaction's output, whose rows' ids run on from it)."""
        fileio = self._fileio
        prefix = (
            self._changelog_prefix
            if changelog
            else (self._postpone_prefix if state.bucket == POSTPONE_BUCKET else self._prefix)
        )
        name = f"{prefix}{state.uuid}-{state.file_counter}{self._suffix}"  # data_file_name, with its prefix
        state.file_counter += 1
        path = FileIO.join(state.directory, name)
        if not state.dir_created:
            fileio.mkdirs(state.directory)
            state.dir_created = True
        file_table = self._to_file_table(chunk)
        self._created.append(path)  # before writing: abort must also remove a half-written file
        size = self._write_parquet(path, file_table, state.level)
        meta = self._file_meta(name, size, chunk, seq_range, state)
        if chunk.num_columns > len(self._file_schema):
            # The rows' ids stored, as Java's compactions store them. Java also lists every column and the two in
            # _WRITE_COLS; we leave it unset (Java finds the stored columns by field id either way, and
            # pypaimon-rust 0.4 refuses a _ROW_ID write column) and list the statistics' columns explicitly.
            names = tuple(f.name for f in self._fields)
            meta = replace(
                meta,
                first_row_id=contiguous_first_id(chunk.column(ROW_ID)),
                value_stats_cols=names if meta.value_stats_cols is None else meta.value_stats_cols,
            )
        if first_row_id is not None:
            meta = replace(meta, first_row_id=first_row_id)
        embedded, index_file = self._file_index.write(fileio, chunk, path, self._created)
        if embedded is not None or index_file is not None:
            meta = replace(meta, embedded_index=embedded, extra_files=(index_file,) if index_file else ())
        (state.changelog_files if changelog else state.files).append(meta)

    def _write_parquet(self, path: str, file_table: pa.Table, level: int) -> int:
        """Write ``file_table`` (the file schema) as the Parquet file ``path`` in this table's layout at LSM
        ``level``; returns its size."""
        # Bounded row groups let readers merge big key-overlap sections window by window (arrow_read).
        codec, codec_level = self.level_codec(level)
        kwargs: dict[str, Any] = {
            **PARQUET_LAYOUT,
            "compression": codec,
            "row_group_size": ROW_GROUP_ROWS,
            **encoding_settings(file_table, self._writer_v2),
        }
        if codec_level is not None:
            kwargs["compression_level"] = codec_level
        self._fileio.write_stream(path, lambda out: pq.write_table(file_table, out, **kwargs))
        return self._fileio.size(path)

    def resequenced(self, path: str, meta: DataFileMeta, offset: int) -> DataFileMeta:
        """Rewrite the primary-key file ``path`` (described by ``meta``, not yet committed) in place with every
        ``_SEQUENCE_NUMBER`` ``offset`` higher; returns its new description. Only sequence numbers change: rows,
        their order (so a file index beside it stays true), keys and statistics are the same."""
        with self._fileio.open_input(path) as f:
            stored = pq.read_table(f)
        column = stored.column(SEQUENCE_NUMBER)
        shifted = pc.add_checked(column, pa.scalar(offset, column.type))
        file_table = self._to_file_table(
            stored.set_column(stored.schema.get_field_index(SEQUENCE_NUMBER), SEQUENCE_NUMBER, shifted)
        )
        size = self._write_parquet(path, file_table, meta.level)
        return replace(
            meta,
            file_size=size,
            min_sequence_number=meta.min_sequence_number + offset,
            max_sequence_number=meta.max_sequence_number + offset,
        )

    def _file_meta(
        self, name: str, size: int, chunk: pa.Table, seq_range: tuple[int, int] | None, state: BucketState
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
            creation_time_millis=local_millis_as_utc(),
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

    def delete_created(self) -> list[str]:
        """Delete every file created so far; returns ``"<path>: <error>"`` for each that could not be deleted."""
        errors = []
        for path in self._created:
            try:
                self._fileio.delete(path)
            except Exception as e:  # noqa: BLE001 - any store's delete error: keep deleting the rest, report at the end
                errors.append(f"{path}: {e}")
        self._created = []
        return errors
