"""Orphan-file removal: unreferenced files older than the cutoff, across every branch; dry run; metadata and
young files are never touched."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from maint_helpers import FakeTable, age_all_files, assert_all_roots_intact, data_files_on_disk, manifests_on_disk

from pyspark_paimon.metadata.maintenance.orphans import remove_orphan_files
from pyspark_paimon.metadata.maintenance.reachability import used_files
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.table import Table


@pytest.fixture
def table(tmp_path: Path) -> FakeTable:
    return FakeTable(tmp_path / "t")


def _orphan_file(table: FakeTable, dt_value: str = "a") -> str:
    """A data file written but never committed (an aborted write)."""
    _, meta = table.new_file(dt_value)
    return meta.file_name


def test_dry_run_lists_and_real_run_deletes_only_unreferenced_old_files(table: FakeTable) -> None:
    _, live1 = table.append()
    lost = _orphan_file(table)
    lost_b = _orphan_file(table, "zz")
    Path(f"{table.store.table_path}/manifest/manifest-deadbeef-0").write_bytes(b"junk")
    Path(f"{table.store.table_path}/manifest/.manifest-list-x.tmp").write_bytes(b"temp")
    age_all_files(table)
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    dry = t.maintenance.remove_orphan_files(dry_run=True)
    names = {Path(p).name for p in dry.files}
    assert names == {lost, lost_b, "manifest-deadbeef-0", ".manifest-list-x.tmp"}
    assert dry.dry_run and dry.total_bytes == 16 + 16 + 4 + 4
    assert {lost, lost_b} <= data_files_on_disk(table)  # dry run deleted nothing
    real = t.maintenance.remove_orphan_files()
    assert {Path(p).name for p in real.files} == names
    assert not {lost, lost_b} & data_files_on_disk(table)
    assert set(live1) <= data_files_on_disk(table)
    assert "manifest-deadbeef-0" not in manifests_on_disk(table)
    assert_all_roots_intact(table)
    assert t.maintenance.remove_orphan_files().files == []


def test_young_files_are_never_deleted(table: FakeTable) -> None:
    table.append()
    lost = _orphan_file(table)
    Path(f"{table.store.table_path}/manifest/.manifest-list-inflight.tmp").write_bytes(b"temp")
    assert (
        Table(FileStore(table.store.fileio, table.store.table_path)).maintenance.remove_orphan_files().files == []
    )  # default cutoff: 1 day
    assert lost in data_files_on_disk(table)
    # An explicit cutoff in the past still protects them; one after their mtime does not.
    past = dt.datetime.now() - dt.timedelta(hours=1)
    assert remove_orphan_files(table.store, older_than=past).files == []
    later = int(time.time() * 1000) + 60_000
    assert {Path(p).name for p in remove_orphan_files(table.store, older_than=later).files} == {
        lost,
        ".manifest-list-inflight.tmp",
    }


def test_metadata_and_foreign_files_are_never_touched(table: FakeTable) -> None:
    table.append()
    Table(FileStore(table.store.fileio, table.store.table_path)).tags.create("t1")
    table.branch_from_tag("b", "t1")
    Path(f"{table.store.table_path}/README").write_text("not ours")
    Path(f"{table.store.table_path}/dt=a/notes.txt").write_text("not in a bucket dir")
    Path(f"{table.store.table_path}/snapshot/stray-file").write_text("in a metadata dir")
    os.makedirs(f"{table.store.table_path}/other/bucket-0")
    Path(f"{table.store.table_path}/other/bucket-0/data-x.parquet").write_text("not a partition dir")
    age_all_files(table)
    result = remove_orphan_files(table.store, older_than=dt.datetime.now() + dt.timedelta(days=1))
    assert result.files == []
    for p in (
        "README",
        "dt=a/notes.txt",
        "snapshot/stray-file",
        "other/bucket-0/data-x.parquet",
        "schema/schema-0",
        "snapshot/snapshot-1",
        "tag/tag-t1",
        "branch/branch-b/tag/tag-t1",
        "branch/branch-b/snapshot/snapshot-1",
        "branch/branch-b/schema/schema-0",
    ):
        assert os.path.exists(f"{table.store.table_path}/{p}"), p


def test_files_used_only_by_a_branch_or_a_tag_are_kept(table: FakeTable) -> None:
    _, f1 = table.append()
    main = Table(FileStore(table.store.fileio, table.store.table_path))
    main.tags.create("T")
    table.branch_from_tag("b", "T")
    _, g1 = table.append(branch="b")
    Table(FileStore(table.store.fileio, table.store.table_path, "b")).tags.create("bt")
    table.commit([table.new_file("a")], overwrite=True, branch="b")
    table.commit([table.new_file("a")], overwrite=True)
    _, h1 = table.append()
    main.tags.create("H")
    table.commit([table.new_file("a")], overwrite=True)
    main.tags.delete("T")
    main.maintenance.expire_snapshots(retain_min=1, older_than=dt.datetime.now() + dt.timedelta(days=1))
    age_all_files(table)
    remove_orphan_files(table.store, older_than=dt.datetime.now() + dt.timedelta(days=1))
    on_disk = data_files_on_disk(table)
    assert set(f1) | set(g1) | set(h1) <= on_disk
    assert_all_roots_intact(table)


def test_rollback_leftovers_and_dropped_branches_become_orphans(table: FakeTable) -> None:
    table.append()
    _, f2 = table.append()
    main = Table(FileStore(table.store.fileio, table.store.table_path))
    main.tags.create("T")
    table.branch_from_tag("b", "T")
    _, g = table.append(branch="b")
    main.maintenance.rollback_to(snapshot_id=1)
    assert set(f2) <= data_files_on_disk(table)  # rollback deletes no data
    age_all_files(table)
    cutoff = dt.datetime.now() + dt.timedelta(days=1)
    remove_orphan_files(table.store, older_than=cutoff)
    assert set(f2) | set(g) <= data_files_on_disk(table)  # branch b still reads them
    table.store.fileio.delete_dir(f"{table.store.table_path}/branch/branch-b")  # drop the branch
    result = remove_orphan_files(table.store, older_than=cutoff)
    assert {Path(p).name for p in result.files} >= set(f2) | set(g)
    assert not (set(f2) | set(g)) & data_files_on_disk(table)
    assert manifests_on_disk(table) <= used_files(table.store).manifests
    assert_all_roots_intact(table)


def test_unpartitioned_table(tmp_path: Path) -> None:
    from pyspark_paimon.metadata.io.fileio import FileIO
    from pyspark_paimon.metadata.manifests.manifest import EMPTY_ROW, DataFileMeta
    from pyspark_paimon.metadata.schema.table_schema import SchemaManager
    from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit
    from pyspark_paimon.metadata.types.ddl import parse_ddl

    fileio, path = FileIO(), str(tmp_path / "u")
    SchemaManager(fileio, path).create_table(parse_ddl("id bigint"))
    os.makedirs(f"{path}/bucket-0")
    for name in ("data-live-0.parquet", "data-lost-0.parquet"):
        Path(f"{path}/bucket-0/{name}").write_bytes(b"1234")
    live = DataFileMeta("data-live-0.parquet", 4, 1)
    FileStoreCommit(FileStore(fileio, path)).commit([CommitMessage(EMPTY_ROW, 0, -1, (live,))])
    result = remove_orphan_files(FileStore(fileio, path), older_than=int(time.time() * 1000) + 60_000)
    assert [Path(p).name for p in result.files] == ["data-lost-0.parquet"]
    assert os.path.exists(f"{path}/bucket-0/data-live-0.parquet")


# ------------------------------------------------------------------------------------------ temp files
_KILLED_WRITE = """
import os, signal, sys
sys.path.insert(0, {root!r})
from pyspark_paimon.metadata.io.fileio import FileIO

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

os.link = os.replace = killed  # killed between writing the temp file and moving it into place
FileIO().{method}({path!r}, b"partial")
"""


def _killed_write(path: str, method: str) -> None:
    """Run ``FileIO.<method>(path)`` in a process that is SIGKILLed before the temp file is moved into place,
    exactly like a commit, schema change or tag write killed mid-way (``finally`` clauses never run)."""
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITE.format(root=root, method=method, path=path)],
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()


def _temp_files(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob(".*.tmp")}


def test_temp_files_of_killed_writers_are_removed(table: FakeTable) -> None:
    """A writer killed between writing its temp file and linking/renaming it leaves ``.<name>.<uuid>.tmp`` in
    ``snapshot/``, ``schema/``, ``tag/`` or a branch directory. Those are orphans like any other: removed once
    older than the cutoff; never a live snapshot, schema, tag, hint, or a temp file of a write in flight."""
    table.append()
    table.append()
    main = Table(FileStore(table.store.fileio, table.store.table_path))
    main.tags.create("t1", snapshot_id=1)
    table.branch_from_tag("b", "t1")
    SnapshotManager(table.store.fileio, table.store.table_path).commit_earliest_hint(1)
    p = table.store.table_path
    for path, method in [
        (f"{p}/snapshot/snapshot-3", "try_create"),
        (f"{p}/snapshot/LATEST", "write_bytes"),
        (f"{p}/schema/schema-1", "try_create"),
        (f"{p}/tag/tag-t2", "write_bytes"),
        (f"{p}/branch/branch-b/snapshot/snapshot-2", "try_create"),
        (f"{p}/branch/branch-b/branch.json", "try_create"),
        (f"{p}/manifest/manifest-list-killed-0", "write_bytes"),
    ]:
        _killed_write(path, method)
    left = _temp_files(p)
    assert {name.rsplit("/", 1)[0] for name in left} == {
        "snapshot",
        "schema",
        "tag",
        "branch/branch-b/snapshot",
        "branch/branch-b",
        "manifest",
    }
    assert len(left) == 7 and not os.path.exists(f"{p}/snapshot/snapshot-3")
    # Look-alikes that are not our (or Java's) temp files, and metadata: never touched.
    keep = ["snapshot/.snapshot-1.crc", "snapshot/snapshot-1.tmp", "tag/.tag-t1.not-a-uuid.tmp"]
    for name in keep:
        Path(f"{p}/{name}").write_bytes(b"x")
    age_all_files(table)
    # A commit in flight right now: its temp file is young and must survive.
    _killed_write(f"{p}/snapshot/snapshot-4", "try_create")
    young = _temp_files(p) - left - set(keep)
    assert len(young) == 1
    before = {
        n: Path(f"{p}/{n}").read_bytes()
        for n in (
            "snapshot/snapshot-1",
            "snapshot/snapshot-2",
            "snapshot/LATEST",
            "snapshot/EARLIEST",
            "schema/schema-0",
            "tag/tag-t1",
            "branch/branch-b/snapshot/snapshot-1",
            "branch/branch-b/tag/tag-t1",
            *keep,
        )
    }

    dry = remove_orphan_files(
        FileStore(table.store.fileio, p), older_than=dt.datetime.now() - dt.timedelta(hours=1), dry_run=True
    )
    assert {str(Path(f).relative_to(p)) for f in dry.files} == left
    assert _temp_files(p) == left | young | {keep[2]}, "a dry run deletes nothing"
    result = remove_orphan_files(FileStore(table.store.fileio, p), older_than=dt.datetime.now() - dt.timedelta(hours=1))
    assert {str(Path(f).relative_to(p)) for f in result.files} == left
    assert _temp_files(p) == young | {keep[2]}
    assert {n: Path(f"{p}/{n}").read_bytes() for n in before} == before
    assert_all_roots_intact(table)
    assert SnapshotManager(table.store.fileio, p).latest_id() == 2


def test_a_killed_jvm_writes_staging_directory_goes_once_old(table: FakeTable) -> None:
    """t.write_spark stages Spark's files in _jvm-write-<uuid>/ before moving them into their buckets; a driver
    killed meanwhile leaves the directory, whose files nothing references: removed once older than the cutoff,
    with the emptied directory. A young one (a write in flight) is kept."""
    _, live = table.append()
    root = table.store.table_path
    old = Path(f"{root}/_jvm-write-old/dt=a")
    old.mkdir(parents=True)
    (old / "part-00000-x.parquet").write_bytes(b"spark")
    (old.parent / "_SUCCESS").write_bytes(b"")
    age_all_files(table)
    young = Path(f"{root}/_jvm-write-young")
    young.mkdir()
    (young / "part-00000-y.parquet").write_bytes(b"spark")
    t = Table(FileStore(table.store.fileio, table.store.table_path))
    result = t.maintenance.remove_orphan_files()
    assert sorted(Path(p).name for p in result.files) == ["_SUCCESS", "part-00000-x.parquet"]
    assert not old.parent.exists() and (young / "part-00000-y.parquet").exists()
    assert set(live) <= data_files_on_disk(table)
    assert_all_roots_intact(table)
