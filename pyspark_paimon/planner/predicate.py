"""Filters, independent of Spark: a conjunction of simple column predicates, and boolean trees of them.

Spark hands the reader a list of filters that are ANDed together (``OR`` is never pushed). We translate them
into :class:`Leaf` predicates once and use the same objects for every level of pruning:

* exact evaluation on partition values (partition pruning is exact, so Spark need not re-check those);
* "could any row match" on min/max/null-count statistics (file skipping; inexact, so only for skipping);
* an Arrow expression for the exact residual filter applied after a merge.

The load-time selection (the ``filter`` and ``scan.partitions`` read options) may use ``OR`` and ``NOT`` as
well, so it is a tree (:class:`AllOf` / :class:`AnyOf` over leaves, negation pushed down to the leaves, which
three-valued logic allows). A tree is applied exactly as one Arrow expression; for pruning it gives a
conjunction of leaves it implies (:func:`implied_leaves`), and partitions are selected by evaluating the whole
tree on their values with every other column unknown (:func:`could_be_true`). Both are conservative: they
never drop a partition, file or row group that holds a matching row.

FLOAT/DOUBLE values compare as Spark compares them: NaN equals NaN and is above every other number, and -0.0
equals 0.0. Statistics may leave NaN out (Parquet's row-group statistics always do), so a leaf that a NaN
satisfies (``x > 5``, ``NOT (x = 5)``) never skips a file or row group of a floating-point column.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

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
        body = (
            f"{self.column} {self.op} {self.value!r}"
            if self.op not in ("is_null", "is_not_null")
            else f"{self.column} {self.op}"
        )
        return f"NOT ({body})" if self.negated else body


Predicate = tuple[Leaf, ...]


def comparable_value(v: Any) -> Any:
    """``v`` in the form values are compared in, so that partition values and Spark literals compare: an aware
    datetime becomes the naive UTC instant (partition values are naive); anything else is returned as is."""
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        return v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return v


def _spark_order(v: Any) -> Any:
    """``v`` as Spark orders it: a float NaN equals NaN and sorts above every number (Python's NaN compares
    false with everything); any other value is itself."""
    if isinstance(v, float) and v != v:
        return _NAN
    return v


class _NaN:
    """Spark's NaN in comparisons: equal to itself, greater than every number."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return 0

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __gt__(self, other: object) -> bool:
        return not isinstance(other, _NaN)

    def __ge__(self, other: object) -> bool:
        return True


_NAN = _NaN()


def _eval_leaf(leaf: Leaf, value: Any) -> bool | None:
    """Three-valued evaluation on one value: True/False, or None for SQL NULL (unknown)."""
    op = leaf.op
    if op == "is_null":
        result: bool | None = value is None
    elif op == "is_not_null":
        result = value is not None
    elif op == "<=>":
        result = (value is None and leaf.value is None) or (
            value is not None
            and leaf.value is not None
            and _spark_order(comparable_value(value)) == _spark_order(comparable_value(leaf.value))
        )
    elif value is None:
        return None
    elif op == "in":
        vals = [comparable_value(x) for x in leaf.value if x is not None]
        result = any(_spark_order(comparable_value(value)) == _spark_order(x) for x in vals)
        if not result and any(x is None for x in leaf.value):
            result = None
    elif op == "starts_with":
        result = isinstance(value, str) and value.startswith(leaf.value)
    else:
        if leaf.value is None:
            return None
        a, b = _spark_order(comparable_value(value)), _spark_order(comparable_value(leaf.value))
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


def _nan_satisfies(leaf: Leaf) -> bool:
    """Whether a NaN value satisfies ``leaf`` in Spark's order (NaN above every number, equal only to NaN)."""
    if leaf.op in ("is_null", "is_not_null", "starts_with"):
        return False
    literals = leaf.value if leaf.op == "in" else (leaf.value,)
    hit = leaf.op in (">", ">=") or any(_is_nan(x) for x in literals if x is not None)
    return hit != leaf.negated


def could_match_stats(leaf: Leaf, lo: Any, hi: Any, null_count: int | None, row_count: int) -> bool:
    """Whether any row of a file with these statistics could satisfy ``leaf`` (conservative).

    ``lo``/``hi`` are bounds, not necessarily values that occur: Paimon truncates string minimums to a
    prefix (still a lower bound) and rounds truncated maximums up, or stores NULL (unknown) when it cannot.
    A NULL bound, a NaN bound or values that do not compare (type mismatch) never exclude anything.
    """
    if _is_nan(lo) or _is_nan(hi):
        return True
    if (isinstance(lo, float) or isinstance(hi, float)) and _nan_satisfies(leaf):
        return True  # statistics may leave NaN out (Parquet's always do), and a NaN row matches
    lo, hi = comparable_value(lo), comparable_value(hi)
    if leaf.value is not None and leaf.op != "in":
        if _is_nan(leaf.value):
            return True
        leaf = Leaf(leaf.column, leaf.op, comparable_value(leaf.value), leaf.negated)
    elif leaf.op == "in":
        if any(_is_nan(x) for x in leaf.value):
            return True
        leaf = Leaf(leaf.column, leaf.op, tuple(comparable_value(x) for x in leaf.value), leaf.negated)
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


def _decimal_scalar(v: decimal.Decimal) -> Any:
    """A decimal literal in the narrowest decimal128 that holds it (pyarrow's inference may overshoot 38)."""
    _, digits, exponent = v.as_tuple()
    if not isinstance(exponent, int):
        return pc.scalar(v)
    scale = max(-exponent, 0)
    precision = max(len(digits) + max(exponent, 0), scale, 1)
    return pa.scalar(v, pa.decimal128(precision, scale)) if precision <= 38 else pc.scalar(v)


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
    fallback = _decimal_scalar(v) if isinstance(v, decimal.Decimal) else pc.scalar(v)
    try:
        out = pa.scalar(v, type=arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        return fallback
    if isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool):
        try:
            if out.as_py() != v:  # a lossy cast (3.5 -> int 3) would change the comparison
                return fallback
        except TypeError:
            return fallback
    return out


def _holds_exactly(v: Any, arrow_type: pa.DataType) -> bool:
    """Whether ``arrow_type`` represents the literal ``v`` without change (a few literals: a loop is fine)."""
    out = _literal(v, arrow_type)
    return isinstance(out, pa.Scalar) and out.type == arrow_type


def literal_array(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array | None:
    """``values`` (predicate literals) as an Arrow array of ``arrow_type``, or None when any of them does not fit
    it exactly (pruning by a changed value could drop a matching file)."""
    try:
        arr = pa.array(list(values), type=arrow_type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None
    for orig, back in zip(values, arr.to_pylist()):
        try:
            if comparable_value(orig) != comparable_value(back):
                return None
        except TypeError:
            return None
    return arr


def _false_if_null(e: pc.Expression) -> pc.Expression:
    return pc.coalesce(e, pc.scalar(False))


def _float_comparison(field: pc.Expression, op: str, value: Any) -> pc.Expression:
    """``field <op> value`` on a FLOAT/DOUBLE column in Spark's order (Arrow's IEEE comparisons are false for
    NaN): NaN equals NaN and is above every number; -0.0 equals 0.0 (as in IEEE)."""
    nan = pc.is_nan(field)
    if op in ("=", "<=>"):
        return nan if _is_nan(value) else field == pc.scalar(float(value))
    if op == "in":
        numbers = [float(x) for x in value if x is not None and not _is_nan(x)]
        if any(x == 0.0 for x in numbers):
            numbers += [0.0, -0.0]  # Arrow's is_in tells the zeros apart
        e = pc.is_in(field, value_set=pa.array(numbers, pa.float64()))
        return e | nan if any(_is_nan(x) for x in value if x is not None) else e
    if _is_nan(value):
        return {"<": ~nan, "<=": field.is_valid(), ">": pc.scalar(False), ">=": nan}[op]
    lit = pc.scalar(float(value))
    e = {"<": field < lit, "<=": field <= lit, ">": field > lit, ">=": field >= lit}[op]
    return e | nan if op in (">", ">=") else e


def leaf_expression(leaf: Leaf, schema: pa.Schema | None = None) -> pc.Expression:
    """The exact Arrow filter of one leaf; a comparison with NULL is false (SQL WHERE drops unknown rows)."""
    field = pc.field(leaf.column)
    arrow_type = schema.field(leaf.column).type if schema is not None and leaf.column in schema.names else None
    floating = arrow_type is not None and pa.types.is_floating(arrow_type)
    if floating and leaf.op in ("=", "<=>", "<", "<=", ">", ">=", "in") and leaf.value is not None:
        e = pc.if_else(field.is_null(), pa.scalar(None, pa.bool_()), _float_comparison(field, leaf.op, leaf.value))
        if leaf.op == "<=>":
            e = _false_if_null(e)  # NULL <=> 1.0 is false, not unknown
        elif leaf.op == "in" and any(x is None for x in leaf.value):
            e = pc.if_else(e, e, pa.scalar(None, pa.bool_()))  # x IN (.., NULL) is true or unknown, never false
        return _false_if_null(~e if leaf.negated else e)
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
        if arrow_type is not None:
            # A value the column's type cannot hold exactly (1.005 for DECIMAL(10, 2)) equals no value of it.
            vals = [x for x in vals if _holds_exactly(x, arrow_type)]
        value_set = pa.array(vals, type=arrow_type) if arrow_type is not None else pa.array(vals)
        e = pc.is_in(field, value_set=value_set)
        e = pc.if_else(field.is_null(), pa.scalar(None, pa.bool_()), e)
        if leaf.negated and len(vals) != len(leaf.value):
            e = pc.if_else(e, e, pa.scalar(None, pa.bool_()))  # NOT IN (.., NULL) is never true
    elif leaf.op == "starts_with":
        e = pc.starts_with(field, pattern=leaf.value)
    else:
        lit = _literal(leaf.value, arrow_type)
        e = {"=": field == lit, "<": field < lit, "<=": field <= lit, ">": field > lit, ">=": field >= lit}[leaf.op]
    if leaf.negated:
        e = ~e
    return _false_if_null(e)


def to_arrow_expression(pred: Sequence[Leaf], schema: pa.Schema | None = None) -> pc.Expression | None:
    """The exact Arrow filter of a conjunction (SQL semantics: a NULL comparison drops the row)."""
    exprs = [leaf_expression(leaf, schema) for leaf in pred]
    if not exprs:
        return None
    out = exprs[0]
    for e in exprs[1:]:
        out = out & e
    return out


# ------------------------------------------------------------------------------------------------------
# Boolean trees (negation normal form: NOT only inside leaves)
# ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AllOf:
    """Every child holds (SQL ``AND``)."""

    children: tuple["Expr", ...]


@dataclass(frozen=True)
class AnyOf:
    """Some child holds (SQL ``OR``)."""

    children: tuple["Expr", ...]


Expr = Union[Leaf, AllOf, AnyOf]


def negate(expr: Expr) -> Expr:
    """``NOT expr`` in negation normal form (De Morgan; exact in SQL's three-valued logic)."""
    if isinstance(expr, Leaf):
        return expr.negate() if not expr.negated else Leaf(expr.column, expr.op, expr.value, False)
    if isinstance(expr, AllOf):
        return AnyOf(tuple(negate(c) for c in expr.children))
    return AllOf(tuple(negate(c) for c in expr.children))


def all_of(children: Iterable[Expr]) -> Expr:
    """A conjunction, flattened (one child is itself)."""
    flat: list[Expr] = []
    for c in children:
        flat.extend(c.children if isinstance(c, AllOf) else (c,))
    return flat[0] if len(flat) == 1 else AllOf(tuple(flat))


def any_of(children: Iterable[Expr]) -> Expr:
    """A disjunction, flattened (one child is itself)."""
    flat: list[Expr] = []
    for c in children:
        flat.extend(c.children if isinstance(c, AnyOf) else (c,))
    return flat[0] if len(flat) == 1 else AnyOf(tuple(flat))


def tree_columns(expr: Expr) -> set[str]:
    if isinstance(expr, Leaf):
        return {expr.column}
    return set().union(*(tree_columns(c) for c in expr.children))


def _value_set(leaves: Sequence[Leaf], column: str) -> list[Any] | None:
    """Non-null values ``column`` is restricted to by one of ``leaves`` (``=``, ``<=>`` or ``IN``), or None."""
    for leaf in leaves:
        if leaf.column != column or leaf.negated:
            continue
        if leaf.op in ("=", "<=>") and leaf.value is not None:
            return [leaf.value]
        if leaf.op == "in" and all(v is not None for v in leaf.value):
            return list(leaf.value)
    return None


def implied_leaves(expr: Expr) -> Predicate:
    """A conjunction of leaves that every row satisfying ``expr`` satisfies (for pruning only).

    Leaves of the top-level ``AND`` are kept as they are; an ``OR`` contributes ``col IN (...)`` for each column
    that every branch restricts to a set of values (``a = 1 OR a = 2``, or Paimon's ``scan.partitions``
    specs), and nothing else. Weaker than ``expr``, never stronger: the exact filter still runs on the rows.
    """
    if isinstance(expr, Leaf):
        return (expr,)
    if isinstance(expr, AllOf):
        return tuple(leaf for c in expr.children for leaf in implied_leaves(c))
    branches = [implied_leaves(c) for c in expr.children]
    out = []
    for column in sorted({leaf.column for leaf in branches[0]}):
        union: list[Any] = []
        for leaves in branches:
            values = _value_set(leaves, column)
            if values is None:
                break
            union.extend(v for v in values if not any(comparable_value(v) == comparable_value(u) for u in union))
        else:
            out.append(Leaf(column, "in", tuple(union)))
    return tuple(out)


def could_be_true(expr: Expr, leaf_may_hold: Callable[[Leaf], bool]) -> bool:
    """Whether ``expr`` can hold, given for each leaf whether it may hold (False only when it surely does not)."""
    if isinstance(expr, Leaf):
        return leaf_may_hold(expr)
    if isinstance(expr, AllOf):
        return all(could_be_true(c, leaf_may_hold) for c in expr.children)
    return any(could_be_true(c, leaf_may_hold) for c in expr.children)


def may_hold_on_values(expr: Expr, values: Mapping[str, Any]) -> bool:
    """``expr`` on rows whose columns in ``values`` (partition values) are fixed and all others unknown: False
    only when no such row can satisfy it. Exact when ``expr`` names only columns in ``values``."""
    return could_be_true(expr, lambda leaf: leaf.column not in values or _eval_leaf(leaf, values[leaf.column]) is True)


def tree_expression(expr: Expr, schema: pa.Schema | None = None) -> pc.Expression:
    """The exact Arrow filter of a tree. Each leaf maps NULL to false, which is exact in negation normal form
    (AND and OR are monotone, so a row passes three-valued logic exactly when it passes with unknowns false)."""
    if isinstance(expr, Leaf):
        return leaf_expression(expr, schema)
    parts = [tree_expression(c, schema) for c in expr.children]
    out = parts[0]
    for e in parts[1:]:
        out = (out & e) if isinstance(expr, AllOf) else (out | e)
    return out
