"""The commit protocol (metadata/snapshots/commit.py, Java's `FileStoreCommitImpl`): snapshots, manifests, overwrite,
conflicts and concurrency.

Tables are real (``SchemaManager.create_table`` on local disk); data files are made-up ``DataFileMeta``s
with real partition BinaryRows, because the commit only ever looks at metadata. The last test writes real
parquet files through ``Table.write_arrow`` and has pypaimon read the result.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import subprocess
import textwrap
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, cast

import pyarrow as pa
import pytest

from pyspark_paimon.errors import CommitConflictError, CommitError, CommitStateUnknownError, OptionError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, KIND_DELETE, DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.rows.binary_row import deserialize_row, serialize_row
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.commit import (
    CommitMessage,
    FileStoreCommit,
    OverwriteSpec,
    commit_or_abort,
    partition_stats,
)
from pyspark_paimon.metadata.snapshots.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import AtomicType, string_type
from tests.oracle import require_oracle_python

FAST_RETRY = {"commit.min-retry-wait": "1 ms", "commit.max-retry-wait": "20 ms", "commit.max-retries": "60"}


# --------------------------------------------------------------------------------------------- helpers
@dataclass
class T:
    """A test table: dt STRING, h INT partitions, PK (dt, h, id), 2 buckets."""

    fileio: FileIO
    path: str
    schema: TableSchema

    @property
    def store(self) -> FileStore:
        return FileStore(self.fileio, self.path)  # fresh caches every time

    def part(self, dt: str | None, h: int | None = 1) -> bytes:
        return serialize_row([dt, h], [f.type for f in self.schema.partition_fields])

    def values(self, partition: bytes) -> tuple:
        return deserialize_row(partition, [f.type for f in self.schema.partition_fields])

    def committer(self, **options: str) -> FileStoreCommit:
        return FileStoreCommit(FileStore(self.fileio, self.path), options={**FAST_RETRY, **options})

    def live(self, snapshot: Snapshot | None = None) -> dict[str, ManifestEntry]:
        store = self.store
        snap = snapshot if snapshot is not None else store.snapshots.latest()
        return {e.file.file_name: e for e in store.live_entries(snap)}

    def delta(self, snapshot: Snapshot) -> list[ManifestEntry]:
        store = self.store
        return store.manifests.read_entries(store.manifests.read_list(snapshot.delta_manifest_list))

    def manifest_dir_files(self) -> set[str]:
        return set(self.fileio.list_names(f"{self.path}/manifest"))

    def referenced_manifest_files(self) -> set[str]:
        store = self.store
        out: set[str] = set()
        for snap in store.snapshots.snapshots():
            for lst in (snap.base_manifest_list, snap.delta_manifest_list):
                out.add(lst)
                out.update(m.file_name for m in store.manifests.read_list(lst))
        return out


def make_table(root: Path, options: dict[str, str] | None = None, name: str = "t") -> T:
    fio, path = FileIO.for_uri(str(root / "db.db" / name))
    schema = SchemaManager(fio, path).create_table(
        [("dt", string_type()), ("h", AtomicType("INT")), ("id", AtomicType("BIGINT")), ("v", string_type())],
        partition_keys=["dt", "h"],
        primary_keys=["dt", "h", "id"],
        options={"bucket": "2", **(options or {})},
    )
    return T(fio, path, schema)


@pytest.fixture
def t(tmp_path: Path) -> T:
    return make_table(tmp_path)


_KEY_RANGES = itertools.count()


def new_file(
    rows: int = 10, level: int = 0, name: str | None = None, keys: tuple[int, int] | None = None
) -> DataFileMeta:
    """A file of the test table; ``keys`` is its (min, max) ``id`` (default: a range no other file has, so
    files at one level >= 1 never overlap unless a test says so)."""
    if keys is None:
        start = next(_KEY_RANGES) * 100
        keys = (start, start + 99)
    key_type = [AtomicType("BIGINT", nullable=False)]
    return DataFileMeta(
        file_name=name or f"data-{uuid.uuid4()}-0.parquet",
        file_size=100 + rows,
        row_count=rows,
        min_key=serialize_row([keys[0]], key_type),
        max_key=serialize_row([keys[1]], key_type),
        level=level,
        creation_time_millis=1795256648745,
    )


def msg(
    partition: bytes,
    *files: DataFileMeta,
    bucket: int = 0,
    total_buckets: int = 2,
    compact_before: tuple[DataFileMeta, ...] = (),
) -> CommitMessage:
    return CommitMessage(partition, bucket, total_buckets, tuple(files), compact_before)


def names(entries: list[ManifestEntry], kind: int | None = None) -> set[str]:
    return {e.file.file_name for e in entries if kind is None or e.kind == kind}


class HookedFileIO(FileIO):
    """Local FileIO that runs ``hook(path)`` just before the first create of a snapshot file (a concurrent
    writer sneaking in between our read of the latest snapshot and our create), optionally failing."""

    def __init__(
        self,
        hook: Callable[[str], None] | None = None,
        *,
        times: int = 1,
        snapshot_create: Callable[[str], bool | None] | None = None,
    ) -> None:
        super().__init__("file")
        self.hook, self.times, self.snapshot_create, self.creates = hook, times, snapshot_create, 0

    def try_create(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" in path:
            self.creates += 1
            if self.hook is not None and self.times > 0:
                self.times -= 1
                self.hook(path)
            if self.snapshot_create is not None:
                result = self.snapshot_create(path)
                if result is not None:
                    return result
        return super().try_create(path, data)


# --------------------------------------------------------------------------------------------- APPEND
def test_append_snapshots_and_manifest_lists(t: T) -> None:
    c = t.committer()
    a1, a2 = t.part("a", 1), t.part("a", 2)
    batches = [
        [msg(a1, new_file(10))],
        [msg(a1, new_file(5), bucket=1), msg(a2, new_file(7), new_file(1))],
        [msg(t.part("b", 1), new_file(3))],
    ]
    totals, expected_live, previous = [10, 23, 26], set(), None
    for i, batch in enumerate(batches, start=1):
        snap = c.commit(batch)
        assert snap is not None and snap.id == i
        assert t.store.fileio.read_text(f"{t.store.table_path}/snapshot/LATEST") == str(i)
        on_disk = t.store.snapshots.snapshot(i)
        assert on_disk == snap, "the returned snapshot is the one written"
        assert (snap.commit_kind, snap.commit_identifier, snap.schema_id, snap.version) == (
            "APPEND",
            BATCH_COMMIT_IDENTIFIER,
            0,
            3,
        )
        assert snap.next_row_id == 0 and snap.uuid and snap.writer_version.startswith("pyspark-paimon")
        added = sum(f.row_count for m in batch for f in m.new_files)
        assert snap.delta_record_count == added and snap.total_record_count == totals[i - 1]

        store = t.store
        base = store.manifests.read_list(snap.base_manifest_list)
        delta_metas = store.manifests.read_list(snap.delta_manifest_list)
        assert snap.base_manifest_list_size == t.store.fileio.size(store.manifests.path(snap.base_manifest_list))
        assert snap.delta_manifest_list_size == t.store.fileio.size(store.manifests.path(snap.delta_manifest_list))
        if previous is None:
            assert base == [], "the first snapshot's base list is empty"
        else:
            assert base == (
                store.manifests.read_list(previous.base_manifest_list)
                + store.manifests.read_list(previous.delta_manifest_list)
            ), "base = previous base + delta"
        assert len(delta_metas) == 1
        delta = store.manifests.read_manifest(delta_metas[0].file_name)
        assert names(delta) == {f.file_name for m in batch for f in m.new_files}
        assert all(e.kind == KIND_ADD and e.total_buckets == 2 for e in delta)
        meta = delta_metas[0]
        assert (meta.num_added_files, meta.num_deleted_files) == (len(delta), 0)
        assert meta.file_size == t.store.fileio.size(store.manifests.path(meta.file_name))
        parts = sorted(t.values(e.partition) for e in delta)
        assert t.values(meta.partition_stats.min_values) == parts[0]
        assert t.values(meta.partition_stats.max_values) == parts[-1]
        assert (meta.min_bucket, meta.max_bucket) == (min(e.bucket for e in delta), max(e.bucket for e in delta))

        expected_live |= {f.file_name for m in batch for f in m.new_files}
        live = t.live(snap)
        assert set(live) == expected_live
        assert snap.total_record_count == sum(e.file.row_count for e in live.values())
        previous = snap
    assert t.manifest_dir_files() == t.referenced_manifest_files(), "no orphan manifests"


def test_entries_keep_message_fields(t: T) -> None:
    f = new_file(4, level=0)
    t.committer().commit([msg(t.part(None, None), f, bucket=1, total_buckets=2)])
    (e,) = t.live().values()
    assert (e.partition, e.bucket, e.total_buckets, e.file) == (t.part(None, None), 1, 2, f)
    assert t.values(e.partition) == (None, None)


def test_empty_commit(t: T) -> None:
    c = t.committer()
    assert c.commit([]) is None
    assert c.commit([msg(t.part("a"))]) is None, "messages without files change nothing"
    assert t.store.snapshots.latest_id() is None and t.manifest_dir_files() == set()
    snap = c.commit([], allow_empty=True)
    assert snap.id == 1 and snap.total_record_count == 0 and snap.delta_record_count == 0
    assert t.delta(snap) == []


def test_commit_user_identifier_properties_watermark(t: T) -> None:
    c = t.committer()
    s1 = c.commit(
        [msg(t.part("a"), new_file())], commit_user="job-1", commit_identifier=7, properties={"k": "v"}, watermark=100
    )
    assert (s1.commit_user, s1.commit_identifier, s1.properties, s1.watermark) == ("job-1", 7, {"k": "v"}, 100)
    s2 = c.commit([msg(t.part("a"), new_file())], watermark=50)
    assert s2.watermark == 100, "the watermark never goes back"
    assert s2.properties is None and s2.commit_user != "job-1"
    s3 = c.commit([msg(t.part("a"), new_file())], watermark=300)
    assert s3.watermark == 300
    raw = json.loads(t.store.fileio.read_text(f"{t.store.table_path}/snapshot/snapshot-1"))
    assert raw["properties"] == {"k": "v"} and raw["commitIdentifier"] == 7


def test_index_manifest_and_statistics_carried_forward(t: T) -> None:
    c = t.committer()
    s1 = c.commit([msg(t.part("a"), new_file())])
    # another engine wrote snapshot 2 with an index manifest and statistics
    s2 = s1.with_changes(
        id=2,
        index_manifest="index-manifest-x-0",
        statistics="stat-x",
        delta_record_count=0,
        base_manifest_list=s1.base_manifest_list,
        delta_manifest_list=s1.delta_manifest_list,
    )
    assert t.store.snapshots.try_commit(s2)
    s3 = c.commit([msg(t.part("a"), new_file())])
    assert (s3.index_manifest, s3.statistics) == ("index-manifest-x-0", "stat-x")
    SchemaManager(t.store.fileio, t.store.table_path).add_column("extra", AtomicType("INT"))
    s4 = t.committer().commit([msg(t.part("a"), new_file())])
    assert s4.schema_id == 1, "snapshot schemaId is the latest schema"
    assert s4.index_manifest == "index-manifest-x-0" and s4.statistics is None, "stats are per schema"


# --------------------------------------------------------------------------------------------- OVERWRITE
def three_partitions(t: T) -> dict[str, list[DataFileMeta]]:
    files = {"a1": [new_file(10), new_file(2)], "a2": [new_file(5)], "b1": [new_file(7)]}
    c = t.committer()
    c.commit([msg(t.part("a", 1), files["a1"][0]), msg(t.part("a", 2), files["a2"][0])])
    c.commit([msg(t.part("a", 1), files["a1"][1], bucket=1), msg(t.part("b", 1), files["b1"][0])])
    return files


def check_overwrite(
    t: T, snap: Snapshot, deleted: list[DataFileMeta], added: list[DataFileMeta], before: dict[str, ManifestEntry]
) -> None:
    assert snap.commit_kind == "OVERWRITE"
    delta = t.delta(snap)
    assert names(delta, KIND_DELETE) == {f.file_name for f in deleted}
    assert names(delta, KIND_ADD) == {f.file_name for f in added}
    for e in delta:
        if e.kind == KIND_DELETE:  # a DELETE repeats the live entry exactly (partition, bucket, file meta)
            assert e == ManifestEntry(
                KIND_DELETE,
                before[e.file.file_name].partition,
                before[e.file.file_name].bucket,
                before[e.file.file_name].total_buckets,
                before[e.file.file_name].file,
            )
    removed = sum(f.row_count for f in deleted)
    new = sum(f.row_count for f in added)
    assert snap.delta_record_count == new - removed
    live = t.live(snap)
    assert set(live) == (set(before) - {f.file_name for f in deleted}) | {f.file_name for f in added}
    assert snap.total_record_count == sum(e.file.row_count for e in live.values())


def test_overwrite_all(t: T) -> None:
    files = three_partitions(t)
    before = t.live()
    replacement = new_file(4)
    snap = t.committer().commit([msg(t.part("c", 9), replacement)], overwrite=OverwriteSpec("all"))
    check_overwrite(t, snap, files["a1"] + files["a2"] + files["b1"], [replacement], before)
    assert snap.total_record_count == 4


def test_overwrite_all_without_data_truncates(t: T) -> None:
    three_partitions(t)
    snap = t.committer().commit([], overwrite=OverwriteSpec("all"))
    assert snap.commit_kind == "OVERWRITE" and t.live(snap) == {} and snap.total_record_count == 0
    again = t.committer().commit([], overwrite=OverwriteSpec("all"))
    assert again.id == snap.id + 1 and t.delta(again) == [], "truncating an empty table is an empty overwrite"


def test_overwrite_dynamic(t: T) -> None:
    files = three_partitions(t)
    before = t.live()
    new_a1, new_c = new_file(1), new_file(2)
    snap = t.committer().commit(
        [msg(t.part("a", 1), new_a1), msg(t.part("c", 1), new_c)], overwrite=OverwriteSpec("dynamic")
    )
    check_overwrite(t, snap, files["a1"], [new_a1, new_c], before)
    assert files["a2"][0].file_name in t.live() and files["b1"][0].file_name in t.live()


def test_overwrite_static_partition_spec(t: T) -> None:
    files = three_partitions(t)
    before = t.live()
    new_a3 = new_file(6)
    snap = t.committer().commit(
        [msg(t.part("a", 3), new_a3)], overwrite=OverwriteSpec("static", partition_spec={"dt": "a"})
    )
    check_overwrite(t, snap, files["a1"] + files["a2"], [new_a3], before)


def test_overwrite_static_full_spec_and_partition_bytes(t: T) -> None:
    files = three_partitions(t)
    before = t.live()
    snap = t.committer().commit([], overwrite=OverwriteSpec("static", partition_spec={"dt": "a", "h": 2}))
    check_overwrite(t, snap, files["a2"], [], before)
    before = t.live()
    snap = t.committer().commit(
        [msg(t.part("b", 1), new_b := new_file(1))], overwrite=OverwriteSpec("static", frozenset({t.part("b", 1)}))
    )
    check_overwrite(t, snap, files["b1"], [new_b], before)


def test_static_overwrite_rejects_rows_of_other_partitions(t: T) -> None:
    three_partitions(t)
    before_files, before_manifests = t.live(), t.manifest_dir_files()
    with pytest.raises(CommitError, match=r"Static overwrite of partition \{'dt': 'a'\}.*'dt': 'b'"):
        t.committer().commit(
            [msg(t.part("a", 1), new_file()), msg(t.part("b", 1), new_file())],
            overwrite=OverwriteSpec("static", partition_spec={"dt": "a"}),
        )
    assert t.store.snapshots.latest_id() == 2, "nothing committed"
    assert t.live() == before_files and t.manifest_dir_files() == before_manifests, "no files left behind"


def test_overwrite_on_empty_table(t: T) -> None:
    f = new_file(3)
    snap = t.committer().commit([msg(t.part("a"), f)], overwrite=OverwriteSpec("dynamic"))
    assert snap.id == 1 and snap.commit_kind == "OVERWRITE" and set(t.live()) == {f.file_name}
    assert snap.total_record_count == 3


def test_overwrite_deletes_are_recomputed_after_losing_a_race(tmp_path: Path) -> None:
    """A concurrent append to the overwritten partition lands first: the retry must delete it too, and must
    keep the concurrent append of another partition."""
    t = make_table(tmp_path)
    old = new_file(5)
    t.committer().commit([msg(t.part("a"), old)])
    sneaked_a, sneaked_b = new_file(2), new_file(3)

    def concurrent_append(path: str) -> None:
        t.committer().commit([msg(t.part("a"), sneaked_a), msg(t.part("b"), sneaked_b)])

    fio = HookedFileIO(concurrent_append)
    mine = new_file(1)
    snap = FileStoreCommit(FileStore(fio, t.store.table_path), options=FAST_RETRY).commit(
        [msg(t.part("a"), mine)], overwrite=OverwriteSpec("dynamic")
    )
    assert fio.creates == 2, "first attempt lost snapshot-2, the retry made snapshot-3"
    assert snap.id == 3
    assert names(t.delta(snap), KIND_DELETE) == {old.file_name, sneaked_a.file_name}
    assert set(t.live()) == {mine.file_name, sneaked_b.file_name}
    assert snap.total_record_count == 1 + 3
    assert t.manifest_dir_files() == t.referenced_manifest_files(), "the lost attempt's manifests were removed"


# --------------------------------------------------------------------------------------------- conflicts
def test_bucket_count_conflict(t: T) -> None:
    c = t.committer()
    c.commit([msg(t.part("a"), new_file(), total_buckets=2)])
    before = t.manifest_dir_files()
    with pytest.raises(CommitError, match="2 buckets but this write uses 4"):
        c.commit([msg(t.part("a"), new_file(), total_buckets=4)])
    assert t.store.snapshots.latest_id() == 1 and t.manifest_dir_files() == before
    # another partition may use another bucket count
    assert c.commit([msg(t.part("b"), new_file(), total_buckets=4)]).id == 2


def test_bucket_count_check_ignores_files_without_a_bucket_count(t: T) -> None:
    """Postpone files (bucket -2, recorded with total -2 as Java writes them) sit beside a partition's real
    buckets; like Java's checkBucketKeepSame, counts <= 0 take no part in the check."""
    c = t.committer()
    c.commit([msg(t.part("a"), new_file(), total_buckets=2)])
    assert c.commit([msg(t.part("a"), new_file(), bucket=-2, total_buckets=-2)]).id == 2
    assert c.commit([msg(t.part("a"), new_file(), bucket=1, total_buckets=2)]).id == 3
    with pytest.raises(CommitError, match="2 buckets but this write uses 4"):
        c.commit([msg(t.part("a"), new_file(), total_buckets=4)])


def test_bucket_count_may_change_through_overwrite(t: T) -> None:
    c = t.committer()
    c.commit([msg(t.part("a"), new_file(), total_buckets=2)])
    c.commit([msg(t.part("a"), new_file(), total_buckets=4)], overwrite=OverwriteSpec("dynamic"))
    # the 2-bucket file is gone: appending with the partition's new count is fine
    snap = c.commit([msg(t.part("a"), new_file(), bucket=3, total_buckets=4)])
    assert snap.id == 3 and {e.total_buckets for e in t.live(snap).values()} == {4}
    with pytest.raises(CommitError, match="4 buckets but this write uses 2"):
        c.commit([msg(t.part("a"), new_file(), total_buckets=2)])


def test_bucket_count_check_reads_only_manifests_that_may_hold_the_written_partitions(
    t: T, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = t.committer()
    c.commit([msg(t.part("a"), new_file())])
    c.commit([msg(t.part("c"), new_file())])
    c.commit([msg(t.part(None), new_file())])  # a null partition value
    read: list[str] = []
    real = c.manifests.select_entries

    def recording(metas: Any, test: Any) -> Any:
        metas = list(metas)
        read.extend(m.file_name for m in metas)
        return real(metas, test)

    monkeypatch.setattr(c.manifests, "select_entries", recording)
    store = t.store
    by_dt = {
        t.values(e.partition)[0]: m.file_name
        for m in c.base_manifests(store.snapshots.latest())
        for e in store.manifests.read_manifest(m.file_name)
    }
    c.commit([msg(t.part("b"), new_file())])  # between a and c: no manifest can hold it
    assert read == []
    with pytest.raises(CommitError, match="2 buckets but this write uses 4"):
        c.commit([msg(t.part("c"), new_file(), total_buckets=4)])
    assert by_dt["c"] in read and by_dt["a"] not in read and by_dt[None] not in read
    read.clear()
    with pytest.raises(CommitError, match="2 buckets but this write uses 3"):
        c.commit([msg(t.part(None), new_file(), total_buckets=3)])
    assert by_dt[None] in read and by_dt["a"] not in read and by_dt["c"] not in read


def test_bucket_count_check_after_manifests_merge(t: T) -> None:
    """Merged manifests span many partitions (and may hold the DELETE of an overwritten file next to the
    ADD of its replacement): the pruned check still sees exactly the live files."""
    c = t.committer(**{"manifest.merge-min-count": "2"})
    for dt in ("a", "b", "c", "d"):
        c.commit([msg(t.part(dt), new_file())])
    c.commit([msg(t.part("b"), new_file(), total_buckets=4)], overwrite=OverwriteSpec("dynamic"))
    c.commit([msg(t.part("e"), new_file())])
    assert len(c.base_manifests(t.store.snapshots.latest())) < 6  # merged
    assert c.commit([msg(t.part("b"), new_file(), bucket=3, total_buckets=4)]) is not None
    with pytest.raises(CommitError, match="4 buckets but this write uses 2"):
        c.commit([msg(t.part("b"), new_file())])
    with pytest.raises(CommitError, match="2 buckets but this write uses 4"):
        c.commit([msg(t.part("d"), new_file(), total_buckets=4)])


def test_commits_decode_each_manifest_once_per_process(t: T) -> None:
    """Every write makes a new committer; base manifests come from the process-wide cache, so a commit into
    a large table does not decode the whole table's manifests again."""
    from pyspark_paimon.metadata.manifests.manifest import MANIFEST_CACHE

    for dt in ("a", "b", "c"):
        t.committer().commit([msg(t.part(dt), new_file())])
    misses = MANIFEST_CACHE.misses
    t.committer().commit([msg(t.part("b"), new_file())])
    assert MANIFEST_CACHE.misses == misses  # base list and manifests were written (hence cached) here


def test_deleting_a_file_that_is_not_live_conflicts(t: T) -> None:
    c = t.committer()
    f1 = new_file(4)
    c.commit([msg(t.part("a"), f1)])
    c.commit([msg(t.part("a"), new_file(1))], overwrite=OverwriteSpec("dynamic"))  # f1 is gone now
    before = t.manifest_dir_files()
    compacted = new_file(4, level=1)
    with pytest.raises(CommitConflictError, match=f"{f1.file_name}.*no longer live"):
        c.commit([msg(t.part("a"), compacted, compact_before=(f1,))], kind="COMPACT")
    assert t.store.snapshots.latest_id() == 2, "nothing committed"
    assert t.manifest_dir_files() == before, "the attempt's manifests were removed"
    with pytest.raises(CommitConflictError):
        c.commit([msg(t.part("a"), compact_before=(new_file(name="never-existed"),))], kind="COMPACT")
    with pytest.raises(CommitConflictError):  # same name, wrong level: not the live file
        c.commit([msg(t.part("a"), compact_before=(f1.with_level(3),))], kind="COMPACT")


def test_add_and_delete_of_same_file_in_one_commit(t: T) -> None:
    f = new_file()
    t.committer().commit([msg(t.part("a"), f)])
    with pytest.raises(CommitError, match="both added and deleted"):
        t.committer().commit([msg(t.part("a"), f, compact_before=(f,))], kind="COMPACT")


def test_file_deleted_twice_in_one_commit_is_refused(t: T) -> None:
    """Compaction inputs inside an overwritten partition would be deleted by both: the second DELETE would
    outlive its ADD and make the table unreadable, so the commit is refused."""
    f1 = new_file(4)
    t.committer().commit([msg(t.part("a"), f1)])
    before = t.manifest_dir_files()
    with pytest.raises(CommitError, match=f"{f1.file_name}.*deleted twice"):
        t.committer().commit(
            [msg(t.part("a"), new_file(4, level=1), compact_before=(f1,))], overwrite=OverwriteSpec("dynamic")
        )
    with pytest.raises(CommitError, match="deleted twice"):
        t.committer().commit(
            [msg(t.part("a"), compact_before=(f1,)), msg(t.part("a"), compact_before=(f1,))], kind="COMPACT"
        )
    assert t.store.snapshots.latest_id() == 1 and t.manifest_dir_files() == before
    assert set(t.live()) == {f1.file_name}


def test_compact_commit(t: T) -> None:
    c = t.committer()
    f1, f2, f3 = new_file(4), new_file(6), new_file(1)
    c.commit([msg(t.part("a"), f1, f2), msg(t.part("b"), f3)])
    merged = new_file(9, level=5)
    snap = c.commit([msg(t.part("a"), merged, compact_before=(f1, f2))], kind="COMPACT")
    assert snap.commit_kind == "COMPACT"
    assert snap.delta_record_count == 9 - 10 and snap.total_record_count == 10
    assert set(t.live()) == {merged.file_name, f3.file_name} and t.live()[merged.file_name].file.level == 5
    # a metadata-only level upgrade: DELETE at level 0 + ADD of the same name at level 1
    upgraded = f3.with_level(1)
    snap = c.commit([msg(t.part("b"), upgraded, compact_before=(f3,))], kind="COMPACT")
    assert t.live()[f3.file_name].file.level == 1 and snap.delta_record_count == 0


def test_compact_commit_refuses_overlapping_level(t: T) -> None:
    """Two compactions planned on one snapshot may both write to one level: the second commit would leave two
    files of a level >= 1 overlapping in key (Java's "LSM conflicts detected"), so it is refused whole."""
    c = t.committer()
    f1, f2 = new_file(4, keys=(0, 50)), new_file(4, keys=(40, 90))
    c.commit([msg(t.part("a"), f1), msg(t.part("a"), f2)])
    c.commit([msg(t.part("a"), new_file(4, level=5, keys=(0, 50)), compact_before=(f1,))], kind="COMPACT")
    latest = t.store.snapshots.latest_id()
    with pytest.raises(CommitConflictError, match="overlap in key at level 5.*Nothing was committed"):
        c.commit([msg(t.part("a"), new_file(4, level=5, keys=(40, 90)), compact_before=(f2,))], kind="COMPACT")
    assert t.store.snapshots.latest_id() == latest
    # Touching ranges at different levels, or at level 0, are fine.
    c.commit([msg(t.part("a"), new_file(4, level=4, keys=(40, 90)), compact_before=(f2,))], kind="COMPACT")


def test_unknown_outcome_keeps_files(t: T) -> None:
    t.committer().commit([msg(t.part("a"), new_file())])

    def explode(path: str) -> bool:
        raise OSError("connection reset while creating the snapshot")

    fio = HookedFileIO(snapshot_create=explode)
    with pytest.raises(CommitStateUnknownError, match="snapshot-2.*may or may not have landed"):
        FileStoreCommit(FileStore(fio, t.store.table_path), options=FAST_RETRY).commit([msg(t.part("a"), new_file())])
    orphans = t.manifest_dir_files() - t.referenced_manifest_files()
    assert len(orphans) == 3, "delta manifest and both lists are kept: the snapshot might reference them"


def test_gives_up_after_max_retries(t: T) -> None:
    fio = HookedFileIO(snapshot_create=lambda path: False)  # someone else always wins
    committer = FileStoreCommit(FileStore(fio, t.store.table_path), options={**FAST_RETRY, "commit.max-retries": "3"})
    with pytest.raises(CommitConflictError, match="after 4 attempts.*commit.max-retries"):
        committer.commit([msg(t.part("a"), new_file())])
    assert fio.creates == 4
    assert t.manifest_dir_files() == set(), "every lost attempt cleaned up its manifests"


def test_no_schema_is_an_error(tmp_path: Path) -> None:
    fio, path = FileIO.for_uri(str(tmp_path / "nothing"))
    with pytest.raises(CommitError, match="no schema"):
        FileStoreCommit(FileStore(fio, path)).commit([msg(b"\x00" * 12, new_file())])


def test_retry_options_are_parsed() -> None:
    c = FileStoreCommit(
        FileStore(FileIO(), "/nowhere"),
        options={
            "commit.min-retry-wait": "2 s",
            "commit.max-retry-wait": "1 min",
            "commit.max-retries": "4",
            "manifest.merge-min-count": "7",
        },
    )
    assert (c.min_wait_ms, c.max_wait_ms, c.max_retries, c.merge_min_count) == (2000, 60000, 4, 7)
    d = FileStoreCommit(FileStore(FileIO(), "/nowhere"))
    assert (d.min_wait_ms, d.max_wait_ms, d.max_retries, d.merge_min_count) == (10, 10000, 10, 30)
    with pytest.raises(OptionError, match="commit.min-retry-wait"):
        FileStoreCommit(FileStore(FileIO(), "/nowhere"), options={"commit.min-retry-wait": "soon"})


# --------------------------------------------------------------------------------------------- retries
def test_retry_finds_own_commit_and_returns_it(t: T) -> None:
    """After a failed attempt, a snapshot by the same (user, identifier, kind) means we already committed."""
    t.committer().commit([msg(t.part("a"), new_file())])
    messages = [msg(t.part("a"), new_file(3))]
    landed: list[Snapshot] = []

    def same_commit_lands_first(path: str) -> None:  # e.g. an earlier attempt of this very job, re-driven
        landed.append(t.committer().commit(messages, commit_user="job-42"))

    fio = HookedFileIO(same_commit_lands_first)
    result = FileStoreCommit(FileStore(fio, t.store.table_path), options=FAST_RETRY).commit(
        messages, commit_user="job-42"
    )
    assert landed[0].id == 2
    assert result == landed[0], "returned the existing snapshot instead of committing the files twice"
    assert t.store.snapshots.latest_id() == 2 and fio.creates == 1
    assert t.store.snapshots.latest().total_record_count == 13


def test_retry_does_not_mistake_other_commits_for_ours(t: T) -> None:
    def other_job(path: str) -> None:
        t.committer().commit([msg(t.part("b"), new_file())], commit_user="job-other")

    fio = HookedFileIO(other_job)
    mine = new_file(2)
    snap = FileStoreCommit(FileStore(fio, t.store.table_path), options=FAST_RETRY).commit(
        [msg(t.part("a"), mine)], commit_user="job-me"
    )
    assert snap.id == 2 and snap.commit_user == "job-me" and mine.file_name in t.live()
    assert len(t.live()) == 2


def test_retry_after_same_user_different_kind_commits_again(t: T) -> None:
    def same_user_overwrite(path: str) -> None:
        t.committer().commit([msg(t.part("b"), new_file())], commit_user="u", overwrite=OverwriteSpec("dynamic"))

    fio = HookedFileIO(same_user_overwrite)
    mine = new_file(2)
    snap = FileStoreCommit(FileStore(fio, t.store.table_path), options=FAST_RETRY).commit(
        [msg(t.part("a"), mine)], commit_user="u"
    )
    assert snap.id == 2 and snap.commit_kind == "APPEND" and mine.file_name in t.live()


# --------------------------------------------------------------------------------------------- concurrency
class RacingFileIO(FileIO):
    """Local FileIO whose first snapshot create waits at ``barrier``: every committer has then read the same
    latest snapshot and tries the same id, so exactly one wins and the others must retry. Counts the lost
    creates (each one an attempt the committer retried)."""

    def __init__(self, barrier: Any) -> None:
        super().__init__("file")
        self.barrier = barrier
        self.first_won: bool | None = None
        self.lost = 0

    def try_create(self, path: str, data: bytes) -> bool:
        if "/snapshot/snapshot-" not in path:
            return super().try_create(path, data)
        first = self.first_won is None
        if first:
            self.barrier.wait()
        won = super().try_create(path, data)
        if first:
            self.first_won = won
        self.lost += not won
        return won


def test_concurrent_committers_threads(t: T) -> None:
    n = 8
    files = [new_file(i + 1) for i in range(n)]
    barrier = threading.Barrier(n)
    results: dict[int, Snapshot] = {}
    ios: dict[int, RacingFileIO] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            ios[i] = RacingFileIO(barrier)
            committer = FileStoreCommit(FileStore(ios[i], t.path), options=FAST_RETRY)
            results[i] = committer.commit(
                [msg(t.part("a" if i % 2 else "b"), files[i], bucket=i % 2)], commit_user=f"user-{i}"
            )
        except BaseException as e:  # noqa: BLE001 - collected and re-raised by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not errors, errors
    assert sorted(s.id for s in results.values()) == list(range(1, n + 1)), "distinct ids, no gaps"
    assert sorted(io.first_won for io in ios.values()) == [False] * (n - 1) + [True], "all raced for snapshot-1"
    assert sum(io.lost for io in ios.values()) >= n - 1, "every loser retried"
    check_concurrent_result(t, files, {f"user-{i}" for i in range(n)})


def _commit_in_process(root: str, index: int, barrier: Any, out: Any) -> None:
    fio, path = FileIO.for_uri(root)
    schema = SchemaManager(fio, path).latest()
    part = serialize_row(["p", index], [f.type for f in schema.partition_fields])
    f = DataFileMeta(file_name=f"data-proc-{index}.parquet", file_size=100, row_count=index + 1)
    racing = RacingFileIO(barrier)
    snap = FileStoreCommit(FileStore(racing, path), options=FAST_RETRY).commit(
        [CommitMessage(part, 0, 2, (f,))], commit_user=f"proc-{index}"
    )
    out.put((index, snap.id, racing.first_won, racing.lost))


def test_concurrent_committers_processes(t: T) -> None:
    n = 6
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_commit_in_process, args=(t.store.table_path, i, barrier, out)) for i in range(n)]
    for p in procs:
        p.start()
    got = {index: rest for index, *rest in (out.get(timeout=60) for _ in range(n))}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(sid for sid, _, _ in got.values()) == list(range(1, n + 1))
    assert sorted(won for _, won, _ in got.values()) == [False] * (n - 1) + [True], "all raced for snapshot-1"
    assert sum(lost for _, _, lost in got.values()) >= n - 1, "every loser retried"
    files = [DataFileMeta(file_name=f"data-proc-{i}.parquet", file_size=100, row_count=i + 1) for i in range(n)]
    check_concurrent_result(t, files, {f"proc-{i}" for i in range(n)})


def check_concurrent_result(t: T, files: list[DataFileMeta], users: set[str]) -> None:
    store = t.store
    latest = store.snapshots.latest()
    live = t.live(latest)
    assert set(live) == {f.file_name for f in files}, "no lost files: the final live set is the union"
    assert latest.total_record_count == sum(f.row_count for f in files)
    snaps = list(store.snapshots.snapshots())
    assert {s.commit_user for s in snaps} == users, "each committer landed exactly once"
    for s in snaps:
        assert len(t.delta(s)) == 1
    assert t.manifest_dir_files() == t.referenced_manifest_files(), "losers removed their manifests"


# --------------------------------------------------------------------------------------------- manifest merging
def test_manifests_are_compacted_at_merge_min_count(t: T) -> None:
    c = t.committer(**{"manifest.merge-min-count": "3"})
    expected: set[str] = set()
    doomed = new_file(2)
    c.commit([msg(t.part("z"), doomed)])
    expected.add(doomed.file_name)
    list_lengths = []
    for i in range(7):
        f = new_file(i + 1)
        if i == 3:  # an overwrite in the middle: its DELETE must cancel inside the compacted manifest
            snap = c.commit([msg(t.part("z"), f)], overwrite=OverwriteSpec("dynamic"))
            expected.discard(doomed.file_name)
        else:
            snap = c.commit([msg(t.part("a", i), f)])
        expected.add(f.file_name)
        base = t.store.manifests.read_list(snap.base_manifest_list)
        list_lengths.append(len(base))
        assert len(base) < 3 + 1
        assert set(t.live(snap)) == expected, "compaction never changes the live set"
        assert snap.total_record_count == sum(e.file.row_count for e in t.live(snap).values())
    assert 1 in list_lengths[1:], f"base lists were compacted: {list_lengths}"
    for snap in t.store.snapshots.snapshots():
        base = t.store.manifests.read_list(snap.base_manifest_list)
        if len(base) == 1 and snap.id > 2:
            entries = t.store.manifests.read_manifest(base[0].file_name)
            assert all(e.kind == KIND_ADD for e in entries), "a compacted manifest holds only live ADDs"
            assert base[0].num_deleted_files == 0
            prev = t.store.snapshots.snapshot(snap.id - 1)
            assert names(entries) == set(t.live(prev)), "the compacted base is the previous snapshot's file set"
    # older snapshots still read: their manifests were not deleted
    for snap in t.store.snapshots.snapshots():
        t.live(snap)


def test_manifests_not_compacted_below_merge_min_count(t: T) -> None:
    c = t.committer()  # default 30
    for i in range(5):
        snap = c.commit([msg(t.part("a", i), new_file())])
        assert len(t.store.manifests.read_list(snap.base_manifest_list)) == i, "one delta manifest per commit"


def _merge(t: T, base: list, min_count: int = 3, **options: str) -> tuple[list, list[str]]:
    """``_maybe_compact_manifests`` of ``base`` under table ``options`` (sizes are taken from the metas, so a
    test can declare a manifest full by giving it a large ``file_size``)."""
    from dataclasses import replace as dc_replace

    c = t.committer(**{"manifest.merge-min-count": str(min_count)})
    written: list[str] = []
    schema = dc_replace(t.schema, options={**t.schema.options, **options})
    return c._maybe_compact_manifests(list(base), schema, written), written


def _live_names(t: T, metas: list) -> set[str]:
    from pyspark_paimon.metadata.manifests.manifest import live_files

    return {e.file.file_name for e in live_files(t.store.manifests.read_entries(metas), "test")}


def test_minor_manifest_merge_keeps_full_manifests_and_unmatched_deletes(t: T) -> None:
    """Java's minor merge: a full manifest (at least the target size) is never rewritten; the trailing small
    ones merge once there are merge-min-count of them, keeping a DELETE whose ADD is in an earlier manifest."""
    from dataclasses import replace as dc_replace

    c = t.committer()
    doomed, keep = new_file(), new_file()
    c.commit([msg(t.part("z"), doomed), msg(t.part("y"), keep)])
    c.commit([msg(t.part("z"), new_file())], overwrite=OverwriteSpec("dynamic"))  # DELETE doomed
    c.commit([msg(t.part("a"), new_file())])
    snap = c.commit([msg(t.part("b"), new_file())])
    base = c.base_manifests(snap)  # 3 base manifests and the last commit's delta
    assert len(base) == 4 and base[1].num_deleted_files == 1
    full = dc_replace(base[0], file_size=64 << 20)  # pretend the first manifest is full
    want = _live_names(t, base)

    merged, written = _merge(t, [full, *base[1:]])
    assert merged[0] is full and len(merged) == 2, "the full manifest is kept as is; the 3 small ones merge"
    entries = t.store.manifests.read_manifest(merged[1].file_name)
    assert [e.file.file_name for e in entries if e.kind == KIND_DELETE] == [doomed.file_name]
    assert _live_names(t, merged) == want and written

    # below merge-min-count nothing is merged; a run reaching the target size is merged on its own
    assert _merge(t, [full, *base[1:]], min_count=4)[0] == [full, *base[1:]]
    small_run, _ = _merge(t, base, min_count=30, **{"manifest.target-file-size": str(sum(m.file_size for m in base))})
    assert len(small_run) == 1 and _live_names(t, small_run) == want
    assert all(e.kind == KIND_ADD for e in t.store.manifests.read_manifest(small_run[0].file_name))


def test_full_manifest_compaction_drops_deleted_files(t: T) -> None:
    """Java's full compaction (manifest.full-compaction-threshold-size reached by the small or delete-holding
    manifests): those, and full manifests holding a deleted file, are rewritten without DELETE entries; a full
    manifest of untouched partitions is kept as is."""
    from dataclasses import replace as dc_replace

    c = t.committer()
    doomed = new_file()
    c.commit([msg(t.part("z"), doomed)])
    c.commit([msg(t.part("y"), new_file())])
    c.commit([msg(t.part("z"), new_file())], overwrite=OverwriteSpec("dynamic"))
    snap = c.commit([msg(t.part("a"), new_file())])
    base = c.base_manifests(snap)
    assert len(base) == 4
    big_z, big_y = (dc_replace(m, file_size=64 << 20) for m in base[:2])
    want = _live_names(t, base)

    merged, written = _merge(
        t, [big_z, big_y, *base[2:]], min_count=30, **{"manifest.full-compaction-threshold-size": "1 b"}
    )
    assert big_y in merged and big_z not in merged, "only the full manifest holding the deleted file is rewritten"
    assert _live_names(t, merged) == want and written
    for m in merged:
        assert all(e.kind == KIND_ADD for e in t.store.manifests.read_manifest(m.file_name))
    # below the threshold: a minor merge (here: nothing, fewer than merge-min-count small manifests)
    assert _merge(t, [big_z, big_y, *base[2:]], min_count=30)[0] == [big_z, big_y, *base[2:]]


def test_partition_stats() -> None:
    schema_types = [string_type(), AtomicType("INT")]

    class S:
        partition_fields = [type("F", (), {"type": ty})() for ty in schema_types]

    rows = [serialize_row(v, schema_types) for v in (["b", 2], ["a", 5], [None, 1], ["c", None], ["a", 5])]
    stats = partition_stats(rows, S())  # type: ignore[arg-type]
    assert deserialize_row(stats.min_values, schema_types) == ("a", 1)
    assert deserialize_row(stats.max_values, schema_types) == ("c", 5)
    assert stats.null_counts == (1, 1), "counted over distinct partitions"


# --------------------------------------------------------------------------------------------- interop
oracle_python = require_oracle_python  # fails (never skips) without the oracle venv; CI installs it


PYPAIMON_READ = textwrap.dedent("""
    import json, sys
    from pypaimon import CatalogFactory
    pure = {"read.native.enabled": "false", "scan.native-plan.enabled": "false"}
    catalog = CatalogFactory.create({"warehouse": sys.argv[1]})
    table = catalog.get_table("default.t").copy(pure)
    rb = table.new_read_builder()
    rows = rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist()
    files_table = catalog.get_table("default.t$files")
    fb = files_table.new_read_builder()
    files = fb.new_read().to_arrow(fb.new_scan().plan().splits())
    files = files.select(["partition", "bucket", "file_path", "record_count"]).to_pylist()
    manager = table.snapshot_manager()
    latest = manager.get_latest_snapshot()
    snaps = []
    for i in range(1, latest.id + 1):
        s = manager.get_snapshot_by_id(i)
        snaps.append([s.id, s.commit_kind, s.total_record_count, s.delta_record_count])
    old = table.copy({**pure, "scan.snapshot-id": "1"})
    ob = old.new_read_builder()
    old_rows = ob.new_read().to_arrow(ob.new_scan().plan().splits()).to_pylist()
    print(json.dumps({"rows": rows, "files": files, "snapshots": snaps, "old_rows": old_rows}, default=str))
""")


@pytest.mark.interop
def test_pypaimon_reads_our_commits(tmp_path: Path) -> None:
    """End to end: real parquet files through Table.write_arrow; pypaimon reads data, snapshots and files."""
    from pyspark_paimon import Catalog

    warehouse = tmp_path / "wh"
    catalog = Catalog(str(warehouse))
    table = catalog.create_table(
        "default.t",
        "dt string, id bigint, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "manifest.merge-min-count": "2"},
    )
    first = pa.table({"dt": ["a", "a", "b", "b"], "id": [1, 2, 1, 2], "v": ["a1", "a2", "b1", "b2"]})
    table.write_arrow(first)
    table.write_arrow(pa.table({"dt": ["a", "c"], "id": [2, 9], "v": ["a2-new", "c9"]}))
    table.write_arrow(
        pa.table({"dt": ["b"], "id": [5], "v": ["b5"]}), mode="overwrite", overwrite_partition={"dt": "b"}
    )
    ours = [(s.id, s.commit_kind, s.total_record_count, s.delta_record_count) for s in table.snapshots()]
    assert ours == [(1, "APPEND", 4, 4), (2, "APPEND", 6, 2), (3, "OVERWRITE", 5, -1)]
    base3 = table.store.manifests.read_list(table.snapshot(3).base_manifest_list)
    assert len(base3) == 1, "snapshot 3's base list is a merged manifest (merge-min-count 2): pypaimon reads it too"

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    proc = subprocess.run(
        [oracle_python(), "-c", PYPAIMON_READ, str(warehouse)], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])

    assert sorted((r["dt"], r["id"], r["v"]) for r in got["rows"]) == [
        ("a", 1, "a1"),
        ("a", 2, "a2-new"),
        ("b", 5, "b5"),
        ("c", 9, "c9"),
    ]
    assert sorted((r["dt"], r["id"], r["v"]) for r in got["old_rows"]) == sorted(
        zip(first["dt"].to_pylist(), first["id"].to_pylist(), first["v"].to_pylist())
    ), "time travel to snapshot 1"
    assert [tuple(s) for s in got["snapshots"]] == ours
    store = table.store
    types = [f.type for f in table.schema.partition_fields]
    live = sorted(
        (f"dt={deserialize_row(e.partition, types)[0]}", e.bucket, e.file.file_name, e.file.row_count)
        for e in store.live_entries(store.snapshots.latest())
    )
    assert (
        sorted(
            (r["partition"], r["bucket"], r["file_path"].rsplit("/", 1)[-1], r["record_count"]) for r in got["files"]
        )
        == live
    )


def test_snapshots_record_the_package_version() -> None:
    import pyspark_paimon
    from pyspark_paimon.metadata.snapshots.commit import WRITER_VERSION

    assert WRITER_VERSION == f"pyspark-paimon-{pyspark_paimon.__version__}"


# ------------------------------------------------------------------------------------ commit or abort
@pytest.mark.parametrize(
    ("error", "landed", "aborted", "raised"),
    [
        (CommitConflictError("lost the race"), None, True, CommitConflictError),
        (CommitStateUnknownError("create failed"), None, False, CommitStateUnknownError),
        (ValueError("before the create"), None, True, ValueError),
        (ValueError("after the create"), "ours", False, ValueError),
        (ValueError("after the create"), OSError("listing failed"), False, CommitStateUnknownError),
        (KeyboardInterrupt(), None, False, KeyboardInterrupt),
    ],
    ids=["conflict", "unknown", "not-landed", "landed", "check-fails", "interrupt"],
)
def test_commit_or_abort_deletes_files_only_when_the_commit_certainly_did_not_land(
    error: BaseException, landed: object, aborted: bool, raised: type[BaseException]
) -> None:
    calls: list[str] = []

    def commit() -> None:
        raise error

    def check() -> Snapshot | None:
        calls.append("landed")
        if isinstance(landed, Exception):
            raise landed
        return cast(Snapshot, object()) if landed == "ours" else None

    with pytest.raises(raised):
        commit_or_abort(commit, lambda: calls.append("abort"), check)
    assert ("abort" in calls) == aborted
