"""``Table.diff``: the rows that differ between two versions of a table, from the files that differ only.

The plan is the streaming planner's "diff" phase (:meth:`~pyspark_paimon.planner.stream_scan.StreamPlanner.
diff_splits`), which already compares two states of a table: the live files of both versions are listed from
the manifests, and only the buckets (primary-key tables) or files (append tables) that are not identical on both
sides are read, so the cost follows the change, not the table. Each pair is compared by
:func:`pyspark_paimon.datasource.stream.stream_jobs.diff_split`, buckets on threads. Within a primary-key bucket only
the keys of the files one side holds can differ: every file is read once (a file both sides share is the same
bytes), a shared file reduced to those keys' records before the merge (exact: a key keeps all its records or
none), each side's candidates merged with the merge engine and compared; the rest of the bucket is decoded but
never merged, sorted or compared. ``metrics`` (:class:`~pyspark_paimon.datasource.stream.stream_jobs.DiffMetrics`)
counts what was read and compared.

Primary-key tables: ``+I`` a key only in ``to``, ``-D`` a key only in ``from`` (its old row), ``-U``/``+U`` the
old and new row of a key whose row differs. Append tables have no key, so they are compared by file lineage: the
rows of files only in ``from`` are ``-D``, those of files only in ``to`` are ``+I``; a row that is removed and
added again in the same partition (a copy-on-write rewrite keeps most rows of the file it replaces) cancels out,
when every column can be grouped on (no nested types), so a rewrite shows just the rows it changed. With
deletion vectors, each side's files are read without the rows its vectors delete (primary-key tables too); in an
append table a file both sides hold whose vector differs contributes the rows at the positions only one side
deletes (a deletion-vector DML changes no file, only vectors).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.merge import KIND_DELETE, KIND_INSERT, VALUE_KIND
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.stream.stream_jobs import DiffMetrics, diff_split, kind_names
from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.manifests.deletion_vectors import DeletionFile, deletion_files, read_deletion_vector
from pyspark_paimon.metadata.manifests.manifest import ManifestEntry
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import chain_read_config
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_offset import StreamSplit
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN, StreamOptions
from pyspark_paimon.planner.stream_scan import StreamPlanner
from pyspark_paimon.planner.time_travel import resolve_version, version_branch

__all__ = ["DiffMetrics", "Ref", "diff_snapshots", "diff_versions", "resolve_ref"]

#: Splits compared at once: Parquet decoding, sorting and merging release the GIL (as ``ReadJob.to_arrow``).
_DIFF_THREADS = max(1, os.cpu_count() or 1)

#: A version of a table: a snapshot id, a tag, a branch (its latest snapshot) or ``<branch>.<tag or id>``.
Ref = int | str


def resolve_ref(store: FileStore, ref: Ref) -> tuple[FileStore, Snapshot]:
    """The branch and snapshot ``ref`` names, relative to ``store``'s branch: a snapshot id (or the copy a tag
    kept of an expired one), a tag, a branch name (its latest snapshot), or ``<branch>.<tag or snapshot id>``.
    Unknown refs raise the not-found error of what they look like, naming the ref."""
    if isinstance(ref, bool) or not isinstance(ref, (int, str)) or ref == "":
        raise OptionError(f"A diff ref is a snapshot id, a tag, a branch or '<branch>.<tag>'; got {ref!r}.")
    if isinstance(ref, int):
        return store, find_snapshot(store.snapshots, TagManager(store), ref)
    tags = TagManager(store)
    if tags.exists(ref):
        return store, tags.get(ref)
    if ref == store.branch or ref == MAIN_BRANCH or BranchManager(store).exists(ref):
        branch = store.with_branch(ref)
        latest = branch.snapshots.latest()
        if latest is None:
            raise SnapshotNotFoundError(
                f"Branch '{ref}' of {store.table_path} has no snapshot yet, so it has no version to diff. "
                "Commit to it first, or name a tag or snapshot id."
            )
        return branch, latest
    branch, opts = version_branch(store, ReadOptions(version=ref))
    assert opts.version is not None
    return branch, resolve_version(branch, TagManager(branch), opts.version)


def _cancel_rewritten(table: pa.Table) -> pa.Table:
    """Append tables: drop the rows a version removes and adds again (same values, same partition), keeping
    ``|added - removed|`` copies of each distinct row; unchanged when a column cannot be grouped on."""
    data = [n for n in table.column_names if n != VALUE_KIND]
    groupable = all(
        pa.types.is_primitive(t) or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
        for t in (table.schema.field(n).type for n in data)
    )
    if not groupable or table.num_rows == 0:
        return table
    kinds = table.column(VALUE_KIND).to_numpy()
    added = (kinds == KIND_INSERT).astype(np.int64)
    indexed = table.select(data).append_column("__added", pa.array(added))
    indexed = indexed.append_column("__removed", pa.array(1 - added))
    indexed = indexed.append_column("__row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    groups = indexed.group_by(data, use_threads=False).aggregate(
        [("__added", "sum"), ("__removed", "sum"), ("__row", "list")]
    )
    net = groups.column("__added_sum").to_numpy() - groups.column("__removed_sum").to_numpy()
    keep = net != 0
    rows = groups.column("__row_list").filter(pa.array(keep))
    counts = np.abs(net[keep])
    # A group's rows all have its values; take the first |net| of the side that wins (all one kind when |net| = n).
    firsts = pc.list_element(rows, 0).to_numpy() if len(rows) else np.empty(0, dtype=np.int64)
    take = np.repeat(firsts, counts)
    out = table.select(data).take(pa.array(take, pa.int64()))
    kind = np.repeat(np.where(net[keep] > 0, KIND_INSERT, KIND_DELETE).astype(np.int8), counts)
    return out.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array(kind))


def _vectors_of(store: FileStore, snapshot: Snapshot) -> dict[str, DeletionFile]:
    """Every data file's deletion vector in ``snapshot``, by file name (file names are unique in a table)."""
    if not snapshot.index_manifest:
        return {}
    index_dir = f"{store.table_path}/index"
    per_bucket = deletion_files(
        store.fileio, store.manifests.path(snapshot.index_manifest), lambda e: f"{index_dir}/{e.file_name}"
    )
    return {name: d for files in per_bucket.values() for name, d in files.items()}


def _with_vectors(split: DataSplit, vectors: dict[str, DeletionFile]) -> DataSplit:
    found = {f.file_name: vectors[f.file_name] for f in split.files if f.file_name in vectors}
    return replace(split, deletion_files=found) if found else split


def _vector_changes(
    ctx: ReadContext,
    store: FileStore,
    snapshot_id: int,
    schema: TableSchema,
    before: list[ManifestEntry],
    after: list[ManifestEntry],
    dv_before: dict[str, DeletionFile],
    dv_after: dict[str, DeletionFile],
) -> list[pa.Table]:
    """The rows of files both versions hold whose deletion vectors differ: positions only ``after`` deletes are
    ``-D``, positions only ``before`` deletes are ``+I``. Only those files are read."""
    shared = {e.file.file_name for e in before} & {e.file.file_name for e in after}
    changed = [
        e
        for e in after
        if e.file.file_name in shared and dv_before.get(e.file.file_name) != dv_after.get(e.file.file_name)
    ]
    if not changed:
        return []
    planner = StreamPlanner(store, StreamOptions.from_options({}), schema)
    empty = np.zeros(0, dtype=np.int64)
    out: list[pa.Table] = []
    for s in planner.diff_splits(snapshot_id, [], changed):
        split = s.after
        assert split is not None
        name = split.files[0].file_name
        old = read_deletion_vector(store.fileio, dv_before[name], name) if name in dv_before else empty
        new = read_deletion_vector(store.fileio, dv_after[name], name) if name in dv_after else empty
        removed, restored = np.setdiff1d(new, old), np.setdiff1d(old, new)
        if not len(removed) and not len(restored):
            continue
        batches = list(read_split(replace(ctx, read_fields=None), replace(split, deletion_files={})))
        rows = (
            pa.Table.from_batches(batches, schema=ctx.output_schema()) if batches else ctx.output_schema().empty_table()
        )
        for positions, kind in ((removed, KIND_DELETE), (restored, KIND_INSERT)):
            if len(positions):
                picked = rows.take(pa.array(positions, pa.int64()))
                kinds = pa.array(np.full(picked.num_rows, kind, dtype=np.int8))
                out.append(picked.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), kinds))
    return out


def _sort_keys(table: pa.Table, keys: Iterable[str]) -> list[tuple[str, str]]:
    sortable = [
        n
        for n in table.column_names
        if not pa.types.is_nested(table.schema.field(n).type) and n not in (VALUE_KIND, ROW_KIND_COLUMN)
    ]
    keys = list(keys)
    return [(k, "ascending") for k in (keys or sortable)] + [(VALUE_KIND, "ascending")]


def _compare_splits(ctx: ReadContext, splits: list[StreamSplit], metrics: DiffMetrics) -> list[pa.Table]:
    """Each split's change, several buckets at once on threads (one per core), in the splits' order."""

    def one(s: StreamSplit) -> tuple[pa.Table, DiffMetrics]:
        counted = DiffMetrics()
        return diff_split(ctx, s, updates=True, metrics=counted), counted

    threads = min(len(splits), _DIFF_THREADS)
    if threads <= 1:
        done = [one(s) for s in splits]
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-diff") as pool:
            done = list(pool.map(one, splits))
    for _, counted in done:
        metrics.add(counted)
    return [part for part, _ in done]


def diff_versions(store: FileStore, from_ref: Ref, to_ref: Ref) -> pa.Table:
    """The rows that differ from version ``from_ref`` to ``to_ref`` of ``store``'s table (module docstring): the
    table's columns (its latest schema on ``to_ref``'s branch) after a leading ``rowkind`` column, sorted by key."""
    if chain_read_config(store) is not None:
        raise OptionError(
            f"{store.table_path} is a chain table, whose versions span its snapshot and delta branches; diff is not "
            "supported on it yet. Diff the branches' own versions ('<branch>.<tag>') on a non-chain copy instead."
        )
    from_store, before = resolve_ref(store, from_ref)
    to_store, after = resolve_ref(store, to_ref)
    return diff_snapshots(from_store, before, to_store, after)


def diff_snapshots(
    from_store: FileStore,
    before: Snapshot,
    to_store: FileStore,
    after: Snapshot,
    metrics: DiffMetrics | None = None,
) -> pa.Table:
    """:func:`diff_versions` between two resolved snapshots (``before`` of ``from_store``'s branch, ``after`` of
    ``to_store``'s); the branch merge (:mod:`~pyspark_paimon.datasource.versions.branch_merge`) pins its snapshots so.
    ``metrics`` counts what the comparison read (buckets by key or whole, files, rows)."""
    metrics = DiffMetrics() if metrics is None else metrics
    schema = to_store.schema()
    splits: list[StreamSplit] = []
    if not (from_store.branch == to_store.branch and before.id == after.id):
        planner = StreamPlanner(to_store, StreamOptions.from_options({}), schema)
        splits = planner.diff_splits(after.id, from_store.live_entries(before), to_store.live_entries(after))
    if from_store.branch != to_store.branch:
        # The files of ``from`` are described by its branch's schemas (they share the table's data directory).
        fixed = []
        for s in splits:
            if s.before is not None:
                names = {f.file_name: from_store.branch for f in s.before.files}
                s = replace(s, before=replace(s.before, file_branches={**s.before.file_branches, **names}))
            fixed.append(s)
        splits = fixed
    ctx = ReadContext.for_store(to_store, schema, also=(from_store,))
    empty = ctx.output_schema().empty_table()
    empty = empty.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array([], pa.int8()))
    vector_parts: list[pa.Table] = []
    if before.index_manifest or after.index_manifest:
        # Each side is read without the rows its vectors delete. A primary-key table needs them too: a
        # deletion-vector compaction merges a key's older record into its output and deletes the older one by
        # vector (an aggregation would count it twice without), while the older file stays.
        dv_before, dv_after = _vectors_of(from_store, before), _vectors_of(to_store, after)
        splits = [
            replace(
                s,
                before=None if s.before is None else _with_vectors(s.before, dv_before),
                after=None if s.after is None else _with_vectors(s.after, dv_after),
            )
            for s in splits
        ]
        if not schema.primary_keys and not (from_store.branch == to_store.branch and before.id == after.id):
            vector_parts = _vector_changes(
                ctx,
                to_store,
                after.id,
                schema,
                from_store.live_entries(before),
                to_store.live_entries(after),
                dv_before,
                dv_after,
            )
    parts = _compare_splits(ctx, splits, metrics) + [p.select(empty.column_names) for p in vector_parts]
    changes = pa.concat_tables([empty, *parts]) if parts else empty
    keys = list(schema.primary_keys)
    if not keys:
        changes = _cancel_rewritten(changes)
    if changes.num_rows:
        changes = changes.take(pc.sort_indices(changes, sort_keys=_sort_keys(changes, keys)))
    kinds = pc.take(kind_names(), changes.column(VALUE_KIND))
    out = changes.drop_columns([VALUE_KIND]).add_column(0, pa.field(ROW_KIND_COLUMN, pa.string()), kinds)
    return out.combine_chunks()
