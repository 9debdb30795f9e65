"""Which column type changes are allowed (Java's ``DataTypeCasts``) and which of them reads here can follow.

A column whose type changes keeps its field id, so data files written before the change hold values of the old
type, and every read converts them (``datasource/read/file_read.py``). Paimon allows a change when its cast rules
do (:func:`supports_cast`): *implicit* casts widen without loss (INT to BIGINT, any number to DECIMAL or DOUBLE,
CHAR to VARCHAR, TIMESTAMP to DATE); *explicit* ones are SQL's ``CAST`` (BIGINT to INT, numbers and dates to and
from STRING...), allowed unless the table sets ``disable-explicit-type-casting``. Nullability is checked separately
(``alter-column-null-to-not-null.disabled``).

:func:`evolution_problem` names the changes Paimon allows but a read here would not convert as Java does (a
DOUBLE printed as STRING is ``1.0E10`` in Java, a TIMESTAMP becomes a TIMESTAMP_LTZ in Java's session time zone):
those are refused with the reason, instead of reading values Java would read differently. :func:`convert_array`
is the conversion itself: Arrow's casts plus the cases where Arrow's differs from Java's.
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.types.arrow import cast_array, to_arrow_type
from pyspark_paimon.metadata.types.model import STRING_LENGTH, ArrayType, AtomicType, DataType, MapType, RowType

__all__ = ["always_fits", "convert_array", "evolution_problem", "same_but_nullability", "supports_cast"]

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_NUMERIC = (*_INTEGERS, "FLOAT", "DOUBLE", "DECIMAL")
_CHARACTER = ("CHAR", "VARCHAR")
_BINARY = ("BINARY", "VARBINARY")
_TIMESTAMPS = ("TIMESTAMP", "TIMESTAMP_LTZ")
_DATETIME = ("DATE", "TIME", *_TIMESTAMPS)
_PREDEFINED = (
    *_CHARACTER,
    "BOOLEAN",
    *_BINARY,
    *_NUMERIC,
    *_DATETIME,
    "VARIANT",
    "BLOB",
    "GEOMETRY",
    "GEOGRAPHY",
)
_CONSTRUCTED = ("ARRAY", "VECTOR", "MULTISET", "MAP", "ROW")

# target root -> (implicit sources, explicit sources), Java's DataTypeCasts table (identity casts are implicit).
_RULES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "CHAR": (("CHAR",), (*_PREDEFINED, *_CONSTRUCTED)),
    "VARCHAR": (_CHARACTER, (*_PREDEFINED, *_CONSTRUCTED)),
    "BOOLEAN": (("BOOLEAN",), (*_CHARACTER, *_INTEGERS)),
    "BINARY": (("BINARY",), (*_CHARACTER, "VARBINARY")),
    "VARBINARY": (_BINARY, (*_CHARACTER, "BINARY")),
    "DECIMAL": (_NUMERIC, (*_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "TINYINT": (("TINYINT",), (*_NUMERIC, *_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "SMALLINT": (("TINYINT", "SMALLINT"), (*_NUMERIC, *_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "INT": (("TINYINT", "SMALLINT", "INT"), (*_NUMERIC, *_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "BIGINT": (_INTEGERS, (*_NUMERIC, *_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "FLOAT": ((*_INTEGERS, "FLOAT", "DECIMAL"), (*_NUMERIC, *_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "DOUBLE": (_NUMERIC, (*_CHARACTER, "BOOLEAN", *_TIMESTAMPS)),
    "DATE": (("DATE", "TIMESTAMP"), (*_TIMESTAMPS, *_CHARACTER)),
    "TIME": (("TIME", "TIMESTAMP"), ("TIME", *_TIMESTAMPS, *_CHARACTER)),
    "TIMESTAMP": (_TIMESTAMPS, (*_DATETIME, *_CHARACTER, *_NUMERIC)),
    "TIMESTAMP_LTZ": (_TIMESTAMPS, (*_DATETIME, *_CHARACTER, *_NUMERIC)),
}


def supports_cast(src: DataType, dst: DataType, allow_explicit: bool) -> bool:
    """Java's ``DataTypeCasts.supportsCast``: may a column of type ``src`` change to ``dst``? Nullability aside,
    except that a nullable type never implicitly becomes NOT NULL."""
    if src.nullable and not dst.nullable and not allow_explicit:
        return False
    if src.copy(nullable=True) == dst.copy(nullable=True):
        return True
    if src.root in ("GEOMETRY", "GEOGRAPHY") or dst.root in ("GEOMETRY", "GEOGRAPHY"):
        return False
    if src.root == dst.root:
        return True  # every root casts to itself implicitly (parameters aside: lengths, precisions, members)
    implicit, explicit = _RULES.get(dst.root, ((), ()))
    return src.root in implicit or (allow_explicit and src.root in explicit)


def _nullable_everywhere(t: DataType) -> DataType:
    if isinstance(t, RowType):
        return RowType(tuple(f.with_type(_nullable_everywhere(f.type)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_nullable_everywhere(t.element))
    if isinstance(t, MapType):
        return MapType(_nullable_everywhere(t.key), _nullable_everywhere(t.value))
    return t.copy(nullable=True)


def same_but_nullability(a: DataType, b: DataType) -> bool:
    """Whether two types hold the same values, nullability (at any depth) aside."""
    return a == b or _nullable_everywhere(a) == _nullable_everywhere(b)


def evolution_problem(src: DataType, dst: DataType) -> str | None:
    """Why files holding ``src`` values cannot be read as ``dst`` here the way Java reads them (None: they can)."""
    s, d = src.root, dst.root
    if same_but_nullability(src, dst):
        return None
    if isinstance(src, RowType) and isinstance(dst, RowType):
        return "a ROW column changes member by member: change the type of 'column.member' instead"
    if isinstance(src, ArrayType) and isinstance(dst, ArrayType):
        return evolution_problem(src.element, dst.element)
    if isinstance(src, MapType) and isinstance(dst, MapType):
        if src.key.copy(nullable=True) != dst.key.copy(nullable=True):
            return "a MAP's key type cannot change"
        return evolution_problem(src.value, dst.value)
    if not (isinstance(src, AtomicType) and isinstance(dst, AtomicType)):
        return f"{src} cannot become {dst}"
    if s in _CHARACTER and d in _CHARACTER or s in _BINARY and d in _BINARY:
        if d == "CHAR" or (dst.length or STRING_LENGTH) < (src.length or STRING_LENGTH):
            return "Java pads or truncates the stored text to the new length; only a longer VARCHAR (or STRING) is read"
        return None
    if s in _INTEGERS and d in (*_INTEGERS, "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN"):
        return None  # a narrower integer or a DECIMAL that does not hold a value fails the read, naming it
    if s == "DECIMAL" and d in ("DECIMAL", "FLOAT", "DOUBLE"):
        return None  # a value the new DECIMAL cannot hold exactly fails the read (Java would round it)
    if s == "FLOAT" and d == "DOUBLE" or s == "DOUBLE" and d == "FLOAT":
        return None
    if s == "BOOLEAN" and d in _INTEGERS:
        return None
    if s in _CHARACTER and d in (*_INTEGERS, "FLOAT", "DOUBLE", "DECIMAL", "DATE", *_BINARY):
        return None  # text that does not parse fails the read, naming the column
    if d in _CHARACTER and s in (*_INTEGERS, "DECIMAL", "BOOLEAN", "DATE", *_BINARY):
        return None
    if s == "TIMESTAMP" and d in ("TIMESTAMP", "DATE") or s == "TIMESTAMP_LTZ" and d == "TIMESTAMP_LTZ":
        return None
    if s == "DATE" and d == "TIMESTAMP":
        return None
    if {s, d} == {"TIMESTAMP", "TIMESTAMP_LTZ"}:
        return "Java converts between TIMESTAMP and TIMESTAMP_LTZ in the session time zone, which a file read lacks"
    return f"pyspark-paimon does not convert stored {src} values to {dst} the way Java does"


_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}


def always_fits(src: DataType, dst: DataType) -> bool:
    """Whether every value of ``src`` converts to ``dst`` (so stored values need no check): the same values with
    more room -- a wider integer, a DECIMAL with as many fraction and more integer digits, any number into DOUBLE, a
    longer text, a finer timestamp, a ROW with new nullable members -- and NOT NULL only where it was."""
    if not dst.nullable and src.nullable:
        return False
    if same_but_nullability(src, dst):
        return True
    if isinstance(src, ArrayType) and isinstance(dst, ArrayType):
        return always_fits(src.element, dst.element)
    if isinstance(src, MapType) and isinstance(dst, MapType):
        return always_fits(src.key, dst.key) and always_fits(src.value, dst.value)
    if isinstance(src, RowType) and isinstance(dst, RowType):  # members by id; a new member must take NULL
        members = {f.id: f for f in src.fields}
        return all(always_fits(members[f.id].type, f.type) if f.id in members else f.type.nullable for f in dst.fields)
    if not (isinstance(src, AtomicType) and isinstance(dst, AtomicType)):
        return False
    s, d = src.root, dst.root
    if s in _INTEGERS and d in _INTEGERS:
        return _INT_DIGITS[s] <= _INT_DIGITS[d]
    if s in _INTEGERS and d == "DECIMAL":
        assert dst.precision is not None and dst.scale is not None
        return dst.precision - dst.scale >= _INT_DIGITS[s]
    if s == "DECIMAL" and d == "DECIMAL":
        assert src.precision is not None and src.scale is not None
        assert dst.precision is not None and dst.scale is not None
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    if s in _NUMERIC and d == "DOUBLE" or s in (*_INTEGERS, "FLOAT") and d == "FLOAT":
        return True
    if (s in _CHARACTER and d == "VARCHAR") or (s in _BINARY and d == "VARBINARY"):
        return (dst.length or STRING_LENGTH) >= (src.length or STRING_LENGTH)
    if s in _TIMESTAMPS and d == s:
        return (dst.precision or 0) >= (src.precision or 0)
    return False


def convert_array(
    arr: pa.Array, src: DataType, dst: DataType, error: Callable[[str], PaimonError], column: str | None = None
) -> pa.Array:
    """Values of a column stored as ``src`` read as ``dst`` (a change :func:`evolution_problem` accepts); a value
    that does not convert raises ``error(reason)``."""
    target = to_arrow_type(dst, column)
    if arr.type == target:
        return _truncated(arr, src, dst)
    s, d = src.root, dst.root
    if s == "DECIMAL" and d in ("FLOAT", "DOUBLE"):  # the nearest float, as Java's BigDecimal.doubleValue
        return cast_array(cast_array(arr, pa.string(), error), target, error)
    if s in _INTEGERS and d in ("FLOAT", "DOUBLE") or s == "DOUBLE" and d == "FLOAT":
        return cast_array(arr, target, error, safe=False)  # rounded to the nearest, as Java's widening
    if s == "TIMESTAMP" and d == "DATE":
        return cast_array(pc.floor_temporal(arr, unit="day"), target, error, safe=False)
    if isinstance(src, ArrayType) and isinstance(dst, ArrayType) or isinstance(src, MapType):
        return cast_array(arr, target, error)
    return _truncated(cast_array(arr, target, error, safe=not pa.types.is_timestamp(arr.type)), src, dst)


def _truncated(arr: pa.Array, src: DataType, dst: DataType) -> pa.Array:
    """A timestamp cut to a smaller precision, as Java's cast cuts it."""
    p_src, p_dst = getattr(src, "precision", None), getattr(dst, "precision", None)
    if (
        dst.root not in _TIMESTAMPS
        or src.root not in _TIMESTAMPS
        or p_src is None
        or p_dst is None
        or p_dst >= min(p_src, 6)
    ):
        return arr
    return pc.floor_temporal(arr, multiple=10 ** (6 - p_dst), unit="microsecond")
