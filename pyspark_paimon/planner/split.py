"""Splits: the unit of work the driver plans and an executor reads.

A :class:`DataSplit` is the files of one (partition, bucket) that must be read together (a primary-key
bucket's files are merged with each other). Splits are pickled to Spark's Python workers, so they are plain
frozen dataclasses holding only metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark_paimon.metadata.manifests.deletion_vectors import DeletionFile
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta


@dataclass(frozen=True)
class DataSplit:
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    # Directory holding the files: <table>/<partition path>/bucket-<b>.
    bucket_path: str
    # True when the files can be read one after another without a merge (append tables; PK buckets
    # whose files are all above level 0 in one non-overlapping run, or in any levels with deletion vectors).
    raw_convertible: bool = False
    # Chain-table and fallback reads take files from several branches; ``file_branches`` maps a file name to
    # the branch whose schemas describe it and ``file_bucket_paths`` to its directory. Empty = this split's.
    file_branches: dict[str, str] = field(default_factory=dict, compare=False)
    file_bucket_paths: dict[str, str] = field(default_factory=dict, compare=False)
    # Chain-table merges: a file's rank orders rows that tie on the user sequence field before the
    # branch-local ``_SEQUENCE_NUMBER`` (anchor 0, then deltas in partition order). Empty = no ranks.
    file_ranks: dict[str, int] = field(default_factory=dict, compare=False)
    # Chain-table reads: every row carries ``partition_values`` (the logical partition), whichever partition
    # the file physically belongs to.
    relabel_partition: bool = False
    # Deletion-vector tables: data file name -> where its deleted row positions are (files without one are
    # absent). Every read of such a file drops those positions first, raw or merged (Java does the same).
    deletion_files: dict[str, DeletionFile] = field(default_factory=dict, compare=False)
    # Incremental diff reads (Java's ``IncrementalSplit``): ``files`` are the bucket's files only the end version
    # holds, ``diff_before`` the files only the start version holds. The read returns the end version's row of
    # each key whose merged row differs between the two sides (:func:`pyspark_paimon.datasource.stream.stream_jobs.
    # read_diff_split`). None: an ordinary split.
    diff_before: "DataSplit | None" = field(default=None, compare=False)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def size_bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    def file_path(self, f: DataFileMeta) -> str:
        if f.external_path:
            return f.external_path
        return f"{self.file_bucket_paths.get(f.file_name, self.bucket_path)}/{f.file_name}"
