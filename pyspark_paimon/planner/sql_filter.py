"""The ``filter`` read option: a SQL predicate parsed with sqlglot (Spark dialect) into a predicate tree.

Why a read option and not Spark's ``where``: Spark 4.1-4.3 share a pushed-down read plan between queries of
one loaded DataFrame (see ``datasource/spark/source.py``), so filter pushdown stays off there and a ``where`` never
reaches the connector. A selection given at ``load()`` time belongs to that DataFrame's relation and is safe;
it prunes partitions, buckets, files and row groups, and is applied exactly to the rows.

The grammar is a WHERE clause over the table's own columns: comparisons (``=``, ``<>``/``!=``, ``<``, ``<=``,
``>``, ``>=``, ``<=>``) of a column with a literal, ``IN (...)``, ``BETWEEN``, ``IS [NOT] NULL``, a BOOLEAN
column on its own, combined with ``AND``/``OR``/``NOT`` and parentheses. Literals must fit the column's type:
integers for integer columns, numbers for DECIMAL and FLOAT/DOUBLE (compared as the literal's nearest DOUBLE,
in Spark's order: NaN equals NaN and is above every number), ``true``/``false`` for BOOLEAN, strings for
STRING/VARCHAR, ``DATE '2024-01-01'`` (or the string) for DATE, ``TIMESTAMP '2024-01-01 10:00:00'`` for
TIMESTAMP and a timestamp with an explicit offset for TIMESTAMP_LTZ (the reader does not know Spark's session
time zone). A value inside a VARIANT column is compared through ``variant_get(col, '$.path', 'type')`` or
``try_variant_get(...)`` (``metadata/variant/path.py``), as the left side of a comparison, IN, BETWEEN or IS NULL.
Anything else (other functions, arithmetic, column-to-column comparisons, subqueries, CHAR padding, nested fields) is
refused with a :class:`FilterError` (an ``OptionError``) that quotes the text, never silently dropped.
"""

from __future__ import annotations

import datetime as _dt
import decimal
from typing import Any, Callable

from sqlglot import expressions as exp

from pyspark_paimon.errors import FilterError, VariantError
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import AtomicType, DataField, type_to_sql
from pyspark_paimon.metadata.variant.path import FUNCTIONS, variant_get
from pyspark_paimon.planner.predicate import Expr, Leaf, all_of, any_of, negate
from pyspark_paimon.planner.read_options import FILTER_KEY
from pyspark_paimon.planner.sql_syntax import parse_sql

_INTEGERS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
_COMPARABLE = {*_INTEGERS, "DECIMAL", "FLOAT", "DOUBLE", "BOOLEAN", "VARCHAR", "DATE", "TIMESTAMP", "TIMESTAMP_LTZ"}
# sqlglot comparison node -> (our op, negated)
_COMPARISONS: dict[type, tuple[str, bool]] = {
    exp.EQ: ("=", False),
    exp.NEQ: ("=", True),
    exp.LT: ("<", False),
    exp.LTE: ("<=", False),
    exp.GT: (">", False),
    exp.GTE: (">=", False),
    exp.NullSafeEQ: ("<=>", False),
    exp.NullSafeNEQ: ("<=>", True),
}
# The operator to use when the literal is on the left (``5 < x`` is ``x > 5``).
_FLIPPED = {"=": "=", "<=>": "<=>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NULL = object()  # a parsed SQL NULL literal (None means "not a literal")
# A sqlglot syntax node. Its base class differs between sqlglot releases (``Expression``, later also ``Expr``),
# so nodes are typed loosely and told apart with isinstance on the concrete node classes, which are stable.
_Node = Any


# How a condition is named in its errors unless the caller says where the user gave it.
READ_OPTION_LABEL = f"Read option '{FILTER_KEY}' ="


class _Parser:
    def __init__(self, text: str, schema: TableSchema, label: str):
        self.text = text
        self.label = label
        self.schema = schema
        self.by_name = {f.name: f for f in schema.fields}
        self.by_lower: dict[str, list[DataField]] = {}
        for f in schema.fields:
            self.by_lower.setdefault(f.name.lower(), []).append(f)

    def fail(self, why: str) -> FilterError:
        return FilterError(self.label, self.text, why)

    # -- structure -----------------------------------------------------------------------------------
    def expr(self, node: _Node) -> Expr:
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if isinstance(node, exp.And):
            return all_of((self.expr(node.this), self.expr(node.expression)))
        if isinstance(node, exp.Or):
            return any_of((self.expr(node.this), self.expr(node.expression)))
        if isinstance(node, exp.Not):
            return negate(self.expr(node.this))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self.fail(f"'{node.sql(dialect='spark')}' is not supported; only IS NULL and IS NOT NULL are.")
            return Leaf(self.column(node.this).name, "is_null")
        if type(node) in _COMPARISONS:
            return self.comparison(node)
        if isinstance(node, exp.In):
            return self.in_list(node)
        if isinstance(node, exp.Between):
            f = self.column(node.this)
            low, high = self.literal(node.args["low"], f), self.literal(node.args["high"], f)
            return all_of((self.leaf(f, ">=", low), self.leaf(f, "<=", high)))
        if isinstance(node, exp.Column):
            f = self.column(node)
            if not (isinstance(f.type, AtomicType) and f.type.root == "BOOLEAN"):
                raise self.fail(
                    f"column '{f.name}' is {type_to_sql(f.type)}, not BOOLEAN, so it is not a condition "
                    "on its own; compare it with a value."
                )
            return Leaf(f.name, "=", True)
        raise self.fail(
            f"'{node.sql(dialect='spark')}' is not supported. Use comparisons of a column with a literal, "
            "IN, BETWEEN, IS [NOT] NULL, combined with AND, OR, NOT."
        )

    def comparison(self, node: _Node) -> Expr:
        op, negated = _COMPARISONS[type(node)]
        left, right = node.this, node.expression
        if not _is_column(left) and _is_column(right):
            left, right, op = right, left, _FLIPPED[op]
        f = self.column(left)
        leaf = self.leaf(f, op, self.literal(right, f))
        return negate(leaf) if negated else leaf

    def in_list(self, node: exp.In) -> Expr:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise self.fail("IN with a subquery is not supported; list the values.")
        f = self.column(node.this)
        values = tuple(None if v is _NULL else v for v in (self.literal(e, f) for e in node.expressions))
        self.check_comparable(f, "in")
        return Leaf(f.name, "in", values)

    def leaf(self, f: DataField, op: str, value: Any) -> Leaf:
        self.check_comparable(f, op)
        return Leaf(f.name, op, None if value is _NULL else value)

    def check_comparable(self, f: DataField, op: str) -> None:
        t = f.type
        if isinstance(t, AtomicType) and t.root in _COMPARABLE:
            return
        why = {"CHAR": "CHAR values are blank-padded"}.get(t.root if isinstance(t, AtomicType) else "", "")
        raise self.fail(
            f"column '{f.name}' is {type_to_sql(t)}, which the filter option does not compare"
            f"{' (' + why + ')' if why else ''}; only IS [NOT] NULL works on it. Filter it with "
            "Spark's where() instead."
        )

    # -- names and literals ----------------------------------------------------------------------------
    def variant_get(self, node: _Node) -> DataField:
        """``variant_get(col, '$.path', 'type')`` / ``try_variant_get(...)``: a derived column of that type
        (``metadata/variant/path.py``), computed in executors before the row filter."""
        function = str(node.name).lower()
        args = list(node.expressions)
        shown = node.sql(dialect="spark")
        texts = [_string_text(a)[1] for a in args[1:]]
        if len(args) != 3 or not isinstance(args[0], exp.Column) or any(t is None for t in texts):
            raise self.fail(f"'{shown}': {function} takes a VARIANT column, a path literal and a type literal, as in "
                            f"{function}(payload, '$.user.id', 'bigint').")  # fmt: skip
        source = self.column(args[0])
        path, type_text = texts
        assert path is not None and type_text is not None
        try:
            extraction = variant_get(source, path, type_text, fail_on_error=function == FUNCTIONS[0])
        except VariantError as exc:
            raise self.fail(str(exc)) from None
        return extraction.field

    def column(self, node: _Node) -> DataField:
        if isinstance(node, exp.Anonymous) and str(node.name).lower() in FUNCTIONS:
            return self.variant_get(node)
        if isinstance(node, exp.Func):
            raise self.fail(
                f"'{node.sql(dialect='spark')}': a filter takes no functions (it selects partitions, files and row "
                "groups by comparing a column's statistics with a literal); compare a column with a literal, or "
                "filter the loaded rows with Spark's where()."
            )
        if not isinstance(node, exp.Column):
            raise self.fail(
                f"'{node.sql(dialect='spark')}' is not a column of the table; the left side of a "
                "condition must be a column and the other side a literal (no functions or arithmetic)."
            )
        if node.table:
            raise self.fail(
                f"'{node.sql(dialect='spark')}' is a qualified or nested name; name a top-level column "
                f"of the table ({', '.join(self.schema.field_names)})."
            )
        name = node.name
        found = self.by_name.get(name)
        if found is None:
            matches = self.by_lower.get(name.lower(), [])
            if len(matches) == 1:
                found = matches[0]
        if found is None:
            raise self.fail(f"unknown column '{name}'. Columns: {', '.join(self.schema.field_names)}.")
        return found

    def literal(self, node: _Node, f: DataField) -> Any:
        """``node`` as a Python value of ``f``'s type (``_NULL`` for NULL); a mismatch names both."""
        if isinstance(node, exp.Paren):
            return self.literal(node.this, f)
        if isinstance(node, exp.Null):
            return _NULL
        t = f.type
        root = t.root if isinstance(t, AtomicType) else ""
        shown = node.sql(dialect="spark")

        def mismatch(extra: str = "") -> FilterError:
            return self.fail(f"{shown} is not a {type_to_sql(t)} literal for column '{f.name}'{extra}.")

        if isinstance(node, exp.Column):
            raise self.fail(f"comparing column '{f.name}' with {shown} is not supported; compare with a literal.")
        if isinstance(node, exp.Boolean):
            if root != "BOOLEAN":
                raise mismatch()
            return bool(node.this)
        number = _number_text(node)
        if number is not None:
            if root in _INTEGERS:
                if not _is_integer_text(number):
                    raise mismatch(" (an integer is needed)")
                value = int(number)
                if not -(1 << 63) <= value < (1 << 63):
                    raise mismatch(" (out of the BIGINT range)")
                return value
            if root == "DECIMAL" or root in ("FLOAT", "DOUBLE"):
                try:
                    number_value = decimal.Decimal(number)
                except decimal.InvalidOperation:
                    raise mismatch() from None
                if root != "DECIMAL":
                    return float(number_value)  # Spark compares a FLOAT/DOUBLE column with the DOUBLE nearest it
                _, digits, exponent = number_value.as_tuple()
                assert isinstance(exponent, int)  # finite: the parser never yields NaN or infinity
                scale = max(-exponent, 0)
                whole = max(len(digits) + exponent, 0)
                if isinstance(t, AtomicType) and root == "DECIMAL":
                    # Arrow compares two decimals in one type that must hold both (at most 38 digits).
                    whole = max(whole, (t.precision or 0) - (t.scale or 0))
                    scale = max(scale, t.scale or 0)
                if whole + scale > 38:
                    raise mismatch(
                        " (compared with the column it needs more than the 38 digits of the largest "
                        "DECIMAL; use fewer digits)"
                    )
                return number_value
            raise mismatch()
        kind, text = _string_text(node)
        if text is None:
            raise self.fail(
                f"{shown} is not a literal; compare column '{f.name}' with a literal value (no "
                "functions, arithmetic or subqueries)."
            )
        parsers: dict[str, Callable[[str], Any]] = {
            "DATE": _parse_date,
            "TIMESTAMP": _parse_ntz,
            "TIMESTAMP_LTZ": _parse_ltz,
        }
        if kind in ("", "STRING") and root in ("VARCHAR", "CHAR"):
            return text
        if root in parsers and kind in ("", "STRING", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ"):
            if kind == "DATE" and root != "DATE":
                raise mismatch()
            try:
                return parsers[root](text)
            except ValueError as e:
                raise mismatch(f" ({e})") from None
        raise mismatch()


def _is_column(node: _Node) -> bool:
    """A column, or a ``variant_get`` of one (a derived column)."""
    return isinstance(node, exp.Column) or (isinstance(node, exp.Anonymous) and str(node.name).lower() in FUNCTIONS)


def _number_text(node: _Node) -> str | None:
    if isinstance(node, exp.Neg):
        inner = _number_text(node.this)
        return None if inner is None else (inner[1:] if inner.startswith("-") else "-" + inner)
    if isinstance(node, exp.Literal) and not node.is_string:
        return str(node.this)
    return None


def _is_integer_text(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _string_text(node: _Node) -> tuple[str, str | None]:
    """(type keyword, text) of a string literal, plain (``''``) or typed (``DATE '...'``, ``CAST('..' AS ..)``)."""
    if isinstance(node, exp.Literal) and node.is_string:
        return "", str(node.this)
    if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, exp.Literal) and node.this.is_string:
        kinds = {
            exp.DataType.Type.DATE: "DATE",
            exp.DataType.Type.TIMESTAMP: "TIMESTAMP",
            exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP",
            exp.DataType.Type.TIMESTAMPNTZ: "TIMESTAMP_NTZ",
            exp.DataType.Type.TIMESTAMPLTZ: "TIMESTAMP_LTZ",
            exp.DataType.Type.TEXT: "STRING",
            exp.DataType.Type.VARCHAR: "STRING",
        }
        kind = kinds.get(node.to.this)
        if kind is not None:
            return kind, str(node.this.this)
    return "", None


def _parse_date(text: str) -> _dt.date:
    return _dt.date.fromisoformat(text.strip())


def _parse_datetime(text: str) -> _dt.datetime:
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    return _dt.datetime.fromisoformat(value.replace("T", " ", 1))


def _parse_ntz(text: str) -> _dt.datetime:
    value = _parse_datetime(text)
    if value.tzinfo is not None:
        raise ValueError("a TIMESTAMP (without time zone) literal takes no offset")
    return value


def _parse_ltz(text: str) -> _dt.datetime:
    value = _parse_datetime(text)
    if value.tzinfo is None:
        raise ValueError(
            "give the offset, e.g. '2024-01-01 10:00:00+08:00' or '...Z': the reader does not know "
            "Spark's session time zone"
        )
    return value


def parse_filter(text: str, schema: TableSchema, label: str = READ_OPTION_LABEL) -> Expr:
    """The predicate tree of the ``filter`` read option ``text`` over ``schema``'s columns; errors are
    :class:`FilterError` s naming the condition by ``label`` (where the user gave it, e.g. ``'delete filter'``)."""
    parser = _Parser(text, schema, label)
    if not text.strip():
        raise parser.fail('the filter is empty; give a condition such as "id = 5", or drop the option.')
    node = parse_sql(text, lambda problem: parser.fail(f"not a SQL condition: {problem}"))
    if node is None:
        raise parser.fail("not a SQL condition.")
    return parser.expr(node)


__all__ = ["READ_OPTION_LABEL", "parse_filter"]
