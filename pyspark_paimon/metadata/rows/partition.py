"""Partition directory names (Java's `PartitionPathUtils`).

Java derives ``k1=v1/k2=v2`` from the partition BinaryRow: with ``partition.legacy-name = true`` (default)
a value is the Java *internal* object's ``toString()`` (DATE -> days since epoch, TIMESTAMP ->
``LocalDateTime.toString()``), otherwise it is ``CAST(value AS STRING)``. Both forms are reproduced here
because Java readers list files through these directories: a different spelling is a different directory.
Keys and values are escaped like Hive (``%XX``); NULL, empty and whitespace-only values become the
``partition.default-name``.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import unicodedata
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.errors import OptionError, SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.rows.binary_row import DataType, type_name
from pyspark_paimon.metadata.schema.options import PARTITION_DEFAULT_NAME
from pyspark_paimon.metadata.schema.table_schema import TableSchema

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "escape_path_name",
    "java_local_date_time_string",
    "parse_partition_path",
    "partition_path",
    "partition_spec",
    "partition_value_string",
    "unescape_path_name",
]

DEFAULT_PARTITION_NAME: str = PARTITION_DEFAULT_NAME.default_value

_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{}[]^") | frozenset(chr(c) for c in range(0x20))
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_DEFAULT_TIMESTAMP_PRECISION = 6
_JAVA_WHITESPACE_EXTRA = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
_JAVA_NON_WHITESPACE_SPACES = frozenset("\u00a0\u2007\u202f")


# ----------------------------------------------------------------------------------------------------------
# Escaping
# ----------------------------------------------------------------------------------------------------------


def escape_path_name(name: str) -> str:
    """Hive-style escaping of a partition key or value: listed ASCII characters become ``%XX``.

    Space and non-ASCII characters are kept as they are (Java's `PartitionPathUtils`).
    """
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in name)


def unescape_path_name(name: str) -> str:
    """Inverse of :func:`escape_path_name`; a ``%`` not followed by two hex digits is kept literally."""
    out = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "%" and _is_hex(name[i + 1 : i + 3]):
            out.append(chr(int(name[i + 1 : i + 3], 16)))
            i += 3
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def _java_is_whitespace(c: str) -> bool:
    """Java ``Character.isWhitespace``: Unicode separators except no-break spaces, plus ASCII controls."""
    if c in _JAVA_WHITESPACE_EXTRA:
        return True
    return unicodedata.category(c) in ("Zs", "Zl", "Zp") and c not in _JAVA_NON_WHITESPACE_SPACES


def _is_null_or_whitespace_only(s: str | None) -> bool:
    return s is None or all(_java_is_whitespace(c) for c in s)


# ----------------------------------------------------------------------------------------------------------
# Java toString() spellings
# ----------------------------------------------------------------------------------------------------------


def _java_float_string(value: float, single: bool) -> str:
    """Java ``Double.toString`` / ``Float.toString`` (shortest round-trip digits, JDK 19+ rules)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    shortest = np.format_float_scientific(np.float32(value), unique=True) if single else repr(value)
    sign, digits, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)  # finite: infinities and NaN returned above
    text = "".join(map(str, digits))
    sci_exponent = len(text) + exponent - 1  # value = 0.d1d2... * 10^(sci_exponent + 1)
    prefix = "-" if sign else ""
    if -3 <= sci_exponent < 7:
        if sci_exponent >= 0:
            whole = text[: sci_exponent + 1].ljust(sci_exponent + 1, "0")
            frac = text[sci_exponent + 1 :] or "0"
        else:
            whole, frac = "0", "0" * (-sci_exponent - 1) + text
        return f"{prefix}{whole}.{frac}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{sci_exponent}"


def _nanos(value: _dt.datetime | _dt.time) -> int:
    return value.microsecond * 1000 + int(getattr(value, "nanosecond", 0) or 0)


def _java_local_time_string(hour: int, minute: int, second: int, nano: int) -> str:
    """Java ``LocalTime.toString``: ``HH:mm``, ``:ss`` only if needed, fraction in groups of 3 digits."""
    out = f"{hour:02d}:{minute:02d}"
    if second or nano:
        out += f":{second:02d}"
        if nano % 1_000_000 == 0 and nano:
            out += f".{nano // 1_000_000:03d}"
        elif nano % 1000 == 0 and nano:
            out += f".{nano // 1000:06d}"
        elif nano:
            out += f".{nano:09d}"
    return out


def java_local_date_time_string(value: _dt.datetime) -> str:
    """Java ``LocalDateTime.toString`` of a naive datetime: ``2025-08-10T01:02``, ``...T01:02:03.456``."""
    date = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    return date + "T" + _java_local_time_string(value.hour, value.minute, value.second, _nanos(value))


def _as_utc_wall_clock(value: _dt.datetime) -> _dt.datetime:
    """TIMESTAMP values are wall clocks already; LTZ (aware) values are shown as their UTC wall clock."""
    if value.tzinfo is None:
        return value
    return value.astimezone(_dt.timezone.utc).replace(tzinfo=None)


def _as_date(value: Any) -> _dt.date:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    return _EPOCH_DATE + _dt.timedelta(days=int(value))


def _days(value: Any) -> int:
    return (_as_date(value) - _EPOCH_DATE).days


def _millis_of_day(value: Any) -> int:
    if isinstance(value, _dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    return int(value)


def _decimal_string(value: Any, scale: int | None) -> str:
    """Java ``BigDecimal.toPlainString`` at the column's scale (no exponent, no negative zero)."""
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
    if scale is not None:
        d = d.quantize(decimal.Decimal(1).scaleb(-scale), context=decimal.Context(prec=200))
    if d == 0:
        d = abs(d)
    return format(d, "f")


def _format_sql_timestamp(value: _dt.datetime, precision: int) -> str:
    """``CAST(TIMESTAMP(p) AS STRING)``: ``yyyy-MM-dd HH:mm:ss`` + fraction kept to at least p digits."""
    fraction = f"{_nanos(value):09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    text = value.strftime("%H:%M:%S")
    date = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    return f"{date} {text}" + (f".{fraction}" if fraction else "")


def _format_sql_time(millis: int, precision: int) -> str:
    seconds, milli = divmod(millis, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    text = f"{hour:02d}:{minute:02d}:{second:02d}"
    digits = min(max(precision, 0), 3)
    return text + (f".{milli:03d}"[: digits + 1] if digits else "")


def partition_value_string(value: Any, t: DataType, legacy_name: bool = True) -> str | None:
    """The unescaped directory spelling of one partition value, before default-name substitution.

    ``legacy_name=True`` mirrors Java's internal ``toString()`` (DATE -> days, TIME -> millis of day,
    TIMESTAMP -> ``LocalDateTime.toString()``); ``False`` mirrors ``CAST(x AS STRING)``.
    """
    if value is None:
        return None
    name = type_name(t)
    if name in ("CHAR", "VARCHAR"):
        return str(value)
    if name == "BOOLEAN":
        return "true" if value else "false"
    if name in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return str(int(value))
    if name in ("FLOAT", "DOUBLE"):
        return _java_float_string(float(value), single=name == "FLOAT")
    if name == "DECIMAL":
        return _decimal_string(value, getattr(t, "scale", None))
    if name == "DATE":
        return str(_days(value)) if legacy_name else _as_date(value).isoformat()
    if name == "TIME":
        millis = _millis_of_day(value)
        return str(millis) if legacy_name else _format_sql_time(millis, getattr(t, "precision", None) or 0)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_string(value, t, legacy_name)
    return _binary_string(value, legacy_name)


def _timestamp_string(value: Any, t: DataType, legacy_name: bool) -> str:
    if not isinstance(value, _dt.datetime):
        raise SchemaError(f"TIMESTAMP partition value must be a datetime, got {type(value).__name__}.")
    wall = _as_utc_wall_clock(value)
    if legacy_name:
        return java_local_date_time_string(wall)
    precision = getattr(t, "precision", None)
    return _format_sql_timestamp(wall, _DEFAULT_TIMESTAMP_PRECISION if precision is None else precision)


def _binary_string(value: Any, legacy_name: bool) -> str:
    if legacy_name:
        # Java's legacy name would be byte[].toString() ("[B@1b6d3586"), which is not reproducible.
        raise UnsupportedTypeError(
            "BINARY/VARBINARY partition keys have no stable directory name with 'partition.legacy-name' = "
            "true (Java would print an object address); set 'partition.legacy-name' = 'false'."
        )
    return bytes(value).decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------------------------------------
# Paths
# ----------------------------------------------------------------------------------------------------------


def _field_name_type(field: Any) -> tuple[str, DataType]:
    if hasattr(field, "name") and hasattr(field, "type"):
        return field.name, field.type
    name, t = field
    return name, t


def partition_spec(
    values: Sequence[Any],
    fields: Sequence[Any],
    default_name: str = DEFAULT_PARTITION_NAME,
    legacy_name: bool = True,
) -> dict[str, str]:
    """Ordered ``{key: unescaped value string}`` with NULL/empty/whitespace-only -> ``default_name``.

    ``fields`` are ``(name, type)`` pairs or objects with ``.name``/``.type`` (``DataField``).
    """
    if len(values) != len(fields):
        raise SchemaError(
            f"Partition has {len(values)} values but the table has {len(fields)} partition keys "
            f"({[_field_name_type(f)[0] for f in fields]})."
        )
    spec: dict[str, str] = {}
    for value, field in zip(values, fields):
        name, t = _field_name_type(field)
        text = partition_value_string(value, t, legacy_name)
        spec[name] = default_name if _is_null_or_whitespace_only(text) else text  # type: ignore[assignment]
    return spec


def partition_path(
    values: Sequence[Any],
    fields: Sequence[Any],
    default_name: str = DEFAULT_PARTITION_NAME,
    legacy_name: bool = True,
) -> str:
    """Relative partition directory ``k1=v1/k2=v2`` (escaped, no trailing slash); ``""`` if unpartitioned."""
    spec = partition_spec(values, fields, default_name, legacy_name)
    return "/".join(f"{escape_path_name(k)}={escape_path_name(v)}" for k, v in spec.items())


def parse_partition_path(path: str) -> dict[str, str]:
    """``"k1=v1/k2=v2"`` -> ``{"k1": "v1", "k2": "v2"}`` (unescaped); inverse of :func:`partition_path`."""
    spec: dict[str, str] = {}
    for part in path.strip("/").split("/"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise SchemaError(f"Partition directory '{part}' in '{path}' is not of the form key=value.")
        spec[unescape_path_name(key)] = unescape_path_name(value)
    return spec


def coerce_partition_value(schema: TableSchema, column: str, value: object) -> object:
    """Turn a partition value given as text ('dt=20250811') into the column's Python value."""
    if value is None or not isinstance(value, str):
        return value
    t = schema.field(column).type
    arr = pa.array([value], pa.string())
    try:
        return arr.cast(schema.arrow_schema().field(column).type)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(f"Partition value '{value}' is not a valid {t} for column '{column}'.") from e


def parse_partition_spec(text: str) -> dict[str, str]:
    """'dt=20250811,hr=10' (or '/'-separated) to a dict."""
    out: dict[str, str] = {}
    for part in text.replace("/", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise OptionError(f"Cannot parse partition spec '{text}': expected 'col=value[,col2=value2]'.")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip().strip("'\"")
    return out
