"""Row-level DML on one branch: ``delete`` and ``update`` (this module) and a delta-rs-style ``merge``
(``merge_builder``; ``dml_spark`` for Spark DataFrame sources), each ONE atomic commit.

Every change takes the same steps, each in its own module: the table's rules (``change_rules``), the rows it
reads (``change_target``), the decision (here, or the merge's clauses), the write and the commit
(``change_commit``, over ``copy_on_write`` and ``vector_update``), and the stale-read check and re-planning
(``stale_reads``). How a change is written depends on the table, as in Java Paimon's Spark DML:

* **Primary-key tables** change rows through the merge engine: a deleted row is written as a retraction
  (``-D``, the row with its key), an updated row as an upsert of the whole new row (``+U``), an inserted row
  as ``+I``, all in new level-0 files of one APPEND commit whose sequence numbers follow every existing row,
  so the change wins the merge. Engines that define no such change refuse it (:func:`check_merge_engine`).
  No commit that may hold the rows it read or the keys it writes may land between its read and its commit
  (:func:`unchanged_since`); when a writer's did, the change is read, decided and written again
  (:data:`DML_ATTEMPTS`).
* **Append tables** are rewritten copy-on-write: every data file holding a matched row is read whole, its
  matched rows dropped or replaced, the rest written to new files, and the commit (kind OVERWRITE, as Java
  marks a rewrite) DELETEs the old files and ADDs the new ones. The commit checks that every file it deletes is
  still live, so a concurrent commit that removed one of them (a compaction, an overwrite, another DML) makes
  this one fail cleanly with :class:`CommitConflictError` and nothing changed; re-running it is safe.
  A file carrying a deletion vector is refused (compact first): its rewrite would leave the vector behind.
* **Append tables with** ``deletion-vectors.enabled`` write deletion vectors instead (Java's Spark DML does the
  same): the positions of the deleted rows, and of the old versions of updated rows, are added to each touched
  data file's vector; every vector of a touched bucket goes into one new ``DELETION_VECTORS`` index file
  (Java's layout), and the APPEND commit (Java commits them as a data increment) replaces the bucket's index
  entries. Updated rows are appended as new files. No data file is rewritten. The commit is a conflict when
  the touched buckets' vectors changed meanwhile (another delete or a compaction wrote some) or a touched file
  was removed (compacted away): nothing lands, and re-running is safe.

The ``filter`` is the ``filter`` read option's SQL (``planner.sql_filter``): it prunes partitions, files and
row groups when the rows are read, and selects the rows exactly. New values and merge conditions are SQL
expressions evaluated on Arrow by :mod:`pyspark_paimon.datasource.dml.sql_eval`. The rows a change touches are
read in this process (the driver); the data is never collected through Python objects.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.dml.change_commit import MergeResult, apply_change
from pyspark_paimon.datasource.dml.change_rules import (
    check_assigned,
    check_merge_engine,
    refuse_deletion_vector,
    refuse_foreign,
    writes_vectors,
)
from pyspark_paimon.datasource.dml.change_target import Target, load_target
from pyspark_paimon.datasource.dml.row_id_dml import delete_by_row_ids, update_by_row_ids
from pyspark_paimon.datasource.dml.sql_eval import Scope, evaluate, parse_expression
from pyspark_paimon.datasource.dml.stale_reads import replanned
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.write.store_assignment import cast_for_store
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import type_to_sql
from pyspark_paimon.planner.predicate import tree_columns, tree_expression
from pyspark_paimon.planner.read_options import FILTER_KEY, ReadOptions
from pyspark_paimon.planner.read_plan import plan_read
from pyspark_paimon.planner.sql_filter import parse_filter

__all__ = ["DELETE_FILTER", "UPDATE_FILTER", "delete_rows", "update_rows", "store_column", "with_columns"]

# How a delete's / an update's filter is named in its errors (FilterError.label).
DELETE_FILTER = "delete filter"
UPDATE_FILTER = "update filter"


def delete_rows(store: FileStore, filter_text: str) -> MergeResult:
    """Delete the rows ``filter_text`` (the ``filter`` read option's SQL) selects, in one commit."""
    if not isinstance(filter_text, str) or not filter_text.strip():
        raise OptionError(
            'delete needs a filter (SQL, e.g. "id = 3"); to empty a table overwrite it with no rows, or use '
            "filter 'true'."
        )
    schema = store.schema()
    check_merge_engine(schema, store.table_path, deletes=True, updates=False)
    text = None if filter_text.strip().lower() == "true" else filter_text
    if text is not None:
        parse_filter(text, schema, label=DELETE_FILTER)  # errors name the delete's filter, not a read option
    if data_evolution_enabled(schema.options):  # by deletion vectors on the rows' ranges, as Paimon master does
        if not schema.core_options.deletion_vectors_enabled:
            refuse_foreign("plain", store)  # names Java's rule and the way out
        return delete_by_row_ids(store, text)
    if not schema.primary_keys and (
        text is None or tree_columns(parse_filter(text, schema)) <= set(schema.partition_keys)
    ):
        whole = _delete_files(store, text)
        if whole is not None:
            return whole

    def run() -> MergeResult:
        target = load_target(store, schema, text)
        mask = _filter_mask(target, schema, text)
        return apply_change(store, schema, target, mask, np.zeros_like(mask), None, None)

    return replanned(store, run)


def _delete_files(store: FileStore, filter_text: str | None) -> MergeResult | None:
    """An append-table delete whose filter names only partition columns selects whole files: they are removed
    without being read (as Java drops the partitions), in one OVERWRITE commit of DELETE entries. Files written
    concurrently into those partitions are not removed; a concurrent removal of one of ours fails the commit."""
    planned = plan_read(store, ReadOptions.from_options({FILTER_KEY: filter_text} if filter_text else {}))
    refuse_foreign(planned.kind, store)
    old: dict[tuple[bytes, int, int], list[DataFileMeta]] = defaultdict(list)
    rows = 0
    for split in planned.plan.splits:
        for f in split.files:
            if split.deletion_files.get(f.file_name) is not None and writes_vectors(store.schema()):
                return None  # its vector would be left behind: delete its rows through the vectors instead
            refuse_deletion_vector(store, split, f)
            old[(split.partition, split.bucket, split.total_buckets)].append(f)
            rows += f.row_count
    if not old:
        return MergeResult()
    job = prepare_write(store)
    messages = [CommitMessage(p, b, total, (), tuple(files)) for (p, b, total), files in old.items()]
    snapshot = job.commit(messages, kind="OVERWRITE")
    return MergeResult(
        deleted=rows,
        files_rewritten=sum(len(v) for v in old.values()),
        snapshot_id=snapshot.id if snapshot is not None else None,
    )


def update_rows(store: FileStore, assignments: Mapping[str, str], filter_text: str | None = None) -> MergeResult:
    """Set ``column = <SQL expression>`` on the rows ``filter_text`` selects (all rows without it)."""
    if not assignments:
        raise OptionError("update needs at least one assignment, e.g. set={'v': 'v + 1'}.")
    schema = store.schema()
    check_merge_engine(schema, store.table_path, deletes=False, updates=True)
    columns = check_assigned(schema, store.table_path, list(assignments))
    parsed = {col: parse_expression(expr) for col, expr in zip(columns, assignments.values())}
    if filter_text:
        parse_filter(filter_text, schema, label=UPDATE_FILTER)  # errors name the update's filter

    def values(rows: pa.Table) -> dict[str, pa.ChunkedArray]:
        scope = Scope({"target": {n: rows.column(n) for n in rows.column_names}}, rows.num_rows, default="target")
        return {col: store_column(evaluate(node, scope), schema, col) for col, node in parsed.items()}

    if data_evolution_enabled(schema.options):  # the changed columns by _ROW_ID, as Paimon master does
        return update_by_row_ids(store, values, filter_text)

    def run() -> MergeResult:
        target = load_target(store, schema, filter_text)
        mask = _filter_mask(target, schema, filter_text)
        rows = target.rows
        return apply_change(store, schema, target, np.zeros_like(mask), mask, with_columns(rows, values(rows)), None)

    return replanned(store, run)


def _filter_mask(target: Target, schema: TableSchema, filter_text: str | None) -> np.ndarray:
    """Which loaded rows the filter selects (primary-key loads are already exact)."""
    n = target.rows.num_rows
    if not filter_text or schema.primary_keys:
        return np.ones(n, dtype=bool)
    expr = tree_expression(parse_filter(filter_text, schema), target.rows.schema)
    positions = target.rows.append_column("__dml_pos", pa.array(np.arange(n, dtype=np.int64))).filter(expr)
    mask = np.zeros(n, dtype=bool)
    mask[positions.column("__dml_pos").to_numpy()] = True
    return mask


def store_column(values: pa.ChunkedArray, schema: TableSchema, name: str) -> pa.ChunkedArray:
    f = schema.field(name)
    want = schema.arrow_schema().field(name).type
    if pa.types.is_null(values.type):
        return pa.chunked_array([pa.nulls(len(values), want)])
    return cast_for_store(values, want, name, type_to_sql(f.type))


def with_columns(rows: pa.Table, columns: Mapping[str, pa.ChunkedArray]) -> pa.Table:
    out = rows
    for name, values in columns.items():
        out = out.set_column(out.schema.get_field_index(name), name, values)
    return out
