"""The column commands of ``pyspark-paimon``: ``alter_column``, ``add_column``, ``drop_column``, ``rename_column``.

Each is one :meth:`Table.update_schema <pyspark_paimon.table.Table.update_schema>` (one new schema version, Paimon's
rules: docs/schema-evolution.md) and prints the columns of the schema it made. Spark and Paimon spell these as SQL
(``ALTER TABLE ... ALTER COLUMN``); the subcommands use the names of the API's changes.
"""

from __future__ import annotations

import argparse

from pyspark_paimon.cli_args import Arg, Procedure, Row, names, parse_bool
from pyspark_paimon.errors import OptionError
from pyspark_paimon.table import Table

__all__ = ["SCHEMA_PROCEDURES"]


def _schema_rows(t: Table) -> list[Row]:
    """The columns of the latest schema after a change: id, name, type, comment (and the schema id)."""
    schema = t.schema
    return [
        {"schema_id": schema.id, "id": f.id, "column": f.name, "type": str(f.type), "comment": f.description}
        for f in schema.fields
    ]


def _column_path(text: str) -> str | tuple[str, ...]:
    """A column name, or a ROW member as ``col.member`` (a name holding dots is quoted with backticks)."""
    if text.startswith("`") and text.endswith("`"):
        return text[1:-1]
    return tuple(text.split(".")) if "." in text else text


def _alter_column(t: Table, a: argparse.Namespace) -> list[Row]:
    """Change one column's type, nullability, comment and position in one schema change (Spark's ALTER COLUMN)."""
    column = _column_path(a.column)
    if a.type is None and a.nullable is None and a.comment is None and not a.first and a.after is None:
        raise OptionError("alter_column needs at least one of --type, --nullable, --comment, --first, --after.")
    with t.update_schema() as u:
        if a.type is not None:
            u.update_column_type(column, a.type)
        if a.nullable is not None:
            u.update_column_nullability(column, a.nullable)
        if a.comment is not None:
            u.update_column_comment(column, a.comment or None)
        if a.first or a.after is not None:
            if not isinstance(column, str):
                raise OptionError("--first / --after move a top-level column; ROW members keep their order.")
            u.update_column_position(column, first=a.first, after=a.after)
    return _schema_rows(t)


def _add_column(t: Table, a: argparse.Namespace) -> list[Row]:
    with t.update_schema() as u:
        u.add_column(a.column, a.type, a.comment, first=a.first, after=a.after)
    return _schema_rows(t)


def _drop_column(t: Table, a: argparse.Namespace) -> list[Row]:
    with t.update_schema() as u:
        for name in names(a.column):
            u.drop_column(name)
    return _schema_rows(t)


def _rename_column(t: Table, a: argparse.Namespace) -> list[Row]:
    with t.update_schema() as u:
        u.rename_column(a.column, a.new_name)
    return _schema_rows(t)


_FIRST = Arg("first", "put the column first", flag=True)
_AFTER = Arg("after", "put the column right after this one")

SCHEMA_PROCEDURES: tuple[Procedure, ...] = (
    Procedure(
        "alter_column",
        "change a column's type (Paimon's cast rules), nullability, comment or position, as one schema change",
        (
            Arg("column", "the column (a ROW member: col.member)", required=True),
            Arg("type", "the new type in Spark DDL, e.g. bigint, decimal(12, 2), string"),
            Arg(
                "nullable",
                "true: allow NULL; false: NOT NULL (needs 'alter-column-null-to-not-null.disabled'=false)",
                parse_bool,
            ),
            Arg("comment", "the new comment ('' removes it)"),
            _FIRST,
            _AFTER,
        ),
        _alter_column,
    ),
    Procedure(
        "add_column",
        "add a nullable column (at the end, --first or --after another)",
        (
            Arg("column", "the new column's name", required=True),
            Arg("type", "its type in Spark DDL, e.g. bigint, string, variant", required=True),
            Arg("comment", "its comment"),
            _FIRST,
            _AFTER,
        ),
        _add_column,
    ),
    Procedure(
        "drop_column",
        "drop columns (comma-separated); their field ids are never reused",
        (Arg("column", "column name(s), comma-separated", required=True),),
        _drop_column,
    ),
    Procedure(
        "rename_column",
        "rename a column (data files keep mapping to it by field id)",
        (Arg("column", "the column", required=True), Arg("new_name", "its new name", required=True)),
        _rename_column,
    ),
)
