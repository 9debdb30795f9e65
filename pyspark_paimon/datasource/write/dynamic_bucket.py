"""The commit half of dynamic bucket mode: the ``HASH`` index files a write's commit rewrites (Java's
`DynamicBucketIndexMaintainer` and `IndexManifestFileHandler`).

Each write task assigns the keys of the partitions it writes (:class:`~pyspark_paimon.metadata.manifests.
hash_index.PartitionIndex`, loaded from the snapshot the job started from) and reports the key hashes of every
bucket it wrote in its commit messages. Tasks do not see each other, so before anything is committed this module
checks what only the driver can: that no key hash of a partition went to two buckets (two tasks met the same new
key, or two new keys with equal hashes) and that no concurrent commit placed one of the new hashes in another
bucket meanwhile. Either would leave one key in two buckets, where every reader returns it twice; the write is
refused instead. Then each written bucket's index file becomes the union of its current hashes and the new ones.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

import numpy as np

from pyspark_paimon.errors import ConflictingKeysError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.hash_index import (
    HASH_INDEX,
    hash_index_files,
    read_hash_file,
    sorted_unique,
    write_hash_file,
)
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange, IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import partition_path
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore

__all__ = ["is_dynamic_bucket", "hash_index_update"]


def is_dynamic_bucket(schema: TableSchema) -> bool:
    """A primary-key table with ``bucket = -1`` (Java's ``HASH_DYNAMIC`` bucket mode)."""
    return bool(schema.primary_keys) and schema.num_buckets == -1


def hash_index_update(
    store: FileStore, schema: TableSchema, messages: Sequence[CommitMessage], overwrite: OverwriteSpec | None
) -> Callable[[Snapshot | None], IndexChange]:
    """The ``index_update`` of a dynamic-bucket write's commit (see the module docstring). Raises
    :class:`ConflictingKeysError` at once when the tasks of this write put one key hash in two buckets."""
    new: dict[bytes, dict[int, np.ndarray]] = defaultdict(dict)
    parts: dict[tuple[bytes, int], list[np.ndarray]] = defaultdict(list)
    for m in messages:
        if m.key_hashes:
            parts[(m.partition, m.bucket)].append(np.frombuffer(m.key_hashes, dtype=">i4").astype(np.int32))
    for (partition, bucket), arrays in parts.items():
        new[partition][bucket] = sorted_unique(np.concatenate(arrays))
    where = _describer(store, schema)
    for partition, buckets in new.items():
        _check_one_bucket_per_hash(buckets, {}, where(partition))
    fileio = store.fileio
    index_dir = FileIO.join(store.table_path, "index")

    def update(latest: Snapshot | None) -> IndexChange:
        current = latest.index_manifest if latest else None
        entries = read_index_manifest(fileio, store.manifests.path(current)) if current else []
        replaced = _replaced_partitions(entries, new, overwrite, schema)
        existing = hash_index_files(entries, index_dir)
        dropped = frozenset(e.slot for e in entries if e.index_type == HASH_INDEX and _in(e.partition, replaced))
        added: list[IndexManifestEntry] = []
        written: list[str] = []
        try:
            for partition, buckets in new.items():
                old_files = {} if _in(partition, replaced) else existing.get(partition, {})
                old = {b: read_hash_file(fileio, p) for b, p in old_files.items()}
                if old:  # without them, the check before the first attempt said it all
                    _check_one_bucket_per_hash(buckets, old, where(partition))
                for bucket, hashes in buckets.items():
                    before = old.get(bucket)
                    merged = hashes if before is None else sorted_unique(np.concatenate([before, hashes]))
                    if before is not None and len(merged) == len(before):
                        continue  # every key was already indexed there: the file stays (Java writes none either)
                    name, size = write_hash_file(fileio, index_dir, merged)
                    written.append(FileIO.join(index_dir, name))
                    added.append(IndexManifestEntry(0, partition, bucket, HASH_INDEX, name, size, len(merged)))
        except BaseException:
            for path in written:  # the commit cannot see them yet: delete them here
                fileio.delete(path)
            raise
        return IndexChange(dropped, tuple(added), tuple(written))

    return update


def _in(partition: bytes, replaced: set[bytes] | None) -> bool:
    """Whether ``partition`` is overwritten (``replaced`` None: the whole table is)."""
    return replaced is None or partition in replaced


def _replaced_partitions(
    entries: list[IndexManifestEntry],
    new: dict[bytes, dict[int, np.ndarray]],
    overwrite: OverwriteSpec | None,
    schema: TableSchema,
) -> set[bytes] | None:
    """The partitions whose index an overwrite drops (None: all of them; empty for an append). The rules are the
    commit's: the whole table, the partitions the new data touches, or the partitions a static spec names."""
    if overwrite is None:
        return set()
    if overwrite.mode == "all":
        return None
    if overwrite.mode == "dynamic":
        return set(new)
    out = set(overwrite.partitions) | set(new)
    if overwrite.partition_spec is not None:
        names = [f.name for f in schema.partition_fields]
        types = [f.type for f in schema.partition_fields]
        for raw in {e.partition for e in entries}:
            values = dict(zip(names, deserialize_row(raw, types)))
            if all(values.get(k) == v for k, v in overwrite.partition_spec.items()):
                out.add(raw)
    return out


def _check_one_bucket_per_hash(new: dict[int, np.ndarray], old: dict[int, np.ndarray], where: str) -> None:
    """Refuse when a hash of ``new`` (bucket -> hashes) sits in two buckets of ``new`` or in a bucket of ``old``
    other than its new one."""
    buckets = list(new)
    if len(buckets) + len(old) < 2:
        return
    hashes = np.concatenate([new[b] for b in buckets])
    if not old:
        ordered = np.sort(hashes, kind="stable")  # a merge of the buckets' ascending runs
        if not bool((ordered[1:] == ordered[:-1]).any()):
            return  # each bucket's hashes are distinct, so a repeated hash is the only possible clash
    owner = np.repeat(np.array(buckets, np.int64), [len(new[b]) for b in buckets])
    for b, h in old.items():
        hashes = np.concatenate([hashes, h])
        owner = np.concatenate([owner, np.full(len(h), b, np.int64)])
    # sorted by (hash, owner) with one sort of the pairs packed into int64 (bucket ids are small and >= 0)
    packed = np.sort((hashes.astype(np.int64) << 32) | owner)
    hashes, owner = packed >> 32, packed & 0xFFFFFFFF
    clash = (hashes[1:] == hashes[:-1]) & (owner[1:] != owner[:-1])
    if not clash.any():
        return
    i = int(np.flatnonzero(clash)[0])
    raise ConflictingKeysError(
        f"Dynamic bucket table {where}: key hash {int(hashes[i])} would live in buckets {int(owner[i])} and "
        f"{int(owner[i + 1])}, and a key in two buckets is read twice. Either several write tasks met the same new "
        "key (or two new keys with equal hashes), or a concurrent write placed it meanwhile. Nothing was "
        "committed. Write each partition's rows from one task (e.g. df.repartition(<partition columns>), or "
        "df.coalesce(1) for an unpartitioned table), and re-run the write."
    )


def _describer(store: FileStore, schema: TableSchema) -> Callable[[bytes], str]:
    fields = list(schema.partition_fields)
    types = [f.type for f in fields]

    def where(partition: bytes) -> str:
        if not fields:
            return store.table_path
        return f"{store.table_path} partition {partition_path(list(deserialize_row(partition, types)), fields)}"

    return where
