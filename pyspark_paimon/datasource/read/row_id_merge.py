"""Rows of a data-evolution table assembled from the files of one row-id range (Java's
``DataEvolutionSplitRead.createUnionReader`` and ``DataEvolutionFileReader``).

A data-evolution split holds the files of one row-id range, newest first (``planner/row_ranges.py``). Each file
holds some columns (``_WRITE_COLS``; all of its schema's when absent) of the same rows in the same order, so row
``i`` of every file is the row with id ``first_row_id + i``. Every column the read needs comes from the newest file
that wrote it (matched by field id, through the file's own schema, so renames and type changes apply); a column
no file wrote is NULL. ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` come from the newest file, as in Java (its sequence
number is the latest change of the row). Deletion vectors belong to the group's anchor, its oldest file
(Java's ``retrieveAnchorFile``), and apply to the assembled rows.

The files are put side by side column by column (Arrow, no per-row work). A group is read whole (its files are
each at most a target file size, which bounds the memory), unless the read's filter bounds ``_ROW_ID``: then only the
rows of the ids it allows are read from every file (the Parquet row groups holding them, sliced alike), so a lookup of
a few ids decodes a few row groups.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.read.file_read import (
    kept_rows,
    read_data_file,
    read_file_columns,
    with_tracking_columns,
)
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.row_tracking import (
    ROW_ID_FIELD_ID,
    SEQUENCE_NUMBER_FIELD_ID,
    TRACKING_COLUMNS,
)
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.model import DataField
from pyspark_paimon.planner.row_ranges import RowIdFilter, row_range
from pyspark_paimon.planner.split import DataSplit

__all__ = ["read_row_id_group", "vector_anchor", "written_field_ids"]

_TRACKING_IDS = frozenset((ROW_ID_FIELD_ID, SEQUENCE_NUMBER_FIELD_ID))


def written_field_ids(ctx: ReadContext, split: DataSplit, f: DataFileMeta) -> set[int]:
    """The field ids of the columns ``f`` wrote: its ``_WRITE_COLS`` in its own schema, or that whole schema."""
    schema = ctx.file_schema(split, f)
    if f.write_cols is None:
        return {x.id for x in schema.fields}
    names = set(f.write_cols)
    return {x.id for x in schema.fields if x.name in names}


def vector_anchor(files: Sequence[DataFileMeta]) -> DataFileMeta:
    """The oldest file of a group (by max sequence number, then name): the one deletion vectors name."""
    return min(files, key=lambda f: (f.max_sequence_number, f.file_name))


def read_row_id_group(ctx: ReadContext, split: DataSplit, targets: Sequence[DataField]) -> pa.Table:
    """The rows of ``split`` (one row-id range, newest file first) as the ``targets`` columns, deleted rows left out."""
    files = split.files
    stored_rows = files[0].row_count
    bounds = RowIdFilter.of(ctx.pushed)
    start, stop = (
        (0, stored_rows) if bounds is None else bounds.window(row_range(files[0], ctx.table_path)[0], stored_rows)
    )
    window = None if (start, stop) == (0, stored_rows) else (start, stop)
    rows = stop - start
    bare = replace(split, deletion_files={})  # vectors apply to the assembled rows, not to each file
    winners: dict[int, DataFileMeta] = {}
    for f in files:
        if f.row_count != stored_rows:
            raise CorruptMetadataError(
                f"Data files '{files[0].file_name}' ({stored_rows} rows) and '{f.file_name}' ({f.row_count} rows) "
                "share a row-id range of a data-evolution table but not its row count. Read the table with Paimon."
            )
        for field_id in written_field_ids(ctx, split, f):
            winners.setdefault(field_id, f)
    by_file: dict[str, list[DataField]] = {}
    for t in targets:
        if t.id in _TRACKING_IDS:
            continue
        winner = winners.get(t.id)
        if winner is not None:
            by_file.setdefault(winner.file_name, []).append(t)
        elif not t.type.nullable:
            raise CorruptMetadataError(
                f"Column '{t.name}' is NOT NULL, but no file of rows {files[0].first_row_id}.. of the data-evolution "
                f"table wrote it ({[x.file_name for x in files]}). Read the table with Paimon."
            )
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    for f in files:
        wanted = by_file.get(f.file_name)
        if not wanted:
            continue
        part = read_data_file(ctx, bare, f, wanted, window=window)
        if part.num_rows != rows:
            raise CorruptMetadataError(
                f"Data file '{f.file_name}' holds {part.num_rows} of rows {start}..{stop - 1}, but its manifest entry "
                f"says {stored_rows} rows. Restore the file, or read the table with Paimon."
            )
        for t in wanted:
            columns[t.name] = part.column(t.name)
    arrays = []
    fields = []
    for t in targets:
        if t.id in _TRACKING_IDS:
            arrays.append(pa.nulls(rows, pa.int64()))
            fields.append(pa.field(t.name, pa.int64()))
        else:
            column = columns.get(t.name)
            if column is None:
                column = pa.nulls(rows, to_arrow_type(t.type, t.name))
            arrays.append(column)
            fields.append(pa.field(t.name, column.type))
    if arrays:
        data = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    else:  # nothing but a count is read: a table of ``rows`` rows and no column
        data = pa.table({"__n": pa.nulls(rows)}).drop_columns(["__n"])
    newest = files[0]
    if any(t.id in _TRACKING_IDS for t in targets):
        stored = read_file_columns(
            ctx.fileio, split.file_path(newest), newest, ctx.core_options(), list(TRACKING_COLUMNS)
        )
        if window is not None and stored.num_columns:
            stored = stored.slice(start, rows)
        data = with_tracking_columns(data, newest, np.arange(start, stop, dtype=np.int64), stored)
    keep = kept_rows(ctx, split, vector_anchor(files), stored_rows)
    if keep is not None and window is not None:
        keep = keep[start:stop]
    return data if keep is None else data.filter(pa.array(keep))
