"""Making a branch safely (``metadata/refs/branch_making.py``): a create or a ``replace_main`` copy stopped at any
step (an error, a kill) leaves no branch anyone lists, its own lost answers are recognised, the same create run
again completes it, a different one waits for it, and orphan removal removes what nothing reaches.

A kill is simulated by making the clean-up of the error path a no-op (a killed process runs none)."""

from __future__ import annotations

import json
import os
import time
from typing import Callable

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import BranchError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.refs import branch_making
from pyspark_paimon.metadata.refs.branch_making import BranchMaker
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.lineage import LINEAGE_FILE, BranchLineage
from pyspark_paimon.metadata.store import FileStore

SCHEMA = "id bigint, dt string"


def batch(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids)})


def rows(t: Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """Main has snapshots 1..2 and tag ``t1`` on 1."""
    t = catalog.create_table("default.orders", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([1], "a"))
    t.tags.create("t1")
    t.write_arrow(batch([2], "b"))
    return t


class FailAt(FileIO):
    """A local FileIO that fails the first write or create whose path ends with ``suffix`` (``after``: the call
    takes effect first, as when its answer is lost)."""

    def __init__(self, suffix: str, *, op: str = "write", after: bool = False) -> None:
        super().__init__("file")
        self.suffix, self.op, self.after, self.fired = suffix, op, after, False

    def _call(self, op: str, path: str, call: Callable[[], object]) -> object:
        if self.fired or op != self.op or not path.endswith(self.suffix):
            return call()
        self.fired = True
        if not self.after:
            raise OSError(f"injected failure of {op} {path}")
        call()
        raise OSError(f"injected lost answer of {op} {path}")

    def write_bytes(self, path: str, data: bytes) -> None:
        self._call("write", path, lambda: super(FailAt, self).write_bytes(path, data))

    def try_create(self, path: str, data: bytes) -> bool:
        return bool(self._call("create", path, lambda: super(FailAt, self).try_create(path, data)))


def manager(table: Table, io: FileIO | None = None) -> BranchManager:
    return BranchManager(FileStore(io or FileIO("file"), table.store.table_path))


def record(table: Table, name: str) -> dict:
    with open(f"{table.store.table_path}/branch/branch-{name}/{LINEAGE_FILE}") as f:
        return dict(json.load(f))


@pytest.fixture
def killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Errors stop the create as a kill would: nothing cleans up."""
    monkeypatch.setattr(BranchMaker, "abandon", lambda self, name, mine: None)


def test_a_finished_branch_records_its_creation_and_is_no_longer_pending(table: Table) -> None:
    table.branches.create("b")
    lin = record(table, "b")
    assert lin["creationId"] and "pending" not in lin
    assert [b.name for b in table.branches.list()] == ["b"]


@pytest.mark.parametrize("suffix", [LINEAGE_FILE, "snapshot-2", "schema-0"])
def test_a_failed_create_leaves_nothing_and_a_retry_succeeds(table: Table, suffix: str) -> None:
    io = FailAt(suffix, op="create" if suffix == LINEAGE_FILE else "write")
    with pytest.raises(OSError, match="injected"):
        manager(table, io).create("b", from_latest=True)
    assert io.fired
    assert table.branches.list() == []
    assert not os.path.exists(f"{table.store.table_path}/branch/branch-b/{LINEAGE_FILE}")
    table.branches.create("b")
    assert rows(table.on_branch("b")) == rows(table)


@pytest.mark.parametrize("op", ["create", "write"])
def test_its_own_lost_answers_are_recognised(table: Table, op: str) -> None:
    """The claim (a create) and the finish (a write) of branch.json took effect but their answers were lost."""
    io = FailAt(LINEAGE_FILE, op=op, after=True)
    info = manager(table, io).create("b", from_latest=True)
    assert io.fired
    assert info.name == "b" and info.latest_snapshot_id == 2
    assert [b.name for b in table.branches.list()] == ["b"]
    assert "pending" not in record(table, "b")


@pytest.mark.parametrize("suffix", ["snapshot-2", "schema-0", LINEAGE_FILE])
@pytest.mark.usefixtures("killed")
def test_a_killed_create_is_not_listed_and_the_same_create_completes_it(table: Table, suffix: str) -> None:
    with pytest.raises(OSError, match="injected"):
        manager(table, FailAt(suffix)).create("b", from_latest=True)  # the finish is the second write of branch.json
    assert record(table, "b")["pending"] is True
    assert table.branches.list() == []
    assert not manager(table).exists("b")
    table.branches.create("b")
    assert [b.name for b in table.branches.list()] == ["b"]
    assert "pending" not in record(table, "b")
    assert rows(table.on_branch("b")) == rows(table)


@pytest.mark.usefixtures("killed")
def test_a_different_create_waits_for_a_young_half_made_branch_and_replaces_an_old_one(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(OSError, match="injected"):
        manager(table, FailAt("schema-0")).create("b", from_latest=True)
    with pytest.raises(BranchError, match="being created by another call"):
        table.branches.create("b", tag="t1")
    monkeypatch.setattr(branch_making, "PENDING_TIMEOUT_MS", 0)
    info = table.branches.create("b", tag="t1")
    assert info.source_tag == "t1"
    assert rows(table.on_branch("b")) == [(1, "a")]
    assert sorted(os.listdir(f"{table.store.table_path}/branch/branch-b/snapshot")) == ["snapshot-1"]


@pytest.mark.usefixtures("killed")
def test_a_half_made_branch_may_be_deleted(table: Table) -> None:
    with pytest.raises(OSError, match="injected"):
        manager(table, FailAt("schema-0")).create("b", from_latest=True)
    assert table.branches.delete("b").deleted == ["b"]
    assert not os.path.exists(f"{table.store.table_path}/branch/branch-b")


def test_a_claim_made_by_another_create_meanwhile_is_refused(table: Table) -> None:
    """Another call claimed the name between this create's look and its claim (a branch.json it did not write)."""
    other = BranchLineage("main", None, None, None, 0, int(time.time() * 1000), creation_id="x", pending=True)
    root = f"{table.store.table_path}/branch/branch-b"
    os.makedirs(root)
    mgr = manager(table)
    state = mgr.maker.state("b")
    assert state.kind == "absent"
    with open(f"{root}/{LINEAGE_FILE}", "w") as f:
        f.write(other.to_json())
    with pytest.raises(BranchError, match="created concurrently"):
        mgr.maker.claim("b", other, state)


@pytest.mark.usefixtures("killed")
def test_orphan_removal_removes_half_made_branches_and_stray_directories(table: Table) -> None:
    with pytest.raises(OSError, match="injected"):
        manager(table, FailAt("snapshot-2")).create("b", from_latest=True)
    os.makedirs(f"{table.store.table_path}/branch/branch-stray")  # a create that stopped before its claim
    table.branches.create("kept")
    now = int(time.time() * 1000)
    assert table.maintenance.remove_orphan_files(older_than=now - 60_000).branches == []  # young: kept
    dry = table.maintenance.remove_orphan_files(older_than=now + 1000, dry_run=True)
    assert sorted(dry.branches) == ["b", "stray"]
    assert os.path.exists(f"{table.store.table_path}/branch/branch-b")
    result = table.maintenance.remove_orphan_files(older_than=now + 1000)
    assert sorted(result.branches) == ["b", "stray"]
    assert sorted(os.listdir(f"{table.store.table_path}/branch")) == ["branch-kept"]


@pytest.mark.usefixtures("killed")
def test_a_half_made_branch_somebody_committed_to_is_kept(table: Table) -> None:
    with pytest.raises(OSError, match="injected"):
        manager(table, FailAt(LINEAGE_FILE)).create("b", from_latest=True)  # every file there, not finished
    table.on_branch("b").write_arrow(batch([7], "c"))  # opened by name: schemas are there
    result = table.maintenance.remove_orphan_files(older_than=int(time.time() * 1000) + 1000)
    assert result.branches == []
    assert rows(table.on_branch("b")) == [(1, "a"), (2, "b"), (7, "c")]


def test_a_half_made_branch_of_an_older_release_is_not_listed(table: Table) -> None:
    """Before these steps branch.json was written first and never marked: without schemas it is half made."""
    root = f"{table.store.table_path}/branch/branch-b"
    os.makedirs(root)
    old = json.loads(BranchLineage("main", None, 2, None, 0, int(time.time() * 1000)).to_json())
    assert "creationId" not in old
    with open(f"{root}/{LINEAGE_FILE}", "w") as f:
        json.dump({**old, "sourceSnapshotUuid": table.latest_snapshot().uuid}, f)
    assert table.branches.list() == []
    table.branches.create("b")  # the same create: completed
    assert rows(table.on_branch("b")) == rows(table)


# ------------------------------------------------------------------------- replace_main(keep_previous_as=)
@pytest.fixture
def replaceable(table: Table) -> Table:
    """Branch ``fix`` from snapshot 2 with two commits (3, 4), main with one commit of its own (3): the replace's
    switch is the create of main's snapshot 4."""
    table.branches.create("fix")
    table.on_branch("fix").write_arrow(batch([10], "f"))
    table.on_branch("fix").write_arrow(batch([11], "f"))
    table.write_arrow(batch([20], "m"))
    return table


def test_a_replace_failing_before_its_switch_removes_the_copy_it_made(replaceable: Table) -> None:
    before = rows(replaceable)
    io = FailAt("/snapshot/snapshot-4", op="create")  # the switch
    with pytest.raises(OSError, match="injected"):
        manager(replaceable, io).replace_main("fix", keep_previous_as="previous")
    assert io.fired
    assert [b.name for b in replaceable.branches.list()] == ["fix"]
    assert not os.path.exists(f"{replaceable.store.table_path}/branch/branch-previous")
    assert rows(replaceable) == before
    result = replaceable.branches.replace_main("fix", keep_previous_as="previous")
    assert result.kept_previous_as == "previous"
    assert rows(replaceable.refresh()) == rows(replaceable.on_branch("fix"))
    assert rows(replaceable.on_branch("previous")) == before


@pytest.mark.usefixtures("killed")
def test_a_replace_killed_before_its_switch_leaves_a_hidden_copy_the_same_call_completes(replaceable: Table) -> None:
    before = rows(replaceable)
    with pytest.raises(OSError, match="injected"):
        manager(replaceable, FailAt("/snapshot/snapshot-4", op="create")).replace_main(
            "fix", keep_previous_as="previous"
        )
    assert record(replaceable, "previous")["pending"] is True
    assert [b.name for b in replaceable.branches.list()] == ["fix"]
    replaceable.branches.replace_main("fix", keep_previous_as="previous")
    assert "pending" not in record(replaceable, "previous")
    assert rows(replaceable.on_branch("previous")) == before
    assert rows(replaceable.refresh()) == rows(replaceable.on_branch("fix"))


def test_after_its_switch_the_copy_is_kept_and_the_same_call_finishes_the_replace(
    replaceable: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped between the switch and finishing the copy: the copy is the old main's only record, so it counts as
    complete (listed, never removed) and the same call run again finishes both."""
    before = rows(replaceable)

    def stop(self: BranchManager, name: str, pending: BranchLineage) -> None:
        raise KeyboardInterrupt  # a kill right after the switch: the copy is still marked pending

    monkeypatch.setattr(BranchManager, "_finish_copy", stop)
    with pytest.raises(KeyboardInterrupt):
        replaceable.branches.replace_main("fix", keep_previous_as="previous")
    assert record(replaceable, "previous")["pending"] is True
    assert [b.name for b in replaceable.branches.list()] == ["fix", "previous"]
    cutoff = int(time.time() * 1000) + 1000
    monkeypatch.undo()
    assert replaceable.maintenance.remove_orphan_files(older_than=cutoff, dry_run=True).branches == []
    result = replaceable.branches.replace_main("fix", keep_previous_as="previous")
    assert result.kept_previous_as == "previous"
    assert "pending" not in record(replaceable, "previous")
    assert rows(replaceable.on_branch("previous")) == before
    assert rows(replaceable.refresh()) == rows(replaceable.on_branch("fix"))
    with pytest.raises(BranchError, match="already exists"):
        replaceable.branches.create("previous")
