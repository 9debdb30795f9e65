"""Ordered compaction of unaware-bucket append tables: sort compaction and incremental clustering.

Two of Paimon's ways to lay an append table out by some columns, so that range filters on them skip files by
their min/max statistics (``planner/scan.py`` prunes with them):

* **sort compaction** (``compact`` with ``order_strategy`` = zorder / hilbert / order and ``order_by``; Java's
  ``CompactProcedure.sortCompactUnAwareBucketTable``): every file of each selected partition is read, the rows
  are put in the curve's order (:mod:`pyspark_paimon.datasource.write.clustering`) and written again as files
  of ``target-file-size``. Java commits this as an OVERWRITE of the partitions; here it is a COMPACT snapshot that
  deletes exactly the files read (the rows are the same, and a concurrent append to the partition is kept, not
  overwritten). Java allows it only for unaware-bucket append tables without incremental clustering;
* **incremental clustering** (Paimon 1.3, ``clustering.incremental`` = true with ``clustering.columns``; Java's
  ``IncrementalClusterManager``): a partition's files form an LSM of sorted runs (each level-0 file is a run, each
  level above is one run of files ordered together), and each compaction picks runs by Java's universal rules
  (``full``: every run into the max level, unless the partition already is one max-level run clustered by the
  same columns); the picked files are ordered by ``clustering.strategy`` and written at the output level.

Both run as ordinary compaction tasks (:class:`~pyspark_paimon.datasource.compact.compact_plan.CompactTask`
with an ``order``), so the runners, the commit and the retry after a conflict are compaction's own. A partition
is ordered in one task, in memory (Java's Spark job range-partitions it across tasks instead).
"""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa

from pyspark_paimon.datasource.write.clustering import RowOrder, auto_strategy
from pyspark_paimon.errors import CompactionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import (
    CLUSTERING_INCREMENTAL,
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
    COMPACTION_SIZE_RATIO,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    ZORDER_VAR_LENGTH_CONTRIBUTION,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.planner.compact_strategy import CompactUnit, level_sorted_runs, pick_full, pick_universal

__all__ = [
    "sort_order",
    "cluster_order",
    "refuse_ordered",
    "clustering_incremental",
    "pick_cluster",
    "ordered_rows",
]


def clustering_incremental(schema: TableSchema) -> bool:
    """Whether compactions of the table are incremental clusterings (``clustering.incremental``)."""
    return schema.core_options.get(CLUSTERING_INCREMENTAL)


def refuse_ordered(schema: TableSchema, table: str, what: str) -> None:
    """Java's rule: ordered compaction and clustering only for unaware-bucket append tables (``bucket`` = -1)."""
    if schema.primary_keys or schema.core_options.bucket != -1:
        bucket = schema.core_options.bucket
        kind = "a primary-key table" if schema.primary_keys else f"an append table with 'bucket' = {bucket}"
        raise CompactionError(
            f"{what} of {table}: Paimon orders only unaware-bucket append tables ('bucket' = -1), and this is {kind}. "
            "Compact it without an order, or copy the data into an append table with 'bucket' = '-1'."
        )


def sort_order(schema: TableSchema, table: str, strategy: str, order_by: Sequence[str] | str) -> RowOrder:
    """The order of a sort compaction (``order_strategy``, ``order_by``), checked as Java checks it."""
    refuse_ordered(schema, table, "Sort compaction")
    if clustering_incremental(schema):
        raise CompactionError(
            f"Table {table} has 'clustering.incremental' = 'true': Paimon refuses a sort compaction of it "
            "(order_strategy); run compact without an order, which clusters it by 'clustering.columns'."
        )
    columns = order_by.split(",") if isinstance(order_by, str) else list(order_by)
    var_bytes = schema.core_options.get(ZORDER_VAR_LENGTH_CONTRIBUTION)
    return RowOrder.of(strategy, columns, schema, var_bytes, what="Sort compaction: ")


def cluster_order(schema: TableSchema, table: str) -> RowOrder:
    """The order of an incremental clustering: ``clustering.columns`` in ``clustering.strategy``."""
    refuse_ordered(schema, table, "Incremental clustering")
    options = schema.core_options
    columns = options.clustering_columns
    if not columns:
        raise CompactionError(
            f"Table {table} has 'clustering.incremental' = 'true' but no 'clustering.columns': set the columns to "
            "cluster by."
        )
    if options.deletion_vectors_enabled:
        raise CompactionError(
            f"Incremental clustering of {table}, a deletion-vector table, is not supported here yet (the vectors of "
            "the files it keeps would have to be rewritten). Run it with Paimon (CALL sys.compact)."
        )
    strategy = auto_strategy(options.clustering_strategy, len(columns))
    var_bytes = options.get(ZORDER_VAR_LENGTH_CONTRIBUTION)
    return RowOrder.of(strategy, columns, schema, var_bytes, what="Incremental clustering: ")


def pick_cluster(
    options: CoreOptions,
    files: list[DataFileMeta],
    full: bool,
    columns: Sequence[str],
    schema_columns: dict[int, list[str]],
    where: str,
) -> CompactUnit | None:
    """Java's ``IncrementalClusterStrategy.pick`` for one partition's files: ``full`` takes every run into the
    max level unless there is only one max-level run already clustered by ``columns`` (``schema_columns``: the
    clustering columns of each schema id); otherwise the universal rules pick."""
    num_levels = options.num_levels
    runs = level_sorted_runs(files, num_levels, where)
    if full:
        max_level = num_levels - 1
        if len(runs) == 1 and runs[0].level == max_level:
            if schema_columns.get(runs[0].files[0].schema_id) == list(columns):
                return None
            return CompactUnit(max_level, runs[0].files)
        return pick_full(num_levels, runs)
    return pick_universal(
        num_levels,
        runs,
        max_size_amp=options.get(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
        size_ratio=options.get(COMPACTION_SIZE_RATIO),
        trigger=options.get(NUM_SORTED_RUN_COMPACTION_TRIGGER),
    )


def ordered_rows(tables: Sequence[pa.Table], order: RowOrder) -> pa.Table:
    """The rows of ``tables`` (one partition's files, as read) in ``order``."""
    rows = pa.concat_tables(tables) if len(tables) != 1 else tables[0]
    return rows.take(order.indices(rows))
