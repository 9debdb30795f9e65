"""``variant_get`` / ``try_variant_get``: a value at a path inside a VARIANT column, as a SQL type (Spark's functions).

The ``filter`` read option accepts ``variant_get(payload, '$.user.id', 'bigint') = 1001`` (and ``try_variant_get``):
such a condition is a leaf on a *derived* column named by its canonical text (:attr:`VariantGet.name`), computed in
executors from the VARIANT column just before the row filter (:meth:`VariantGet.evaluate`), never stored.

Paths are Spark's: ``$``, then ``.key`` or ``['key']`` for an object field and ``[n]`` for an array element. A
missing field, an index out of range or a VARIANT null gives NULL. The value is converted to the requested type as
Spark converts it where the rule is plain: a number to any numeric type that holds it exactly (or to FLOAT/DOUBLE,
nearest), booleans, dates and timestamps to their own types, anything to STRING (a string as itself, other values as
their JSON text). A value that does not convert (an object asked as INT, 300 asked as TINYINT) fails the read under
``variant_get`` and is NULL under ``try_variant_get``. Conversions Spark makes with rules of its own (a string parsed
as a number, a fraction truncated to an integer, a timestamp moved to another time zone) are refused with an error
rather than approximated: compare as STRING, or filter with Spark.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import re
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import SchemaError, VariantError
from pyspark_paimon.metadata.types.arrow import VARIANT_METADATA, VARIANT_VALUE, to_arrow_type
from pyspark_paimon.metadata.types.ddl import parse_ddl, to_spark_type_ddl
from pyspark_paimon.metadata.types.model import AtomicType, DataField, DataType, quote_ident, type_to_sql
from pyspark_paimon.metadata.variant.binary import (
    ARRAY,
    OBJECT,
    TIMESTAMP,
    TIMESTAMP_NANOS,
    Variant,
    VariantKind,
    scalar_text,
    to_json,
)

__all__ = ["FUNCTIONS", "VariantGet", "variant_get", "variant_gets"]

FUNCTIONS = ("variant_get", "try_variant_get")
_TARGETS = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "VARCHAR", "DATE", "TIMESTAMP",
     "TIMESTAMP_LTZ"}
)  # fmt: skip
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_NUMBERS = (VariantKind.INTEGER, VariantKind.DECIMAL, VariantKind.FLOAT, VariantKind.DOUBLE)
_SEGMENT = re.compile(r"\.([^.\[]+)|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]|\[(\d+)\]")
_NAME = re.compile(r"^(try_)?variant_get\(`((?:[^`]|``)*)`, '((?:[^']|'')*)', '((?:[^']|'')*)'\)$")


class _InvalidCastError(Exception):
    """A value that does not convert (variant_get fails, try_variant_get gives NULL)."""


@dataclass(frozen=True)
class VariantGet:
    """One extraction: ``column`` (a VARIANT column), ``path`` (Spark's text), ``target`` (the SQL type asked);
    ``fail_on_error``: ``variant_get`` (a value that does not convert fails) rather than ``try_variant_get``."""

    column: str
    path: str
    target: DataType
    fail_on_error: bool = True

    @property
    def name(self) -> str:
        """The derived column's name: the canonical call text (a filter leaf's column)."""
        function = "variant_get" if self.fail_on_error else "try_variant_get"
        path = self.path.replace("'", "''")
        type_text = to_spark_type_ddl(self.target).lower().replace("'", "''")
        return f"{function}({quote_ident(self.column)}, '{path}', '{type_text}')"

    @property
    def field(self) -> DataField:
        return DataField(-1, self.name, self.target.copy(nullable=True))

    def evaluate(self, column: pa.Array | pa.ChunkedArray) -> pa.Array:
        """The extracted values of a VARIANT ``column`` (plain values, as reads return them)."""
        arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        segments = _segments(self.path)
        values = pc.struct_field(arr, VARIANT_VALUE).to_pylist()
        metadata = pc.struct_field(arr, VARIANT_METADATA).to_pylist()
        out: list[Any] = [None] * len(arr)
        for i in np.flatnonzero(np.asarray(arr.is_valid(), dtype=bool)).tolist():
            v: Variant | None = Variant(values[i], metadata[i])
            for segment in segments:
                assert v is not None
                v = v.field(segment) if isinstance(segment, str) else v.element(segment)
                if v is None:
                    break
            if v is None or v.kind() == VariantKind.NULL:
                continue
            try:
                out[i] = self._convert(v)
            except _InvalidCastError as exc:
                if self.fail_on_error:
                    raise VariantError(
                        f"{self.name}: {exc}. Use try_variant_get for NULL instead, or ask for another type."
                    ) from None
        return pa.array(out, to_arrow_type(self.target, self.name))

    def _convert(self, v: Variant) -> Any:
        kind, root = v.kind(), self.target.root

        def shown() -> str:
            return f"the VARIANT {kind} {to_json(v.raw(), v.metadata)[:60]}"

        if root == "VARCHAR":
            if kind == VariantKind.STRING:
                return v.scalar()
            if v.basic_type in (OBJECT, ARRAY):
                return to_json(v.raw(), v.metadata)
            return scalar_text(v, quoted=False)
        if v.basic_type in (OBJECT, ARRAY):
            raise _InvalidCastError(f"{shown()} is not a {type_to_sql(self.target)}")
        if root == "BOOLEAN" and kind == VariantKind.BOOLEAN:
            return v.scalar()
        if root in _INT_BITS and kind in (VariantKind.INTEGER, VariantKind.DECIMAL):
            x = v.scalar()
            if x != int(x):
                raise self._unsupported(kind, "a number with a fraction (Spark truncates it)")
            bits = _INT_BITS[root]
            if not -(1 << (bits - 1)) <= int(x) < (1 << (bits - 1)):
                raise _InvalidCastError(f"{shown()} is out of the range of {root}")
            return int(x)
        if root in ("FLOAT", "DOUBLE") and kind in _NUMBERS:
            return float(v.scalar())
        if root == "DECIMAL" and kind in (VariantKind.INTEGER, VariantKind.DECIMAL):
            assert isinstance(self.target, AtomicType) and self.target.precision is not None
            scale = self.target.scale or 0
            d = decimal.Decimal(v.scalar())
            scaled = d.scaleb(scale)
            if scaled != scaled.to_integral_value():
                raise self._unsupported(kind, f"a number with more than {scale} decimals (Spark rounds it)")
            if len(str(abs(int(scaled)))) > self.target.precision:
                raise _InvalidCastError(f"{shown()} does not fit {type_to_sql(self.target)}")
            return decimal.Decimal(int(scaled)).scaleb(-scale)
        if root == "DATE" and kind == VariantKind.DATE:
            return v.scalar()
        if root == "TIMESTAMP" and kind == VariantKind.TIMESTAMP_NTZ:
            return _dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=v.raw_micros())
        if root == "TIMESTAMP_LTZ" and v.type_id in (TIMESTAMP, TIMESTAMP_NANOS):
            return _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=v.raw_micros())
        if kind in (VariantKind.STRING, VariantKind.BOOLEAN, *_NUMBERS, VariantKind.DATE, VariantKind.TIMESTAMP,
                    VariantKind.TIMESTAMP_NTZ):  # fmt: skip
            raise self._unsupported(kind, f"a {kind}")
        raise _InvalidCastError(f"{shown()} is not a {type_to_sql(self.target)}")

    def _unsupported(self, kind: str, what: str) -> VariantError:
        return VariantError(
            f"{self.name}: Spark converts {what} to {type_to_sql(self.target)} by rules pyspark-paimon does not "
            f"reproduce, so the filter cannot decide it. Ask for the value as 'string' (or as its own type: a "
            f"VARIANT {kind}), or filter with Spark."
        )


def _segments(path: str) -> list[str | int]:
    text = path.strip()
    if not text.startswith("$"):
        raise VariantError(f"VARIANT path {path!r} must start with '$' (e.g. '$.user.id', '$.items[0]')")
    out: list[str | int] = []
    pos = 1
    while pos < len(text):
        m = _SEGMENT.match(text, pos)
        if m is None:
            raise VariantError(
                f"VARIANT path {path!r} is not valid at position {pos}: use .key, ['key'] or [index] after '$'"
            )
        key, quoted, double, index = m.groups()
        if index is not None:
            out.append(int(index))
        else:
            raw = key if key is not None else quoted if quoted is not None else double
            out.append(re.sub(r"\\(.)", r"\1", raw) if key is None else raw)
        pos = m.end()
    return out


def variant_get(column: DataField, path: str, type_text: str, fail_on_error: bool = True) -> VariantGet:
    """The extraction ``variant_get(column, path, type_text)``, checked: ``column`` is a VARIANT column, the path
    parses, the type is one the filter can compare."""
    if column.type.root != "VARIANT":
        raise VariantError(f"{FUNCTIONS[0]} reads a VARIANT column; '{column.name}' is {type_to_sql(column.type)}")
    _segments(path)
    try:
        target = parse_ddl(f"x {type_text}")[0][1]
    except SchemaError as exc:
        raise VariantError(f"{FUNCTIONS[0]} type {type_text!r} is not a Spark SQL type ({exc})") from None
    if target.root not in _TARGETS or (isinstance(target, AtomicType) and target.root == "CHAR"):
        raise VariantError(
            f"{FUNCTIONS[0]} type {type_text!r} is not one the filter compares (boolean, tinyint..bigint, float, "
            "double, decimal(p,s), string, date, timestamp, timestamp_ntz)"
        )
    if target.root == "VARCHAR":
        target = AtomicType("VARCHAR", length=2147483647)
    return VariantGet(column.name, path.strip(), target.copy(nullable=True), fail_on_error)


def variant_gets(names: Iterable[str], fields: Iterable[DataField]) -> list[VariantGet]:
    """The extractions among ``names`` (a filter's columns; the others are ignored), parsed back from their
    canonical text against the table's ``fields``."""
    by_name = {f.name: f for f in fields}
    out = []
    for name in names:
        m = _NAME.match(name)
        if m is None:
            continue
        column = by_name.get(m.group(2).replace("``", "`"))
        if column is None:
            raise VariantError(f"{name} reads a column the table does not have")
        out.append(variant_get(column, m.group(3).replace("''", "'"), m.group(4).replace("''", "'"), not m.group(1)))
    return out
