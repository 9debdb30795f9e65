"""Filters, independent of Spark: a conjunction of simple column predicates.

Spark hands the reader a list of filters that are ANDed together (``OR`` is never pushed). We translate them
into :class:`Leaf` predicates once and use the same objects for every level of pruning:

* exact evaluation on partition values (partition pruning is exact, so Spark need not re-check those);
* "could any row match" on min/max/null-count statistics (file skipping; inexact, so only for skipping);
* an Arrow expression for the exact residual filter applied after a merge.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

OPS = ("=", "<=>", "<", "<=", ">", ">=", "in", "is_null", "is_not_null", "starts_with")


@dataclass(frozen=True)
class Leaf:
    column: str
    op: str
    value: Any = None
    negated: bool = False

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown predicate op {self.op}")

    def negate(self) -> "Leaf":
        return Leaf(self.column, self.op, self.value, not self.negated)

    def __str__(self) -> str:
        body = f"{self.column} {self.op} {self.value!r}" if self.op not in ("is_null", "is_not_null") else \
            f"{self.column} {self.op}"
        return f"NOT ({body})" if self.negated else body


Predicate = tuple[Leaf, ...]


def _cmp_value(v: Any) -> Any:
    # Normalise Python values so partition values and Spark literals compare (e.g. date vs datetime).
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        return v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    if isinstance(v, float) and v.is_integer():
        return v
    return v


def _eval_leaf(leaf: Leaf, value: Any) -> bool | None:
    """Three-valued evaluation on one value: True/False, or None for SQL NULL (unknown)."""
    op = leaf.op
    if op == "is_null":
        result: bool | None = value is None
    elif op == "is_not_null":
        result = value is not None
    elif op == "<=>":
        result = (value is None and leaf.value is None) or (
            value is not None and leaf.value is not None and _cmp_value(value) == _cmp_value(leaf.value))
    elif value is None:
        return None
    elif op == "in":
        vals = [_cmp_value(x) for x in leaf.value if x is not None]
        result = _cmp_value(value) in vals
        if not result and any(x is None for x in leaf.value):
            result = None
    elif op == "starts_with":
        result = isinstance(value, str) and value.startswith(leaf.value)
    else:
        if leaf.value is None:
            return None
        a, b = _cmp_value(value), _cmp_value(leaf.value)
        try:
            result = {"=": a == b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        except TypeError:
            return None
    if result is None:
        return None
    return (not result) if leaf.negated else result


def eval_on_values(pred: Iterable[Leaf], values: Mapping[str, Any]) -> bool:
    """Exact evaluation of the leaves on columns present in ``values`` (others are ignored)."""
    for leaf in pred:
        if leaf.column in values and _eval_leaf(leaf, values[leaf.column]) is not True:
            return False
    return True


def leaves_on(pred: Iterable[Leaf], columns: Iterable[str]) -> Predicate:
    cols = set(columns)
    return tuple(leaf for leaf in pred if leaf.column in cols)


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def could_match_stats(leaf: Leaf, lo: Any, hi: Any, null_count: int | None, row_count: int) -> bool:
    """Whether any row of a file with these statistics could satisfy ``leaf`` (conservative).

    ``lo``/``hi`` are bounds, not necessarily values that occur: Paimon truncates string minimums to a
    prefix (still a lower bound) and rounds truncated maximums up, or stores NULL (unknown) when it cannot.
    A NULL bound, a NaN bound or values that do not compare (type mismatch) never exclude anything.
    """
    if _is_nan(lo) or _is_nan(hi):
        return True
    lo, hi = _cmp_value(lo), _cmp_value(hi)
    if leaf.value is not None and leaf.op != "in":
        if _is_nan(leaf.value):
            return True
        leaf = Leaf(leaf.column, leaf.op, _cmp_value(leaf.value), leaf.negated)
    elif leaf.op == "in":
        if any(_is_nan(x) for x in leaf.value):
            return True
        leaf = Leaf(leaf.column, leaf.op, tuple(_cmp_value(x) for x in leaf.value), leaf.negated)
    if leaf.negated:
        # NOT (x = v) can be excluded only when every value equals v and nothing is null.
        if leaf.op == "=" and lo is not None and lo == hi == leaf.value and null_count == 0:
            return False
        if leaf.op == "is_null":
            return not (null_count is not None and null_count == row_count)
        if leaf.op == "is_not_null":
            return null_count is None or null_count > 0
        return True
    if leaf.op == "is_null" or (leaf.op == "<=>" and leaf.value is None):
        return null_count is None or null_count > 0
    if leaf.op == "is_not_null":
        return null_count is None or null_count < row_count
    if lo is None or hi is None:
        return not (null_count is not None and null_count == row_count)
    v = leaf.value
    try:
        if leaf.op in ("=", "<=>"):
            return v is not None and lo <= v <= hi if leaf.op == "=" else (v is None or lo <= v <= hi)
        if leaf.op == "in":
            return any(x is not None and lo <= x <= hi for x in v)
        if leaf.op == "<":
            return lo < v
        if leaf.op == "<=":
            return lo <= v
        if leaf.op == ">":
            return hi > v
        if leaf.op == ">=":
            return hi >= v
        if leaf.op == "starts_with":
            # Truncated string stats still bound the prefix range.
            return not (hi < v and not hi.startswith(v[: len(hi)])) and not (lo > v and not lo.startswith(v))
    except TypeError:
        return True
    return True


def _literal(v: Any, arrow_type: pa.DataType | None) -> Any:
    if arrow_type is None or v is None:
        return pc.scalar(v)
    if isinstance(v, decimal.Decimal) and pa.types.is_floating(arrow_type):
        v = float(v)
    if pa.types.is_timestamp(arrow_type) and isinstance(v, _dt.datetime):
        if arrow_type.tz is None and v.tzinfo is not None:
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        elif arrow_type.tz is not None and v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
    try:
        out = pa.scalar(v, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return pc.scalar(v)
    if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
        try:
            if out.as_py() != v:  # a lossy cast (3.5 -> int 3) would change the comparison
                return pc.scalar(v)
        except TypeError:
            return pc.scalar(v)
    return out


def _false_if_null(e: pc.Expression) -> pc.Expression:
    return pc.coalesce(e, pc.scalar(False))


def to_arrow_expression(pred: Sequence[Leaf], schema: pa.Schema | None = None) -> pc.Expression | None:
    """The exact Arrow filter of a conjunction (SQL semantics: a NULL comparison drops the row)."""
    exprs = []
    for leaf in pred:
        field = pc.field(leaf.column)
        arrow_type = schema.field(leaf.column).type if schema is not None and leaf.column in schema.names else None
        if leaf.op == "is_null":
            e = field.is_null()
        elif leaf.op == "is_not_null":
            e = field.is_valid()
        elif leaf.op == "<=>":
            if leaf.value is None:
                e = field.is_null()
            else:
                e = _false_if_null(field == _literal(leaf.value, arrow_type))
        elif leaf.op == "in":
            vals = [x for x in leaf.value if x is not None]
            value_set = pa.array(vals, type=arrow_type) if arrow_type is not None else pa.array(vals)
            e = pc.is_in(field, value_set=value_set)
            e = pc.if_else(field.is_null(), pa.scalar(None, pa.bool_()), e)
        elif leaf.op == "starts_with":
            e = pc.starts_with(field, pattern=leaf.value)
        else:
            lit = _literal(leaf.value, arrow_type)
            e = {"=": field == lit, "<": field < lit, "<=": field <= lit, ">": field > lit, ">=": field >= lit}[
                leaf.op]
        if leaf.negated:
            e = ~e
        # SQL: a comparison with NULL is unknown, and WHERE drops unknown rows.
        exprs.append(_false_if_null(e))
    if not exprs:
        return None
    out = exprs[0]
    for e in exprs[1:]:
        out = out & e
    return out
