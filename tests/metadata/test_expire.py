"""Snapshot expiration (Java's `ExpireSnapshotsImpl`) with full reachability over every branch's snapshots and tags, tag
expiration with file cleanup, the data-loss scenarios of Paimon issues #6272 and #9867, and a property test over
random histories of commits, tags, branches, rollbacks, expirations and orphan cleaning."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from maint_helpers import (
    FakeTable,
    age_all_files,
    assert_all_roots_intact,
    data_files_on_disk,
    manifests_on_disk,
)

from pyspark_paimon.errors import CorruptMetadataError, OptionError
from pyspark_paimon.metadata.maintenance import deletion
from pyspark_paimon.metadata.maintenance.expire import delete_tags, expire_snapshots, expire_tags
from pyspark_paimon.metadata.maintenance.orphans import remove_orphan_files
from pyspark_paimon.metadata.maintenance.reachability import used_files
from pyspark_paimon.metadata.refs.rollback import rollback_to
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import branch_path
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.table import Table
from tests.interop.helpers import OracleBatch

FUTURE = dt.datetime.now() + dt.timedelta(days=365)


@pytest.fixture
def table(tmp_path: Path) -> FakeTable:
    return FakeTable(tmp_path / "t")


def expire(table: FakeTable, branch: str = "main", **kw: object):  # noqa: ANN201
    kw.setdefault("older_than", FUTURE)
    kw.setdefault("retain_min", 1)
    return expire_snapshots(FileStore(table.store.fileio, table.store.table_path, branch), **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ basics
def test_expire_deletes_only_files_no_remaining_snapshot_uses(table: FakeTable) -> None:
    _, f1 = table.append()
    _, f2 = table.append()
    s3 = table.commit([table.new_file("a")], overwrite=True)
    _, f4 = table.append(dt="b")
    live3 = table.live_names(s3)
    manifests_before = manifests_on_disk(table)
    result = expire(table)
    assert result.expired_snapshots == [1, 2, 3]
    assert table.snapshots().list_ids() == [4]
    assert Path(f"{table.snapshots().snapshot_dir}/EARLIEST").read_text() == "4"
    on_disk = data_files_on_disk(table)
    assert not (set(f1) | set(f2)) & on_disk  # removed by the overwrite, no longer reachable
    assert table.live_names(table.snapshots().latest()) <= on_disk
    assert {Path(p).name for p in result.deleted_data_files} == set(f1) | set(f2)
    assert result.deleted_manifests and manifests_on_disk(table) < manifests_before
    assert_all_roots_intact(table)
    assert table.live_names(table.snapshots().latest()) == live3 | set(f4)


def test_dry_run_changes_nothing(table: FakeTable) -> None:
    table.append()
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    files, manifests = data_files_on_disk(table), manifests_on_disk(table)
    result = expire(table, dry_run=True)
    assert result.dry_run and result.expired_snapshots == [1, 2] and len(result.deleted_data_files) == 1
    assert table.snapshots().list_ids() == [1, 2, 3]
    assert data_files_on_disk(table) == files and manifests_on_disk(table) == manifests


def _commit_spaced(table: FakeTable, n: int) -> list:
    snaps = []
    for _ in range(n):
        snaps.append(table.append()[0])
        time.sleep(0.005)
    return snaps


def test_retention_options_and_java_bounds(table: FakeTable) -> None:
    snaps = _commit_spaced(table, 8)
    # Defaults: 10 retained at least, 1 h time retention: nothing expires.
    assert (
        Table(FileStore(table.store.fileio, table.store.table_path)).maintenance.expire_snapshots().expired_snapshots
        == []
    )
    # A snapshot expires only if its *successor* is older than older_than.
    assert expire(table, older_than=snaps[2].time_millis).expired_snapshots == [1]
    # retain_max forces expiration regardless of time; max_deletes caps one run.
    assert expire(table, older_than=0, retain_max=6, max_deletes=1).expired_snapshots == [2]
    assert expire(table, older_than=0, retain_max=6).expired_snapshots == []  # 3..8 is exactly 6
    assert expire(table, older_than=0, retain_max=5).expired_snapshots == [3]
    # retain_min protects the newest.
    assert expire(table, retain_min=3).expired_snapshots == [4, 5]
    assert table.snapshots().list_ids() == [6, 7, 8]
    with pytest.raises(OptionError):
        expire(table, retain_min=0)
    with pytest.raises(OptionError):
        expire(table, retain_min=3, retain_max=2)


def test_table_options_drive_defaults(tmp_path: Path) -> None:
    options = {"snapshot.num-retained.min": "2", "snapshot.time-retained": "1 ms", "snapshot.expire.limit": "3"}
    table = FakeTable(tmp_path / "t", options={**options, "write-only": "true"})  # only explicit expiration
    _commit_spaced(table, 7)
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    assert t.maintenance.expire_snapshots().expired_snapshots == [1, 2, 3]  # limit 3 per run
    assert t.maintenance.expire_snapshots().expired_snapshots == [4, 5]  # min 2 retained
    assert table.snapshots().list_ids() == [6, 7]


def test_consumers_protect_their_next_snapshot(table: FakeTable) -> None:
    _commit_spaced(table, 5)
    os.makedirs(f"{table.store.table_path}/consumer")
    Path(f"{table.store.table_path}/consumer/consumer-job1").write_text(json.dumps({"nextSnapshot": 3}))
    assert expire(table).expired_snapshots == [1, 2]


def test_commits_expire_snapshots_as_java_writers_do(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1"})
    snaps = [table.commit([table.new_file()], overwrite=True) for _ in range(8)]  # each replaces the last
    assert table.snapshots().list_ids() == [6, 7, 8]
    assert table.fileio.read_text(f"{table.path}/snapshot/EARLIEST") == "6"
    assert_all_roots_intact(table)
    assert data_files_on_disk(table) == {n for s in snaps[5:] for n in table.live_names(s)}  # 1..5's are gone


def test_write_only_commits_expire_nothing(tmp_path: Path) -> None:
    options = {"snapshot.num-retained.max": "3", "snapshot.num-retained.min": "1", "write-only": "true"}
    table = FakeTable(tmp_path / "t", options=options)
    for _ in range(9):
        table.append()
    assert table.snapshots().list_ids() == list(range(1, 10))


def test_expire_with_compacted_manifests(table: FakeTable) -> None:
    """Java-style manifest merging breaks the base = previous base + delta chain; reachability re-folds."""
    opts = {"manifest.merge-min-count": "2"}
    names = []
    for i in range(6):
        f = table.new_file("a" if i % 2 else "b")
        names.append(f[1].file_name)
        table.commit([f], options=opts)
    table.commit([table.new_file("a")], overwrite=True, options=opts)
    table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("mid", snapshot_id=4)
    expire(table)
    assert_all_roots_intact(table)
    assert set(names[:4]) <= data_files_on_disk(table)  # tag 'mid' still reads them
    assert not set(names[4:]) & data_files_on_disk(table)


# ------------------------------------------------------------------------------------------ data-loss scenarios
def test_a_branch_from_deleted_tag_survives_expiration_on_main(table: FakeTable) -> None:
    """apache/paimon#6272: branch created from tag T, T deleted, main expires: the branch must stay readable."""
    _, f1 = table.append()
    _, f2 = table.append()
    main = Table(FileStore(table.store.fileio, table.store.table_path))
    main.tags.create("T")
    table.branch_from_tag("b", "T")
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    main.tags.delete("T")
    result = expire(table)
    assert result.expired_snapshots == [1, 2, 3]
    assert set(f1) | set(f2) <= data_files_on_disk(table)
    branch = table.snapshots("b").latest()
    assert table.live_names(branch) == set(f1) | set(f2)
    assert_all_roots_intact(table)
    # The branch can still commit on top of it.
    s, g = table.append(branch="b")
    assert table.live_names(s) == set(f1) | set(f2) | set(g)
    assert_all_roots_intact(table)


def test_branch_tags_protect_files_from_expiration_on_branch_and_main(table: FakeTable) -> None:
    """apache/paimon#9867: a branch's own tags must protect files, whichever branch expires."""
    _, f1 = table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("T")
    table.branch_from_tag("b", "T")
    _, g1 = table.append(branch="b")
    b = Table(FileStore(table.store.fileio, table.store.table_path, "b"))
    b.tags.create("bt")
    table.commit([table.new_file("a")], overwrite=True, branch="b")
    table.append(branch="b")
    # Expire on the branch: its snapshots 1.. expire, tag 'bt' keeps f1 and g1.
    assert expire(table, "b").expired_snapshots == [1, 2, 3]
    assert set(f1) | set(g1) <= data_files_on_disk(table)
    # Expire on main after main moved on and lost its tag: 'bt' (on the branch) still protects f1.
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.delete("T")
    expire(table)
    assert set(f1) | set(g1) <= data_files_on_disk(table)
    assert_all_roots_intact(table)
    assert table.live_names(table.tags("b").get("bt")) == set(f1) | set(g1)
    # The branch also holds its own copy of tag T (create_branch copies it): that one still protects f1.
    b.tags.delete("bt", clean_files=True)
    assert not set(g1) & data_files_on_disk(table)
    assert set(f1) <= data_files_on_disk(table)
    b.tags.delete("T", clean_files=True)
    assert not set(f1) & data_files_on_disk(table)
    assert_all_roots_intact(table)


def test_a_tag_keeps_files_alive_after_its_snapshot_expires(table: FakeTable) -> None:
    s1, f1 = table.append()
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    t.tags.create("v1", snapshot_id=1)
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    assert expire(table).expired_snapshots == [1, 2]
    assert set(f1) <= data_files_on_disk(table)
    assert table.live_names(t.tags.list()[0].snapshot) == set(f1)
    assert_all_roots_intact(table)
    # Deleting the tag file alone keeps the data (orphan); clean_files deletes what only the tag used.
    t.tags.delete("v1", clean_files=False)
    assert set(f1) <= data_files_on_disk(table)
    t.tags.create("v1b", snapshot_id=3)
    table.branch_from_tag("x", "v1b")  # a branch that does not use f1 must not protect it
    TagManager(table.store).create("v1", s1)
    result = delete_tags(FileStore(table.store.fileio, table.store.table_path, "main"), ["v1"], clean_files=True)
    assert {Path(p).name for p in result.deleted_data_files} == set(f1)
    assert result.deleted_manifests
    assert_all_roots_intact(table)


def test_delete_tag_cleans_unreachable_files_by_default_as_java_does(table: FakeTable) -> None:
    """t.tags.delete deletes what only the tag kept alive unless clean_files=False, but never a file a
    branch made from that tag still reads."""
    _, f1 = table.append()
    _, f2 = table.append(dt="b")
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    t.tags.create("v1", snapshot_id=1)
    t.tags.create("v2", snapshot_id=2)
    t.tags.create("v1_for_branch", snapshot_id=1)
    table.branch_from_tag("keeps_f1", "v1_for_branch")
    t.tags.delete("v1_for_branch")  # the branch still has snapshot 1
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    expire(table)
    assert t.tags.delete("v1").deleted == ["v1"]
    assert set(f1) <= data_files_on_disk(table)  # the branch still reads f1
    assert t.tags.delete("v2").deleted == ["v2"]
    assert not set(f2) & data_files_on_disk(table)  # only v2 kept f2 alive
    assert set(f1) <= data_files_on_disk(table)
    assert_all_roots_intact(table)


def test_expire_tags_with_clean_files(table: FakeTable) -> None:
    _, f1 = table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("short", time_retained="1 h")
    table.commit([table.new_file("a")], overwrite=True)
    expire(table)
    assert set(f1) <= data_files_on_disk(table)
    res = expire_tags(table.store, now=dt.datetime.now() + dt.timedelta(hours=2), clean_files=True)
    assert res.deleted == ["short"]
    assert not set(f1) & data_files_on_disk(table)
    assert_all_roots_intact(table)


def test_a_root_appearing_during_expiration_is_honoured(table: FakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """A branch created from snapshot 1 while expiration runs (after its plan) must keep its files."""
    s1, f1 = table.append()
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    real = deletion.all_roots
    calls = []

    def racing_all_roots(store):  # noqa: ANN001, ANN202
        roots = real(store)
        if not calls:  # right after the plan is made, someone creates a branch holding snapshot 1
            d = branch_path(table.store.table_path, "late")
            os.makedirs(f"{d}/snapshot")
            os.makedirs(f"{d}/schema")
            Path(f"{d}/snapshot/snapshot-1").write_text(s1.to_json())
            Path(f"{d}/schema/schema-0").write_text(Path(f"{table.store.table_path}/schema/schema-0").read_text())
        calls.append(1)
        return roots

    monkeypatch.setattr(deletion, "all_roots", racing_all_roots)
    result = expire(table)
    assert result.expired_snapshots == [1, 2]
    assert set(f1) <= data_files_on_disk(table)
    assert not result.deleted_data_files
    assert_all_roots_intact(table)


def test_unreadable_root_blocks_deletion(table: FakeTable) -> None:
    table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("broken")
    table.commit([table.new_file("a")], overwrite=True)
    table.append()
    table.append()
    expire(table, retain_min=3)  # snapshot 1 goes; only the tag still names its lists
    tag = TagManager(table.store).get("broken")
    os.remove(f"{table.store.table_path}/manifest/{tag.delta_manifest_list}")
    files = data_files_on_disk(table)
    with pytest.raises(CorruptMetadataError, match="tag 'broken'"):
        expire(table)
    assert data_files_on_disk(table) == files  # nothing deleted
    with pytest.raises(CorruptMetadataError, match="Nothing was deleted"):
        remove_orphan_files(table.store, older_than=FUTURE)


# ------------------------------------------------------------------------------------------ corrupt metadata
def all_files(table: FakeTable) -> dict[str, bytes]:
    """Every file under the table, with its content."""
    out = {}
    for path in Path(table.store.table_path).rglob("*"):
        if path.is_file():
            out[str(path.relative_to(table.store.table_path))] = path.read_bytes()
    return out


CORRUPTIONS = {
    "truncated": b'{"version" : 3, "id" : 1, "schemaId',
    "not-utf8": b"\xff\xfe\x00garbage",
    "not-a-snapshot": b'{"tagCreateTime" : [2025, 1, 1, 0, 0]}',
}


@pytest.fixture
def history(table: FakeTable) -> FakeTable:
    """Main: snapshots 1..4 (3 overwrites partition a, so 1 and 2's files are deletable), tag ``keep`` on 4,
    branch ``b`` (from tag ``keep``) with tag ``bt``; everything aged (orphan removal would act on it)."""
    table.append()
    table.append()
    table.commit([table.new_file("a")], overwrite=True)
    table.append(dt="b")
    main = Table(FileStore(table.store.fileio, table.store.table_path))
    main.tags.create("keep")
    table.branch_from_tag("b", "keep")
    Table(FileStore(table.store.fileio, table.store.table_path, "b")).tags.create("bt")
    table.new_file("a")  # an orphan (a failed write)
    Path(f"{table.store.table_path}/snapshot/.snapshot-9.0b6f3a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b.tmp").write_bytes(
        b"partial"
    )
    age_all_files(table)
    return table


@pytest.mark.parametrize("where", ["main", "branch"])
@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_tag_stops_expiration_before_anything_is_deleted(
    history: FakeTable, where: str, corruption: str
) -> None:
    """Expiration needs every tag of every branch to know what is still used. A corrupt one must stop it
    before the first deletion (it used to delete snapshot-1 first), with an error naming the file and the fix."""
    tag_file = f"{history.path}/tag/tag-keep" if where == "main" else f"{history.path}/branch/branch-b/tag/tag-bt"
    Path(tag_file).write_bytes(CORRUPTIONS[corruption])
    before = all_files(history)
    with pytest.raises(CorruptMetadataError) as err:
        expire(history)
    gone = sorted(set(before) - set(all_files(history)))
    assert not gone, f"a corrupt tag must leave every snapshot, manifest and data file; deleted: {gone}"
    msg = str(err.value)
    assert tag_file in msg and "Nothing was deleted" in msg, msg
    assert "restore" in msg.lower() and "delete" in msg.lower(), msg
    with pytest.raises(CorruptMetadataError, match="Nothing was deleted"):
        expire(history, dry_run=True)
    with pytest.raises(CorruptMetadataError, match="Nothing was deleted"):
        remove_orphan_files(history.store, older_than=FUTURE)
    assert all_files(history) == before


def test_a_corrupt_tag_stops_tag_deletion_with_clean_files(history: FakeTable) -> None:
    """Deleting tag ``keep`` with clean_files computes what it alone kept alive from every other root; a
    corrupt tag elsewhere must stop it before the tag file (or anything else) is deleted."""
    Path(f"{history.path}/branch/branch-b/tag/tag-bt").write_bytes(CORRUPTIONS["truncated"])
    before = all_files(history)
    with pytest.raises(CorruptMetadataError) as err:
        delete_tags(FileStore(history.fileio, history.path, "main"), ["keep"], clean_files=True)
    assert sorted(set(before) - set(all_files(history))) == [], "the tag (and its files) must still be there"
    assert "tag-bt" in str(err.value) and "Nothing was deleted" in str(err.value), str(err.value)
    with pytest.raises(CorruptMetadataError, match="tag-bt"):
        expire_tags(FileStore(history.fileio, history.path, "main"), older_than=FUTURE, clean_files=True)
    assert all_files(history) == before
    # Without file cleaning only the tag file goes: nothing needs the other roots, and the corrupt tag itself can
    # be dropped that way (the fix the error names); then expiration goes ahead.
    assert delete_tags(FileStore(history.fileio, history.path, "main"), ["keep"]).deleted == ["keep"]
    assert delete_tags(FileStore(history.fileio, history.path, "b"), ["bt"]).deleted == ["bt"]
    assert expire(history).expired_snapshots == [1, 2, 3]
    assert_all_roots_intact(history)


def test_a_corrupt_snapshot_of_another_branch_stops_expiration(history: FakeTable) -> None:
    Path(f"{history.path}/branch/branch-b/snapshot/snapshot-4").write_bytes(CORRUPTIONS["truncated"])
    before = all_files(history)
    with pytest.raises(CorruptMetadataError) as err:
        expire(history)
    assert sorted(set(before) - set(all_files(history))) == []
    assert "branch-b/snapshot/snapshot-4" in str(err.value) and "Nothing was deleted" in str(err.value)


# ------------------------------------------------------------------------------------------ property test
OP_NAMES = (
    ["append"] * 3
    + ["overwrite"] * 2
    + ["tag"] * 3
    + ["expire"] * 3
    + ["untag", "untag_clean", "rollback", "rollback_tag", "orphans", "branch", "branch_append", "consumer"]
)
# Model: per branch, snapshot id -> file set and tag name -> (snapshot id, file set).
OPS = st.lists(st.tuples(st.sampled_from(OP_NAMES), st.integers(0, 1000), st.integers(1, 3)), min_size=1, max_size=25)


class Model:
    def __init__(self) -> None:
        self.snaps: dict[str, dict[int, frozenset[str]]] = {"main": {}}
        self.tags: dict[str, dict[str, tuple[int, frozenset[str]]]] = {"main": {}}
        # Decoupled changelog: per branch, the expired snapshots kept as changelog/changelog-N.
        self.changelogs: dict[str, dict[int, frozenset[str]]] = {"main": {}}
        self.decoupled = False

    def expired(self, b: str, sids: Iterable[int]) -> None:
        """Snapshots of ``b`` expired: gone, or (decoupled changelog) kept as long-lived changelog."""
        for sid in list(sids):
            files = self.snaps[b].pop(sid)
            if self.decoupled:
                self.changelogs.setdefault(b, {})[sid] = files

    def latest(self, b: str) -> int | None:
        return max(self.snaps[b]) if self.snaps[b] else None

    def all_files(self) -> set[str]:
        out: set[str] = set()
        for b in self.snaps:
            for f in self.snaps[b].values():
                out |= f
            for _, f in self.tags[b].values():
                out |= f
            for f in self.changelogs.get(b, {}).values():
                out |= f
        return out


def _check(table: FakeTable, model: Model) -> None:
    for b, snaps in model.snaps.items():
        sm = table.snapshots(b)
        assert set(sm.list_ids()) == set(snaps), b
        for sid, files in snaps.items():
            assert table.live_names(sm.snapshot(sid)) == files, (b, sid)
        tm = table.tags(b)
        assert set(tm.list_names()) == set(model.tags[b]), b
        for name, (sid, files) in model.tags[b].items():
            snap = tm.get(name)
            assert snap.id == sid and table.live_names(snap) == files, (b, name)
    assert_all_roots_intact(table)
    assert model.all_files() <= data_files_on_disk(table)


#: Table options of the automatic-expiration variant: every commit expires all but the newest AUTO_MAX snapshots
#: of its branch (unless a consumer of that branch pins them).
AUTO_MAX = 3
AUTO_OPTIONS = {"snapshot.num-retained.max": str(AUTO_MAX), "snapshot.num-retained.min": "1"}


def _auto_expired(table: FakeTable, model: Model, b: str) -> None:
    """What a commit's automatic expiration must have done on branch ``b``: snapshots below
    ``min(latest - AUTO_MAX + 1, the branch's lowest consumer)`` are gone, the rest are kept."""
    latest = model.latest(b)
    assert latest is not None
    consumer = ConsumerManager(FileStore(table.store.fileio, table.store.table_path, b)).min_next_snapshot()
    end = latest - AUTO_MAX + 1 if consumer is None else min(latest - AUTO_MAX + 1, consumer)
    model.expired(b, [k for k in model.snaps[b] if k < end])


#: The decoupled variant: the changelog outlives the snapshots (kept as changelog/changelog-N), then expires too.
DECOUPLED_OPTIONS = {**AUTO_OPTIONS, "changelog.num-retained.max": "6"}


def _sync_changelogs(table: FakeTable, model: Model) -> None:
    """The long-lived changelogs on disk: only expired snapshots, minus those expire_changelogs removed."""
    for b in model.snaps:
        store = FileStore(table.store.fileio, table.store.table_path, b)
        names = table.store.fileio.list_names(f"{store.branch_root}/changelog")
        ids = {int(n.split("-")[1]) for n in names if n.startswith("changelog-")}
        known = model.changelogs.setdefault(b, {})
        assert ids <= set(known), (b, ids, set(known))
        model.changelogs[b] = {i: f for i, f in known.items() if i in ids}


def _run(ops: list[tuple[str, int, int]], root: Path, auto: bool = False, decoupled: bool = False) -> Model:
    table = FakeTable(root / "t", options=DECOUPLED_OPTIONS if decoupled else AUTO_OPTIONS if auto else {})
    model = Model()
    model.decoupled = decoupled
    auto = auto or decoupled
    counter = 0
    for op, pick, n in ops:
        branches = sorted(model.snaps)
        b = "main" if op in ("append", "overwrite", "expire") and pick % 3 else branches[pick % len(branches)]
        latest = model.latest(b)
        if op in ("append", "branch_append", "overwrite"):
            if op == "branch_append" and b == "main":
                continue
            files = [table.new_file("a" if (pick + i) % 2 else "b") for i in range(n)]
            snap = table.commit(files, branch=b, overwrite=op == "overwrite")
            names = frozenset(m.file_name for _, m in files)
            prev = model.snaps[b][latest] if latest is not None and op != "overwrite" else frozenset()
            model.snaps[b][snap.id] = prev | names
            if auto:
                _auto_expired(table, model, b)
        elif op == "consumer" and latest is not None:
            # A stream of branch b that has read up to one of its snapshots (or stopped reading at all).
            sid = sorted(model.snaps[b])[pick % len(model.snaps[b])]
            consumers = ConsumerManager(FileStore(table.store.fileio, table.store.table_path, b))
            consumers.record(f"c{pick % 2}", sid)
            if n == 3:
                os.remove(consumers.path(f"c{pick % 2}"))
        elif op == "tag" and latest is not None:
            sid = sorted(model.snaps[b])[pick % len(model.snaps[b])]
            counter += 1
            name = f"t{counter}"
            Table(FileStore(table.store.fileio, table.store.table_path, b)).tags.create(name, snapshot_id=sid)
            model.tags[b][name] = (sid, model.snaps[b][sid])
        elif op in ("untag", "untag_clean") and model.tags[b]:
            name = sorted(model.tags[b])[pick % len(model.tags[b])]
            delete_tags(
                FileStore(table.store.fileio, table.store.table_path, b), [name], clean_files=op == "untag_clean"
            )
            del model.tags[b][name]
        elif op == "rollback" and latest is not None:
            sid = sorted(model.snaps[b])[pick % len(model.snaps[b])]
            rollback_to(FileStore(table.store.fileio, table.store.table_path, b), snapshot_id=sid)
            model.snaps[b] = {k: v for k, v in model.snaps[b].items() if k <= sid}
            model.tags[b] = {k: v for k, v in model.tags[b].items() if v[0] <= sid}
        elif op == "rollback_tag" and model.tags[b]:
            name = sorted(model.tags[b])[pick % len(model.tags[b])]
            sid, files = model.tags[b][name]
            rollback_to(FileStore(table.store.fileio, table.store.table_path, b), tag=name)
            model.snaps[b] = {k: v for k, v in model.snaps[b].items() if k <= sid}
            model.snaps[b][sid] = files
            model.tags[b] = {k: v for k, v in model.tags[b].items() if v[0] <= sid}
        elif op == "expire" and latest is not None:
            result = expire_snapshots(
                FileStore(table.store.fileio, table.store.table_path, b),
                retain_min=n,
                older_than=FUTURE,
                max_deletes=1 + pick % 4,
            )
            model.expired(b, result.expired_snapshots)
        elif op == "orphans":
            remove_orphan_files(table.store, older_than=FUTURE)
            assert data_files_on_disk(table) == model.all_files()
            assert set(used_files(table.store).manifests) >= manifests_on_disk(table) - {
                n for n in manifests_on_disk(table) if n.startswith(".")
            }
        elif op == "branch" and model.tags["main"]:
            name = sorted(model.tags["main"])[pick % len(model.tags["main"])]
            counter += 1
            new = f"b{counter}"
            table.branch_from_tag(new, name)
            sid, files = model.tags["main"][name]
            model.snaps[new] = {sid: files}
            model.tags[new] = {name: (sid, files)}
        if decoupled:
            _sync_changelogs(table, model)
        _check(table, model)
    return model


@settings(
    max_examples=int(os.environ.get("PAIMON_HYPOTHESIS_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(OPS)
def test_property_every_remaining_snapshot_and_tag_keeps_all_its_files(ops: list[tuple[str, int, int]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        _run(ops, Path(d))


@settings(
    max_examples=int(os.environ.get("PAIMON_HYPOTHESIS_EXAMPLES", "40")) // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(OPS)
def test_property_automatic_expiration_keeps_every_reachable_file(ops: list[tuple[str, int, int]]) -> None:
    """The same histories on a table whose commits expire snapshots themselves (``snapshot.num-retained.max``),
    with tags, branches from tags and consumers in the mix."""
    with tempfile.TemporaryDirectory() as d:
        _run(ops, Path(d), auto=True)


@settings(
    max_examples=int(os.environ.get("PAIMON_HYPOTHESIS_EXAMPLES", "40")) // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(OPS)
def test_property_decoupled_changelog_keeps_every_reachable_file(ops: list[tuple[str, int, int]]) -> None:
    """The same histories with a changelog retention longer than the snapshots': expired snapshots live on as
    changelog/changelog-N, whose files stay until expire_changelogs (after each commit) drops them."""
    with tempfile.TemporaryDirectory() as d:
        _run(ops, Path(d), decoupled=True)


def test_property_regression_history() -> None:
    """A fixed, long history exercising every operation (fast, deterministic)."""
    ops = [
        ("append", 1, 2),
        ("append", 2, 1),
        ("tag", 0, 1),
        ("branch", 0, 1),
        ("branch_append", 1, 2),
        ("tag", 1, 1),
        ("overwrite", 3, 1),
        ("untag", 0, 1),
        ("expire", 0, 1),
        ("branch_append", 1, 1),
        ("expire", 1, 1),
        ("rollback_tag", 1, 1),
        ("orphans", 0, 1),
        ("append", 0, 1),
        ("expire", 3, 1),
        ("untag_clean", 1, 1),
        ("rollback", 0, 1),
        ("orphans", 0, 1),
    ]
    with tempfile.TemporaryDirectory() as d:
        _run(ops, Path(d))


def test_property_regression_history_with_automatic_expiration() -> None:
    """Commits expire on main and on a branch made from a tag of a snapshot that then expires; a consumer pins
    main's snapshots until a later one is recorded."""
    ops = [
        ("append", 1, 2),
        ("overwrite", 1, 1),
        ("tag", 0, 1),  # on snapshot 1, which expires below
        ("append", 1, 1),
        ("overwrite", 1, 1),
        ("branch", 0, 1),
        ("branch_append", 0, 1),
        ("branch_append", 0, 1),
        ("branch_append", 0, 1),
        ("branch_append", 0, 1),
        ("consumer", 1, 1),  # a consumer of main pins its second-oldest snapshot
        ("append", 1, 1),
        ("overwrite", 1, 1),
        ("consumer", 4, 1),  # and moves on
        ("append", 1, 1),
        ("rollback_tag", 1, 1),
        ("append", 1, 1),
        ("orphans", 0, 1),
    ]
    with tempfile.TemporaryDirectory() as d:
        model = _run(ops, Path(d), auto=True)
    assert len(model.snaps) == 2 and all(len(snaps) <= AUTO_MAX for snaps in model.snaps.values())
    assert min(model.snaps["b2"]) > 1  # the branch's own commits expired its copy of the tagged snapshot


# ------------------------------------------------------------------------------------------ interop
try:
    from tests import oracle
except ImportError:  # pragma: no cover
    import oracle  # type: ignore[no-redef]


@pytest.mark.interop
def test_pypaimon_reads_a_table_we_expired_rolled_back_and_cleaned(tmp_path: Path, oracle_python: str) -> None:
    wh = tmp_path / "wh"
    spec = oracle.table_spec([["id", "BIGINT"], ["dt", "STRING"]], partition_keys=["dt"])
    oracle.pypaimon_write(
        wh,
        "db.t",
        [
            [{"id": 1, "dt": "a"}],
            [{"id": 2, "dt": "b"}],
            {"rows": [{"id": 3, "dt": "a"}], "overwrite": True},
            [{"id": 4, "dt": "b"}],
            [{"id": 5, "dt": "a"}],
        ],
        create=spec,
    )
    path = str(wh / "db.db" / "t")
    t = Table.open(path)
    t.tags.create("t2", snapshot_id=2)
    t.tags.create("t4", snapshot_id=4, time_retained="1 d")
    result = t.maintenance.expire_snapshots(retain_min=2, older_than=FUTURE)
    assert result.expired_snapshots == [1, 2, 3] and result.deleted_manifests
    expired = OracleBatch(wh)  # pypaimon's part of each step runs in one oracle process
    expired.read("latest", "db.t", impls=("pypaimon",))
    expired.read("t2", "db.t", {"scan.tag-name": "t2"}, impls=("pypaimon",))
    expired.run()
    assert expired.tables["latest"]["pypaimon"].column("id").to_pylist() == [2, 3, 4, 5]  # dynamic overwrite of a
    assert expired.tables["t2"]["pypaimon"].column("id").to_pylist() == [1, 2]
    t.maintenance.rollback_to(tag="t2")  # snapshot 2 expired: restored from the tag
    t.maintenance.remove_orphan_files(older_than=FUTURE)
    rolled_back = OracleBatch(wh)
    inspected = rolled_back.inspect("db.t", "pypaimon")
    rolled_back.read("rolled back", "db.t", impls=("pypaimon",))
    written = rolled_back.write("db.t", [[{"id": 6, "dt": "b"}]])
    rolled_back.read("written", "db.t", impls=("pypaimon",))
    rolled_back.run()
    assert rolled_back.results[inspected]["snapshots"][-1]["id"] == 2
    assert rolled_back.tables["rolled back"]["pypaimon"].column("id").to_pylist() == [1, 2]
    assert rolled_back.results[written]["snapshot_ids"] == [3]
    assert rolled_back.tables["written"]["pypaimon"].column("id").to_pylist() == [1, 2, 6]


def test_decoupled_changelog_keeps_expired_snapshots_as_changelog(tmp_path: Path) -> None:
    """Only a changelog retention *longer* than the snapshots' is decoupled (Java's rule): the expiring snapshot
    becomes changelog/changelog-N (its snapshot file unchanged) and nothing it used is deleted yet."""
    options = {"changelog.time-retained": "1 d", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
    table = FakeTable(tmp_path / "t", options=options)
    _, files = table.append()
    first = (tmp_path / "t" / "snapshot" / "snapshot-1").read_bytes()
    table.append()  # the commit's own expiration keeps snapshot 1 as changelog
    assert table.snapshots().list_ids() == [2]
    assert (tmp_path / "t" / "changelog" / "changelog-1").read_bytes() == first
    assert (tmp_path / "t" / "changelog" / "LATEST").read_text() == "1"
    assert expire(table).expired_snapshots == []
    on_disk = {p.name for p in (tmp_path / "t").rglob("data-*")}
    assert files and set(files) <= on_disk  # the changelog still reaches them


def test_a_changelog_retention_no_longer_than_the_snapshots_is_not_decoupled(tmp_path: Path) -> None:
    options = {"changelog.num-retained.max": "100", "changelog.time-retained": "1 min", "write-only": "true"}
    table = FakeTable(tmp_path / "t", options=options)
    table.append()
    table.append()
    assert expire(table).expired_snapshots == [1]


# ------------------------------------------------------------------------------------------ root cache
def test_root_cache_is_exact_and_spares_rereads(table: FakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cached file sets of tags and snapshots never protect a file after its last root is gone, and a warm
    cache reads no manifest list of a root it has already seen."""
    from pyspark_paimon.metadata.maintenance.reachability import ROOT_REFS_CACHE
    from pyspark_paimon.metadata.manifests.manifest import ManifestStore

    ROOT_REFS_CACHE.clear()
    _, f1 = table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("v1")
    table.commit([table.new_file("a")], overwrite=True)
    _, f3 = table.append()
    main = FileStore(table.store.fileio, table.store.table_path, "main")
    used_files(main)  # warm: every root is cached now
    reads: list[str] = []
    real = ManifestStore.read_list
    monkeypatch.setattr(ManifestStore, "read_list", lambda self, name: reads.append(name) or real(self, name))
    used_files(main)
    assert reads == [] and ROOT_REFS_CACHE.hits >= 4
    result = expire(table)  # snapshots 1, 2 go; the cached tag still protects f1
    assert result.expired_snapshots == [1, 2]
    assert set(f1) <= data_files_on_disk(table)
    delete_tags(main, ["v1"], clean_files=True)  # its cached entry must not outlive the tag
    assert not set(f1) & data_files_on_disk(table)
    assert set(f3) <= data_files_on_disk(table)
    assert_all_roots_intact(table)


def test_manifest_reads_per_expiration_stay_bounded_as_history_grows(
    table: FakeTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A streaming writer expires after every commit: with tags piling up, the manifest lists read per
    expiration must not grow with the number of commits (counted, never timed)."""
    from pyspark_paimon.metadata.maintenance.reachability import ROOT_REFS_CACHE
    from pyspark_paimon.metadata.manifests.manifest import ManifestStore

    ROOT_REFS_CACHE.clear()
    reads: list[str] = []
    real = ManifestStore.read_list
    monkeypatch.setattr(ManifestStore, "read_list", lambda self, name: reads.append(name) or real(self, name))
    per_commit = []
    tables = Table(FileStore(table.store.fileio, table.store.table_path))
    for i in range(1, 31):
        table.append()
        if i % 5 == 0:
            tables.tags.create(f"t{i}")
        reads.clear()
        expire(table, retain_max=3, retain_min=3)
        per_commit.append(len(reads))
    assert max(per_commit[10:]) <= max(per_commit[3:10]), per_commit
    assert_all_roots_intact(table)
