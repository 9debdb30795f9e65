"""Paimon's schema-file encoding of types: the JSON codec and its SQL type-string parser (Java's `DataTypeJsonParser`).

A schema file spells an atomic type as a SQL string (``"DECIMAL(10, 2) NOT NULL"``) and a nested one as
a JSON object (``{"type": "ARRAY", "element": ...}``). :func:`parse_type` must read everything Java's
parser reads, and :func:`type_to_json` / :func:`field_to_json` must write exactly what Java writes (member
order included), so schema files stay byte-compatible with other Paimon engines. Kept apart from the type
model so that only code that reads or writes schema files depends on this format.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from pyspark_paimon.errors import CorruptMetadataError, SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.types.lexer import Cursor, tokenize
from pyspark_paimon.metadata.types.model import (
    ATOMIC_TYPE_NAMES,
    EXTRA_TYPES,
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    MapType,
    MultisetType,
    RowType,
    VectorType,
    bytes_type,
    field_id_counter,
    string_type,
    type_to_sql,
)

__all__ = ["parse_type", "fields_from_json", "field_from_json", "type_to_json", "field_to_json"]


# ------------------------------------------------------------------------------------------------
# Schema-file JSON: parsing
# ------------------------------------------------------------------------------------------------
def _make_atomic(cur: Cursor, name: str, **kw: Any) -> AtomicType:
    try:
        return AtomicType(name, **kw)
    except UnsupportedTypeError:
        raise
    except SchemaError as e:
        raise cur.fail(str(e), cur.tok.pos) from None


def _optional_params(cur: Cursor, what: str, max_count: int) -> list[int]:
    if not cur.accept_sym("("):
        return []
    values = [cur.expect_int(what)]
    while len(values) < max_count and cur.accept_sym(","):
        values.append(cur.expect_int(what))
    cur.expect_sym(")")
    return values


def _raw_params(cur: Cursor) -> str | None:
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


def _parse_sql_base(cur: Cursor) -> DataType:
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
    if word in EXTRA_TYPES:
        return AtomicType(word, extra=_raw_params(cur))
    if word in ("ARRAY", "MAP", "MULTISET", "ROW", "VECTOR"):
        raise cur.fail(
            f'{word} must be encoded as a JSON object such as {{"type": "{word}", ...}}, not as a type string', t.pos
        )
    raise UnsupportedTypeError(
        f"Unknown Paimon type '{t.value}' (perhaps written by a newer Paimon version). "
        f"Known types: {', '.join(sorted(ATOMIC_TYPE_NAMES | {'STRING', 'BYTES'}))}."
    )


def _parse_nullability(cur: Cursor, t: DataType) -> DataType:
    if cur.accept_word("NOT"):
        cur.expect_word("NULL")
        return t.copy(nullable=False)
    if cur.accept_word("NULL"):
        return t.copy(nullable=True)
    return t


def _parse_sql_type_string(text: str) -> DataType:
    def fail(msg: str, pos: int) -> Exception:
        return CorruptMetadataError(f"Cannot parse type string {text!r} at position {pos}: {msg}")

    cur = Cursor(tokenize(text, backslash_escapes=False, fail=fail), fail)
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
        next_id = field_id_counter(0)
    if isinstance(json_value, str):
        return _parse_sql_type_string(json_value)
    if not isinstance(json_value, dict):
        raise CorruptMetadataError(f"A type must be a string or a JSON object, got {json_value!r}")
    head = json_value.get("type")
    m = _NESTED_HEAD.match(head) if isinstance(head, str) else None
    if not m:
        raise CorruptMetadataError(
            f"Unknown nested type {head!r} in {json_value!r}; expected ARRAY, MAP, MULTISET, ROW or VECTOR"
        )
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
            "Either all fields or none must have an 'id': "
            + ", ".join(repr(v.get("name") if isinstance(v, dict) else v) for v in values)
        )
    if next_id is None:
        next_id = field_id_counter(0)
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
            next_id = field_id_counter(0)
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
def type_to_json(t: DataType) -> str | dict[str, Any]:
    """The schema-file encoding of ``t``, exactly as Java writes it (member order included)."""
    if isinstance(t, AtomicType):
        return type_to_sql(t)  # an atomic type's encoding is Java's SQL spelling
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
