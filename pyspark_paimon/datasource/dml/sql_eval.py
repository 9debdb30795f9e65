"""SQL value expressions (``UPDATE ... SET v = <expr>``, a MERGE's conditions and values) evaluated on Arrow.

DML takes its new values and its merge conditions as SQL text, as Spark's ``UPDATE`` / ``MERGE INTO`` and
delta-rs's builders do. The text is parsed with sqlglot's Spark dialect and evaluated column-at-a-time with
``pyarrow.compute``: no Python runs per row.

Supported: column references (``v``, or ``source.v`` / ``target.v`` in a merge), literals (numbers, strings,
``true``/``false``, ``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``), ``+ - * / % div`` and unary minus,
comparisons (``= <> != < <= > >= <=>``), ``AND OR NOT``, ``IS [NOT] NULL``, ``[NOT] IN (...)``,
``[NOT] BETWEEN``, ``CASE``, ``IF``, ``CAST`` and the functions ``coalesce``, ``nullif``, ``abs``, ``round``,
``upper``, ``lower``, ``trim``, ``length``, ``concat`` / ``||``, ``substring``, ``greatest``, ``least``.
Arithmetic on integers is checked (overflow raises, as Spark's ANSI mode); ``/`` divides as DOUBLE (a DECIMAL
becomes its nearest DOUBLE, as in writes). Anything else is refused with an :class:`OptionError` quoting the text,
never guessed.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import SqlglotError

from pyspark_paimon.datasource.write.store_assignment import decimal_to_float
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.ddl import parse_ddl

_Node = Any  # a sqlglot node (its base class differs between sqlglot releases)
Value = Any  # a pa.Array / pa.ChunkedArray or a pa.Scalar (a literal not yet broadcast)

_ARITHMETIC: dict[type, str] = {
    exp.Add: "add_checked",
    exp.Sub: "subtract_checked",
    exp.Mul: "multiply_checked",
}
_COMPARE: dict[type, str] = {
    exp.EQ: "equal",
    exp.NEQ: "not_equal",
    exp.LT: "less",
    exp.LTE: "less_equal",
    exp.GT: "greater",
    exp.GTE: "greater_equal",
}
_UNARY_FUNCS: dict[type, str] = {
    exp.Upper: "utf8_upper",
    exp.Lower: "utf8_lower",
    exp.Abs: "abs_checked",
    exp.Length: "utf8_length",
}


@dataclass(frozen=True)
class Scope:
    """The columns an expression may name: ``qualifier -> {column: values}`` (a plain UPDATE has one
    qualifier, a merge ``source`` and ``target``). An unqualified name must be unique across qualifiers, or
    the ``default`` qualifier's column when it has one."""

    columns: Mapping[str, Mapping[str, Value]]
    num_rows: int
    default: str | None = None

    def lookup(self, name: str, qualifier: str | None, text: str) -> Value:
        if qualifier is not None:
            cols = self.columns.get(qualifier.lower())
            if cols is None:
                raise OptionError(
                    f"Expression '{text}' names '{qualifier}.{name}', but '{qualifier}' is not one of "
                    f"{sorted(self.columns)}."
                )
            return _column(cols, name, f"{qualifier}.", text)
        if self.default is not None:
            return _column(self.columns[self.default], name, "", text)
        holders = [q for q, cols in self.columns.items() if _find(cols, name) is not None]
        if len(holders) > 1:
            raise OptionError(
                f"Expression '{text}': column '{name}' is ambiguous; qualify it as "
                f"{' or '.join(f'{q}.{name}' for q in sorted(holders))}."
            )
        if not holders:
            known = sorted({c for cols in self.columns.values() for c in cols})
            raise OptionError(f"Expression '{text}' names column '{name}', which does not exist (columns: {known}).")
        return _column(self.columns[holders[0]], name, "", text)


def _find(cols: Mapping[str, Value], name: str) -> str | None:
    if name in cols:
        return name
    lower = [c for c in cols if c.lower() == name.lower()]
    return lower[0] if len(lower) == 1 else None


def _column(cols: Mapping[str, Value], name: str, prefix: str, text: str) -> Value:
    found = _find(cols, name)
    if found is None:
        raise OptionError(
            f"Expression '{text}' names column '{prefix}{name}', which does not exist (columns: {sorted(cols)})."
        )
    return cols[found]


def parse_expression(text: str) -> _Node:
    """Parse ``text`` once (errors name the text); :func:`evaluate` takes the result."""
    if not isinstance(text, str) or not text.strip():
        raise OptionError(f"An SQL expression must be non-empty text, got {text!r}.")
    try:
        node = sqlglot.parse_one(text, read="spark")
    except SqlglotError as e:
        raise OptionError(f"Expression '{text}' is not valid SQL: {e}") from None
    return node


def evaluate(text: str | _Node, scope: Scope) -> pa.ChunkedArray:
    """The values of the expression for every row of ``scope`` (literals broadcast to ``scope.num_rows``)."""
    node = parse_expression(text) if isinstance(text, str) else text
    shown = text if isinstance(text, str) else node.sql(dialect="spark")
    try:
        out = _Evaluator(scope, shown).eval(node)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise OptionError(f"Expression '{shown}' cannot be evaluated: {e}") from None
    return _broadcast(out, scope.num_rows)


def evaluate_condition(text: str | _Node, scope: Scope) -> pa.ChunkedArray:
    """A boolean expression as a mask where NULL counts as false (SQL's WHERE / WHEN semantics)."""
    values = evaluate(text, scope)
    if not pa.types.is_boolean(values.type) and not pa.types.is_null(values.type):
        raise OptionError(f"Condition '{text}' is of type {values.type}, not BOOLEAN.")
    return pc.fill_null(values.cast(pa.bool_()), False)


def _broadcast(v: Value, n: int) -> pa.ChunkedArray:
    if isinstance(v, pa.Scalar):
        return pa.chunked_array([pa.repeat(v, n)], type=v.type)
    if isinstance(v, pa.Array):
        return pa.chunked_array([v], type=v.type)
    return v


def _literal_number(text: str) -> pa.Scalar:
    try:
        return pa.scalar(int(text), pa.int64())
    except ValueError:
        pass
    if any(c in text for c in "eE"):
        return pa.scalar(float(text), pa.float64())
    d = decimal.Decimal(text)
    digits = len(d.as_tuple().digits)
    scale = max(0, -int(d.as_tuple().exponent))
    return pa.scalar(d, pa.decimal128(max(digits, scale, 1), scale))


class _Evaluator:
    def __init__(self, scope: Scope, text: str):
        self.scope = scope
        self.text = text

    def fail(self, why: str) -> OptionError:
        return OptionError(f"Expression '{self.text}': {why}.")

    def eval(self, node: _Node) -> Value:  # noqa: C901 - one dispatch over node kinds
        if isinstance(node, exp.Paren):
            return self.eval(node.this)
        if isinstance(node, exp.Column):
            if not isinstance(node.this, exp.Identifier):
                raise self.fail(f"'{node.sql()}' is not a column reference")
            table = node.args.get("table")
            return self.scope.lookup(node.name, table.name if table is not None else None, self.text)
        if isinstance(node, exp.Literal):
            return pa.scalar(node.this, pa.string()) if node.is_string else _literal_number(node.this)
        if isinstance(node, exp.Boolean):
            return pa.scalar(bool(node.this), pa.bool_())
        if isinstance(node, exp.Null):
            return pa.scalar(None, pa.null())
        if isinstance(node, exp.Neg):
            return pc.negate_checked(self.eval(node.this))
        if type(node) in _ARITHMETIC:
            a, b = self.coerce(self.eval(node.this), self.eval(node.expression))
            return pc.call_function(_ARITHMETIC[type(node)], [a, b])
        if isinstance(node, exp.Div):
            a, b = self.eval(node.this), self.eval(node.expression)
            return pc.divide(self.as_double(a), self.as_double(b))
        if isinstance(node, exp.IntDiv):
            return pc.divide_checked(self.eval(node.this), self.eval(node.expression))
        if isinstance(node, exp.Mod):
            a, b = self.coerce(self.eval(node.this), self.eval(node.expression))
            return pc.subtract_checked(a, pc.multiply_checked(pc.divide_checked(a, b), b))
        if type(node) in _COMPARE:
            a, b = self.coerce(self.eval(node.this), self.eval(node.expression))
            return pc.call_function(_COMPARE[type(node)], [a, b])
        if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            a, b = self.coerce(self.eval(node.this), self.eval(node.expression))
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            eq = pc.if_else(pc.or_(pc.is_null(a), pc.is_null(b)), both_null, pc.equal(a, b))
            return pc.invert(eq) if isinstance(node, exp.NullSafeNEQ) else eq
        if isinstance(node, exp.And):
            return pc.and_kleene(self.boolean(node.this), self.boolean(node.expression))
        if isinstance(node, exp.Or):
            return pc.or_kleene(self.boolean(node.this), self.boolean(node.expression))
        if isinstance(node, exp.Not):
            return pc.invert(self.boolean(node.this))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.fail("only IS NULL / IS NOT NULL are supported")
            return pc.is_null(self.eval(node.this))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                raise self.fail("subqueries are not supported")
            value = self.eval(node.this)
            out = None
            for item in node.expressions:
                a, b = self.coerce(value, self.eval(item))
                eq = pc.equal(a, b)
                out = eq if out is None else pc.or_kleene(out, eq)
            return out if out is not None else pa.scalar(False)
        if isinstance(node, exp.Between):
            value = self.eval(node.this)
            lo = pc.greater_equal(*self.coerce(value, self.eval(node.args["low"])))
            hi = pc.less_equal(*self.coerce(value, self.eval(node.args["high"])))
            return pc.and_kleene(lo, hi)
        if isinstance(node, exp.Case):
            if node.this is not None:
                raise self.fail("use CASE WHEN <condition> THEN ... (the CASE <value> WHEN form is not supported)")
            return self.case([(i.this, i.args["true"]) for i in node.args.get("ifs") or []], node.args.get("default"))
        if isinstance(node, exp.If):
            return self.case([(node.this, node.args["true"])], node.args.get("false"))
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self.cast(self.eval(node.this), node.args["to"])
        if isinstance(node, exp.Coalesce):
            values = self.unify([self.eval(node.this), *(self.eval(e) for e in node.expressions)])
            return pc.coalesce(*values)
        if isinstance(node, exp.Nullif):
            a, b = self.coerce(self.eval(node.this), self.eval(node.expression))
            return pc.if_else(pc.fill_null(pc.equal(a, b), False), pa.scalar(None, a.type), a)
        if type(node) in _UNARY_FUNCS:
            return pc.call_function(_UNARY_FUNCS[type(node)], [self.eval(node.this)])
        if isinstance(node, exp.Trim):
            if node.args.get("expression") is not None or node.args.get("position"):
                raise self.fail("only TRIM(<string>) is supported")
            return pc.utf8_trim_whitespace(self.eval(node.this))
        if isinstance(node, exp.Round):
            digits = node.args.get("decimals")
            nd = 0 if digits is None else int(digits.this)
            return pc.round(self.eval(node.this), ndigits=nd, round_mode="half_up")
        if isinstance(node, (exp.Concat, exp.DPipe)):
            parts = list(node.expressions) if isinstance(node, exp.Concat) else [node.this, node.expression]
            strings = [self.cast_value(self.eval(p), pa.string()) for p in parts]
            return pc.binary_join_element_wise(*strings, pa.scalar("", pa.string()))
        if isinstance(node, exp.Substring):
            return self.substring(node)
        if isinstance(node, (exp.Greatest, exp.Least)):
            values = self.unify([self.eval(node.this), *(self.eval(e) for e in node.expressions)])
            fn = pc.max_element_wise if isinstance(node, exp.Greatest) else pc.min_element_wise
            return fn(*values, skip_nulls=True)
        raise self.fail(f"'{node.sql(dialect='spark')}' ({type(node).__name__}) is not supported")

    # -- helpers --------------------------------------------------------------------------------
    def boolean(self, node: _Node) -> Value:
        v = self.eval(node)
        if pa.types.is_null(v.type):
            return self.cast_value(v, pa.bool_())
        if not pa.types.is_boolean(v.type):
            raise self.fail(f"'{node.sql(dialect='spark')}' is of type {v.type}, not BOOLEAN")
        return v

    def case(self, branches: list[tuple[_Node, _Node]], default: _Node | None) -> Value:
        n = self.scope.num_rows
        conds = [pc.fill_null(_broadcast(self.boolean(c), n).combine_chunks(), False) for c, _ in branches]
        values = [self.eval(v) for _, v in branches]
        values.append(self.eval(default) if default is not None else pa.scalar(None, pa.null()))
        values = [_broadcast(v, n).combine_chunks() for v in self.unify(values)]
        if not conds:
            return values[-1]
        names = [f"c{i}" for i in range(len(conds))]
        return pc.case_when(pc.make_struct(*conds, field_names=names), *values)

    def substring(self, node: _Node) -> Value:
        value = self.eval(node.this)
        start = node.args.get("start")
        length = node.args.get("length")
        begin = int(start.this) if isinstance(start, exp.Literal) else None
        count = int(length.this) if isinstance(length, exp.Literal) else None
        if begin is None or (length is not None and count is None):
            raise self.fail("SUBSTRING takes literal start and length")
        first = begin - 1 if begin > 0 else begin  # SQL is 1-based; 0 behaves as 1, negatives count from the end
        stop = None if count is None else first + count
        if first < 0 and stop is not None and stop >= 0:
            stop = None
        return pc.utf8_slice_codeunits(value, start=first, stop=stop)

    def as_double(self, v: Value) -> Value:
        if pa.types.is_floating(v.type) or pa.types.is_null(v.type):
            return self.cast_value(v, pa.float64())
        if pa.types.is_integer(v.type) or pa.types.is_decimal(v.type):
            return self.cast_value(v, pa.float64())
        raise self.fail(f"'/' needs numbers, got {v.type}")

    def cast(self, v: Value, to: _Node) -> Value:
        spelled = to.sql(dialect="spark")
        try:
            target = to_arrow_type(parse_ddl(f"x {spelled}")[0][1])
        except Exception as e:  # noqa: BLE001 - any parse failure of the type text is the user's to fix
            raise self.fail(f"cannot cast to {spelled}: {e}") from None
        if pa.types.is_string(v.type) and (pa.types.is_date(target) or pa.types.is_timestamp(target)):
            return self.temporal_from_string(v, target)
        return self.cast_value(v, target)

    def temporal_from_string(self, v: Value, target: pa.DataType) -> Value:
        if isinstance(v, pa.Scalar):
            text = v.as_py()
            if text is None:
                return pa.scalar(None, target)
            try:
                if pa.types.is_date(target):
                    return pa.scalar(_dt.date.fromisoformat(text.strip()), target)
                parsed = _dt.datetime.fromisoformat(text.strip())
            except ValueError:
                raise self.fail(f"'{text}' is not a valid {target}") from None
            if target.tz is not None and parsed.tzinfo is None:
                # Without an offset the literal is a wall-clock time (TIMESTAMP_NTZ): the session time zone
                # Spark would apply is unknown here.
                return pa.scalar(parsed, pa.timestamp("us"))
            if target.tz is None and parsed.tzinfo is not None:
                parsed = parsed.replace(tzinfo=None)
            return pa.scalar(parsed, target)
        return self.cast_value(v, target)

    @staticmethod
    def cast_value(v: Value, target: pa.DataType) -> Value:
        if v.type == target:
            return v
        if pa.types.is_decimal(v.type) and pa.types.is_floating(target):
            return decimal_to_float(v, target)  # the nearest double, as the write path casts
        if pa.types.is_integer(v.type) and pa.types.is_decimal(target):
            # Arrow checks integer -> decimal precision statically (int64 needs 19 digits); go through a wide
            # decimal so that values are checked instead.
            v = v.cast(pa.decimal128(min(38, 19 + target.scale), target.scale))
        return v.cast(target)

    def coerce(self, a: Value, b: Value) -> tuple[Value, Value]:
        """Make two operands comparable: a NULL literal takes the other side's type, a string literal next to
        a DATE/TIMESTAMP is parsed as one, integers widen to the other side's numeric type."""
        ta, tb = a.type, b.type
        if ta == tb:
            return a, b
        if pa.types.is_null(ta):
            return self.cast_value(a, tb), b
        if pa.types.is_null(tb):
            return a, self.cast_value(b, ta)
        for x, y, swap in ((a, b, False), (b, a, True)):
            if isinstance(y, pa.Scalar) and pa.types.is_string(y.type) and _is_temporal(x.type):
                y2 = self.temporal_from_string(y, x.type)
                return (y2, x) if swap else (x, y2)
        if _is_numeric(ta) and _is_numeric(tb):
            if pa.types.is_floating(ta) or pa.types.is_floating(tb):
                return self.cast_value(a, pa.float64()), self.cast_value(b, pa.float64())
            return a, b  # integer/decimal mixes: Arrow's kernels find the common type
        return a, b

    def unify(self, values: list[Value]) -> list[Value]:
        """Values of one CASE / COALESCE / GREATEST: NULL literals and integer literals take a common type."""
        typed = [v.type for v in values if not pa.types.is_null(v.type)]
        if not typed:
            return values
        common = typed[0]
        for t in typed[1:]:
            if t == common:
                continue
            if _is_numeric(t) and _is_numeric(common):
                if pa.types.is_floating(t) or pa.types.is_floating(common):
                    common = pa.float64()
                elif pa.types.is_decimal(t) or pa.types.is_decimal(common):
                    common = t if pa.types.is_decimal(t) and not pa.types.is_decimal(common) else common
                else:
                    common = pa.int64() if max(t.bit_width, common.bit_width) == 64 else common
            elif pa.types.is_string(t) and pa.types.is_string(common):
                continue
            else:
                raise self.fail(f"values of types {common} and {t} cannot be combined")
        return [self.cast_value(v, common) for v in values]


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t)
