"""Implicit casts of the Python write path (datasource/write/store_assignment.py): widening and value-preserving casts
work, FLOAT/DOUBLE columns take the nearest value (as Spark's ANSI store assignment casts), overflow and
meaning-changing casts are refused, and nothing is rounded into a DECIMAL or an integer silently."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.write.store_assignment import cast_for_store
from pyspark_paimon.errors import SchemaMismatchError


@pytest.fixture
def table(catalog: Catalog) -> Any:
    return catalog.create_table("db.casts", "id bigint, d decimal(10, 2), x double, f float, s string")


def write(table: Any, **columns: pa.Array) -> None:
    n = len(next(iter(columns.values())))
    data = {
        "id": pa.array(range(n), pa.int64()),
        "d": pa.array([Decimal("1.00")] * n, pa.decimal128(10, 2)),
        "x": pa.array([1.0] * n),
        "f": pa.array([1.0] * n, pa.float32()),
        "s": pa.array(["a"] * n),
    }
    data.update(columns)
    table.write_arrow(pa.table(data))


@pytest.mark.parametrize(
    "column, values",
    [
        ("id", pa.array([1, 2], pa.int32())),  # integer widening
        ("id", pa.array([None, None], pa.null())),  # NULL into anything nullable
        ("d", pa.array([1, -99999999], pa.int64())),  # integers that fit the decimal
        ("d", pa.array([0.1, 2.5])),  # floats that are exact in the decimal
        ("d", pa.array([Decimal("1.230")], pa.decimal128(10, 3))),  # decimal rescale without loss
        ("x", pa.array([2**53], pa.int64())),  # exact in a double
        ("x", pa.array([2**53 + 1], pa.int64())),  # the nearest double, as Spark casts
        ("id", pa.array([1.0, -3.0])),  # Arrow's inferred double, integral values
        ("x", pa.array([Decimal("1.10")], pa.decimal128(10, 2))),
        ("f", pa.array([0.5, float("nan"), None])),  # exact in a float
        ("s", pa.array(["a"], pa.large_string())),
    ],
)
def test_value_preserving_casts_are_written(table: Any, column: str, values: pa.Array) -> None:
    write(table, **{column: values})
    got = table.scan().to_arrow().column(column).to_pylist()
    want = values.to_pylist()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if g is None or w is None or isinstance(w, str):
            assert g == w
        else:  # the same number, whatever its Python type (Decimal, float, int); NaN stays NaN
            assert float(g) == float(w) or (float(g) != float(g) and float(w) != float(w))


@pytest.mark.parametrize(
    "column, values, match",
    [
        ("d", pa.array([1.005]), r"holds 1\.005, which a DECIMAL\(10, 2\) column cannot store exactly"),
        ("d", pa.array([Decimal("1.234")], pa.decimal128(10, 3)), "Rescaling"),
        ("d", pa.array([10**9], pa.int64()), "does not fit in precision"),
        ("f", pa.array([1e300]), r"holds 1e\+300, which is outside the range of a FLOAT column"),
        ("id", pa.array([1.5]), "cannot hold"),
        ("id", pa.array(["12"]), "type string, which is not written to a BIGINT column"),
        ("s", pa.array([12], pa.int64()), "not written to a STRING column"),
        ("id", pa.array([True]), "type bool"),
    ],
)
def test_lossy_or_meaning_changing_casts_are_refused(table: Any, column: str, values: pa.Array, match: str) -> None:
    with pytest.raises(SchemaMismatchError, match=match):
        write(table, **{column: values})
    assert table.latest_snapshot() is None  # nothing was committed


def test_floating_columns_take_the_nearest_value(table: Any) -> None:
    write(table, f=pa.array([0.1]), x=pa.array([Decimal("0.1")], pa.decimal128(38, 18)))
    row = table.scan().to_arrow().to_pylist()[0]
    assert row["f"] == pa.scalar(0.1, pa.float32()).as_py() and row["x"] == 0.1


# -- FLOAT/DOUBLE into DECIMAL: the shortest round-trip decimal (issue 32) ------------------------------------------


def _shortest(value: float, single: bool) -> Decimal:
    """Python's own answer: the digits ``repr`` prints (numpy's shortest digits for a float32)."""
    return Decimal(str(np.float32(value)) if single else repr(value))


def _fits(d: Decimal, precision: int, scale: int) -> bool:
    fraction = max(0, -int(d.normalize().as_tuple().exponent)) if d != 0 else 0
    return fraction <= scale and len(str(int(abs(d)))) - (int(abs(d)) == 0) <= precision - scale


_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),  # any double: mostly refused, now and then huge
    # n / 10**k, correctly rounded (Python's int division): prices and other short decimals, on both sides of the
    # fast path's 2**50 and of a column's scale
    st.tuples(st.integers(min_value=-(10**17), max_value=10**17), st.integers(min_value=0, max_value=12)).map(
        lambda nk: nk[0] / 10 ** nk[1]
    ),
    st.integers(min_value=-(2**64), max_value=2**64).map(float),  # integral, above the fast path's 2**50
)


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(_FLOATS, min_size=1, max_size=20),
    precision=st.integers(min_value=1, max_value=38),
    scale_share=st.floats(min_value=0, max_value=1),
    single=st.booleans(),
)
def test_floats_go_into_decimals_as_their_shortest_decimal(
    values: list[float], precision: int, scale_share: float, single: bool
) -> None:
    """Exactly what ``repr`` says: accepted as that decimal when it has at most ``scale`` fraction digits and fits
    ``precision``, refused naming the value otherwise; both paths (fast numeric and text) agree with it."""
    scale = round(precision * scale_share)
    if single:
        values = [float(np.float32(v)) for v in values if abs(v) < 3e38] or [0.5]
    want = pa.decimal128(precision, scale)
    col = pa.chunked_array([pa.array(values, pa.float32() if single else pa.float64())])
    expected = [_shortest(v, single) for v in values]
    bad = [v for v, d in zip(values, expected) if not _fits(d, precision, scale)]
    if bad:
        with pytest.raises(SchemaMismatchError, match="Column 'c' holds"):
            cast_for_store(col, want, "c", f"DECIMAL({precision}, {scale})")
        return
    got = cast_for_store(col, want, "c", f"DECIMAL({precision}, {scale})")
    assert got.type == want and got.to_pylist() == expected


def test_random_two_decimal_prices_read_back_as_those_decimals(catalog: Catalog) -> None:
    """300 seeded random prices as DOUBLE (Arrow's inference for Python floats) into DECIMAL(12, 2): every one is
    written as the two-decimal number it was typed as, 19.99 as 19.99 (about one in seven failed before)."""
    rng = random.Random(32)
    prices = [round(rng.uniform(0, 100_000), 2) for _ in range(300)] + [19.99, 1846.6, 0.1, 0.3]
    t = catalog.create_table("db.prices", "id bigint, amount decimal(12, 2)")
    t.write_arrow(pa.table({"id": range(len(prices)), "amount": prices}))
    got = {r["id"]: r["amount"] for r in t.scan().to_arrow().to_pylist()}
    assert [got[i] for i in range(len(prices))] == [Decimal(f"{p:.2f}") for p in prices]


@pytest.mark.parametrize(
    "value, match",
    [
        (1.005, r"holds 1\.005, which a DECIMAL\(10, 2\) column cannot store exactly"),
        (0.1 + 0.2, r"holds 0\.30000000000000004, which a DECIMAL\(10, 2\)"),
        (1e8, r"holds 100000000\.0, which is outside the range of a DECIMAL\(10, 2\) column"),
        (float("inf"), r"holds inf, which a DECIMAL\(10, 2\) column cannot store \(it is not a number\)"),
    ],
)
def test_a_double_the_decimal_would_round_is_refused(table: Any, value: float, match: str) -> None:
    with pytest.raises(SchemaMismatchError, match=match):
        write(table, d=pa.array([1.5, value, None]))
    assert table.latest_snapshot() is None


def test_decimals_go_into_doubles_as_the_nearest_double(table: Any) -> None:
    """Arrow's own decimal-to-double cast misses the nearest double for about one value in 75 (199999.99 became
    199999.99000000002); the write path gives exactly ``float(Decimal)``."""
    rng = random.Random(75)
    decimals = [Decimal(rng.randrange(-(10**12), 10**12)).scaleb(-rng.randrange(0, 9)) for _ in range(500)]
    write(table, x=pa.array([Decimal("199999.99"), *decimals], pa.decimal128(30, 8)))
    got = sorted(table.scan().to_arrow().select(["id", "x"]).to_pylist(), key=lambda r: r["id"])
    assert [r["x"] for r in got] == [199999.99, *(float(d) for d in decimals)]
