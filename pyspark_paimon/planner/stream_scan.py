"""Streaming reads: where a stream starts, what each snapshot contributes, and how far a micro-batch goes.

A stream walks one branch's snapshots in order. :class:`StreamPlanner` plans it: where a new stream starts
(:meth:`~StreamPlanner.initial_offset`), the splits each snapshot contributes in its phase, how a rewritten
history becomes a ``diff``, and which splits a micro-batch reads (:meth:`~StreamPlanner.next_batch`,
:meth:`~StreamPlanner.splits_between`). Its positions and units are in
:mod:`pyspark_paimon.planner.stream_offset`, its options in :mod:`pyspark_paimon.planner.stream_options`, the
read limits and task packing of a micro-batch in :mod:`pyspark_paimon.planner.micro_batch`, and a chain table's
start in :mod:`pyspark_paimon.planner.chain.stream_start`.

What each snapshot contributes (Paimon's streaming semantics, ``DeltaFollowUpScanner``):

* ``full``: the whole content of the start snapshot (``latest-full``, ``from-snapshot-full``, a tag), read as a
  batch read does (merged, one row per key), every row an insert (+I);
* ``chain``: the start of a stream of a chain table (:mod:`pyspark_paimon.planner.chain.stream_start`), read
  like ``full``; the stream then walks the delta branch's snapshots;
* ``delta``: the data files an ``APPEND`` snapshot added, one split per file, read **without merging** and
  keeping each row's kind (+I/-U/+U/-D), as Paimon's streaming splits are; ``COMPACT`` and ``ANALYZE``
  snapshots add no new rows and are skipped; ``OVERWRITE`` snapshots are skipped unless
  ``streaming-read-overwrite`` is on (primary-key tables: a ``diff``) or, on an append table,
  ``streaming-read-append-overwrite`` (the files it added, inserts only: rows it removed are not retracted);
* ``diff``: the change between two states of a bucket, merged on each side and compared by key: keys only
  before are deletes (-D), keys only after or whose row changed are inserts (+I), unchanged keys are nothing
  (Java's ``IncrementalDiffSplitRead``). Overwrites read this way (their DELETE entries are the bucket's state
  before, their ADD entries the state after), and so does a **rewritten history**: when the snapshot a stream
  last consumed was replaced (``fast_forward``, ``replace_main``, ``rollback_to``), the stream diffs the state
  it had consumed (kept in its offset as the snapshot's manifest lists) against the new head, then goes on
  with the new history. A downstream job that applies the row kinds therefore ends with exactly the new state.
  A consumed snapshot that merely expired (a consumer keeps the next snapshot, not it) is no rewrite: the next
  snapshot was committed on its state, whether or not expiration has deleted its manifest lists yet.
  For append tables a diff is the removed files' rows as -D and the added files' rows as +I. A rewrite can
  land at any moment, also after Spark fixed a micro-batch's range (``latestOffset``) and before it plans it
  (``partitions``): that batch is then the change from its start's state to the state its end offset records
  (both read from manifest lists, which rewrites keep), and the next batch diffs that state to the new head.
  One case stays an error: a batch that starts in the middle of a snapshot (a ``read.stream.max*PerTrigger``
  limit split it) and whose range was rewritten, since the state it started from is not known.

**Tables with a changelog producer** (``changelog-producer`` = ``input``, ``full-compaction`` or ``lookup`` on a
primary-key table) are streamed as Java's ``ChangelogFollowUpScanner`` streams them: the ``delta`` of a snapshot
is the changelog files its changelog manifest list names (APPEND snapshots for ``input``, COMPACT snapshots for
the compaction producers), read as stored with their row kinds (``-U`` before-images included); snapshots without
a changelog add nothing. Their ``full`` scan reads, as Java's first plan does, only the files a later changelog
will not report again: levels above 0 for ``lookup``, the top level for ``full-compaction``. A snapshot that
expired while its changelog was kept (Paimon's ``changelog/changelog-N`` files, written by Java with a separate
``changelog.*`` retention) is read from that file.

A stream never skips data silently: a snapshot it must read that has expired is an error naming the snapshot
and the way out (consumers, :mod:`pyspark_paimon.metadata.snapshots.consumers`, keep a running stream's snapshots).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from pyspark_paimon.errors import CorruptMetadataError, OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, KIND_DELETE, ManifestEntry, live_files
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    CONSUMER_ID,
    CONSUMER_IGNORE_PROGRESS,
    CONSUMER_MODE,
    FULL_COMPACTION_DELTA_COMMITS,
    STREAMING_READ_APPEND_OVERWRITE,
    STREAMING_READ_OVERWRITE,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager, check_consumer_id
from pyspark_paimon.metadata.snapshots.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import chain_read_config
from pyspark_paimon.planner.chain.stream_start import ChainStreamStart, refuse_chain_stream_options
from pyspark_paimon.planner.micro_batch import Admission
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.row_ranges import refuse_data_evolution
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.selection import Selection, selection_of
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_offset import Consumed, StreamOffset, StreamSplit
from pyspark_paimon.planner.stream_options import StreamOptions, parse_consumer_mode

__all__ = ["StreamPlanner", "CHANGELOG_PRODUCERS"]

#: The changelog producers whose changelog files a stream reads instead of the data files (Java's
#: ``DataTableStreamScan.createFollowUpScanner``).
CHANGELOG_PRODUCERS = ("input", "full-compaction", "lookup")


class StreamPlanner:
    """Plans one stream of one branch (the driver side; Spark-free). See the module docstring."""

    def __init__(self, store: FileStore, opts: StreamOptions, schema: TableSchema | None = None):
        # A chain table streams its start (both branches), then its delta branch (module docstring).
        cfg = chain_read_config(store)
        self.chain: ChainStreamStart | None = None
        if cfg is not None:
            assert cfg.delta_branch is not None
            main_schema = schema or store.schema()
            refuse_chain_stream_options(store, cfg, opts, main_schema)
            self.chain = ChainStreamStart.of(store, cfg, main_schema, opts.merge_snapshot)
            store, schema = store.with_branch(cfg.delta_branch), None
        self.store = store
        self.opts = opts
        self.schema = schema or store.schema()
        refuse_data_evolution(self.schema, store.table_path, "a stream (or a diff)")
        self.tags = TagManager(store)
        table = self.schema.core_options  # the table's options are the defaults of its streams (as in Java)
        self.read_overwrite = (
            opts.read_overwrite if opts.read_overwrite is not None else table.get(STREAMING_READ_OVERWRITE)
        )
        self.read_append_overwrite = not self.schema.primary_keys and (
            opts.read_append_overwrite
            if opts.read_append_overwrite is not None
            else table.get(STREAMING_READ_APPEND_OVERWRITE)
        )
        #: The changelog producer whose changelog files this stream follows (None: the data files).
        producer = table.get(CHANGELOG_PRODUCER)
        self.producer: str | None = producer if self.schema.primary_keys and producer in CHANGELOG_PRODUCERS else None
        self._max_level = table.num_levels - 1
        table_consumer = table.get(CONSUMER_ID)
        if opts.consumer_id is None and table_consumer:
            self.opts = opts = replace(
                opts,
                consumer_id=check_consumer_id(table_consumer),
                ignore_consumer_progress=opts.ignore_consumer_progress or table.get(CONSUMER_IGNORE_PROGRESS),
            )
        if opts.consumer_mode is None:
            self.opts = opts = replace(opts, consumer_mode=parse_consumer_mode(table.get(CONSUMER_MODE)))
        # 'scan.partitions' / 'filter': partitions pruned exactly in every phase; rows filtered by the executor
        # context's residual (StreamReadJob.context).
        self.selection: Selection = selection_of(
            ReadOptions(scan_partitions=opts.scan_partitions, filter=opts.filter), self.schema
        )
        self._partitions = self.selection.partition_filter()
        if self.read_overwrite and self.producer in ("full-compaction", "lookup"):
            raise OptionError(
                f"'streaming-read-overwrite' cannot be used on {store.table_path}, whose '{CHANGELOG_PRODUCER.key}' is "
                f"'{self.producer}': the compaction after an overwrite reports its changes again in the changelog, "
                "so the stream would read them twice (Paimon refuses the same). Drop 'streaming-read-overwrite'."
            )
        if self.read_overwrite and not self.schema.primary_keys:
            raise OptionError(
                f"'streaming-read-overwrite' needs a primary-key table ({store.table_path} has none), as in Paimon: "
                "the changes of an overwrite are computed by key. For an append table, "
                "'streaming-read-append-overwrite' = 'true' streams the rows an overwrite adds."
            )

    # -- where a stream starts ------------------------------------------------------------------
    def initial_offset(self) -> StreamOffset:
        """Where a new stream (no checkpoint) starts: the consumer's progress, else ``scan.mode``."""
        snapshots = self.store.snapshots
        if self.opts.consumer_id and not self.opts.ignore_consumer_progress:
            nxt = ConsumerManager(self.store).next_snapshot(self.opts.consumer_id)
            if nxt is not None:
                return self._delta_from(nxt)
        mode = self.opts.mode
        if self.chain is not None:
            pinned, delta = self.chain.pin()
            return StreamOffset(delta or 0, -1, "chain", pinned=pinned)
        latest = snapshots.latest()
        if mode == "latest-full":
            return StreamOffset(latest.id, -1, "full") if latest is not None else StreamOffset(1)
        if mode == "compacted-full":
            compacted = self._latest_compacted()
            start = compacted if compacted is not None else latest
            return StreamOffset(start.id, -1, "full") if start is not None else StreamOffset(1)
        if mode == "latest":
            return (
                StreamOffset(latest.id + 1, -1, "delta", Consumed.of(latest)) if latest is not None else StreamOffset(1)
            )
        if mode == "from-snapshot-full":
            assert self.opts.snapshot_id is not None
            find_snapshot(snapshots, self.tags, self.opts.snapshot_id)  # a clear error when it does not exist
            return StreamOffset(self.opts.snapshot_id, -1, "full")
        if mode == "from-tag":
            assert self.opts.tag_name is not None
            return StreamOffset(self.tags.get(self.opts.tag_name).id, -1, "full")
        if mode == "from-snapshot":
            assert self.opts.snapshot_id is not None
            return self._delta_from(self.opts.snapshot_id)
        assert mode == "from-timestamp" and self.opts.timestamp_millis is not None
        # Java: the changes of every snapshot committed at or after the instant.
        before = snapshots.earlier_or_equal_time_millis(self.opts.timestamp_millis - 1)
        if before is not None:
            return StreamOffset(before.id + 1, -1, "delta", Consumed.of(before))
        earliest = snapshots.earliest_id()
        return StreamOffset(earliest if earliest is not None else 1)

    def _latest_compacted(self) -> Snapshot | None:
        """``scan.mode = compacted-full`` (Java's ``FullCompactedStartingScanner`` / ``CompactedStartingScanner``):
        the newest COMPACT snapshot, and for ``full-compaction`` producers or tables with
        ``full-compaction.delta-commits`` one whose commit identifier marks a full compaction (a multiple of the
        delta commits, or a batch commit's); None when there is none (the stream then starts at the latest)."""
        table = self.schema.core_options
        delta = table.get(FULL_COMPACTION_DELTA_COMMITS)
        full_only = self.producer == "full-compaction" or delta is not None
        every = delta if delta else 1
        snapshots = self.store.snapshots
        latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
        if latest is None or earliest is None:
            return None
        for sid in range(latest, earliest - 1, -1):
            try:
                snapshot = snapshots.snapshot(sid)
            except SnapshotNotFoundError:  # expired while we look: nothing older is left either
                return None
            if snapshot.commit_kind != "COMPACT":
                continue
            ident = snapshot.commit_identifier
            if not full_only or ident % every == 0 or ident == BATCH_COMMIT_IDENTIFIER:
                return snapshot
        return None

    def _delta_from(self, snapshot_id: int) -> StreamOffset:
        snapshots = self.store.snapshots
        latest = snapshots.latest_id()
        if latest is not None and snapshot_id <= latest:
            self._snapshot_for_delta(snapshot_id)  # an expired start is an error, not a silent later start
        prev = snapshot_id - 1
        consumed = Consumed.of(snapshots.snapshot(prev)) if prev >= 1 and snapshots.exists(prev) else None
        return StreamOffset(snapshot_id, -1, "delta", consumed)

    # -- what each snapshot contributes -----------------------------------------------------------
    def _snapshot_for_delta(self, snapshot_id: int) -> Snapshot:
        snapshots = self.store.snapshots
        if snapshots.exists(snapshot_id):
            return snapshots.snapshot(snapshot_id)
        if self.producer is not None:
            kept = self._long_lived_changelog(snapshot_id)
            if kept is not None:
                return kept
        earliest = snapshots.earliest_id()
        raise SnapshotNotFoundError(
            f"Streaming read of branch '{self.store.branch}' of {self.store.table_path}: snapshot {snapshot_id}, the "
            f"next one this stream must read, has expired (earliest snapshot: {earliest}), so the changes it made "
            "are gone and continuing would silently skip them. Start the query again with a new checkpoint location "
            "(from a tag with 'scan.tag-name', or 'scan.mode' = 'latest-full'), and give a long-running stream "
            "option 'consumer-id' so that expiration keeps the snapshots it still needs."
        )

    def _long_lived_changelog(self, snapshot_id: int) -> Snapshot | None:
        """The ``changelog/changelog-N`` file Java keeps for an expired snapshot whose changelog is retained
        longer (Paimon's decoupled changelog); None when there is none."""
        path = f"{self.store.branch_root}/changelog/changelog-{snapshot_id}"
        try:
            text = self.store.fileio.read_text(path)
        except FileNotFoundError:
            return None
        return Snapshot.from_json(text, path)

    def _full_splits(self, snapshot: Snapshot) -> list[StreamSplit]:
        plan = ScanPlanner(self.store, self.schema, {}, streaming=True).plan(
            snapshot, partition_filter=self._partitions
        )
        splits = plan.splits
        if self.producer in ("lookup", "full-compaction"):
            # Java's first plan of a stream skips the files a later compaction will report as changelog.
            keep = (lambda lvl: lvl > 0) if self.producer == "lookup" else (lambda lvl: lvl == self._max_level)
            kept = []
            for s in splits:
                files = tuple(f for f in s.files if keep(f.level))
                if files:
                    kept.append(s if len(files) == len(s.files) else replace(s, files=files, raw_convertible=False))
            splits = kept
        return [StreamSplit(snapshot.id, i, "full", s) for i, s in enumerate(splits)]

    def _entries_splits(self, entries: Iterable[ManifestEntry], index_manifest: str | None = None) -> list[DataSplit]:
        planner = ScanPlanner(self.store, self.schema, {}, pk_value_skipping=False, streaming=True)
        splits = planner.plan_entries(entries, partition_filter=self._partitions).splits
        return planner.with_deletion_files(splits, index_manifest)

    def _delta_splits(self, snapshot: Snapshot) -> list[StreamSplit]:
        kind = snapshot.commit_kind
        if kind == "OVERWRITE" and self.read_overwrite:
            delta = self.store.manifests.read_entries(self.store.manifests.read_list(snapshot.delta_manifest_list))
            before = [replace(e, kind=KIND_ADD) for e in delta if e.kind == KIND_DELETE]
            after = [e for e in delta if e.kind == KIND_ADD]
            parent = snapshot.id - 1
            previous = self.store.snapshots.snapshot(parent) if self.store.snapshots.exists(parent) else None
            vectors = (previous.index_manifest if previous is not None else None, snapshot.index_manifest)
            return self._diff(snapshot.id, before, after, vectors)
        if self.producer is not None:
            if not snapshot.changelog_manifest_list:
                return []  # Java's ChangelogFollowUpScanner: a snapshot without changelog adds nothing
            delta = self._changelog_entries(snapshot)
        elif kind != "APPEND" and not (kind == "OVERWRITE" and self.read_append_overwrite):
            # COMPACT/ANALYZE add no rows; OVERWRITE only with streaming-read-overwrite (primary-key tables: its
            # change by key) or streaming-read-append-overwrite (append tables: the rows it adds, as in Java)
            return []
        else:
            delta = self.store.manifests.read_entries(self.store.manifests.read_list(snapshot.delta_manifest_list))
        splits = self._entries_splits(e for e in delta if e.kind == KIND_ADD)
        # One split per file: the files are read as they are (no merge), so a big commit can be admitted piecewise.
        per_file = [replace(s, files=(f,), raw_convertible=True) for s in splits for f in s.files]
        return [StreamSplit(snapshot.id, i, "delta", s) for i, s in enumerate(per_file)]

    def _changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        """The entries of ``snapshot``'s changelog manifests; a clear error when they were deleted."""
        assert snapshot.changelog_manifest_list is not None
        ms = self.store.manifests
        try:
            return ms.read_entries(ms.read_list(snapshot.changelog_manifest_list))
        except (FileNotFoundError, CorruptMetadataError) as exc:
            if isinstance(exc, CorruptMetadataError) and self.store.fileio.exists(
                ms.path(snapshot.changelog_manifest_list)
            ):
                raise  # there but unreadable: the corruption error says what to do
            raise SnapshotNotFoundError(
                f"Streaming read of branch '{self.store.branch}' of {self.store.table_path}: the changelog of snapshot "
                f"{snapshot.id} ('{CHANGELOG_PRODUCER.key}' = '{self.producer}') is gone ({exc}): it expired, so the "
                "changes it recorded cannot be streamed. Start the query again with a new checkpoint location, and "
                "give a long-running stream option 'consumer-id' so that expiration keeps what it still needs."
            ) from exc

    def _consumed_state(self, consumed: Consumed) -> list[ManifestEntry]:
        """The live files of the state ``consumed`` records, read from its manifest lists (its snapshot file may
        be gone)."""
        ms = self.store.manifests
        metas = ms.read_list(consumed.base_manifest_list) + ms.read_list(consumed.delta_manifest_list)
        return live_files(ms.read_entries(metas), f"the consumed state (snapshot {consumed.snapshot_id})")

    def _holds(self, consumed: Consumed) -> bool:
        """Whether the branch still holds the snapshot ``consumed`` identifies (so its metadata must be there)."""
        snapshots = self.store.snapshots
        try:
            return snapshots.exists(consumed.snapshot_id) and consumed.matches(snapshots.snapshot(consumed.snapshot_id))
        except SnapshotNotFoundError:
            return False

    def _state_entries(self, consumed: Consumed) -> list[ManifestEntry]:
        try:
            return self._consumed_state(consumed)
        except (CorruptMetadataError, SnapshotNotFoundError) as exc:
            # A missing list or manifest of a snapshot the branch no longer holds is no corruption: expiration
            # deleted it (after the snapshot file, so possibly while this stream was looking).
            if isinstance(exc, CorruptMetadataError) and self._holds(consumed):
                raise
            raise SnapshotNotFoundError(
                f"The history of branch '{self.store.branch}' of {self.store.table_path} was rewritten (fast-forward, "
                f"replace or rollback) after this stream consumed snapshot {consumed.snapshot_id}, and the metadata "
                f"of what it consumed is gone ({exc}): that snapshot expired, so the stream cannot compute the change "
                "to the new history. Start the query again with a new checkpoint location, and give a long-running "
                "stream option 'consumer-id' so that expiration keeps the snapshots it still needs."
            ) from exc

    def _continues(self, consumed: Consumed, following: Snapshot) -> bool:
        """Whether ``following`` was committed on the state ``consumed`` records: the state its base manifest list
        holds (the files of the snapshot it was committed on) is that state. True as well when the consumed
        state can no longer be read: expiration deletes an expired snapshot's metadata (a rewrite never does),
        so the snapshot expired normally and, as in Java, the next snapshot decides."""
        try:
            before = self._consumed_state(consumed)
        except CorruptMetadataError:
            return True
        ms = self.store.manifests
        try:
            base = ms.read_entries(ms.read_list(following.base_manifest_list))
            after = live_files(base, f"the state snapshot {following.id} was committed on")
        except CorruptMetadataError:
            return True  # it expired meanwhile too: reading it says so
        return {e.identifier for e in before} == {e.identifier for e in after}

    def diff_splits(
        self, snapshot_id: int, before: Iterable[ManifestEntry], after: Iterable[ManifestEntry]
    ) -> list[StreamSplit]:
        """The "diff" splits from the live files ``before`` to ``after`` (also ``Table.diff``'s plan): per bucket
        of a primary-key table whose file names differ, the bucket on both sides; per file of an append table
        that only one side holds, that file. Buckets and files both sides share are never read."""
        return self._diff(snapshot_id, before, after)

    def _diff(
        self,
        snapshot_id: int,
        before: Iterable[ManifestEntry],
        after: Iterable[ManifestEntry],
        vectors: tuple[str | None, str | None] = (None, None),
    ) -> list[StreamSplit]:
        """``vectors``: the index manifests of the two states, whose deletion vectors each side's files are read
        with (a primary-key table's rows a vector deleted must not merge again)."""
        b = self._entries_splits(before, vectors[0])
        a = self._entries_splits(after, vectors[1])
        if self.schema.primary_keys:
            by_bucket_b = {(s.partition, s.bucket): s for s in b}
            by_bucket_a = {(s.partition, s.bucket): s for s in a}
            pairs = []
            for key in {**by_bucket_b, **by_bucket_a}:
                sb, sa = by_bucket_b.get(key), by_bucket_a.get(key)
                names_b = {f.file_name for f in sb.files} if sb else set()
                names_a = {f.file_name for f in sa.files} if sa else set()
                if names_b != names_a:
                    pairs.append((sb, sa))
        else:
            names_b = {s.files[0].file_name for s in b}
            names_a = {s.files[0].file_name for s in a}
            pairs = [(s, None) for s in b if s.files[0].file_name not in names_a]
            pairs += [(None, s) for s in a if s.files[0].file_name not in names_b]

        def order(pair: tuple[DataSplit | None, DataSplit | None]) -> tuple:
            s = pair[0] or pair[1]
            assert s is not None
            return repr(s.partition_values), s.bucket, s.files[0].file_name if s.files else "", pair[0] is None

        pairs.sort(key=order)
        return [StreamSplit(snapshot_id, i, "diff", sa, sb) for i, (sb, sa) in enumerate(pairs)]

    def _phase_splits(self, pos: StreamOffset) -> tuple[Snapshot | None, list[StreamSplit]]:
        if pos.phase == "chain":
            if self.chain is None:
                raise OptionError(
                    f"The streaming offset {pos.to_dict()} is the start of a chain table's stream, but "
                    f"{self.store.table_path} is not read as a chain table. Start the query with a new checkpoint "
                    "location."
                )
            delta = pos.snapshot if pos.snapshot > 0 else None
            snapshot = self.store.snapshots.snapshot(delta) if delta is not None else None
            splits = self.chain.splits(pos.pinned, delta)
            return snapshot, [StreamSplit(pos.snapshot, i, "chain", s) for i, s in enumerate(splits)]
        if pos.phase == "full":
            snapshot = find_snapshot(self.store.snapshots, self.tags, pos.snapshot)
            return snapshot, self._full_splits(snapshot)
        if pos.phase == "diff":
            snapshot = self.store.snapshots.snapshot(pos.snapshot)
            before = self._state_entries(pos.consumed) if pos.consumed is not None else []
            vectors = (pos.consumed.index_manifest if pos.consumed is not None else None, snapshot.index_manifest)
            return snapshot, self._diff(snapshot.id, before, self.store.live_entries(snapshot), vectors)
        snapshot = self._snapshot_for_delta(pos.snapshot)
        return snapshot, self._delta_splits(snapshot)

    @staticmethod
    def _past(pos: StreamOffset, snapshot: Snapshot | None) -> StreamOffset:
        """The position after every split of ``pos``'s scan of ``snapshot`` (None: a chain start pinned before
        the delta branch's first commit, which comes next)."""
        return pos.after(snapshot) if snapshot is not None else StreamOffset(max(pos.snapshot, 0) + 1)

    # -- history rewrites ---------------------------------------------------------------------------
    def _replaced(self, consumed: Consumed) -> bool:
        """Whether the snapshot ``consumed`` identifies was replaced since (fast-forward, replace, rollback):
        its id now holds another commit, or it is gone from the middle, from beyond a head that moved back, or
        from below a history that now starts later. A snapshot that expired normally was not replaced."""
        snapshots = self.store.snapshots
        sid = consumed.snapshot_id
        try:
            current = snapshots.snapshot(sid) if snapshots.exists(sid) else None
        except SnapshotNotFoundError:  # deleted between the two looks
            current = None
        if current is not None:
            return not consumed.matches(current)
        earliest = snapshots.earliest_id()
        latest = snapshots.latest_id()
        if earliest is not None and latest is not None and sid < earliest:
            # Below the earliest snapshot: expired normally (a consumer keeps its next snapshot, not this one), or
            # replaced by a history that starts later (replace_main with a branch forked after it). Whether its
            # manifest lists are still there does not tell them apart: expiration deletes them only after the
            # snapshot file (a stream may look in between), and a tag or branch keeps them. The next snapshot
            # does: a normal history committed it on the consumed state.
            try:
                following = snapshots.snapshot(sid + 1) if snapshots.exists(sid + 1) else None
            except SnapshotNotFoundError:
                following = None
            if following is not None:
                return not self._continues(consumed, following)
            # The next snapshot is gone too: a history that starts later (the lists are kept to diff from), or a
            # stream that fell behind expiration (the delta phase's error says so).
            ms = self.store.manifests
            return all(
                self.store.fileio.exists(ms.path(name))
                for name in (consumed.base_manifest_list, consumed.delta_manifest_list)
            )
        return True

    def rewritten(self, pos: StreamOffset) -> bool:
        """Whether the snapshot ``pos`` consumed last was replaced since (fast-forward, replace, rollback)."""
        if pos.phase != "delta" or pos.consumed is None:
            return False
        return self._replaced(pos.consumed)

    def _offset_state(self, pos: StreamOffset, end: StreamOffset) -> list[ManifestEntry]:
        """The live files of the state a stream has materialised at ``pos``, from manifest lists only (the
        snapshot files may be gone): nothing before a ``full`` scan, else the consumed state."""
        if pos.index != -1:
            raise SnapshotNotFoundError(
                f"The history of branch '{self.store.branch}' of {self.store.table_path} was rewritten (fast-forward, "
                f"replace or rollback) under the micro-batch ({pos.to_dict()}, {end.to_dict()}], which starts in the "
                f"middle of snapshot {pos.snapshot} (a read.stream.max*PerTrigger limit split it), so the state the "
                "stream had reached is unknown. Start the query again with a new checkpoint location."
            )
        if pos.phase == "full" or pos.consumed is None:
            # Nothing consumed yet (or a stream that started after a snapshot it never saw): the stream's state
            # is what it emitted, on top of nothing.
            return []
        return self._state_entries(pos.consumed)

    def _state_change(self, start: StreamOffset, end: StreamOffset) -> list[StreamSplit]:
        """The micro-batch (start, end] planned before a rewrite replaced the snapshots it covers: the change
        from the state at ``start`` to the state ``end`` records (both from their manifest lists), so that after
        it the stream holds exactly ``end``'s state, as its offset says, and the next batch diffs that state
        against the new head like any rewrite."""
        assert end.consumed is not None
        return self._diff(end.consumed.snapshot_id, self._offset_state(start, end), self._state_entries(end.consumed))

    def _rewrite_start(self, pos: StreamOffset, target: int | None) -> StreamOffset:
        latest = self.store.snapshots.latest_id() if target is None else target
        if latest is None:
            raise SnapshotNotFoundError(
                f"Branch '{self.store.branch}' of {self.store.table_path} has no snapshot any more, after this stream "
                f"consumed snapshot {pos.consumed.snapshot_id if pos.consumed else '?'}. Start the query again with a "
                "new checkpoint location."
            )
        return StreamOffset(latest, -1, "diff", pos.consumed)

    # -- micro-batches ------------------------------------------------------------------------------
    def next_batch(
        self, start: StreamOffset, admission: Admission | None = None, stop_at: int | None = None
    ) -> tuple[list[StreamSplit], StreamOffset]:
        """The splits after ``start`` that the next micro-batch reads, and the offset it ends at.

        ``stop_at`` (Trigger.AvailableNow) leaves snapshots above it for later. A rewritten history ends the
        batch after its diff, so that :meth:`splits_between` can tell the diff's target from the end offset.
        """
        admission = admission or Admission()
        # consumer.mode = exactly-once: a consumer records snapshot ids only, so a micro-batch that reads a
        # commit's changes reads all of them (the limits end batches at snapshot boundaries), and a restart from
        # the consumer neither skips nor repeats a row. at-least-once keeps the limits exact instead.
        whole = self.opts.consumer_id is not None and self.opts.consumer_mode != "at-least-once"
        pos = start
        diff_only = False
        if self.rewritten(pos):
            pos = self._rewrite_start(pos, None)
            diff_only = True
        out: list[StreamSplit] = []
        end = start
        latest = self.store.snapshots.latest_id()
        while True:
            if pos.phase == "delta" and (
                latest is None or pos.snapshot > latest or (stop_at is not None and pos.snapshot > stop_at)
            ):
                break
            snapshot, splits = self._phase_splits(pos)
            for s in splits:
                if s.index <= pos.index:
                    continue
                inside = end.snapshot == pos.snapshot and end.phase == pos.phase == "delta" and end.index >= 0
                if not admission.admit(s) and not (whole and inside):
                    return out, end
                out.append(s)
                end = replace(pos, index=s.index)
            pos = end = self._past(pos, snapshot)
            if diff_only:
                break
        return out, end

    def splits_between(self, start: StreamOffset, end: StreamOffset) -> list[StreamSplit]:
        """Exactly the splits in (start, end]: the same every time for the same pair (replays read the same).

        When the snapshot ``end`` records as consumed was replaced after the batch was fixed (a rewrite between
        Spark's ``latestOffset`` and ``partitions``, or before a replay), the batch is the change between the
        two offsets' states instead (:meth:`_state_change`): its snapshots may no longer exist.
        """
        if start == end:
            return []
        if end.phase == "delta" and end.index == -1 and end.consumed is not None and self._replaced(end.consumed):
            return self._state_change(start, end)
        pos = start
        if self.rewritten(pos):
            target = end.snapshot if end.phase == "diff" else end.snapshot - 1
            pos = self._rewrite_start(pos, target)
        out: list[StreamSplit] = []
        while not (pos.snapshot == end.snapshot and pos.phase == end.phase and pos.index >= end.index):
            if pos.snapshot > end.snapshot:
                raise SnapshotNotFoundError(
                    f"Cannot replay the micro-batch ({start.to_dict()}, {end.to_dict()}] of branch "
                    f"'{self.store.branch}' of {self.store.table_path}: the branch's history changed since the batch "
                    "was planned. Start the query again with a new checkpoint location."
                )
            snapshot, splits = self._phase_splits(pos)
            if pos.snapshot == end.snapshot and pos.phase == end.phase:
                out.extend(s for s in splits if pos.index < s.index <= end.index)
                break
            out.extend(s for s in splits if s.index > pos.index)
            pos = self._past(pos, snapshot)
        return out

    def consumer_next_snapshot(self, end: StreamOffset) -> int | None:
        """What a consumer may record after ``end`` was committed: the first snapshot not fully consumed, or
        None while a full or diff scan is unfinished (its snapshot cannot be resumed from a delta position)."""
        if end.phase != "delta":
            return None
        return end.snapshot
