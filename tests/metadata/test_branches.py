"""Branches through the Python API (Java's `Identifier`, `FileSystemBranchManager`): creation in Paimon's on-disk
shapes, the lineage file, reads/writes/evolution/tags per branch, rename/drop, safe fast-forward and replace-main with a
concurrent reader, fallback-branch reads, garbage collection across branches, and interop with pypaimon and
pypaimon-rust."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import (
    BranchConflictError,
    BranchError,
    BranchNotFoundError,
    SchemaError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.lineage import LINEAGE_FILE
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager, now_millis
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf
from tests.engine_read import read_arrow as engine_read_arrow
from tests.interop.helpers import OracleBatch

try:
    from tests import oracle
except ImportError:  # pragma: no cover - plain pytest layout
    import oracle  # type: ignore[no-redef]

SCHEMA = "id bigint, dt string, amount bigint"


def rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def batch(ids: list[int], dt: str, amounts: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "amount": pa.array(amounts, pa.int64())})


def files_under(path: str) -> dict[str, bytes]:
    out = {}
    for root, _, names in os.walk(path):
        for n in names:
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """``orders``: three appends (snapshots 1..3) and tag ``t2`` on snapshot 2."""
    t = catalog.create_table("default.orders", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([1, 2], "a", [10, 20]))
    t.write_arrow(batch([3], "b", [30]))
    t.tags.create("t2")
    t.write_arrow(batch([4], "c", [40]))
    return t


# ---------------------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    "name, match",
    [
        ("", "blank"),
        ("  ", "blank"),
        ("main", "default branch"),
        ("123", "numeric"),
        ("a.b", "'.'"),
        ("a$b", r"'\$'"),
        ("a/b", "'/'"),
    ],
)
def test_branch_names_are_validated(table: Table, name: str, match: str) -> None:
    with pytest.raises(BranchError, match=match):
        table.branches.create(name, empty=True)
    with pytest.raises(BranchError, match=match):
        table.branches.delete(name)


# ---------------------------------------------------------------------------------------- create
def test_create_from_tag_has_paimons_layout_plus_lineage(table: Table) -> None:
    info = table.branches.create("fix", tag="t2")
    root = f"{table.store.table_path}/branch/branch-fix"
    layout = sorted(files_under(root))
    assert layout == [LINEAGE_FILE, "schema/schema-0", "snapshot/snapshot-2", "tag/tag-t2"], "no LATEST hint"
    with (
        open(f"{table.store.table_path}/snapshot/snapshot-2", "rb") as a,
        open(f"{root}/snapshot/snapshot-2", "rb") as b,
    ):
        assert a.read() == b.read(), "the snapshot is copied byte for byte"
    with open(f"{table.store.table_path}/tag/tag-t2", "rb") as a, open(f"{root}/tag/tag-t2", "rb") as b:
        assert a.read() == b.read()
    lineage = json.loads(Path(root, LINEAGE_FILE).read_text())
    assert lineage["sourceBranch"] == "main" and lineage["sourceTag"] == "t2" and lineage["sourceSnapshotId"] == 2
    assert lineage["sourceSnapshotUuid"] == table.snapshot(2).uuid
    assert (info.name, info.source_tag, info.source_snapshot_id, info.latest_snapshot_id) == ("fix", "t2", 2, 2)
    assert rows(table.on_branch("fix").scan().to_arrow()) == [(1, "a", 10), (2, "a", 20), (3, "b", 30)]


def test_create_from_tag_whose_snapshot_expired_uses_the_tag(table: Table) -> None:
    """Paimon #8748: the tagged snapshot is gone, the tag (with retention keys) is rewritten as a snapshot."""
    table.tags.create("kept", snapshot_id=1, time_retained="1 d")
    os.remove(f"{table.store.table_path}/snapshot/snapshot-1")
    table.branches.create("old", tag="kept")
    text = Path(table.store.table_path, "branch/branch-old/snapshot/snapshot-1").read_text()
    d = json.loads(text)
    assert d["id"] == 1 and "tagCreateTime" not in d and "tagTimeRetained" not in d
    assert "tagTimeRetained" in Path(table.store.table_path, "branch/branch-old/tag/tag-kept").read_text()
    assert rows(table.on_branch("old").scan().to_arrow()) == [(1, "a", 10), (2, "a", 20)]


def test_create_from_snapshot_latest_and_empty(table: Table) -> None:
    table.update_schema().add_column("note", "string").commit()  # schema 1, no commit since
    table.branches.create("exp", snapshot_id=1)
    table.branches.create("lat")
    table.branches.create("delta", empty=True)
    base = f"{table.store.table_path}/branch"
    assert sorted(files_under(f"{base}/branch-exp")) == [LINEAGE_FILE, "schema/schema-0", "snapshot/snapshot-1"]
    assert sorted(files_under(f"{base}/branch-lat")) == [
        LINEAGE_FILE,
        "schema/schema-0",
        "schema/schema-1",
        "snapshot/snapshot-3",
    ]
    assert sorted(files_under(f"{base}/branch-delta")) == [LINEAGE_FILE, "schema/schema-0", "schema/schema-1"]
    assert rows(table.on_branch("exp").scan().to_arrow()) == [(1, "a", 10), (2, "a", 20)]
    lat = table.on_branch("lat")
    assert lat.schema.field_names == ["id", "dt", "amount", "note"], "from latest = the table as it is now"
    assert len(lat.scan().to_arrow()) == 4
    delta = table.on_branch("delta")
    assert delta.scan().to_arrow().num_rows == 0 and delta.schema.field_names == ["id", "dt", "amount", "note"]
    snap = delta.write_arrow(pa.table({"id": [9], "dt": ["z"], "amount": [9], "note": ["n"]}))
    assert snap.snapshot_id == 1, "an empty branch starts at snapshot 1, as in Paimon"
    infos = {b.name: b for b in table.branches.list()}
    assert infos["delta"].source_snapshot_id is None and infos["lat"].source_snapshot_id == 3
    assert infos["exp"].latest_snapshot_id == 1 and infos["delta"].latest_snapshot_id == 1


def test_create_from_expired_snapshot_preserved_by_tag(table: Table) -> None:
    os.remove(f"{table.store.table_path}/snapshot/snapshot-2")
    table.branches.create("b", snapshot_id=2)  # tag t2 preserved it
    assert json.loads(Path(table.store.table_path, "branch/branch-b/snapshot/snapshot-2").read_text())["id"] == 2
    os.remove(f"{table.store.table_path}/snapshot/snapshot-1")
    with pytest.raises(SnapshotNotFoundError):
        table.branches.create("c", snapshot_id=1)
    assert not os.path.exists(f"{table.store.table_path}/branch/branch-c")


def test_create_errors(table: Table) -> None:
    table.branches.create("b", tag="t2")
    with pytest.raises(BranchError, match="already exists"):
        table.branches.create("b", empty=True)
    assert table.branches.create("b", ignore_if_exists=True, empty=True).source_tag == "t2"
    with pytest.raises(BranchError, match="at most one"):
        table.branches.create("c", tag="t2", snapshot_id=1)
    with pytest.raises(TagNotFoundError, match="nope"):
        table.branches.create("c", tag="nope")
    assert not os.path.exists(f"{table.store.table_path}/branch/branch-c")
    with pytest.raises(BranchError, match="from itself"):
        table.on_branch("b").branches.create("b", empty=True)


def test_branch_from_a_branch_tag(table: Table) -> None:
    table.branches.create("x", tag="t2")
    x = table.on_branch("x")
    x.write_arrow(batch([5], "x", [50]))
    x.tags.create("tx")
    info = x.branches.create("y", tag="tx")
    assert (info.source_branch, info.source_snapshot_id) == ("x", 3)
    assert rows(table.on_branch("y").scan().to_arrow()) == rows(x.scan().to_arrow())


# ---------------------------------------------------------------------------------------- use
def test_branch_writes_continue_ids_and_share_the_table_root(table: Table) -> None:
    table.branches.create("fix", tag="t2")
    fix = table.on_branch("fix")
    before = set(os.listdir(f"{table.store.table_path}/manifest"))
    snap = fix.write_arrow(batch([7], "d", [70]))
    assert snap.snapshot_id == 3, "continues from the fork snapshot 2"
    root = f"{table.store.table_path}/branch/branch-fix"
    assert not os.path.exists(f"{root}/manifest") and not os.path.exists(f"{root}/dt=d")
    assert set(os.listdir(f"{table.store.table_path}/manifest")) > before, "manifests go to the shared root"
    assert os.listdir(f"{table.store.table_path}/dt=d/bucket-0"), "data files go to the shared root"
    assert rows(fix.scan().to_arrow()) == [(1, "a", 10), (2, "a", 20), (3, "b", 30), (7, "d", 70)]
    assert len(table.scan().to_arrow()) == 4 and table.latest_snapshot().id == 3, "main is untouched"
    assert SnapshotManager(table.store.fileio, table.store.table_path, "fix").snapshot(3).uuid != table.snapshot(3).uuid


def test_tags_and_time_travel_inside_a_branch(table: Table) -> None:
    table.branches.create("fix", tag="t2")
    fix = table.on_branch("fix")
    fix.write_arrow(batch([7], "d", [70]))
    fix.tags.create("t_fix")
    fix.write_arrow(batch([8], "d", [80]))
    assert [t.name for t in fix.tags.list()] == ["t2", "t_fix"]
    assert "t_fix" not in [t.name for t in table.tags.list()], "tags are per branch"
    assert len(fix.scan(read_options={"scan.tag-name": "t_fix"}).to_arrow()) == 4
    assert len(fix.scan(read_options={"scan.tag-name": "t2"}).to_arrow()) == 3, (
        "the source tag is copied into the branch"
    )
    assert len(fix.scan(read_options={"scan.snapshot-id": "4"}).to_arrow()) == 5
    assert len(table.scan(read_options={"scan.snapshot-id": "3"}).to_arrow()) == 4, (
        "main's snapshot 3 is another commit"
    )
    assert len(table.scan(read_options={"branch": "fix", "scan.version": "t_fix"}).to_arrow()) == 4
    with pytest.raises(TagNotFoundError):
        table.scan(read_options={"scan.tag-name": "t_fix"}).to_arrow()


def test_schema_evolution_on_a_branch_only(catalog: Catalog, table: Table) -> None:
    table.branches.create("fix", tag="t2")
    fix = catalog.get_table("default.orders$branch_fix")
    fix.update_schema().add_column("note", "string").commit()
    fix.write_arrow(pa.table({"id": [7], "dt": ["d"], "amount": [70], "note": ["hi"]}))
    assert table.schema.field_names == ["id", "dt", "amount"] and table.schema.id == 0
    out = fix.scan().to_arrow()
    assert out.column_names == ["id", "dt", "amount", "note"]
    assert sorted(out.column("note").to_pylist(), key=str) == [None, None, None, "hi"]
    assert fix.scan(read_options={"scan.tag-name": "t2"}).to_arrow().column_names == ["id", "dt", "amount"]


# ---------------------------------------------------------------------------------------- list/rename/drop
def test_list_branches_includes_foreign_ones(table: Table) -> None:
    table.branches.create("b", tag="t2")
    os.makedirs(
        f"{table.store.table_path}/branch/branch-foreign/schema"
    )  # as Paimon writes an empty branch, no lineage
    with open(f"{table.store.table_path}/branch/branch-foreign/schema/schema-0", "wb") as f:
        f.write(Path(table.store.table_path, "schema/schema-0").read_bytes())
    infos = BranchManager(table.store).list_branches()
    assert [i.name for i in infos] == ["b", "foreign"]
    foreign = infos[1]
    assert not foreign.has_lineage and foreign.source_branch is None
    assert abs(foreign.create_time_millis - now_millis()) < 60_000, "directory mtime without lineage"
    assert infos[0].has_lineage and infos[0].create_time_millis <= now_millis()


def test_rename_and_drop(table: Table) -> None:
    table.branches.create("x", tag="t2")
    table.on_branch("x").write_arrow(batch([5], "x", [50]))
    table.on_branch("x").tags.create("tx")
    table.on_branch("x").branches.create("y", tag="tx")
    info = table.branches.rename("x", "x2")
    assert info.name == "x2" and info.source_tag == "t2"
    assert [b.name for b in table.branches.list()] == ["x2", "y"]
    assert BranchManager(table.store).lineage("y").source_branch == "x2", "lineage follows"
    assert len(table.on_branch("x2").scan().to_arrow()) == 4
    with pytest.raises(BranchNotFoundError):
        table.on_branch("x")
    with pytest.raises(BranchError, match="already exists"):
        table.branches.rename("x2", "y")
    with pytest.raises(BranchError, match="default branch"):
        table.branches.rename("main", "z")
    data_before = {p for p in files_under(table.store.table_path) if "/bucket-" in p}
    assert table.branches.delete("x2").deleted == ["x2"]
    assert not os.path.exists(f"{table.store.table_path}/branch/branch-x2")
    assert {p for p in files_under(table.store.table_path) if "/bucket-" in p} == data_before, (
        "data is left to orphan removal"
    )
    with pytest.raises(BranchNotFoundError):
        table.branches.delete("x2")
    assert not table.branches.delete("x2", ignore_if_not_exists=True)
    assert len(table.on_branch("y").scan().to_arrow()) == 4, "a branch does not depend on its source branch"


def test_drop_refuses_a_branch_another_branch_reads_from(table: Table) -> None:
    table.branches.create("backfill", tag="t2")
    table.update_schema().set_options({"scan.fallback-branch": "backfill"}).commit()
    with pytest.raises(BranchError, match="scan.fallback-branch"):
        table.branches.delete("backfill")
    with pytest.raises(BranchError, match="scan.fallback-branch"):
        table.branches.rename("backfill", "bf")
    table.update_schema().remove_options(["scan.fallback-branch"]).commit()
    table.branches.delete("backfill")


# ---------------------------------------------------------------------------------------- fast-forward
def test_fast_forward_when_main_did_not_move(table: Table) -> None:
    table.branches.create("dev")
    dev = table.on_branch("dev")
    dev.write_arrow(batch([5], "e", [50]))
    dev.tags.create("t_dev")
    dev.update_schema().add_column("note", "string").commit()
    dev.write_arrow(pa.table({"id": [6], "dt": ["e"], "amount": [60], "note": ["x"]}))
    result = table.branches.fast_forward("dev")
    assert result.discarded == [] and result.created_snapshots == [4, 5] and result.replaced_snapshots == []
    assert result.copied_schemas == [1] and "t_dev" in result.copied_tags and result.latest_id == 5
    assert table.latest_snapshot().id == 5 and Path(table.store.table_path, "snapshot/LATEST").read_text() == "5"
    assert rows(table.scan().to_arrow()) == rows(dev.scan().to_arrow())
    assert table.schema.field_names == ["id", "dt", "amount", "note"]
    for sid in (4, 5):
        assert (
            Path(table.store.table_path, f"snapshot/snapshot-{sid}").read_bytes()
            == Path(table.store.table_path, f"branch/branch-dev/snapshot/snapshot-{sid}").read_bytes()
        )
    assert sorted(t.name for t in table.tags.list()) == ["t2", "t_dev"]
    # The branch goes on; main has not moved: a second fast-forward is safe again.
    dev.write_arrow(pa.table({"id": [7], "dt": ["e"], "amount": [70], "note": ["y"]}))
    assert table.branches.fast_forward("dev").created_snapshots == [6]
    # Main goes on: main's snapshot 7 is not in dev.
    table.write_arrow(pa.table({"id": [8], "dt": ["m"], "amount": [80], "note": ["m"]}))
    dev.write_arrow(pa.table({"id": [9], "dt": ["e"], "amount": [90], "note": ["z"]}))
    with pytest.raises(BranchConflictError, match="snapshot 7"):
        table.branches.fast_forward("dev")


def test_fast_forward_refuses_when_main_moved_on_and_changes_nothing(table: Table) -> None:
    table.branches.create("fix", tag="t2")
    table.on_branch("fix").write_arrow(batch([3], "b", [33]))
    before = files_under(table.store.table_path)
    with pytest.raises(BranchConflictError) as err:
        table.branches.fast_forward("fix")
    msg = str(err.value)
    assert "snapshot 3 (APPEND" in msg and "force=True" in msg
    assert files_under(table.store.table_path) == before, "a refused fast-forward writes nothing"


@pytest.mark.parametrize(
    "change, match",
    [
        ("schema", "schema 1 of 'main' was added after the fork"),
        ("tag", "tag 'late' .* is on a commit that is not in branch"),
        ("tag_name", "tag 'same' .* would be moved"),
        ("rollback", "older than the fork point"),
    ],
)
def test_fast_forward_refusals(table: Table, change: str, match: str) -> None:
    table.branches.create("fix")
    fix = table.on_branch("fix")
    fix.write_arrow(batch([9], "f", [90]))
    if change == "schema":
        table.update_schema().add_column("extra", "int").commit()
    elif change == "tag":
        table.write_arrow(batch([5], "g", [1]))
        table.tags.create("late")
        os.remove(f"{table.store.table_path}/snapshot/snapshot-4")  # expired, but the tag keeps it
    elif change == "tag_name":
        table.tags.create("same", snapshot_id=1)
        fix.tags.create("same")
    elif change == "rollback":
        table.maintenance.rollback_to(snapshot_id=2)
    with pytest.raises(BranchConflictError, match=match):
        table.branches.fast_forward("fix")
    assert table.branches.fast_forward("fix", force=True).discarded
    assert rows(table.scan().to_arrow()) == rows(fix.scan().to_arrow())


def test_fast_forward_an_empty_branch(table: Table) -> None:
    table.branches.create("fresh", empty=True)
    with pytest.raises(BranchError, match="no snapshot"):
        table.branches.fast_forward("fresh")
    table.on_branch("fresh").write_arrow(batch([100], "n", [1]))
    with pytest.raises(BranchConflictError, match="snapshot 1 "):
        table.branches.fast_forward("fresh")
    result = table.branches.fast_forward("fresh", force=True)
    assert result.deleted_snapshots == [2, 3] and result.replaced_snapshots == [1]
    assert rows(table.scan().to_arrow()) == [(100, "n", 1)]
    assert SnapshotManager(table.store.fileio, table.store.table_path).list_ids() == [1]
    assert [t.name for t in table.tags.list()] == [], "main's tag on a discarded commit is dropped (force)"


def test_fast_forward_is_paimons_on_disk_result(table: Table) -> None:
    """Same files as Paimon's fast-forward: main < E kept, main >= E = the branch's, LATEST = head."""
    table.branches.create("fix", tag="t2")
    fix = table.on_branch("fix")
    fix.write_arrow(batch([3], "b", [33]))
    fix.write_arrow(batch([4], "c", [44]))
    fix.write_arrow(batch([5], "c", [55]))
    table.branches.fast_forward("fix", force=True)
    ids = SnapshotManager(table.store.fileio, table.store.table_path).list_ids()
    assert ids == [1, 2, 3, 4, 5]
    for sid in (2, 3, 4, 5):
        assert (
            Path(table.store.table_path, f"snapshot/snapshot-{sid}").read_bytes()
            == Path(table.store.table_path, f"branch/branch-fix/snapshot/snapshot-{sid}").read_bytes()
        )
    assert Path(table.store.table_path, "snapshot/LATEST").read_text() == "5"
    assert sorted(os.listdir(f"{table.store.table_path}/tag")) == ["tag-t2"]


def test_fast_forward_from_a_branch_of_a_branch_follows_lineage(table: Table) -> None:
    table.branches.create("x")
    x = table.on_branch("x")
    x.write_arrow(batch([5], "x", [50]))
    x.branches.create("y")
    y = table.on_branch("y")
    y.write_arrow(batch([6], "y", [60]))
    # main is at 3; y holds 4 (x's, verified through x's lineage) and 5: safe.
    result = table.branches.fast_forward("y")
    assert result.discarded == [] and result.created_snapshots == [4, 5]
    assert rows(table.scan().to_arrow()) == rows(y.scan().to_arrow())


# ---------------------------------------------------------------------------------------- replace main
def test_replace_main_keeping_the_previous_main(table: Table) -> None:
    table.tags.create("t3")
    table.branches.create("fix", tag="t2")
    fix = table.on_branch("fix")
    fix.write_arrow(batch([3], "b", [33]))
    old_rows = rows(table.scan().to_arrow())
    result = table.branches.replace_main("fix", keep_previous_as="old_main")
    assert result.kept_previous_as == "old_main" and "tag 't3'" in result.discarded
    assert rows(table.scan().to_arrow()) == rows(fix.scan().to_arrow())
    assert SnapshotManager(table.store.fileio, table.store.table_path).list_ids() == [2, 3], "main = exactly the branch"
    assert sorted(os.listdir(f"{table.store.table_path}/tag")) == ["tag-t2"]
    old = table.on_branch("old_main")
    assert rows(old.scan().to_arrow()) == old_rows
    assert SnapshotManager(table.store.fileio, table.store.table_path, "old_main").list_ids() == [1, 2, 3]
    assert [t.name for t in old.tags.list()] == ["t2", "t3"]
    assert len(old.scan(read_options={"scan.snapshot-id": "1"}).to_arrow()) == 2
    info = {b.name: b for b in table.branches.list()}["old_main"]
    assert (info.source_branch, info.source_snapshot_id) == ("main", 3)
    # Main goes on from the branch's head; and the old main can be brought back.
    assert table.write_arrow(batch([9], "z", [9])).snapshot_id == 4
    with pytest.raises(BranchConflictError):
        table.branches.fast_forward("old_main")
    table.branches.replace_main("old_main")
    assert rows(table.scan().to_arrow()) == old_rows


def test_replace_main_without_keeping(table: Table) -> None:
    table.branches.create("fresh", empty=True)
    table.on_branch("fresh").write_arrow(batch([1], "n", [1]))
    with pytest.raises(BranchError, match="already exists"):
        table.branches.replace_main("fresh", keep_previous_as="fresh")
    result = table.branches.replace_main("fresh")
    assert result.kept_previous_as is None and result.deleted_snapshots == [2, 3]
    assert rows(table.scan().to_arrow()) == [(1, "n", 1)]
    assert [b.name for b in table.branches.list()] == ["fresh"]


# ---------------------------------------------------------------------------------------- concurrent reader
class SlowFileIO(FileIO):
    """Stretches every metadata write of the publish so a reader thread interleaves many reads with it."""

    def __init__(self, delay: float) -> None:
        super().__init__("file")
        self.delay = delay

    def write_bytes(self, path: str, data: bytes) -> None:
        time.sleep(self.delay)
        super().write_bytes(path, data)

    def try_create(self, path: str, data: bytes) -> bool:
        time.sleep(self.delay)
        return super().try_create(path, data)

    def delete(self, path: str) -> bool:
        time.sleep(self.delay)
        return super().delete(path)


def publish_while_reading(table: Table, publish: Any, old: list[tuple], new: list[tuple]) -> int:
    """Run ``publish()`` while a thread keeps reading main; every read must be exactly old or new. Returns how
    many reads ran entirely while the publish did (started after it began, finished before it returned): the
    reads that could have seen a half-published state."""
    seen: list[list[tuple]] = []
    during = 0
    errors: list[BaseException] = []
    stop = threading.Event()
    publishing = threading.Event()  # set while publish() runs
    published = threading.Event()  # set once publish() returned

    def reader() -> None:
        nonlocal during
        while not stop.is_set():
            started = publishing.is_set() and not published.is_set()
            try:
                seen.append(rows(Table(FileStore(FileIO("file"), table.store.table_path)).scan().to_arrow()))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return
            if started and not published.is_set():
                during += 1

    th = threading.Thread(target=reader)
    th.start()
    try:
        time.sleep(0.05)
        publishing.set()
        try:
            publish()
        finally:
            published.set()
        time.sleep(0.05)
    finally:
        stop.set()
        th.join()
    assert not errors, errors
    mixed = [s for s in seen if s != old and s != new]
    assert not mixed, f"a reader saw a state that is neither old nor new: {mixed[0]}"
    assert seen[0] == old and seen[-1] == new
    return during


@pytest.mark.parametrize("fix_commits", [3, 2, 1], ids=["branch-longer", "same-length", "branch-shorter"])
def test_data_correction_workflow(catalog: Catalog, fix_commits: int) -> None:
    """Main is fed by batches, one is bad; a branch from the tag before it gets the corrected data and the
    later good batch, is fast-forwarded into main; a concurrent reader of main only ever sees the old or the
    corrected table."""
    t = catalog.create_table(
        "default.sales", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    t.write_arrow(batch([1, 2, 3], "d1", [10, 20, 30]))
    t.write_arrow(batch([1, 2], "d2", [11, 21]))
    t.tags.create("before_bad")
    t.write_arrow(batch([1, 2, 3], "d3", [-999, -999, -999]))  # the bad batch
    t.write_arrow(batch([1], "d4", [14]))
    old = rows(t.scan().to_arrow())

    t.branches.create("fix", tag="before_bad")
    fix = t.on_branch("fix")
    if fix_commits == 1:
        fix.write_arrow(pa.concat_tables([batch([1, 2, 3], "d3", [13, 23, 33]), batch([1], "d4", [14])]))
    else:
        fix.write_arrow(batch([1, 2, 3], "d3", [13, 23, 33]))
        fix.write_arrow(batch([1], "d4", [14]))
        if fix_commits == 3:
            fix.write_arrow(batch([2], "d1", [20]))  # an idempotent re-statement: same rows
    new = rows(fix.scan().to_arrow())
    assert new != old and (1, "d3", 13) in new

    with pytest.raises(BranchConflictError) as err:
        t.branches.fast_forward("fix")
    assert "snapshot 3" in str(err.value) and "snapshot 4" in str(err.value)
    assert rows(t.scan().to_arrow()) == old

    manager = BranchManager(FileStore(SlowFileIO(0.05), t.store.table_path))
    during = publish_while_reading(t, lambda: manager.fast_forward("fix", force=True), old, new)
    assert during >= 5, f"only {during} read(s) ran while the publish did"
    head = 2 + fix_commits
    assert SnapshotManager(t.store.fileio, t.store.table_path).list_ids() == list(range(1, head + 1))
    assert Path(t.store.table_path, "snapshot/LATEST").read_text() == str(head)
    assert rows(t.scan().to_arrow()) == new
    assert rows(t.scan(read_options={"scan.tag-name": "before_bad"}).to_arrow()) == rows(
        fix.scan(read_options={"scan.tag-name": "before_bad"}).to_arrow()
    )
    assert t.write_arrow(batch([5], "d5", [15])).snapshot_id == head + 1, "main goes on after the published head"


def test_safe_fast_forward_with_a_concurrent_reader(table: Table) -> None:
    table.branches.create("dev")
    dev = table.on_branch("dev")
    for i in range(4):
        dev.write_arrow(batch([10 + i], "e", [i]))
    old, new = rows(table.scan().to_arrow()), rows(dev.scan().to_arrow())
    manager = BranchManager(FileStore(SlowFileIO(0.03), table.store.table_path))
    during = publish_while_reading(table, lambda: manager.fast_forward("dev"), old, new)
    assert during >= 5, f"only {during} read(s) ran while the publish did"


def test_replace_main_with_a_concurrent_reader(table: Table) -> None:
    table.branches.create("fresh", empty=True)
    table.on_branch("fresh").write_arrow(batch([1], "n", [1]))
    old, new = rows(table.scan().to_arrow()), [(1, "n", 1)]
    manager = BranchManager(FileStore(SlowFileIO(0.03), table.store.table_path))
    during = publish_while_reading(table, lambda: manager.replace_main("fresh", keep_previous_as="prev"), old, new)
    assert during >= 5, f"only {during} read(s) ran while the publish did"


def test_a_commit_racing_the_publish_is_kept(table: Table) -> None:
    """A commit that takes main's next id first makes the publish undo itself; main keeps that commit."""
    table.branches.create("dev")
    dev = table.on_branch("dev")
    dev.write_arrow(batch([10], "e", [1]))
    dev.write_arrow(batch([11], "e", [2]))

    class Racing(FileIO):
        def try_create(self, path: str, data: bytes) -> bool:
            if path.endswith("/snapshot/snapshot-4") and "/branch/" not in path:
                table.write_arrow(batch([99], "w", [99]))  # the writer wins snapshot 4
            return super().try_create(path, data)

    with pytest.raises(BranchError, match="snapshot 4 .* landed on .main.. Nothing was published"):
        BranchManager(FileStore(Racing("file"), table.store.table_path)).fast_forward("dev")
    assert SnapshotManager(table.store.fileio, table.store.table_path).list_ids() == [1, 2, 3, 4]
    assert (99, "w", 99) in rows(table.scan().to_arrow()) and len(table.scan().to_arrow()) == 5


def test_latest_rechecks_after_reading_a_reused_snapshot_id(table: Table) -> None:
    """The publish switches main from head 3 to 4 and then rewrites snapshot-3 with the branch's commit. A
    reader that resolved 3 before the switch but reads the file after the rewrite must not return it."""
    branch_commit = table.snapshot(2).with_changes(id=3, uuid="branch-commit")
    head = table.snapshot(2).with_changes(id=4, uuid="new-head")
    path3 = SnapshotManager(table.store.fileio, table.store.table_path).snapshot_path(3)

    class Switching(FileIO):
        fired = False

        def read_bytes(self, path: str) -> bytes:
            if path == path3 and not Switching.fired:
                Switching.fired = True
                FileIO("file").try_create(path3.replace("snapshot-3", "snapshot-4"), head.to_json().encode())
                FileIO("file").write_bytes(path3, branch_commit.to_json().encode())
            return super().read_bytes(path)

    latest = SnapshotManager(Switching("file"), table.store.table_path).latest()
    assert Switching.fired and latest is not None and latest.uuid == "new-head"


# ---------------------------------------------------------------------------------------- fallback reads
@pytest.fixture
def fallback_table(catalog: Catalog) -> Table:
    """main has dt=2 (fresh); branch ``backfill`` has dt=1 and an outdated dt=2."""
    t = catalog.create_table(
        "default.fb", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "1"}
    )
    t.branches.create("backfill", empty=True)
    bf = t.on_branch("backfill")
    bf.write_arrow(pa.concat_tables([batch([1, 2], "1", [10, 20]), batch([1], "2", [-1])]))
    t.write_arrow(batch([1, 3], "2", [200, 300]))
    return t


def test_fallback_branch_reads_missing_partitions(fallback_table: Table) -> None:
    t = fallback_table
    assert rows(t.scan().to_arrow()) == [(1, "2", 200), (3, "2", 300)], "no option: main only"
    expected = [(1, "1", 10), (1, "2", 200), (2, "1", 20), (3, "2", 300)]
    assert rows(t.scan(read_options={"scan.fallback-branch": "backfill"}).to_arrow()) == expected
    t.update_schema().set_options({"scan.fallback-branch": "backfill"}).commit()
    assert rows(t.scan().to_arrow()) == expected, "the table option works too"
    job = t.scan().read_job()
    assert any("fallback branch 'backfill'" in n for n in job.plan.notes)
    # Filters: on partitions and on data columns (a data filter never makes main's partition look missing).
    assert rows(engine_read_arrow(t, predicate=[Leaf("dt", "=", "1")])) == [(1, "1", 10), (2, "1", 20)]
    assert rows(engine_read_arrow(t, predicate=[Leaf("amount", "<", 0)])) == []
    # The fallback branch itself inherits the option and reads only itself.
    assert rows(t.on_branch("backfill").scan().to_arrow()) == [(1, "1", 10), (1, "2", -1), (2, "1", 20)]


def test_fallback_branch_schema_and_time_travel(fallback_table: Table) -> None:
    t = fallback_table
    t.tags.create("m1")
    t.on_branch("backfill").write_arrow(batch([5], "5", [50]))
    opts = {"scan.fallback-branch": "backfill"}
    assert (5, "5", 50) in rows(t.scan(read_options=opts).to_arrow())
    assert (5, "5", 50) not in rows(t.scan(read_options={**opts, "scan.tag-name": "m1"}).to_arrow()), (
        "fallback read as of main's time"
    )
    # Both branches evolved the same way: fallback files are read with the fallback's own schemas.
    t.update_schema().add_column("note", "string").commit()
    with pytest.raises(SchemaError, match="columns differ"):
        t.scan(read_options=opts).to_arrow()
    t.on_branch("backfill").update_schema().add_column("note", "string").commit()
    out = t.scan(read_options=opts).to_arrow()
    assert out.column_names == ["id", "dt", "amount", "note"] and len(out) == 5
    with pytest.raises(BranchNotFoundError, match="scan.fallback-branch"):
        t.scan(read_options={"scan.fallback-branch": "nope"}).to_arrow()


# ---------------------------------------------------------------------------------------- garbage collection
def test_gc_treats_every_branch_as_live(table: Table) -> None:
    """apache/paimon#6272: after the source tag is deleted and main expires, the branch still reads; dropping
    the branch leaves its files to orphan removal, which then reclaims them."""
    table.branches.create("fix", tag="t2")
    fix = table.on_branch("fix")
    fix.write_arrow(batch([7], "only_fix", [70]))
    expected = rows(fix.scan().to_arrow())
    table.tags.delete("t2")
    for i in range(3):
        table.write_arrow(batch([20 + i], "m", [i]), mode="overwrite")
    future = now_millis() + 3_600_000
    result = table.maintenance.expire_snapshots(retain_max=1, retain_min=1, older_than=future)
    assert result.expired_snapshots and result.deleted_data_files
    assert rows(fix.scan().to_arrow()) == expected
    assert not table.maintenance.remove_orphan_files(older_than=future).files or rows(fix.scan().to_arrow()) == expected
    assert rows(fix.scan().to_arrow()) == expected
    table.branches.delete("fix", clean_files=False)  # metadata only, as Paimon's delete_branch
    orphans = table.maintenance.remove_orphan_files(older_than=future)
    assert any("dt=only_fix" in p for p in orphans.files)
    assert len(table.scan().to_arrow()) == 1


# ---------------------------------------------------------------------------------------- interop
@pytest.mark.interop
def test_interop_branches(warehouse: str) -> None:
    """A branch we create is read by pypaimon and rust (``db.t$branch_b``); one pypaimon creates is read and
    written by us."""
    cat = Catalog(warehouse)
    t = cat.create_table("default.t", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([1, 2], "a", [10, 20]))
    t.tags.create("t1")
    t.write_arrow(batch([3], "b", [30]))
    t.branches.create("ours", tag="t1")
    ours = t.on_branch("ours")
    ours.write_arrow(batch([4], "c", [40]))
    ours.update_schema().add_column("note", "string").commit()
    ours.write_arrow(pa.table({"id": [5], "dt": ["c"], "amount": [50], "note": ["n"]}))
    expected = rows(ours.scan().to_arrow())

    theirs_side = OracleBatch(warehouse)  # pypaimon's and rust's part of each step runs in one oracle process
    theirs_side.branch("default.t", "theirs", from_tag="t1")
    theirs_side.read("ours", "default.t$branch_ours")
    theirs_side.read("ours@t1", "default.t$branch_ours", {"scan.tag-name": "t1"}, impls=("pypaimon",))
    inspected = theirs_side.inspect("default.t", "pypaimon")
    theirs_side.run()
    for impl, got in theirs_side.tables["ours"].items():
        assert got.column_names == ["id", "dt", "amount", "note"], impl
        assert rows(got) == expected, impl
    assert rows(theirs_side.tables["ours@t1"]["pypaimon"]) == [(1, "a", 10), (2, "a", 20)]
    info = theirs_side.results[inspected]
    assert {"ours", "theirs"} <= set(info["branches"])

    theirs = cat.get_table("default.t$branch_theirs")
    assert rows(theirs.scan().to_arrow()) == [(1, "a", 10), (2, "a", 20)]
    assert theirs.write_arrow(batch([6], "d", [60])).snapshot_id == 2, "continues from the tagged snapshot 1"
    assert {b.name for b in t.branches.list()} == {"ours", "theirs"}
    assert not {b.name: b for b in t.branches.list()}["theirs"].has_lineage
    back = oracle.read("pypaimon", warehouse, "default.t$branch_theirs")
    assert rows(back) == [(1, "a", 10), (2, "a", 20), (6, "d", 60)]
    # Fast-forward a pypaimon-made branch (no lineage: the fork is its earliest snapshot).
    with pytest.raises(BranchConflictError, match="snapshot 2"):
        t.branches.fast_forward("theirs")
    t.branches.fast_forward("theirs", force=True)
    assert rows(oracle.read("rust", warehouse, "default.t")) == rows(t.scan().to_arrow())
