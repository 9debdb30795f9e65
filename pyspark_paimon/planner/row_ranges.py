"""Which files of a data-evolution bucket are read together: the files of one row-id range (Java's
``DataEvolutionSplitRead.mergeRangesAndSort``).

In a data-evolution table a file may hold only some columns (``_WRITE_COLS``) of the rows
``[first_row_id, first_row_id + row_count)``; the other columns of those rows live in older files of the same
range. A read therefore needs every file whose range overlaps, in one split, newest first (each column is taken
from the newest file that wrote it). Java requires the data files of one group to cover exactly the same range;
a table that breaks this is reported, never read half-way.

A compaction of such a table (:func:`pack_row_ranges`, Java's ``DataEvolutionCompactCoordinator``) rewrites runs of
these groups whose ids follow on as one whole-row file each, so the same grouping decides what it may put together.
A filter on ``_ROW_ID`` skips files by their range (:class:`RowIdFilter`, Java's row-range pruning), and a split's
rows are counted once per range, not once per column file (:func:`split_rows`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Collection, Sequence

from pyspark_paimon.errors import CorruptMetadataError, OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, data_evolution_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.planner.predicate import Leaf

__all__ = ["RowIdFilter", "pack_row_ranges", "refuse_data_evolution", "row_id_groups", "row_range", "split_rows"]


def row_range(f: DataFileMeta, where: str) -> tuple[int, int]:
    """``f``'s row ids as [first, last] (inclusive); a data-evolution file without a first row id is corrupt."""
    if f.first_row_id is None:
        raise CorruptMetadataError(
            f"Data file '{f.file_name}' of data-evolution table {where} has no first row id in its manifest entry, "
            "so its rows cannot be matched with the other columns' files. Restore the table's manifests, or read "
            "it with Paimon."
        )
    return f.first_row_id, f.first_row_id + f.row_count - 1


def row_id_groups(files: Sequence[DataFileMeta], where: str) -> list[tuple[DataFileMeta, ...]]:
    """``files`` cut into groups of overlapping row-id ranges, in row-id order; each group newest first (by max
    sequence number, ties in the given order, as Java's stable sort). Every file of a group must cover the same
    range (Java's rule for data files), else :class:`CorruptMetadataError`."""
    ordered = sorted(files, key=lambda f: row_range(f, where)[0])
    groups: list[list[DataFileMeta]] = []
    end = -1
    for f in ordered:
        lo, hi = row_range(f, where)
        if groups and lo <= end:
            groups[-1].append(f)
            end = max(end, hi)
        else:
            groups.append([f])
            end = hi
    out = []
    for group in groups:
        ranges = {row_range(f, where) for f in group}
        if len(ranges) > 1:
            raise CorruptMetadataError(
                f"Data files {[f.file_name for f in group]} of data-evolution table {where} overlap in row ids but "
                f"do not cover the same rows ({sorted(ranges)}); Paimon reads only files of equal row ranges "
                "together. Compact the table with Paimon, or read it with Paimon."
            )
        position = {id(f): i for i, f in enumerate(files)}
        out.append(tuple(sorted(group, key=lambda f: (-f.max_sequence_number, position[id(f)]))))
    return out


def pack_row_ranges(
    files: Sequence[DataFileMeta],
    where: str,
    *,
    target_file_size: int,
    open_file_cost: int,
    min_file_num: int,
    with_vectors: Collection[str] = (),
) -> list[tuple[DataFileMeta, ...]]:
    """The compaction tasks of one partition of a data-evolution table (Java's ``DataEvolutionCompactCoordinator``
    for its data files): each task's files are whole row-id groups (:func:`row_id_groups`) whose ids follow on, so
    one output file holds their rows in id order and carries the first group's first row id.

    As Java: the groups are cut into runs of consecutive ids (a gap, e.g. ids another partition took in the same
    commit, ends a run); within a run groups go into a bin weighing each file at ``max(size, open_file_cost)``; a
    group heavier than ``target_file_size`` is a task of its own (the bin before it is closed first), a bin heavier
    than the target is closed, and so is the run's last bin. A closed bin is a task when it holds at least
    ``min_file_num`` files (``compaction.min.file-num``) -- and here at least two, since a lone file rewritten
    gains nothing. Unlike Java, which moves deletion vectors to the new file, a group whose files have one
    (``with_vectors``) is left as it is and ends the run (our compaction does not rewrite those vectors yet)."""
    tasks: list[tuple[DataFileMeta, ...]] = []
    bin_: list[DataFileMeta] = []
    weight = 0

    def close() -> None:
        nonlocal bin_, weight
        if len(bin_) >= max(min_file_num, 2):
            tasks.append(tuple(bin_))
        bin_, weight = [], 0

    end: int | None = None
    for group in row_id_groups(files, where):
        lo, hi = row_range(group[0], where)
        if end is not None and lo != end + 1:
            close()  # a gap in the ids: the run ends
        end = hi
        if any(f.file_name in with_vectors for f in group):
            close()
            end = None
            continue
        group_weight = sum(max(f.file_size, open_file_cost) for f in group)
        if group_weight > target_file_size:
            close()
            bin_, weight = list(group), group_weight
            close()
            continue
        bin_.extend(group)
        weight += group_weight
        if weight > target_file_size:
            close()
    close()
    return tasks


def split_rows(files: Sequence[DataFileMeta], data_evolution: bool) -> int:
    """The rows stored in a split's ``files``: in a data-evolution split (one row-id range, each file holding some
    columns of the same rows) the range's rows once, else every file's."""
    if data_evolution and files:
        return files[0].row_count
    return sum(f.row_count for f in files)


_FLIPPED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}


@dataclass(frozen=True)
class RowIdFilter:
    """The leaves of a read's filter on ``_ROW_ID`` that a file's row-id range ``[first_row_id, first_row_id +
    row_count)`` can decide: ``=``, ``<=>``, ``IN``, ``<``, ``<=``, ``>``, ``>=`` and their negations (``_ROW_ID`` is
    never NULL, so ``NOT (_ROW_ID < v)`` is ``_ROW_ID >= v``). Anything else keeps every file; the exact filter
    still runs on the rows."""

    leaves: tuple[Leaf, ...]

    @classmethod
    def of(cls, predicate: Sequence[Leaf]) -> "RowIdFilter | None":
        leaves = tuple(leaf for leaf in predicate if leaf.column == ROW_ID)
        return cls(leaves) if leaves else None

    def may_match(self, f: DataFileMeta) -> bool:
        """Whether some row of ``f`` may satisfy every leaf; a file without a first row id is always kept."""
        if f.first_row_id is None:
            return True
        lo, hi = f.first_row_id, f.first_row_id + f.row_count - 1
        return all(_in_range(leaf, lo, hi) for leaf in self.leaves)

    def window(self, first: int, rows: int) -> tuple[int, int]:
        """The positions ``[start, stop)`` of the rows ``first``, ``first + 1``, ... (``rows`` of them) that may
        match: the range narrowed by every leaf that bounds ids (``<``, ``<=``, ``>``, ``>=``, ``=``, ``IN`` and the
        negated comparisons); the exact filter still runs on the rows read. Empty (``start == stop``) when none
        can match."""
        lo, hi = first, first + rows - 1  # inclusive ids
        for leaf in self.leaves:
            op = _FLIPPED.get(leaf.op, leaf.op) if leaf.negated else leaf.op
            if leaf.negated and leaf.op not in _FLIPPED:
                continue  # NOT (= v), NOT IN ...: no bound
            if op == "in":
                values = [_number(v) for v in (leaf.value or ())]
                if any(v is None for v in values):
                    continue
                inside = [v for v in values if v is not None and lo <= v <= hi]
                if not inside:
                    return 0, 0
                lo, hi = max(lo, _ceil(min(inside))), min(hi, _floor(max(inside)))
                continue
            v = _number(leaf.value)
            if v is None:
                continue
            if op in ("=", "<=>"):
                lo, hi = max(lo, _ceil(v)), min(hi, _floor(v))
            elif op == "<":
                hi = min(hi, _ceil(v) - 1)
            elif op == "<=":
                hi = min(hi, _floor(v))
            elif op == ">":
                lo = max(lo, _floor(v) + 1)
            elif op == ">=":
                lo = max(lo, _ceil(v))
        if lo > hi:
            return 0, 0
        return lo - first, hi - first + 1


def _in_range(leaf: Leaf, lo: int, hi: int) -> bool:
    op, value = leaf.op, leaf.value
    if leaf.negated:
        if op in _FLIPPED:
            op = _FLIPPED[op]
        elif op in ("=", "<=>"):  # only a one-row range holding exactly that id is excluded
            v = _number(value)
            return not (v is not None and lo == hi == v)
        else:
            return True
    if op == "in":
        values = [_number(v) for v in (value or ())]
        return any(v is None or lo <= v <= hi for v in values)
    v = _number(value)
    if v is None:
        return True  # NULL or not a number: the range cannot judge it
    if op in ("=", "<=>"):
        return lo <= v <= hi
    if op == "<":
        return lo < v
    if op == "<=":
        return lo <= v
    if op == ">":
        return hi > v
    if op == ">=":
        return hi >= v
    return True  # is_null, is_not_null, starts_with: not judged by the range


def _number(value: Any) -> int | float | Decimal | None:
    """``value`` as a number to compare ids with, or None (NULL, or not a number: no range judges it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return None
    return value


def _floor(v: int | float | Decimal) -> int:
    return math.floor(v)


def _ceil(v: int | float | Decimal) -> int:
    return math.ceil(v)


def refuse_data_evolution(schema: TableSchema, table: str, what: str) -> None:
    """Refuse ``what`` (a read that returns files as stored: streams, incremental reads, diffs) on a data-evolution
    table, whose files hold only some columns each and mean nothing without the other files of their row range."""
    if data_evolution_enabled(schema.options):
        raise OptionError(
            f"Table {table} has 'data-evolution.enabled' = 'true': its files hold some columns each, assembled into "
            f"rows by row id, so {what} of its files one by one is not supported. Read a version of the table "
            "(time travel) instead, or use Paimon (Java/Flink/Spark)."
        )
