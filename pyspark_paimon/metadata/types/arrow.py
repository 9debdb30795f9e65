"""Paimon types to Arrow types and back: the in-memory form shared with Spark and Parquet.

Spark's Python Data Source exchanges Arrow batches and Parquet files are written through Arrow, so every
read and write maps the schema here: TIMESTAMP(p) is ``timestamp[us]`` (Spark TIMESTAMP_NTZ), TIMESTAMP_LTZ
``timestamp[us, tz=UTC]`` (Spark TIMESTAMP), CHAR/VARCHAR ``string``, DECIMAL ``decimal128``, VARIANT the struct of
its ``value`` and ``metadata`` binaries Spark exchanges (:func:`variant_arrow_type`). The Parquet
variants use the timestamp unit Java writes for the precision and carry the Paimon field ids as
``PARQUET:field_id``. Types Spark cannot hold raise :class:`UnsupportedTypeError` naming the column.
:func:`cast_array` is the one cast of Arrow values into such a type (schema evolution, aggregation results,
BinaryRow layouts): a value that does not convert raises the caller's :class:`PaimonError`, never Arrow's.
"""

from __future__ import annotations

from typing import Callable, Iterable

import pyarrow as pa

from pyspark_paimon.errors import PaimonError, UnsupportedTypeError
from pyspark_paimon.metadata.types.model import (
    MAX_DECIMAL_PRECISION,
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    RowType,
    bytes_type,
    string_type,
    unsupported_in_spark,
)

__all__ = [
    "ARROW_LIST_ELEMENT",
    "VARIANT_METADATA",
    "VARIANT_VALUE",
    "is_variant_arrow_type",
    "variant_arrow_type",
    "cast_array",
    "to_arrow_type",
    "to_arrow_field",
    "to_arrow_schema",
    "to_parquet_arrow_type",
    "to_parquet_arrow_field",
    "to_parquet_arrow_schema",
    "from_arrow_type",
    "from_arrow_field",
    "from_arrow_schema",
]


_ARROW_SIMPLE: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "DATE": pa.date32(),
    "CHAR": pa.string(),
    "VARCHAR": pa.string(),
    "BINARY": pa.binary(),
    "VARBINARY": pa.binary(),
}

# What a failed Arrow cast raises: a value that does not convert, or a conversion Arrow does not have.
_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def cast_array(
    arr: pa.Array, target: pa.DataType, error: Callable[[str], PaimonError], *, safe: bool = True
) -> pa.Array:
    """``arr`` as ``target`` (``arr`` itself when it already is). When a value does not convert (with ``safe``,
    an overflow or a lost digit does not convert either) or Arrow has no such conversion, ``error(reason)``
    (Arrow's explanation) builds the error to raise: the caller knows which column, file or function it was and
    what the fix is."""
    if arr.type == target:
        return arr
    try:
        return arr.cast(target, safe=safe)
    except _CAST_ERRORS as exc:
        raise error(str(exc)) from exc


#: Name of the list element field, as Spark and Parquet spell it.
ARROW_LIST_ELEMENT = "element"

#: The two binaries of a VARIANT value (the Parquet Variant encoding): the encoded value and its key dictionary.
VARIANT_VALUE = "value"
VARIANT_METADATA = "metadata"
# Spark tags the metadata member so that its Arrow struct reads back as a VariantType (pyspark's is_variant).
_SPARK_VARIANT_TAG = {b"variant": b"true"}


def variant_arrow_type(parquet: bool = False) -> pa.StructType:
    """A VARIANT in Arrow: ``struct<value: binary NOT NULL, metadata: binary NOT NULL>``, as Spark 4 hands it to a
    Python data source (metadata tagged ``variant: true``) and pypaimon returns it. The Parquet form is Java's plain
    layout (``ParquetSchemaConverter``): the same two required binaries with field ids 0 and 1."""
    if parquet:
        return pa.struct(
            [
                pa.field(VARIANT_VALUE, pa.binary(), False, metadata={b"PARQUET:field_id": b"0"}),
                pa.field(VARIANT_METADATA, pa.binary(), False, metadata={b"PARQUET:field_id": b"1"}),
            ]
        )
    return pa.struct(
        [
            pa.field(VARIANT_VALUE, pa.binary(), False),
            pa.field(VARIANT_METADATA, pa.binary(), False, metadata=_SPARK_VARIANT_TAG),
        ]
    )


def is_variant_arrow_type(t: pa.DataType) -> bool:
    """Whether an Arrow type is a VARIANT: a struct of exactly ``value`` and ``metadata`` binaries, either tagged
    as Spark tags it or with both members NOT NULL as pypaimon and Java's layout have them. (A ROW of two such
    nullable binaries stays a ROW.)"""
    if not pa.types.is_struct(t) or t.num_fields != 2:
        return False
    members = {t.field(i).name: t.field(i) for i in range(2)}
    if set(members) != {VARIANT_VALUE, VARIANT_METADATA}:
        return False
    if not all(pa.types.is_binary(m.type) or pa.types.is_large_binary(m.type) for m in members.values()):
        return False
    meta = members[VARIANT_METADATA].metadata or {}
    return meta.get(b"variant") == b"true" or not any(m.nullable for m in members.values())


def _timestamp_unit(precision: int, parquet: bool) -> str:
    if not parquet:
        return "us"  # Spark's TIMESTAMP/TIMESTAMP_NTZ are microseconds
    if precision <= 3:
        return "ms"
    return "us" if precision <= 6 else "ns"


def _to_arrow(t: DataType, column: str | None, parquet: bool, field_ids: bool) -> pa.DataType:
    if isinstance(t, AtomicType):
        simple = _ARROW_SIMPLE.get(t.name)
        if simple is not None:
            return simple
        if t.name == "DECIMAL":
            return pa.decimal128(t.precision, t.scale)
        if t.name == "TIMESTAMP":
            return pa.timestamp(_timestamp_unit(t.precision or 0, parquet))
        if t.name == "TIMESTAMP_LTZ":
            return pa.timestamp(_timestamp_unit(t.precision or 0, parquet), tz="UTC")
        if t.name == "VARIANT":
            return variant_arrow_type(parquet)
        raise unsupported_in_spark(t, column)
    if isinstance(t, ArrayType):
        elem = pa.field(ARROW_LIST_ELEMENT, _to_arrow(t.element, column, parquet, field_ids), t.element.nullable)
        return pa.list_(elem)
    if isinstance(t, MapType):
        key = pa.field("key", _to_arrow(t.key, column, parquet, field_ids), False)
        value = pa.field("value", _to_arrow(t.value, column, parquet, field_ids), t.value.nullable)
        return pa.map_(key, value)
    if isinstance(t, RowType):
        return pa.struct([_to_arrow_field(f, column, parquet, field_ids) for f in t.fields])
    raise unsupported_in_spark(t, column)


def _to_arrow_field(f: DataField, parent: str | None, parquet: bool, field_ids: bool) -> pa.Field:
    path = f"{parent}.{f.name}" if parent else f.name
    meta = {b"PARQUET:field_id": str(f.id).encode()} if field_ids else None
    return pa.field(f.name, _to_arrow(f.type, path, parquet, field_ids), f.type.nullable, metadata=meta)


def to_arrow_type(t: DataType, column: str | None = None) -> pa.DataType:
    """The Arrow type Spark exchanges for ``t`` (timestamps in microseconds, LTZ in UTC).

    ``column`` only improves the :class:`UnsupportedTypeError` message.
    """
    return _to_arrow(t, column, parquet=False, field_ids=False)


def to_arrow_field(f: DataField, field_ids: bool = False) -> pa.Field:
    """Arrow field with nullability taken from the Paimon type; optionally with Parquet field ids."""
    return _to_arrow_field(f, None, parquet=False, field_ids=field_ids)


def to_arrow_schema(fields: Iterable[DataField], field_ids: bool = False) -> pa.Schema:
    return pa.schema([to_arrow_field(f, field_ids) for f in fields])


def to_parquet_arrow_type(t: DataType, column: str | None = None) -> pa.DataType:
    """Like :func:`to_arrow_type`, but with the timestamp unit Java writes to Parquet for the precision
    (ms for p <= 3, us for p <= 6, ns above), so files carry the same logical types as Java's.

    DECIMAL stays ``decimal128`` here: its Parquet storage (INT32 / INT64 / FIXED_LEN_BYTE_ARRAY by precision,
    as Java writes it) is a setting of the Parquet writer (``engine.parquet_layout.PARQUET_LAYOUT``), not an
    Arrow type."""
    return _to_arrow(t, column, parquet=True, field_ids=False)


def to_parquet_arrow_field(f: DataField, field_ids: bool = True) -> pa.Field:
    return _to_arrow_field(f, None, parquet=True, field_ids=field_ids)


def to_parquet_arrow_schema(fields: Iterable[DataField], field_ids: bool = True) -> pa.Schema:
    """Arrow schema for writing a data file; ``PARQUET:field_id`` metadata carries the Paimon ids."""
    return pa.schema([to_parquet_arrow_field(f, field_ids) for f in fields])


_TIME_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow_type(pa_type: pa.DataType, nullable: bool = True, column: str | None = None) -> DataType:
    """The Paimon type for an Arrow type. ROW members get placeholder id -1: number them with
    :func:`assign_field_ids` before storing them in a schema."""
    t = pa_type
    where = f"column '{column}'" if column else "a column"
    if pa.types.is_dictionary(t):
        return from_arrow_type(t.value_type, nullable, column)
    if pa.types.is_boolean(t):
        return AtomicType("BOOLEAN", nullable)
    for check, name in (
        (pa.types.is_int8, "TINYINT"),
        (pa.types.is_int16, "SMALLINT"),
        (pa.types.is_int32, "INT"),
        (pa.types.is_int64, "BIGINT"),
        (pa.types.is_float32, "FLOAT"),
        (pa.types.is_float64, "DOUBLE"),
        (pa.types.is_date, "DATE"),
    ):
        if check(t):
            return AtomicType(name, nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", _no)(t):
        return string_type(nullable)
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return AtomicType("BINARY", nullable, length=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or getattr(pa.types, "is_binary_view", _no)(t):
        return bytes_type(nullable)
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise UnsupportedTypeError(
                f"Arrow type {t} of {where} exceeds Paimon's maximum DECIMAL precision {MAX_DECIMAL_PRECISION}"
            )
        return AtomicType("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if pa.types.is_timestamp(t):
        p = _TIME_UNIT_PRECISION[t.unit]
        return AtomicType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable, precision=p)
    if pa.types.is_time(t):
        return AtomicType("TIME", nullable, precision=_TIME_UNIT_PRECISION[t.unit])
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or getattr(pa.types, "is_list_view", _no)(t)
        or getattr(pa.types, "is_large_list_view", _no)(t)
    ):
        vf = t.value_field
        return ArrayType(from_arrow_type(vf.type, vf.nullable, column), nullable)
    if is_variant_arrow_type(t):
        return AtomicType("VARIANT", nullable)
    if pa.types.is_map(t):
        return MapType(
            from_arrow_type(t.key_field.type, False, column),
            from_arrow_type(t.item_field.type, t.item_field.nullable, column),
            nullable,
        )
    if pa.types.is_struct(t):
        members = [t.field(i) for i in range(t.num_fields)]
        return RowType(
            tuple(
                DataField(-1, m.name, from_arrow_type(m.type, m.nullable, f"{column}.{m.name}" if column else m.name))
                for m in members
            ),
            nullable,
        )
    raise UnsupportedTypeError(
        f"Arrow type {t} of {where} has no Paimon equivalent; cast it (e.g. unsigned to a wider signed "
        "integer, float16 to FLOAT) before writing"
    )


def _no(_t: pa.DataType) -> bool:
    return False


def from_arrow_field(f: pa.Field) -> DataType:
    return from_arrow_type(f.type, f.nullable, f.name)


def from_arrow_schema(schema: pa.Schema) -> list[tuple[str, DataType]]:
    """``(name, type)`` pairs for an Arrow schema, ready for :func:`assign_field_ids`."""
    return [(f.name, from_arrow_field(f)) for f in schema]
