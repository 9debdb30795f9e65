"""Shredded VARIANT columns (Parquet's ``VariantShredding``, Java's ``PaimonShreddingUtils``): reading and writing them.

A shredded VARIANT column keeps chosen paths of its values as typed Parquet columns beside the binary remainder::

    v: struct<metadata: binary, value: binary, typed_value: struct<age: struct<value: binary, typed_value: int32>, ...>>

Each level holds ``value`` (the Variant bytes of what was not shredded) and ``typed_value`` (an object's shredded
fields, an array's shredded elements or a scalar of the requested type); a value that does not fit the requested
type stays in ``value``, so shredding is lossless. Paimon writes it when the table option ``variant.shreddingSchema``
(legacy ``parquet.variant.shreddingSchema``) asks for it: a JSON ``ROW`` whose fields name VARIANT columns and give
the shape to shred (:func:`shredding_types`). A table mixes plain and shredded files; every reader rebuilds the plain
value (:func:`rebuild_column`), which is what Spark and ``t.scan()`` return. Writers here shred as Java does
(:func:`shred_column`: integers and decimals are shredded into any numeric type that holds them exactly, other
scalars only into their own type).

Rebuilding and shredding look into each value, one row at a time (see ``binary.py``); plain columns and rows whose
value was not shredded pass through untouched.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import OptionError, SchemaError, VariantError
from pyspark_paimon.metadata.schema.options import VARIANT_SHREDDING_SCHEMA
from pyspark_paimon.metadata.types.arrow import VARIANT_METADATA, VARIANT_VALUE, variant_arrow_type
from pyspark_paimon.metadata.types.json_codec import parse_type
from pyspark_paimon.metadata.types.model import ArrayType, AtomicType, DataField, DataType, RowType, type_to_sql
from pyspark_paimon.metadata.variant.binary import (
    ARRAY,
    BINARY,
    DATE,
    DECIMAL4,
    DECIMAL8,
    DECIMAL16,
    DOUBLE,
    FALSE,
    FLOAT,
    INT1,
    INT2,
    INT4,
    INT8,
    LONG_STR,
    OBJECT,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    TRUE,
    Variant,
    VariantBuilder,
)

__all__ = [
    "SHREDDING_SCHEMA_KEYS",
    "TYPED_VALUE",
    "is_shredded_arrow_type",
    "rebuild_column",
    "shred_column",
    "shredded_arrow_type",
    "shredding_types",
]

#: The option naming the shapes to shred, then its legacy spelling (Java reads both).
SHREDDING_SCHEMA_KEYS = (VARIANT_SHREDDING_SCHEMA.key, "parquet.variant.shreddingSchema")
TYPED_VALUE = "typed_value"
_FIELD_ID = b"PARQUET:field_id"
_SCALAR_ROOTS = frozenset(
    {
        "CHAR",
        "VARCHAR",
        "BOOLEAN",
        "BINARY",
        "VARBINARY",
        "DECIMAL",
        "TINYINT",
        "SMALLINT",
        "INT",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DATE",
        "TIMESTAMP",
        "TIMESTAMP_LTZ",
    }
)
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_EPOCH = _dt.date(1970, 1, 1)


# ------------------------------------------------------------------------------------------------------
# The option: which columns, which shapes
# ------------------------------------------------------------------------------------------------------
def shredding_types(options: Mapping[str, str], fields: Sequence[DataField]) -> dict[str, DataType]:
    """The shape to shred per VARIANT column, from ``variant.shreddingSchema`` (empty when the option is unset).

    Raises :class:`OptionError` naming the option when its JSON is not a ROW type, names a column that is not a
    VARIANT column of the table, or asks for a type Paimon cannot shred."""
    key = next((k for k in SHREDDING_SCHEMA_KEYS if (options.get(k) or "").strip()), None)
    if key is None:
        return {}
    text = options[key]

    def fail(why: str) -> OptionError:
        return OptionError(
            f"Option '{key}' = {text!r}: {why}. It must be a JSON ROW type whose fields name VARIANT columns, e.g. "
            '{"type":"ROW","fields":[{"name":"v","type":{"type":"ROW","fields":[{"name":"age","type":"INT"}]}}]}.'
        )

    try:
        requested = parse_type(json.loads(text))
    except (ValueError, SchemaError) as exc:
        raise fail(f"not a Paimon type ({exc})") from None
    if not isinstance(requested, RowType) or not requested.fields:
        raise fail("not a ROW type with fields")
    by_name = {f.name: f for f in fields}
    out: dict[str, DataType] = {}
    for f in requested.fields:
        column = by_name.get(f.name)
        if column is None or column.type.root != "VARIANT":
            variants = [c.name for c in fields if c.type.root == "VARIANT"]
            raise fail(f"'{f.name}' is not a VARIANT column of the table (VARIANT columns: {variants or 'none'})")
        problem = _unshreddable(f.type, f.name)
        if problem:
            raise fail(problem)
        out[f.name] = f.type
    return out


def _unshreddable(t: DataType, path: str) -> str | None:
    if isinstance(t, RowType):
        if not t.fields:
            return f"'{path}' is an empty ROW"
        names = [f.name for f in t.fields]
        if len(set(names)) != len(names):
            return f"'{path}' names a field twice"
        return next((p for f in t.fields if (p := _unshreddable(f.type, f"{path}.{f.name}"))), None)
    if isinstance(t, ArrayType):
        return _unshreddable(t.element, f"{path}[]")
    if isinstance(t, AtomicType) and (t.root in _SCALAR_ROOTS or t.root == "VARIANT"):
        return None
    return f"'{path}' asks for {type_to_sql(t)}, which Paimon does not shred"


# ------------------------------------------------------------------------------------------------------
# The physical layout
# ------------------------------------------------------------------------------------------------------
def _scalar_arrow(t: AtomicType) -> pa.DataType:
    root = t.root
    if root in ("CHAR", "VARCHAR"):
        return pa.string()
    if root in ("BINARY", "VARBINARY"):
        return pa.binary()
    if root == "DECIMAL":
        assert t.precision is not None and t.scale is not None
        return pa.decimal128(t.precision, t.scale)
    if root == "TIMESTAMP":
        return pa.timestamp("us")
    if root == "TIMESTAMP_LTZ":
        return pa.timestamp("us", tz="UTC")
    return {
        "BOOLEAN": pa.bool_(),
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
        "DATE": pa.date32(),
    }[root]


def _with_id(name: str, t: pa.DataType, nullable: bool, field_id: int) -> pa.Field:
    return pa.field(name, t, nullable, metadata={_FIELD_ID: str(field_id).encode()})


def _level(t: DataType, top: bool, object_field: bool) -> list[pa.Field]:
    """The fields of one shredded level, in Java's order (``metadata`` at the top, ``value``, ``typed_value``)."""
    out: list[pa.Field] = []
    if top:
        out.append(_with_id(VARIANT_METADATA, pa.binary(), False, 0))
    if isinstance(t, AtomicType) and t.root == "VARIANT":
        out.append(_with_id(VARIANT_VALUE, pa.binary(), object_field, len(out)))
        return out
    out.append(_with_id(VARIANT_VALUE, pa.binary(), True, len(out)))
    typed: pa.DataType
    if isinstance(t, RowType):
        typed = pa.struct(
            [_with_id(f.name, pa.struct(_level(f.type, False, True)), False, i) for i, f in enumerate(t.fields)]
        )
    elif isinstance(t, ArrayType):
        typed = pa.list_(pa.field("element", pa.struct(_level(t.element, False, False)), False))
    else:
        assert isinstance(t, AtomicType)
        typed = _scalar_arrow(t)
    out.append(_with_id(TYPED_VALUE, typed, True, len(out)))
    return out


def shredded_arrow_type(requested: DataType) -> pa.StructType:
    """The Parquet (Arrow) type of a VARIANT column shredded into ``requested``."""
    return pa.struct(_level(requested, True, False))


def is_shredded_arrow_type(t: pa.DataType) -> bool:
    """Whether a data file's VARIANT column is shredded (it has a ``typed_value``)."""
    return pa.types.is_struct(t) and t.get_field_index(TYPED_VALUE) >= 0


# ------------------------------------------------------------------------------------------------------
# Reading: rebuild plain values
# ------------------------------------------------------------------------------------------------------
_FILE = "a data file"


def _malformed(why: str, source: str = _FILE) -> VariantError:
    fix = (
        "The file was written by a faulty writer; rewrite the data, or read the other columns."
        if source == _FILE
        else "Write VARIANT values as Spark hands them (parse_json) or build them with pyspark_paimon.variant."
    )
    return VariantError(f"Malformed VARIANT column in {source}: {why}. {fix}")


def _child(arr: pa.Array, name: str) -> pa.Array | None:
    return pc.struct_field(arr, name) if arr.type.get_field_index(name) >= 0 else None


class _Level:
    """One shredded level of a column (``value`` and ``typed_value``), its columns as Python lists."""

    def __init__(self, arr: pa.Array):
        value = _child(arr, VARIANT_VALUE)
        self.value: list[bytes | None] | None = None if value is None else value.to_pylist()
        typed = _child(arr, TYPED_VALUE)
        self.typed_valid: np.ndarray | None = None
        self.fields: list[tuple[str, _Level]] = []
        self.names: frozenset[str] = frozenset()
        self.element: _Level | None = None
        self.offsets: np.ndarray | None = None
        self.scalar: list[Any] | None = None
        self.append_scalar: Callable[[VariantBuilder, Any], None] | None = None
        if typed is None:
            return
        self.typed_valid = np.asarray(typed.is_valid(), dtype=bool)
        tt = typed.type
        if pa.types.is_struct(tt):
            self.fields = [(tt.field(i).name, _Level(pc.struct_field(typed, i))) for i in range(tt.num_fields)]
            self.names = frozenset(name for name, _ in self.fields)
        elif pa.types.is_list(tt) or pa.types.is_large_list(tt):
            self.offsets = np.asarray(typed.offsets)
            self.element = _Level(typed.values)
        else:
            self.scalar, self.append_scalar = _scalar_reader(typed)

    def present(self, i: int) -> bool:
        return bool(
            (self.typed_valid is not None and self.typed_valid[i])
            or (self.value is not None and self.value[i] is not None)
        )

    def append(self, i: int, builder: VariantBuilder, metadata: bytes) -> None:
        if self.typed_valid is not None and self.typed_valid[i]:
            if self.scalar is not None and self.append_scalar is not None:
                self.append_scalar(builder, self.scalar[i])
            elif self.element is not None and self.offsets is not None:
                start, offsets = builder.pos, []
                for j in range(int(self.offsets[i]), int(self.offsets[i + 1])):
                    offsets.append(builder.pos - start)
                    self.element.append(j, builder, metadata)
                builder.finish_array(start, offsets)
            else:
                self._append_object(i, builder, metadata)
        elif self.value is not None and (raw := self.value[i]) is not None:
            builder.append_variant(Variant(raw, metadata))
        else:
            raise _malformed("a value that must be present has neither 'value' nor 'typed_value'")

    def _append_object(self, i: int, builder: VariantBuilder, metadata: bytes) -> None:
        start, entries = builder.pos, []
        for name, level in self.fields:
            if level.present(i):
                entries.append((name, builder.add_key(name), builder.pos - start))
                level.append(i, builder, metadata)
        raw = self.value[i] if self.value is not None else None
        if raw is not None:
            rest = Variant(raw, metadata)
            if rest.basic_type != OBJECT:
                raise _malformed("an object's unshredded 'value' is not an object")
            for key, child in rest.fields():
                if key in self.names:
                    raise _malformed(f"field '{key}' is both shredded and in the object's 'value'")
                entries.append((key, builder.add_key(key), builder.pos - start))
                builder.append_variant(child)
        builder.finish_object(start, entries)


def _scalar_reader(typed: pa.Array) -> tuple[list[Any], Callable[[VariantBuilder, Any], None]]:
    """The Python values of a shredded scalar column and how each goes back into a Variant (Java's ``rebuild``)."""
    t = typed.type
    if pa.types.is_boolean(t):
        return typed.to_pylist(), lambda b, x: b.append_bool(x)
    if pa.types.is_integer(t):
        return typed.to_pylist(), lambda b, x: b.append_int(x)
    if pa.types.is_float32(t):
        return typed.to_pylist(), lambda b, x: b.append_float(x)
    if pa.types.is_float64(t):
        return typed.to_pylist(), lambda b, x: b.append_double(x)
    if pa.types.is_decimal(t):
        return typed.to_pylist(), lambda b, x: b.append_decimal(x)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return typed.to_pylist(), lambda b, x: b.append_string(x)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return typed.to_pylist(), lambda b, x: b.append_binary(x)
    if pa.types.is_date32(t):
        return typed.cast(pa.int32()).to_pylist(), lambda b, x: b.append_date(x)
    if pa.types.is_timestamp(t):
        ntz = t.tz is None
        micros = typed.cast(pa.timestamp("us", tz=t.tz), safe=False).cast(pa.int64())
        return micros.to_pylist(), lambda b, x: b.append_timestamp(x, ntz)
    raise _malformed(f"a 'typed_value' of Arrow type {t}, which the Variant shredding spec does not define")


def rebuild_column(arr: pa.Array | pa.ChunkedArray, source: str = _FILE) -> pa.StructArray:
    """A VARIANT column (plain or shredded, as read from Parquet, or as a writer receives it) as plain values in the
    Arrow form Spark exchanges (:func:`~pyspark_paimon.metadata.types.arrow.variant_arrow_type`). The members of a
    NULL value are made empty (Spark hands them over as NULLs, which a NOT NULL Parquet member cannot store).
    ``source`` names where the column comes from in errors."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    target = variant_arrow_type()
    mask = pc.is_null(arr) if arr.null_count else None
    metadata = _child(arr, VARIANT_METADATA)
    value = _child(arr, VARIANT_VALUE)
    if metadata is None:
        raise _malformed(f"its struct {arr.type} has no 'metadata'", source)
    if not is_shredded_arrow_type(arr.type):
        if value is None:
            raise _malformed(f"its struct {arr.type} has neither 'value' nor 'typed_value'", source)
        values = [value, metadata]
    else:
        values = _rebuilt(arr, metadata)
    children = [c if c.type == pa.binary() else c.cast(pa.binary()) for c in values]
    if mask is not None:
        children = [pc.if_else(mask, pa.scalar(b"", pa.binary()), c) for c in children]
    if any(c.null_count for c in children):
        raise _malformed("a non-NULL value lacks its 'value' or 'metadata' bytes", source)
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _rebuilt(arr: pa.Array, metadata_arr: pa.Array) -> list[pa.Array]:
    level = _Level(arr)
    typed_valid = level.typed_valid
    assert typed_valid is not None
    valid = np.asarray(arr.is_valid(), dtype=bool)
    metadata = metadata_arr.to_pylist()
    out_value: list[bytes | None] = list(level.value) if level.value is not None else [None] * len(arr)
    out_meta: list[bytes | None] = list(metadata)
    for i in np.flatnonzero(valid & typed_valid).tolist():
        meta = metadata[i]
        if meta is None:
            raise _malformed("a non-NULL value without 'metadata'")
        builder = VariantBuilder()
        level.append(i, builder, meta)
        out_value[i], out_meta[i] = builder.result()
    return [pa.array(out_value, pa.binary()), pa.array(out_meta, pa.binary())]


# ------------------------------------------------------------------------------------------------------
# Writing: shred plain values
# ------------------------------------------------------------------------------------------------------
def shred_column(arr: pa.Array, requested: DataType) -> pa.StructArray:
    """Plain VARIANT values (``struct<value, metadata>``) shredded into ``requested``'s shape, in the type
    :func:`shredded_arrow_type` gives."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    valid = np.asarray(arr.is_valid(), dtype=bool)
    values = pc.struct_field(arr, VARIANT_VALUE).to_pylist()
    metadata = pc.struct_field(arr, VARIANT_METADATA).to_pylist()
    rows: list[dict[str, Any] | None] = [None] * len(arr)
    for i in np.flatnonzero(valid).tolist():
        row = _shred(Variant(values[i], metadata[i]), requested)
        row[VARIANT_METADATA] = metadata[i]
        rows[i] = row
    return pa.array(rows, type=shredded_arrow_type(requested))


def _shred(v: Variant, t: DataType) -> dict[str, Any]:
    """One level: ``{"value": bytes | None, "typed_value": ...}`` (Java's ``castShredded``)."""
    if isinstance(t, ArrayType) and v.basic_type == ARRAY:
        return {VARIANT_VALUE: None, TYPED_VALUE: [_shred(e, t.element) for e in v.elements()]}
    if isinstance(t, RowType) and v.basic_type == OBJECT:
        wanted = {f.name: f.type for f in t.fields}
        shredded: dict[str, dict[str, Any]] = {}
        rest = VariantBuilder()
        entries: list[tuple[str, int, int]] = []
        for key_id, key, child in v.entries():
            field_type = wanted.get(key)
            if field_type is not None:
                shredded[key] = _shred(child, field_type)
            else:  # kept in 'value' with the key ids of the row's own metadata
                entries.append((key, key_id, rest.pos))
                rest.append_raw(child.raw())
        typed = {name: shredded.get(name, {VARIANT_VALUE: None, TYPED_VALUE: None}) for name in wanted}
        remainder = None
        if entries:
            rest.finish_object(0, entries)
            remainder = rest.value()
        return {VARIANT_VALUE: remainder, TYPED_VALUE: typed}
    if isinstance(t, AtomicType) and t.root != "VARIANT":
        typed_value = _typed_scalar(v, t)
        if typed_value is not None:
            return {VARIANT_VALUE: None, TYPED_VALUE: typed_value}
    return {VARIANT_VALUE: v.raw(), TYPED_VALUE: None}


def _typed_scalar(v: Variant, t: AtomicType) -> Any:
    """The value as ``t`` when Java's writer would shred it so, else None (it stays in ``value``)."""
    tid, root = v.type_id, t.root
    if tid in (INT1, INT2, INT4, INT8):
        n = v.scalar()
        if root in _INT_BITS:
            bits = _INT_BITS[root]
            return n if -(1 << (bits - 1)) <= n < (1 << (bits - 1)) else None
        if root == "DECIMAL":
            return _fit_decimal(decimal.Decimal(n), t)
        return None
    if tid in (DECIMAL4, DECIMAL8, DECIMAL16):
        d = v.scalar()
        if root == "DECIMAL":
            return _fit_decimal(d, t)
        if root in _INT_BITS and d == d.to_integral_value():
            n, bits = int(d), _INT_BITS[root]
            return n if -(1 << (bits - 1)) <= n < (1 << (bits - 1)) else None
        return None
    same = {
        TRUE: ("BOOLEAN",),
        FALSE: ("BOOLEAN",),
        LONG_STR: ("VARCHAR", "CHAR"),
        DOUBLE: ("DOUBLE",),
        FLOAT: ("FLOAT",),
        BINARY: ("BINARY", "VARBINARY"),
        DATE: ("DATE",),
        TIMESTAMP: ("TIMESTAMP_LTZ",),
        TIMESTAMP_NTZ: ("TIMESTAMP",),
    }.get(tid, ())
    if root not in same:
        return None
    if tid in (TIMESTAMP, TIMESTAMP_NTZ):
        return v.raw_micros()
    if tid == DATE:
        return _EPOCH + _dt.timedelta(days=v.raw_micros())
    return v.scalar()


def _fit_decimal(d: decimal.Decimal, t: AtomicType) -> decimal.Decimal | None:
    """``d`` at ``t``'s scale when that is exact and fits its precision."""
    assert t.precision is not None and t.scale is not None
    scaled = d.scaleb(t.scale)
    if scaled != scaled.to_integral_value():
        return None
    unscaled = int(scaled)
    if len(str(abs(unscaled))) > t.precision:
        return None
    return decimal.Decimal(unscaled).scaleb(-t.scale)
