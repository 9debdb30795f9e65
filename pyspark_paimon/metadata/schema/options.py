"""Table options: which we honour (with their types and defaults), which are inert, which we refuse.

"An option we do not support is an error, never ignored." Every key Java Paimon defines has a recorded
decision (:data:`KEYS`, kind and one-line reason):

* **honoured**: read and acted on here (``bucket``, ``merge-engine``, ``sequence.field`` ...). Each one is a
  :class:`ConfigOption` constant of this module (key, value type, default, purpose), read through
  :class:`CoreOptions`; :data:`HONOURED` is derived from those constants, so the registry and the code that
  reads the options cannot drift apart, and a default is written down exactly once. Some accept only some
  values (``file.format``: parquet or orc);
* **inert** and **refused**: the table in :mod:`pyspark_paimon.metadata.schema.option_keys`. Inert keys cannot change
  what a batch read returns or what a write must produce (tuning, caches, parallelism, other engines'
  runtimes); a table may carry them and we keep them untouched. Refused keys change semantics we do not
  implement: a value other than their accepted ones raises :class:`OptionError` naming the key, the value
  and the fix when the table is read (or only when it is written, for keys that do not change a read).

Creating a table with a key Java does not define at all is refused (a typo must not silently become a
no-op); reading a table that carries one is allowed (other engines add their own keys).

Reading an option::

    opts = CoreOptions(schema.options)          # or schema.core_options
    opts.bucket                                 # -1 when unset
    opts.get(COMMIT_MIN_RETRY_WAIT)             # 10 (ms)
    opts.field("v", FIELD_IGNORE_RETRACT)       # fields.v.ignore-retract, False when unset

Defaults are kept as Paimon spells them (``'10 ms'``, ``'256 mb'``) and go through the same parser as a
user's value, so a default can never be of a different form than the values users write.
"""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass, replace
from typing import Any, Generic, Iterable, Mapping, TypeVar, overload

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.option_keys import (
    FIELD_SUFFIX_RULES,
    JAVA_IMMUTABLE,
    NOT_HONOURED,
    PREFIX_RULES,
    KeyRule,
    Kind,
)
from pyspark_paimon.metadata.schema.option_values import (
    BOOLEAN,
    DURATION,
    INTEGER,
    LOWERCASE,
    MEMORY_SIZE,
    NON_NEGATIVE_INTEGER,
    POSITIVE_DURATION,
    RELATIVE_DIRECTORY,
    STRING,
    STRING_LIST,
    OptionType,
    one_of,
    parse_duration_ms,
    parse_memory_size,
)

T = TypeVar("T")

# Re-exported: the duration and size parsers are part of this module's contract (DEVELOPERS.md).
__all__ = [
    "ConfigOption",
    "FieldOption",
    "CoreOptions",
    "KeyRule",
    "Kind",
    "OPTIONS",
    "FIELD_OPTIONS",
    "HONOURED",
    "FIELD_OPTION_SUFFIXES",
    "KEYS",
    "FIELD_KEY_RULES",
    "PREFIX_RULES",
    "JAVA_IMMUTABLE",
    "MERGE_ENGINES",
    "TAG_CREATION_MODES",
    "TAG_CREATION_PERIODS",
    "TAG_PERIOD_FORMATTERS",
    "INCREMENTAL_SCAN_MODES",
    "rule_of",
    "is_field_option",
    "is_known",
    "REMOVED_AGGREGATE_FUNCTIONS",
    "validate_merge_options",
    "removed_aggregate_function_error",
    "validate_table_options",
    "check_read_options",
    "get",
    "parse_duration_ms",
    "parse_memory_size",
]


# ------------------------------------------------------------------------------------------------ model
@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    """One table option: its Paimon key, how its text is parsed, its default as Paimon spells it (None = no
    default) and a one-line description. Read it with :meth:`CoreOptions.get`."""

    key: str
    value_type: OptionType[T]
    default: str | None
    description: str

    @property
    def default_value(self) -> T:
        """The parsed default (None for an option without one; see :func:`_option` for why that is typed)."""
        return CoreOptions({}).get(self)


@dataclass(frozen=True)
class FieldOption(Generic[T]):
    """A per-column option ``fields.<column>.<suffix>`` (aggregate functions, stats modes...)."""

    suffix: str
    value_type: OptionType[T]
    default: str | None
    description: str

    def of(self, column: str) -> ConfigOption[T]:
        """The option of one column, e.g. ``FIELD_IGNORE_RETRACT.of("v")`` is ``fields.v.ignore-retract``."""
        return ConfigOption(f"fields.{column}.{self.suffix}", self.value_type, self.default, self.description)


# The overloads give an option without a default the value type ``T | None`` and one with a default ``T``, so
# ``CoreOptions.get`` is precisely typed at every call site; at runtime both are the same dataclass.
@overload
def _option(key: str, value_type: OptionType[T], default: str, description: str) -> ConfigOption[T]: ...
@overload
def _option(key: str, value_type: OptionType[T], default: None, description: str) -> ConfigOption[T | None]: ...
def _option(key: str, value_type: OptionType[Any], default: str | None, description: str) -> ConfigOption[Any]:
    return ConfigOption(key, value_type, default, description)


@overload
def _field_option(suffix: str, value_type: OptionType[T], default: str, description: str) -> FieldOption[T]: ...
@overload
def _field_option(suffix: str, value_type: OptionType[T], default: None, description: str) -> FieldOption[T | None]: ...
def _field_option(suffix: str, value_type: OptionType[Any], default: str | None, description: str) -> FieldOption[Any]:
    return FieldOption(suffix, value_type, default, description)


# ------------------------------------------------------------------------------------------------ choices
MERGE_ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
SORT_ORDERS = ("ascending", "descending")
TAG_CREATION_MODES = ("none", "process-time", "watermark", "batch")
#: In the order of ``auto_tag.PERIODS``' lengths (daily, hourly, two-hours).
TAG_CREATION_PERIODS = ("daily", "hourly", "two-hours")
PARTITION_EXPIRATION_STRATEGIES = ("values-time", "update-time")
TAG_PERIOD_FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")
INCREMENTAL_SCAN_MODES = ("auto", "delta", "changelog", "diff")
#: parquet-mr's writer versions, as its ``WriterVersion.fromString`` accepts them (short and enum names).
PARQUET_WRITER_VERSIONS = ("v1", "v2", "parquet_1_0", "parquet_2_0")

# ------------------------------------------------------------------------------------------------ honoured
# Layout and files
BUCKET = _option(
    "bucket",
    OptionType(INTEGER.parse, "an integer (N > 0 fixed buckets, -1 dynamic/unaware, -2 postpone)"),
    "-1",
    "Bucket count: N > 0 fixed, -1 dynamic (PK) / unaware (append), -2 postpone.",
)
#: ``bucket`` of a postpone-bucket table; its not yet bucketed files sit in bucket -2 (``bucket-postpone``).
POSTPONE_BUCKET = -2


def _to_positive_int(text: str) -> int:
    value = int(text.strip())
    if value <= 0:
        raise ValueError(text)
    return value


def _to_bucket_bound(text: str) -> int:
    value = int(text.strip())
    if value == 0 or value < -1:
        raise ValueError(text)
    return value


DYNAMIC_BUCKET_TARGET_ROW_NUM = _option(
    "dynamic-bucket.target-row-num",
    OptionType(_to_positive_int, "a positive integer"),
    "2000000",
    "Dynamic bucket mode: keys per bucket; a new key goes to the first bucket holding fewer, else to a new one.",
)
DYNAMIC_BUCKET_MAX_BUCKETS = _option(
    "dynamic-bucket.max-buckets",
    OptionType(_to_bucket_bound, "-1 (unlimited) or a positive integer"),
    "-1",
    "Dynamic bucket mode: most buckets per partition; beyond it new keys join existing buckets.",
)
POSTPONE_BATCH_WRITE_FIXED_BUCKET = _option(
    "postpone.batch-write-fixed-bucket",
    BOOLEAN,
    "true",
    "Postpone-bucket tables: writes go straight into real buckets (a partition's existing bucket count, else "
    "'postpone.default-bucket-num'); false = into 'bucket-postpone', for a compaction to move.",
)
POSTPONE_DEFAULT_BUCKET_NUM = _option(
    "postpone.default-bucket-num",
    OptionType(_to_positive_int, "a positive integer"),
    "1",
    "Postpone-bucket tables: bucket count of a partition that has no real buckets yet (writes and compaction).",
)
CROSS_PARTITION_UPSERT_INDEX_TTL = _option(
    "cross-partition-upsert.index-ttl",
    DURATION,
    None,
    "Cross-partition upsert: the key index a write starts from leaves out buckets whose files are all older than "
    "this (faster, but an old key written again is not found and its row appears twice).",
)
CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM = _option(
    "cross-partition-upsert.bootstrap-parallelism",
    OptionType(_to_positive_int, "a positive integer"),
    "10",
    "Cross-partition upsert: how many buckets are read at once to build the key index a write starts from.",
)
BUCKET_KEY = _option(
    "bucket-key", STRING_LIST, None, "Columns hashed to pick a bucket; unset = the trimmed primary key."
)
BUCKET_FUNCTION_TYPE = _option(
    "bucket-function.type",
    LOWERCASE,
    "default",
    "Hash function of fixed buckets; bucket pruning assumes Java's default one.",
)
FILE_FORMAT = _option(
    "file.format",
    LOWERCASE,
    "parquet",
    "Format of new data files; also the format of files whose name has no known extension.",
)
FILE_COMPRESSION = _option("file.compression", STRING, "zstd", "Codec of new data files.")
FILE_COMPRESSION_ZSTD_LEVEL = _option("file.compression.zstd-level", INTEGER, "1", "zstd level of new data files.")
PARQUET_WRITER_VERSION = _option(
    "parquet.writer.version",
    one_of(PARQUET_WRITER_VERSIONS),
    "v1",
    "Parquet writer version of new data files (Java passes it to parquet-mr): v2 = DELTA encodings for integer and "
    "string columns where no dictionary pays, data page v2; Java 1.0.0 cannot read those, Java >= 1.0.1 can.",
)
FILE_COMPRESSION_PER_LEVEL = _option(
    "file.compression.per.level", STRING, None, "Per-LSM-level codecs ('0:lz4,5:zstd'); new files are level 0."
)
FILE_SUFFIX_INCLUDE_COMPRESSION = _option(
    "file.suffix.include.compression", BOOLEAN, "false", "Name data files '<name>.<codec>.parquet'."
)
MANIFEST_COMPRESSION = _option(
    "manifest.compression",
    LOWERCASE,
    "zstd",
    "Codec of new manifest and manifest-list files (Avro codecs; zstd = zstandard).",
)
TARGET_FILE_SIZE = _option(
    "target-file-size",
    MEMORY_SIZE,
    None,
    "Size at which a data file is rolled; unset = 128 mb (PK tables) or 256 mb (append).",
)
WRITE_BUFFER_SIZE = _option(
    "write-buffer-size", MEMORY_SIZE, "256 mb", "Buffered input a write task holds before it flushes data files."
)
DATA_FILE_PREFIX = _option("data-file.prefix", STRING, "data-", "Name prefix of new data files.")
CHANGELOG_FILE_PREFIX = _option(
    "changelog-file.prefix", STRING, "changelog-", "Name prefix of new changelog files (changelog producers)."
)
DATA_FILE_PATH_DIRECTORY = _option(
    "data-file.path-directory",
    RELATIVE_DIRECTORY,
    None,
    "Directory under the table that holds the partition and bucket directories.",
)
PARTITION_DEFAULT_NAME = _option(
    "partition.default-name",
    STRING,
    "__DEFAULT_PARTITION__",
    "Directory name of a NULL (or empty string) partition value.",
)
PARTITION_LEGACY_NAME = _option(
    "partition.legacy-name",
    BOOLEAN,
    "true",
    "Spell partition values in directory names as Java's legacy toString does.",
)
METADATA_STATS_MODE = _option(
    "metadata.stats-mode", STRING, "truncate(16)", "Column stats kept in manifests: none, counts, full or truncate(N)."
)
METADATA_STATS_DENSE_STORE = _option(
    "metadata.stats-dense-store", BOOLEAN, "true", "Store stats only of the columns that have them (and list those)."
)
METADATA_STATS_KEEP_FIRST_N_COLUMNS = _option(
    "metadata.stats-keep-first-n-columns", INTEGER, None, "Only the first N columns get stats (negative = all)."
)

# Primary-key merging
MERGE_ENGINE = _option(
    "merge-engine", one_of(MERGE_ENGINES), "deduplicate", "How the records of one primary key are merged."
)
SEQUENCE_FIELD = _option(
    "sequence.field", STRING_LIST, None, "Columns that order the records of a key before the write order does."
)
SEQUENCE_FIELD_SORT_ORDER = _option(
    "sequence.field.sort-order",
    one_of(SORT_ORDERS),
    "ascending",
    "descending: a smaller sequence.field value is the newer record.",
)
IGNORE_DELETE = _option("ignore-delete", BOOLEAN, "false", "Drop DELETE/UPDATE_BEFORE records instead of merging.")
#: Engine-prefixed spellings of ``ignore-delete`` that Java still reads; any one of them set true enables it.
IGNORE_DELETE_LEGACY_KEYS = ("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")
IGNORE_UPDATE_BEFORE = _option("ignore-update-before", BOOLEAN, "false", "Drop UPDATE_BEFORE records on write.")
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = _option(
    "partial-update.remove-record-on-delete", BOOLEAN, "false", "partial-update: a DELETE removes the whole record."
)
AGGREGATION_REMOVE_RECORD_ON_DELETE = _option(
    "aggregation.remove-record-on-delete", BOOLEAN, "false", "aggregation: a DELETE removes the whole record."
)
FIELDS_DEFAULT_AGGREGATE_FUNCTION = _option(
    "fields.default-aggregate-function", LOWERCASE, None, "aggregation: function of columns without their own."
)
ROWKIND_FIELD = _option("rowkind.field", STRING, None, "Column whose +I/-U/+U/-D value is each row's kind.")

# Reads
SOURCE_SPLIT_TARGET_SIZE = _option(
    "source.split.target-size", MEMORY_SIZE, "128 mb", "Data a read task is given (splits are packed up to this size)."
)
# Java's default is 4 mb, a JVM figure: opening a small Parquet file in a Python task costs about what reading
# 64 KB does there (benchmarks/README.md, "Packing many small files"), so 4 mb made tasks of ~30 tiny files.
SOURCE_SPLIT_OPEN_FILE_COST = _option(
    "source.split.open-file-cost",
    MEMORY_SIZE,
    "64 kb",
    "Size a file counts for when splits are packed, however small it is "
    "(default calibrated for Python tasks; Java's is 4 mb).",
)

INCREMENTAL_BETWEEN_SCAN_MODE = _option(
    "incremental-between-scan-mode",
    one_of(INCREMENTAL_SCAN_MODES),
    "auto",
    "What an incremental read returns: auto (changelog files when the table "
    "produces them, else delta), delta, changelog or diff.",
)
INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT = _option(
    "incremental-between-tag-to-snapshot",
    BOOLEAN,
    "false",
    "Between two tags, read the snapshots in between (true) instead of diffing the two tags (false).",
)

# Streaming reads (read options of a stream; as table options, the defaults of every stream of the table)
STREAMING_READ_OVERWRITE = _option(
    "streaming-read-overwrite",
    BOOLEAN,
    "false",
    "Streams read the changes an OVERWRITE commit makes (by key), instead of skipping it.",
)
STREAMING_READ_APPEND_OVERWRITE = _option(
    "streaming-read-append-overwrite",
    BOOLEAN,
    "false",
    "Streams of an append table read the rows an OVERWRITE commit adds (as inserts), instead of skipping it.",
)
CONSUMER_ID = _option(
    "consumer-id",
    STRING,
    None,
    "Streams record their progress as this consumer, and expiration keeps what it still needs.",
)
CONSUMER_IGNORE_PROGRESS = _option(
    "consumer.ignore-progress",
    BOOLEAN,
    "false",
    "A new stream starts from 'scan.mode', not from its consumer's progress.",
)
TAG_TIME_EXPIRE_ENABLED = _option(
    "tag.time-expire-enabled",
    BOOLEAN,
    "true",
    "After commits, tags past their retention (tagCreateTime + tagTimeRetained) are deleted with their files.",
)
CONSUMER_MODE = _option(
    "consumer.mode",
    LOWERCASE,
    "exactly-once",
    "exactly-once: a stream with a consumer reads whole snapshots per micro-batch, so the consumer's progress "
    "is exact; at-least-once: the per-trigger limits may end a micro-batch inside a snapshot, and a restart from "
    "the consumer reads that snapshot again.",
)
CONSUMER_EXPIRATION_TIME = _option(
    "consumer.expiration-time",
    DURATION,
    None,
    "After each commit, consumers whose file is older than this are deleted, so they stop pinning snapshots.",
)

# Commits and maintenance
COMMIT_MAX_RETRIES = _option(
    "commit.max-retries", INTEGER, "10", "Commit attempts after the first that lost a race with another writer."
)
COMMIT_MIN_RETRY_WAIT = _option("commit.min-retry-wait", DURATION, "10 ms", "First back-off between attempts.")
COMMIT_MAX_RETRY_WAIT = _option("commit.max-retry-wait", DURATION, "10 s", "Longest back-off between attempts.")
COMMIT_TIMEOUT = _option(
    "commit.timeout",
    DURATION,
    None,
    "Stop retrying a commit that lost races once this long has passed since it started.",
)
COMMIT_USER_PREFIX = _option(
    "commit.user-prefix", STRING, None, "Commit users of our writes are '<prefix>_<uuid>' instead of a bare uuid."
)
MANIFEST_MERGE_MIN_COUNT = _option(
    "manifest.merge-min-count", INTEGER, "30", "Manifests a snapshot may list before a commit merges them."
)
MANIFEST_TARGET_FILE_SIZE = _option(
    "manifest.target-file-size", MEMORY_SIZE, "8 mb", "Size at which a new manifest file is rolled."
)
MANIFEST_FULL_COMPACTION_THRESHOLD_SIZE = _option(
    "manifest.full-compaction-threshold-size",
    MEMORY_SIZE,
    "16 mb",
    "Size of small or delete-holding manifests at which a commit rewrites them without the deleted files.",
)
SNAPSHOT_NUM_RETAINED_MIN = _option("snapshot.num-retained.min", INTEGER, "10", "Snapshots expiration always keeps.")
SNAPSHOT_NUM_RETAINED_MAX = _option(
    "snapshot.num-retained.max", INTEGER, str(2**31 - 1), "Snapshots expiration keeps at most."
)
SNAPSHOT_TIME_RETAINED = _option("snapshot.time-retained", DURATION, "1 h", "How long a superseded snapshot is kept.")
SNAPSHOT_EXPIRE_LIMIT = _option("snapshot.expire.limit", INTEGER, "50", "Snapshots one expiration deletes at most.")
CHANGELOG_NUM_RETAINED_MIN = _option(
    "changelog.num-retained.min",
    INTEGER,
    None,
    "Changelogs always kept (default snapshot.num-retained.min); larger: expired snapshots live on as changelog.",
)
CHANGELOG_NUM_RETAINED_MAX = _option(
    "changelog.num-retained.max",
    INTEGER,
    None,
    "Changelogs kept at most (default snapshot.num-retained.max); larger: expired snapshots live on as changelog.",
)
CHANGELOG_TIME_RETAINED = _option(
    "changelog.time-retained",
    DURATION,
    None,
    "How long a changelog is kept (default snapshot.time-retained); longer: expired snapshots live on as changelog.",
)

# Tags
TAG_AUTOMATIC_CREATION = _option(
    "tag.automatic-creation",
    one_of(TAG_CREATION_MODES),
    "none",
    "Create tags after commits: none, process-time, watermark or batch.",
)
TAG_CREATION_PERIOD = _option("tag.creation-period", one_of(TAG_CREATION_PERIODS), "daily", "Period of automatic tags.")
TAG_CREATION_DELAY = _option("tag.creation-delay", DURATION, "0 ms", "How long after a period ends its tag is created.")
TAG_PERIOD_FORMATTER = _option(
    "tag.period-formatter", one_of(TAG_PERIOD_FORMATTERS), "with_dashes", "Name format of automatic tags."
)
TAG_NUM_RETAINED_MAX = _option(
    "tag.num-retained-max", NON_NEGATIVE_INTEGER, None, "Automatic tags kept at most (older ones are deleted)."
)
TAG_DEFAULT_TIME_RETAINED = _option(
    "tag.default-time-retained", DURATION, None, "Retention written into tags created without one."
)
TAG_CREATION_PERIOD_DURATION = _option(
    "tag.creation-period-duration",
    POSITIVE_DURATION,
    None,
    "Any tag period (tags named yyyyMMddHHmm); overrides tag.creation-period.",
)
TAG_AUTOMATIC_COMPLETION = _option(
    "tag.automatic-completion", BOOLEAN, "false", "Also create tags for periods without a commit."
)
TAG_BATCH_CUSTOMIZED_NAME = _option("tag.batch.customized-name", STRING, None, "Fixed tag name of batch mode.")
SINK_WATERMARK_TIME_ZONE = _option(
    "sink.watermark-time-zone", STRING, "UTC", "Zone in which watermark-mode tags read snapshot watermarks."
)
SINK_PROCESS_TIME_ZONE = _option(
    "sink.process-time-zone",
    STRING,
    None,
    "Zone in which process-time and batch tags read commit times; unset = local zone.",
)

# Branches and chain tables
SCAN_FALLBACK_BRANCH = _option(
    "scan.fallback-branch", STRING, None, "Branch that supplies the partitions this branch lacks."
)
CHAIN_TABLE_ENABLED = _option("chain-table.enabled", BOOLEAN, "false", "The table is a chain table.")
SCAN_FALLBACK_SNAPSHOT_BRANCH = _option(
    "scan.fallback-snapshot-branch", STRING, None, "Chain table: the branch of full partitions."
)
SCAN_FALLBACK_DELTA_BRANCH = _option(
    "scan.fallback-delta-branch", STRING, None, "Chain table: the branch of incremental partitions."
)
CHAIN_TABLE_CHAIN_PARTITION_KEYS = _option(
    "chain-table.chain-partition-keys", STRING_LIST, None, "Chain table: the partition keys that form the chain."
)
CHAIN_TABLE_SPLIT_KEY_RANGE_ENABLED = _option(
    "chain-table.split.key-range-enabled", BOOLEAN, "true", "Chain table: split chain reads by key range."
)
CHAIN_TABLE_COMPACT_AUTO_THRESHOLD = _option(
    "chain-table.compact.auto-threshold", INTEGER, None, "Chain table: compact a partition after this many deltas."
)
CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT = _option(
    "chain-table.streaming.merge-snapshot",
    BOOLEAN,
    "false",
    "Chain table: a stream starts with each group's latest snapshot partition merged by key with the later "
    "delta partitions (false: both emitted as they are).",
)
PARTITION_EXPIRATION_TIME = _option(
    "partition.expiration-time",
    DURATION,
    None,
    "After a commit, partitions older than this are dropped (one OVERWRITE commit deleting their files).",
)
PARTITION_EXPIRATION_CHECK_INTERVAL = _option(
    "partition.expiration-check-interval",
    DURATION,
    "1 h",
    "Per process and table: commits check for expired partitions at most this often (0: every commit).",
)
PARTITION_EXPIRATION_STRATEGY = _option(
    "partition.expiration-strategy",
    one_of(PARTITION_EXPIRATION_STRATEGIES),
    "values-time",
    "A partition's time: from its values (values-time) or its newest file's creation time (update-time).",
)
PARTITION_MARK_DONE_ACTION = _option(
    "partition.mark-done-action",
    STRING_LIST,
    "success-file",
    "What mark_partition_done does: success-file writes <partition>/_SUCCESS (the actions that need a metastore "
    "or a custom class are refused).",
)
PARTITION_EXPIRATION_MAX_NUM = _option(
    "partition.expiration-max-num",
    OptionType(_to_positive_int, "a positive integer"),
    "100",
    "Partitions one expiration drops at most.",
)
PARTITION_EXPIRATION_BATCH_SIZE = _option(
    "partition.expiration-batch-size",
    OptionType(_to_positive_int, "a positive integer"),
    None,
    "Partitions one drop commit of an expiration holds.",
)
PARTITION_TIMESTAMP_PATTERN = _option(
    "partition.timestamp-pattern", STRING, None, "How partition values form a timestamp ('$dt $hh:00:00')."
)
PARTITION_TIMESTAMP_FORMATTER = _option(
    "partition.timestamp-formatter", STRING, None, "Java DateTimeFormatter pattern of that timestamp."
)

# Table kind and metadata
CHANGELOG_PRODUCER = _option("changelog-producer", LOWERCASE, "none", "How Paimon produces a changelog.")
DELETION_VECTORS_ENABLED = _option(
    "deletion-vectors.enabled",
    BOOLEAN,
    "false",
    "Deletion vectors: writes compact level 0 at once and mark superseded rows, as Java's writers do.",
)
ROW_TRACKING_ENABLED = _option(
    "row-tracking.enabled",
    BOOLEAN,
    "false",
    "Row tracking (append tables with bucket -1): each commit numbers its new rows (the files' first row ids, the "
    "snapshot's next row id); reads return the ids with 'read.row-tracking-columns' or $row_tracking.",
)
DATA_EVOLUTION_ENABLED = _option(
    "data-evolution.enabled",
    BOOLEAN,
    "false",
    "Data evolution (needs row tracking): files may hold some columns of existing rows, assembled by row id on "
    "read; t.write_arrow(mode='update' | 'upsert') writes such files.",
)
DELETION_VECTORS_MERGE_ON_READ = _option(
    "deletion-vectors.merge-on-read",
    BOOLEAN,
    "false",
    "Batch reads of a deletion-vector table also merge level-0 files.",
)
DELETION_VECTORS_BITMAP64 = _option(
    "deletion-vectors.bitmap64",
    BOOLEAN,
    "false",
    "New deletion vectors are 64-bit (Iceberg v3's layout) instead of 32-bit; reads decode both.",
)
FILE_INDEX_IN_MANIFEST_THRESHOLD = _option(
    "file-index.in-manifest-threshold",
    MEMORY_SIZE,
    "500 B",
    "A data file's index container of at most this many bytes is kept in the manifest, a larger one in an "
    "index file beside the data file.",
)
FILE_INDEX_READ_ENABLED = _option(
    "file-index.read.enabled",
    BOOLEAN,
    "true",
    "Reads skip data files whose bloom-filter or bitmap index excludes the filter.",
)
ADD_COLUMN_BEFORE_PARTITION = _option(
    "add-column-before-partition",
    BOOLEAN,
    "false",
    "A column added without a position goes before the first partition column.",
)
DISABLE_ALTER_COLUMN_NULL_TO_NOT_NULL = _option(
    "alter-column-null-to-not-null.disabled",
    BOOLEAN,
    "true",
    "Schema changes may not make a nullable column NOT NULL (set 'false' to allow it when no NULL is stored).",
)
DISABLE_EXPLICIT_TYPE_CASTING = _option(
    "disable-explicit-type-casting",
    BOOLEAN,
    "false",
    "Column type changes are limited to Paimon's implicit (widening) casts.",
)
VARIANT_SHREDDING_SCHEMA = _option(
    "variant.shreddingSchema",
    STRING,
    None,
    "VARIANT columns written shredded: a JSON ROW type naming each column and the shape of its values to keep as "
    "typed Parquet columns (legacy key 'parquet.variant.shreddingSchema').",
)
WRITE_MERGE_SCHEMA = _option(
    "write.merge-schema",
    BOOLEAN,
    "false",
    "A write whose data has columns the table lacks adds them to the table, in the same commit as the data "
    "(also a Spark write option and a Table.write_arrow argument).",
)
WRITE_MERGE_SCHEMA_TYPE_WIDENING = _option(
    "write.merge-schema.type-widening",
    BOOLEAN,
    "false",
    "With 'write.merge-schema': a column whose data has a wider type (INT into BIGINT, a larger DECIMAL precision) "
    "is widened to it.",
)
WRITE_MERGE_SCHEMA_EXPLICIT_CAST = _option(
    "write.merge-schema.explicit-cast",
    BOOLEAN,
    "false",
    "With 'write.merge-schema.type-widening': a column also takes a type Paimon reaches only by an explicit cast "
    "(BIGINT into INT, STRING into DATE); existing values must convert when read.",
)
TYPE = _option("type", LOWERCASE, "table", "Kind of table: ordinary and materialized tables.")
# Iceberg-compatible metadata (metadata/iceberg/): Iceberg readers see the table through it
ICEBERG_STORAGE_TYPES = ("disabled", "table-location", "hadoop-catalog", "hive-catalog", "rest-catalog")
#: The storage types whose metadata pyspark-paimon writes (the others also register the table in a catalog).
ICEBERG_STORAGE_WRITTEN = ("disabled", "table-location", "hadoop-catalog")
ICEBERG_STORAGE_LOCATIONS = ("table-location", "catalog-location")
METADATA_ICEBERG_STORAGE = _option(
    "metadata.iceberg.storage",
    one_of(ICEBERG_STORAGE_TYPES),
    "disabled",
    "Write Iceberg metadata after every commit, so Iceberg readers read the table's data files.",
)
METADATA_ICEBERG_COMPATIBLE = _option(
    "metadata.iceberg-compatible",
    BOOLEAN,
    "false",
    "Paimon 0.9's switch for Iceberg metadata in the table's directory ('metadata.iceberg.storage' = "
    "'table-location' since 1.0).",
)
METADATA_ICEBERG_STORAGE_LOCATION = _option(
    "metadata.iceberg.storage-location",
    one_of(ICEBERG_STORAGE_LOCATIONS),
    None,
    "Where the Iceberg metadata goes: the table's directory, or <warehouse>/iceberg/<db>/<table>.",
)
METADATA_ICEBERG_FORMAT_VERSION = _option(
    "metadata.iceberg.format-version",
    one_of(("2", "3")),
    "2",
    "Iceberg format version of the metadata; 3 also publishes 64-bit deletion vectors.",
)
METADATA_ICEBERG_MANIFEST_COMPRESSION = _option(
    "metadata.iceberg.manifest-compression", LOWERCASE, "snappy", "Avro codec of the Iceberg manifests."
)
METADATA_ICEBERG_MANIFEST_LEGACY_VERSION = _option(
    "metadata.iceberg.manifest-legacy-version",
    BOOLEAN,
    "false",
    "Iceberg manifest lists with Iceberg 1.4's field names (for readers such as AWS Athena).",
)
METADATA_ICEBERG_COMPACTION_MIN_FILE_NUM = _option(
    "metadata.iceberg.compaction.min.file-num",
    INTEGER,
    "10",
    "Small Iceberg manifests that make a commit merge them.",
)
METADATA_ICEBERG_COMPACTION_MAX_FILE_NUM = _option(
    "metadata.iceberg.compaction.max.file-num",
    INTEGER,
    "50",
    "Small Iceberg manifests that make a commit merge them whatever their size.",
)
METADATA_ICEBERG_DELETE_AFTER_COMMIT = _option(
    "metadata.iceberg.delete-after-commit.enabled",
    BOOLEAN,
    "true",
    "Delete old Iceberg metadata JSON versions after each commit.",
)
METADATA_ICEBERG_PREVIOUS_VERSIONS_MAX = _option(
    "metadata.iceberg.previous-versions-max",
    NON_NEGATIVE_INTEGER,
    "0",
    "Old Iceberg metadata JSON versions kept after each commit.",
)
# Compaction (datasource/compact/compact.py; automatic compaction after a write: engine/auto_compact.py)
# Compaction (datasource/compact/; automatic compaction after a write: auto_compact in compact.py)
NUM_SORTED_RUN_COMPACTION_TRIGGER = _option(
    "num-sorted-run.compaction-trigger",
    INTEGER,
    "5",
    "Sorted runs (each level-0 file, each level above) that trigger a compaction of a primary-key bucket.",
)
NUM_LEVELS = _option(
    "num-levels", INTEGER, None, "LSM levels of primary-key buckets; unset = num-sorted-run.compaction-trigger + 1."
)
COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT = _option(
    "compaction.max-size-amplification-percent",
    INTEGER,
    "200",
    "Universal compaction: compact everything once the newer runs exceed this percentage of the oldest run.",
)
COMPACTION_SIZE_RATIO = _option(
    "compaction.size-ratio",
    INTEGER,
    "1",
    "Universal compaction: percentage flexibility when comparing sorted-run sizes.",
)
COMPACTION_MIN_FILE_NUM = _option(
    "compaction.min.file-num", INTEGER, "5", "Append tables: the number of small files that triggers their compaction."
)
COMPACTION_FILE_NUM_LIMIT = _option(
    "compaction.file-num-limit",
    INTEGER,
    "100000",
    "Unaware-bucket append tables: at most this many small files are considered by one compaction.",
)
COMPACTION_SMALL_FILE_RATIO = _option(
    "compaction.small-file-ratio",
    OptionType(float, "a number"),
    "0.7",
    "Files smaller than target-file-size times this ratio are small files.",
)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE = _option(
    "changelog-producer.row-deduplicate",
    BOOLEAN,
    "false",
    "full-compaction changelog: no -U/+U pair for a key whose merged row did not change.",
)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS = _option(
    "changelog-producer.row-deduplicate-ignore-fields",
    STRING_LIST,
    None,
    "Columns changelog-producer.row-deduplicate does not compare.",
)
FULL_COMPACTION_DELTA_COMMITS = _option(
    "full-compaction.delta-commits",
    INTEGER,
    None,
    "Batch writes: > 0 compacts the written primary-key buckets fully after every write.",
)
COMPACTION_FORCE_UP_LEVEL_0 = _option(
    "compaction.force-up-level-0",
    BOOLEAN,
    "false",
    "Automatic compaction always moves level-0 files up (first-row tables do).",
)
FORCE_LOOKUP = _option(
    "force-lookup",
    BOOLEAN,
    "false",
    "Primary-key tables compact as lookup tables: level-0 files move up after every write, merged with the "
    "newest older record of their keys.",
)
# Clustering (datasource/write/clustering.py; ordered compaction and incremental clustering:
# datasource/compact/ordered_compact.py)
CLUSTERING_COLUMNS = _option(
    "clustering.columns",
    STRING_LIST,
    None,
    "Unaware-bucket append tables: writes sort each flush by these columns, and incremental clustering "
    "(clustering.incremental) rewrites files ordered by them.",
)
#: Java's legacy spellings of ``clustering.columns`` and ``clustering.strategy``.
CLUSTERING_COLUMNS_LEGACY_KEYS = ("sink.clustering.by-columns",)
CLUSTERING_STRATEGY = _option(
    "clustering.strategy",
    one_of(("auto", "zorder", "hilbert", "order")),
    "auto",
    "The order of clustering.columns: zorder, hilbert or order; auto = order for one column, zorder for up to 4, "
    "hilbert for more.",
)
CLUSTERING_STRATEGY_LEGACY_KEYS = ("sink.clustering.strategy",)
CLUSTERING_INCREMENTAL = _option(
    "clustering.incremental",
    BOOLEAN,
    "false",
    "Unaware-bucket append tables: compaction clusters files level by level (Paimon 1.3's incremental clustering) "
    "instead of packing small files.",
)
ZORDER_VAR_LENGTH_CONTRIBUTION = _option(
    "zorder.var-length-contribution",
    INTEGER,
    "8",
    "The leading bytes of a string or binary column a z-order key uses.",
)
WRITE_ONLY = _option(
    "write-only", BOOLEAN, "false", "Commits never compact or expire (a dedicated maintenance job does)."
)
#: Java's legacy spelling of ``write-only``.
WRITE_ONLY_LEGACY_KEYS = ("write.compaction-skip",)

# ------------------------------------------------------------------------------------------------ per field
FIELD_AGGREGATE_FUNCTION = _field_option(
    "aggregate-function",
    LOWERCASE,
    None,
    "aggregation: the column's function (else fields.default-aggregate-function).",
)
FIELD_IGNORE_RETRACT = _field_option(
    "ignore-retract", BOOLEAN, "false", "aggregation: retractions do not change the column."
)
FIELD_SEQUENCE_GROUP = _field_option(
    "sequence-group", STRING_LIST, None, "Sequence groups (datasource/merge/merge.py refuses them when it merges)."
)
FIELD_STATS_MODE = _field_option("stats-mode", STRING, None, "The column's stats mode (else metadata.stats-mode).")
FIELD_DISTINCT = _field_option(
    "distinct", BOOLEAN, "false", "aggregation listagg: distinct items (datasource/merge/merge.py refuses 'true')."
)
# A blank delimiter is a delimiter (items joined with nothing between them), not an unset option.
FIELD_LIST_AGG_DELIMITER = _field_option(
    "list-agg-delimiter",
    OptionType(STRING.parse, "text", blank_is_unset=False),
    ",",
    "aggregation listagg: the delimiter.",
)


def _declared(kind: type, name_attr: str) -> tuple[Any, ...]:
    """Every constant of ``kind`` in this module, in declaration order (Java's ``CoreOptions.getOptions()``
    finds its options by reflection too), refusing two constants for one key: a second declaration of a key
    would let two call sites disagree on its default."""
    found = [v for v in globals().values() if isinstance(v, kind)]
    names = [getattr(v, name_attr) for v in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise AssertionError(f"options declared twice: {duplicates}")
    return tuple(found)


#: Every table option with a typed constant (honoured ones, and a few refused ones code reads to tailor errors).
OPTIONS: tuple[ConfigOption[Any], ...] = _declared(ConfigOption, "key")
#: Every per-field option with a typed constant.
FIELD_OPTIONS: tuple[FieldOption[Any], ...] = _declared(FieldOption, "suffix")

# ------------------------------------------------------------------------------------------------ the registry
# Constants whose key accepts only some values, or that code reads although we do not implement the key.
_CONSTANT_RULES: dict[str, KeyRule] = {
    TYPE.key: KeyRule(
        "honoured",
        "only ordinary Paimon tables are read (materialized tables too) and written here",
        read_ok=("table", "materialized-table"),
        write_ok=("table",),
        fix="read or write this table with Paimon (Java)",
    ),
    FILE_FORMAT.key: KeyRule(
        "honoured",
        "only parquet (read and write) and orc (read) data files are supported",
        read_ok=("parquet", "orc"),
        fix="read and write this table with Paimon (Java), or copy it into a parquet table",
    ),
    MERGE_ENGINE.key: KeyRule(
        "honoured", "the supported merge engines are " + ", ".join(MERGE_ENGINES), read_ok=MERGE_ENGINES
    ),
    BUCKET_FUNCTION_TYPE.key: KeyRule(
        "honoured", "only Paimon's default bucket function is supported", read_ok=("default",)
    ),
    CHANGELOG_PRODUCER.key: KeyRule(
        "honoured",
        "batch reads never read changelog files; 'input' writes every input row to changelog files, "
        "'full-compaction' makes them at full compaction, streams read them; 'lookup' changelog comes from "
        "Java's lookup compaction (ours writes none)",
        read_ok=("none", "input", "lookup", "full-compaction"),
        write_ok=("none", "input", "lookup", "full-compaction"),
    ),
    METADATA_ICEBERG_STORAGE.key: KeyRule(
        "honoured",
        "pyspark-paimon writes Iceberg metadata for 'table-location' and 'hadoop-catalog'; 'hive-catalog' and "
        "'rest-catalog' also register the table in a catalog, which it does not do (ours would leave it stale)",
        read_ok=ICEBERG_STORAGE_TYPES,
        write_ok=ICEBERG_STORAGE_WRITTEN,
        fix="write this table with Paimon (Java), or use 'table-location' or 'hadoop-catalog' and register the "
        "metadata in the catalog yourself",
    ),
    INCREMENTAL_BETWEEN_SCAN_MODE.key: KeyRule(
        "honoured",
        "incremental reads here return the changed data files (delta) or the rows that differ (diff); "
        "'changelog' is not implemented",
        read_ok=("auto", "delta", "diff"),
    ),
}
_FIELD_CONSTANT_RULES: dict[str, KeyRule] = {
    FIELD_SEQUENCE_GROUP.suffix: KeyRule(
        "refused", "datasource/merge/merge.py refuses sequence groups when it merges a key"
    ),
    FIELD_DISTINCT.suffix: KeyRule(
        "refused", "datasource/merge/merge.py refuses distinct listagg when it merges a key"
    ),
}

#: Every option key Java Paimon defines (and the legacy spellings it still reads) -> what we do with it.
KEYS: dict[str, KeyRule] = {
    **{o.key: _CONSTANT_RULES.get(o.key, KeyRule("honoured", o.description)) for o in OPTIONS},
    **{k: KeyRule("honoured", f"legacy spelling of '{IGNORE_DELETE.key}'") for k in IGNORE_DELETE_LEGACY_KEYS},
    **{k: KeyRule("honoured", f"legacy spelling of '{WRITE_ONLY.key}'") for k in WRITE_ONLY_LEGACY_KEYS},
    "parquet.variant.shreddingSchema": KeyRule("honoured", f"legacy spelling of '{VARIANT_SHREDDING_SCHEMA.key}'"),
    **{
        k: KeyRule("honoured", f"legacy spelling of '{CLUSTERING_COLUMNS.key}'") for k in CLUSTERING_COLUMNS_LEGACY_KEYS
    },
    **{
        k: KeyRule("honoured", f"legacy spelling of '{CLUSTERING_STRATEGY.key}'")
        for k in CLUSTERING_STRATEGY_LEGACY_KEYS
    },
}
if set(KEYS) & set(NOT_HONOURED):
    raise AssertionError(f"keys both honoured and not: {sorted(set(KEYS) & set(NOT_HONOURED))}")
KEYS.update(NOT_HONOURED)
#: Per-field option suffixes (``fields.<column>.<suffix>``) -> what we do with them.
FIELD_KEY_RULES: dict[str, KeyRule] = {
    **{o.suffix: _FIELD_CONSTANT_RULES.get(o.suffix, KeyRule("honoured", o.description)) for o in FIELD_OPTIONS},
    **FIELD_SUFFIX_RULES,
}
#: Honoured table options and their defaults (None = no default), derived from the constants above.
HONOURED: dict[str, str | None] = {o.key: o.default for o in OPTIONS if KEYS[o.key].kind == "honoured"}
#: Per-field options (``fields.<name>.<suffix>``) that have a typed constant.
FIELD_OPTION_SUFFIXES: tuple[str, ...] = tuple(o.suffix for o in FIELD_OPTIONS)
_PREFIXES_LONGEST_FIRST = sorted(PREFIX_RULES, key=lambda item: -len(item[0]))


# ------------------------------------------------------------------------------------------------ typed view
class CoreOptions:
    """Typed, read-only view of one table's options (a schema's, possibly overlaid by a read or write).

    Every read goes through a :class:`ConfigOption`, so each key, default and parse rule lives in one place;
    values are parsed on access (the mapping is not copied, nothing is cached, so the view never goes stale).
    A missing or blank value means "use the default"; an unparsable one raises :class:`OptionError` naming
    the option, the value and the expected form.
    """

    __slots__ = ("_options",)

    def __init__(self, options: Mapping[str, str]) -> None:
        self._options = options

    @property
    def options(self) -> Mapping[str, str]:
        return self._options

    def text(self, option: ConfigOption[Any]) -> str | None:
        """The option's stored text, None when unset (blank counts as unset unless blank is a value)."""
        raw = self._options.get(option.key)
        if raw is None:
            return None
        raw = str(raw)
        return None if option.value_type.blank_is_unset and not raw.strip() else raw

    def is_set(self, option: ConfigOption[Any]) -> bool:
        return self.text(option) is not None

    def get(self, option: ConfigOption[T]) -> T:
        """The parsed value, else the parsed default; None only for an option without a default (typed
        ``ConfigOption[X | None]``)."""
        raw = self.text(option)
        if raw is None:
            raw = option.default
            if raw is None:
                return None  # type: ignore[return-value]  # T includes None for options without a default
        try:
            return option.value_type.parse(raw)
        except ValueError:
            raise OptionError(f"Option '{option.key}' must be {option.value_type.expected}, got '{raw}'.") from None

    def field(self, column: str, option: FieldOption[T]) -> T:
        """The per-column option ``fields.<column>.<suffix>``."""
        return self.get(option.of(column))

    def field_keys(self, option: FieldOption[Any]) -> list[str]:
        """Keys of ``option`` set for any column (e.g. every ``fields.*.sequence-group``)."""
        suffix = "." + option.suffix
        return [k for k in self._options if k.startswith("fields.") and k.endswith(suffix)]

    # -- the options most call sites need -------------------------------------------------------------
    @property
    def bucket(self) -> int:
        return self.get(BUCKET)

    @property
    def bucket_keys(self) -> list[str]:
        """The ``bucket-key`` columns ([] when unset; ``TableSchema.bucket_keys`` falls back to the key)."""
        return self.get(BUCKET_KEY) or []

    @property
    def file_format(self) -> str:
        return self.get(FILE_FORMAT)

    @property
    def merge_engine(self) -> str:
        return self.get(MERGE_ENGINE)

    @property
    def sequence_fields(self) -> list[str]:
        """The ``sequence.field`` columns in order; [] when unset."""
        return self.get(SEQUENCE_FIELD) or []

    @property
    def sequence_descending(self) -> bool:
        """True when a smaller ``sequence.field`` value is the newer record."""
        return self.get(SEQUENCE_FIELD_SORT_ORDER) == "descending"

    @property
    def ignore_delete(self) -> bool:
        """``ignore-delete``, or any of its legacy engine-prefixed spellings (each parsed, in order)."""
        return self.get(IGNORE_DELETE) or any(
            self.get(replace(IGNORE_DELETE, key=key)) for key in IGNORE_DELETE_LEGACY_KEYS
        )

    @property
    def partition_default_name(self) -> str:
        return self.get(PARTITION_DEFAULT_NAME)

    @property
    def partition_legacy_name(self) -> bool:
        return self.get(PARTITION_LEGACY_NAME)

    @property
    def deletion_vectors_enabled(self) -> bool:
        return self.get(DELETION_VECTORS_ENABLED)

    @property
    def data_file_directory(self) -> str | None:
        """``data-file.path-directory``: the directory (relative to the table) that holds the partition and
        bucket directories; None = the table directory itself."""
        return self.get(DATA_FILE_PATH_DIRECTORY)

    @property
    def write_only(self) -> bool:
        """``write-only`` (or its legacy spelling ``write.compaction-skip``): writes never compact."""
        return self.get(WRITE_ONLY) or any(self.get(replace(WRITE_ONLY, key=k)) for k in WRITE_ONLY_LEGACY_KEYS)

    @property
    def clustering_columns(self) -> list[str]:
        """``clustering.columns`` (or its legacy spelling ``sink.clustering.by-columns``); [] when unset."""
        for key in (CLUSTERING_COLUMNS.key, *CLUSTERING_COLUMNS_LEGACY_KEYS):
            found = self.get(replace(CLUSTERING_COLUMNS, key=key))
            if found:
                return found
        return []

    @property
    def clustering_strategy(self) -> str:
        """``clustering.strategy`` (or ``sink.clustering.strategy``): auto, zorder, hilbert or order."""
        for key in (CLUSTERING_STRATEGY.key, *CLUSTERING_STRATEGY_LEGACY_KEYS):
            option = replace(CLUSTERING_STRATEGY, key=key)
            if self.is_set(option):
                return self.get(option)
        return self.get(CLUSTERING_STRATEGY)

    @property
    def num_levels(self) -> int:
        """``num-levels``; unset, Java's rule: ``num-sorted-run.compaction-trigger`` + 1 (so full compaction
        never falls to level 0)."""
        levels = self.get(NUM_LEVELS)
        if levels is None:
            levels = self.get(NUM_SORTED_RUN_COMPACTION_TRIGGER) + 1
        if levels < 2:
            raise OptionError(
                f"Option 'num-levels' = {levels} of this table is too small: compaction needs level 0 "
                "and at least one level above it. Set 'num-levels' >= 2 (or unset it)."
            )
        return levels

    def compaction_file_size(self, primary_key_table: bool) -> int:
        """Files smaller than this are *small* (Java's ``compactionFileSize``): target-file-size times
        ``compaction.small-file-ratio``."""
        return int(self.target_file_size(primary_key_table) * self.get(COMPACTION_SMALL_FILE_RATIO))

    def new_commit_user(self) -> str:
        """A fresh commit user for a write, ``<commit.user-prefix>_<uuid>`` as Java builds it (a bare uuid
        without the option)."""
        prefix = self.get(COMMIT_USER_PREFIX)
        return f"{prefix}_{uuid.uuid4()}" if prefix else str(uuid.uuid4())

    def target_file_size(self, primary_key_table: bool) -> int:
        """``target-file-size``; unset, Paimon's default depends on the table kind (128 mb PK, 256 mb append)."""
        size = self.get(TARGET_FILE_SIZE)
        if size is None:
            return (128 if primary_key_table else 256) * 1024**2
        return size


# ------------------------------------------------------------------------------------------------ checks
def _field_suffix(key: str) -> str | None:
    """The known suffix of a per-field key ``fields.<column>.<suffix>`` (longest match), else None."""
    if not key.startswith("fields."):
        return None
    rest = key[len("fields.") :]
    matches = [s for s in FIELD_KEY_RULES if rest.endswith("." + s) and len(rest) > len(s) + 1]
    return max(matches, key=len) if matches else None


def is_field_option(key: str) -> bool:
    return _field_suffix(key) is not None


def rule_of(key: str) -> KeyRule | None:
    """What we do with ``key``: an exact key first, then a per-field option, then a key family; None for a
    key Java does not define."""
    rule = KEYS.get(key)
    if rule is not None:
        return rule
    suffix = _field_suffix(key)
    if suffix is not None:
        return FIELD_KEY_RULES[suffix]
    for prefix, prefix_rule in _PREFIXES_LONGEST_FIRST:
        if key.startswith(prefix):
            return prefix_rule
    return None


def is_known(key: str) -> bool:
    return rule_of(key) is not None


_BY_KEY: dict[str, ConfigOption[Any]] = {o.key: o for o in OPTIONS}
_BY_SUFFIX: dict[str, FieldOption[Any]] = {o.suffix: o for o in FIELD_OPTIONS}


def _parse_honoured(view: CoreOptions, key: str) -> None:
    """Parse ``key``'s value when it has a typed constant (raising its ``OptionError`` when it does not parse)."""
    option = _BY_KEY.get(key)
    if option is not None:
        view.get(option)
        return
    suffix = _field_suffix(key)
    field_option = _BY_SUFFIX.get(suffix) if suffix is not None else None
    if suffix is not None and field_option is not None:
        view.field(key[len("fields.") : -len(suffix) - 1], field_option)


def validate_table_options(
    options: Mapping[str, str], *, creating: bool, writing: bool = False, table: str = "the table"
) -> None:
    """Refuse values whose semantics we cannot honour: on a read, those that change what it returns; on a write
    (``writing``) or a table creation (``creating``), also those that change what the write must produce.
    When creating, also refuse keys Java does not define (a typo must not become a silent no-op), and values of
    honoured keys that do not parse (a bad value must fail when the table is made, not at its first write)."""
    view = CoreOptions(options)
    for key, value in options.items():
        rule = rule_of(key)
        if rule is None:
            if creating:
                hint = difflib.get_close_matches(key, list(KEYS), n=1)
                raise OptionError(
                    f"Unknown table option '{key}'"
                    + (f" (did you mean '{hint[0]}'?)" if hint else "")
                    + ". pyspark-paimon refuses options it does not understand; see the option reference in the docs "
                    "(docs/reference/options.md)."
                )
            continue
        if creating:
            _parse_honoured(view, key)
        if rule.refused_value(str(value), writing=writing or creating):
            action = "read or written" if rule.refused_value(str(value), writing=False) else "written or created"
            raise OptionError(
                f"Option '{key}' = '{value}' of {table} is not supported: {rule.reason}, so the table "
                f"cannot be {action} here. Fix: {rule.fix}."
            )
    validate_merge_options(options, creating=creating, table=table)


#: Aggregate functions Java Paimon removed, with what to use instead. ``count`` went in Paimon 0.9 (#3932):
#: an aggregated row cannot tell a retraction of a NULL from one of a value, so no count is right under
#: updates; Java fails on it ("Use unsupported aggregation"), and so do we rather than count differently.
REMOVED_AGGREGATE_FUNCTIONS: dict[str, str] = {
    "count": "use 'sum' over a column that holds 1 for each row to count (e.g. write `1 AS cnt`, or "
    "`CASE WHEN <condition> THEN 1 ELSE 0 END` to count matching rows), or count at query time",
}


def removed_aggregate_function_error(func: str, column: str | None, key: str, table: str = "the table") -> OptionError:
    """The error for an aggregate function Java removed, naming the column, the option and the alternatives."""
    what = f"column '{column}'" if column is not None else "the columns without their own function"
    return OptionError(
        f"Aggregate function '{func}' of {what} (option '{key}' of {table}) was removed from Paimon "
        f"and Java Paimon refuses it; {REMOVED_AGGREGATE_FUNCTIONS[func]}."
    )


def _column_of(key: str, option: FieldOption[Any]) -> str:
    """The column of a per-field key: ``fields.v.ignore-retract`` -> ``v``."""
    return key[len("fields.") : -len("." + option.suffix)]


def validate_merge_options(
    options: Mapping[str, str], *, creating: bool, table: str = "the table", engine: str | None = None
) -> None:
    """Refuse merge-engine option combinations Java Paimon refuses, so a table we create (or read) never
    means something different to us than to Java.

    When ``creating``, also refuses what Java's ``SchemaValidation`` refuses only when a schema is created or
    altered (a table Java already holds is read as Java reads it). ``engine`` overrides ``merge-engine``."""
    core = CoreOptions(options)
    engine = engine or core.merge_engine
    if engine in ("aggregation", "partial-update"):
        # SchemaValidation.validateMergeFunctionFactory looks every configured function up (deduplicate and
        # first-row tables never aggregate, so their function options are inert).
        for key in sorted(core.field_keys(FIELD_AGGREGATE_FUNCTION)):
            column = _column_of(key, FIELD_AGGREGATE_FUNCTION)
            func = core.field(column, FIELD_AGGREGATE_FUNCTION)
            if func in REMOVED_AGGREGATE_FUNCTIONS:
                raise removed_aggregate_function_error(func, column, key, table)
        default = core.get(FIELDS_DEFAULT_AGGREGATE_FUNCTION)
        if default in REMOVED_AGGREGATE_FUNCTIONS:
            raise removed_aggregate_function_error(default, None, FIELDS_DEFAULT_AGGREGATE_FUNCTION.key, table)
    if engine == "partial-update" and core.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE) and core.ignore_delete:
        # PartialUpdateMergeFunction.Factory: checkState(!(removeRecordOnDelete && ignoreDelete)).
        raise OptionError(
            f"Options '{PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key}' and '{IGNORE_DELETE.key}' of "
            f"{table} conflict (Java Paimon refuses them together): a DELETE either removes the row "
            "or is ignored. Set one of them to 'false'."
        )
    if engine == "aggregation" and core.get(AGGREGATION_REMOVE_RECORD_ON_DELETE):
        # FieldAggregatorFactory.create: a DELETE that removes the row and a column that ignores retractions
        # contradict each other.
        for key in sorted(core.field_keys(FIELD_IGNORE_RETRACT)):
            if core.field(_column_of(key, FIELD_IGNORE_RETRACT), FIELD_IGNORE_RETRACT):
                raise OptionError(
                    f"Options '{AGGREGATION_REMOVE_RECORD_ON_DELETE.key}' and '{key}' of {table} "
                    "conflict (Java Paimon refuses them together): a DELETE either removes the row "
                    "or is ignored by the column. Set one of them to 'false'."
                )
    if creating:
        # SchemaValidation.validateSequenceField: the sequence field is never aggregated (it takes the newest
        # record's value), so a function configured for it would be silently ignored.
        for name in core.sequence_fields:
            if core.field(name, FIELD_AGGREGATE_FUNCTION) is not None:
                raise OptionError(
                    f"Option '{FIELD_AGGREGATE_FUNCTION.of(name).key}' of {table} sets an aggregate function on "
                    f"the sequence field '{name}'; sequence fields are never aggregated (they keep the newest "
                    "record's value). Remove the option."
                )


def get(options: Mapping[str, str], key: str) -> str | None:
    """The raw text of any option key, else its registry default: for code that handles keys generically
    (comparing a write's table options with a table's). Code reading a known option uses :class:`CoreOptions`."""
    value = options.get(key)
    return value if value is not None else HONOURED.get(key)


def check_read_options(options: Iterable[str], allowed: Iterable[str], what: str) -> None:
    allowed_set = {a.lower() for a in allowed}
    for key in options:
        if key.lower() not in allowed_set:
            hint = difflib.get_close_matches(key.lower(), sorted(allowed_set), n=1)
            raise OptionError(
                f"Unknown {what} option '{key}'"
                + (f" (did you mean '{hint[0]}'?)" if hint else "")
                + ". Unsupported options are refused rather than ignored; see the option reference in the docs "
                "(docs/reference/options.md)."
            )
