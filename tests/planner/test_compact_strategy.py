"""Paimon's compaction pick rules on file metadata (planner/compact_strategy.py)."""

from __future__ import annotations

import pytest

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.planner.compact_strategy import (
    drop_delete,
    level_sorted_runs,
    pick_append,
    pick_append_full,
    pick_full,
    pick_universal,
)


def f(name: str, size: int, level: int = 0, seq: int = 0) -> DataFileMeta:
    return DataFileMeta(
        file_name=name, file_size=size, row_count=1, level=level, min_sequence_number=seq, max_sequence_number=seq
    )


def test_runs_level0_newest_first_then_levels() -> None:
    files = [f("old", 1, 0, 1), f("new", 1, 0, 9), f("l5a", 1, 5), f("l2", 1, 2), f("l5b", 1, 5)]
    runs = level_sorted_runs(files, 6)
    assert [(r.level, [x.file_name for x in r.files]) for r in runs] == [
        (0, ["new"]),
        (0, ["old"]),
        (2, ["l2"]),
        (5, ["l5a", "l5b"]),
    ]
    with pytest.raises(OptionError, match="level 5.*'num-levels' = 3.*at least 6"):
        level_sorted_runs(files, 3)


def test_full_takes_everything_unless_one_max_level_run() -> None:
    runs = level_sorted_runs([f("a", 1, 0, 2), f("b", 1, 5)], 6)
    unit = pick_full(6, runs)
    assert unit is not None and unit.output_level == 5 and {x.file_name for x in unit.files} == {"a", "b"}
    assert drop_delete(unit, runs)
    assert pick_full(6, level_sorted_runs([f("b", 1, 5), f("c", 1, 5)], 6)) is None
    assert pick_full(6, []) is None


def test_universal_size_amplification_compacts_all() -> None:
    # 4 level-0 runs of 10 against an oldest run of 10: 400% > 200%.
    runs = level_sorted_runs([f(f"n{i}", 10, 0, i + 1) for i in range(4)] + [f("base", 10, 5)], 6)
    unit = pick_universal(6, runs, max_size_amp=200, size_ratio=1, trigger=5)
    assert unit is not None and unit.output_level == 5 and len(unit.files) == 5
    assert drop_delete(unit, runs)


def test_universal_below_trigger_does_nothing() -> None:
    runs = level_sorted_runs([f(f"n{i}", 10, 0, i + 1) for i in range(3)] + [f("base", 1000, 5)], 6)
    assert pick_universal(6, runs, max_size_amp=200, size_ratio=1, trigger=5) is None


def test_universal_size_ratio_stops_before_a_big_run_and_keeps_retractions() -> None:
    # Five small level-0 runs and a big max-level run: size amplification is small, size ratio groups the
    # small runs; the output goes just below the big run (level 4) and must keep retractions (level 5 data).
    small = [f(f"n{i}", 10, 0, i + 1) for i in range(5)]
    runs = level_sorted_runs(small + [f("base", 10_000, 5)], 6)
    unit = pick_universal(6, runs, max_size_amp=200, size_ratio=1, trigger=5)
    assert unit is not None and unit.output_level == 4
    assert {x.file_name for x in unit.files} == {x.file_name for x in small}
    assert not drop_delete(unit, runs)


def test_append_pick_slides_past_big_files() -> None:
    files = [f("big", 1000, 0, 0)] + [f(f"s{i}", 10, 0, i + 1) for i in range(5)]
    picked = pick_append(files, min_file_num=5, target_file_size=100)
    assert picked is not None and [x.file_name for x in picked] == [f"s{i}" for i in range(5)]
    assert pick_append(files[:4], min_file_num=5, target_file_size=100) is None


def test_append_full_rule() -> None:
    files = [f("big", 1000, 0, 0), f("a", 10, 0, 1), f("b", 10, 0, 2), f("c", 10, 0, 3)]
    picked = pick_append_full(files, compaction_file_size=100)
    assert picked is not None and [x.file_name for x in picked] == ["a", "b", "c"]
    assert pick_append_full(files[:3], compaction_file_size=100) is None  # two small files after the big one
    assert pick_append_full([f("x", 500, 0, 1), f("y", 10, 0, 2), f("z", 500, 0, 3)], 100) is None


def test_force_up_level0_moves_level0_below_the_next_level() -> None:
    runs = level_sorted_runs([f("new", 10, 0, 9), f("base", 10_000, 5)], 6)
    assert pick_universal(6, runs, max_size_amp=200, size_ratio=1, trigger=5) is None
    unit = pick_universal(6, runs, max_size_amp=200, size_ratio=1, trigger=5, force_up_level0=True)
    assert unit is not None and unit.output_level == 4 and [x.file_name for x in unit.files] == ["new"]
    assert not drop_delete(unit, runs)
    only_upper = level_sorted_runs([f("base", 10_000, 5)], 6)
    assert pick_universal(6, only_upper, max_size_amp=200, size_ratio=1, trigger=5, force_up_level0=True) is None
