"""Read and write jobs: the driver-side halves shared by the Spark source and the Python ``Table`` API.

A :class:`ReadJob` is a planned read (:func:`pyspark_paimon.planner.read_plan.plan_read`) plus the picklable
context executors need. A :class:`WriteJob` carries what executors need to write files (sequence-number bases
per bucket, bucket counts of existing partitions) and commits their messages once, applying the chain-table
write rules when the branch is a chain table's snapshot or delta branch. Neither imports pyspark.
"""

from __future__ import annotations

import logging
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import pyarrow as pa

from pyspark_paimon.datasource.chain import commit_with_chain_rules
from pyspark_paimon.datasource.compact.compact import auto_compact
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext, ReadMetrics
from pyspark_paimon.datasource.read.routing import split_key
from pyspark_paimon.datasource.read.row_count import stored_row_count
from pyspark_paimon.datasource.stream.stream_jobs import read_diff_split
from pyspark_paimon.datasource.write.cross_partition import check_one_home_per_key, refuse_unsupported_overwrite
from pyspark_paimon.datasource.write.dynamic_bucket import hash_index_update, is_dynamic_bucket
from pyspark_paimon.datasource.write.key_conflicts import check_one_version_per_key
from pyspark_paimon.datasource.write.resequence import ordered_by_commit, resequencer
from pyspark_paimon.datasource.write.visibility import refuse_invisible_writes
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import CommitError, OptionError, PaimonError
from pyspark_paimon.metadata.manifests.deletion_vectors import merge_on_read
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import coerce_partition_value
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import (
    CommitKind,
    CommitMessage,
    OverwriteSpec,
    commit_or_abort,
    delete_new_files,
)
from pyspark_paimon.metadata.snapshots.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot, now_millis
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.read_plan import PlannedRead, plan_read
from pyspark_paimon.planner.scan import ScanPlan, pack_splits, split_packing
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.time_travel import version_branch

log = logging.getLogger(__name__)
#: Tries of the automatic compaction that makes a deletion-vector write visible to batch reads.
AUTO_COMPACT_ATTEMPTS = 3

# Splits one in-process read (Table.scan().to_arrow) works on at once: one per core.
_READ_THREADS = max(1, os.cpu_count() or 1)
_T = TypeVar("_T")


@dataclass
class ReadJob:
    planned: PlannedRead
    context: ReadContext
    metrics: ReadMetrics = field(default_factory=ReadMetrics)  # what reads in this process did

    @property
    def plan(self) -> ScanPlan:
        return self.planned.plan

    @property
    def splits(self) -> list[DataSplit]:
        return self.plan.splits

    def groups(self, read_options: ReadOptions) -> list[list[DataSplit]]:
        """Splits packed into Spark tasks: about ``source.split.target-size`` each, at least one per core.

        The planning worker runs on the driver, whose core count stands in for the cluster's parallelism.
        """
        target, open_file_cost = split_packing(
            self.plan.schema.options, read_options.split_target_size, read_options.open_file_cost
        )
        return pack_splits(self.plan.splits, target, open_file_cost, min_groups=max(os.cpu_count() or 1, 1))

    def read_batches(self, splits: Iterable[DataSplit] | None = None) -> Iterator[pa.RecordBatch]:
        for split in self.plan.splits if splits is None else splits:
            yield from read_planned_split(self.context, split, metrics=self.metrics)

    def batch_reader(self, limit: int | None = None) -> pa.RecordBatchReader:
        """The selected rows as a stream in bounded memory: each split is read when the consumer gets to it, one
        at a time, and reading stops once ``limit`` rows are out. The schema is known before any file is read
        (an empty read has it too)."""
        return pa.RecordBatchReader.from_batches(self.context.output_schema(), _first_rows(self.read_batches(), limit))

    def to_arrow(self) -> pa.Table:
        """Every split, read on every core at once: Parquet decoding, sorting and merging release the GIL, and
        outside Spark nothing else uses the other cores. Rows come in no particular order."""

        def read_one(split: DataSplit, metrics: ReadMetrics) -> list[pa.RecordBatch]:
            return list(read_planned_split(self.context, split, metrics=metrics))

        batches = [b for part in self._on_threads(self.plan.splits, read_one) for b in part]
        schema = self.context.output_schema()
        return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()

    def count_rows(self, limit: int | None = None) -> int:
        """How many rows the read returns (at most ``limit``): the splits whose stored row counts are exact
        (:func:`~pyspark_paimon.datasource.read.row_count.stored_row_count`) from metadata, the others read, on
        every core."""
        counts = [stored_row_count(self.planned, self.context, s) for s in self.plan.splits]
        known = sum(n for n in counts if n is not None)
        unread = [s for s, n in zip(self.plan.splits, counts) if n is None]
        if limit is not None and known >= limit:
            return limit

        def count_one(split: DataSplit, metrics: ReadMetrics) -> int:
            return sum(b.num_rows for b in read_planned_split(self.context, split, metrics=metrics))

        total = known + sum(self._on_threads(unread, count_one))
        return total if limit is None else min(total, limit)

    def _on_threads(self, splits: list[DataSplit], work: Callable[[DataSplit, ReadMetrics], _T]) -> list[_T]:
        """``work`` on every split, on one thread per core, each with its own metrics added to the job's."""
        threads = min(len(splits), _READ_THREADS)
        if threads <= 1:
            return [work(split, self.metrics) for split in splits]

        def one(split: DataSplit) -> tuple[_T, ReadMetrics]:
            metrics = ReadMetrics()
            return work(split, metrics), metrics

        out = []
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-read") as pool:
            for result, metrics in pool.map(one, splits):
                out.append(result)
                self.metrics.add(metrics)
        return out


def _first_rows(batches: Iterator[pa.RecordBatch], limit: int | None) -> Iterator[pa.RecordBatch]:
    """``batches`` until ``limit`` rows are out (the last one cut); nothing more is read after that."""
    if limit is None:
        yield from batches
        return
    left = limit
    if left <= 0:
        return
    for batch in batches:
        if batch.num_rows > left:
            batch = batch.slice(0, left)
        left -= batch.num_rows
        yield batch
        if left <= 0:
            return  # before asking for another batch, which may open the next split


def read_planned_split(
    ctx: ReadContext, split: DataSplit, metrics: ReadMetrics | None = None
) -> Iterator[pa.RecordBatch]:
    """One split of a planned read, in executors: an incremental diff split compares its two sides
    (:func:`~pyspark_paimon.datasource.stream.stream_jobs.read_diff_split`), every other split is read
    (:func:`~pyspark_paimon.datasource.read.read.read_split`)."""
    if split.diff_before is not None:
        return read_diff_split(ctx, split)
    return read_split(ctx, split, metrics=metrics)


#: The system tables that read the table's data (the others describe its metadata: ``system_tables.py``).
DATA_VIEWS = ("audit_log", "binlog", "ro", "row_tracking")


def prepare_read(
    store: FileStore,
    opts: ReadOptions,
    predicate: Sequence[Leaf] = (),
    read_fields: Sequence[str] | None = None,
    exact_filters: Sequence[Leaf] = (),
    view: str | None = None,
) -> ReadJob:
    """Plan a read of ``store`` (already on the right branch) and build its executor context.

    ``predicate`` prunes (partitions exactly, files by statistics); ``exact_filters`` are applied exactly to
    the merged rows (Spark does not re-check filters a source accepted). ``view`` is one of the system tables
    that read data (:data:`DATA_VIEWS`): ``ro`` reads only the top level of primary-key buckets (Java's
    ``ReadOptimizedTable``: no merge, possibly stale rows; deletion-vector and first-row tables: every level
    above 0, as Java's batch scan of them), ``audit_log`` / ``binlog`` lead every row with its row kind,
    ``row_tracking`` ends every row with its ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (row-tracking tables only).
    """
    store, opts = version_branch(store, opts)  # versionAsOf='<branch>.<tag>' reads that branch
    if view == "row_tracking":  # Java's RowTrackingTable: the rows with their _ROW_ID and _SEQUENCE_NUMBER
        opts = replace(opts, row_tracking=True)
    planned = plan_read(store, opts, predicate)
    ctx = ReadContext.for_plan(store, planned, read_fields, exact_filters, opts.batch_size)
    if view in ("audit_log", "binlog"):
        ctx = replace(ctx, row_kinds=True)
    elif view == "ro" and planned.schema.primary_keys:
        options = planned.schema.core_options
        if options.deletion_vectors_enabled or options.merge_engine == "first-row":
            # Java's batch scan of these tables reads every level above 0 (its own level filter replaces $ro's)
            planned.plan.splits = [
                replace(s, files=kept) for s in planned.plan.splits if (kept := tuple(f for f in s.files if f.level))
            ]
        else:
            top = options.num_levels - 1  # one sorted run: read as stored, no merge
            planned.plan.splits = [
                replace(s, files=kept, raw_convertible=True)
                for s in planned.plan.splits
                if (kept := tuple(f for f in s.files if f.level == top))
            ]
    if opts.only_splits is not None:  # Scan.to_spark's Python half: the splits the JVM readers do not serve
        primary = bool(planned.schema.primary_keys)
        planned.plan.splits = [s for s in planned.plan.splits if split_key(s, primary) in opts.only_splits]
    return ReadJob(planned, ctx)


@dataclass(frozen=True)
class WriteResult:
    """What one write committed (``t.write_arrow``). Truthy when a snapshot was committed."""

    snapshot_id: int | None = None
    """The snapshot committed (None: there was nothing to write)."""
    files_added: int = 0
    """Data files written (changelog files not counted)."""
    rows_written: int = 0
    """Rows in those files (a primary-key table's writer may fold versions of one key written together)."""
    partitions: int = 0
    """Partitions written to."""
    buckets: int = 0
    """Buckets written to."""
    path: str = "python"
    """Which write path wrote the data files: ``"python"`` (this package's writer: ``t.write_arrow``,
    ``format("paimon")``) or ``"jvm"`` (Spark's own Parquet writer: ``t.write_spark``)."""
    fallback: str | None = None
    """Why ``t.write_spark(engine="auto")`` took the Python path (the JVM path's refusal); None otherwise."""

    @classmethod
    def of(cls, snapshot: Snapshot | None, messages: Sequence[CommitMessage], path: str = "python") -> "WriteResult":
        """The result of committing ``messages`` as ``snapshot``, written by ``path``."""
        return cls(
            path=path,
            snapshot_id=snapshot.id if snapshot is not None else None,
            files_added=sum(len(m.new_files) for m in messages),
            rows_written=sum(f.row_count for m in messages for f in m.new_files),
            partitions=len({m.partition for m in messages if m.new_files}),
            buckets=len({(m.partition, m.bucket) for m in messages if m.new_files}),
        )

    def __bool__(self) -> bool:
        return self.snapshot_id is not None


@dataclass
class WriteJob:
    store: FileStore
    schema: TableSchema
    context: WriteContext
    overwrite: OverwriteSpec | None = None
    commit_user: str = field(default_factory=lambda: str(uuid.uuid4()))
    # Options of this write overlaying the table's (e.g. 'write.merge-schema' given to one Spark write).
    write_options: dict[str, str] = field(default_factory=dict)

    def new_writer(self, task_id: str) -> TableWriter:
        return TableWriter(self.context, task_id)

    def refreshed_writer(self, task_id: str) -> TableWriter:
        """A writer continuing the branch's state *now* rather than when the job was prepared: each micro-batch
        of a stream runs the tasks of the same pickled job after earlier batches committed, and its sequence
        numbers must continue theirs (else a later batch's row would not win the merge)."""
        ctx = WriteContext.for_store(
            self.store, self.commit_user, replace_all=self.overwrite is not None and self.overwrite.mode == "all"
        )
        ctx = replace(ctx, options={**ctx.options, **self.write_options})
        if self.overwrite is not None:
            ctx = replace(ctx, hash_index={})
        return TableWriter(ctx, task_id)

    def commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        kind: CommitKind = "APPEND",
        index_update: Callable[[Snapshot | None], IndexChange] | None = None,
        abort: Callable[[], None] | None = None,
    ) -> Snapshot | None:
        """Commit ``messages`` as one snapshot, by the one commit-or-abort rule of every write
        (:func:`~pyspark_paimon.metadata.snapshots.commit.commit_or_abort`): the files ``messages`` add are deleted
        (``abort``: by default exactly those) only when the commit certainly did not land; if anything fails after
        the snapshot landed (a post-commit step such as an automatic tag or a chain-table truncation), the error
        says that the data is in the table, so that nobody retries the write and commits it twice.
        ``index_update``: the index change of a change that writes deletion vectors (``datasource.dml``; append
        tables have no hash index)."""
        started = now_millis()
        snapshot = commit_or_abort(
            lambda: self._commit(messages, commit_identifier, kind, index_update),
            abort if abort is not None else (lambda: delete_new_files(self.store, self.schema, messages)),
            lambda: self.store.snapshots.commit_of(self.commit_user, started, commit_identifier),
            after_landing=self._landed_error,
        )
        if snapshot is not None:
            self._compact_after(snapshot, messages)
        return snapshot

    def _commit(
        self,
        messages: Sequence[CommitMessage],
        commit_identifier: int,
        kind: CommitKind,
        index_update: Callable[[Snapshot | None], IndexChange] | None,
    ) -> Snapshot | None:
        check_one_version_per_key(self.store, self.schema, messages)
        check_one_home_per_key(self.store, self.schema, messages)
        if self.overwrite is not None:
            messages = self._without_changelog(messages)
        allow_empty = index_update is not None
        if is_dynamic_bucket(self.schema):
            hashes = hash_index_update(self.store, self.schema, messages, self.overwrite)
            vectors = index_update
            index_update = hashes if vectors is None else (lambda latest: hashes(latest) | vectors(latest))
        return commit_with_chain_rules(
            self.store,
            self.schema,
            messages,
            self.overwrite,
            self.commit_user,
            commit_identifier,
            index_update,
            kind,
            allow_empty=allow_empty,
            resequence=resequencer(self.store, self.schema) if ordered_by_commit(self.schema) else None,
        )

    def _landed_error(self, landed: Snapshot, exc: Exception) -> Exception:
        return CommitError(
            f"The write to {self.store.table_path} (branch '{self.store.branch}') committed as snapshot "
            f"{landed.id} (commit user '{self.commit_user}'), but a step after the commit failed: {exc}. The data "
            "is in the table: do not retry the write (it would be written twice)."
        )

    def _without_changelog(self, messages: Sequence[CommitMessage]) -> list[CommitMessage]:
        """An overwrite commits no changelog (Java ignores an overwrite's changelog files), so the changelog
        files ``changelog-producer = input`` wrote for it are deleted before the commit."""
        if not any(m.changelog_files for m in messages):
            return list(messages)
        types = [f.type for f in self.schema.partition_fields]
        for m in messages:
            if m.changelog_files:
                directory = self.store.bucket_path(self.schema, tuple(deserialize_row(m.partition, types)), m.bucket)
                for f in m.changelog_files:
                    self.store.fileio.delete(f"{directory}/{f.file_name}")
        return [replace(m, changelog_files=()) for m in messages]

    def _compact_after(self, snapshot: Snapshot, messages: Sequence[CommitMessage]) -> None:
        """Automatic compaction (:func:`auto_compact`) after the write landed as ``snapshot``. The data is committed
        by now, so a compaction that fails (a concurrent compaction won, an unreadable file) is logged: the next
        write or an explicit ``Table.maintenance.compact`` tries again. Except where batch reads see the new rows
        only once compacted (deletion-vector primary-key tables, as Java's): there the write is not done until
        its compaction is, and the error says the rows are committed but not yet visible."""
        hidden = self.schema.core_options.deletion_vectors_enabled and bool(self.schema.primary_keys)
        hidden = hidden and not merge_on_read(self.schema.options)
        attempts = AUTO_COMPACT_ATTEMPTS if hidden else 1  # compaction is idempotent: trying again is safe
        for attempt in range(1, attempts + 1):
            try:
                result = auto_compact(self.store, messages)
                break
            except (PaimonError, OSError) as exc:
                if attempt < attempts:
                    continue
                if hidden:
                    raise CommitError(
                        f"The write to {self.store.table_path} (branch '{self.store.branch}') took effect (snapshot "
                        f"{snapshot.id} was committed), but the compaction that makes its rows visible to batch reads "
                        f"of this deletion-vector table failed {attempts} times, the last with: {exc}. Run "
                        "t.maintenance.compact() to make them visible; do not write the same rows again."
                    ) from exc
                log.warning(
                    "The write to %s (branch '%s') committed, but the automatic compaction after it failed: %s. "
                    "Nothing of it was committed; run Table.maintenance.compact to compact.",
                    self.store.table_path,
                    self.store.branch,
                    exc,
                )
                return
        if result:
            log.info(
                "Compacted %d bucket(s) of %s after the write (snapshot %d).",
                result.buckets,
                self.store.table_path,
                result.snapshot_id if result.snapshot_id is not None else -1,
            )

    def with_overwrite(self, overwrite: OverwriteSpec | None) -> "WriteJob":
        """This job (same commit user) overwriting as ``overwrite`` says: for an overwrite whose kind is only
        known once the tasks run (Spark's session ``partitionOverwriteMode``). A whole-table overwrite drops
        the old bucket counts of existing partitions, as :func:`prepare_write` does for one."""
        refuse_unsupported_overwrite(self.schema, overwrite, self.store.table_path)
        context = self.context
        if overwrite is not None and overwrite.mode == "all":
            context = replace(context, partition_buckets={}, key_index=None)
        if overwrite is not None:  # an overwritten partition's keys start afresh (dynamic bucket mode)
            context = replace(context, hash_index={})
        return replace(self, overwrite=overwrite, context=context)

    def landed(self) -> Snapshot | None:
        """This job's snapshot if its commit landed (abort keeps the files then; errors say so), else None."""
        return self.store.snapshots.commit_of(self.commit_user)


def prepare_write(
    store: FileStore, overwrite: OverwriteSpec | None = None, write_options: Mapping[str, str] | None = None
) -> WriteJob:
    """Everything executors need to write files that continue ``store``'s latest snapshot. ``write_options`` overlay
    the table's options for this write's tasks (``write.merge-schema``: a column the data lacks is written NULL)."""
    store.fileio.require_exclusive_create()  # before any task writes a file (and before any I/O)
    schema = store.schema()
    refuse_invisible_writes(schema, store.table_path)
    user = schema.core_options.new_commit_user()  # '<commit.user-prefix>_<uuid>', as Java names it
    refuse_unsupported_overwrite(schema, overwrite, store.table_path)
    ctx = WriteContext.for_store(store, user, replace_all=overwrite is not None and overwrite.mode == "all")
    extra = dict(write_options or {})
    ctx = replace(ctx, options={**ctx.options, **extra})
    if overwrite is not None:  # an overwritten partition's keys start afresh (dynamic bucket mode)
        ctx = replace(ctx, hash_index={})
    return WriteJob(store, ctx.schema, ctx, overwrite, user, extra)


def overwrite_spec(
    schema: TableSchema, mode: str | None, static_partition: Mapping[str, object] | None
) -> OverwriteSpec:
    """Build the overwrite spec for a write: whole table, dynamic partitions, or a static partition."""
    if static_partition:
        names = [f.name for f in schema.partition_fields]
        unknown = [k for k in static_partition if k not in names]
        if unknown:
            raise OptionError(
                f"Static overwrite names {unknown}, which are not partition columns of the table "
                f"(partition columns: {names or 'none'})."
            )
        typed = {k: coerce_partition_value(schema, k, v) for k, v in static_partition.items()}
        return OverwriteSpec("static", frozenset(), typed)
    if mode is None or mode == "static":
        return OverwriteSpec("all")
    if mode == "dynamic":
        if not schema.partition_keys:
            return OverwriteSpec("all")
        return OverwriteSpec("dynamic")
    raise OptionError(f"partitionOverwriteMode must be 'static' or 'dynamic', got '{mode}'.")
