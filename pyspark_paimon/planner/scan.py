"""Scan planning: which snapshot, which files, which splits.

Runs on the driver. The result is a :class:`ScanPlan` whose splits executors read. Planning prunes as early
as it can (manifest partition stats, then entry partitions, then buckets, then file statistics) and counts
what it skipped, so tests and users can see pruning happen without timing anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from pyspark_paimon.metadata.binary_row import deserialize_row
from pyspark_paimon.metadata.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta
from pyspark_paimon.metadata.options import parse_memory_size
from pyspark_paimon.metadata.schema import TableSchema
from pyspark_paimon.metadata.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf, could_match_stats, eval_on_values, leaves_on
from pyspark_paimon.planner.split import DataSplit


@dataclass
class ScanCounters:
    """What planning looked at and what it skipped (for explain output and tests)."""

    manifests_total: int = 0
    manifests_skipped: int = 0
    partitions_total: int = 0
    partitions_selected: int = 0
    buckets_total: int = 0
    buckets_selected: int = 0
    files_total: int = 0
    files_selected: int = 0
    bytes_total: int = 0
    bytes_selected: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class ScanPlan:
    snapshot: Snapshot | None
    schema: TableSchema
    splits: list[DataSplit]
    counters: ScanCounters = field(default_factory=ScanCounters)
    notes: list[str] = field(default_factory=list)


def partition_values(entry_partition: bytes, schema: TableSchema, cache: dict[bytes, tuple]) -> tuple:
    values = cache.get(entry_partition)
    if values is None:
        values = tuple(deserialize_row(entry_partition, [f.type for f in schema.partition_fields]))
        cache[entry_partition] = values
    return values


def _manifest_may_match(meta: ManifestFileMeta, schema: TableSchema, pred: Sequence[Leaf]) -> bool:
    if not pred:
        return True
    types = [f.type for f in schema.partition_fields]
    stats = meta.partition_stats
    try:
        lows = deserialize_row(stats.min_values, types)
        highs = deserialize_row(stats.max_values, types)
    except Exception:  # stats absent or unreadable: never prune on them
        return True
    nulls = stats.null_counts or ()
    for i, f in enumerate(schema.partition_fields):
        for leaf in pred:
            if leaf.column != f.name:
                continue
            nc = nulls[i] if i < len(nulls) else None
            rows = meta.num_added_files + meta.num_deleted_files
            if not could_match_stats(leaf, lows[i] if i < len(lows) else None,
                                     highs[i] if i < len(highs) else None, nc, max(rows, 1)):
                return False
    return True


class ScanPlanner:
    """Plans a batch read of one snapshot of one branch."""

    def __init__(self, store: FileStore, schema: TableSchema, options: dict[str, str] | None = None):
        self.store = store
        self.schema = schema
        self.options = options or {}

    def plan(self, snapshot: Snapshot | None, predicate: Sequence[Leaf] = (),
             partition_filter: Callable[[dict[str, Any]], bool] | None = None) -> ScanPlan:
        """Live files of ``snapshot`` grouped into splits, pruned by ``predicate`` and ``partition_filter``."""
        counters = ScanCounters()
        if snapshot is None:
            return ScanPlan(None, self.schema, [], counters)
        part_names = [f.name for f in self.schema.partition_fields]
        part_pred = leaves_on(predicate, part_names)
        metas = self.store.data_manifests(snapshot)
        counters.manifests_total = len(metas)
        kept = [m for m in metas if _manifest_may_match(m, self.schema, part_pred)]
        counters.manifests_skipped = len(metas) - len(kept)
        # Deletes in skipped manifests can only cancel adds of the same partition, which the same stats
        # exclude, so pruning whole manifests cannot resurrect a deleted file.
        entries = self.store.live_entries(snapshot, kept)
        return self.plan_entries(entries, predicate, partition_filter, counters, snapshot)

    def plan_entries(self, entries: Iterable[ManifestEntry], predicate: Sequence[Leaf] = (),
                     partition_filter: Callable[[dict[str, Any]], bool] | None = None,
                     counters: ScanCounters | None = None, snapshot: Snapshot | None = None) -> ScanPlan:
        counters = counters or ScanCounters()
        schema = self.schema
        part_names = [f.name for f in schema.partition_fields]
        part_pred = leaves_on(predicate, part_names)
        cache: dict[bytes, tuple] = {}
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        total_buckets: dict[tuple[bytes, int], int] = {}
        seen_partitions: set[bytes] = set()
        selected_partitions: set[bytes] = set()
        seen_buckets: set[tuple[bytes, int]] = set()
        for e in entries:
            counters.files_total += 1
            counters.bytes_total += e.file.file_size
            seen_partitions.add(e.partition)
            seen_buckets.add((e.partition, e.bucket))
            values = partition_values(e.partition, schema, cache)
            named = dict(zip(part_names, values))
            if part_pred and not eval_on_values(part_pred, named):
                continue
            if partition_filter is not None and not partition_filter(named):
                continue
            selected_partitions.add(e.partition)
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
            total_buckets[(e.partition, e.bucket)] = e.total_buckets
        counters.partitions_total = len(seen_partitions)
        counters.partitions_selected = len(selected_partitions)
        counters.buckets_total = len(seen_buckets)
        counters.buckets_selected = len(groups)
        splits = []
        for (part, bucket), files in sorted(groups.items(), key=lambda kv: (cache[kv[0][0]].__repr__(), kv[0][1])):
            files.sort(key=lambda f: (f.level, f.min_sequence_number, f.file_name))
            values = cache[part]
            path = self.store.bucket_path(schema, values, bucket)
            splits.extend(self._make_splits(part, values, bucket, total_buckets[(part, bucket)], files, path))
        counters.files_selected = sum(len(s.files) for s in splits)
        counters.bytes_selected = sum(s.size_bytes for s in splits)
        return ScanPlan(snapshot, schema, splits, counters)

    def _make_splits(self, part: bytes, values: tuple, bucket: int, total_buckets: int,
                     files: list[DataFileMeta], path: str) -> list[DataSplit]:
        if not self.schema.primary_keys:
            # Append files are independent: cut large buckets into target-size pieces for parallelism.
            target = split_target_size(self.schema.options, self.options)
            out, cur, size = [], [], 0
            for f in files:
                if cur and size + f.file_size > target:
                    out.append(DataSplit(part, values, bucket, total_buckets, tuple(cur), path, True))
                    cur, size = [], 0
                cur.append(f)
                size += f.file_size
            if cur:
                out.append(DataSplit(part, values, bucket, total_buckets, tuple(cur), path, True))
            return out
        raw = (all(f.level > 0 for f in files) and all(f.delete_row_count == 0 for f in files)
               and len({f.level for f in files}) == 1)
        return [DataSplit(part, values, bucket, total_buckets, tuple(files), path, raw)]


def split_target_size(table_options: dict[str, str], read_options: dict[str, str]) -> int:
    value = read_options.get("source.split.target-size") or table_options.get("source.split.target-size") or "128 mb"
    return parse_memory_size(value, "source.split.target-size")


def pack_splits(splits: Sequence[DataSplit], target_size: int, open_file_cost: int = 4 * 1024 * 1024,
                max_groups: int | None = None) -> list[list[DataSplit]]:
    """Pack splits into few groups of about ``target_size`` bytes each (one Spark task per group).

    Every Python task costs ~30 ms, so many small splits must share a task; a greedy longest-first packing
    into the least-loaded group keeps groups balanced.
    """
    if not splits:
        return []
    weights = [max(s.size_bytes, open_file_cost * max(len(s.files), 1)) for s in splits]
    n = max(1, math.ceil(sum(weights) / max(target_size, 1)))
    n = min(n, len(splits))
    if max_groups is not None:
        n = max(1, min(n, max_groups))
    groups: list[list[DataSplit]] = [[] for _ in range(n)]
    loads = [0] * n
    for idx in sorted(range(len(splits)), key=lambda i: -weights[i]):
        j = loads.index(min(loads))
        groups[j].append(splits[idx])
        loads[j] += weights[idx]
    return [g for g in groups if g]
