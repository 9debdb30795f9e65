"""The Variant binary encoding (Parquet's ``VariantEncoding``, Java's ``GenericVariant``): reading and building values.

A VARIANT value is two byte strings: ``value`` (a self-describing tree of primitives, objects and arrays) and
``metadata`` (the dictionary of object keys the value's objects refer to by id). Plain VARIANT reads and writes
pass both through untouched; this module is what looks inside them: shredded files are rebuilt into plain values
and plain values split into shredded columns (``shredding.py``), ``variant_get`` filters walk paths (``path.py``),
and :func:`from_python` / :func:`parse_json` let Python code and tests build values.

The encoding, little-endian throughout:

* metadata: a header byte (version 1 in bits 0-3, "keys sorted" in bit 4, offset width - 1 in bits 6-7), the key
  count, key count + 1 offsets, then the UTF-8 keys;
* value: a header byte whose low 2 bits are the basic type: 0 primitive (the upper 6 bits its type id: null,
  booleans, int8..int64, double, decimal4/8/16 with a scale byte, date, timestamps, float, binary, string, uuid...),
  1 short string (the upper 6 bits its length), 2 object (key ids sorted by key, then value offsets, then the
  values), 3 array (offsets, then the elements).

A value's shape differs from row to row and Arrow has no kernel for it, so the functions here work on one value at
a time; they run only where a query or a table option asks to look inside values.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
import struct
import uuid as _uuid
from dataclasses import dataclass
from typing import Any, Iterator

from pyspark_paimon.errors import VariantError

__all__ = [
    "EMPTY_METADATA",
    "VariantBuilder",
    "Variant",
    "VariantKind",
    "from_python",
    "parse_json",
    "to_json",
    "to_python",
]

VERSION = 1
# basic types (the header's low 2 bits)
PRIMITIVE, SHORT_STR, OBJECT, ARRAY = 0, 1, 2, 3
# primitive type ids (the header's upper 6 bits when the basic type is PRIMITIVE)
NULL, TRUE, FALSE, INT1, INT2, INT4, INT8, DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
DECIMAL4, DECIMAL8, DECIMAL16, DATE, TIMESTAMP, TIMESTAMP_NTZ = 8, 9, 10, 11, 12, 13
FLOAT, BINARY, LONG_STR = 14, 15, 16
TIME, TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS, UUID = 17, 18, 19, 20
MAX_SHORT_STR = 63
_DECIMAL_LIMITS = ((DECIMAL4, 9, 4), (DECIMAL8, 18, 8), (DECIMAL16, 38, 16))  # type id, max precision, bytes
_FIXED_SIZES = {
    NULL: 0,
    TRUE: 0,
    FALSE: 0,
    INT1: 1,
    INT2: 2,
    INT4: 4,
    INT8: 8,
    DOUBLE: 8,
    DECIMAL4: 5,
    DECIMAL8: 9,
    DECIMAL16: 17,
    DATE: 4,
    TIMESTAMP: 8,
    TIMESTAMP_NTZ: 8,
    FLOAT: 4,
    TIME: 8,
    TIMESTAMP_NANOS: 8,
    TIMESTAMP_NTZ_NANOS: 8,
    UUID: 16,
}
_EPOCH = _dt.date(1970, 1, 1)
_EPOCH_DT = _dt.datetime(1970, 1, 1)
_UTC = _dt.timezone.utc

#: The metadata of a value without objects: version 1, no keys.
EMPTY_METADATA = bytes([VERSION, 0, 0])


class VariantKind:
    """What a value is, as :meth:`Variant.kind` names it (``type_name`` gives the primitive's own type)."""

    NULL = "null"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    DECIMAL = "decimal"
    FLOAT = "float"
    DOUBLE = "double"
    STRING = "string"
    BINARY = "binary"
    DATE = "date"
    TIMESTAMP = "timestamp"
    TIMESTAMP_NTZ = "timestamp_ntz"
    TIME = "time"
    UUID = "uuid"
    OBJECT = "object"
    ARRAY = "array"


_PRIMITIVE_KIND = {
    NULL: VariantKind.NULL,
    TRUE: VariantKind.BOOLEAN,
    FALSE: VariantKind.BOOLEAN,
    INT1: VariantKind.INTEGER,
    INT2: VariantKind.INTEGER,
    INT4: VariantKind.INTEGER,
    INT8: VariantKind.INTEGER,
    DOUBLE: VariantKind.DOUBLE,
    DECIMAL4: VariantKind.DECIMAL,
    DECIMAL8: VariantKind.DECIMAL,
    DECIMAL16: VariantKind.DECIMAL,
    DATE: VariantKind.DATE,
    TIMESTAMP: VariantKind.TIMESTAMP,
    TIMESTAMP_NTZ: VariantKind.TIMESTAMP_NTZ,
    FLOAT: VariantKind.FLOAT,
    BINARY: VariantKind.BINARY,
    LONG_STR: VariantKind.STRING,
    TIME: VariantKind.TIME,
    TIMESTAMP_NANOS: VariantKind.TIMESTAMP,
    TIMESTAMP_NTZ_NANOS: VariantKind.TIMESTAMP_NTZ,
    UUID: VariantKind.UUID,
}


def _malformed(why: str) -> VariantError:
    return VariantError(
        f"Malformed VARIANT value: {why}. The data file holds bytes that are not the Parquet Variant encoding; it was "
        "written by a faulty writer. Rewrite the value, or read the other columns."
    )


def _uint(data: bytes | memoryview, pos: int, size: int) -> int:
    if pos < 0 or pos + size > len(data):
        raise _malformed(f"a {size}-byte field at offset {pos} lies outside the {len(data)} bytes")
    return int.from_bytes(data[pos : pos + size], "little")


def _int_size(n: int) -> int:
    """Bytes an unsigned offset or id up to ``n`` needs (1, 2, 3 or 4)."""
    if n <= 0xFF:
        return 1
    if n <= 0xFFFF:
        return 2
    if n <= 0xFFFFFF:
        return 3
    return 4


# ------------------------------------------------------------------------------------------------------
# Metadata (the key dictionary)
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Metadata:
    keys: tuple[str, ...]

    @classmethod
    def parse(cls, data: bytes) -> "_Metadata":
        if not data:
            raise _malformed("empty metadata")
        header = data[0]
        if header & 0x0F != VERSION:
            raise _malformed(f"metadata version {header & 0x0F} (only version {VERSION} exists)")
        size = ((header >> 6) & 0x03) + 1
        count = _uint(data, 1, size)
        start = 1 + size + (count + 1) * size
        offsets = [_uint(data, 1 + size + i * size, size) for i in range(count + 1)]
        try:
            keys = tuple(bytes(data[start + offsets[i] : start + offsets[i + 1]]).decode("utf-8") for i in range(count))
        except UnicodeDecodeError as exc:
            raise _malformed(f"a metadata key is not UTF-8 ({exc})") from None
        if start + offsets[-1] > len(data):
            raise _malformed("the metadata keys run past its end")
        return cls(keys)

    def key(self, key_id: int) -> str:
        if not 0 <= key_id < len(self.keys):
            raise _malformed(f"key id {key_id} outside the dictionary of {len(self.keys)} keys")
        return self.keys[key_id]


_METADATA_CACHE: dict[bytes, _Metadata] = {}


def _metadata(data: bytes) -> _Metadata:
    """Parsed metadata; the values of one column mostly share a few dictionaries, so they are parsed once."""
    found = _METADATA_CACHE.get(data)
    if found is None:
        found = _Metadata.parse(data)
        if len(_METADATA_CACHE) > 4096:
            _METADATA_CACHE.clear()
        _METADATA_CACHE[data] = found
    return found


# ------------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------------
class Variant:
    """A view of one (sub)value of a VARIANT: ``value`` bytes from ``pos`` on, keys from ``metadata``."""

    __slots__ = ("value", "metadata", "pos", "_meta")

    def __init__(self, value: bytes, metadata: bytes, pos: int = 0, _meta: _Metadata | None = None):
        self.value = value
        self.metadata = metadata
        self.pos = pos
        self._meta = _meta if _meta is not None else _metadata(metadata)
        if pos >= len(value):
            raise _malformed(f"a value at offset {pos} of {len(value)} bytes")

    # -- shape ------------------------------------------------------------------------------------------
    @property
    def header(self) -> int:
        return self.value[self.pos]

    @property
    def basic_type(self) -> int:
        return self.header & 0x03

    @property
    def type_id(self) -> int:
        """The primitive type id (LONG_STR for both string forms); -1 for objects and arrays."""
        basic = self.basic_type
        if basic == PRIMITIVE:
            return self.header >> 2
        return LONG_STR if basic == SHORT_STR else -1

    def kind(self) -> str:
        basic = self.basic_type
        if basic == OBJECT:
            return VariantKind.OBJECT
        if basic == ARRAY:
            return VariantKind.ARRAY
        kind = _PRIMITIVE_KIND.get(self.type_id)
        if kind is None:
            raise _malformed(f"unknown primitive type id {self.type_id}")
        return kind

    def size(self) -> int:
        """Bytes this value takes in ``value``."""
        v, pos = self.value, self.pos
        basic, upper = self.basic_type, self.header >> 2
        if basic == SHORT_STR:
            return 1 + upper
        if basic == PRIMITIVE:
            if upper in (BINARY, LONG_STR):
                return 5 + _uint(v, pos + 1, 4)
            fixed = _FIXED_SIZES.get(upper)
            if fixed is None:
                raise _malformed(f"unknown primitive type id {upper}")
            return 1 + fixed
        count, _, offsets_at, offset_size, data_at = self._container()
        return data_at - pos + _uint(v, offsets_at + count * offset_size, offset_size)

    def _container(self) -> tuple[int, int, int, int, int]:
        """(element count, id size, offsets position, offset size, data position) of an object or array."""
        v, pos, upper = self.value, self.pos, self.header >> 2
        offset_size = (upper & 0x03) + 1
        if self.basic_type == OBJECT:
            id_size = ((upper >> 2) & 0x03) + 1
            large = (upper >> 4) & 0x01
        else:
            id_size = 0
            large = (upper >> 2) & 0x01
        count_size = 4 if large else 1
        count = _uint(v, pos + 1, count_size)
        ids_at = pos + 1 + count_size
        offsets_at = ids_at + count * id_size
        data_at = offsets_at + (count + 1) * offset_size
        return count, id_size, offsets_at, offset_size, data_at

    # -- objects and arrays -----------------------------------------------------------------------------
    def _child(self, at: int) -> "Variant":
        return Variant(self.value, self.metadata, at, self._meta)

    def fields(self) -> Iterator[tuple[str, "Variant"]]:
        """An object's fields in stored order (sorted by key)."""
        for _, key, child in self.entries():
            yield key, child

    def entries(self) -> Iterator[tuple[int, str, "Variant"]]:
        """An object's fields with their key ids in ``metadata`` (a shredding writer keeps those ids)."""
        if self.basic_type != OBJECT:
            raise VariantError(f"A VARIANT {self.kind()} has no fields")
        count, id_size, offsets_at, offset_size, data_at = self._container()
        ids_at = offsets_at - count * id_size
        for i in range(count):
            key_id = _uint(self.value, ids_at + i * id_size, id_size)
            child = self._child(data_at + _uint(self.value, offsets_at + i * offset_size, offset_size))
            yield key_id, self._meta.key(key_id), child

    def field(self, key: str) -> "Variant | None":
        """An object's field ``key`` (None when absent, or when this is not an object); binary search by key."""
        if self.basic_type != OBJECT:
            return None
        count, id_size, offsets_at, offset_size, data_at = self._container()
        ids_at = offsets_at - count * id_size
        lo, hi = 0, count - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            name = self._meta.key(_uint(self.value, ids_at + mid * id_size, id_size))
            if name == key:
                return self._child(data_at + _uint(self.value, offsets_at + mid * offset_size, offset_size))
            if name < key:
                lo = mid + 1
            else:
                hi = mid - 1
        return None

    def elements(self) -> Iterator["Variant"]:
        if self.basic_type != ARRAY:
            raise VariantError(f"A VARIANT {self.kind()} has no elements")
        count, _, offsets_at, offset_size, data_at = self._container()
        for i in range(count):
            yield self._child(data_at + _uint(self.value, offsets_at + i * offset_size, offset_size))

    def element(self, index: int) -> "Variant | None":
        """Element ``index`` of an array (None when out of range, or when this is not an array)."""
        if self.basic_type != ARRAY:
            return None
        count, _, offsets_at, offset_size, data_at = self._container()
        if not 0 <= index < count:
            return None
        return self._child(data_at + _uint(self.value, offsets_at + index * offset_size, offset_size))

    # -- primitives -------------------------------------------------------------------------------------
    def scalar(self) -> Any:
        """A primitive as a Python value: None, bool, int, Decimal, float, str, bytes, date, datetime (aware UTC for
        TIMESTAMP, naive for TIMESTAMP_NTZ; nanoseconds truncated to microseconds), time, UUID."""
        v, pos, basic = self.value, self.pos, self.basic_type
        if basic == SHORT_STR:
            return self._text(pos + 1, self.header >> 2)
        if basic != PRIMITIVE:
            raise VariantError(f"A VARIANT {self.kind()} is not a scalar")
        t = self.header >> 2
        body = pos + 1
        if t == NULL:
            return None
        if t in (TRUE, FALSE):
            return t == TRUE
        if t in (INT1, INT2, INT4, INT8):
            size = _FIXED_SIZES[t]
            return int.from_bytes(self._bytes(body, size), "little", signed=True)
        if t == DOUBLE:
            return struct.unpack("<d", self._bytes(body, 8))[0]
        if t == FLOAT:
            return struct.unpack("<f", self._bytes(body, 4))[0]
        if t in (DECIMAL4, DECIMAL8, DECIMAL16):
            size = _FIXED_SIZES[t] - 1
            scale = v[body] if body < len(v) else -1
            unscaled = int.from_bytes(self._bytes(body + 1, size), "little", signed=True)
            return decimal.Decimal(unscaled).scaleb(-scale)
        if t == DATE:
            return _EPOCH + _dt.timedelta(days=int.from_bytes(self._bytes(body, 4), "little", signed=True))
        if t in (TIMESTAMP, TIMESTAMP_NTZ, TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS):
            raw = int.from_bytes(self._bytes(body, 8), "little", signed=True)
            micros = raw // 1000 if t in (TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS) else raw
            naive = _EPOCH_DT + _dt.timedelta(microseconds=micros)
            return naive.replace(tzinfo=_UTC) if t in (TIMESTAMP, TIMESTAMP_NANOS) else naive
        if t == TIME:
            micros = int.from_bytes(self._bytes(body, 8), "little", signed=True)
            return (_EPOCH_DT + _dt.timedelta(microseconds=micros)).time()
        if t in (BINARY, LONG_STR):
            size = _uint(v, body, 4)
            return self._text(body + 4, size) if t == LONG_STR else self._bytes(body + 4, size)
        if t == UUID:
            return _uuid.UUID(bytes=self._bytes(body, 16))
        raise _malformed(f"unknown primitive type id {t}")

    def _bytes(self, at: int, size: int) -> bytes:
        if at + size > len(self.value):
            raise _malformed(f"{size} bytes at offset {at} run past the value's {len(self.value)} bytes")
        return bytes(self.value[at : at + size])

    def _text(self, at: int, size: int) -> str:
        try:
            return self._bytes(at, size).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _malformed(f"a string is not UTF-8 ({exc})") from None

    def decimal_parts(self) -> tuple[int, int]:
        """(unscaled, scale) of a decimal primitive."""
        body = self.pos + 1
        size = _FIXED_SIZES[self.type_id] - 1
        return int.from_bytes(self._bytes(body + 1, size), "little", signed=True), self.value[body]

    def raw_micros(self) -> int:
        """A date's days, or a timestamp's microseconds since the epoch (nanosecond types truncated)."""
        t = self.type_id
        if t == DATE:
            return int.from_bytes(self._bytes(self.pos + 1, 4), "little", signed=True)
        raw = int.from_bytes(self._bytes(self.pos + 1, 8), "little", signed=True)
        return raw // 1000 if t in (TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS) else raw

    def raw(self) -> bytes:
        """This value's own bytes (primitives are copied verbatim when a value is rebuilt)."""
        return self._bytes(self.pos, self.size())


def to_python(value: bytes, metadata: bytes) -> Any:
    """A whole value as Python: dicts (keys sorted), lists and :meth:`Variant.scalar` values."""
    return _to_python(Variant(value, metadata))


def _to_python(v: Variant) -> Any:
    basic = v.basic_type
    if basic == OBJECT:
        return {k: _to_python(child) for k, child in v.fields()}
    if basic == ARRAY:
        return [_to_python(child) for child in v.elements()]
    return v.scalar()


def to_json(value: bytes, metadata: bytes) -> str:
    """A value as JSON text, as Spark's ``to_json`` of a variant spells it: objects with their keys sorted, no
    spaces, dates, timestamps, binaries (base64) and UUIDs as strings."""
    out: list[str] = []
    _json(Variant(value, metadata), out)
    return "".join(out)


def _json(v: Variant, out: list[str]) -> None:
    basic = v.basic_type
    if basic == OBJECT:
        out.append("{")
        for i, (key, child) in enumerate(v.fields()):
            if i:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _json(child, out)
        out.append("}")
        return
    if basic == ARRAY:
        out.append("[")
        for i, child in enumerate(v.elements()):
            if i:
                out.append(",")
            _json(child, out)
        out.append("]")
        return
    out.append(scalar_text(v, quoted=True))


def scalar_text(v: Variant, quoted: bool) -> str:
    """A scalar as JSON text (``quoted``) or as the bare text Spark's cast of a variant to STRING gives."""
    t = v.type_id
    x = v.scalar()
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, decimal.Decimal):  # without trailing zeros, as Spark's getDecimal strips them
        return format(x.normalize() if x else decimal.Decimal(0), "f")
    if isinstance(x, float):
        return _float_text(x, t == FLOAT)
    if isinstance(x, str):
        return json.dumps(x, ensure_ascii=False) if quoted else x
    if isinstance(x, bytes):
        import base64  # noqa: PLC0415 - binaries inside variants are rare

        text = base64.b64encode(x).decode("ascii")
    elif isinstance(x, _dt.datetime):
        text = x.strftime("%Y-%m-%d %H:%M:%S") + (f".{x.microsecond:06d}".rstrip("0") if x.microsecond else "")
        if x.tzinfo is not None:
            text += "+00:00"
    else:
        text = str(x)
    return json.dumps(text) if quoted else text


def _float_text(x: float, single: bool) -> str:
    """Java's ``Double.toString`` / ``Float.toString`` spelling (what Spark prints): ``1.5``, ``1.0E10``, ``NaN``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    d = decimal.Decimal(_shortest_float32(x) if single else repr(x))
    if 1e-3 <= abs(x) < 1e7:
        text = format(d, "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)  # a finite float
    text = "".join(map(str, digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(digits) + exponent - 1}"


def _shortest_float32(x: float) -> str:
    """The shortest decimal text that reads back as the same float32."""
    target = struct.pack("<f", x)
    for digits in range(1, 10):
        text = f"{x:.{digits}g}"
        if struct.pack("<f", float(text)) == target:
            return text
    return repr(x)


# ------------------------------------------------------------------------------------------------------
# Building
# ------------------------------------------------------------------------------------------------------
class VariantBuilder:
    """Builds one value and its metadata: primitives are appended, objects and arrays finished over what was
    appended since their start (the shape Java's ``GenericVariantBuilder`` has, so values nest naturally)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._keys: dict[str, int] = {}

    @property
    def pos(self) -> int:
        return len(self._buf)

    def add_key(self, key: str) -> int:
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = len(self._keys)
        return found

    def append_null(self) -> None:
        self._buf.append(NULL << 2)

    def append_bool(self, b: bool) -> None:
        self._buf.append((TRUE if b else FALSE) << 2)

    def append_int(self, n: int) -> None:
        """An integer in the narrowest of int8..int64 that holds it (a larger one becomes a DECIMAL16)."""
        for t, size in ((INT1, 1), (INT2, 2), (INT4, 4), (INT8, 8)):
            if -(1 << (8 * size - 1)) <= n < (1 << (8 * size - 1)):
                self._buf.append(t << 2)
                self._buf += n.to_bytes(size, "little", signed=True)
                return
        self.append_decimal(decimal.Decimal(n))

    def append_sized_int(self, n: int, size: int) -> None:
        """An integer in exactly ``size`` bytes (a shredded TINYINT..BIGINT keeps its own width)."""
        t = {1: INT1, 2: INT2, 4: INT4, 8: INT8}[size]
        self._buf.append(t << 2)
        self._buf += n.to_bytes(size, "little", signed=True)

    def append_double(self, d: float) -> None:
        self._buf.append(DOUBLE << 2)
        self._buf += struct.pack("<d", d)

    def append_float(self, f: float) -> None:
        self._buf.append(FLOAT << 2)
        self._buf += struct.pack("<f", f)

    def append_decimal(self, d: decimal.Decimal) -> None:
        """A decimal in the narrowest of decimal4/8/16 its digits fit (up to 38 digits)."""
        sign, digits, exponent = d.as_tuple()
        if not isinstance(exponent, int):
            raise VariantError(f"A VARIANT cannot hold the decimal {d}")
        scale = max(0, -exponent)
        unscaled = int(d.scaleb(scale))
        precision = max(len(str(abs(unscaled))), scale, 1)
        self.append_decimal_parts(unscaled, scale, precision)
        del sign, digits

    def append_decimal_parts(self, unscaled: int, scale: int, precision: int) -> None:
        for t, max_precision, size in _DECIMAL_LIMITS:
            if precision <= max_precision and scale <= max_precision:
                self._buf.append(t << 2)
                self._buf.append(scale)
                self._buf += unscaled.to_bytes(size, "little", signed=True)
                return
        raise VariantError(f"A VARIANT decimal holds at most 38 digits; {unscaled}E-{scale} has {precision}")

    def append_string(self, s: str) -> None:
        data = s.encode("utf-8")
        if len(data) <= MAX_SHORT_STR:
            self._buf.append((len(data) << 2) | SHORT_STR)
        else:
            self._buf.append(LONG_STR << 2)
            self._buf += len(data).to_bytes(4, "little")
        self._buf += data

    def append_binary(self, b: bytes) -> None:
        self._buf.append(BINARY << 2)
        self._buf += len(b).to_bytes(4, "little")
        self._buf += b

    def append_date(self, days: int) -> None:
        self._buf.append(DATE << 2)
        self._buf += days.to_bytes(4, "little", signed=True)

    def append_timestamp(self, micros: int, ntz: bool) -> None:
        self._buf.append((TIMESTAMP_NTZ if ntz else TIMESTAMP) << 2)
        self._buf += micros.to_bytes(8, "little", signed=True)

    def append_uuid(self, u: _uuid.UUID) -> None:
        self._buf.append(UUID << 2)
        self._buf += u.bytes

    def append_raw(self, data: bytes) -> None:
        """A primitive's bytes, copied as they are."""
        self._buf += data

    def finish_object(self, start: int, fields: list[tuple[str, int, int]]) -> None:
        """Turn the values appended since ``start`` into an object; ``fields`` are (key, key id, offset of the
        value from ``start``), in any order. Duplicate keys are refused."""
        fields = sorted(fields, key=lambda f: f[0])
        for a, b in zip(fields, fields[1:]):
            if a[0] == b[0]:
                raise VariantError(f"A VARIANT object has the key '{a[0]}' twice")
        data = bytes(self._buf[start:])
        del self._buf[start:]
        count = len(fields)
        max_id = max((f[1] for f in fields), default=0)
        id_size, offset_size = _int_size(max_id), _int_size(len(data))
        large = count > 0xFF
        header = OBJECT | ((((1 if large else 0) << 4) | ((id_size - 1) << 2) | (offset_size - 1)) << 2)
        self._buf.append(header)
        self._buf += count.to_bytes(4 if large else 1, "little")
        for _, key_id, _ in fields:
            self._buf += key_id.to_bytes(id_size, "little")
        for _, _, offset in fields:
            self._buf += offset.to_bytes(offset_size, "little")
        self._buf += len(data).to_bytes(offset_size, "little")
        self._buf += data

    def finish_array(self, start: int, offsets: list[int]) -> None:
        """Turn the values appended since ``start`` into an array; ``offsets`` of each element from ``start``."""
        data = bytes(self._buf[start:])
        del self._buf[start:]
        count = len(offsets)
        offset_size = _int_size(len(data))
        large = count > 0xFF
        self._buf.append(ARRAY | ((((1 if large else 0) << 2) | (offset_size - 1)) << 2))
        self._buf += count.to_bytes(4 if large else 1, "little")
        for offset in offsets:
            self._buf += offset.to_bytes(offset_size, "little")
        self._buf += len(data).to_bytes(offset_size, "little")
        self._buf += data

    def append_variant(self, v: Variant) -> None:
        """A value read elsewhere, its keys re-numbered into this builder's dictionary (primitives verbatim)."""
        basic = v.basic_type
        if basic == OBJECT:
            start = self.pos
            fields = []
            for key, child in v.fields():
                fields.append((key, self.add_key(key), self.pos - start))
                self.append_variant(child)
            self.finish_object(start, fields)
        elif basic == ARRAY:
            start = self.pos
            offsets = []
            for child in v.elements():
                offsets.append(self.pos - start)
                self.append_variant(child)
            self.finish_array(start, offsets)
        else:
            self.append_raw(v.raw())

    def append_python(self, obj: Any) -> None:
        """A Python value: None, bool, int, float (DOUBLE), Decimal, str, bytes, date, datetime (aware:
        TIMESTAMP, naive: TIMESTAMP_NTZ), UUID, dicts with string keys, lists and tuples."""
        if obj is None:
            self.append_null()
        elif isinstance(obj, bool):
            self.append_bool(obj)
        elif isinstance(obj, int):
            self.append_int(obj)
        elif isinstance(obj, float):
            self.append_double(obj)
        elif isinstance(obj, decimal.Decimal):
            self.append_decimal(obj)
        elif isinstance(obj, str):
            self.append_string(obj)
        elif isinstance(obj, (bytes, bytearray)):
            self.append_binary(bytes(obj))
        elif isinstance(obj, _dt.datetime):
            if obj.tzinfo is None:
                self.append_timestamp(_micros(obj - _EPOCH_DT), ntz=True)
            else:
                self.append_timestamp(_micros(obj.astimezone(_UTC).replace(tzinfo=None) - _EPOCH_DT), ntz=False)
        elif isinstance(obj, _dt.date):
            self.append_date((obj - _EPOCH).days)
        elif isinstance(obj, _uuid.UUID):
            self.append_uuid(obj)
        elif isinstance(obj, dict):
            start = self.pos
            fields = []
            for key, item in obj.items():
                if not isinstance(key, str):
                    raise VariantError(f"A VARIANT object's keys are strings, got {key!r}")
                fields.append((key, self.add_key(key), self.pos - start))
                self.append_python(item)
            self.finish_object(start, fields)
        elif isinstance(obj, (list, tuple)):
            start = self.pos
            offsets = []
            for item in obj:
                offsets.append(self.pos - start)
                self.append_python(item)
            self.finish_array(start, offsets)
        else:
            raise VariantError(f"A VARIANT cannot hold a Python {type(obj).__name__} ({obj!r})")

    def metadata(self) -> bytes:
        """The dictionary of the keys added (in the order they were added, as Java writes it)."""
        keys = [k.encode("utf-8") for k in self._keys]
        total = sum(len(k) for k in keys)
        size = _int_size(max(total, len(keys)))
        out = bytearray([VERSION | ((size - 1) << 6)])
        out += len(keys).to_bytes(size, "little")
        offset = 0
        for k in keys:
            out += offset.to_bytes(size, "little")
            offset += len(k)
        out += offset.to_bytes(size, "little")
        for k in keys:
            out += k
        return bytes(out)

    def value(self) -> bytes:
        return bytes(self._buf)

    def result(self) -> tuple[bytes, bytes]:
        """(value, metadata)."""
        return self.value(), self.metadata()


def _micros(delta: _dt.timedelta) -> int:
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_python(obj: Any) -> tuple[bytes, bytes]:
    """(value, metadata) of a Python value (see :meth:`VariantBuilder.append_python`)."""
    builder = VariantBuilder()
    builder.append_python(obj)
    return builder.result()


def parse_json(text: str) -> tuple[bytes, bytes]:
    """(value, metadata) of JSON text, as Spark's ``parse_json`` encodes it: integers in the narrowest integer type
    (beyond 64 bits a decimal, beyond 38 digits a double), numbers with a fraction and no exponent as decimals when
    they have at most 38 digits, other numbers as doubles. A duplicate key is an error."""

    def number(token: str) -> Any:
        if "e" in token or "E" in token:
            return float(token)
        d = decimal.Decimal(token)
        digits = len(d.as_tuple().digits)
        if "." not in token:
            n = int(token)
            if -(1 << 63) <= n < (1 << 63) or digits <= 38:
                return n
            return float(token)
        if digits <= 38:
            return d
        return float(token)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, item in items:
            if key in out:
                raise VariantError(f"JSON object has the key '{key}' twice; a VARIANT object keeps one value per key")
            out[key] = item
        return out

    try:
        obj = json.loads(text, parse_int=number, parse_float=number, object_pairs_hook=pairs)
    except ValueError as exc:
        raise VariantError(f"Not valid JSON for a VARIANT: {exc}") from None
    return from_python(obj)
