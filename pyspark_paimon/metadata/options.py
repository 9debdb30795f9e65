"""Table options: which we honour, which only tune other engines, and which we refuse.

"An option we do not support is an error, never ignored." Three kinds of table option exist:

* **honoured**: read and acted on here (``bucket``, ``merge-engine``, ``sequence.field`` ...);
* **inert**: options that tune another engine's runtime (Flink parallelism, compaction triggers, lookup
  caches...) and cannot change what a batch read returns or what a batch write must produce. A table created
  by Java Paimon may carry them, and we keep them untouched;
* **refused**: values that change semantics we do not implement (deletion vectors, data evolution, an
  unknown merge engine...). They raise :class:`OptionError` when the table is read or written, naming the
  option and the fix.

Creating a table with an option we do not recognise at all is refused too (a typo must not silently become a
no-op); reading a table whose schema carries one is allowed only when the key is known to be inert.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterable, Mapping

from pyspark_paimon.errors import OptionError

# Honoured table options and their defaults (None = no default). Keys are Paimon's.
HONOURED: dict[str, str | None] = {
    "bucket": "-1",
    "bucket-key": None,
    "bucket-function.type": "default",
    "file.format": "parquet",
    "file.compression": "zstd",
    "file.compression.zstd-level": "1",
    "manifest.compression": "zstd",
    "target-file-size": None,  # 128 mb for PK tables, 256 mb for append tables
    "write-buffer-size": "256 mb",
    "merge-engine": "deduplicate",
    "sequence.field": None,
    "sequence.field.sort-order": "ascending",
    "ignore-delete": "false",
    "partial-update.remove-record-on-delete": "false",
    "fields.default-aggregate-function": None,
    "rowkind.field": None,
    "partition.default-name": "__DEFAULT_PARTITION__",
    "partition.legacy-name": "true",
    "metadata.stats-mode": "truncate(16)",
    "data-file.prefix": "data-",
    "dynamic-partition-overwrite": "true",
    "commit.max-retries": "10",
    "commit.min-retry-wait": "10 ms",
    "commit.max-retry-wait": "10 s",
    "commit.timeout": None,
    "commit.user-prefix": None,
    "manifest.merge-min-count": "30",
    "manifest.target-file-size": "8 mb",
    "source.split.target-size": "128 mb",
    "source.split.open-file-cost": "4 mb",
    "snapshot.num-retained.min": "10",
    "snapshot.num-retained.max": str(2**31 - 1),
    "snapshot.time-retained": "1 h",
    "snapshot.expire.limit": "50",
    "tag.automatic-creation": "none",
    "tag.creation-period": "daily",
    "tag.creation-delay": "0 ms",
    "tag.period-formatter": "with_dashes",
    "tag.num-retained-max": None,
    "tag.default-time-retained": None,
    "tag.time-expire-enabled": "true",
    "tag.creation-period-duration": None,
    "tag.automatic-completion": "false",
    "tag.batch.customized-name": None,
    "scan.fallback-branch": None,
    "chain-table.enabled": "false",
    "scan.fallback-snapshot-branch": None,
    "scan.fallback-delta-branch": None,
    "chain-table.chain-partition-keys": None,
    "chain-table.split.key-range-enabled": "true",
    "chain-table.compact.auto-threshold": None,
    "partition.timestamp-pattern": None,
    "partition.timestamp-formatter": None,
    "changelog-producer": "none",
    "deletion-vectors.enabled": "false",
    "path": None,
    "type": "table",
    "owner": None,
    "comment": None,
}

# Per-field options (``fields.<name>.<suffix>``) that we honour.
FIELD_OPTION_SUFFIXES = ("aggregate-function", "ignore-retract", "sequence-group", "stats-mode",
                         "default-value", "nested-key", "distinct", "list-agg-delimiter")

# Options that only tune other engines' runtimes or maintenance we do not run; safe to carry.
INERT_PREFIXES = (
    "sink.", "scan.parallelism", "scan.infer-parallelism", "lookup.", "compaction.", "num-sorted-run.",
    "num-levels", "full-compaction.", "write-buffer-spillable", "write-buffer-for-append",
    "write-buffer-spill.", "write-max-writers-to-spill", "write-only", "local-merge-buffer-size",
    "changelog.", "consumer.", "consumer-id", "partition.expiration-", "partition.mark-done-action",
    "partition.idle-time-to-done", "partition.time-interval", "metastore.", "streaming-read-", "continuous.",
    "page-size", "cache-page-size", "sort-spill-", "sort-engine", "spill-compression", "file-index.",
    "file-reader-async-threshold", "orc.", "parquet.", "manifest.full-compaction-threshold-size",
    "manifest.merge-optimize.", "snapshot.expire.", "snapshot.clean-empty-directories", "tag.callback",
    "tag.create-success-file", "record-level.", "dynamic-bucket.", "cross-partition-upsert.",
    "read.batch-size", "file-index", "async-file-write", "commit.force-compact", "commit.callback",
    "commit.discard-duplicate-files", "commit.strict-mode", "end-input.", "incremental-", "scan.mode",
    "scan.plan-sort-partition", "scan.manifest.parallelism", "delete-file.", "stats-dense-store",
    "metadata.stats-dense-store", "metadata.stats-keep-first-n-columns", "zorder.", "bucket-append-ordered",
    "force-lookup", "lookup-wait", "lookup-compact", "data-file.path-directory", "changelog-file.",
    "index-file-in-data-file-dir", "fields.default-", "manifest.delete-file-drop-stats",
    "statistics.", "sequence.field.sort-order", "visibility-callback.", "ignore-update-before",
    "deletion-vectors.bitmap64", "deletion-vectors.index-file.target-size", "file.suffix.include.compression",
    "write.sequence-number-init-mode", "partition.sink-strategy", "clustering.", "query-auth.",
)

# Values that change semantics we do not implement: option -> (allowed values, why/fix).
REFUSED_VALUES: dict[str, tuple[tuple[str, ...], str]] = {
    "deletion-vectors.enabled": (("false",), "deletion vectors are not supported yet; read and write the table "
                                              "with Paimon/pypaimon or disable deletion vectors on a copy"),
    "merge-engine": (("deduplicate", "partial-update", "aggregation", "first-row"),
                     "supported merge engines are deduplicate, partial-update, aggregation and first-row"),
    "changelog-producer": (("none", "input", "lookup", "full-compaction"), "unknown changelog producer"),
    "file.format": (("parquet", "orc"), "only parquet (read/write) and orc (read) data files are supported"),
    "bucket-function.type": (("default",), "only the default bucket function is supported"),
    "data-evolution.enabled": (("false",), "data-evolution tables are not supported"),
    "row-tracking.enabled": (("false",), "row-tracking tables are not supported for writing"),
    "data-file.thin-mode": (("false",), "thin-mode data files are not supported"),
}

# Scan/time-travel options a table may also carry in its schema (set by other engines).
SCAN_KEYS = ("scan.snapshot-id", "scan.tag-name", "scan.timestamp-millis", "scan.timestamp", "scan.watermark",
             "scan.version", "incremental-between", "incremental-between-timestamp", "branch")


def is_field_option(key: str) -> bool:
    return key.startswith("fields.") and key.rsplit(".", 1)[-1] in FIELD_OPTION_SUFFIXES


def is_known(key: str) -> bool:
    return key in HONOURED or key in REFUSED_VALUES or key in SCAN_KEYS or is_field_option(key) or any(
        key.startswith(p) for p in INERT_PREFIXES)


def validate_table_options(options: Mapping[str, str], *, creating: bool, table: str = "the table") -> None:
    """Refuse semantics we cannot honour; when creating, also refuse keys we do not know at all."""
    for key, value in options.items():
        spec = REFUSED_VALUES.get(key)
        if spec is not None and str(value).strip().lower() not in spec[0]:
            raise OptionError(f"Option '{key}' = '{value}' of {table} is not supported: {spec[1]}.")
        if creating and not is_known(key):
            hint = difflib.get_close_matches(key, list(HONOURED), n=1)
            raise OptionError(
                f"Unknown table option '{key}'" + (f" (did you mean '{hint[0]}'?)" if hint else "") +
                ". pyspark-paimon refuses options it does not understand; see the README's option reference.")


def get(options: Mapping[str, str], key: str) -> str | None:
    value = options.get(key)
    return value if value is not None else HONOURED.get(key)


def get_bool(options: Mapping[str, str], key: str) -> bool:
    value = (get(options, key) or "false").strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"Option '{key}' must be 'true' or 'false', got '{value}'.")
    return value == "true"


def get_int(options: Mapping[str, str], key: str) -> int | None:
    value = get(options, key)
    if value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise OptionError(f"Option '{key}' must be an integer, got '{value}'.") from None


_DURATION_UNITS = {
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "min": 60_000, "mins": 60_000, "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_SIZE_UNITS = {"b": 1, "bytes": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
               "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3, "t": 1024**4, "tb": 1024**4}


def parse_duration_ms(text: str, key: str = "duration") -> int:
    """Paimon durations: '10 ms', '30 s', '1 h', '7 d', '1 min', 'PT24H', or bare milliseconds."""
    t = str(text).strip().lower()
    iso = re.fullmatch(r"p(?:(\d+)d)?(?:t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?)?", t)
    if iso and any(iso.groups()):
        d, h, m, s = iso.groups()
        return int((int(d or 0) * 86400 + int(h or 0) * 3600 + int(m or 0) * 60 + float(s or 0)) * 1000)
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", t)
    if match:
        number, unit = match.groups()
        factor = _DURATION_UNITS.get(unit or "ms")
        if factor is not None:
            return int(float(number) * factor)
    raise OptionError(f"Cannot parse {key} '{text}'; use forms like '10 ms', '30 s', '5 min', '1 h', '7 d'.")


def parse_memory_size(text: str, key: str = "size") -> int:
    """Paimon memory sizes: '128 mb', '8mb', '1 gb', '4096' (bytes)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", str(text).strip().lower())
    if match:
        number, unit = match.groups()
        factor = _SIZE_UNITS.get(unit or "b")
        if factor is not None:
            return int(float(number) * factor)
    raise OptionError(f"Cannot parse {key} '{text}'; use forms like '128 mb', '1 gb', '4096'.")


def target_file_size(options: Mapping[str, str], primary_key_table: bool) -> int:
    value = options.get("target-file-size")
    if value is None:
        return (128 if primary_key_table else 256) * 1024**2
    return parse_memory_size(value, "target-file-size")


def check_read_options(options: Iterable[str], allowed: Iterable[str], what: str) -> None:
    allowed_set = {a.lower() for a in allowed}
    for key in options:
        if key.lower() not in allowed_set:
            hint = difflib.get_close_matches(key.lower(), sorted(allowed_set), n=1)
            raise OptionError(
                f"Unknown {what} option '{key}'" + (f" (did you mean '{hint[0]}'?)" if hint else "") +
                ". Unsupported options are refused rather than ignored; see the README's option reference.")
