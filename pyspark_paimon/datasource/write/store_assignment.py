"""Which values a write casts into a column of another type: Spark's ANSI store assignment, in one place.

Spark's INSERT casts a value to the column's type when the cast keeps its meaning (``spark.sql.
storeAssignmentPolicy=ANSI``): numbers into numbers, with a runtime error instead of a wrapped value when
one does not fit. Python data source writes never get those casts from Spark (``df.write.save`` hands the
DataFrame's own types to the writer), so the Spark writer and the Python ``Table.write_arrow`` apply them here.

The rules, by type (checked before any data is written; the Spark writer checks the DataFrame schema on the
driver with :func:`assignment_problem`, so a refused write fails before any task runs):

* allowed: the same type, NULL into anything, integer widening (INT into BIGINT), integers and decimals into
  FLOAT/DOUBLE and FLOAT into DOUBLE (approximate, as in Spark), integers, decimals and floats into DECIMAL,
  STRING/VARCHAR flavours into STRING, BINARY flavours into BINARY, DATE into TIMESTAMP (midnight), and
  arrays, maps and structs whose elements are allowed;
* refused as lossy: integer narrowing (BIGINT into INT), FLOAT/DOUBLE/DECIMAL into integers (fractions and
  range), TIMESTAMP into DATE (time of day). Arrow data given to ``Table.write_arrow`` is the exception for
  numbers (see ``declared`` in :func:`assignment_problem`): there they narrow when every value fits exactly;
* refused as changing the meaning: STRING into numbers or dates, BOOLEAN to or from numbers, numbers or dates
  into STRING (Spark would format them; its text forms are its own, so cast explicitly), DATE into
  TIMESTAMP_LTZ (midnight in which zone?).

Values are then checked (:func:`cast_for_store`): a value outside the target's range raises (never wraps or
becomes infinity), and a value a DECIMAL column cannot hold exactly raises instead of being rounded (stricter
than Spark, which rounds half up: nothing is changed silently). FLOAT/DOUBLE columns take the nearest value.

A FLOAT or DOUBLE goes into a DECIMAL(p, s) column as its shortest round-trip decimal (what ``repr`` prints:
19.99 for the double nearest 19.99, whose exact binary value is 19.989999999999998...), when that decimal has
at most ``s`` fraction digits and fits ``p``; any other value is refused, naming it and the column
(:func:`float_to_decimal`). Comparing the exact binary value with the decimal would refuse about one random
two-decimal price in seven.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import SchemaMismatchError


def _family(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "float"
    if pa.types.is_decimal(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_binary_view(t)
    ):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_null(t):
        return "null"
    return str(t)  # bool, time, nested...: see assignment_problem


_NUMBERS = ("integer", "float", "decimal")


def _fields(t: pa.DataType) -> list[pa.Field]:
    return [t.field(i) for i in range(t.num_fields)]


def assignment_problem(src: pa.DataType, want: pa.DataType, declared: bool = True) -> str | None:
    """Why values of ``src`` are not written into a column of ``want`` (None: they are, maybe value-checked).

    ``declared``: ``src`` is a type the user declared (a Spark DataFrame's schema). Arrow data handed to
    ``Table.write_arrow`` often has types inferred by pyarrow (every Python int is int64, every float double),
    so there numbers narrow to the column's number type when every value fits exactly (checked as they are
    cast), instead of being refused by type."""
    if pa.types.is_dictionary(src):
        src = src.value_type
    if src == want:
        return None
    s, w = _family(src), _family(want)
    if s == "null":
        return None
    if pa.types.is_list(want) or pa.types.is_large_list(want):
        if not (pa.types.is_list(src) or pa.types.is_large_list(src)):
            return "an array column takes only arrays"
        return assignment_problem(src.value_type, want.value_type, declared)
    if pa.types.is_map(want):
        if not pa.types.is_map(src):
            return "a map column takes only maps"
        return assignment_problem(src.key_type, want.key_type, declared) or assignment_problem(
            src.item_type, want.item_type, declared
        )
    if pa.types.is_struct(want):
        if not pa.types.is_struct(src):
            return "a struct column takes only structs"
        have, need = _fields(src), _fields(want)
        if [f.name for f in have] != [f.name for f in need]:
            return (
                f"the struct fields {[f.name for f in have]} differ from the column's {[f.name for f in need]}; "
                "they must match in name and order"
            )
        for a, b in zip(have, need):
            problem = assignment_problem(a.type, b.type, declared)
            if problem is not None:
                return f"struct field '{b.name}': {problem}"
        return None
    if not declared and s in _NUMBERS and w in _NUMBERS:
        return None
    if s == w == "integer":
        return None if want.bit_width >= src.bit_width else f"an {src} value may not fit (integer narrowing is lossy)"
    if w == "integer" and s in ("float", "decimal"):
        return "a fractional number would lose its fraction (and may not fit)"
    if w in ("float", "decimal") and s in ("integer", "float", "decimal"):
        return None
    if s == w and s in ("string", "binary"):
        return None
    if s == w == "timestamp":
        return None  # units and zones: the writer keeps the instant, or the wall clock for TIMESTAMP
    if s == "date" and w == "timestamp":
        return None if want.tz is None else "a DATE has no time zone to place its midnight in"
    if s == "timestamp" and w == "date":
        return "the time of day would be lost"
    if w == "string":
        return "Spark's text form of a value is its own; cast it to a string explicitly if that is meant"
    return "the cast would change what the value means"


def _first(col: pa.ChunkedArray | pa.Array, mask: pa.ChunkedArray | pa.Array) -> object:
    return col.filter(mask)[0].as_py()


def _refuse_overflow(col: pa.ChunkedArray, cast: pa.ChunkedArray, column: str, sql_type: str) -> None:
    """A finite value that became infinite (DOUBLE or DECIMAL into FLOAT) did not fit."""
    source = col.cast(pa.float64()) if pa.types.is_decimal(col.type) else col
    overflow = pc.and_(pc.is_finite(source), pc.invert(pc.is_finite(cast)))
    if pc.any(overflow).as_py():
        raise SchemaMismatchError(
            f"Column '{column}' holds {_first(col, overflow)!r}, which is outside the range of a {sql_type} column. "
            "Filter or transform such values first."
        )


# Arrow formats a float as its shortest round-trip digits (``repr``'s) in one of two forms, "123.45" or
# "1.2345e+17" / "5e-324"; the integer part has no leading zeros but for "0".
_SHORTEST = r"^-?(?P<whole>\d+)(?:\.(?P<fraction>\d+))?(?:e(?P<exponent>[-+]\d+))?$"
# The fast path's domain: |v| * 10**s below 2**50 (and 10**s exact in a double). There n = rint(v * 10**s) is the
# scaled shortest decimal whenever that has at most s fraction digits (the product's error is below 1/4), and
# n / 10**s (one correctly rounded division of exact operands) gives back v exactly when it is.
_FAST_LIMIT = float(2**50)
_FAST_MAX_SCALE = 22


def float_to_decimal(col: pa.ChunkedArray, want: pa.DataType, column: str, sql_type: str) -> pa.ChunkedArray:
    """FLOAT/DOUBLE values into DECIMAL(p, s) ``want``: each value's shortest round-trip decimal, refused (naming
    the value and the column) when that has more than ``s`` fraction digits or more than ``p - s`` integer
    digits, or for NaN and infinities. Vectorised: no Python runs per value."""
    values = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    not_finite = pc.invert(pc.fill_null(pc.is_finite(values), True))
    if pc.any(not_finite).as_py():
        raise SchemaMismatchError(
            f"Column '{column}' holds {_first(values, not_finite)!r}, which a {sql_type} column cannot store (it is "
            "not a number). Filter such values or map them to NULL first."
        )
    scale = want.scale
    fast = pa.types.is_float64(values.type) and pa.types.is_decimal128(want) and sys.byteorder == "little"
    if fast and scale <= _FAST_MAX_SCALE:
        x = pc.fill_null(values, 0.0).to_numpy(zero_copy_only=False)
        factor = 10.0**scale
        with np.errstate(over="ignore"):  # a huge value becomes inf here, and takes the text path
            outside = (np.abs(x) * factor >= _FAST_LIMIT).any()
        if not outside:
            n = np.rint(x * factor)
            exact = n / factor == x
            whole = np.abs(n) < 10.0**want.precision
            return pa.chunked_array([_decimals_of(n.astype(np.int64), values, want, exact, whole, column, sql_type)])
    return pa.chunked_array([_decimals_by_text(values, want, column, sql_type)])


def _decimals_of(
    unscaled: np.ndarray,
    values: pa.Array,
    want: pa.DataType,
    exact: np.ndarray,
    fits: np.ndarray,
    column: str,
    sql_type: str,
) -> pa.Array:
    """The fast path's result: ``unscaled`` (int64, already checked) as the decimal128 words Arrow stores."""
    _refuse(values, pa.array(~exact), pa.array(~fits), column, sql_type)
    words = np.empty((len(unscaled), 2), dtype=np.int64)
    words[:, 0] = unscaled
    words[:, 1] = unscaled >> 63  # two's complement: the high word is the sign
    out = pa.Array.from_buffers(want, len(unscaled), [None, pa.py_buffer(words)])
    return out if values.null_count == 0 else pc.if_else(pc.is_valid(values), out, pa.scalar(None, want))


def _decimals_by_text(values: pa.Array, want: pa.DataType, column: str, sql_type: str) -> pa.Array:
    """Every float through its shortest digits as text (Arrow's float formatting prints ``repr``'s digits, and
    its text-to-decimal cast is exact): for FLOAT columns and values outside the fast path's domain."""
    text = values.cast(pa.string())
    parts = pc.extract_regex(text, pattern=_SHORTEST)
    exponent = parts.field("exponent")
    exponent = pc.cast(pc.if_else(pc.equal(exponent, ""), "0", pc.utf8_ltrim(exponent, characters="+")), pa.int32())
    fraction = pc.subtract(pc.utf8_length(parts.field("fraction")), exponent)
    whole_text = parts.field("whole")
    whole = pc.if_else(pc.equal(whole_text, "0"), 0, pc.add(pc.utf8_length(whole_text), exponent))
    _refuse(
        values,
        pc.fill_null(pc.greater(fraction, want.scale), False),
        pc.fill_null(pc.greater(whole, want.precision - want.scale), False),
        column,
        sql_type,
    )
    return text.cast(want)


def _refuse(values: pa.Array, rounded: pa.Array, too_large: pa.Array, column: str, sql_type: str) -> None:
    """Name the first value the column would have to round, or that it cannot hold at all."""
    rounded = pc.and_(rounded, pc.is_valid(values))
    if pc.any(rounded).as_py():
        raise SchemaMismatchError(
            f"Column '{column}' holds {_first(values, rounded)!r}, which a {sql_type} column cannot store exactly (its "
            "shortest decimal has more fraction digits than the column's scale: it would be rounded). Round it to that "
            "scale first if that is meant."
        )
    too_large = pc.and_(too_large, pc.is_valid(values))
    if pc.any(too_large).as_py():
        raise SchemaMismatchError(
            f"Column '{column}' holds {_first(values, too_large)!r}, which is outside the range of a {sql_type} "
            "column. Filter or transform such values first."
        )


def decimal_to_float(values: Any, want: pa.DataType) -> Any:
    """DECIMAL ``values`` (an array, chunked array or scalar) as FLOAT/DOUBLE ``want``, each the nearest float.

    Arrow's direct cast scales in floating point and misses the nearest double for about one value in 75
    (199999.99 becomes 199999.99000000002); its decimal text is exact and its text-to-float parse is correctly
    rounded."""
    return values.cast(pa.string()).cast(want)


def cast_for_store(
    col: pa.ChunkedArray, want: pa.DataType, column: str, sql_type: str, declared: bool = False
) -> pa.ChunkedArray:
    """``col`` cast to ``want`` under the rules above; raises :class:`SchemaMismatchError` naming the column.

    The executors' casts take the data's types as undeclared (see :func:`assignment_problem`): a Spark write
    was checked against the declared DataFrame types on the driver already. Timestamps are the caller's (their
    unit and zone handling depends on the column's precision)."""
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    src = col.type
    if src == want:
        return col
    problem = assignment_problem(src, want, declared)
    if problem is not None:
        raise SchemaMismatchError(
            f"Column '{column}' has type {src}, which is not written to a {sql_type} column ({problem}); Spark's "
            f"store assignment refuses it too. Cast the column to {sql_type} first if that is meant."
        )
    try:
        if pa.types.is_floating(want):
            # approximate: the nearest value, as Spark casts
            cast = decimal_to_float(col, want) if pa.types.is_decimal(src) else col.cast(want, safe=False)
            if not pa.types.is_integer(src):
                _refuse_overflow(col, cast, column, sql_type)
            return cast
        if pa.types.is_floating(src) and pa.types.is_decimal(want):
            return float_to_decimal(col if src.bit_width >= 32 else col.cast(pa.float32()), want, column, sql_type)
        if pa.types.is_integer(src) and pa.types.is_decimal(want):
            # pyarrow checks integer -> decimal by type (int64 needs 19 digits); check the values instead.
            col = col.cast(pa.decimal128(38, 0))
        return col.cast(want, safe=True)  # integers, decimals: overflow, lost digits and fractions raise
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaMismatchError(
            f"Column '{column}' ({src}) has a value that a {sql_type} column (Arrow {want}) cannot hold ({e}). "
            f"Filter or transform such values, or cast the column to {sql_type} first."
        ) from None


__all__ = ["assignment_problem", "cast_for_store", "decimal_to_float", "float_to_decimal"]
