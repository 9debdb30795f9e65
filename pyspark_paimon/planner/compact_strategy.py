"""Which files of one bucket a compaction rewrites, and into which level (Paimon's pick rules, metadata only).

Primary-key buckets are LSM trees (Java's `MergeTreeSplitGenerator`): every level-0 file is its own *sorted run*, newest
first, and each non-empty level above is one run. The rules follow Java's ``Levels``, ``CompactStrategy``,
``UniversalCompaction`` and ``MergeTreeCompactManager``:

* **full** compaction takes every run into the max level (``num-levels`` - 1), unless the bucket already is a
  single run at the max level;
* **universal** compaction (automatic, and ``Table.maintenance.compact(full=False)``) first checks size amplification
  (the newer runs together against the oldest one, ``compaction.max-size-amplification-percent``), then size
  ratios (``compaction.size-ratio``), then the run count (``num-sorted-run.compaction-trigger``); the output
  level is the level of the first run left out minus one, never 0, and the max level when every run is taken;
* retractions are dropped (``dropDelete``) only when the output level is above 0 and at least the highest
  non-empty level: then no older data outside the compaction can be shadowed by them.

Fixed-bucket append buckets follow Java's ``BucketedAppendCompactManager``: a sliding window over the files in
sequence order picks ``compaction.min.file-num`` files once that many sit together below twice
``target-file-size``; full compaction drops the leading large files and rewrites the rest when small files
outnumber large ones.

Unaware-bucket append tables (``bucket = -1``) follow Java's ``AppendCompactCoordinator`` instead
(:func:`pack_unaware_append`): every small file of the snapshot (up to ``compaction.file-num-limit``), per
partition, packed by size into bins of about twice ``target-file-size``; what is left over is one more task when
it holds ``compaction.min.file-num`` files. Java's ``CALL sys.compact`` runs that coordinator whatever the
strategy, so ``full`` does not change it.

Nothing here reads data; the same rules serve ``Table.maintenance.compact`` and the automatic compaction after writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Iterable, Sequence, TypeVar

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta

__all__ = [
    "SortedRun",
    "CompactUnit",
    "sorted_run_count",
    "level_sorted_runs",
    "pick_full",
    "pick_universal",
    "drop_delete",
    "pick_append",
    "pick_append_full",
    "pack_unaware_append",
    "FULL_COMPACT_MIN_FILE",
    "APPEND_COMPACT_OPEN_FILE_COST",
]

#: Java's ``BucketedAppendCompactManager.FULL_COMPACT_MIN_FILE``: a full append compaction needs this many files.
FULL_COMPACT_MIN_FILE = 3
#: What each file adds to a bin of the unaware-bucket coordinator besides its size, when the table does not set
#: ``source.split.open-file-cost``: Java's default of that option (4 mb). Our read packing defaults to less
#: (a Python task opens files cheaply), but which files get compacted together is Java's rule.
APPEND_COMPACT_OPEN_FILE_COST = 4 * 1024 * 1024

G = TypeVar("G", bound=Hashable)


@dataclass(frozen=True)
class SortedRun:
    """One sorted run of a primary-key bucket: a level-0 file, or every file of a level above 0."""

    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True)
class CompactUnit:
    """The files one compaction of a bucket rewrites and the level its outputs go to."""

    output_level: int
    files: tuple[DataFileMeta, ...]


def sorted_run_count(files: Sequence[DataFileMeta]) -> int:
    """How many sorted runs ``files`` of one bucket form (each level-0 file, plus each level above 0 that has
    files): what a merging read of the bucket merges, and what ``num-sorted-run.compaction-trigger`` counts."""
    return sum(1 for f in files if f.level == 0) + len({f.level for f in files if f.level > 0})


def level_sorted_runs(files: Sequence[DataFileMeta], num_levels: int, where: str = "") -> list[SortedRun]:
    """The bucket's sorted runs as Java's ``Levels.levelSortedRuns`` lists them: level-0 files newest first
    (larger max sequence number first), then each non-empty level in ascending order."""
    too_high = [f for f in files if f.level >= num_levels]
    if too_high:
        f = too_high[0]
        raise OptionError(
            f"Data file {f.file_name}{where} is at level {f.level}, but the table has 'num-levels' = {num_levels} "
            f"(levels 0 to {num_levels - 1}). Set 'num-levels' to at least {f.level + 1} (it was written with more "
            "levels) before compacting."
        )
    level0 = sorted(
        (f for f in files if f.level == 0), key=lambda f: (-f.max_sequence_number, f.min_sequence_number, f.file_name)
    )
    runs = [SortedRun(0, (f,)) for f in level0]
    for level in sorted({f.level for f in files if f.level > 0}):
        runs.append(SortedRun(level, tuple(f for f in files if f.level == level)))
    return runs


def _unit(output_level: int, runs: Sequence[SortedRun]) -> CompactUnit:
    return CompactUnit(output_level, tuple(f for r in runs for f in r.files))


def pick_full(num_levels: int, runs: Sequence[SortedRun]) -> CompactUnit | None:
    """Every run into the max level; None when there is nothing or only one max-level run (Java's
    ``CompactStrategy.pickFullCompaction`` without record expiry, forced rewrites or deletion vectors)."""
    max_level = num_levels - 1
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        return None
    return _unit(max_level, runs)


def pick_universal(
    num_levels: int,
    runs: Sequence[SortedRun],
    *,
    max_size_amp: int,
    size_ratio: int,
    trigger: int,
    force_up_level0: bool = False,
) -> CompactUnit | None:
    """Java's ``UniversalCompaction.pick`` (without off-peak hours or early full compaction), with the
    manager's filter: a unit of one file already at its output level is no compaction.

    ``force_up_level0`` is Java's ``ForceUpLevel0Compaction`` (first-row tables, whose reads skip level 0,
    and ``compaction.force-up-level-0``): when the universal rules pick nothing, every level-0 run still goes
    up, with the runs the size ratio lets join them."""
    max_level = num_levels - 1
    unit = _size_amp(max_level, runs, max_size_amp, trigger)
    if unit is None and len(runs) >= trigger:
        unit = _size_ratio(max_level, runs, 1, size_ratio)
    if unit is None and len(runs) > trigger:
        unit = _size_ratio(max_level, runs, len(runs) - trigger + 1, size_ratio)
    if unit is None and force_up_level0:
        level0 = next((i for i, r in enumerate(runs) if r.level > 0), len(runs))
        if level0:
            unit = _size_ratio(max_level, runs, level0, size_ratio, force=True)
    if unit is None or not unit.files or (len(unit.files) == 1 and unit.files[0].level == unit.output_level):
        return None
    return unit


def _size_amp(max_level: int, runs: Sequence[SortedRun], max_size_amp: int, trigger: int) -> CompactUnit | None:
    if len(runs) < trigger:
        return None
    candidate = sum(r.size for r in runs[:-1])
    earliest = runs[-1].size
    if candidate * 100 > max_size_amp * earliest:
        return _unit(max_level, runs)
    return None


def _size_ratio(
    max_level: int, runs: Sequence[SortedRun], candidate_count: int, size_ratio: int, force: bool = False
) -> CompactUnit | None:
    candidate = sum(r.size for r in runs[:candidate_count])
    triggered = force or candidate_count > 1
    count = candidate_count
    for nxt in runs[candidate_count:]:
        if candidate * (100.0 + size_ratio) / 100.0 < nxt.size and (not triggered or nxt.level > 1):
            break
        candidate += nxt.size
        count += 1
        triggered = True
    return _create_unit(runs, max_level, count) if triggered else None


def _create_unit(runs: Sequence[SortedRun], max_level: int, count: int) -> CompactUnit:
    if count == len(runs):
        output = max_level
    else:
        output = max(0, runs[count].level - 1)
    if output == 0:  # never output level 0: take runs up to the next non-zero level
        for nxt in runs[count:]:
            count += 1
            if nxt.level != 0:
                output = nxt.level
                break
    if count == len(runs):
        output = max_level
    return _unit(output, runs[:count])


def drop_delete(unit: CompactUnit, runs: Sequence[SortedRun]) -> bool:
    """Java's rule: retractions may go when the output is above level 0 and no older data remains outside
    the unit, i.e. the output level is at least the highest non-empty level of the bucket."""
    highest = max((r.level for r in runs), default=-1)
    return unit.output_level != 0 and unit.output_level >= highest


def pick_append(files: Sequence[DataFileMeta], min_file_num: int, target_file_size: int) -> list[DataFileMeta] | None:
    """Java's ``BucketedAppendCompactManager.pickCompactBefore``: files in sequence order, a window that
    slides on once it holds twice ``target-file-size``; the first ``min_file_num`` files that fit win."""
    window: list[DataFileMeta] = []
    total = 0
    for f in sorted(files, key=lambda f: (f.min_sequence_number, f.file_name)):
        window.append(f)
        total += f.file_size
        if len(window) >= min_file_num:
            return window
        if total >= target_file_size * 2:
            total -= window.pop(0).file_size
    return None


def pick_append_full(files: Sequence[DataFileMeta], compaction_file_size: int) -> list[DataFileMeta] | None:
    """Java's append ``FullCompactTask``: drop the leading large files (sequence order), then rewrite the rest
    when it has at least three files and more small than large ones."""
    if len(files) < FULL_COMPACT_MIN_FILE:
        return None
    ordered = sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))
    while ordered and ordered[0].file_size >= compaction_file_size:
        ordered.pop(0)
    small = sum(1 for f in ordered if f.file_size < compaction_file_size)
    if small > len(ordered) - small and len(ordered) >= FULL_COMPACT_MIN_FILE:
        return ordered
    return None


def pack_unaware_append(
    files: Iterable[tuple[G, DataFileMeta]],
    *,
    compaction_file_size: int,
    target_file_size: int,
    open_file_cost: int,
    min_file_num: int,
    file_num_limit: int,
) -> list[tuple[G, list[DataFileMeta]]]:
    """Java's ``AppendCompactCoordinator`` for one batch run: the compaction tasks of an unaware-bucket append
    table, each a group (its partition) and the files rewritten together.

    ``files`` are the live files of the snapshot in scan order with their group. Only files smaller than
    ``compaction_file_size`` take part (``shouldCompact``), and only the first ``file_num_limit`` of those
    (``compaction.file-num-limit`` bounds the coordinator's memory). Per group the files are sorted by size and
    added to a bin, each counting its size plus ``open_file_cost``; a bin of more than one file whose total
    reaches twice ``target_file_size`` is a task (``enoughContent``), and the files left at the end are one
    more when there are at least ``min_file_num`` of them (``enoughInputFiles``), and never a lone file (Java's
    ``AppendCompactTask`` needs two inputs)."""
    if file_num_limit <= 0:
        return []
    groups: dict[G, list[DataFileMeta]] = {}
    taken = 0
    for group, f in files:
        if f.file_size >= compaction_file_size:
            continue
        groups.setdefault(group, []).append(f)
        taken += 1
        if taken >= file_num_limit:
            break
    tasks: list[tuple[G, list[DataFileMeta]]] = []
    for group, small in groups.items():
        bin_: list[DataFileMeta] = []
        total = 0
        for f in sorted(small, key=lambda f: (f.file_size, f.min_sequence_number, f.file_name)):
            bin_.append(f)
            total += f.file_size + open_file_cost
            if len(bin_) > 1 and total >= 2 * target_file_size:
                tasks.append((group, bin_))
                bin_, total = [], 0
        if len(bin_) >= max(min_file_num, 2):  # Java's task refuses one input (min-file-num = 1 would fail)
            tasks.append((group, bin_))
    return tasks
