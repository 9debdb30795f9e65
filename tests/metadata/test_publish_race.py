"""Publishing a branch (``fast_forward`` / ``replace_main``) while a writer keeps committing to the target.

Snapshot ids are reused by a publish, so a commit that lands on the target meanwhile must never disappear:
either it cannot land on the ids the publish is changing, or the publish notices it, undoes itself around
it and says so. The deterministic tests commit at the dangerous file operation (a ``FileIO`` that commits
from inside the publish's own call), the stress test races a writer thread against the publish (forcing
one of its commits to land inside the publish) and checks every acknowledged commit afterwards.
"""

from __future__ import annotations

import threading
from typing import Callable

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.errors import BranchConflictError, BranchError, PaimonError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import ManifestStore
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.publish import PUBLISH_FILLER_USER, PublishResult
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot, SnapshotManager
from pyspark_paimon.metadata.store import FileStore

SCHEMA = "id bigint, dt string, amount bigint"


def batch(ids: list[int], dt: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "amount": pa.array(ids, pa.int64())})


def ids_of(t: Table) -> set[int]:
    return set(t.scan().to_arrow().column("id").to_pylist())


def main_snapshot(t: Table, sid: int) -> Snapshot:
    return SnapshotManager(FileIO("file"), t.store.table_path).snapshot(sid)


def commit_as_writer(table_path: str, data: pa.Table) -> Snapshot:
    """One APPEND commit to main by a separate writer, returning the snapshot it committed (the engine's
    ``WriteJob.commit``, whose answer is the commit's own snapshot, not a read of the id afterwards)."""
    job = prepare_write(FileStore(FileIO("file"), table_path))
    writer = job.new_writer("racing-writer")
    writer.write(data)
    snapshot = job.commit(writer.prepare_commit())
    assert snapshot is not None
    return snapshot


class CommitWhen(FileIO):
    """A FileIO for the publish that, the first time it is about to do ``op`` on ``path_suffix`` of main,
    commits one batch to main through a separate ``Table`` (a concurrent writer) and records the ack."""

    def __init__(self, table: Table, op: str, path_suffix: str) -> None:
        super().__init__("file")
        self.table, self.op, self.suffix = table, op, path_suffix
        self.acked: Snapshot | None = None

    def _maybe_commit(self, op: str, path: str) -> None:
        if self.acked is None and op == self.op and path.endswith(self.suffix) and "/branch/" not in path:
            acked = commit_as_writer(self.table.store.table_path, batch([999], "w"))
            assert acked is not None
            self.acked = acked

    def try_create(self, path: str, data: bytes) -> bool:
        self._maybe_commit("create", path)
        return super().try_create(path, data)

    def write_bytes(self, path: str, data: bytes) -> None:
        self._maybe_commit("write", path)
        super().write_bytes(path, data)

    def delete(self, path: str) -> bool:
        self._maybe_commit("delete", path)
        return super().delete(path)


@pytest.fixture
def table(catalog: Catalog) -> Table:
    """``orders``: main has snapshots 1..3 (ids 1, 2, 3), tag ``t1`` on 1 and ``t3`` on 3."""
    t = catalog.create_table("default.orders", SCHEMA, partition_keys=["dt"])
    t.write_arrow(batch([1], "a"))
    t.tags.create("t1")
    t.write_arrow(batch([2], "a"))
    t.write_arrow(batch([3], "a"))
    t.tags.create("t3")
    return t


def publish(table: Table, io: FileIO, how: str, branch: str) -> PublishResult:
    manager = BranchManager(FileStore(io, table.store.table_path))
    if how == "replace":
        return manager.replace_main(branch)
    return manager.fast_forward(branch, force=True)


def assert_kept(table: Table, acked: Snapshot) -> None:
    """The acknowledged commit is main's latest snapshot, unchanged, and its rows are read."""
    assert main_snapshot(table, acked.id).uuid == acked.uuid
    assert SnapshotManager(FileIO("file"), table.store.table_path).latest_id() == acked.id
    assert 999 in ids_of(Table(FileStore(FileIO("file"), table.store.table_path)))


# ------------------------------------------------------------------------------------------ deterministic
@pytest.mark.parametrize("how", ["force", "replace"])
def test_a_commit_on_the_old_head_during_a_rewind_is_kept(table: Table, how: str) -> None:
    """The branch is shorter than main (head 2 < 3): the publish rewrites main below its head and then deletes
    the head. A writer that read head 3 commits snapshot 4 just before that delete. The publish must notice
    it, put main's history back under it and say so, instead of hiding snapshot 4 behind the new head 2."""
    table.branches.create("fix", tag="t1")
    table.on_branch("fix").write_arrow(batch([10], "f"))
    before = {sid: main_snapshot(table, sid).uuid for sid in (1, 2, 3)}
    io = CommitWhen(table, "delete", "/snapshot/snapshot-3")
    with pytest.raises(BranchError, match="undone") as err:
        publish(table, io, how, "fix")
    assert io.acked is not None and io.acked.id == 4
    assert "snapshot 4" in str(err.value) and "fix" in str(err.value)
    assert_kept(table, io.acked)
    assert {sid: main_snapshot(table, sid).uuid for sid in (1, 2, 3)} == before, "main's history is restored"
    assert ids_of(table) == {1, 2, 3, 999}


@pytest.mark.parametrize("how", ["force", "replace"])
def test_a_commit_on_the_published_head_right_after_a_rewind_goes_on_with_the_branch(table: Table, how: str) -> None:
    """Deleting the old head 3 is a rewind's switch: a writer that reads main right after it sees the branch
    head 2 and commits 3 on top of it. That commit continues the published branch: the publish stands and
    the commit is main's head (it used to be taken for a race on the old head, whose undo put main's old
    snapshots back under it)."""
    table.branches.create("fix", tag="t1")
    table.on_branch("fix").write_arrow(batch([10], "f"))
    io = CommitWhen(table, "write", "/snapshot/LATEST")
    result = publish(table, io, how, "fix")
    assert io.acked is not None and io.acked.id == 3
    assert result.latest_id == 3
    assert_kept(table, io.acked)
    assert ids_of(table) == {1, 10, 999}
    assert (
        main_snapshot(table, 2).uuid == SnapshotManager(FileIO("file"), table.store.table_path, "fix").snapshot(2).uuid
    )


@pytest.mark.parametrize("how", ["force", "replace"])
def test_a_commit_into_the_id_gap_of_a_publish_is_kept(table: Table, how: str) -> None:
    """Main was rolled back to 1 after branch ``fix`` was made from its snapshot 3, so the branch's history
    (3, 4, 5) starts above main's head + 1. The publish claims ids 2, 3 and 4 with the old content before it
    creates 5; a writer on main commits while it is claiming 3. Without care that commit lands in a free id
    under the published head 5, and its rows silently vanish from main. Here it lands on the claimed 2 (the
    old content) and stops the publish, which keeps 2 under it."""
    table.branches.create("fix", tag="t3")
    fix = table.on_branch("fix")
    fix.write_arrow(batch([4], "f"))
    fix.write_arrow(batch([5], "f"))
    table.maintenance.rollback_to(snapshot_id=1)
    io = CommitWhen(table, "create", "/snapshot/snapshot-3")
    with pytest.raises(BranchError, match="undone"):
        publish(table, io, how, "fix")
    assert io.acked is not None and io.acked.id == 3
    assert_kept(table, io.acked)
    assert ids_of(table) == {1, 999}
    assert main_snapshot(table, 2).delta_record_count == 0, "the claim under the commit stays: its history"
    # Once the writer is done, the same call publishes; the writer's commit is reported as discarded.
    result = publish(table, FileIO("file"), how, "fix")
    assert any("snapshot 3 " in d for d in result.discarded)
    assert ids_of(table) == {1, 2, 3, 4, 5}


def test_a_commit_after_the_switch_of_a_gap_publish_goes_on_top(table: Table) -> None:
    """After the switch, a writer that read main's old head 1 cannot land in the gap: id 2 is taken by the
    publish (a snapshot carrying main's old content), so its commit retries on the published head."""
    table.branches.create("fix", tag="t3")
    table.on_branch("fix").write_arrow(batch([4], "f"))
    table.maintenance.rollback_to(snapshot_id=1)
    stale = SnapshotManager(FileIO("file"), table.store.table_path).latest()
    result = BranchManager(FileStore(FileIO("file"), table.store.table_path)).fast_forward("fix", force=True)
    assert result.latest_id == 4 and SnapshotManager(FileIO("file"), table.store.table_path).list_ids() == [1, 2, 3, 4]
    filler = main_snapshot(table, 2)
    assert (
        filler.delta_record_count == 0 and stale is not None and filler.total_record_count == stale.total_record_count
    )
    assert set(table.scan(read_options={"scan.snapshot-id": "2"}).to_arrow().column("id").to_pylist()) == {1}
    # A commit prepared on the old head 1 collides with 2 and lands on top of the published head.
    acked = commit_as_writer(table.store.table_path, batch([999], "w"))
    assert acked is not None and acked.id == 5 and ids_of(table) == {1, 2, 3, 4, 999}


def test_a_commit_between_planning_and_publishing_stops_a_forced_publish(table: Table) -> None:
    """``force`` discards what main held when the call looked; a commit that lands after that is not part of
    what the caller agreed to lose, so the publish stops before changing anything."""
    table.branches.create("fix", tag="t1")
    table.on_branch("fix").write_arrow(batch([10], "f"))
    before = {sid: main_snapshot(table, sid).uuid for sid in (1, 2, 3)}
    io = CommitWhen(table, "write", "/snapshot/LATEST")  # the publish's first write pins the LATEST hint
    io.acked = commit_as_writer(table.store.table_path, batch([999], "w"))  # lands after planning...
    manager = BranchManager(FileStore(io, table.store.table_path))
    real_content = manager._content
    calls = {"n": 0}

    def content_before_the_commit(branch: str):  # ...because planning saw main without it
        out = real_content(branch)
        if branch == "main" and calls["n"] == 0:
            calls["n"] += 1
            snaps, tags = out
            return {sid: s for sid, s in snaps.items() if sid != 4}, tags
        return out

    manager._content = content_before_the_commit  # type: ignore[method-assign]
    with pytest.raises(BranchError, match="snapshot 4") as err:
        manager.fast_forward("fix", force=True)
    assert "Nothing was published" in str(err.value)
    assert {sid: main_snapshot(table, sid).uuid for sid in (1, 2, 3)} == before
    assert_kept(table, io.acked)


def test_replace_main_keeping_the_previous_main_races_a_commit(table: Table) -> None:
    """replace_main(keep_previous_as=...) saves a copy first; if the publish then stops for a racing commit,
    the copy it made for this call is removed again and main keeps the commit."""
    table.branches.create("fix", tag="t1")
    table.on_branch("fix").write_arrow(batch([10], "f"))
    io = CommitWhen(table, "delete", "/snapshot/snapshot-3")
    with pytest.raises(BranchError, match="undone"):
        BranchManager(FileStore(io, table.store.table_path)).replace_main("fix", keep_previous_as="old_main")
    assert io.acked is not None
    assert_kept(table, io.acked)
    assert [b.name for b in table.branches.list()] == ["fix"]


# ------------------------------------------------------------------------------------------ stress
class CommitsDuring(FileIO):
    """A FileIO for the publish that, at its ``at``-th change to main's files (snapshots, tags, hints), waits
    until the writer thread has acknowledged one more commit: the race is forced to happen inside the publish,
    at a point chosen by the test instead of by thread scheduling."""

    def __init__(self, acked: list[Snapshot], ready: threading.Condition, at: int) -> None:
        super().__init__("file")
        self.acked, self.ready, self.at = acked, ready, at
        self.changes = 0
        self.raced_at: int | None = None  # how many commits were acknowledged when the forced one landed

    def _change(self, path: str) -> None:
        if "/branch/" in path:
            return
        self.changes += 1
        if self.changes == self.at:
            with self.ready:
                before = len(self.acked)
                assert self.ready.wait_for(lambda: len(self.acked) > before, 60), "the writer never committed"
                self.raced_at = len(self.acked)

    def try_create(self, path: str, data: bytes) -> bool:
        self._change(path)
        return super().try_create(path, data)

    def write_bytes(self, path: str, data: bytes) -> None:
        self._change(path)
        super().write_bytes(path, data)

    def delete(self, path: str) -> bool:
        self._change(path)
        return super().delete(path)


def race(
    table: Table, publish_call: Callable[[FileIO], PublishResult], *, force: bool, at: int, rounds_after: int = 2
) -> str:
    """Start a writer thread that keeps committing to main (until a few commits after the publish returned),
    run ``publish_call`` with a FileIO that makes it wait for one more of those commits at its ``at``-th change
    to main (so at least one commit lands while the publish runs), then check every acknowledged commit:

    * its rows are in main's latest snapshot; or
    * ``force`` discarded it, which the result says (it names the commit, or main's history it was part of),
      and its snapshot file is still intact when it was below the branch's first snapshot; or
    * the publish raised that it could not be undone, naming the commit, whose snapshot file is intact.
    """
    acked: list[Snapshot] = []
    writer_errors: list[BaseException] = []
    go = threading.Event()
    published = threading.Event()
    ready = threading.Condition()
    io = CommitsDuring(acked, ready, at)

    def writer() -> None:
        extra = 0
        go.wait(30)
        try:
            while len(acked) < 50 and extra <= rounds_after:
                if published.is_set():
                    extra += 1  # a few commits after the publish, on whatever head it left
                snap = commit_as_writer(table.store.table_path, batch([1000 + len(acked)], "w"))
                with ready:
                    acked.append(snap)
                    ready.notify_all()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            writer_errors.append(e)

    th = threading.Thread(target=writer)
    th.start()
    outcome: PublishResult | PaimonError
    try:
        go.set()
        try:
            outcome = publish_call(io)
        except BranchConflictError as e:  # the safe fast-forward saw main move on: nothing changed
            outcome = e
        except BranchError as e:  # a commit raced the publish (BranchPublishRaceError says whether it was undone)
            outcome = e
        with ready:
            during = len(acked)  # commits acknowledged before the publish returned
    finally:
        published.set()
        th.join(60)
    assert not th.is_alive()
    assert not writer_errors, writer_errors
    # The race happened: a commit landed while the publish ran. Either the forced wait at the ``at``-th change
    # saw a commit acknowledged, or the publish stopped earlier because it saw one land (its snapshot file may
    # exist before the writer's write_arrow returns, so ``during`` can still be 0 then).
    assert (io.raced_at is not None and during > 0) or isinstance(outcome, BranchError), (at, io.changes, outcome)
    head_ids = ids_of(Table(FileStore(FileIO("file"), table.store.table_path)))
    discarded = " ".join(outcome.discarded) if isinstance(outcome, PublishResult) else ""
    for n, snap in enumerate(acked):
        if 1000 + n in head_ids:
            continue
        label = f"snapshot {snap.id} ({snap.commit_kind} at {snap.time_millis}"
        intact = (
            SnapshotManager(FileIO("file"), table.store.table_path).exists(snap.id)
            and main_snapshot(table, snap.id).uuid == snap.uuid
        )
        if isinstance(outcome, BranchError) and not isinstance(outcome, BranchConflictError):
            undone = getattr(outcome, "undone", True)
            assert not undone and f"snapshot {snap.id}" in str(outcome) and intact, (
                f"acknowledged {label} lost its rows",
                str(outcome),
                sorted(head_ids),
            )
        else:
            assert force and isinstance(outcome, PublishResult) and (label in discarded or intact), (
                f"acknowledged {label} lost its rows",
                str(outcome),
                sorted(head_ids),
            )
    return type(outcome).__name__


@pytest.mark.parametrize("scenario", ["forward", "force-rewind", "force-gap", "replace"])
def test_publish_racing_a_writer_loses_no_acknowledged_commit(catalog: Catalog, scenario: str) -> None:
    """forward: the branch continues main (B > H); force-rewind: the branch is shorter (B < H); force-gap: main
    was rolled back below the branch's first snapshot; replace: replace_main with a longer branch."""
    outcomes = []
    for rnd in range(6):
        t = catalog.create_table(f"default.r_{scenario.replace('-', '_')}_{rnd}", SCHEMA, partition_keys=["dt"])
        for i in (1, 2, 3):
            t.write_arrow(batch([i], "a"))
            t.tags.create(f"t{i}")
        if scenario == "forward":
            t.branches.create("dev")
            commits = 2
        elif scenario == "force-gap":
            t.branches.create("dev", tag="t3")
            t.maintenance.rollback_to(snapshot_id=1)
            commits = 2
        else:
            t.branches.create("dev", tag="t1")
            commits = 1 if scenario == "force-rewind" else 3
        dev = t.on_branch("dev")
        for i in range(commits):
            dev.write_arrow(batch([100 + i], "b"))
        at = 1 + rnd % 3  # the publish's first, second or third change to main waits for a concurrent commit
        if scenario == "forward":
            outcome = race(
                t,
                lambda io, p=t.store.table_path: BranchManager(FileStore(io, p)).fast_forward("dev"),
                force=False,
                at=at,
            )
        elif scenario == "replace":
            outcome = race(
                t,
                lambda io, p=t.store.table_path: BranchManager(FileStore(io, p)).replace_main("dev"),
                force=True,
                at=at,
            )
        else:
            outcome = race(
                t,
                lambda io, p=t.store.table_path: BranchManager(FileStore(io, p)).fast_forward("dev", force=True),
                force=True,
                at=at,
            )
        outcomes.append(outcome)
    assert set(outcomes) <= {"PublishResult", "BranchPublishRaceError", "BranchConflictError"}, outcomes


# ------------------------------------------------------------------------------- stopped at any step
def assert_every_snapshot_readable(t: Table) -> None:
    manager = SnapshotManager(FileIO("file"), t.store.table_path)
    store = ManifestStore(FileIO("file"), t.store.table_path)
    for sid in manager.list_ids():
        snap = manager.snapshot(sid)
        for name in (snap.base_manifest_list, snap.delta_manifest_list):
            store.read_list(name)


class Killed(BaseException):
    """The process dying at an injected point: nothing after it runs (no ``except Exception`` catches it)."""


class StopsAt(FileIO):
    """A FileIO for the publish that stops at its ``at``-th change to main (any file outside the branch
    directories: snapshots, hints, tags, schemas, manifest lists). ``mode``: ``killed``, the process dies before
    the change; ``lost``, the change is made and then reported as failed (an object store's lost answer);
    ``retried``, the change is made, its answer lost, and the store's retry answers (a create finds the file
    taken, a delete finds nothing to delete)."""

    def __init__(self, at: int, mode: str = "killed") -> None:
        super().__init__("file")
        self.at, self.mode, self.changes = at, mode, 0

    def _change(self, path: str, do: Callable[[], object], retry_answer: object = None) -> object:
        if "/branch/" in path:
            return do()
        self.changes += 1
        if self.changes != self.at:
            return do()
        if self.mode == "killed":
            raise Killed(path)
        answer = do()
        if self.mode == "lost":
            raise OSError(f"connection reset after changing {path}")
        return answer if retry_answer is None else retry_answer

    def try_create(self, path: str, data: bytes) -> bool:
        return bool(self._change(path, lambda: super(StopsAt, self).try_create(path, data), False))

    def write_bytes(self, path: str, data: bytes) -> None:
        self._change(path, lambda: super(StopsAt, self).write_bytes(path, data))

    def delete(self, path: str) -> bool:
        return bool(self._change(path, lambda: super(StopsAt, self).delete(path), False))


STOP_SCENARIOS = {
    # B = H+4: the branch continues main with four commits (the case a stray copy used to break).
    "forward": ("dev", lambda t: None, 4, False),
    # B = H+2: the one id below the branch head is claimed first.
    "forward-2": ("dev", lambda t: None, 2, False),
    # Main was rolled back below the branch's first snapshot: the ids in between are claimed and stay.
    "gap": ("t3", lambda t: t.maintenance.rollback_to(snapshot_id=1), 2, True),
    # The branch is shorter than main (B < H): main is rewound.
    "rewind": ("t1", lambda t: None, 1, True),
    # B = H-3: main's ids between the two heads are deleted before the switch.
    "rewind-far": ("t1", lambda t: [t.write_arrow(batch([i], "a")) for i in (4, 5)], 1, True),
}


def _stop_table(catalog: Catalog, scenario: str, n: int) -> Table:
    source, prepare, commits, _ = STOP_SCENARIOS[scenario]
    t = catalog.create_table(f"default.stop_{scenario}_{n}", SCHEMA, partition_keys=["dt"])
    for i in (1, 2, 3):
        t.write_arrow(batch([i], "a"))
        t.tags.create(f"t{i}")
    if source == "dev":
        t.branches.create("fix")
    else:
        t.branches.create("fix", tag=source)
    for i in range(commits):
        t.on_branch("fix").write_arrow(batch([100 + i], "f"))
    prepare(t)
    return t


def _changes_of_a_publish(catalog: Catalog, scenario: str) -> int:
    t = _stop_table(catalog, scenario, 0)
    io = StopsAt(0)
    BranchManager(FileStore(io, t.store.table_path)).fast_forward("fix", force=STOP_SCENARIOS[scenario][3])
    return io.changes


@pytest.mark.parametrize("scenario", sorted(STOP_SCENARIOS))
@pytest.mark.parametrize("mode", ["killed", "lost", "retried"])
def test_a_fast_forward_stopped_at_any_step_loses_no_later_commit(catalog: Catalog, scenario: str, mode: str) -> None:
    """A publish stopped at each of its changes to main (the process killed, or a change whose answer was lost).
    Then plain writers commit to main: every acknowledged row stays in main's latest snapshot, and main's rows are
    either the old ones or the branch's, never a mix (a stray copy of the branch head above the old head used to
    become the head once writers filled the ids below it). Then the same call, re-run, publishes: main ends with
    the branch's rows plus nothing else but what it refused to discard. Every snapshot main lists stays readable
    (a lost answer on creating a claim used to be taken for a race, whose undo deleted the claim's manifest lists
    while its snapshot file stayed)."""
    force = STOP_SCENARIOS[scenario][3]
    total = _changes_of_a_publish(catalog, scenario)
    assert total >= 5
    for at in range(1, total + 1):
        t = _stop_table(catalog, scenario, at)
        old, branch = ids_of(t), ids_of(t.on_branch("fix"))
        io = StopsAt(at, mode)
        try:
            BranchManager(FileStore(io, t.store.table_path)).fast_forward("fix", force=force)
        except (Killed, OSError, PaimonError):
            pass
        main = Table(FileStore(FileIO("file"), t.store.table_path))
        state = ids_of(main)
        assert state in (old, branch), (at, sorted(state))
        assert_every_snapshot_readable(main)
        acked = set()
        for i in range(3):
            main.write_arrow(batch([900 + i], "w"))
            acked.add(900 + i)
            now = ids_of(Table(FileStore(FileIO("file"), t.store.table_path)))
            assert now - acked in (old, branch) and acked <= now, (at, i, sorted(now))


@pytest.mark.parametrize("scenario", sorted(STOP_SCENARIOS))
def test_a_fast_forward_stopped_at_any_step_completes_when_run_again(catalog: Catalog, scenario: str) -> None:
    force = STOP_SCENARIOS[scenario][3]
    total = _changes_of_a_publish(catalog, scenario)
    for at in range(1, total + 1):
        t = _stop_table(catalog, scenario, at)
        branch = ids_of(t.on_branch("fix"))
        branch_ids = SnapshotManager(FileIO("file"), t.store.table_path, "fix").list_ids()
        try:
            BranchManager(FileStore(StopsAt(at), t.store.table_path)).fast_forward("fix", force=force)
        except Killed:
            pass
        result = t.branches.fast_forward("fix", force=force)
        main = Table(FileStore(FileIO("file"), t.store.table_path))
        assert ids_of(main) == branch, at
        manager = SnapshotManager(FileIO("file"), t.store.table_path)
        assert result.latest_id == manager.latest_id() == branch_ids[-1]
        for sid in branch_ids:  # main's history from the branch's first snapshot is the branch's
            assert (
                manager.snapshot(sid).uuid
                == SnapshotManager(FileIO("file"), t.store.table_path, "fix").snapshot(sid).uuid
            )
        # Below the branch's first snapshot: main's own history, and (gap) the claimed ids holding its old content.
        for sid in manager.list_ids():
            if sid < branch_ids[0]:
                claimed = manager.snapshot(sid).commit_user == PUBLISH_FILLER_USER
                assert claimed == (scenario == "gap" and sid > 1), (at, sid)
