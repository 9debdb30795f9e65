"""Chain tables (Java's `ChainTableStreamScan`): where a stream of a chain table starts.

A stream of a chain table has two phases. The **start** emits the table's current content once; after it the
stream follows the **delta branch**'s commits, change rows (``-D`` included) as they were written, like a stream
of that branch. Writes to the snapshot branch are not followed: a snapshot partition is a copy of what the delta
branch already carried as changes.

The start is computed from two pinned versions: the snapshot branch's latest snapshot and the delta branch's
latest snapshot (pinned snapshot, delta, snapshot again, retried while a snapshot-branch commit lands in
between), so that the delta commits the stream follows afterwards start exactly where the start ended. For
each *group* (the partition values before the chain keys) only the **latest snapshot partition** counts;
older snapshot partitions are history. Then, by ``chain-table.streaming.merge-snapshot``:

* ``false`` (the default): the latest snapshot partition of each group as it is, plus every delta partition
  of the group whose chain value is strictly greater (all of them for a group without snapshot partitions),
  each read on its own (merged within its partition only). Cheap, but a delete or update in a later delta
  partition of a key of the snapshot partition is not applied: both versions are emitted, each under its own
  partition values;
* ``true``: per group, the latest snapshot partition and the later delta partitions are merged by primary
  key, under the latest delta partition's values (the chain read plan,
  :func:`pyspark_paimon.planner.chain.plan.plan_chain`); a group without later deltas is its snapshot
  partition, a group without snapshot partitions is its deltas merged.

Every row of the start is an insert. The main branch is not read (it is not part of a chain stream).

A stream of a chain table starts only from the table's current content: :func:`refuse_chain_stream_options` says
which stream options cannot go with it (as Java's ``ChainTableFileStoreTable.newStreamScan`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.schema.options import CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT, CONSUMER_ID
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import DELTA, MAIN, SNAPSHOT, ChainConfig, stores_of
from pyspark_paimon.planner.chain.plan import BranchPartitions, plan_chain
from pyspark_paimon.planner.predicate import tree_columns
from pyspark_paimon.planner.read_options import FILTER_KEY, SCAN_PARTITIONS_KEY, ReadOptions
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.sections import sortable_key
from pyspark_paimon.planner.selection import selection_of
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_options import StreamOptions

__all__ = ["ChainStreamStart", "PINNING_ATTEMPTS", "refuse_chain_stream_options"]

#: How often pinning the two branches is retried while snapshot-branch commits keep landing in between.
PINNING_ATTEMPTS = 3


@dataclass(frozen=True)
class ChainStreamStart:
    """The start of a stream of the chain table whose loaded branch is ``main`` (module docstring)."""

    main: FileStore
    config: ChainConfig
    schema: TableSchema
    merge_snapshot: bool

    @classmethod
    def of(
        cls, main: FileStore, cfg: ChainConfig, schema: TableSchema, merge_snapshot: bool | None
    ) -> "ChainStreamStart":
        """``merge_snapshot``: the stream's read option, None = the table's ``chain-table.streaming.merge-snapshot``."""
        merge = (
            merge_snapshot
            if merge_snapshot is not None
            else schema.core_options.get(CHAIN_TABLE_STREAMING_MERGE_SNAPSHOT)
        )
        return cls(main, cfg, schema, bool(merge))

    @property
    def stores(self) -> dict[str, FileStore]:
        return stores_of(self.main, self.config)

    def pin(self) -> tuple[int | None, int | None]:
        """(snapshot-branch snapshot id, delta-branch snapshot id) read consistently: the snapshot branch is
        read before and after the delta branch, and a snapshot-branch commit in between (chain compaction
        publishing a partition whose deltas the pinned delta may not hold yet) makes it try again."""
        stores = self.stores
        snap, delta = stores[SNAPSHOT].snapshots, stores[DELTA].snapshots
        for _ in range(PINNING_ATTEMPTS):
            first = snap.latest_id()
            delta_id = delta.latest_id()
            if snap.latest_id() == first:
                return first, delta_id
        raise ChainTableError(
            f"Chain table {self.main.table_path}: the snapshot branch '{stores[SNAPSHOT].branch}' received a commit "
            f"during each of {PINNING_ATTEMPTS} attempts to pin where the stream starts. Start the query again once "
            "its commits (chain compaction) are less frequent."
        )

    def splits(self, snapshot_id: int | None, delta_id: int | None) -> list[DataSplit]:
        """The start's splits at the pinned versions, in a fixed order (replays plan the same splits)."""
        stores = self.stores
        snap = stores[SNAPSHOT].snapshots.snapshot(snapshot_id) if snapshot_id is not None else None
        delta = stores[DELTA].snapshots.snapshot(delta_id) if delta_id is not None else None
        snap_parts = BranchPartitions.of(stores[SNAPSHOT], snap, self.schema)
        delta_parts = BranchPartitions.of(stores[DELTA], delta, self.schema)
        g = self.config.group_size
        latest_snap: dict[tuple, tuple] = {}
        for p in snap_parts.entries:
            cur = latest_snap.get(p[:g])
            if cur is None or sortable_key(p[g:]) > sortable_key(cur[g:]):
                latest_snap[p[:g]] = p

        def after_snapshot(p: tuple) -> bool:
            anchor = latest_snap.get(p[:g])
            return anchor is None or sortable_key(p[g:]) > sortable_key(anchor[g:])

        later_deltas = [p for p in delta_parts.entries if after_snapshot(p)]
        if self.merge_snapshot:
            out = self._merged(snap, delta, latest_snap, later_deltas)
        else:
            out = self._lightweight(stores, snap_parts, delta_parts, latest_snap, later_deltas)
        return sorted(out, key=lambda s: (repr(sortable_key(s.partition_values)), s.bucket, s.files[0].file_name))

    def _lightweight(
        self,
        stores: dict[str, FileStore],
        snap_parts: BranchPartitions,
        delta_parts: BranchPartitions,
        latest_snap: dict[tuple, tuple],
        later_deltas: list[tuple],
    ) -> list[DataSplit]:
        out: list[DataSplit] = []
        for role, parts, chosen in (
            (SNAPSHOT, snap_parts, list(latest_snap.values())),
            (DELTA, delta_parts, later_deltas),
        ):
            store = stores[role]
            entries = [e for p in chosen for e in parts.entries[p]]
            for s in ScanPlanner(store, self.schema).plan_entries(entries).splits:
                out.append(replace(s, file_branches={f.file_name: store.branch for f in s.files}))
        return out

    def _merged(
        self,
        snap: Snapshot | None,
        delta: Snapshot | None,
        latest_snap: dict[tuple, tuple],
        later_deltas: list[tuple],
    ) -> list[DataSplit]:
        g = self.config.group_size
        targets: dict[tuple, tuple] = dict(latest_snap)  # group -> the partition its rows are emitted under
        for p in later_deltas:
            cur = targets.get(p[:g])
            if cur is None or sortable_key(p[g:]) > sortable_key(cur[g:]):
                targets[p[:g]] = p
        wanted = set(targets.values())
        names = [f.name for f in self.schema.partition_fields]

        def keep(named: dict[str, Any]) -> bool:
            return tuple(named[n] for n in names) in wanted

        pinned = {MAIN: None, SNAPSHOT: snap, DELTA: delta}
        plan = plan_chain(self.main, self.config, ReadOptions(), partition_filter=keep, use_main=False, pinned=pinned)
        return list(plan.plan.splits)


def refuse_chain_stream_options(store: FileStore, cfg: ChainConfig, opts: StreamOptions, schema: TableSchema) -> None:
    """What a stream of a chain table refuses, as Java's ``ChainTableFileStoreTable.newStreamScan`` does: any start
    but the table's current content, a consumer, and a selection of partitions (the start chooses partitions)."""
    given = []
    if opts.mode != "latest-full":
        given.append(
            f"'scan.snapshot-id' = '{opts.snapshot_id}'"
            if opts.snapshot_id is not None
            else f"'scan.tag-name' = '{opts.tag_name}'"
            if opts.tag_name is not None
            else "'scan.timestamp-millis' / 'scan.timestamp'"
            if opts.timestamp_millis is not None
            else f"'scan.mode' = '{opts.mode}'"
        )
    consumer = opts.consumer_id or schema.core_options.get(CONSUMER_ID)
    if consumer:
        given.append(f"'{CONSUMER_ID.key}' = '{consumer}'")
    if opts.scan_partitions is not None:
        given.append(f"'{SCAN_PARTITIONS_KEY}'")
    if opts.filter is not None:
        selection = selection_of(ReadOptions(filter=opts.filter), schema)
        on_partitions = sorted(tree_columns(selection.expr) & set(schema.partition_keys)) if selection.expr else []
        if on_partitions:
            given.append(f"a '{FILTER_KEY}' on partition columns {on_partitions}")
    if not given:
        return
    raise ChainTableError(
        f"Chain table {store.table_path}: a stream of a chain table starts from the table's current content (the "
        "latest snapshot partition of each group and the later delta partitions) and then follows the delta branch "
        f"'{cfg.delta_branch}', so it refuses {', '.join(given)}, as Paimon does. Remove "
        f"{'it' if len(given) == 1 else 'them'}, "
        f"or stream the delta branch as an ordinary table from any position: .option('branch', '{cfg.delta_branch}') "
        f"or load('{store.table_path}$branch_{cfg.delta_branch}')."
    )
