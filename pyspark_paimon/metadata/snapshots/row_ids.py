"""Row ids and sequence numbers a commit gives the new files of a row-tracking table (Java's
``RowTrackingCommitUtils.assignRowTracking``).

A row-tracking table (``row-tracking.enabled``) numbers its rows at commit, not at write, so that concurrent
writers never hand out the same id: each new data file written from input rows (file source APPEND, no first row id
yet, no stored ``_ROW_ID`` column) gets the next free id range, in commit order, starting at the latest snapshot's
``nextRowId``; the new snapshot's ``nextRowId`` is the end of the last range. Those files' sequence numbers become
the new snapshot's id (Java's case of a new file: every row changed in this snapshot), which is what
``_SEQUENCE_NUMBER`` reads as; so do the files of a data-evolution update, which come with their range's first row
id and sequence numbers 0 (``datasource/write/row_id_update.py``: Java's rule is by sequence number, a new file's
being 0). Files of compactions keep what they have. The assignment runs on every commit attempt,
against the snapshot it builds on, so a retried commit renumbers from the newer ``nextRowId``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_APPEND, KIND_ADD, ManifestEntry
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID

__all__ = ["RowIdsAssigned", "assign_row_ids"]


@dataclass(frozen=True)
class RowIdsAssigned:
    """The delta entries with their row ids, and the snapshot's ``nextRowId`` after them."""

    entries: list[ManifestEntry]
    next_row_id: int


def assign_row_ids(entries: Sequence[ManifestEntry], first: int, snapshot_id: int) -> RowIdsAssigned:
    """``entries`` (a commit's delta, in order) with row ids from ``first`` and sequence number ``snapshot_id`` on
    each new file written from input rows, and that sequence number on each new file whose sequence numbers are 0;
    every other entry unchanged."""
    out = []
    start = first
    for e in entries:
        f = e.file
        fresh = (
            e.kind == KIND_ADD
            and f.file_source == FILE_SOURCE_APPEND
            and f.first_row_id is None
            and ROW_ID not in (f.write_cols or ())
        )
        if fresh:
            f = replace(f, first_row_id=start, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id)
            start += f.row_count
            e = replace(e, file=f)
        elif e.kind == KIND_ADD and f.min_sequence_number == 0 and f.max_sequence_number == 0:
            # A new file of existing rows (an update by row id): every row changed in this snapshot.
            e = replace(e, file=replace(f, min_sequence_number=snapshot_id, max_sequence_number=snapshot_id))
        out.append(e)
    return RowIdsAssigned(out, start)
