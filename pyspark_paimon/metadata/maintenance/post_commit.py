"""Maintenance after every commit, as Java's writers run it (``TableCommitImpl.maintain``).

After each commit that created a snapshot, unless the table is ``write-only`` (which also turns automatic tag
creation off, as in Java):

0. ``tag.time-expire-enabled`` (default true): tags past their retention (``tagCreateTime + tagTimeRetained``)
   are deleted with the files only they kept (Java's ``TagTimeExpire``), checked at most once a minute per
   process and branch (Java lists the tags after every commit; a streaming sink would pay that listing per
   micro-batch, and retentions are hours or days);
1. ``partition.expiration-time`` (no default): expired partitions are dropped with OVERWRITE commits
   (:mod:`.partition_expire`, Java's ``NormalPartitionExpire``), when a check is due;
2. ``consumer.expiration-time`` (no default): consumers whose file was last written longer ago than that are
   deleted (Java's ``ConsumerManager.expire``), *before* snapshot expiration, so an abandoned stream stops
   pinning its ``nextSnapshot``;
3. snapshot expiration (:func:`.expire.expire_snapshots`) with the table's ``snapshot.num-retained.min`` /
   ``.max``, ``snapshot.time-retained`` and ``snapshot.expire.limit``, deleting only files that no snapshot,
   tag, changelog or consumer of any branch can still reach.

Java skips snapshot expiration for postpone-bucket primary-key tables (``bucket = -2``); so do we. Automatic tag
creation runs before all of this (``auto_tag.on_commit``, called by the commit).

**Cost.** A streaming sink commits every micro-batch, so the usual outcome, "nothing to expire", must not
cost a walk over the table. :func:`expiration_due` decides from cheap facts first: the committed snapshot's id
(the latest, as far as this writer knows), the ``EARLIEST`` hint (checked, as every hint is), and, only when
the count of snapshots exceeds ``snapshot.num-retained.min`` without exceeding ``.max``, one read of the
snapshot after the earliest for its commit time. Only when a snapshot is actually due does
:func:`.expire.expire_snapshots` run; it takes its own consistent look (latest, consumers, range) and walks
reachability only when that range is not empty.

**Errors.** The commit has landed before any of this runs. Java's batch commit lets a maintenance error
propagate to the caller (its streaming commit logs it and fails the *next* commit). We never raise: a caller
that sees an error after a successful commit is invited to retry, and a retried write duplicates its data. A
failure is logged as a warning naming the table, the committed snapshot and the error, and the next commit
tries again; nothing is half-deleted, because expiration reads every root before its first deletion.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.maintenance.expire import (
    ExpireResult,
    decoupled_changelog_option,
    expire_changelogs,
    expire_snapshots,
    expire_tags,
)
from pyspark_paimon.metadata.maintenance.partition_expire import DropPartitions, expire_partitions
from pyspark_paimon.metadata.schema.options import (
    CONSUMER_EXPIRATION_TIME,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
    TAG_TIME_EXPIRE_ENABLED,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import now_millis

log = logging.getLogger(__name__)

#: ``bucket`` of a postpone-bucket table (Java returns no expiration for primary-key tables with it).
_POSTPONE_BUCKET = -2
#: How often one process looks for tags past their retention on one branch (see the module docstring).
TAG_EXPIRE_CHECK_MS = 60_000
_last_tag_check: dict[tuple[str, str], int] = {}


@dataclass
class MaintenanceResult:
    """What the maintenance after one commit did. ``expired`` is None when the cheap gate found nothing due
    (no expiration ran); ``expired_partitions`` is None when no partition check was due (or no drop was
    possible); ``skipped`` says why nothing ran at all (``write-only``, postpone bucket)."""

    expired_partitions: list[dict[str, str]] | None = None
    expired_tags: list[str] = field(default_factory=list)
    expired_consumers: list[str] = field(default_factory=list)
    expired: ExpireResult | None = None
    expired_changelogs: ExpireResult | None = None
    skipped: str | None = None


def expiration_due(store: FileStore, latest_id: int, opts: CoreOptions, now_ms: int) -> bool:
    """Whether snapshot expiration may remove something, from a few small reads (see the module docstring).

    False only when nothing can expire: at most ``snapshot.num-retained.min`` snapshots exist, or the count is
    within ``.max`` and the earliest snapshot's successor is younger than ``snapshot.time-retained``. True may
    still expire nothing (a consumer pins the earliest snapshot); :func:`.expire.expire_snapshots` then stops
    before walking anything."""
    retain_min = opts.get(SNAPSHOT_NUM_RETAINED_MIN)
    retain_max = opts.get(SNAPSHOT_NUM_RETAINED_MAX)
    if retain_min < 1 or retain_max < retain_min:
        return True  # let expire_snapshots name the bad option
    earliest = store.snapshots.earliest_id(repair_hint=True)
    if earliest is None or latest_id - earliest + 1 <= retain_min:
        return False
    if latest_id - retain_max + 1 > earliest:
        return True  # more than .max snapshots: the earliest expires whatever its age
    successor = earliest + 1
    try:
        successor_time = store.snapshots.snapshot(successor).time_millis
    except PaimonError:  # gone meanwhile (another expiration) or unreadable: let the full check decide
        return True
    return successor_time < now_ms - opts.get(SNAPSHOT_TIME_RETAINED)


def maintain(
    store: FileStore,
    committed: Snapshot,
    schema: TableSchema,
    *,
    now: int | None = None,
    drop_partitions: DropPartitions | None = None,
) -> MaintenanceResult:
    """Run the maintenance due after ``committed`` landed on ``store``'s branch, under ``schema`` (the one the
    commit wrote with: its options decide). ``drop_partitions`` commits a partition drop (the commit gives
    it; without it partitions are not expired). Raises what the steps raise; :func:`maintain_quietly` is the
    commit's entry point."""
    opts = CoreOptions(schema.options)
    result = MaintenanceResult()
    if opts.write_only:
        result.skipped = "write-only"
        return result
    now_ms = now if now is not None else now_millis()
    result.expired_tags = _expire_tags_if_due(store, opts, now_ms)
    if drop_partitions is not None:
        result.expired_partitions = expire_partitions(store, schema, drop_partitions, now_ms)
    consumer_ttl = opts.get(CONSUMER_EXPIRATION_TIME)
    if consumer_ttl is not None:
        result.expired_consumers = ConsumerManager(store).expire(now_ms - consumer_ttl)
        if result.expired_consumers:
            log.info(
                "expired consumers %s of %s (branch '%s'): not updated for %d ms ('%s')",
                result.expired_consumers,
                store.table_path,
                store.branch,
                consumer_ttl,
                CONSUMER_EXPIRATION_TIME.key,
            )
    if opts.bucket == _POSTPONE_BUCKET and schema.primary_keys:
        result.skipped = "postpone bucket"
        return result
    latest_id = committed.id
    if result.expired_partitions:  # the drops committed after ours: Java's expiration sees them too
        latest_id = store.snapshots.latest_id() or latest_id
    if not expiration_due(store, latest_id, opts, now_ms):
        return result
    result.expired = expire_snapshots(store, options=schema.options, now=now_ms)
    if decoupled_changelog_option(opts) is not None:
        # Java's writers expire the long-lived changelog after the snapshots (ExpireChangelogImpl).
        result.expired_changelogs = expire_changelogs(store, options=schema.options, now=now_ms)
    return result


def _expire_tags_if_due(store: FileStore, opts: CoreOptions, now_ms: int) -> list[str]:
    """Tags of the branch past their retention, deleted with the files only they kept; at most one look per
    ``TAG_EXPIRE_CHECK_MS`` per process and branch."""
    if not opts.get(TAG_TIME_EXPIRE_ENABLED):
        return []
    key = (store.table_path, store.branch)
    last = _last_tag_check.get(key)
    if last is not None and last <= now_ms < last + TAG_EXPIRE_CHECK_MS:
        return []
    _last_tag_check[key] = now_ms
    expired = expire_tags(store, now=now_ms, clean_files=True).deleted
    if expired:
        log.info(
            "expired tags %s of %s (branch '%s'): past their retention ('%s')",
            expired,
            store.table_path,
            store.branch,
            TAG_TIME_EXPIRE_ENABLED.key,
        )
    return expired


def maintain_quietly(
    store: FileStore, committed: Snapshot, schema: TableSchema, drop_partitions: DropPartitions | None = None
) -> MaintenanceResult | None:
    """:func:`maintain` for the commit: a failure is logged, never raised (see the module docstring)."""
    try:
        return maintain(store, committed, schema, drop_partitions=drop_partitions)
    except Exception as e:  # noqa: BLE001 - the commit has landed; raising would invite a duplicating retry
        log.warning(
            "Snapshot %d of %s (branch '%s') was committed, but the maintenance after it failed: %s. The commit "
            "stands; the next commit retries, or run t.maintenance.expire_snapshots() to see the error.",
            committed.id,
            store.table_path,
            store.branch,
            e,
        )
        return None


__all__ = ["MaintenanceResult", "expiration_due", "maintain", "maintain_quietly"]
