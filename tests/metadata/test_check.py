"""t.maintenance.check: every referenced file of every root of every branch, the damaged roots named, and the newest
intact snapshot of each branch to roll back to (issue 33)."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from pyspark_paimon import cli
from pyspark_paimon.catalog import Catalog
from pyspark_paimon.table import Table


def _table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.c", "id bigint not null, v string", primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(pa.table({"id": pa.array([i], pa.int64()), "v": [f"v{i}"]}))
    return t


def _new_data_file(t: Table, snapshot_id: int) -> str:
    """The data file that snapshot ``snapshot_id`` added."""
    store = t.store
    snapshot = store.snapshots.snapshot(snapshot_id)
    delta = store.manifests.read_entries(store.manifests.read_list(snapshot.delta_manifest_list))
    (entry,) = [e for e in delta if e.kind == 0]
    return f"{store.bucket_path(store.schema(), (), entry.bucket)}/{entry.file.file_name}"


def test_an_intact_table_with_branches_and_tags_checks_clean(catalog: Catalog) -> None:
    t = _table(catalog)
    t.tags.create("t2", snapshot_id=2)
    t.branches.create("b", tag="t2")
    t.on_branch("b").write_arrow(pa.table({"id": pa.array([9], pa.int64()), "v": ["b"]}))
    result = t.maintenance.check()
    assert result.ok and result.damaged == []
    assert result.roots_checked == 3 + 1 + 1 + 1 + 1  # main's snapshots, its tag, b's copied tag and snapshots
    assert result.last_intact == {"main": 3, "b": 3}
    assert result.files_checked > 5


def test_a_missing_data_file_names_the_roots_that_need_it_and_the_snapshot_to_roll_back_to(catalog: Catalog) -> None:
    t = _table(catalog)
    t.tags.create("latest")
    lost = _new_data_file(t, 3)
    os.remove(lost)
    result = t.maintenance.check()
    assert not result.ok
    assert [(d.kind, d.name) for d in result.damaged] == [("snapshot", "3"), ("tag", "latest")]
    assert result.damaged[0].missing == (lost,) and result.damaged[0].missing_count == 1
    assert result.last_intact == {"main": 2}
    assert "snapshot 3 of branch 'main': 1 referenced file(s) missing" in result.damaged[0].describe()

    # The repair the docs describe: roll back to the newest intact snapshot (which deletes the newer tag too).
    t.maintenance.rollback_to(snapshot_id=result.last_intact["main"])
    assert t.maintenance.check().ok
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 1]


def test_a_missing_manifest_list_is_an_unreadable_root(catalog: Catalog) -> None:
    t = _table(catalog)
    snapshot = t.store.snapshots.snapshot(2)
    os.remove(t.store.manifests.path(snapshot.delta_manifest_list))
    result = t.maintenance.check()
    (damaged,) = result.damaged
    assert (damaged.kind, damaged.name) == ("snapshot", "2") and damaged.error is not None
    assert snapshot.delta_manifest_list in damaged.error
    assert result.last_intact == {"main": 3}  # snapshot 3 has its own lists


def test_the_cli_prints_the_damage(catalog: Catalog, capsys: Any) -> None:
    t = _table(catalog)
    assert cli.main(["check", "--table", t.store.table_path]) == 0
    out = capsys.readouterr().out
    assert "4 snapshots and tags" not in out and "intact; newest intact snapshot per branch: 'main': 3" in out
    os.remove(_new_data_file(t, 3))
    assert cli.main(["check", "--table", t.store.table_path, "--json"]) == 0
    out = capsys.readouterr().out
    assert "snapshot 3 of branch 'main'" in out and "1 damaged" in out


def test_a_missing_deletion_vector_index_file_is_found(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.dv",
        "id bigint not null, v string",
        primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    t.write_arrow(pa.table({"id": pa.array(range(100), pa.int64()), "v": ["a"] * 100}))
    t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": ["b"]}))  # a vector marks id 1's old row
    index_dir = f"{t.store.table_path}/index"
    (name,) = os.listdir(index_dir)
    os.remove(f"{index_dir}/{name}")
    result = t.maintenance.check()
    assert result.damaged and result.damaged[-1].missing == (f"{index_dir}/{name}",)
    assert result.last_intact["main"] is not None and result.last_intact["main"] < t.latest_snapshot().id
