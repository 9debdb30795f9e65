"""BinaryRow encoding: worked examples checked against the bytes pypaimon writes on disk, Java's NULL quirk, round
trips, vectorised == scalar."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.errors import CorruptMetadataError, SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.rows.binary_row import (
    EMPTY_ROW,
    deserialize_row,
    encode_rows,
    null_bits_size,
    read_row_bytes,
    row_bytes,
    serialize_row,
)
from pyspark_paimon.metadata.types.model import ArrayType, AtomicType, MapType

STRING = AtomicType("VARCHAR", length=2147483647)
BYTES = AtomicType("VARBINARY", length=2147483647)
INT = AtomicType("INT")
BIGINT = AtomicType("BIGINT")
DATE = AtomicType("DATE")
TS3 = AtomicType("TIMESTAMP", precision=3)
TS6 = AtomicType("TIMESTAMP", precision=6)
LTZ3 = AtomicType("TIMESTAMP_LTZ", precision=3)
LTZ6 = AtomicType("TIMESTAMP_LTZ", precision=6)
DEC10_2 = AtomicType("DECIMAL", precision=10, scale=2)
DEC20_2 = AtomicType("DECIMAL", precision=20, scale=2)
DEC38_0 = AtomicType("DECIMAL", precision=38, scale=0)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("|", ""))


# Worked examples (the bytes Java's `BinaryRowWriter` and pypaimon write): (id, values, types, serialized hex)
SPEC_EXAMPLES = [
    (
        "partition-string-var",
        ["20250810"],
        [STRING],
        "00000001 | 00000000 00000000 | 08000000 10000000 | 32303235 30383130",
    ),
    ("key-inline-string", ["1"], [STRING], "00000001 00000000 00000000 31000000 00000081"),
    ("empty-string", [""], [STRING], "00000001 00000000 00000000 00000000 00000080"),
    ("null-string", [None], [STRING], "00000001 00010000 00000000 00000000 00000000"),
    ("int-1", [1], [INT], "00000001 00000000 00000000 01000000 00000000"),
    ("bigint-minus-1", [-1], [BIGINT], "00000001 00000000 00000000 ffffffff ffffffff"),
    (
        "partition-date-int-string",
        [dt.date(2025, 8, 10), 7, "a/b=c d%"],
        [DATE, INT, STRING],
        "00000003 00000000 00000000 | 564f0000 00000000 | 07000000 00000000 | 08000000 20000000 | 612f623d 63206425",
    ),
    (
        "key-ts6-dec20",
        [dt.datetime(2025, 8, 10, 1, 2, 3, 1111), Decimal("12345678901234567.01")],
        [TS6, DEC20_2],
        "00000002 00000000 00000000 | 98b10100 18000000 | 08000000 20000000 | f9b67f91 98010000 | "
        "112210f4 7de980bd 00000000 00000000",
    ),
    ("empty-row", [], [], "00000000 00000000 00000000"),
    ("ts3", [dt.datetime(2025, 8, 10, 1, 2, 3, 456000)], [TS3], "00000001 00000000 00000000 c0b87f91 98010000"),
    # Java's NULL layout of a non-compact TIMESTAMP: var space reserved, slot = offset << 32 (Java's `BinaryRowWriter`).
    ("null-ts6-java", [None], [TS6], "00000001 00010000 00000000 00000000 10000000 00000000 00000000"),
    # Same rule for a non-compact DECIMAL: 16 reserved bytes.
    (
        "null-dec20-java",
        [None],
        [DEC20_2],
        "00000001 00010000 00000000 00000000 10000000 00000000 00000000 00000000 00000000",
    ),
]


def _arrow_column(values: list, t: AtomicType) -> pa.Array:
    arrow_types = {
        "VARCHAR": pa.string(),
        "CHAR": pa.string(),
        "VARBINARY": pa.binary(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "DATE": pa.date32(),
        "BOOLEAN": pa.bool_(),
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "TIME": pa.time32("ms"),
    }
    if t.name == "TIMESTAMP":
        return pa.array(values, pa.timestamp("us"))
    if t.name == "TIMESTAMP_LTZ":
        return pa.array(values, pa.timestamp("us", tz="UTC"))
    if t.name == "DECIMAL":
        return pa.array(values, pa.decimal128(t.precision, t.scale))
    return pa.array(values, arrow_types[t.name])


@pytest.mark.parametrize("values,types,expected", [e[1:] for e in SPEC_EXAMPLES], ids=[e[0] for e in SPEC_EXAMPLES])
def test_spec_examples_scalar(values, types, expected):
    assert serialize_row(values, types) == h(expected)
    assert row_bytes(values, types) == h(expected)[4:]


@pytest.mark.parametrize(
    "values,types,expected", [e[1:] for e in SPEC_EXAMPLES if e[2]], ids=[e[0] for e in SPEC_EXAMPLES if e[2]]
)
def test_spec_examples_vectorised(values, types, expected):
    columns = [_arrow_column([v], t) for v, t in zip(values, types)]
    rows = encode_rows(columns, types)
    assert len(rows) == 1
    assert rows.row(0) == h(expected)[4:]


@pytest.mark.parametrize("values,types,expected", [e[1:] for e in SPEC_EXAMPLES], ids=[e[0] for e in SPEC_EXAMPLES])
def test_spec_examples_round_trip(values, types, expected):
    assert deserialize_row(h(expected), types) == tuple(values)


def test_empty_row_constant():
    assert EMPTY_ROW == bytes(12)
    assert deserialize_row(EMPTY_ROW, []) == ()


def test_pypaimon_null_layout_also_decodes():
    """pypaimon writes NULL non-compact values as slot 0 without var space; we must still read them."""
    assert deserialize_row(h("00000001 00010000 00000000 00000000 00000000"), [TS6]) == (None,)


@pytest.mark.parametrize(
    "unscaled,be_bytes",
    [
        (0, "00"),
        (-1, "ff"),
        (127, "7f"),
        (128, "0080"),
        (-128, "80"),
        (-129, "ff7f"),
        (255, "00ff"),
        (10**38 - 1, "4b3b4ca85a86c47a098a223fffffffff"),
        (-(10**38) + 1, "b4c4b357a5793b85f675ddc000000001"),
    ],
)
def test_non_compact_decimal_uses_java_biginteger_bytes(unscaled, be_bytes):
    row = row_bytes([Decimal(unscaled)], [DEC38_0])
    slot = int.from_bytes(row[8:16], "little")
    assert slot >> 32 == 16 and slot & 0xFFFFFFFF == len(be_bytes) // 2
    assert row[16:] == h(be_bytes) + bytes(16 - len(be_bytes) // 2)
    assert encode_rows([pa.array([Decimal(unscaled)], pa.decimal128(38, 0))], [DEC38_0]).row(0) == row
    assert read_row_bytes(row, [DEC38_0]) == (Decimal(unscaled),)


def test_null_bits_grow_past_56_fields():
    assert [null_bits_size(a) for a in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]
    types = [INT] * 57
    values = [None if i == 56 else i for i in range(57)]
    row = row_bytes(values, types)
    assert len(row) == 16 + 57 * 8
    assert row[8] == 1  # bit 56 + 8 = 64 -> byte 8, bit 0
    assert read_row_bytes(row, types) == tuple(values)
    columns = [pa.array([v], pa.int32()) for v in values]
    assert encode_rows(columns, types).row(0) == row


def test_int_slot_is_zero_extended():
    """Java writes 4 bytes into a zeroed slot, so INT -1 differs from BIGINT -1."""
    assert row_bytes([-1], [INT])[8:] == h("ffffffff 00000000")


def test_ltz_aware_converted_to_utc_and_naive_timestamp_is_wall_clock():
    plus2 = dt.timezone(dt.timedelta(hours=2))
    aware = dt.datetime(2025, 8, 10, 3, 2, 3, 456000, tzinfo=plus2)
    assert row_bytes([aware], [LTZ3]) == row_bytes([dt.datetime(2025, 8, 10, 1, 2, 3, 456000)], [TS3])
    decoded = read_row_bytes(row_bytes([aware], [LTZ3]), [LTZ3])[0]
    assert decoded == aware and decoded.tzinfo == dt.timezone.utc


def test_pre_epoch_timestamp_uses_floor_millis():
    value = dt.datetime(1969, 12, 31, 23, 59, 59, 999500)
    row = row_bytes([value], [TS6])
    slot = int.from_bytes(row[8:16], "little")
    assert slot & 0xFFFFFFFF == 500_000  # nanoOfMilli is never negative
    assert int.from_bytes(row[16:24], "little", signed=True) == -1
    assert read_row_bytes(row, [TS6]) == (value,)
    assert encode_rows([pa.array([value], pa.timestamp("us"))], [TS6]).row(0) == row


def test_decimal_rounds_half_up_to_scale():
    assert row_bytes([Decimal("1.005")], [DEC10_2]) == row_bytes([Decimal("1.01")], [DEC10_2])
    assert row_bytes([Decimal("-1.005")], [DEC10_2]) == row_bytes([Decimal("-1.01")], [DEC10_2])


@pytest.mark.parametrize("t", [ArrayType(INT), MapType(STRING, INT), AtomicType("VARIANT")])
def test_nested_types_are_rejected_by_name(t):
    with pytest.raises(UnsupportedTypeError, match="ARRAY|MAP|VARIANT"):
        row_bytes([None], [t])
    with pytest.raises(UnsupportedTypeError):
        encode_rows([pa.array([None])], [t])


@pytest.mark.parametrize(
    "value,t",
    [("x", INT), (1, STRING), (2**31, INT), (Decimal("123456789.123"), DEC10_2), (b"x", STRING), (1.5, DATE)],
)
def test_bad_values_raise_schema_error(value, t):
    with pytest.raises(SchemaError, match="field 0"):
        row_bytes([value], [t])


def test_an_arrow_column_that_does_not_convert_names_its_position_and_type():
    with pytest.raises(SchemaError, match="Column 0 of Arrow type string cannot be used as Paimon INT.*Cast"):
        encode_rows([pa.array(["seven"])], [INT])


def test_value_count_mismatch():
    with pytest.raises(SchemaError):
        row_bytes([1, 2], [INT])


def test_corrupt_rows():
    with pytest.raises(CorruptMetadataError, match="arity"):
        deserialize_row(serialize_row([1], [INT]), [INT, INT])
    with pytest.raises(CorruptMetadataError, match="too short"):
        deserialize_row(b"\x00", [])
    with pytest.raises(CorruptMetadataError):
        deserialize_row(serialize_row([1], [INT])[:-4], [INT])
    bad_offset = serialize_row(["abcdefgh"], [STRING])[:-8]
    with pytest.raises(CorruptMetadataError, match="beyond"):
        deserialize_row(bad_offset, [STRING])


# -------------------------------------------------------------------------------------------------------
# Property tests: scalar round trip, vectorised == scalar
# -------------------------------------------------------------------------------------------------------

_UTC = dt.timezone.utc
_datetimes = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))


def _decimals(precision: int, scale: int):
    bound = 10**precision - 1
    return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E-{scale}"))


def _millis_time(v: dt.time) -> dt.time:
    return v.replace(microsecond=v.microsecond // 1000 * 1000)


# (type, strategy of python values, normaliser applied before comparing a decoded value)
TYPED_STRATEGIES = [
    (AtomicType("BOOLEAN"), st.booleans(), None),
    (AtomicType("TINYINT"), st.integers(-(2**7), 2**7 - 1), None),
    (AtomicType("SMALLINT"), st.integers(-(2**15), 2**15 - 1), None),
    (INT, st.integers(-(2**31), 2**31 - 1), None),
    (BIGINT, st.integers(-(2**63), 2**63 - 1), None),
    (AtomicType("FLOAT"), st.floats(width=32, allow_nan=False), None),
    (AtomicType("DOUBLE"), st.floats(allow_nan=False), None),
    (DATE, st.dates(), None),
    (AtomicType("TIME", precision=3), st.times().map(_millis_time), None),
    (TS3, _datetimes.map(lambda v: v.replace(microsecond=v.microsecond // 1000 * 1000)), None),
    (TS6, _datetimes, None),
    (LTZ6, _datetimes.map(lambda v: v.replace(tzinfo=_UTC)), None),
    (LTZ3, _datetimes.map(lambda v: v.replace(tzinfo=_UTC, microsecond=v.microsecond // 1000 * 1000)), None),
    (DEC10_2, _decimals(10, 2), None),
    (AtomicType("DECIMAL", precision=18, scale=0), _decimals(18, 0), None),
    (DEC20_2, _decimals(20, 2), None),
    (DEC38_0, _decimals(38, 0), None),
    (AtomicType("DECIMAL", precision=38, scale=10), _decimals(38, 10), None),
    (STRING, st.text(max_size=20), None),
    (AtomicType("CHAR", length=5), st.text(max_size=5), None),
    (BYTES, st.binary(max_size=20), None),
]


@st.composite
def typed_rows(draw):
    picks = draw(st.lists(st.sampled_from(TYPED_STRATEGIES), min_size=1, max_size=6))
    types = [p[0] for p in picks]
    n = draw(st.integers(1, 8))
    columns = [[draw(st.none() | p[1]) for _ in range(n)] for p in picks]
    return types, columns


@settings(max_examples=300, deadline=None)
@given(typed_rows())
def test_round_trip_and_vectorised_equals_scalar(data):
    types, columns = data
    rows = list(zip(*columns))
    encoded = encode_rows([_arrow_column(col, t) for col, t in zip(columns, types)], types)
    for i, values in enumerate(rows):
        scalar = row_bytes(values, types)
        assert len(scalar) % 8 == 0
        assert encoded.row(i) == scalar, (values, types)
        assert deserialize_row(serialize_row(values, types), types) == tuple(values)


def test_vectorised_accepts_chunked_sliced_and_dictionary_columns():
    values = ["a", None, "a-long-string-value", "", "bc", "a-long-string-value"]
    expected = [row_bytes([v], [STRING]) for v in values]
    chunked = pa.chunked_array([values[:2], values[2:]])
    sliced = pa.array(["zz"] + values + ["zz"]).slice(1, len(values))
    dictionary = pa.array(values).dictionary_encode()
    for column in (chunked, sliced, dictionary, pa.array(values, pa.large_string()), values):
        rows = encode_rows([column], [STRING])
        assert [rows.row(i) for i in range(len(values))] == expected


def test_vectorised_casts_wider_arrow_types_and_ns_timestamps():
    assert encode_rows([pa.array([7], pa.int64())], [INT]).row(0) == row_bytes([7], [INT])
    ns = pa.array([1_754_787_723_001_111_000], pa.timestamp("ns"))
    assert encode_rows([ns], [TS6]).row(0) == row_bytes([dt.datetime(2025, 8, 10, 1, 2, 3, 1111)], [TS6])
    with pytest.raises(SchemaError, match="Column 0"):
        encode_rows([pa.array([2**40], pa.int64())], [INT])


def test_vectorised_empty_columns():
    rows = encode_rows([pa.array([], pa.string()), pa.array([], pa.int32())], [STRING, INT])
    assert len(rows) == 0
