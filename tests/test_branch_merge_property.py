"""Hypothesis state machine for issue 24's refs operations: random DML on main and two branches, branch creation,
three-way merges (``on_conflict`` source / target, both directions), cherry-picks and diffs, checked after every
step against a plain model (a dict by key per branch, and each commit's dict by snapshot id). Small and bounded:
a few keys, few steps, few examples (``PAIMON_HYPOTHESIS_EXAMPLES`` raises it)."""

from __future__ import annotations

import os
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pyspark_paimon import Catalog, Table

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
        self.bases: dict[tuple[str, str], State] = {}  # (source, into) -> the model's merge base

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
    @rule()
    def create_branch(self) -> None:
        name = next(b for b in BRANCHES if b not in self.heads)
        self._table("main").branches.create(name)
        self.heads[name] = dict(self.heads["main"])
        self.commits[name] = {}
        self.bases[(name, "main")] = self.bases[("main", name)] = dict(self.heads["main"])

    @rule(branch=st.sampled_from(BRANCHES), to_main=st.booleans(), on_conflict=st.sampled_from(["source", "target"]))
    def merge(self, branch: str, to_main: bool, on_conflict: str) -> None:
        if branch not in self.heads:
            return
        source, into = (branch, "main") if to_main else ("main", branch)
        result = self._table("main").branches.merge(source, into=into, on_conflict=on_conflict)
        self._apply(self.bases[(source, into)], self.heads[source], into, on_conflict)
        self.bases[(source, into)] = dict(self.heads[source])
        if result.snapshot_id is not None:
            self._snap(into)

    @rule(branch=st.sampled_from(BRANCHES))
    def cherry_pick(self, branch: str) -> None:
        commits = self.commits.get(branch, {})
        picked = max(commits, default=None)
        if picked is None or picked - 1 not in {**self.commits["main"], **commits}:
            return
        parent = commits.get(picked - 1, self.commits["main"].get(picked - 1))
        assert parent is not None
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

    @invariant()
    def every_branch_reads_its_model(self) -> None:
        for branch, state in self.heads.items():
            rows = self._table(branch).scan().to_arrow().to_pylist()
            assert {r["id"]: r["v"] for r in rows} == state, branch


TestRefs = RefsMachine.TestCase
TestRefs.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
