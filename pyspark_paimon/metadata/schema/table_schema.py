"""Table schemas (`schema/schema-N` files, Java's `TableSchema`, `SchemaManager`) and their evolution.

A table's schema history is a sequence of immutable JSON files. Every change writes the *next* file with
an atomic create-if-absent, so two concurrent writers can never both produce ``schema-N``: the loser
reloads the latest schema and re-applies its change (optimistic concurrency, like snapshot commits).

Files are written the way Java writes them (Jackson's pretty printer, Java's key order, ``comment``
omitted when null) so a table created here is indistinguishable from one created by Java Paimon, and
files written by Java or pypaimon (``"comment": null``, ``TIMESTAMP_LTZ(p)``, extra ``"nullable"``
members, old versions with implied defaults) are read.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.errors import (
    CommitError,
    CorruptMetadataError,
    OptionError,
    SchemaError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedTypeError,
)
from pyspark_paimon.metadata.effects import took_effect
from pyspark_paimon.metadata.fileindex.index_spec import FileIndexSpec
from pyspark_paimon.metadata.io.jackson import to_jackson_json
from pyspark_paimon.metadata.io.own_create import create_own
from pyspark_paimon.metadata.schema.options import (
    ADD_COLUMN_BEFORE_PARTITION,
    BUCKET,
    BUCKET_KEY,
    DATA_EVOLUTION_ENABLED,
    DISABLE_ALTER_COLUMN_NULL_TO_NOT_NULL,
    DISABLE_EXPLICIT_TYPE_CASTING,
    FILE_FORMAT,
    JAVA_IMMUTABLE,
    MERGE_ENGINE,
    ROW_TRACKING_ENABLED,
    SEQUENCE_FIELD,
    CoreOptions,
)
from pyspark_paimon.metadata.types.arrow import to_arrow_schema
from pyspark_paimon.metadata.types.casts import evolution_problem, supports_cast
from pyspark_paimon.metadata.types.json_codec import field_to_json, fields_from_json
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    DataField,
    DataType,
    MapType,
    RowType,
    assign_field_ids,
    iter_fields,
    max_field_id,
    type_to_sql,
)
from pyspark_paimon.metadata.variant.shredding import shredding_types

__all__ = ["CURRENT_VERSION", "SCHEMA_PREFIX", "TableSchema", "SchemaManager", "option_str", "validate_table_schema"]

CURRENT_VERSION = 3
SCHEMA_PREFIX = "schema-"  # schema/schema-<id>

#: Types that cannot be primary, partition or bucket keys (java SchemaValidation).
_KEY_UNSUPPORTED_ROOTS = frozenset({"MAP", "ARRAY", "ROW", "MULTISET", "VECTOR", "VARIANT", "GEOMETRY", "GEOGRAPHY"})
#: Names the primary-key data file layout (Java's `SpecialFields`) reserves.
_SYSTEM_FIELD_NAMES = frozenset({"_SEQUENCE_NUMBER", "_VALUE_KIND"})
_KEY_FIELD_PREFIX = "_KEY_"
#: Options that define the data layout; changing them on an existing table would misread its files.
#: Options that cannot change on an existing table: the ones Java marks immutable, and sequence.field (changing
#: it would reorder the records of existing keys).
IMMUTABLE_OPTIONS = JAVA_IMMUTABLE | {"primary-key", "partition", BUCKET_KEY.key, MERGE_ENGINE.key, SEQUENCE_FIELD.key}
_COMMIT_RETRIES = 100


def option_str(key: str, value: Any) -> str:
    """Options are stored as strings; render Python values the way Java spells them."""
    if value is None:
        raise OptionError(f"Option '{key}' has no value (None); remove the option instead of setting None")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list, tuple, set)):
        raise OptionError(f"Option '{key}' must be a string or number, got {type(value).__name__} {value!r}")
    return str(value)


def _coerce_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (options or {}).items():
        if not isinstance(k, str):
            raise OptionError(f"Option keys must be strings, got {k!r}")
        out[k] = option_str(k, v)
    return out


# ------------------------------------------------------------------------------------------------
# TableSchema
# ------------------------------------------------------------------------------------------------
@dataclass
class TableSchema:
    """One `schema-N` file. Field order matches Java's JSON key order."""

    version: int = CURRENT_VERSION
    id: int = 0
    fields: list[DataField] = field(default_factory=list)
    highest_field_id: int = -1
    partition_keys: list[str] = field(default_factory=list)
    primary_keys: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0

    # -- JSON ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:  # Java omits a null comment (pypaimon's "null" would read as text)
            d["comment"] = self.comment
        d["timeMillis"] = self.time_millis
        return d

    def to_json(self) -> str:
        return to_jackson_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str | bytes, path_for_errors: str = "<schema>") -> "TableSchema":
        """Parse a schema file, tolerating every variant Java and pypaimon write.

        Old versions get their implied options materialised (version 1: ``bucket=1``; versions 1-2:
        ``file.format=orc``), so a later schema written as version 3 keeps the same meaning.
        """

        def corrupt(msg: str) -> CorruptMetadataError:
            return CorruptMetadataError(
                f"Schema file {path_for_errors} is corrupt: {msg}. It may have been truncated by an "
                "interrupted write or edited by hand; restore it from a backup (or from the same schema of a "
                "branch). If it is the newest schema-N and no snapshot uses it, it can be deleted."
            )

        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise corrupt(f"not UTF-8 ({e})") from None
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise corrupt(f"not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise corrupt("the top level is not a JSON object")

        def int_member(key: str, default: int | None) -> int:
            v = obj.get(key, default)
            if v is None:
                if default is None:
                    raise corrupt(f"the '{key}' member is missing")
                return default
            if isinstance(v, bool) or not isinstance(v, int):
                raise corrupt(f"'{key}' is not an integer: {v!r}")
            return v

        def str_list(key: str) -> list[str]:
            v = obj.get(key)
            if v is None:
                return []
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise corrupt(f"'{key}' is not a list of strings: {v!r}")
            return list(v)

        version = int_member("version", 1)
        default_id = None
        m = re.search(r"schema-(\d+)$", path_for_errors)
        if m:
            default_id = int(m.group(1))
        schema_id = int_member("id", default_id)
        if "fields" not in obj:
            raise corrupt("the 'fields' member is missing")
        try:
            fields = fields_from_json(obj["fields"])
        except UnsupportedTypeError as e:
            raise UnsupportedTypeError(f"Schema file {path_for_errors}: {e}") from None
        except CorruptMetadataError as e:
            raise corrupt(str(e)) from None
        raw_options = obj.get("options")
        if raw_options is None:
            raw_options = {}
        if not isinstance(raw_options, dict):
            raise corrupt(f"'options' is not an object: {raw_options!r}")
        options = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in raw_options.items()}
        if version <= 1:
            options.setdefault(BUCKET.key, "1")
        if version <= 2:
            options.setdefault(FILE_FORMAT.key, "orc")
        comment = obj.get("comment")
        if comment is not None and not isinstance(comment, str):
            comment = str(comment)
        highest = int_member("highestFieldId", max_field_id(fields))
        return cls(
            version=version,
            id=schema_id,
            fields=fields,
            highest_field_id=highest,
            partition_keys=str_list("partitionKeys"),
            primary_keys=str_list("primaryKeys"),
            options=options,
            comment=comment,
            time_millis=int_member("timeMillis", 0),
        )

    # -- accessors -----------------------------------------------------------------------------
    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(
            f"Column '{name}' does not exist in the table (schema {self.id}). "
            f"Existing columns: {', '.join(self.field_names) or '(none)'}"
        )

    def has_field(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    def field_by_id(self, field_id: int) -> DataField:
        for f in self.fields:
            if f.id == field_id:
                return f
        raise SchemaError(
            f"No top-level column with field id {field_id} in schema {self.id} "
            f"(ids: {', '.join(str(f.id) for f in self.fields)})"
        )

    @property
    def logical_row_type(self) -> RowType:
        return RowType(tuple(self.fields), nullable=False)

    @property
    def is_primary_key_table(self) -> bool:
        return bool(self.primary_keys)

    @property
    def trimmed_primary_keys(self) -> list[str]:
        """Primary keys minus partition keys, in PK order (what `_KEY_*` columns and buckets use)."""
        parts = set(self.partition_keys)
        return [k for k in self.primary_keys if k not in parts]

    @property
    def bucket_keys(self) -> list[str]:
        """The ``bucket-key`` option's columns in listed order, else the trimmed primary key (Java's
        `TableSchema.bucketKeys`)."""
        return self.core_options.bucket_keys or self.trimmed_primary_keys

    @property
    def num_buckets(self) -> int:
        """The ``bucket`` option (1 for version-1 schemas, which predate the option, else -1 when unset)."""
        return self.core_options.bucket

    @property
    def core_options(self) -> CoreOptions:
        """Typed view of :meth:`options_with_defaults`. Built per access (cheap: one small dict copy) rather than
        cached, because ``options`` is a plain mutable dict the view must never disagree with."""
        return CoreOptions(self.options_with_defaults())

    def options_with_defaults(self) -> dict[str, str]:
        """Options with the defaults implied by old schema versions filled in."""
        out = dict(self.options)
        if self.version <= 1:
            out.setdefault(BUCKET.key, "1")
        if self.version <= 2:
            out.setdefault(FILE_FORMAT.key, "orc")
        return out

    @property
    def partition_fields(self) -> list[DataField]:
        return [self.field(k) for k in self.partition_keys]

    @property
    def primary_key_fields(self) -> list[DataField]:
        return [self.field(k) for k in self.primary_keys]

    @property
    def trimmed_primary_key_fields(self) -> list[DataField]:
        return [self.field(k) for k in self.trimmed_primary_keys]

    @property
    def bucket_key_fields(self) -> list[DataField]:
        return [self.field(k) for k in self.bucket_keys]

    def arrow_schema(self) -> pa.Schema:
        """The Arrow schema Spark exchanges for this table (raises for types Spark cannot hold)."""
        return to_arrow_schema(self.fields)

    def copy(self, **changes: Any) -> "TableSchema":
        return replace(self, **changes)


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------
def _check_key_columns(schema: TableSchema, keys: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            raise SchemaError(f"{what} column '{k}' is listed twice in {list(keys)}")
        seen.add(k)
        if not schema.has_field(k):
            raise SchemaError(
                f"{what} column '{k}' is not a column of the table. Columns: {', '.join(schema.field_names)}"
            )
        t = schema.field(k).type
        if t.root in _KEY_UNSUPPORTED_ROOTS:
            raise SchemaError(
                f"{what} column '{k}' has type {type_to_sql(t)}, which cannot be a {what.lower()} "
                f"(not allowed: {', '.join(sorted(_KEY_UNSUPPORTED_ROOTS))})"
            )


def validate_table_schema(schema: TableSchema) -> None:
    """Reject schemas Java Paimon would reject or that cannot be read back consistently."""
    if not schema.fields:
        raise SchemaError("A table needs at least one column")
    names: set[str] = set()
    for f in schema.fields:
        if not isinstance(f.name, str) or not f.name:
            raise SchemaError(f"Column names must be non-empty strings, got {f.name!r}")
        if f.name in names:
            raise SchemaError(f"Column '{f.name}' is defined twice")
        names.add(f.name)
        if f.name in _SYSTEM_FIELD_NAMES:
            raise SchemaError(f"Column name '{f.name}' is reserved by Paimon's data file layout; rename it")
        if schema.primary_keys and f.name.startswith(_KEY_FIELD_PREFIX):
            raise SchemaError(
                f"Column '{f.name}': names starting with '{_KEY_FIELD_PREFIX}' are reserved in "
                "primary-key tables; rename it"
            )
    ids = [x.id for x in iter_fields(schema.fields)]
    if len(ids) != len(set(ids)):
        raise SchemaError(f"Field ids are not unique: {sorted(ids)}")
    if ids and max(ids) > schema.highest_field_id:
        raise SchemaError(f"highestFieldId {schema.highest_field_id} is below the largest field id {max(ids)}")

    _check_key_columns(schema, schema.partition_keys, "Partition")
    _check_key_columns(schema, schema.primary_keys, "Primary key")
    if schema.primary_keys:
        for k in schema.primary_keys:
            if schema.field(k).type.nullable:
                raise SchemaError(f"Primary key column '{k}' must be NOT NULL")
        if set(schema.primary_keys) == set(schema.partition_keys):
            raise SchemaError(
                f"Primary key {schema.primary_keys} must not be the same as the partition keys "
                f"{schema.partition_keys}: each partition could then hold only one row. Add a column to the key."
            )
    if len(schema.partition_keys) >= len(schema.fields):
        raise SchemaError("A table cannot be partitioned by all of its columns; it needs a non-partition column")

    bucket = schema.num_buckets
    if bucket == 0 or bucket < -2:
        raise OptionError(
            f"Option 'bucket' = {bucket} is invalid: use N > 0 for fixed buckets, -1 for dynamic "
            "(PK) / unaware (append) bucketing, or -2 for postpone mode (PK tables only)"
        )
    if bucket == -2 and not schema.primary_keys:
        raise OptionError("Option 'bucket' = -2 (postpone mode) needs a primary key table")
    if schema.primary_keys and bucket != -1 and not set(schema.partition_keys).issubset(schema.primary_keys):
        raise SchemaError(
            f"Primary key {schema.primary_keys} does not include all partition keys {schema.partition_keys}; "
            "such cross-partition upserts need dynamic bucket mode (bucket = -1). Add the partition keys to "
            "the primary key or set bucket = -1."
        )

    if schema.core_options.get(ROW_TRACKING_ENABLED):  # Java's SchemaValidation.validateRowTracking
        if schema.primary_keys:
            raise OptionError(
                "Option 'row-tracking.enabled' = 'true' needs an append table: rows of a primary-key table are "
                "replaced by key, not tracked by id. Drop the primary key or the option."
            )
        if bucket != -1:
            raise OptionError(
                f"Option 'row-tracking.enabled' = 'true' needs 'bucket' = -1 (unaware bucketing), got {bucket}."
            )
        if schema.has_field("_ROW_ID"):  # Java master reserves it (SpecialFields.SYSTEM_FIELD_NAMES)
            raise SchemaError(
                "Column name '_ROW_ID' is the row id of a row-tracking table, not a column; rename it. (Data "
                "carrying _ROW_ID updates the rows it names with t.write_arrow(data, mode='update') on a "
                "data-evolution table.)"
            )
    if schema.core_options.get(DATA_EVOLUTION_ENABLED) and not schema.core_options.get(ROW_TRACKING_ENABLED):
        raise OptionError("Option 'data-evolution.enabled' = 'true' needs 'row-tracking.enabled' = 'true' too.")

    # What Java's file index writer refuses fails when the schema is made, not at the first write; so does a
    # shredding schema that names no VARIANT column.
    FileIndexSpec.of(schema.options, schema.fields)
    shredding_types(schema.options, schema.fields)

    has_bucket_key = schema.core_options.is_set(BUCKET_KEY)
    if has_bucket_key:
        bkeys = schema.bucket_keys
        _check_key_columns(schema, bkeys, "Bucket key")
        in_partition = [k for k in bkeys if k in schema.partition_keys]
        if in_partition:
            raise OptionError(
                f"Option 'bucket-key' must not contain partition keys {in_partition}: rows of a "
                "bucket all share the partition values anyway"
            )
        if schema.primary_keys:
            outside = [k for k in bkeys if k not in schema.primary_keys]
            if outside:
                raise OptionError(
                    f"Option 'bucket-key' columns {outside} are not part of the primary key "
                    f"{schema.primary_keys}; the bucket key must be a subset of the primary key"
                )
    if not schema.primary_keys:
        if bucket > 0 and not has_bucket_key:
            raise OptionError(
                f"An append table with 'bucket' = {bucket} needs the option 'bucket-key' (the "
                "columns to hash), or use 'bucket' = -1 for an unbucketed append table"
            )
        if bucket == -1 and has_bucket_key:
            raise OptionError(
                "Option 'bucket-key' cannot be used with 'bucket' = -1 (unaware bucketing); "
                "remove 'bucket-key' or set a bucket number"
            )


def _path_of(path: str | Sequence[str]) -> list[str]:
    names = [path] if isinstance(path, str) else list(path)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise SchemaError(f"A column is named by its name, or a ROW member by (column, member, ...); got {path!r}")
    return names


def _path_text(path: str | Sequence[str]) -> str:
    return "'" + ".".join(_path_of(path)) + "'"


def _update_field(s: TableSchema, names: Sequence[str], update: Callable[[DataField], DataField]) -> list[DataField]:
    """``s``'s fields with the field at ``names`` (a column, then ROW members) replaced by ``update(field)``."""

    def walk(fields: Sequence[DataField], depth: int, where: str) -> list[DataField]:
        name = names[depth]
        if not any(f.name == name for f in fields):
            raise SchemaError(
                f"{where} has no member '{name}' (members: {', '.join(f.name for f in fields) or 'none'})"
                if depth
                else f"Column '{name}' does not exist in the table (schema {s.id}). Existing columns: "
                f"{', '.join(s.field_names)}"
            )
        out = []
        for f in fields:
            if f.name != name:
                out.append(f)
            elif depth == len(names) - 1:
                out.append(update(f))
            elif isinstance(f.type, RowType):
                inner = walk(f.type.fields, depth + 1, f"ROW column '{'.'.join(names[: depth + 1])}'")
                out.append(f.with_type(replace(f.type, fields=tuple(inner))))
            else:
                raise SchemaError(
                    f"'{'.'.join(names[: depth + 1])}' is {type_to_sql(f.type)}, not a ROW: it has no member "
                    f"'{names[depth + 1]}'"
                )
        return out

    return walk(s.fields, 0, "")


def _check_nullability(s: TableSchema, names: Sequence[str], was_nullable: bool, nullable: bool) -> None:
    if was_nullable and not nullable and s.core_options.get(DISABLE_ALTER_COLUMN_NULL_TO_NOT_NULL):
        raise SchemaError(
            f"Cannot make column {_path_text(names)} NOT NULL: the table option "
            f"'{DISABLE_ALTER_COLUMN_NULL_TO_NOT_NULL.key}' is true (the default). Set it to 'false' first if no "
            "stored row holds a NULL there."
        )


def _keep_member_ids(old: DataType, new: DataType) -> DataType:
    """``new`` with the ids of ``old``'s nested ROW members where they correspond (a type change keeps ids)."""
    if isinstance(old, RowType) and isinstance(new, RowType):
        by_name = {f.name: f for f in old.fields}
        members = []
        for f in new.fields:
            o = by_name.get(f.name)
            members.append(f if o is None else replace(f, id=o.id, type=_keep_member_ids(o.type, f.type)))
        return replace(new, fields=tuple(members))
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return replace(new, element=_keep_member_ids(old.element, new.element))
    if isinstance(old, MapType) and isinstance(new, MapType):
        return replace(new, key=_keep_member_ids(old.key, new.key), value=_keep_member_ids(old.value, new.value))
    return new


def _pk_not_null(fields: list[DataField], primary_keys: Sequence[str]) -> list[DataField]:
    pks = set(primary_keys)
    return [f.with_type(f.type.copy(nullable=False)) if f.name in pks and f.type.nullable else f for f in fields]


def _now_millis() -> int:
    return int(time.time() * 1000)


# ------------------------------------------------------------------------------------------------
# SchemaManager
# ------------------------------------------------------------------------------------------------
class SchemaManager:
    """Reads and writes the `schema-N` files of one branch of one table."""

    def __init__(self, fileio: Any, table_path: str, branch: str = "main"):
        if not branch or not branch.strip():
            raise SchemaError("Branch name must not be blank")
        self.fileio = fileio
        self.table_path = table_path.rstrip("/") or "/"
        self.branch = branch
        self._cache: dict[int, TableSchema] = {}

    @property
    def branch_path(self) -> str:
        if self.branch == "main":
            return self.table_path
        return self.fileio.join(self.table_path, "branch", f"branch-{self.branch}")

    @property
    def schema_dir(self) -> str:
        return self.fileio.join(self.branch_path, "schema")

    def schema_path(self, schema_id: int) -> str:
        return self.fileio.join(self.schema_dir, f"{SCHEMA_PREFIX}{schema_id}")

    # -- reading -------------------------------------------------------------------------------
    def list_ids(self) -> list[int]:
        """Ids of all `schema-N` files, ascending (temp files such as `.schema-1.<uuid>.tmp` are skipped)."""
        ids = []
        for name in self.fileio.list_names(self.schema_dir):
            if name.startswith(SCHEMA_PREFIX) and name[len(SCHEMA_PREFIX) :].isdigit():
                ids.append(int(name[len(SCHEMA_PREFIX) :]))
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def schema(self, schema_id: int) -> TableSchema:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.schema_path(schema_id)
        try:
            text = self.fileio.read_text(path)
        except FileNotFoundError:
            existing = self.list_ids()
            raise SchemaError(
                f"Schema {schema_id} does not exist under {self.schema_dir} (existing: "
                f"{', '.join(map(str, existing)) or 'none'}). A data file or snapshot refers to a schema "
                "that was deleted; restore the schema file."
            ) from None
        schema = TableSchema.from_json(text, path)
        self._cache[schema_id] = schema
        return schema

    # -- writing -------------------------------------------------------------------------------
    def commit(self, schema: TableSchema) -> bool:
        """Atomically create `schema-<id>`; False if it already exists (another writer won)."""
        # create_own: a create whose answer was lost is this call's schema (its content, with its commit time,
        # is its own), never a concurrent change to retry on top of.
        ok = create_own(self.fileio, self.schema_path(schema.id), schema.to_json().encode("utf-8"))
        if ok:
            took_effect(f"schema {schema.id} of branch '{self.branch}' created")
            self._cache[schema.id] = schema
        return ok

    def create_table(
        self,
        fields: Sequence[DataField | tuple],
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
    ) -> TableSchema:
        """Write `schema-0`. ``fields`` are DataFields (ids kept) or ``(name, type[, description])`` tuples
        (ids assigned as Paimon does). Primary-key columns are made NOT NULL, as Java does."""
        if self.list_ids():
            raise TableAlreadyExistsError(
                f"A table already exists at {self.table_path} (found {self.schema_dir}); drop it first or "
                "choose another name"
            )
        fields = list(fields)
        field_list: list[DataField]
        if fields and all(isinstance(f, DataField) for f in fields):
            field_list = [f for f in fields if isinstance(f, DataField)]
            highest = max_field_id(field_list)
        elif any(isinstance(f, DataField) for f in fields):
            raise SchemaError("Pass either DataFields or (name, type[, description]) tuples, not a mix")
        else:
            field_list, highest = assign_field_ids(fields)
        schema = TableSchema(
            version=CURRENT_VERSION,
            id=0,
            fields=_pk_not_null(field_list, primary_keys),
            highest_field_id=highest,
            partition_keys=list(partition_keys),
            primary_keys=list(primary_keys),
            options=_coerce_options(options),
            comment=comment,
            time_millis=_now_millis(),
        )
        validate_table_schema(schema)
        if not self.commit(schema):
            raise TableAlreadyExistsError(
                f"A table was created concurrently at {self.table_path}; drop it first or choose another name"
            )
        return schema

    def _evolve(self, change: Callable[[TableSchema], TableSchema | None]) -> TableSchema:
        """Apply ``change`` to the latest schema and commit the result as the next schema, retrying on a
        concurrent commit. ``change`` returns None when there is nothing to do."""
        for _ in range(_COMMIT_RETRIES):
            latest = self.latest()
            if latest is None:
                raise TableNotFoundError(f"No table at {self.table_path}: {self.schema_dir} holds no schema file")
            new = change(latest)
            if new is None:
                return latest
            new = replace(
                new,
                version=CURRENT_VERSION,
                id=latest.id + 1,
                time_millis=_now_millis(),
                highest_field_id=max(new.highest_field_id, latest.highest_field_id),
            )
            validate_table_schema(new)
            if self.commit(new):
                return new
        raise CommitError(
            f"Could not commit a schema change to {self.table_path} after {_COMMIT_RETRIES} "
            "attempts: other writers kept changing the schema. Retry later."
        )

    def add_column(
        self,
        name: str,
        data_type: DataType,
        description: str | None = None,
        after: str | None = None,
        first: bool = False,
    ) -> TableSchema:
        return self._evolve(self.add_column_change(name, data_type, description, after, first))

    def add_column_change(
        self,
        name: str,
        data_type: DataType,
        description: str | None = None,
        after: str | None = None,
        first: bool = False,
    ) -> Callable[[TableSchema], TableSchema | None]:
        """Add a nullable column with id ``highestFieldId + 1`` (nested ROW members follow). It goes last
        (before the first partition column with ``add-column-before-partition``, as Java places it), first
        (``first=True``) or right after column ``after``."""
        if not isinstance(data_type, DataType):
            raise SchemaError(f"Column '{name}': expected a Paimon DataType, got {data_type!r}")
        if not data_type.nullable:
            raise SchemaError(
                f"Cannot add column '{name}' as NOT NULL: existing rows have no value for it. Add it as nullable."
            )
        if first and after is not None:
            raise SchemaError("Use either first=True or after=<column> when adding a column, not both")

        def change(s: TableSchema) -> TableSchema:
            if s.has_field(name):
                raise SchemaError(f"Cannot add column '{name}': the table already has a column with that name")
            (new_field,), highest = assign_field_ids([(name, data_type, description)], start=s.highest_field_id + 1)
            fields = list(s.fields)
            if first:
                pos = 0
            elif after is not None:
                if not s.has_field(after):
                    s.field(after)  # raises, naming the columns
                pos = s.field_names.index(after) + 1
            elif s.core_options.get(ADD_COLUMN_BEFORE_PARTITION) and s.partition_keys:
                pos = min(s.field_names.index(k) for k in s.partition_keys)
            else:
                pos = len(fields)
            fields.insert(pos, new_field)
            return replace(s, fields=fields, highest_field_id=max(highest, s.highest_field_id))

        return change

    def _refuse_key_column(self, s: TableSchema, name: str, action: str) -> None:
        if name in s.partition_keys:
            raise SchemaError(f"Cannot {action} column '{name}': it is a partition key {s.partition_keys}")
        if name in s.primary_keys:
            raise SchemaError(f"Cannot {action} column '{name}': it is part of the primary key {s.primary_keys}")
        bucket_key = s.core_options.text(BUCKET_KEY)
        if bucket_key is not None and name in s.bucket_keys:
            raise SchemaError(f"Cannot {action} column '{name}': it is in the option 'bucket-key' ({bucket_key})")

    def drop_column(self, name: str) -> TableSchema:
        return self._evolve(self.drop_column_change(name))

    def drop_column_change(self, name: str) -> Callable[[TableSchema], TableSchema | None]:
        """Remove a column; its id is never reused (highestFieldId stays)."""

        def change(s: TableSchema) -> TableSchema:
            s.field(name)
            self._refuse_key_column(s, name, "drop")
            if len(s.fields) == 1:
                raise SchemaError(f"Cannot drop column '{name}': it is the table's only column")
            return replace(s, fields=[f for f in s.fields if f.name != name])

        return change

    def rename_column(self, old: str, new: str) -> TableSchema:
        return self._evolve(self.rename_column_change(old, new))

    def rename_column_change(self, old: str, new: str) -> Callable[[TableSchema], TableSchema | None]:
        """Rename a column, keeping its field id (so old data files still map to it)."""
        if not isinstance(new, str) or not new:
            raise SchemaError(f"New column name must be a non-empty string, got {new!r}")

        def change(s: TableSchema) -> TableSchema | None:
            s.field(old)
            if old == new:
                return None
            if s.has_field(new):
                raise SchemaError(f"Cannot rename column '{old}' to '{new}': a column '{new}' already exists")
            self._refuse_key_column(s, old, "rename")
            return replace(s, fields=[f.with_name(new) if f.name == old else f for f in s.fields])

        return change

    def _check_option_change(self, s: TableSchema, key: str, new_value: str | None) -> None:
        old_value = s.options.get(key)
        if old_value == new_value:
            return
        if key in IMMUTABLE_OPTIONS:
            raise OptionError(
                f"Option '{key}' cannot be changed on an existing table (it defines how existing "
                "data is laid out); create a new table instead"
            )
        if key == BUCKET.key:
            old_b = s.num_buckets
            new_b = CoreOptions({} if new_value is None else {key: new_value}).bucket
            if (old_b > 0) != (new_b > 0) or (old_b < 0 and old_b != new_b):
                raise OptionError(
                    f"Option 'bucket' cannot change from {old_b} to {new_b}: switching between "
                    "fixed, dynamic and postpone bucket modes would misplace existing rows"
                )

    def set_options(self, options: Mapping[str, Any]) -> TableSchema:
        return self._evolve(self.set_options_change(options))

    def set_options_change(self, options: Mapping[str, Any]) -> Callable[[TableSchema], TableSchema | None]:
        new_opts = _coerce_options(options)

        def change(s: TableSchema) -> TableSchema | None:
            for k, v in new_opts.items():
                self._check_option_change(s, k, v)
            merged = dict(s.options)
            merged.update(new_opts)
            return None if merged == s.options else replace(s, options=merged)

        return change

    def remove_options(self, keys: Iterable[str]) -> TableSchema:
        return self._evolve(self.remove_options_change(keys))

    def remove_options_change(self, keys: Iterable[str]) -> Callable[[TableSchema], TableSchema | None]:
        keys = list(keys)

        def change(s: TableSchema) -> TableSchema | None:
            present = [k for k in keys if k in s.options]
            if not present:
                return None
            for k in present:
                self._check_option_change(s, k, None)
            return replace(s, options={k: v for k, v in s.options.items() if k not in present})

        return change

    # -- column changes (Java's UpdateColumnType / Nullability / Comment / Position) ---------------------------
    def update_column_type_change(
        self, path: str | Sequence[str], data_type: DataType, keep_nullability: bool = True
    ) -> Callable[[TableSchema], TableSchema | None]:
        """Change a column's (or a ROW member's: ``path`` = ``("col", "member")``) type, keeping its field id, by
        Paimon's rules (:func:`~pyspark_paimon.metadata.types.casts.supports_cast`; explicit casts unless
        ``disable-explicit-type-casting``), limited to the changes reads here convert as Java does
        (:func:`~pyspark_paimon.metadata.types.casts.evolution_problem`). ``keep_nullability``: the column keeps its
        NULL / NOT NULL (else it takes ``data_type``'s, as a nullability change)."""
        if not isinstance(data_type, DataType):
            raise SchemaError(f"Column {_path_text(path)}: expected a Paimon DataType, got {data_type!r}")

        def change(s: TableSchema) -> TableSchema | None:
            names = _path_of(path)
            self._refuse_key_column(s, names[0], "change the type of")
            options = s.core_options
            allow_explicit = not options.get(DISABLE_EXPLICIT_TYPE_CASTING)

            def update(f: DataField) -> DataField:
                old = f.type
                new = data_type.copy(nullable=old.nullable) if keep_nullability else data_type
                _check_nullability(s, names, old.nullable, new.nullable)
                if not supports_cast(old, new, allow_explicit):
                    hint = (
                        " (explicit casts are disabled by 'disable-explicit-type-casting')"
                        if supports_cast(old, new, True)
                        else ""
                    )
                    raise SchemaError(
                        f"Column {_path_text(names)} of type {type_to_sql(old)} cannot change to {type_to_sql(new)}: "
                        f"Paimon allows no such cast{hint}. Add a new column and copy the values instead."
                    )
                problem = evolution_problem(old, new)
                if problem:
                    raise SchemaError(
                        f"Column {_path_text(names)} of type {type_to_sql(old)} cannot change to {type_to_sql(new)} "
                        f"here: {problem}. Add a new column and copy the values instead."
                    )
                return f.with_type(_keep_member_ids(old, new))

            fields = _update_field(s, names, update)
            return None if fields == s.fields else replace(s, fields=fields)

        return change

    def update_column_nullability_change(
        self, path: str | Sequence[str], nullable: bool
    ) -> Callable[[TableSchema], TableSchema | None]:
        """Make a column (or ROW member) nullable, or NOT NULL when the table allows it
        (``alter-column-null-to-not-null.disabled`` = false; the caller checks that no stored row holds a NULL)."""

        def change(s: TableSchema) -> TableSchema | None:
            names = _path_of(path)
            if nullable and len(names) == 1 and names[0] in s.primary_keys:
                keys = s.primary_keys
                raise SchemaError(f"Cannot make column '{names[0]}' nullable: it is in the primary key {keys}")

            def update(f: DataField) -> DataField:
                _check_nullability(s, names, f.type.nullable, nullable)
                return f.with_type(f.type.copy(nullable=nullable))

            fields = _update_field(s, names, update)
            return None if fields == s.fields else replace(s, fields=fields)

        return change

    def update_column_comment_change(
        self, path: str | Sequence[str], comment: str | None
    ) -> Callable[[TableSchema], TableSchema | None]:
        """Set (None: remove) the comment of a column or ROW member."""

        def change(s: TableSchema) -> TableSchema | None:
            fields = _update_field(s, _path_of(path), lambda f: replace(f, description=comment))
            return None if fields == s.fields else replace(s, fields=fields)

        return change

    def update_column_position_change(
        self, name: str, *, first: bool = False, after: str | None = None, before: str | None = None, last: bool = False
    ) -> Callable[[TableSchema], TableSchema | None]:
        """Move a top-level column first, last, or right after / before another (Java's ``applyMove``)."""
        if sum([first, last, after is not None, before is not None]) != 1:
            raise SchemaError(f"Move column '{name}' with exactly one of first, last, after=<column>, before=<column>")

        def change(s: TableSchema) -> TableSchema | None:
            s.field(name)
            names = s.field_names
            moved = [f for f in s.fields if f.name != name]
            ref = after if after is not None else before
            if ref is not None:
                s.field(ref)
                if ref == name:
                    raise SchemaError(f"Cannot move column '{name}' relative to itself")
                pos = [f.name for f in moved].index(ref) + (1 if after is not None else 0)
            else:
                pos = 0 if first else len(moved)
            moved.insert(pos, s.field(name))
            return None if [f.name for f in moved] == names else replace(s, fields=moved)

        return change

    def update_comment(self, comment: str | None) -> TableSchema:
        return self._evolve(self.update_comment_change(comment))

    def update_comment_change(self, comment: str | None) -> Callable[[TableSchema], TableSchema | None]:
        def change(s: TableSchema) -> TableSchema | None:
            return None if s.comment == comment else replace(s, comment=comment)

        return change

    def commit_changes(self, changes: Sequence[Callable[[TableSchema], TableSchema | None]]) -> TableSchema:
        """Apply ``changes`` (the ``*_change`` functions of this class) one after the other to the latest
        schema in memory and commit the result as ONE new schema (retrying all of them on a concurrent
        commit); nothing is written when no change changes anything."""
        changes = list(changes)

        def change(s: TableSchema) -> TableSchema | None:
            current, changed = s, False
            for one in changes:
                new = one(current)
                if new is not None:
                    current, changed = new, True
            return current if changed else None

        return self._evolve(change)
