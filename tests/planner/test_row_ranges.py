"""Which files of a data-evolution table a compaction rewrites together (``pack_row_ranges``, Java's
``DataEvolutionCompactCoordinator``): whole row-id groups, only where ids follow on, packed by size."""

from __future__ import annotations

import pytest

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.planner.row_ranges import pack_row_ranges

MB = 1024 * 1024


def _file(name: str, first: int, rows: int, size: int = 100, seq: int = 1) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=rows,
        first_row_id=first,
        min_sequence_number=seq,
        max_sequence_number=seq,
    )


def _names(tasks: list[tuple[DataFileMeta, ...]]) -> list[list[str]]:
    return [sorted(f.file_name for f in task) for task in tasks]


def _pack(files: list[DataFileMeta], **kw: object) -> list[list[str]]:
    args: dict = {"target_file_size": 128 * MB, "open_file_cost": 4 * MB, "min_file_num": 2, **kw}
    return _names(pack_row_ranges(files, "t", **args))


def test_groups_whose_ids_follow_on_are_one_task() -> None:
    files = [_file("a", 0, 3), _file("a2", 0, 3, seq=3), _file("b", 3, 2), _file("b2", 3, 2, seq=3)]
    assert _pack(files) == [["a", "a2", "b", "b2"]]


def test_a_gap_in_the_ids_ends_a_run() -> None:
    # ids 2 went to another partition in the same commit: two runs, each its own task.
    files = [_file("a", 0, 2), _file("a2", 0, 2, seq=3), _file("c", 3, 1), _file("c2", 3, 1, seq=3)]
    assert _pack(files) == [["a", "a2"], ["c", "c2"]]


def test_min_file_num_and_never_a_lone_file() -> None:
    files = [_file("a", 0, 2), _file("a2", 0, 2, seq=3), _file("c", 3, 1)]
    assert _pack(files, min_file_num=5) == []
    assert _pack([_file("a", 0, 2), _file("c", 5, 1)], min_file_num=1) == []  # two runs of one file each
    assert _pack([_file("a", 0, 2), _file("b", 2, 1)], min_file_num=1) == [["a", "b"]]


def test_bins_close_at_the_target_size_and_heavy_groups_go_alone() -> None:
    # Each file weighs max(size, 4 mb); the target is 10 mb: a bin closes once it weighs more.
    files = [_file(f"f{i}", i, 1) for i in range(6)]
    assert _pack(files, target_file_size=10 * MB) == [["f0", "f1", "f2"], ["f3", "f4", "f5"]]
    heavy = [_file("f0", 0, 1), _file("f1", 1, 1), _file("big", 2, 1, size=20 * MB), _file("f3", 3, 1)]
    assert _pack(heavy, target_file_size=10 * MB, min_file_num=1) == [["f0", "f1"]]  # 'big' alone: one file


def test_groups_with_deletion_vectors_stay_and_end_the_run() -> None:
    files = [_file("a", 0, 1), _file("b", 1, 1), _file("c", 2, 1), _file("d", 3, 1), _file("e", 4, 1)]
    assert _pack(files, with_vectors={"c"}) == [["a", "b"], ["d", "e"]]


def test_unequal_ranges_that_overlap_are_corrupt() -> None:
    with pytest.raises(CorruptMetadataError, match="same rows"):
        pack_row_ranges(
            [_file("a", 0, 3), _file("b", 1, 3)], "t", target_file_size=MB, open_file_cost=0, min_file_num=2
        )
