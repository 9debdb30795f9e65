"""The 0.2.0 Python API (issue 25): a small ``Table`` facade, ``Scan``, ``UpdateSchema`` and the namespaces."""

from __future__ import annotations

import inspect
import time
import typing

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import BranchNotFoundError, ChainTableError, OptionError, SchemaError, TagNotFoundError
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.table_chain import Chain
from pyspark_paimon.table_inspect import Inspect
from pyspark_paimon.table_maintenance import Maintenance
from pyspark_paimon.table_refs import Branches, Tags
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


def test_table_has_at_most_28_public_members(t: Table) -> None:
    """Issue 25 capped the facade at 25 members; issue 32 allows ``refresh`` and one JVM write entry point."""
    public = [m for m in dir(t) if not m.startswith("_")]
    assert len(public) <= 28, public
    for gone in ("to_arrow", "new_read", "create_tag", "branch_table", "compact", "add_column", "fileio", "path"):
        assert not hasattr(t, gone), gone
    assert not hasattr(t.branches, "drop")


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


def test_tags_and_branches_are_deleted_alike(t: Table) -> None:
    t.tags.create("x")
    t.branches.create("b")
    for refs, name, missing in ((t.tags, "x", TagNotFoundError), (t.branches, "b", BranchNotFoundError)):
        result = refs.delete(name)
        assert result and result.deleted == [name] and not result.dry_run
        gone = refs.delete(name, ignore_if_not_exists=True)
        assert not gone and gone.deleted == [] and type(gone) is type(result)
        with pytest.raises(missing):
            refs.delete(name)
    assert t.tags.list() == [] and t.branches.list() == []


def test_deleting_a_branch_reclaims_the_files_only_it_kept(t: Table) -> None:
    t.branches.create("b")
    t.on_branch("b").write_arrow(pa.table({"id": [9], "dt": ["z"], "v": ["b"]}))
    t.branches.create("c")
    t.on_branch("c").write_arrow(pa.table({"id": [8], "dt": ["z"], "v": ["c"]}))
    kept = t.branches.delete("b", clean_files=False)  # Paimon's delete_branch: metadata only
    assert kept.deleted == ["b"] and kept.deleted_data_files == []
    cleaned = t.branches.delete("c")
    assert len(cleaned.deleted_data_files) == 1 and cleaned.deleted_data_files[0].endswith(".parquet")
    assert t.scan().to_arrow().num_rows == 5, "main's files stay"


def test_expirations_of_tags_and_branches_report_alike(t: Table) -> None:
    t.tags.create("old", time_retained="1 ms")
    t.branches.create("old", time_retained="1 ms")
    time.sleep(0.01)
    would = [t.tags.expire(dry_run=True), t.branches.expire(dry_run=True)]
    assert [(r.kind, r.deleted, r.dry_run) for r in would] == [("tag", ["old"], True), ("branch", ["old"], True)]
    assert [tag.name for tag in t.tags.list()] == ["old"] and [b.name for b in t.branches.list()] == ["old"]
    done = [t.tags.expire(), t.branches.expire()]
    assert type(done[0]) is type(done[1]) and [r.deleted for r in done] == [["old"], ["old"]]
    assert t.tags.list() == [] and t.branches.list() == []


def test_tags_and_branches_share_one_rule_for_the_snapshot_at_a_time(t: Table) -> None:
    between = t.snapshot(1).time_millis + (t.snapshot(2).time_millis - t.snapshot(1).time_millis) // 2
    if between == t.snapshot(1).time_millis:  # both commits in one millisecond: no instant lies between them
        between = t.snapshot(2).time_millis - 1
        assert between >= t.snapshot(1).time_millis
    tag = t.tags.create("as_of", timestamp=between)
    branch = t.branches.create("as_of", timestamp=between)
    assert tag.snapshot_id == branch.source_snapshot_id == 1, "the table as of the instant, as a scan reads it"
    assert t.scan(timestamp=between).to_arrow().num_rows == 3
    after = t.tags.create("after", timestamp=between, timestamp_rule="first-at-or-after")
    assert after.snapshot_id == 2
    branch = t.branches.create("after", timestamp=between, timestamp_rule="first-at-or-after")
    assert branch.source_snapshot_id == 2


def test_every_mutating_call_names_the_snapshot_it_committed(t: Table) -> None:
    written = t.write_arrow(pa.table({"id": [6, 7], "dt": ["c", "d"], "v": ["p", "q"]}))
    assert written.snapshot_id == 3 and (written.files_added, written.rows_written, written.partitions) == (2, 2, 2)
    nothing = t.write_arrow(pa.table({"id": pa.array([], pa.int64()), "dt": pa.array([], pa.string()), "v": []}))
    assert not nothing and nothing.snapshot_id is None and nothing.files_added == 0
    deleted = t.delete("id = 7")
    assert deleted.snapshot_id == 4 and deleted.deleted == 1
    updated = t.update({"v": "'w'"}, "id = 6")
    assert updated.snapshot_id == 5 and updated.updated == 1
    none = t.delete("id = 99")
    assert not none and none.snapshot_id is None and none.deleted == 0
    merged = t.merge(pa.table({"id": [1], "dt": ["a"], "v": ["m"]}), on=["id", "dt"])
    result = merged.when_matched_update_all().execute()
    assert result.snapshot_id == 6 and result.updated == 1
    compacted = t.maintenance.compact(full=True)
    assert compacted.snapshot_id == 7 and t.snapshot(7).commit_kind == "COMPACT"
    assert t.latest_snapshot().id == 7  # type: ignore[union-attr]


def test_refresh_returns_a_new_table_and_changes_none(t: Table) -> None:
    store = t.store
    fresh = t.refresh()
    assert fresh is not t and fresh.store is not store and t.store is store
    assert (fresh.identifier, fresh.branch, fresh.uri) == (t.identifier, t.branch, t.uri)
    t.branches.create("b")
    t.on_branch("b").write_arrow(pa.table({"id": [9], "dt": ["z"], "v": ["b"]}))
    t.branches.fast_forward("b")
    assert t.store is store, "a publish leaves the Table as it was"
    assert t.refresh().scan().to_arrow().num_rows == 6


def test_storage_options_are_one_mapping(t: Table, catalog: Catalog) -> None:
    opened = Table.open(t.uri, storage_options={})
    assert opened.scan().to_arrow().num_rows == 5
    with pytest.raises(TypeError):
        Table.open(t.uri, key="k")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Catalog(catalog.warehouse, key="k")  # type: ignore[call-arg]
    assert Catalog(catalog.warehouse, storage_options={}).get_table("db.t").scan().to_arrow().num_rows == 5


_TYPED = {
    "timestamp": "Instant | None",
    "older_than": "Instant | None",
    "time_retained": "Duration | None",
    "offset": "Duration | None",
    "timestamp_rule": "TimestampRule",
    "on_conflict": "OnConflict",
    "mode": "WriteMode",
}


def test_instants_durations_and_closed_sets_are_typed_one_way() -> None:
    """Every API parameter taking an instant, a duration or a closed set of strings names its alias
    (pyspark_paimon/api_types.py), which the package exports."""
    import pyspark_paimon
    from pyspark_paimon import api_types

    classes = [Table, Catalog, Tags, Branches, Maintenance, Chain, Inspect]
    seen = set()
    for cls in classes:
        for name, member in vars(cls).items():
            func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if name.startswith("_") or not callable(func):
                continue
            for param in inspect.signature(func).parameters.values():
                if param.name in _TYPED:
                    assert param.annotation == _TYPED[param.name], f"{cls.__name__}.{name}({param.name})"
                    seen.add(param.name)
                assert param.annotation not in ("Any", "object") or param.name in ("spark", "source"), (
                    f"{cls.__name__}.{name}({param.name}: {param.annotation})"
                )
    assert seen == set(_TYPED)
    for alias in api_types.__all__:
        assert getattr(pyspark_paimon, alias) is getattr(api_types, alias)
    assert typing.get_args(api_types.TimestampRule) == ("first-at-or-after", "last-at-or-before")
    assert typing.get_args(api_types.OnConflict) == ("fail", "source", "target")


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
