"""How many rows a split's read returns, from its files' metadata alone, where that is exact.

``Scan.count()`` should not decode a table to count it, but a count must never be a guess: stored row counts
(the manifests' ``rowCount``) equal what a read returns only when the read returns every stored row as it is.
That holds for a split read without a merge (append files; a primary-key bucket in one sorted run above level 0
with no retraction in it), by a plain or fallback read with no row filter left to apply (a filter on partition
columns only is exact at planning), minus the positions each deletion vector deletes when the vector records
how many. Anything else -- a merge, retractions, a residual filter, chain and incremental reads, a vector
without its cardinality -- is counted by reading (``ReadJob.count_rows``).
"""

from __future__ import annotations

from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.planner.read_plan import PlannedRead
from pyspark_paimon.planner.split import DataSplit

# Read kinds whose splits return their files' rows as stored (chain reads relabel and merge across branches;
# incremental reads compare or merge versions).
_STORED_KINDS = ("plain", "fallback")


def stored_row_count(planned: PlannedRead, ctx: ReadContext, split: DataSplit) -> int | None:
    """The rows reading ``split`` returns, from metadata, or None when only a read can tell."""
    if planned.kind not in _STORED_KINDS or ctx.residual is not None:
        return None
    if split.diff_before is not None or split.relabel_partition or not split.raw_convertible:
        return None
    keyed = bool(planned.schema.primary_keys)
    total = 0
    for f in split.files:
        if keyed and f.delete_row_count != 0:  # retractions (or an unknown count) are dropped by the read
            return None
        vector = split.deletion_files.get(f.file_name)
        if vector is not None:
            if vector.cardinality is None:
                return None
            total -= vector.cardinality
        total += f.row_count
    return total


__all__ = ["stored_row_count"]
