"""What a row-level change reads: the rows it may touch (:class:`Target`), loaded once per attempt.

Primary-key tables: the merged rows the filter selects (the read's own filter, pruned with its implied leaves).
Append tables: every row of each candidate file, read whole and in file order (a rewrite keeps the untouched rows;
a deletion vector needs each row's position), with the file each row came from. A merge prunes the read by its
source's keys (:func:`key_prune`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.dml.change_rules import refuse_foreign, writes_vectors
from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.errors import DmlError
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.row_tracking import READ_COLUMNS_KEY, row_tracking_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf, implied_leaves
from pyspark_paimon.planner.read_options import FILTER_KEY, ReadOptions
from pyspark_paimon.planner.read_plan import plan_read
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.sql_filter import parse_filter

__all__ = ["PRUNE_KEYS", "Target", "load_target", "read_unit", "key_prune"]

# A merge source with at most this many distinct keys (one key column) prunes the target read by them.
PRUNE_KEYS = 10_000


@dataclass
class Target:
    """The rows a change may touch. Append tables: every row of each candidate file, in file order, with the
    file each row came from (``file_of_row`` indexes ``files``); primary-key tables: merged rows."""

    rows: pa.Table
    files: list[tuple[DataSplit, DataFileMeta]] = field(default_factory=list)
    file_of_row: np.ndarray | None = None
    # Deletion-vector append tables: each row's position in its file, each file's already deleted positions
    # (by index in ``files``) and the snapshot the rows were read at.
    positions: np.ndarray | None = None
    existing: dict[int, np.ndarray] = field(default_factory=dict)
    snapshot: Snapshot | None = None
    files_read: int = 0
    # Primary-key tables: the leaves the read was pruned with (what a concurrent commit must avoid, see
    # :func:`unchanged_since`).
    pruned_by: list[Leaf] | None = None


def load_target(store: FileStore, schema: TableSchema, filter_text: str | None, prune: Sequence[Leaf] = ()) -> Target:
    """Read what the change may touch. ``filter_text`` selects rows exactly on primary-key tables (the read's own
    filter) and prunes on append tables (whose files are read whole); ``prune`` only prunes."""
    tree = parse_filter(filter_text, schema) if filter_text else None
    leaves = [*implied_leaves(tree), *prune] if tree is not None else list(prune)
    if schema.primary_keys:
        opts = ReadOptions.from_options({FILTER_KEY: filter_text} if filter_text else {})
        job = prepare_read(store, opts, leaves)
        refuse_foreign(job.planned.kind, store)
        return Target(
            job.to_arrow(), snapshot=job.plan.snapshot, files_read=job.plan.counters.files_selected, pruned_by=leaves
        )
    # A row-tracking table's rows are read with their _ROW_ID and _SEQUENCE_NUMBER, which its rewrite keeps.
    tracked = {READ_COLUMNS_KEY: "true"} if row_tracking_enabled(schema.options) else {}
    planned = plan_read(store, ReadOptions.from_options(tracked), leaves)
    refuse_foreign(planned.kind, store)
    # Files are rewritten whole: the context must not skip row groups by the pruning predicate.
    ctx = ReadContext.for_plan(store, replace(planned, predicate=(), selection=None))
    vectors = writes_vectors(schema)
    files: list[tuple[DataSplit, DataFileMeta]] = []
    tables: list[pa.Table] = []
    owners: list[np.ndarray] = []
    positions: list[np.ndarray] = []
    existing: dict[int, np.ndarray] = {}
    for split in planned.plan.splits:
        for f in split.files:
            one = replace(split, files=(f,))
            unit = read_unit(ctx, one, vectors)
            if unit is None:
                continue
            data, pos, gone = unit
            if vectors:
                existing[len(files)] = gone
                positions.append(pos)
            owners.append(np.full(data.num_rows, len(files), dtype=np.int64))
            files.append((one, f))
            tables.append(data)
    rows = pa.concat_tables(tables) if tables else ctx.output_schema().empty_table()
    empty = np.zeros(0, dtype=np.int64)
    return Target(
        rows,
        files,
        np.concatenate(owners) if owners else empty,
        positions=(np.concatenate(positions) if positions else empty) if vectors else None,
        existing=existing,
        snapshot=planned.plan.snapshot,
        files_read=len(files),
    )


def read_unit(ctx: ReadContext, split: DataSplit, vectors: bool) -> tuple[pa.Table, np.ndarray, np.ndarray] | None:
    """The live rows of the one data file of ``split`` (None when it has none), with each row's position in the
    file and the positions its deletion vector already deletes (``vectors``: read positions, for a table whose
    changes are deletion vectors; else positions are not tracked and the read applies the vector itself)."""
    f = split.files[0]
    dfile = split.deletion_files.get(f.file_name)
    if vectors:  # read every row, to know each one's position, and drop the deleted ones here
        split = replace(split, deletion_files={})
    batches = list(read_split(ctx, split))
    data = pa.Table.from_batches(batches, schema=ctx.output_schema()) if batches else None
    none = np.zeros(0, dtype=np.int64)
    if data is None or data.num_rows == 0:
        return None
    if not vectors:
        return data, none, none
    if data.num_rows != f.row_count:
        raise DmlError(
            f"Data file {f.file_name} of {ctx.table_path} read {data.num_rows} rows but its metadata says "
            f"{f.row_count}; row positions for its deletion vector cannot be known."
        )
    pos = np.arange(data.num_rows, dtype=np.int64)
    gone = read_deletion_vector(ctx.fileio, dfile, f.file_name) if dfile is not None else none
    if len(gone):
        keep = ~np.isin(pos, gone)
        data, pos = data.filter(pa.array(keep)), pos[keep]
        if data.num_rows == 0:
            return None
    return data, pos, gone


def key_prune(keys: pa.Table, on: Sequence[str]) -> list[Leaf]:
    """Pruning leaves that hold for every row whose key the source ``keys`` holds: per key column, ``in`` its
    values when there are at most ``PRUNE_KEYS`` (which also selects the buckets of a key that fixes them),
    else its value range (skips files and row groups outside it). NULL keys match nothing."""
    leaves: list[Leaf] = []
    for k in on:
        column = keys.column(k).drop_null()
        if len(column) == 0:
            return leaves
        values = pc.unique(column)
        if len(values) <= PRUNE_KEYS:
            leaves.append(Leaf(k, "in", tuple(values.to_pylist())))
        else:
            bounds = pc.min_max(column)
            leaves += [Leaf(k, ">=", bounds["min"].as_py()), Leaf(k, "<=", bounds["max"].as_py())]
    return leaves
