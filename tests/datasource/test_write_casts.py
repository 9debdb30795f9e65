"""Implicit casts of the Python write path (datasource/write/store_assignment.py): widening and value-preserving casts
work, FLOAT/DOUBLE columns take the nearest value (as Spark's ANSI store assignment casts), overflow and
meaning-changing casts are refused, and nothing is rounded into a DECIMAL or an integer silently."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
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
