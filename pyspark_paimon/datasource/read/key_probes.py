"""The records of one data file that a merge elsewhere needs, as a merged read sees them: every record, the
records at given positions, or only the records of given keys.

These are the probes of the readers that merge by themselves: ``Table.diff`` reduces the files both versions
share to the keys that can differ (:func:`read_records_of_keys`, with :func:`key_mask`), deletion-vector
compaction and the lookup changelog producer look up older versions by position (:func:`read_records`), and
postpone-bucket compaction replays whole files. Filtering by key before a merge is exact (a key's merge sees only
its own records), so each probe returns every record of the keys it keeps.

This module never imports pyspark.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.merge import SEQUENCE_NUMBER, VALUE_KIND
from pyspark_paimon.datasource.read.file_read import read_data_file, stream_data_file
from pyspark_paimon.datasource.read.read_context import ReadColumns, ReadContext, ReadMetrics
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.split import DataSplit

__all__ = ["key_mask", "read_records", "read_records_of_keys"]


def read_records(ctx: ReadContext, split: DataSplit, f: DataFileMeta, positions: np.ndarray | None = None) -> pa.Table:
    """Every record of ``f`` as :func:`~pyspark_paimon.datasource.read.merged_read.read_merged` sees them (all
    columns of ``ctx.schema`` in read types, plus ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``), without the rows
    of its deletion vector in ``split``; or, with ``positions`` (file-global, ascending), exactly the rows at
    those positions whatever the vector says: the older versions a deletion-vector compaction looks up and
    merges with new ones."""
    plan = ReadColumns.of(ctx, None)
    system = (SEQUENCE_NUMBER, VALUE_KIND)
    if positions is None:
        return read_data_file(ctx, split, f, plan.read_fields, system)
    whole = read_data_file(ctx, replace(split, deletion_files={}), f, plan.read_fields, system)
    return whole.take(pa.array(positions, pa.int64()))


def read_records_of_keys(
    ctx: ReadContext, split: DataSplit, f: DataFileMeta, keys: pa.Table, key_names: Sequence[str]
) -> tuple[pa.Table | None, int]:
    """The records of ``f`` (as :func:`read_records` reads them) whose key ``keys`` holds (None: none), and how
    many records were read. The file is streamed batch by batch, each batch filtered before the next is read, so
    a big file costs memory only for the rows kept. Every record of a kept key is kept, so merging what this
    returns gives those keys exactly the rows a merge of the whole files gives them (a key's merge sees only its
    own records, under every merge engine): filtering by key before a merge is exact, filtering by value is not.
    For the same reason row groups whose key statistics lie outside the keys' range are skipped unread (a change
    clustered in key order reads only its row groups)."""
    plan = ReadColumns.of(ctx, None)
    system = (SEQUENCE_NUMBER, VALUE_KIND)
    kept: list[pa.Table] = []
    read = 0
    ranged = replace(ctx, pushed=_key_range(keys, key_names))
    for data in stream_data_file(ranged, split, f, plan.read_fields, system, skip_row_groups=ReadMetrics()):
        read += data.num_rows
        data = data.filter(key_mask(data, keys, key_names))
        if data.num_rows:
            kept.append(data)
    return (pa.concat_tables(kept) if kept else None), read


_KEY_ROW = "__paimon_key_row__"


def _key_range(keys: pa.Table, key_names: Sequence[str]) -> tuple[Leaf, ...]:
    """Leaves every row of ``keys`` satisfies: each key column between its smallest and largest value."""
    leaves: list[Leaf] = []
    for k in key_names:
        bounds = pc.min_max(keys.column(k))
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        if lo is not None and hi is not None:
            leaves += [Leaf(k, ">=", lo), Leaf(k, "<=", hi)]
    return tuple(leaves)


def key_mask(table: pa.Table, keys: pa.Table, key_names: Sequence[str]) -> pa.Array:
    """True for each row of ``table`` whose key (the ``key_names`` columns, NOT NULL as primary keys are) is
    one of the rows of ``keys``: ``is_in`` on a single key column, a semi join on a composite key."""
    n = table.num_rows
    if n == 0 or keys.num_rows == 0:
        return pa.array(np.zeros(n, dtype=bool))
    if len(key_names) == 1:
        k = key_names[0]
        column = table.column(k)
        values = keys.column(k).cast(column.type).combine_chunks()
        return pc.is_in(column, value_set=values).combine_chunks()
    # Joins only on the key columns and a row number: Arrow cannot carry nested value columns through a join.
    rows = table.select(list(key_names)).append_column(_KEY_ROW, pa.array(np.arange(n, dtype=np.int64)))
    hit = rows.join(keys.select(list(key_names)), list(key_names), join_type="left semi", use_threads=False)
    mask = np.zeros(n, dtype=bool)
    mask[np.asarray(hit.column(_KEY_ROW).to_numpy(), dtype=np.int64)] = True
    return pa.array(mask)
