"""Paimon types to Spark types and back, following the Paimon Spark connector's mapping.

Paimon ``TIMESTAMP`` (no time zone) is Spark ``TIMESTAMP_NTZ``; Paimon ``TIMESTAMP_LTZ`` is Spark
``TIMESTAMP``. CHAR/VARCHAR read as Spark strings. Types Spark cannot hold raise an error naming the column.
"""

from __future__ import annotations

from typing import Sequence

from pyspark.sql import types as T

from pyspark_paimon.errors import UnsupportedTypeError
from pyspark_paimon.metadata.types.model import (
    STRING_LENGTH,
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    RowType,
)

_SIMPLE = {
    "BOOLEAN": T.BooleanType,
    "TINYINT": T.ByteType,
    "SMALLINT": T.ShortType,
    "INT": T.IntegerType,
    "BIGINT": T.LongType,
    "FLOAT": T.FloatType,
    "DOUBLE": T.DoubleType,
    "DATE": T.DateType,
    "CHAR": T.StringType,
    "VARCHAR": T.StringType,
    "BINARY": T.BinaryType,
    "VARBINARY": T.BinaryType,
    "TIMESTAMP": T.TimestampNTZType,
    "TIMESTAMP_LTZ": T.TimestampType,
    "VARIANT": T.VariantType,
}


def to_spark_type(t: DataType, column: str = "?") -> T.DataType:
    if isinstance(t, AtomicType):
        if t.root == "DECIMAL":
            assert t.precision is not None and t.scale is not None  # AtomicType fills DECIMAL's defaults
            return T.DecimalType(t.precision, t.scale)
        factory = _SIMPLE.get(t.root)
        if factory is None:
            raise UnsupportedTypeError(
                f"Column '{column}' has Paimon type {t}, which Spark cannot represent. Read the other columns by "
                "giving a schema without it: spark.read.schema('...').format('paimon')."
            )
        return factory()
    if isinstance(t, ArrayType):
        return T.ArrayType(to_spark_type(t.element, column), t.element.nullable)
    if isinstance(t, MapType):
        return T.MapType(to_spark_type(t.key, column), to_spark_type(t.value, column), t.value.nullable)
    if isinstance(t, RowType):
        return T.StructType([to_spark_field(f, f"{column}.{f.name}") for f in t.fields])
    raise UnsupportedTypeError(f"Column '{column}' has Paimon type {t}, which Spark cannot represent.")


def to_spark_field(f: DataField, column: str | None = None) -> T.StructField:
    meta = {"comment": f.description} if f.description else {}
    return T.StructField(f.name, to_spark_type(f.type, column or f.name), f.type.nullable, meta)


def to_spark_schema(fields: Sequence[DataField]) -> T.StructType:
    return T.StructType([to_spark_field(f) for f in fields])


def from_spark_type(t: T.DataType, nullable: bool = True, column: str = "?") -> DataType:
    """Spark type to the Paimon type a new table column gets."""
    simple = {
        T.BooleanType: "BOOLEAN",
        T.ByteType: "TINYINT",
        T.ShortType: "SMALLINT",
        T.IntegerType: "INT",
        T.LongType: "BIGINT",
        T.FloatType: "FLOAT",
        T.DoubleType: "DOUBLE",
        T.DateType: "DATE",
        T.VariantType: "VARIANT",
    }
    for cls, name in simple.items():
        if isinstance(t, cls):
            return AtomicType(name, nullable)
    if isinstance(t, (T.StringType, T.VarcharType, T.CharType)):
        return AtomicType("VARCHAR", nullable, length=STRING_LENGTH)
    if isinstance(t, T.BinaryType):
        return AtomicType("VARBINARY", nullable, length=STRING_LENGTH)
    if isinstance(t, T.DecimalType):
        return AtomicType("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if isinstance(t, T.TimestampNTZType):
        return AtomicType("TIMESTAMP", nullable, precision=6)
    if isinstance(t, T.TimestampType):
        return AtomicType("TIMESTAMP_LTZ", nullable, precision=6)
    if isinstance(t, T.ArrayType):
        return ArrayType(from_spark_type(t.elementType, t.containsNull, column), nullable)
    if isinstance(t, T.MapType):
        return MapType(
            from_spark_type(t.keyType, False, column),
            from_spark_type(t.valueType, t.valueContainsNull, column),
            nullable,
        )
    if isinstance(t, T.StructType):
        fields = tuple(
            DataField(-1, f.name, from_spark_type(f.dataType, f.nullable, f"{column}.{f.name}")) for f in t.fields
        )
        return RowType(fields, nullable)
    raise UnsupportedTypeError(
        f"Column '{column}' has Spark type {t.simpleString()}, which has no Paimon equivalent here."
    )
