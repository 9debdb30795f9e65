"""Read options: Paimon's vocabulary, the Spark/Delta/Iceberg aliases users expect, and conflict checks.

Spark lower-cases option keys, so everything here is matched case-insensitively. An option we do not know is
an error (never silently ignored), and two time-travel options together are an error, because a reader that
quietly picks one of them returns the wrong version of the data.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from typing import Mapping

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.options import (
    FILE_INDEX_READ_ENABLED,
    INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
    CoreOptions,
    check_read_options,
    parse_memory_size,
)
from pyspark_paimon.metadata.schema.row_tracking import READ_COLUMNS_KEY

# Canonical key -> accepted aliases (all lower case).
TIME_TRAVEL_KEYS: dict[str, tuple[str, ...]] = {
    "scan.snapshot-id": ("snapshot-id", "versionasof", "version-as-of"),
    "scan.tag-name": ("tag", "tag-name"),
    "scan.timestamp-millis": ("as-of-timestamp",),
    "scan.timestamp": ("timestampasof", "timestamp-as-of"),
    "scan.watermark": (),
    "scan.version": (),
}
INCREMENTAL_KEYS = ("incremental-between", "incremental-between-timestamp")
INCREMENTAL_SCAN_MODE_KEY = "incremental-between-scan-mode"
INCREMENTAL_TAG_TO_SNAPSHOT_KEY = INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT.key
# Load-time selection (planner/selection.py): Paimon's partition list and a SQL predicate.
SCAN_PARTITIONS_KEY = "scan.partitions"
FILTER_KEY = "filter"
# Internal: the splits ``Scan.to_spark`` leaves to the Python source (a JSON list of split keys, see
# ``datasource.read.routing.split_key``); every other split of the plan is read by Spark's own file readers.
ONLY_SPLITS_KEY = "pyspark-paimon.only-splits"
FILE_INDEX_READ_KEY = FILE_INDEX_READ_ENABLED.key
OTHER_READ_KEYS = (
    "path",
    "paths",
    "warehouse",
    "branch",
    "source.split.target-size",
    "source.split.open-file-cost",
    "read.batch-size",
    "scan.fallback-branch",
    INCREMENTAL_SCAN_MODE_KEY,
    INCREMENTAL_TAG_TO_SNAPSHOT_KEY,
    SCAN_PARTITIONS_KEY,
    FILTER_KEY,
    ONLY_SPLITS_KEY,
    FILE_INDEX_READ_KEY,
    READ_COLUMNS_KEY,
)
STORAGE_PREFIX = "fs."


def _all_read_keys() -> list[str]:
    keys = list(OTHER_READ_KEYS) + list(INCREMENTAL_KEYS)
    for canonical, aliases in TIME_TRAVEL_KEYS.items():
        keys.append(canonical)
        keys.extend(aliases)
    return keys


READ_KEYS = tuple(_all_read_keys())

# Streaming reads (pyspark_paimon.planner.stream_options) take Paimon's streaming vocabulary; these keys mean nothing
# to a batch read, which refuses them with a pointer to readStream instead of the generic unknown-option error.
STREAM_LIMIT_KEYS = (
    "read.stream.maxfilespertrigger",
    "read.stream.maxbytespertrigger",
    "read.stream.maxrowspertrigger",
    "read.stream.minrowspertrigger",
    "read.stream.maxtriggerdelayms",
)
STREAM_ONLY_KEYS = (
    "scan.mode",
    "consumer-id",
    "consumer.ignore-progress",
    "consumer.mode",
    "read.changelog",
    "streaming-read-overwrite",
    "streaming-read-append-overwrite",
    "chain-table.streaming.merge-snapshot",
    *STREAM_LIMIT_KEYS,
)
STREAM_KEYS = (
    "path",
    "paths",
    "warehouse",
    "branch",
    "read.batch-size",
    "source.split.target-size",
    "source.split.open-file-cost",
    "scan.snapshot-id",
    "scan.timestamp-millis",
    "scan.timestamp",
    "scan.tag-name",
    SCAN_PARTITIONS_KEY,
    FILTER_KEY,
    *STREAM_ONLY_KEYS,
)


def is_stream_read(options: Mapping[str, str]) -> bool:
    """Whether ``options`` can only mean a streaming read (Spark asks a source for its schema before it says
    whether the read is a batch or a stream)."""
    return any(str(k).lower() in STREAM_ONLY_KEYS for k in options)


def parse_timestamp_millis(value: str, key: str) -> int:
    """Epoch milliseconds, or 'yyyy-MM-dd HH:mm:ss[.SSS]' / ISO text in the local time zone (Paimon's rule)."""
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        dt = _dt.datetime.fromisoformat(text.replace("T", " ", 1))
    except ValueError:
        raise OptionError(
            f"Option '{key}' = '{value}' is neither epoch milliseconds nor a timestamp like '2025-08-10 12:00:00'."
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # local time zone, as Paimon interprets 'scan.timestamp'
    return int(dt.timestamp() * 1000)


def _incremental_scan_mode(value: str | None) -> str | None:
    """The read option ``incremental-between-scan-mode``: only the modes incremental reads implement."""
    if value is None or not value.strip():
        return None
    mode = value.strip().lower()
    if mode not in ("auto", "delta", "diff"):
        raise OptionError(
            f"Option '{INCREMENTAL_SCAN_MODE_KEY}' = '{value}' is not supported: incremental reads "
            "return the changed data files ('delta', or 'auto' for tables without a changelog "
            "producer) or the rows that differ between the two versions ('diff'); 'changelog' is not implemented."
        )
    return mode


def _tag_to_snapshot(value: str | None) -> bool | None:
    """The read option ``incremental-between-tag-to-snapshot``, parsed as the table option is."""
    if value is None or not value.strip():
        return None
    return CoreOptions({INCREMENTAL_TAG_TO_SNAPSHOT_KEY: value}).get(INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT)


def _only_splits(value: str | None) -> frozenset[str] | None:
    """The internal ``pyspark-paimon.only-splits`` option: a JSON list of split keys."""
    if value is None:
        return None
    try:
        keys = json.loads(value)
    except ValueError:
        keys = None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise OptionError(
            f"Option '{ONLY_SPLITS_KEY}' is internal to Scan.to_spark and must be a JSON list of split keys, got "
            f"{value[:80]!r}. Drop it from the read options."
        )
    return frozenset(keys)


def _boolean(value: str | None, key: str) -> bool:
    """A boolean read option: 'true' / 'false' (any case), blank or absent = false."""
    text = (value or "").strip().lower()
    if text not in ("", "true", "false"):
        raise OptionError(f"Option '{key}' must be 'true' or 'false', got '{value}'.")
    return text == "true"


@dataclass(frozen=True)
class ReadOptions:
    branch: str | None = None
    snapshot_id: int | None = None
    tag_name: str | None = None
    timestamp_millis: int | None = None
    watermark: int | None = None
    version: str | None = None
    incremental_between: str | None = None
    incremental_between_timestamp: str | None = None
    incremental_scan_mode: str | None = None  # 'auto', 'delta' or 'diff'; None: the table's option
    incremental_tag_to_snapshot: bool | None = None  # None: the table's option (Java's default: false)
    split_target_size: int | None = None
    open_file_cost: int | None = None
    batch_size: int = 65536
    fallback_branch: str | None = None
    storage_options: dict[str, str] = field(default_factory=dict)
    scan_partitions: str | None = None  # 'k=v,k2=v2;k=v3' (Paimon's scan.partitions), parsed against the schema
    filter: str | None = None  # a SQL predicate (planner/sql_filter.py), parsed against the read schema
    # Only the splits with these keys are read (``Scan.to_spark``'s Python half); None = every planned split.
    only_splits: frozenset[str] | None = None
    # ``file-index.read.enabled`` for this read (planning skips files by their file indexes); None: the table's.
    file_index_read: bool | None = None
    # ``read.row-tracking-columns``: the read returns ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` after the table's columns
    # (row-tracking tables only; ``metadata.schema.row_tracking``).
    row_tracking: bool = False

    @property
    def planner_options(self) -> dict[str, str]:
        """The read's overrides of table options that scan planning reads (``ScanPlanner``'s ``options``)."""
        if self.file_index_read is None:
            return {}
        return {FILE_INDEX_READ_KEY: "true" if self.file_index_read else "false"}

    @property
    def time_travel(self) -> bool:
        return any(
            v is not None
            for v in (self.snapshot_id, self.tag_name, self.timestamp_millis, self.watermark, self.version)
        )

    @classmethod
    def from_options(cls, options: Mapping[str, str], extra_allowed: tuple[str, ...] = ()) -> "ReadOptions":
        opts = {str(k).lower(): str(v) for k, v in options.items()}
        storage = {k[len(STORAGE_PREFIX) :]: v for k, v in opts.items() if k.startswith(STORAGE_PREFIX)}
        streaming = [k for k in opts if k in STREAM_ONLY_KEYS]
        if streaming:
            raise OptionError(
                f"Option{'s' if len(streaming) > 1 else ''} {streaming} apply to streaming reads only "
                "(spark.readStream.format('paimon')); a batch read returns one version of the table."
            )
        check_read_options(
            [k for k in opts if not k.startswith(STORAGE_PREFIX)], READ_KEYS + tuple(extra_allowed), "read"
        )
        chosen: dict[str, tuple[str, str]] = {}
        for canonical, aliases in TIME_TRAVEL_KEYS.items():
            for key in (canonical, *aliases):
                if key in opts:
                    if canonical in chosen and chosen[canonical][1] != opts[key]:
                        raise OptionError(
                            f"Options '{chosen[canonical][0]}' and '{key}' both set {canonical} with different "
                            "values; give only one."
                        )
                    chosen[canonical] = (key, opts[key])
        travel = [k for k in chosen]
        incremental = [k for k in INCREMENTAL_KEYS if k in opts]
        if len(travel) + len(incremental) > 1:
            named = [chosen[k][0] for k in travel] + incremental
            raise OptionError(
                f"Conflicting read options {named}: choose one way to pick the version to read (a snapshot id, a "
                "tag, a timestamp, a watermark, a version string, or an incremental range)."
            )
        snapshot_id = version = None
        if "scan.snapshot-id" in chosen:
            key, raw = chosen["scan.snapshot-id"]
            if raw.strip().isdigit():
                snapshot_id = int(raw)
            elif key == "scan.snapshot-id":
                raise OptionError(f"Option '{key}' must be a snapshot id (a positive integer), got '{raw}'.")
            else:
                version = raw  # versionAsOf='my_tag' works like Paimon's VERSION AS OF 'my_tag'
        if "scan.version" in chosen:
            version = chosen["scan.version"][1]
        ts = None
        if "scan.timestamp-millis" in chosen:
            key, raw = chosen["scan.timestamp-millis"]
            ts = parse_timestamp_millis(raw, key)
        if "scan.timestamp" in chosen:
            key, raw = chosen["scan.timestamp"]
            ts = parse_timestamp_millis(raw, key)
        watermark = None
        if "scan.watermark" in chosen:
            raw = chosen["scan.watermark"][1]
            if not raw.lstrip("-").isdigit():
                raise OptionError(f"Option 'scan.watermark' must be an integer, got '{raw}'.")
            watermark = int(raw)
        for key in (INCREMENTAL_SCAN_MODE_KEY, INCREMENTAL_TAG_TO_SNAPSHOT_KEY):
            if opts.get(key, "").strip() and not incremental:
                raise OptionError(
                    f"Option '{key}' only applies to incremental reads; give "
                    "'incremental-between' or 'incremental-between-timestamp' too, or drop it."
                )
        batch = opts.get("read.batch-size", "65536")
        if not batch.isdigit() or int(batch) <= 0:
            raise OptionError(f"Option 'read.batch-size' must be a positive integer, got '{batch}'.")
        return cls(
            branch=opts.get("branch") or None,
            snapshot_id=snapshot_id,
            tag_name=chosen["scan.tag-name"][1] if "scan.tag-name" in chosen else None,
            timestamp_millis=ts,
            watermark=watermark,
            version=version,
            incremental_between=opts.get("incremental-between"),
            incremental_between_timestamp=opts.get("incremental-between-timestamp"),
            incremental_scan_mode=_incremental_scan_mode(opts.get(INCREMENTAL_SCAN_MODE_KEY)),
            incremental_tag_to_snapshot=_tag_to_snapshot(opts.get(INCREMENTAL_TAG_TO_SNAPSHOT_KEY)),
            split_target_size=parse_memory_size(opts["source.split.target-size"], "source.split.target-size")
            if "source.split.target-size" in opts
            else None,
            open_file_cost=parse_memory_size(opts["source.split.open-file-cost"], "source.split.open-file-cost")
            if "source.split.open-file-cost" in opts
            else None,
            batch_size=int(batch),
            fallback_branch=opts.get("scan.fallback-branch"),
            storage_options=storage,
            scan_partitions=opts.get(SCAN_PARTITIONS_KEY),
            filter=opts.get(FILTER_KEY),
            only_splits=_only_splits(opts.get(ONLY_SPLITS_KEY)),
            file_index_read=CoreOptions({FILE_INDEX_READ_KEY: opts[FILE_INDEX_READ_KEY]}).get(FILE_INDEX_READ_ENABLED)
            if opts.get(FILE_INDEX_READ_KEY, "").strip()
            else None,
            row_tracking=_boolean(opts.get(READ_COLUMNS_KEY), READ_COLUMNS_KEY),
        )
