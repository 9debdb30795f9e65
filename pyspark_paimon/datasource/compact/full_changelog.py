"""The changelog a full compaction produces (``changelog-producer = full-compaction``), vectorised.

Paimon's rule (Java's ``FullChangelogMergeFunctionWrapper``): only a compaction whose output is the top level
produces changelog, and it compares, for every key the compaction's lower-level inputs touch, the key's row at
the top level before (the state the previous full compaction published) with the merged result:

* no row at the top level and a merged row that is an addition: ``+I`` (the merged row);
* a row at the top level and a merged retraction: ``-D`` (the old top-level row);
* a row at the top level and a merged addition: ``-U`` (the old row) then ``+U`` (the merged row), unless
  ``changelog-producer.row-deduplicate`` is on and the two rows are equal (minus
  ``changelog-producer.row-deduplicate-ignore-fields``), which produces nothing.

Keys only the top level holds did not change and produce nothing. Each changelog row keeps the sequence number of
the row it copies. A lower-level file that compaction moves to the top level unchanged (an upgrade) reports each of
its additions as ``+I``: no key it holds can be at the top level already.

Rows are tables as :func:`pyspark_paimon.datasource.read.merged_read.read_merged` returns them (every column, plus
``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``); the keys are joined with Arrow, never compared row by row in Python.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.merge.merge import (
    KIND_DELETE,
    KIND_INSERT,
    KIND_UPDATE_AFTER,
    KIND_UPDATE_BEFORE,
    VALUE_KIND,
    adjacent_differ,
    is_retract,
)

__all__ = ["full_compaction_changelog", "upgrade_changelog"]

_M, _T, _ORDER = "__changelog_merged", "__changelog_top", "__changelog_order"


def _with_kind(table: pa.Table, kind: int) -> pa.Table:
    pos = table.schema.get_field_index(VALUE_KIND)
    column = pa.array(np.full(table.num_rows, kind, dtype=np.int8))
    return table.set_column(pos, table.schema.field(pos), column.cast(table.schema.field(pos).type))


def upgrade_changelog(rows: pa.Table) -> pa.Table:
    """The changelog of a file moved to the top level as it is: its additions, as ``+I``."""
    kinds = np.asarray(rows.column(VALUE_KIND).to_numpy(), dtype=np.int8)
    keep = ~is_retract(kinds)
    return _with_kind(rows.filter(pa.array(keep)) if not keep.all() else rows, KIND_INSERT)


def _rows_differ(a: pa.Table, b: pa.Table, names: Sequence[str]) -> np.ndarray:
    """``out[i]``: whether row ``i`` of ``a`` and of ``b`` differ in any of ``names`` (NULLs equal)."""
    n = a.num_rows
    differ = np.zeros(n, dtype=bool)
    if n == 0:
        return differ
    interleave = pa.array(np.column_stack([np.arange(n), np.arange(n) + n]).ravel(), pa.int64())
    for name in names:
        both = pa.chunked_array([*a.column(name).chunks, *b.column(name).cast(a.column(name).type).chunks])
        differ |= adjacent_differ(both.take(interleave))[::2]
    return differ


def full_compaction_changelog(
    merged: pa.Table,
    top: pa.Table,
    touched: pa.Table,
    keys: Sequence[str],
    compare: Sequence[str] | None,
) -> pa.Table:
    """The changelog rows of one compacted key range, in key order (see the module docstring).

    ``merged``: the merged result of every input, retractions kept, one row per key in key order; ``top``: the
    inputs' top-level rows; ``touched``: rows (any columns holding ``keys``) of the keys the lower-level inputs
    hold; ``compare``: the columns ``row-deduplicate`` compares, or None to always report an update."""
    m_index = merged.select(list(keys)).append_column(_M, pa.array(np.arange(merged.num_rows, dtype=np.int64)))
    t_index = top.select(list(keys)).append_column(_T, pa.array(np.arange(top.num_rows, dtype=np.int64)))
    changed = m_index.join(touched.select(list(keys)), list(keys), join_type="left semi", use_threads=False)
    joined = changed.join(t_index, list(keys), join_type="left outer", use_threads=False)
    m_rows = np.asarray(joined.column(_M).to_numpy(), dtype=np.int64)
    t_col = joined.column(_T)
    has_top = np.asarray(t_col.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    t_rows = np.asarray(t_col.fill_null(0).to_numpy(), dtype=np.int64)
    merged_kinds = np.asarray(merged.column(VALUE_KIND).to_numpy(), dtype=np.int8)[m_rows]
    adds = ~is_retract(merged_kinds)

    inserts = ~has_top & adds
    deletes = has_top & ~adds
    updates = has_top & adds
    if compare is not None and updates.any():
        idx = np.flatnonzero(updates)
        before = top.take(pa.array(t_rows[idx])).select(list(compare))
        after = merged.take(pa.array(m_rows[idx])).select(list(compare))
        same = ~_rows_differ(before, after, compare)
        updates[idx[same]] = False

    top = top.select(merged.column_names).cast(merged.schema)
    parts = []
    for mask, source, rows, kind, order in (
        (inserts, merged, m_rows, KIND_INSERT, 1),
        (deletes, top, t_rows, KIND_DELETE, 0),
        (updates, top, t_rows, KIND_UPDATE_BEFORE, 0),
        (updates, merged, m_rows, KIND_UPDATE_AFTER, 1),
    ):
        if not mask.any():
            continue
        part = _with_kind(source.take(pa.array(rows[mask])), kind)
        # Key order is the merged row's position; a key's -U comes before its +U.
        parts.append(part.append_column(_ORDER, pa.array(m_rows[mask] * 2 + order)))
    if not parts:
        return merged.slice(0, 0)
    out = pa.concat_tables(parts)
    return out.take(pa.array(np.argsort(out.column(_ORDER).to_numpy(), kind="stable"))).drop_columns([_ORDER])
