"""Updates of some columns of existing rows by ``_ROW_ID`` in a data-evolution table (pypaimon's
``update_by_arrow_with_row_id``; the files Paimon master reads with ``DataEvolutionSplitRead``).

Why files of some columns: a data-evolution table (``data-evolution.enabled``) assembles each row from the newest
file of its row-id range that wrote each column (``datasource/read/row_id_merge.py``), so changing one column of some
rows needs no rewrite of the others. Readers only read files of one range together when they cover exactly the same
row ids (``planner/row_ranges.py``), so an update writes, for every row-id range it touches, one file of the updated
columns covering the whole range (the range's current values with the updated rows replaced), its ``_WRITE_COLS``
naming those columns and its first row id the range's. Its sequence numbers are 0 in the file's metadata; the commit
gives it the new snapshot's id (Java's ``RowTrackingCommitUtils``: a new file), which makes it the range's newest.

All updates of one call are one commit. It is refused when a commit after the snapshot the update read added or
removed files of a range it rewrites (a concurrent update or compaction of those rows: Java's row-id conflict
check), since this update's copy of the rows it did not change would undo that commit's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.jobs import WriteJob, WriteResult, prepare_write
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.read.row_id_merge import read_row_id_group
from pyspark_paimon.datasource.write.arrow_input import read_whole
from pyspark_paimon.datasource.write.conform import InputConformer
from pyspark_paimon.datasource.write.data_files import DataFileWriter
from pyspark_paimon.datasource.write.open_buckets import BucketState
from pyspark_paimon.errors import CommitConflictError, DmlError, OptionError, SchemaMismatchError
from pyspark_paimon.metadata.fileindex.index_spec import options_for_columns
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange
from pyspark_paimon.metadata.manifests.manifest import ManifestEntry
from pyspark_paimon.metadata.schema.options import validate_table_options
from pyspark_paimon.metadata.schema.row_tracking import DATA_EVOLUTION_KEY, ROW_ID, data_evolution_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, delete_new_files
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.variant.shredding import SHREDDING_SCHEMA_KEYS
from pyspark_paimon.planner.row_ranges import row_range
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "RowIdUpdate",
    "commit_row_id_update",
    "plan_row_id_update",
    "refuse_without_data_evolution",
    "update_by_row_id",
]


def refuse_without_data_evolution(schema: TableSchema, table: str, what: str) -> None:
    """Refuse ``what`` on a table whose files cannot hold some columns (no ``data-evolution.enabled``)."""
    if not data_evolution_enabled(schema.options):
        raise OptionError(
            f"{what} needs a data-evolution table, and {table} does not have '{DATA_EVOLUTION_KEY}' = 'true' (its "
            "files must hold every column). Use t.update / t.merge (docs/dml.md), or create the table with "
            f"'{DATA_EVOLUTION_KEY}' = 'true' and 'row-tracking.enabled' = 'true'."
        )


@dataclass(frozen=True)
class RowIdUpdate:
    """The files of one update by row id, written and not yet committed: ``messages`` (one file per row-id range),
    ``base`` the snapshot whose ranges they rewrite, ``ranges`` those ranges ((partition, bucket, first, last))."""

    store: FileStore
    messages: list[CommitMessage]
    base: Snapshot | None
    ranges: list[tuple[bytes, int, int, int]]

    def discard(self) -> None:
        """Delete the files of an update that will not be committed."""
        delete_new_files(self.store, self.store.schema(), self.messages)

    def check(self) -> Callable[[Snapshot | None], IndexChange]:
        """A commit check (``index_update`` changing nothing, run on every attempt, as ``dml/stale_reads.py``):
        raise :class:`CommitConflictError` when a commit after ``base`` added or removed a file of a range this
        update rewrites, or overwrote the table."""
        base = self.base.id if self.base is not None else 0
        store = self.store
        ours = self.ranges
        cleared: set[int] = set()

        def touches(e: ManifestEntry) -> bool:
            if e.file.first_row_id is None:  # stores its own ids (a compaction): any range of its bucket
                return any(p == e.partition and b == e.bucket for p, b, _, _ in ours)
            lo, hi = e.file.first_row_id, e.file.first_row_id + e.file.row_count - 1
            return any(p == e.partition and b == e.bucket and lo <= last and first <= hi for p, b, first, last in ours)

        def check(latest: Snapshot | None) -> IndexChange:
            if latest is None or latest.id <= base:
                return IndexChange()
            for sid in range(base + 1, latest.id + 1):
                if sid in cleared:
                    continue
                other = store.snapshots.snapshot(sid)
                entries = store.manifests.read_entries(store.manifests.read_list(other.delta_manifest_list))
                if other.commit_kind == "OVERWRITE" or any(touches(e) for e in entries):
                    raise CommitConflictError(
                        f"Snapshot {sid} ({other.commit_kind}, commit user '{other.commit_user}') changed rows of "
                        f"{store.table_path} (branch '{store.branch}') that this update by row id read at snapshot "
                        f"{base}; committing would undo that change. Nothing was committed; run the update again."
                    )
                cleared.add(sid)
            return IndexChange()

        return check


def plan_row_id_update(store: FileStore, data: pa.Table, what: str, snapshot: Snapshot | None) -> RowIdUpdate:
    """Write the files that set the columns of ``data`` (besides ``_ROW_ID``) on the rows whose ids ``data``'s
    ``_ROW_ID`` holds, on ``snapshot`` (the latest, read by the caller; None: an empty table); nothing is committed
    (see :class:`RowIdUpdate`). Every id must be a row of the table and appear once; partition columns cannot be
    set (a row would change partition)."""
    store.fileio.require_exclusive_create()
    schema = store.schema()
    table = store.table_path
    refuse_without_data_evolution(schema, table, what)
    validate_table_options(schema.options, creating=False, writing=True, table=table)
    columns = _update_columns(schema, data, table, what)
    shredded = [k for k in SHREDDING_SCHEMA_KEYS if (schema.options.get(k) or "").strip()]
    if shredded:
        raise OptionError(
            f"{what} of {table}: the table shreds VARIANT columns ('{shredded[0]}'), which files of some columns do "
            "not do here (pypaimon refuses it too). Remove the option, or update the rows with Paimon."
        )
    ids = _row_ids(data, table, what)
    # The updated columns only; no partition columns (the files go to each range's own bucket directory).
    subset = schema.copy(fields=[schema.field(c) for c in columns], partition_keys=[])
    conformer = InputConformer(
        subset, subset.arrow_schema(), table, None, ignore_delete=False, ignore_update_before=False
    )
    values = conformer.conform(data.select(columns))
    latest = snapshot
    splits = ScanPlanner(store, schema).plan(latest).splits if latest is not None else []
    starts, ends, order = _ranges(splits, table)
    at = np.searchsorted(starts, ids, side="right") - 1
    outside = np.ones(len(ids), dtype=bool) if not len(ends) else (at < 0) | (ids > ends[np.maximum(at, 0)])
    if outside.any():
        bad = ids[np.asarray(outside)][:5].tolist()
        raise DmlError(
            f"{what} of {table}: _ROW_ID value(s) {bad} are not rows of the table's latest snapshot "
            f"({latest.id if latest else 'none'}). Read the ids from the table (read option "
            "'read.row-tracking-columns' or the $row_tracking system table) and update only those."
        )
    ctx = ReadContext.for_store(store, schema)
    writer = DataFileWriter(
        store.fileio, table, subset, options_for_columns(schema.options, columns), [], commit_user="row-id-update"
    )
    messages: list[CommitMessage] = []
    ranges: list[tuple[bytes, int, int, int]] = []
    by_group = np.argsort(at, kind="stable")
    bounds = np.flatnonzero(np.diff(at[by_group])) + 1
    try:
        for rows in np.split(by_group, bounds) if len(by_group) else []:
            split = splits[order[at[rows[0]]]]
            first = int(starts[at[rows[0]]])
            current = read_row_id_group(ctx, replace(split, deletion_files={}), list(subset.fields))
            merged = _replaced(current, values.take(pa.array(rows)), ids[rows] - first)
            messages.append(_write_range(writer, split, merged, first, columns))
            ranges.append((split.partition, split.bucket, first, int(ends[at[rows[0]]])))
    except BaseException:
        writer.delete_created()
        raise
    return RowIdUpdate(store, messages, latest, ranges)


def commit_row_id_update(
    update: RowIdUpdate, extra: Sequence[CommitMessage] = (), job: WriteJob | None = None
) -> Snapshot | None:
    """Commit ``update`` (and ``extra``: messages of new rows ``job`` wrote with it) as one snapshot; None when
    there is nothing to commit. The commit-or-abort rule of every write applies (``WriteJob.commit``)."""
    messages = [*update.messages, *extra]
    if not messages:
        return None
    job = prepare_write(update.store) if job is None else job
    return job.commit(messages, index_update=update.check())


def _update_columns(schema: TableSchema, data: pa.Table, table: str, what: str) -> list[str]:
    names = data.column_names
    if ROW_ID not in names:
        raise SchemaMismatchError(
            f"{what} of {table} needs a '{ROW_ID}' column naming the rows to change (columns given: {names})."
        )
    columns = [n for n in names if n != ROW_ID]
    if not columns or len(set(names)) != len(names):
        raise SchemaMismatchError(
            f"{what} of {table} needs '{ROW_ID}' and at least one other column, each once (columns given: {names})."
        )
    unknown = [c for c in columns if not schema.has_field(c)]
    if unknown:
        raise SchemaMismatchError(
            f"{what} of {table}: column(s) {unknown} are not table columns ({', '.join(schema.field_names)}). Add "
            "them first (t.update_schema().add_column(...)), then write their values by row id."
        )
    partition = [c for c in columns if c in schema.partition_keys]
    if partition:
        raise SchemaMismatchError(
            f"{what} of {table} cannot set partition column(s) {partition}: a row would move to another partition. "
            "Delete and re-insert such rows instead."
        )
    return columns


def _row_ids(data: pa.Table, table: str, what: str) -> np.ndarray:
    column = data.column(ROW_ID)
    if not pa.types.is_integer(column.type) or column.null_count:
        raise SchemaMismatchError(
            f"{what} of {table}: '{ROW_ID}' must be a non-NULL integer column (got {column.type}, "
            f"{column.null_count} NULL)."
        )
    ids = column.to_numpy().astype(np.int64, copy=False)
    if len(np.unique(ids)) != len(ids):
        raise DmlError(f"{what} of {table}: '{ROW_ID}' holds some ids more than once; give each row one new value.")
    return ids


def _ranges(splits: Sequence[DataSplit], table: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first and last row ids of each split (one row-id range each), sorted by first id, and the split index
    of each position."""
    firsts = np.array([row_range(s.files[0], table)[0] for s in splits], dtype=np.int64)
    lasts = np.array([row_range(s.files[0], table)[1] for s in splits], dtype=np.int64)
    order = np.argsort(firsts, kind="stable")
    return firsts[order], lasts[order], order


def _replaced(current: pa.Table, updates: pa.Table, positions: np.ndarray) -> pa.Table:
    """``current`` with its rows at ``positions`` replaced by ``updates``' rows (one take per column)."""
    n = current.num_rows
    index = np.arange(n, dtype=np.int64)
    index[positions] = n + np.arange(len(positions), dtype=np.int64)
    take = pa.array(index)
    columns = []
    for name in current.column_names:
        old = current.column(name)
        new = updates.column(name).cast(old.type)
        columns.append(pa.concat_arrays([*old.chunks, *new.chunks]).take(take))
    return pa.Table.from_arrays(columns, schema=current.schema)


def _write_range(
    writer: DataFileWriter, split: DataSplit, merged: pa.Table, first: int, columns: list[str]
) -> CommitMessage:
    """One file of ``columns`` for the row-id range starting at ``first`` of ``split``'s bucket."""
    state = BucketState(split.partition, split.bucket, split.total_buckets, split.bucket_path, str(uuid.uuid4()), 0)
    writer.write_file(state, merged, (0, 0))
    (meta,) = state.files
    meta = replace(
        meta,
        first_row_id=first,
        write_cols=tuple(columns),
        value_stats_cols=tuple(columns) if meta.value_stats_cols is None else meta.value_stats_cols,
    )
    return CommitMessage(split.partition, split.bucket, split.total_buckets, (meta,))


def update_by_row_id(store: FileStore, data: Any) -> WriteResult:
    """Set the columns of ``data`` (Arrow data as ``t.write_arrow`` takes it: ``_ROW_ID`` and some table columns)
    on the rows those ids name, in one commit (see the module docstring)."""
    what = "An update by row id"
    refuse_without_data_evolution(store.schema(), store.table_path, what)
    table = read_whole(data, pa.schema([pa.field(ROW_ID, pa.int64())]), "write_arrow")
    update = plan_row_id_update(store, table, what, store.snapshots.latest())
    return WriteResult.of(commit_row_id_update(update), update.messages)
