"""The ``filter`` read option's parser, the ``scan.partitions`` grammar, and the predicate trees they build."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import AtomicType, DataField
from pyspark_paimon.planner.predicate import (
    AllOf,
    AnyOf,
    Leaf,
    could_match_stats,
    implied_leaves,
    may_hold_on_values,
    tree_expression,
)
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.selection import selection_of
from pyspark_paimon.planner.sql_filter import parse_filter


def _schema() -> TableSchema:
    cols = [
        ("id", AtomicType("BIGINT", False)),
        ("small", AtomicType("INT")),
        ("name", AtomicType("VARCHAR")),
        ("dt", AtomicType("VARCHAR")),
        ("hr", AtomicType("INT")),
        ("d", AtomicType("DATE")),
        ("ts", AtomicType("TIMESTAMP", precision=6)),
        ("lts", AtomicType("TIMESTAMP_LTZ", precision=6)),
        ("amt", AtomicType("DECIMAL", precision=10, scale=2)),
        ("ok", AtomicType("BOOLEAN")),
        ("x", AtomicType("DOUBLE")),
        ("c", AtomicType("CHAR", length=3)),
        ("CamelCol", AtomicType("INT")),
    ]
    fields = [DataField(i, n, t) for i, (n, t) in enumerate(cols)]
    return TableSchema(0, 0, fields, len(fields) - 1, ["dt", "hr"], [], {}, None, 0)


def test_comparisons_literals_and_operators() -> None:
    s = _schema()
    assert parse_filter("id = 5", s) == Leaf("id", "=", 5)
    assert parse_filter("5 < id", s) == Leaf("id", ">", 5)
    assert parse_filter("id <> 5", s) == Leaf("id", "=", 5, negated=True)
    assert parse_filter("id != -5", s) == Leaf("id", "=", -5, negated=True)
    assert parse_filter("id <=> NULL", s) == Leaf("id", "<=>", None)
    assert parse_filter("name = 'a' AND ok", s) == AllOf((Leaf("name", "=", "a"), Leaf("ok", "=", True)))
    assert parse_filter("ok = false", s) == Leaf("ok", "=", False)
    assert parse_filter("amt >= 10.25", s) == Leaf("amt", ">=", decimal.Decimal("10.25"))
    assert parse_filter("d = DATE '2024-01-05'", s) == Leaf("d", "=", dt.date(2024, 1, 5))
    assert parse_filter("d < '2024-01-05'", s) == Leaf("d", "<", dt.date(2024, 1, 5))
    assert parse_filter("ts >= TIMESTAMP '2024-01-05 10:00:00'", s) == Leaf("ts", ">=", dt.datetime(2024, 1, 5, 10))
    lts = parse_filter("lts < '2024-01-05 10:00:00+02:00'", s)
    assert isinstance(lts, Leaf) and lts.value == dt.datetime(2024, 1, 5, 8, tzinfo=dt.timezone.utc)
    assert parse_filter("camelcol = 1", s) == Leaf("CamelCol", "=", 1)  # Spark resolves names case-insensitively
    assert parse_filter("x IS NULL", s) == Leaf("x", "is_null")
    assert parse_filter("name IS NOT NULL", s) == Leaf("name", "is_null", negated=True)


def test_in_between_not_and_or_in_negation_normal_form() -> None:
    s = _schema()
    assert parse_filter("id IN (1, 2, NULL)", s) == Leaf("id", "in", (1, 2, None))
    assert parse_filter("id BETWEEN 1 AND 3", s) == AllOf((Leaf("id", ">=", 1), Leaf("id", "<=", 3)))
    assert parse_filter("id NOT BETWEEN 1 AND 3", s) == AnyOf(
        (Leaf("id", ">=", 1, negated=True), Leaf("id", "<=", 3, negated=True))
    )
    assert parse_filter("NOT (id = 1 OR name = 'a')", s) == AllOf(
        (Leaf("id", "=", 1, negated=True), Leaf("name", "=", "a", negated=True))
    )
    assert parse_filter("NOT NOT id = 1", s) == Leaf("id", "=", 1)
    assert parse_filter("((id = 1))", s) == Leaf("id", "=", 1)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("nope = 1", "unknown column 'nope'"),
        ("id = 'x'", "not a BIGINT NOT NULL literal for column 'id'"),
        ("id = 1.5", "an integer is needed"),
        ("id = name", "compare with a literal"),
        ("abs(id) = 1", "not a column of the table"),
        ("id + 1 = 2", "not a column of the table"),
        ("id IN (SELECT 1)", "subquery"),
        ("c = 'ab'", "blank-padded"),
        ("name", "not BOOLEAN"),
        ("lts = '2024-01-01 00:00:00'", "give the offset"),
        ("ts = '2024-01-01 00:00:00+01:00'", "takes no offset"),
        ("d = 'soon'", "not a DATE literal"),
        ("amt = 1234567890123456789012345678901234567.7", "38 digits"),
        ("id =", "not a SQL condition"),
        ("t.id = 1", "qualified or nested"),
        ("name LIKE 'a%'", "is not supported"),
        ("  ", "empty"),
    ],
)
def test_errors_name_the_text(text: str, needle: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_filter(text, _schema())
    assert needle in str(info.value) and "'filter'" in str(info.value)


def test_implied_leaves_are_weaker_and_used_for_pruning() -> None:
    s = _schema()
    tree = parse_filter("dt = 'a' AND (hr = 1 OR hr IN (2, 3)) AND (id = 1 OR name = 'z')", s)
    leaves = implied_leaves(tree)
    assert Leaf("dt", "=", "a") in leaves and Leaf("hr", "in", (1, 2, 3)) in leaves
    assert not any(leaf.column in ("id", "name") for leaf in leaves)  # an OR over two columns implies nothing


def test_partition_selection_is_exact_and_keeps_unknown_columns() -> None:
    tree = parse_filter("(dt = 'a' AND id = 1) OR (dt = 'b' AND hr > 2)", _schema())
    assert may_hold_on_values(tree, {"dt": "a", "hr": 0})
    assert may_hold_on_values(tree, {"dt": "b", "hr": 3})
    assert not may_hold_on_values(tree, {"dt": "b", "hr": 2})
    assert not may_hold_on_values(tree, {"dt": "c", "hr": 5})
    assert not may_hold_on_values(tree, {"dt": None, "hr": 5})


def test_tree_expression_uses_sql_three_valued_logic() -> None:
    data = pa.table({"id": pa.array([1, 2, None, 4], pa.int64()), "name": ["a", None, "c", "d"]})
    schema = data.schema

    def ids(text: str) -> list:
        s = _schema()
        return data.filter(tree_expression(parse_filter(text, s), schema)).column("id").to_pylist()

    assert ids("NOT (id = 1)") == [2, 4]  # NULL id: unknown, dropped
    assert ids("id = 1 OR name = 'c'") == [1, None]
    assert ids("NOT (id = 1 OR name = 'c')") == [4]
    assert ids("id NOT IN (1, NULL)") == []  # never true with a NULL in the list
    assert ids("id IN (1, NULL)") == [1]
    assert ids("id <=> NULL") == [None]
    assert ids("NOT id <=> 1") == [2, None, 4]


def test_scan_partitions_follows_paimon() -> None:
    s = _schema()
    sel = selection_of(ReadOptions.from_options({"scan.partitions": " dt = a , hr=1 ; dt=b"}), s)
    pf = sel.partition_filter()
    assert pf is not None
    assert pf({"dt": "a", "hr": 1}) and not pf({"dt": "a", "hr": 2})
    # A key left out is the default partition (NULL), as Paimon fills it with partition.default-name.
    assert pf({"dt": "b", "hr": None}) and not pf({"dt": "b", "hr": 1})
    assert Leaf("dt", "in", ("a", "b")) in sel.leaves
    null = selection_of(ReadOptions.from_options({"scan.partitions": "dt=__DEFAULT_PARTITION__,hr=3"}), s)
    assert null.partition_filter()({"dt": None, "hr": 3})  # type: ignore[misc]
    both = selection_of(ReadOptions.from_options({"scan.partitions": "dt=a,hr=1", "filter": "id > 3"}), s)
    assert both.expr == AllOf((Leaf("dt", "<=>", "a"), Leaf("hr", "<=>", 1), Leaf("id", ">", 3)))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("dt", "not of the form key=value"),
        ("nope=1", "not a partition key"),
        ("hr=x", "not a valid INT"),
        ("dt=a;;dt=b", "empty partition"),
        ("max_pt()", "max_pt()"),
    ],
)
def test_scan_partitions_errors(text: str, needle: str) -> None:
    with pytest.raises(OptionError) as info:
        selection_of(ReadOptions.from_options({"scan.partitions": text}), _schema())
    assert needle in str(info.value) and "'scan.partitions'" in str(info.value)


_FLOATS = [float("nan"), -0.0, 0.0, 1.5, 2.5, float("-inf"), float("inf"), None]


def _spark(text: str, x: float | None) -> bool | None:
    """Spark's answer for one value: NaN equals NaN and is above every number, -0.0 equals 0.0, NULL is unknown."""

    def key(v: float) -> tuple:
        return (1, 0.0) if v != v else (0, v)

    def cmp(op: str, lit: float) -> bool | None:
        if x is None:
            return None
        a, b = key(x), key(lit)
        return {"=": a == b, ">": a > b, ">=": a >= b, "<": a < b, "<=": a <= b}[op]

    cases = {
        "x > 1.5": cmp(">", 1.5),
        "x >= 1.5": cmp(">=", 1.5),
        "x < 1.5": cmp("<", 1.5),
        "x <= 1.5": cmp("<=", 1.5),
        "x = 0": cmp("=", 0.0),
        "x = -0.0": cmp("=", -0.0),
        "x <=> 2.5": x is not None and bool(cmp("=", 2.5)),
        "x IN (0, 2.5)": None if x is None else bool(cmp("=", 0.0) or cmp("=", 2.5)),
        "x IN (1.5, NULL)": None if x is None or not cmp("=", 1.5) else True,
        "x BETWEEN -1 AND 2": None if x is None else bool(cmp(">=", -1.0) and cmp("<=", 2.0)),
        "x > 1e300": cmp(">", 1e300),
    }
    return cases[text]


@pytest.mark.parametrize("negated", [False, True], ids=["plain", "not"])
@pytest.mark.parametrize(
    "text",
    [
        "x > 1.5",
        "x >= 1.5",
        "x < 1.5",
        "x <= 1.5",
        "x = 0",
        "x = -0.0",
        "x <=> 2.5",
        "x IN (0, 2.5)",
        "x IN (1.5, NULL)",
        "x BETWEEN -1 AND 2",
        "x > 1e300",
    ],
)
def test_floating_columns_compare_in_sparks_order(text: str, negated: bool) -> None:
    """FLOAT/DOUBLE comparisons (the correction recipe's ``amount > 100000`` on DOUBLE amounts, issue 32) keep Spark's
    NaN order in the row filter, in partition selection, and in statistics pruning (which never skips a NaN)."""
    sql = f"NOT ({text})" if negated else text
    tree = parse_filter(sql, _schema())
    for single in (False, True):
        data = pa.table({"x": pa.array(_FLOATS, pa.float32() if single else pa.float64())})
        got = data.filter(tree_expression(tree, data.schema)).column("x").to_pylist()

        def passes(x: float | None) -> bool:
            answer = _spark(text, x)
            return answer is not None and (not answer if negated else answer)

        want = [x for x in _FLOATS if passes(x)]
        assert [repr(v) for v in got] == [repr(v) for v in want], sql
        for x in _FLOATS:  # partition values: the same answers
            assert may_hold_on_values(tree, {"x": x}) == passes(x), (sql, x)
    for leaf in implied_leaves(tree):  # a file whose statistics leave its NaN out (as Parquet's do) is kept
        if passes(float("nan")):
            assert could_match_stats(leaf, -1.0, 1.0, 0, 10)
