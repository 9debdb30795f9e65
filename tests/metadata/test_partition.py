"""Partition directory names (Java's `PartitionPathUtils`): legacy/non-legacy spellings, default name, escaping."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from pyspark_paimon.errors import SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.rows.partition import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    java_local_date_time_string,
    parse_partition_path,
    partition_path,
    partition_spec,
    partition_value_string,
    unescape_path_name,
)
from pyspark_paimon.metadata.types.model import AtomicType, DataField

STRING = AtomicType("VARCHAR", length=2147483647)
INT = AtomicType("INT")
DATE = AtomicType("DATE")
TS3 = AtomicType("TIMESTAMP", precision=3)
TS6 = AtomicType("TIMESTAMP", precision=6)
LTZ3 = AtomicType("TIMESTAMP_LTZ", precision=3)


def test_spec_example_three_levels():
    fields = [("dt", DATE), ("hr", INT), ("s", STRING)]
    assert partition_path([dt.date(2025, 8, 10), 7, "a/b=c d%"], fields) == "dt=20310/hr=7/s=a%2Fb%3Dc d%25"


def test_spec_example_string_partition():
    assert partition_path(["20250810"], [("date", STRING)]) == "date=20250810"


def test_date_as_int_days_is_accepted():
    assert partition_path([20310], [("dt", DATE)]) == "dt=20310"


def test_non_legacy_date_is_cast_to_string():
    assert partition_path([dt.date(2025, 8, 10)], [("dt", DATE)], legacy_name=False) == "dt=2025-08-10"


def test_unpartitioned_is_empty():
    assert partition_path([], []) == ""


def test_data_fields_are_accepted():
    fields = [DataField(0, "dt", DATE), DataField(1, "hr", INT)]
    assert partition_path([dt.date(2025, 8, 10), 7], fields) == "dt=20310/hr=7"


@pytest.mark.parametrize("value", [None, "", " ", "\t", " \n\r ", "\u2003", "\x1f"])
def test_null_empty_whitespace_become_default_name(value):
    assert partition_path([value], [("s", STRING)]) == f"s={DEFAULT_PARTITION_NAME}"
    assert partition_path([value], [("s", STRING)], default_name="none") == "s=none"


@pytest.mark.parametrize("value", ["\u00a0", "\u202f", " x "])
def test_java_non_whitespace_is_kept(value):
    """Java's Character.isWhitespace excludes no-break spaces, unlike Python's str.isspace."""
    assert partition_spec([value], [("s", STRING)]) == {"s": value}


def test_null_of_any_type_becomes_default_name():
    assert partition_path([None, None], [("d", DATE), ("i", INT)]) == (
        f"d={DEFAULT_PARTITION_NAME}/i={DEFAULT_PARTITION_NAME}"
    )


@pytest.mark.parametrize(
    "value,expected",
    [
        (dt.datetime(2025, 8, 10, 1, 2, 3, 456000), "2025-08-10T01:02:03.456"),
        (dt.datetime(2025, 8, 10, 1, 2), "2025-08-10T01:02"),
        (dt.datetime(2025, 8, 10, 1, 2, 3), "2025-08-10T01:02:03"),
        (dt.datetime(2025, 8, 10, 1, 2, 0, 500000), "2025-08-10T01:02:00.500"),
        (dt.datetime(2025, 8, 10, 0, 0, 0, 1), "2025-08-10T00:00:00.000001"),
        (dt.datetime(2025, 8, 10, 0, 0, 0, 123400), "2025-08-10T00:00:00.123400"),
        (dt.datetime(1, 1, 1), "0001-01-01T00:00"),
    ],
)
def test_java_local_date_time_string(value, expected):
    assert java_local_date_time_string(value) == expected


def test_java_local_date_time_string_nanos():
    class NanoDatetime(dt.datetime):
        nanosecond = 7

    value = NanoDatetime(2025, 8, 10, 1, 2, 3, 456000)
    assert java_local_date_time_string(value) == "2025-08-10T01:02:03.456000007"


def test_legacy_timestamp_is_local_date_time_with_colons_escaped():
    value = dt.datetime(2025, 8, 10, 1, 2, 3, 456000)
    assert partition_path([value], [("ts", TS3)]) == "ts=2025-08-10T01%3A02%3A03.456"


def test_ltz_is_shown_in_utc():
    aware = dt.datetime(2025, 8, 10, 3, 2, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert partition_value_string(aware, LTZ3) == "2025-08-10T01:02"


@pytest.mark.parametrize(
    "value,t,expected",
    [
        (dt.datetime(2025, 8, 10, 1, 2, 3, 456000), TS6, "2025-08-10 01:02:03.456000"),
        (dt.datetime(2025, 8, 10, 1, 2, 3, 456000), TS3, "2025-08-10 01:02:03.456"),
        (dt.datetime(2025, 8, 10, 1, 2, 3), AtomicType("TIMESTAMP", precision=0), "2025-08-10 01:02:03"),
        (dt.time(1, 2, 3), AtomicType("TIME", precision=0), "01:02:03"),
        (dt.time(1, 2, 3, 450000), AtomicType("TIME", precision=3), "01:02:03.450"),
    ],
)
def test_non_legacy_time_and_timestamp_cast(value, t, expected):
    assert partition_value_string(value, t, legacy_name=False) == expected


def test_legacy_time_is_millis_of_day():
    assert partition_value_string(dt.time(0, 0, 1, 500000), AtomicType("TIME")) == "1500"


@pytest.mark.parametrize(
    "value,t,expected",
    [
        (Decimal("1.5"), AtomicType("DECIMAL", precision=10, scale=2), "1.50"),
        (Decimal("-0.00"), AtomicType("DECIMAL", precision=10, scale=2), "0.00"),
        (Decimal("1E+3"), AtomicType("DECIMAL", precision=10, scale=0), "1000"),
        (Decimal("12345678901234567.01"), AtomicType("DECIMAL", precision=20, scale=2), "12345678901234567.01"),
        (True, AtomicType("BOOLEAN"), "true"),
        (False, AtomicType("BOOLEAN"), "false"),
        (-5, AtomicType("BIGINT"), "-5"),
        (1.0, AtomicType("DOUBLE"), "1.0"),
        (1e7, AtomicType("DOUBLE"), "1.0E7"),
        (1e-4, AtomicType("DOUBLE"), "1.0E-4"),
        (0.001, AtomicType("DOUBLE"), "0.001"),
        (123.456, AtomicType("DOUBLE"), "123.456"),
        (float("nan"), AtomicType("DOUBLE"), "NaN"),
        (float("-inf"), AtomicType("DOUBLE"), "-Infinity"),
        (-0.0, AtomicType("DOUBLE"), "-0.0"),
        (1 / 3, AtomicType("FLOAT"), "0.33333334"),
        (0.1, AtomicType("FLOAT"), "0.1"),
    ],
)
def test_value_spellings(value, t, expected):
    assert partition_value_string(value, t) == expected
    assert partition_value_string(value, t, legacy_name=False) == expected


def test_binary_partition_needs_non_legacy_names():
    t = AtomicType("VARBINARY", length=10)
    with pytest.raises(UnsupportedTypeError, match="partition.legacy-name"):
        partition_path([b"ab"], [("b", t)])
    assert partition_path([b"ab"], [("b", t)], legacy_name=False) == "b=ab"


def test_value_count_mismatch():
    with pytest.raises(SchemaError, match="partition keys"):
        partition_path([1, 2], [("a", INT)])


def test_escaping_every_listed_character():
    specials = "\"#%'*/:=?\\\x7f{}[]^"
    assert escape_path_name(specials) == "%22%23%25%27%2A%2F%3A%3D%3F%5C%7F%7B%7D%5B%5D%5E"
    assert escape_path_name("\x00\x01\x1f") == "%00%01%1F"
    assert escape_path_name("a b&|+-~é€") == "a b&|+-~é€"


def test_keys_are_escaped_too():
    assert partition_path(["v"], [("k=1", STRING)]) == "k%3D1=v"


@pytest.mark.parametrize("text", ["a/b=c d%", "\"#%'*/:=?\\\x7f{}[]^\x00\t", "plain", "é€ %%"])
def test_unescape_round_trip(text):
    assert unescape_path_name(escape_path_name(text)) == text


@pytest.mark.parametrize("text,expected", [("%zz", "%zz"), ("a%2", "a%2"), ("%", "%"), ("%2f", "/"), ("%2F%", "/%")])
def test_unescape_keeps_malformed_sequences(text, expected):
    assert unescape_path_name(text) == expected


def test_parse_partition_path_round_trip():
    fields = [("dt", DATE), ("hr", INT), ("s", STRING)]
    path = partition_path([dt.date(2025, 8, 10), 7, "a/b=c d%"], fields)
    assert parse_partition_path(path) == {"dt": "20310", "hr": "7", "s": "a/b=c d%"}
    assert parse_partition_path(path + "/") == parse_partition_path(path)
    assert parse_partition_path("") == {}
    with pytest.raises(SchemaError, match="key=value"):
        parse_partition_path("novalue")
