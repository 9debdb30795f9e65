"""The merge sort order (Java's `SortMergeReaderWithMinHeap`) is the same on every supported pyarrow.

``sort_for_merge`` puts NULL (and NaN, which Arrow places next to NULL) first in each sort column through
helper rank columns, because per-key ``null_placement`` exists only from pyarrow 25 on. The reference here is
Arrow's own placement: per sort key where the running pyarrow has it, else the one table-wide setting (every
key of the merge order wants NULLs first, so both say the same).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.datasource.merge.merge import (
    KIND_DELETE,
    KIND_INSERT,
    KIND_UPDATE_AFTER,
    KIND_UPDATE_BEFORE,
    sort_for_merge,
)

ROW = "row"
KINDS = [KIND_INSERT, KIND_UPDATE_BEFORE, KIND_UPDATE_AFTER, KIND_DELETE]


def _per_key_null_placement() -> bool:
    try:
        pc.SortOptions(sort_keys=[("x", "ascending", "at_start")])
    except ValueError:
        return False
    return True


def reference_order(table: pa.Table, keys: list[str], seq: list[str], descending: bool, rank: str | None) -> list[int]:
    order = "descending" if descending else "ascending"
    named = (
        [(k, "ascending") for k in keys]
        + [(s, order) for s in seq]
        + ([(rank, "ascending")] if rank else [])
        + [("_SEQUENCE_NUMBER", "ascending"), ("is_add", "ascending")]
    )
    t = table.append_column(
        "is_add", pc.is_in(table.column("_VALUE_KIND"), value_set=pa.array([KIND_INSERT, KIND_UPDATE_AFTER], pa.int8()))
    )
    if _per_key_null_placement():
        options = pc.SortOptions(sort_keys=[(name, o, "at_start") for name, o in named])
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            options = pc.SortOptions(sort_keys=named, null_placement="at_start")
    return t.take(pc.sort_indices(t, options=options)).column(ROW).to_pylist()


def table_of(rows: list[tuple[Any, ...]], key_type: pa.DataType, seq_type: pa.DataType) -> pa.Table:
    return pa.table(
        {
            "k": pa.array([r[0] for r in rows], key_type),
            "s": pa.array([r[1] for r in rows], seq_type),
            "rank": pa.array([r[2] for r in rows], pa.int32()),
            "_SEQUENCE_NUMBER": pa.array([r[3] for r in rows], pa.int64()),
            "_VALUE_KIND": pa.array([r[4] for r in rows], pa.int8()),
            ROW: pa.array(range(len(rows)), pa.int64()),
        }
    )


def test_nulls_and_nans_first_in_both_directions() -> None:
    nan = math.nan
    rows = [
        (1, 5.0, 0, 0, KIND_INSERT),
        (1, None, 0, 1, KIND_INSERT),
        (1, nan, 0, 2, KIND_INSERT),
        (1, -1.0, 0, 3, KIND_INSERT),
        (1, None, 0, 4, KIND_DELETE),
        (1, nan, 0, 5, KIND_UPDATE_BEFORE),
    ]
    t = table_of(rows, pa.int32(), pa.float64())
    asc = sort_for_merge(t, ["k"], ["s"], False).column(ROW).to_pylist()
    desc = sort_for_merge(t, ["k"], ["s"], True).column(ROW).to_pylist()
    assert asc == [1, 4, 2, 5, 3, 0]
    assert desc == [1, 4, 2, 5, 0, 3]
    assert asc == reference_order(t, ["k"], ["s"], False, None)
    assert desc == reference_order(t, ["k"], ["s"], True, None)


def test_float_keys_with_nan_and_chunked_input() -> None:
    nan = math.nan
    rows = [
        (2.0, 1, 0, 0, KIND_INSERT),
        (nan, 1, 0, 1, KIND_INSERT),
        (-3.0, 1, 0, 2, KIND_INSERT),
        (nan, 1, 0, 0, KIND_DELETE),
    ]
    t = table_of(rows, pa.float64(), pa.int64())
    chunked = pa.concat_tables([t.slice(0, 2), t.slice(2)])
    got = sort_for_merge(chunked, ["k"], [], False).column(ROW).to_pylist()
    assert got == [3, 1, 2, 0]
    assert got == reference_order(t, ["k"], [], False, None)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([1.0, 2.0, math.nan]),
            st.one_of(st.none(), st.sampled_from([-1.5, 0.0, 7.0, math.nan])),
            st.integers(0, 2),
            st.integers(0, 3),
            st.sampled_from(KINDS),
        ),
        min_size=2,
        max_size=30,
    ),
    descending=st.booleans(),
    with_rank=st.booleans(),
    seq_is_int=st.booleans(),
)
def test_property_order_matches_arrow_null_placement(
    rows: list[tuple[Any, ...]], descending: bool, with_rank: bool, seq_is_int: bool
) -> None:
    if seq_is_int:
        rows = [(k, None if s is None or math.isnan(s) else int(s), *rest) for k, s, *rest in rows]
    t = table_of(rows, pa.float64(), pa.int64() if seq_is_int else pa.float64())
    rank = "rank" if with_rank else None
    got = sort_for_merge(t, ["k"], ["s"], descending, rank).column(ROW).to_pylist()
    assert got == reference_order(t, ["k"], ["s"], descending, rank)


@pytest.mark.parametrize("descending", [False, True])
def test_no_helper_columns_leak_into_the_result(descending: bool) -> None:
    t = table_of([(1, None, 0, 1, KIND_INSERT), (1, 3, 0, 0, KIND_INSERT)], pa.int32(), pa.int64())
    out = sort_for_merge(t, ["k"], ["s"], descending)
    assert out.schema == t.schema
    assert out.column(ROW).to_pylist() == [0, 1]


@settings(max_examples=60, deadline=None)
@given(
    keys=st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=2, max_size=12),
    lead=st.lists(st.integers(0, 1), min_size=12, max_size=12),
    sort_first=st.booleans(),
)
def test_presorted_input_takes_the_shortcut_only_when_the_key_decides(
    keys: list[Any], lead: list[int], sort_first: bool
) -> None:
    """Input whose key already rises strictly is returned as it is; anything else (ties, NULLs, a leading key
    column that varies) is sorted. Either way the order is the reference order."""
    if sort_first:
        keys = sorted({k for k in keys if k is not None}) or [0, 1]
    n = len(keys)
    t = pa.table(
        {
            "p": pa.array(lead[:n], pa.int32()),
            "k": pa.array(keys, pa.int64()),
            "_SEQUENCE_NUMBER": pa.array(range(n, 0, -1), pa.int64()),
            "_VALUE_KIND": pa.array([KIND_INSERT] * n, pa.int8()),
            ROW: pa.array(range(n), pa.int64()),
        }
    )
    got = sort_for_merge(t, ["p", "k"], [], False).column(ROW).to_pylist()
    named = (
        [("p", "ascending", "at_start"), ("k", "ascending", "at_start"), ("_SEQUENCE_NUMBER", "ascending")]
        if _per_key_null_placement()
        else None
    )
    if named is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            options = pc.SortOptions(
                sort_keys=[("p", "ascending"), ("k", "ascending"), ("_SEQUENCE_NUMBER", "ascending")],
                null_placement="at_start",
            )
    else:
        options = pc.SortOptions(sort_keys=named)
    assert got == t.take(pc.sort_indices(t, options=options)).column(ROW).to_pylist()


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 5), st.sampled_from(KINDS)), min_size=2, max_size=30),
    runs=st.booleans(),
)
def test_integer_keys_sort_like_arrow(rows: list[tuple[int, int, int]], runs: bool) -> None:
    """One integer key and no sequence fields take the numpy path: the order must be the reference order, for
    concatenated sorted runs (the usual input) and for any other input, ties on the sequence number included."""
    if runs:  # two sorted files, the newer with higher sequence numbers
        half = len(rows) // 2
        rows = sorted(rows[:half]) + sorted((k, s + 10, kind) for k, s, kind in rows[half:])
    t = pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows], pa.int64()),
            "_VALUE_KIND": pa.array([r[2] for r in rows], pa.int8()),
            ROW: pa.array(range(len(rows))),
        }
    )
    got = sort_for_merge(t, ["k"], [], False).column(ROW).to_pylist()
    assert got == reference_order(t, ["k"], [], False, None)
