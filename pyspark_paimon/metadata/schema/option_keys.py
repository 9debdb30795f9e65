"""Every table option key Java Paimon defines that pyspark-paimon does not honour, with what we do about it.

:mod:`pyspark_paimon.metadata.schema.options` holds the honoured keys (one typed ``ConfigOption`` constant each); this
module holds the rest, so that *every* key a table written by Java Paimon can carry has a recorded decision
and a one-line reason. The classification was made against Apache Paimon 2.1-SNAPSHOT (commit ``5dacde5``,
August 2026; ``CoreOptions``, ``FlinkConnectorOptions``, ``SparkConnectorOptions``, ``OrcOptions``,
``IcebergOptions``, ``HiveConnectorOptions``, the format-table ``CsvOptions``/``JsonOptions``/``TextOptions``,
``FileIndexOptions``), plus the ``CoreOptions`` keys removed since Paimon 1.0 (old tables still carry them)
and every legacy (fallback) spelling of a key. ``tests/metadata/test_option_keys.py`` holds that key list.

The yardstick is Paimon's engine-neutral core table (what Paimon's own Spark connector reads and writes):

* **inert**: cannot change what a batch read returns or what a write must produce: tuning, caches,
  parallelism, compaction triggers we do not implement, maintenance triggers we do not implement, other engines'
  runtime settings (Flink sources, sinks and lookup joins; Spark session settings), and keys that only act
  together with another key or type we refuse (``deletion-vectors.merge-on-read`` without deletion vectors);
* **refused**: changes semantics we do not implement. A value other than the ``read_ok`` values raises an
  :class:`~pyspark_paimon.errors.OptionError` naming the key, the value and the fix when the table is read,
  written or created; a value other than the ``write_ok`` values only when it is written or created (the read
  is unaffected, but our write would not produce what Java's does). A blank value counts as unset and is
  never refused.

Keys Java does not define at all (other engines add their own) are allowed on read and refused when a table
is created, so a typo never becomes a silent no-op.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "Kind",
    "KeyRule",
    "NOT_HONOURED",
    "ALIASES",
    "PREFIX_RULES",
    "FIELD_SUFFIX_RULES",
    "JAVA_IMMUTABLE",
    "USE_JAVA",
    "AS_READ_OPTION",
]

Kind = Literal["honoured", "inert", "refused"]

#: The usual fix of a refused key.
USE_JAVA = (
    "read and write this table with Paimon (Java/Flink/Spark), or remove the option "
    "(t.update_schema().remove_options) if the table does not depend on it"
)
#: The fix of a read-time key stored as a table option.
AS_READ_OPTION = (
    "remove it from the table's options (t.update_schema().remove_options) and pass the read option "
    "instead (see the read options in the docs, docs/reference/options.md)"
)


@dataclass(frozen=True)
class KeyRule:
    """What pyspark-paimon does with one option key.

    ``read_ok``: the values (lower case, surrounding blanks ignored) a read, a write and table creation accept;
    None = any value, ``()`` = none (any non-blank value is refused). ``write_ok``: the values a write and table
    creation accept; None = the same as ``read_ok``.
    """

    kind: Kind
    reason: str
    read_ok: tuple[str, ...] | None = None
    write_ok: tuple[str, ...] | None = None
    fix: str = USE_JAVA

    def refused_value(self, value: str, writing: bool) -> bool:
        """Whether ``value`` of this key is refused (on a write when ``writing``, else on a read)."""
        text = str(value).strip().lower()
        if not text:
            return False
        allowed = self.write_ok if writing and self.write_ok is not None else self.read_ok
        return allowed is not None and text not in allowed


def _inert(reason: str) -> KeyRule:
    return KeyRule("inert", reason)


def _refused(reason: str, *read_ok: str, fix: str = USE_JAVA) -> KeyRule:
    """Refused on read, write and creation unless the value is one of ``read_ok`` (none given: any value)."""
    return KeyRule("refused", reason, read_ok=tuple(read_ok), fix=fix)


def _write_refused(reason: str, *write_ok: str, fix: str = USE_JAVA) -> KeyRule:
    """Readable as it is, but refused on write and creation unless the value is one of ``write_ok``."""
    return KeyRule("refused", reason, read_ok=None, write_ok=tuple(write_ok), fix=fix)


# Reasons shared by many keys.
_TUNING = "performance tuning of Java's reader or writer"
_COMPACTION = "Java compaction trigger or strategy; compaction never changes what a read returns"
_FLINK = "a Flink job setting; it does not change what a batch read returns or what a write must contain"
_SPARK = "a setting of Paimon's Spark connector (session, stream or DML behaviour), not table semantics"
_STREAMING = "only affects streaming reads"
_LOOKUP = "tunes Flink lookup joins and lookup compaction"
_MAINTENANCE = "maintenance that Java runs and pyspark-paimon leaves to explicit calls (or to Java)"
_INDEX = "an index only prunes what a read scans, never its result; files written without it stay valid"
_INDEX_OTHER = (
    "an index type other than bloom-filter and bitmap (bsi, range-bitmap: newer than the Java 1.0 this library "
    "is proved against) is neither written nor used: it only prunes what a read scans, files without it stay valid"
)
_CHANGELOG = "changelog files are only read by streaming and changelog consumers, never by a batch read"
_CHANGELOG_FILES = (
    "our changelog files are written like data files (parquet, the table's compression and statistics); readers "
    "take a file's format from its name, so the rows they hold are the same"
)
_NO_BLOB = "only with BLOB columns, which are refused (blob-field, data-evolution.enabled, the BLOB type)"
_NO_VARIANT_INFERENCE = (
    "tunes Java's per-file shredding inference; files written here are shredded only as 'variant.shreddingSchema' "
    "says (else plain), and readers read plain, shredded and inferred files alike"
)
_DV_WRITE = "tunes how Java writes deletion vectors; reads decode 32- and 64-bit vectors alike"
_POSTPONE_ESTIMATES = (
    "bucket counts estimated from data sizes are Paimon 2.x's; pyspark-paimon follows Paimon 1.4's rule for "
    "postpone-bucket tables (a partition's existing count, else 'postpone.default-bucket-num')"
)
_DYNAMIC_ASSIGNERS = (
    "the number of Flink's bucket-assigner operators; each write task here assigns the keys of the partitions it "
    "writes, and reads do not depend on it"
)
_CATALOG = "metadata a Java catalog or metastore keeps; pyspark-paimon is a filesystem client"
_FORMAT_TABLE = "only for format tables (type = format-table, refused)"
_ICEBERG = (
    "registers the Iceberg metadata in Hive, REST or Glue catalogs (metadata.iceberg.storage values writes refuse)"
)
_MATERIALIZED = "Flink materialized-table metadata; the data is an ordinary table"
_GLOBAL_INDEX = "global and primary-key indexes only speed up lookups, searches and scans"

# ------------------------------------------------------------------------------------------------ the table
#: Exact keys Java defines that we do not honour: kind, reason and (refused keys) the accepted values.
NOT_HONOURED: dict[str, KeyRule] = {
    # -- layout and files
    "bucket-append-ordered": _inert("orders append buckets for streaming consumers; a batch read has no order"),
    "data-file.external-paths": _inert(
        "read by file (each file records its external path); writes only use it "
        "with data-file.external-paths.strategy, which writes refuse"
    ),
    "data-file.external-paths.strategy": _write_refused(
        "Java writes new data files to the external paths; ours would land in the table directory",
        "none",
        fix="write this table with Paimon (Java), or set 'data-file.external-paths.strategy' = 'none'",
    ),
    "data-file.external-paths.specific-fs": _inert("only with data-file.external-paths.strategy (writes refuse it)"),
    "data-file.external-paths.weights": _inert("only with data-file.external-paths.strategy (writes refuse it)"),
    "compaction.force-rewrite-all-files": _inert(_COMPACTION),
    "branch": _refused(
        "a branch stored in the table's options makes Paimon read that branch instead", "main", fix=AS_READ_OPTION
    ),
    "file.format.per.level": _inert(
        "format of files per LSM level; each file's name carries its format, so any "
        "mix reads the same (new files here are parquet)"
    ),
    "changelog-file.format": _inert(_CHANGELOG_FILES),
    "changelog-file.compression": _inert(_CHANGELOG_FILES),
    "changelog-file.stats-mode": _inert(_CHANGELOG_FILES),
    "file.block-size": _inert("row group / stripe size of new files"),
    "metadata.stats-mode.per.level": _inert(
        "statistics per LSM level; statistics only prune, and files without them stay valid"
    ),
    "variant.inferShreddingSchema": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.inferenceMode": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.maxSchemaWidth": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.maxSchemaDepth": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.minFieldCardinalityRatio": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.maxInferBufferRow": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.adaptive.maxInferBufferRow": _inert(_NO_VARIANT_INFERENCE),
    "variant.shredding.adaptive.retentionRatio": _inert(_NO_VARIANT_INFERENCE),
    "manifest-sort.enabled": _inert("order of entries in Java's merged manifests"),
    "manifest-sort.partition-field": _inert("order of entries in Java's merged manifests"),
    "manifest-sort.max-rewrite-size": _inert("order of entries in Java's merged manifests"),
    "manifest.merge-optimize.enabled": _inert("how Java merges manifests; the merged manifests list the same files"),
    "manifest.delete-file-drop-stats": _inert("statistics of DELETE manifest entries, which no read uses"),
    "target-file-row-num": _inert("when Java rolls a data file; file sizes never change a read"),
    "file-reader-async-threshold": _inert(_TUNING),
    "async-file-write": _inert(_TUNING),
    "parquet.enable.dictionary": _inert("parquet encoding of new files"),
    "local-kv-db.block-size": _inert(_LOOKUP),
    # -- merging and keys
    "sequence.snapshot-ordering": _refused(
        "records of later snapshots always win a key, whatever their sequence numbers", "false"
    ),
    "partial-update.remove-record-on-sequence-group": _refused("a DELETE of a sequence group removes the whole row"),
    "primary-key": _write_refused(
        "Java moves it into the schema when the table is created; stored, it is ignored",
        fix="give the keys as primary_keys= (Catalog.create_table) or the write option "
        "'primary-key', which become the schema's keys",
    ),
    "partition": _write_refused(
        "Java moves it into the schema when the table is created; stored, it is ignored",
        fix="give the keys as partition_keys= (Catalog.create_table) or the write option "
        "'partition', which become the schema's keys",
    ),
    "primary-key.nullable": _refused("NULL primary-key values merged with null-safe equality", "false"),
    "pk-clustering-override": _refused(
        "data files of the primary-key table are sorted by clustering.columns, not "
        "by key, which key-ordered merge reads need",
        "false",
    ),
    "table-read.sequence-number.enabled": _inert(
        "adds _SEQUENCE_NUMBER to $audit_log / $binlog, which pyspark-paimon does not serve"
    ),
    "key-value.sequence_number.enabled": _inert("internal switch of Java's $audit_log / $binlog tables"),
    "sort-engine": _inert(_TUNING),
    "sort-spill-threshold": _inert(_TUNING),
    "sort-spill-buffer-size": _inert(_TUNING),
    "spill-compression": _inert(_TUNING),
    "spill-compression.zstd-level": _inert(_TUNING),
    "local-merge-buffer-size": _inert("Flink pre-merge buffer before the shuffle"),
    "record-level.expire-time": _inert(
        "records expire only when Java compacts (best effort, no deadline), so "
        "every read and write here stays within that contract"
    ),
    "record-level.time-field": _inert("records expire only when Java compacts (see record-level.expire-time)"),
    "delete.force-produce-changelog": _inert(_CHANGELOG),
    # -- writes, buffers and commits
    "write-buffer-spill.max-disk-size": _inert(_TUNING),
    "write-buffer-spillable": _inert(_TUNING),
    "write-buffer-for-append": _inert(_TUNING),
    "write-max-writers-to-spill": _inert(_TUNING),
    "local-sort.max-num-file-handles": _inert(_TUNING),
    "page-size": _inert(_TUNING),
    "cache-page-size": _inert(_TUNING),
    "write.batch-size": _inert(_TUNING),
    "write.batch-memory": _inert(_TUNING),
    "read.batch-size": _inert(_TUNING + " (a read option of ours too)"),
    "write.sequence-number-init-mode": _write_refused(
        "Java writers in 'snapshot' mode start from the max sequence number recorded in snapshot properties, "
        "which our commits do not record, so their later writes could lose to ours",
        "scan",
    ),
    "commit.force-compact": _inert(_COMPACTION),
    "commit.force-create-snapshot": _inert("whether an empty streaming commit leaves a snapshot; no data changes"),
    "snapshot.ignore-empty-commit": _inert("whether an empty commit leaves a snapshot; no data changes"),
    "commit.discard-duplicate-files": _inert(
        "how Java deduplicates files of retried commits; ours never commit a file twice"
    ),
    "commit.callbacks": _write_refused(
        "Java calls these classes after each commit (metastore sync and the like); our commits cannot"
    ),
    "tag.callbacks": _write_refused("Java calls these classes after each tag it creates; our automatic tags cannot"),
    "commit.strict-mode.last-safe-snapshot": _write_refused(
        "Java aborts commits that conflict with other users' snapshots after this one; ours do not check"
    ),
    "dynamic-partition-overwrite": _inert(
        "each write says how it overwrites (partitionOverwriteMode / "
        "dynamic_partition_overwrite), as Paimon's Spark writer does"
    ),
    "overwrite-upgrade": _inert("Java moves overwritten primary-key files to a higher level; layout only"),
    "visibility-callback.enabled": _inert("Java waits for compaction after commit; no data changes"),
    "visibility-callback.timeout": _inert("Java waits for compaction after commit; no data changes"),
    "visibility-callback.check-interval": _inert("Java waits for compaction after commit; no data changes"),
    "upsert-key": _write_refused(
        "Java turns INSERT INTO an append table into an upsert on these columns (Paimon 1.3 to 2.0)"
    ),
    # -- compaction
    "num-sorted-run.stop-trigger": _inert(_COMPACTION),
    "compaction.offpeak.start.hour": _inert(_COMPACTION),
    "compaction.offpeak.end.hour": _inert(_COMPACTION),
    "compaction.offpeak-ratio": _inert(_COMPACTION),
    "compaction.optimization-interval": _inert(_COMPACTION),
    "compaction.total-size-threshold": _inert(_COMPACTION),
    "compaction.incremental-size-threshold": _inert(_COMPACTION),
    "compaction.max.file-num": _inert(_COMPACTION + " (Paimon 1.0)"),
    "compaction.delete-ratio-threshold": _inert(_COMPACTION),
    "compaction.skip-expired-partitions": _inert(_COMPACTION),
    "sort-compaction.range-strategy": _inert(_COMPACTION),
    "sort-compaction.local-sample.magnification": _inert(_COMPACTION),
    "lookup-wait": _inert(_LOOKUP),
    "lookup-compact": _inert(_LOOKUP),
    "lookup-compact.max-interval": _inert(_LOOKUP),
    "clustering.history-partition.limit": _inert("Java sorts or clusters append data; layout only"),
    "clustering.history-partition.idle-to-full-sort": _inert("Java sorts or clusters append data; layout only"),
    "clustering.incremental.optimize-write": _inert("Java sorts or clusters append data; layout only"),
    "clustering.incremental.mode": _inert("Java sorts or clusters append data; layout only"),
    # -- reads
    "scan.mode": _refused(
        "a startup mode other than the latest snapshot changes what a batch read returns",
        "default",
        "latest-full",
        "full",
        "latest",
        fix=AS_READ_OPTION,
    ),
    "scan.timestamp": _refused(
        "a stored time-travel option makes every batch read read that version", fix=AS_READ_OPTION
    ),
    "scan.timestamp-millis": _refused(
        "a stored time-travel option makes every batch read read that version", fix=AS_READ_OPTION
    ),
    "scan.watermark": _refused(
        "a stored time-travel option makes every batch read read that version", fix=AS_READ_OPTION
    ),
    "scan.snapshot-id": _refused(
        "a stored time-travel option makes every batch read read that version", fix=AS_READ_OPTION
    ),
    "scan.tag-name": _refused(
        "a stored time-travel option makes every batch read read that version", fix=AS_READ_OPTION
    ),
    "scan.version": _refused(
        "a stored time-travel option makes every batch read read that version", fix=AS_READ_OPTION
    ),
    "scan.file-creation-time-millis": _refused("batch reads keep only data files created after this instant"),
    "scan.creation-time-millis": _refused("batch reads start from the snapshot (or files) of this instant"),
    "scan.bucket": _refused("batch reads return only this bucket"),
    "scan.primary-branch": _refused("partitions present in that branch are read from it instead"),
    "incremental-between": _refused(
        "a stored incremental range makes every batch read incremental", fix=AS_READ_OPTION
    ),
    "incremental-between-timestamp": _refused(
        "a stored incremental range makes every batch read incremental", fix=AS_READ_OPTION
    ),
    "incremental-to-auto-tag": _refused(
        "a stored incremental range makes every batch read incremental",
        fix="remove it (t.update_schema().remove_options) and read with the read option incremental-between naming "
        "the two tags",
    ),
    "batch-scan-mode": _refused("forces Java's internal compaction scan on batch reads", "none"),
    "stream-scan-mode": _inert(_STREAMING),
    "scan.bounded.watermark": _inert(_STREAMING),
    "scan.max-splits-per-task": _inert(_STREAMING),
    "scan.manifest.parallelism": _inert(_TUNING),
    "scan.plan-sort-partition": _inert("orders splits by partition for streaming consumers"),
    "scan.ignore-corrupt-files": _inert("we always fail on a corrupt file instead of skipping it (the default)"),
    "scan.ignore-lost-files": _inert("we always fail on a missing file instead of skipping it (the default)"),
    "scan.fallback-branch.read-fail-fast": _inert("a failed fallback-branch read always fails the read here"),
    "scan.plan-auto-tag-for-read.time-retained": _inert(
        "a temporary tag that protects a long read from expiration; reads here pin their snapshot in memory"
    ),
    "continuous.discovery-interval": _inert(_STREAMING),
    "streaming.read.snapshot.delay": _inert(_STREAMING),
    "auto-create": _inert("whether Java creates missing storage; tables here are created explicitly"),
    "consumer.changelog-only": _inert(_STREAMING),
    "query-auth.enabled": _refused(
        "a REST catalog applies column and row permissions to reads; reading the files directly would bypass them",
        "false",
        fix="read this table through its catalog with Paimon (Java)",
    ),
    # -- lookup joins (Flink)
    "lookup.hash-load-factor": _inert(_LOOKUP),
    "lookup.cache-rows": _inert(_LOOKUP),
    "lookup.continuous.discovery-interval": _inert(_LOOKUP),
    "lookup.cache-file-retention": _inert(_LOOKUP),
    "lookup.cache-max-disk-size": _inert(_LOOKUP),
    "lookup.cache-spill-compression": _inert(_LOOKUP),
    "lookup.cache-max-memory-size": _inert(_LOOKUP),
    "lookup.blob-as-descriptor": _inert(_LOOKUP),
    "lookup.cache.high-priority-pool-ratio": _inert(_LOOKUP),
    "lookup.cache.bloom.filter.enabled": _inert(_LOOKUP),
    "lookup.cache.bloom.filter.fpp": _inert(_LOOKUP),
    "lookup.remote-file.enabled": _inert(_LOOKUP),
    "lookup.remote-file.level-threshold": _inert(_LOOKUP),
    "lookup.merge-buffer-size": _inert(_LOOKUP),
    "lookup.merge-records-threshold": _inert(_LOOKUP),
    "lookup.local-file-type": _inert(_LOOKUP + " (Paimon 1.0 to 1.2)"),
    # -- dynamic and postpone buckets
    "dynamic-bucket.initial-buckets": _inert(_DYNAMIC_ASSIGNERS),
    "dynamic-bucket.assigner-parallelism": _inert(_DYNAMIC_ASSIGNERS),
    "postpone.batch-write-fixed-bucket.max-parallelism": _inert(
        "it caps the writer parallelism Java's engines give a new partition; here a new partition gets "
        "'postpone.default-bucket-num' buckets, whatever the number of tasks"
    ),
    "postpone.batch-write-fixed-bucket.rescale-load-factor": _inert(_POSTPONE_ESTIMATES),
    "postpone.target-row-num-per-bucket": _inert(_POSTPONE_ESTIMATES),
    "postpone.target-size-per-bucket": _inert(_POSTPONE_ESTIMATES),
    "postpone.merge-on-read": _refused(
        "batch reads merge the postpone bucket's records into the real buckets", "false"
    ),
    # -- partitions: expiration, mark-done, metastore
    "end-input.check-partition-expire": _inert(_MAINTENANCE),
    "partition.timestamp-format.strict": _write_refused(
        "Java refuses to write partition values that do not match partition.timestamp-formatter; ours would not check",
        "false",
    ),
    "partition.end-input-to-done": _inert("marks partitions done for schedulers at the end of Java batch jobs"),
    "partition.mark-done-action.custom.class": _inert("marks partitions done for schedulers (Flink/Java jobs)"),
    "partition.mark-done-action.http.url": _inert("marks partitions done for schedulers (Flink/Java jobs)"),
    "partition.mark-done-action.http.params": _inert("marks partitions done for schedulers (Flink/Java jobs)"),
    "partition.sink-strategy": _inert("how Java shuffles rows to writers; layout only"),
    "partition.idle-time-to-report-statistic": _inert(_CATALOG),
    "metastore.partitioned-table": _inert(_CATALOG),
    "metastore.tag-to-partition": _inert(_CATALOG),
    "metastore.tag-to-partition.preview": _inert(_CATALOG),
    # -- tags and snapshots
    "snapshot.expire.execution-mode": _inert(
        "whether Java expires on the committing thread; ours always expires synchronously after the commit"
    ),
    "snapshot.clean-empty-directories": _inert(_MAINTENANCE),
    "tag.create-success-file": _inert("a marker file for schedulers next to each new tag"),
    "snapshot.watermark-idle-timeout": _inert(_FLINK),
    # -- deletion vectors, row tracking, data evolution, blobs, vectors
    "deletion-vectors.modifiable": _inert(_DV_WRITE),
    "deletion-vector.index-file.target-size": _inert(_DV_WRITE),
    "data-file.thin-mode": _refused("primary-key data files without the key columns", "false"),
    "index-file-in-data-file-dir": _refused(
        "index files (deletion vectors, bucket indexes) live in the bucket directories, where nothing here "
        "looks for them (reads, writes and expiration expect them in index/)",
        "false",
    ),
    "row-tracking.partition-group-on-commit": _inert(
        "orders the id ranges one commit hands out by partition; every row still gets one unique id, and which "
        "range a file gets depends on the order of the commit's files in Java too"
    ),
    "data-evolution.reassign.skip-contiguous-row-count": _inert(
        "tunes which row-id runs Java's row-id reassignment (materialize_deletion_vectors) leaves alone"
    ),
    "data-evolution.row-id-conflict-rewrite.max-size": _inert(
        "how much pypaimon rewrites to rebase an update onto a concurrent compaction; an update here that meets "
        "one is refused at commit (nothing committed) and is run again"
    ),
    "data-evolution.row-sidecar.enabled": _write_refused(
        "row-store sidecar files beside each data file, which writes here do not produce", "false"
    ),
    "data-evolution.row-sidecar.max-selected-rows": _inert(_TUNING),
    "data-evolution.row-sidecar.max-selection-ratio": _inert(_TUNING),
    "data-evolution.merge-into.file-pruning": _inert(_SPARK),
    "data-evolution.merge-into.source-persist": _inert(_SPARK),
    "data-evolution.compaction.rewrite-row-ids": _write_refused(
        "a legacy switch Java fails on when true: compactions keep every row's id", "false"
    ),
    "blob-compaction.enabled": _inert(_NO_BLOB),
    "blob-field": _refused("BLOB columns: their bytes live in separate .blob files"),
    "blob-descriptor-field": _refused("BLOB columns stored as descriptors that point at other files"),
    "blob-view-field": _refused("BLOB columns resolved from other tables at read time"),
    "blob-view.resolve.enabled": _inert(_NO_BLOB),
    "blob-as-descriptor": _inert(_NO_BLOB),
    "blob-write-null-on-missing-file": _inert(_NO_BLOB),
    "blob-write-null-on-fetch-failure": _inert(_NO_BLOB),
    "blob.target-file-size": _inert(_NO_BLOB),
    "blob.split-by-file-size": _inert(_NO_BLOB),
    "blob.copy-buffer-size": _inert(_NO_BLOB),
    "blob-descriptor.source-table": _inert(_NO_BLOB),
    "blob-external-storage-field": _inert(_NO_BLOB + " (Paimon 1.4)"),
    "blob-external-storage-path": _inert(_NO_BLOB + " (Paimon 1.4)"),
    "vector.file.format": _refused("VECTOR columns are written to separate vector-store files"),
    "vector-field": _inert(
        "makes Java declare these columns VECTOR when it creates the table; the schema's "
        "column types carry it from then on"
    ),
    "vector.target-file-size": _inert("only with vector.file.format, which is refused"),
    "vector-search.distribute.enabled": _inert(_GLOBAL_INDEX),
    "vector-search.lateral-join.batch-size": _inert(_GLOBAL_INDEX),
    "global-index.external-path": _inert(_GLOBAL_INDEX),
    "global-index.column-update-action": _inert(_GLOBAL_INDEX),
    "global-index.row-count-per-shard": _inert(_GLOBAL_INDEX),
    "global-index.build.max-shard": _inert(_GLOBAL_INDEX),
    "global-index.build.max-parallelism": _inert(_GLOBAL_INDEX),
    "global-index.enabled": _inert(_GLOBAL_INDEX),
    "global-index.search-mode": _inert(_GLOBAL_INDEX),
    "global-index.thread-num": _inert(_GLOBAL_INDEX),
    "scalar-index.search-mode": _inert(_GLOBAL_INDEX),
    "vector-index.search-mode": _inert(_GLOBAL_INDEX),
    "full-text-index.search-mode": _inert(_GLOBAL_INDEX),
    "pk-vector.index.columns": _inert(_GLOBAL_INDEX),
    "pk-btree.index.columns": _inert(_GLOBAL_INDEX),
    "pk-bitmap.index.columns": _inert(_GLOBAL_INDEX),
    "pk-multivalue.index.columns": _inert(_GLOBAL_INDEX),
    "pk-full-text.index.columns": _inert(_GLOBAL_INDEX),
    # -- schema changes
    # -- catalog and table kinds
    "path": _inert("the table's location as catalogs record it; the location a read or write is given decides"),
    "owner": _inert(_CATALOG + " (not a Java option key: the owner catalogs record)"),
    "comment": _inert(_CATALOG + " (not a Java option key: the comment catalogs record)"),
    "file-operation.thread-num": _inert(_TUNING),
    "materialized-table.definition-query": _inert(_MATERIALIZED),
    "materialized-table.interval-freshness": _inert(_MATERIALIZED),
    "materialized-table.interval-freshness.time-unit": _inert(_MATERIALIZED),
    "materialized-table.logical-refresh-mode": _inert(_MATERIALIZED),
    "materialized-table.refresh-mode": _inert(_MATERIALIZED),
    "materialized-table.refresh-status": _inert(_MATERIALIZED),
    "materialized-table.refresh-handler-description": _inert(_MATERIALIZED),
    "materialized-table.refresh-handler-bytes": _inert(_MATERIALIZED),
    "format-table.scan.list-parallelism": _inert(_FORMAT_TABLE),
    "format-table.implementation": _inert(_FORMAT_TABLE),
    "format-table.partition-path-only-value": _inert(_FORMAT_TABLE),
    "format-table.file.compression": _inert(_FORMAT_TABLE),
    "format-table.commit-hive-sync-url": _inert(_FORMAT_TABLE),
    "object-location": _inert("object tables only (type = object-table, refused; Paimon 1.0 to 1.2)"),
    # -- keys removed from Paimon since 1.0 (old tables still carry them)
    "manifest.format": _refused("manifests in a format other than Avro (Paimon 1.0 to 1.3)", "avro"),
    "write-manifest-cache": _inert(_TUNING + " (Paimon 1.0 to 1.2)"),
    "log.consistency": _inert("the external log system (Paimon 1.0 to 1.3); batch reads never used it"),
    "log.changelog-mode": _inert("the external log system (Paimon 1.0 to 1.3); batch reads never used it"),
    "log.key.format": _inert("the external log system (Paimon 1.0 to 1.3); batch reads never used it"),
    "log.format": _inert("the external log system (Paimon 1.0 to 1.3); batch reads never used it"),
    "log.ignore-delete": _inert("the external log system (Paimon 1.2 to 1.3); batch reads never used it"),
    "streaming-read-mode": _inert(_STREAMING + " (Paimon 1.0 to 1.3)"),
    # -- FlinkConnectorOptions
    "sink.parallelism": _inert(_FLINK),
    "scan.parallelism": _inert(_FLINK),
    "unaware-bucket.compaction.parallelism": _inert(_FLINK),
    "unaware-bucket.no-shuffle": _inert(_FLINK),
    "compaction.bucket-distribution-strategy": _inert(_FLINK),
    "scan.infer-parallelism": _inert(_FLINK),
    "scan.infer-parallelism.max": _inert(_FLINK),
    "changelog-producer.compaction-interval": _inert(_FLINK),
    "scan.watermark.emit.strategy": _inert(_FLINK),
    "scan.watermark.alignment.group": _inert(_FLINK),
    "scan.watermark.idle-timeout": _inert(_FLINK),
    "scan.watermark.alignment.max-drift": _inert(_FLINK),
    "scan.watermark.alignment.update-interval": _inert(_FLINK),
    "scan.split-enumerator.batch-size": _inert(_FLINK),
    "scan.max-snapshot.count": _inert(_FLINK),
    "scan.split-enumerator.mode": _inert(_FLINK),
    "sink.use-managed-memory-allocator": _inert(_FLINK),
    "scan.remove-normalize": _inert(_FLINK),
    "read.shuffle-bucket-with-partition": _inert(_FLINK),
    "sink.managed.writer-buffer-memory": _inert(_FLINK),
    "sink.cross-partition.managed-memory": _inert(_FLINK),
    "source.checkpoint-align.enabled": _inert(_FLINK),
    "source.checkpoint-align.timeout": _inert(_FLINK),
    "lookup.async": _inert(_FLINK),
    "lookup.bootstrap-parallelism": _inert(_FLINK),
    "lookup.async-thread-number": _inert(_FLINK),
    "lookup.cache": _inert(_FLINK),
    "scan.partitions": _inert(
        "partitions Flink lookup joins and Flink sources load; Paimon's Spark reader "
        "ignores it too (pyspark-paimon honours it as a read option)"
    ),
    "lookup.dynamic-partition.refresh-interval": _inert(_FLINK),
    "lookup.refresh.async": _inert(_FLINK),
    "lookup.dynamic-partition.refresh.async": _inert(_FLINK),
    "lookup.refresh.async.pending-snapshot-count": _inert(_FLINK),
    "lookup.refresh.time-periods-blacklist": _inert(_FLINK),
    "lookup.refresh.full-load-threshold": _inert(_FLINK),
    "sink.savepoint.auto-tag": _inert(_FLINK),
    "sink.writer-cpu": _inert(_FLINK),
    "sink.writer-memory": _inert(_FLINK),
    "sink.committer-cpu": _inert(_FLINK),
    "sink.committer-memory": _inert(_FLINK),
    "sink.committer-operator-chaining": _inert(_FLINK),
    "partition.mark-done-action.mode": _inert(_FLINK),
    "partition.idle-time-to-done": _inert(_FLINK),
    "partition.time-interval": _inert(_FLINK),
    "partition.mark-done.recover-from-state": _inert(_FLINK),
    "sink.clustering.sort-in-cluster": _inert(_FLINK),
    "sink.clustering.sample-factor": _inert(_FLINK),
    "end-input.watermark": _inert(_FLINK),
    "precommit-compact": _inert(_FLINK),
    "changelog.precommit-compact.thread-num": _inert(_FLINK),
    "changelog.precommit-compact.buffer-size": _inert(_FLINK),
    "source.operator-uid.suffix": _inert(_FLINK),
    "sink.operator-uid.suffix": _inert(_FLINK),
    "scan.bounded": _inert(_FLINK),
    "scan.dedicated-split-generation": _inert(_FLINK),
    "commit.custom-listeners": _inert(_FLINK),
    "sink.coordinator-commit.enabled": _inert(_FLINK),
    "sink.writer-coordinator.enabled": _inert(_FLINK),
    "sink.key-only-deletes.enabled": _inert(_FLINK),
    "sink.writer-coordinator.cache-memory": _inert(_FLINK),
    "sink.writer-coordinator.cache-expire-after-access": _inert(_FLINK),
    "sink.writer-coordinator.cache-soft-values": _inert(_FLINK),
    "sink.writer-coordinator.page-size": _inert(_FLINK),
    "sink.writer-coordinator.prefetch-manifests": _inert(_FLINK),
    "filesystem.job-level-settings.enabled": _inert(_FLINK),
    "sink.writer-refresh-detectors": _inert(_FLINK),
    # -- SparkConnectorOptions
    "requiredSparkConfsCheck.enabled": _inert(_SPARK),
    "legacy-timestamp-mapping.enabled": _inert(_SPARK),
    "vector-search.lateral-join.parallelism": _inert(_SPARK),
    "write.use-v2-write": _inert(_SPARK),
    "write.hive-style-dynamic-partition.enabled": _inert(_SPARK),
    "write.data-evolution.update-conflict-retry.max-attempts": _inert(_SPARK),
    "write.data-evolution.update-conflict-retry.wait-ms": _inert(_SPARK),
    "read.stream.maxFilesPerTrigger": _inert(_SPARK),
    "read.stream.maxBytesPerTrigger": _inert(_SPARK),
    "read.stream.maxRowsPerTrigger": _inert(_SPARK),
    "read.stream.minRowsPerTrigger": _inert(_SPARK),
    "read.stream.maxTriggerDelayMs": _inert(_SPARK),
    "read.changelog": _inert(_SPARK),
    "read.allow.fullScan": _inert(_SPARK),
    "format-table.repair.collect-statistics": _inert(_SPARK),
    "format-table.statistics.parallelism": _inert(_SPARK),
    "source.split.target-size-with-column-pruning": _inert(_TUNING),
    # -- OrcOptions (format options Java passes to its ORC writer and reader)
    "orc.column.encoding.direct": _inert("ORC encoding of new files"),
    "orc.dictionary.key.threshold": _inert("ORC encoding of new files"),
    "orc.timestamp-ltz.legacy.type": _refused(
        "ORC files store TIMESTAMP WITH LOCAL TIME ZONE in the newer encoding, which is not read here", "true"
    ),
    # -- IcebergOptions (the storage type, location, format version, manifest codec and retention are honoured)
    "metadata.iceberg.uri": _inert(_ICEBERG),
    "metadata.iceberg.hive-conf-dir": _inert(_ICEBERG),
    "metadata.iceberg.hadoop-conf-dir": _inert(_ICEBERG),
    "metadata.iceberg.hive-client-class": _inert(_ICEBERG),
    "metadata.iceberg.database": _inert(_ICEBERG),
    "metadata.iceberg.table": _inert(_ICEBERG),
    "metadata.iceberg.glue.skip-archive": _inert(_ICEBERG),
    "metadata.iceberg.hive-skip-update-stats": _inert(_ICEBERG),
    # -- HiveConnectorOptions
    "paimon.respect.minmaxsplitsize.enabled": _inert("split sizing of Hive reads"),
    "paimon.split.openfilecost": _inert("split sizing of Hive reads"),
    # -- CsvOptions, JsonOptions, TextOptions (format tables)
    "csv.field-delimiter": _inert(_FORMAT_TABLE),
    "csv.line-delimiter": _inert(_FORMAT_TABLE),
    "csv.quote-character": _inert(_FORMAT_TABLE),
    "csv.escape-character": _inert(_FORMAT_TABLE),
    "csv.include-header": _inert(_FORMAT_TABLE),
    "csv.null-literal": _inert(_FORMAT_TABLE),
    "csv.mode": _inert(_FORMAT_TABLE),
    "json.ignore-parse-errors": _inert(_FORMAT_TABLE),
    "json.map-null-key-mode": _inert(_FORMAT_TABLE),
    "json.map-null-key-literal": _inert(_FORMAT_TABLE),
    "json.line-delimiter": _inert(_FORMAT_TABLE),
    "text.line-delimiter": _inert(_FORMAT_TABLE),
}

#: Legacy (fallback) spellings Java still reads -> the key they stand for; each gets that key's rule.
#: (``ignore-delete``'s engine-prefixed spellings are honoured: see ``options.IGNORE_DELETE_LEGACY_KEYS``.)
ALIASES: dict[str, str] = {
    "snapshot.expire.clean-empty-directories": "snapshot.clean-empty-directories",
    "log.scan": "scan.mode",
    "log.scan.timestamp-millis": "scan.timestamp-millis",
    "orc.write.batch-size": "write.batch-size",
    "changelog-producer.lookup-wait": "lookup-wait",
    "delete-file.thread-num": "file-operation.thread-num",
    "blob.stored-descriptor-fields": "blob-descriptor-field",
    "log.scan.remove-normalize": "scan.remove-normalize",
    "streaming-read.shuffle-bucket-with-partition": "read.shuffle-bucket-with-partition",
    "lookup.dynamic-partition": "scan.partitions",
    "changelog.precommit-compact": "precommit-compact",
    "field-delimiter": "csv.field-delimiter",
    "seq": "csv.field-delimiter",
    "delimiter": "csv.field-delimiter",
    "lineSep": "csv.line-delimiter",
    "quote": "csv.quote-character",
    "escape": "csv.escape-character",
    "header": "csv.include-header",
    "nullvalue": "csv.null-literal",
    "mode": "csv.mode",
}
NOT_HONOURED.update(
    {
        alias: replace(NOT_HONOURED[key], reason=f"legacy spelling of '{key}': {NOT_HONOURED[key].reason}")
        for alias, key in ALIASES.items()
    }
)

#: Families of keys with a variable part (``file-index.bloom-filter.columns``, ``orc.compress``...), checked
#: after exact keys, longest prefix first.
PREFIX_RULES: tuple[tuple[str, KeyRule], ...] = (
    ("commit.callback.", _inert("constructor parameter of a commit callback (commit.callbacks, which writes refuse)")),
    ("tag.callback.", _inert("constructor parameter of a tag callback (tag.callbacks, which writes refuse)")),
    (
        "file-index.bloom-filter.",
        KeyRule(
            "honoured",
            "bloom-filter file indexes (file-index.bloom-filter.columns, .<column>.items, .<column>.fpp) are "
            "written for new data files and prune reads",
        ),
    ),
    (
        "file-index.bitmap.",
        KeyRule(
            "honoured",
            "bitmap file indexes (file-index.bitmap.columns) are written (version 1, what Java 1.0 reads) for new "
            "data files and prune reads; a version or block-size setting is not honoured",
        ),
    ),
    ("file-index.", _inert(_INDEX_OTHER)),
    ("blob-descriptor.", _inert(_NO_BLOB)),
    ("parquet.", _inert("a parquet writer setting (encoding, sizes) of new files")),
    ("orc.", _inert("an ORC writer setting (encoding, sizes) of new files")),
    ("avro.", _inert("an Avro writer setting (codec) of Java's Avro files")),
)

#: Per-column options ``fields.<column>.<suffix>`` Java defines that we do not honour (the honoured ones are
#: ``options.FIELD_OPTIONS``).
FIELD_SUFFIX_RULES: dict[str, KeyRule] = {
    "nested-key": _inert("only read by the nested_update aggregate function, refused through aggregate-function"),
    "nested-key-null-strategy": _inert("only read by nested_update, refused through aggregate-function"),
    "nested-sequence-field": _inert("only read by nested_update, refused through aggregate-function"),
    "count-limit": _inert("only read by nested_update, refused through aggregate-function"),
    "ts-field": _inert("only read by merge_map_with_keytime, refused through aggregate-function"),
    "map.storage-layout": _refused("the MAP column is stored as a shredded row, not as a map", "default"),
    "map.shared-shredding.max-columns": _inert("only with map.storage-layout = shared-shredding (refused)"),
    "map.shared-shredding.column-placement-policy": _inert("only with map.storage-layout = shared-shredding (refused)"),
    "pk-vector.index.type": _inert(_GLOBAL_INDEX),
    "pk-vector.index.options": _inert(_GLOBAL_INDEX),
    "pk-vector.distance.metric": _inert(_GLOBAL_INDEX),
    "default-value": _refused(
        "Paimon up to 1.2 reads NULLs of this column as the default value (newer Paimon "
        "keeps column defaults in the schema instead)",
        fix="remove the option (t.update_schema().remove_options) after checking the column has no NULLs "
        "that readers expect to see as the default",
    ),
}

#: Keys Java marks ``@Immutable``: they cannot change once a table exists (they define how existing data is
#: laid out or merged). ``SchemaManager`` refuses to change them, as Java does.
JAVA_IMMUTABLE: frozenset[str] = frozenset(
    {
        "type",
        "bucket-key",
        "bucket-function.type",
        "data-file.path-directory",
        "merge-engine",
        "sequence.snapshot-ordering",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "rowkind.field",
        "primary-key",
        "primary-key.nullable",
        "partition",
        "dynamic-bucket.initial-buckets",
        "force-lookup",
        "row-tracking.enabled",
        "data-evolution.enabled",
        "index-file-in-data-file-dir",
        "blob-field",
        "blob-descriptor-field",
        "blob-view-field",
        "pk-clustering-override",
    }
)
