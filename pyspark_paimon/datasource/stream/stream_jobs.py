"""Streaming reads and writes, the Spark-free halves (:mod:`pyspark_paimon.datasource.spark.streaming` adapts them).

Reading: :class:`StreamReadJob` plans micro-batches with :class:`pyspark_paimon.planner.stream_scan.StreamPlanner`
and :func:`read_stream_split` turns each split into Arrow batches, in executors. What a split returns depends
on its phase (see the planner's docstring); every row carries its kind until the end, where ``read.changelog``
either shows it as Paimon's ``rowkind`` column (+I/-U/+U/-D) or keeps only the rows that are the new state of
their key (+I/+U), dropping retractions (-U/-D), whose values would otherwise read as ordinary rows.

Writing: each micro-batch is one commit whose identifier is Spark's batch id, by a commit user that is the same
for every run of one streaming query (derived from its checkpoint). Before committing, :class:`StreamCommitter`
looks for the newest snapshot of that user: if it already holds this batch id or a later one, the batch landed
before a crash and Spark is replaying it, so it is skipped (its new files deleted) instead of committed twice.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass, replace
from typing import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.merge import (
    KIND_DELETE,
    KIND_INSERT,
    KIND_UPDATE_AFTER,
    KIND_UPDATE_BEFORE,
    VALUE_KIND,
    adjacent_differ,
)
from pyspark_paimon.datasource.read.key_probes import read_records, read_records_of_keys
from pyspark_paimon.datasource.read.merged_read import merge_records, oldest_first
from pyspark_paimon.datasource.read.read import read_file_changes, read_split
from pyspark_paimon.datasource.read.read_context import ReadContext, residual_schema
from pyspark_paimon.errors import OptionError, SchemaError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.variant.path import VariantGet, variant_gets
from pyspark_paimon.planner.chain.config import MAIN, chain_read_config
from pyspark_paimon.planner.micro_batch import Admission, task_groups
from pyspark_paimon.planner.predicate import tree_columns, tree_expression
from pyspark_paimon.planner.scan import split_packing
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_offset import StreamOffset, StreamSplit
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN, StreamOptions
from pyspark_paimon.planner.stream_scan import StreamPlanner

log = logging.getLogger(__name__)

__all__ = [
    "diff_split",
    "DiffMetrics",
    "kind_names",
    "StreamReadContext",
    "StreamReadJob",
    "read_stream_split",
    "stream_store",
    "stream_commit_user",
    "StreamCommitter",
]


@functools.cache
def kind_names() -> pa.Array:
    """Paimon's names of the row kinds, by kind. Built on first use, not at import: ``pa.array`` imports pandas
    (~0.2 s), and Spark's streaming-source runner, which imports this module to plan, never needs it."""
    return pa.array(["+I", "-U", "+U", "-D"], pa.string())


def stream_store(store: FileStore) -> FileStore:
    """The branch whose commits a stream of ``store`` follows, and whose latest schema it returns: a chain table's
    delta branch (after its start, which reads the snapshot branch too:
    :mod:`pyspark_paimon.planner.chain.stream_start`)."""
    cfg = chain_read_config(store)
    if cfg is not None and cfg.delta_branch:
        return store.with_branch(cfg.delta_branch)
    return store


@dataclass(frozen=True)
class StreamReadContext:
    """What an executor needs to read the splits of one micro-batch (picklable)."""

    read: ReadContext
    changelog: bool  # show the row kind as a leading ``rowkind`` column, keep retractions

    def output_schema(self) -> pa.Schema:
        base = self.read.output_schema()
        if not self.changelog:
            return base
        return pa.schema([pa.field(ROW_KIND_COLUMN, pa.string()), *base])


def _with_kinds(batch: pa.RecordBatch | pa.Table, kind: int) -> pa.Table:
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    return table.append_column(
        pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array(np.full(table.num_rows, kind, dtype=np.int8))
    )


def _collect(ctx: ReadContext, split: DataSplit) -> pa.Table:
    batches = list(read_split(ctx, split))
    schema = ctx.output_schema()
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


@dataclass
class DiffMetrics:
    """What comparing diff splits read (``diff_snapshots(..., metrics=)``), counted per call, like
    :class:`~pyspark_paimon.datasource.read.read_context.ReadMetrics`, so concurrent diffs never mix their numbers.

    ``buckets_by_key``: primary-key buckets compared on the keys of the files only one side holds (every file
    read once, the shared ones reduced to those keys); ``buckets_whole``: splits compared whole, both sides read
    and merged in full (append files, a bucket with no file in common, and what key filtering does not cover:
    see :func:`_sides_by_key`); ``files_read``: data files opened (a file both sides share counts once when
    compared by key); ``rows_read``: records in them; ``rows_compared``: merged rows of both sides compared."""

    buckets_by_key: int = 0
    buckets_whole: int = 0
    files_read: int = 0
    rows_read: int = 0
    rows_compared: int = 0

    def add(self, other: "DiffMetrics") -> None:
        """Fold in the counts of another split's comparison (a thread's share of a diff)."""
        self.buckets_by_key += other.buckets_by_key
        self.buckets_whole += other.buckets_whole
        self.files_read += other.files_read
        self.rows_read += other.rows_read
        self.rows_compared += other.rows_compared


def _whole_sides(ctx: ReadContext, s: StreamSplit, metrics: DiffMetrics) -> tuple[pa.Table, pa.Table]:
    """Both sides of ``s`` read and merged in full (keys and every value: all of them are compared)."""
    full = replace(ctx, read_fields=None)
    empty = full.output_schema().empty_table()
    metrics.buckets_whole += 1
    for side in (s.before, s.after):
        if side is not None:
            metrics.files_read += len(side.files)
            metrics.rows_read += sum(f.row_count for f in side.files)
    before = _collect(full, s.before) if s.before is not None else empty
    after = _collect(full, s.after) if s.after is not None else empty
    return before, after


def _sides_by_key(ctx: ReadContext, s: StreamSplit, metrics: DiffMetrics) -> tuple[pa.Table, pa.Table] | None:
    """Both sides of a primary-key bucket reduced to the keys that can differ, or None where that does not apply.

    Only a file one side holds can make a key differ: the candidates are the keys of those files (a file both
    sides list with another deletion vector or level counts as one of each side's own). Each file is read once
    (a shared file is the same bytes on both sides), reduced to the candidates' records, and each side's records
    are merged with the table's merge engine as a read merges them
    (:func:`~pyspark_paimon.datasource.read.merged_read.merge_records`). A key keeps all its records or none, so
    each candidate gets exactly its merged row of a whole read.

    None (the caller reads the whole bucket): a bucket on one side only or with no file in common (nothing to
    save), chain splits (file ranks and relabelled partitions belong to the whole read), a floating-point key
    (``is_in`` and the merge's sort need not agree on NaN and -0.0), and a shared file that the two sides'
    branches describe with different schemas."""
    sb, sa = s.before, s.after
    schema = ctx.schema
    if not schema.primary_keys or sb is None or sa is None:
        return None
    if sb.relabel_partition or sa.relabel_partition or sb.file_ranks or sa.file_ranks:
        return None
    key_names = list(schema.trimmed_primary_keys) or list(schema.primary_keys)
    arrow_schema = schema.arrow_schema()
    if any(pa.types.is_floating(arrow_schema.field(k).type) for k in key_names):
        return None

    def version(split: DataSplit, f: DataFileMeta) -> tuple[str, int, object]:
        return f.file_name, f.level, split.deletion_files.get(f.file_name)

    shared = {version(sb, f) for f in sb.files} & {version(sa, f) for f in sa.files}
    if not shared:
        return None
    by_name_b = {f.file_name: f for f in sb.files}
    for f in sa.files:
        if version(sa, f) in shared and ctx.file_schema(sb, by_name_b[f.file_name]) != ctx.file_schema(sa, f):
            return None
    full = replace(ctx, read_fields=None, residual=None)
    own: dict[tuple[int, str], pa.Table] = {}  # (side, file name) -> every record of a file of one side
    for i, split in enumerate((sb, sa)):
        for f in split.files:
            if version(split, f) not in shared:
                own[(i, f.file_name)] = read_records(full, split, f)
                metrics.files_read += 1
                metrics.rows_read += own[(i, f.file_name)].num_rows
    metrics.buckets_by_key += 1
    keys = pa.concat_tables([t.select(key_names) for t in own.values()]) if own else None
    out = full.output_schema()
    if keys is None or keys.num_rows == 0:
        return out.empty_table(), out.empty_table()
    keys = keys.group_by(key_names, use_threads=False).aggregate([])
    common: dict[str, pa.Table | None] = {}
    for f in sa.files:
        if version(sa, f) in shared:
            common[f.file_name], read = read_records_of_keys(full, sa, f, keys, key_names)
            metrics.files_read += 1
            metrics.rows_read += read

    def side(i: int, split: DataSplit) -> pa.Table:
        files, tables = [], []
        for f in oldest_first(split, split.files):
            t = own[(i, f.file_name)] if (i, f.file_name) in own else common[f.file_name]
            if t is not None and t.num_rows:
                files.append(f)
                tables.append(t)
        if not tables:
            return out.empty_table()
        merged = merge_records(full, split, tables, drop_retracts=True, files=files)
        if ctx.residual is not None and merged.num_rows:
            merged = ctx.filter_rows(merged)
        columns = [merged.column(fld.name) for fld in out]
        return pa.Table.from_arrays(
            [c if c.type == fld.type else c.cast(fld.type) for c, fld in zip(columns, out)], schema=out
        )

    return side(0, sb), side(1, sa)


def _compare(before: pa.Table, after: pa.Table, keys: Sequence[str], updates: bool) -> pa.Table:
    """The rows of two merged states (each holds a key at most once) that differ by key, with their kinds."""
    both = pa.concat_tables([before, after])
    side = np.concatenate([np.zeros(before.num_rows, dtype=np.int8), np.ones(after.num_rows, dtype=np.int8)])
    order = pc.sort_indices(
        both.append_column("__side", pa.array(side)),
        sort_keys=[(k, "ascending") for k in keys] + [("__side", "ascending")],
    )
    both = both.take(order)
    side = side[np.asarray(order)]
    n = both.num_rows
    same_key = np.ones(max(n - 1, 0), dtype=bool)
    for k in keys:
        same_key &= ~adjacent_differ(both.column(k))
    # Each side holds a key at most once, so a pair is (before at i, after at i + 1).
    in_pair = np.zeros(n, dtype=bool)
    in_pair[:-1] |= same_key
    in_pair[1:] |= same_key
    changed = np.zeros(max(n - 1, 0), dtype=bool)
    for name in both.column_names:
        if name not in keys:
            changed |= adjacent_differ(both.column(name))
    emit = ~in_pair
    emit[1:] |= same_key & changed
    kinds = np.where(side == 0, KIND_DELETE, KIND_INSERT).astype(np.int8)
    if updates:
        updated = same_key & changed
        kinds[:-1][updated] = KIND_UPDATE_BEFORE
        kinds[1:][updated] = KIND_UPDATE_AFTER
        emit[:-1] |= updated  # the old row too
    combined = both.append_column(pa.field(VALUE_KIND, pa.int8(), nullable=False), pa.array(kinds))
    return combined.filter(pa.array(emit))


def diff_split(ctx: ReadContext, s: StreamSplit, updates: bool = False, metrics: DiffMetrics | None = None) -> pa.Table:
    """The change from ``s.before`` to ``s.after`` (both merged), as rows with kinds (module docstring).

    A key whose row changed is its new row as +I for streams; ``updates`` makes it a -U/+U pair of the old and
    the new row (``Table.diff``). A primary-key bucket is compared on the keys its changed files hold where that
    is exact (:func:`_sides_by_key`), else whole; ``metrics`` counts what was read."""
    metrics = DiffMetrics() if metrics is None else metrics
    sides = _sides_by_key(ctx, s, metrics)
    before, after = sides if sides is not None else _whole_sides(ctx, s, metrics)
    metrics.rows_compared += before.num_rows + after.num_rows
    keys = list(ctx.schema.primary_keys)
    if not keys:  # append tables: removed files' rows retract, added files' rows insert
        combined = pa.concat_tables([_with_kinds(before, KIND_DELETE), _with_kinds(after, KIND_INSERT)])
    else:
        combined = _compare(before, after, keys, updates)
    names = [f.name for f in ctx.output_schema()]
    return combined.select([*names, VALUE_KIND])


def read_diff_split(ctx: ReadContext, split: DataSplit) -> Iterator[pa.RecordBatch]:
    """A batch incremental diff split (``split.diff_before`` set; Java's ``IncrementalDiffSplitRead`` for a
    batch read, which keeps no deletes): the end side's row of each key that is new or whose merged row differs
    from the start side's, in ``ctx``'s output schema."""
    assert split.diff_before is not None
    changes = diff_split(ctx, StreamSplit(0, 0, "diff", replace(split, diff_before=None), split.diff_before))
    rows = changes.filter(pc.equal(changes.column(VALUE_KIND), KIND_INSERT)).drop_columns([VALUE_KIND])
    for batch in rows.combine_chunks().to_batches(max_chunksize=max(1, ctx.batch_size)):
        if batch.num_rows:
            yield batch


def _emit(sctx: StreamReadContext, table: pa.Table | pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """Turn rows with a trailing ``_VALUE_KIND`` column into the stream's output (module docstring)."""
    kinds = table.column(VALUE_KIND)
    data = (
        table.drop_columns([VALUE_KIND])
        if isinstance(table, pa.Table)
        else pa.Table.from_batches([table]).drop_columns([VALUE_KIND])
    )
    if sctx.changelog:
        data = data.add_column(0, pa.field(ROW_KIND_COLUMN, pa.string()), pc.take(kind_names(), kinds))
    else:
        data = data.filter(pc.is_in(kinds, pa.array([KIND_INSERT, KIND_UPDATE_AFTER], pa.int8())))
    schema = sctx.output_schema()
    for batch in data.combine_chunks().to_batches(max_chunksize=max(1, sctx.read.batch_size)):
        if batch.num_rows:
            yield pa.RecordBatch.from_arrays(
                [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, schema)], schema=schema
            )


def read_stream_split(sctx: StreamReadContext, s: StreamSplit) -> Iterator[pa.RecordBatch]:
    """The rows one stream split contributes, in the stream's output schema."""
    ctx = sctx.read
    if s.phase == "delta":
        assert s.after is not None
        for batch in read_file_changes(ctx, s.after):
            yield from _emit(sctx, batch)
    elif s.phase in ("full", "chain"):
        assert s.after is not None
        for batch in read_split(ctx, s.after):
            yield from _emit(sctx, _with_kinds(batch, KIND_INSERT))
    else:
        yield from _emit(sctx, diff_split(ctx, s))


class StreamReadJob:
    """The driver side of one streaming read: options, planner, and a fresh executor context per batch."""

    def __init__(self, store: FileStore, options: Mapping[str, str], columns: Sequence[str] | None = None):
        self.opts = StreamOptions.from_options(options)
        self.planner = StreamPlanner(store, self.opts)
        self.store = self.planner.store  # a chain table's delta branch (stream_store)
        self.opts = self.planner.opts  # with the table's stream defaults (consumer-id) applied
        self.columns = tuple(columns) if columns is not None else None

    def context(self) -> StreamReadContext:
        """The executor context for splits planned now: the branch's latest schema (files of older schemas are
        evolved by field id) projected to the stream's columns, which were fixed when it started."""
        schema = self.store.schema()
        if self.columns is not None:
            missing = [c for c in self.columns if not schema.has_field(c)]
            if missing:
                raise SchemaError(
                    f"The stream of {self.store.table_path} (branch '{self.store.branch}') started with columns "
                    f"{list(self.columns)}, but {missing} no longer exist in the table (columns now: "
                    f"{schema.field_names}). Restart the query with a new checkpoint location to read the new schema."
                )
        selection = self.planner.selection.expr
        residual = None
        derived: list[VariantGet] = []
        if selection is not None and not tree_columns(selection) <= set(schema.partition_keys):
            # A selection of partitions only was applied exactly by the planner; anything else tests rows.
            derived = variant_gets(tree_columns(selection), schema.fields)
            residual = tree_expression(selection, residual_schema(schema, derived))
        read = ReadContext.for_store(
            self.store,
            schema,
            also=self._other_stores(),
            read_fields=self.columns,
            residual=residual,
            batch_size=self.opts.batch_size,
            derived=derived,
        )
        return StreamReadContext(read, self.opts.changelog)

    def _other_stores(self) -> list[FileStore]:
        """The other branches the stream reads files of: a chain start reads the snapshot branch too."""
        if self.planner.chain is None:
            return []
        return [st for role, st in self.planner.chain.stores.items() if role != MAIN]

    def task_groups(self, splits: Sequence[StreamSplit]) -> list[list[StreamSplit]]:
        """A micro-batch's splits packed into Spark tasks (:func:`pyspark_paimon.planner.micro_batch.task_groups`)
        with ``source.split.target-size`` and ``source.split.open-file-cost`` as a batch read takes them (the
        stream's read option, else the table's), at least one task per core."""
        schema = self.store.schema()
        target, cost = split_packing(schema.options, self.opts.split_target_size, self.opts.open_file_cost)
        return task_groups(splits, schema, target, cost, os.cpu_count() or 1)

    def initial_offset(self) -> StreamOffset:
        return self.planner.initial_offset()

    def next_batch(
        self, start: StreamOffset, admission: Admission | None = None, stop_at: int | None = None
    ) -> tuple[list[StreamSplit], StreamOffset]:
        return self.planner.next_batch(start, admission, stop_at)

    def splits_between(self, start: StreamOffset, end: StreamOffset) -> list[StreamSplit]:
        return self.planner.splits_between(start, end)

    def latest_snapshot_id(self) -> int | None:
        return self.store.snapshots.latest_id()

    def commit(self, end: StreamOffset) -> None:
        """Spark finished every batch up to ``end``: record the consumer's progress (``consumer-id``)."""
        if not self.opts.consumer_id:
            return
        nxt = self.planner.consumer_next_snapshot(end)
        if nxt is not None:
            ConsumerManager(self.store).record(self.opts.consumer_id, nxt)


# ------------------------------------------------------------------------------------------------------
# Streaming writes
# ------------------------------------------------------------------------------------------------------
def stream_commit_user(prefix: str | None, checkpoint: str | None, table_path: str) -> str:
    """The commit user of every run of one streaming query: derived from its checkpoint location and the query
    id Spark keeps in ``<checkpoint>/metadata`` (a checkpoint deleted and recreated starts a new query, whose
    batch ids restart at 0, so it must not look like the old one)."""
    if not checkpoint:
        raise OptionError(
            f"A streaming write to {table_path} needs .option('checkpointLocation', ...) on writeStream: exactly-once "
            "commits are keyed by the query's checkpoint, and Python sinks do not see the session-wide "
            "spark.sql.streaming.checkpointLocation."
        )
    query_id = ""
    try:
        fileio, path = FileIO.for_uri(checkpoint.rstrip("/"))
        query_id = str(json.loads(fileio.read_text(f"{path}/metadata").splitlines()[0]).get("id", ""))
    except (OSError, ValueError, IndexError, AttributeError) as exc:
        log.warning(
            "Cannot read the query id from %s/metadata (%s): the commit user is derived from the checkpoint "
            "location alone. Do not reuse this location for another query.",
            checkpoint,
            exc,
        )
    digest = hashlib.sha256(f"{checkpoint.rstrip('/')}#{query_id}".encode()).hexdigest()
    name = str(uuid.UUID(digest[:32]))
    return f"{prefix}_{name}" if prefix else name


class StreamCommitter:
    """Exactly-once commits of micro-batches (see the module docstring)."""

    def __init__(self, store: FileStore, commit_user: str):
        self.store = store
        self.commit_user = commit_user

    def landed(self, batch_id: int) -> Snapshot | None:
        """The snapshot that already holds ``batch_id`` (or a later batch) of this query, if any."""
        newest = self.store.snapshots.commit_of(self.commit_user)
        if newest is not None and newest.commit_identifier >= batch_id:
            return newest
        return None
