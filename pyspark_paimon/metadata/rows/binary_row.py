"""Java ``BinaryRow`` encoding — scalar and vectorised.

Paimon stores partitions, primary-key bounds and column statistics as Java ``BinaryRow`` bytes, compares
partitions by those bytes and hashes bucket keys over them (Java's `DefaultBucketFunction`). A single byte of difference
therefore means a different partition or bucket than Java's, so this module reproduces Java's layout exactly,
including the quirk that a NULL non-compact DECIMAL/TIMESTAMP still reserves its variable-part space
(Java's `BinaryRowWriter`), which pypaimon does not do.

Layout recap (all numbers little-endian)::

    [ header byte (RowKind) + null bits, W bytes ][ 8-byte slot per field ][ variable part ]

Two entry points:

* :func:`row_bytes` / :func:`serialize_row` / :func:`deserialize_row` work on one row of Python values
  (metadata paths: one partition, one min/max key, one stats row).
* :func:`encode_rows` builds the rows of whole Arrow columns at once with numpy, for the data path
  (bucket hashing of every written row) where a per-row Python loop is not acceptable.

Types are duck-typed: only ``t.name`` (Paimon root name, upper case), ``t.precision`` and ``t.scale`` are
read, so any object with those attributes (e.g. ``types.AtomicType``) works.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import CorruptMetadataError, SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.types.arrow import cast_array

__all__ = [
    "EMPTY_ROW",
    "EncodedRows",
    "deserialize_row",
    "encode_rows",
    "null_bits_size",
    "read_row_bytes",
    "row_bytes",
    "serialize_row",
    "type_name",
]

DataType = Any  # duck-typed: anything with .name / .precision / .scale

# Java defaults used when a type object leaves precision/scale unset (Java's `DecimalType`, `TimestampType`).
_DEFAULT_TIMESTAMP_PRECISION = 6
_DEFAULT_DECIMAL_PRECISION = 10
_MAX_COMPACT_DECIMAL_PRECISION = 18  # unscaled value fits a Java long
_MAX_COMPACT_TIMESTAMP_PRECISION = 3  # millisecond precision fits a Java long
_MAX_INLINE_BYTES = 7  # strings/binaries up to 7 bytes live inside the 8-byte slot
_DECIMAL_VAR_BYTES = 16  # Java always reserves 16 bytes for a non-compact decimal
_TIMESTAMP_VAR_BYTES = 8  # epoch millis of a non-compact timestamp
_ALL_ONES = 0xFFFF_FFFF_FFFF_FFFF

# Aliases a type object might carry instead of the Paimon root name.
_NAME_ALIASES = {
    "STRING": "VARCHAR",
    "BYTES": "VARBINARY",
    "INTEGER": "INT",
    "TIMESTAMP WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
}
_NESTED = {"ARRAY", "MAP", "MULTISET", "ROW", "VECTOR", "VARIANT", "BLOB"}
_STRING_TYPES = {"CHAR", "VARCHAR"}
_BINARY_TYPES = {"BINARY", "VARBINARY"}
_INT_FORMATS = {"TINYINT": "<b", "SMALLINT": "<h", "INT": "<i", "BIGINT": "<q"}
_SUPPORTED = (
    {"BOOLEAN", "FLOAT", "DOUBLE", "DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ", "DECIMAL"}
    | set(_INT_FORMATS)
    | _STRING_TYPES
    | _BINARY_TYPES
)

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_WIDE_CONTEXT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)


# ----------------------------------------------------------------------------------------------------------
# Type helpers
# ----------------------------------------------------------------------------------------------------------


def type_name(t: DataType) -> str:
    """The Paimon root name of ``t`` (``'INT'``, ``'VARCHAR'``, ...), normalising common aliases.

    Raises :class:`UnsupportedTypeError` for types that cannot be BinaryRow partition/key/stats values
    here (nested types, VARIANT, BLOB): they never occur in partitions or keys, and their stats are NULL.
    """
    name = getattr(t, "name", None)
    if not isinstance(name, str):
        shown = _describe_type(t)
        raise UnsupportedTypeError(
            f"Type {shown} cannot be encoded in a BinaryRow partition/key/stats row: only atomic types are "
            "supported (nested types never occur in partitions or bucket keys); remove it from the key."
        )
    upper = name.strip().upper()
    upper = _NAME_ALIASES.get(upper, upper)
    if upper in _NESTED or upper not in _SUPPORTED:
        raise UnsupportedTypeError(
            f"Type {upper} cannot be encoded in a BinaryRow partition/key/stats row; supported types are "
            f"{', '.join(sorted(_SUPPORTED))}."
        )
    return upper


def _describe_type(t: DataType) -> str:
    """Readable name of a type object for error messages (``ARRAY<INT>``, else the class name)."""
    try:
        text = str(t)
    except Exception:  # noqa: BLE001 - a broken __str__ must not hide the real error
        text = ""
    return text if text and len(text) <= 80 and not text.startswith("<") else type(t).__name__


def _timestamp_precision(t: DataType) -> int:
    p = getattr(t, "precision", None)
    return _DEFAULT_TIMESTAMP_PRECISION if p is None else int(p)


def _decimal_precision_scale(t: DataType) -> tuple[int, int]:
    p = getattr(t, "precision", None)
    s = getattr(t, "scale", None)
    return (_DEFAULT_DECIMAL_PRECISION if p is None else int(p), 0 if s is None else int(s))


def _is_compact(name: str, t: DataType) -> bool:
    """Whether a value of this type lives entirely in its 8-byte slot (Java ``isCompact``)."""
    if name == "DECIMAL":
        return _decimal_precision_scale(t)[0] <= _MAX_COMPACT_DECIMAL_PRECISION
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_precision(t) <= _MAX_COMPACT_TIMESTAMP_PRECISION
    return True


def null_bits_size(arity: int) -> int:
    """Bytes of the header + null bit set: 8 for arity <= 56, 16 for <= 120, ... (Java's `BinaryRow`)."""
    return ((arity + 63 + 8) // 64) * 8


def _pad8(n: int) -> int:
    return (n + 7) & ~7


# ----------------------------------------------------------------------------------------------------------
# Scalar value conversions (Python value -> Java internal representation)
# ----------------------------------------------------------------------------------------------------------


def _days(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        value = value.date()
    if isinstance(value, _dt.date):
        return (value - _EPOCH_DATE).days
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"expected datetime.date or int days, got {type(value).__name__}")


def _millis_of_day(value: Any) -> int:
    if isinstance(value, _dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"expected datetime.time or int milliseconds of day, got {type(value).__name__}")


def _epoch_millis_and_nanos(value: Any) -> tuple[int, int]:
    """(epoch millis, nano of millisecond) like Java ``Timestamp``.

    A naive datetime is wall-clock time read as UTC (how Java stores TIMESTAMP); an aware one is converted
    to its UTC instant (how Java stores TIMESTAMP_LTZ). ``pandas.Timestamp``'s extra nanoseconds are kept.
    """
    if not isinstance(value, _dt.datetime):
        raise TypeError(f"expected datetime.datetime, got {type(value).__name__}")
    aware = value if value.tzinfo is not None else value.replace(tzinfo=_dt.timezone.utc)
    delta = aware - _EPOCH_UTC
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    millis, micro_of_milli = divmod(micros, 1000)  # floor semantics, like Java for pre-1970 instants
    extra_nanos = int(getattr(value, "nanosecond", 0) or 0)
    return millis, micro_of_milli * 1000 + extra_nanos


def _unscaled_decimal(value: Any, precision: int, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (HALF_UP, like Java ``Decimal.fromBigDecimal``)."""
    if isinstance(value, float):
        value = decimal.Decimal(repr(value))
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = decimal.Decimal(int(value))
    if not isinstance(value, decimal.Decimal):
        raise TypeError(f"expected decimal.Decimal, got {type(value).__name__}")
    if not value.is_finite():
        raise ValueError(f"{value} is not a finite decimal")
    quantized = value.quantize(decimal.Decimal(1).scaleb(-scale), context=_WIDE_CONTEXT)
    sign, digits, _ = quantized.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    if len(str(unscaled)) > precision:
        raise ValueError(f"{value} does not fit DECIMAL({precision}, {scale})")
    return -unscaled if sign else unscaled


def _to_bytes(name: str, value: Any) -> bytes:
    if name in _STRING_TYPES:
        if not isinstance(value, str):
            raise TypeError(f"expected str, got {type(value).__name__}")
        return value.encode("utf-8")
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return bytes(value)


def _java_big_integer_bytes(value: int) -> bytes:
    """Minimal big-endian two's-complement bytes, like Java ``BigInteger.toByteArray``."""
    bits = (value if value >= 0 else ~value).bit_length()  # Java bitLength(): excludes the sign bit
    length = bits // 8 + 1
    return value.to_bytes(length, "big", signed=True)


# ----------------------------------------------------------------------------------------------------------
# Scalar encoding
# ----------------------------------------------------------------------------------------------------------


class _RowWriter:
    """Accumulates one BinaryRow: fixed part in place, variable part appended (Java ``BinaryRowWriter``)."""

    def __init__(self, arity: int) -> None:
        self.null_bytes = null_bits_size(arity)
        self.fixed = bytearray(self.null_bytes + 8 * arity)
        self.var = bytearray()

    def cursor(self) -> int:
        """Offset (from the row start) where the next variable-part value goes."""
        return len(self.fixed) + len(self.var)

    def set_null_bit(self, pos: int) -> None:
        bit = pos + 8
        self.fixed[bit // 8] |= 1 << (bit % 8)

    def set_slot(self, pos: int, raw: bytes) -> None:
        start = self.null_bytes + 8 * pos
        self.fixed[start : start + len(raw)] = raw

    def append_var(self, data: bytes, reserve: int) -> int:
        """Append ``data`` left-aligned in ``reserve`` zero-padded bytes; return its offset."""
        offset = self.cursor()
        self.var += data + bytes(reserve - len(data))
        return offset

    def finish(self) -> bytes:
        return bytes(self.fixed + self.var)


def _write_offset_and_size(w: _RowWriter, pos: int, offset: int, size: int) -> None:
    w.set_slot(pos, struct.pack("<Q", (offset << 32) | size))


def _write_null(w: _RowWriter, pos: int, name: str, t: DataType) -> None:
    """NULL: null bit + zero slot; non-compact DECIMAL/TIMESTAMP still reserve var space (Java quirk)."""
    w.set_null_bit(pos)
    if _is_compact(name, t):
        return
    reserve = _DECIMAL_VAR_BYTES if name == "DECIMAL" else _TIMESTAMP_VAR_BYTES
    offset = w.append_var(b"", reserve)
    _write_offset_and_size(w, pos, offset, 0)


def _write_value(w: _RowWriter, pos: int, name: str, t: DataType, value: Any) -> None:
    if name == "BOOLEAN":
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"expected bool, got {type(value).__name__}")
        w.set_slot(pos, b"\x01" if value else b"\x00")
    elif name in _INT_FORMATS:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"expected int, got {type(value).__name__}")
        w.set_slot(pos, struct.pack(_INT_FORMATS[name], int(value)))
    elif name == "FLOAT":
        w.set_slot(pos, struct.pack("<f", float(value)))
    elif name == "DOUBLE":
        w.set_slot(pos, struct.pack("<d", float(value)))
    elif name == "DATE":
        w.set_slot(pos, struct.pack("<i", _days(value)))
    elif name == "TIME":
        w.set_slot(pos, struct.pack("<i", _millis_of_day(value)))
    elif name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        _write_timestamp(w, pos, t, value)
    elif name == "DECIMAL":
        _write_decimal(w, pos, t, value)
    else:  # CHAR / VARCHAR / BINARY / VARBINARY
        _write_bytes(w, pos, _to_bytes(name, value))


def _write_timestamp(w: _RowWriter, pos: int, t: DataType, value: Any) -> None:
    millis, nano_of_milli = _epoch_millis_and_nanos(value)
    if _timestamp_precision(t) <= _MAX_COMPACT_TIMESTAMP_PRECISION:
        w.set_slot(pos, struct.pack("<q", millis))
        return
    offset = w.append_var(struct.pack("<q", millis), _TIMESTAMP_VAR_BYTES)
    _write_offset_and_size(w, pos, offset, nano_of_milli)


def _write_decimal(w: _RowWriter, pos: int, t: DataType, value: Any) -> None:
    precision, scale = _decimal_precision_scale(t)
    unscaled = _unscaled_decimal(value, precision, scale)
    if precision <= _MAX_COMPACT_DECIMAL_PRECISION:
        w.set_slot(pos, struct.pack("<q", unscaled))
        return
    data = _java_big_integer_bytes(unscaled)
    offset = w.append_var(data, _DECIMAL_VAR_BYTES)
    _write_offset_and_size(w, pos, offset, len(data))


def _write_bytes(w: _RowWriter, pos: int, data: bytes) -> None:
    if len(data) <= _MAX_INLINE_BYTES:
        w.set_slot(pos, data + bytes(_MAX_INLINE_BYTES - len(data)) + bytes([0x80 | len(data)]))
        return
    offset = w.append_var(data, _pad8(len(data)))
    _write_offset_and_size(w, pos, offset, len(data))


def row_bytes(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """Java BinaryRow bytes (RowKind +I, no arity prefix) of one row of Python values.

    These are the bytes Java hashes for bucket assignment (Java's `DefaultBucketFunction`). Accepted values: ``bool``;
    ``int``; ``float``; DATE as ``datetime.date`` or int days; TIME as ``datetime.time`` or int millis of day;
    TIMESTAMP/TIMESTAMP_LTZ as ``datetime`` (naive = wall clock, aware = converted to UTC); DECIMAL as
    ``Decimal`` (rounded HALF_UP to the scale); CHAR/VARCHAR as ``str``; BINARY/VARBINARY as ``bytes``;
    ``None`` for NULL.
    """
    if len(values) != len(types):
        raise SchemaError(f"BinaryRow needs one value per type: got {len(values)} values for {len(types)} types.")
    writer = _RowWriter(len(types))
    for pos, (value, t) in enumerate(zip(values, types)):
        name = type_name(t)
        if value is None:
            _write_null(writer, pos, name, t)
            continue
        try:
            _write_value(writer, pos, name, t, value)
        except (TypeError, ValueError, OverflowError, struct.error) as exc:
            raise SchemaError(
                f"Cannot encode value {value!r} of field {pos} as Paimon {name}: {exc}. "
                "Convert the value to the column's type first."
            ) from exc
    return writer.finish()


def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """BE int32 arity + :func:`row_bytes`: the form stored in manifests (``_PARTITION``, keys, stats)."""
    return struct.pack(">i", len(types)) + row_bytes(values, types)


EMPTY_ROW: bytes = serialize_row([], [])
"""The serialized arity-0 row (12 bytes), used for unpartitioned tables and empty stats."""


# ----------------------------------------------------------------------------------------------------------
# Scalar decoding
# ----------------------------------------------------------------------------------------------------------


def deserialize_row(data: bytes, types: Sequence[DataType]) -> tuple:
    """Inverse of :func:`serialize_row`: Python values of a manifest BinaryRow.

    Returns ``datetime.date`` for DATE, ``datetime.time`` for TIME, naive ``datetime`` for TIMESTAMP,
    UTC-aware ``datetime`` for TIMESTAMP_LTZ (sub-microsecond digits are dropped), ``Decimal`` with the
    type's scale, ``str``, ``bytes``, ``int``, ``float``, ``bool`` and ``None``.
    """
    data = bytes(data)
    if len(data) < 4:
        raise CorruptMetadataError(
            f"Serialized BinaryRow is {len(data)} bytes, too short for its 4-byte arity prefix; "
            "the manifest is corrupt."
        )
    (arity,) = struct.unpack_from(">i", data, 0)
    if arity != len(types):
        raise CorruptMetadataError(
            f"Serialized BinaryRow has arity {arity} but {len(types)} field types were given; "
            "the row does not belong to this schema (check the schema id of the manifest entry)."
        )
    return read_row_bytes(data[4:], types)


def read_row_bytes(row: bytes, types: Sequence[DataType]) -> tuple:
    """Decode BinaryRow bytes *without* the arity prefix (see :func:`deserialize_row`)."""
    row = bytes(row)
    arity = len(types)
    null_bytes = null_bits_size(arity)
    if len(row) < null_bytes + 8 * arity:
        raise CorruptMetadataError(
            f"BinaryRow of arity {arity} needs at least {null_bytes + 8 * arity} bytes, got {len(row)}; "
            "the manifest is corrupt."
        )
    result: list[Any] = []
    for pos, t in enumerate(types):
        name = type_name(t)
        bit = pos + 8
        if row[bit // 8] & (1 << (bit % 8)):
            result.append(None)
            continue
        slot_start = null_bytes + 8 * pos
        result.append(_read_value(row, slot_start, name, t, pos))
    return tuple(result)


def _var_slice(row: bytes, slot_start: int, pos: int) -> tuple[int, int]:
    (slot,) = struct.unpack_from("<Q", row, slot_start)
    return slot >> 32, slot & 0xFFFFFFFF


def _checked(row: bytes, offset: int, length: int, pos: int) -> bytes:
    if offset + length > len(row):
        raise CorruptMetadataError(
            f"BinaryRow field {pos} points at bytes {offset}..{offset + length} beyond the row's "
            f"{len(row)} bytes; the manifest is corrupt."
        )
    return row[offset : offset + length]


def _read_value(row: bytes, slot_start: int, name: str, t: DataType, pos: int) -> Any:
    if name == "BOOLEAN":
        return row[slot_start] != 0
    if name in _INT_FORMATS:
        return struct.unpack_from(_INT_FORMATS[name], row, slot_start)[0]
    if name == "FLOAT":
        return struct.unpack_from("<f", row, slot_start)[0]
    if name == "DOUBLE":
        return struct.unpack_from("<d", row, slot_start)[0]
    if name == "DATE":
        return _EPOCH_DATE + _dt.timedelta(days=struct.unpack_from("<i", row, slot_start)[0])
    if name == "TIME":
        millis = struct.unpack_from("<i", row, slot_start)[0]
        return (_dt.datetime.min + _dt.timedelta(milliseconds=millis)).time()
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _read_timestamp(row, slot_start, name, t, pos)
    if name == "DECIMAL":
        return _read_decimal(row, slot_start, t, pos)
    return _read_bytes(row, slot_start, name, pos)


def _read_timestamp(row: bytes, slot_start: int, name: str, t: DataType, pos: int) -> _dt.datetime:
    if _timestamp_precision(t) <= _MAX_COMPACT_TIMESTAMP_PRECISION:
        millis, nano_of_milli = struct.unpack_from("<q", row, slot_start)[0], 0
    else:
        offset, nano_of_milli = _var_slice(row, slot_start, pos)
        millis = struct.unpack("<q", _checked(row, offset, 8, pos))[0]
    instant = _EPOCH_UTC + _dt.timedelta(milliseconds=millis, microseconds=nano_of_milli // 1000)
    return instant if name == "TIMESTAMP_LTZ" else instant.replace(tzinfo=None)


def _read_decimal(row: bytes, slot_start: int, t: DataType, pos: int) -> decimal.Decimal:
    precision, scale = _decimal_precision_scale(t)
    if precision <= _MAX_COMPACT_DECIMAL_PRECISION:
        unscaled = struct.unpack_from("<q", row, slot_start)[0]
    else:
        offset, length = _var_slice(row, slot_start, pos)
        unscaled = int.from_bytes(_checked(row, offset, length, pos), "big", signed=True)
    digits = tuple(int(d) for d in str(abs(unscaled)))
    return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


def _read_bytes(row: bytes, slot_start: int, name: str, pos: int) -> Any:
    marker = row[slot_start + 7]
    if marker & 0x80:
        data = row[slot_start : slot_start + (marker & 0x7F)]
    else:
        offset, length = _var_slice(row, slot_start, pos)
        data = _checked(row, offset, length, pos)
    if name in _STRING_TYPES:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptMetadataError(f"BinaryRow field {pos} ({name}) is not valid UTF-8: {exc}") from exc
    return data


# ----------------------------------------------------------------------------------------------------------
# Vectorised encoding of whole Arrow columns
# ----------------------------------------------------------------------------------------------------------


@dataclass
class _ColumnLayout:
    """How one column contributes to every row.

    ``slot`` is the final 8-byte slot, except that rows with ``var_size > 0`` still lack the variable-part
    offset in the high 32 bits (it depends on earlier columns and is OR-ed in during assembly).
    ``var_src`` holds, per row, the bytes to copy left-aligned into the reserved variable space as
    (source byte array, start per row, length per row); rows that copy nothing have length 0.
    """

    null: np.ndarray  # bool[n]
    slot: np.ndarray  # uint64[n]
    var_size: Optional[np.ndarray] = None  # int64[n], multiple of 8
    var_src: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]] = None


@dataclass
class EncodedRows:
    """BinaryRow bytes of many rows, back to back in one buffer (each row is 8-byte aligned)."""

    buffer: np.ndarray  # uint8
    starts: np.ndarray  # int64 byte offset of each row in buffer
    lengths: np.ndarray  # int64 byte length of each row (multiple of 8)

    def __len__(self) -> int:
        return len(self.starts)

    def row(self, i: int) -> bytes:
        """Bytes of row ``i`` (for tests and debugging; not for data paths)."""
        start = int(self.starts[i])
        return self.buffer[start : start + int(self.lengths[i])].tobytes()


def _as_array(column: Any) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    elif not isinstance(column, pa.Array):
        column = pa.array(column)
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column


def _to_layout_type(arr: pa.Array, target: pa.DataType, name: str, pos: int) -> pa.Array:
    """Column ``pos`` (``arr``) in the Arrow type whose buffers the layout of Paimon type ``name`` reads."""
    return cast_array(
        arr,
        target,
        lambda reason: SchemaError(
            f"Column {pos} of Arrow type {arr.type} cannot be used as Paimon {name}: {reason}. "
            "Cast the column to the table's type first."
        ),
    )


def _null_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return arr.is_null().to_numpy(zero_copy_only=False)


def _fixed_values(arr: pa.Array, dtype: str, width: int = 1) -> np.ndarray:
    """Values buffer of a fixed-width array as numpy (honouring slice offsets); null slots unspecified."""
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(n * width, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype)[arr.offset * width : (arr.offset + n) * width]


def _low_bits_slot(values: np.ndarray, null: np.ndarray) -> np.ndarray:
    """Slot holding ``values`` (int/float of any width) LE in its low bytes, rest zero; zero for nulls."""
    unsigned = values.view(np.dtype(f"<u{values.dtype.itemsize}"))
    slot = unsigned.astype(np.uint64)
    slot[null] = 0
    return slot


def _layout_numeric(arr: pa.Array, target: pa.DataType, dtype: str, name: str, pos: int) -> _ColumnLayout:
    arr = _to_layout_type(arr, target, name, pos)
    null = _null_mask(arr)
    return _ColumnLayout(null=null, slot=_low_bits_slot(_fixed_values(arr, dtype), null))


def _layout_boolean(arr: pa.Array, name: str, pos: int) -> _ColumnLayout:
    arr = _to_layout_type(arr, pa.bool_(), name, pos)
    null = _null_mask(arr)
    values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False)
    return _ColumnLayout(null=null, slot=values.astype(np.uint64))


def _time_millis(arr: pa.Array, name: str, pos: int) -> tuple[np.ndarray, np.ndarray]:
    """(millis of day int64, null mask); sub-millisecond digits truncated like Java's TIME."""
    if not pa.types.is_time(arr.type):
        arr = _to_layout_type(arr, pa.time32("ms"), name, pos)
    null = _null_mask(arr)
    raw = _fixed_values(arr, "<i4" if pa.types.is_time32(arr.type) else "<i8").astype(np.int64)
    per_milli = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[arr.type.unit]
    millis = raw * 1000 if per_milli is None else raw // per_milli
    return millis, null


def _layout_time(arr: pa.Array, name: str, pos: int) -> _ColumnLayout:
    millis, null = _time_millis(arr, name, pos)
    return _ColumnLayout(null=null, slot=_low_bits_slot(millis.astype("<i4"), null))


def _epoch_millis_nanos(arr: pa.Array, name: str, pos: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(epoch millis, nano of milli, null mask) of a timestamp column, floor semantics like Java."""
    if not pa.types.is_timestamp(arr.type):
        arr = _to_layout_type(arr, pa.timestamp("us"), name, pos)
    null = _null_mask(arr)
    raw = _fixed_values(arr, "<i8")
    nanos_per_unit = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}[arr.type.unit]
    if nanos_per_unit >= 1_000_000:
        millis = raw * (nanos_per_unit // 1_000_000)
        nano_of_milli = np.zeros(len(raw), dtype=np.int64)
    else:
        per_milli = 1_000_000 // nanos_per_unit
        millis, rest = np.divmod(raw, per_milli)
        nano_of_milli = rest * nanos_per_unit
    return millis, nano_of_milli, null


def _layout_timestamp(arr: pa.Array, t: DataType, name: str, pos: int) -> _ColumnLayout:
    millis, nano_of_milli, null = _epoch_millis_nanos(arr, name, pos)
    if _timestamp_precision(t) <= _MAX_COMPACT_TIMESTAMP_PRECISION:
        return _ColumnLayout(null=null, slot=_low_bits_slot(millis, null))
    # Non-compact: millis go to an 8-byte var part (reserved even for NULL), nanoOfMilli in the slot.
    n = len(millis)
    slot = nano_of_milli.astype(np.uint64)
    slot[null] = 0
    src = np.ascontiguousarray(millis, dtype="<i8").view(np.uint8)
    lengths = np.where(null, 0, _TIMESTAMP_VAR_BYTES).astype(np.int64)
    var_size = np.full(n, _TIMESTAMP_VAR_BYTES, dtype=np.int64)
    starts = np.arange(n, dtype=np.int64) * 8
    return _ColumnLayout(null=null, slot=slot, var_size=var_size, var_src=(src, starts, lengths))


def _layout_decimal(arr: pa.Array, t: DataType, name: str, pos: int) -> _ColumnLayout:
    precision, scale = _decimal_precision_scale(t)
    arr = _to_layout_type(arr, pa.decimal128(max(precision, 1), scale), name, pos)
    null = _null_mask(arr)
    words = _fixed_values(arr, "<u8", width=2).reshape(-1, 2)  # (low, high) 64-bit halves, LE
    if precision <= _MAX_COMPACT_DECIMAL_PRECISION:
        slot = words[:, 0].copy()  # the value fits an int64, whose bits are the low half
        slot[null] = 0
        return _ColumnLayout(null=null, slot=slot)
    return _decimal_var_layout(words, null)


def _decimal_var_layout(words: np.ndarray, null: np.ndarray) -> _ColumnLayout:
    """Non-compact decimal: minimal BE two's-complement bytes (``BigInteger.toByteArray``), 16 reserved."""
    n = len(null)
    be = np.ascontiguousarray(words[:, ::-1]).astype(">u8").view(np.uint8).reshape(n, 16)
    negative = be[:, 0] >= 0x80
    fill = np.where(negative, 0xFF, 0x00).astype(np.uint8)
    # Leading bytes equal to the sign fill are redundant only if the next byte keeps the sign bit.
    leading = np.cumprod(be == fill[:, None], axis=1).sum(axis=1)
    first = be[np.arange(n), np.minimum(leading, 15)] if n else np.zeros(0, dtype=np.uint8)
    keeps_sign = (first >= 0x80) == negative
    strip = np.where(leading >= 16, 15, np.where(keeps_sign, leading, leading - 1))
    lengths = np.where(null, 0, 16 - strip).astype(np.int64)
    starts = np.arange(n, dtype=np.int64) * 16 + strip
    slot = lengths.astype(np.uint64)
    var_size = np.full(n, _DECIMAL_VAR_BYTES, dtype=np.int64)
    return _ColumnLayout(null=null, slot=slot, var_size=var_size, var_src=(be.reshape(-1), starts, lengths))


def _layout_bytes(arr: pa.Array, name: str, pos: int) -> _ColumnLayout:
    """Strings/binaries: <= 7 bytes inline in the slot (top byte 0x80 | len), longer ones in the var part."""
    arr = _to_layout_type(arr, pa.large_binary(), name, pos)
    n = len(arr)
    null = _null_mask(arr)
    _, offsets_buf, data_buf = arr.buffers()
    if offsets_buf is None:
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        offsets = np.frombuffer(offsets_buf, dtype="<i8")[arr.offset : arr.offset + n + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    starts = offsets[:-1].astype(np.int64)
    lengths = np.where(null, 0, offsets[1:] - offsets[:-1]).astype(np.int64)
    inline = lengths <= _MAX_INLINE_BYTES
    slot = _inline_slots(data, starts, lengths, inline & ~null)
    outline = ~inline
    slot[outline] = lengths[outline].astype(np.uint64)
    var_size = np.where(outline, (lengths + 7) & ~7, 0).astype(np.int64)
    var_lengths = np.where(outline, lengths, 0)
    return _ColumnLayout(null=null, slot=slot, var_size=var_size, var_src=(data, starts, var_lengths))


def _inline_slots(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, inline: np.ndarray) -> np.ndarray:
    """Slots of values of <= 7 bytes: the bytes LE in the low end, ``0x80 | len`` in the top byte.

    Rows where ``inline`` is False get 0 (callers fill them in).
    """
    kept = np.where(inline, lengths, 0)
    words = _read_unaligned_words(data, starts) & _low_bytes_mask(kept)
    marker = (np.uint64(0x80) | kept.astype(np.uint64)) << np.uint64(56)
    return np.where(inline, words | marker, np.uint64(0))


def _low_bytes_mask(counts: np.ndarray) -> np.ndarray:
    """uint64 masks keeping the lowest ``counts`` (0..8) bytes."""
    bits = (8 * np.minimum(counts, 8)).astype(np.uint64)
    partial = (np.uint64(1) << (bits % np.uint64(64))) - np.uint64(1)
    return np.where(counts >= 8, np.uint64(_ALL_ONES), partial)


_NUMERIC_ARROW = {
    "TINYINT": (pa.int8(), "<i1"),
    "SMALLINT": (pa.int16(), "<i2"),
    "INT": (pa.int32(), "<i4"),
    "BIGINT": (pa.int64(), "<i8"),
    "FLOAT": (pa.float32(), "<f4"),
    "DOUBLE": (pa.float64(), "<f8"),
    "DATE": (pa.date32(), "<i4"),
}


def _column_layout(column: Any, t: DataType, pos: int) -> _ColumnLayout:
    name = type_name(t)
    arr = _as_array(column)
    if name in _NUMERIC_ARROW:
        target, dtype = _NUMERIC_ARROW[name]
        return _layout_numeric(arr, target, dtype, name, pos)
    if name == "BOOLEAN":
        return _layout_boolean(arr, name, pos)
    if name == "TIME":
        return _layout_time(arr, name, pos)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _layout_timestamp(arr, t, name, pos)
    if name == "DECIMAL":
        return _layout_decimal(arr, t, name, pos)
    return _layout_bytes(arr, name, pos)


def _scatter(buffer: np.ndarray, dest: np.ndarray, src: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Copy ``lengths[r]`` bytes from ``data[starts[r]:]`` to ``buffer[dest[r]:]`` for all rows at once.

    Works in 8-byte words (``dest`` is always 8-aligned in a BinaryRow) so the index arrays are 8x smaller
    than a byte-wise copy. Bytes past each value's end in its last word are masked to zero, because Java
    pads the variable part with zeros.
    """
    data, starts, lengths = src
    word_counts = (lengths + 7) // 8
    total = int(word_counts.sum())
    if total == 0:
        return
    first = np.cumsum(word_counts) - word_counts
    within = np.arange(total, dtype=np.int64) - np.repeat(first, word_counts)
    words = _read_unaligned_words(data, np.repeat(starts, word_counts) + 8 * within)
    remaining = np.repeat(lengths, word_counts) - 8 * within  # >= 1; >= 8 except in a value's last word
    buffer.view("<u8")[np.repeat(dest // 8, word_counts) + within] = words & _low_bytes_mask(remaining)


def _read_unaligned_words(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """LE uint64 read at arbitrary byte ``positions`` of ``data`` (bytes past its end read as zero).

    Each word is stitched from the two aligned words around it, which is about twice as fast as gathering
    through a sliding-window view.
    """
    padded = np.zeros(_pad8(len(data)) + 16, dtype=np.uint8)  # positions may equal len(data)
    padded[: len(data)] = data
    aligned = padded.view("<u8")
    index = positions >> 3
    shift = ((positions & 7) * 8).astype(np.uint64)
    low = aligned[index] >> shift
    high = np.where(shift == 0, np.uint64(0), aligned[index + 1] << ((np.uint64(64) - shift) % np.uint64(64)))
    return low | high


def encode_rows(columns: Sequence[Any], types: Sequence[DataType]) -> EncodedRows:
    """BinaryRow bytes (no arity prefix) of every row of ``columns``, built with numpy — no per-row loop.

    Accepts ``pa.Array``/``pa.ChunkedArray`` (or anything ``pa.array`` takes); columns are cast to the
    Arrow type of their Paimon type when they differ. Every type of :func:`row_bytes` is supported,
    including non-compact DECIMAL/TIMESTAMP (with Java's NULL layout), so there is no scalar fallback.
    Sub-microsecond timestamp digits are kept when the column is ``timestamp[ns]``.
    """
    if len(columns) != len(types):
        raise SchemaError(f"encode_rows needs one type per column: got {len(columns)} columns, {len(types)} types.")
    layouts = [_column_layout(col, t, pos) for pos, (col, t) in enumerate(zip(columns, types))]
    n = len(layouts[0].null) if layouts else 0
    if any(len(layout.null) != n for layout in layouts):
        sizes = [len(layout.null) for layout in layouts]
        raise SchemaError(f"encode_rows columns differ in length: {sizes}; pass columns of one batch.")
    return _assemble(layouts, n)


def _assemble(layouts: list[_ColumnLayout], n: int) -> EncodedRows:
    arity = len(layouts)
    null_bytes = null_bits_size(arity)
    fixed = null_bytes + 8 * arity
    lengths = np.full(n, fixed, dtype=np.int64)
    for layout in layouts:
        if layout.var_size is not None:
            lengths += layout.var_size
    starts = np.cumsum(lengths) - lengths
    buffer = np.zeros(int(lengths.sum()), dtype=np.uint8)
    slots = buffer.view("<u8")
    slot_index = (starts + null_bytes) // 8
    cursor = np.full(n, fixed, dtype=np.int64)
    for pos, layout in enumerate(layouts):
        slot = layout.slot
        if layout.var_size is not None:
            assert layout.var_src is not None  # set together with var_size
            reserved = layout.var_size > 0
            slot = slot | np.where(reserved, cursor.astype(np.uint64) << np.uint64(32), np.uint64(0))
            _scatter(buffer, starts + cursor, layout.var_src)
            cursor = cursor + layout.var_size
        slots[slot_index + pos] = slot
        bit = pos + 8
        buffer[starts[layout.null] + bit // 8] |= np.uint8(1 << (bit % 8))
    return EncodedRows(buffer=buffer, starts=starts, lengths=lengths)
