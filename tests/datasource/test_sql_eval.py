"""SQL value expressions on Arrow (datasource/dml/sql_eval.py): what DML's SET, conditions and values compute."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pyarrow as pa
import pytest

from pyspark_paimon.datasource.dml.sql_eval import Scope, evaluate, evaluate_condition
from pyspark_paimon.datasource.write.store_assignment import cast_for_store
from pyspark_paimon.errors import OptionError

ROWS = {
    "a": pa.chunked_array([[1, 2, None, 4]]),
    "b": pa.chunked_array([["x", "y", "z", None]]),
    "d": pa.chunked_array([pa.array([0, 1, 2, 3], pa.date32())]),
    "f": pa.chunked_array([[1.5, 2.5, 3.5, 4.5]]),
}
SCOPE = Scope({"t": ROWS}, 4, default="t")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("a + 1", [2, 3, None, 5]),
        ("a * 2 - 1", [1, 3, None, 7]),
        ("-a", [-1, -2, None, -4]),
        ("a % 3", [1, 2, None, 1]),
        ("a / 2", [0.5, 1.0, None, 2.0]),
        ("f + a", [2.5, 4.5, None, 8.5]),
        ("a + 1.5", [Decimal("2.5"), Decimal("3.5"), None, Decimal("5.5")]),
        ("coalesce(a, 0)", [1, 2, 0, 4]),
        ("nullif(a, 1)", [None, 2, None, 4]),
        ("CASE WHEN a > 1 THEN 'big' ELSE upper(b) END", ["X", "big", "Z", "big"]),
        ("if(a > 1, a, 0)", [0, 2, 0, 4]),
        ("a || b", ["1x", "2y", None, None]),
        ("concat(b, '!')", ["x!", "y!", "z!", None]),
        ("length(b)", [1, 1, 1, None]),
        ("substring(b, 1, 1)", ["x", "y", "z", None]),
        ("greatest(a, 3)", [3, 3, 3, 4]),
        ("round(f)", [2.0, 3.0, 4.0, 5.0]),
        ("cast(a as string)", ["1", "2", None, "4"]),
        ("cast(a as decimal(10,2))", [Decimal("1.00"), Decimal("2.00"), None, Decimal("4.00")]),
        ("DATE '2024-01-01'", [dt.date(2024, 1, 1)] * 4),
        ("null", [None] * 4),
    ],
)
def test_values(text: str, want: list) -> None:
    assert evaluate(text, SCOPE).to_pylist() == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("a > 1", [False, True, False, True]),
        ("d >= '1970-01-02'", [False, True, True, True]),
        ("a IS NULL OR b IS NULL", [False, False, True, True]),
        ("a IN (1, 4)", [True, False, False, True]),
        ("a BETWEEN 1 AND 2", [True, True, False, False]),
        ("NOT (a <=> 2)", [True, False, True, True]),
        ("a <=> null", [False, False, True, False]),
    ],
)
def test_conditions_treat_null_as_false(text: str, want: list) -> None:
    assert evaluate_condition(text, SCOPE).to_pylist() == want


def test_qualified_names_and_ambiguity() -> None:
    scope = Scope(
        {
            "source": {"v": pa.chunked_array([[1, 2]])},
            "target": {"v": pa.chunked_array([[10, 20]]), "w": pa.chunked_array([[1, 1]])},
        },
        2,
    )
    assert evaluate("source.v + target.v + w", scope).to_pylist() == [12, 23]
    with pytest.raises(OptionError, match="ambiguous; qualify it as source.v or target.v"):
        evaluate("v", scope)
    with pytest.raises(OptionError, match="'other' is not one of"):
        evaluate("other.v", scope)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("nope + 1", "column 'nope', which does not exist"),
        ("foo(a)", "not supported"),
        ("a +", "not valid SQL"),
        ("9223372036854775807 + a", "overflow"),
        ("a > 1 AND b", "not BOOLEAN"),
        ("b > 1", "cannot be evaluated"),
    ],
)
def test_refusals_quote_the_text(text: str, match: str) -> None:
    with pytest.raises(OptionError, match=match):
        evaluate(text, SCOPE)


def test_rounded_doubles_go_into_a_decimal_column_as_the_rounded_decimal() -> None:
    """``round(amount / 100, 2)``, the fix a refused write suggests, gives doubles whose shortest decimal has two
    fraction digits, so a DECIMAL(16, 2) column takes each as that decimal (issue 32)."""
    rng = random.Random(7)
    amounts = [rng.randrange(-(10**13), 10**13) for _ in range(2000)]
    scope = Scope({"t": {"amount": pa.chunked_array([pa.array(amounts, pa.int64())])}}, len(amounts), default="t")
    rounded = evaluate("round(amount / 100, 2)", scope)
    assert rounded.type == pa.float64()
    stored = cast_for_store(rounded, pa.decimal128(16, 2), "amount", "DECIMAL(16, 2)")
    assert stored.to_pylist() == [Decimal(a).scaleb(-2) for a in amounts]
    thirds = evaluate("round(amount / 3, 2)", scope)
    assert cast_for_store(thirds, pa.decimal128(16, 2), "amount", "DECIMAL(16, 2)").to_pylist() == [
        Decimal(repr(v)).quantize(Decimal("0.01")) for v in thirds.to_pylist()
    ]
