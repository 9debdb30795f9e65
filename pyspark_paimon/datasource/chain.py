"""Chain tables, data side (Java's `ChainTableBatchScan`): chain reads, chain compaction and the write rules.

* Chain reads are planned by :func:`pyspark_paimon.planner.read_plan.plan_read` like every other read; the
  context knows every branch's schemas (each file is read with its own branch's schema). Executors
  read chain splits with the ordinary :func:`read_split`: a split holds one bucket of one target partition
  (the anchor's files and the selected deltas' files, each with its branch, directory and merge rank) and
  relabels every row to the target partition. Memory: like any primary-key read, a split is merged per
  key-overlap section; anchor and delta files of a bucket usually overlap, so a section is about one
  bucket of the anchor plus its deltas. ``chain-table.split.key-range-enabled`` (default true) already cuts
  buckets into independent key ranges at planning time, for parallelism.
* :func:`compact_chain` writes the merged view of chain-resolved partitions into the snapshot branch (an
  overwrite of exactly those partitions, one commit for all of them). Later reads hit the snapshot branch.
* :func:`commit_with_chain_rules` is the commit of every write (``WriteJob.commit``, chain compaction); for
  a chain table's snapshot or delta branch it applies :class:`ChainWriteHook`:

  - before an OVERWRITE of the **snapshot** branch: refuse dropping snapshot partitions that later delta
    partitions depend on (they follow it, before the next snapshot partition, and no earlier snapshot
    partition can anchor them; Paimon's ``ChainTableCommitPreCallback``);
  - before an OVERWRITE of the **delta** branch: the same check for the snapshot partitions the overwrite
    will truncate, so a refused truncation refuses the delta write *before* anything is committed;
  - after an OVERWRITE of the delta branch: truncate the same partitions in the snapshot branch (Paimon's
    ``ChainTableOverwriteCommitCallback``). This is a second commit, on another branch: not atomic. Between
    the two commits a reader can see the old snapshot partition; if the truncation fails, the error says
    which partitions to truncate (re-running the same delta overwrite does it too);
  - after any delta write: the snapshot partitions it makes stale (same group, later, made by chain compaction:
    they have a delta partition of their own; up to the first full load, which is authoritative) are recomputed
    by chain compaction, so a late fix of a day reaches the days compacted from it (a second commit, like the
    truncation);
  - after any delta write with ``chain-table.compact.auto-threshold`` = N: every written partition whose
    read would merge more than N delta partitions is compacted (best effort: a failure is logged; the
    delta data is committed either way).

Nothing here imports pyspark; compaction runs in the calling process (the Spark driver for hooks).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext, ReadMetrics
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.manifests.deletion_vectors import refuse_deletion_vector_writes
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange
from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_COMPACT
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import coerce_partition_value, parse_partition_spec
from pyspark_paimon.metadata.schema.options import SCAN_FALLBACK_DELTA_BRANCH, SCAN_FALLBACK_SNAPSHOT_BRANCH
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import (
    CommitKind,
    CommitMessage,
    FileStoreCommit,
    OverwriteSpec,
    Resequence,
    commit_or_abort,
)
from pyspark_paimon.metadata.snapshots.snapshot import BATCH_COMMIT_IDENTIFIER, MAIN_BRANCH, Snapshot, now_millis
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import (
    DELTA,
    SNAPSHOT,
    ChainConfig,
    chain_config,
    chain_options_enabled,
    chain_read_config,
    stores_of,
    validate_chain_definition,
)
from pyspark_paimon.planner.chain.plan import BranchPartitions, plan_chain, snapshot_drop_violations
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.read_plan import PlannedRead
from pyspark_paimon.planner.sections import decoded_key_range, key_sections, sortable_key

log = logging.getLogger(__name__)

__all__ = [
    "require_chain_config",
    "explain_chain",
    "compact_chain",
    "ChainCompactResult",
    "ChainWriteHook",
    "commit_with_chain_rules",
    "partition_tuple",
    "check_chain_options",
    "chain_peer_branches",
]


# ------------------------------------------------------------------------------------------------------
# Reads (planned by pyspark_paimon.planner.read_plan like every other read)
# ------------------------------------------------------------------------------------------------------
def require_chain_config(store: FileStore) -> ChainConfig:
    """The chain config of the table's chain read from ``store``'s branch, or a clear error."""
    cfg = chain_read_config(store)
    if cfg is not None:
        return cfg
    schema = store.schema()
    if not chain_options_enabled(schema.options):
        raise ChainTableError(
            f"Table {store.table_path} (branch '{store.branch}') is not a chain table: set "
            "'chain-table.enabled' = 'true' (Catalog.create_chain_table sets everything up)."
        )
    parsed = chain_config(schema, store.table_path)
    assert parsed is not None
    if not parsed.complete:
        raise ChainTableError(
            f"Chain table {store.table_path}: set both 'scan.fallback-snapshot-branch' and "
            "'scan.fallback-delta-branch' (on all three branches) before chain reads."
        )
    raise ChainTableError(
        f"Branch '{store.branch}' of {store.table_path} is the chain's "
        f"{'snapshot' if store.branch == parsed.snapshot_branch else 'delta'} branch, which reads as "
        "a plain table; use the main branch for chain operations."
    )


def partition_tuple(schema: TableSchema, spec: Mapping[str, Any] | str, *, partial: bool = False) -> dict[str, Any]:
    """A partition given as a dict or 'k=v,k2=v2', with values coerced to the partition column types."""
    raw = parse_partition_spec(spec) if isinstance(spec, str) else dict(spec)
    names = list(schema.partition_keys)
    unknown = [k for k in raw if k not in names]
    if unknown:
        raise ChainTableError(
            f"Partition spec {dict(raw)} names {unknown}, which are not partition columns ({', '.join(names)})."
        )
    if not partial:
        missing = [k for k in names if k not in raw]
        if missing:
            raise ChainTableError(
                f"Partition spec {dict(raw)} misses the partition column(s) {missing}; give every "
                f"partition column ({', '.join(names)})."
            )
    return {k: coerce_partition_value(schema, k, raw[k]) for k in names if k in raw}


def _partition_filter(
    schema: TableSchema, partitions: Iterable[Mapping[str, Any] | str] | None
) -> Callable[[dict[str, Any]], bool] | None:
    if partitions is None:
        return None
    if isinstance(partitions, (str, Mapping)):
        partitions = [partitions]
    specs = [partition_tuple(schema, p, partial=True) for p in partitions]
    return lambda named: any(all(named.get(k) == v for k, v in spec.items()) for spec in specs)


def explain_chain(
    store: FileStore,
    opts: ReadOptions,
    predicate: Sequence[Leaf] = (),
    partitions: Iterable[Mapping[str, Any] | str] | None = None,
) -> list[dict[str, Any]]:
    """How each partition of a chain read is resolved: source (main / snapshot / chain), anchor, deltas,
    buckets, files per branch and splits. ``partitions`` (dicts or 'k=v' specs, partial specs allowed)
    restrict the report like a partition filter."""
    cfg = require_chain_config(store)
    schema = store.schema()
    cp = plan_chain(store, cfg, opts, predicate, partition_filter=_partition_filter(schema, partitions))
    return [t.as_dict() for t in cp.targets]


# ------------------------------------------------------------------------------------------------------
# Table definition helpers (used by Table / Catalog)
# ------------------------------------------------------------------------------------------------------
def check_chain_options(store: FileStore, options: Mapping[str, str], table: str) -> None:
    """Validate a chain table's options as they will be after a change on ``store``'s branch; the named
    fallback branches must exist."""
    if not chain_options_enabled(options):
        return
    schema = store.schema()
    cfg = validate_chain_definition(schema.partition_keys, schema.primary_keys, options, table)
    for key, branch in (
        (SCAN_FALLBACK_SNAPSHOT_BRANCH.key, cfg.snapshot_branch),
        (SCAN_FALLBACK_DELTA_BRANCH.key, cfg.delta_branch),
    ):
        if branch and branch != store.branch and store.with_branch(branch).schemas.latest() is None:
            raise ChainTableError(
                f"Chain table {table}: option '{key}' names branch '{branch}', which does not exist. "
                f"Create it first (Table.branches.create('{branch}'))."
            )


def chain_peer_branches(store: FileStore, schema: TableSchema) -> list[str]:
    """The snapshot/delta branches that schema changes on ``store``'s branch must follow (only from the main
    side of a chain table, and only branches that exist)."""
    try:
        if not chain_options_enabled(schema.options):
            return []
    except ChainTableError:
        return []
    options = schema.core_options
    snap = (options.get(SCAN_FALLBACK_SNAPSHOT_BRANCH) or "").strip()
    delta = (options.get(SCAN_FALLBACK_DELTA_BRANCH) or "").strip()
    if store.branch in (snap, delta):
        return []
    return [b for b in (snap, delta) if b and store.with_branch(b).schemas.latest() is not None]


# ------------------------------------------------------------------------------------------------------
# Chain compaction
# ------------------------------------------------------------------------------------------------------
@dataclass
class ChainCompactResult:
    """What :func:`compact_chain` did. Truthy when at least one partition was written."""

    compacted: list[dict[str, Any]] = field(default_factory=list)
    """The partitions written into the snapshot branch, as ``{partition key: value}``."""
    skipped: list[dict[str, Any]] = field(default_factory=list)
    """The partitions left alone and why: ``{"partition": {...}, "reason": "..."}``."""
    snapshot_id: int | None = None
    """The snapshot committed on the snapshot branch (None: nothing was written)."""

    def __bool__(self) -> bool:
        return bool(self.compacted)


def _in_range(
    cfg: ChainConfig, names: Sequence[str], p: tuple, start: dict[str, Any] | None, end: dict[str, Any] | None
) -> bool:
    named = dict(zip(names, p))
    for bound in (start, end):
        if bound is None:
            continue
        for k in cfg.group_keys:
            if k in bound and bound[k] != named[k]:
                return False
    chain = sortable_key(named[k] for k in cfg.chain_keys)
    if start is not None and chain < sortable_key(start[k] for k in cfg.chain_keys):
        return False
    if end is not None and chain > sortable_key(end[k] for k in cfg.chain_keys):
        return False
    return True


def compact_chain(
    store: FileStore,
    *,
    partitions: Iterable[Mapping[str, Any] | str] | None = None,
    start: Mapping[str, Any] | str | None = None,
    end: Mapping[str, Any] | str | None = None,
    overwrite: bool = False,
) -> ChainCompactResult:
    """Write the chain-merged view of partitions into the snapshot branch (Java's `ChainTableBatchScan`), in one commit.

    ``partitions`` lists full partition specs; ``start``/``end`` (inclusive, on the chain keys; group keys
    given in them must match) select every delta partition in a range. A partition is compacted only if it
    exists in the delta branch (only those can be chain-resolved); one already in the snapshot branch is
    skipped unless ``overwrite``, which recomputes it from its anchor and deltas. The loaded (main) branch
    is ignored, as Paimon's procedure does. Nothing is removed from the delta branch.
    """
    cfg = require_chain_config(store)
    if partitions is None and start is None and end is None:
        raise ChainTableError(
            "compact_chain needs the partitions to compact: partition=..., partitions=[...], or "
            "start=... / end=... for a range."
        )
    schema = store.schema()
    names = list(schema.partition_keys)
    stores = stores_of(store, cfg)
    snap_store = stores[SNAPSHOT]
    delta_store = stores[DELTA]
    snap_parts = BranchPartitions.of(snap_store, snap_store.snapshots.latest(), schema)
    delta_parts = BranchPartitions.of(delta_store, delta_store.snapshots.latest(), schema)

    requested: list[tuple] = []
    if partitions is not None:
        if isinstance(partitions, (str, Mapping)):
            partitions = [partitions]
        for spec in partitions:
            named = partition_tuple(schema, spec)
            requested.append(tuple(named[n] for n in names))
    if start is not None or end is not None:
        lo = partition_tuple(schema, start, partial=True) if start is not None else None
        hi = partition_tuple(schema, end, partial=True) if end is not None else None
        for bound in (lo, hi):
            if bound is not None and any(k not in bound for k in cfg.chain_keys):
                raise ChainTableError(
                    f"start/end of a chain compaction range must give the chain keys "
                    f"{list(cfg.chain_keys)} (got {bound})."
                )
        requested.extend(p for p in sorted(delta_parts.entries, key=sortable_key) if _in_range(cfg, names, p, lo, hi))
    result = ChainCompactResult()
    todo: list[tuple] = []
    for p in dict.fromkeys(requested):
        named = dict(zip(names, p))
        if p not in delta_parts.entries:
            result.skipped.append(
                {"partition": named, "reason": "not in the delta branch (only delta partitions can be chain-resolved)"}
            )
        elif p in snap_parts.entries and not overwrite:
            result.skipped.append(
                {"partition": named, "reason": "already in the snapshot branch (pass overwrite=True to recompute it)"}
            )
        else:
            todo.append(p)
    if not todo:
        return result
    wanted = set(todo)
    cp = plan_chain(
        store,
        cfg,
        ReadOptions(),
        partition_filter=lambda named: tuple(named[n] for n in names) in wanted,
        use_main=False,
        force_chain=wanted,
        only_chain=True,
    )
    planned = PlannedRead.of_chain(cp)
    read_ctx = ReadContext.for_plan(store, planned)
    replaced = frozenset(snap_parts.raw[p] for p in todo if p in snap_parts.raw)
    overwrite_spec = OverwriteSpec("static", replaced)
    user = str(uuid.uuid4())
    refuse_deletion_vector_writes(snap_store.schema().core_options.deletion_vectors_enabled, snap_store.table_path)
    write_ctx = WriteContext.for_store(snap_store, user)
    writer = TableWriter(write_ctx, "chain-compact")
    try:
        metrics = ReadMetrics()
        for split in planned.plan.splits:
            for batch in read_split(read_ctx, split, metrics=metrics):
                writer.write(batch)
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    messages = [_as_top_level(write_ctx.schema, m) for m in messages]
    if not messages and not replaced:
        result.skipped.extend({"partition": dict(zip(names, p)), "reason": "the merged view is empty"} for p in todo)
        return result
    started = now_millis()
    committed = commit_or_abort(
        lambda: commit_with_chain_rules(snap_store, write_ctx.schema, messages, overwrite_spec, user),
        writer.abort,
        lambda: snap_store.snapshots.commit_of(user, started),
    )
    result.snapshot_id = committed.id if committed is not None else None
    result.compacted.extend(dict(zip(names, p)) for p in todo)
    return result


def _as_top_level(schema: TableSchema, message: CommitMessage) -> CommitMessage:
    """Place one bucket's chain-compacted files at the top level, as a full compaction's output.

    The chain-merged view of a partition is one value per key, without retractions, written bucket by bucket in
    key order, so its files form one sorted run: exactly what a full compaction leaves. At the top level the
    bucket is merge-free for every reader (Java's, pypaimon's, ours: ``Scan.to_spark`` reads it with Spark's
    own reader), where level-0 files would be merged on every read. Java's procedure writes level 0 through its
    ordinary writer; a single top-level run holds the same rows, and later level-0 writes still merge over it by
    sequence number. The bucket stays at level 0 when the files' key ranges overlap (several write buffers over
    one bucket) or a file counts retractions. (Chain tables produce no changelog at compaction: only ``none``
    and ``input`` are allowed, so no changelog is skipped.)"""
    files = message.new_files
    options = schema.core_options
    if not schema.primary_keys or not files or any(f.delete_row_count != 0 for f in files):
        return message
    types = [schema.field(k).type for k in (list(schema.trimmed_primary_keys) or list(schema.primary_keys))]
    if len(files) > 1 and len(key_sections(files, lambda f: decoded_key_range(f, types))) != len(files):
        return message
    top = options.num_levels - 1
    placed = tuple(replace(f, level=top, file_source=FILE_SOURCE_COMPACT) for f in files)
    return replace(message, new_files=placed)


# ------------------------------------------------------------------------------------------------------
# Write rules
# ------------------------------------------------------------------------------------------------------
def _decode(schema: TableSchema, raw: bytes) -> tuple:
    return tuple(deserialize_row(raw, [f.type for f in schema.partition_fields]))


def _spec_matches(schema: TableSchema, spec: OverwriteSpec, values: tuple, raw: bytes) -> bool:
    if spec.mode == "all":
        return True
    if spec.mode == "dynamic":
        return False
    if spec.partition_spec is not None:
        named = dict(zip(schema.partition_keys, values))
        return all(named.get(k) == v for k, v in spec.partition_spec.items())
    return raw in spec.partitions


class ChainWriteHook:
    """Chain-table rules around a commit to the snapshot or delta branch (see the module docstring)."""

    def __init__(
        self,
        store: FileStore,
        schema: TableSchema,
        overwrite: OverwriteSpec | None,
        commit_user: str,
        cfg: ChainConfig,
        role: str,
    ):
        self.store = store
        self.schema = schema
        self.overwrite = overwrite
        self.commit_user = commit_user
        self.cfg = cfg
        self.role = role

    @classmethod
    def of(
        cls, store: FileStore, schema: TableSchema, overwrite: OverwriteSpec | None, commit_user: str
    ) -> "ChainWriteHook | None":
        """The rules for a write to ``store``'s branch, or None when it is no chain table's snapshot/delta branch."""
        if not chain_options_enabled(schema.options):
            return None
        cfg = chain_config(schema, store.table_path)
        if cfg is None or not cfg.complete:
            return None
        if store.branch == cfg.delta_branch:
            return cls(store, schema, overwrite, commit_user, cfg, DELTA)
        if store.branch == cfg.snapshot_branch:
            return cls(store, schema, overwrite, commit_user, cfg, SNAPSHOT)
        return None

    # -- helpers ---------------------------------------------------------------------------------------
    def _stores(self) -> dict[str, FileStore]:
        return stores_of(self.store.with_branch(MAIN_BRANCH), self.cfg)

    def _parts(self, store: FileStore) -> BranchPartitions:
        return BranchPartitions.of(store, store.snapshots.latest(), self.schema)

    def _check(self, snap: BranchPartitions, delta_parts: Iterable[tuple], dropped: set[tuple], why: str) -> None:
        violations = snapshot_drop_violations(self.cfg, snap.entries, delta_parts, dropped)
        if not violations:
            return
        names = list(self.schema.partition_keys)
        lines = "; ".join(
            f"{dict(zip(names, d))} is needed by delta partitions {[dict(zip(names, x)) for x in deps][:5]}"
            for d, deps in violations
        )
        raise ChainTableError(
            f"Snapshot partition cannot be dropped ({why}) in chain table {self.store.table_path}: {lines}, and "
            "no earlier snapshot partition can anchor them. Nothing was committed. Drop those delta partitions "
            "first, or write a full snapshot of an earlier partition."
        )

    def _stale_snapshots(self, snap: Iterable[tuple], delta: Iterable[tuple], touched: Iterable[tuple]) -> list[tuple]:
        """The snapshot partitions a change of the delta partitions ``touched`` makes stale: in the same group,
        strictly after the earliest touched chain value, those that chain compaction made from the deltas (they
        have a delta partition of their own), up to the first that is a full load (no delta partition of its own:
        authoritative, as in Paimon, so it and what it anchors do not depend on earlier deltas)."""
        g = self.cfg.group_size
        first: dict[tuple, tuple] = {}
        for p in touched:
            cur = first.get(p[:g])
            if cur is None or sortable_key(p[g:]) < sortable_key(cur[g:]):
                first[p[:g]] = p
        deltas = set(delta)
        out: list[tuple] = []
        blocked: set[tuple] = set()
        for p in sorted(snap, key=lambda p: (sortable_key(p[:g]), sortable_key(p[g:]))):
            group = p[:g]
            if group not in first or group in blocked or sortable_key(p[g:]) <= sortable_key(first[group][g:]):
                continue
            if p in deltas:
                out.append(p)
            else:
                blocked.add(group)
        return sorted(out, key=sortable_key)

    # -- before ----------------------------------------------------------------------------------------
    def before_commit(self, messages: Sequence[CommitMessage]) -> None:
        spec = self.overwrite
        if spec is None or spec.mode == "dynamic" and self.role == SNAPSHOT:
            return
        schema = self.schema
        stores = self._stores()
        written = {_decode(schema, m.partition) for m in messages if m.new_files}
        snap = self._parts(stores[SNAPSHOT])
        if self.role == SNAPSHOT:
            dropped = {p for p, raw in snap.raw.items() if _spec_matches(schema, spec, p, raw) and p not in written}
            if dropped:
                self._check(
                    snap,
                    self._parts(stores[DELTA]).entries,
                    dropped,
                    "an overwrite of the snapshot branch leaves it empty",
                )
            return
        delta = self._parts(stores[DELTA])
        touched = written | {p for p, raw in delta.raw.items() if _spec_matches(schema, spec, p, raw)}
        truncated = touched & set(snap.entries)
        if truncated:
            remaining_deltas = (set(delta.entries) - touched) | written
            self._check(
                snap, remaining_deltas, truncated, "overwriting a delta partition truncates the same snapshot partition"
            )

    # -- after -----------------------------------------------------------------------------------------
    def after_commit(self, snapshot: Snapshot | None, messages: Sequence[CommitMessage]) -> None:
        if self.role != DELTA or snapshot is None:
            return
        if self.overwrite is not None:
            self._truncate_snapshot_partitions(snapshot)
        self._recompute_later_snapshots(snapshot)
        if self.cfg.auto_threshold is not None:
            written = {_decode(self.schema, m.partition) for m in messages if m.new_files}
            if written:
                self._auto_compact(written)

    def _truncate_snapshot_partitions(self, snapshot: Snapshot) -> None:
        schema = self.schema
        delta_store = self.store
        entries = delta_store.manifests.read_entries(delta_store.manifests.read_list(snapshot.delta_manifest_list))
        touched = {_decode(schema, e.partition) for e in entries}
        stores = self._stores()
        snap_store = stores[SNAPSHOT]
        snap = self._parts(snap_store)
        targets = frozenset(snap.raw[p] for p in touched if p in snap.raw)
        if not targets:
            return
        names = list(schema.partition_keys)
        which = [dict(zip(names, p)) for p in sorted(touched & set(snap.raw), key=sortable_key)]
        try:
            snap_schema = snap_store.schema()
            FileStoreCommit(snap_store, snap_schema.options).commit(
                [], overwrite=OverwriteSpec("static", targets), commit_user=f"chain-truncate-{self.commit_user}"
            )
        except Exception as exc:
            raise ChainTableError(
                f"The delta overwrite of {delta_store.table_path} committed (snapshot {snapshot.id} of branch "
                f"'{delta_store.branch}'), but truncating the same partitions {which} of the snapshot branch "
                f"'{snap_store.branch}' failed: {exc}. Until they are truncated, reads of them return the old snapshot "
                "data; re-run the same delta overwrite (or overwrite those snapshot partitions) to fix it."
            ) from exc
        log.info(
            "chain table %s: truncated snapshot partitions %s after a delta overwrite", delta_store.table_path, which
        )

    def _recompute_later_snapshots(self, snapshot: Snapshot) -> None:
        """Cascade a delta change into the snapshot partitions it makes stale (:meth:`_stale_snapshots`):
        recompute them by chain compaction, in one commit on the snapshot branch, so that reads of them (and of
        the partitions they anchor) include the change. A second commit, on another branch: not atomic."""
        schema = self.schema
        delta_store = self.store
        entries = delta_store.manifests.read_entries(delta_store.manifests.read_list(snapshot.delta_manifest_list))
        touched = {_decode(schema, e.partition) for e in entries}
        stores = self._stores()
        snap = self._parts(stores[SNAPSHOT])
        later = self._stale_snapshots(snap.entries, self._parts(stores[DELTA]).entries, touched)
        if not later:
            return
        names = list(schema.partition_keys)
        which = [dict(zip(names, p)) for p in later]
        main = delta_store.with_branch(MAIN_BRANCH)
        try:
            result = compact_chain(main, partitions=which, overwrite=True)
        except Exception as exc:
            raise ChainTableError(
                f"The delta write of {delta_store.table_path} committed (snapshot {snapshot.id} of branch "
                f"'{delta_store.branch}'), but recomputing the later snapshot partitions {which} of branch "
                f"'{stores[SNAPSHOT].branch}' that it makes stale failed: {exc}. Until they are recomputed, reads of "
                f"them return the old rows; run t.chain.compact({which}, overwrite=True) to fix it."
            ) from exc
        log.info(
            "chain table %s: recomputed snapshot partitions %s after a delta write before them (%s)",
            delta_store.table_path,
            result.compacted,
            result.skipped,
        )

    def _auto_compact(self, written: set[tuple]) -> None:
        main = self.store.with_branch(MAIN_BRANCH)
        names = list(self.schema.partition_keys)
        try:
            cp = plan_chain(
                main,
                self.cfg,
                ReadOptions(),
                partition_filter=lambda named: tuple(named[n] for n in names) in written,
                use_main=False,
            )
            due = [
                t.partition
                for t in cp.targets
                if t.source == "chain" and len(t.deltas) > (self.cfg.auto_threshold or 0)
            ]
            if due:
                result = compact_chain(main, partitions=due)
                log.info(
                    "chain table %s: auto-compacted %s (more than %s delta partitions)",
                    main.table_path,
                    result.compacted,
                    self.cfg.auto_threshold,
                )
        except Exception as exc:  # noqa: BLE001 - the delta data is committed; compaction is an optimisation
            log.warning(
                "chain table %s: automatic chain compaction after a delta write failed: %s. Run "
                "Table.chain.compact by hand.",
                main.table_path,
                exc,
            )


def commit_with_chain_rules(
    store: FileStore,
    schema: TableSchema,
    messages: Sequence[CommitMessage],
    overwrite: OverwriteSpec | None,
    commit_user: str,
    commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    index_update: Callable[[Snapshot | None], IndexChange] | None = None,
    kind: CommitKind = "APPEND",
    allow_empty: bool = False,
    resequence: Resequence | None = None,
) -> Snapshot | None:
    """Commit ``messages`` to ``store``'s branch as one snapshot; for a chain table's snapshot or delta branch,
    with the chain-table rules before and after (see the module docstring). Every write commits here;
    ``index_update`` is the commit's (a dynamic-bucket write's hash index). ``kind`` OVERWRITE marks a commit
    that rewrites files (copy-on-write DML), as Java marks one. ``allow_empty``: commit even without data files
    (a deletion-vector DML whose change is only its index manifest). ``resequence``: the commit's (the later commit
    of a key wins; ``datasource/write/resequence.py``)."""
    hook = ChainWriteHook.of(store, schema, overwrite, commit_user)
    if hook is not None:
        hook.before_commit(messages)
    committer = FileStoreCommit(store, schema.options)
    snapshot = committer.commit(
        list(messages),
        kind=kind,
        overwrite=overwrite,
        commit_user=commit_user,
        commit_identifier=commit_identifier,
        index_update=index_update,
        allow_empty=allow_empty,
        resequence=resequence,
    )
    if hook is not None:
        hook.after_commit(snapshot, messages)
    return snapshot
