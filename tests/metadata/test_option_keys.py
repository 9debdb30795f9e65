"""Every option key Java Paimon defines is classified (honoured, inert or refused) with a reason, and the
registry enforces the classification: semantic keys are refused on read with an error naming the key, the value
and the fix; inert keys are accepted; keys Java does not define are refused on create and allowed on read."""

from __future__ import annotations

import pytest

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema import option_keys
from pyspark_paimon.metadata.schema import options as opts
from pyspark_paimon.metadata.schema.option_keys import ALIASES, NOT_HONOURED, KeyRule
from pyspark_paimon.metadata.schema.options import KEYS, rule_of, validate_table_options

# The option keys of Apache Paimon 2.1-SNAPSHOT (github.com/apache/paimon, commit 5dacde516bf6, 2026-08-22), as
# declared by each option class; "removed since 1.0" lists the CoreOptions keys of releases 1.0 to 2.0.0 that
# this version no longer declares (tables written by those releases still carry them), and one 0.9 key
# (metadata.iceberg-compatible) that 1.0 replaced; "fallback keys" are the
# legacy spellings (withFallbackKeys) Java still reads. Per-column options (fields.<col>.<suffix>) and key
# families (file-index.<type>.columns, orc.*, parquet.*...) are listed in JAVA_FIELD_SUFFIXES / JAVA_FAMILIES.
PAIMON_VERSION = "2.1-SNAPSHOT (5dacde516bf6)"
JAVA_KEYS: dict[str, tuple[str, ...]] = {
    "CoreOptions": (
        "type",
        "bucket",
        "bucket-key",
        "bucket-append-ordered",
        "bucket-function.type",
        "data-file.external-paths",
        "data-file.external-paths.strategy",
        "data-file.external-paths.specific-fs",
        "data-file.external-paths.weights",
        "compaction.force-rewrite-all-files",
        "path",
        "branch",
        "chain-table.enabled",
        "scan.fallback-snapshot-branch",
        "scan.fallback-delta-branch",
        "chain-table.chain-partition-keys",
        "chain-table.streaming.merge-snapshot",
        "chain-table.split.key-range-enabled",
        "file.format",
        "file.compression.per.level",
        "file.format.per.level",
        "file.compression",
        "file.compression.zstd-level",
        "data-file.prefix",
        "data-file.path-directory",
        "changelog-file.prefix",
        "changelog-file.format",
        "changelog-file.compression",
        "changelog-file.stats-mode",
        "file.suffix.include.compression",
        "file.block-size",
        "file-index.in-manifest-threshold",
        "file-index.read.enabled",
        "variant.shreddingSchema",
        "variant.inferShreddingSchema",
        "variant.shredding.inferenceMode",
        "variant.shredding.maxSchemaWidth",
        "variant.shredding.maxSchemaDepth",
        "variant.shredding.minFieldCardinalityRatio",
        "variant.shredding.maxInferBufferRow",
        "variant.shredding.adaptive.maxInferBufferRow",
        "variant.shredding.adaptive.retentionRatio",
        "manifest.compression",
        "manifest.target-file-size",
        "manifest.full-compaction-threshold-size",
        "manifest.merge-min-count",
        "manifest-sort.enabled",
        "manifest-sort.partition-field",
        "manifest-sort.max-rewrite-size",
        "manifest.merge-optimize.enabled",
        "partition.default-name",
        "partition.legacy-name",
        "snapshot.num-retained.min",
        "snapshot.num-retained.max",
        "snapshot.time-retained",
        "changelog.num-retained.min",
        "changelog.num-retained.max",
        "changelog.time-retained",
        "snapshot.expire.execution-mode",
        "snapshot.expire.limit",
        "snapshot.clean-empty-directories",
        "continuous.discovery-interval",
        "scan.max-splits-per-task",
        "scan.bucket",
        "merge-engine",
        "ignore-delete",
        "ignore-update-before",
        "sort-engine",
        "sort-spill-threshold",
        "sort-spill-buffer-size",
        "spill-compression",
        "spill-compression.zstd-level",
        "write-only",
        "source.split.target-size",
        "source.split.open-file-cost",
        "write-buffer-size",
        "write-buffer-spill.max-disk-size",
        "write-buffer-spillable",
        "write-buffer-for-append",
        "write-max-writers-to-spill",
        "local-sort.max-num-file-handles",
        "page-size",
        "cache-page-size",
        "target-file-size",
        "target-file-row-num",
        "compaction.small-file-ratio",
        "blob.target-file-size",
        "blob.split-by-file-size",
        "blob.copy-buffer-size",
        "num-sorted-run.compaction-trigger",
        "num-sorted-run.stop-trigger",
        "num-levels",
        "commit.force-compact",
        "write.sequence-number-init-mode",
        "commit.timeout",
        "commit.max-retries",
        "commit.min-retry-wait",
        "commit.max-retry-wait",
        "compaction.max-size-amplification-percent",
        "compaction.force-up-level-0",
        "compaction.size-ratio",
        "compaction.offpeak.start.hour",
        "compaction.offpeak.end.hour",
        "compaction.offpeak-ratio",
        "compaction.optimization-interval",
        "compaction.total-size-threshold",
        "compaction.incremental-size-threshold",
        "compaction.min.file-num",
        "compaction.file-num-limit",
        "compaction.delete-ratio-threshold",
        "changelog-producer",
        "changelog-producer.row-deduplicate",
        "changelog-producer.row-deduplicate-ignore-fields",
        "table-read.sequence-number.enabled",
        "key-value.sequence_number.enabled",
        "sequence.field",
        "sequence.field.sort-order",
        "sequence.snapshot-ordering",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "rowkind.field",
        "scan.mode",
        "scan.timestamp",
        "scan.timestamp-millis",
        "scan.watermark",
        "scan.file-creation-time-millis",
        "scan.creation-time-millis",
        "scan.snapshot-id",
        "scan.tag-name",
        "scan.version",
        "scan.bounded.watermark",
        "scan.manifest.parallelism",
        "format-table.scan.list-parallelism",
        "streaming.read.snapshot.delay",
        "scan.ignore-corrupt-files",
        "scan.ignore-lost-files",
        "auto-create",
        "streaming-read-overwrite",
        "streaming-read-append-overwrite",
        "dynamic-partition-overwrite",
        "partition.expiration-strategy",
        "partition.expiration-time",
        "partition.expiration-check-interval",
        "partition.expiration-max-num",
        "partition.expiration-batch-size",
        "compaction.skip-expired-partitions",
        "partition.timestamp-formatter",
        "partition.timestamp-pattern",
        "partition.timestamp-format.strict",
        "partition.end-input-to-done",
        "scan.plan-sort-partition",
        "primary-key",
        "primary-key.nullable",
        "partition",
        "lookup.hash-load-factor",
        "lookup.cache-rows",
        "lookup.continuous.discovery-interval",
        "lookup.cache-file-retention",
        "lookup.cache-max-disk-size",
        "lookup.cache-spill-compression",
        "lookup.cache-max-memory-size",
        "lookup.blob-as-descriptor",
        "lookup.cache.high-priority-pool-ratio",
        "lookup.cache.bloom.filter.enabled",
        "lookup.cache.bloom.filter.fpp",
        "lookup.remote-file.enabled",
        "lookup.remote-file.level-threshold",
        "read.batch-size",
        "write.batch-size",
        "write.batch-memory",
        "consumer-id",
        "full-compaction.delta-commits",
        "stream-scan-mode",
        "batch-scan-mode",
        "consumer.expiration-time",
        "consumer.mode",
        "consumer.ignore-progress",
        "consumer.changelog-only",
        "dynamic-bucket.target-row-num",
        "dynamic-bucket.initial-buckets",
        "dynamic-bucket.max-buckets",
        "dynamic-bucket.assigner-parallelism",
        "incremental-between",
        "incremental-between-scan-mode",
        "incremental-between-timestamp",
        "incremental-to-auto-tag",
        "incremental-between-tag-to-snapshot",
        "end-input.check-partition-expire",
        "metadata.stats-mode",
        "metadata.stats-mode.per.level",
        "metadata.stats-dense-store",
        "metadata.stats-keep-first-n-columns",
        "commit.callbacks",
        "commit.callback.#.param",
        "tag.callbacks",
        "tag.callback.#.param",
        "partition.mark-done-action",
        "partition.mark-done-action.custom.class",
        "partition.mark-done-action.http.url",
        "partition.mark-done-action.http.params",
        "partition.sink-strategy",
        "metastore.partitioned-table",
        "metastore.tag-to-partition",
        "metastore.tag-to-partition.preview",
        "tag.automatic-creation",
        "tag.create-success-file",
        "tag.creation-period",
        "tag.creation-delay",
        "tag.period-formatter",
        "tag.creation-period-duration",
        "tag.num-retained-max",
        "tag.default-time-retained",
        "tag.time-expire-enabled",
        "tag.automatic-completion",
        "tag.batch.customized-name",
        "scan.plan-auto-tag-for-read.time-retained",
        "snapshot.watermark-idle-timeout",
        "parquet.enable.dictionary",
        "sink.watermark-time-zone",
        "sink.process-time-zone",
        "local-merge-buffer-size",
        "cross-partition-upsert.index-ttl",
        "cross-partition-upsert.bootstrap-parallelism",
        "zorder.var-length-contribution",
        "file-reader-async-threshold",
        "commit.force-create-snapshot",
        "deletion-vectors.enabled",
        "deletion-vectors.modifiable",
        "deletion-vector.index-file.target-size",
        "deletion-vectors.merge-on-read",
        "deletion-vectors.bitmap64",
        "delete.force-produce-changelog",
        "sort-compaction.range-strategy",
        "sort-compaction.local-sample.magnification",
        "record-level.expire-time",
        "record-level.time-field",
        "commit.user-prefix",
        "force-lookup",
        "lookup-wait",
        "lookup-compact",
        "lookup-compact.max-interval",
        "file-operation.thread-num",
        "scan.fallback-branch",
        "scan.fallback-branch.read-fail-fast",
        "scan.primary-branch",
        "async-file-write",
        "manifest.delete-file-drop-stats",
        "data-file.thin-mode",
        "partition.idle-time-to-report-statistic",
        "query-auth.enabled",
        "materialized-table.definition-query",
        "materialized-table.interval-freshness",
        "materialized-table.interval-freshness.time-unit",
        "materialized-table.logical-refresh-mode",
        "materialized-table.refresh-mode",
        "materialized-table.refresh-status",
        "materialized-table.refresh-handler-description",
        "materialized-table.refresh-handler-bytes",
        "alter-column-null-to-not-null.disabled",
        "disable-explicit-type-casting",
        "add-column-before-partition",
        "commit.strict-mode.last-safe-snapshot",
        "clustering.columns",
        "clustering.strategy",
        "clustering.incremental",
        "clustering.history-partition.limit",
        "clustering.history-partition.idle-to-full-sort",
        "clustering.incremental.optimize-write",
        "clustering.incremental.mode",
        "local-kv-db.block-size",
        "row-tracking.enabled",
        "row-tracking.partition-group-on-commit",
        "data-evolution.enabled",
        "data-evolution.reassign.skip-contiguous-row-count",
        "data-evolution.row-id-conflict-rewrite.max-size",
        "data-evolution.row-sidecar.enabled",
        "data-evolution.row-sidecar.max-selected-rows",
        "data-evolution.row-sidecar.max-selection-ratio",
        "data-evolution.merge-into.file-pruning",
        "data-evolution.merge-into.source-persist",
        "data-evolution.compaction.rewrite-row-ids",
        "blob-compaction.enabled",
        "snapshot.ignore-empty-commit",
        "index-file-in-data-file-dir",
        "global-index.external-path",
        "global-index.column-update-action",
        "lookup.merge-buffer-size",
        "lookup.merge-records-threshold",
        "format-table.implementation",
        "format-table.partition-path-only-value",
        "format-table.file.compression",
        "format-table.commit-hive-sync-url",
        "blob-field",
        "blob-descriptor-field",
        "blob-view-field",
        "blob-view.resolve.enabled",
        "blob-as-descriptor",
        "blob-write-null-on-missing-file",
        "blob-write-null-on-fetch-failure",
        "commit.discard-duplicate-files",
        "postpone.batch-write-fixed-bucket",
        "postpone.merge-on-read",
        "postpone.batch-write-fixed-bucket.max-parallelism",
        "postpone.batch-write-fixed-bucket.rescale-load-factor",
        "postpone.default-bucket-num",
        "postpone.target-row-num-per-bucket",
        "postpone.target-size-per-bucket",
        "global-index.row-count-per-shard",
        "global-index.build.max-shard",
        "global-index.build.max-parallelism",
        "global-index.enabled",
        "global-index.search-mode",
        "scalar-index.search-mode",
        "vector-index.search-mode",
        "full-text-index.search-mode",
        "global-index.thread-num",
        "overwrite-upgrade",
        "visibility-callback.enabled",
        "visibility-callback.timeout",
        "visibility-callback.check-interval",
        "vector.file.format",
        "vector-field",
        "vector.target-file-size",
        "vector-search.distribute.enabled",
        "vector-search.lateral-join.batch-size",
        "pk-vector.index.columns",
        "pk-btree.index.columns",
        "pk-bitmap.index.columns",
        "pk-multivalue.index.columns",
        "pk-full-text.index.columns",
        "pk-clustering-override",
        "fields.default-aggregate-function",
        "blob-descriptor.source-table",
    ),
    # Paimon 0.9's switch for Iceberg metadata, replaced by metadata.iceberg.storage in 1.0 (0.9 tables carry it).
    "CoreOptions of 0.9, replaced in 1.0": ("metadata.iceberg-compatible",),
    "CoreOptions, removed since 1.0": (
        "manifest.format",
        "write-manifest-cache",
        "compaction.max.file-num",
        "log.consistency",
        "log.changelog-mode",
        "log.key.format",
        "log.format",
        "lookup.local-file-type",
        "streaming-read-mode",
        "delete-file.thread-num",
        "object-location",
        "log.ignore-delete",
        "upsert-key",
        "blob-external-storage-path",
        "blob-external-storage-field",
    ),
    "fallback keys": (
        "parquet.variant.shreddingSchema",
        "snapshot.expire.clean-empty-directories",
        "first-row.ignore-delete",
        "deduplicate.ignore-delete",
        "partial-update.ignore-delete",
        "write.compaction-skip",
        "log.scan",
        "log.scan.timestamp-millis",
        "orc.write.batch-size",
        "changelog-producer.lookup-wait",
        "delete-file.thread-num",
        "sink.clustering.by-columns",
        "sink.clustering.strategy",
        "blob.stored-descriptor-fields",
        "log.scan.remove-normalize",
        "streaming-read.shuffle-bucket-with-partition",
        "lookup.dynamic-partition",
        "changelog.precommit-compact",
        "field-delimiter",
        "seq",
        "delimiter",
        "lineSep",
        "quote",
        "escape",
        "header",
        "nullvalue",
        "mode",
    ),
    "FlinkConnectorOptions": (
        "sink.parallelism",
        "scan.parallelism",
        "unaware-bucket.compaction.parallelism",
        "unaware-bucket.no-shuffle",
        "compaction.bucket-distribution-strategy",
        "scan.infer-parallelism",
        "scan.infer-parallelism.max",
        "changelog-producer.compaction-interval",
        "scan.watermark.emit.strategy",
        "scan.watermark.alignment.group",
        "scan.watermark.idle-timeout",
        "scan.watermark.alignment.max-drift",
        "scan.watermark.alignment.update-interval",
        "scan.split-enumerator.batch-size",
        "scan.max-snapshot.count",
        "scan.split-enumerator.mode",
        "sink.use-managed-memory-allocator",
        "scan.remove-normalize",
        "read.shuffle-bucket-with-partition",
        "sink.managed.writer-buffer-memory",
        "sink.cross-partition.managed-memory",
        "source.checkpoint-align.enabled",
        "source.checkpoint-align.timeout",
        "lookup.async",
        "lookup.bootstrap-parallelism",
        "lookup.async-thread-number",
        "lookup.cache",
        "scan.partitions",
        "lookup.dynamic-partition.refresh-interval",
        "lookup.refresh.async",
        "lookup.dynamic-partition.refresh.async",
        "lookup.refresh.async.pending-snapshot-count",
        "lookup.refresh.time-periods-blacklist",
        "lookup.refresh.full-load-threshold",
        "sink.savepoint.auto-tag",
        "sink.writer-cpu",
        "sink.writer-memory",
        "sink.committer-cpu",
        "sink.committer-memory",
        "sink.committer-operator-chaining",
        "partition.mark-done-action.mode",
        "partition.idle-time-to-done",
        "partition.time-interval",
        "partition.mark-done.recover-from-state",
        "sink.clustering.sort-in-cluster",
        "sink.clustering.sample-factor",
        "end-input.watermark",
        "precommit-compact",
        "changelog.precommit-compact.thread-num",
        "changelog.precommit-compact.buffer-size",
        "source.operator-uid.suffix",
        "sink.operator-uid.suffix",
        "scan.bounded",
        "scan.dedicated-split-generation",
        "commit.custom-listeners",
        "sink.coordinator-commit.enabled",
        "sink.writer-coordinator.enabled",
        "sink.key-only-deletes.enabled",
        "sink.writer-coordinator.cache-memory",
        "sink.writer-coordinator.cache-expire-after-access",
        "sink.writer-coordinator.cache-soft-values",
        "sink.writer-coordinator.page-size",
        "sink.writer-coordinator.prefetch-manifests",
        "filesystem.job-level-settings.enabled",
        "sink.writer-refresh-detectors",
    ),
    "SparkConnectorOptions": (
        "requiredSparkConfsCheck.enabled",
        "legacy-timestamp-mapping.enabled",
        "vector-search.lateral-join.parallelism",
        "write.merge-schema",
        "write.merge-schema.type-widening",
        "write.merge-schema.explicit-cast",
        "write.use-v2-write",
        "write.hive-style-dynamic-partition.enabled",
        "write.data-evolution.update-conflict-retry.max-attempts",
        "write.data-evolution.update-conflict-retry.wait-ms",
        "read.stream.maxFilesPerTrigger",
        "read.stream.maxBytesPerTrigger",
        "read.stream.maxRowsPerTrigger",
        "read.stream.minRowsPerTrigger",
        "read.stream.maxTriggerDelayMs",
        "read.changelog",
        "read.allow.fullScan",
        "format-table.repair.collect-statistics",
        "format-table.statistics.parallelism",
        "source.split.target-size-with-column-pruning",
    ),
    "OrcOptions": (
        "orc.column.encoding.direct",
        "orc.dictionary.key.threshold",
        "orc.timestamp-ltz.legacy.type",
    ),
    "IcebergOptions": (
        "metadata.iceberg.storage",
        "metadata.iceberg.storage-location",
        "metadata.iceberg.format-version",
        "metadata.iceberg.compaction.min.file-num",
        "metadata.iceberg.compaction.max.file-num",
        "metadata.iceberg.delete-after-commit.enabled",
        "metadata.iceberg.previous-versions-max",
        "metadata.iceberg.uri",
        "metadata.iceberg.hive-conf-dir",
        "metadata.iceberg.hadoop-conf-dir",
        "metadata.iceberg.manifest-compression",
        "metadata.iceberg.manifest-legacy-version",
        "metadata.iceberg.hive-client-class",
        "metadata.iceberg.database",
        "metadata.iceberg.table",
        "metadata.iceberg.glue.skip-archive",
        "metadata.iceberg.hive-skip-update-stats",
    ),
    "HiveConnectorOptions": (
        "paimon.respect.minmaxsplitsize.enabled",
        "paimon.split.openfilecost",
    ),
    "CsvOptions, JsonOptions, TextOptions": (
        "csv.field-delimiter",
        "csv.line-delimiter",
        "csv.quote-character",
        "csv.escape-character",
        "csv.include-header",
        "csv.null-literal",
        "csv.mode",
        "json.ignore-parse-errors",
        "json.map-null-key-mode",
        "json.map-null-key-literal",
        "json.line-delimiter",
        "text.line-delimiter",
    ),
}
JAVA_FIELD_SUFFIXES = (
    "aggregate-function",
    "ignore-retract",
    "nested-key",
    "nested-key-null-strategy",
    "nested-sequence-field",
    "count-limit",
    "distinct",
    "list-agg-delimiter",
    "ts-field",
    "map.storage-layout",
    "map.shared-shredding.max-columns",
    "map.shared-shredding.column-placement-policy",
    "sequence-group",
    "stats-mode",
    "pk-vector.index.type",
    "pk-vector.index.options",
    "pk-vector.distance.metric",
    "default-value",  # Paimon 0.8 to 1.2
)
JAVA_FAMILIES = (
    "commit.callback.com.x.Callback.param",
    "tag.callback.com.x.Callback.param",
    "file-index.bloom-filter.columns",
    "file-index.bloom-filter.c.fpp",
    "file-index.bitmap.columns",
    "blob-descriptor.fs.oss.endpoint",
    "parquet.block.size",
    "orc.compress",
    "avro.codec",
)
#: Keys of the registry that Java's option classes do not declare: our own extension, and table properties
#: that catalogs record.
OUR_KEYS = {"chain-table.compact.auto-threshold", "owner", "comment"}
#: Keys of Java's format pass-through families (``parquet.*`` goes to parquet-mr) that we honour by name.
PASS_THROUGH_KEYS = {"parquet.writer.version"}
ALL_JAVA_KEYS = {k for keys in JAVA_KEYS.values() for k in keys}


# ------------------------------------------------------------------------------------------------ coverage
def test_the_key_list_is_the_extracted_one() -> None:
    doc = option_keys.__doc__ or ""
    assert "2.1-SNAPSHOT" in doc and "5dacde5" in doc  # the registry names the version it was classified against
    assert len(JAVA_KEYS["CoreOptions"]) == 334
    assert len(ALL_JAVA_KEYS) == 495


@pytest.mark.parametrize("key", sorted(ALL_JAVA_KEYS))
def test_every_java_key_is_classified(key: str) -> None:
    rule = rule_of(key)
    assert rule is not None, f"{key} is not classified"
    assert rule.kind in ("honoured", "inert", "refused")


@pytest.mark.parametrize("suffix", JAVA_FIELD_SUFFIXES)
def test_every_java_field_option_is_classified(suffix: str) -> None:
    rule = rule_of(f"fields.my.col.{suffix}")
    assert rule is not None and rule is opts.FIELD_KEY_RULES[suffix]


@pytest.mark.parametrize("key", JAVA_FAMILIES)
def test_key_families_are_classified(key: str) -> None:
    assert rule_of(key) is not None


def test_the_registry_holds_only_java_keys_and_ours() -> None:
    assert set(KEYS) - ALL_JAVA_KEYS == OUR_KEYS | PASS_THROUGH_KEYS
    assert not OUR_KEYS & ALL_JAVA_KEYS
    for key in PASS_THROUGH_KEYS:
        assert any(key.startswith(prefix) for prefix, _ in opts.PREFIX_RULES), key


def test_every_rule_has_a_one_line_reason() -> None:
    rules: list[tuple[str, KeyRule]] = [*KEYS.items(), *opts.FIELD_KEY_RULES.items(), *opts.PREFIX_RULES]
    for key, rule in rules:
        assert rule.reason and "\n" not in rule.reason and len(rule.reason) < 300, key
        assert rule.fix and "\n" not in rule.fix, key
        if rule.kind == "inert":
            assert rule.read_ok is None and rule.write_ok is None, f"inert {key} refuses values"
    # Aliases take the rule of the key they stand for.
    for alias, key in ALIASES.items():
        assert NOT_HONOURED[alias].kind == NOT_HONOURED[key].kind
        assert NOT_HONOURED[alias].read_ok == NOT_HONOURED[key].read_ok


def test_refused_keys_say_what_they_accept() -> None:
    """A refused key is refused somewhere: on read or write by the registry, or (two per-field options) by the
    merge engine when it merges a key."""
    enforced_elsewhere = {"sequence-group", "distinct"}
    for key, rule in [*KEYS.items(), *opts.FIELD_KEY_RULES.items()]:
        if rule.kind == "refused" and key not in enforced_elsewhere:
            assert rule.read_ok is not None or rule.write_ok is not None, key


def test_counts_per_kind() -> None:
    """The classification at a glance (update when the registry changes on purpose)."""
    java = [rule_of(k) for k in ALL_JAVA_KEYS]
    counts = {
        kind: sum(1 for r in java if r is not None and r.kind == kind) for kind in ("honoured", "inert", "refused")
    }
    assert sum(counts.values()) == len(ALL_JAVA_KEYS)
    assert counts == {"honoured": 136, "inert": 315, "refused": 44}


def test_immutable_keys_are_javas() -> None:
    assert opts.JAVA_IMMUTABLE <= ALL_JAVA_KEYS
    assert "data-file.path-directory" in opts.JAVA_IMMUTABLE


# ------------------------------------------------------------------------------------------------ enforcement
# Keys whose value changes what a read returns, and that we do not honour: refused on read.
REFUSED_ON_READ = [
    ("sequence.snapshot-ordering", "true"),
    ("partial-update.remove-record-on-sequence-group", "g1"),
    ("primary-key.nullable", "true"),
    ("pk-clustering-override", "true"),
    ("data-file.thin-mode", "true"),
    ("index-file-in-data-file-dir", "true"),
    ("merge-engine", "replace"),
    ("file.format", "avro"),
    ("bucket-function.type", "mod"),
    ("type", "format-table"),
    ("scan.mode", "compacted-full"),
    ("log.scan", "from-timestamp"),
    ("scan.snapshot-id", "3"),
    ("scan.tag-name", "t1"),
    ("scan.timestamp-millis", "1700000000000"),
    ("scan.file-creation-time-millis", "1700000000000"),
    ("scan.bucket", "1"),
    ("scan.primary-branch", "main"),
    ("branch", "dev"),
    ("incremental-between", "1,2"),
    ("incremental-between-scan-mode", "changelog"),
    ("batch-scan-mode", "compact"),
    ("postpone.merge-on-read", "true"),
    ("query-auth.enabled", "true"),
    ("blob-field", "b"),
    ("vector.file.format", "lance"),
    ("manifest.format", "orc"),
    ("orc.timestamp-ltz.legacy.type", "false"),
    ("fields.m.map.storage-layout", "shared-shredding"),
    ("fields.v.default-value", "0"),
]
# Keys that do not change a read but do change what a write must produce: refused on write and create only.
REFUSED_ON_WRITE = [
    ("data-evolution.row-sidecar.enabled", "true"),
    ("data-evolution.compaction.rewrite-row-ids", "true"),
    ("write.sequence-number-init-mode", "snapshot"),
    ("data-file.external-paths.strategy", "round-robin"),
    ("commit.callbacks", "com.example.Callback"),
    ("tag.callbacks", "com.example.Callback"),
    ("commit.strict-mode.last-safe-snapshot", "5"),
    ("partition.timestamp-format.strict", "true"),
    ("metadata.iceberg.storage", "hive-catalog"),
    ("upsert-key", "id"),
    ("type", "materialized-table"),
    ("primary-key", "id"),
    ("partition", "dt"),
]


@pytest.mark.parametrize("key, value", REFUSED_ON_READ)
def test_semantic_keys_are_refused_on_read(key: str, value: str) -> None:
    with pytest.raises(OptionError) as info:
        validate_table_options({key: value}, creating=False, table="/wh/db.db/t")
    message = str(info.value)
    assert f"Option '{key}' = '{value}' of /wh/db.db/t is not supported" in message
    assert "cannot be read or written here" in message
    assert "Fix: " in message and message.endswith(".")
    with pytest.raises(OptionError):
        validate_table_options({key: value}, creating=False, writing=True)
    with pytest.raises(OptionError):
        validate_table_options({key: value}, creating=True)


@pytest.mark.parametrize("key, value", REFUSED_ON_WRITE)
def test_write_semantic_keys_are_refused_on_write_and_create(key: str, value: str) -> None:
    validate_table_options({key: value}, creating=False)  # the read is unaffected
    for kwargs in ({"creating": False, "writing": True}, {"creating": True}):
        with pytest.raises(OptionError) as info:
            validate_table_options({key: value}, table="t", **kwargs)  # type: ignore[arg-type]
        assert f"Option '{key}' = '{value}' of t is not supported" in str(info.value)
        assert "cannot be written or created here. Fix: " in str(info.value)


@pytest.mark.parametrize(
    "key, value",
    [
        ("sequence.snapshot-ordering", "false"),
        ("deletion-vectors.enabled", "FALSE"),
        ("scan.mode", "latest-full"),
        ("scan.mode", "Default"),
        ("merge-engine", "first-row"),
        ("file.format", "orc"),
        ("branch", "main"),
        ("changelog-producer", "lookup"),
        ("row-tracking.enabled", "false"),
        ("metadata.iceberg.storage", "disabled"),
        ("metadata.iceberg.storage", "table-location"),
        ("metadata.iceberg.storage", "Hadoop-Catalog"),
        ("fields.m.map.storage-layout", "default"),
        ("incremental-between-scan-mode", "delta"),
        ("scan.snapshot-id", "  "),
        ("commit.callbacks", ""),  # blank = unset
    ],
)
def test_accepted_values_of_refused_keys_pass(key: str, value: str) -> None:
    validate_table_options({key: value}, creating=True)


INERT_SAMPLES = [k for k, r in sorted(NOT_HONOURED.items()) if r.kind == "inert"]


def test_inert_keys_are_accepted_everywhere() -> None:
    for key in INERT_SAMPLES:
        for kwargs in ({"creating": False}, {"creating": False, "writing": True}, {"creating": True}):
            validate_table_options({key: "some value"}, **kwargs)  # type: ignore[arg-type]
    for key in (
        "file-index.bloom-filter.columns",
        "orc.compress",
        "parquet.page.size",
        "commit.callback.X.param",
        "fields.v.nested-key",
        "fields.v.pk-vector.index.type",
    ):
        validate_table_options({key: "x"}, creating=True)


def test_unknown_keys_are_refused_on_create_and_allowed_on_read() -> None:
    options = {"bukcet": "2", "spark.sql.sources.provider": "paimon", "fields.v.made-up": "1"}
    validate_table_options(options, creating=False)  # other engines add their own keys
    validate_table_options(options, creating=False, writing=True)
    with pytest.raises(OptionError, match=r"Unknown table option 'bukcet' \(did you mean 'bucket'\?\)"):
        validate_table_options({"bukcet": "2"}, creating=True, table="t")
    with pytest.raises(OptionError, match="Unknown table option 'fields.v.made-up'"):
        validate_table_options({"fields.v.made-up": "1"}, creating=True)
    assert not opts.is_known("bukcet") and opts.is_known("bucket") and opts.is_known("fields.x.stats-mode")


def test_exact_keys_win_over_field_suffixes_and_families() -> None:
    assert rule_of("fields.default-aggregate-function").kind == "honoured"  # type: ignore[union-attr]
    assert rule_of("orc.timestamp-ltz.legacy.type").kind == "refused"  # type: ignore[union-attr]
    assert rule_of("orc.compress").kind == "inert"  # type: ignore[union-attr]
    assert rule_of("fields.a.b.map.storage-layout") is opts.FIELD_KEY_RULES["map.storage-layout"]
    assert rule_of("fields.map.storage-layout") is None  # no column name
