"""Oracle CLI: drive the independent Paimon implementations (pypaimon, pypaimon-rust) for interop tests.

This script runs with the *oracle* venv's python, never in the main venv: pypaimon pins pyarrow < 20 while
pyspark-paimon uses the newest pyarrow, so the two cannot share an interpreter. Tests talk to it through
`tests/oracle/__init__.py`, exchanging tables as Arrow IPC files (the IPC format is stable across pyarrow
versions) and commands/results as JSON.

Usage::

    python oracle.py '{"cmd": "read", ...}'        # command as the first argument
    echo '{"cmd": "read", ...}' | python oracle.py  # or on stdin

Exactly one JSON object is printed on stdout: the command's result on success (exit 0), or
``{"error": ..., "traceback": ...}`` on failure (exit 1). Anything the libraries print goes to stderr.

Commands (all take ``warehouse`` = local warehouse directory of a filesystem catalog, or a dict of catalog options
naming a JDBC or REST catalog, and ``identifier`` = ``"db.t"`` or ``"db.t$branch_b"``, except ``versions``):

``versions``
    ``{"pypaimon": ..., "pypaimon_rust": ..., "pyarrow": ..., "python": ...}``.
``catalog``
    ``ops``: catalog operations through pypaimon's catalog API (databases, tables, renames, drops, REST tags and
    branches); see ``cmd_catalog``.
``batch``
    ``commands``: a list of the other commands, run in order in this process (saves the ~1 s pypaimon
    import per command); stops at the first failure. Result: ``{"results": [...]}``.
``write`` (``impl``: ``pypaimon`` | ``rust``)
    ``create`` (optional, used only if the table is missing; always created through pypaimon because
    pypaimon-rust has no create-table API outside SQL): ``{"columns": [[name, type, nullable?], ...],
    "partition_keys": [...], "primary_keys": [...], "options": {...}, "comment": ...}``. ``type`` is a
    Paimon type string (``"BIGINT"``, ``"DECIMAL(10, 2)"``, ``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``,
    ``"ARRAY<INT>"``, ``"MAP<STRING, BIGINT>"``, ``"ROW<x INT, y STRING>"``) or Paimon's schema JSON for a
    type. If ``options`` has ``rowkind.field`` and that column is not declared, a nullable STRING column of
    that name is appended.
    ``commits``: list of commits, each ``{"rows": [...]} | {"ipc": path}`` plus optional ``"kinds"``
    (``"+I" | "-U" | "+U" | "-D"`` per row) and ``"overwrite"`` (``true`` or a static partition dict).
    Rows are JSON objects keyed by column name, or lists in column order; missing values are null.
    JSON encodings: DECIMAL, DATE, TIME, TIMESTAMP as strings (``"12.30"``, ``"2024-02-29"``,
    ``"2024-02-29 12:00:00.123456"``; a TIMESTAMP_LTZ string without offset is UTC), BINARY/VARBINARY as
    hex strings, MAP as a JSON object or a list of ``[key, value]`` pairs, ROW as an object, VARIANT as
    ``{"variant": <JSON value>}`` (encoded by pypaimon's ``GenericVariant.from_python``; ``null`` inside is a
    VARIANT null, a bare ``null`` a SQL NULL).
    Result: ``{"created": bool, "snapshot_ids": [latest snapshot id after each commit]}``.
``read`` (``impl``: ``pypaimon`` | ``rust``)
    ``options`` (dynamic read options, e.g. ``scan.snapshot-id``, ``scan.tag-name``,
    ``scan.timestamp-millis``), ``output`` (Arrow IPC file to write), ``sort`` (default true: sort by every
    non-nested column in schema order so both oracles produce the same row order), ``projection`` (pypaimon only:
    the columns to read, which may name a row-tracking table's ``_ROW_ID`` and ``_SEQUENCE_NUMBER``).
    Result: ``{"num_rows": n, "columns": [...], "arrow_schema": str, "schema_from": impl}``.
``evolve``
    ``changes``: list of ``{"op": "add_column", "name", "type", "comment"?, "first"? | "after"?}``,
    ``{"op": "rename_column", "name", "new_name"}``, ``{"op": "drop_column", "name"}``,
    ``{"op": "update_column_type", "name", "type"}``, ``{"op": "set_option", "key", "value"}``,
    ``{"op": "remove_option", "key"}``. Applied by pypaimon in one ``alter_table`` call.
``row_update``
    pypaimon's row changes on a row-tracking (data-evolution) table: ``op`` = ``update_by_row_id`` (``columns``,
    ``rows`` with ``_ROW_ID`` and those columns), ``upsert_by_key`` (``keys``, ``rows``) or ``delete_by_row_id``
    (``row_ids``), committed. Result: ``{"snapshot_id": ...}``.
``tag``
    ``name``, ``snapshot_id`` (optional, default latest). Created by pypaimon.
``branch``
    ``name``, ``from_tag`` (optional; without it the branch is empty: schema only). Created by pypaimon.
``inspect`` (``impl``: ``pypaimon`` | ``rust``)
    ``{"snapshots": [{"id", "commit_kind", "total_record_count"}], "tags": {name: snapshot_id},
    "branches": [...] (pypaimon only, else null), "schema": {"fields": [[id, name, type]], ...}}``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import json
import os
import sys
import traceback
from typing import Any, Callable, Iterator

import pyarrow as pa

JsonDict = dict[str, Any]

# pypaimon can route reads/writes/commits through pypaimon_rust; force its pure-Python paths so the two
# oracles stay independent implementations (these are also pypaimon's defaults).
PYPAIMON_PURE_PYTHON = {
    "read.native.enabled": "false",
    "scan.native-plan.enabled": "false",
    "write.native.enabled": "false",
    "commit.native.enabled": "false",
}
ROW_KINDS = ("+I", "-U", "+U", "-D")


class OracleUsageError(ValueError):
    """A malformed command; the message names the offending key and the fix."""


# --------------------------------------------------------------------------------------------- catalogs


def _pypaimon_catalog(warehouse: str | JsonDict) -> Any:
    """A filesystem catalog of a warehouse directory, or, given a dict, the catalog those catalog options name
    (``{"metastore": "jdbc", "uri": ..., "warehouse": ...}``, ``{"metastore": "rest", ...}``)."""
    from pypaimon import CatalogFactory

    if isinstance(warehouse, dict):
        return CatalogFactory.create({str(k): str(v) for k, v in warehouse.items()})
    return CatalogFactory.create({"warehouse": warehouse})


def _rust_catalog(warehouse: str) -> Any:
    from pypaimon_rust.datafusion import PaimonCatalog

    return PaimonCatalog({"warehouse": warehouse})


def _pypaimon_table(warehouse: str | JsonDict, identifier: str, options: dict[str, str] | None = None) -> Any:
    """Load through pypaimon with its native (rust) acceleration off; `options` may time-travel. A system table
    (``db.t$buckets``) has no options to copy: it is returned as loaded."""
    table = _pypaimon_catalog(warehouse).get_table(identifier)
    if not hasattr(table, "copy"):
        return table
    return table.copy({**(options or {}), **PYPAIMON_PURE_PYTHON})


# ----------------------------------------------------------------------------------- paimon type strings


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not nested in <>, () or backquotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "<(":
            depth += 1
        elif not quoted and ch in ">)":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def type_json(spec: str | JsonDict) -> str | JsonDict:
    """Turn a Paimon SQL type string into Paimon's schema-JSON type (what pypaimon's parser accepts).

    pypaimon's parser only understands atomic type strings; nested types must be JSON objects, which are
    tedious to write in tests, hence this small recursive-descent translation.
    """
    if isinstance(spec, dict):
        return spec
    text = spec.strip()
    upper = text.upper()
    for kind in ("ARRAY", "MULTISET", "MAP", "ROW"):
        if upper.startswith(kind + "<") or upper.startswith(kind + " <"):
            open_at = text.index("<")
            depth, close_at = 0, -1
            for i in range(open_at, len(text)):
                if text[i] == "<":
                    depth += 1
                elif text[i] == ">":
                    depth -= 1
                    if depth == 0:
                        close_at = i
                        break
            if close_at < 0:
                raise OracleUsageError(f"unbalanced '<' in type {spec!r}")
            inner, suffix = text[open_at + 1 : close_at], text[close_at + 1 :].strip().upper()
            if suffix not in ("", "NULL", "NOT NULL"):
                raise OracleUsageError(f"unexpected {suffix!r} after type {spec!r}")
            type_name = kind + (" NOT NULL" if suffix == "NOT NULL" else "")
            args = _split_top_level(inner)
            if kind in ("ARRAY", "MULTISET"):
                return {"type": type_name, "element": type_json(inner)}
            if kind == "MAP":
                if len(args) != 2:
                    raise OracleUsageError(f"MAP needs <key, value> in type {spec!r}")
                return {"type": type_name, "key": type_json(args[0]), "value": type_json(args[1])}
            fields = []
            for arg in args:
                if arg.startswith("`"):
                    end = arg.index("`", 1)
                    name, rest = arg[1:end], arg[end + 1 :]
                else:
                    name, _, rest = arg.partition(" ")
                fields.append({"name": name, "type": type_json(rest)})
            return {"type": type_name, "fields": fields}
    return text


def _paimon_fields(columns: list[list[Any]]) -> list[Any]:
    """DataFields with ids 0..n-1 for top-level columns, nested ROW fields numbered after them."""
    from pypaimon.schema.data_types import AtomicInteger, DataField, DataTypeParser

    counter = AtomicInteger(len(columns) - 1)
    fields = []
    for index, column in enumerate(columns):
        if not 2 <= len(column) <= 3:
            raise OracleUsageError(f"create.columns[{index}] must be [name, type, nullable?], got {column!r}")
        name, type_spec = column[0], column[1]
        nullable = column[2] if len(column) == 3 else True
        data_type = DataTypeParser.parse_data_type(type_json(type_spec), counter)
        if not nullable:
            data_type.nullable = False
        fields.append(DataField(index, name, data_type))
    return fields


def _arrow_schema(paimon_fields: list[Any]) -> pa.Schema:
    from pypaimon.schema.data_types import PyarrowFieldParser

    return PyarrowFieldParser.from_paimon_schema(paimon_fields)


# ----------------------------------------------------------------------------------------- JSON -> Arrow


def _coerce(value: Any, arrow_type: pa.DataType) -> Any:
    """Convert one JSON value to the Python object pyarrow expects for `arrow_type` (test-sized data)."""
    if value is None:
        return None
    if pa.types.is_decimal(arrow_type):
        return decimal.Decimal(str(value))
    if pa.types.is_date(arrow_type):
        return dt.date.fromisoformat(value) if isinstance(value, str) else value
    if pa.types.is_time(arrow_type):
        return dt.time.fromisoformat(value) if isinstance(value, str) else value
    if pa.types.is_timestamp(arrow_type):
        if not isinstance(value, str):
            return value
        if arrow_type.unit == "ns":
            import pandas as pd  # datetime has no nanoseconds; pandas ships with pypaimon

            stamp = pd.Timestamp(value)
            if arrow_type.tz is not None and stamp.tzinfo is None:
                stamp = stamp.tz_localize("UTC")
            return stamp
        parsed = dt.datetime.fromisoformat(value)
        if arrow_type.tz is not None and parsed.tzinfo is None:
            return parsed.replace(tzinfo=dt.timezone.utc)
        if arrow_type.tz is None and parsed.tzinfo is not None:
            return parsed.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return parsed
    if (
        pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
        or pa.types.is_fixed_size_binary(arrow_type)
    ):
        return bytes.fromhex(value) if isinstance(value, str) else base64.b64decode(value["base64"])
    if pa.types.is_map(arrow_type):
        pairs = value.items() if isinstance(value, dict) else value
        return [(_coerce(k, arrow_type.key_type), _coerce(v, arrow_type.item_type)) for k, v in pairs]
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return [_coerce(v, arrow_type.value_type) for v in value]
    if pa.types.is_struct(arrow_type) and isinstance(value, dict) and set(value) == {"variant"}:
        from pypaimon.data.generic_variant import GenericVariant

        encoded = GenericVariant.from_python(value["variant"])
        return {"value": encoded.value(), "metadata": encoded.metadata()}
    if pa.types.is_struct(arrow_type):
        return {
            arrow_type.field(i).name: _coerce(value.get(arrow_type.field(i).name), arrow_type.field(i).type)
            for i in range(arrow_type.num_fields)
        }
    return value


def _rows_to_table(rows: list[Any], schema: pa.Schema) -> pa.Table:
    names = schema.names
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for position, row in enumerate(rows):
        if isinstance(row, dict):
            unknown = set(row) - set(names)
            if unknown:
                raise OracleUsageError(f"rows[{position}] has unknown columns {sorted(unknown)}; table has {names}")
            values = [row.get(name) for name in names]
        elif isinstance(row, list):
            if len(row) > len(names):
                raise OracleUsageError(f"rows[{position}] has {len(row)} values; table has {len(names)} columns")
            values = row + [None] * (len(names) - len(row))
        else:
            raise OracleUsageError(f"rows[{position}] must be an object or a list, got {type(row).__name__}")
        for name, value in zip(names, values):
            columns[name].append(value)
    arrays = [pa.array([_coerce(v, field.type) for v in columns[field.name]], type=field.type) for field in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _ipc_to_table(path: str, schema: pa.Schema) -> pa.Table:
    """Read an IPC file and align it to the table's Arrow schema (order, types; absent columns null)."""
    with pa.memory_map(path) as source:
        data = pa.ipc.open_file(source).read_all()
    unknown = set(data.column_names) - set(schema.names)
    if unknown:
        raise OracleUsageError(f"IPC file {path} has unknown columns {sorted(unknown)}; table has {schema.names}")
    arrays = [
        data.column(f.name).cast(f.type) if f.name in data.column_names else pa.nulls(data.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _commit_table(commit: JsonDict, schema: pa.Schema, rowkind_field: str | None, index: int) -> pa.Table:
    if ("rows" in commit) == ("ipc" in commit):
        raise OracleUsageError(f"commits[{index}] needs exactly one of 'rows' or 'ipc'")
    data = _rows_to_table(commit["rows"], schema) if "rows" in commit else _ipc_to_table(commit["ipc"], schema)
    kinds = commit.get("kinds")
    if kinds is not None:
        if rowkind_field is None:
            raise OracleUsageError(
                f"commits[{index}] has 'kinds' but the table has no 'rowkind.field' option: pypaimon writes "
                "row kinds only from that column; create the table with options {'rowkind.field': '_row_kind'}"
            )
        if len(kinds) != data.num_rows or any(k not in ROW_KINDS for k in kinds):
            raise OracleUsageError(f"commits[{index}].kinds must hold one of {ROW_KINDS} per row ({data.num_rows})")
        data = data.set_column(
            schema.get_field_index(rowkind_field), schema.field(rowkind_field), pa.array(kinds, pa.string())
        )
    elif rowkind_field is not None and data.column(rowkind_field).null_count == data.num_rows:
        data = data.set_column(
            schema.get_field_index(rowkind_field),
            schema.field(rowkind_field),
            pa.array(["+I"] * data.num_rows, pa.string()),
        )
    return data


# ------------------------------------------------------------------------------------------------ write


def _ensure_table(catalog: Any, identifier: str, create: JsonDict | None) -> bool:
    """Create the table through pypaimon if it is missing; returns whether it was created."""
    from pypaimon import Schema
    from pypaimon.catalog.catalog_exception import DatabaseNotExistException, TableNotExistException

    try:
        catalog.get_table(identifier)
        return False
    except (TableNotExistException, DatabaseNotExistException):
        if create is None:
            raise OracleUsageError(f"table {identifier} does not exist and the command has no 'create' spec") from None
    columns = [list(c) for c in create["columns"]]
    options = {k: str(v) for k, v in (create.get("options") or {}).items()}
    rowkind_field = options.get("rowkind.field")
    if rowkind_field and rowkind_field not in [c[0] for c in columns]:
        columns.append([rowkind_field, "STRING", True])
    catalog.create_database(identifier.split(".", 1)[0], True)
    schema = Schema(
        _paimon_fields(columns),
        list(create.get("partition_keys") or []),
        list(create.get("primary_keys") or []),
        options,
        create.get("comment"),
    )
    catalog.create_table(identifier, schema, False)
    return True


def _overwrite_spec(commit: JsonDict) -> dict[str, Any] | None:
    overwrite = commit.get("overwrite")
    if overwrite is None or overwrite is False:
        return None
    return {} if overwrite is True else dict(overwrite)


def _write_pypaimon(
    warehouse: str | JsonDict, identifier: str, data: pa.Table, overwrite: dict[str, Any] | None
) -> int:
    table = _pypaimon_table(warehouse, identifier)
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder.overwrite(overwrite)
    writer, committer = builder.new_write(), builder.new_commit()
    try:
        writer.write_arrow(data)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()
    return table.snapshot_manager().get_latest_snapshot().id


def _write_rust(warehouse: str, identifier: str, data: pa.Table, overwrite: dict[str, Any] | None) -> int:
    table = _rust_catalog(warehouse).get_table(identifier)
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder.with_overwrite(overwrite)
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        for batch in data.combine_chunks().to_batches():
            writer.write_arrow(batch)
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()
    return _rust_catalog(warehouse).get_table(identifier).latest_snapshot().id()


def cmd_write(cmd: JsonDict) -> JsonDict:
    impl = cmd.get("impl", "pypaimon")
    writers: dict[str, Callable[[str, str, pa.Table, dict[str, Any] | None], int]] = {
        "pypaimon": _write_pypaimon,
        "rust": _write_rust,
    }
    if impl not in writers:
        raise OracleUsageError(f"write.impl must be one of {sorted(writers)}, got {impl!r}")
    warehouse, identifier = cmd["warehouse"], cmd["identifier"]
    created = _ensure_table(_pypaimon_catalog(warehouse), identifier, cmd.get("create"))
    schema_table = _pypaimon_table(warehouse, identifier)
    arrow_schema = _arrow_schema(schema_table.table_schema.fields)
    rowkind_field = schema_table.table_schema.options.get("rowkind.field")
    snapshot_ids = []
    for index, commit in enumerate(cmd.get("commits") or []):
        if isinstance(commit, list):
            commit = {"rows": commit}
        data = _commit_table(commit, arrow_schema, rowkind_field, index)
        snapshot_ids.append(writers[impl](warehouse, identifier, data, _overwrite_spec(commit)))
    return {"created": created, "snapshot_ids": snapshot_ids}


# ------------------------------------------------------------------------------------------------- read


def _strip_metadata(arrow_type: pa.DataType) -> pa.DataType:
    """Drop field metadata (pypaimon-rust attaches PARQUET:field_id) so results compare by value."""

    def field(f: pa.Field) -> pa.Field:
        return pa.field(f.name, _strip_metadata(f.type), f.nullable)

    if pa.types.is_map(arrow_type):
        return pa.map_(field(arrow_type.key_field), field(arrow_type.item_field), arrow_type.keys_sorted)
    if pa.types.is_list(arrow_type):
        return pa.list_(field(arrow_type.value_field))
    if pa.types.is_large_list(arrow_type):
        return pa.large_list(field(arrow_type.value_field))
    if pa.types.is_fixed_size_list(arrow_type):
        return pa.list_(field(arrow_type.value_field), arrow_type.list_size)
    if pa.types.is_struct(arrow_type):
        return pa.struct([field(arrow_type.field(i)) for i in range(arrow_type.num_fields)])
    return arrow_type


def _normalize(table: pa.Table, sort: bool) -> pa.Table:
    schema = pa.schema([pa.field(f.name, _strip_metadata(f.type), f.nullable) for f in table.schema])
    table = table.cast(schema)
    if sort and table.num_rows > 1:
        keys = [(f.name, "ascending") for f in schema if not pa.types.is_nested(f.type)]
        if keys:
            table = table.sort_by(keys)
    return table


def _read_pypaimon(
    warehouse: str | JsonDict, identifier: str, options: dict[str, str], projection: list[str] | None = None
) -> tuple[pa.Table, str]:
    table = _pypaimon_table(warehouse, identifier, options)
    builder = table.new_read_builder()
    if projection is not None:  # may name the hidden _ROW_ID / _SEQUENCE_NUMBER of row-tracking tables
        builder = builder.with_projection(projection)
    return builder.new_read().to_arrow(builder.new_scan().plan().splits()), "pypaimon"


def _read_rust(warehouse: str, identifier: str, options: dict[str, str]) -> tuple[pa.Table, str]:
    table = _rust_catalog(warehouse).get_table(identifier)
    builder = table.new_read_builder(options) if options else table.new_read_builder()
    reader = builder.new_read().read_arrow(builder.new_scan().plan().splits())
    batches = list(reader)
    if batches:
        return pa.Table.from_batches(batches), "rust"
    # The rust reader yields no batch (hence no schema) for an empty result; borrow pypaimon's Arrow view
    # of the same (time-travelled) schema so callers still get typed, empty columns.
    schema = _arrow_schema(_pypaimon_table(warehouse, identifier, options).table_schema.fields)
    return schema.empty_table(), "pypaimon"


def cmd_read(cmd: JsonDict) -> JsonDict:
    impl = cmd.get("impl", "pypaimon")
    readers = {"pypaimon": _read_pypaimon, "rust": _read_rust}
    if impl not in readers:
        raise OracleUsageError(f"read.impl must be one of {sorted(readers)}, got {impl!r}")
    if "output" not in cmd:
        raise OracleUsageError("read needs 'output': the Arrow IPC file to write the result to")
    options = {k: str(v) for k, v in (cmd.get("options") or {}).items()}
    projection = cmd.get("projection")
    if projection is not None:
        if impl != "pypaimon":
            raise OracleUsageError("read.projection is supported for impl 'pypaimon' only")
        data, schema_from = _read_pypaimon(cmd["warehouse"], cmd["identifier"], options, list(projection))
    else:
        data, schema_from = readers[impl](cmd["warehouse"], cmd["identifier"], options)
    data = _normalize(data, bool(cmd.get("sort", True)))
    with pa.OSFile(cmd["output"], "wb") as sink, pa.ipc.new_file(sink, data.schema) as ipc:
        ipc.write_table(data)
    return {
        "num_rows": data.num_rows,
        "columns": data.column_names,
        "arrow_schema": str(data.schema),
        "schema_from": schema_from,
    }


# ------------------------------------------------------------------------------- evolve / tag / branch


def _schema_change(change: JsonDict, index: int) -> Any:
    from pypaimon.schema.data_types import AtomicInteger, DataTypeParser
    from pypaimon.schema.schema_change import Move, SchemaChange

    def data_type(spec: str | JsonDict) -> Any:
        # Nested fields of an added ROW need fresh ids; pypaimon's schema manager re-numbers them.
        return DataTypeParser.parse_data_type(type_json(spec), AtomicInteger(0))

    op = change.get("op")
    if op == "add_column":
        move = None
        if change.get("first"):
            move = Move.first(change["name"])
        elif change.get("after"):
            move = Move.after(change["name"], change["after"])
        return SchemaChange.add_column(change["name"], data_type(change["type"]), change.get("comment"), move)
    if op == "rename_column":
        return SchemaChange.rename_column(change["name"], change["new_name"])
    if op == "drop_column":
        return SchemaChange.drop_column(change["name"])
    if op == "update_column_type":
        return SchemaChange.update_column_type(change["name"], data_type(change["type"]))
    if op == "set_option":
        return SchemaChange.set_option(change["key"], str(change["value"]))
    if op == "remove_option":
        return SchemaChange.remove_option(change["key"])
    raise OracleUsageError(
        f"changes[{index}].op {op!r} is not one of add_column, rename_column, drop_column, "
        "update_column_type, set_option, remove_option"
    )


def cmd_evolve(cmd: JsonDict) -> JsonDict:
    changes = [_schema_change(c, i) for i, c in enumerate(cmd.get("changes") or [])]
    _pypaimon_catalog(cmd["warehouse"]).alter_table(cmd["identifier"], changes)
    table = _pypaimon_table(cmd["warehouse"], cmd["identifier"])
    return {"schema_id": table.table_schema.id}


def cmd_tag(cmd: JsonDict) -> JsonDict:
    _pypaimon_catalog(cmd["warehouse"]).create_tag(cmd["identifier"], cmd["name"], cmd.get("snapshot_id"))
    tag = _pypaimon_table(cmd["warehouse"], cmd["identifier"]).tag_manager().get(cmd["name"])
    return {"name": cmd["name"], "snapshot_id": tag.id}


def cmd_branch(cmd: JsonDict) -> JsonDict:
    catalog = _pypaimon_catalog(cmd["warehouse"])
    catalog.create_branch(cmd["identifier"], cmd["name"], cmd.get("from_tag"))
    return {"branches": sorted(catalog.list_branches(cmd["identifier"]))}


# ------------------------------------------------------------------------------------- row changes by id


def cmd_row_update(cmd: JsonDict) -> JsonDict:
    """pypaimon's ``TableUpdate`` on a row-tracking / data-evolution table, committed: ``op`` =
    ``update_by_row_id`` (``columns``; ``rows`` holding ``_ROW_ID`` and those columns), ``upsert_by_key``
    (``keys``; ``rows`` of every column) or ``delete_by_row_id`` (``row_ids``; deletion vectors)."""
    warehouse, identifier, op = cmd["warehouse"], cmd["identifier"], cmd.get("op")
    table = _pypaimon_table(warehouse, identifier)
    builder = table.new_batch_write_builder()
    update = builder.new_update()
    fields = table.table_schema.fields
    if op == "update_by_row_id":
        columns = list(cmd["columns"])
        chosen = [f for f in fields if f.name in columns]
        schema = pa.schema([pa.field("_ROW_ID", pa.int64()), *_arrow_schema(chosen)])
        messages = update.with_update_type(columns).update_by_arrow_with_row_id(_rows_to_table(cmd["rows"], schema))
    elif op == "upsert_by_key":
        data = _rows_to_table(cmd["rows"], _arrow_schema(fields))
        messages = update.upsert_by_arrow_with_key(data, list(cmd["keys"]))
    elif op == "delete_by_row_id":
        messages = update.delete_by_row_id([int(r) for r in cmd["row_ids"]])
    else:
        raise OracleUsageError(f"row_update.op must be update_by_row_id, upsert_by_key or delete_by_row_id, got {op!r}")
    committer = builder.new_commit()
    try:
        committer.commit(messages)
    finally:
        committer.close()
    return {"snapshot_id": _pypaimon_table(warehouse, identifier).snapshot_manager().get_latest_snapshot().id}


# ---------------------------------------------------------------------------------------------- inspect


def cmd_inspect(cmd: JsonDict) -> JsonDict:
    impl, warehouse, identifier = cmd.get("impl", "pypaimon"), cmd["warehouse"], cmd["identifier"]
    if impl == "pypaimon":
        table = _pypaimon_catalog(warehouse).get_table(identifier)  # no copy(): report the stored options
        snapshots = [
            {"id": s.id, "commit_kind": s.commit_kind, "total_record_count": s.total_record_count}
            for s in table.snapshot_manager().list_snapshots()
        ]
        tag_manager = table.tag_manager()
        tags = {name: tag_manager.get(name).id for name in table.list_tags()}
        schema = table.table_schema
        return {
            "snapshots": sorted(snapshots, key=lambda s: s["id"]),
            "tags": tags,
            "branches": sorted(_pypaimon_catalog(warehouse).list_branches(identifier.split("$")[0])),
            "schema": {
                "id": schema.id,
                "fields": [[f.id, f.name, str(f.type)] for f in schema.fields],
                "partition_keys": schema.partition_keys,
                "primary_keys": schema.primary_keys,
                "options": schema.options,
            },
        }
    if impl == "rust":
        table = _rust_catalog(warehouse).get_table(identifier)
        snapshots = [
            {"id": s.id(), "commit_kind": s.commit_kind(), "total_record_count": s.total_record_count()}
            for s in table.list_snapshots()
        ]
        schema = table.schema()
        return {
            "snapshots": sorted(snapshots, key=lambda s: s["id"]),
            "tags": {t.name(): t.snapshot_id() for t in table.list_tags()},
            "branches": None,
            "schema": {
                "id": None,
                "fields": [[f.id(), f.name(), f.field_type()] for f in schema.fields()],
                "partition_keys": schema.partition_keys(),
                "primary_keys": schema.primary_keys(),
                "options": schema.options(),
            },
        }
    raise OracleUsageError(f"inspect.impl must be 'pypaimon' or 'rust', got {impl!r}")


def _catalog_op(catalog: Any, op: JsonDict) -> Any:
    """One catalog operation of ``cmd_catalog`` through pypaimon's catalog API."""
    name = op["op"]
    if name == "create_database":
        return catalog.create_database(op["name"], False, op.get("properties") or {})
    if name == "get_database":
        return dict(catalog.get_database(op["name"]).options)
    if name == "list_databases":
        return sorted(catalog.list_databases())
    if name == "drop_database":
        return catalog.drop_database(op["name"], False, bool(op.get("cascade")))
    if name == "list_tables":
        return sorted(catalog.list_tables(op["database"]))
    if name == "rename_table":
        return catalog.rename_table(op["source"], op["target"])
    if name == "drop_table":
        return catalog.drop_table(op["identifier"], False)
    if name == "table":
        table = catalog.get_table(op["identifier"])
        schema = table.table_schema
        return {"options": dict(schema.options), "primary_keys": schema.primary_keys, "path": str(table.table_path)}
    if name == "create_tag":
        return catalog.create_tag(op["identifier"], op["name"], op.get("snapshot_id"))
    if name == "list_tags":
        return sorted(catalog.list_tags_paged(op["identifier"]).elements)
    if name == "get_tag":
        return catalog.get_tag(op["identifier"], op["name"]).snapshot.id
    if name == "delete_tag":
        return catalog.delete_tag(op["identifier"], op["name"])
    if name == "create_branch":
        return catalog.create_branch(op["identifier"], op["name"], op.get("from_tag"))
    if name == "list_branches":
        return sorted(catalog.list_branches(op["identifier"]))
    if name == "drop_branch":
        return catalog.drop_branch(op["identifier"], op["name"])
    raise OracleUsageError(f"catalog op {name!r} is unknown")


def cmd_catalog(cmd: JsonDict) -> JsonDict:
    """``ops``: catalog operations run in order through one pypaimon catalog (``warehouse`` as for the other
    commands: a directory, or a dict of catalog options). An op with ``"expect_error": true`` reports its error as
    ``{"error": <exception class name>}`` instead of failing. Result: ``{"results": [...]}``, one per op."""
    catalog = _pypaimon_catalog(cmd["warehouse"])
    results = []
    for op in cmd.get("ops") or []:
        if op.get("expect_error"):
            try:
                _catalog_op(catalog, op)
                results.append({"error": None})
            except Exception as error:  # noqa: BLE001 - the caller asked for the error
                results.append({"error": type(error).__name__})
            continue
        results.append(_catalog_op(catalog, op))
    return {"results": results}


def cmd_versions(cmd: JsonDict) -> JsonDict:
    from importlib.metadata import version

    return {
        "pypaimon": version("pypaimon"),
        "pypaimon_rust": version("pypaimon-rust"),
        "pyarrow": pa.__version__,
        "python": sys.version.split()[0],
    }


def cmd_batch(cmd: JsonDict) -> JsonDict:
    """Run several commands in this one process: importing pypaimon costs ~1 s per interpreter."""
    results = []
    for index, sub in enumerate(cmd.get("commands") or []):
        name = sub.get("cmd")
        if name not in COMMANDS or name == "batch":
            raise OracleUsageError(f"commands[{index}].cmd must be one of {sorted(set(COMMANDS) - {'batch'})}")
        try:
            results.append(COMMANDS[name](sub))
        except Exception as error:
            raise RuntimeError(f"commands[{index}] ({name}) failed: {type(error).__name__}: {error}") from error
    return {"results": results}


COMMANDS: dict[str, Callable[[JsonDict], JsonDict]] = {
    "catalog": cmd_catalog,
    "write": cmd_write,
    "read": cmd_read,
    "evolve": cmd_evolve,
    "row_update": cmd_row_update,
    "tag": cmd_tag,
    "branch": cmd_branch,
    "inspect": cmd_inspect,
    "versions": cmd_versions,
    "batch": cmd_batch,
}


# ------------------------------------------------------------------------------------------------- main


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.date, dt.datetime, decimal.Decimal)):
        return str(value)
    if hasattr(value, "value"):  # enums such as pypaimon's commit kind
        return value.value
    return str(value)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr while the libraries run: native code may print, and stdout is our JSON channel."""
    sys.stdout.flush()
    real_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(real_stdout, 1)
        os.close(real_stdout)


def main(argv: list[str]) -> int:
    raw = argv[1] if len(argv) > 1 else sys.stdin.read()
    with _stdout_to_stderr():
        try:
            cmd = json.loads(raw)
            name = cmd.get("cmd")
            if name not in COMMANDS:
                raise OracleUsageError(f"'cmd' must be one of {sorted(COMMANDS)}, got {name!r}")
            result, code = COMMANDS[name](cmd), 0
        except Exception as error:  # noqa: BLE001 - report every failure as JSON so the caller can show it
            traceback.print_exc()
            result = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
            code = 1
    print(json.dumps(result, default=_json_default))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
