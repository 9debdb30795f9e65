"""Chain tables (Java's `ChainTableBatchScan`, `ChainTableCommitPreCallback`): the batch read plan.

A chain table keeps one logical table in three branches of one Paimon table: the loaded branch ("main",
normally empty), a **snapshot** branch holding complete copies of some partitions, and a **delta** branch
holding each partition's increment. A full read of partition ``T`` is resolved like this (Java's `ChainTableBatchScan`):

1. a partition that exists in main is read from main only;
2. a partition that exists in the snapshot branch is read from there as it is (never merged with deltas);
3. a partition that exists only in the delta branch is *chain-resolved*: its **anchor** is the snapshot
   partition of the same group with the greatest chain value strictly below ``T`` (natural order of the
   partition values, ignoring the user's partition filter); the anchor's files and the delta partitions in
   ``(anchor, T]`` are merged by the trimmed primary key. Without an anchor, every delta partition of the
   group up to ``T`` is merged. Rows carry ``T``'s partition values.

Choosing the deltas in ``(anchor, T]``: Paimon steps time from the anchor to ``T`` with
``partition.timestamp-pattern`` / ``-formatter`` and keeps the steps that exist as delta partitions (with a
10,000,000-step guard). We list the delta partitions that exist instead and keep those whose timestamp lies
in ``(anchor, T]`` and whose values are exactly what the formatter renders for that timestamp (what the
stepping would have produced). Same set, no enumeration, no step limit.

Merge order across branches: ``_SEQUENCE_NUMBER`` is branch-local, so the user ``sequence.field`` decides
recency; rows that tie on it are ordered by a per-file **rank** (anchor files 0, then the deltas in
partition order) before ``_SEQUENCE_NUMBER``, so a later partition wins a tie. (Paimon leaves such ties to
the branch-local sequence numbers, i.e. effectively arbitrary.)

Without a partition filter (Spark 4 without filter pushdown) every partition of the three branches is
resolved; with one, only the matching partitions are targets, but anchors and deltas are still found.
Both give the same rows for the same query.

This module is planning only (driver side, no Spark, no data reads). The chain definition and its
validation live in :mod:`pyspark_paimon.planner.chain.config`, the version each branch is read at in
:mod:`pyspark_paimon.planner.chain.versions`, partition values to time in
:mod:`pyspark_paimon.metadata.java_date`.
"""

from __future__ import annotations

import bisect
import datetime as _dt
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.java_date import PartitionTimeResolver
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.options import PARTITION_TIMESTAMP_FORMATTER, PARTITION_TIMESTAMP_PATTERN
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import (
    DELTA,
    MAIN,
    SNAPSHOT,
    ChainConfig,
    stores_of,
    validate_branch_schemas,
)
from pyspark_paimon.planner.chain.versions import aligned_schemas, resolve_chain_snapshots, schema_at
from pyspark_paimon.planner.predicate import Leaf, eval_on_values, leaves_on
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.scan import ScanCounters, ScanPlan, ScanPlanner, split_target_size
from pyspark_paimon.planner.sections import decoded_key_range, key_sections, sortable_key
from pyspark_paimon.planner.split import DataSplit

__all__ = ["ChainTarget", "ChainReadPlan", "BranchPartitions", "plan_chain", "snapshot_drop_violations"]


# ------------------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------------------
# Natural order of partition values (NULL first), as Paimon compares chain partitions.
_sortable = sortable_key


@dataclass
class ChainTarget:
    """How one requested partition is read (what :meth:`Table.chain.explain` reports)."""

    partition: dict[str, Any]
    source: str  # "main" | "snapshot" | "chain"
    anchor: dict[str, Any] | None = None
    deltas: list[dict[str, Any]] = field(default_factory=list)
    buckets: list[int] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)  # branch -> number of files read
    splits: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": dict(self.partition),
            "source": self.source,
            "anchor": dict(self.anchor) if self.anchor is not None else None,
            "deltas": [dict(d) for d in self.deltas],
            "delta_count": len(self.deltas),
            "buckets": list(self.buckets),
            "files": dict(self.files),
            "splits": self.splits,
        }


@dataclass
class ChainReadPlan:
    plan: ScanPlan
    schema: TableSchema
    schemas: dict[str, dict[int, TableSchema]]  # branch -> schema id -> schema
    targets: list[ChainTarget]
    snapshots: dict[str, Snapshot | None]  # branch name -> snapshot read
    config: ChainConfig


@dataclass
class BranchPartitions:
    """Live entries of one branch snapshot, grouped by decoded partition values."""

    entries: dict[tuple, list[ManifestEntry]]
    raw: dict[tuple, bytes]

    @classmethod
    def of(cls, store: FileStore, snapshot: Snapshot | None, schema: TableSchema) -> "BranchPartitions":
        types = [f.type for f in schema.partition_fields]
        cache: dict[bytes, tuple] = {}
        entries: dict[tuple, list[ManifestEntry]] = {}
        raw: dict[tuple, bytes] = {}
        for e in store.live_entries(snapshot):
            values = cache.get(e.partition)
            if values is None:
                values = tuple(deserialize_row(e.partition, types))
                cache[e.partition] = values
            entries.setdefault(values, []).append(e)
            raw.setdefault(values, e.partition)
        return cls(entries, raw)


def plan_chain(
    main: FileStore,
    cfg: ChainConfig,
    opts: ReadOptions,
    predicate: Sequence[Leaf] = (),
    *,
    partition_filter: Callable[[dict[str, Any]], bool] | None = None,
    use_main: bool = True,
    force_chain: Iterable[tuple] = (),
    only_chain: bool = False,
    pinned: Mapping[str, Snapshot | None] | None = None,
) -> ChainReadPlan:
    """Plan a chain read of ``main`` (the loaded branch) per Java's `ChainTableBatchScan`.

    ``predicate`` leaves on partition columns (and ``partition_filter``) choose the target partitions; other
    leaves are left to the caller's residual filter, applied after merging. ``use_main=False`` ignores the
    loaded branch (chain compaction reads the snapshot/delta pair only); partitions in ``force_chain`` are
    chain-resolved even when the snapshot branch has them (compaction with overwrite), and never anchor another
    target; ``only_chain`` drops
    snapshot-branch splits (compaction writes chain-resolved partitions only); ``pinned`` gives the snapshot
    of each branch role instead of resolving them from ``opts`` (a chain stream's start pins them once).
    """
    table = main.table_path
    stores = stores_of(main, cfg)
    latest = aligned_schemas(stores, table)
    validate_branch_schemas(latest, table)
    snaps = dict(pinned) if pinned is not None else resolve_chain_snapshots(stores, opts, table)
    schema = schema_at(stores, latest, snaps, opts)
    names = [f.name for f in schema.partition_fields]
    part_pred = leaves_on(predicate, names)
    forced = set(force_chain)

    def wanted(values: tuple) -> bool:
        named = dict(zip(names, values))
        return eval_on_values(part_pred, named) and (partition_filter is None or partition_filter(named))

    branch_of = {role: st.branch for role, st in stores.items()}
    schemas: dict[str, dict[int, TableSchema]] = {}
    for st in stores.values():
        schemas[st.branch] = {sid: st.schemas.schema(sid) for sid in st.schemas.list_ids()}

    counters = ScanCounters()
    splits: list[DataSplit] = []
    targets: list[ChainTarget] = []

    # Level 1: the loaded branch wins for every partition it has.
    main_parts: set[tuple] = set()
    if use_main:
        # Partition leaves only: file pruning by value filters must never make a main partition look missing.
        main_plan = ScanPlanner(main, schema).plan(
            snaps[MAIN], part_pred, partition_filter=(lambda named: wanted(tuple(named[n] for n in names)))
        )
        _add_counters(counters, main_plan.counters)
        by_part: dict[tuple, list[DataSplit]] = {}
        for s in main_plan.splits:
            by_part.setdefault(tuple(s.partition_values), []).append(s)
        for values, part_splits in by_part.items():
            main_parts.add(values)
            splits.extend(part_splits)
            targets.append(
                ChainTarget(
                    dict(zip(names, values)),
                    "main",
                    buckets=sorted({s.bucket for s in part_splits}),
                    files={main.branch: sum(len(s.files) for s in part_splits)},
                    splits=len(part_splits),
                )
            )

    snap_parts = BranchPartitions.of(stores[SNAPSHOT], snaps[SNAPSHOT], schema)
    delta_parts = BranchPartitions.of(stores[DELTA], snaps[DELTA], schema)

    # Level 2a: snapshot-branch partitions are complete.
    s_hit = {p for p in snap_parts.entries if wanted(p) and p not in main_parts and p not in forced}
    if s_hit and not only_chain:
        hit_entries = [e for p in s_hit for e in snap_parts.entries[p]]
        snap_plan = ScanPlanner(stores[SNAPSHOT], schema).plan_entries(hit_entries)
        _add_counters(counters, snap_plan.counters)
        by_part = {}
        for s in snap_plan.splits:
            s = replace(s, file_branches={f.file_name: branch_of[SNAPSHOT] for f in s.files})
            by_part.setdefault(tuple(s.partition_values), []).append(s)
        for values, part_splits in by_part.items():
            splits.extend(part_splits)
            targets.append(
                ChainTarget(
                    dict(zip(names, values)),
                    "snapshot",
                    buckets=sorted({s.bucket for s in part_splits}),
                    files={branch_of[SNAPSHOT]: sum(len(s.files) for s in part_splits)},
                    splits=len(part_splits),
                )
            )

    # Level 2b: delta-only partitions are chain-resolved.
    chain_targets = sorted(
        (p for p in delta_parts.entries if wanted(p) and p not in main_parts and p not in s_hit), key=_sortable
    )
    if chain_targets:
        g = cfg.group_size
        resolver = cfg.resolver()
        snap_by_group: dict[tuple, list[tuple]] = {}
        for p in snap_parts.entries:
            snap_by_group.setdefault(p[:g], []).append(p)
        delta_by_group: dict[tuple, list[tuple]] = {}
        for p in delta_parts.entries:
            delta_by_group.setdefault(p[:g], []).append(p)
        for by_group in (snap_by_group, delta_by_group):
            for parts in by_group.values():
                parts.sort(key=lambda p: _sortable(p[g:]))
        target_size = split_target_size(schema.options, {})
        key_fields = schema.trimmed_primary_key_fields
        for t in chain_targets:
            group = t[:g]
            # A forced partition is being recomputed, so it cannot anchor a later one: that one is resolved from
            # the anchor below, through every delta in between (the same rows, never the stale copy).
            anchors = [p for p in snap_by_group.get(group, []) if p not in forced]
            anchor_keys = [_sortable(p[g:]) for p in anchors]
            pos = bisect.bisect_left(anchor_keys, _sortable(t[g:]))
            anchor = anchors[pos - 1] if pos > 0 else None
            group_deltas = delta_by_group.get(group, [])
            if anchor is not None:
                deltas = _deltas_after_anchor(resolver, names, anchor, t, group_deltas, table)
            else:
                deltas = [d for d in group_deltas if _sortable(d[g:]) < _sortable(t[g:]) or d == t]
            tsplits = _chain_splits(
                stores,
                schema,
                schemas,
                key_fields,
                cfg,
                t,
                anchor,
                deltas,
                snap_parts,
                delta_parts,
                delta_parts.raw[t],
                target_size,
                table,
            )
            splits.extend(tsplits)
            files: dict[str, int] = {}
            for s in tsplits:
                for f in s.files:
                    b = s.file_branches.get(f.file_name, main.branch)
                    files[b] = files.get(b, 0) + 1
                counters.files_selected += len(s.files)
                counters.bytes_selected += s.size_bytes
            counters.partitions_selected += 1
            targets.append(
                ChainTarget(
                    dict(zip(names, t)),
                    "chain",
                    dict(zip(names, anchor)) if anchor is not None else None,
                    [dict(zip(names, d)) for d in deltas],
                    sorted({s.bucket for s in tsplits}),
                    files,
                    len(tsplits),
                )
            )

    targets.sort(key=lambda tg: _sortable(tuple(tg.partition[n] for n in names)))
    plan = ScanPlan(
        snaps[MAIN], schema, splits, counters, notes=[f"chain: {tg.source} {tg.partition}" for tg in targets]
    )
    return ChainReadPlan(plan, schema, schemas, targets, {branch_of[r]: s for r, s in snaps.items()}, cfg)


def _add_counters(total: ScanCounters, part: ScanCounters) -> None:
    for k, v in part.as_dict().items():
        setattr(total, k, getattr(total, k) + v)


def _deltas_after_anchor(
    resolver: PartitionTimeResolver,
    names: Sequence[str],
    anchor: tuple,
    target: tuple,
    group_deltas: Sequence[tuple],
    table: str,
) -> list[tuple]:
    """The existing delta partitions that Paimon's time stepping over (anchor, target] would visit."""

    def time_of(values: tuple, role: str) -> _dt.datetime:
        named = dict(zip(names, values))
        try:
            return resolver.to_time(named)
        except (ValueError, OverflowError) as exc:
            raise ChainTableError(
                f"Chain table {table}: the {role} partition {named} does not fit "
                f"'{PARTITION_TIMESTAMP_PATTERN.key}' = '{resolver.pattern}' with "
                f"'{PARTITION_TIMESTAMP_FORMATTER.key}' = '{resolver.format.pattern}' ({exc}); "
                "fix the partition values or the options."
            ) from exc

    lo = time_of(anchor, "anchor")
    hi = time_of(target, "target")
    out = []
    for d in group_deltas:
        if d == target:
            out.append(d)
            continue
        t = resolver.canonical_time(dict(zip(names, d)))
        if t is not None and lo < t <= hi:
            out.append(d)
    return out


def _chain_splits(
    stores: Mapping[str, FileStore],
    schema: TableSchema,
    schemas: Mapping[str, Mapping[int, TableSchema]],
    key_fields: Sequence[Any],
    cfg: ChainConfig,
    target: tuple,
    anchor: tuple | None,
    deltas: Sequence[tuple],
    snap_parts: BranchPartitions,
    delta_parts: BranchPartitions,
    raw: bytes,
    target_size: int,
    table: str,
) -> list[DataSplit]:
    """One split per bucket of ``target`` (cut further by key ranges when enabled): the anchor's files then
    the deltas' files, each with its branch, directory and merge rank; rows relabelled to ``target``."""
    snap_branch = stores[SNAPSHOT].branch
    delta_branch = stores[DELTA].branch
    sources: list[tuple[str, tuple, list[ManifestEntry]]] = []
    if anchor is not None:
        sources.append((snap_branch, anchor, snap_parts.entries[anchor]))
    sources.extend((delta_branch, d, delta_parts.entries[d]) for d in deltas)
    totals = {e.total_buckets for _, _, entries in sources for e in entries}
    if len(totals) > 1:
        raise ChainTableError(
            f"Chain table {table}: inconsistent bucket numbers {sorted(totals)} between the anchor and delta "
            f"partitions of {dict(zip(schema.partition_keys, target))}; all chain branches must use the same "
            "'bucket' value."
        )
    by_bucket: dict[int, list[tuple[DataFileMeta, str, str, int]]] = {}
    store = stores[MAIN]
    for rank, (branch, values, entries) in enumerate(sources):
        for e in sorted(entries, key=lambda e: (e.file.level, e.file.min_sequence_number, e.file.file_name)):
            path = store.bucket_path(schema, values, e.bucket)
            by_bucket.setdefault(e.bucket, []).append((e.file, branch, path, rank))
    total = totals.pop() if totals else schema.num_buckets
    out = []
    for bucket in sorted(by_bucket):
        items = by_bucket[bucket]
        branches = {f.file_name: b for f, b, _, _ in items}
        paths = {f.file_name: p for f, _, p, _ in items}
        ranks = {f.file_name: r for f, _, _, r in items}
        files = [f for f, _, _, _ in items]
        single_source = len({r for _, _, _, r in items}) == 1
        groups = [files]
        if cfg.key_range_split and len(files) > 1:
            groups = _pack_sections(files, branches, schemas, key_fields, target_size)
        for group_files in groups:
            raw_ok = (
                single_source
                and all(f.level > 0 for f in group_files)
                and all(f.delete_row_count == 0 for f in group_files)
                and len({f.level for f in group_files}) == 1
            )
            names = {f.file_name for f in group_files}
            out.append(
                DataSplit(
                    raw,
                    tuple(target),
                    bucket,
                    total,
                    tuple(group_files),
                    store.bucket_path(schema, target, bucket),
                    raw_ok,
                    file_branches={n: branches[n] for n in names},
                    file_bucket_paths={n: paths[n] for n in names},
                    file_ranks={n: ranks[n] for n in names},
                    relabel_partition=True,
                )
            )
    return out


def _pack_sections(
    files: Sequence[DataFileMeta],
    branches: Mapping[str, str],
    schemas: Mapping[str, Mapping[int, TableSchema]],
    key_fields: Sequence[Any],
    target_size: int,
) -> list[list[DataFileMeta]]:
    """Cut one bucket's files into independent key-range sections, packed in key order to ~target size."""

    def key_of(f: DataFileMeta) -> tuple[tuple, tuple]:
        file_schema = schemas[branches[f.file_name]][f.schema_id]
        by_id = {x.id: x for x in file_schema.fields}
        types = [by_id[k.id].type if k.id in by_id else k.type for k in key_fields]
        return decoded_key_range(f, types)

    sections = key_sections(files, key_of)
    out: list[list[DataFileMeta]] = []
    size = 0
    for sec in sections:
        sec_size = sum(f.file_size for f in sec)
        if out and size + sec_size <= target_size:
            out[-1].extend(sec)
            size += sec_size
        else:
            out.append(list(sec))
            size = sec_size
    return out


# ------------------------------------------------------------------------------------------------------
# Write-side rule: dropping snapshot partitions (Java's `ChainTableCommitPreCallback`)
# ------------------------------------------------------------------------------------------------------
def snapshot_drop_violations(
    cfg: ChainConfig, snapshot_parts: Iterable[tuple], delta_parts: Iterable[tuple], dropped: Iterable[tuple]
) -> list[tuple[tuple, list[tuple]]]:
    """Dropped snapshot partitions that delta partitions still depend on: deltas of the same group follow it
    (before the next remaining snapshot partition) and no earlier snapshot partition remains to anchor them.
    Returns (dropped partition, dependent deltas) pairs."""
    g = cfg.group_size
    dropped = set(dropped)
    remaining = [p for p in snapshot_parts if p not in dropped]
    deltas = list(delta_parts)
    out = []
    for d in sorted(dropped, key=_sortable):
        group, chain = d[:g], _sortable(d[g:])
        same = [_sortable(p[g:]) for p in remaining if p[:g] == group]
        if any(c < chain for c in same):
            continue
        nxt = min((c for c in same if c > chain), default=None)
        dependents = [
            x for x in deltas if x[:g] == group and _sortable(x[g:]) > chain and (nxt is None or _sortable(x[g:]) < nxt)
        ]
        if dependents:
            out.append((d, sorted(dependents, key=_sortable)))
    return out
