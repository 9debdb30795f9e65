"""The schema-file type encoding (Java's `DataTypeJsonParser`): Java's type strings and JSON objects, read and written
back."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from type_strategies import type_strategy

from pyspark_paimon.errors import CorruptMetadataError, UnsupportedTypeError
from pyspark_paimon.metadata.types.json_codec import (
    field_from_json,
    field_to_json,
    fields_from_json,
    parse_type,
    type_to_json,
)
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MultisetType,
    assign_field_ids,
    max_field_id,
    string_type,
)

# Every atomic spelling Java writes (Java's `DataTypeJsonParser`).
JAVA_ATOMIC_STRINGS = [
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME(0)",
    "TIME(3)",
    "TIME(9)",
    "TIMESTAMP(0)",
    "TIMESTAMP(3)",
    "TIMESTAMP(6)",
    "TIMESTAMP(9)",
    "TIMESTAMP(0) WITH LOCAL TIME ZONE",
    "TIMESTAMP(3) WITH LOCAL TIME ZONE",
    "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    "TIMESTAMP(9) WITH LOCAL TIME ZONE",
    "DECIMAL(1, 0)",
    "DECIMAL(10, 0)",
    "DECIMAL(10, 2)",
    "DECIMAL(38, 18)",
    "DECIMAL(38, 38)",
    "CHAR(1)",
    "CHAR(255)",
    "VARCHAR(1)",
    "VARCHAR(100)",
    "STRING",
    "BINARY(1)",
    "BINARY(16)",
    "VARBINARY(20)",
    "BYTES",
    "VARIANT",
    "BLOB",
    "GEOMETRY",
    "GEOGRAPHY",
]


@pytest.mark.parametrize("text", JAVA_ATOMIC_STRINGS)
@pytest.mark.parametrize("suffix", ["", " NOT NULL"])
def test_java_atomic_strings_round_trip(text: str, suffix: str) -> None:
    t = parse_type(text + suffix)
    assert isinstance(t, AtomicType)
    assert t.nullable == (suffix == "")
    assert type_to_json(t) == text + suffix


@pytest.mark.parametrize(
    "text,expected",
    [
        ("INTEGER", "INT"),
        ("int", "INT"),
        ("Integer not null", "INT NOT NULL"),
        ("INT NULL", "INT"),
        ("NUMERIC(5,2)", "DECIMAL(5, 2)"),
        ("NUMERIC", "DECIMAL(10, 0)"),
        ("DEC(7)", "DECIMAL(7, 0)"),
        ("DECIMAL", "DECIMAL(10, 0)"),
        ("decimal( 20 ,3 )", "DECIMAL(20, 3)"),
        ("DOUBLE PRECISION", "DOUBLE"),
        ("double precision NOT NULL", "DOUBLE NOT NULL"),
        ("TIMESTAMP_LTZ(3)", "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
        ("TIMESTAMP_LTZ(6) NOT NULL", "TIMESTAMP(6) WITH LOCAL TIME ZONE NOT NULL"),
        ("TIMESTAMP_LTZ", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("TIMESTAMP WITH LOCAL TIME ZONE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("  timestamp ( 3 )  with local time zone not null ", "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL"),
        ("TIMESTAMP(3) WITHOUT TIME ZONE", "TIMESTAMP(3)"),
        ("TIMESTAMP", "TIMESTAMP(6)"),
        ("TIME", "TIME(0)"),
        ("TIME(3) WITHOUT TIME ZONE", "TIME(3)"),
        ("CHAR", "CHAR(1)"),
        ("VARCHAR", "VARCHAR(1)"),
        ("VARCHAR(2147483647)", "STRING"),
        ("VARBINARY(2147483647)", "BYTES"),
        ("string", "STRING"),
        ("bytes not null", "BYTES NOT NULL"),
        ("BINARY", "BINARY(1)"),
    ],
)
def test_accepted_variants(text: str, expected: str) -> None:
    assert type_to_json(parse_type(text)) == expected


def test_suffix_collection_forms() -> None:
    assert parse_type("INT ARRAY") == ArrayType(AtomicType("INT"))
    assert type_to_json(parse_type("INT ARRAY")) == {"type": "ARRAY", "element": "INT"}
    t = parse_type("INT NOT NULL ARRAY NOT NULL")
    assert t == ArrayType(AtomicType("INT", False), False)
    assert parse_type("STRING MULTISET") == MultisetType(string_type())
    assert parse_type("INT ARRAY ARRAY") == ArrayType(ArrayType(AtomicType("INT")))


@pytest.mark.parametrize(
    "text,exc,needle",
    [
        ("FOO", UnsupportedTypeError, "FOO"),
        ("INTERVAL", UnsupportedTypeError, "INTERVAL"),
        ("DECIMAL(39, 0)", CorruptMetadataError, "precision"),
        ("DECIMAL(5, 6)", CorruptMetadataError, "scale"),
        ("TIMESTAMP(10)", CorruptMetadataError, "precision"),
        ("VARCHAR(0)", CorruptMetadataError, "length"),
        ("INT NOT", CorruptMetadataError, "NULL"),
        ("INT garbage", CorruptMetadataError, "garbage"),
        ("ARRAY<INT>", CorruptMetadataError, "JSON object"),
        ("ROW<a INT>", CorruptMetadataError, "JSON object"),
        ("TIMESTAMP WITH TIME ZONE", CorruptMetadataError, "LOCAL"),
        ("DECIMAL(10", CorruptMetadataError, "'\\)'"),
        ("", CorruptMetadataError, "type name"),
        ("INT $", CorruptMetadataError, "'\\$'"),
    ],
)
def test_bad_type_strings(text: str, exc: type, needle: str) -> None:
    with pytest.raises(exc, match=needle):
        parse_type(text)


@pytest.mark.parametrize(
    "value",
    [
        123,
        None,
        [],
        {"type": "FOO"},
        {"type": "ARRAY"},
        {"type": "MAP", "key": "INT"},
        {"type": "ROW"},
        {"type": "ROW", "fields": "x"},
        {"type": "VECTOR", "element": "FLOAT", "length": "3"},
        {"element": "INT"},
    ],
)
def test_bad_type_json(value: object) -> None:
    with pytest.raises(CorruptMetadataError):
        parse_type(value)


NESTED_JSON = [
    {"type": "ARRAY", "element": "INT"},
    {"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"},
    {"type": "MULTISET", "element": "DECIMAL(10, 2)"},
    {"type": "MAP", "key": "STRING NOT NULL", "value": {"type": "ARRAY", "element": "BIGINT"}},
    {"type": "MAP NOT NULL", "key": "INT", "value": "TIMESTAMP(3) WITH LOCAL TIME ZONE"},
    {"type": "VECTOR", "element": "FLOAT", "length": 3},
    {
        "type": "ROW",
        "fields": [
            {"id": 13, "name": "a", "type": "INT"},
            {
                "id": 14,
                "name": "b",
                "type": {
                    "type": "ROW NOT NULL",
                    "fields": [{"id": 15, "name": "c", "type": "STRING", "description": "inner"}],
                },
            },
        ],
    },
    {"type": "ROW NOT NULL", "fields": []},
]


@pytest.mark.parametrize("value", NESTED_JSON)
def test_nested_json_round_trip(value: dict) -> None:
    t = parse_type(value)
    assert type_to_json(t) == value
    # and it survives a trip through JSON text
    assert type_to_json(parse_type(json.loads(json.dumps(value)))) == value


def test_pypaimon_nullable_member() -> None:
    # pypaimon writes "nullable"; Java ignores it. We honour false when the type string says nothing.
    assert parse_type({"type": "ARRAY", "element": "INT", "nullable": True}) == ArrayType(AtomicType("INT"))
    assert parse_type({"type": "ARRAY", "element": "INT", "nullable": False}).nullable is False
    assert parse_type({"type": "ARRAY NOT NULL", "element": "INT", "nullable": True}).nullable is False
    t = parse_type({"type": "ROW", "fields": [{"id": 1, "name": "x", "type": "INT"}], "nullable": True})
    assert type_to_json(t) == {"type": "ROW", "fields": [{"id": 1, "name": "x", "type": "INT"}]}
    assert parse_type({"type": "map", "key": "INT NOT NULL", "value": "INT"}).root == "MAP"


def test_field_json_round_trip() -> None:
    f = DataField(4, "extra", AtomicType("INT"), "added col")
    assert field_to_json(f) == {"id": 4, "name": "extra", "type": "INT", "description": "added col"}
    assert field_from_json(field_to_json(f)) == f
    g = DataField(5, "d", AtomicType("INT", False), None, "42")
    assert field_to_json(g) == {"id": 5, "name": "d", "type": "INT NOT NULL", "defaultValue": "42"}
    assert field_from_json(field_to_json(g)) == g
    # key order is Java's: id, name, type, description
    assert list(field_to_json(f)) == ["id", "name", "type", "description"]


def test_field_json_errors_name_the_column() -> None:
    with pytest.raises(UnsupportedTypeError, match="col_x.*FOO"):
        field_from_json({"id": 0, "name": "col_x", "type": "FOO"})
    with pytest.raises(CorruptMetadataError, match="col_y"):
        field_from_json({"id": 0, "name": "col_y", "type": "DECIMAL(99, 1)"})
    with pytest.raises(CorruptMetadataError):
        field_from_json({"id": 0, "type": "INT"})
    with pytest.raises(CorruptMetadataError):
        field_from_json({"id": "0", "name": "a", "type": "INT"})


def test_missing_field_ids_are_assigned_sequentially() -> None:
    fields = fields_from_json(
        [
            {"name": "a", "type": "INT"},
            {
                "name": "r",
                "type": {"type": "ROW", "fields": [{"name": "x", "type": "INT"}, {"name": "y", "type": "INT"}]},
            },
            {"name": "b", "type": "STRING"},
        ]
    )
    assert [f.id for f in fields] == [0, 1, 4]
    assert [f.id for f in fields[1].type.fields] == [2, 3]


def test_missing_ids_all_or_none() -> None:
    with pytest.raises(CorruptMetadataError, match="all fields or none"):
        fields_from_json([{"id": 0, "name": "a", "type": "INT"}, {"name": "b", "type": "INT"}])


# ---------------------------------------------------------------------------------------------
# Property-based: any type survives JSON text
# ---------------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(st.lists(type_strategy(spark_only=False), min_size=1, max_size=4))
def test_property_json_round_trip(types: list[DataType]) -> None:
    fields, highest = assign_field_ids([(f"c{i}", t) for i, t in enumerate(types)])
    text = json.dumps([field_to_json(f) for f in fields])
    back = fields_from_json(json.loads(text))
    assert back == fields
    assert max_field_id(back) == highest
