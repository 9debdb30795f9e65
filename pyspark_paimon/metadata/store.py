"""``FileStore``: one branch of one table, as the format sees it.

It bundles the managers every operation needs (schemas, snapshots, manifests) for a (table path, branch)
pair and knows how to list the live files of a snapshot. It is deliberately free of Spark and of the user
API, so the planner, the writers and maintenance code share one notion of "the table".

A table of a catalog that takes part in commits (a JDBC catalog's lock, a REST catalog's ``commit`` endpoint:
:mod:`pyspark_paimon.metadata.catalog`) carries that catalog's :class:`SnapshotCommit`; every commit makes its
snapshot visible through :meth:`FileStore.commit_snapshot`, the one point where they differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

from pyspark_paimon.errors import BranchNotFoundError, TableNotFoundError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import (
    KIND_ADD,
    ManifestEntry,
    ManifestFileMeta,
    ManifestStore,
    PartitionTest,
    SkippedFiles,
    live_files,
    merge_entries,
)
from pyspark_paimon.metadata.rows.partition import partition_path
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot, SnapshotManager, branch_path


class SnapshotCommit(Protocol):
    """How a catalog makes a new snapshot visible (Java's ``SnapshotCommit``): True when ``snapshot`` became
    the branch's next snapshot, False when another commit took its id (the caller retries on the new latest).
    ``base`` is the snapshot the commit was prepared on (None: the branch had none). Implementations are
    picklable (a store travels to executors inside read and write contexts) and never log their secrets."""

    def commit(self, store: "FileStore", snapshot: Snapshot, base: Snapshot | None) -> bool: ...


@dataclass
class FileStore:
    fileio: FileIO
    table_path: str
    branch: str = MAIN_BRANCH
    #: The catalog's commit (None: the file system's create-if-absent of ``snapshot-N``, nothing else).
    snapshot_commit: SnapshotCommit | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.branch = self.branch or MAIN_BRANCH

    @cached_property
    def schemas(self) -> SchemaManager:
        return SchemaManager(self.fileio, self.table_path, self.branch)

    @cached_property
    def snapshots(self) -> SnapshotManager:
        return SnapshotManager(self.fileio, self.table_path, self.branch)

    @cached_property
    def manifests(self) -> ManifestStore:
        return ManifestStore(self.fileio, self.table_path)

    @cached_property
    def planning_manifests(self) -> ManifestStore:
        """Manifests through the process-wide cache (scan planning only; see :class:`ManifestStore`)."""
        return ManifestStore(self.fileio, self.table_path, shared_cache=True)

    @property
    def branch_root(self) -> str:
        return branch_path(self.table_path, self.branch)

    def with_branch(self, branch: str) -> "FileStore":
        """The same table on ``branch``, committing through the same catalog."""
        return FileStore(self.fileio, self.table_path, branch, self.snapshot_commit)

    def commit_snapshot(self, snapshot: Snapshot, base: Snapshot | None) -> bool:
        """Make ``snapshot`` visible as the branch's next snapshot; False if its id was taken (see
        :class:`SnapshotCommit`). Without a catalog commit: create ``snapshot-N`` if absent."""
        if self.snapshot_commit is not None:
            return self.snapshot_commit.commit(self, snapshot, base)
        return self.snapshots.try_commit(snapshot)

    def schema(self) -> TableSchema:
        """The latest schema of this branch; a clear error when there is no table (or branch) here."""
        schema = self.schemas.latest()
        if schema is None:
            if self.branch != MAIN_BRANCH and self.fileio.exists(f"{self.table_path}/schema"):
                raise BranchNotFoundError(
                    f"Branch '{self.branch}' does not exist in table {self.table_path}. Create it with "
                    "t.branches.create, or list branches with t.branches.list()."
                )
            raise TableNotFoundError(
                f"No Paimon table at {self.fileio.uri(self.table_path)} (no schema/schema-N files). Check the path, "
                "or create the table first (Catalog.create_table, or write with mode 'append')."
            )
        return schema

    def data_manifests(self, snapshot: Snapshot, cached: bool = False) -> list[ManifestFileMeta]:
        """``cached=True`` (scan planning) reads through the process-wide manifest cache."""
        ms = self.planning_manifests if cached else self.manifests
        return ms.read_list(snapshot.base_manifest_list) + ms.read_list(snapshot.delta_manifest_list)

    def live_entries(
        self, snapshot: Snapshot | None, manifests: list[ManifestFileMeta] | None = None, cached: bool = False
    ) -> list[ManifestEntry]:
        """Live data files of ``snapshot`` (optionally only from a pruned list of its manifests)."""
        if snapshot is None:
            return []
        ms = self.planning_manifests if cached else self.manifests
        if manifests is None:
            return live_files(
                ms.read_entries(self.data_manifests(snapshot, cached)), f"snapshot {snapshot.id} of {self.table_path}"
            )
        # A pruned manifest list may hold a DELETE whose ADD was pruned with its (non-matching) partition.
        return [e for e in merge_entries(ms.read_entries(manifests)) if e.kind == KIND_ADD]

    def selected_entries(
        self, manifests: list[ManifestFileMeta], test: PartitionTest, cached: bool = False
    ) -> tuple[list[ManifestEntry], SkippedFiles]:
        """The live data files of ``manifests`` in the partitions ``test`` keeps, without decoding the other
        partitions' entries (which one-partition planning of a big table would otherwise spend most of its time
        on), and the tally of live files in the partitions it skipped (for the scan's counters)."""
        ms = self.planning_manifests if cached else self.manifests
        entries, skipped = ms.select_entries(manifests, test)
        return [e for e in merge_entries(entries) if e.kind == KIND_ADD], skipped

    def bucket_path(self, schema: TableSchema, partition_values: tuple, bucket: int) -> str:
        return self.bucket_in(self.partition_dir(schema, partition_values), bucket)

    def partition_dir(self, schema: TableSchema, partition_values: tuple) -> str:
        """The directory holding a partition's bucket directories (the table's, for an unpartitioned table).
        Planning computes it once per partition, not once per bucket (:meth:`bucket_in`)."""
        options = schema.core_options
        rel = partition_path(
            partition_values,
            [(f.name, f.type) for f in schema.partition_fields],
            options.partition_default_name,
            options.partition_legacy_name,
        )
        # data-file.path-directory puts every partition and bucket directory below a directory of the table.
        return "/".join(p for p in (self.table_path, options.data_file_directory, rel) if p)

    @staticmethod
    def bucket_in(partition_dir: str, bucket: int) -> str:
        return f"{partition_dir}/" + ("bucket-postpone" if bucket == -2 else f"bucket-{bucket}")
