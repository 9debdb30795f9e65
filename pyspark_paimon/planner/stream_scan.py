"""Streaming reads: where a stream starts, what each snapshot contributes, and how far a micro-batch goes.

A stream walks one branch's snapshots in order. Its position is a :class:`StreamOffset`: the snapshot it is in,
how many of that snapshot's splits it has consumed (``index``), which kind of scan that snapshot gets
(``phase``), and the identity of the last snapshot it consumed completely (``consumed``). Offsets are plain
JSON, so one large commit can span several micro-batches, and :meth:`StreamPlanner.splits_between` turns the
same (start, end) pair into the same splits every time, which is what lets Spark replay a batch.

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

from dataclasses import dataclass, replace
from typing import Any, Iterable, Literal, Mapping, Sequence

from pyspark_paimon.errors import ChainTableError, CorruptMetadataError, OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, KIND_DELETE, ManifestEntry, live_files
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot
from pyspark_paimon.metadata.schema.options import (
    CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT,
    CHANGELOG_PRODUCER,
    CONSUMER_ID,
    CONSUMER_IGNORE_PROGRESS,
    CONSUMER_MODE,
    FULL_COMPACTION_DELTA_COMMITS,
    STREAMING_READ_APPEND_OVERWRITE,
    STREAMING_READ_OVERWRITE,
    check_read_options,
    parse_memory_size,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager, check_consumer_id
from pyspark_paimon.metadata.snapshots.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import ChainConfig, chain_read_config
from pyspark_paimon.planner.chain.stream_start import ChainStreamStart
from pyspark_paimon.planner.predicate import tree_columns
from pyspark_paimon.planner.read_options import (
    FILTER_KEY,
    SCAN_PARTITIONS_KEY,
    STORAGE_PREFIX,
    STREAM_KEYS,
    STREAM_LIMIT_KEYS,
    ReadOptions,
    parse_timestamp_millis,
)
from pyspark_paimon.planner.scan import ScanPlanner, pack_weights, split_weight
from pyspark_paimon.planner.selection import Selection, selection_of
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "StreamOptions",
    "StreamOffset",
    "Consumed",
    "StreamSplit",
    "Admission",
    "StreamPlanner",
    "SCAN_MODES",
    "ROW_KIND_COLUMN",
    "task_groups",
]

Phase = Literal["full", "delta", "diff", "chain"]
PHASES = ("full", "delta", "diff", "chain")

#: Paimon's ``scan.mode`` values a stream accepts (``full`` is Paimon's deprecated name of ``latest-full``).
SCAN_MODES = (
    "default",
    "latest-full",
    "full",
    "latest",
    "compacted-full",
    "from-snapshot",
    "from-snapshot-full",
    "from-timestamp",
)
#: The row-kind column ``read.changelog`` adds in front of the table's columns (Paimon's ``$audit_log`` name).
ROW_KIND_COLUMN = "rowkind"
#: The changelog producers whose changelog files a stream reads instead of the data files (Java's
#: ``DataTableStreamScan.createFollowUpScanner``).
CHANGELOG_PRODUCERS = ("input", "full-compaction", "lookup")

_LIMIT_KEYS = dict(zip(STREAM_LIMIT_KEYS, ("max_files", "max_bytes", "max_rows", "min_rows", "max_trigger_delay_ms")))


def _bool(opts: Mapping[str, str], key: str, default: bool = False) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"Option '{key}' must be 'true' or 'false', got '{raw}'.")
    return text == "true"


def _positive(opts: Mapping[str, str], key: str, memory: bool = False) -> int | None:
    raw = opts.get(key)
    if raw is None:
        return None
    value = parse_memory_size(raw, key) if memory else (int(raw) if raw.strip().isdigit() else -1)
    if value <= 0:
        raise OptionError(f"Option '{key}' must be a positive integer, got '{raw}'.")
    return value


# Task packing of a micro-batch (as in a batch read): option -> StreamOptions field.
_SPLIT_KEYS = {"source.split.target-size": "split_target_size", "source.split.open-file-cost": "open_file_cost"}


@dataclass(frozen=True)
class StreamOptions:
    """The options of a streaming read (Paimon's names; Spark lower-cases keys, so they match in any case).

    Besides where a stream starts (``scan.mode``, ``scan.snapshot-id``, ``scan.timestamp[-millis]``,
    ``scan.tag-name``, ``consumer-id``), how big a micro-batch is (``read.stream.*PerTrigger``) and what a row
    shows (``read.changelog``), a stream takes the batch read's load-time selection
    (:mod:`pyspark_paimon.planner.selection`):

    * ``scan.partitions`` (``'dt=2024-01-01;dt=2024-01-02'``): only those partitions are planned, in every
      phase (the start snapshot's ``full`` scan, each commit's ``delta``, the ``diff`` of a rewrite or an
      overwrite); it is exact, so their rows need no further test;
    * ``filter`` (a SQL predicate, ``"region = 'eu' AND amount > 10"``): partitions it rules out are not
      planned, and every emitted row satisfies it. A ``full`` scan and both sides of a ``diff`` are filtered
      after merging, so a ``diff`` retracts a key whose new version stopped matching; a ``delta`` reads each
      change row on its own (as Paimon's streaming reads do), so on a primary-key table a key updated to a
      value that no longer matches is *not* retracted by that delta. Filter on partition or primary-key
      columns when the stream must mirror a subset of the table exactly.
    """

    mode: str = "latest-full"  # resolved: latest-full | latest | from-snapshot | from-snapshot-full | ...
    snapshot_id: int | None = None
    timestamp_millis: int | None = None
    tag_name: str | None = None
    consumer_id: str | None = None
    ignore_consumer_progress: bool = False
    consumer_mode: str | None = None  # None: the table's consumer.mode (exactly-once | at-least-once)
    changelog: bool = False
    read_overwrite: bool | None = None  # None: the table's streaming-read-overwrite
    read_append_overwrite: bool | None = None  # None: the table's streaming-read-append-overwrite
    merge_snapshot: bool | None = None  # None: the table's chain-table.streaming.merge-snapshot
    max_files: int | None = None
    max_bytes: int | None = None
    max_rows: int | None = None
    min_rows: int | None = None
    max_trigger_delay_ms: int | None = None
    batch_size: int = 65536
    split_target_size: int | None = None  # None: the table's source.split.target-size
    open_file_cost: int | None = None  # None: the table's source.split.open-file-cost
    scan_partitions: str | None = None  # 'scan.partitions', parsed against the table's schema by the planner
    filter: str | None = None  # 'filter', a SQL predicate, parsed by the planner

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> "StreamOptions":
        opts = {str(k).lower(): str(v) for k, v in options.items()}
        check_read_options([k for k in opts if not k.startswith(STORAGE_PREFIX)], STREAM_KEYS, "streaming read")
        mode = opts.get("scan.mode", "default").strip().lower()
        if mode not in SCAN_MODES:
            raise OptionError(
                f"Option 'scan.mode' = '{opts['scan.mode']}' is not supported by a streaming read; use one of "
                f"{', '.join(SCAN_MODES[1:])} ('incremental' and 'from-file-creation-time' are "
                "not implemented)."
            )
        snapshot_id = None
        if "scan.snapshot-id" in opts:
            raw = opts["scan.snapshot-id"].strip()
            if not raw.isdigit() or int(raw) <= 0:
                raise OptionError(f"Option 'scan.snapshot-id' must be a snapshot id (a positive integer), got '{raw}'.")
            snapshot_id = int(raw)
        stamps = [k for k in ("scan.timestamp-millis", "scan.timestamp") if k in opts]
        if len(stamps) > 1:
            raise OptionError("Give either 'scan.timestamp-millis' or 'scan.timestamp', not both.")
        ts = parse_timestamp_millis(opts[stamps[0]], stamps[0]) if stamps else None
        tag = opts.get("scan.tag-name") or None
        given = [
            k
            for k, v in (("scan.snapshot-id", snapshot_id), (stamps[0] if stamps else "", ts), ("scan.tag-name", tag))
            if v is not None
        ]
        if len(given) > 1:
            raise OptionError(
                f"Conflicting start options {given}: a stream starts from one snapshot, timestamp or tag."
            )
        if mode == "full":
            mode = "latest-full"
        if mode == "default":
            mode = (
                "from-snapshot"
                if snapshot_id is not None
                else "from-timestamp"
                if ts is not None
                else "from-tag"
                if tag is not None
                else "latest-full"
            )
        needs = {
            "from-snapshot": "scan.snapshot-id",
            "from-snapshot-full": "scan.snapshot-id",
            "from-timestamp": "scan.timestamp-millis' or 'scan.timestamp",
        }
        if mode in needs and not given:
            raise OptionError(f"'scan.mode' = '{mode}' needs option '{needs[mode]}'.")
        if mode in ("latest", "latest-full", "compacted-full") and given:
            raise OptionError(
                f"'scan.mode' = '{mode}' starts from the latest{' compacted' if mode == 'compacted-full' else ''} "
                f"snapshot; drop {given}, or use "
                "'from-snapshot' / 'from-timestamp' / 'scan.tag-name' (with the default scan.mode)."
            )
        if mode.startswith("from-snapshot") and snapshot_id is None or mode == "from-timestamp" and ts is None:
            raise OptionError(f"'scan.mode' = '{mode}' does not go with {given}.")
        if tag is not None and mode != "from-tag":
            raise OptionError(
                "'scan.tag-name' starts a stream from a tag (the tag's data, then the branch's commits "
                "after it); leave 'scan.mode' unset (default) with it."
            )
        limits = {name: _positive(opts, key, memory=(name == "max_bytes")) for key, name in _LIMIT_KEYS.items()}
        if (limits["min_rows"] is None) != (limits["max_trigger_delay_ms"] is None):
            raise OptionError(
                "Give both 'read.stream.minRowsPerTrigger' and 'read.stream.maxTriggerDelayMs', or "
                "neither (a micro-batch waits for the minimum rows at most that long)."
            )
        consumer = opts.get(CONSUMER_ID.key) or None
        consumer_mode = _consumer_mode(opts[CONSUMER_MODE.key]) if CONSUMER_MODE.key in opts else None
        batch = opts.get("read.batch-size", "65536")
        if not batch.isdigit() or int(batch) <= 0:
            raise OptionError(f"Option 'read.batch-size' must be a positive integer, got '{batch}'.")
        return cls(
            mode=mode,
            snapshot_id=snapshot_id,
            timestamp_millis=ts,
            tag_name=tag,
            consumer_id=check_consumer_id(consumer) if consumer else None,
            ignore_consumer_progress=_bool(opts, CONSUMER_IGNORE_PROGRESS.key),
            consumer_mode=consumer_mode,
            changelog=_bool(opts, "read.changelog"),
            read_overwrite=_bool(opts, STREAMING_READ_OVERWRITE.key) if STREAMING_READ_OVERWRITE.key in opts else None,
            read_append_overwrite=(
                _bool(opts, STREAMING_READ_APPEND_OVERWRITE.key)
                if STREAMING_READ_APPEND_OVERWRITE.key in opts
                else None
            ),
            merge_snapshot=(
                _bool(opts, CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT.key)
                if CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT.key in opts
                else None
            ),
            batch_size=int(batch),
            scan_partitions=opts.get(SCAN_PARTITIONS_KEY) or None,
            filter=opts.get(FILTER_KEY) or None,
            **limits,
            **{name: parse_memory_size(opts[key], key) for key, name in _SPLIT_KEYS.items() if key in opts},
        )


CONSUMER_MODES = ("exactly-once", "at-least-once")


def _consumer_mode(raw: str) -> str:
    mode = raw.strip().lower()
    if mode not in CONSUMER_MODES:
        raise OptionError(f"Option '{CONSUMER_MODE.key}' must be one of {', '.join(CONSUMER_MODES)}, got '{raw}'.")
    return mode


@dataclass(frozen=True)
class Consumed:
    """The identity of the last snapshot a stream consumed completely: its id and manifest lists. The lists are
    unique per commit, so a snapshot that was replaced under the same id (fast-forward, replace, rollback) is
    recognised, and they still describe the consumed state when the snapshot file itself is gone."""

    snapshot_id: int
    base_manifest_list: str
    delta_manifest_list: str
    # Its index manifest (deletion vectors), so a diff from this state reads its files as it did. None: none, or
    # an offset written before it was recorded.
    index_manifest: str | None = None

    @classmethod
    def of(cls, snapshot: Snapshot) -> "Consumed":
        return cls(snapshot.id, snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.index_manifest)

    def to_list(self) -> list[Any]:
        out: list[Any] = [self.snapshot_id, self.base_manifest_list, self.delta_manifest_list]
        return out + [self.index_manifest] if self.index_manifest else out

    @classmethod
    def from_list(cls, c: Sequence[Any]) -> "Consumed":
        return cls(int(c[0]), str(c[1]), str(c[2]), str(c[3]) if len(c) > 3 and c[3] else None)

    def matches(self, snapshot: Snapshot) -> bool:
        return (snapshot.base_manifest_list, snapshot.delta_manifest_list) == (
            self.base_manifest_list,
            self.delta_manifest_list,
        )


@dataclass(frozen=True)
class StreamOffset:
    """A stream position: splits ``0..index`` of snapshot ``snapshot``'s ``phase`` scan are consumed, on top of
    the state ``consumed`` (for a ``diff``, the state the diff starts from). A ``chain`` phase (the start of a
    chain table's stream) is at the delta branch's snapshot ``snapshot`` (0: none) and the snapshot branch's
    snapshot ``pinned`` (None: none), the two versions its start was pinned to."""

    snapshot: int
    index: int = -1
    phase: Phase = "delta"
    consumed: Consumed | None = None
    pinned: int | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.consumed
        out: dict[str, Any] = {
            "snapshotId": self.snapshot,
            "index": self.index,
            "phase": self.phase,
            "consumed": None if c is None else c.to_list(),
        }
        if self.phase == "chain":
            out["chainSnapshotId"] = self.pinned
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StreamOffset":
        try:
            c = d.get("consumed")
            consumed = None if c is None else Consumed.from_list(c)
            phase = str(d["phase"])
            if phase not in PHASES:
                raise ValueError(phase)
            pinned = d.get("chainSnapshotId")
            return cls(
                int(d["snapshotId"]),
                int(d["index"]),
                phase,  # type: ignore[arg-type]
                consumed,
                None if pinned is None else int(pinned),
            )
        except (KeyError, TypeError, ValueError, IndexError):
            raise OptionError(
                f"Cannot read the streaming offset {dict(d)} (not written by this version of pyspark-paimon). Start "
                "the query with a new checkpoint location."
            ) from None

    def after(self, snapshot: Snapshot) -> "StreamOffset":
        """The position after every split of ``snapshot``: the next snapshot's delta, on top of this one."""
        return StreamOffset(snapshot.id + 1, -1, "delta", Consumed.of(snapshot))


@dataclass(frozen=True)
class StreamSplit:
    """One unit of a stream: see the module docstring for what each phase reads. ``after`` is read merged in a
    ``full`` or ``diff`` split and raw (one file, row kinds kept) in a ``delta`` split; ``before`` is the other
    side of a ``diff``."""

    snapshot_id: int
    index: int
    phase: Phase
    after: DataSplit | None
    before: DataSplit | None = None

    @property
    def splits(self) -> tuple[DataSplit, ...]:
        return tuple(s for s in (self.before, self.after) if s is not None)

    @property
    def file_count(self) -> int:
        return sum(len(s.files) for s in self.splits)

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.splits)

    @property
    def row_count(self) -> int:
        return sum(s.row_count for s in self.splits)


class Admission:
    """Read limits of one micro-batch (``read.stream.max*PerTrigger``): a split is admitted while every limit
    still has room before it, so a batch always makes progress (at least one split) and stops at the first
    split that would start past a limit (Paimon's ``PaimonReadLimitGuard``)."""

    def __init__(self, max_files: int | None = None, max_bytes: int | None = None, max_rows: int | None = None):
        self.max_files, self.max_bytes, self.max_rows = max_files, max_bytes, max_rows
        self.files = self.bytes = self.rows = 0

    @property
    def unlimited(self) -> bool:
        return self.max_files is None and self.max_bytes is None and self.max_rows is None

    def admit(self, split: StreamSplit) -> bool:
        for used, limit in ((self.files, self.max_files), (self.bytes, self.max_bytes), (self.rows, self.max_rows)):
            if limit is not None and used >= limit:
                return False
        self.files += split.file_count
        self.bytes += split.size_bytes
        self.rows += split.row_count
        return True


class StreamPlanner:
    """Plans one stream of one branch (the driver side; Spark-free). See the module docstring."""

    def __init__(self, store: FileStore, opts: StreamOptions, schema: TableSchema | None = None):
        # A chain table streams its start (both branches), then its delta branch (module docstring).
        cfg = chain_read_config(store)
        self.chain: ChainStreamStart | None = None
        if cfg is not None:
            assert cfg.delta_branch is not None
            main_schema = schema or store.schema()
            _refuse_chain_stream_options(store, cfg, opts, main_schema)
            self.chain = ChainStreamStart.of(store, cfg, main_schema, opts.merge_snapshot)
            store, schema = store.with_branch(cfg.delta_branch), None
        self.store = store
        self.opts = opts
        self.schema = schema or store.schema()
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
            self.opts = opts = replace(opts, consumer_mode=_consumer_mode(table.get(CONSUMER_MODE)))
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

    def _state_entries(self, consumed: Consumed) -> list[ManifestEntry]:
        ms = self.store.manifests
        try:
            metas = ms.read_list(consumed.base_manifest_list) + ms.read_list(consumed.delta_manifest_list)
            return live_files(ms.read_entries(metas), f"the consumed state (snapshot {consumed.snapshot_id})")
        except (FileNotFoundError, SnapshotNotFoundError) as exc:
            raise SnapshotNotFoundError(
                f"The history of branch '{self.store.branch}' of {self.store.table_path} was rewritten (fast-forward, "
                f"replace or rollback) after this stream consumed snapshot {consumed.snapshot_id}, and the metadata "
                f"of what it consumed is gone ({exc}), so the stream cannot compute the change to the new history. "
                "Start the query again with a new checkpoint location."
            ) from exc

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
            # Below the earliest snapshot: expired normally (expiration deletes its manifest lists; the next
            # snapshot decides, and it must exist), or replaced by a history that starts later (replace_main
            # with a branch forked after it), whose lists are still there to diff from.
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


def _refuse_chain_stream_options(store: FileStore, cfg: ChainConfig, opts: StreamOptions, schema: TableSchema) -> None:
    """What a stream of a chain table refuses, as Java's ``ChainTableFileStoreTable.newStreamScan`` does: any start
    but the table's current content, a consumer, and a selection of partitions (the start chooses partitions)."""
    given = []
    if opts.mode != "latest-full":
        given.append(
            f"'scan.snapshot-id' = '{opts.snapshot_id}'"
            if opts.snapshot_id is not None
            else f"'scan.tag-name' = '{opts.tag_name}'"
            if opts.tag_name is not None
            else "'scan.timestamp-millis' / 'scan.timestamp'"
            if opts.timestamp_millis is not None
            else f"'scan.mode' = '{opts.mode}'"
        )
    consumer = opts.consumer_id or schema.core_options.get(CONSUMER_ID)
    if consumer:
        given.append(f"'{CONSUMER_ID.key}' = '{consumer}'")
    if opts.scan_partitions is not None:
        given.append(f"'{SCAN_PARTITIONS_KEY}'")
    if opts.filter is not None:
        selection = selection_of(ReadOptions(filter=opts.filter), schema)
        on_partitions = sorted(tree_columns(selection.expr) & set(schema.partition_keys)) if selection.expr else []
        if on_partitions:
            given.append(f"a '{FILTER_KEY}' on partition columns {on_partitions}")
    if not given:
        return
    raise ChainTableError(
        f"Chain table {store.table_path}: a stream of a chain table starts from the table's current content (the "
        "latest snapshot partition of each group and the later delta partitions) and then follows the delta branch "
        f"'{cfg.delta_branch}', so it refuses {', '.join(given)}, as Paimon does. Remove "
        f"{'it' if len(given) == 1 else 'them'}, "
        f"or stream the delta branch as an ordinary table from any position: .option('branch', '{cfg.delta_branch}') "
        f"or load('{store.table_path}$branch_{cfg.delta_branch}')."
    )


def limits_of(opts: StreamOptions) -> Admission:
    return Admission(opts.max_files, opts.max_bytes, opts.max_rows)


def _ordered_by_bucket(schema: TableSchema) -> bool:
    """Whether a bucket's rows must reach the sink in commit order: always for primary-key tables (a key's
    changes), and for append tables with fixed buckets (Paimon's ordered append queue). Unaware-bucket append
    tables (``bucket = -1``) promise no order, so their files may be read by any task."""
    return bool(schema.primary_keys) or schema.core_options.bucket != -1


def task_groups(
    splits: Sequence[StreamSplit], schema: TableSchema, target_size: int, open_file_cost: int, min_groups: int
) -> list[list[StreamSplit]]:
    """The Spark tasks of one micro-batch, packed like a batch read's splits (``target_size`` bytes per task,
    each file weighing at least ``open_file_cost``, at least ``min_groups`` tasks while there is more than one
    unit to spread). Where order matters (:func:`_ordered_by_bucket`) a unit is every split of one (partition,
    bucket), kept in commit order; otherwise it is one split, which for an append table is one file (the
    planner's rule), so a micro-batch of one bucket still keeps every core busy."""
    units: list[list[StreamSplit]]
    if _ordered_by_bucket(schema):
        by_bucket: dict[tuple[bytes, int], list[StreamSplit]] = {}
        for s in splits:  # splits come in commit order; a bucket's stay together and in that order
            first = s.splits[0]
            by_bucket.setdefault((first.partition, first.bucket), []).append(s)
        units = list(by_bucket.values())
    else:
        units = [[s] for s in splits]
    weights = [
        split_weight(sum(s.size_bytes for s in unit), sum(s.file_count for s in unit), open_file_cost) for unit in units
    ]
    packed = pack_weights(weights, target_size, min_groups=max(min_groups, 1))
    return [[s for j in idx for s in units[j]] for idx in packed]
