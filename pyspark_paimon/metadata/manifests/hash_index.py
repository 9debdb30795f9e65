"""Dynamic bucket mode (``bucket = -1`` primary-key tables): the ``HASH`` index and Java's key-to-bucket rule
(Java's `HashIndexFile`, `PartitionIndex`, `DynamicBucketIndexMaintainer`, `IndexManifestFileHandler`).

A dynamic-bucket table has no hash function from key to bucket: a key's bucket is whatever the writer that
first saw the key chose, and every later writer must find it again. The choice is recorded per (partition,
bucket) in one ``HASH`` index file under ``index/``: the big-endian int32 hashes (Java's ``BinaryRow.hashCode``
of the trimmed primary key) of every key written to that bucket. A writer loads a partition's files, sends a key
whose hash is known to its bucket, and a new key to the first bucket (ascending id) holding fewer than
``dynamic-bucket.target-row-num`` keys, else to a new bucket (the smallest unused id below
``dynamic-bucket.max-buckets``), else, once that bound is reached, to an existing bucket. One hash therefore
lives in one bucket of a partition, even when two keys share it.

On commit the index file of every bucket that received keys is rewritten as the union of its current hashes
and the new ones, and replaces the old entry of that (partition, bucket) in the snapshot's index manifest; the
old file stays for older snapshots (expiration removes it).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Collection, Mapping

import numpy as np

from pyspark_paimon.errors import CorruptMetadataError, OptionError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.index_manifest import IndexManifestEntry

__all__ = [
    "HASH_INDEX",
    "MAX_DYNAMIC_BUCKETS",
    "PartitionIndex",
    "hash_index_files",
    "read_hash_file",
    "sorted_unique",
    "write_hash_file",
]

HASH_INDEX = "HASH"
#: Java stores bucket ids of dynamic buckets as ``short``: at most this many buckets per partition.
MAX_DYNAMIC_BUCKETS = 32767


def read_hash_file(fileio: FileIO, path: str) -> np.ndarray:
    """The hashes of one ``HASH`` index file (int32; the file is big-endian int32s, nothing else)."""
    try:
        data = fileio.read_bytes(path)
    except FileNotFoundError:
        raise CorruptMetadataError(
            f"Hash index file {fileio.uri(path)} is missing, but the latest snapshot's index manifest names it. "
            "Restore it, or roll the table back to a snapshot that does not reference it."
        ) from None
    if len(data) % 4:
        raise CorruptMetadataError(
            f"Hash index file {fileio.uri(path)} holds {len(data)} bytes, not a whole number of 4-byte hashes; "
            "it is damaged. Restore it, or roll the table back to a snapshot that does not reference it."
        )
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


def write_hash_file(fileio: FileIO, index_dir: str, hashes: np.ndarray) -> tuple[str, int]:
    """Write ``hashes`` as a new ``HASH`` index file ``index-<uuid>-0`` in ``index_dir``; (name, size)."""
    name = f"index-{uuid.uuid4()}-0"
    data = np.asarray(hashes, dtype=np.int32).astype(">i4").tobytes()
    fileio.mkdirs(index_dir)
    fileio.write_bytes(FileIO.join(index_dir, name), data)
    return name, len(data)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, ascending. Sorts instead of calling ``np.unique``, whose
    hash-table path for integers (numpy 2.3+) took 0.5-1.5 s per 2M key hashes here, 20-50x a sort; input that
    already ascends strictly (a bucket's hashes, a file's deleted positions) costs one comparison pass."""
    v = np.asarray(values)
    if len(v) < 2 or bool((v[1:] > v[:-1]).all()):
        return v
    v = np.sort(v)
    return v[np.r_[True, v[1:] != v[:-1]]]


def _sort_pairs(high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``high`` (int32) and ``low`` (non-negative, below 2^32) sorted together by (high, low), with one sort
    of the pairs packed into int64 (numpy's int64 sort is several times faster than a stable argsort)."""
    packed = np.sort((high.astype(np.int64) << 32) | low.astype(np.int64))
    return (packed >> 32).astype(np.int32), packed & 0xFFFFFFFF


def _ascending(hashes: np.ndarray) -> np.ndarray:
    """``hashes`` ascending: as they are when we wrote the file, sorted when Java did (its hash-set order)."""
    if len(hashes) < 2 or bool((hashes[1:] >= hashes[:-1]).all()):
        return hashes
    return np.sort(hashes)


def hash_index_files(entries: Collection[IndexManifestEntry], index_dir: str) -> dict[bytes, dict[int, str]]:
    """Per partition: bucket -> path of its ``HASH`` index file (from the live entries of an index manifest;
    files sit in the table's ``index/`` directory unless written to an external path)."""
    out: dict[bytes, dict[int, str]] = {}
    for e in entries:
        if e.index_type == HASH_INDEX:
            out.setdefault(e.partition, {})[e.bucket] = e.external_path or FileIO.join(index_dir, e.file_name)
    return out


@dataclass
class PartitionIndex:
    """The key hashes of one partition and their buckets, and Java's rule for new keys (``PartitionIndex``).

    ``runs`` holds, per bucket, ascending arrays of its hashes: the bucket's index file (sorted on load if a
    writer stored it unsorted, as Java's hash set does) and the hashes assigned since. A lookup searches each
    run for the sorted queries instead of merging the partition's index into one sorted array first: an upsert
    of 10% of the keys then costs a binary search per key and bucket, not a sort of the whole index (0.15 s of
    a 0.4 s write at 2M keys). ``counts`` holds the keys per bucket (Java counts the hashes of each bucket's
    index file, so a bucket at ``target_row_num`` or above takes no new key). Hashes assigned since the last
    lookup wait unsorted in ``pending`` and join the runs at the next lookup, so a write's last (often only)
    batch never sorts them.
    """

    target_row_num: int
    max_buckets: int = -1
    runs: dict[int, list[np.ndarray]] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    where: str = ""
    pending: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)

    #: A bucket's runs are merged into one when it has more (many small batches of new keys).
    MAX_RUNS = 8

    @classmethod
    def load(
        cls, fileio: FileIO, files: Mapping[int, str], target_row_num: int, max_buckets: int, where: str = ""
    ) -> "PartitionIndex":
        """The index of a partition from its ``HASH`` files (bucket -> path)."""
        runs: dict[int, list[np.ndarray]] = {}
        counts: dict[int, int] = {}
        for bucket, path in sorted(files.items()):
            h = read_hash_file(fileio, path)
            counts[bucket] = len(h)
            runs[bucket] = [_ascending(h)]
        return cls(target_row_num, max_buckets, runs=runs, counts=counts, where=where)

    def known_hashes(self) -> np.ndarray:
        """Every hash of the partition, ascending (for tests and diagnostics; writes never build it)."""
        self._merge_pending()
        arrays = [a for runs in self.runs.values() for a in runs]
        return np.sort(np.concatenate(arrays)) if arrays else np.empty(0, np.int32)

    def _merge_pending(self) -> None:
        if not self.pending:
            return
        added, self.pending = self.pending, []
        hashes = np.concatenate([h for h, _ in added])
        buckets = np.concatenate([b for _, b in added])
        order = np.argsort(buckets.astype(np.uint16), kind="stable")  # ids < 32768: a radix sort
        sorted_b = buckets[order]
        starts = np.flatnonzero(np.r_[True, sorted_b[1:] != sorted_b[:-1]])
        for s, e in zip(starts, np.r_[starts[1:], len(order)]):
            runs = self.runs.setdefault(int(sorted_b[s]), [])
            runs.append(np.sort(hashes[order[s:e]]))
            if len(runs) > self.MAX_RUNS:
                runs[:] = [np.sort(np.concatenate(runs))]

    def _lookup_sorted(self, queries: np.ndarray) -> np.ndarray:
        """The bucket of each of ``queries`` (distinct, ascending int32), -1 where unknown. Each run is searched
        from its shorter side: the queries in a longer run, or a shorter run's hashes among the queries, so the
        cost is at most one binary search per indexed hash and never a sort of the index."""
        self._merge_pending()
        out = np.full(len(queries), -1, np.int32)
        n = len(queries)
        if not n:
            return out
        for bucket, runs in self.runs.items():
            for run in runs:
                if not len(run):
                    continue
                if len(run) < n:
                    pos = np.minimum(np.searchsorted(queries, run), n - 1)
                    out[pos[queries[pos] == run]] = bucket
                else:
                    pos = np.minimum(np.searchsorted(run, queries), len(run) - 1)
                    out[run[pos] == queries] = bucket
        return out

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(known mask, bucket of each known hash; -1 elsewhere)."""
        hashes = np.asarray(hashes, dtype=np.int32)
        uniq = sorted_unique(np.sort(hashes))
        result = self._lookup_sorted(uniq)[np.searchsorted(uniq, hashes)] if len(uniq) else np.empty(0, np.int32)
        return result >= 0, result

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of every key hash (int32 array, in input order), assigning new hashes in order of first
        appearance as Java's ``PartitionIndex.assign`` does, and remembering them."""
        return self.assign_marking_new(hashes)[0]

    def assign_marking_new(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`assign`, plus a mask of the input positions whose hash this call added to the index: only
        those change the index files at commit, so an upsert of known keys costs the commit nothing."""
        hashes = np.asarray(hashes, dtype=np.int32)
        n = len(hashes)
        if not n:
            return np.empty(0, np.int32), np.zeros(0, bool)
        # One sort of (hash, position) pairs gives the distinct hashes ascending, the first position of each and
        # the distinct hash of every input row (positions fit the low 32 bits: < 2^32 rows per call).
        sorted_h, positions = _sort_pairs(hashes, np.arange(n, dtype=np.int64))
        starts = np.r_[True, sorted_h[1:] != sorted_h[:-1]]
        if bool(starts.all()):  # distinct (the usual case): no grouping needed
            result = np.empty(n, np.int32)
            result[positions] = self._lookup_sorted(sorted_h)
            new = result < 0
            if new.any():
                fresh = hashes[new]  # in order of appearance
                result[new] = chosen = self._assign_new(fresh)
                self.pending.append((fresh, chosen))
            return result, new
        uniq = sorted_h[starts]
        inverse = np.empty(n, np.int64)
        inverse[positions] = np.cumsum(starts) - 1
        result = self._lookup_sorted(uniq)
        known = result >= 0
        if not known.all():
            first = np.zeros(n, bool)
            first[positions[starts][~known]] = True
            arrival = inverse[first]  # the new distinct hashes in order of first appearance
            result[arrival] = chosen = self._assign_new(uniq[arrival])
            self.pending.append((uniq[arrival], chosen))
        return result[inverse], ~known[inverse]

    def _assign_new(self, new: np.ndarray) -> np.ndarray:
        """Buckets for hashes the partition has never seen: fill non-full buckets (ascending), then new
        buckets (smallest unused id), then, at ``max_buckets``, spread over the existing ones by hash (Java
        picks one at random; any bucket is correct as long as the hash stays there)."""
        out = np.empty(len(new), np.int32)
        done = 0
        target = self.target_row_num
        for bucket in sorted(self.counts):
            if done == len(new):
                break
            room = target - self.counts[bucket]
            if room <= 0:
                continue
            take = min(room, len(new) - done)
            out[done : done + take] = bucket
            self.counts[bucket] += take
            done += take
        limit = MAX_DYNAMIC_BUCKETS if self.max_buckets == -1 else min(self.max_buckets, MAX_DYNAMIC_BUCKETS)
        candidate = 0
        while done < len(new):
            while candidate in self.counts:
                candidate += 1
            if candidate >= limit:
                break
            take = min(target, len(new) - done)
            out[done : done + take] = candidate
            self.counts[candidate] = take
            done += take
        if done < len(new):
            if self.max_buckets == -1:
                raise OptionError(
                    f"Partition {self.where} needs more than {MAX_DYNAMIC_BUCKETS} dynamic buckets of "
                    f"'dynamic-bucket.target-row-num' = {target} keys; raise that option."
                )
            existing = np.array(sorted(self.counts), dtype=np.int64)
            rest = new[done:].astype(np.int64)
            out[done:] = existing[np.abs(rest) % len(existing)]
            for bucket, n in zip(*np.unique(out[done:], return_counts=True)):
                self.counts[int(bucket)] += int(n)
        return out
