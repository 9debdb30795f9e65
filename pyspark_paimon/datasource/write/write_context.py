"""What a write task needs from the driver: :class:`WriteContext`, computed once from the latest snapshot and
pickled to every task, so executors never list or read the table's metadata themselves (sequence-number bases,
partitions' bucket counts, the dynamic-bucket hash index files, the cross-partition key index)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from pyspark_paimon.datasource.write.cross_partition import bootstrap, is_cross_partition
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.hash_index import hash_index_files
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.schema.options import POSTPONE_BUCKET, validate_table_options
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import FileStore

__all__ = ["WriteContext"]


@dataclass(frozen=True)
class WriteContext:
    """Everything a write task needs, computed once on the driver and pickled to the executors.

    ``sequence_bases[(partition bytes, bucket)]`` is the bucket's next sequence number (max live + 1);
    missing buckets start at 0. ``partition_buckets[partition bytes]`` is the bucket count of an existing
    partition whose count differs from the table's ``bucket`` option (it keeps its layout until
    overwritten). ``options`` are the table options (and any write options) in force. ``hash_index``: in
    dynamic bucket mode, per partition bucket -> path of its ``HASH`` index file in the latest snapshot (each
    writer loads a partition's hashes when it first writes to it, as Java's assigners do). ``key_index``: for a
    cross-partition upsert table, where every live key is (``cross_partition.bootstrap``); None = no key yet.
    ``snapshot_id``: the snapshot all of this was read from (0: an empty branch; None: not read from a snapshot),
    which the new files' commit messages carry (``CommitMessage.sequenced_after``).
    """

    fileio: FileIO
    table_path: str
    schema: TableSchema
    options: dict[str, str] = field(default_factory=dict)
    sequence_bases: dict[tuple[bytes, int], int] = field(default_factory=dict)
    partition_buckets: dict[bytes, int] = field(default_factory=dict)
    commit_user: str = ""
    hash_index: dict[bytes, dict[int, str]] = field(default_factory=dict)
    key_index: pa.Table | None = None
    snapshot_id: int | None = None

    @classmethod
    def for_store(cls, store: FileStore, commit_user: str, replace_all: bool = False) -> "WriteContext":
        """A context continuing ``store``'s latest snapshot (``replace_all``: an overwrite of the whole table,
        after which no partition keeps an old bucket count)."""
        schema = store.schema()
        validate_table_options(schema.options, creating=False, writing=True, table=store.table_path)
        seq_bases: dict[tuple[bytes, int], int] = {}
        partition_buckets: dict[bytes, int] = {}
        num_buckets = schema.num_buckets  # parsed once, not per live file
        latest = store.snapshots.latest()
        hash_index: dict[bytes, dict[int, str]] = {}
        if schema.primary_keys and num_buckets == -1 and latest is not None and latest.index_manifest:
            entries = read_index_manifest(store.fileio, store.manifests.path(latest.index_manifest))
            hash_index = hash_index_files(entries, FileIO.join(store.table_path, "index"))
        for e in store.live_entries(latest, cached=True):  # manifests never change
            key = (e.partition, e.bucket)
            seq_bases[key] = max(seq_bases.get(key, 0), e.file.max_sequence_number + 1)
            if e.total_buckets != num_buckets:
                partition_buckets[e.partition] = e.total_buckets
        return cls(
            fileio=store.fileio,
            table_path=store.table_path,
            schema=schema,
            options=dict(schema.options),
            sequence_bases=seq_bases,
            # A postpone-bucket table keeps its partitions' bucket counts even through a full overwrite (Java's
            # fixed-bucket writes read them from the table before writing).
            partition_buckets={} if replace_all and num_buckets != POSTPONE_BUCKET else partition_buckets,
            commit_user=commit_user,
            hash_index={} if replace_all else hash_index,
            key_index=None if replace_all or not is_cross_partition(schema) else bootstrap(store, schema, latest),
            snapshot_id=latest.id if latest is not None else 0,
        )
