"""What ``Scan.explain()`` returns: the typed report of a planned read, built without reading any data file.

A report is for people and for tests that check pruning, so it is made of dataclasses with named, typed fields
(``e.counters.files_skipped_stats``, ``e.splits.max_sorted_runs``) rather than a dict whose keys a typo gets
wrong silently; ``dataclasses.asdict(e)`` gives the JSON-friendly form. :func:`explain_plan` reports a
:class:`~pyspark_paimon.planner.scan.ScanPlan`; the engine adds which reader ``Scan.to_spark`` gives each split
(:class:`ReaderReport`, from ``datasource.read.routing``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.planner.compact_strategy import sorted_run_count
from pyspark_paimon.planner.row_ranges import split_rows
from pyspark_paimon.planner.scan import ScanCounters, ScanPlan


@dataclass(frozen=True)
class SplitReport:
    """One split: its partition (column -> value), bucket, files, bytes and stored rows.

    ``raw_convertible``: read without a merge. ``sorted_runs`` (primary-key reads, else None): level-0 files plus
    non-empty higher levels, what a read of the bucket merges and what compaction reduces."""

    partition: dict[str, Any]
    """The split's partition: column -> value (empty for an unpartitioned table)."""
    bucket: int
    """The bucket the split reads."""
    files: int
    """Data files the split reads."""
    bytes: int
    """Their size on storage."""
    rows: int
    """Rows stored in them (before any merge or filter); a data-evolution split's row range counted once, however
    many column files hold it."""
    raw_convertible: bool
    """Read without a merge: the files' rows are returned as stored."""
    sorted_runs: int | None = None
    """Primary-key reads: the sorted runs the read merges (level-0 files plus non-empty higher levels)."""


@dataclass(frozen=True)
class SplitTotals:
    """All splits: how many, over how many partitions, files, bytes and stored rows; how many need no merge;
    the most sorted runs a primary-key read of one bucket merges (None for append tables)."""

    count: int
    """Splits planned."""
    partitions: int
    """Distinct partitions they read."""
    files: int
    """Data files they read."""
    bytes: int
    """Their size on storage."""
    rows: int
    """Rows stored in them (before any merge or filter)."""
    raw_convertible: int
    """Splits read without a merge."""
    max_sorted_runs: int | None = None
    """The most sorted runs one primary-key split merges (None for append tables)."""


@dataclass(frozen=True)
class ReaderReport:
    """Which reader :meth:`Scan.to_spark <pyspark_paimon.table_scan.Scan.to_spark>` gives the splits: Spark's own
    file readers (``jvm_*``) or the ``paimon`` Python source, and why each Python split needs it
    (``python_reasons``: reason -> splits). ``summary`` reads "jvm: N files, python: M splits"."""

    summary: str
    """One line: "jvm: N files, python: M splits"."""
    jvm_files: int
    """Files Spark's own file readers read."""
    jvm_splits: int
    """Splits Spark's own file readers read."""
    python_splits: int
    """Splits the ``paimon`` Python source reads."""
    python_reasons: dict[str, int] = field(default_factory=dict)
    """Why those splits need the Python source: reason -> splits."""


@dataclass(frozen=True)
class ScanExplain:
    """How a read is planned: the snapshot and schema it reads, what each pruning level skipped
    (``counters``), the splits in total and one by one, planning notes, and (from ``Scan.explain``) the readers."""

    snapshot_id: int | None
    """The snapshot read (None: the table has none yet)."""
    schema_id: int
    """The schema the read returns."""
    counters: ScanCounters
    """What each pruning level looked at and skipped."""
    splits: SplitTotals
    """The splits in total."""
    split_list: list[SplitReport]
    """The splits one by one."""
    notes: list[str]
    """Planning notes (e.g. why a filter could not prune)."""
    readers: ReaderReport | None = None
    """Which reader ``Scan.to_spark`` gives each split (``Scan.explain`` only)."""


def explain_plan(plan: ScanPlan) -> ScanExplain:
    """The report of ``plan``; primary-key plans count each split's sorted runs."""
    keyed = bool(plan.schema.primary_keys)
    evolution = data_evolution_enabled(plan.schema.options)
    runs = [sorted_run_count(s.files) if keyed else None for s in plan.splits]
    split_list = [
        SplitReport(
            partition=dict(zip(plan.schema.partition_keys, s.partition_values)),
            bucket=s.bucket,
            files=len(s.files),
            bytes=s.size_bytes,
            rows=split_rows(s.files, evolution),
            raw_convertible=s.raw_convertible,
            sorted_runs=count,
        )
        for s, count in zip(plan.splits, runs)
    ]
    totals = SplitTotals(
        count=len(plan.splits),
        partitions=len({tuple(s.partition_values) for s in plan.splits}),
        files=sum(r.files for r in split_list),
        bytes=sum(r.bytes for r in split_list),
        rows=sum(r.rows for r in split_list),
        raw_convertible=sum(1 for r in split_list if r.raw_convertible),
        max_sorted_runs=max((c for c in runs if c is not None), default=0) if keyed else None,
    )
    return ScanExplain(
        snapshot_id=plan.snapshot.id if plan.snapshot is not None else None,
        schema_id=plan.schema.id,
        counters=replace(plan.counters),
        splits=totals,
        split_list=split_list,
        notes=list(plan.notes),
    )


__all__ = ["ReaderReport", "ScanExplain", "SplitReport", "SplitTotals", "explain_plan"]
