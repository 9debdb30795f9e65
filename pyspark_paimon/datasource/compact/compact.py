"""Compaction end to end: plan, run, commit a COMPACT snapshot, re-plan after conflicts (:func:`compact`), and the
automatic compaction after every committed write (:func:`auto_compact`).

Three halves, each in its own module, so that Spark can run the middle one on its executors and the Python API in
process:

1. ``compact_plan.plan_compaction`` (driver): per bucket a ``CompactTask`` chosen by
   :mod:`pyspark_paimon.planner.compact_strategy` (full, universal, or Java's append rules; Java's coordinator for
   unaware-bucket append tables).
2. ``bucket_rewrite.compact_bucket`` (anywhere, picklable inputs): the task's files read through the read path and
   rewritten at the output level; a :class:`CommitMessage` whose ``compact_before`` lists the inputs (DELETE entries
   at their own levels). ``compact_runners`` runs the tasks on threads or in Spark executors. Deletion-vector
   tables are compacted as Java's writers do (``dv_lookup.DvLookup``): their vectors are applied while the inputs
   are read, every level-0 file goes up, the superseded older rows are marked in new vectors, and the bucket's
   vectors go into a new index file that replaces the old ones in the index manifest.
3. :func:`commit_compaction` (driver): one ``COMPACT`` commit. The commit refuses a DELETE of a file that is
   no longer live and, for primary-key tables, files of one level >= 1 whose key ranges overlap
   (:class:`~pyspark_paimon.errors.CommitConflictError`); :func:`compact` then deletes the attempt's outputs,
   re-plans on the new latest snapshot and tries again, a few times.

Nothing is visible before the commit: a compaction that dies midway leaves only unreferenced files
(``t.maintenance.remove_orphan_files`` reclaims them). This module never imports pyspark.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from pyspark_paimon.datasource.compact.compact_plan import (
    CompactPlan,
    PartitionSpecs,
    partition_matcher,
    plan_compaction,
    refuse_unsupported,
)
from pyspark_paimon.datasource.compact.compact_runners import delete_outputs, run_in_process
from pyspark_paimon.datasource.compact.ordered_compact import clustering_incremental, sort_order
from pyspark_paimon.datasource.compact.postpone_compact import compact_postpone
from pyspark_paimon.datasource.write.postpone import is_postpone
from pyspark_paimon.errors import CommitConflictError
from pyspark_paimon.metadata.manifests.deletion_vectors import DELETION_VECTORS_INDEX, bucket_vector_files
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange, IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.schema.options import FULL_COMPACTION_DELTA_COMMITS
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit, commit_or_abort
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot, now_millis
from pyspark_paimon.metadata.store import FileStore

__all__ = ["CompactResult", "commit_compaction", "compact", "auto_compact", "MAX_ATTEMPTS"]


#: How often :func:`compact` re-plans after a concurrent commit removed or overlapped its inputs.
MAX_ATTEMPTS = 3


@dataclass
class CompactResult:
    """What a compaction did (truthy when it committed a snapshot)."""

    snapshot_id: int | None = None
    """The COMPACT snapshot committed (None: nothing needed compacting)."""
    buckets: int = 0
    """Buckets rewritten."""
    files_before: int = 0
    """Data files the compaction replaced."""
    files_after: int = 0
    """Data files it wrote."""
    rows_before: int = 0
    """Rows in the replaced files."""
    rows_after: int = 0
    """Rows in the written files (fewer when versions of a key were merged)."""
    attempts: int = 0
    """Plans made: more than one when a concurrent commit conflicted and the compaction was planned again."""
    notes: list[str] = field(default_factory=list)
    """What else happened (a conflict retried, postpone files moved into real buckets), or why nothing was
    compacted (the rule that picked no file)."""

    def __bool__(self) -> bool:
        return self.snapshot_id is not None


def commit_compaction(plan: CompactPlan, messages: Sequence[CommitMessage]) -> Snapshot | None:
    """Commit ``messages`` as one COMPACT snapshot (None when nothing changed)."""
    messages = [m for m in messages if m.compact_before or m.new_files]
    if not messages:
        return None
    store = plan.store
    schema = plan.context.read.schema
    committer = FileStoreCommit(store, schema.options)
    index_update = None
    if plan.vector_files is not None:
        added = tuple(e for m in messages for e in m.index_files)
        # A data-evolution compaction rewrites only row ranges without vectors: every vector stays where it is.
        kept = data_evolution_enabled(schema.options)
        index_update = _index_update(plan, {(m.partition, m.bucket) for m in messages}, added, replace=not kept)
    return committer.commit(messages, kind="COMPACT", commit_user=plan.commit_user, index_update=index_update)


def _index_update(
    plan: CompactPlan, buckets: set[tuple[bytes, int]], added: tuple[IndexManifestEntry, ...], replace: bool = True
) -> Callable[[Snapshot | None], IndexChange]:
    """The index change of a deletion-vector table's compaction: the compacted buckets' vectors are replaced by
    the ones the compaction wrote (``added``: the vectors of the files it kept, plus the positions its lookups
    found; none after a full compaction, which rewrote every file that had one). If a compacted bucket's vector
    files changed since the plan (another writer wrote new vectors for its files meanwhile), the commit is a
    conflict: the outputs were merged without them, and the kept vectors lack them. ``replace`` False: the
    buckets' vectors are kept as they are (the compaction rewrote no file that has one), still under that check."""
    store = plan.store
    planned = plan.vector_files or {}
    dropped = (
        frozenset((partition, bucket, DELETION_VECTORS_INDEX) for partition, bucket in buckets)
        if replace
        else frozenset()
    )

    def update(latest: Snapshot | None) -> IndexChange:
        current = latest.index_manifest if latest else None
        now = bucket_vector_files(read_index_manifest(store.fileio, store.manifests.path(current))) if current else {}
        for b in buckets:
            if now.get(b, frozenset()) != planned.get(b, frozenset()):
                raise CommitConflictError(
                    f"The deletion vectors of bucket {b[1]} changed while it was compacted (a concurrent Paimon "
                    "compaction wrote new ones). Nothing was committed; re-run the compaction."
                )
        return IndexChange(dropped, added)

    return update


def compact(
    store: FileStore,
    partitions: PartitionSpecs = None,
    *,
    full: bool | None = False,
    runner: Callable[[CompactPlan], list[CommitMessage]] | None = None,
    buckets: Iterable[tuple[bytes, int]] | None = None,
    auto: bool = False,
    progress: Progress | None = None,
    order_strategy: str | None = None,
    order_by: Sequence[str] | str | None = None,
    options: Mapping[str, str] | None = None,
) -> CompactResult:
    """Plan, run (``runner``: in process by default; the Spark adapter passes one that uses executors) and
    commit a compaction. When a concurrent commit removed an input or wrote overlapping files at a level the
    outputs go to, the outputs are deleted and the whole compaction is planned again on the new latest
    snapshot, up to :data:`MAX_ATTEMPTS` times; then the conflict error propagates (nothing was committed).

    ``full`` None is the default of Paimon's Spark procedure: full, but minor for a table that clusters
    incrementally (``clustering.incremental``). ``order_strategy`` / ``order_by`` (a sort compaction), incremental
    clustering and ``options`` (overlaid on the
    table's options for this compaction): :func:`~pyspark_paimon.datasource.compact.compact_plan.plan_compaction`."""

    def run(plan: CompactPlan) -> list[CommitMessage]:
        total = len(plan.tasks)
        if runner is not None:  # elsewhere (Spark executors): report the start and the end
            report(progress, "compact buckets", 0, total)
            messages = runner(plan)
            report(progress, "compact buckets", total, total)
            return messages
        return run_in_process(plan, progress)

    if full is None:
        full = not clustering_incremental(store.schema())
    if order_strategy is not None and order_strategy.strip().lower() != "none":
        sort_order(store.schema(), store.table_path, order_strategy, order_by or ())  # before a postpone move commits
    wanted = None if buckets is None else list(buckets)
    moved: CompactResult | None = None
    result = CompactResult()
    if is_postpone(store.schema()) and not auto:
        # Postpone-bucket tables: 'bucket-postpone' moves into real buckets (one COMPACT snapshot); then the buckets
        # the move wrote are compacted by the usual rules (a second snapshot only when those rules pick files), as
        # the bucket writers of Java's move would.
        refuse_unsupported(store.schema(), store.table_path, full)  # before the move commits anything
        move = compact_postpone(store, partition_matcher(store.schema(), partitions))
        if move is not None:
            moved = CompactResult(
                snapshot_id=move.snapshot.id if move.snapshot is not None else None,
                buckets=len(move.buckets),
                files_before=move.files_before,
                files_after=move.files_after,
                rows_before=move.rows_before,
                rows_after=move.rows_after,
                attempts=1,
            )
            wanted = [b for b in wanted if b in move.buckets] if wanted is not None else sorted(move.buckets)
            if move.snapshot is not None:
                result.notes.append(
                    f"moved {move.files_before} postpone file(s) ({move.rows_before} rows) into real buckets in "
                    f"snapshot {move.snapshot.id}"
                )
    for attempt in range(1, MAX_ATTEMPTS + 1):
        plan = plan_compaction(
            store,
            partitions,
            full=full,
            buckets=wanted,
            auto=auto,
            order_strategy=order_strategy,
            order_by=order_by,
            table_options=options,
        )
        result.attempts = attempt
        if not plan.tasks:
            if moved is not None:  # the move was the work; its buckets needed no more
                moved.notes.extend(result.notes)
                return moved
            if plan.idle is not None:
                result.notes.append(f"nothing to compact: {plan.idle}")
            return result
        messages = run(plan)
        started = now_millis()
        try:
            snapshot = commit_or_abort(
                functools.partial(commit_compaction, plan, messages),
                functools.partial(delete_outputs, plan, messages),
                functools.partial(store.snapshots.commit_of, plan.commit_user, started),
            )
        except CommitConflictError as exc:
            if attempt == MAX_ATTEMPTS:
                raise CommitConflictError(
                    f"Compaction of {store.table_path} (branch '{store.branch}') lost {attempt} times to concurrent "
                    f"commits ({exc}). Nothing was committed; run it again when fewer writers touch the same "
                    "buckets."
                ) from exc
            result.notes.append(f"attempt {attempt}: {exc}")
            continue
        result.snapshot_id = snapshot.id if snapshot is not None else None
        result.buckets = len({(m.partition, m.bucket) for m in messages})  # an unaware bucket may have several
        result.files_before = sum(len(m.compact_before) for m in messages)
        result.files_after = sum(len(m.new_files) for m in messages)
        result.rows_before = sum(f.row_count for m in messages for f in m.compact_before)
        result.rows_after = sum(f.row_count for m in messages for f in m.new_files)
        return result
    return result  # pragma: no cover - the loop returns or raises


def auto_compact(store: FileStore, messages: Sequence[CommitMessage]) -> CompactResult | None:
    """The automatic compaction after a write committed ``messages`` (None when it does not apply).

    Like Java's writers unless ``write-only`` is set: the written primary-key buckets are compacted by the
    universal rules, or fully when ``full-compaction.delta-commits`` > 0 (what Java does for batch writes);
    written fixed-bucket append buckets by ``compaction.min.file-num``; first-row buckets always move their
    level-0 files up (Java's lookup compaction), and so do deletion-vector primary-key buckets, whose new rows
    batch reads see only once they are above level 0 (Java's writers force that compaction before every
    commit: ``ForceUpLevel0Compaction``, ``lookup-wait``), with new vectors for the rows they supersede, and
    so do ``changelog-producer = lookup`` buckets, whose lookup compaction writes the changelog
    (:mod:`pyspark_paimon.datasource.compact.lookup_changelog`). Unaware-bucket append tables are left to explicit (or
    Paimon's) compaction; ``full-compaction`` producer tables are
    compacted like others, and a compaction that reaches the top level writes their changelog. It runs
    in this process, after the write's own commit, as a separate COMPACT snapshot: Java's batch writes also
    commit APPEND, then COMPACT."""
    schema = store.schema()
    options = schema.core_options
    buckets = {(m.partition, m.bucket) for m in messages if m.new_files}
    full = bool(schema.primary_keys) and (options.get(FULL_COMPACTION_DELTA_COMMITS) or 0) > 0
    if options.write_only or not buckets or is_postpone(schema):
        return None  # postpone-bucket tables: Java's writes of them never compact (fixed-bucket writes are write-only)
    return compact(store, full=full, buckets=buckets, auto=True)
