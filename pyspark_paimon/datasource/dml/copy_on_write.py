"""Copy-on-write changes of append tables without deletion vectors: every data file holding a matched row is read
whole, its matched rows dropped or replaced, the rest written to new files; the commit (kind OVERWRITE, as Java marks
a rewrite) DELETEs the old files (:func:`rewrite_files` returns them) and ADDs the new ones. In a row-tracking table
the kept rows keep their ``_ROW_ID`` (``tracked_rewrite``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.dml.change_rules import refuse_deletion_vector
from pyspark_paimon.datasource.dml.change_target import Target
from pyspark_paimon.datasource.dml.tracked_rewrite import write_with_ids
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID
from pyspark_paimon.metadata.store import FileStore

__all__ = ["rewrite_files"]


def rewrite_files(
    writer: TableWriter,
    store: FileStore,
    target: Target,
    deleted: np.ndarray,
    updated: np.ndarray,
    new_rows: pa.Table | None,
) -> tuple[dict[tuple[bytes, int, int], list[DataFileMeta]], int]:
    """Write the kept rows of every touched file with ``writer`` (updated rows with their ``new_rows`` values);
    returns the replaced files per (partition, bucket, total buckets) and how many unchanged rows were copied."""
    assert target.file_of_row is not None
    old: dict[tuple[bytes, int, int], list[DataFileMeta]] = defaultdict(list)
    copied = 0
    rows = target.rows
    touched = np.unique(target.file_of_row[deleted | updated])
    merged = rows if new_rows is None else _replace_rows(rows, new_rows, updated)
    tracked = ROW_ID in rows.column_names
    for i in touched:
        split, f = target.files[int(i)]
        refuse_deletion_vector(store, split, f)
        keep = (target.file_of_row == i) & ~deleted
        kept = merged.filter(pa.array(keep))
        copied += kept.num_rows - int((keep & updated).sum())
        if tracked:
            write_with_ids(writer, store.schema(), split, kept, updated[keep])
        else:
            writer.write(kept)
        old[(split.partition, split.bucket, split.total_buckets)].append(f)
    return dict(old), copied


def _replace_rows(rows: pa.Table, new_rows: pa.Table, updated: np.ndarray) -> pa.Table:
    mask = pa.array(updated)
    cols = []
    for name in rows.column_names:
        cols.append(pc.if_else(mask, new_rows.column(name), rows.column(name)))
    return pa.Table.from_arrays(cols, schema=rows.schema)
