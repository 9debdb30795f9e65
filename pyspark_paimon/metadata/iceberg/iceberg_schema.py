"""Paimon schemas as Iceberg sees them: types, field ids, the partition spec, and single values as bytes.

Iceberg readers find columns by field id, and Paimon's ids are already in every data file (``PARQUET:field_id``),
so an Iceberg schema is the Paimon schema spelled in Iceberg's JSON with the same ids. Nested element, key and
value ids follow Paimon's ``SpecialFields`` rule (what Java writes into the metadata). Partitions are identity
partitions on the partition columns, field ids from 1000 (Java's ``IcebergPartitionField``).

Bounds (manifest statistics, partition summaries) use Iceberg's binary single-value serialization
(little-endian numbers, UTF-8 strings, big-endian unscaled decimals, timestamps in microseconds).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import struct
from typing import Any, Sequence

from pyspark_paimon.errors import UnsupportedTypeError
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
)

__all__ = [
    "PARTITION_FIELD_ID_START",
    "NAME_MAPPING",
    "name_mapping",
    "iceberg_schema",
    "check_schema",
    "partition_spec",
    "partition_avro_type",
    "partition_avro_value",
    "single_value",
    "has_bounds",
]

#: Iceberg partition field ids start here (the Iceberg spec's examples; Java uses the same).
PARTITION_FIELD_ID_START = 1000
# Paimon's ``SpecialFields``: ids of array elements, map keys and map values, derived from the column id.
_STRUCTURED_BASE = (2**31 - 1) // 4
_DEPTH_LIMIT = 1 << 10
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_DATE = _dt.date(1970, 1, 1)

_PRIMITIVE = {
    "BOOLEAN": "boolean",
    "TINYINT": "int",
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "long",
    "FLOAT": "float",
    "DOUBLE": "double",
    "DATE": "date",
    "CHAR": "string",
    "VARCHAR": "string",
    "BINARY": "binary",
    "VARBINARY": "binary",
}


def _unsupported(t: DataType, column: str) -> UnsupportedTypeError:
    return UnsupportedTypeError(
        f"Column '{column}' has type {t}, which Paimon's Iceberg metadata cannot describe. Set "
        "'metadata.iceberg.storage' = 'disabled', or use a type Iceberg has (see docs/iceberg.md)."
    )


def _type_json(t: DataType, field_id: int, depth: int, column: str) -> Any:
    if isinstance(t, AtomicType):
        simple = _PRIMITIVE.get(t.name)
        if simple is not None:
            return simple
        if t.name == "DECIMAL":
            return f"decimal({t.precision}, {t.scale})"
        if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            precision = 6 if t.precision is None else t.precision
            if precision < 3:
                raise _unsupported(t, column)
            base = "timestamp" if t.name == "TIMESTAMP" else "timestamptz"
            return base + "_ns" if precision > 6 else base
        if t.name == "TIME" and (t.precision or 0) <= 3:
            return "time"
        raise _unsupported(t, column)
    if isinstance(t, ArrayType):
        return {
            "type": "list",
            "element-id": _STRUCTURED_BASE + field_id * _DEPTH_LIMIT + depth + 1,
            "element-required": not t.element.nullable,
            "element": _type_json(t.element, field_id, depth + 1, column),
        }
    if isinstance(t, (MapType, MultisetType)):
        key = t.key if isinstance(t, MapType) else t.element
        value_type: Any = _type_json(t.value, field_id, depth + 1, column) if isinstance(t, MapType) else "int"
        return {
            "type": "map",
            "key-id": _STRUCTURED_BASE - field_id * _DEPTH_LIMIT - (depth + 1),
            "key": _type_json(key, field_id, depth + 1, column),
            "value-id": _STRUCTURED_BASE + field_id * _DEPTH_LIMIT + depth + 1,
            "value-required": not t.value.nullable if isinstance(t, MapType) else True,
            "value": value_type,
        }
    if isinstance(t, RowType):
        return {"type": "struct", "fields": [_field_json(f, f"{column}.{f.name}") for f in t.fields]}
    raise _unsupported(t, column)


def _field_json(f: DataField, column: str) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "required": not f.type.nullable}
    out["type"] = _type_json(f.type, f.id, 0, column)
    if f.description is not None:
        out["doc"] = f.description
    return out


def iceberg_schema(schema: TableSchema) -> dict[str, Any]:
    """The Iceberg schema JSON of a Paimon schema (same schema id, same field ids)."""
    return {"type": "struct", "schema-id": schema.id, "fields": [_field_json(f, f.name) for f in schema.fields]}


#: Table property naming each field id's column names, which Iceberg readers use for data files that carry no
#: Parquet field ids (Paimon before 1.0 wrote none).
NAME_MAPPING = "schema.name-mapping.default"


def name_mapping(schemas: Sequence[dict[str, Any]]) -> str:
    """The name mapping of every field of ``schemas`` (Iceberg schema JSON), with every name a field id ever had
    (files keep the names they were written with)."""
    names: dict[int, list[str]] = {}
    nested: dict[int, list[dict[str, Any]]] = {}

    def walk(fields: Sequence[dict[str, Any]]) -> None:
        for f in fields:
            fid = int(f["id"])
            if f["name"] not in names.setdefault(fid, []):
                names[fid].append(f["name"])
            t = f.get("type")
            if isinstance(t, dict) and t.get("type") == "struct":
                nested.setdefault(fid, []).extend(t["fields"])
                walk(t["fields"])

    top: list[int] = []
    for schema in schemas:
        walk(schema.get("fields", ()))
        top.extend(int(f["id"]) for f in schema.get("fields", ()) if int(f["id"]) not in top)

    def entry(fid: int) -> dict[str, Any]:
        out: dict[str, Any] = {"field-id": fid, "names": names[fid]}
        children = list(dict.fromkeys(int(c["id"]) for c in nested.get(fid, ())))
        if children:
            out["fields"] = [entry(c) for c in children]
        return out

    return json.dumps([entry(fid) for fid in top])


def partition_spec(schema: TableSchema) -> dict[str, Any]:
    """Spec 0: an identity partition field per partition column (Paimon has no partition evolution)."""
    return {
        "spec-id": 0,
        "fields": [
            {"name": f.name, "transform": "identity", "source-id": f.id, "field-id": PARTITION_FIELD_ID_START + i}
            for i, f in enumerate(schema.partition_fields)
        ],
    }


def check_schema(schema: TableSchema) -> None:
    """Raise :class:`UnsupportedTypeError` naming the column when the schema has a type the Iceberg metadata
    cannot describe (checked before a commit, so such a table is refused instead of losing its Iceberg view)."""
    iceberg_schema(schema)
    for i, f in enumerate(schema.partition_fields):
        partition_avro_type(f, PARTITION_FIELD_ID_START + i)


def has_bounds(t: DataType) -> bool:
    """Whether Iceberg keeps lower/upper bounds for a column of this type (not for nested types)."""
    if not isinstance(t, AtomicType):
        return False
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return 3 <= (6 if t.precision is None else t.precision) <= 6
    return t.name in _PRIMITIVE or t.name == "DECIMAL"


def _micros(value: _dt.datetime) -> int:
    if value.tzinfo is not None:
        delta = value - _EPOCH_UTC
    else:
        delta = value - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def single_value(t: AtomicType, value: Any) -> bytes:
    """Iceberg's binary single-value serialization of ``value`` (a Python value of Paimon type ``t``, as
    ``binary_row.deserialize_row`` returns it)."""
    name = t.name
    if name == "BOOLEAN":
        return b"\x01" if value else b"\x00"
    if name in ("TINYINT", "SMALLINT", "INT"):
        return struct.pack("<i", value)
    if name == "DATE":
        return struct.pack("<i", (value - _EPOCH_DATE).days)
    if name == "BIGINT":
        return struct.pack("<q", value)
    if name == "FLOAT":
        return struct.pack("<f", value)
    if name == "DOUBLE":
        return struct.pack("<d", value)
    if name in ("CHAR", "VARCHAR"):
        return str(value).encode("utf-8")
    if name in ("BINARY", "VARBINARY"):
        return bytes(value)
    if name == "DECIMAL":
        unscaled = int(decimal.Decimal(value).scaleb(t.scale or 0))
        length = max(1, (unscaled.bit_length() + 8) // 8)
        return unscaled.to_bytes(length, "big", signed=True)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return struct.pack("<q", _micros(value))
    raise _unsupported(t, "partition or statistics")


def _decimal_fixed_size(precision: int) -> int:
    """Iceberg's ``TypeUtil.decimalRequiredBytes``: the fewest bytes holding any unscaled value of ``precision``."""
    size = 1
    while 2 ** (8 * size - 1) - 1 < 10**precision - 1:
        size += 1
    return size


def partition_avro_type(f: DataField, field_id: int) -> dict[str, Any]:
    """The Avro field of one partition column in a manifest's ``partition`` record (Iceberg's Avro mapping)."""
    t = f.type
    if not isinstance(t, AtomicType):
        raise _unsupported(t, f.name)
    name = t.name
    avro: Any
    if name == "BOOLEAN":
        avro = "boolean"
    elif name in ("TINYINT", "SMALLINT", "INT"):
        avro = "int"
    elif name == "DATE":
        avro = {"type": "int", "logicalType": "date"}
    elif name == "BIGINT":
        avro = "long"
    elif name == "FLOAT":
        avro = "float"
    elif name == "DOUBLE":
        avro = "double"
    elif name in ("CHAR", "VARCHAR"):
        avro = "string"
    elif name in ("BINARY", "VARBINARY"):
        avro = "bytes"
    elif name == "DECIMAL":
        precision = t.precision or 10
        avro = {
            "type": "fixed",
            "name": f"fixed_{field_id}",
            "size": _decimal_fixed_size(precision),
            "logicalType": "decimal",
            "precision": precision,
            "scale": t.scale or 0,
        }
    elif name in ("TIMESTAMP", "TIMESTAMP_LTZ") and has_bounds(t):
        avro = {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": name == "TIMESTAMP_LTZ"}
    else:
        raise _unsupported(t, f.name)
    return {"name": f.name, "type": ["null", avro], "default": None, "field-id": field_id}


def partition_avro_value(t: AtomicType, value: Any) -> Any:
    """A partition value as the Avro writer takes it for :func:`partition_avro_type`'s field."""
    if value is None:
        return None
    if t.name == "DECIMAL":
        return decimal.Decimal(value)
    if t.name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _micros(value)  # the raw long: fastavro's timestamp-micros encoder would shift naive values
    return value
