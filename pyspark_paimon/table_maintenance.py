"""``t.maintenance``: compaction, snapshot expiry, orphan-file removal, rollback and the Iceberg metadata sync.

Thin delegation: compaction lives in ``planner/compact_strategy.py`` and ``datasource/compact/compact.py`` (file index
rewrites in ``datasource/compact/file_index_rewrite.py``), the rest
in ``metadata/maintenance`` and ``metadata/refs/rollback.py``. Every method returns its result dataclass
(truthy when something changed).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from pyspark_paimon.api_types import Duration, Instant
from pyspark_paimon.datasource import partition_maintenance as _partitions
from pyspark_paimon.datasource.compact import compact as _compact
from pyspark_paimon.datasource.compact import file_index_rewrite as _file_index_rewrite
from pyspark_paimon.datasource.compact.compact_runners import session_runner
from pyspark_paimon.errors import TagError
from pyspark_paimon.metadata.catalog import rest_refs as _rest_refs
from pyspark_paimon.metadata.catalog.rest_metastore import rest_table
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.iceberg import sync as _iceberg
from pyspark_paimon.metadata.maintenance import check as _check
from pyspark_paimon.metadata.maintenance import expire as _expire
from pyspark_paimon.metadata.maintenance import orphans as _orphans
from pyspark_paimon.metadata.progress import Progress
from pyspark_paimon.metadata.refs import rollback as _rollback
from pyspark_paimon.metadata.refs import tags as _tags
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.timeutil import duration_millis, to_millis
from pyspark_paimon.table_scan import TableView


class Maintenance:
    """Maintenance of one branch of a table (``t.maintenance``)."""

    def __init__(self, table: TableView):
        self._table = table

    def __repr__(self) -> str:
        return f"Maintenance({self._table.identifier!r}, branch={self._table.branch!r})"

    @records_effects("compact", idempotent=True)
    def compact(
        self,
        partitions: Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None = None,
        *,
        full: bool | None = False,
        order_strategy: str | None = None,
        order_by: Iterable[str] | str | None = None,
        options: Mapping[str, Any] | None = None,
        spark: Any = None,
        progress: Progress | None = None,
    ) -> _compact.CompactResult:
        """Compact the branch in one COMPACT snapshot (Paimon's ``CALL sys.compact``).

        ``partitions`` (dicts or 'k=v,k2=v2' specs; a partial spec matches every partition with those values)
        restricts it; default every partition. Primary-key buckets: ``full`` merges every file of a bucket
        into sorted files at the max level (reads then need no merge), otherwise Paimon's universal rules
        decide what to merge. Fixed append buckets: small files are rewritten into files of
        ``target-file-size``; unaware-bucket append tables: Paimon's coordinator packs the small files of each
        partition by size, ``full`` or not; with ``clustering.incremental`` they are clustered by
        ``clustering.columns`` instead (Paimon 1.3's incremental clustering: ``full`` re-clusters everything).
        ``full=None`` is the default of Paimon's ``CALL sys.compact``: full, or minor for incremental clustering.
        ``order_strategy`` ('zorder', 'hilbert' or 'order') with ``order_by`` columns makes it a sort compaction of
        an unaware-bucket append table: each partition's rows rewritten in that order, so range filters on those
        columns skip files (docs/maintenance.md). ``options`` overlay table options for this compaction only
        (Paimon's ``options`` argument, e.g. ``{'target-file-size': '64 mb'}``).
        With a SparkSession ``spark`` (classic or Connect) each bucket is compacted in an executor and this
        process commits; without, here. ``progress(step, done, total)`` is called per bucket compacted.
        Truthy when a snapshot was committed."""
        runner = session_runner(spark) if spark is not None else None
        return _compact.compact(
            self._table.store,
            partitions,
            full=full,
            runner=runner,
            progress=progress,
            order_strategy=order_strategy,
            order_by=None if order_by is None else (order_by if isinstance(order_by, str) else list(order_by)),
            options=None if options is None else {str(k): str(v) for k, v in options.items()},
        )

    @records_effects("expire partitions", idempotent=True)
    def expire_partitions(
        self,
        *,
        expiration_time: Duration | None = None,
        timestamp_formatter: str | None = None,
        timestamp_pattern: str | None = None,
        expire_strategy: str | None = None,
        max_expires: int | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> _partitions.ExpirePartitionsResult:
        """Drop the partitions that have expired now (Paimon's ``expire_partitions``): older than
        ``expiration_time`` (e.g. '7 d') by their values (``expire_strategy`` 'values-time', read with
        ``timestamp_formatter`` / ``timestamp_pattern``) or their newest file ('update-time'), at most
        ``max_expires``; unset arguments come from the table's ``partition.*`` options. OVERWRITE commits drop
        them; the files stay until snapshot expiration. Truthy when a partition was dropped."""
        return _partitions.expire_partitions(
            self._table.store,
            expiration_time=(
                None if expiration_time is None else f"{duration_millis(expiration_time, 'expiration_time')} ms"
            ),
            timestamp_formatter=timestamp_formatter,
            timestamp_pattern=timestamp_pattern,
            expire_strategy=expire_strategy,
            max_expires=max_expires,
            options=None if options is None else {str(k): str(v) for k, v in options.items()},
        )

    @records_effects("mark partitions done", idempotent=True)
    def mark_partition_done(
        self, partitions: Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str
    ) -> _partitions.MarkDoneResult:
        """Mark partitions done (Paimon's ``mark_partition_done``) by ``partition.mark-done-action``:
        'success-file' (the default) writes ``<partition>/_SUCCESS``, which schedulers wait for."""
        return _partitions.mark_partition_done(self._table.store, partitions)

    @records_effects("rescale")
    def rescale(
        self,
        bucket_num: int | None = None,
        partitions: Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None = None,
    ) -> _partitions.RescaleResult:
        """Rewrite ``partitions`` (default all) into ``bucket_num`` buckets (default the table's ``bucket``) in
        one OVERWRITE commit (Paimon 1.4's ``rescale``): after ``ALTER TABLE SET ('bucket' = ...)`` the old
        partitions keep their bucket count until rescaled. Fails without committing if another commit landed
        meanwhile. Truthy when a snapshot was committed."""
        return _partitions.rescale(self._table.store, bucket_num, partitions)

    @records_effects("reset consumer", idempotent=True)
    def reset_consumer(self, consumer_id: str, next_snapshot_id: int | None = None) -> bool:
        """Set a streaming consumer's next snapshot (which must exist), or delete the consumer without one
        (Paimon's ``reset_consumer``). Returns whether the consumer exists afterwards (with a snapshot) or
        existed (without)."""
        manager = ConsumerManager(self._table.store)
        if next_snapshot_id is None:
            return manager.delete(consumer_id)
        self._table.store.snapshots.snapshot(next_snapshot_id)  # raises when there is no such snapshot
        manager.record(consumer_id, next_snapshot_id)
        return True

    @records_effects("clear consumers", idempotent=True)
    def clear_consumers(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Delete the streaming consumers whose id matches the regular expression ``including`` (default all)
        but not ``excluding`` (Paimon's ``clear_consumers``); returns the ids deleted."""
        return ConsumerManager(self._table.store).clear(including, excluding)

    @records_effects("rewrite file indexes", idempotent=True)
    def rewrite_file_index(
        self,
        partitions: Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None = None,
        *,
        progress: Progress | None = None,
    ) -> _file_index_rewrite.RewriteFileIndexResult:
        """Give every data file of the branch (in ``partitions``, as for :meth:`compact`; default all) the file
        indexes the table's ``file-index.*`` options name now, in one COMPACT snapshot (Paimon's ``CALL
        sys.rewrite_file_index``): for indexes added to a table that already holds data. The data files are not
        rewritten; ``progress(step, done, total)`` is called per file. Truthy when a snapshot was committed."""
        return _file_index_rewrite.rewrite_file_index(self._table.store, partitions, progress=progress)

    @records_effects("expire snapshots", idempotent=True)
    def expire_snapshots(
        self,
        *,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: Instant | None = None,
        max_deletes: int | None = None,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> _expire.ExpireResult:
        """Expire old snapshots of the branch; unset arguments come from the ``snapshot.*`` table options
        (``retain_max`` / ``retain_min``: ``snapshot.num-retained.max`` / ``.min``; ``older_than``: now minus
        ``snapshot.time-retained``; ``max_deletes``: ``snapshot.expire.limit``). Deletes only files no snapshot,
        tag or changelog of *any* branch still references; ``dry_run`` only reports; ``progress(step, done,
        total)`` is called per data file deleted."""
        store = self._table.store
        return _expire.expire_snapshots(
            store,
            retain_max=retain_max,
            retain_min=retain_min,
            older_than=older_than,
            max_deletes=max_deletes,
            options=self._table.options,
            dry_run=dry_run,
            progress=progress,
        )

    @records_effects("remove orphan files", idempotent=True)
    def remove_orphan_files(
        self, *, older_than: Instant | None = None, dry_run: bool = False, progress: Progress | None = None
    ) -> _orphans.OrphanResult:
        """Delete files under the table that no snapshot, tag or changelog of any branch references and that
        are older than ``older_than`` (default: one day ago). ``dry_run`` only lists them; ``progress(step,
        done, total)`` is called per orphan file."""
        store = self._table.store
        return _orphans.remove_orphan_files(store, older_than=older_than, dry_run=dry_run, progress=progress)

    def check(self, *, progress: Progress | None = None) -> _check.CheckResult:
        """Check that every file a snapshot, tag or long-lived changelog of any branch references is there, without
        reading data: the damaged roots (``damaged``, each naming what is missing or unreadable) and the newest
        intact snapshot of each branch (``last_intact``), the one to roll back to. Nothing is written; see
        docs/maintenance.md, "Checking and repairing a table". ``progress(step, done, total)`` per root."""
        return _check.check_table(self._table.store, progress=progress)

    @records_effects("roll back", idempotent=True)
    def rollback_to(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp: Instant | None = None
    ) -> _rollback.RollbackResult:
        """Make a snapshot the latest of the branch again (exactly one of ``snapshot_id``, ``tag`` or
        ``timestamp``: the last snapshot committed at or before it, Paimon's ``rollback_to_timestamp``),
        deleting newer snapshots and tags (Paimon semantics; no data files are deleted)."""
        given = [x for x in (snapshot_id, tag, timestamp) if x is not None]
        if len(given) != 1:
            raise TagError("rollback_to needs exactly one of snapshot_id=, tag= or timestamp=.")
        store = self._table.store
        if timestamp is not None:
            ts = to_millis(timestamp, "timestamp")
            manager = _tags.TagManager(store)
            snapshot_id = _tags.last_snapshot_at_or_before(store.snapshots, manager, ts).id
        rest = rest_table(store)
        if rest is not None:  # a REST table is rolled back by its server (Java's catalogTableRollback)
            return _rest_refs.rollback(store, rest, snapshot_id=snapshot_id, tag=tag)
        return _rollback.rollback_to(store, snapshot_id=snapshot_id, tag=tag)

    @records_effects("sync Iceberg metadata", idempotent=True)
    def sync_iceberg(self) -> int | None:
        """Write the table's Iceberg metadata for the main branch's latest snapshot now (``metadata.iceberg.storage``;
        every commit does it, so this only repairs metadata after a failed or interrupted sync). Returns the
        metadata version (the snapshot id), None when the table keeps no Iceberg metadata or has no snapshot."""
        main = self._table.store.with_branch("main")
        tags = _tags.TagManager(main)
        version = _iceberg.sync_head(main, tags.snapshot_ids)
        if version is not None:
            _iceberg.refresh_tags(main, tags.snapshot_ids)
        return version


__all__ = ["Maintenance"]
