"""The refs of a table as one graph, ``git log --graph`` style: the snapshots of every branch, newest first, each
branch in its own lane joined to the snapshot it forked from, with tags, branch heads and stream consumers as
decorations (``pyspark-paimon history --graph``, ``t.inspect.refs_graph()``).

A branch's own snapshots are the ones above its fork point (its lineage's source snapshot): the snapshot at the
fork is a copy of the source branch's, so it is drawn once, in the source's lane, where the branch's lane joins.
A branch without lineage (made by Paimon or pypaimon, or created empty) is a lane of its own that joins nothing;
a branch with no commit of its own is a decoration of its fork snapshot. Tags and consumers sit on the row of the
snapshot they point at (a consumer at ``nextSnapshot - 1``, the last snapshot it fully read); refs of a branch that
point at or below its fork are shown on the source's row, prefixed with the branch name. Snapshots that expired
but a tag preserved are drawn too (``note``).

Only metadata is read: one listing and read of each branch's snapshots, tags and consumers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import local_datetime

PRESERVED_NOTE = "expired, kept by tag"


@dataclass(frozen=True)
class GraphRow:
    """One snapshot in the graph: which branch owns it, its lane, the lane picture to its left and its refs."""

    branch: str
    snapshot_id: int
    commit_time_millis: int
    commit_kind: str
    delta_records: int | None
    total_records: int | None
    lane: int
    graph: str
    refs: tuple[str, ...]  # decorations, git style: branch heads, 'tag: t', 'consumer: c'
    forked_from: str | None = None  # '<branch>@<snapshot id>' on a branch's oldest own snapshot
    note: str | None = None


@dataclass
class RefGraph:
    """The rows (snapshots, newest first) and the text picture (rows plus the lines where branches join)."""

    rows: list[GraphRow] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    rows_before: list[int] = field(default_factory=list)  # per line: how many rows the lines up to it hold

    def text_lines(self, limit: int | None = None) -> list[str]:
        """The picture, cut after the ``limit``-th snapshot (all of it when None)."""
        if limit is None:
            return list(self.lines)
        return [line for line, n in zip(self.lines, self.rows_before) if n <= limit]

    def text(self) -> str:
        return "\n".join(self.lines)

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_pylist(
            [
                {
                    "graph": r.graph,
                    "branch": r.branch,
                    "snapshot_id": r.snapshot_id,
                    "commit_time": local_datetime(r.commit_time_millis),
                    "commit_kind": r.commit_kind,
                    "delta_records": r.delta_records,
                    "total_records": r.total_records,
                    "refs": list(r.refs),
                    "forked_from": r.forked_from,
                    "note": r.note,
                    "lane": r.lane,
                }
                for r in self.rows
            ],
            schema=GRAPH_SCHEMA,
        )


GRAPH_SCHEMA = pa.schema(
    [
        pa.field("graph", pa.string(), nullable=False),
        pa.field("branch", pa.string(), nullable=False),
        pa.field("snapshot_id", pa.int64(), nullable=False),
        pa.field("commit_time", pa.timestamp("ms")),
        pa.field("commit_kind", pa.string()),
        pa.field("delta_records", pa.int64()),
        pa.field("total_records", pa.int64()),
        pa.field("refs", pa.list_(pa.string()), nullable=False),
        pa.field("forked_from", pa.string()),
        pa.field("note", pa.string()),
        pa.field("lane", pa.int32(), nullable=False),
    ]
)


@dataclass
class _Branch:
    name: str
    source: str | None  # the branch it forked from (None: a root lane)
    fork_id: int | None
    snapshots: dict[int, Snapshot]  # own snapshots (above the fork), preserved ones included
    preserved: set[int]
    tags: dict[int, list[str]]  # snapshot id -> tag names (all of the branch's tags)
    consumers: dict[int, list[str]]  # snapshot id -> consumer ids
    latest_id: int | None
    lane: int = -1


def _load(store: FileStore, name: str, source: str | None, fork_id: int | None) -> _Branch:
    branch_store = store.with_branch(name)
    snaps = {s.id: s for s in branch_store.snapshots.snapshots()}
    tags: dict[int, list[str]] = {}
    preserved: dict[int, Snapshot] = {}
    for tag in TagManager(branch_store).list_tags():
        tags.setdefault(tag.snapshot_id, []).append(tag.name)
        preserved.setdefault(tag.snapshot_id, tag.snapshot)
    consumers: dict[int, list[str]] = {}
    for cid, nxt in sorted(ConsumerManager(branch_store).consumers().items()):
        consumers.setdefault(nxt - 1, []).append(cid)
    own = {**{i: s for i, s in preserved.items() if i not in snaps}, **snaps}
    floor = fork_id if source is not None and fork_id is not None else 0
    own = {i: s for i, s in own.items() if i > floor}
    latest = max(snaps) if snaps else None
    return _Branch(name, source, fork_id, own, set(own) - set(snaps), tags, consumers, latest)


def ref_graph(store: FileStore) -> RefGraph:
    """The graph of every branch of the table ``store`` belongs to (the store's branch is irrelevant)."""
    branches: dict[str, _Branch] = {MAIN_BRANCH: _load(store, MAIN_BRANCH, None, None)}
    for info in BranchManager(store).list_branches():
        source = info.source_branch if info.source_snapshot_id is not None else None
        branches[info.name] = _load(store, info.name, source, info.source_snapshot_id)
    for b in branches.values():  # a source that no longer exists: a root lane
        if b.source is not None and b.source not in branches:
            b.source = None

    def owner(name: str, sid: int) -> str:
        """The branch whose lane holds snapshot ``sid`` as seen from branch ``name`` (a fork's copy is its
        source's)."""
        b = branches[name]
        while b.source is not None and b.fork_id is not None and sid <= b.fork_id:
            b = branches[b.source]
        return b.name

    # Lanes: a depth-first walk from main, children by fork point, so a child's lane is right of its parent's.
    children: dict[str | None, list[_Branch]] = {}
    for b in branches.values():
        if b.name != MAIN_BRANCH:
            children.setdefault(b.source, []).append(b)
    order: list[_Branch] = []

    def visit(b: _Branch) -> None:
        if b.snapshots:
            b.lane = len(order)
            order.append(b)
        for c in sorted(children.get(b.name, []), key=lambda c: (c.fork_id or 0, c.name)):
            visit(c)

    visit(branches[MAIN_BRANCH])
    for root in sorted(children.get(None, []), key=lambda c: c.name):
        visit(root)

    # Decorations, placed on the row of the snapshot's owner.
    refs: dict[tuple[str, int], list[str]] = {}

    def decorate(name: str, sid: int, text: str) -> None:
        where = owner(name, sid)
        if sid in branches[where].snapshots:
            refs.setdefault((where, sid), []).append(text if where == name else f"{name}/{text}")

    for b in branches.values():
        head = max(b.snapshots) if b.snapshots else b.fork_id
        if head is not None and (b.snapshots or b.source is not None):
            where = owner(b.name, head)
            if head in branches[where].snapshots:
                refs.setdefault((where, head), []).append(b.name if b.snapshots else f"branch: {b.name}")
        for sid, names in sorted(b.tags.items()):
            for n in names:
                decorate(b.name, sid, f"tag: {n}")
        for sid, cids in sorted(b.consumers.items()):
            for c in cids:
                decorate(b.name, sid, f"consumer: {c}")

    keyed = [(b, s) for b in order for s in b.snapshots.values()]
    keyed.sort(key=lambda bs: (-bs[1].time_millis, -bs[1].id, bs[0].lane))
    index = {(b.name, s.id): i for i, (b, s) in enumerate(keyed)}

    # Where each lane joins its source: before the fork row, or the source lane's next row below the lane's end.
    joins: dict[int, list[_Branch]] = {}
    for b in order:
        if b.source is None or b.fork_id is None:
            continue
        last = max(index[(b.name, sid)] for sid in b.snapshots)
        target = owner(b.source, b.fork_id)
        fork_at = index.get((target, b.fork_id))
        if fork_at is None or fork_at <= last:
            later = [i for i, (o, _s) in enumerate(keyed) if i > last and o.name == target]
            fork_at = later[0] if later else None
        if fork_at is not None:
            joins.setdefault(fork_at, []).append(b)

    graph = RefGraph()
    width = 2 * max(len(order) - 1, 0) + 1  # every line's picture padded to this, so the text columns align
    active: set[int] = set()
    for i, (b, s) in enumerate(keyed):
        for child in sorted(joins.get(i, []), key=lambda c: -c.lane):
            picture = _join_line(active, b.lane, child.lane).ljust(width)
            graph.lines.append(f"{picture}  {child.name} forked from {b.name}@{child.fork_id}")
            graph.rows_before.append(len(graph.rows) + 1)  # belongs with the row below it
            active.discard(child.lane)
        active.add(b.lane)
        cells = ["*" if lane == b.lane else ("|" if lane in active else " ") for lane in range(max(active) + 1)]
        prefix = " ".join(cells).rstrip()
        oldest = min(b.snapshots) == s.id
        forked = f"{b.source}@{b.fork_id}" if oldest and b.source is not None else None
        row = GraphRow(
            branch=b.name,
            snapshot_id=s.id,
            commit_time_millis=s.time_millis,
            commit_kind=s.commit_kind,
            delta_records=s.delta_record_count,
            total_records=s.total_record_count,
            lane=b.lane,
            graph=prefix,
            refs=tuple(refs.get((b.name, s.id), [])),
            forked_from=forked,
            note=PRESERVED_NOTE if s.id in b.preserved else None,
        )
        graph.rows.append(row)
        graph.lines.append(f"{prefix.ljust(width)}  {describe(row)}")
        graph.rows_before.append(len(graph.rows))
    return graph


def _join_line(active: set[int], parent: int, child: int) -> str:
    """``|/`` (or ``|_|/`` across lanes in between): lane ``child`` joins lane ``parent`` below."""
    chars = [" "] * (2 * max([*active, child]) + 1)
    chars[2 * parent] = "|"
    for lane in active:
        if lane != child:
            chars[2 * lane] = "|"
    for col in range(2 * parent + 1, 2 * child - 1):
        if chars[col] == " ":
            chars[col] = "_"
    chars[2 * child - 1] = "/"
    return "".join(chars).rstrip()


def describe(row: GraphRow) -> str:
    """The text after a row's lane picture."""
    when = local_datetime(row.commit_time_millis).strftime("%Y-%m-%d %H:%M:%S")
    counts = ""
    if row.delta_records is not None or row.total_records is not None:
        counts = f"  {row.delta_records if row.delta_records is not None else '?'} rows, " + (
            f"{row.total_records if row.total_records is not None else '?'} total"
        )
    refs = f"  ({', '.join(row.refs)})" if row.refs else ""
    note = f"  [{row.note}]" if row.note else ""
    return f"{row.branch}@{row.snapshot_id} {row.commit_kind} {when}{counts}{refs}{note}"


__all__ = ["GRAPH_SCHEMA", "GraphRow", "RefGraph", "describe", "ref_graph"]
