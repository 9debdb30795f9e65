"""The Arrow mapping of Paimon types, both ways, including the Parquet variant with field ids."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyspark_paimon.errors import SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.types.arrow import (
    cast_array,
    from_arrow_schema,
    from_arrow_type,
    to_arrow_field,
    to_arrow_schema,
    to_arrow_type,
    to_parquet_arrow_schema,
    to_parquet_arrow_type,
)
from pyspark_paimon.metadata.types.json_codec import parse_type, type_to_json
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    VectorType,
    assign_field_ids,
    string_type,
)


@pytest.mark.parametrize(
    "text,arrow",
    [
        ("BOOLEAN", pa.bool_()),
        ("TINYINT", pa.int8()),
        ("SMALLINT", pa.int16()),
        ("INT", pa.int32()),
        ("BIGINT", pa.int64()),
        ("FLOAT", pa.float32()),
        ("DOUBLE", pa.float64()),
        ("DATE", pa.date32()),
        ("CHAR(3)", pa.string()),
        ("VARCHAR(10)", pa.string()),
        ("STRING", pa.string()),
        ("BINARY(4)", pa.binary()),
        ("VARBINARY(9)", pa.binary()),
        ("BYTES", pa.binary()),
        ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
        ("DECIMAL(38, 0)", pa.decimal128(38, 0)),
        ("TIMESTAMP(0)", pa.timestamp("us")),
        ("TIMESTAMP(3)", pa.timestamp("us")),
        ("TIMESTAMP(6)", pa.timestamp("us")),
        ("TIMESTAMP(9)", pa.timestamp("us")),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
    ],
)
def test_to_arrow_atomic(text: str, arrow: pa.DataType) -> None:
    assert to_arrow_type(parse_type(text)) == arrow


@pytest.mark.parametrize(
    "text,arrow",
    [
        ("TIMESTAMP(0)", pa.timestamp("ms")),
        ("TIMESTAMP(3)", pa.timestamp("ms")),
        ("TIMESTAMP(4)", pa.timestamp("us")),
        ("TIMESTAMP(6)", pa.timestamp("us")),
        ("TIMESTAMP(7)", pa.timestamp("ns")),
        ("TIMESTAMP(9)", pa.timestamp("ns")),
        ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
        ("TIMESTAMP(9) WITH LOCAL TIME ZONE", pa.timestamp("ns", tz="UTC")),
        ("INT", pa.int32()),
    ],
)
def test_to_parquet_arrow_timestamp_units(text: str, arrow: pa.DataType) -> None:
    assert to_parquet_arrow_type(parse_type(text)) == arrow


def test_to_arrow_nested() -> None:
    t = ArrayType(AtomicType("INT", False))
    at = to_arrow_type(t)
    assert pa.types.is_list(at) and at.value_field.nullable is False and at.value_type == pa.int32()
    m = to_arrow_type(MapType(string_type(False), ArrayType(AtomicType("BIGINT"))))
    assert pa.types.is_map(m) and m.key_type == pa.string() and m.item_field.nullable
    assert pa.types.is_list(m.item_type)
    r = RowType((DataField(1, "x", AtomicType("INT", False)), DataField(2, "y", string_type())))
    s = to_arrow_type(r)
    assert s == pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.string())])


def test_to_arrow_field_and_schema() -> None:
    fields = [
        DataField(0, "id", AtomicType("BIGINT", False)),
        DataField(1, "v", string_type()),
        DataField(2, "r", RowType((DataField(3, "x", AtomicType("INT")),))),
    ]
    schema = to_arrow_schema(fields)
    assert schema.field("id").nullable is False and schema.field("v").nullable is True
    assert schema.field("id").metadata is None
    f = to_arrow_field(fields[0], field_ids=True)
    assert f.metadata == {b"PARQUET:field_id": b"0"}
    ps = to_parquet_arrow_schema(fields)
    assert ps.field("r").metadata == {b"PARQUET:field_id": b"2"}
    assert ps.field("r").type.field("x").metadata == {b"PARQUET:field_id": b"3"}


@pytest.mark.parametrize(
    "t,needle",
    [
        (AtomicType("TIME"), "TIME\\(0\\)"),
        (AtomicType("BLOB"), "BLOB"),
        (AtomicType("GEOMETRY"), "GEOMETRY"),
        (MultisetType(AtomicType("INT")), "MULTISET"),
        (VectorType(AtomicType("FLOAT"), 3), "VECTOR"),
        (ArrayType(AtomicType("TIME")), "TIME"),
    ],
)
def test_to_arrow_unsupported_names_column(t: DataType, needle: str) -> None:
    with pytest.raises(UnsupportedTypeError, match=f"'col'.*{needle}"):
        to_arrow_type(t, "col")
    with pytest.raises(UnsupportedTypeError, match=f"'col'.*{needle}"):
        to_arrow_field(DataField(0, "col", t))


def test_unsupported_nested_member_names_path() -> None:
    r = RowType((DataField(1, "inner", AtomicType("BLOB")),))
    with pytest.raises(UnsupportedTypeError, match="'outer.inner'"):
        to_arrow_schema([DataField(0, "outer", r)])


@pytest.mark.parametrize(
    "arrow,expected",
    [
        (pa.bool_(), "BOOLEAN"),
        (pa.int8(), "TINYINT"),
        (pa.int16(), "SMALLINT"),
        (pa.int32(), "INT"),
        (pa.int64(), "BIGINT"),
        (pa.float32(), "FLOAT"),
        (pa.float64(), "DOUBLE"),
        (pa.string(), "STRING"),
        (pa.large_string(), "STRING"),
        (pa.binary(), "BYTES"),
        (pa.large_binary(), "BYTES"),
        (pa.binary(7), "BINARY(7)"),
        (pa.decimal128(10, 2), "DECIMAL(10, 2)"),
        (pa.date32(), "DATE"),
        (pa.date64(), "DATE"),
        (pa.timestamp("s"), "TIMESTAMP(0)"),
        (pa.timestamp("ms"), "TIMESTAMP(3)"),
        (pa.timestamp("us"), "TIMESTAMP(6)"),
        (pa.timestamp("ns"), "TIMESTAMP(9)"),
        (pa.timestamp("us", tz="UTC"), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        (pa.timestamp("ms", tz="Europe/Paris"), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
        (pa.time32("ms"), "TIME(3)"),
        (pa.dictionary(pa.int32(), pa.string()), "STRING"),
    ],
)
def test_from_arrow_atomic(arrow: pa.DataType, expected: str) -> None:
    assert type_to_json(from_arrow_type(arrow)) == expected
    assert type_to_json(from_arrow_type(arrow, nullable=False)) == expected + " NOT NULL"


def test_from_arrow_nested() -> None:
    t = from_arrow_type(pa.list_(pa.field("item", pa.int32(), nullable=False)))
    assert t == ArrayType(AtomicType("INT", False))
    assert from_arrow_type(pa.large_list(pa.string())) == ArrayType(string_type())
    m = from_arrow_type(pa.map_(pa.string(), pa.int64()))
    assert m == MapType(string_type(False), AtomicType("BIGINT"))
    s = from_arrow_type(pa.struct([pa.field("x", pa.int32(), False), ("y", pa.list_(pa.string()))]))
    assert isinstance(s, RowType) and s.field_names == ["x", "y"]
    assert s.fields[0].type == AtomicType("INT", False)
    cols = from_arrow_schema(pa.schema([pa.field("a", pa.int64(), False), ("s", pa.struct([("z", pa.int8())]))]))
    fields, highest = assign_field_ids(cols)
    assert [f.id for f in fields] == [0, 1] and fields[1].type.fields[0].id == 2 and highest == 2
    assert fields[0].type.nullable is False


@pytest.mark.parametrize("arrow", [pa.uint32(), pa.float16(), pa.null(), pa.decimal256(60, 2), pa.duration("us")])
def test_from_arrow_unsupported(arrow: pa.DataType) -> None:
    with pytest.raises(UnsupportedTypeError, match="'c'"):
        from_arrow_type(arrow, column="c")


def test_arrow_round_trip_of_spark_types() -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), False),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("d", pa.date32()),
            ("dec", pa.decimal128(12, 3)),
            ("ts", pa.timestamp("us")),
            ("ltz", pa.timestamp("us", tz="UTC")),
            ("l", pa.list_(pa.field("element", pa.int32()))),
            ("m", pa.map_(pa.string(), pa.float64())),
            ("r", pa.struct([("x", pa.int16()), ("y", pa.bool_())])),
        ]
    )
    fields, _ = assign_field_ids(from_arrow_schema(schema))
    assert to_arrow_schema(fields) == schema


def test_cast_array_keeps_an_array_of_the_type_and_raises_the_callers_error() -> None:
    ints = pa.array([1, 2], pa.int32())
    assert cast_array(ints, pa.int32(), SchemaError) is ints
    assert cast_array(ints, pa.int64(), SchemaError).to_pylist() == [1, 2]
    reasons: list[str] = []

    def error(reason: str) -> SchemaError:
        reasons.append(reason)
        return SchemaError(f"column n: {reason}")

    with pytest.raises(SchemaError, match="column n: ") as err:
        cast_array(pa.array([300], pa.int32()), pa.int8(), error)  # overflow: not safe
    assert isinstance(err.value.__cause__, pa.ArrowInvalid) and reasons == [str(err.value.__cause__)]
    assert cast_array(pa.array([300], pa.int32()), pa.int8(), error, safe=False).type == pa.int8()
    with pytest.raises(SchemaError, match="column n: "):
        cast_array(pa.array([[1]], pa.list_(pa.int32())), pa.int32(), error)  # no such conversion


def test_variant_is_the_struct_spark_exchanges() -> None:
    """VARIANT in Arrow is Spark's form (metadata tagged so pyspark sees a VariantType); in Parquet Java's plain
    layout (two required binaries with field ids 0 and 1); both read back as VARIANT, a ROW of nullable binaries
    named alike does not."""
    spark = to_arrow_type(AtomicType("VARIANT"))
    assert [(f.name, f.type, f.nullable) for f in spark] == [
        ("value", pa.binary(), False),
        ("metadata", pa.binary(), False),
    ]
    assert spark.field("metadata").metadata == {b"variant": b"true"}
    parquet = to_parquet_arrow_schema([DataField(4, "v", AtomicType("VARIANT"))]).field("v")
    assert [m.metadata for m in parquet.type] == [{b"PARQUET:field_id": b"0"}, {b"PARQUET:field_id": b"1"}]
    assert parquet.metadata == {b"PARQUET:field_id": b"4"}
    assert from_arrow_type(spark) == AtomicType("VARIANT")
    assert from_arrow_type(parquet.type, False) == AtomicType("VARIANT", False)
    pypaimon_form = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
    assert from_arrow_type(pypaimon_form) == AtomicType("VARIANT")
    row = from_arrow_type(pa.struct([("value", pa.binary()), ("metadata", pa.binary())]))
    assert isinstance(row, RowType)
