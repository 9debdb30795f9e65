"""Rollback to a snapshot or a tag (Java's `RollbackHelper`): LATEST = N, newer snapshots and tags deleted, no data
deleted, and a tag whose snapshot expired re-creates the snapshot and sets EARLIEST."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from maint_helpers import FakeTable, assert_all_roots_intact, data_files_on_disk, manifests_on_disk

from pyspark_paimon.errors import CorruptMetadataError, SnapshotNotFoundError, TagError, TagNotFoundError
from pyspark_paimon.metadata.maintenance.expire import expire_snapshots
from pyspark_paimon.metadata.refs.rollback import rollback_to
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.table import Table


@pytest.fixture
def table(tmp_path: Path) -> FakeTable:
    return FakeTable(tmp_path / "t")


def hint(table: FakeTable, name: str, branch: str = "main") -> str | None:
    path = f"{table.snapshots(branch).snapshot_dir}/{name}"
    return Path(path).read_text() if os.path.exists(path) else None


def test_rollback_to_snapshot(table: FakeTable) -> None:
    snaps = [table.append()[0] for _ in range(5)]
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    t.tags.create("t2", snapshot_id=2)
    t.tags.create("t3", snapshot_id=3)
    t.tags.create("t5", snapshot_id=5)
    files_before, manifests_before = data_files_on_disk(table), manifests_on_disk(table)
    result = t.maintenance.rollback_to(snapshot_id=3)
    assert (result.previous_snapshot_id, result.current_snapshot_id) == (5, 3)
    assert result.deleted_snapshots == [4, 5] and result.deleted_tags == ["t5"]
    assert table.snapshots().list_ids() == [1, 2, 3]
    assert hint(table, "LATEST") == "3"
    assert [x.name for x in t.tags.list()] == ["t2", "t3"]
    # Rollback deletes no data files or manifests: they become orphans.
    assert data_files_on_disk(table) == files_before and manifests_on_disk(table) == manifests_before
    assert table.live_names(t.latest_snapshot()) == table.live_names(snaps[2])
    # The next commit continues from 4.
    s4, _ = table.append()
    assert s4.id == 4 and table.live_names(s4) > table.live_names(snaps[2])
    assert_all_roots_intact(table)


def test_rollback_to_missing_snapshot_fails_and_changes_nothing(table: FakeTable) -> None:
    for _ in range(3):
        table.append()
    with pytest.raises(SnapshotNotFoundError, match="snapshot 7"):
        Table(FileStore(table.store.fileio, table.store.table_path)).maintenance.rollback_to(snapshot_id=7)
    assert table.snapshots().list_ids() == [1, 2, 3]
    with pytest.raises(TagError):
        rollback_to(table.store)
    with pytest.raises(TagError):
        rollback_to(table.store, snapshot_id=1, tag="x")
    with pytest.raises(TagNotFoundError):
        rollback_to(table.store, tag="x")


def test_rollback_to_tag_with_live_snapshot(table: FakeTable) -> None:
    snaps = [table.append()[0] for _ in range(4)]
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    t.tags.create("before_fix", snapshot_id=2)
    t.tags.create("later", snapshot_id=4)
    result = t.maintenance.rollback_to(tag="before_fix")
    assert result.current_snapshot_id == 2 and not result.restored_from_tag
    assert table.snapshots().list_ids() == [1, 2]
    assert [x.name for x in t.tags.list()] == ["before_fix"]
    assert t.latest_snapshot() == snaps[1]


def test_rollback_to_tag_whose_snapshot_expired_restores_it_and_sets_earliest(table: FakeTable) -> None:
    snaps = [table.append()[0] for _ in range(6)]
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    t.tags.create("old", snapshot_id=2, time_retained="1 d")
    t.tags.create("newer", snapshot_id=5)
    expire_snapshots(table.store, retain_min=2, older_than=dt.datetime.now() + dt.timedelta(days=1))
    assert table.snapshots().list_ids() == [5, 6]
    result = t.maintenance.rollback_to(tag="old")
    assert result.restored_from_tag and result.deleted_snapshots == [5, 6] and result.deleted_tags == ["newer"]
    sm = SnapshotManager(table.store.fileio, table.store.table_path)
    assert sm.list_ids() == [2]
    assert hint(table, "EARLIEST") == "2" and hint(table, "LATEST") == "2"
    restored = sm.snapshot(2)
    assert restored == snaps[1]
    assert "tagCreateTime" not in Path(sm.snapshot_path(2)).read_text()  # snapshot fields only
    assert table.live_names(restored) == table.live_names(snaps[1])
    assert_all_roots_intact(table)
    s3, _ = table.append()
    assert s3.id == 3


def test_rollback_on_a_branch_touches_only_that_branch(table: FakeTable) -> None:
    for _ in range(2):
        table.append()
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    t.tags.create("base", snapshot_id=2)
    table.branch_from_tag("b", "base")
    for _ in range(3):
        table.append(branch="b")
    b = Table(FileStore(table.store.fileio, table.store.table_path, "b"))
    b.tags.create("b4", snapshot_id=4)
    result = b.maintenance.rollback_to(snapshot_id=3)
    assert table.snapshots("b").list_ids() == [2, 3]
    assert result.deleted_tags == ["b4"]
    assert table.snapshots().list_ids() == [1, 2]
    assert [x.name for x in t.tags.list()] == ["base"]
    assert_all_roots_intact(table)


def test_rollback_removes_long_lived_changelogs_after_target(table: FakeTable) -> None:
    snaps = [table.append()[0] for _ in range(3)]
    cdir = f"{table.store.table_path}/changelog"
    os.makedirs(cdir)
    for s in snaps:
        Path(f"{cdir}/changelog-{s.id}").write_text(s.to_json())
    Path(f"{cdir}/LATEST").write_text("3")
    rollback_to(table.store, snapshot_id=1)
    assert sorted(os.listdir(cdir)) == ["LATEST", "changelog-1"]
    assert Path(f"{cdir}/LATEST").read_text() == "1"


def test_operations_on_a_missing_branch_name_it(table: FakeTable) -> None:
    from pyspark_paimon.errors import BranchNotFoundError
    from pyspark_paimon.metadata.maintenance.expire import expire_tags as _expire_tags
    from pyspark_paimon.metadata.refs.tags import create_tag

    table.append()
    with pytest.raises(BranchNotFoundError, match="nope"):
        rollback_to(FileStore(table.store.fileio, table.store.table_path, "nope"), snapshot_id=1)
    with pytest.raises(BranchNotFoundError, match="nope"):
        expire_snapshots(FileStore(table.store.fileio, table.store.table_path, "nope"))
    with pytest.raises(BranchNotFoundError, match="nope"):
        _expire_tags(FileStore(table.store.fileio, table.store.table_path, "nope"))
    with pytest.raises(BranchNotFoundError, match="nope"):
        create_tag(FileStore(table.store.fileio, table.store.table_path, "nope"), "t")


def test_rollback_to_a_tag_whose_id_holds_another_commit_is_refused(tmp_path: Path) -> None:
    """A tag brought over from another branch (e.g. by a forced fast-forward) can name an id where this branch
    has a different commit; rolling back there would return other rows than the tag's, so it is refused."""
    import shutil

    import pyarrow as pa

    from pyspark_paimon import Catalog

    t = Catalog(str(tmp_path)).create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    t.branches.create("b")
    b = t.on_branch("b")
    b.write_arrow(pa.table({"id": [2], "v": ["branch"]}))  # branch snapshot 2
    b.tags.create("bt")
    t.write_arrow(pa.table({"id": [3], "v": ["main"]}))  # main snapshot 2: another commit
    t.write_arrow(pa.table({"id": [4], "v": ["main"]}))
    os.makedirs(t.store.branch_root + "/tag", exist_ok=True)
    shutil.copy(b.store.branch_root + "/tag/tag-bt", t.store.branch_root + "/tag/tag-bt")
    before = [s.id for s in t.snapshots()]
    with pytest.raises(TagError, match="different commit"):
        t.maintenance.rollback_to(tag="bt")
    assert [s.id for s in t.snapshots()] == before, "a refused rollback changes nothing"
    assert sorted(t.scan(read_options={"scan.tag-name": "bt"}).to_arrow().column("id").to_pylist()) == [1, 2]


def test_a_corrupt_tag_stops_rollback_before_anything_changes(tmp_path: Path) -> None:
    """Rollback deletes newer snapshots and the tags on them; it reads every tag first, so a corrupt one stops
    it while the branch is untouched (it used to delete the snapshots, then fail on the tags)."""
    table = FakeTable(tmp_path / "t")
    for _ in range(3):
        table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("t3")
    Path(f"{table.store.table_path}/tag/tag-t3").write_bytes(b'{"truncated')
    before = sorted(os.listdir(f"{table.store.table_path}/snapshot"))
    with pytest.raises(CorruptMetadataError, match="tag-t3"):
        rollback_to(table.store, snapshot_id=1)
    assert sorted(os.listdir(f"{table.store.table_path}/snapshot")) == before
