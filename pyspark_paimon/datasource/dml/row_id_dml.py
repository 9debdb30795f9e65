"""Row-level changes of data-evolution tables (``data-evolution.enabled``): ``t.update`` and the matched updates of
``t.merge`` write the changed columns of the matched rows by ``_ROW_ID``, so every row keeps its id.

Why by row id: Paimon master's Spark UPDATE and MERGE INTO of such a table (``UpdatePaimonDataEvolutionTableCommand``,
``MergeIntoPaimonDataEvolutionTable``) find the matched rows' ``_ROW_ID`` and write files of only the assigned
columns for their row-id ranges; no file is rewritten whole and no row gets a new id; a merge's inserted rows are
appended and get new ids at commit. Here the rows are read with their ids (:func:`read_with_row_ids`), the caller
computes the new values with the DML's SQL expressions (``sql_eval``), and :func:`commit_by_row_ids` writes and
commits them through the update by row id (``write/row_id_update.py``): one commit, refused when a concurrent commit
changed a range it rewrites. Partition columns cannot be set (Java refuses it: the row would need a new id).

Deletes (``t.delete``, a merge's delete clauses) need ``deletion-vectors.enabled``, as in Java (refused without it,
``change_rules.refuse_foreign``): the deleted rows' positions in their row-id range are added to the vector of the
range's oldest file (the one readers apply vectors by, ``read/row_id_merge.vector_anchor``), through the deletion
vector update of append tables (``vector_update``), in the same commit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.dml.change_commit import MergeResult
from pyspark_paimon.datasource.dml.vector_update import vector_update
from pyspark_paimon.datasource.jobs import prepare_read, prepare_write
from pyspark_paimon.datasource.read.row_id_merge import vector_anchor
from pyspark_paimon.datasource.write.row_id_update import plan_row_id_update
from pyspark_paimon.errors import DmlError
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, TRACKING_COLUMNS
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, delete_new_files
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf, implied_leaves, tree_expression
from pyspark_paimon.planner.read_options import FILTER_KEY, READ_COLUMNS_KEY, ReadOptions
from pyspark_paimon.planner.row_ranges import row_range
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.sql_filter import parse_filter

__all__ = ["RowsWithIds", "commit_by_row_ids", "delete_by_row_ids", "read_with_row_ids", "update_by_row_ids"]

_WHAT = "A change of the data-evolution table"


@dataclass(frozen=True)
class RowsWithIds:
    """The rows a change read (table columns only), their ``_ROW_ID``s, the snapshot read and the files read."""

    rows: pa.Table
    ids: np.ndarray
    snapshot: Snapshot | None
    files_read: int


def read_with_row_ids(store: FileStore, filter_text: str | None, prune: Sequence[Leaf] = ()) -> RowsWithIds:
    """The rows ``filter_text`` selects exactly (every row without it; ``prune`` only prunes), with their ids."""
    schema = store.schema()
    tree = parse_filter(filter_text, schema) if filter_text else None
    options = {READ_COLUMNS_KEY: "true", **({FILTER_KEY: filter_text} if filter_text else {})}
    leaves = [*(implied_leaves(tree) if tree is not None else []), *prune]
    job = prepare_read(store, ReadOptions.from_options(options), leaves)
    if job.planned.kind != "plain":
        raise DmlError(
            f"Table {store.table_path} (branch '{store.branch}') is read as a {job.planned.kind} read (fallback "
            "branch or chain table): DML changes only a branch's own files. Run it on the branch that holds the rows."
        )
    rows = job.to_arrow()
    if tree is not None:  # exactly the selected rows, whatever the read applied
        rows = rows.filter(tree_expression(tree, rows.schema))
    ids = rows.column(ROW_ID).to_numpy().astype(np.int64, copy=False)
    return RowsWithIds(
        rows.drop_columns(list(TRACKING_COLUMNS)), ids, job.plan.snapshot, job.plan.counters.files_selected
    )


def commit_by_row_ids(
    store: FileStore,
    read: RowsWithIds,
    updated: np.ndarray,
    columns: Mapping[str, pa.ChunkedArray],
    inserts: pa.Table | None = None,
    deleted: np.ndarray | None = None,
) -> tuple[Snapshot | None, int]:
    """Set ``columns`` (values for every row of ``read``; those of the ``updated`` rows are written) on the rows
    ``updated`` selects, by their ids, delete the ``deleted`` rows by deletion vectors, and append ``inserts`` (new
    rows, new ids) in ONE commit. Returns the snapshot (None: nothing to write) and the vectors written."""
    schema = store.schema()
    job = prepare_write(store)
    update = None
    if updated.any() and columns:
        mask = pa.array(updated)
        changes = {c: v.filter(mask) for c, v in columns.items()}
        data = pa.table({ROW_ID: pa.array(read.ids[updated], pa.int64()), **changes})
        update = plan_row_id_update(store, data, f"{_WHAT} {store.table_path}", read.snapshot)
    appended: list[CommitMessage] = []
    vectors: dict[tuple[bytes, int], dict[str, np.ndarray]] = {}
    index_paths: list[str] = []
    vector_check = None
    try:
        if inserts is not None and inserts.num_rows:
            writer = job.new_writer("local")
            try:
                writer.write(inserts)
                appended = writer.prepare_commit()
            except BaseException:
                writer.abort()
                raise
        if deleted is not None and deleted.any():
            vectors = _grown_vectors(store, read, deleted)
            vector_check, index_paths = vector_update(store, schema, read.snapshot, vectors)
    except BaseException:
        if update is not None:
            update.discard()
        delete_new_files(store, schema, appended)
        raise
    messages = [*(update.messages if update is not None else []), *appended]
    if not messages and not vectors:
        return None, 0
    id_check = update.check() if update is not None else None

    def check(latest: Snapshot | None) -> IndexChange:
        if id_check is not None:
            id_check(latest)  # a concurrent change of a range this update rewrites: a conflict
        return vector_check(latest) if vector_check is not None else IndexChange()

    def abort() -> None:
        delete_new_files(store, schema, messages)
        for path in index_paths:
            store.fileio.delete(path)

    snapshot = job.commit(messages, index_update=check, abort=abort)
    return snapshot, sum(len(v) for v in vectors.values())


def _grown_vectors(
    store: FileStore, read: RowsWithIds, deleted: np.ndarray
) -> dict[tuple[bytes, int], dict[str, np.ndarray]]:
    """Per touched (partition, bucket): the vector of each touched row-id range's oldest file, grown by the
    positions of the ``deleted`` rows in their range."""
    table = store.table_path
    splits = ScanPlanner(store, store.schema()).plan(read.snapshot).splits if read.snapshot is not None else []
    firsts = np.array([row_range(s.files[0], table)[0] for s in splits], dtype=np.int64)
    order = np.argsort(firsts, kind="stable")
    starts = firsts[order]
    ids = read.ids[deleted]
    at = np.searchsorted(starts, ids, side="right") - 1
    out: dict[tuple[bytes, int], dict[str, np.ndarray]] = defaultdict(dict)
    for g in np.unique(at):  # one step per touched range
        split = splits[int(order[g])]
        first, last = row_range(split.files[0], table)
        positions = ids[at == g] - first
        if g < 0 or positions.max() > last - first:
            raise DmlError(
                f"{_WHAT} {table}: rows to delete are in no row-id range of the snapshot read. Run it again."
            )
        anchor = vector_anchor(split.files)
        dfile = split.deletion_files.get(anchor.file_name)
        existing = read_deletion_vector(store.fileio, dfile, anchor.file_name) if dfile is not None else positions[:0]
        out[(split.partition, split.bucket)][anchor.file_name] = np.union1d(existing, positions)
    return dict(out)


def delete_by_row_ids(store: FileStore, filter_text: str | None) -> MergeResult:
    """Delete the rows ``filter_text`` selects (every row without it) by deletion vectors, in one commit."""
    read = read_with_row_ids(store, filter_text)
    n = read.rows.num_rows
    if n == 0:
        return MergeResult(files_read=read.files_read)
    none = np.zeros(n, dtype=bool)
    snapshot, vectors = commit_by_row_ids(store, read, none, {}, None, np.ones(n, dtype=bool))
    return MergeResult(
        deleted=n,
        snapshot_id=snapshot.id if snapshot is not None else None,
        vectors_written=vectors,
        files_read=read.files_read,
    )


def update_by_row_ids(
    store: FileStore, new_values: Callable[[pa.Table], Mapping[str, pa.ChunkedArray]], filter_text: str | None
) -> MergeResult:
    """Set the columns ``new_values`` computes (from the selected rows) on the rows ``filter_text`` selects (every
    row without it), by their ``_ROW_ID``, in one commit. The columns are checked already
    (``change_rules.check_assigned``)."""
    read = read_with_row_ids(store, filter_text)
    if read.rows.num_rows == 0:
        return MergeResult(files_read=read.files_read)
    snapshot, _ = commit_by_row_ids(store, read, np.ones(read.rows.num_rows, dtype=bool), new_values(read.rows))
    return MergeResult(
        updated=read.rows.num_rows,
        snapshot_id=snapshot.id if snapshot is not None else None,
        files_read=read.files_read,
    )
