"""Spark DDL column lists to Paimon types and back, in pure Python (no pyspark needed).

Users describe new tables in Spark's DDL (``"id bigint not null, tags array<string>"``) and Spark reports
schemas in it, so the Python API and the Spark adapters need the same parser and printer without a
SparkSession: :func:`parse_ddl` turns a column list into ``(name, type)`` pairs, :func:`to_spark_ddl` /
:func:`to_spark_type_ddl` spell Paimon types the way Spark reads them (Spark ``timestamp`` is Paimon
TIMESTAMP_LTZ, ``timestamp_ntz`` is TIMESTAMP). The printer spells both explicitly (``TIMESTAMP_LTZ``,
``TIMESTAMP_NTZ``), so its output means the same whatever ``spark.sql.timestampType`` a session sets.
"""

from __future__ import annotations

from typing import Any, Iterable

from pyspark_paimon.errors import SchemaError
from pyspark_paimon.metadata.types.lexer import Cursor, tokenize
from pyspark_paimon.metadata.types.model import (
    STRING_LENGTH,
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    RowType,
    bytes_type,
    quote_ident,
    string_type,
    unsupported_in_spark,
)

__all__ = ["parse_ddl", "DdlColumn", "to_spark_ddl", "to_spark_type_ddl"]


_DDL_SIMPLE = {
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
    "TINYINT": "TINYINT",
    "BYTE": "TINYINT",
    "SMALLINT": "SMALLINT",
    "SHORT": "SMALLINT",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "LONG": "BIGINT",
    "FLOAT": "FLOAT",
    "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "VARIANT": "VARIANT",
}


class _DdlParser:
    """Recursive-descent parser for Spark column lists (``name type [NOT NULL] [COMMENT '...']``)."""

    def __init__(self, ddl: str) -> None:
        self.ddl = ddl
        self.cur = Cursor(tokenize(ddl, backslash_escapes=True, fail=self._fail), self._fail)

    def _fail(self, msg: str, pos: int) -> SchemaError:
        snippet = self.ddl[max(0, pos - 20) : pos + 20]
        return SchemaError(
            f"Cannot parse column definitions at position {pos} ({msg}): ...{snippet}... in {self.ddl!r}"
        )

    def name(self, what: str) -> str:
        t = self.cur.tok
        if t.kind in ("WORD", "QIDENT", "INT"):
            self.cur.advance()
            return t.value
        raise self.cur.error(f"expected {what}")

    def columns(self) -> list[tuple[str, DataType, str | None]]:
        out = []
        if self.cur.tok.kind == "EOF":
            raise self.cur.error("expected at least one column")
        while True:
            out.append(self.column(struct_member=False))
            if not self.cur.accept_sym(","):
                break
        if self.cur.tok.kind != "EOF":
            raise self.cur.error("expected ',' or end of input")
        return out

    def column(self, struct_member: bool) -> tuple[str, DataType, str | None]:
        name = self.name("a column name")
        if struct_member:
            self.cur.accept_sym(":")
        t = self.type()
        comment: str | None = None
        seen_null = False
        while True:
            if not seen_null and self.cur.accept_word("NOT"):
                self.cur.expect_word("NULL")
                t, seen_null = t.copy(nullable=False), True
            elif not seen_null and self.cur.accept_word("NULL"):
                seen_null = True
            elif comment is None and self.cur.accept_word("COMMENT"):
                tok = self.cur.tok
                if tok.kind != "STRING":
                    raise self.cur.error("expected a quoted comment after COMMENT")
                self.cur.advance()
                comment = tok.value
            else:
                break
        return name, t, comment

    def _precision(self, default: int, what: str) -> int:
        p = default
        if self.cur.accept_sym("("):
            p = self.cur.expect_int(what)
            self.cur.expect_sym(")")
        return p

    def _atomic(self, pos: int, name: str, **kw: Any) -> AtomicType:
        try:
            return AtomicType(name, **kw)
        except SchemaError as e:
            raise self._fail(str(e), pos) from None

    def type(self) -> DataType:
        cur = self.cur
        t = cur.tok
        if t.kind != "WORD":
            raise cur.error("expected a type")
        word = t.value.upper()
        cur.advance()
        if word in _DDL_SIMPLE:
            return AtomicType(_DDL_SIMPLE[word])
        if word == "STRING":
            return string_type()
        if word == "BINARY":
            return bytes_type()
        if word in ("TIMESTAMP", "TIMESTAMP_LTZ"):  # Spark's TIMESTAMP has local-time-zone semantics
            return self._atomic(t.pos, "TIMESTAMP_LTZ", precision=self._precision(6, "timestamp precision"))
        if word == "TIMESTAMP_NTZ":
            return self._atomic(t.pos, "TIMESTAMP", precision=self._precision(6, "timestamp precision"))
        if word in ("CHAR", "CHARACTER", "VARCHAR"):
            if not cur.is_sym("("):
                raise cur.error(f"{word.lower()} needs a length, e.g. {word.lower()}(10)")
            return self._atomic(t.pos, "VARCHAR" if word == "VARCHAR" else "CHAR", length=self._precision(1, "length"))
        if word in ("DECIMAL", "DEC", "NUMERIC"):
            p, s = 10, 0
            if cur.accept_sym("("):
                p = cur.expect_int("decimal precision")
                if cur.accept_sym(","):
                    s = cur.expect_int("decimal scale")
                cur.expect_sym(")")
            return self._atomic(t.pos, "DECIMAL", precision=p, scale=s)
        if word == "ARRAY":
            cur.expect_sym("<")
            elem = self.type()
            cur.expect_sym(">")
            return ArrayType(elem)
        if word == "MAP":
            cur.expect_sym("<")
            key = self.type()
            cur.expect_sym(",")
            value = self.type()
            cur.expect_sym(">")
            return MapType(key.copy(nullable=False), value)
        if word == "STRUCT":
            cur.expect_sym("<")
            members: list[DataField] = []
            if not cur.is_sym(">"):
                while True:
                    n, mt, c = self.column(struct_member=True)
                    members.append(DataField(-1, n, mt, c))
                    if not cur.accept_sym(","):
                        break
            cur.expect_sym(">")
            return RowType(tuple(members))
        raise self._fail(
            f"unsupported Spark type '{t.value}' (supported: boolean, tinyint, smallint, int, "
            "bigint, float, double, decimal(p,s), string, char(n), varchar(n), binary, date, "
            "timestamp, timestamp_ntz, variant, array<>, map<>, struct<>)",
            t.pos,
        )


class DdlColumn(tuple):
    """A ``(name, type)`` pair that also carries the column's ``COMMENT`` as ``.description``.

    A plain 2-tuple for unpacking (``for name, t in parse_ddl(...)``), while :func:`assign_field_ids`
    still picks the comment up.
    """

    description: str | None

    def __new__(cls, name: str, data_type: DataType, description: str | None = None) -> "DdlColumn":
        obj = super().__new__(cls, (name, data_type))
        obj.description = description
        return obj

    @property
    def name(self) -> str:
        return self[0]

    @property
    def type(self) -> DataType:
        return self[1]

    def __repr__(self) -> str:
        return f"DdlColumn({self[0]!r}, {self[1]!r}, {self.description!r})"


def parse_ddl(ddl: str) -> list[DdlColumn]:
    """Parse a Spark column list such as ``"id bigint not null, tags array<string>, s struct<x:int>"``.

    Spark ``timestamp`` becomes TIMESTAMP_LTZ(6) and ``timestamp_ntz`` TIMESTAMP(6) (an optional
    ``(p)`` sets another precision). Each result is a ``(name, type)`` pair whose ``COMMENT`` is in
    ``.description``; struct members carry theirs as DataField descriptions with placeholder id -1
    (number them with :func:`assign_field_ids`).
    """
    if not isinstance(ddl, str):
        raise SchemaError(f"Expected a DDL string, got {type(ddl).__name__}")
    cols = _DdlParser(ddl).columns()
    seen: set[str] = set()
    for name, _, _ in cols:
        if name in seen:
            raise SchemaError(f"Column '{name}' is defined twice in {ddl!r}")
        seen.add(name)
    return [DdlColumn(n, t, c) for n, t, c in cols]


def _spark_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def to_spark_type_ddl(t: DataType, column: str | None = None, keep_char_varchar: bool = False) -> str:
    """Spark SQL spelling of ``t`` (without its own NOT NULL). CHAR/VARCHAR become STRING unless
    ``keep_char_varchar``, because Arrow carries them as plain strings either way."""
    if isinstance(t, AtomicType):
        n = t.name
        if n in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "VARIANT"):
            return n
        if n in ("CHAR", "VARCHAR"):
            if keep_char_varchar and not (n == "VARCHAR" and t.length == STRING_LENGTH):
                return f"{n}({t.length})"
            return "STRING"
        if n in ("BINARY", "VARBINARY"):
            return "BINARY"
        if n == "DECIMAL":
            return f"DECIMAL({t.precision},{t.scale})"
        if n == "TIMESTAMP":
            return "TIMESTAMP_NTZ"
        if n == "TIMESTAMP_LTZ":
            # never bare TIMESTAMP: under spark.sql.timestampType=TIMESTAMP_NTZ Spark would read that as NTZ
            return "TIMESTAMP_LTZ"
        raise unsupported_in_spark(t, column)
    if isinstance(t, ArrayType):
        return f"ARRAY<{to_spark_type_ddl(t.element, column, keep_char_varchar)}>"
    if isinstance(t, MapType):
        return (
            f"MAP<{to_spark_type_ddl(t.key, column, keep_char_varchar)}, "
            f"{to_spark_type_ddl(t.value, column, keep_char_varchar)}>"
        )
    if isinstance(t, RowType):
        members = []
        for f in t.fields:
            path = f"{column}.{f.name}" if column else f.name
            m = f"{quote_ident(f.name)}: {to_spark_type_ddl(f.type, path, keep_char_varchar)}"
            if not f.type.nullable:
                m += " NOT NULL"
            if f.description is not None:
                m += f" COMMENT {_spark_string(f.description)}"
            members.append(m)
        return f"STRUCT<{', '.join(members)}>"
    raise unsupported_in_spark(t, column)


def to_spark_ddl(fields: Iterable[DataField | tuple], keep_char_varchar: bool = False) -> str:
    """Spark column list for ``fields``, e.g. ``"`id` BIGINT NOT NULL, `ts` TIMESTAMP_NTZ"``.

    Accepts DataFields or ``(name, type[, comment])`` tuples. Pure string building: no pyspark needed.
    """
    parts = []
    for f in fields:
        if isinstance(f, DataField):
            name, t, desc = f.name, f.type, f.description
        else:
            name, t = f[0], f[1]
            desc = f[2] if len(f) > 2 else getattr(f, "description", None)
        s = f"{quote_ident(name)} {to_spark_type_ddl(t, name, keep_char_varchar)}"
        if not t.nullable:
            s += " NOT NULL"
        if desc is not None:
            s += f" COMMENT {_spark_string(desc)}"
        parts.append(s)
    return ", ".join(parts)
