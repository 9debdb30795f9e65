"""Paimon data types: the schema-file JSON encoding, Arrow mapping and Spark DDL (format spec §2.2).

Types are immutable values (frozen dataclasses) so they can be compared, hashed and shared between the
driver and Spark's Python workers. Parameters are normalised on construction (``TIMESTAMP`` is
``TIMESTAMP(6)``, ``DECIMAL`` is ``DECIMAL(10, 0)``...), so equal types compare equal however they were
spelled in a schema file.

Three independent spellings meet here and each has its own function pair:

* the schema-file JSON (:func:`parse_type` / :func:`type_to_json`), which must read everything Java's
  parser reads and write exactly what Java writes, so files stay byte-compatible;
* Arrow (:func:`to_arrow_type` / :func:`from_arrow_type`), the in-memory form shared with Spark;
* Spark DDL (:func:`parse_ddl` / :func:`to_spark_ddl`), how users and Spark describe columns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Sequence, Union

import pyarrow as pa

from pyspark_paimon.errors import CorruptMetadataError, SchemaError, UnsupportedTypeError

__all__ = [
    "STRING_LENGTH", "MAX_DECIMAL_PRECISION", "MAX_TIMESTAMP_PRECISION",
    "DataType", "AtomicType", "ArrayType", "MapType", "MultisetType", "RowType", "VectorType", "DataField",
    "string_type", "bytes_type", "is_nested", "type_to_sql",
    "parse_type", "type_to_json", "field_to_json", "field_from_json", "fields_from_json",
    "to_arrow_type", "to_arrow_field", "to_arrow_schema",
    "to_parquet_arrow_type", "to_parquet_arrow_field", "to_parquet_arrow_schema",
    "from_arrow_type", "from_arrow_field", "from_arrow_schema",
    "parse_ddl", "DdlColumn", "to_spark_ddl", "to_spark_type_ddl", "assign_field_ids", "iter_fields", "max_field_id",
]

#: Length of ``STRING`` (= ``VARCHAR(2147483647)``) and ``BYTES`` (= ``VARBINARY(2147483647)``).
STRING_LENGTH = 2147483647
MAX_DECIMAL_PRECISION = 38
MAX_TIMESTAMP_PRECISION = 9

_LENGTH_TYPES = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY"})
_PRECISION_TYPES = frozenset({"TIME", "TIMESTAMP", "TIMESTAMP_LTZ"})
_PLAIN_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE",
                          "VARIANT", "BLOB"})
# Types whose optional parameter text (a CRS, an algorithm) we keep verbatim but do not interpret.
_EXTRA_TYPES = frozenset({"GEOMETRY", "GEOGRAPHY"})
ATOMIC_TYPE_NAMES = frozenset(_LENGTH_TYPES | _PRECISION_TYPES | _PLAIN_TYPES | _EXTRA_TYPES | {"DECIMAL"})

_DEFAULT_PRECISION = {"TIME": 0, "TIMESTAMP": 6, "TIMESTAMP_LTZ": 6}
_DEFAULT_LENGTH = 1  # Java's CharType/VarCharType/BinaryType/VarBinaryType default
_DEFAULT_DECIMAL = (10, 0)


# ------------------------------------------------------------------------------------------------
# The type model
# ------------------------------------------------------------------------------------------------
class DataType:
    """Common base of all Paimon types (the dataclasses below); carries the shared helpers."""

    nullable: bool

    @property
    def root(self) -> str:
        """The upper-case type root: ``INT``, ``VARCHAR``, ``ARRAY``, ``ROW``..."""
        raise NotImplementedError

    def copy(self, nullable: bool | None = None) -> "DataType":
        """A copy, optionally with different nullability (mirrors Java's ``DataType.copy``)."""
        if nullable is None:
            return self
        return replace(self, nullable=bool(nullable))  # type: ignore[type-var]

    def with_nullable(self, nullable: bool) -> "DataType":
        return self.copy(nullable=nullable)

    def __str__(self) -> str:
        return type_to_sql(self)


def _check_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(f"{what} must be an integer, got {value!r}")
    return value


@dataclass(frozen=True)
class AtomicType(DataType):
    """A non-nested type. ``name`` is the canonical upper-case root (see ``ATOMIC_TYPE_NAMES``).

    ``length`` applies to CHAR/VARCHAR/BINARY/VARBINARY, ``precision`` to TIME/TIMESTAMP/TIMESTAMP_LTZ and
    DECIMAL, ``scale`` to DECIMAL. Missing parameters get Java's defaults, so the same type always has one
    representation. ``extra`` keeps the raw parameter text of GEOMETRY/GEOGRAPHY, which we only carry.
    """

    name: str
    nullable: bool = True
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    extra: str | None = None

    def __post_init__(self) -> None:
        name = self.name.upper() if isinstance(self.name, str) else self.name
        if name not in ATOMIC_TYPE_NAMES:
            raise UnsupportedTypeError(
                f"Unknown Paimon type '{self.name}'. Known atomic types: {', '.join(sorted(ATOMIC_TYPE_NAMES))}.")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "nullable", bool(self.nullable))
        length, precision, scale = self.length, self.precision, self.scale
        if name in _LENGTH_TYPES:
            length = _DEFAULT_LENGTH if length is None else _check_int(length, f"{name} length")
            if not 1 <= length <= STRING_LENGTH:
                raise SchemaError(f"{name} length must be between 1 and {STRING_LENGTH}, got {length}")
            if precision is not None or scale is not None:
                raise SchemaError(f"{name} takes a length, not a precision/scale")
        elif name in _PRECISION_TYPES:
            precision = _DEFAULT_PRECISION[name] if precision is None else _check_int(precision, f"{name} precision")
            if not 0 <= precision <= MAX_TIMESTAMP_PRECISION:
                raise SchemaError(f"{name} precision must be between 0 and {MAX_TIMESTAMP_PRECISION}, got {precision}")
            if length is not None or scale is not None:
                raise SchemaError(f"{name} takes only a precision")
        elif name == "DECIMAL":
            if precision is None:
                precision, scale = _DEFAULT_DECIMAL if scale is None else (_DEFAULT_DECIMAL[0], scale)
            precision = _check_int(precision, "DECIMAL precision")
            scale = 0 if scale is None else _check_int(scale, "DECIMAL scale")
            if not 1 <= precision <= MAX_DECIMAL_PRECISION:
                raise SchemaError(f"DECIMAL precision must be between 1 and {MAX_DECIMAL_PRECISION}, got {precision}")
            if not 0 <= scale <= precision:
                raise SchemaError(f"DECIMAL scale must be between 0 and the precision {precision}, got {scale}")
            if length is not None:
                raise SchemaError("DECIMAL takes a precision and scale, not a length")
        else:
            if length is not None or precision is not None or scale is not None:
                raise SchemaError(f"{name} takes no parameters")
        if self.extra is not None and name not in _EXTRA_TYPES:
            raise SchemaError(f"{name} takes no extra parameters")
        object.__setattr__(self, "length", length)
        object.__setattr__(self, "precision", precision)
        object.__setattr__(self, "scale", scale)

    @property
    def root(self) -> str:
        return self.name


@dataclass(frozen=True)
class ArrayType(DataType):
    element: DataType
    nullable: bool = True

    @property
    def root(self) -> str:
        return "ARRAY"


@dataclass(frozen=True)
class MapType(DataType):
    key: DataType
    value: DataType
    nullable: bool = True

    @property
    def root(self) -> str:
        return "MAP"


@dataclass(frozen=True)
class MultisetType(DataType):
    element: DataType
    nullable: bool = True

    @property
    def root(self) -> str:
        return "MULTISET"


@dataclass(frozen=True)
class VectorType(DataType):
    """Paimon's fixed-length VECTOR; parsed and re-written faithfully, not readable through Spark."""

    element: DataType
    length: int
    nullable: bool = True

    @property
    def root(self) -> str:
        return "VECTOR"


@dataclass(frozen=True)
class DataField:
    """A named column (or ROW member). ``id`` is the stable field id used for schema evolution."""

    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None

    def with_type(self, t: DataType) -> "DataField":
        return replace(self, type=t)

    def with_name(self, name: str) -> "DataField":
        return replace(self, name=name)

    def with_id(self, field_id: int) -> "DataField":
        return replace(self, id=field_id)

    def with_description(self, description: str | None) -> "DataField":
        return replace(self, description=description)


@dataclass(frozen=True)
class RowType(DataType):
    fields: tuple[DataField, ...]
    nullable: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))

    @property
    def root(self) -> str:
        return "ROW"

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]


def string_type(nullable: bool = True) -> AtomicType:
    """Paimon ``STRING`` (``VARCHAR(2147483647)``)."""
    return AtomicType("VARCHAR", nullable, length=STRING_LENGTH)


def bytes_type(nullable: bool = True) -> AtomicType:
    """Paimon ``BYTES`` (``VARBINARY(2147483647)``)."""
    return AtomicType("VARBINARY", nullable, length=STRING_LENGTH)


def is_nested(t: DataType) -> bool:
    return not isinstance(t, AtomicType)


# ------------------------------------------------------------------------------------------------
# Field id helpers (§2.2 "Field ids")
# ------------------------------------------------------------------------------------------------
def iter_fields(t_or_fields: DataType | Iterable[DataField]) -> Iterator[DataField]:
    """Every DataField reachable from a type or a field list, nested ones included (pre-order)."""
    if isinstance(t_or_fields, DataType):
        t = t_or_fields
        if isinstance(t, RowType):
            yield from iter_fields(t.fields)
        elif isinstance(t, (ArrayType, MultisetType, VectorType)):
            yield from iter_fields(t.element)
        elif isinstance(t, MapType):
            yield from iter_fields(t.key)
            yield from iter_fields(t.value)
        return
    for f in t_or_fields:
        yield f
        yield from iter_fields(f.type)


def max_field_id(fields: Iterable[DataField]) -> int:
    """Highest field id among ``fields`` and their nested fields; -1 when there are none."""
    return max((f.id for f in iter_fields(fields)), default=-1)


def _reassign(t: DataType, next_id: Callable[[], int]) -> DataType:
    if isinstance(t, RowType):
        new_fields = []
        for f in t.fields:
            fid = next_id()  # parent first, then its children: ids follow declaration order depth-first
            new_fields.append(replace(f, id=fid, type=_reassign(f.type, next_id)))
        return replace(t, fields=tuple(new_fields))
    if isinstance(t, (ArrayType, MultisetType, VectorType)):
        return replace(t, element=_reassign(t.element, next_id))
    if isinstance(t, MapType):
        return replace(t, key=_reassign(t.key, next_id), value=_reassign(t.value, next_id))
    return t


def _counter(start: int) -> Callable[[], int]:
    state = [start - 1]

    def next_id() -> int:
        state[0] += 1
        return state[0]

    return next_id


ColumnSpec = Union[DataField, tuple]


def assign_field_ids(columns: Sequence[ColumnSpec], start: int = 0) -> tuple[list[DataField], int]:
    """Number columns the way Paimon does: top-level in order, a ROW's children right after the ROW.

    ``columns`` holds ``(name, type)``, ``(name, type, description)`` tuples or DataFields (whose ids and
    nested ids are replaced). Returns the fields and the highest id assigned (``start - 1`` if none).
    Example (§2.2): with ``r`` at 12 and two children, they get 13 and 14 and the next column 15.
    """
    next_id = _counter(start)
    out: list[DataField] = []
    for col in columns:
        if isinstance(col, DataField):
            name, t, desc, default = col.name, col.type, col.description, col.default_value
        else:
            if len(col) not in (2, 3):
                raise SchemaError(f"A column must be (name, type) or (name, type, description), got {col!r}")
            name, t = col[0], col[1]
            desc = col[2] if len(col) == 3 else getattr(col, "description", None)
            default = None
        if not isinstance(t, DataType):
            raise SchemaError(f"Column '{name}': expected a Paimon DataType, got {t!r}")
        fid = next_id()
        out.append(DataField(fid, name, _reassign(t, next_id), desc, default))
    return out, next_id() - 1


# ------------------------------------------------------------------------------------------------
# Tokenizer shared by the schema-file type parser and the Spark DDL parser
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Tok:
    kind: str  # WORD, INT, QIDENT, STRING, SYM, EOF
    value: str
    pos: int


_WORD_RE = re.compile(r"\w+", re.UNICODE)


def _tokenize(text: str, backslash_escapes: bool, fail: Callable[[str, int], Exception]) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "(),<>:":
            toks.append(_Tok("SYM", c, i))
            i += 1
            continue
        if c == "`":
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise fail("unterminated `quoted` identifier", i)
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        buf.append("`")
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            toks.append(_Tok("QIDENT", "".join(buf), i))
            i = j + 1
            continue
        if c == "'" or (c == '"' and backslash_escapes):
            quote, j, buf = c, i + 1, []
            while True:
                if j >= n:
                    raise fail("unterminated string literal", i)
                ch = text[j]
                if backslash_escapes and ch == "\\" and j + 1 < n:
                    nxt = text[j + 1]
                    buf.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
                    j += 2
                    continue
                if ch == quote:
                    if j + 1 < n and text[j + 1] == quote:
                        buf.append(quote)
                        j += 2
                        continue
                    break
                buf.append(ch)
                j += 1
            toks.append(_Tok("STRING", "".join(buf), i))
            i = j + 1
            continue
        m = _WORD_RE.match(text, i)
        if m:
            word = m.group(0)
            toks.append(_Tok("INT" if word.isdigit() else "WORD", word, i))
            i = m.end()
            continue
        raise fail(f"unexpected character {c!r}", i)
    toks.append(_Tok("EOF", "", n))
    return toks


class _Cursor:
    def __init__(self, toks: list[_Tok], fail: Callable[[str, int], Exception]):
        self.toks = toks
        self.i = 0
        self.fail = fail

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def advance(self) -> _Tok:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def is_word(self, *words: str) -> bool:
        t = self.tok
        return t.kind == "WORD" and t.value.upper() in words

    def accept_word(self, *words: str) -> bool:
        if self.is_word(*words):
            self.advance()
            return True
        return False

    def expect_word(self, word: str) -> None:
        if not self.accept_word(word):
            raise self.error(f"expected {word}")

    def is_sym(self, s: str) -> bool:
        return self.tok.kind == "SYM" and self.tok.value == s

    def accept_sym(self, s: str) -> bool:
        if self.is_sym(s):
            self.advance()
            return True
        return False

    def expect_sym(self, s: str) -> None:
        if not self.accept_sym(s):
            raise self.error(f"expected '{s}'")

    def expect_int(self, what: str) -> int:
        t = self.tok
        if t.kind != "INT":
            raise self.error(f"expected {what} (an integer)")
        self.advance()
        return int(t.value)

    def error(self, msg: str) -> Exception:
        t = self.tok
        found = "end of input" if t.kind == "EOF" else repr(t.value)
        return self.fail(f"{msg}, found {found}", t.pos)


# ------------------------------------------------------------------------------------------------
# Schema-file JSON: parsing
# ------------------------------------------------------------------------------------------------
def _make_atomic(cur: _Cursor, name: str, **kw: Any) -> AtomicType:
    try:
        return AtomicType(name, **kw)
    except UnsupportedTypeError:
        raise
    except SchemaError as e:
        raise cur.fail(str(e), cur.tok.pos) from None


def _optional_params(cur: _Cursor, what: str, max_count: int) -> list[int]:
    if not cur.accept_sym("("):
        return []
    values = [cur.expect_int(what)]
    while len(values) < max_count and cur.accept_sym(","):
        values.append(cur.expect_int(what))
    cur.expect_sym(")")
    return values


def _raw_params(cur: _Cursor) -> str | None:
    """Text of a parenthesised parameter list, re-spelled canonically (for GEOMETRY/GEOGRAPHY)."""
    if not cur.accept_sym("("):
        return None
    parts: list[str] = []
    while not cur.is_sym(")"):
        t = cur.advance()
        if t.kind == "EOF":
            raise cur.error("expected ')'")
        if t.kind == "SYM" and t.value == ",":
            parts.append(", ")
        elif t.kind == "STRING":
            parts.append("'" + t.value.replace("'", "''") + "'")
        elif t.kind == "QIDENT":
            parts.append("`" + t.value.replace("`", "``") + "`")
        else:
            parts.append(t.value)
    cur.expect_sym(")")
    return "".join(parts)


def _parse_sql_base(cur: _Cursor) -> DataType:
    t = cur.tok
    if t.kind != "WORD":
        raise cur.error("expected a type name")
    word = t.value.upper()
    cur.advance()
    if word in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        p = _optional_params(cur, f"{word} length", 1)
        return _make_atomic(cur, word, length=p[0] if p else None)
    if word == "STRING":
        return string_type()
    if word == "BYTES":
        return bytes_type()
    if word in ("BOOLEAN", "TINYINT", "SMALLINT", "BIGINT", "FLOAT", "DATE", "VARIANT", "BLOB"):
        return AtomicType(word)
    if word in ("INT", "INTEGER"):
        return AtomicType("INT")
    if word == "DOUBLE":
        cur.accept_word("PRECISION")
        return AtomicType("DOUBLE")
    if word in ("DECIMAL", "NUMERIC", "DEC"):
        p = _optional_params(cur, "DECIMAL precision/scale", 2)
        return _make_atomic(cur, "DECIMAL", precision=p[0] if p else None, scale=p[1] if len(p) > 1 else None)
    if word == "TIME":
        p = _optional_params(cur, "TIME precision", 1)
        if cur.accept_word("WITHOUT"):
            cur.expect_word("TIME")
            cur.expect_word("ZONE")
        return _make_atomic(cur, "TIME", precision=p[0] if p else None)
    if word == "TIMESTAMP":
        p = _optional_params(cur, "TIMESTAMP precision", 1)
        name = "TIMESTAMP"
        if cur.accept_word("WITHOUT"):
            cur.expect_word("TIME")
            cur.expect_word("ZONE")
        elif cur.accept_word("WITH"):
            if not cur.accept_word("LOCAL"):
                raise cur.error("only TIMESTAMP WITH LOCAL TIME ZONE is supported; expected LOCAL")
            cur.expect_word("TIME")
            cur.expect_word("ZONE")
            name = "TIMESTAMP_LTZ"
        return _make_atomic(cur, name, precision=p[0] if p else None)
    if word == "TIMESTAMP_LTZ":
        p = _optional_params(cur, "TIMESTAMP_LTZ precision", 1)
        return _make_atomic(cur, "TIMESTAMP_LTZ", precision=p[0] if p else None)
    if word in _EXTRA_TYPES:
        return AtomicType(word, extra=_raw_params(cur))
    if word in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR"):
        raise cur.fail(f"{word} must be encoded as a JSON object such as {{\"type\": \"{word}\", ...}}, "
                       "not as a type string", t.pos)
    raise UnsupportedTypeError(
        f"Unknown Paimon type '{t.value}' (perhaps written by a newer Paimon version). "
        f"Known types: {', '.join(sorted(ATOMIC_TYPE_NAMES | {'STRING', 'BYTES'}))}.")


def _parse_nullability(cur: _Cursor, t: DataType) -> DataType:
    if cur.accept_word("NOT"):
        cur.expect_word("NULL")
        return t.copy(nullable=False)
    if cur.accept_word("NULL"):
        return t.copy(nullable=True)
    return t


def _parse_sql_type_string(text: str) -> DataType:
    def fail(msg: str, pos: int) -> Exception:
        return CorruptMetadataError(f"Cannot parse type string {text!r} at position {pos}: {msg}")

    cur = _Cursor(_tokenize(text, backslash_escapes=False, fail=fail), fail)
    t = _parse_nullability(cur, _parse_sql_base(cur))
    while cur.is_word("ARRAY", "MULTISET"):  # suffix form `INT ARRAY`
        kind = cur.advance().value.upper()
        t = _parse_nullability(cur, ArrayType(t) if kind == "ARRAY" else MultisetType(t))
    if cur.tok.kind != "EOF":
        raise cur.error("unexpected text after the type")
    return t


_NESTED_HEAD = re.compile(r"^\s*(ARRAY|MAP|MULTISET|ROW|VECTOR)(?:\s+(NOT\s+NULL|NULL))?\s*$", re.IGNORECASE)


def parse_type(json_value: Any, next_id: Callable[[], int] | None = None) -> DataType:
    """Parse a type as stored in a schema file: a SQL string for atomic types, an object for nested ones.

    ``next_id`` numbers ROW members that have no ``id`` member (Java accepts such files); when omitted
    a counter starting at 0 is used.
    """
    if next_id is None:
        next_id = _counter(0)
    if isinstance(json_value, str):
        return _parse_sql_type_string(json_value)
    if not isinstance(json_value, dict):
        raise CorruptMetadataError(f"A type must be a string or a JSON object, got {json_value!r}")
    head = json_value.get("type")
    m = _NESTED_HEAD.match(head) if isinstance(head, str) else None
    if not m:
        raise CorruptMetadataError(
            f"Unknown nested type {head!r} in {json_value!r}; expected ARRAY, MAP, MULTISET, ROW or VECTOR")
    kind = m.group(1).upper()
    if m.group(2):
        nullable = not m.group(2).upper().startswith("NOT")
    else:
        # pypaimon's extra member; Java ignores it, but it never contradicts the type string Java writes.
        nullable = json_value.get("nullable", True) is not False

    def member(key: str) -> Any:
        if key not in json_value:
            raise CorruptMetadataError(f"{kind} type {json_value!r} lacks the '{key}' member")
        return json_value[key]

    if kind == "ARRAY":
        return ArrayType(parse_type(member("element"), next_id), nullable)
    if kind == "MULTISET":
        return MultisetType(parse_type(member("element"), next_id), nullable)
    if kind == "MAP":
        return MapType(parse_type(member("key"), next_id), parse_type(member("value"), next_id), nullable)
    if kind == "VECTOR":
        length = member("length")
        if isinstance(length, bool) or not isinstance(length, int):
            raise CorruptMetadataError(f"VECTOR length must be an integer in {json_value!r}")
        return VectorType(parse_type(member("element"), next_id), length, nullable)
    fields = member("fields")
    return RowType(tuple(fields_from_json(fields, next_id)), nullable)


def fields_from_json(values: Any, next_id: Callable[[], int] | None = None) -> list[DataField]:
    """Parse a list of DataField objects; ids must be present on all of them or on none."""
    if not isinstance(values, list):
        raise CorruptMetadataError(f"Expected a list of fields, got {values!r}")
    with_id = [isinstance(v, dict) and "id" in v for v in values]
    if any(with_id) and not all(with_id):
        raise CorruptMetadataError(
            "Either all fields or none must have an 'id': " + ", ".join(
                repr(v.get("name") if isinstance(v, dict) else v) for v in values))
    if next_id is None:
        next_id = _counter(0)
    return [field_from_json(v, next_id) for v in values]


def field_from_json(value: Any, next_id: Callable[[], int] | None = None) -> DataField:
    if not isinstance(value, dict):
        raise CorruptMetadataError(f"A field must be a JSON object, got {value!r}")
    name = value.get("name")
    if not isinstance(name, str):
        raise CorruptMetadataError(f"Field {value!r} lacks a string 'name'")
    if "type" not in value:
        raise CorruptMetadataError(f"Field '{name}' lacks a 'type'")
    if "id" in value:
        fid = value["id"]
        if isinstance(fid, bool) or not isinstance(fid, int):
            raise CorruptMetadataError(f"Field '{name}' has a non-integer id {fid!r}")
    else:
        if next_id is None:
            next_id = _counter(0)
        fid = next_id()
    try:
        t = parse_type(value["type"], next_id)
    except UnsupportedTypeError as e:
        raise UnsupportedTypeError(f"Column '{name}': {e}") from None
    except CorruptMetadataError as e:
        raise CorruptMetadataError(f"Column '{name}': {e}") from None
    desc = value.get("description")
    default = value.get("defaultValue")
    return DataField(fid, name, t, None if desc is None else str(desc), None if default is None else str(default))


# ------------------------------------------------------------------------------------------------
# Schema-file JSON: writing (Java's exact spelling)
# ------------------------------------------------------------------------------------------------
def _atomic_sql(t: AtomicType) -> str:
    n = t.name
    if n == "VARCHAR" and t.length == STRING_LENGTH:
        s = "STRING"
    elif n == "VARBINARY" and t.length == STRING_LENGTH:
        s = "BYTES"
    elif n in _LENGTH_TYPES:
        s = f"{n}({t.length})"
    elif n == "DECIMAL":
        s = f"DECIMAL({t.precision}, {t.scale})"
    elif n == "TIMESTAMP_LTZ":
        s = f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE"
    elif n in _PRECISION_TYPES:
        s = f"{n}({t.precision})"
    elif n in _EXTRA_TYPES and t.extra is not None:
        s = f"{n}({t.extra})"
    else:
        s = n
    return s if t.nullable else s + " NOT NULL"


def type_to_json(t: DataType) -> str | dict[str, Any]:
    """The schema-file encoding of ``t``, exactly as Java writes it (member order included)."""
    if isinstance(t, AtomicType):
        return _atomic_sql(t)
    head = t.root if t.nullable else t.root + " NOT NULL"
    if isinstance(t, (ArrayType, MultisetType)):
        return {"type": head, "element": type_to_json(t.element)}
    if isinstance(t, MapType):
        return {"type": head, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    if isinstance(t, VectorType):
        return {"type": head, "element": type_to_json(t.element), "length": t.length}
    if isinstance(t, RowType):
        return {"type": head, "fields": [field_to_json(f) for f in t.fields]}
    raise TypeError(f"not a Paimon type: {t!r}")


def field_to_json(f: DataField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


def _quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def type_to_sql(t: DataType) -> str:
    """Human-readable SQL spelling (Java's ``asSQLString``), used in messages only."""
    if isinstance(t, AtomicType):
        return _atomic_sql(t)
    nn = "" if t.nullable else " NOT NULL"
    if isinstance(t, ArrayType):
        return f"ARRAY<{type_to_sql(t.element)}>{nn}"
    if isinstance(t, MultisetType):
        return f"MULTISET<{type_to_sql(t.element)}>{nn}"
    if isinstance(t, VectorType):
        return f"VECTOR<{type_to_sql(t.element)}, {t.length}>{nn}"
    if isinstance(t, MapType):
        return f"MAP<{type_to_sql(t.key)}, {type_to_sql(t.value)}>{nn}"
    if isinstance(t, RowType):
        inner = ", ".join(f"{_quote_ident(f.name)} {type_to_sql(f.type)}" for f in t.fields)
        return f"ROW<{inner}>{nn}"
    raise TypeError(f"not a Paimon type: {t!r}")


# ------------------------------------------------------------------------------------------------
# Arrow mapping
# ------------------------------------------------------------------------------------------------
_ARROW_SIMPLE: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATE": pa.date32(),
    "CHAR": pa.string(), "VARCHAR": pa.string(), "BINARY": pa.binary(), "VARBINARY": pa.binary(),
}

#: Name of the list element field, as Spark and Parquet spell it.
ARROW_LIST_ELEMENT = "element"


def _unsupported(t: DataType, column: str | None) -> UnsupportedTypeError:
    where = f"Column '{column}' has" if column else "Found"
    return UnsupportedTypeError(
        f"{where} Paimon type {type_to_sql(t)}, which Spark (and so pyspark-paimon) cannot represent. "
        "Select the other columns only, or change the column type with another Paimon engine.")


def _timestamp_unit(precision: int, parquet: bool) -> str:
    if not parquet:
        return "us"  # Spark's TIMESTAMP/TIMESTAMP_NTZ are microseconds
    if precision <= 3:
        return "ms"
    return "us" if precision <= 6 else "ns"


def _to_arrow(t: DataType, column: str | None, parquet: bool, field_ids: bool) -> pa.DataType:
    if isinstance(t, AtomicType):
        simple = _ARROW_SIMPLE.get(t.name)
        if simple is not None:
            return simple
        if t.name == "DECIMAL":
            return pa.decimal128(t.precision, t.scale)
        if t.name == "TIMESTAMP":
            return pa.timestamp(_timestamp_unit(t.precision or 0, parquet))
        if t.name == "TIMESTAMP_LTZ":
            return pa.timestamp(_timestamp_unit(t.precision or 0, parquet), tz="UTC")
        raise _unsupported(t, column)
    if isinstance(t, ArrayType):
        elem = pa.field(ARROW_LIST_ELEMENT, _to_arrow(t.element, column, parquet, field_ids), t.element.nullable)
        return pa.list_(elem)
    if isinstance(t, MapType):
        key = pa.field("key", _to_arrow(t.key, column, parquet, field_ids), False)
        value = pa.field("value", _to_arrow(t.value, column, parquet, field_ids), t.value.nullable)
        return pa.map_(key, value)
    if isinstance(t, RowType):
        return pa.struct([_to_arrow_field(f, column, parquet, field_ids) for f in t.fields])
    raise _unsupported(t, column)


def _to_arrow_field(f: DataField, parent: str | None, parquet: bool, field_ids: bool) -> pa.Field:
    path = f"{parent}.{f.name}" if parent else f.name
    meta = {b"PARQUET:field_id": str(f.id).encode()} if field_ids else None
    return pa.field(f.name, _to_arrow(f.type, path, parquet, field_ids), f.type.nullable, metadata=meta)


def to_arrow_type(t: DataType, column: str | None = None) -> pa.DataType:
    """The Arrow type Spark exchanges for ``t`` (timestamps in microseconds, LTZ in UTC).

    ``column`` only improves the :class:`UnsupportedTypeError` message.
    """
    return _to_arrow(t, column, parquet=False, field_ids=False)


def to_arrow_field(f: DataField, field_ids: bool = False) -> pa.Field:
    """Arrow field with nullability taken from the Paimon type; optionally with Parquet field ids."""
    return _to_arrow_field(f, None, parquet=False, field_ids=field_ids)


def to_arrow_schema(fields: Iterable[DataField], field_ids: bool = False) -> pa.Schema:
    return pa.schema([to_arrow_field(f, field_ids) for f in fields])


def to_parquet_arrow_type(t: DataType, column: str | None = None) -> pa.DataType:
    """Like :func:`to_arrow_type`, but with the timestamp unit Java writes to Parquet for the precision
    (ms for p <= 3, us for p <= 6, ns above), so files carry the same logical types as Java's."""
    return _to_arrow(t, column, parquet=True, field_ids=False)


def to_parquet_arrow_field(f: DataField, field_ids: bool = True) -> pa.Field:
    return _to_arrow_field(f, None, parquet=True, field_ids=field_ids)


def to_parquet_arrow_schema(fields: Iterable[DataField], field_ids: bool = True) -> pa.Schema:
    """Arrow schema for writing a data file; ``PARQUET:field_id`` metadata carries the Paimon ids."""
    return pa.schema([to_parquet_arrow_field(f, field_ids) for f in fields])


_TIME_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow_type(pa_type: pa.DataType, nullable: bool = True, column: str | None = None) -> DataType:
    """The Paimon type for an Arrow type. ROW members get placeholder id -1: number them with
    :func:`assign_field_ids` before storing them in a schema."""
    t = pa_type
    where = f"column '{column}'" if column else "a column"
    if pa.types.is_dictionary(t):
        return from_arrow_type(t.value_type, nullable, column)
    if pa.types.is_boolean(t):
        return AtomicType("BOOLEAN", nullable)
    for check, name in ((pa.types.is_int8, "TINYINT"), (pa.types.is_int16, "SMALLINT"),
                        (pa.types.is_int32, "INT"), (pa.types.is_int64, "BIGINT"),
                        (pa.types.is_float32, "FLOAT"), (pa.types.is_float64, "DOUBLE"),
                        (pa.types.is_date, "DATE")):
        if check(t):
            return AtomicType(name, nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", _no)(t):
        return string_type(nullable)
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return AtomicType("BINARY", nullable, length=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or getattr(pa.types, "is_binary_view", _no)(t):
        return bytes_type(nullable)
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise UnsupportedTypeError(
                f"Arrow type {t} of {where} exceeds Paimon's maximum DECIMAL precision {MAX_DECIMAL_PRECISION}")
        return AtomicType("DECIMAL", nullable, precision=t.precision, scale=t.scale)
    if pa.types.is_timestamp(t):
        p = _TIME_UNIT_PRECISION[t.unit]
        return AtomicType("TIMESTAMP_LTZ" if t.tz else "TIMESTAMP", nullable, precision=p)
    if pa.types.is_time(t):
        return AtomicType("TIME", nullable, precision=_TIME_UNIT_PRECISION[t.unit])
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or getattr(pa.types, "is_list_view", _no)(t) or getattr(pa.types, "is_large_list_view", _no)(t)):
        vf = t.value_field
        return ArrayType(from_arrow_type(vf.type, vf.nullable, column), nullable)
    if pa.types.is_map(t):
        return MapType(from_arrow_type(t.key_field.type, False, column),
                       from_arrow_type(t.item_field.type, t.item_field.nullable, column), nullable)
    if pa.types.is_struct(t):
        members = [t.field(i) for i in range(t.num_fields)]
        return RowType(tuple(DataField(-1, m.name, from_arrow_type(m.type, m.nullable,
                                                                  f"{column}.{m.name}" if column else m.name))
                             for m in members), nullable)
    raise UnsupportedTypeError(
        f"Arrow type {t} of {where} has no Paimon equivalent; cast it (e.g. unsigned to a wider signed "
        "integer, float16 to FLOAT) before writing")


def _no(_t: pa.DataType) -> bool:
    return False


def from_arrow_field(f: pa.Field) -> DataType:
    return from_arrow_type(f.type, f.nullable, f.name)


def from_arrow_schema(schema: pa.Schema) -> list[tuple[str, DataType]]:
    """``(name, type)`` pairs for an Arrow schema, ready for :func:`assign_field_ids`."""
    return [(f.name, from_arrow_field(f)) for f in schema]


# ------------------------------------------------------------------------------------------------
# Spark DDL
# ------------------------------------------------------------------------------------------------
_DDL_SIMPLE = {
    "BOOLEAN": "BOOLEAN", "BOOL": "BOOLEAN",
    "TINYINT": "TINYINT", "BYTE": "TINYINT",
    "SMALLINT": "SMALLINT", "SHORT": "SMALLINT",
    "INT": "INT", "INTEGER": "INT",
    "BIGINT": "BIGINT", "LONG": "BIGINT",
    "FLOAT": "FLOAT", "REAL": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
}


class _DdlParser:
    """Recursive-descent parser for Spark column lists (``name type [NOT NULL] [COMMENT '...']``)."""

    def __init__(self, ddl: str):
        self.ddl = ddl
        self.cur = _Cursor(_tokenize(ddl, backslash_escapes=True, fail=self._fail), self._fail)

    def _fail(self, msg: str, pos: int) -> SchemaError:
        snippet = self.ddl[max(0, pos - 20):pos + 20]
        return SchemaError(f"Cannot parse column definitions at position {pos} ({msg}): "
                           f"...{snippet}... in {self.ddl!r}")

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
            return self._atomic(t.pos, "VARCHAR" if word == "VARCHAR" else "CHAR",
                                length=self._precision(1, "length"))
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
        raise self._fail(f"unsupported Spark type '{t.value}' (supported: boolean, tinyint, smallint, int, "
                         "bigint, float, double, decimal(p,s), string, char(n), varchar(n), binary, date, "
                         "timestamp, timestamp_ntz, array<>, map<>, struct<>)", t.pos)


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
        if n in ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE"):
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
            return "TIMESTAMP"
        raise _unsupported(t, column)
    if isinstance(t, ArrayType):
        return f"ARRAY<{to_spark_type_ddl(t.element, column, keep_char_varchar)}>"
    if isinstance(t, MapType):
        return (f"MAP<{to_spark_type_ddl(t.key, column, keep_char_varchar)}, "
                f"{to_spark_type_ddl(t.value, column, keep_char_varchar)}>")
    if isinstance(t, RowType):
        members = []
        for f in t.fields:
            path = f"{column}.{f.name}" if column else f.name
            m = f"{_quote_ident(f.name)}: {to_spark_type_ddl(f.type, path, keep_char_varchar)}"
            if not f.type.nullable:
                m += " NOT NULL"
            if f.description is not None:
                m += f" COMMENT {_spark_string(f.description)}"
            members.append(m)
        return f"STRUCT<{', '.join(members)}>"
    raise _unsupported(t, column)


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
        s = f"{_quote_ident(name)} {to_spark_type_ddl(t, name, keep_char_varchar)}"
        if not t.nullable:
            s += " NOT NULL"
        if desc is not None:
            s += f" COMMENT {_spark_string(desc)}"
        parts.append(s)
    return ", ".join(parts)
