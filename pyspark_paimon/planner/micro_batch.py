"""How much one micro-batch of a stream reads and how its splits become Spark tasks: the read limits
(:class:`Admission`, ``read.stream.max*PerTrigger``) the planner admits splits by, and :func:`task_groups`, which
packs a planned batch like a batch read's splits while keeping a bucket's changes in commit order. Kept apart
from the planner because the Spark stream reader applies both around it.
"""

from __future__ import annotations

from typing import Sequence

from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.planner.scan import pack_weights, split_weight
from pyspark_paimon.planner.stream_offset import StreamSplit
from pyspark_paimon.planner.stream_options import StreamOptions

__all__ = ["Admission", "limits_of", "task_groups"]


class Admission:
    """Read limits of one micro-batch (``read.stream.max*PerTrigger``): a split is admitted while every limit
    still has room before it, so a batch always makes progress (at least one split) and stops at the first
    split that would start past a limit (Paimon's ``PaimonReadLimitGuard``)."""

    def __init__(self, max_files: int | None = None, max_bytes: int | None = None, max_rows: int | None = None):
        self.max_files, self.max_bytes, self.max_rows = max_files, max_bytes, max_rows
        self.files = self.bytes = self.rows = 0

    @property
    def unlimited(self) -> bool:
        return self.max_files is None and self.max_bytes is None and self.max_rows is None

    def admit(self, split: StreamSplit) -> bool:
        for used, limit in ((self.files, self.max_files), (self.bytes, self.max_bytes), (self.rows, self.max_rows)):
            if limit is not None and used >= limit:
                return False
        self.files += split.file_count
        self.bytes += split.size_bytes
        self.rows += split.row_count
        return True


def limits_of(opts: StreamOptions) -> Admission:
    return Admission(opts.max_files, opts.max_bytes, opts.max_rows)


def _ordered_by_bucket(schema: TableSchema) -> bool:
    """Whether a bucket's rows must reach the sink in commit order: always for primary-key tables (a key's
    changes), and for append tables with fixed buckets (Paimon's ordered append queue). Unaware-bucket append
    tables (``bucket = -1``) promise no order, so their files may be read by any task."""
    return bool(schema.primary_keys) or schema.core_options.bucket != -1


def task_groups(
    splits: Sequence[StreamSplit], schema: TableSchema, target_size: int, open_file_cost: int, min_groups: int
) -> list[list[StreamSplit]]:
    """The Spark tasks of one micro-batch, packed like a batch read's splits (``target_size`` bytes per task,
    each file weighing at least ``open_file_cost``, at least ``min_groups`` tasks while there is more than one
    unit to spread). Where order matters (:func:`_ordered_by_bucket`) a unit is every split of one (partition,
    bucket), kept in commit order; otherwise it is one split, which for an append table is one file (the
    planner's rule), so a micro-batch of one bucket still keeps every core busy."""
    units: list[list[StreamSplit]]
    if _ordered_by_bucket(schema):
        by_bucket: dict[tuple[bytes, int], list[StreamSplit]] = {}
        for s in splits:  # splits come in commit order; a bucket's stay together and in that order
            first = s.splits[0]
            by_bucket.setdefault((first.partition, first.bucket), []).append(s)
        units = list(by_bucket.values())
    else:
        units = [[s] for s in splits]
    weights = [
        split_weight(sum(s.size_bytes for s in unit), sum(s.file_count for s in unit), open_file_cost) for unit in units
    ]
    packed = pack_weights(weights, target_size, min_groups=max(min_groups, 1))
    return [[s for j in idx for s in units[j]] for idx in packed]
