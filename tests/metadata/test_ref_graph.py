"""The refs graph (``history --graph``, ``t.inspect.refs_graph()``): lanes, fork points, tags, consumers, on a small
real table with nested branches."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import cli
from pyspark_paimon.catalog import Catalog
from pyspark_paimon.metadata.refs.graph import ref_graph
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.table import Table


def write(t: Table, i: int) -> None:
    t.write_arrow(pa.table({"id": [i], "v": [str(i)]}))


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Table:
    """main 1-4; dev forked at 2 (own 3, 4); hot forked at 3 (own 4); exp forked from dev at 4 (own 5); idle at 1."""
    t = Catalog(str(tmp_path_factory.mktemp("graph"))).create_table("db.g", "id bigint, v string")
    write(t, 1)
    write(t, 2)
    t.tags.create("v1")
    t.branches.create("dev")
    write(t, 3)
    dev = t.on_branch("dev")
    write(dev, 10)
    write(dev, 11)
    t.branches.create("hot", snapshot_id=3)
    write(t.on_branch("hot"), 20)
    dev.branches.create("exp")
    write(t.on_branch("exp"), 30)
    t.branches.create("idle", snapshot_id=1)
    write(t, 4)
    ConsumerManager(t.store).record("etl", 4)
    dev.tags.create("d1", snapshot_id=2)  # a branch's tag at its fork point: shown on main's row
    return t


def test_the_picture_joins_each_branch_at_its_fork_point(table: Table) -> None:
    graph = ref_graph(table.store)
    pictures = [line[:7].rstrip() + " " + line[7:].split()[0] for line in graph.lines]
    assert pictures == [
        "* main@4",
        "|   * exp@5",
        "|   | * hot@4",
        "| |/  | exp",
        "| *   | dev@4",
        "| *   | dev@3",
        "|_|__/ hot",
        "* | main@3",
        "|/ dev",
        "* main@2",
        "* main@1",
    ]
    assert "exp forked from dev@4" in graph.lines[3] and "hot forked from main@3" in graph.lines[6]
    refs = {(r.branch, r.snapshot_id): r.refs for r in graph.rows}
    assert refs[("main", 4)] == ("main",)
    assert refs[("main", 3)] == ("consumer: etl",)  # nextSnapshot 4: snapshot 3 fully read
    assert refs[("main", 2)] == ("tag: v1", "dev/tag: d1")
    assert refs[("main", 1)] == ("branch: idle",)  # a branch without commits of its own
    assert {(r.branch, r.forked_from) for r in graph.rows if r.forked_from} == {
        ("dev", "main@2"),
        ("hot", "main@3"),
        ("exp", "dev@4"),
    }


def test_notebooks_get_the_same_rows_as_arrow_from_any_branch(table: Table) -> None:
    arrow = table.on_branch("exp").inspect.refs_graph()
    assert arrow.column_names[:3] == ["graph", "branch", "snapshot_id"]
    assert list(zip(arrow["branch"].to_pylist(), arrow["snapshot_id"].to_pylist())) == [
        ("main", 4),
        ("exp", 5),
        ("hot", 4),
        ("dev", 4),
        ("dev", 3),
        ("main", 3),
        ("main", 2),
        ("main", 1),
    ]
    assert arrow["graph"].to_pylist()[1] == "|   *"


def test_cli_history_graph(capsys: pytest.CaptureFixture[str], table: Table) -> None:
    assert cli.main(["history", "--table", table.store.table_path, "--graph", "--limit", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in out] == ["(main)", "(exp)", "(hot)"]  # cut before the join line
    assert cli.main(["history", "--table", table.store.table_path, "--graph", "--json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 8


def test_a_branch_without_lineage_is_a_lane_of_its_own(tmp_path: Path) -> None:
    t = Catalog(str(tmp_path)).create_table("db.r", "id bigint, v string")
    write(t, 1)
    t.branches.create("scratch", empty=True)
    write(t.on_branch("scratch"), 5)
    graph = ref_graph(t.store)
    assert not any("forked" in line for line in graph.lines)
    assert sorted((r.branch, r.snapshot_id, r.lane, r.forked_from) for r in graph.rows) == [
        ("main", 1, 0, None),
        ("scratch", 1, 1, None),
    ]
