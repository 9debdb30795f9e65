"""Row-id ranges of row-tracking and data-evolution tables: which files a data-evolution compaction rewrites
together (``pack_row_ranges``, Java's ``DataEvolutionCompactCoordinator``: whole row-id groups, only where ids follow
on, packed by size), and which files a filter on ``_ROW_ID`` skips (``RowIdFilter``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.row_ranges import RowIdFilter, pack_row_ranges

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


# ------------------------------------------------------------------------------------------ row-id pruning
TRACKED = {"read.row-tracking-columns": "true"}


@pytest.fixture
def tracked(tmp_path: Path) -> Table:
    """A row-tracking table of three files: ids 0-99, 100-199, 200-299 (id = row's ``id`` column)."""
    table = Catalog(str(tmp_path)).create_table(
        "db.t", "id bigint, v string", options={"row-tracking.enabled": "true"}, ignore_if_exists=False
    )
    for start in (0, 100, 200):
        table.refresh().write_arrow(pa.table({"id": pa.array(range(start, start + 100), pa.int64()), "v": ["x"] * 100}))
    return table.refresh()


@pytest.mark.parametrize(
    ("condition", "skipped", "ids"),
    [
        ("_ROW_ID >= 150 AND _ROW_ID < 160", 2, list(range(150, 160))),
        ("_ROW_ID = 250", 2, [250]),
        ("_ROW_ID IN (5, 250)", 1, [5, 250]),
        ("_ROW_ID > 199", 2, list(range(200, 300))),
        ("NOT (_ROW_ID < 200)", 2, list(range(200, 300))),
        ("_ROW_ID <= 0", 2, [0]),
        ("_ROW_ID < 0", 3, []),
        ("_ROW_ID = 5 OR _ROW_ID = 105", 1, [5, 105]),
        ("_ROW_ID = 5 OR v = 'x'", 0, list(range(300))),  # an OR the ranges cannot judge keeps every file
        ("_ROW_ID != 5", 0, [i for i in range(300) if i != 5]),
    ],
)
def test_a_filter_on_row_ids_skips_files_by_their_range(
    tracked: Table, condition: str, skipped: int, ids: list[int]
) -> None:
    scan = tracked.scan(filter=condition, read_options=TRACKED)
    counters = scan.explain().counters
    assert counters.files_skipped_row_ids == skipped, condition
    assert counters.files_selected == 3 - skipped
    rows = scan.to_arrow()
    assert sorted(rows.column("_ROW_ID").to_pylist()) == ids
    assert sorted(rows.column("id").to_pylist()) == ids  # each row's id column equals its row id here


def test_row_id_filter_judges_only_what_a_range_can_decide() -> None:
    f = _file("f", 10, 5)  # ids 10..14
    assert RowIdFilter.of([Leaf("_ROW_ID", "=", 12.0)]).may_match(f)  # type: ignore[union-attr]
    assert RowIdFilter.of([Leaf("_ROW_ID", "<", 10.5)]).may_match(f)  # type: ignore[union-attr]
    assert not RowIdFilter.of([Leaf("_ROW_ID", ">", 14)]).may_match(f)  # type: ignore[union-attr]
    assert RowIdFilter.of([Leaf("_ROW_ID", "=", None)]).may_match(f)  # type: ignore[union-attr]
    assert RowIdFilter.of([Leaf("_ROW_ID", "=", 14, negated=True)]).may_match(f)  # type: ignore[union-attr]
    assert not RowIdFilter.of([Leaf("_ROW_ID", "=", 10, negated=True)]).may_match(_file("g", 10, 1))  # type: ignore[union-attr]
    no_first = DataFileMeta(file_name="j", file_size=1, row_count=3, first_row_id=None)
    assert RowIdFilter.of([Leaf("_ROW_ID", "<", 0)]).may_match(no_first)  # type: ignore[union-attr]
    assert RowIdFilter.of([Leaf("id", "<", 0)]) is None


@pytest.mark.parametrize(
    ("leaves", "window"),
    [
        ([], (0, 10)),
        ([Leaf("_ROW_ID", ">=", 103), Leaf("_ROW_ID", "<", 106)], (3, 6)),
        ([Leaf("_ROW_ID", "=", 105)], (5, 6)),
        ([Leaf("_ROW_ID", "in", [102, 107, 300])], (2, 8)),
        ([Leaf("_ROW_ID", "in", [300])], (0, 0)),
        ([Leaf("_ROW_ID", ">", 104.5)], (5, 10)),
        ([Leaf("_ROW_ID", "<", 100)], (0, 0)),
        ([Leaf("_ROW_ID", "<", 105, negated=True)], (5, 10)),  # NOT (< 105) is >= 105
        ([Leaf("_ROW_ID", "=", 105, negated=True)], (0, 10)),  # no bound
        ([Leaf("_ROW_ID", "=", None), Leaf("_ROW_ID", "<=", 101)], (0, 2)),
        ([Leaf("_ROW_ID", "<", float("inf"))], (0, 10)),
    ],
)
def test_the_window_of_ids_a_filter_allows(leaves: list[Leaf], window: tuple[int, int]) -> None:
    bounds = RowIdFilter(tuple(leaves))
    assert bounds.window(100, 10) == window  # ids 100..109
