"""FileStore (metadata/store.py): one branch of one table, its schema, live files and directory layout."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pyspark_paimon.errors import BranchNotFoundError, CorruptMetadataError, TableNotFoundError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, KIND_DELETE, DataFileMeta, ManifestEntry, SimpleStats
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit, OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import AtomicType, string_type

COLUMNS = [("dt", string_type()), ("h", AtomicType("INT")), ("id", AtomicType("BIGINT")), ("v", string_type())]


def create(
    fio: FileIO,
    path: str,
    branch: str = MAIN_BRANCH,
    partition_keys: tuple[str, ...] = ("dt", "h"),
    options: dict[str, str] | None = None,
) -> TableSchema:
    return SchemaManager(fio, path, branch).create_table(
        COLUMNS, list(partition_keys), ["dt", "h", "id"], {"bucket": "2", **(options or {})}
    )


def new_file(rows: int = 1) -> DataFileMeta:
    return DataFileMeta(file_name=f"data-{uuid.uuid4()}-0.parquet", file_size=10, row_count=rows)


@pytest.fixture
def table(tmp_path: Path) -> tuple[FileIO, str]:
    return FileIO.for_uri(str(tmp_path / "wh" / "db.db" / "t"))


def part(schema: TableSchema, *values: object) -> bytes:
    return serialize_row(list(values), [f.type for f in schema.partition_fields])


# --------------------------------------------------------------------------------------------- schema
def test_missing_table_error(table: tuple[FileIO, str]) -> None:
    fio, path = table
    with pytest.raises(TableNotFoundError, match=f"No Paimon table at {path}.*schema-N"):
        FileStore(fio, path).schema()
    with pytest.raises(TableNotFoundError):
        FileStore(fio, path, "dev").schema()  # no table at all: not a branch problem


def test_missing_branch_error(table: tuple[FileIO, str]) -> None:
    fio, path = table
    create(fio, path)
    with pytest.raises(BranchNotFoundError, match="Branch 'dev' does not exist"):
        FileStore(fio, path, "dev").schema()
    create(fio, path, branch="dev", partition_keys=("dt",))
    assert FileStore(fio, path, "dev").schema().partition_keys == ["dt"]
    assert FileStore(fio, path).schema().partition_keys == ["dt", "h"]


def test_branch_handling(table: tuple[FileIO, str]) -> None:
    fio, path = table
    store = FileStore(fio, path, "")
    assert store.branch == MAIN_BRANCH and store.branch_root == path
    dev = store.with_branch("dev")
    assert (dev.branch, dev.branch_root, dev.table_path) == ("dev", f"{path}/branch/branch-dev", path)
    assert dev.snapshots.snapshot_dir == f"{path}/branch/branch-dev/snapshot"
    assert dev.manifests.manifest_dir == f"{path}/manifest", "branches share the table's manifest directory"
    assert store.snapshots is store.snapshots and store.manifests is store.manifests, "managers are built once"


def test_branch_commits_are_separate(table: tuple[FileIO, str]) -> None:
    fio, path = table
    schema = create(fio, path)
    create(fio, path, branch="dev")
    main_file, dev_file = new_file(2), new_file(3)
    FileStoreCommit(FileStore(fio, path)).commit([CommitMessage(part(schema, "a", 1), 0, 2, (main_file,))])
    FileStoreCommit(FileStore(fio, path, "dev")).commit([CommitMessage(part(schema, "a", 1), 0, 2, (dev_file,))])
    main, dev = FileStore(fio, path), FileStore(fio, path, "dev")
    assert [e.file.file_name for e in main.live_entries(main.snapshots.latest())] == [main_file.file_name]
    assert [e.file.file_name for e in dev.live_entries(dev.snapshots.latest())] == [dev_file.file_name]
    assert fio.exists(f"{path}/branch/branch-dev/snapshot/snapshot-1")


# --------------------------------------------------------------------------------------------- live files
def test_live_entries_and_data_manifests(table: tuple[FileIO, str]) -> None:
    fio, path = table
    schema = create(fio, path)
    c = FileStoreCommit(FileStore(fio, path))
    a, b = part(schema, "a", 1), part(schema, "b", 1)
    fa, fb, fa2 = new_file(1), new_file(2), new_file(3)
    s1 = c.commit([CommitMessage(a, 0, 2, (fa,)), CommitMessage(b, 1, 2, (fb,))])
    s2 = c.commit([CommitMessage(a, 0, 2, (fa2,))], overwrite=OverwriteSpec("dynamic"))
    store = FileStore(fio, path)
    assert store.live_entries(None) == []
    assert store.data_manifests(s2) == (
        store.manifests.read_list(s2.base_manifest_list) + store.manifests.read_list(s2.delta_manifest_list)
    )
    assert {e.file.file_name for e in store.live_entries(s1)} == {fa.file_name, fb.file_name}
    live = store.live_entries(s2)
    assert {e.file.file_name for e in live} == {fb.file_name, fa2.file_name}
    assert all(e.kind == KIND_ADD for e in live)

    # pruned manifests: only the overwrite's delta (its DELETE of fa has no ADD in this list)
    delta_only = store.manifests.read_list(s2.delta_manifest_list)
    pruned = store.live_entries(s2, delta_only)
    assert [e.file.file_name for e in pruned] == [fa2.file_name], "dangling DELETEs of pruned files are dropped"
    assert store.live_entries(s2, []) == []


def test_dangling_delete_in_full_snapshot_is_corrupt(table: tuple[FileIO, str]) -> None:
    fio, path = table
    schema = create(fio, path)
    s1 = FileStoreCommit(FileStore(fio, path)).commit([CommitMessage(part(schema, "a", 1), 0, 2, (new_file(),))])
    store = FileStore(fio, path)
    ghost = ManifestEntry(KIND_DELETE, part(schema, "a", 1), 0, 2, new_file())
    meta = store.manifests.write_manifest([ghost], 0, SimpleStats.empty())
    delta_name, delta_size = store.manifests.write_list([meta])
    base = store.data_manifests(s1)
    base_name, base_size = store.manifests.write_list(base)
    broken = s1.with_changes(
        id=2,
        base_manifest_list=base_name,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta_name,
        delta_manifest_list_size=delta_size,
    )
    assert store.snapshots.try_commit(broken)
    with pytest.raises(CorruptMetadataError, match=f"snapshot 2 of {path}.*{ghost.file.file_name}"):
        FileStore(fio, path).live_entries(FileStore(fio, path).snapshots.latest())


def test_missing_manifest_is_corrupt(table: tuple[FileIO, str]) -> None:
    fio, path = table
    schema = create(fio, path)
    s1 = FileStoreCommit(FileStore(fio, path)).commit([CommitMessage(part(schema, "a", 1), 0, 2, (new_file(),))])
    store = FileStore(fio, path)
    (meta,) = store.manifests.read_list(s1.delta_manifest_list)
    fio.delete(store.manifests.path(meta.file_name))
    with pytest.raises(CorruptMetadataError, match=f"{meta.file_name} is missing"):
        FileStore(fio, path).live_entries(s1)


def test_on_memory_file_system() -> None:
    fio, path = FileIO.for_uri(f"memory://store-test-{uuid.uuid4().hex}/db.db/t")
    try:
        schema = create(fio, path)
        files = [new_file(i + 1) for i in range(3)]
        c = FileStoreCommit(FileStore(fio, path))
        for i, f in enumerate(files):
            c.commit([CommitMessage(part(schema, "a", i), i % 2, 2, (f,))])
        store = FileStore(fio, path)
        latest = store.snapshots.latest()
        assert latest.id == 3 and latest.total_record_count == 6
        assert {e.file.file_name for e in store.live_entries(latest)} == {f.file_name for f in files}
    finally:
        fio.delete_dir(path.split("/db.db")[0])


# --------------------------------------------------------------------------------------------- layout
def test_bucket_path(table: tuple[FileIO, str]) -> None:
    fio, path = table
    schema = create(fio, path)
    store = FileStore(fio, path)
    assert store.bucket_path(schema, ("2024-01-01", 3), 1) == f"{path}/dt=2024-01-01/h=3/bucket-1"
    assert store.bucket_path(schema, (None, 3), 0) == f"{path}/dt=__DEFAULT_PARTITION__/h=3/bucket-0"
    assert store.bucket_path(schema, ("a/b:c", 3), 0) == f"{path}/dt=a%2Fb%3Ac/h=3/bucket-0", "Hive escaping"
    assert store.bucket_path(schema, ("x", 1), -2) == f"{path}/dt=x/h=1/bucket-postpone"


def test_bucket_path_options_and_unpartitioned(tmp_path: Path) -> None:
    fio, path = FileIO.for_uri(str(tmp_path / "t1"))
    schema = create(fio, path, options={"partition.default-name": "NULLS"})
    assert FileStore(fio, path).bucket_path(schema, (None, None), 0) == f"{path}/dt=NULLS/h=NULLS/bucket-0"
    fio, path = FileIO.for_uri(str(tmp_path / "t2"))
    schema = create(fio, path, partition_keys=())
    assert FileStore(fio, path).bucket_path(schema, (), 1) == f"{path}/bucket-1"
