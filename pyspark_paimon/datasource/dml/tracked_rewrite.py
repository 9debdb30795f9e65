"""Writing the rows a row-level change rewrites in a row-tracking table (``row-tracking.enabled``) so that every row
keeps its ``_ROW_ID``: each run of rows whose ids follow on and whose sequence number is the same becomes one file
whose first row id is the run's first id.

Why runs: a rewritten file must give each kept row its old id. Java stores the ids as a ``_ROW_ID`` column and
leaves the file's first row id unset, but pypaimon 2.1 and pypaimon-rust 0.4 compute a row's id from the file's
first row id and its position, so a file whose ids have gaps (a deleted row) would read wrong there. A run gives
every reader the same ids without a stored column; its sequence number is the file's (the rows' old one, so
``_SEQUENCE_NUMBER`` is kept too). Updated rows form runs of their own with sequence numbers 0, which the commit
turns into the new snapshot's id (``metadata/snapshots/row_ids.py``, Java's rule for a new file of existing rows),
as Java gives updated rows. Runs are found with numpy; one file is written per run.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_APPEND
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, SEQUENCE_NUMBER
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.planner.split import DataSplit

__all__ = ["write_with_ids"]


def write_with_ids(
    writer: TableWriter, schema: TableSchema, split: DataSplit, rows: pa.Table, changed: np.ndarray
) -> int:
    """Write ``rows`` (the table's columns and ``_ROW_ID`` / ``_SEQUENCE_NUMBER``, from ``split``'s bucket) so each
    keeps its id; ``changed`` rows get the commit's sequence number, the others keep theirs. Returns the files
    written."""
    n = rows.num_rows
    if n == 0:
        return 0
    ids = rows.column(ROW_ID).to_numpy().astype(np.int64, copy=False)
    seq = np.where(changed, 0, rows.column(SEQUENCE_NUMBER).to_numpy().astype(np.int64, copy=False))
    breaks = np.flatnonzero((ids[1:] != ids[:-1] + 1) | (seq[1:] != seq[:-1])) + 1
    starts = np.concatenate([[0], breaks]).astype(np.int64)
    ends = np.concatenate([breaks, [n]]).astype(np.int64)
    values = tuple(deserialize_row(split.partition, [f.type for f in schema.partition_fields]))
    for start, end in zip(starts.tolist(), ends.tolist()):
        writer.write_row_range(
            split.partition,
            values,
            split.bucket,
            split.total_buckets,
            rows.slice(start, end - start),
            int(ids[start]),
            (int(seq[start]), int(seq[start])),
            file_source=FILE_SOURCE_APPEND,
        )
    return len(starts)
