"""Reading one data file into Arrow as the read schema sees it (Java's ``SchemaEvolutionUtil`` and its format
readers): whole, streamed batch by batch, or the rows of one key window.

* **Schema evolution** (:func:`_conform_table`): every data file is described by the schema it was written
  with (its ``_SCHEMA_ID``, looked up on the file's own branch). Columns are matched to the read schema by
  **field id** and looked up **by name** in the file, so renames work, dropped columns disappear, columns
  added later read as NULL, and type changes are cast. Parquet field ids are deliberately not used:
  pypaimon writes none. VARIANT columns, plain or shredded, come out as plain values (``metadata/variant``).
* **Deletion vectors** (:func:`_keep_mask`): a file with a deletion file in the split loses its deleted row
  positions as it is read, raw or merged. Positions count rows of the whole file, so when row groups are
  skipped the positions are mapped through the row groups' row counts from the Parquet footer.
* **Row-group skipping** (:func:`select_row_groups`): a streamed read skips the Parquet row groups whose
  statistics prove that no row matches the context's pushed predicate.
* **Key windows** (:func:`plan_windows`, :func:`read_window`): a key-overlap section larger than
  ``ReadContext.merge_window_bytes`` is cut into [lo, hi) ranges of its first key column, chosen from Parquet
  row-group statistics, each read from the row groups that overlap it (the bounded-memory merge of
  :mod:`~pyspark_paimon.datasource.read.merged_read`). Without usable statistics (ORC, NULLs, key types whose
  Parquet order may differ from Arrow's) there are no windows.
* **Errors**: a missing, truncated or corrupt file raises :class:`DataFileError` naming the file and the way out.

This module never imports pyspark.
"""

from __future__ import annotations

import decimal
import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyspark_paimon.datasource.merge.merge import SEQUENCE_NUMBER, VALUE_KIND
from pyspark_paimon.datasource.read.read_context import ReadColumns, ReadContext, ReadMetrics
from pyspark_paimon.errors import CorruptMetadataError, DataFileError, OptionError, SchemaError, StorageError
from pyspark_paimon.metadata.io.fileio import FileIO, storage_error
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import CoreOptions
from pyspark_paimon.metadata.schema.row_tracking import (
    ROW_ID,
    ROW_ID_FIELD_ID,
    SEQUENCE_NUMBER_FIELD_ID,
    TRACKING_COLUMNS,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.arrow import cast_array, to_arrow_type
from pyspark_paimon.metadata.types.casts import convert_array, evolution_problem, same_but_nullability
from pyspark_paimon.metadata.types.model import DataField, DataType, RowType
from pyspark_paimon.metadata.variant.shredding import rebuild_column
from pyspark_paimon.planner.predicate import Leaf, could_match_stats
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "Window",
    "format_of",
    "kept_rows",
    "plan_windows",
    "read_data_file",
    "read_file_columns",
    "read_window",
    "select_row_groups",
    "stream_data_file",
    "with_tracking_columns",
]

_SYSTEM_TYPES = {SEQUENCE_NUMBER: pa.int64(), VALUE_KIND: pa.int8()}
_TRACKING_IDS = frozenset((ROW_ID_FIELD_ID, SEQUENCE_NUMBER_FIELD_ID))
# What reading Parquet statistics written by any engine may raise (a timestamp or date outside Python's range
# raises OverflowError). Statistics we cannot read never skip anything; other errors are bugs and propagate.
_PARQUET_STATS_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


# ------------------------------------------------------------------------------------------------------
# Type conformance (schema evolution)
# ------------------------------------------------------------------------------------------------------
def _conversion_error(arr: pa.Array, target: str, column: str, file_name: str) -> Callable[[str], SchemaError]:
    def error(reason: str) -> SchemaError:
        return SchemaError(
            f"Column '{column}' of data file '{file_name}' holds {arr.type} values that cannot be converted to the "
            f"read type {target}: {reason}. The column type was changed in a way that existing data does not fit; "
            "read with the schema the file was written with (time travel) or rewrite the data."
        )

    return error


def _to_read_type(arr: pa.Array, target: pa.DataType, column: str, file_name: str) -> pa.Array:
    """``arr`` (a column of ``file_name``) as the read type ``target``."""
    # Spark timestamps are microseconds: nanosecond files (INT96, TIMESTAMP(9), ORC) are truncated.
    safe = not (pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target))
    return cast_array(arr, target, _conversion_error(arr, str(target), column, file_name), safe=safe)


def _conform(arr: pa.Array, file_type: DataType, target_type: DataType, column: str, file_name: str) -> pa.Array:
    """``arr`` (read with the file's type) converted to ``target_type``; ROW members are matched by id; a VARIANT
    column (plain or shredded) becomes plain values."""
    if target_type.root == "VARIANT" and file_type.root == "VARIANT" and pa.types.is_struct(arr.type):
        return rebuild_column(arr)
    target_arrow = to_arrow_type(target_type, column)
    if isinstance(target_type, RowType) and isinstance(file_type, RowType) and pa.types.is_struct(arr.type):
        by_id = {f.id: f for f in file_type.fields}
        present = {arr.type.field(i).name for i in range(arr.type.num_fields)}
        children = []
        for tf in target_type.fields:
            ff = by_id.get(tf.id)
            if ff is None or ff.name not in present:
                children.append(pa.nulls(len(arr), to_arrow_type(tf.type, f"{column}.{tf.name}")))
            else:
                child = pc.struct_field(arr, ff.name)
                children.append(_conform(child, ff.type, tf.type, f"{column}.{tf.name}", file_name))
        mask = pc.is_null(arr) if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target_arrow), mask=mask)
    if not same_but_nullability(file_type, target_type):  # the column's type changed after the file was written
        problem = evolution_problem(file_type, target_type)
        if problem:  # a change another engine made that a read here would not convert as Java does
            raise SchemaError(
                f"Column '{column}' of data file '{file_name}' was written as {file_type}, and the table now declares "
                f"{target_type}: {problem}. Read the column with Paimon (Java), or with the schema the file was "
                "written with (time travel)."
            )
        error = _conversion_error(arr, str(target_type), column, file_name)
        return convert_array(_to_read_type(arr, to_arrow_type(file_type, column), column, file_name), file_type,
                             target_type, error, column)  # fmt: skip
    return _to_read_type(arr, target_arrow, column, file_name)


def _conform_table(
    data: pa.Table | pa.RecordBatch,
    targets: Sequence[DataField],
    file_schema: TableSchema,
    file_name: str,
    system: Sequence[str],
) -> pa.Table:
    """Columns ``targets`` (by field id from ``file_schema``) plus ``system`` columns, in read types."""
    n = data.num_rows
    by_id = {f.id: f for f in file_schema.fields}
    names = data.schema.names
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    for tf in targets:
        ff = by_id.get(tf.id)
        if ff is None or ff.name not in names:
            arr = pa.nulls(n, to_arrow_type(tf.type, tf.name))
        else:
            col = data.column(ff.name)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            arr = _conform(col, ff.type, tf.type, tf.name, file_name)
        arrays.append(arr)
        fields.append(pa.field(tf.name, arr.type))
    for name in system:
        if name not in names:
            raise CorruptMetadataError(
                f"Data file '{file_name}' of a primary-key table has no '{name}' column; "
                "it is not a Paimon key-value file."
            )
        col = data.column(name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        arr = _to_read_type(col, _SYSTEM_TYPES[name], name, file_name)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    if not arrays:
        return pa.table({"__n": pa.nulls(n)}).drop_columns(["__n"])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# ------------------------------------------------------------------------------------------------------
# File access
# ------------------------------------------------------------------------------------------------------
def format_of(f: DataFileMeta, options: CoreOptions) -> str:
    """A data file's format: from its name's extension, else the table's ``file.format`` (the reader of a split,
    :mod:`~pyspark_paimon.datasource.read.routing`, decides by it too)."""
    name = f.file_name.lower()
    for fmt in ("parquet", "orc", "avro", "lance", "csv", "json"):
        if name.endswith("." + fmt):
            return fmt
    return options.file_format


# Data files up to this size (by their manifest's file size) are read whole before parsing (_FileReader).
_WHOLE_FILE_BYTES = 1 << 20


class _FileReader:
    """One open data file: its physical column names and batch/whole reads of chosen columns.

    Every I/O error is turned into a :class:`DataFileError` naming the file and the way out: a raw
    ``FileNotFoundError`` or ``ArrowInvalid`` from deep inside pyarrow tells a user neither which file of
    which table is damaged nor what to do about it.
    """

    def __init__(self, fileio: FileIO, path: str, fmt: str, file_name: str, size: int | None = None):
        self.file_name = file_name
        self.uri = fileio.uri(path)
        self.fmt = fmt
        if fmt not in ("parquet", "orc"):
            raise OptionError(
                f"Data file '{file_name}' is in {fmt} format, which pyspark-paimon cannot read "
                "(parquet and orc only). Rewrite the table with 'file.format' = 'parquet'."
            )
        self._handle: Any
        with self.errors():
            if size is not None and size <= _WHOLE_FILE_BYTES:
                # A small file is read with one call, then parsed in memory: the reader's several small reads
                # (footer length, footer, column chunks) through a Python file object cost more than the bytes
                # (a quarter of the time per file of a table of many small files), and on object stores each
                # could be a request.
                with fileio.open_input(path) as handle:
                    self._handle = pa.BufferReader(handle.read())
            else:
                self._handle = fileio.open_input(path)
        try:
            with self.errors():
                if fmt == "parquet":
                    self.parquet = pq.ParquetFile(self._handle, coerce_int96_timestamp_unit="us")
                    self.names = set(self.parquet.schema_arrow.names)
                else:
                    import pyarrow.orc as orc  # noqa: PLC0415 - optional: some pyarrow builds have no ORC

                    self._orc = orc.ORCFile(self._handle)
                    self.names = set(self._orc.schema.names)
        except BaseException:
            self._handle.close()
            raise

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Translate I/O and decoding errors of this file into a :class:`DataFileError`."""
        try:
            yield
        except FileNotFoundError as exc:
            raise DataFileError(
                f"Data file {self.uri} is missing, but the snapshot being read references it ({exc}). It was deleted "
                "outside Paimon or by an unsafe cleanup. Restore the file, or roll the branch back to a snapshot or "
                "tag that does not reference it (Table.maintenance.rollback_to), or read an older tag."
            ) from exc
        except StorageError:
            raise
        except OSError as exc:
            if exc.errno is None:  # a decoding failure pyarrow reports as an OSError (a truncated footer)
                raise self._corrupt(exc) from exc
            # The store failed to serve the bytes (pyarrow passes the file object's error on): not corruption.
            raise storage_error("read", self.uri, exc) from exc
        except pa.ArrowException as exc:
            raise self._corrupt(exc) from exc

    def _corrupt(self, exc: BaseException) -> DataFileError:
        return DataFileError(
            f"Data file {self.uri} cannot be read; it is truncated or corrupt ({exc}). Restore it from a copy, or "
            "roll the branch back to a snapshot or tag that does not reference it (Table.maintenance.rollback_to)."
        )

    def __enter__(self) -> "_FileReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._handle.close()

    def read(self, columns: list[str], row_groups: list[int] | None = None) -> pa.Table:
        with self.errors():
            if self.fmt == "parquet":
                if row_groups is not None:
                    return self.parquet.read_row_groups(row_groups, columns=columns, use_threads=False)
                return self.parquet.read(columns=columns, use_threads=False)
            return self._orc.read(columns=columns)

    def group_rows(self) -> np.ndarray:
        """Rows per row group (Parquet), or of the whole file (ORC is read stripe after stripe, never skipped):
        what maps file-global deletion-vector positions onto the rows a read returns."""
        with self.errors():
            if self.fmt == "parquet":
                md = self.parquet.metadata
                return np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)], dtype=np.int64)
            return np.array([self._orc.nrows], dtype=np.int64)

    def batches(
        self, columns: list[str], batch_size: int, row_groups: list[int] | None = None
    ) -> Iterator[pa.RecordBatch]:
        with self.errors():
            if self.fmt == "parquet":
                if row_groups is not None and not row_groups:
                    return
                yield from self.parquet.iter_batches(
                    batch_size=batch_size, columns=columns, use_threads=False, row_groups=row_groups
                )
                return
            for i in range(self._orc.nstripes):
                stripe = self._orc.read_stripe(i, columns=columns)
                yield from (stripe.slice(o, batch_size) for o in range(0, stripe.num_rows, batch_size))


def _physical_columns(
    reader: _FileReader, targets: Sequence[DataField], file_schema: TableSchema, system: Sequence[str]
) -> list[str]:
    by_id = {f.id: f for f in file_schema.fields}
    cols = []
    for tf in targets:
        ff = by_id.get(tf.id)
        if ff is not None and ff.name in reader.names and ff.name not in cols:
            cols.append(ff.name)
    cols.extend(s for s in system if s in reader.names)
    return cols


def _deleted_positions(ctx: ReadContext, split: DataSplit, f: DataFileMeta) -> np.ndarray | None:
    """The deleted row positions of ``f`` (ascending), or None when it has no deletion vector."""
    dfile = split.deletion_files.get(f.file_name)
    if dfile is None:
        return None
    return read_deletion_vector(ctx.fileio, dfile, f.file_name)


def _keep_mask(
    deleted: np.ndarray, group_rows: np.ndarray, selected: Sequence[int] | None, file_name: str
) -> np.ndarray:
    """True for each row a read of the ``selected`` row groups (in that order; None = all) returns that
    ``deleted`` (file-global positions) does not name."""
    starts = np.concatenate([[0], np.cumsum(group_rows)]).astype(np.int64)
    total = int(starts[-1])
    if len(deleted) and int(deleted[-1]) >= total:
        raise CorruptMetadataError(
            f"The deletion vector of data file '{file_name}' names row position {int(deleted[-1])}, but the file "
            f"has {total} rows: the deletion vector belongs to another file or is corrupt. Restore the table's "
            "index files, or roll the table back to a snapshot before the damage (Table.maintenance.rollback_to)."
        )
    sel = np.arange(len(group_rows)) if selected is None else np.asarray(selected, dtype=np.int64)
    out_start = np.concatenate([[0], np.cumsum(group_rows[sel])]).astype(np.int64)
    mask = np.ones(int(out_start[-1]), dtype=bool)
    if len(deleted) and len(sel):
        group = np.searchsorted(starts, deleted, side="right") - 1
        slot = np.full(len(group_rows), -1, dtype=np.int64)
        slot[sel] = np.arange(len(sel))
        where = slot[group]
        hit = where >= 0
        mask[out_start[where[hit]] + (deleted[hit] - starts[group[hit]])] = False
    return mask


def kept_rows(ctx: ReadContext, split: DataSplit, f: DataFileMeta, rows: int) -> np.ndarray | None:
    """True for each of ``rows`` rows (``f``'s positions) that ``f``'s deletion vector in ``split`` keeps; None when
    it has none."""
    deleted = _deleted_positions(ctx, split, f)
    if deleted is None:
        return None
    return _keep_mask(deleted, np.array([rows], dtype=np.int64), None, f.file_name)


def read_file_columns(
    fileio: FileIO, path: str, f: DataFileMeta, options: CoreOptions, columns: Sequence[str]
) -> pa.Table:
    """The physical ``columns`` of data file ``f`` at ``path`` exactly as stored (every row, no schema evolution,
    no deletion vector): what an index over the file's row positions is built from."""
    with _FileReader(fileio, path, format_of(f, options), f.file_name, f.file_size) as reader:
        return reader.read([c for c in columns if c in reader.names])


def read_data_file(
    ctx: ReadContext,
    split: DataSplit,
    f: DataFileMeta,
    targets: Sequence[DataField],
    system: Sequence[str] = (),
    window: tuple[int, int] | None = None,
) -> pa.Table:
    """The whole file ``f`` as the ``targets`` columns (read types, evolution applied) plus ``system``,
    without the rows its deletion vector names. ``window`` (``[start, stop)`` positions; a data-evolution read
    whose filter bounds ``_ROW_ID``): only those rows, decoding only the Parquet row groups that hold them."""
    file_schema = ctx.file_schema(split, f)
    deleted = _deleted_positions(ctx, split, f)
    with _FileReader(
        ctx.fileio, split.file_path(f), format_of(f, ctx.core_options()), f.file_name, f.file_size
    ) as reader:
        columns = _physical_columns(reader, targets, file_schema, system)
        data = reader.read(columns) if window is None else _read_window(reader, columns, window)
        if deleted is not None:
            keep = _keep_mask(deleted, reader.group_rows(), None, f.file_name)
            data = data.filter(pa.array(keep if window is None else keep[window[0] : window[1]]))
    return _conform_table(data, targets, file_schema, f.file_name, system)


def _read_window(reader: "_FileReader", columns: list[str], window: tuple[int, int]) -> pa.Table:
    """Rows ``[start, stop)`` of the file: the row groups that overlap them (all of an ORC file), sliced."""
    start, stop = window
    group_rows = reader.group_rows()
    starts = np.concatenate([[0], np.cumsum(group_rows)]).astype(np.int64)
    if reader.fmt != "parquet":
        return reader.read(columns).slice(start, stop - start)
    selected = [g for g in range(len(group_rows)) if starts[g] < stop and starts[g + 1] > start]
    if not selected:  # no row, the file's columns, nothing decoded (pyarrow 18 refuses an empty row-group list)
        schema = reader.parquet.schema_arrow
        return pa.schema([schema.field(c) for c in columns]).empty_table()
    data = reader.read(columns, selected)
    return data.slice(start - int(starts[selected[0]]), stop - start)


def _base(t: DataType) -> DataType:
    return t.copy(nullable=True)


def select_row_groups(
    pq_file: pq.ParquetFile, leaves: Sequence[Leaf], metrics: ReadMetrics | None = None
) -> list[int] | None:
    """Row groups of ``pq_file`` whose column statistics do not rule out every leaf (None = all of them).

    ``leaves`` name the file's physical (top-level, primitive) columns. Missing statistics, or statistics
    that do not compare with the literal, keep the row group: this only skips, never filters.
    """
    if not leaves:
        return None
    md = pq_file.metadata
    index = {md.schema.column(i).path: i for i in range(md.num_columns)}
    wanted = [(index[leaf.column], leaf) for leaf in leaves if leaf.column in index]
    if not wanted:
        return None
    keep = []
    for rg in range(md.num_row_groups):
        meta = md.row_group(rg)
        ok = True
        for col, leaf in wanted:
            try:
                st = meta.column(col).statistics
                if st is None:
                    continue
                lo, hi = _min_max(st) if st.has_min_max else (None, None)
                nulls = st.null_count if st.has_null_count else None
            except _PARQUET_STATS_ERRORS:  # unreadable statistics: keep the row group
                continue
            if not could_match_stats(leaf, lo, hi, nulls, meta.num_rows):
                ok = False
                break
        if ok:
            keep.append(rg)
    if metrics is not None:
        metrics.row_groups_total += md.num_row_groups
        metrics.row_groups_skipped += md.num_row_groups - len(keep)
    return keep


def _min_max(st: pq.Statistics) -> tuple[Any, Any]:
    """A row group's min and max as Python values.

    pyarrow before 23 cannot convert the statistics of a DECIMAL stored as INT32/INT64 (the layout Java and
    we write for precision <= 18) and raises; their raw unscaled integers are scaled here instead, so such
    columns keep their row-group skipping on every supported pyarrow."""
    logical = st.logical_type
    if st.physical_type in ("INT32", "INT64") and logical is not None and logical.type == "DECIMAL":
        scale = int(json.loads(logical.to_json())["scale"])
        return (decimal.Decimal(st.min_raw).scaleb(-scale), decimal.Decimal(st.max_raw).scaleb(-scale))
    return st.min, st.max


def _file_leaves(ctx: ReadContext, file_schema: TableSchema, reader: "_FileReader") -> list[Leaf]:
    """``ctx.pushed`` renamed to the file's columns (by field id), only where the file type is unchanged.

    Partition columns are left out: partitions were pruned exactly, and chain reads relabel them.
    """
    if not ctx.pushed or reader.fmt != "parquet":
        return []
    by_id = {f.id: f for f in file_schema.fields}
    parts = set(ctx.schema.partition_keys)
    out = []
    for leaf in ctx.pushed:
        if leaf.column in parts or not ctx.schema.has_field(leaf.column):
            continue
        cf = ctx.schema.field(leaf.column)
        ff = by_id.get(cf.id)
        if ff is None or ff.name not in reader.names or _base(ff.type) != _base(cf.type):
            continue
        out.append(Leaf(ff.name, leaf.op, leaf.value, leaf.negated))
    return out


def stream_data_file(
    ctx: ReadContext,
    split: DataSplit,
    f: DataFileMeta,
    targets: Sequence[DataField],
    system: Sequence[str],
    skip_row_groups: ReadMetrics | None = None,
) -> Iterator[pa.Table]:
    """Stream ``f``. Raw reads pass ``skip_row_groups`` (the read's metrics, which count what was skipped):
    row groups ``ctx.pushed`` rules out are not read."""
    file_schema = ctx.file_schema(split, f)
    deleted = _deleted_positions(ctx, split, f)
    tracked = [t.name for t in targets if t.id in _TRACKING_IDS]
    with _FileReader(
        ctx.fileio, split.file_path(f), format_of(f, ctx.core_options()), f.file_name, f.file_size
    ) as reader:
        cols = _physical_columns(reader, targets, file_schema, system)
        stored = [name for name in tracked if name in reader.names and name not in cols]
        row_groups = None
        if skip_row_groups is not None and reader.fmt == "parquet":
            row_groups = select_row_groups(reader.parquet, _file_leaves(ctx, file_schema, reader), skip_row_groups)
        keep = None if deleted is None else _keep_mask(deleted, reader.group_rows(), row_groups, f.file_name)
        positions = _positions(reader.group_rows(), row_groups) if tracked else None
        offset = 0  # rows of the selected row groups read so far: where this batch starts in ``keep``
        for batch in reader.batches([*cols, *stored], ctx.batch_size, row_groups):
            n = batch.num_rows
            at = None if positions is None else positions[offset : offset + n]
            if keep is not None:
                mask = keep[offset : offset + n]
                batch = batch.filter(pa.array(mask))
                at = None if at is None else at[mask]
            offset += n
            if batch.num_rows:
                data = _conform_table(batch, targets, file_schema, f.file_name, system)
                if at is not None:
                    data = with_tracking_columns(data, f, at, batch)
                yield data


def _positions(group_rows: np.ndarray, selected: Sequence[int] | None) -> np.ndarray:
    """The file-global row position of every row a read of the ``selected`` row groups (None = all) returns."""
    if selected is None:
        return np.arange(int(group_rows.sum()), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(group_rows)]).astype(np.int64)
    parts = [np.arange(starts[g], starts[g + 1], dtype=np.int64) for g in selected]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def with_tracking_columns(
    data: pa.Table, f: DataFileMeta, positions: np.ndarray, stored: pa.Table | pa.RecordBatch
) -> pa.Table:
    """``data`` with its ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` columns (where present) filled for rows at file
    ``positions``: a value ``stored`` in the file wins where non-NULL (Java's ``DataFileRecordReader``), else the row
    id is ``f.first_row_id + position`` and the sequence number ``f.max_sequence_number``."""
    n = data.num_rows
    for name in TRACKING_COLUMNS:
        index = data.schema.get_field_index(name)
        if index < 0:
            continue
        kept = None
        if name in stored.schema.names:  # a compacted file stores its rows' ids (Java writes them, first_row_id unset)
            column = stored.column(name)
            kept = (column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column).cast(pa.int64())
            if kept.null_count == 0:
                data = data.set_column(index, pa.field(name, pa.int64(), nullable=False), kept)
                continue
        if name == ROW_ID:
            if f.first_row_id is None:
                raise CorruptMetadataError(
                    f"Data file '{f.file_name}' of a row-tracking table has no first row id in its manifest entry "
                    "and stores no id for some rows, so they have none. Read the table without the row-tracking "
                    "columns, or with Paimon."
                )
            computed = pa.array(positions + f.first_row_id, pa.int64())
        else:
            computed = pa.repeat(pa.scalar(f.max_sequence_number, pa.int64()), n)
        if kept is not None:
            computed = pc.coalesce(kept, computed)
        data = data.set_column(index, pa.field(name, pa.int64(), nullable=False), computed)
    return data


# ------------------------------------------------------------------------------------------------------
# Key windows of a large section (the bounded-memory merge)
# ------------------------------------------------------------------------------------------------------
def _windowable(t: pa.DataType) -> bool:
    """Arrow types whose Parquet statistics decode to Python values ordered exactly like Arrow sorts them."""
    return pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_date32(t)


Window = tuple[Any, Any, list[list[int]]]  # [lo, hi) on the first key column (None = open), row groups per file


def plan_windows(
    ctx: ReadContext, split: DataSplit, plan: ReadColumns, ordered: Sequence[DataFileMeta]
) -> list[Window] | None:
    """Windows [lo, hi) on the first trimmed-PK column covering the section, about ``merge_window_bytes`` of
    row groups each, or None when the whole-section merge must be used (non-Parquet file, key type without
    exact Parquet ordering, missing statistics or NULLs, or a single window). Windows split on values of
    the first key column, so all records of one key land in exactly one window."""
    try:
        return _plan_windows_unchecked(ctx, split, plan, ordered)
    except _PARQUET_STATS_ERRORS:  # odd statistics: the whole-section merge is always right
        return None


def _plan_windows_unchecked(
    ctx: ReadContext, split: DataSplit, plan: ReadColumns, ordered: Sequence[DataFileMeta]
) -> list[Window] | None:
    options = ctx.core_options()
    key_field = ctx.schema.field(plan.key_names[0])
    read_type = to_arrow_type(key_field.type, key_field.name)
    if not _windowable(read_type):
        return None
    groups: list[tuple[Any, Any, int, int, int]] = []  # (min, max, size, file index, row group)
    for fi, f in enumerate(ordered):
        if format_of(f, options) != "parquet":
            return None
        file_schema = ctx.file_schema(split, f)
        ff = {x.id: x for x in file_schema.fields}.get(key_field.id)
        if ff is None or _base(ff.type) != _base(key_field.type):
            return None
        with _FileReader(ctx.fileio, split.file_path(f), "parquet", f.file_name) as reader:
            md = reader.parquet.metadata
        col = next((i for i in range(md.num_columns) if md.schema.column(i).path == ff.name), None)
        if col is None:
            return None
        for rg in range(md.num_row_groups):
            meta = md.row_group(rg)
            if meta.num_rows == 0:
                continue
            st = meta.column(col).statistics
            if st is None or not st.has_min_max or not st.has_null_count or st.null_count:
                return None
            lo, hi = st.min, st.max
            if type(lo) is not type(hi) or (groups and type(lo) is not type(groups[0][0])) or not lo <= hi:
                return None
            size = sum(meta.column(c).total_compressed_size for c in range(meta.num_columns))
            groups.append((lo, hi, size, fi, rg))
    if not groups:
        return None
    # Walk row groups by min value; start a new window at a row group's min once the budget is used up.
    groups.sort(key=lambda g: (g[0], g[1]))
    budget = max(1, ctx.merge_window_bytes)
    bounds: list[Any] = []
    used = 0
    for lo, _, size, _, _ in groups:
        if used and used + size > budget and (not bounds or lo > bounds[-1]) and lo > groups[0][0]:
            bounds.append(lo)
            used = 0
        used += size
    if not bounds:
        return None
    edges = [None, *bounds, None]
    windows: list[Window] = []
    for lo, hi in zip(edges, edges[1:]):
        per_file: list[list[int]] = [[] for _ in ordered]
        for gmin, gmax, _, fi, rg in groups:
            if (hi is None or gmin < hi) and (lo is None or gmax >= lo):
                per_file[fi].append(rg)
        windows.append((lo, hi, [sorted(x) for x in per_file]))
    return windows


def read_window(
    ctx: ReadContext,
    split: DataSplit,
    plan: ReadColumns,
    f: DataFileMeta,
    row_groups: list[int],
    lo: Any,
    hi: Any,
    system: Sequence[str],
) -> pa.Table:
    """Rows of ``f`` whose first key column is in [lo, hi), read from ``row_groups`` only, in file order."""
    file_schema = ctx.file_schema(split, f)
    deleted = _deleted_positions(ctx, split, f)
    with _FileReader(ctx.fileio, split.file_path(f), "parquet", f.file_name) as reader:
        cols = _physical_columns(reader, plan.read_fields, file_schema, system)
        if row_groups:
            data = reader.read(cols, row_groups)
            if deleted is not None:
                data = data.filter(pa.array(_keep_mask(deleted, reader.group_rows(), row_groups, f.file_name)))
        else:
            data = reader.parquet.schema_arrow.empty_table().select(cols)
    data = _conform_table(data, plan.read_fields, file_schema, f.file_name, system)
    key = data.column(plan.key_names[0])
    mask = None
    if lo is not None:
        mask = pc.greater_equal(key, pa.scalar(lo, key.type))
    if hi is not None:
        below = pc.less(key, pa.scalar(hi, key.type))
        mask = below if mask is None else pc.and_(mask, below)
    return data.filter(mask) if mask is not None else data
