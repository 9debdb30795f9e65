"""SQL text parsed with sqlglot's Spark dialect, its syntax errors told in our words and pointed at in the text.

Users write SQL in four places (the ``filter`` read option, ``t.scan(filter=)``, DML conditions and values, the
CLI's ``--where``); sqlglot's own messages name its node classes ("Required keyword: 'expression' missing for
<class 'sqlglot.expressions.core.EQ'>"), which mean nothing to them. :func:`parse_sql` is the one parse call of
the package and turns a syntax error into what is wrong, in SQL terms, with the text marked where it is.
"""

from __future__ import annotations

import re
from typing import Any, Callable

import sqlglot
from sqlglot.errors import ParseError, SqlglotError, TokenError

from pyspark_paimon.errors import PaimonError

# sqlglot node class name -> how the operator or construct is written in SQL: binary operators (sqlglot's 'this'
# is the left operand, 'expression' the right), prefix operators and the other constructs.
_BINARY = {
    "EQ": "=",
    "NEQ": "<>",
    "GT": ">",
    "GTE": ">=",
    "LT": "<",
    "LTE": "<=",
    "NullSafeEQ": "<=>",
    "And": "AND",
    "Or": "OR",
    "Add": "+",
    "Sub": "-",
    "Mul": "*",
    "Div": "/",
    "Mod": "%",
    "IntDiv": "DIV",
    "DPipe": "||",
    "Like": "LIKE",
}
_PREFIX = {"Not": "NOT", "Neg": "-"}
_CONSTRUCTS = {"Between": "BETWEEN", "In": "IN", "Is": "IS", "If": "CASE WHEN", "Case": "CASE", "Cast": "CAST"}
_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _missing(arg: str, node: str) -> str:
    if node in _BINARY:
        return f"'{_BINARY[node]}' needs something {'before' if arg == 'this' else 'after'} it"
    if node in _PREFIX:
        return f"'{_PREFIX[node]}' needs something after it"
    if node == "Between" and arg == "high":
        return "BETWEEN needs '<lower> AND <upper>'"
    if node in _CONSTRUCTS:
        return f"{_CONSTRUCTS[node]} is incomplete"
    return f"{node.upper()}(...) is incomplete"


def _problem(description: str, highlight: str) -> str:
    """sqlglot's description of one syntax error, in SQL terms."""
    missing = _MISSING.match(description)
    if missing:
        return _missing(*missing.groups())
    if description.startswith("Expecting )"):
        return "a ')' is missing"
    if description.startswith("Invalid expression / Unexpected token"):
        return f"unexpected '{highlight}'"
    return description[:1].lower() + description[1:]


def _tokenizing(text: str) -> str:
    for quote in ("'", '"', "`"):
        if text.count(quote) % 2:
            return f"a quoted text is not closed (no closing {quote})"
    return "it cannot be split into SQL tokens"


def syntax_problem(text: str, error: SqlglotError) -> str:
    """What is wrong with ``text`` and where (``error`` is what sqlglot raised parsing it)."""
    if isinstance(error, TokenError):
        return _tokenizing(text)
    details = error.errors[0] if isinstance(error, ParseError) and error.errors else None
    if not details or details.get("line") != 1 or not isinstance(details.get("col"), int):
        return _problem(str(error).splitlines()[0], "")
    highlight = str(details.get("highlight") or "")
    end = min(max(details["col"], 0), len(text))  # sqlglot's col: 1-based, the last character of the highlight
    start = max(end - len(highlight), 0)
    where = "at the end" if not text[end:].strip() else f"at column {start + 1}"
    marked = f"{text[:start]}>>{text[start:end]}<<{text[end:]}"
    return f"{_problem(str(details.get('description', '')), highlight)}, {where}: {marked}"


def parse_sql(text: str, fail: Callable[[str], PaimonError]) -> Any:
    """``text`` parsed as one SQL expression (sqlglot's Spark dialect); a syntax error raises ``fail(problem)``,
    the problem told by :func:`syntax_problem`. Returns a sqlglot node (None for text without a statement)."""
    try:
        return sqlglot.parse_one(text, read="spark")
    except SqlglotError as e:
        raise fail(syntax_problem(text, e)) from None


__all__ = ["parse_sql", "syntax_problem"]
