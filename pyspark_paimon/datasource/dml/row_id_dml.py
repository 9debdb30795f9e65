"""Row-level changes of data-evolution tables (``data-evolution.enabled``): ``t.update`` and the matched updates of
``t.merge`` write the changed columns of the matched rows by ``_ROW_ID``, so every row keeps its id.

Why by row id: Paimon master's Spark UPDATE and MERGE INTO of such a table (``UpdatePaimonDataEvolutionTableCommand``,
``MergeIntoPaimonDataEvolutionTable``) find the matched rows' ``_ROW_ID`` and write files of only the assigned
columns for their row-id ranges; no file is rewritten whole and no row gets a new id; a merge's inserted rows are
appended and get new ids at commit. Here the rows are read with their ids (:func:`read_with_row_ids`), the caller
computes the new values with the DML's SQL expressions (``sql_eval``), and :func:`commit_by_row_ids` writes and
commits them through the update by row id (``write/row_id_update.py``): one commit, refused when a concurrent commit
changed a range it rewrites. Partition columns cannot be set (Java refuses it: the row would need a new id); deletes
need deletion vectors in Java and are refused here (``change_rules.refuse_foreign``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.dml.change_commit import MergeResult
from pyspark_paimon.datasource.jobs import prepare_read, prepare_write
from pyspark_paimon.datasource.write.row_id_update import commit_row_id_update, plan_row_id_update
from pyspark_paimon.errors import DmlError
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, TRACKING_COLUMNS
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf, implied_leaves, tree_expression
from pyspark_paimon.planner.read_options import FILTER_KEY, READ_COLUMNS_KEY, ReadOptions
from pyspark_paimon.planner.sql_filter import parse_filter

__all__ = ["RowsWithIds", "commit_by_row_ids", "read_with_row_ids", "update_by_row_ids"]

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
) -> Snapshot | None:
    """Set ``columns`` (values for every row of ``read``; those of the ``updated`` rows are written) on the rows
    ``updated`` selects, by their ids, and append ``inserts`` (new rows, new ids) in ONE commit; None when there is
    nothing to write."""
    job = prepare_write(store)
    update = None
    if updated.any() and columns:
        mask = pa.array(updated)
        data = pa.table(
            {ROW_ID: pa.array(read.ids[updated], pa.int64()), **{c: v.filter(mask) for c, v in columns.items()}}
        )
        update = plan_row_id_update(store, data, f"{_WHAT} {store.table_path}", read.snapshot)
    appended = []
    if inserts is not None and inserts.num_rows:
        writer = job.new_writer("local")
        try:
            writer.write(inserts)
            appended = writer.prepare_commit()
        except BaseException:
            writer.abort()
            if update is not None:
                update.discard()
            raise
    if update is None:
        return job.commit(appended) if appended else None
    return commit_row_id_update(update, appended, job)  # a failed commit removes every new file (WriteJob.commit)


def update_by_row_ids(
    store: FileStore, new_values: Callable[[pa.Table], Mapping[str, pa.ChunkedArray]], filter_text: str | None
) -> MergeResult:
    """Set the columns ``new_values`` computes (from the selected rows) on the rows ``filter_text`` selects (every
    row without it), by their ``_ROW_ID``, in one commit. The columns are checked already
    (``change_rules.check_assigned``)."""
    read = read_with_row_ids(store, filter_text)
    if read.rows.num_rows == 0:
        return MergeResult(files_read=read.files_read)
    snapshot = commit_by_row_ids(store, read, np.ones(read.rows.num_rows, dtype=bool), new_values(read.rows))
    return MergeResult(
        updated=read.rows.num_rows,
        snapshot_id=snapshot.id if snapshot is not None else None,
        files_read=read.files_read,
    )
