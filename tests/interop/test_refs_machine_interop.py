"""Issue 24's refs state machine, read by the other engines: a fixed script of the machine's own steps (its rules
and its model, tests/test_branch_merge_property.py) -- upserts, deletes, Table.update, Table.merge, an update
racing a writer thread, a delete, a Table.merge and a publish racing one on overlapping keys, tags, branches of
main and of a branch's tag, three-way merges, a safe publish and a cherry-pick -- then Java Paimon, pypaimon and
pypaimon-rust read main and both branches and must equal the model. One JVM and one oracle batch for the
module."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.interop.helpers import OracleBatch, canonical_rows, sorted_rows
from tests.oracle.java_oracle import JavaOracle
from tests.test_branch_merge_property import RefsMachine

pytestmark = pytest.mark.interop

BRANCHES = ("main", "b1", "b2")


def _identifier(branch: str) -> str:
    return "db.t" if branch == "main" else f"db.t$branch_{branch}"


def _model_rows(state: dict[int, int]) -> list[dict[str, int]]:
    return sorted_rows([{"id": k, "v": v} for k, v in state.items()])


@pytest.fixture(scope="module")
def machine() -> Iterator[RefsMachine]:
    m = RefsMachine()
    m.create()
    m.upsert("main", [2, 3], 1)
    m.create_branch("main", 0)  # b1 from main's head
    m.upsert("b1", [1, 4], 2)
    m.tag_head("b1")
    m.delete("b1", 0)
    m.update("main", 2)
    m.create_branch_from_tag("b1", 0)  # b2 from b1's tag, one commit back
    m.merge_rows("b2", {3: 3, 4: 1}, 2)
    m.update_under_a_live_writer("b1", 3)
    m.race_a_live_writer("delete", "main", [1, 3], 3, upto=1, rows={}, source="main", on_conflict="source")
    m.race_a_live_writer("merge", "b2", [3, 4], 2, upto=1, rows={3: 5, 0: 6}, source="main", on_conflict="source")
    m.merge("b1", "main", "source", False)  # three-way merge, the source wins conflicts
    m.merge("b2", "b1", "target", True)  # safe publish of b2 into b1, the target wins conflicts
    m.race_a_live_writer("publish", "main", [0, 4], 1, upto=0, rows={}, source="b1", on_conflict="source")
    m.upsert("b1", [0], 3)
    m.cherry_pick("b1")
    m.every_branch_reads_its_model()
    assert set(m.heads) == set(BRANCHES)
    yield m
    m.teardown()


def _warehouse(m: RefsMachine) -> str:
    return f"{m.dir.name}/wh"


def test_java_reads_every_branch_as_the_model(machine: RefsMachine, oracle_python: str) -> None:
    with JavaOracle() as java:
        for branch in BRANCHES:
            got = java.read(_warehouse(machine), _identifier(branch))
            assert sorted_rows(got.rows) == _model_rows(machine.heads[branch]), branch


def test_pypaimon_and_rust_read_every_branch_as_the_model(machine: RefsMachine, oracle_python: str) -> None:
    batch = OracleBatch(_warehouse(machine))
    for branch in BRANCHES:
        batch.read(branch, _identifier(branch))
    batch.run()
    for branch in BRANCHES:
        for impl, table in batch.tables[branch].items():
            assert canonical_rows(table) == _model_rows(machine.heads[branch]), (impl, branch)
