"""Paimon's compaction pick rules on file metadata (planner/compact_strategy.py)."""

from __future__ import annotations

import pytest

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.planner.compact_strategy import (
    drop_delete,
    level_sorted_runs,
    pack_unaware_append,
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


# -- unaware-bucket append tables: Java's AppendCompactCoordinator -------------------------------------------
MB = 1024 * 1024
JAVA = {
    "compaction_file_size": int(256 * MB * 0.7),
    "target_file_size": 256 * MB,
    "open_file_cost": 4 * MB,
    "min_file_num": 5,
    "file_num_limit": 100_000,
}


def names(tasks: list[tuple[str, list[DataFileMeta]]]) -> list[tuple[str, list[str]]]:
    return [(g, [x.file_name for x in files]) for g, files in tasks]


def test_unaware_twenty_tiny_files_are_one_task() -> None:
    """20 x (2 KB + 4 MB) stays far below 2 x 256 MB: nothing closes a bin, and the 20 left over are >= 5."""
    files = [("p", f(f"f{i:02}", 2048, 0, i)) for i in range(20)]
    assert names(pack_unaware_append(files, **JAVA)) == [("p", [f"f{i:02}" for i in range(20)])]
    assert pack_unaware_append(files[:4], **JAVA) == []  # fewer than compaction.min.file-num


def test_unaware_bins_close_at_twice_the_target_smallest_first() -> None:
    """Sorted by size; a bin closes once it has two files and size + open cost reaches 2 x target (200)."""
    sizes = {"a": 90, "b": 10, "c": 60, "d": 30, "e": 50, "f": 20, "g": 5}
    files = [("p", f(n, s, 0, i)) for i, (n, s) in enumerate(sizes.items())]
    rule = {**JAVA, "compaction_file_size": 100, "target_file_size": 100, "open_file_cost": 10, "min_file_num": 2}
    # g 15, b 20, f 30, d 40, e 60 -> 165; + c 70 -> 235: [g b f d e c]; a 100 alone is left (one file).
    assert names(pack_unaware_append(files, **rule)) == [("p", ["g", "b", "f", "d", "e", "c"])]
    # With min-file-num 1 the lone leftover is still no task: one file is never rewritten on its own.
    assert names(pack_unaware_append(files, **{**rule, "min_file_num": 1})) == [("p", ["g", "b", "f", "d", "e", "c"])]
    # Reaching the threshold exactly closes the bin (>=): two files of 90 + 10 = 200, though 2 < min-file-num.
    pair = [("p", f("x", 90, 0, 1)), ("p", f("y", 90, 0, 2))]
    assert names(pack_unaware_append(pair, **{**rule, "min_file_num": 5})) == [("p", ["x", "y"])]
    assert pack_unaware_append(pair, **{**rule, "open_file_cost": 9, "min_file_num": 5}) == []  # 198 < 200


def test_unaware_files_at_the_compaction_size_are_left_alone() -> None:
    files = [("p", f(f"s{i}", 10, 0, i)) for i in range(5)] + [("p", f("big", 70, 0, 9)), ("p", f("huge", 500))]
    rule = {**JAVA, "compaction_file_size": 70, "target_file_size": 100, "open_file_cost": 0}
    assert names(pack_unaware_append(files, **rule)) == [("p", ["s0", "s1", "s2", "s3", "s4"])]


def test_unaware_file_num_limit_counts_small_files_in_scan_order() -> None:
    files = [("p", f("big", 10_000, 0, 0))] + [("p", f(f"s{i}", 10, 0, i + 1)) for i in range(8)]
    rule = {**JAVA, "compaction_file_size": 100, "target_file_size": 100, "open_file_cost": 0}
    assert names(pack_unaware_append(files, **{**rule, "file_num_limit": 6})) == [
        ("p", ["s0", "s1", "s2", "s3", "s4", "s5"])
    ]
    assert pack_unaware_append(files, **{**rule, "file_num_limit": 4}) == []  # 4 < min-file-num
    assert pack_unaware_append(files, **{**rule, "file_num_limit": 0}) == []


def test_unaware_groups_are_packed_separately() -> None:
    files = [(p, f(f"{p}{i}", 10, 0, i)) for i in range(6) for p in ("x", "y")] + [("z", f("z0", 10))]
    rule = {**JAVA, "compaction_file_size": 100, "target_file_size": 100, "open_file_cost": 0}
    tasks = names(pack_unaware_append(files, **rule))
    assert tasks == [("x", [f"x{i}" for i in range(6)]), ("y", [f"y{i}" for i in range(6)])]
