"""Column statistics (Java's `SimpleStatsConverter`): modes, truncate(N) bounds, NaN, nested columns, dense store."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.datasource.write.stats import (
    StatsMode,
    collect_stats,
    collect_value_stats,
    covered_columns,
    field_stats_mode,
    mode_resolver,
    parse_stats_mode,
    truncate_max,
    truncate_min,
)
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import SimpleStats
from pyspark_paimon.metadata.rows.binary_row import EMPTY_ROW, deserialize_row
from pyspark_paimon.metadata.types.arrow import to_arrow_schema
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    MapType,
    RowType,
    bytes_type,
    string_type,
)

INT = AtomicType("INT")
BIGINT = AtomicType("BIGINT")
DOUBLE = AtomicType("DOUBLE")
FLOAT = AtomicType("FLOAT")
DATE = AtomicType("DATE")
TS6 = AtomicType("TIMESTAMP", precision=6)
LTZ6 = AtomicType("TIMESTAMP_LTZ", precision=6)
DEC = AtomicType("DECIMAL", precision=20, scale=2)
BOOL = AtomicType("BOOLEAN")
PLACEHOLDER = BIGINT  # nested columns' always-NULL min/max decode with any atomic type


def fields_of(*specs: tuple[str, object]) -> list[DataField]:
    return [DataField(i, name, t) for i, (name, t) in enumerate(specs)]


def table_of(fields: list[DataField], data: dict[str, list]) -> pa.Table:
    return pa.Table.from_pydict(data, schema=to_arrow_schema(fields))


def decode(stats: SimpleStats, types: list) -> tuple[tuple, tuple, tuple]:
    return deserialize_row(stats.min_values, types), deserialize_row(stats.max_values, types), stats.null_counts


# ------------------------------------------------------------------------------------------------ modes
def test_parse_stats_mode() -> None:
    assert parse_stats_mode("none") == StatsMode("none")
    assert parse_stats_mode(" COUNTS ") == StatsMode("counts")
    assert parse_stats_mode("Full") == StatsMode("full")
    assert parse_stats_mode("truncate(16)") == StatsMode("truncate", 16)
    assert parse_stats_mode("truncate( 8 )") == StatsMode("truncate", 8)
    with pytest.raises(OptionError, match="fields.x.stats-mode"):
        parse_stats_mode("truncate", "fields.x.stats-mode")


def test_field_stats_mode_precedence() -> None:
    assert field_stats_mode({}, "a") == "truncate(16)"
    assert field_stats_mode({"metadata.stats-mode": "full"}, "a") == "full"
    opts = {"metadata.stats-mode": "full", "fields.a.stats-mode": "none"}
    assert field_stats_mode(opts, "a") == "none"
    assert field_stats_mode(opts, "b") == "full"


# ------------------------------------------------------------------------------------------------ truncation
def test_truncate_strings() -> None:
    s = "a" * 20
    assert truncate_min(s, 16) == "a" * 16
    assert truncate_max(s, 16) == "a" * 15 + "b"
    exact = "x" * 16
    assert truncate_min(exact, 16) == exact and truncate_max(exact, 16) == exact
    # characters are code points, not bytes
    wide = "é" * 20
    assert truncate_min(wide, 16) == "é" * 16
    assert truncate_max(wide, 16) == "é" * 15 + "ê"
    # the last code point cannot grow: carry into the one before and drop the tail
    assert truncate_max("a" + "\U0010ffff" * 16, 16) == "b"
    assert truncate_max("\U0010ffff" * 17, 16) is None
    # U+D7FF + 1 is a surrogate; the next encodable code point is U+E000
    assert truncate_max("\ud7ff" * 17, 16) == "\ud7ff" * 15 + "\ue000"
    assert truncate_min(None, 16) is None and truncate_max(None, 16) is None


def test_truncate_bytes() -> None:
    assert truncate_min(b"a" * 17, 16) == b"a" * 16
    assert truncate_max(b"a" * 17, 16) == b"a" * 15 + b"b"
    assert truncate_max(b"a" + b"\xff" * 16, 16) == b"b"
    assert truncate_max(b"\xff" * 17, 16) is None
    assert truncate_max(b"abc", 16) == b"abc"


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=0, max_size=40), st.integers(min_value=1, max_value=20))
def test_truncated_bounds_bound_the_value(s: str, n: int) -> None:
    lo, hi = truncate_min(s, n), truncate_max(s, n)
    assert len(lo) <= n and lo.encode("utf-8", "surrogatepass") <= s.encode("utf-8", "surrogatepass")
    if hi is not None:
        assert len(hi) <= n
        assert hi.encode("utf-8", "surrogatepass") >= s.encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=40), st.integers(min_value=1, max_value=20))
def test_truncated_binary_bounds(b: bytes, n: int) -> None:
    lo, hi = truncate_min(b, n), truncate_max(b, n)
    assert len(lo) <= n and lo <= b
    if hi is not None:
        assert len(hi) <= n and hi >= b
    else:
        assert b[:n] == b"\xff" * n


# ------------------------------------------------------------------------------------------------ collect
def test_full_stats_all_types() -> None:
    fields = fields_of(
        ("i", INT),
        ("l", BIGINT),
        ("d", DOUBLE),
        ("s", string_type()),
        ("b", bytes_type()),
        ("day", DATE),
        ("ts", TS6),
        ("ltz", LTZ6),
        ("dec", DEC),
        ("ok", BOOL),
    )
    utc = dt.timezone.utc
    data = {
        "i": [3, None, -7],
        "l": [10, 20, None],
        "d": [1.5, -2.5, None],
        "s": ["pear", "apple", None],
        "b": [b"\x02", b"\x01\xff", None],
        "day": [dt.date(2024, 1, 2), dt.date(2023, 5, 6), None],
        "ts": [dt.datetime(2024, 1, 1, 0, 0, 0, 1), None, dt.datetime(2020, 1, 1)],
        "ltz": [dt.datetime(2024, 1, 1, tzinfo=utc), dt.datetime(2025, 1, 1, tzinfo=utc), None],
        "dec": [Decimal("1.25"), Decimal("-3.50"), None],
        "ok": [True, None, False],
    }
    stats = collect_stats(table_of(fields, data), fields, "full")
    mins, maxs, nulls = decode(stats, [f.type for f in fields])
    assert mins == (
        -7,
        10,
        -2.5,
        "apple",
        b"\x01\xff",
        dt.date(2023, 5, 6),
        dt.datetime(2020, 1, 1),
        dt.datetime(2024, 1, 1, tzinfo=utc),
        Decimal("-3.50"),
        False,
    )
    assert maxs == (
        3,
        20,
        1.5,
        "pear",
        b"\x02",
        dt.date(2024, 1, 2),
        dt.datetime(2024, 1, 1, 0, 0, 0, 1),
        dt.datetime(2025, 1, 1, tzinfo=utc),
        Decimal("1.25"),
        True,
    )
    assert nulls == (1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
    assert covered_columns(fields, "full") is None


def test_truncate_mode_only_cuts_strings_and_binaries() -> None:
    fields = fields_of(("s", string_type()), ("b", bytes_type()), ("l", BIGINT))
    long_s = ["z" * 30, "a" * 30]
    data = {"s": long_s, "b": [b"\x00" * 20, b"\x05" * 20], "l": [2**40, -(2**40)]}
    stats = collect_stats(table_of(fields, data), fields)  # default truncate(16)
    mins, maxs, nulls = decode(stats, [f.type for f in fields])
    assert mins == ("a" * 16, b"\x00" * 16, -(2**40))
    assert maxs == ("z" * 15 + "{", b"\x05" * 15 + b"\x06", 2**40)
    assert nulls == (0, 0, 0)
    full = decode(collect_stats(table_of(fields, data), fields, "full"), [f.type for f in fields])
    assert full[0][0] == "a" * 30 and full[1][0] == "z" * 30


def test_truncated_max_impossible_is_null() -> None:
    fields = fields_of(("s", string_type()))
    stats = collect_stats(table_of(fields, {"s": ["\U0010ffff" * 20, "a"]}), fields, "truncate(4)")
    mins, maxs, _ = decode(stats, [fields[0].type])
    assert mins == ("a",) and maxs == (None,)


def test_nan_is_the_maximum() -> None:
    fields = fields_of(("d", DOUBLE), ("f", FLOAT), ("all_nan", DOUBLE))
    data = {"d": [1.0, math.nan, -3.0, None], "f": [0.5, 2.5, None, None], "all_nan": [math.nan, math.nan, None, None]}
    mins, maxs, nulls = decode(collect_stats(table_of(fields, data), fields, "full"), [f.type for f in fields])
    assert mins[0] == -3.0 and math.isnan(maxs[0])
    assert (mins[1], maxs[1]) == (0.5, 2.5)
    assert math.isnan(mins[2]) and math.isnan(maxs[2])
    assert nulls == (1, 2, 2)


def test_nested_columns_have_null_min_max_and_real_null_counts() -> None:
    fields = fields_of(
        ("a", ArrayType(INT)),
        ("m", MapType(string_type(False), INT)),
        ("r", RowType((DataField(10, "x", INT),))),
        ("i", INT),
    )
    data = {"a": [[1, 2], None, []], "m": [[("k", 1)], None, None], "r": [{"x": 1}, {"x": None}, None], "i": [1, 2, 3]}
    stats = collect_stats(table_of(fields, data), fields, "full")
    mins, maxs, nulls = decode(stats, [PLACEHOLDER, PLACEHOLDER, PLACEHOLDER, INT])
    assert mins == (None, None, None, 1) and maxs == (None, None, None, 3)
    assert nulls == (1, 2, 1, 0)
    assert covered_columns(fields, "full") is None


def test_all_null_and_counts_mode() -> None:
    fields = fields_of(("s", string_type()), ("i", INT))
    data = {"s": [None, None], "i": [1, None]}
    mins, maxs, nulls = decode(collect_stats(table_of(fields, data), fields, "full"), [f.type for f in fields])
    assert mins == (None, 1) and maxs == (None, 1) and nulls == (2, 1)
    mins, maxs, nulls = decode(collect_stats(table_of(fields, data), fields, "counts"), [f.type for f in fields])
    assert mins == (None, None) and maxs == (None, None) and nulls == (2, 1)


def test_mode_none_everywhere_gives_empty_stats_and_empty_cols() -> None:
    fields = fields_of(("s", string_type()), ("i", INT))
    table = table_of(fields, {"s": ["a"], "i": [1]})
    stats, cols = collect_value_stats(table, fields, {"metadata.stats-mode": "none"})
    assert stats == SimpleStats(EMPTY_ROW, EMPTY_ROW, ())
    assert cols == ()


def test_per_field_none_is_left_out_in_dense_store() -> None:
    fields = fields_of(("a", INT), ("b", string_type()), ("c", BIGINT))
    table = table_of(fields, {"a": [1, 5], "b": ["x", None], "c": [7, 8]})
    opts = {"fields.b.stats-mode": "none", "fields.c.stats-mode": "counts", "metadata.stats-mode": "full"}
    stats, cols = collect_value_stats(table, fields, opts)
    assert cols == ("a", "c")
    mins, maxs, nulls = decode(stats, [INT, BIGINT])
    assert mins == (1, None) and maxs == (5, None) and nulls == (0, 0)


def test_dense_store_off_keeps_every_column() -> None:
    fields = fields_of(("a", INT), ("b", string_type()))
    table = table_of(fields, {"a": [1, 5], "b": ["x", None]})
    opts = {"fields.b.stats-mode": "none", "metadata.stats-dense-store": "false"}
    stats, cols = collect_value_stats(table, fields, opts)
    assert cols is None
    mins, maxs, nulls = decode(stats, [INT, PLACEHOLDER])
    assert mins == (1, None) and maxs == (5, None) and nulls == (0, None)


def test_keep_first_n_columns() -> None:
    fields = fields_of(("a", INT), ("b", INT), ("c", INT))
    table = table_of(fields, {"a": [1], "b": [2], "c": [3]})
    resolver = mode_resolver({"metadata.stats-keep-first-n-columns": "2"}, fields)
    assert [resolver(f) for f in fields] == ["truncate(16)", "truncate(16)", "none"]
    stats, cols = collect_value_stats(table, fields, {"metadata.stats-keep-first-n-columns": "2"})
    assert cols == ("a", "b")
    assert decode(stats, [INT, INT]) == ((1, 2), (1, 2), (0, 0))


def test_invalid_per_field_mode_names_the_option() -> None:
    fields = fields_of(("a", INT))
    with pytest.raises(OptionError, match="fields.a.stats-mode"):
        collect_value_stats(table_of(fields, {"a": [1]}), fields, {"fields.a.stats-mode": "bogus"})
