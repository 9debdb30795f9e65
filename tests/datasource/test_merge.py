"""Merge engines over sorted Arrow tables (Java's `SortMergeReaderWithMinHeap`, `CoreOptions.MergeEngine`)."""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.datasource.merge.merge import (
    KIND_DELETE,
    KIND_INSERT,
    KIND_UPDATE_AFTER,
    KIND_UPDATE_BEFORE,
    MergeError,
    deduplicated_rows,
    merge_sorted,
    sort_for_merge,
)
from pyspark_paimon.errors import OptionError, PaimonError

I, UB, UA, D = KIND_INSERT, KIND_UPDATE_BEFORE, KIND_UPDATE_AFTER, KIND_DELETE


def kv(rows: list[tuple], value_types: dict[str, pa.DataType] | None = None) -> pa.Table:
    """rows: (id, seq, kind, **values as a tuple in value_types order)."""
    value_types = value_types or {"v": pa.int64()}
    names = list(value_types)
    cols: dict[str, Any] = {
        "id": pa.array([r[0] for r in rows], pa.int32()),
        "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows], pa.int64()),
        "_VALUE_KIND": pa.array([r[2] for r in rows], pa.int8()),
    }
    for i, name in enumerate(names):
        cols[name] = pa.array([r[3 + i] for r in rows], value_types[name])
    return pa.table(cols)


def merge(
    table: pa.Table,
    engine: str = "deduplicate",
    options: dict[str, str] | None = None,
    seq: list[str] | None = None,
    descending: bool = False,
    drop_retracts: bool = True,
    values: list[str] | None = None,
) -> list[dict]:
    table = sort_for_merge(table, ["id"], seq or [], descending)
    if seq:  # as in a real table, the engine sees the sequence fields in the options too
        options = {"sequence.field": ",".join(seq), **(options or {})}
    values = (
        values
        if values is not None
        else [c for c in table.column_names if c not in ("id", "_SEQUENCE_NUMBER", "_VALUE_KIND")]
    )
    out = merge_sorted(table, ["id"], engine, options or {}, values, drop_retracts, primary_keys=["id"])
    assert out.schema == table.schema
    return out.to_pylist()


def pick(rows: list[dict], *cols: str) -> list[tuple]:
    return [tuple(r[c] for c in cols) for r in rows]


# ------------------------------------------------------------------------------------------------ sorting
def test_sort_for_merge_orders_by_key_then_sequence_number_then_is_add() -> None:
    t = kv([(2, 1, I, 20), (1, 5, I, 15), (1, 3, I, 13), (1, 5, UB, 99)])
    out = sort_for_merge(t, ["id"], [], False)
    assert pick(out.to_pylist(), "id", "_SEQUENCE_NUMBER", "_VALUE_KIND") == [
        (1, 3, I),
        (1, 5, UB),
        (1, 5, I),
        (2, 1, I),
    ]


def test_sort_for_merge_user_sequence_field_nulls_first_and_stable() -> None:
    t = kv([(1, 1, I, 10, 1), (1, 2, I, None, 2), (1, 3, I, 5, 3), (1, 4, I, 5, 4)], {"s": pa.int64(), "v": pa.int64()})
    asc = sort_for_merge(t, ["id"], ["s"], False).column("v").to_pylist()
    assert asc == [2, 3, 4, 1]
    desc = sort_for_merge(t, ["id"], ["s"], True).column("v").to_pylist()
    assert desc == [2, 1, 3, 4]  # NULL still first (oldest); then larger s is older


def test_sort_for_merge_is_stable_for_full_ties() -> None:
    t = kv([(1, 7, I, 1), (1, 7, I, 2), (1, 7, I, 3)])
    assert sort_for_merge(t, ["id"], [], False).column("v").to_pylist() == [1, 2, 3]


# ------------------------------------------------------------------------------------------------ deduplicate
def test_deduplicate_last_wins_and_delete_removes() -> None:
    t = kv([(1, 0, I, 1), (1, 1, UA, 2), (2, 2, I, 20), (2, 3, D, 20), (3, 4, D, 30), (3, 5, I, 31)])
    assert pick(merge(t), "id", "v") == [(1, 2), (3, 31)]


def test_deduplicate_keeps_retract_kind_for_writer() -> None:
    t = kv([(1, 0, I, 1), (1, 1, D, 1), (2, 2, I, 20), (2, 3, UA, 21)])
    rows = merge(t, drop_retracts=False)
    assert pick(rows, "id", "v", "_VALUE_KIND", "_SEQUENCE_NUMBER") == [(1, 1, D, 1), (2, 21, UA, 3)]


def test_deduplicate_ignore_delete() -> None:
    t = kv([(1, 0, I, 1), (1, 1, D, 1), (2, 2, UB, 5)])
    assert pick(merge(t, options={"ignore-delete": "true"}), "id", "v") == [(1, 1)]
    assert pick(merge(t, options={"deduplicate.ignore-delete": "true"}), "id", "v") == [(1, 1)]


def test_deduplicate_whole_row_replaced_including_nulls() -> None:
    t = kv([(1, 0, I, "x", 1), (1, 1, UA, None, 5)], {"a": pa.string(), "b": pa.int64()})
    assert pick(merge(t), "a", "b") == [(None, 5)]


def test_sequence_field_smaller_update_does_not_replace() -> None:
    # [disk wh_e/seqf]: seq 10 first, an update with seq 5 later does not win; a delete with seq 20 does.
    t = kv([(1, 0, I, 10, "a"), (1, 1, UA, 5, "b")], {"seq": pa.int64(), "v": pa.string()})
    assert pick(merge(t, seq=["seq"]), "seq", "v") == [(10, "a")]
    t2 = kv([(1, 0, I, 10, "a"), (1, 1, UA, 5, "b"), (1, 2, D, 20, "a")], {"seq": pa.int64(), "v": pa.string()})
    assert merge(t2, seq=["seq"]) == []


def test_sequence_field_null_is_oldest() -> None:
    t = kv([(1, 0, I, 3, "a"), (1, 1, UA, None, "b")], {"seq": pa.int64(), "v": pa.string()})
    assert pick(merge(t, seq=["seq"]), "v") == [("a",)]


def test_sequence_field_descending() -> None:
    t = kv([(1, 0, I, 10, "a"), (1, 1, UA, 5, "b"), (1, 2, UA, 7, "c")], {"seq": pa.int64(), "v": pa.string()})
    assert pick(merge(t, seq=["seq"], descending=True), "v") == [("b",)]


def test_multi_column_keys() -> None:
    t = pa.table(
        {
            "a": pa.array([1, 1, 1, 2], pa.int32()),
            "b": ["x", "y", "x", "x"],
            "_SEQUENCE_NUMBER": pa.array([0, 1, 2, 3], pa.int64()),
            "_VALUE_KIND": pa.array([0, 0, 0, 0], pa.int8()),
            "v": [1, 2, 3, 4],
        }
    )
    s = sort_for_merge(t, ["a", "b"], [], False)
    out = merge_sorted(s, ["a", "b"], "deduplicate", {}, ["v"])
    assert pick(out.to_pylist(), "a", "b", "v") == [(1, "x", 3), (1, "y", 2), (2, "x", 4)]


def test_empty_input() -> None:
    t = kv([])
    assert merge_sorted(t, ["id"], "deduplicate", {}, ["v"]).num_rows == 0


# ------------------------------------------------------------------------------------------------ partial-update
def test_partial_update_last_non_null_per_field() -> None:
    t = kv(
        [(1, 0, I, "x", None), (1, 1, I, None, 5), (2, 2, I, "p", 1), (2, 3, UA, "q", None)],
        {"a": pa.string(), "b": pa.int64()},
    )
    assert pick(merge(t, "partial-update"), "id", "a", "b") == [(1, "x", 5), (2, "q", 1)]


def test_partial_update_respects_sequence_field() -> None:
    t = kv([(1, 0, I, 10, "new", None), (1, 1, I, 5, "old", 7)], {"s": pa.int64(), "a": pa.string(), "b": pa.int64()})
    assert pick(merge(t, "partial-update", seq=["s"]), "s", "a", "b") == [(10, "new", 7)]


def test_partial_update_delete_needs_an_option() -> None:
    t = kv([(1, 0, I, "x", 1), (1, 1, D, "x", 1)], {"a": pa.string(), "b": pa.int64()})
    with pytest.raises(MergeError, match="ignore-delete.*remove-record-on-delete"):
        merge(t, "partial-update")
    assert pick(merge(t, "partial-update", {"ignore-delete": "true"}), "a", "b") == [("x", 1)]
    assert pick(merge(t, "partial-update", {"partial-update.ignore-delete": "true"}), "a") == [("x",)]


def test_partial_update_remove_record_on_delete() -> None:
    opts = {"partial-update.remove-record-on-delete": "true"}
    t = kv(
        [
            (1, 0, I, "x", 1),
            (1, 1, D, None, None),  # key 1 removed
            (2, 2, I, "p", 2),
            (2, 3, D, None, None),
            (2, 4, I, None, 9),  # fresh start after -D
            (3, 5, I, "k", 3),
            (3, 6, UB, "k", 3),
            (3, 7, UA, None, 4),
        ],  # -U ignored
        {"a": pa.string(), "b": pa.int64()},
    )
    assert pick(merge(t, "partial-update", opts), "id", "a", "b") == [(2, None, 9), (3, "k", 4)]
    kept = merge(t, "partial-update", opts, drop_retracts=False)
    assert pick(kept, "id", "_VALUE_KIND") == [(1, D), (2, I), (3, I)]


def test_partial_update_update_before_only() -> None:
    opts = {"partial-update.remove-record-on-delete": "true"}
    # a lone record passes Java's ReducerMergeFunctionWrapper untouched: the writer keeps the -U
    t = kv([(1, 0, UB, "x", 1)], {"a": pa.string(), "b": pa.int64()})
    assert pick(merge(t, "partial-update", opts, drop_retracts=False), "id", "a", "b", "_VALUE_KIND") == [
        (1, "x", 1, UB)
    ]
    assert merge(t, "partial-update", opts) == []
    # several: the first seeds the row (initRow), the rest are skipped; no addition, so the result is a DELETE
    t = kv([(1, 0, UB, "x", 1), (1, 1, UB, "y", None)], {"a": pa.string(), "b": pa.int64()})
    assert pick(merge(t, "partial-update", opts, drop_retracts=False), "id", "a", "b", "_VALUE_KIND") == [
        (1, "x", 1, D)
    ]


def test_partial_update_a_delete_seeds_the_row_for_later_records() -> None:
    # Java PartialUpdateMergeFunction (remove-record-on-delete): a -D re-initialises the row from the DELETE's
    # own values (initRow, all fields since Paimon 2.0), later additions overwrite only their non-NULL fields.
    opts = {"partial-update.remove-record-on-delete": "true"}
    types = {"a": pa.string(), "b": pa.int64(), "c": pa.int64()}
    t = kv(
        [
            (1, 0, I, "x", 1, 1),
            (1, 1, D, "d", None, 7),
            (1, 2, I, None, 5, None),
            (2, 3, UB, "u", 2, 2),
            (2, 4, UA, None, 3, None),  # a leading -U seeds the row too
            (3, 5, I, "x", 1, 1),
            (3, 6, UB, "u", 9, 9),
            (3, 7, UA, None, 4, None),  # a later -U is skipped
            (4, 8, I, "x", 1, 1),
            (4, 9, D, "d", 2, 2),
            (4, 10, UB, "u", 3, 3),
        ],  # the -U after the -D: +I again
        types,
    )
    rows = merge(t, "partial-update", opts, drop_retracts=False)
    assert pick(rows, "id", "a", "b", "c", "_VALUE_KIND", "_SEQUENCE_NUMBER") == [
        (1, "d", 5, 7, I, 2),
        (2, "u", 3, 2, I, 4),
        (3, "x", 4, 1, I, 7),
        (4, "d", 2, 2, I, 10),
    ]
    # a key whose last record is the -D is removed, carrying the DELETE's values for the writer
    t = kv([(1, 0, I, "x", 1, 1), (1, 1, D, "d", None, 7)], types)
    assert pick(merge(t, "partial-update", opts, drop_retracts=False), "a", "b", "c", "_VALUE_KIND") == [
        ("d", None, 7, D)
    ]
    assert merge(t, "partial-update", opts) == []


def test_partial_update_ignore_delete_still_seeds_from_a_leading_retraction() -> None:
    # Java: initRow runs for the key's first record before the ignore-delete check; later retractions are skipped
    # and do not move the sequence number.
    types = {"a": pa.string(), "b": pa.int64()}
    t = kv([(1, 0, D, "d", 1), (1, 1, I, None, 5), (1, 2, D, "z", 9)], types)
    rows = merge(t, "partial-update", {"ignore-delete": "true"}, drop_retracts=False)
    assert pick(rows, "a", "b", "_VALUE_KIND", "_SEQUENCE_NUMBER") == [("d", 5, I, 1)]
    with pytest.raises(OptionError, match="'partial-update.remove-record-on-delete' and 'ignore-delete'"):
        merge(t, "partial-update", {"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"})


def test_single_records_pass_through_unmerged() -> None:
    # Java's ReducerMergeFunctionWrapper: a key with one record keeps it as is (kind and values) without the
    # merge function, so a lone retraction is neither refused nor aggregated, and is dropped on read.
    types = {"v": pa.int64(), "la": pa.string()}
    t = kv([(1, 0, UB, 5, "a"), (2, 1, D, 6, "b"), (3, 2, UA, 7, " "), (4, 3, I, 1, "x"), (4, 4, I, 2, " ")], types)
    opts = {"fields.v.aggregate-function": "max", "fields.la.aggregate-function": "listagg"}
    rows = merge(t, "aggregation", opts, drop_retracts=False)
    assert pick(rows, "id", "v", "la", "_VALUE_KIND") == [
        (1, 5, "a", UB),
        (2, 6, "b", D),
        (3, 7, " ", UA),
        (4, 2, "x", I),
    ]
    assert pick(merge(t, "aggregation", opts), "id") == [(3,), (4,)]
    assert pick(merge(t, "partial-update", {}), "id", "v") == [(3, 7), (4, 2)]
    assert pick(merge(t, "first-row", {}), "id", "v") == [(3, 7), (4, 1)]


def test_partial_update_sequence_group_refused() -> None:
    t = kv([(1, 0, I, "x", 1), (2, 1, I, "y", 2)], {"a": pa.string(), "b": pa.int64()})
    with pytest.raises(OptionError, match="sequence"):
        merge(t, "partial-update", {"fields.b.sequence-group": "a"})


# ------------------------------------------------------------------------------------------------ aggregation
AGG_TYPES = {
    "s": pa.int64(),
    "mx": pa.int32(),
    "mn": pa.string(),
    "lv": pa.string(),
    "lnn": pa.string(),
    "fv": pa.int64(),
    "fnn": pa.int64(),
    "c": pa.int64(),
    "ba": pa.bool_(),
    "bo": pa.bool_(),
    "la": pa.string(),
    "p": pa.int64(),
}  # c: no function of its own, so the default last_non_null_value
AGG_OPTS = {
    "fields.s.aggregate-function": "sum",
    "fields.mx.aggregate-function": "max",
    "fields.mn.aggregate-function": "min",
    "fields.lv.aggregate-function": "last_value",
    "fields.fv.aggregate-function": "first_value",
    "fields.fnn.aggregate-function": "first_non_null_value",
    "fields.ba.aggregate-function": "bool_and",
    "fields.bo.aggregate-function": "bool_or",
    "fields.la.aggregate-function": "listagg",
    "fields.p.aggregate-function": "product",
}


def test_aggregation_functions() -> None:
    t = kv(
        [
            (1, 0, I, 1, 3, "m", "a", "x", None, None, 1, True, False, "p", 2),
            (1, 1, I, None, 9, "b", None, None, 7, 8, 1, None, True, "q", 3),
            (1, 2, I, 5, None, None, "c", "z", 4, 9, None, False, None, " ", None),
            (2, 3, I, 4, None, None, None, None, None, None, None, None, None, None, None),
        ],
        AGG_TYPES,
    )
    rows = merge(t, "aggregation", AGG_OPTS)
    assert rows[0] == {
        "id": 1,
        "_SEQUENCE_NUMBER": 2,
        "_VALUE_KIND": I,
        "s": 6,
        "mx": 9,
        "mn": "b",
        "lv": "c",
        "lnn": "z",
        "fv": None,
        "fnn": 8,
        "c": 1,
        "ba": False,
        "bo": True,
        "la": "p,q",
        "p": 6,
    }
    assert rows[1] == {
        "id": 2,
        "_SEQUENCE_NUMBER": 3,
        "_VALUE_KIND": I,
        "s": 4,
        "mx": None,
        "mn": None,
        "lv": None,
        "lnn": None,
        "fv": None,
        "fnn": None,
        "c": None,
        "ba": None,
        "bo": None,
        "la": None,
        "p": None,
    }


def test_aggregation_default_function_and_listagg_delimiter() -> None:
    t = kv([(1, 0, I, "a", 1), (1, 1, I, "b", None)], {"la": pa.string(), "x": pa.int64()})
    rows = merge(
        t,
        "aggregation",
        {
            "fields.default-aggregate-function": "listagg",
            "fields.x.aggregate-function": "sum",
            "fields.la.list-agg-delimiter": "|",
        },
    )
    assert pick(rows, "la", "x") == [("a|b", 1)]
    # The default is last_non_null_value.
    assert pick(merge(t, "aggregation", {}), "la", "x") == [("b", 1)]


def test_aggregation_sum_with_retraction_and_types() -> None:
    types = {"i": pa.int32(), "d": pa.decimal128(10, 2), "f": pa.float64()}
    opts = {f"fields.{n}.aggregate-function": "sum" for n in types}
    t = kv(
        [
            (1, 0, I, 5, decimal.Decimal("1.50"), 1.5),
            (1, 1, UB, 2, decimal.Decimal("0.25"), 0.5),
            (1, 2, UA, 4, decimal.Decimal("1.00"), 2.0),
            (2, 3, D, 3, None, 1.0),
            (2, 4, I, 1, None, 0.5),
        ],
        types,
    )
    rows = merge(t, "aggregation", opts)
    assert pick(rows, "id", "i", "d", "f", "_VALUE_KIND") == [
        (1, 7, decimal.Decimal("2.25"), 3.0, I),
        (2, -2, None, -0.5, I),
    ]


@pytest.mark.parametrize("func", ["sum", "product"])
def test_an_aggregate_that_outgrows_its_decimal_column_says_to_widen_it(func: str) -> None:
    # Arrow keeps a decimal product's precision (a sum's too, before pyarrow 19): 19.0 or 90.3 would be
    # written as an invalid decimal(2, 1) unless the aggregate runs with room and is checked back.
    t = kv([(1, 1, I, decimal.Decimal("9.5")), (1, 2, I, decimal.Decimal("9.5"))], {"v": pa.decimal128(2, 1)})
    with pytest.raises(MergeError, match=rf"'{func}' of column 'v' produced a value .* decimal128\(2, 1\).*Widen"):
        merge(t, "aggregation", {"fields.v.aggregate-function": func})


def test_aggregation_last_value_retraction() -> None:
    types = {"lv": pa.string(), "lnn": pa.string()}
    opts = {"fields.lv.aggregate-function": "last_value"}
    t = kv([(1, 0, I, "a", "a"), (1, 1, I, "b", "b"), (1, 2, UB, "b", None)], types)
    assert pick(merge(t, "aggregation", opts), "lv", "lnn") == [(None, "b")]
    t2 = kv([(1, 0, I, "a", "a"), (1, 1, UB, "b", "x")], types)
    assert pick(merge(t2, "aggregation", opts), "lv", "lnn") == [(None, None)]


def test_aggregation_count_was_removed_from_paimon() -> None:
    # Java removed FieldCountAgg (#3932); a table using it fails in Java, so it fails here too rather than
    # counting differently.
    t = kv([(1, 0, I, 1), (1, 1, I, 1)])
    with pytest.raises(OptionError, match=r"'count' of column 'v' \(option 'fields.v.aggregate-function'.*'sum'"):
        merge(t, "aggregation", {"fields.v.aggregate-function": "count"})
    with pytest.raises(OptionError, match=r"'count' of the columns without.*'fields.default-aggregate-function'"):
        merge(t, "aggregation", {"fields.default-aggregate-function": "COUNT"})


def test_aggregation_retraction_refused_unless_ignored() -> None:
    t = kv([(1, 0, I, 5, 1), (1, 1, UB, 5, 1), (1, 2, I, 3, 1)], {"m": pa.int64(), "s": pa.int64()})
    opts = {"fields.m.aggregate-function": "max", "fields.s.aggregate-function": "sum"}
    with pytest.raises(MergeError, match="fields.m.ignore-retract"):
        merge(t, "aggregation", opts)
    rows = merge(t, "aggregation", {**opts, "fields.m.ignore-retract": "true"})
    assert pick(rows, "m", "s") == [(5, 1)]
    # ignore-delete only filters new writes: Java's AggregateMergeFunction still folds retractions in data files
    with pytest.raises(MergeError, match="fields.m.ignore-retract"):
        merge(t, "aggregation", {**opts, "ignore-delete": "true"})
    rows = merge(t, "aggregation", {**opts, "ignore-delete": "true", "fields.m.ignore-retract": "true"})
    assert pick(rows, "m", "s") == [(5, 1)]


def test_aggregation_keeps_primary_key_and_refuses_unknown_function() -> None:
    t = kv([(1, 0, I, 1), (1, 1, I, 2)])
    with pytest.raises(OptionError, match="fields.v.aggregate-function"):
        merge(t, "aggregation", {"fields.v.aggregate-function": "collect"})
    rows = merge(
        t,
        "aggregation",
        {"fields.id.aggregate-function": "sum", "fields.v.aggregate-function": "sum"},
        values=["id", "v"],
    )
    assert pick(rows, "id", "v") == [(1, 3)]


def test_aggregation_with_sequence_field() -> None:
    t = kv([(1, 0, I, 10, "new", 1), (1, 1, I, 5, "old", 2)], {"s": pa.int64(), "lv": pa.string(), "x": pa.int64()})
    rows = merge(
        t,
        "aggregation",
        {"fields.lv.aggregate-function": "last_value", "fields.x.aggregate-function": "sum"},
        seq=["s"],
    )
    assert pick(rows, "s", "lv", "x") == [(10, "new", 3)]


def test_aggregation_sequence_field_takes_the_winners_value_not_an_aggregate() -> None:
    # Java AggregateMergeFunction.getAggFuncName: a sequence.field column always uses last_value, whatever
    # fields.default-aggregate-function says.
    t = kv([(1, 0, I, 10, 1), (1, 1, I, 5, 2), (2, 2, I, 3, 1), (2, 3, I, 7, 1)], {"s": pa.int64(), "x": pa.int64()})
    rows = merge(t, "aggregation", {"fields.default-aggregate-function": "sum"}, seq=["s"])
    assert pick(rows, "id", "s", "x") == [(1, 10, 3), (2, 7, 2)]
    # descending order: the smallest s wins, and max over s would have picked the largest
    rows = merge(t, "aggregation", {"fields.default-aggregate-function": "max"}, seq=["s"], descending=True)
    assert pick(rows, "id", "s", "x") == [(1, 5, 2), (2, 3, 1)]
    # last_value semantics include retraction: a retracted winner clears the sequence value
    t2 = kv([(1, 0, I, 4, 1), (1, 1, UB, 6, 1)], {"s": pa.int64(), "x": pa.int64()})
    rows = merge(t2, "aggregation", {"fields.default-aggregate-function": "sum"}, seq=["s"])
    assert pick(rows, "id", "s", "x") == [(1, None, 0)]


# ------------------------------------------------------------------------------------------------ exact arithmetic
INT_TYPES = {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}
ROD = {"aggregation.remove-record-on-delete": "true"}


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_integer_sum_overflow_raises_like_java(bits: int) -> None:
    # Java FieldSumAgg uses Math.addExact (and byte/short range checks): an overflow throws, never wraps.
    hi, lo = 2 ** (bits - 1) - 1, -(2 ** (bits - 1))
    types = {"v": INT_TYPES[bits]}
    opts = {"fields.v.aggregate-function": "sum"}
    with pytest.raises(MergeError, match=rf"'sum' of column 'v'.*key \(id=2\).*{bits}-bit range.*DECIMAL"):
        merge(kv([(1, 0, I, 1), (1, 1, I, 2), (2, 2, I, hi), (2, 3, I, 1)], types), "aggregation", opts)
    with pytest.raises(MergeError, match="'sum' of column 'v'"):
        merge(kv([(1, 0, I, lo), (1, 1, I, -1)], types), "aggregation", opts)
    # the bounds themselves are fine, and so is a NULL next to them
    rows = merge(
        kv([(1, 0, I, hi - 1), (1, 1, I, 1), (1, 2, I, None), (2, 3, I, lo + 1), (2, 4, I, -1)], types),
        "aggregation",
        opts,
    )
    assert pick(rows, "id", "v") == [(1, hi), (2, lo)]


def test_sum_overflow_is_checked_at_every_step() -> None:
    big = 2**63 - 1
    opts = {"fields.v.aggregate-function": "sum"}
    # MAX + 1 overflows before the retraction would bring it back: Java throws at the second record
    with pytest.raises(MergeError, match="64-bit range"):
        merge(kv([(1, 0, I, big), (1, 1, I, 1), (1, 2, UB, 1)]), "aggregation", opts)
    # in the other order every step fits
    assert pick(merge(kv([(1, 0, I, big), (1, 1, UB, 1), (1, 2, I, 1)]), "aggregation", opts), "v") == [(big,)]
    # retracting Long.MIN_VALUE from a NULL accumulator negates it: overflow (Math.negateExact)
    with pytest.raises(MergeError, match="64-bit range"):
        merge(kv([(1, 0, UB, -(2**63)), (1, 1, I, 0)]), "aggregation", opts)


def test_integer_product_overflow_raises_like_java() -> None:
    opts = {"fields.v.aggregate-function": "product"}
    with pytest.raises(MergeError, match=r"'product' of column 'v'.*key \(id=1\).*64-bit range.*DECIMAL"):
        merge(kv([(1, 0, I, 2**32), (1, 1, I, 2**31)]), "aggregation", opts)
    # -2^62 * 2 = Long.MIN_VALUE fits ...
    assert pick(merge(kv([(1, 0, I, -(2**62)), (1, 1, I, 2)]), "aggregation", opts), "v") == [(-(2**63),)]
    # ... but 2^62 * 2 = 2^63 does not, even though * -1 would land on MIN_VALUE again
    with pytest.raises(MergeError, match="64-bit range"):
        merge(kv([(1, 0, I, 2**62), (1, 1, I, 2), (1, 2, I, -1)]), "aggregation", opts)
    with pytest.raises(MergeError, match="64-bit range"):
        merge(kv([(1, 0, I, -(2**62)), (1, 1, I, 2), (1, 2, I, -1)]), "aggregation", opts)
    # an overflow before a zero still throws in Java; a zero first keeps the product 0
    with pytest.raises(MergeError, match="64-bit range"):
        merge(kv([(1, 0, I, 2**62), (1, 1, I, 4), (1, 2, I, 0)]), "aggregation", opts)
    assert pick(merge(kv([(1, 0, I, 0), (1, 1, I, 2**62), (1, 2, I, 4)]), "aggregation", opts), "v") == [(0,)]
    with pytest.raises(MergeError, match="32-bit range"):
        merge(kv([(1, 0, I, 65536), (1, 1, I, 65536)], {"v": pa.int32()}), "aggregation", opts)
    # floating point follows IEEE, as Java's float/double arithmetic
    rows = merge(kv([(1, 0, I, 1e300), (1, 1, I, 1e300)], {"v": pa.float64()}), "aggregation", opts)
    assert pick(rows, "v") == [(float("inf"),)]


class JavaArithmeticError(Exception):
    pass


def java_fold(records: list[tuple[int, Any]], func: str, bits: int, remove_on_delete: bool = False) -> Any:
    """Java's FieldSumAgg / FieldProductAgg folded over (kind, value) records one at a time (the model may
    loop; the implementation may not). A single record passes unmerged (ReducerMergeFunctionWrapper)."""
    if len(records) == 1:
        return records[0][1]
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def check(x: int) -> int:
        if not lo <= x <= hi:
            raise JavaArithmeticError
        return x

    acc = None
    for kind, v in records:
        if remove_on_delete and kind == D:
            acc = v  # initRow: the DELETE's own value
        elif kind in (UB, D):
            if func == "sum":
                acc = (check(-v) if acc is None else check(acc - v)) if v is not None else acc
            elif acc is not None and v is not None:
                if v == 0:
                    raise JavaArithmeticError
                q = abs(acc) // abs(v)
                acc = check(q if (acc < 0) == (v < 0) else -q)
        elif v is not None:
            acc = v if acc is None else check(acc + v if func == "sum" else acc * v)
    return acc


_edge = st.sampled_from(
    [0, 1, -1, 2, -2, 3, 2**31, -(2**31), 2**32, 2**62, -(2**62), 2**63 - 1, -(2**63), 2**21, -(2**21)]
)
agg_op = st.tuples(
    st.integers(0, 3),
    st.sampled_from([I, I, UA, UB, D]),
    st.one_of(st.none(), _edge, st.integers(-(2**63), 2**63 - 1), st.integers(-9, 9)),
)


def _check_against_java_fold(func: str, failure: str, ops: list[tuple[int, int, Any]], bits: int, rod: bool) -> None:
    """Our merge of ``ops`` with ``func`` equals a step-by-step model of Java's checked fold, or both fail."""
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    ops = [(k, kind, None if v is None else max(lo, min(hi, v))) for k, kind, v in ops]
    t = kv([(k, n, kind, v) for n, (k, kind, v) in enumerate(ops)], {"v": INT_TYPES[bits]})
    expected: dict[int, Any] = {}
    failed = False
    for key in sorted({k for k, _, _ in ops}):
        try:
            records = [(kind, v) for k, kind, v in ops if k == key]
            value = java_fold(records, func, bits, rod)
            last_kind = records[-1][0]
            # dropped on read: a DELETE result, or a lone retraction (passed through unmerged)
            if not (rod and last_kind == D) and not (len(records) == 1 and last_kind in (UB, D)):
                expected[key] = value
        except JavaArithmeticError:
            failed = True
    opts = {"fields.v.aggregate-function": func, **(ROD if rod else {})}
    if failed:
        with pytest.raises(MergeError, match=failure):
            merge(t, "aggregation", opts)
    else:
        assert {r["id"]: r["v"] for r in merge(t, "aggregation", opts)} == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(agg_op, max_size=12), st.sampled_from([8, 32, 64]), st.booleans())
def test_property_checked_sum_matches_java_fold(ops: list[tuple[int, int, Any]], bits: int, rod: bool) -> None:
    _check_against_java_fold("sum", "range", ops, bits, rod)


@settings(max_examples=300, deadline=None)
@given(st.lists(agg_op, max_size=12), st.sampled_from([8, 32, 64]), st.booleans())
def test_property_checked_product_matches_java_fold(ops: list[tuple[int, int, Any]], bits: int, rod: bool) -> None:
    _check_against_java_fold("product", "range|zero", ops, bits, rod)


def test_product_retraction_divides_like_java() -> None:
    # Java FieldProductAgg.retract: acc / value with integer division (truncating toward zero); a NULL
    # accumulator or a NULL retracted value leaves the accumulator unchanged.
    opts = {"fields.v.aggregate-function": "product"}
    t = kv(
        [
            (1, 0, I, 6),
            (1, 1, UB, 4),
            (1, 2, UA, 4),  # 6 / 4 = 1, then * 4: order matters
            (2, 3, I, -7),
            (2, 4, UB, 2),  # truncates toward zero: -3, not -4
            (3, 5, UB, 5),
            (3, 6, I, 3),  # retraction before any value: no-op
            (4, 7, I, 6),
            (4, 8, UB, None),
            (4, 9, I, 2),  # NULL retraction: no-op
            (5, 10, I, None),
            (5, 11, UB, 2),
        ]
    )  # NULL accumulator stays NULL
    assert pick(merge(t, "aggregation", opts), "id", "v") == [(1, 4), (2, -3), (3, 3), (4, 12), (5, None)]
    # retracting 0 divides by zero: Java's ArithmeticException
    with pytest.raises(MergeError, match=r"'product' of column 'v'.*key \(id=1\).*by zero.*fields.v.ignore-retract"):
        merge(kv([(1, 0, I, 6), (1, 1, UB, 0)]), "aggregation", opts)
    with pytest.raises(MergeError, match="64-bit range"):
        merge(kv([(1, 0, I, -(2**63)), (1, 1, UB, -1)]), "aggregation", opts)
    # floating point divides as IEEE does
    rows = merge(
        kv([(1, 0, I, 6.0), (1, 1, UB, 4.0), (2, 2, I, 1.5), (2, 3, UB, 0.0)], {"v": pa.float64()}), "aggregation", opts
    )
    assert pick(rows, "v") == [(1.5,), (float("inf"),)]
    # ignore-retract keeps the plain product
    assert pick(
        merge(
            kv([(1, 0, I, 6), (1, 1, UB, 4), (1, 2, I, 4)]), "aggregation", {**opts, "fields.v.ignore-retract": "true"}
        ),
        "v",
    ) == [(24,)]


def test_decimal_product_retraction_is_refused() -> None:
    # Java divides BigDecimals exactly (and throws on a non-terminating quotient); not implemented here.
    t = kv([(1, 0, I, decimal.Decimal("1.50")), (1, 1, UB, decimal.Decimal("0.50"))], {"v": pa.decimal128(10, 2)})
    with pytest.raises(MergeError, match="DECIMAL column 'v'.*fields.v.ignore-retract"):
        merge(t, "aggregation", {"fields.v.aggregate-function": "product"})


# ------------------------------------------------------------------------------------ remove-record-on-delete


def test_aggregation_remove_record_on_delete_removes_the_row() -> None:
    # Java AggregateMergeFunction: a -D (with the option) replaces the row by the DELETE's own values (initRow)
    # and the key's result is a DELETE if that -D is its last record.
    opts = {**ROD, "fields.v.aggregate-function": "sum"}
    t = kv([(1, 0, I, 5), (1, 1, D, 2), (2, 2, I, 5), (2, 3, I, 1)])
    assert pick(merge(t, "aggregation", opts), "id", "v") == [(2, 6)]
    kept = merge(t, "aggregation", opts, drop_retracts=False)
    assert pick(kept, "id", "v", "_VALUE_KIND", "_SEQUENCE_NUMBER") == [(1, 2, D, 1), (2, 6, I, 3)]
    # without the option the DELETE is a retraction (5 - 2)
    assert pick(merge(t, "aggregation", {"fields.v.aggregate-function": "sum"}), "id", "v") == [(1, 3), (2, 6)]


def test_aggregation_remove_record_on_delete_folds_on_from_the_deletes_values() -> None:
    # After the DELETE, Java folds later records into the row initRow built from the DELETE's values (its test
    # MergeFunctionTestUtils.getExpectedForAggSum: sum = delete.value, then + inserts); an UPDATE_BEFORE is
    # still a retraction.
    types = {
        "s": pa.int64(),
        "mx": pa.int64(),
        "fv": pa.int64(),
        "fnn": pa.int64(),
        "lv": pa.string(),
        "lnn": pa.string(),
        "la": pa.string(),
        "p": pa.int64(),
    }
    opts = {
        **ROD,
        "fields.s.aggregate-function": "sum",
        "fields.mx.aggregate-function": "max",
        "fields.fv.aggregate-function": "first_value",
        "fields.fnn.aggregate-function": "first_non_null_value",
        "fields.lv.aggregate-function": "last_value",
        "fields.la.aggregate-function": "listagg",
        "fields.p.aggregate-function": "product",
    }
    t = kv(
        [
            (1, 0, I, 5, 9, 7, 7, "a", "a", "a", 2),
            (1, 1, D, 2, 1, 1, 1, "d", None, "d", 3),
            (1, 2, I, 3, 3, 3, 3, None, None, "c", 4),
            (2, 3, D, None, None, None, None, None, "x", " ", None),  # first record a DELETE: the row starts from it
            (2, 4, I, 4, 4, 4, None, "b", None, None, 5),
        ],
        types,
    )
    rows = merge(t, "aggregation", opts)
    assert pick(rows, "id", "s", "mx", "fv", "fnn", "lv", "lnn", "la", "p") == [
        # 2 + 3; max(1, 3); first_value keeps the DELETE's value (Java's "initialized" flag stays set); ...
        (1, 5, 3, 1, 1, None, None, "d,c", 12),
        # no value before the DELETE: first_value takes the next one; a blank listagg accumulator stays
        (2, 4, 4, 4, None, "b", "x", " ", 5),
    ]
    t2 = kv([(1, 0, I, 5, 2), (1, 1, UB, 2, None)], {"s": pa.int64(), "p": pa.int64()})
    assert pick(
        merge(
            t2, "aggregation", {**ROD, "fields.s.aggregate-function": "sum", "fields.p.aggregate-function": "product"}
        ),
        "s",
        "p",
    ) == [(3, 2)]


def test_aggregation_remove_record_on_delete_conflicts_with_ignore_retract() -> None:
    # Java FieldAggregatorFactory.create: checkState(!(remove-record-on-delete && ignore-retract))
    bad = {"merge-engine": "aggregation", **ROD, "fields.v.ignore-retract": "true"}
    with pytest.raises(OptionError, match="'aggregation.remove-record-on-delete' and 'fields.v.ignore-retract'"):
        merge(kv([(1, 0, I, 1), (1, 1, I, 2)]), "aggregation", bad)
    assert pick(
        merge(kv([(1, 0, I, 1), (1, 1, I, 2)]), "aggregation", {**bad, "fields.v.ignore-retract": "false"}), "v"
    ) == [(2,)]


# ------------------------------------------------------------------------------------------------ first-row
def test_first_row() -> None:
    t = kv([(1, 0, I, 1), (1, 1, UA, 2), (2, 2, I, 20)])
    assert pick(merge(t, "first-row"), "id", "v") == [(1, 1), (2, 20)]


def test_first_row_retractions() -> None:
    t = kv([(1, 0, D, 1), (1, 1, I, 2)])
    with pytest.raises(MergeError, match="ignore-delete"):
        merge(t, "first-row")
    assert pick(merge(t, "first-row", {"ignore-delete": "true"}), "v") == [(2,)]
    assert pick(merge(t, "first-row", {"first-row.ignore-delete": "true"}), "v") == [(2,)]


def test_unknown_engine_and_bad_options() -> None:
    t = kv([(1, 0, I, 1)])
    with pytest.raises(OptionError):
        merge(t, "lookup")
    with pytest.raises(OptionError, match="ignore-delete"):
        merge(t, options={"ignore-delete": "yes"})
    assert issubclass(MergeError, PaimonError)


# ------------------------------------------------------------------------------------------------ property
op = st.tuples(st.integers(0, 4), st.sampled_from([I, UA, D, UB]), st.one_of(st.none(), st.integers(-5, 5)))


def _shuffled_kv(ops: list[tuple[int, int, Any]], perm: list[int]) -> pa.Table:
    rows = [(k, seq, kind, v) for seq, (k, kind, v) in enumerate(ops)]
    return kv([rows[i] for i in perm])


@settings(max_examples=200, deadline=None)
@given(st.lists(op, max_size=40).flatmap(lambda ops: st.tuples(st.just(ops), st.permutations(range(len(ops))))))
def test_property_deduplicate_matches_dict_model(data: tuple[list, list[int]]) -> None:
    ops, perm = data
    model: dict[int, Any] = {}
    for k, kind, v in ops:  # the model may loop; the implementation may not
        if kind in (I, UA):
            model[k] = v
        else:
            model.pop(k, None)
    rows = merge(_shuffled_kv(ops, perm))
    assert {r["id"]: r["v"] for r in rows} == model
    assert [r["id"] for r in rows] == sorted(model)


def java_partial_update(records: list[tuple[int, Any]]) -> tuple[bool, Any]:
    """(removed, value) of Java's PartialUpdateMergeFunction with remove-record-on-delete over (kind, value)
    records, behind ReducerMergeFunctionWrapper."""
    if len(records) == 1:
        kind, v = records[0]
        return kind in (UB, D), v
    row, deleted, inserted = None, False, False
    for n, (kind, v) in enumerate(records):
        deleted = False
        if kind in (UB, D):
            if n == 0 or kind == D:
                row = v  # initRow
            deleted = kind == D
        else:
            row = v if v is not None else row
            inserted = True
    return deleted or not inserted, row


@settings(max_examples=200, deadline=None)
@given(st.lists(op, max_size=40).flatmap(lambda ops: st.tuples(st.just(ops), st.permutations(range(len(ops))))))
def test_property_partial_update_and_sum_match_model(data: tuple[list, list[int]]) -> None:
    ops, perm = data
    partial: dict[int, Any] = {}
    sums: dict[int, Any] = {}
    for key in sorted({k for k, _, _ in ops}):
        records = [(kind, v) for k, kind, v in ops if k == key]
        removed, value = java_partial_update(records)
        if not removed:
            partial[key] = value
        if not (len(records) == 1 and records[0][0] in (UB, D)):
            sums[key] = java_fold(records, "sum", 64)
    t = _shuffled_kv(ops, perm)
    rows = merge(t, "partial-update", {"partial-update.remove-record-on-delete": "true"})
    assert {r["id"]: r["v"] for r in rows} == partial
    rows = merge(t, "aggregation", {"fields.v.aggregate-function": "sum"})
    assert {r["id"]: r["v"] for r in rows} == sums


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3)), st.integers(0, 9)), max_size=30))
def test_property_sequence_field_matches_model(ops: list[tuple[int, Any, int]]) -> None:
    # The newest record is the one with the greatest (seq field, NULL first; then sequence number).
    best: dict[int, tuple] = {}
    for n, (k, s, v) in enumerate(ops):
        rank = (s is not None, s if s is not None else 0, n)
        if k not in best or rank > best[k][0]:
            best[k] = (rank, v)
    t = kv([(k, n, I, s, v) for n, (k, s, v) in enumerate(ops)], {"s": pa.int64(), "v": pa.int64()})
    rows = merge(t, seq=["s"])
    assert {r["id"]: r["v"] for r in rows} == {k: b[1] for k, b in best.items()}


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(-4, 4), st.integers(0, 6), st.sampled_from([0, 1, 2, 3]), st.integers(0, 99)),
        min_size=1,
        max_size=40,
    ),
    options=st.sampled_from(
        [
            {},
            {"merge-engine": "deduplicate"},
            {"ignore-delete": "true"},
            {"sequence.field": "v"},
            {"merge-engine": "first-row"},
        ]
    ),
)
def test_deduplicated_rows_equal_sort_and_merge(rows: list[tuple[int, int, int, int]], options: dict) -> None:
    """The winners-only shortcut of a deduplicate read gives exactly the sort-and-merge result, row for row
    (key order, kinds and sequence numbers included), and declines every other shape."""
    t = pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "_SEQUENCE_NUMBER": pa.array([r[1] for r in rows], pa.int64()),
            "_VALUE_KIND": pa.array([r[2] for r in rows], pa.int8()),
            "v": pa.array([r[3] for r in rows], pa.int64()),
        }
    )
    engine = options.get("merge-engine", "deduplicate")
    seq = [f for f in options.get("sequence.field", "").split(",") if f]
    got = deduplicated_rows(t, ["k"], options)
    if engine != "deduplicate":
        assert got is None
        return
    expected = merge_sorted(sort_for_merge(t, ["k"], seq), ["k"], engine, options, ["v"], drop_retracts=True)
    if not seq and "ignore-delete" not in options:
        assert got is not None and got.to_pylist() == expected.to_pylist()
    else:
        assert got is None
