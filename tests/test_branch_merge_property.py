"""Hypothesis state machine for issue 24's refs operations: random DML (upserts, Table.delete, Table.update,
Table.merge builder clauses) on main and two branches, branches created from main or from the other branch (at
its latest or an earlier snapshot), three-way merges and safe publishes in any direction with every
``on_conflict`` (``fail`` must raise exactly when the model has conflicts, writing nothing), cherry-picks, diffs
between branches and between two snapshots, tags of a branch's head and branches forked from a tag (the tagged
state, the tag copied, the tagged snapshot as the fork point of later merges), an update racing a writer thread on
other keys of the same branch, and a delete, a Table.merge or a publish racing one on OVERLAPPING keys (the model
applies the commits in the order their snapshots landed, each computed on the state before it: a change that a
writer's commit overtook between its read and its commit is read and decided again). Checked after every step
against a plain model (a dict by key per branch, and each commit's dict by snapshot id). Small and bounded: a few
keys, few steps, a derandomized budget of examples (``PAIMON_HYPOTHESIS_EXAMPLES`` raises it), plus one scripted
run of the newer rules that the small default budget would not reach."""

from __future__ import annotations

import os
import tempfile
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.dml.change_commit import MergeResult
from pyspark_paimon.datasource.dml.dml import delete_rows, update_rows
from pyspark_paimon.errors import BranchMergeConflictError
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager

EXAMPLES = int(os.environ.get("PAIMON_HYPOTHESIS_EXAMPLES", "4"))
KEYS = st.integers(0, 4)
BRANCHES = ["b1", "b2"]
State = dict[int, int]


class RefsMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.t: Table | None = None
        self.heads: dict[str, State] = {}
        self.commits: dict[str, dict[int, State]] = {}
        self.bases: dict[tuple[str, str], State] = {}  # (source, into) -> the base a merge recorded
        self.lineage: dict[str, tuple[str, int]] = {}  # branch -> (created from, at snapshot id)
        self.tags: dict[str, dict[str, int]] = {}  # branch -> tag name -> snapshot id

    @initialize()
    def create(self) -> None:
        catalog = Catalog(f"{self.dir.name}/wh")
        self.t = catalog.create_table("db.t", "id BIGINT, v BIGINT", primary_keys=["id"], options={"bucket": "1"})
        self.heads["main"] = {}
        self.commits["main"] = {}
        self.tags["main"] = {}
        self._write("main", [0, 1], 0)

    def teardown(self) -> None:
        self.dir.cleanup()

    def _table(self, branch: str) -> Table:
        assert self.t is not None
        return self.t if branch == "main" else self.t.on_branch(branch)

    def _snap(self, branch: str) -> None:
        latest = self._table(branch).latest_snapshot()
        assert latest is not None
        self.commits[branch][latest.id] = dict(self.heads[branch])

    def _write(self, branch: str, keys: list[int], v: int) -> None:
        self._table(branch).write_arrow(pa.table({"id": keys, "v": [v] * len(keys)}, schema=self._schema()))
        self.heads[branch].update({k: v for k in keys})
        self._snap(branch)

    def _schema(self) -> pa.Schema:
        assert self.t is not None
        return self.t.schema.arrow_schema()

    @rule(branch=st.sampled_from(["main", *BRANCHES]), keys=st.lists(KEYS, min_size=1, max_size=3), v=st.integers(1, 3))
    def upsert(self, branch: str, keys: list[int], v: int) -> None:
        if branch in self.heads:
            self._write(branch, sorted(set(keys)), v)

    @rule(branch=st.sampled_from(["main", *BRANCHES]), key=KEYS)
    def delete(self, branch: str, key: int) -> None:
        if branch in self.heads and key in self.heads[branch]:
            assert self._table(branch).delete(f"id = {key}").deleted == 1
            del self.heads[branch][key]
            self._snap(branch)

    @precondition(lambda self: any(b not in self.heads for b in BRANCHES))
    @rule(parent=st.sampled_from(["main", *BRANCHES]), back=st.integers(0, 2))
    def create_branch(self, parent: str, back: int) -> None:
        """A branch of main or of another branch, from its latest snapshot or one ``back`` commits earlier."""
        if parent not in self.heads:
            return
        name = next(b for b in BRANCHES if b not in self.heads)
        ids = sorted(self.commits[parent])
        sid = ids[max(0, len(ids) - 1 - back)]
        if sid == ids[-1]:
            self._table(parent).branches.create(name)
        else:
            self._table(parent).branches.create(name, snapshot_id=sid)
        self._forked(name, parent, sid, {})

    def _forked(self, name: str, parent: str, sid: int, tags: dict[str, int]) -> None:
        self.heads[name] = dict(self.commits[parent][sid])
        self.commits[name] = {sid: dict(self.heads[name])}
        self.lineage[name] = (parent, sid)
        self.tags[name] = tags

    @rule(branch=st.sampled_from(["main", *BRANCHES]))
    def tag_head(self, branch: str) -> None:
        """Tag the branch's latest snapshot (a tag may name an old snapshot by the time a branch forks from it)."""
        if branch not in self.heads:
            return
        name = f"t{sum(len(t) for t in self.tags.values())}"
        tag = self._table(branch).tags.create(name)
        assert tag.snapshot.id == max(self.commits[branch])
        self.tags[branch][name] = tag.snapshot.id

    @precondition(lambda self: any(b not in self.heads for b in BRANCHES))
    @rule(parent=st.sampled_from(["main", *BRANCHES]), pick=st.integers(0, 3))
    def create_branch_from_tag(self, parent: str, pick: int) -> None:
        """A branch of ``parent`` at one of its tags: the tagged state, the tag itself (copied into the new
        branch), and the tagged snapshot as the fork point of later merges."""
        if parent not in self.heads or not self.tags[parent]:
            return
        names = sorted(self.tags[parent])
        tag = names[pick % len(names)]
        name = next(b for b in BRANCHES if b not in self.heads)
        self._table(parent).branches.create(name, tag=tag)
        sid = self.tags[parent][tag]
        self._forked(name, parent, sid, {tag: sid})
        assert {t.name for t in self._table(name).tags.list()} == {tag}

    def _base(self, source: str, into: str) -> State:
        """The model's merge base: the recorded one, else the nearest common ancestor by lineage."""
        if (source, into) in self.bases:
            return self.bases[(source, into)]

        def chain(name: str) -> list[tuple[str, int | None]]:
            out: list[tuple[str, int | None]] = [(name, None)]
            while name in self.lineage:
                name, sid = self.lineage[name]
                out.append((name, sid))
            return out

        reached = dict(chain(into))
        for branch, sid in chain(source):
            if branch in reached:
                base_id = min(i for i in (sid, reached[branch]) if i is not None)
                return self.commits[branch][base_id]
        raise AssertionError("every branch descends from main")

    @rule(
        source=st.sampled_from(["main", *BRANCHES]),
        into=st.sampled_from(["main", *BRANCHES]),
        on_conflict=st.sampled_from(["fail", "source", "target"]),
        publish=st.booleans(),
    )
    def merge(self, source: str, into: str, on_conflict: str, publish: bool) -> None:
        if source == into or source not in self.heads or into not in self.heads:
            return
        base, src, tgt = self._base(source, into), self.heads[source], self.heads[into]
        changed = {k for k in set(base) | set(src) if base.get(k) != src.get(k)}
        conflicts = {k for k in changed if tgt.get(k) != base.get(k) and tgt.get(k) != src.get(k)}
        branches = self._table("main").branches
        run = branches.publish if publish else branches.merge
        if conflicts and on_conflict == "fail":
            head = self._table(into).latest_snapshot()
            try:
                run(source, into=into, on_conflict=on_conflict)
            except BranchMergeConflictError as exc:
                assert exc.count == len(conflicts)
            else:
                raise AssertionError(f"merging {source} into {into} should conflict on {sorted(conflicts)}")
            assert self._table(into).latest_snapshot() == head  # nothing written
            return
        result = run(source, into=into, on_conflict=on_conflict)
        assert result.conflicts == len(conflicts)
        self._apply(base, src, into, on_conflict)
        self.bases[(source, into)] = dict(src)
        if result.snapshot_id is not None:
            self._snap(into)

    @rule(branch=st.sampled_from(BRANCHES))
    def cherry_pick(self, branch: str) -> None:
        commits = self.commits.get(branch, {})
        picked = max(commits, default=None)
        if picked is None or picked - 1 not in commits:
            return
        parent = commits[picked - 1]
        result = self._table("main").branches.cherry_pick(f"{branch}.{picked}", onto="main", on_conflict="source")
        self._apply(parent, commits[picked], "main", "source")
        if result.snapshot_id is not None:
            self._snap("main")

    def _apply(self, base: State, source: State, into: str, on_conflict: str) -> None:
        target = self.heads[into]
        for key in set(base) | set(source):
            if base.get(key) == source.get(key):
                continue  # the source did not change it
            if on_conflict == "target" and target.get(key) != base.get(key):
                continue  # both changed it: keep the target's
            if key in source:
                target[key] = source[key]
            else:
                target.pop(key, None)

    @rule(branch=st.sampled_from(["main", *BRANCHES]))
    def diff_against_main(self, branch: str) -> None:
        if branch == "main" or branch not in self.heads:
            return
        got = self._table("main").diff("main", branch).to_pylist()
        a, b = self.heads["main"], self.heads[branch]
        want_keys = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
        assert {r["id"] for r in got} == want_keys

    @rule(branch=st.sampled_from(["main", *BRANCHES]), upto=KEYS)
    def update(self, branch: str, upto: int) -> None:
        if branch not in self.heads:
            return
        result = self._table(branch).update({"v": "v + 1"}, filter=f"id <= {upto}")
        hit = [k for k in self.heads[branch] if k <= upto]
        assert result.updated == len(hit) and (result.snapshot_id is not None) == bool(hit)
        if hit:
            self.heads[branch].update({k: self.heads[branch][k] + 1 for k in hit})
            self._snap(branch)

    @rule(
        branch=st.sampled_from(["main", *BRANCHES]),
        rows=st.dictionaries(KEYS, st.integers(1, 3), min_size=1, max_size=3),
        drop=st.one_of(st.none(), KEYS),
    )
    def merge_rows(self, branch: str, rows: dict[int, int], drop: int | None) -> None:
        """Table.merge: upsert ``rows``, and delete the target row ``drop`` when the source does not hold it."""
        if branch not in self.heads:
            return
        source = pa.table({"id": list(rows), "v": list(rows.values())}, schema=self._schema())
        builder = self._table(branch).merge(source, on="id").when_matched_update_all().when_not_matched_insert_all()
        if drop is not None:
            builder = builder.when_not_matched_by_source_delete(f"target.id = {drop}")
        result = builder.execute()
        head = self.heads[branch]
        dropped = drop is not None and drop in head and drop not in rows
        assert (result.inserted, result.deleted) == (len(set(rows) - set(head)), int(dropped))
        head.update(rows)
        if dropped:
            del head[drop]
        if result.snapshot_id is not None:
            self._snap(branch)

    @rule(branch=st.sampled_from(["main", *BRANCHES]), v=st.integers(1, 3))
    def update_under_a_live_writer(self, branch: str, v: int) -> None:
        """A writer thread commits keys 10-11 to the branch while Table.update runs on keys 0-4 of it; the model
        takes both in the order their snapshots landed."""
        if branch not in self.heads:
            return
        table = self._table(branch)
        before = table.latest_snapshot()
        assert before is not None
        writer_table = Table.open(table.uri, branch=branch)
        rows = pa.table({"id": [10, 11], "v": [v, v]}, schema=self._schema())

        def write() -> None:
            writer_table.write_arrow(rows)

        thread = threading.Thread(target=write)
        thread.start()
        try:
            result = update_rows(table.store, {"v": "v * 2"}, "id <= 4")
        finally:
            thread.join()
        head = self.heads[branch]
        assert result.updated == len([k for k in head if k <= 4])
        latest = table.latest_snapshot()
        assert latest is not None
        kinds = []
        for sid in range(before.id + 1, latest.id + 1):  # in the order they landed; COMPACT changes no row
            kind = table.snapshot(sid).commit_kind
            if sid == result.snapshot_id:
                head.update({k: x * 2 for k, x in head.items() if k <= 4})
            elif kind != "COMPACT":
                head.update({10: v, 11: v})
            kinds.append("dml" if sid == result.snapshot_id else kind)
            self.commits[branch][sid] = dict(head)
        assert kinds.count("APPEND") == 1 and kinds.count("dml") == (1 if result.updated else 0), kinds

    @rule(
        op=st.sampled_from(["delete", "merge", "publish"]),
        branch=st.sampled_from(["main", *BRANCHES]),
        keys=st.lists(KEYS, min_size=1, max_size=3),
        v=st.integers(1, 3),
        upto=KEYS,
        rows=st.dictionaries(KEYS, st.integers(4, 6), min_size=1, max_size=3),
        source=st.sampled_from(["main", *BRANCHES]),
        on_conflict=st.sampled_from(["source", "target"]),
    )
    def race_a_live_writer(
        self,
        op: str,
        branch: str,
        keys: list[int],
        v: int,
        upto: int,
        rows: dict[int, int],
        source: str,
        on_conflict: str,
    ) -> None:
        """A writer thread upserts ``keys`` (value ``v``) on the branch while a delete, a Table.merge or a publish
        of another branch into it changes OVERLAPPING keys. The change must land on exactly the rows it commits
        on top of (a commit between its read and its commit makes it read and decide again), so the model
        applies the writer's upsert and the change, each computed on the state before it, in snapshot order;
        a change that wrote nothing was a no-op on the state before or after the writer's commit. ``upto``: the
        delete's ``id <= upto``; ``rows``: the merge's source (plus deleting target row ``upto`` when the source
        lacks it); ``source``, ``on_conflict``: the branch published into ``branch`` and how."""
        if branch not in self.heads or (op == "publish" and (source == branch or source not in self.heads)):
            return
        table = self._table(branch)
        before = table.latest_snapshot()
        assert before is not None
        writer_table = Table.open(table.uri, branch=branch)
        upsert = sorted(set(keys))
        written = pa.table({"id": upsert, "v": [v] * len(upsert)}, schema=self._schema())
        effect: Callable[[State], tuple[State, tuple[int, ...]]]  # the change on a state -> (after, its counts)
        if op == "delete":

            def effect(state: State) -> tuple[State, tuple[int, ...]]:
                return {k: x for k, x in state.items() if k > upto}, (len([k for k in state if k <= upto]),)

            def change() -> tuple[int | None, tuple[int, ...]]:
                result = delete_rows(table.store, f"id <= {upto}")
                return result.snapshot_id, (result.deleted,)

        elif op == "merge":

            def effect(state: State) -> tuple[State, tuple[int, ...]]:
                dropped = upto in state and upto not in rows
                after = {**state, **rows}
                if dropped:
                    del after[upto]
                return after, (len(set(rows) - set(state)), int(dropped))

            def change() -> tuple[int | None, tuple[int, ...]]:
                result: MergeResult = (
                    table.merge(pa.table({"id": list(rows), "v": list(rows.values())}, schema=self._schema()), on="id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .when_not_matched_by_source_delete(f"target.id = {upto}")
                    .execute()
                )
                return result.snapshot_id, (result.inserted, result.deleted)

        else:
            src_branch = source
            base, src = self._base(src_branch, branch), dict(self.heads[src_branch])

            def effect(state: State) -> tuple[State, tuple[int, ...]]:
                changed = {k for k in set(base) | set(src) if base.get(k) != src.get(k)}
                conflicts = {k for k in changed if state.get(k) not in (base.get(k), src.get(k))}
                self.heads[branch] = after = dict(state)
                self._apply(base, src, branch, on_conflict)  # edits self.heads[branch], i.e. ``after``
                return after, (len(conflicts),)

            def change() -> tuple[int | None, tuple[int, ...]]:
                result = self._table("main").branches.publish(src_branch, into=branch, on_conflict=on_conflict)
                return result.snapshot_id, (result.conflicts,)

        with _no_write_straddles_a_commit() as writer_gate:
            thread = threading.Thread(target=lambda: writer_gate(lambda: writer_table.write_arrow(written)))
            thread.start()
            try:
                sid, counts = change()
            finally:
                thread.join()
        if op == "publish":
            self.bases[(src_branch, branch)] = src
        latest = table.latest_snapshot()
        assert latest is not None
        head = dict(self.heads[branch])
        states = [dict(head)]
        kinds = []
        for snap_id in range(before.id + 1, latest.id + 1):  # in the order they landed; COMPACT changes no row
            kind = table.snapshot(snap_id).commit_kind
            if snap_id == sid:
                head, got = effect(head)
                assert counts == got, (op, counts, got)
                kinds.append("change")
            elif kind != "COMPACT":
                head = {**head, **{k: v for k in upsert}}
                states.append(dict(head))
                kinds.append(kind)
            self.commits[branch][snap_id] = dict(head)
        assert kinds.count("APPEND") == 1 and kinds.count("change") == (sid is not None), kinds
        if sid is None:  # a no-op on the state it was planned on, before or after the writer's commit
            assert any(effect(state) == (state, counts) for state in states), (op, counts, states)
        self.heads[branch] = head

    @rule(branch=st.sampled_from(["main", *BRANCHES]), data=st.data())
    def diff_between_snapshots(self, branch: str, data: st.DataObject) -> None:
        if branch not in self.heads:
            return
        refs: list[int | str] = [*sorted(self.commits[branch]), *sorted(self.tags[branch])]  # ids, then tags
        a, b = data.draw(st.sampled_from(refs)), data.draw(st.sampled_from(refs))
        got = self._table(branch).diff(a, b).to_pylist()
        sid = {**{i: i for i in self.commits[branch]}, **self.tags[branch]}
        old, new = self.commits[branch][sid[a]], self.commits[branch][sid[b]]
        assert {r["id"] for r in got} == {k for k in set(old) | set(new) if old.get(k) != new.get(k)}

    @invariant()
    def every_branch_reads_its_model(self) -> None:
        for branch, state in self.heads.items():
            rows = self._table(branch).scan().to_arrow().to_pylist()
            assert {r["id"]: r["v"] for r in rows} == state, branch


@contextmanager
def _no_write_straddles_a_commit() -> Iterator[Callable[[Callable[[], object]], None]]:
    """Yield a gate for the writer thread: while the writer is inside it (from preparing its write to its
    commit), no other thread's snapshot can land. A plain write prepared before a change commits and committed
    after it is ordered by sequence number, not commit order (a known gap, the xfail test in tests/test_dml.py);
    the gate keeps the race to what the change must handle: the writer's commit landing anywhere between the
    change's read and its commit."""
    lock = threading.Lock()
    writer: list[threading.Thread] = []
    real = SnapshotManager.try_commit

    def gated(self: SnapshotManager, snapshot: object) -> bool:
        if writer and threading.current_thread() is writer[0]:
            return real(self, snapshot)  # type: ignore[arg-type]
        with lock:
            return real(self, snapshot)  # type: ignore[arg-type]

    def gate(write: Callable[[], object]) -> None:
        writer.append(threading.current_thread())
        with lock:
            write()

    SnapshotManager.try_commit = gated  # type: ignore[method-assign]
    try:
        yield gate
    finally:
        SnapshotManager.try_commit = real  # type: ignore[method-assign]


TestRefs = RefsMachine.TestCase
TestRefs.settings = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_scripted_races_and_tag_forks() -> None:
    """The new rules in a fixed order, so the default example budget always runs each race and a fork from an
    old tag (the machine's own exploration reaches them only with a larger ``PAIMON_HYPOTHESIS_EXAMPLES``): a
    branch of an older tag of main, merged back from the tagged snapshot; a branch of a branch's tag; a delete,
    a merge and a publish each racing a writer of overlapping keys. The race's timing varies from run to run;
    the model does not depend on it."""
    m = RefsMachine()
    try:
        m.create()
        m.tag_head("main")  # t0 at the first commit
        m.upsert("main", [1, 2], 3)
        m.create_branch_from_tag("main", 0)  # b1 at t0: main's older state
        m.every_branch_reads_its_model()
        m.upsert("b1", [0, 3], 2)
        m.upsert("main", [2], 1)
        m.merge("b1", "main", "fail", False)  # from the tagged snapshot: b1's changes only, no conflict
        m.tag_head("b1")
        m.race_a_live_writer("delete", "main", [0, 3], 2, upto=2, rows={}, source="main", on_conflict="source")
        m.every_branch_reads_its_model()
        m.race_a_live_writer("merge", "b1", [1, 4], 3, upto=0, rows={1: 5, 2: 6}, source="main", on_conflict="source")
        m.every_branch_reads_its_model()
        m.create_branch_from_tag("b1", 1)  # b2 at b1's own tag (b1 also holds t0, copied when it forked)
        m.upsert("b2", [2, 4], 1)
        m.race_a_live_writer("publish", "main", [2, 4], 3, upto=0, rows={}, source="b2", on_conflict="target")
        m.every_branch_reads_its_model()
        m.race_a_live_writer("publish", "b1", [4], 2, upto=0, rows={}, source="main", on_conflict="source")
        m.every_branch_reads_its_model()
        m.diff_between_snapshots("main", _Draws([min(m.commits["main"]), max(m.commits["main"])]))
        m.diff_between_snapshots(
            "b2", _Draws([next(iter(m.tags["b2"])), max(m.commits["b2"])])
        )  # from the tag b2 was forked at
        m.diff_against_main("b2")
    finally:
        m.teardown()


class _Draws:
    """A stand-in for Hypothesis' ``data`` argument when a scripted test calls a rule: draws return the given
    values in order."""

    def __init__(self, values: list[object]) -> None:
        self._values = iter(values)

    def draw(self, strategy: object, label: object = None) -> object:
        return next(self._values)
