"""Executor-side reading of one split into Arrow record batches (Java's `SchemaEvolutionUtil`, `MergeFileSplitRead`,
`MergeFileSplitRead.createChainReader`).

What a split read has to get right, and where it happens here:

* **Schema evolution** (:func:`_conform_table`): every data file is described by the schema it was written
  with (its ``_SCHEMA_ID``, looked up on the file's own branch). Columns are matched to the read schema by
  **field id** and looked up **by name** in the file, so renames work, dropped columns disappear, columns
  added later read as NULL, and type changes are cast. Parquet field ids are deliberately not used:
  pypaimon writes none.
* **Append tables and raw-convertible PK splits** stream file by file, batch by batch.
* **Deletion vectors** (:func:`_keep_mask`): a file with a deletion file in the split loses its deleted row
  positions as it is read, raw or merged. Positions count rows of the whole file, so when row groups are
  skipped the positions are mapped through the row groups' row counts from the Parquet footer.
* **Primary-key tables** are merged per key-overlap section (Java's ``IntervalPartition``): a section with
  one file is streamed (dropping its -U/-D rows, since a data file holds one row per key); a section with
  several files is read whole, sorted into Java's merge order and merged with the table's merge engine
  (:mod:`pyspark_paimon.datasource.merge.merge`).
* **Bounded memory** (:func:`_plan_windows`): a section larger than ``ReadContext.merge_window_bytes`` is
  merged window by window on the first key column, [lo, hi) ranges chosen from Parquet row-group statistics,
  reading only the row groups that overlap each window. All records of a key share its first-column value,
  so each key is merged whole in exactly one window and the output equals the whole-section merge. Without
  usable statistics (ORC, NULLs, key types whose Parquet order may differ from Arrow's) the section is read
  whole.
* **The residual filter runs after the merge.** Filtering an older version of a row before merging would
  let it resurface once its newer version is filtered away.
* **Output** batches have exactly ``to_arrow_schema(projected fields)`` as schema.

Deliberate deviation: for the ``first-row`` engine Java's batch scans skip level-0 files, so data that was
never compacted is invisible there. We merge all levels instead: the first-row merge of all levels is exactly
what Java returns once the files are compacted, and our automatic compaction moves level 0 up after each write
(as Java's writers do), so the two agree unless the table is ``write-only``.

This module never imports pyspark; :class:`ReadContext` and splits are pickled to Spark's Python workers.
"""

from __future__ import annotations

import decimal
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pyspark_paimon.datasource.merge.merge import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    deduplicated_rows,
    is_retract,
    keys_strictly_increasing,
    merge_sorted,
    sort_for_merge,
)
from pyspark_paimon.errors import (
    CorruptMetadataError,
    DataFileError,
    OptionError,
    PaimonError,
    SchemaError,
    UnsupportedTypeError,
)
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import CHANGELOG_PRODUCER, FORCE_LOOKUP, CoreOptions
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.arrow import to_arrow_schema, to_arrow_type
from pyspark_paimon.metadata.types.model import DataField, DataType, RowType
from pyspark_paimon.planner.predicate import (
    Leaf,
    could_match_stats,
    to_arrow_expression,
    tree_columns,
    tree_expression,
)
from pyspark_paimon.planner.sections import decoded_key_range
from pyspark_paimon.planner.sections import key_sections as _key_sections
from pyspark_paimon.planner.split import DataSplit

if TYPE_CHECKING:  # pragma: no cover - types only: executors unpickling a context need no planner
    from pyspark_paimon.metadata.store import FileStore
    from pyspark_paimon.planner.read_plan import PlannedRead

__all__ = [
    "ReadContext",
    "ReadMetrics",
    "java_order",
    "read_split",
    "read_merged",
    "read_records",
    "read_records_of_keys",
    "merge_records",
    "oldest_first",
    "read_file_changes",
    "read_data_file",
    "read_file_columns",
    "referenced_columns",
    "select_row_groups",
    "coalesce_batches",
]

_SYSTEM_TYPES = {SEQUENCE_NUMBER: pa.int64(), VALUE_KIND: pa.int8()}
# What reading Parquet statistics written by any engine may raise (a timestamp or date outside Python's range
# raises OverflowError). Statistics we cannot read never skip anything; other errors are bugs and propagate.
_PARQUET_STATS_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)
_RANK = "__paimon_chain_rank__"


@dataclass
class ReadMetrics:
    """What the reads of one job did in this process (``ReadJob.metrics``), counted per read rather than in
    process-wide globals so concurrent reads (threads, tests) never mix their numbers.

    ``row_groups_total``/``row_groups_skipped``: Parquet row groups considered and skipped by raw reads;
    ``merged_sections``/``windowed_sections``: key-overlap sections merged, and those merged window by window;
    ``max_merge_rows``: the most rows one merge call held in memory.
    """

    row_groups_total: int = 0
    row_groups_skipped: int = 0
    merged_sections: int = 0
    windowed_sections: int = 0
    max_merge_rows: int = 0

    def add(self, other: "ReadMetrics") -> None:
        """Fold in the counts of another read (a thread's share of a job)."""
        self.row_groups_total += other.row_groups_total
        self.row_groups_skipped += other.row_groups_skipped
        self.merged_sections += other.merged_sections
        self.windowed_sections += other.windowed_sections
        self.max_merge_rows = max(self.max_merge_rows, other.max_merge_rows)


@dataclass(frozen=True)
class ReadContext:
    """Everything an executor needs to read splits of one table scan (picklable).

    ``schema`` is the read schema (the table's current schema, or the one time travel selected);
    ``schemas`` maps branch -> schema id -> schema for files written under other schemas or branches
    (a file's branch is ``split.file_branches.get(name, branch)``). ``read_fields`` projects the output to
    these columns, in this order (None = all). ``residual`` is applied after merging. ``options`` overlay the
    read schema's options (see :meth:`merge_options`). ``pushed`` leaves skip Parquet row groups in raw
    (merge-free) reads only.
    """

    fileio: FileIO
    table_path: str
    schema: TableSchema
    schemas: dict[str, dict[int, TableSchema]] = field(default_factory=dict)
    branch: str = "main"
    options: dict[str, str] = field(default_factory=dict)
    read_fields: tuple[str, ...] | None = None
    residual: pc.Expression | None = None
    batch_size: int = 65536
    # The pruning predicate (every output row satisfies it): raw reads skip Parquet row groups whose
    # statistics prove no row matches. The exact ``residual`` still runs afterwards.
    pushed: tuple[Leaf, ...] = ()
    # Key-overlap sections whose files total more than this many bytes are merged in windows of about this
    # many bytes of Parquet row groups (see :func:`_plan_windows`), so memory stays bounded.
    merge_window_bytes: int = 64 << 20

    @classmethod
    def for_plan(
        cls,
        store: FileStore,
        planned: PlannedRead,
        read_fields: Sequence[str] | None = None,
        exact_filters: Sequence[Leaf] = (),
        batch_size: int = 65536,
    ) -> "ReadContext":
        """The one way to build a context from a planned read (plain, fallback, incremental or chain).

        ``read_fields`` projects the output (validated against the read schema); ``exact_filters`` and the
        plan's load-time selection become the residual applied after the merge (Spark does not re-check filters
        a source accepted); the plan's pruning predicate is kept in ``pushed`` so raw reads skip Parquet row
        groups.
        """
        schema = planned.schema
        if read_fields is not None:
            for name in read_fields:
                schema.field(name)  # raises with the list of existing columns
        arrow_schema = schema.arrow_schema()
        selection = planned.selection
        if selection is not None and tree_columns(selection) <= set(schema.partition_keys):
            selection = None  # partitions were selected exactly by it: every row of them satisfies it
        parts = [
            e
            for e in (
                to_arrow_expression(list(exact_filters), arrow_schema) if exact_filters else None,
                tree_expression(selection, arrow_schema) if selection is not None else None,
            )
            if e is not None
        ]
        residual = parts[0] if len(parts) == 1 else (parts[0] & parts[1]) if parts else None
        return cls(
            fileio=store.fileio,
            table_path=store.table_path,
            schema=schema,
            schemas=planned.schemas,
            branch=store.branch,
            options=dict(schema.options),
            read_fields=tuple(read_fields) if read_fields is not None else None,
            residual=residual,
            batch_size=batch_size,
            pushed=planned.predicate,
        )

    def merge_options(self) -> dict[str, str]:
        """The read schema's table options overlaid by ``options`` (merge engine, sequence fields...)."""
        return {**self.schema.options, **self.options}

    def core_options(self) -> CoreOptions:
        """Typed view of :meth:`merge_options`."""
        return CoreOptions(self.merge_options())

    def projected_fields(self) -> list[DataField]:
        names = self.schema.field_names if self.read_fields is None else list(self.read_fields)
        return [self.schema.field(n) for n in names]

    def output_schema(self) -> pa.Schema:
        return to_arrow_schema(self.projected_fields())

    def file_schema(self, split: DataSplit, f: DataFileMeta) -> TableSchema:
        """The schema ``f`` was written with, on the branch the file belongs to."""
        branch = split.file_branches.get(f.file_name, self.branch)
        found = self.schemas.get(branch, {}).get(f.schema_id)
        if found is not None:
            return found
        if branch == self.branch and f.schema_id == self.schema.id:
            return self.schema
        known = sorted(self.schemas.get(branch, {}))
        raise CorruptMetadataError(
            f"Data file '{f.file_name}' was written with schema {f.schema_id} of branch '{branch}', which is not "
            f"available to the reader (known schema ids on that branch: {known or 'none'}). The schema file "
            f"'schema/schema-{f.schema_id}' of that branch may have been deleted; restore it to read the file."
        )


# ------------------------------------------------------------------------------------------------------
# Residual filter columns
# ------------------------------------------------------------------------------------------------------
_REFS_CACHE: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
_REFS_LOCK = threading.Lock()


def _readable_schema(fields: Iterable[DataField]) -> pa.Schema:
    out = []
    for f in fields:
        try:
            out.append(pa.field(f.name, to_arrow_type(f.type, f.name), f.type.nullable))
        except UnsupportedTypeError:
            continue  # a residual filter cannot reference a column Spark cannot see
    return pa.schema(out)


def referenced_columns(expr: pc.Expression, schema: pa.Schema) -> tuple[str, ...]:
    """Columns of ``schema`` that ``expr`` references.

    pyarrow offers no introspection of expressions, so we bind the expression against empty tables that
    lack one column at a time: binding fails exactly when the missing column is referenced. Runs once per
    (expression, schema) thanks to a small cache; empty tables make it cheap.
    """
    cache_key = (str(expr), tuple(f"{f.name}:{f.type}" for f in schema))
    with _REFS_LOCK:
        hit = _REFS_CACHE.get(cache_key)
    if hit is not None:
        return hit
    empty = schema.empty_table()
    try:
        empty.filter(expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
        raise SchemaError(
            f"The filter {expr} cannot be evaluated on the table's columns ({', '.join(schema.names)}): {exc}"
        ) from exc
    refs = []
    for name in schema.names:
        try:
            empty.drop_columns([name]).filter(expr)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, KeyError):
            refs.append(name)
    result = tuple(refs)
    with _REFS_LOCK:
        if len(_REFS_CACHE) > 256:
            _REFS_CACHE.clear()
        _REFS_CACHE[cache_key] = result
    return result


# ------------------------------------------------------------------------------------------------------
# Type conformance (schema evolution)
# ------------------------------------------------------------------------------------------------------
def _cast(arr: pa.Array, target: pa.DataType, column: str, file_name: str) -> pa.Array:
    if arr.type == target:
        return arr
    # Spark timestamps are microseconds: nanosecond files (INT96, TIMESTAMP(9), ORC) are truncated.
    safe = not (pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target))
    try:
        return arr.cast(target, safe=safe)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(
            f"Column '{column}' of data file '{file_name}' holds {arr.type} values that cannot be converted to the "
            f"read type {target}: {exc}. The column type was changed in a way that existing data does not fit; "
            "read with the schema the file was written with (time travel) or rewrite the data."
        ) from exc


def _conform(arr: pa.Array, file_type: DataType, target_type: DataType, column: str, file_name: str) -> pa.Array:
    """``arr`` (read with the file's type) converted to ``target_type``; ROW members are matched by id."""
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
    return _cast(arr, target_arrow, column, file_name)


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
        arr = _cast(col, _SYSTEM_TYPES[name], name, file_name)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    if not arrays:
        return pa.table({"__n": pa.nulls(n)}).drop_columns(["__n"])
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# ------------------------------------------------------------------------------------------------------
# File access
# ------------------------------------------------------------------------------------------------------
def _format_of(f: DataFileMeta, options: CoreOptions) -> str:
    """A data file's format: from its name's extension, else the table's ``file.format``."""
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
        except (pa.ArrowException, OSError) as exc:
            raise DataFileError(
                f"Data file {self.uri} cannot be read; it is truncated or corrupt ({exc}). Restore it from a copy, or "
                "roll the branch back to a snapshot or tag that does not reference it (Table.maintenance.rollback_to)."
            ) from exc

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


def read_file_columns(
    fileio: FileIO, path: str, f: DataFileMeta, options: CoreOptions, columns: Sequence[str]
) -> pa.Table:
    """The physical ``columns`` of data file ``f`` at ``path`` exactly as stored (every row, no schema evolution,
    no deletion vector): what an index over the file's row positions is built from."""
    with _FileReader(fileio, path, _format_of(f, options), f.file_name, f.file_size) as reader:
        return reader.read([c for c in columns if c in reader.names])


def read_data_file(
    ctx: ReadContext, split: DataSplit, f: DataFileMeta, targets: Sequence[DataField], system: Sequence[str] = ()
) -> pa.Table:
    """The whole file ``f`` as the ``targets`` columns (read types, evolution applied) plus ``system``,
    without the rows its deletion vector names."""
    file_schema = ctx.file_schema(split, f)
    deleted = _deleted_positions(ctx, split, f)
    with _FileReader(
        ctx.fileio, split.file_path(f), _format_of(f, ctx.core_options()), f.file_name, f.file_size
    ) as reader:
        data = reader.read(_physical_columns(reader, targets, file_schema, system))
        if deleted is not None:
            data = data.filter(pa.array(_keep_mask(deleted, reader.group_rows(), None, f.file_name)))
    return _conform_table(data, targets, file_schema, f.file_name, system)


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


def _stream_data_file(
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
    with _FileReader(
        ctx.fileio, split.file_path(f), _format_of(f, ctx.core_options()), f.file_name, f.file_size
    ) as reader:
        cols = _physical_columns(reader, targets, file_schema, system)
        row_groups = None
        if skip_row_groups is not None and reader.fmt == "parquet":
            row_groups = select_row_groups(reader.parquet, _file_leaves(ctx, file_schema, reader), skip_row_groups)
        keep = None if deleted is None else _keep_mask(deleted, reader.group_rows(), row_groups, f.file_name)
        offset = 0  # rows of the selected row groups read so far: where this batch starts in ``keep``
        for batch in reader.batches(cols, ctx.batch_size, row_groups):
            n = batch.num_rows
            if keep is not None:
                batch = batch.filter(pa.array(keep[offset : offset + n]))
                offset += n
            if batch.num_rows:
                yield _conform_table(batch, targets, file_schema, f.file_name, system)


# ------------------------------------------------------------------------------------------------------
# Key-overlap sections
# ------------------------------------------------------------------------------------------------------
def key_sections(files: Sequence[DataFileMeta], key_types: Any) -> list[list[DataFileMeta]]:
    """Key-overlap sections of ``files``; ``key_types(file)`` gives the trimmed-PK types of its keys."""
    return _key_sections(files, lambda f: decoded_key_range(f, key_types(f)))


# ------------------------------------------------------------------------------------------------------
# Split reading
# ------------------------------------------------------------------------------------------------------
@dataclass
class _Plan:
    out_fields: list[DataField]
    out_schema: pa.Schema
    read_fields: list[DataField]  # physically read table columns (read types)
    key_names: list[str]
    seq_fields: list[str]
    override: dict[str, Any]


def _unique(names: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for n in names:
        seen.setdefault(n, None)
    return list(seen)


def _make_plan(ctx: ReadContext, partition_override: Mapping[str, Any] | None) -> _Plan:
    schema = ctx.schema
    out_fields = ctx.projected_fields()
    out_schema = to_arrow_schema(out_fields)
    filter_cols: tuple[str, ...] = ()
    if ctx.residual is not None:
        filter_cols = referenced_columns(ctx.residual, _readable_schema(schema.fields))
    key_names: list[str] = []
    seq: list[str] = []
    if schema.primary_keys:
        key_names = list(schema.trimmed_primary_keys) or list(schema.primary_keys)
        seq = ctx.core_options().sequence_fields
        for name in seq:
            if not schema.has_field(name):
                raise OptionError(
                    f"Option 'sequence.field' names column '{name}', which the table does not have "
                    f"(columns: {', '.join(schema.field_names)})."
                )
    override = dict(partition_override or {})
    for name in override:
        if not schema.has_field(name):
            raise SchemaError(f"Partition override names column '{name}', which the table does not have.")
    merge_cols = set(key_names) | set(seq)
    wanted = _unique([*(f.name for f in out_fields), *filter_cols, *key_names, *seq])
    read_names = [n for n in wanted if n not in override or n in merge_cols]
    return _Plan(out_fields, out_schema, [schema.field(n) for n in read_names], key_names, seq, override)


def _finish(ctx: ReadContext, plan: _Plan, data: pa.Table) -> Iterator[pa.RecordBatch]:
    """Partition override, residual filter, projection and the exact output schema, in batches."""
    n = data.num_rows
    for name, value in plan.override.items():
        f = ctx.schema.field(name)
        arrow_type = to_arrow_type(f.type, name)
        try:
            const = pa.nulls(n, arrow_type) if value is None else pa.repeat(pa.scalar(value, arrow_type), n)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaError(f"Partition value {value!r} does not fit column '{name}' ({arrow_type}).") from exc
        pos = data.schema.get_field_index(name)
        if pos >= 0:
            data = data.set_column(pos, pa.field(name, arrow_type), const)
        else:
            data = data.append_column(pa.field(name, arrow_type), const)
    if ctx.residual is not None and n:
        data = data.filter(ctx.residual)
    if data.num_rows == 0:
        return
    data = data.select([f.name for f in plan.out_fields])
    batch_size = max(1, ctx.batch_size)
    if data.num_columns and data.column(0).num_chunks * batch_size > 4 * data.num_rows:
        data = data.combine_chunks()  # many small pieces (e.g. merge output): copy once into full batches
    for batch in data.to_batches(max_chunksize=batch_size):
        if batch.num_rows == 0:
            continue
        arrays = [
            col if col.type == fld.type else col.cast(fld.type) for col, fld in zip(batch.columns, plan.out_schema)
        ]
        if arrays:
            yield pa.RecordBatch.from_arrays(arrays, schema=plan.out_schema)
        else:
            yield batch.select([])


def _drop_retracts(data: pa.Table) -> pa.Table:
    kinds = np.asarray(data.column(VALUE_KIND).to_numpy(), dtype=np.int8)
    retract = is_retract(kinds)
    return data.filter(pa.array(~retract)) if retract.any() else data


def read_split(
    ctx: ReadContext,
    split: DataSplit,
    partition_override: Mapping[str, Any] | None = None,
    metrics: ReadMetrics | None = None,
) -> Iterator[pa.RecordBatch]:
    """Read ``split`` into record batches whose schema is exactly ``ctx.output_schema()``.

    ``partition_override`` (chain-table reads) replaces the given partition columns by constants: the split's
    logical partition, whichever partition the rows physically came from. It is applied before the residual
    filter, so a filter on a partition column sees the logical value. A split planned with
    ``relabel_partition`` (every chain split) applies its own ``partition_values`` this way.

    For the ``first-row`` engine all levels are merged, unlike Java's batch scans that skip level 0 (see the
    module docstring). ``metrics`` (a fresh one when None) counts what the read did.
    """
    metrics = ReadMetrics() if metrics is None else metrics
    if partition_override is None and split.relabel_partition:
        partition_override = dict(zip(ctx.schema.partition_keys, split.partition_values))
    plan = _make_plan(ctx, partition_override)
    if not ctx.schema.primary_keys:
        for f in split.files:
            for data in _stream_data_file(ctx, split, f, plan.read_fields, (), skip_row_groups=metrics):
                yield from _finish(ctx, plan, data)
        return

    system = (SEQUENCE_NUMBER, VALUE_KIND)
    if split.raw_convertible:
        for f in split.files:
            # A file whose metadata counts no retractions needs no row kinds: the system columns stay unread.
            clean = f.delete_row_count == 0
            for data in _stream_data_file(
                ctx, split, f, plan.read_fields, () if clean else system, skip_row_groups=metrics
            ):
                yield from _finish(ctx, plan, data if clean else _drop_retracts(data))
        return

    for data in _merged_sections(ctx, split, plan, drop_retracts=True, metrics=metrics, key_order=False):
        yield from _finish(ctx, plan, data)


def read_merged(
    ctx: ReadContext, split: DataSplit, drop_retracts: bool, metrics: ReadMetrics | None = None
) -> Iterator[pa.Table]:
    """The merged records of a primary-key ``split`` with their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, in key
    order, one table per key-overlap section (or merge window): what compaction rewrites. Every column of
    ``ctx.schema`` is read (in read types; ``ctx.read_fields`` must be None). With ``drop_retracts`` keys whose
    merged record is a retraction disappear (Java's ``dropDelete``); without, they stay, so that they still
    shadow older versions in files outside the compaction. Deletion vectors in the split are applied."""
    if ctx.read_fields is not None:
        raise SchemaError("read_merged reads whole records; build its ReadContext without read_fields.")
    plan = _make_plan(ctx, None)
    yield from _merged_sections(ctx, split, plan, drop_retracts, metrics or ReadMetrics())


def read_records(ctx: ReadContext, split: DataSplit, f: DataFileMeta, positions: np.ndarray | None = None) -> pa.Table:
    """Every record of ``f`` as :func:`read_merged` sees them (all columns of ``ctx.schema`` in read types, plus
    ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``), without the rows of its deletion vector in ``split``; or, with
    ``positions`` (file-global, ascending), exactly the rows at those positions whatever the vector says: the
    older versions a deletion-vector compaction looks up and merges with new ones."""
    plan = _make_plan(ctx, None)
    system = (SEQUENCE_NUMBER, VALUE_KIND)
    if positions is None:
        return read_data_file(ctx, split, f, plan.read_fields, system)
    whole = read_data_file(ctx, replace(split, deletion_files={}), f, plan.read_fields, system)
    return whole.take(pa.array(positions, pa.int64()))


def read_records_of_keys(
    ctx: ReadContext, split: DataSplit, f: DataFileMeta, keys: pa.Table, key_names: Sequence[str]
) -> tuple[pa.Table | None, int]:
    """The records of ``f`` (as :func:`read_records` reads them) whose key ``keys`` holds (None: none), and how
    many records were read. The file is streamed batch by batch, each batch filtered before the next is read, so
    a big file costs memory only for the rows kept. Every record of a kept key is kept, so merging what this
    returns gives those keys exactly the rows a merge of the whole files gives them (a key's merge sees only its
    own records, under every merge engine): filtering by key before a merge is exact, filtering by value is not.
    For the same reason row groups whose key statistics lie outside the keys' range are skipped unread (a change
    clustered in key order reads only its row groups)."""
    plan = _make_plan(ctx, None)
    system = (SEQUENCE_NUMBER, VALUE_KIND)
    kept: list[pa.Table] = []
    read = 0
    ranged = replace(ctx, pushed=_key_range(keys, key_names))
    for data in _stream_data_file(ranged, split, f, plan.read_fields, system, skip_row_groups=ReadMetrics()):
        read += data.num_rows
        data = data.filter(key_mask(data, keys, key_names))
        if data.num_rows:
            kept.append(data)
    return (pa.concat_tables(kept) if kept else None), read


_KEY_ROW = "__paimon_key_row__"


def _key_range(keys: pa.Table, key_names: Sequence[str]) -> tuple[Leaf, ...]:
    """Leaves every row of ``keys`` satisfies: each key column between its smallest and largest value."""
    leaves: list[Leaf] = []
    for k in key_names:
        bounds = pc.min_max(keys.column(k))
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is not None and hi is not None:
            leaves += [Leaf(k, ">=", lo), Leaf(k, "<=", hi)]
    return tuple(leaves)


def key_mask(table: pa.Table, keys: pa.Table, key_names: Sequence[str]) -> pa.Array:
    """True for each row of ``table`` whose key (the ``key_names`` columns, NOT NULL as primary keys are) is
    one of the rows of ``keys``: ``is_in`` on a single key column, a semi join on a composite key."""
    n = table.num_rows
    if n == 0 or keys.num_rows == 0:
        return pa.array(np.zeros(n, dtype=bool))
    if len(key_names) == 1:
        k = key_names[0]
        column = table.column(k)
        values = keys.column(k).cast(column.type).combine_chunks()
        return pc.is_in(column, value_set=values).combine_chunks()
    # Joins only on the key columns and a row number: Arrow cannot carry nested value columns through a join.
    rows = table.select(list(key_names)).append_column(_KEY_ROW, pa.array(np.arange(n, dtype=np.int64)))
    hit = rows.join(keys.select(list(key_names)), list(key_names), join_type="left semi", use_threads=False)
    mask = np.zeros(n, dtype=bool)
    mask[np.asarray(hit.column(_KEY_ROW).to_numpy(), dtype=np.int64)] = True
    return pa.array(mask)


def oldest_first(split: DataSplit, files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """``files`` in merge order, oldest first (a chain read's file rank, then sequence numbers), so records that
    tie on every sort key keep the older one first."""
    ranks = split.file_ranks
    return sorted(files, key=lambda f: (ranks.get(f.file_name, 0), f.max_sequence_number, f.min_sequence_number))


def merge_records(
    ctx: ReadContext,
    split: DataSplit,
    tables: Sequence[pa.Table],
    drop_retracts: bool,
    files: Sequence[DataFileMeta] | None = None,
) -> pa.Table:
    """Merge records read by :func:`read_records` (``tables`` oldest first, so full ties keep the older one
    first) with the table's merge engine, in key order: one key-overlap section merged in memory.

    ``files``: the file each table was read from (:func:`oldest_first` order), when the tables are the files'
    records as a read sees them; the read's rule for lookup tables then applies too (only the newest record
    above level 0 of a key takes part, :func:`_lookup_merge`), so the result is what :func:`read_split` merges."""
    plan = _make_plan(ctx, None)
    options = ctx.merge_options()
    core_options = CoreOptions(options)
    pk = list(ctx.schema.primary_keys)
    value_names = [fld.name for fld in plan.read_fields if fld.name not in plan.key_names and fld.name not in pk]
    ordered = split.files if files is None else files
    tables = list(tables)
    if files is not None and _lookup_merge(options):
        tables = _newest_high_level_only(
            plan.key_names, plan.seq_fields, core_options.sequence_descending, files, tables
        )
    return _sort_and_merge(
        ctx,
        split,
        plan,
        ordered,
        ordered,
        tables,
        core_options.merge_engine,
        options,
        value_names,
        core_options.sequence_descending,
        ReadMetrics(),
        drop_retracts,
    )


def _merged_sections(
    ctx: ReadContext, split: DataSplit, plan: _Plan, drop_retracts: bool, metrics: ReadMetrics, key_order: bool = True
) -> Iterator[pa.Table]:
    """Merged records of each key-overlap section of ``split`` (system columns kept), in key order unless
    ``key_order`` is False (a read, which may then pass untouched rows of a big file through unsorted)."""
    options = ctx.merge_options()
    core_options = CoreOptions(options)
    engine = core_options.merge_engine
    system = (SEQUENCE_NUMBER, VALUE_KIND)
    key_fields = [ctx.schema.field(n) for n in plan.key_names]

    def key_types(f: DataFileMeta) -> list[DataType]:
        file_schema = ctx.file_schema(split, f)
        by_id = {fld.id: fld for fld in file_schema.fields}
        return [by_id[k.id].type if k.id in by_id else k.type for k in key_fields]

    pk = list(ctx.schema.primary_keys)
    value_names = [fld.name for fld in plan.read_fields if fld.name not in plan.key_names and fld.name not in pk]
    descending = core_options.sequence_descending
    for section in key_sections(split.files, key_types):
        if len(section) == 1:
            # A data file holds one row per key, already merged; only its retractions may have to go. Its rows
            # are final, so row groups the pushed predicate rules out are skipped as in a raw read (compaction
            # pushes none, so it reads every row).
            for data in _stream_data_file(ctx, split, section[0], plan.read_fields, system, skip_row_groups=metrics):
                yield _drop_retracts(data) if drop_retracts else data
            continue
        ordered = oldest_first(split, section)
        windows = None
        if sum(f.file_size for f in ordered) > ctx.merge_window_bytes:
            windows = _plan_windows(ctx, split, plan, ordered)
        if windows is None:
            tables = [read_data_file(ctx, split, f, plan.read_fields, system) for f in ordered]
            yield _merge_tables(
                ctx,
                split,
                plan,
                section,
                ordered,
                tables,
                engine,
                options,
                value_names,
                descending,
                metrics,
                drop_retracts,
                key_order,
            )
            continue
        metrics.windowed_sections += 1
        for lo, hi, per_file in windows:
            tables = [_read_window(ctx, split, plan, f, rgs, lo, hi, system) for f, rgs in zip(ordered, per_file)]
            if not any(t.num_rows for t in tables):
                continue
            yield _merge_tables(
                ctx,
                split,
                plan,
                section,
                ordered,
                tables,
                engine,
                options,
                value_names,
                descending,
                metrics,
                drop_retracts,
                key_order,
            )


def read_file_changes(ctx: ReadContext, split: DataSplit) -> Iterator[pa.RecordBatch]:
    """Every row of ``split``'s files as stored, not merged, with its row kind (``_VALUE_KIND``: 0 +I, 1 -U,
    2 +U, 3 -D) as an extra last column: what a streaming read of a commit's new files returns (Java reads a
    streaming split without merging and keeps retractions). Append tables have only +I rows. The other columns
    are exactly ``ctx.output_schema()``. ``ctx.residual`` (a stream's ``filter``) keeps the rows, of any kind,
    that satisfy it: each change row is tested on its own."""
    plan = _make_plan(ctx, None)
    system = (SEQUENCE_NUMBER, VALUE_KIND) if ctx.schema.primary_keys else ()
    kind_field = pa.field(VALUE_KIND, pa.int8(), nullable=False)
    out_schema = pa.schema([*plan.out_schema, kind_field])
    for f in split.files:
        for data in _stream_data_file(ctx, split, f, plan.read_fields, system):
            if ctx.residual is not None:
                data = data.filter(ctx.residual)
                if not data.num_rows:
                    continue
            kinds = (
                data.column(VALUE_KIND).cast(pa.int8())
                if system
                else pa.chunked_array([pa.repeat(pa.scalar(0, pa.int8()), data.num_rows)])
            )
            columns = [data.column(fld.name) for fld in plan.out_fields]
            table = pa.Table.from_arrays([*columns, kinds], names=[*out_schema.names]).combine_chunks()
            for batch in table.to_batches(max_chunksize=max(1, ctx.batch_size)):
                if batch.num_rows:
                    arrays = [
                        col if col.type == fld.type else col.cast(fld.type)
                        for col, fld in zip(batch.columns, out_schema)
                    ]
                    yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)


def _merge_tables(
    ctx: ReadContext,
    split: DataSplit,
    plan: _Plan,
    section: Sequence[DataFileMeta],
    ordered: Sequence[DataFileMeta],
    tables: list[pa.Table],
    engine: str,
    options: Mapping[str, str],
    value_names: list[str],
    descending: bool,
    metrics: ReadMetrics,
    drop_retracts: bool = True,
    key_order: bool = True,
) -> pa.Table:
    """Concatenate ``tables`` (one per file of ``ordered``), sort into merge order and merge."""
    if _lookup_merge(options):
        tables = _newest_high_level_only(plan.key_names, plan.seq_fields, descending, ordered, tables)
    untouched = None
    if not key_order and drop_retracts:
        untouched, tables = _split_untouched(plan.key_names, tables)
    merged = _sort_and_merge(
        ctx, split, plan, section, ordered, tables, engine, options, value_names, descending, metrics, drop_retracts
    )
    if untouched is None or not untouched.num_rows:
        return merged
    return pa.concat_tables([_drop_retracts(untouched), merged.select(untouched.column_names)])


def java_order(table: pa.Table, order: Sequence[tuple[str, str]]) -> pa.Array:
    """Row indices of ``table`` sorted by ``order`` ((column, "ascending"/"descending") pairs) with NULLs first,
    as Java's comparators order a NULL sequence field (Arrow's default puts them last)."""
    keys: list[tuple[str, str]] = []
    columns = {}
    for i, (name, direction) in enumerate(order):
        column = table.column(name)
        if column.null_count:
            valid = f"__paimon_valid_{i}__"
            columns[valid] = pc.is_valid(column)
            keys.append((valid, direction))
        keys.append((name, direction))
    if columns:
        table = table.select(list(dict.fromkeys(n for n, _ in order)))
        for name, column in columns.items():
            table = table.append_column(name, column)
    return pc.sort_indices(table, sort_keys=keys)


def _lookup_merge(options: Mapping[str, str]) -> bool:
    """Whether the table merges as Java's ``LookupMergeFunction`` does (``changelog-producer = lookup`` or
    ``force-lookup``, without deletion vectors, not ``first-row``): its lookup compaction writes a key's merged
    state above level 0 while older versions stay in higher levels, so only the newest record above level 0
    may take part in a merge (an aggregation would otherwise count the older state twice)."""
    core = CoreOptions(options)
    return (
        (core.get(CHANGELOG_PRODUCER) == "lookup" or bool(core.get(FORCE_LOOKUP)))
        and core.merge_engine != "first-row"
        and not core.deletion_vectors_enabled
    )


_HIGH_TABLE, _HIGH_ROW = "__paimon_high_table__", "__paimon_high_row__"


def _newest_high_level_only(
    key_names: Sequence[str],
    seq: Sequence[str],
    descending: bool,
    ordered: Sequence[DataFileMeta],
    tables: list[pa.Table],
) -> list[pa.Table]:
    """``tables`` without the records above level 0 that a newer record above level 0 supersedes (see
    :func:`_lookup_merge`); level-0 records all stay. Newer: later in Java's merge order (the sequence fields
    ``seq``, then the sequence number)."""
    high = [i for i, f in enumerate(ordered) if f.level > 0 and tables[i].num_rows]
    if len(high) < 2:
        return tables
    names = _unique([*key_names, *seq, SEQUENCE_NUMBER])
    parts = [
        tables[i]
        .select(names)
        .append_column(_HIGH_TABLE, pa.array(np.full(tables[i].num_rows, i, dtype=np.int32)))
        .append_column(_HIGH_ROW, pa.array(np.arange(tables[i].num_rows, dtype=np.int64)))
        for i in high
    ]
    direction = "descending" if descending else "ascending"
    order = [*((f, direction) for f in seq), (SEQUENCE_NUMBER, "ascending")]
    ranked = pa.concat_tables(parts, promote_options="permissive")
    ranked = ranked.take(java_order(ranked, order))
    rank = "__paimon_high_rank__"
    ranked = ranked.append_column(rank, pa.array(np.arange(ranked.num_rows, dtype=np.int64)))
    newest = ranked.group_by(list(key_names), use_threads=False).aggregate([(rank, "max")])
    chosen = ranked.take(newest.column(f"{rank}_max"))
    which = np.asarray(chosen.column(_HIGH_TABLE).to_numpy(), dtype=np.int32)
    rows = np.asarray(chosen.column(_HIGH_ROW).to_numpy(), dtype=np.int64)
    out = list(tables)
    for i in high:
        keep = np.zeros(tables[i].num_rows, dtype=bool)
        keep[rows[which == i]] = True
        if not keep.all():
            out[i] = tables[i].filter(pa.array(keep))
    return out


def _split_untouched(key_names: Sequence[str], tables: list[pa.Table]) -> tuple[pa.Table | None, list[pa.Table]]:
    """(rows of the biggest table whose key no other table holds, the tables without them).

    A big sorted run overlaid by a few small newer ones (a chain anchor and its deltas, a compacted bucket and
    today's commits) needs no sort for the keys only it holds: a key with one record keeps that record under
    every merge engine (Java's ``ReducerMergeFunctionWrapper``), and one file holds each key once. Only the keys
    the small tables touch are sorted and merged, the rest pass through (and so out of key order). Applies
    when the others hold at most a quarter of the biggest's rows, the key is one non-float column and the
    biggest table is strictly ordered by it (which proves its keys unique)."""
    if len(key_names) != 1 or len(tables) < 2:
        return None, tables
    big = max(range(len(tables)), key=lambda i: tables[i].num_rows)
    base = tables[big]
    others = [t for i, t in enumerate(tables) if i != big]
    key = key_names[0]
    if (
        sum(t.num_rows for t in others) * 4 > base.num_rows
        or pa.types.is_floating(base.schema.field(key).type)
        or not keys_strictly_increasing(base, key_names)
    ):
        return None, tables
    keys = pa.chunked_array(
        [c for t in others for c in t.column(key).chunks], type=base.schema.field(key).type
    ).combine_chunks()
    touched = pc.is_in(base.column(key), value_set=keys)
    return base.filter(pc.invert(touched)), [*tables[:big], base.filter(touched), *tables[big + 1 :]]


def _sort_and_merge(
    ctx: ReadContext,
    split: DataSplit,
    plan: _Plan,
    section: Sequence[DataFileMeta],
    ordered: Sequence[DataFileMeta],
    tables: list[pa.Table],
    engine: str,
    options: Mapping[str, str],
    value_names: list[str],
    descending: bool,
    metrics: ReadMetrics,
    drop_retracts: bool,
) -> pa.Table:
    ranks = split.file_ranks
    if ranks:
        # Chain read: sequence numbers are branch-local, so the file's rank breaks user-sequence ties.
        tables = [
            t.append_column(_RANK, pa.repeat(pa.scalar(ranks.get(f.file_name, 0), pa.int32()), t.num_rows))
            for f, t in zip(ordered, tables)
        ]
    data = pa.concat_tables(tables)
    metrics.merged_sections += 1
    metrics.max_merge_rows = max(metrics.max_merge_rows, data.num_rows)
    try:
        if drop_retracts and not ranks and engine == "deduplicate":
            winners = deduplicated_rows(data, plan.key_names, options)
            if winners is not None:
                return winners
        data = sort_for_merge(data, plan.key_names, plan.seq_fields, descending, _RANK if ranks else None)
        if ranks:
            data = data.drop_columns([_RANK])
        return merge_sorted(
            data,
            plan.key_names,
            engine,
            options,
            value_names,
            drop_retracts=drop_retracts,
            primary_keys=list(ctx.schema.primary_keys),
        )
    except PaimonError as exc:
        names = ", ".join(f.file_name for f in section)
        raise type(exc)(f"{exc} (while merging bucket {split.bucket} files {names} of {ctx.table_path})") from exc


# ------------------------------------------------------------------------------------------------------
# Windowed (bounded-memory) merge of large sections
# ------------------------------------------------------------------------------------------------------
def _windowable(t: pa.DataType) -> bool:
    """Arrow types whose Parquet statistics decode to Python values ordered exactly like Arrow sorts them."""
    return pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_date32(t)


_Window = tuple[Any, Any, list[list[int]]]  # [lo, hi) on the first key column (None = open), row groups per file


def _plan_windows(
    ctx: ReadContext, split: DataSplit, plan: _Plan, ordered: Sequence[DataFileMeta]
) -> list[_Window] | None:
    """Windows [lo, hi) on the first trimmed-PK column covering the section, about ``merge_window_bytes`` of
    row groups each, or None when the whole-section merge must be used (non-Parquet file, key type without
    exact Parquet ordering, missing statistics or NULLs, or a single window). Windows split on values of
    the first key column, so all records of one key land in exactly one window."""
    try:
        return _plan_windows_unchecked(ctx, split, plan, ordered)
    except _PARQUET_STATS_ERRORS:  # odd statistics: the whole-section merge is always right
        return None


def _plan_windows_unchecked(
    ctx: ReadContext, split: DataSplit, plan: _Plan, ordered: Sequence[DataFileMeta]
) -> list[_Window] | None:
    options = ctx.core_options()
    key_field = ctx.schema.field(plan.key_names[0])
    read_type = to_arrow_type(key_field.type, key_field.name)
    if not _windowable(read_type):
        return None
    groups: list[tuple[Any, Any, int, int, int]] = []  # (min, max, size, file index, row group)
    for fi, f in enumerate(ordered):
        if _format_of(f, options) != "parquet":
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
    windows: list[_Window] = []
    for lo, hi in zip(edges, edges[1:]):
        per_file: list[list[int]] = [[] for _ in ordered]
        for gmin, gmax, _, fi, rg in groups:
            if (hi is None or gmin < hi) and (lo is None or gmax >= lo):
                per_file[fi].append(rg)
        windows.append((lo, hi, [sorted(x) for x in per_file]))
    return windows


def _read_window(
    ctx: ReadContext,
    split: DataSplit,
    plan: _Plan,
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


def coalesce_batches(batches: Iterable[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """``batches`` (one schema), in order, with runs of small ones joined into batches of about ``batch_size`` rows.

    A task of many small files or buckets reads each as its own few-row batch, and every batch handed to
    Spark pays a fixed cost on both sides of the Arrow stream (thousands of 20-row batches cost more than the
    rows). Batches of at least a quarter of ``batch_size`` pass through as they are. Row order is kept, so a
    stream's changes of one key stay in the order they were made.
    """
    small = max(1, batch_size // 4)
    pending: list[pa.RecordBatch] = []
    rows = 0

    def joined() -> Iterator[pa.RecordBatch]:
        if len(pending) == 1:
            yield pending[0]
        elif pending:
            yield from pa.Table.from_batches(pending).combine_chunks().to_batches()

    for batch in batches:
        if batch.num_rows >= small:
            yield from joined()
            pending, rows = [], 0
            yield batch
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= batch_size:
            yield from joined()
            pending, rows = [], 0
    yield from joined()
