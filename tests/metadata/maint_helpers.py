"""Shared helpers for the tag / rollback / expiration / orphan tests.

Tables are built with the real metadata layer (SchemaManager + FileStoreCommit) committing small *real*
files: each "data file" is a few random bytes written where Paimon would put it, so that deletion is
observable on disk. Branches are made by copying metadata the way Paimon's ``create_branch(tag)`` does.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.maintenance.reachability import all_roots
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit, OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot, SnapshotManager, branch_path
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.ddl import parse_ddl

STRING = parse_ddl("dt string")[0][1]


@dataclass
class FakeTable:
    """A partitioned (by ``dt``) append table with one bucket per partition."""

    root: Path
    options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fileio = FileIO()
        self.path = str(self.root)
        if not SchemaManager(self.fileio, self.path).list_ids():
            SchemaManager(self.fileio, self.path).create_table(
                parse_ddl("id bigint, dt string"), partition_keys=["dt"], options=self.options
            )
        self.store = FileStore(self.fileio, self.path)

    # -- files ---------------------------------------------------------------------------------
    def bucket_dir(self, dt: str) -> str:
        return f"{self.path}/dt={dt}/bucket-0"

    def new_file(self, dt: str = "a", rows: int = 1) -> tuple[str, DataFileMeta]:
        name = f"data-{uuid.uuid4()}-0.parquet"
        directory = self.bucket_dir(dt)
        os.makedirs(directory, exist_ok=True)
        data = os.urandom(16)
        with open(f"{directory}/{name}", "wb") as f:
            f.write(data)
        return dt, DataFileMeta(file_name=name, file_size=len(data), row_count=rows)

    def file_path(self, name: str) -> str:
        for dirpath, _, files in os.walk(self.path):
            if name in files:
                return f"{dirpath}/{name}"
        raise FileNotFoundError(name)

    # -- commits ---------------------------------------------------------------------------------
    def commit(
        self,
        files: list[tuple[str, DataFileMeta]],
        branch: str = MAIN_BRANCH,
        overwrite: bool = False,
        options: dict[str, str] | None = None,
    ) -> Snapshot:
        by_part: dict[str, list[DataFileMeta]] = {}
        for dt, meta in files:
            by_part.setdefault(dt, []).append(meta)
        messages = [CommitMessage(serialize_row([dt], [STRING]), 0, -1, tuple(metas)) for dt, metas in by_part.items()]
        spec = OverwriteSpec("all") if overwrite else None
        snap = FileStoreCommit(FileStore(self.fileio, self.path, branch), options).commit(
            messages, overwrite=spec, allow_empty=True
        )
        assert snap is not None
        return snap

    def append(self, n: int = 1, dt: str = "a", branch: str = MAIN_BRANCH) -> tuple[Snapshot, list[str]]:
        files = [self.new_file(dt) for _ in range(n)]
        return self.commit(files, branch), [m.file_name for _, m in files]

    # -- reading ---------------------------------------------------------------------------------
    def live_names(self, snapshot: Snapshot) -> set[str]:
        return {e.file.file_name for e in FileStore(self.fileio, self.path).live_entries(snapshot)}

    def snapshots(self, branch: str = MAIN_BRANCH) -> SnapshotManager:
        return SnapshotManager(self.fileio, self.path, branch)

    def tags(self, branch: str = MAIN_BRANCH) -> TagManager:
        return TagManager(FileStore(self.fileio, self.path, branch))

    # -- branches ----------------------------------------------------------------------------------
    def branch_from_tag(self, branch: str, tag: str, source_branch: str = MAIN_BRANCH) -> None:
        """What Paimon's create_branch(branch, tag) writes: the tag, its snapshot and schemas 0..schemaId."""
        src_tags = self.tags(source_branch)
        t = src_tags.get_tag(tag)
        dst = branch_path(self.path, branch)
        os.makedirs(f"{dst}/tag", exist_ok=True)
        os.makedirs(f"{dst}/snapshot", exist_ok=True)
        os.makedirs(f"{dst}/schema", exist_ok=True)
        shutil.copyfile(src_tags.tag_path(tag), f"{dst}/tag/tag-{tag}")
        src_snaps = self.snapshots(source_branch)
        if src_snaps.exists(t.snapshot.id):
            shutil.copyfile(src_snaps.snapshot_path(t.snapshot.id), f"{dst}/snapshot/snapshot-{t.snapshot.id}")
        else:
            with open(f"{dst}/snapshot/snapshot-{t.snapshot.id}", "w") as f:
                f.write(t.snapshot.to_json())
        schemas = SchemaManager(self.fileio, self.path, source_branch)
        for sid in range(t.snapshot.schema_id + 1):
            shutil.copyfile(schemas.schema_path(sid), f"{dst}/schema/schema-{sid}")


def assert_all_roots_intact(table: FakeTable) -> None:
    """Every snapshot, tag and changelog of every branch has all its files: manifest lists, manifests and
    data files (and reads back: folding its manifests must succeed)."""
    store = FileStore(table.store.fileio, table.store.table_path)
    for root in all_roots(table.store):
        s = root.snapshot
        for name in (s.base_manifest_list, s.delta_manifest_list):
            assert os.path.exists(f"{table.store.table_path}/manifest/{name}"), (
                f"{root.describe()}: list {name} missing"
            )
        metas = store.data_manifests(s)
        for m in metas:
            assert os.path.exists(f"{table.store.table_path}/manifest/{m.file_name}"), (
                f"{root.describe()}: {m.file_name}"
            )
        for e in store.live_entries(s):
            path = f"{table.store.table_path}/dt={_dt_of(e.partition)}/bucket-{e.bucket}/{e.file.file_name}"
            assert os.path.exists(path), f"{root.describe()}: data file {e.file.file_name} missing"


def _dt_of(partition: bytes) -> str:
    from pyspark_paimon.metadata.rows.binary_row import deserialize_row

    return deserialize_row(partition, [STRING])[0]


def data_files_on_disk(table: FakeTable) -> set[str]:
    out = set()
    for dirpath, _, files in os.walk(table.store.table_path):
        if "/bucket-" in dirpath:
            out.update(f for f in files if f.startswith("data-"))
    return out


def manifests_on_disk(table: FakeTable) -> set[str]:
    return (
        set(os.listdir(f"{table.store.table_path}/manifest"))
        if os.path.isdir(f"{table.store.table_path}/manifest")
        else set()
    )


def age_all_files(table: FakeTable, seconds: float = 3 * 86400) -> None:
    """Back-date every file's mtime (orphan removal only touches files older than its cutoff)."""
    import time

    past = time.time() - seconds
    for dirpath, _, files in os.walk(table.store.table_path):
        for f in files:
            os.utime(f"{dirpath}/{f}", (past, past))
