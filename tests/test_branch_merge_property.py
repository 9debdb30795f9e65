"""Hypothesis state machine for issue 24's refs operations: random DML (upserts, Table.delete, Table.update,
Table.merge builder clauses) on main and two branches, branches created from main or from the other branch (at
its latest or an earlier snapshot), three-way merges and safe publishes in any direction with every
``on_conflict`` (``fail`` must raise exactly when the model has conflicts, writing nothing), cherry-picks, diffs
between branches and between two snapshots, and an update racing a writer thread on the same branch (the model
applies both commits in the order their snapshots landed). Checked after every step against a plain model (a
dict by key per branch, and each commit's dict by snapshot id). Small and bounded: a few keys, few steps, a
derandomized budget of examples (``PAIMON_HYPOTHESIS_EXAMPLES`` raises it)."""

from __future__ import annotations

import os
import tempfile
import threading

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.dml import update_rows
from pyspark_paimon.errors import BranchMergeConflictError

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

    @initialize()
    def create(self) -> None:
        catalog = Catalog(f"{self.dir.name}/wh")
        self.t = catalog.create_table("db.t", "id BIGINT, v BIGINT", primary_keys=["id"], options={"bucket": "1"})
        self.heads["main"] = {}
        self.commits["main"] = {}
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
            self._table(branch).delete(f"id = {key}")
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
        self.heads[name] = dict(self.commits[parent][sid])
        self.commits[name] = {sid: dict(self.heads[name])}
        self.lineage[name] = (parent, sid)

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
        n = self._table(branch).update({"v": "v + 1"}, filter=f"id <= {upto}")
        hit = [k for k in self.heads[branch] if k <= upto]
        assert n == len(hit)
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

    @rule(branch=st.sampled_from(["main", *BRANCHES]), data=st.data())
    def diff_between_snapshots(self, branch: str, data: st.DataObject) -> None:
        if branch not in self.heads:
            return
        ids = sorted(self.commits[branch])
        a, b = data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids))
        got = self._table(branch).diff(a, b).to_pylist()
        old, new = self.commits[branch][a], self.commits[branch][b]
        assert {r["id"] for r in got} == {k for k in set(old) | set(new) if old.get(k) != new.get(k)}

    @invariant()
    def every_branch_reads_its_model(self) -> None:
        for branch, state in self.heads.items():
            rows = self._table(branch).scan().to_arrow().to_pylist()
            assert {r["id"]: r["v"] for r in rows} == state, branch


TestRefs = RefsMachine.TestCase
TestRefs.settings = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
