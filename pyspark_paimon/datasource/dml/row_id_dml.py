"""Row-level changes of data-evolution tables (``data-evolution.enabled``): ``t.update`` writes the changed columns
of the matched rows by ``_ROW_ID``, so every row keeps its id.

Why by row id: Paimon master's Spark UPDATE of such a table (``UpdatePaimonDataEvolutionTableCommand``) finds the
matched rows' ``_ROW_ID`` and writes files of only the assigned columns for their row-id ranges; no file is
rewritten whole and no row gets a new id. Here the rows are read with their ids (the ``filter`` read option's SQL
selects them exactly), the new values are the DML's SQL expressions (``sql_eval``), and the write and commit are
the update by row id's (``write/row_id_update.py``): one commit, refused when a concurrent commit changed a range it
rewrites. Partition columns cannot be set (Java refuses it: the row would need a new id).
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.dml.change_commit import MergeResult
from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.datasource.write.row_id_update import commit_row_id_update, plan_row_id_update
from pyspark_paimon.errors import DmlError
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, TRACKING_COLUMNS
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import implied_leaves, tree_expression
from pyspark_paimon.planner.read_options import FILTER_KEY, READ_COLUMNS_KEY, ReadOptions
from pyspark_paimon.planner.sql_filter import parse_filter

__all__ = ["update_by_row_ids"]

_WHAT = "An update of a data-evolution table"


def update_by_row_ids(
    store: FileStore, new_values: Callable[[pa.Table], Mapping[str, pa.ChunkedArray]], filter_text: str | None
) -> MergeResult:
    """Set the columns ``new_values`` computes (from the selected rows, without the hidden columns) on the rows
    ``filter_text`` selects (every row without it), by their ``_ROW_ID``, in one commit (see the module
    docstring). The columns are checked already (``change_rules.check_assigned``)."""
    schema = store.schema()
    tree = parse_filter(filter_text, schema) if filter_text else None
    options = {READ_COLUMNS_KEY: "true", **({FILTER_KEY: filter_text} if filter_text else {})}
    job = prepare_read(store, ReadOptions.from_options(options), implied_leaves(tree) if tree is not None else [])
    if job.planned.kind != "plain":
        raise DmlError(
            f"Table {store.table_path} (branch '{store.branch}') is read as a {job.planned.kind} read (fallback "
            "branch or chain table): DML changes only a branch's own files. Run it on the branch that holds the rows."
        )
    rows = job.to_arrow()
    if tree is not None:  # exactly the selected rows, whatever the read applied
        rows = rows.filter(tree_expression(tree, rows.schema))
    if rows.num_rows == 0:
        return MergeResult(files_read=job.plan.counters.files_selected)
    columns = dict(new_values(rows.drop_columns(list(TRACKING_COLUMNS))))
    ids = rows.column(ROW_ID).combine_chunks().cast(pa.int64())
    if len(np.unique(ids.to_numpy())) != len(ids):
        raise DmlError(f"{_WHAT} {store.table_path}: the read returned some _ROW_ID twice; compact the table first.")
    data = pa.table({ROW_ID: ids, **columns})
    update = plan_row_id_update(store, data, f"{_WHAT} {store.table_path}", job.plan.snapshot)
    snapshot = commit_row_id_update(update)  # a failed commit removes the update's files (WriteJob.commit)
    return MergeResult(
        updated=rows.num_rows,
        snapshot_id=snapshot.id if snapshot is not None else None,
        files_read=job.plan.counters.files_selected,
    )
