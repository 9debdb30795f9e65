"""SQL syntax errors in our words, pointing at the text (planner/sql_syntax.py): what a user who mistyped a
filter, a DML condition or a value reads instead of sqlglot's node classes."""

from __future__ import annotations

import pytest

from pyspark_paimon.errors import OptionError
from pyspark_paimon.planner.sql_syntax import parse_sql


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("id = ", "'=' needs something after it, at the end: id >>=<< "),
        ("id = = 3", "'=' needs something after it, at column 6: id = >>=<< 3"),
        ("id >", "'>' needs something after it, at the end: id >>><<"),
        ("id = 1 and", "'AND' needs something after it, at the end: id = 1 >>and<<"),
        ("id = 1 or or id = 2", "'OR' needs something after it, at column 11: id = 1 or >>or<< id = 2"),
        ("id in (1, 2", "a ')' is missing, at the end: id in (1, >>2<<"),
        ("id = 1)", "unexpected ')', at the end: id = 1>>)<<"),
        ("id = 1 ,", "unexpected ',', at the end: id = 1 >>,<<"),
        ("id between 1", "BETWEEN needs '<lower> AND <upper>', at the end: id between >>1<<"),
        ("not", "'NOT' needs something after it, at the end: >>not<<"),
        ("case when", "CASE WHEN is incomplete, at the end: case >>when<<"),
        ("abs(", "ABS(...) is incomplete, at the end: abs>>(<<"),
        ("v = 'abc", "a quoted text is not closed (no closing ')"),
        ("x = 1\nand", "'AND' needs something after it"),  # past the first line: no pointer
    ],
)
def test_syntax_errors_in_our_words(text: str, problem: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_sql(text, lambda why: OptionError(why))
    message = str(info.value)
    assert message == problem
    assert "sqlglot" not in message and "<class" not in message and "Required keyword" not in message


def test_valid_text_parses() -> None:
    node = parse_sql("id = 1 AND v IN ('a', 'b')", lambda why: OptionError(why))
    assert node is not None and node.sql(dialect="spark") == "id = 1 AND v IN ('a', 'b')"
