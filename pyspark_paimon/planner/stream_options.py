"""The options of a streaming read (:class:`StreamOptions`, Paimon's names): where a stream starts, how big a
micro-batch is, what a row shows and which partitions and rows it selects, each checked once when the query
starts. Kept apart from the planner because the Spark reader resolves them (its schema depends on
``read.changelog``) before any planning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.options import (
    CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT,
    CONSUMER_ID,
    CONSUMER_IGNORE_PROGRESS,
    CONSUMER_MODE,
    STREAMING_READ_APPEND_OVERWRITE,
    STREAMING_READ_OVERWRITE,
    check_read_options,
    parse_memory_size,
)
from pyspark_paimon.metadata.snapshots.consumers import check_consumer_id
from pyspark_paimon.planner.read_options import (
    FILTER_KEY,
    SCAN_PARTITIONS_KEY,
    STORAGE_PREFIX,
    STREAM_KEYS,
    STREAM_LIMIT_KEYS,
    parse_timestamp_millis,
)

__all__ = ["StreamOptions", "SCAN_MODES", "CONSUMER_MODES", "ROW_KIND_COLUMN", "parse_consumer_mode"]

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
        consumer_mode = parse_consumer_mode(opts[CONSUMER_MODE.key]) if CONSUMER_MODE.key in opts else None
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


def parse_consumer_mode(raw: str) -> str:
    mode = raw.strip().lower()
    if mode not in CONSUMER_MODES:
        raise OptionError(f"Option '{CONSUMER_MODE.key}' must be one of {', '.join(CONSUMER_MODES)}, got '{raw}'.")
    return mode
