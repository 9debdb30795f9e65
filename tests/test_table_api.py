"""The 0.2.0 Python API (issue 25): a small ``Table`` facade, ``Scan``, ``UpdateSchema`` and the namespaces."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import BranchNotFoundError, ChainTableError, OptionError, SchemaError, TagNotFoundError
from pyspark_paimon.planner.predicate import Leaf
from tests.engine_read import read_arrow


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


@pytest.fixture
def t(catalog: Catalog) -> Table:
    table = catalog.create_table(
        "db.t",
        "id BIGINT, dt STRING, v STRING",
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "1"},
    )
    table.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]}))
    table.write_arrow(pa.table({"id": [4, 5], "dt": ["b", "b"], "v": ["u", "w"]}))
    return table


def test_table_has_at_most_25_public_members(t: Table) -> None:
    public = [m for m in dir(t) if not m.startswith("_")]
    assert len(public) <= 25, public
    for gone in ("to_arrow", "new_read", "create_tag", "branch_table", "compact", "add_column", "fileio", "path"):
        assert not hasattr(t, gone), gone


def test_scan_equals_the_engine_read(t: Table) -> None:
    got = t.scan("dt = 'b' AND id > 3", ["id", "v"]).to_arrow()
    want = read_arrow(t, predicate=[Leaf("dt", "=", "b"), Leaf("id", ">", 3)], columns=["id", "v"])
    assert _rows(got) == _rows(want) == [(4, "u"), (5, "w")]
    assert _rows(t.scan(snapshot_id=1).to_arrow()) == _rows(read_arrow(t, {"scan.snapshot-id": "1"}))
    assert t.scan(snapshot_id=1).to_arrow().num_rows == 3
    t.tags.create("one", snapshot_id=1)
    assert _rows(t.scan(tag="one").to_arrow()) == _rows(t.scan(snapshot_id=1).to_arrow())
    second = t.snapshot(2).time_millis
    assert t.scan(timestamp=second).to_arrow().num_rows == 5
    batches = list(t.scan("dt = 'a'").to_arrow_batch_reader())
    assert sum(b.num_rows for b in batches) == 2
    assert t.scan("dt = 'a'").explain().splits.count == 1


def test_a_version_keyword_and_its_read_option_conflict(t: Table) -> None:
    with pytest.raises(OptionError, match=r"snapshot_id= and read_options\['scan.snapshot-id'\]"):
        t.scan(snapshot_id=1, read_options={"scan.snapshot-id": "2"})
    with pytest.raises(OptionError, match="filter="):
        t.scan("id = 1", read_options={"filter": "id = 2"})


def test_update_schema_commits_one_version_for_many_changes(t: Table) -> None:
    before = t.schema.id
    with t.update_schema() as u:
        u.add_column("note", "string")
        u.rename_column("v", "value")
        u.set_options({"snapshot.num-retained.max": "50"})
    assert t.schema.id == before + 1
    assert t.schema.field_names == ["id", "dt", "value", "note"]
    assert t.options["snapshot.num-retained.max"] == "50"
    with pytest.raises(RuntimeError):
        with t.update_schema() as u:
            u.drop_column("note")
            raise RuntimeError("changed my mind")
    assert t.schema.id == before + 1 and t.schema.has_field("note")
    with pytest.raises(SchemaError):
        with t.update_schema() as u:
            u.add_column("extra", "int")
            u.drop_column("id")  # a primary key column: the whole batch is refused
    assert t.schema.id == before + 1 and not t.schema.has_field("extra")
    assert t.update_schema().remove_options(["snapshot.num-retained.max"]).commit().id == before + 2


def test_delete_and_drop_return_whether_the_ref_existed(t: Table) -> None:
    t.tags.create("x")
    assert t.tags.delete("x") is True
    assert t.tags.delete("x", ignore_if_not_exists=True) is False
    with pytest.raises(TagNotFoundError):
        t.tags.delete("x")
    t.branches.create("b")
    assert t.branches.drop("b") is True
    assert t.branches.drop("b", ignore_if_not_exists=True) is False
    with pytest.raises(BranchNotFoundError):
        t.branches.drop("b")


def test_branches_create_defaults_to_the_latest_snapshot(t: Table) -> None:
    info = t.branches.create("from_latest")
    assert info.source_snapshot_id == 2
    assert t.on_branch("from_latest").scan().to_arrow().num_rows == 5
    t.branches.create("blank", empty=True)
    blank = t.on_branch("blank")
    assert blank.latest_snapshot() is None and blank.scan().to_arrow().num_rows == 0
    assert [b.name for b in t.branches.list()] == ["blank", "from_latest"]


def test_maintenance_and_inspect(t: Table) -> None:
    assert t.inspect.snapshots().column("snapshot_id").to_pylist() == [1, 2]
    t.tags.create("t1", snapshot_id=1)
    history = t.inspect.history()
    assert history.column("snapshot_id").to_pylist() == [2, 1]
    assert history.column("tags").to_pylist() == [[], ["t1"]]
    assert t.maintenance.compact(full=True)
    assert t.maintenance.rollback_to(tag="t1").current_snapshot_id == 1
    assert t.scan().to_arrow().num_rows == 3


def test_chain_namespace_on_a_plain_table_names_the_table(t: Table) -> None:
    for call in (
        lambda: t.chain.explain(),
        lambda: t.chain.compact(),
        lambda: t.chain.hybrid(),
        lambda: t.chain.create_tag("x"),
    ):
        with pytest.raises(ChainTableError, match="db.t.*chain-table.enabled"):
            call()
