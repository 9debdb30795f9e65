"""Chain tables (Java's `MergeFileSplitRead.createChainReader`, `ChainTableBatchScan`): which version of each branch a
chain read sees, and its schema.

A chain read reads three branches, and each has its own snapshots: ids and watermarks are branch-local, so
time travel cannot be passed to the branches as it is. This module resolves one consistent snapshot per
branch role (the latest, the state at a timestamp, or a *chain tag*: a tag of one name on the snapshot and
delta branches) and the schema the read returns. The planner (:func:`pyspark_paimon.planner.chain.plan.plan_chain`)
and the read planner's schema lookup (:func:`chain_read_schema`, which must not plan) both need it.
"""

from __future__ import annotations

from typing import Any, Mapping

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.schema.options import SCAN_FALLBACK_DELTA_BRANCH, SCAN_FALLBACK_SNAPSHOT_BRANCH
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import (
    DELTA,
    MAIN,
    SNAPSHOT,
    ChainConfig,
    row_signature,
    stores_of,
)
from pyspark_paimon.planner.read_options import ReadOptions

__all__ = ["resolve_chain_snapshots", "latest_schemas", "aligned_schemas", "schema_at", "chain_read_schema"]


def _at_time(store: FileStore, ts: int) -> Snapshot | None:
    snap = store.snapshots.earlier_or_equal_time_millis(ts)
    if snap is not None:
        return snap
    tagged = [t for t in TagManager(store).list_tags() if t.snapshot.time_millis <= ts]
    return max(tagged, key=lambda t: t.snapshot.time_millis).snapshot if tagged else None


def resolve_chain_snapshots(
    stores: Mapping[str, FileStore], opts: ReadOptions, table: str = "the table"
) -> dict[str, Snapshot | None]:
    """One consistent snapshot per branch role (None = the branch had no data then).

    * no time travel: each branch's latest snapshot;
    * ``scan.timestamp(-millis)``: on every branch the latest snapshot committed at or before that time;
    * ``scan.tag-name`` (or ``scan.version`` naming such a tag): a *chain tag*, i.e. a tag of that name on the
      snapshot and on the delta branch (``t.chain.create_tag`` makes one). Main uses its own tag of that
      name, else its state at the delta tag's creation time;
    * snapshot ids and watermarks are branch-local and refused.
    """
    if opts.incremental_between or opts.incremental_between_timestamp:
        raise ChainTableError(
            f"Chain table {table}: incremental reads are reads of the delta branch; read with "
            f"option('branch', '{stores[DELTA].branch}') instead."
        )
    if opts.snapshot_id is not None or opts.watermark is not None:
        what = "scan.snapshot-id" if opts.snapshot_id is not None else "scan.watermark"
        raise ChainTableError(
            f"Chain table {table}: '{what}' cannot select a version, because snapshot ids and watermarks are "
            "branch-local and the snapshot and delta branches number their snapshots independently. Use "
            "'scan.timestamp-millis' (applied to every branch) or 'scan.tag-name' with a chain tag "
            "(t.chain.create_tag), or read one branch with option('branch', ...)."
        )
    tag = opts.tag_name
    if opts.version is not None:
        version = opts.version
        if any(TagManager(s).exists(version) for r, s in stores.items() if r != MAIN):
            tag = version
        else:
            raise ChainTableError(
                f"Chain table {table}: version '{version}' is not a chain tag (a tag of that name on the branches "
                f"'{stores[SNAPSHOT].branch}' and '{stores[DELTA].branch}'). Create one with t.chain.create_tag, "
                "or use 'scan.timestamp-millis'."
            )
    if tag is not None:
        return _resolve_chain_tag(stores, tag, table)
    if opts.timestamp_millis is not None:
        return {role: _at_time(s, opts.timestamp_millis) for role, s in stores.items()}
    return {role: s.snapshots.latest() for role, s in stores.items()}


def _tag_millis(t: Any) -> int | None:
    return int(t.create_time.timestamp() * 1000) if t.create_time is not None else None


def _resolve_chain_tag(stores: Mapping[str, FileStore], tag: str, table: str) -> dict[str, Snapshot | None]:
    """A chain tag: the tag ``tag`` on the snapshot and delta branches. A branch that had no snapshot yet at the
    tag's instant (so ``t.chain.create_tag`` could not tag it) reads as empty; main uses its own tag of
    that name, else its state at that instant."""
    found: dict[str, Any] = {}
    for role in (SNAPSHOT, DELTA):
        s = stores[role]
        tm = TagManager(s)
        if tm.exists(tag):
            found[role] = tm.get_tag(tag)
    if not found:
        names = {stores[r].branch: TagManager(stores[r]).list_names() for r in (SNAPSHOT, DELTA)}
        raise ChainTableError(
            f"Chain table {table}: tag '{tag}' exists on neither the snapshot branch '{stores[SNAPSHOT].branch}' nor "
            f"the delta branch '{stores[DELTA].branch}'. Time travel to a tag needs a chain tag: create it with "
            f"t.chain.create_tag('{tag}'). Existing tags: {names}."
        )
    # The instant the chain tag stands for: the tag's creation time (Paimon records one only for tags with a
    # retention), else the newest tagged snapshot's commit time.
    ref = found.get(DELTA) or found[SNAPSHOT]
    when = _tag_millis(ref)
    if when is None:
        when = max(t.snapshot.time_millis for t in found.values())
    out: dict[str, Snapshot | None] = {}
    for role in (SNAPSHOT, DELTA):
        if role in found:
            out[role] = found[role].snapshot
            continue
        s = stores[role]
        if _at_time(s, when) is not None:
            raise ChainTableError(
                f"Chain table {table}: tag '{tag}' exists on branch "
                f"'{stores[SNAPSHOT if role == DELTA else DELTA].branch}' but not on the {role} branch '{s.branch}', "
                "which had data when the tag was created. Create the tag there too (t.chain.create_tag tags "
                "every branch at once), or use 'scan.timestamp-millis'."
            )
        out[role] = None
    main = stores[MAIN]
    main_tags = TagManager(main)
    if main_tags.exists(tag):
        out[MAIN] = main_tags.get(tag)
    else:
        out[MAIN] = _at_time(main, when)
    return out


def latest_schemas(stores: Mapping[str, FileStore], table: str) -> dict[str, TableSchema]:
    """The latest schema of each branch role, or a clear error when a branch does not exist."""
    out = {}
    for role, s in stores.items():
        schema = s.schemas.latest()
        if schema is None:
            raise ChainTableError(
                f"Chain table {table}: the {role} branch '{s.branch}' does not exist. Create it with "
                f"Table.branches.create('{s.branch}', empty=True), or fix the option "
                f"'{(SCAN_FALLBACK_SNAPSHOT_BRANCH if role == SNAPSHOT else SCAN_FALLBACK_DELTA_BRANCH).key}'."
            )
        out[role] = s.schema()
    return out


def aligned_schemas(stores: Mapping[str, FileStore], table: str) -> dict[str, TableSchema]:
    """The schema of each branch role a chain read checks against main's: the latest, except for a snapshot or
    delta branch that is *ahead* of main, i.e. whose history holds main's current columns in an older schema.

    A schema change of a chain table (``t.update_schema()``) commits on the snapshot and delta branches first
    and on main last, one branch at a time (each branch has its own ``schema/`` directory; nothing makes three
    files appear at once). Main is the commit point: a chain read returns main's schema, and files of a branch
    that is ahead are read into it by field id, the way any read of older and newer files is. So a read between
    the steps (or after a failure between them) sees the table as it was before the change, never a mix, and
    an error only when a branch really diverged (main ahead of it, or columns main never had)."""
    latest = latest_schemas(stores, table)
    want = row_signature(latest[MAIN])
    for role in (SNAPSHOT, DELTA):
        current = latest[role]
        if row_signature(current) == want:
            continue
        manager = stores[role].schemas
        for sid in sorted((i for i in manager.list_ids() if i < current.id), reverse=True):
            older = manager.schema(sid)
            if row_signature(older) == want:
                latest[role] = older
                break
    return latest


def schema_at(
    stores: Mapping[str, FileStore],
    latest: Mapping[str, TableSchema],
    snaps: Mapping[str, Snapshot | None],
    opts: ReadOptions,
) -> TableSchema:
    """The schema a chain read at ``snaps`` returns: main's latest, or with time travel the schema of the
    first branch (delta, snapshot, main) that had a snapshot then."""
    if not opts.time_travel:
        return latest[MAIN]
    for role in (DELTA, SNAPSHOT, MAIN):
        snap = snaps.get(role)
        if snap is not None:
            return stores[role].schemas.schema(snap.schema_id)
    return latest[MAIN]


def chain_read_schema(store: FileStore, cfg: ChainConfig, opts: ReadOptions) -> TableSchema:
    """The schema a chain read of ``store`` (configured by ``cfg``) returns."""
    stores = stores_of(store, cfg)
    latest = latest_schemas(stores, store.table_path)
    snaps = resolve_chain_snapshots(stores, opts, store.table_path)
    return schema_at(stores, latest, snaps, opts)
