"""Paimon data types: the type model every other module shares (Java's ``org.apache.paimon.types``).

Types are immutable values (frozen dataclasses) so they can be compared, hashed and shared between the
driver and Spark's Python workers. Parameters are normalised on construction (``TIMESTAMP`` is
``TIMESTAMP(6)``, ``DECIMAL`` is ``DECIMAL(10, 0)``...), so equal types compare equal however they were
spelled in a schema file.

This module is the model only: the type classes, :class:`DataField`, and the field-id numbering Paimon
uses for schema evolution. It is pure Python, so everything that merely names a type (schemas, BinaryRow,
buckets, the planner) gets it without the codecs. The spellings of a type live next to it, each in its own
module with a function pair:

* :mod:`pyspark_paimon.metadata.types.json_codec`: the schema-file JSON (``parse_type`` / ``type_to_json``);
* :mod:`pyspark_paimon.metadata.types.arrow`: Arrow (``to_arrow_type`` / ``from_arrow_type``);
* :mod:`pyspark_paimon.metadata.types.ddl`: Spark DDL (``parse_ddl`` / ``to_spark_ddl``).

Two small pieces of spelling stay here because the model needs them: :func:`type_to_sql` (Java's
``asSQLString``) is what ``str(t)`` prints, so it cannot live in a codec the model would have to import;
and :func:`unsupported_in_spark` is the one error both Spark-facing mappings (Arrow and DDL) raise for a
type Spark cannot hold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Sequence, Union

from pyspark_paimon.errors import SchemaError, UnsupportedTypeError

__all__ = [
    "STRING_LENGTH",
    "MAX_DECIMAL_PRECISION",
    "MAX_TIMESTAMP_PRECISION",
    "ATOMIC_TYPE_NAMES",
    "EXTRA_TYPES",
    "DataType",
    "AtomicType",
    "ArrayType",
    "MapType",
    "MultisetType",
    "RowType",
    "VectorType",
    "DataField",
    "string_type",
    "bytes_type",
    "is_nested",
    "type_to_sql",
    "quote_ident",
    "unsupported_in_spark",
    "ColumnSpec",
    "assign_field_ids",
    "iter_fields",
    "max_field_id",
    "field_id_counter",
]

#: Length of ``STRING`` (= ``VARCHAR(2147483647)``) and ``BYTES`` (= ``VARBINARY(2147483647)``).
STRING_LENGTH = 2147483647
MAX_DECIMAL_PRECISION = 38
MAX_TIMESTAMP_PRECISION = 9

_LENGTH_TYPES = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY"})
_PRECISION_TYPES = frozenset({"TIME", "TIMESTAMP", "TIMESTAMP_LTZ"})
_PLAIN_TYPES = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "VARIANT", "BLOB"}
)
# Types whose optional parameter text (a CRS, an algorithm) we keep verbatim but do not interpret.
EXTRA_TYPES = frozenset({"GEOMETRY", "GEOGRAPHY"})
ATOMIC_TYPE_NAMES = frozenset(_LENGTH_TYPES | _PRECISION_TYPES | _PLAIN_TYPES | EXTRA_TYPES | {"DECIMAL"})

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
                f"Unknown Paimon type '{self.name}'. Known atomic types: {', '.join(sorted(ATOMIC_TYPE_NAMES))}."
            )
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
        if self.extra is not None and name not in EXTRA_TYPES:
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
# Field id helpers (Java's `ReassignFieldId`)
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


def field_id_counter(start: int) -> Callable[[], int]:
    """A function returning ``start``, ``start + 1``, ... on successive calls: the field-id source shared by
    :func:`assign_field_ids` and the schema-file parser (which numbers fields lacking an ``id``)."""
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
    Example (as Java's `ReassignFieldId` numbers them): with ``r`` at 12 and two children, they get 13 and 14 and the
    next column 15.
    """
    next_id = field_id_counter(start)
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
# SQL spelling (Java's asSQLString): what str(t) prints and messages quote
# ------------------------------------------------------------------------------------------------
def _atomic_sql(t: AtomicType) -> str:
    """Java's spelling of an atomic type, which is also its schema-file encoding (``type_to_json``)."""
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
    elif n in EXTRA_TYPES and t.extra is not None:
        s = f"{n}({t.extra})"
    else:
        s = n
    return s if t.nullable else s + " NOT NULL"


def quote_ident(name: str) -> str:
    """Backtick-quote an identifier (doubling backticks), as Paimon's SQL spelling and Spark DDL both do."""
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
        inner = ", ".join(f"{quote_ident(f.name)} {type_to_sql(f.type)}" for f in t.fields)
        return f"ROW<{inner}>{nn}"
    raise TypeError(f"not a Paimon type: {t!r}")


def unsupported_in_spark(t: DataType, column: str | None) -> UnsupportedTypeError:
    """The error for a Paimon type Spark cannot hold, raised by the Arrow mapping and the DDL printer alike."""
    where = f"Column '{column}' has" if column else "Found"
    return UnsupportedTypeError(
        f"{where} Paimon type {type_to_sql(t)}, which Spark (and so pyspark-paimon) cannot represent. "
        "Select the other columns only, or change the column type with another Paimon engine."
    )
