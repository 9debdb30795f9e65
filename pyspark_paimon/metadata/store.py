"""``FileStore``: one branch of one table, as the format sees it.

It bundles the managers every operation needs (schemas, snapshots, manifests) for a (table path, branch)
pair and knows how to list the live files of a snapshot. It is deliberately free of Spark and of the user
API, so the planner, the writers and maintenance code share one notion of "the table".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

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


@dataclass
class FileStore:
    fileio: FileIO
    table_path: str
    branch: str = MAIN_BRANCH

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
        return FileStore(self.fileio, self.table_path, branch)

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
