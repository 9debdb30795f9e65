"""The commit protocol (Java's `FileStoreCommitImpl`): turn written data files into one new snapshot, atomically.

Executors write data files and send :class:`CommitMessage` s; the driver calls :meth:`FileStoreCommit.commit`
once. A commit is visible exactly when ``snapshot-N`` is created, which :meth:`FileIO.try_create` does
atomically and only if absent, so concurrent writers cannot both win. A loser re-reads the latest snapshot
and tries again with back-off. Overwrite deletions are recomputed on every attempt against the snapshot the
attempt builds on, so a concurrent append to an overwritten partition is never silently resurrected or lost.

When an attempt fails because another writer took ``snapshot-N`` we know our snapshot did not land, so we
delete the manifests that attempt wrote. When the outcome is unknown (an I/O error during the create), we
keep everything and raise :class:`CommitStateUnknownError`: those files may be live.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterable, Literal, Sequence, TypeVar

from pyspark_paimon.errors import (
    CommitConflictError,
    CommitError,
    CommitStateUnknownError,
    PaimonError,
    SnapshotNotFoundError,
)
from pyspark_paimon.metadata.effects import took_effect
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.io.avro import avro_codec
from pyspark_paimon.metadata.maintenance import post_commit
from pyspark_paimon.metadata.manifests.deletion_vectors import DELETION_VECTORS_INDEX
from pyspark_paimon.metadata.manifests.index_manifest import (
    IndexChange,
    IndexManifestEntry,
    read_index_manifest,
    rewrite_index_manifest,
)
from pyspark_paimon.metadata.manifests.manifest import (
    KIND_ADD,
    KIND_DELETE,
    DataFileMeta,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    live_files,
    merge_entries,
)
from pyspark_paimon.metadata.refs import auto_tag
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.rows.binary_row import deserialize_row, serialize_row
from pyspark_paimon.metadata.schema.options import (
    COMMIT_MAX_RETRIES,
    COMMIT_MAX_RETRY_WAIT,
    COMMIT_MIN_RETRY_WAIT,
    COMMIT_TIMEOUT,
    MANIFEST_COMPRESSION,
    MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE,
    MANIFEST_MERGE_MIN_COUNT,
    MANIFEST_TARGET_FILE_SIZE,
    ROW_TRACKING_ENABLED,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit_order import SequenceCeilings
from pyspark_paimon.metadata.snapshots.row_ids import assign_row_ids
from pyspark_paimon.metadata.snapshots.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    Snapshot,
    now_millis,
)
from pyspark_paimon.metadata.store import FileStore

log = logging.getLogger(__name__)

# Recorded in every snapshot we write; tests/metadata/test_commit.py keeps it equal to the package version.
WRITER_VERSION = "pyspark-paimon-0.2.0"
CommitKind = Literal["APPEND", "OVERWRITE", "COMPACT"]
#: Rewrites a message's new level-0 files with sequence numbers ``offset`` higher; returns the message describing
#: the rewritten files (the engine's, which writes data files: ``datasource/write/resequence.py``).
Resequence = Callable[["CommitMessage", int], "CommitMessage"]
_T = TypeVar("_T")


@dataclass(frozen=True)
class CommitMessage:
    """New files of one (partition, bucket), produced by one writer task. Pickled from executors."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...]
    # Files this writer replaces (compaction); DELETE entries in the same commit.
    compact_before: tuple[DataFileMeta, ...] = ()
    # The writer task that made ``new_files`` (e.g. Spark's "<partition>-<attempt>"); never persisted. Versions
    # of one key from different writers of one job have no order (datasource/write/key_conflicts.py).
    writer: str = ""
    # Dynamic bucket mode: the distinct key hashes this write added to this bucket, big-endian int32s (what the
    # bucket's HASH index file must hold after the commit besides its earlier hashes; keys the index already
    # held are left out, so an upsert of known keys rewrites no index file; metadata/manifests/hash_index.py).
    key_hashes: bytes = b""
    # Changelog files of this bucket (``changelog-producer`` input / full-compaction): listed in the snapshot's
    # changelog manifest list, never in its data manifests.
    changelog_files: tuple[DataFileMeta, ...] = ()
    # Deletion-vector tables: a compaction's new ``DELETION_VECTORS`` index file(s) of this bucket, holding every
    # vector the bucket keeps (they replace the bucket's old ones in the index manifest; empty: none is left).
    index_files: tuple[IndexManifestEntry, ...] = ()
    # The snapshot whose live files the sequence numbers of ``new_files`` continue (0: an empty branch): a commit
    # given a ``resequence`` re-sequences them above anything committed to the bucket after it
    # (:mod:`.commit_order`). None: not ordered by commit (compaction outputs, hand-made messages).
    sequenced_after: int | None = None


@dataclass(frozen=True)
class OverwriteSpec:
    """What an OVERWRITE commit replaces.

    ``mode="all"``: every live file of the table. ``mode="dynamic"``: every live file of the partitions that
    the new data touches. ``mode="static"``: every live file of the given partitions (BinaryRow bytes), or of
    the partitions matching ``partition_filter`` (a predicate over decoded partition value dicts).
    """

    mode: Literal["all", "dynamic", "static"] = "all"
    partitions: frozenset[bytes] = frozenset()
    partition_spec: dict[str, object] | None = None


def entries_of(messages: Iterable[CommitMessage]) -> list[ManifestEntry]:
    out = []
    for m in messages:
        for f in m.compact_before:
            out.append(ManifestEntry(KIND_DELETE, m.partition, m.bucket, m.total_buckets, f))
        for f in m.new_files:
            out.append(ManifestEntry(KIND_ADD, m.partition, m.bucket, m.total_buckets, f))
    return out


def changelog_entries_of(messages: Iterable[CommitMessage]) -> list[ManifestEntry]:
    """The ADD entries of the messages' changelog files (a snapshot's changelog manifests)."""
    return [
        ManifestEntry(KIND_ADD, m.partition, m.bucket, m.total_buckets, f) for m in messages for f in m.changelog_files
    ]


def partition_stats(partitions: Iterable[bytes], schema: TableSchema) -> SimpleStats:
    """Min/max/null-count BinaryRows over partition values, as the manifest list records them."""
    types = [f.type for f in schema.partition_fields]
    if not types:
        empty = serialize_row([], [])
        return SimpleStats(empty, empty, ())
    mins: list = [None] * len(types)
    maxs: list = [None] * len(types)
    nulls = [0] * len(types)
    for raw in set(partitions):
        values = deserialize_row(raw, types)
        for i, v in enumerate(values):
            if v is None:
                nulls[i] += 1
                continue
            if mins[i] is None or v < mins[i]:
                mins[i] = v
            if maxs[i] is None or v > maxs[i]:
                maxs[i] = v
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))


def manifests_with_partitions(
    metas: Sequence[ManifestFileMeta], partitions: Iterable[bytes], schema: TableSchema
) -> list[ManifestFileMeta]:
    """The manifests whose partition statistics (min, max, null count per partition field) may hold one of
    ``partitions`` (serialized BinaryRows). Statistics that cannot be decoded or compared never exclude."""
    types = [f.type for f in schema.partition_fields]
    if not types:
        return list(metas)
    try:
        wanted = [deserialize_row(raw, types) for raw in set(partitions)]
    except Exception:  # noqa: BLE001 - an undecodable partition: read everything rather than guess
        return list(metas)
    return [m for m in metas if any(_stats_may_hold(m.partition_stats, values, types) for values in wanted)]


def _stats_may_hold(stats: SimpleStats, values: Sequence[object], types: Sequence[object]) -> bool:
    try:
        lows = deserialize_row(stats.min_values, list(types))
        highs = deserialize_row(stats.max_values, list(types))
    except Exception:  # noqa: BLE001 - absent (arity 0) or foreign stats: they cannot exclude anything
        return True
    nulls = stats.null_counts
    for i, v in enumerate(values):
        if v is None:
            if nulls is not None and i < len(nulls) and nulls[i] == 0:
                return False
            continue
        lo = lows[i] if i < len(lows) else None
        hi = highs[i] if i < len(highs) else None
        if lo is None and hi is None:
            # No bounds but nulls counted: the field holds no value other than null in this manifest.
            if nulls is not None and i < len(nulls) and nulls[i]:
                return False
            continue
        if lo is None or hi is None:  # one bound missing: cannot exclude
            continue
        try:
            if v < lo or v > hi:
                return False
        except TypeError:  # incomparable decoded values (e.g. naive vs aware datetimes): cannot exclude
            continue
    return True


def delete_new_files(store: FileStore, schema: TableSchema, messages: Iterable[CommitMessage]) -> None:
    """Delete the files ``messages`` add (data and changelog files, the index files beside them, deletion-vector
    index files) after their commit certainly did not land (:func:`commit_or_abort`'s ``abort``). A file a
    message only moves up (an upgraded compaction input) is not new and stays. Best effort: a file that cannot
    be deleted is logged and left to ``remove_orphan_files``, since nothing references it."""
    types = [f.type for f in schema.partition_fields]
    fileio = store.fileio
    paths: list[str] = []
    for m in messages:
        directory = store.bucket_path(schema, tuple(deserialize_row(m.partition, types)), m.bucket)
        inputs = {f.file_name for f in m.compact_before}
        for f in (*m.new_files, *m.changelog_files):
            if f.file_name in inputs:
                continue
            path = f.external_path or f"{directory}/{f.file_name}"
            paths.append(path)
            paths.extend(f"{path.rsplit('/', 1)[0]}/{extra}" for extra in f.extra_files)
        paths.extend(f"{store.table_path}/index/{e.file_name}" for e in m.index_files)
    for path in paths:
        try:
            fileio.delete(path)
        except OSError as exc:  # StorageError included: the file is an orphan either way
            log.warning("Could not delete %s of a commit that did not land (%s); remove_orphan_files will.", path, exc)


def commit_or_abort(
    commit: Callable[[], _T],
    abort: Callable[[], None],
    landed: Callable[[], Snapshot | None],
    *,
    after_landing: Callable[[Snapshot, Exception], Exception] | None = None,
) -> _T:
    """The one commit-or-abort rule of every engine write: run ``commit``; on failure delete its new files
    (``abort``) only when the commit certainly did not land.

    A new file may be deleted only when no snapshot can reference it: after an error (a conflict included: a
    step after the commit may raise one) ``landed()`` (the snapshot of this commit's user, or None) finds no
    snapshot of ours. An ambiguous outcome (:class:`CommitStateUnknownError`, a failing check, an interrupt such
    as Ctrl-C that may come after the snapshot file was created) keeps every file: a landed snapshot that lost its
    data files is unreadable for good, while a leftover file is only an orphan that ``remove_orphan_files``
    removes. When the commit landed and a later step failed, ``after_landing(snapshot, error)`` gives the error
    to raise instead (one that says the data is in the table)."""
    try:
        return commit()
    except CommitStateUnknownError:
        raise
    except Exception as exc:
        try:
            ours = landed()
        except (OSError, PaimonError) as check:
            raise CommitStateUnknownError(
                f"The commit failed ({exc}), and whether it landed cannot be checked ({check}). Its files are kept; "
                "look at the table's latest snapshots (t.snapshots(), or the $snapshots system table) before retrying: "
                "a snapshot of this commit's user means it landed."
            ) from exc
        if ours is None:
            abort()
            raise
        if after_landing is not None:
            raise after_landing(ours, exc) from exc
        raise


def _after_later_commits(
    messages: Sequence[CommitMessage], latest: Snapshot, ceilings: SequenceCeilings, resequence: Resequence
) -> Sequence[CommitMessage]:
    """``messages`` with the new level-0 files of every bucket that a commit after their ``sequenced_after``
    reached with numbers as high as theirs shifted above that commit's (one offset per bucket, so the order
    within this commit stays); ``messages`` itself when none needs it. Postpone-bucket files (sequence -1) are
    ordered by their compaction instead."""
    after: dict[tuple[bytes, int], int] = {}
    lowest: dict[tuple[bytes, int], int] = {}
    for m in messages:
        new = [f.min_sequence_number for f in m.new_files if f.level == 0]
        if m.sequenced_after is None or m.bucket < 0 or not new:
            continue
        key = (m.partition, m.bucket)
        after[key] = min(after.get(key, m.sequenced_after), m.sequenced_after)
        lowest[key] = min(lowest.get(key, min(new)), min(new))
    offsets = {key: top + 1 - lowest[key] for key, top in ceilings.since(latest, after).items() if top >= lowest[key]}
    if not offsets:
        return messages
    return [
        resequence(m, offsets[(m.partition, m.bucket)])
        if m.sequenced_after is not None and (m.partition, m.bucket) in offsets
        else m
        for m in messages
    ]


class FileStoreCommit:
    """Commits to one branch of one table."""

    def __init__(self, store: FileStore, options: dict[str, str] | None = None):
        self.store = store
        self.fileio = store.fileio
        self.table_path = store.table_path
        self.branch = store.branch
        self.snapshots = store.snapshots
        self.schemas = store.schemas
        # Commits read base manifests through the process-wide cache, as Java's commit reads them through its
        # manifest cache: manifest files are immutable, and every commit of a growing table would otherwise
        # decode the whole table's manifests again (quadratic in the number of commits). Nothing a commit
        # reads is deleted on the strength of the cache; maintenance (expire, orphans) keeps its own reads.
        self.manifests = store.planning_manifests
        opts = CoreOptions(options or {})
        self._options = opts
        self.max_retries = opts.get(COMMIT_MAX_RETRIES)
        self.min_wait_ms = opts.get(COMMIT_MIN_RETRY_WAIT)
        self.max_wait_ms = opts.get(COMMIT_MAX_RETRY_WAIT)
        self.timeout_ms = opts.get(COMMIT_TIMEOUT)  # None: only commit.max-retries limits the attempts
        self.merge_min_count = opts.get(MANIFEST_MERGE_MIN_COUNT)
        self._raw_options = dict(options or {})
        #: What the maintenance after the last commit did (None: none ran yet, or it failed and was logged).
        self.last_maintenance: post_commit.MaintenanceResult | None = None
        #: False for the drop commits of partition expiration: Java's ``FileStoreCommit.dropPartitions`` runs
        #: no tag creation nor maintenance after itself (the commit that triggered it does).
        self.after_commit = True

    # ---------------------------------------------------------------------------------------------
    def commit(
        self,
        messages: Sequence[CommitMessage],
        *,
        kind: CommitKind = "APPEND",
        overwrite: OverwriteSpec | None = None,
        commit_user: str | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
        properties: dict[str, str] | None = None,
        watermark: int | None = None,
        allow_empty: bool = False,
        index_update: Callable[[Snapshot | None], IndexChange] | None = None,
        resequence: Resequence | None = None,
    ) -> Snapshot | None:
        """Commit ``messages`` as one snapshot; returns it (None if there was nothing to commit).

        ``index_update(latest)`` (a dynamic-bucket write's hash index, a deletion-vector compaction's vectors, or
        both combined) says how the new snapshot's index manifest differs from ``latest``'s; it is computed anew
        on each attempt against the snapshot it builds on (it may raise :class:`CommitConflictError`), and the
        files it wrote are deleted when the attempt does not land. An overwrite also drops the deletion vectors
        of the buckets it empties. Otherwise the latest snapshot's index manifest is carried forward.

        ``resequence(message, offset)`` (tables whose key versions are ordered by sequence number alone): on
        each attempt, the new level-0 files of a bucket that another commit reached after the message's
        ``sequenced_after`` snapshot with numbers as high as theirs are shifted above it by this call, which
        rewrites them and returns the message describing them (:mod:`.commit_order`: the later commit wins)."""
        new_entries = entries_of(messages)
        # Java commits no changelog with an overwrite (FileStoreCommitImpl logs and ignores it); callers that
        # write changelog files delete them for an overwrite (WriteJob.commit).
        changelog = changelog_entries_of(messages) if overwrite is None else []
        if overwrite is not None:
            kind = "OVERWRITE"
        if not new_entries and not changelog and overwrite is None and not allow_empty:
            return None
        commit_user = commit_user or self._options.new_commit_user()
        last_seen: int | None = None
        started = time.monotonic()
        ceilings = SequenceCeilings(self.store) if resequence is not None and kind != "COMPACT" else None
        for attempt in range(self.max_retries + 1):
            latest = self.snapshots.latest()
            if attempt > 0:
                done = self._already_committed(last_seen, latest, commit_user, commit_identifier, kind)
                if done is not None:
                    took_effect(f"snapshot {done.id} of branch '{self.branch}' committed")
                    self._publish_iceberg(done)  # an earlier attempt landed: still owe its Iceberg metadata
                    self._after_commit(done)  # and its auto tag
                    return done
            last_seen = latest.id if latest else None
            if ceilings is not None and resequence is not None and latest is not None:
                ordered = _after_later_commits(messages, latest, ceilings, resequence)
                if ordered is not messages:
                    messages = ordered
                    new_entries = entries_of(messages)
            written: list[str] = []
            try:
                snapshot = self._prepare(
                    latest,
                    new_entries,
                    kind,
                    overwrite,
                    commit_user,
                    commit_identifier,
                    properties,
                    watermark,
                    written,
                    allow_empty or bool(changelog),
                    index_update,
                    changelog,
                )
            except Exception:
                self._delete_quietly(written)
                raise
            if snapshot is None:
                self._delete_quietly(written)
                return None
            try:
                created = self.store.commit_snapshot(snapshot, latest)
            except CommitConflictError:  # the catalog refused before creating anything (its lock is held)
                self._delete_quietly(written)
                raise
            except Exception as e:
                raise CommitStateUnknownError(
                    f"Creating {self.snapshots.snapshot_path(snapshot.id)} failed with {e!r}; the commit may or may "
                    "not have landed. Its files are kept; check the table's latest snapshot before retrying."
                ) from e
            if created or self._landed_anyway(snapshot):
                took_effect(f"snapshot {snapshot.id} of branch '{self.branch}' committed")
                self._publish_iceberg(snapshot)
                self._after_commit(snapshot)
                return snapshot
            self._delete_quietly(written)
            if self.timeout_ms is not None and (time.monotonic() - started) * 1000 > self.timeout_ms:
                raise CommitConflictError(
                    f"Gave up committing to {self.table_path} (branch '{self.branch}') after {attempt + 1} attempts: "
                    f"'commit.timeout' ({self.timeout_ms} ms) passed while other writers kept committing first. "
                    "Retry the job, or raise 'commit.timeout'."
                )
            self._sleep(attempt)
        raise CommitConflictError(
            f"Gave up committing to {self.table_path} (branch '{self.branch}') after {self.max_retries + 1} attempts: "
            "other writers kept committing first. Retry the job, or raise 'commit.max-retries'."
        )

    def _publish_iceberg(self, snapshot: Snapshot) -> None:
        """The Iceberg metadata of the new snapshot (``metadata.iceberg.storage``; Java's ``IcebergCommitCallback``,
        which runs for every commit, partition drops included). The Paimon commit has landed, so a failure is
        logged and the write reported as done: raising would invite a retry that writes the data twice. Iceberg
        readers keep seeing the previous version until the next commit rebuilds it."""
        try:
            iceberg_sync.publish(self.store, snapshot, self._schema, TagManager(self.store).snapshot_ids)
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.warning(
                "Snapshot %d of %s was committed, but writing its Iceberg metadata failed: %s. Iceberg readers see "
                "the previous version until the next commit; t.maintenance.sync_iceberg() writes it now.",
                snapshot.id,
                self.table_path,
                e,
            )

    def _after_commit(self, snapshot: Snapshot) -> None:
        """Post-commit work, in Java's order: automatic tag creation (``tag.automatic-creation``), then the
        maintenance Java's writers run after every commit (:mod:`..maintenance.post_commit`: tag, partition,
        consumer and snapshot expiration). ``write-only`` skips all of it, as Java's commit then has no tag
        manager and no expiration. The commit has landed by now, so a failure here is logged,
        never raised (raising would invite a retry that duplicates data)."""
        if not self.after_commit:
            return
        try:
            if not self._schema.core_options.write_only:  # Java's write-only commit has no tag manager
                auto_tag.on_commit(self.store, snapshot, self._schema.options)
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.warning(
                "Snapshot %d of %s (branch '%s') was committed, but creating its automatic tag failed: "
                "%s. Create the tag by hand (t.tags.create) if you need it.",
                snapshot.id,
                self.table_path,
                self.branch,
                e,
            )
        self.last_maintenance = post_commit.maintain_quietly(
            self.store, snapshot, self._schema, drop_partitions=self._drop_partitions
        )

    def _drop_partitions(self, partitions: frozenset[bytes]) -> Snapshot | None:
        """Partition expiration's drop: one OVERWRITE commit deleting every live file of ``partitions``."""
        dropper = FileStoreCommit(self.store, self._raw_options)
        dropper.after_commit = False
        return dropper.commit([], overwrite=OverwriteSpec("static", partitions))

    def _landed_anyway(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot-N``, which the store says existed, is exactly the one we tried to create. On an object
        store a conditional write can land while its answer is lost; the retried write then finds the file. It
        must count as our commit, and the files it references must not be deleted as a loser's."""
        try:
            return self.snapshots.snapshot(snapshot.id).to_dict() == snapshot.to_dict()
        except PaimonError:  # gone or unreadable: not ours to claim
            return False

    # ---------------------------------------------------------------------------------------------
    def _already_committed(
        self, last_seen: int | None, latest: Snapshot | None, user: str, identifier: int, kind: str
    ) -> Snapshot | None:
        if latest is None:
            return None
        start = (last_seen or 0) + 1
        for sid in range(start, latest.id + 1):
            try:
                s = self.snapshots.snapshot(sid)
            except SnapshotNotFoundError:  # expired meanwhile (reading is the existence check: one request)
                continue
            if s.commit_user == user and s.commit_identifier == identifier and s.commit_kind == kind:
                return s
        return None

    def base_manifests(self, latest: Snapshot | None) -> list[ManifestFileMeta]:
        if latest is None:
            return []
        return self.manifests.read_list(latest.base_manifest_list) + self.manifests.read_list(
            latest.delta_manifest_list
        )

    def _prepare(
        self,
        latest: Snapshot | None,
        new_entries: list[ManifestEntry],
        kind: str,
        overwrite: OverwriteSpec | None,
        user: str,
        identifier: int,
        properties: dict[str, str] | None,
        watermark: int | None,
        written: list[str],
        allow_empty: bool = False,
        index_update: Callable[[Snapshot | None], IndexChange] | None = None,
        changelog: Sequence[ManifestEntry] = (),
    ) -> Snapshot | None:
        schema = self.schemas.latest()
        if schema is None:
            raise CommitError(f"{self.table_path} (branch '{self.branch}') has no schema; it is not a table.")
        auto_tag.validate_options(schema.options)  # refuse bad tag options before anything is written
        iceberg_sync.check_writable(self.store, schema)  # and Iceberg metadata that cannot be kept true
        self._schema = schema
        base = self.base_manifests(latest)
        delta_entries = list(new_entries)
        live: list[ManifestEntry] | None = None
        overwritten: set[tuple[bytes, int]] = set()
        if overwrite is not None or kind == "COMPACT" or any(e.kind == KIND_DELETE for e in new_entries):
            live = live_files(self.manifests.read_entries(base), f"snapshot {latest.id if latest else 0}")
        if overwrite is not None:
            assert live is not None
            targets = self._overwrite_targets(overwrite, new_entries, live, schema)
            deletes = [
                ManifestEntry(KIND_DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                for e in live
                if targets is None or e.partition in targets
            ]
            delta_entries = deletes + delta_entries
            overwritten = {(e.partition, e.bucket) for e in deletes}
        if live is not None:
            self._check_deletes(delta_entries, live)
            if schema.primary_keys:
                self._check_level_overlaps(delta_entries, live, schema)
        if overwrite is None:
            self._check_bucket_counts(new_entries, base, schema)
        if not delta_entries and overwrite is None and not allow_empty:
            return None

        snapshot_id = (latest.id + 1) if latest else 1
        next_row_id = latest.next_row_id if latest and latest.next_row_id is not None else 0
        if schema.core_options.get(ROW_TRACKING_ENABLED):  # the new rows' ids, from the snapshot built on
            assigned = assign_row_ids(delta_entries, next_row_id, snapshot_id)
            delta_entries, next_row_id = assigned.entries, assigned.next_row_id
        index_manifest = self._index_manifest(latest, index_update, overwritten, schema, written)
        delta_metas = self._write_manifests(delta_entries, schema, written) if delta_entries else []
        base = self._maybe_compact_manifests(base, schema, written)
        codec = avro_codec(schema.core_options.get(MANIFEST_COMPRESSION))
        base_name, base_size = self.manifests.write_list(base, codec)
        written.append(self.manifests.path(base_name))
        delta_name, delta_size = self.manifests.write_list(delta_metas, codec)
        written.append(self.manifests.path(delta_name))
        changelog_name: str | None = None
        changelog_size: int | None = None
        if changelog:
            changelog_metas = self._write_manifests(list(changelog), schema, written)
            changelog_name, changelog_size = self.manifests.write_list(changelog_metas, codec)
            written.append(self.manifests.path(changelog_name))

        added = sum(e.file.row_count for e in delta_entries if e.kind == KIND_ADD)
        removed = sum(e.file.row_count for e in delta_entries if e.kind == KIND_DELETE)
        prev_total = (latest.total_record_count or 0) if latest else 0
        marks = [w for w in (watermark, latest.watermark if latest else None) if w is not None]
        return Snapshot(
            id=snapshot_id,
            schema_id=schema.id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_name,
            changelog_manifest_list_size=changelog_size,
            index_manifest=index_manifest,
            commit_user=user,
            commit_identifier=identifier,
            commit_kind=kind,
            time_millis=now_millis(),
            total_record_count=prev_total + added - removed,
            delta_record_count=added - removed,
            changelog_record_count=sum(e.file.row_count for e in changelog) if changelog else None,
            watermark=max(marks) if marks else None,
            statistics=latest.statistics if latest and latest.schema_id == schema.id else None,
            properties=properties or None,
            next_row_id=next_row_id,
            uuid=str(uuid.uuid4()),
            writer_version=WRITER_VERSION,
        )

    def _index_manifest(
        self,
        latest: Snapshot | None,
        index_update: Callable[[Snapshot | None], IndexChange] | None,
        overwritten: set[tuple[bytes, int]],
        schema: TableSchema,
        written: list[str],
    ) -> str | None:
        """The new snapshot's index manifest: ``latest``'s, changed by ``index_update`` and, for an overwrite,
        without the deletion vectors of the emptied buckets (Java's overwrite drops the overwritten partitions'
        index entries; the hash index of an overwrite is ``index_update``'s, which knows the replaced partitions).
        One new file at most, whatever combination of indexes changes."""
        current = latest.index_manifest if latest else None
        change = index_update(latest) if index_update is not None else IndexChange()
        written.extend(change.written)
        if overwritten and current is not None:
            entries = read_index_manifest(self.fileio, self.manifests.path(current))
            stale = {e.slot for e in entries if e.index_type == DELETION_VECTORS_INDEX}
            change = change | IndexChange(frozenset(s for s in stale if (s[0], s[1]) in overwritten))
        if not change:
            return current
        codec = avro_codec(schema.core_options.get(MANIFEST_COMPRESSION))
        name = rewrite_index_manifest(self.fileio, self.manifests.manifest_dir, current, change, codec)
        if name is not None and name != current:
            written.append(self.manifests.path(name))
        return name

    def _overwrite_targets(
        self, spec: OverwriteSpec, new_entries: list[ManifestEntry], live: list[ManifestEntry], schema: TableSchema
    ) -> set[bytes] | None:
        if spec.mode == "all":
            return None
        if spec.mode == "dynamic":
            return {e.partition for e in new_entries}
        if spec.partition_spec is not None:
            names = [f.name for f in schema.partition_fields]
            types = [f.type for f in schema.partition_fields]
            wanted = spec.partition_spec
            out = set(spec.partitions)
            for raw in {e.partition for e in live}:
                values = dict(zip(names, deserialize_row(raw, types)))
                if all(values.get(k) == v for k, v in wanted.items()):
                    out.add(raw)
            for e in new_entries:
                values = dict(zip(names, deserialize_row(e.partition, types)))
                if not all(values.get(k) == v for k, v in wanted.items()):
                    raise CommitError(
                        f"Static overwrite of partition {wanted} got rows for partition {values}. Write only rows "
                        "of the overwritten partition, or use dynamic partition overwrite."
                    )
            return out
        return set(spec.partitions)

    def _check_deletes(self, delta: list[ManifestEntry], live: list[ManifestEntry]) -> None:
        live_ids = {e.identifier for e in live}
        added = {e.identifier for e in delta if e.kind == KIND_ADD}
        deleted: set[tuple] = set()
        for e in delta:
            if e.kind == KIND_DELETE:
                if e.identifier not in live_ids:
                    raise CommitConflictError(
                        f"File {e.file.file_name} (bucket {e.bucket}) is no longer live: a concurrent commit removed "
                        "it. Nothing was committed; re-run the operation."
                    )
                if e.identifier in added:
                    raise CommitError(f"File {e.file.file_name} is both added and deleted in one commit.")
                # A second DELETE would outlive the ADD it cancels and make every later read of the table fail.
                if e.identifier in deleted:
                    raise CommitError(
                        f"File {e.file.file_name} (bucket {e.bucket}) is deleted twice in one commit (compaction "
                        "inputs inside an overwritten partition?). Commit the compaction and the overwrite separately."
                    )
                deleted.add(e.identifier)

    def _check_level_overlaps(self, delta: list[ManifestEntry], live: list[ManifestEntry], schema: TableSchema) -> None:
        """Each level >= 1 of a primary-key bucket is one sorted run: after this commit its files must not
        overlap in key (Java's "LSM conflicts detected"). Two compactions planned on the same snapshot would
        otherwise both put their outputs into one level. Only buckets this commit adds level >= 1 files to are
        checked."""
        touched = {(e.partition, e.bucket, e.file.level) for e in delta if e.kind == KIND_ADD and e.file.level > 0}
        if not touched:
            return
        deleted = {e.identifier for e in delta if e.kind == KIND_DELETE}
        runs: dict[tuple[bytes, int, int], list[DataFileMeta]] = {}
        for e in [*live, *(d for d in delta if d.kind == KIND_ADD)]:
            key = (e.partition, e.bucket, e.file.level)
            if key in touched and e.identifier not in deleted:
                runs.setdefault(key, []).append(e.file)
        types = [f.type for f in schema.trimmed_primary_key_fields]

        def decoded(raw: bytes) -> tuple:
            return tuple((v is not None, v) for v in deserialize_row(raw, types))

        for (_, bucket, level), files in runs.items():
            ranged = sorted((decoded(f.min_key), decoded(f.max_key), f.file_name) for f in files)
            for (_, prev_max, prev), (lo, _, name) in zip(ranged, ranged[1:]):
                if lo <= prev_max:
                    raise CommitConflictError(
                        f"Files {prev} and {name} of bucket {bucket} would overlap in key at level {level} (a "
                        "concurrent compaction wrote to the same level). Nothing was committed; re-run the "
                        "compaction."
                    )

    def _check_bucket_counts(
        self, new_entries: list[ManifestEntry], base: list[ManifestFileMeta], schema: TableSchema
    ) -> None:
        """Every partition keeps the bucket count it was written with. Only manifests whose partition statistics
        may hold a written partition are read (as Java reads only the changed partitions' entries): a commit
        into a few partitions of a large table must not fold the whole table's manifests.

        Entries without a positive bucket count (unaware, dynamic-bucket and ``bucket-postpone`` files, which
        Java records with the table's ``bucket`` option, -1 or -2) are left out on both sides, as in Java's
        ``checkBucketKeepSame``: a postpone table's partition holds postpone files beside its real buckets."""
        wanted = {e.partition: e.total_buckets for e in new_entries if e.total_buckets > 0}
        if not wanted:
            return
        relevant = manifests_with_partitions(base, wanted, schema)
        # Only live files count: files an earlier overwrite removed may have had the old bucket count. A DELETE
        # and the ADD it cancels are in the same partition, so pruning by partition keeps both; the other
        # partitions' entries of a manifest spanning many (a merged one) are skipped without being decoded.
        entries, _ = self.manifests.select_entries(relevant, wanted.__contains__)
        for e in merge_entries(entries):
            expect = wanted.get(e.partition)
            if expect is not None and e.kind == KIND_ADD and e.total_buckets > 0 and e.total_buckets != expect:
                raise CommitError(
                    f"A partition of {self.table_path} was written with {e.total_buckets} buckets but this write "
                    f"uses {expect}. Overwrite the partition to change its bucket count."
                )

    def _write_manifests(
        self, entries: list[ManifestEntry], schema: TableSchema, written: list[str]
    ) -> list[ManifestFileMeta]:
        """Write manifest files in the table's ``manifest.compression``, rolled at ``manifest.target-file-size``."""
        opts = schema.core_options
        metas = self.manifests.write_manifests(
            entries,
            schema.id,
            lambda chunk: partition_stats((e.partition for e in chunk), schema),
            codec=avro_codec(opts.get(MANIFEST_COMPRESSION)),
            target_size=opts.get(MANIFEST_TARGET_FILE_SIZE),
        )
        written.extend(self.manifests.path(m.file_name) for m in metas)
        return metas

    def _maybe_compact_manifests(
        self, base: list[ManifestFileMeta], schema: TableSchema, written: list[str]
    ) -> list[ManifestFileMeta]:
        """Merge manifests the way Java's commit does (its legacy merger), so planning stays fast and a large
        table's full manifests are not rewritten on every merge:

        * *full compaction*, once the manifests that are small (below ``manifest.target-file-size``) or hold
          DELETE entries add up to ``manifest.full-compaction-threshold-size``: every such manifest, and every
          full one holding a file that is deleted, is rewritten into new manifests without the deleted files
          (no DELETE entries are left); the other full manifests are kept as they are;
        * otherwise a *minor* merge: walking the list in order, each run of manifests that reaches the target
          size is merged into new manifests, and the trailing run is merged once it counts
          ``manifest.merge-min-count`` manifests. ADD and DELETE entries of one file cancel inside a run; a
          DELETE whose ADD is in an earlier manifest is kept.

        Merged output is sorted by partition and bucket (an order of ours, which Java's readers do not depend
        on), so that rolled files' partition statistics prune well. The old manifests stay on disk (older
        snapshots and tags reference them); expiration removes them.
        """
        opts = schema.core_options
        target = opts.get(MANIFEST_TARGET_FILE_SIZE)
        full = self._full_manifest_compaction(
            base, schema, written, target, opts.get(MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE)
        )
        if full is not None:
            return full
        result: list[ManifestFileMeta] = []
        run: list[ManifestFileMeta] = []
        size = 0
        for m in base:
            run.append(m)
            size += m.file_size
            if size >= target:
                result += self._merge_run(run, schema, written)
                run, size = [], 0
        result += self._merge_run(run, schema, written) if len(run) >= self.merge_min_count else run
        return result

    def _merge_run(
        self, run: list[ManifestFileMeta], schema: TableSchema, written: list[str]
    ) -> list[ManifestFileMeta]:
        if len(run) < 2:
            return list(run)
        merged = merge_entries(self.manifests.read_entries(run))
        if not merged:
            return []
        merged.sort(key=lambda e: (e.partition, e.bucket))
        return self._write_manifests(merged, schema, written)

    def _full_manifest_compaction(
        self, base: list[ManifestFileMeta], schema: TableSchema, written: list[str], target: int, threshold: int
    ) -> list[ManifestFileMeta] | None:
        """Java's full manifest compaction (see :meth:`_maybe_compact_manifests`); None when it does not apply."""

        def must_change(m: ManifestFileMeta) -> bool:
            return m.num_deleted_files > 0 or m.file_size < target

        if sum(m.file_size for m in base if must_change(m)) < threshold:
            return None
        deleted = {
            e.identifier
            for m in base
            if m.num_deleted_files > 0
            for e in self.manifests.read_manifest(m.file_name)
            if e.kind == KIND_DELETE
        }
        deleted_partitions = {ident[0] for ident in deleted}
        kept: list[ManifestFileMeta] = []
        candidates: list[ManifestFileMeta] = []
        for m in base:
            if must_change(m) or (deleted and manifests_with_partitions([m], deleted_partitions, schema)):
                candidates.append(m)
            else:
                kept.append(m)
        if len(candidates) <= 1:
            return None
        survivors: list[ManifestEntry] = []
        for m in candidates:
            adds = [e for e in self.manifests.read_manifest(m.file_name) if e.kind == KIND_ADD]
            live = [e for e in adds if e.identifier not in deleted]
            if must_change(m) or len(live) != len(adds):
                survivors += live
            else:
                kept.append(m)
        if not survivors:
            return kept
        survivors.sort(key=lambda e: (e.partition, e.bucket))
        return kept + self._write_manifests(survivors, schema, written)

    def _sleep(self, attempt: int) -> None:
        wait = min(self.max_wait_ms, self.min_wait_ms * (2**attempt))
        time.sleep((wait + random.uniform(0, wait)) / 2000.0)

    def _delete_quietly(self, paths: Iterable[str]) -> None:
        for p in paths:
            try:
                self.fileio.delete(p)
            except OSError:  # pragma: no cover - best effort, orphan cleanup is the safety net
                log.warning("could not delete %s", p)
