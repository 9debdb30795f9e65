"""System tables (``t$snapshots``, ``t$files``...): table metadata as rows (Java's `SystemTableLoader`).

Each system table has Paimon's column list, in Paimon's order and with Paimon's types (Java
``table/system/*Table.java``); the values are rendered the way Java renders them, so a query written against
Paimon's Spark connector reads the same here:

* times are ``TIMESTAMP(3)`` (Spark ``TIMESTAMP_NTZ``) holding the *local* wall clock of the instant, as Java's
  ``LocalDateTime.ofInstant(.., ZoneId.systemDefault())`` does; file creation times are stored as a local
  wall clock already and are shown as stored;
* ``$files.partition`` and ``$manifests.*_partition_stats`` are ``CAST(ROW AS STRING)`` (``{v1, v2}``,
  ``{}`` when unpartitioned); ``$partitions.partition`` is ``k=v/k2=v2`` with CAST spellings;
* ``$files.min_key``/``max_key`` print the internal key values as ``[v1, v2]`` (NULL for append tables), and
  the stats columns print ``{col=value, ...}`` sorted by column name (Java ``TreeMap.toString``), with the
  file's statistics evolved to the read schema by field id (a column added after the file was written has
  null count = row count and unknown bounds);
* ``$tags.time_retained`` is Java's ``Duration.toString()`` (``PT24H``);
* ``$files.file_source`` is ``APPEND``/``COMPACT`` (Java's enum name; pypaimon prints ``0``/``1``).

Known differences, on purpose: ``$partitions`` of an unpartitioned table has one row whose partition is
``''`` (Java's rendering; pypaimon returns NULL); ``deleted_record_count`` is 0 for tables without deletion
vectors and NULL with them (deletion-vector index files are not read here); ``created_at``/``created_by``/
``updated_by``/``options`` are NULL and ``done`` false, as for Java's filesystem catalog, which tracks none
of them. ``$manifests`` lists base, delta and changelog manifests (Java's ``readAllManifests``).

Time travel (``scan.snapshot-id``, ``scan.tag-name``, ...) selects the snapshot of ``$files``, ``$manifests``
and ``$partitions``; other system tables describe the branch as a whole and refuse those options rather than
ignoring them. Schemas are built from Paimon types without pyspark (:func:`system_table_fields`,
:func:`system_table_arrow_schema`); the Spark reader derives its schema from them. Building rows loops over
metadata records (snapshots, tags, files), never over data rows.
"""

from __future__ import annotations

import datetime as _dt
import json
import struct
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.jobs import DATA_VIEWS, prepare_read
from pyspark_paimon.datasource.read.read_context import ROW_KIND_FIELD
from pyspark_paimon.errors import CorruptMetadataError, OptionError, PaimonError
from pyspark_paimon.metadata.io.jackson import to_jackson_json
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.manifests.manifest import (
    FILE_SOURCE_APPEND,
    FILE_SOURCE_COMPACT,
    DataFileMeta,
    ManifestEntry,
)
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import partition_value_string
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import local_datetime
from pyspark_paimon.metadata.types.arrow import to_arrow_schema
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    DataType,
    RowType,
    string_type,
    type_to_sql,
)
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.read_plan import read_schema
from pyspark_paimon.planner.time_travel import resolve_snapshot, version_branch

__all__ = [
    "SYSTEM_TABLES",
    "system_table_fields",
    "system_table_arrow_schema",
    "check_system_table",
    "read_system_table",
    "TIME_TRAVEL_TABLES",
    "DATA_VIEWS",
    "binlog_batch",
]


# ------------------------------------------------------------------------------------------------------
# Column lists (Paimon's names, order, types and nullability)
# ------------------------------------------------------------------------------------------------------
def _bigint(nullable: bool = True) -> AtomicType:
    return AtomicType("BIGINT", nullable)


def _int(nullable: bool = True) -> AtomicType:
    return AtomicType("INT", nullable)


def _ts3(nullable: bool = True) -> AtomicType:
    return AtomicType("TIMESTAMP", nullable, precision=3)


_STR, _STR_NN = string_type(True), string_type(False)

# The leading columns of $files, which Paimon master's $file_key_ranges repeats.
_FILE_COLUMNS: list[tuple[str, DataType]] = [
    ("partition", _STR),
    ("bucket", _int(False)),
    ("file_path", _STR_NN),
    ("file_format", _STR_NN),
    ("schema_id", _bigint(False)),
    ("level", _int(False)),
    ("record_count", _bigint(False)),
    ("file_size_in_bytes", _bigint(False)),
    ("min_key", _STR),
    ("max_key", _STR),
]

_COLUMNS: dict[str, list[tuple[str, DataType]]] = {
    "snapshots": [
        ("snapshot_id", _bigint(False)),
        ("schema_id", _bigint(False)),
        ("commit_user", _STR_NN),
        ("commit_identifier", _bigint(False)),
        ("commit_kind", _STR_NN),
        ("commit_time", _ts3(False)),
        ("base_manifest_list", _STR_NN),
        ("delta_manifest_list", _STR_NN),
        ("changelog_manifest_list", _STR),
        ("total_record_count", _bigint()),
        ("delta_record_count", _bigint()),
        ("changelog_record_count", _bigint()),
        ("watermark", _bigint()),
        ("next_row_id", _bigint()),
        ("operation", _STR),
        ("writer_version", _STR),
    ],
    "schemas": [
        ("schema_id", _bigint(False)),
        ("fields", _STR_NN),
        ("partition_keys", _STR_NN),
        ("primary_keys", _STR_NN),
        ("options", _STR_NN),
        ("comment", _STR),
        ("update_time", _ts3(False)),
    ],
    "options": [("key", _STR_NN), ("value", _STR_NN)],
    "tags": [
        ("tag_name", _STR_NN),
        ("snapshot_id", _bigint(False)),
        ("schema_id", _bigint(False)),
        ("commit_time", _ts3(False)),
        ("record_count", _bigint()),
        ("create_time", _ts3()),
        ("time_retained", _STR),
    ],
    # Paimon's branch design (and Java's $branches until 0.9) has the two created_from columns; Java 1.0 kept only
    # branch_name and create_time, in the same order.
    "branches": [
        ("branch_name", _STR_NN),
        ("created_from_tag", _STR),
        ("created_from_snapshot", _bigint()),
        ("create_time", _ts3(False)),
    ],
    "files": [
        *_FILE_COLUMNS,
        ("null_value_counts", _STR_NN),
        ("min_value_stats", _STR_NN),
        ("max_value_stats", _STR_NN),
        ("min_sequence_number", _bigint()),
        ("max_sequence_number", _bigint()),
        ("creation_time", _ts3()),
        ("deleteRowCount", _bigint()),
        ("file_source", _STR),
        ("first_row_id", _bigint()),
        ("write_cols", ArrayType(string_type(True), True)),
    ],
    "manifests": [
        ("file_name", _STR_NN),
        ("file_size", _bigint(False)),
        ("num_added_files", _bigint(False)),
        ("num_deleted_files", _bigint(False)),
        ("schema_id", _bigint(False)),
        ("min_partition_stats", _STR),
        ("max_partition_stats", _STR),
        ("min_row_id", _bigint()),
        ("max_row_id", _bigint()),
    ],
    "partitions": [
        ("partition", _STR),
        ("record_count", _bigint(False)),
        ("file_size_in_bytes", _bigint(False)),
        ("file_count", _bigint(False)),
        ("last_update_time", _ts3()),
        ("created_at", _ts3()),
        ("created_by", _STR),
        ("updated_by", _STR),
        ("options", _STR),
        ("total_buckets", _int(False)),
        ("done", AtomicType("BOOLEAN", False)),
        ("deleted_record_count", _bigint()),
    ],
    "buckets": [
        ("partition", _STR),
        ("bucket", _int(False)),
        ("record_count", _bigint(False)),
        ("file_size_in_bytes", _bigint(False)),
        ("file_count", _bigint(False)),
        ("last_update_time", _ts3()),
    ],
    "consumers": [("consumer_id", _STR_NN), ("next_snapshot_id", _bigint(False))],
    "statistics": [
        ("snapshot_id", _bigint(False)),
        ("schema_id", _bigint(False)),
        ("mergedRecordCount", _bigint()),
        ("mergedRecordSize", _bigint()),
        ("colstat", _STR),
    ],
    "aggregation_fields": [
        ("field_name", _STR_NN),
        ("field_type", _STR_NN),
        ("function", _STR),
        ("function_options", _STR),
        ("comment", _STR),
    ],
    # Paimon 1.1+ (master's columns); dv_ranges is Java's DeletionVectorMeta row.
    "table_indexes": [
        ("partition", _STR),
        ("bucket", _int(False)),
        ("index_type", _STR_NN),
        ("file_name", _STR_NN),
        ("file_size", _bigint(False)),
        ("row_count", _bigint(False)),
        (
            "dv_ranges",
            ArrayType(
                RowType(
                    (
                        DataField(0, "f0", _STR_NN),
                        DataField(1, "f1", _int(False)),
                        DataField(2, "f2", _int(False)),
                        DataField(3, "_CARDINALITY", _bigint()),
                    ),
                    True,
                ),
                True,
            ),
        ),
        ("row_range_start", _bigint()),
        ("row_range_end", _bigint()),
        ("index_field_id", _int()),
        ("index_field_name", _STR),
    ],
    # Paimon 1.4+ (master's columns): $files' key columns.
    "file_key_ranges": [
        *_FILE_COLUMNS,
        ("first_row_id", _bigint()),
    ],
}

#: System tables whose rows depend on the snapshot read, so time-travel options apply to them.
TIME_TRAVEL_TABLES = frozenset(
    {"files", "manifests", "partitions", "buckets", "statistics", "table_indexes", "file_key_ranges"}
)
#: Every system table (Paimon's ``SystemTableLoader`` names; the data views first).
SYSTEM_TABLES = (*DATA_VIEWS, *_COLUMNS)


def _require_known(name: str) -> None:
    if name not in SYSTEM_TABLES:
        raise PaimonError(
            f"Unknown system table '${name}'. System tables: {', '.join('$' + n for n in SYSTEM_TABLES)}."
        )


def system_table_fields(
    name: str, store: FileStore | None = None, options: Mapping[str, str] | None = None
) -> list[DataField]:
    """The columns of system table ``name`` as Paimon fields (ids are positions, as in Java). The data views
    (``$audit_log``, ``$binlog``, ``$ro``) have the read schema's columns, so they need ``store`` (and the read
    ``options``, for time travel): ``$audit_log`` leads with ``rowkind``, ``$binlog`` also turns every column
    into an ARRAY of its (nullable) type, Java's ``BinlogTable`` (a batch row holds one value per array)."""
    _require_known(name)
    if name in DATA_VIEWS:
        if store is None:
            raise PaimonError(f"The columns of ${name} are the table's: give the table's store.")
        opts = ReadOptions.from_options(options or {})
        fields = list(read_schema(store, replace(opts, row_tracking=True) if name == "row_tracking" else opts).fields)
        if name in ("ro", "row_tracking"):
            return fields
        kind = DataField(-1, ROW_KIND_FIELD.name, string_type(True))
        if name == "binlog":
            fields = [replace(f, type=ArrayType(f.type.with_nullable(True), True)) for f in fields]
        return [kind, *fields]
    return [DataField(i, col, t) for i, (col, t) in enumerate(_COLUMNS[name])]


def system_table_arrow_schema(
    name: str, store: FileStore | None = None, options: Mapping[str, str] | None = None
) -> pa.Schema:
    """The Arrow schema of the batches :func:`read_system_table` yields (Spark's exchange types)."""
    return to_arrow_schema(system_table_fields(name, store, options))


def binlog_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """An ``$audit_log`` batch as ``$binlog`` shows it: every value column (all but the leading ``rowkind``)
    becomes a one-element array per row, vectorised (one list of offsets for all columns)."""
    offsets = pa.array(np.arange(batch.num_rows + 1, dtype=np.int32))
    arrays = [batch.column(0)]
    for column, target in zip(batch.columns[1:], schema.types[1:]):
        arrays.append(pa.ListArray.from_arrays(offsets, column).cast(target))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def check_system_table(store: FileStore, name: str, options: Mapping[str, str]) -> ReadOptions:
    """Validate a read of system table ``name`` of ``store``'s branch before any row is built: the name, the
    options (time travel only where it applies; a data view takes every read option) and that the table and
    branch exist."""
    _require_known(name)
    opts = ReadOptions.from_options(options)
    if name in DATA_VIEWS:
        store.schema()
        return opts
    if opts.incremental_between is not None or opts.incremental_between_timestamp is not None:
        raise OptionError(
            f"Incremental read options do not apply to system table ${name}; read the table itself with them."
        )
    if opts.time_travel and name not in TIME_TRAVEL_TABLES:
        raise OptionError(
            f"Time-travel options do not apply to system table ${name}, which describes the whole branch; they "
            f"select the snapshot of {', '.join('$' + n for n in sorted(TIME_TRAVEL_TABLES))} only. Remove them."
        )
    store.schema()  # a clear error now, not in an executor, if the table or branch does not exist
    return opts


def read_system_table(store: FileStore, name: str, options: Mapping[str, str] | None = None) -> pa.Table:
    """System table ``name`` of ``store``'s branch as one Arrow table of exactly
    :func:`system_table_arrow_schema` (metadata is small: one row per snapshot, file, ...). The Python API
    (``t.inspect``) and Spark's ``$name`` tables both read through here."""
    opts = check_system_table(store, name, options or {})
    if name in DATA_VIEWS:
        job = prepare_read(store, opts, view=name)
        rows = job.to_arrow()
        if name != "binlog":
            return rows
        schema = system_table_arrow_schema(name, store, options)
        return pa.Table.from_batches([binlog_batch(b, schema) for b in rows.to_batches()], schema=schema)
    columns = _BUILDERS[name](store, opts)
    return pa.Table.from_pydict(columns, schema=system_table_arrow_schema(name))


# ------------------------------------------------------------------------------------------------------
# Value rendering (Java's spellings)
# ------------------------------------------------------------------------------------------------------
_EPOCH = _dt.datetime(1970, 1, 1)


def _commit_time(millis: int) -> _dt.datetime:
    """An epoch-ms instant as the local wall clock (Java ``LocalDateTime.ofInstant(.., systemDefault)``)."""
    return local_datetime(millis)


def _stored_wall_clock(millis: int | None) -> _dt.datetime | None:
    """A manifest ``_CREATION_TIME``: a local wall clock already stored as if it were UTC epoch ms."""
    return None if millis is None else _EPOCH + _dt.timedelta(milliseconds=millis)


def java_duration(millis: int) -> str:
    """Java ``Duration.toString()`` of a (non-negative) retention: ``PT24H``, ``PT1H30M``, ``PT0.5S``, ``PT0S``;
    Java has no day unit, so one day prints as ``PT24H``."""
    seconds, ms = divmod(max(millis, 0), 1000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = "PT"
    if hours:
        out += f"{hours}H"
    if minutes:
        out += f"{minutes}M"
    if secs or ms or out == "PT":
        out += f"{secs}" + (f".{ms:03d}".rstrip("0") if ms else "") + "S"
    return out


def _cast_string(value: Any, t: DataType) -> str:
    """``CAST(value AS STRING)`` of one field; Java prints a NULL field of a ROW as ``null``."""
    if value is None:
        return "null"
    try:
        text = partition_value_string(value, t, legacy_name=False)
    except PaimonError:
        text = None
    return str(value) if text is None else text


def _internal_string(value: Any, t: DataType) -> str:
    """``toString()`` of Paimon's internal value (DATE as days, TIMESTAMP as ``LocalDateTime``...)."""
    if value is None:
        return "null"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")  # Java would print an object address
    try:
        text = partition_value_string(value, t, legacy_name=True)
    except PaimonError:
        text = None
    return str(value) if text is None else text


def _row_to_string(row: bytes, fields: Sequence[DataField]) -> str | None:
    """``CAST(ROW AS STRING)`` of a serialized partition row: ``{v1, v2}``."""
    try:
        values = deserialize_row(row, [f.type for f in fields])
    except CorruptMetadataError:
        return None
    return "{" + ", ".join(_cast_string(v, f.type) for v, f in zip(values, fields)) + "}"


def _partition_spec_string(values: Sequence[Any], fields: Sequence[DataField], default_name: str) -> str:
    """``k=v/k2=v2`` as ``$partitions`` prints it (CAST spellings, NULL as the default partition name)."""
    return "/".join(
        f"{f.name}={default_name if v is None else _cast_string(v, f.type)}" for v, f in zip(values, fields)
    )


def _tree_map_string(pairs: dict[str, str]) -> str:
    """Java ``TreeMap.toString()``: keys sorted, ``{a=1, b=x}``."""
    return "{" + ", ".join(f"{k}={pairs[k]}" for k in sorted(pairs)) + "}"


def _file_format(file_name: str) -> str:
    """Java ``DataFilePathFactory.formatIdentifier``: the text after the last dot."""
    dot = file_name.rfind(".")
    return file_name[dot + 1 :] if dot >= 0 else ""


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------------------------------------------
# Builders: store + read options -> {column: values}
# ------------------------------------------------------------------------------------------------------
Columns = dict[str, list]
_Builder = Callable[[FileStore, ReadOptions], Columns]


def _empty(name: str) -> Columns:
    return {col: [] for col, _ in _COLUMNS[name]}


def _snapshots(store: FileStore, opts: ReadOptions) -> Columns:
    out = _empty("snapshots")
    for s in store.snapshots.snapshots():
        for col, value in (
            ("snapshot_id", s.id),
            ("schema_id", s.schema_id),
            ("commit_user", s.commit_user),
            ("commit_identifier", s.commit_identifier),
            ("commit_kind", s.commit_kind),
            ("commit_time", _commit_time(s.time_millis)),
            ("base_manifest_list", s.base_manifest_list),
            ("delta_manifest_list", s.delta_manifest_list),
            ("changelog_manifest_list", s.changelog_manifest_list),
            ("total_record_count", s.total_record_count),
            ("delta_record_count", s.delta_record_count),
            ("changelog_record_count", s.changelog_record_count),
            ("watermark", s.watermark),
            ("next_row_id", s.next_row_id),
            ("operation", s.operation),
            ("writer_version", s.writer_version),
        ):
            out[col].append(value)
    return out


def _schemas(store: FileStore, opts: ReadOptions) -> Columns:
    out = _empty("schemas")
    for sid in store.schemas.list_ids():
        schema = store.schemas.schema(sid)
        d = schema.to_dict()
        out["schema_id"].append(schema.id)
        out["fields"].append(_json(d["fields"]))
        out["partition_keys"].append(_json(d["partitionKeys"]))
        out["primary_keys"].append(_json(d["primaryKeys"]))
        out["options"].append(_json(d["options"]))
        out["comment"].append(schema.comment)
        out["update_time"].append(_commit_time(schema.time_millis))
    return out


def _options(store: FileStore, opts: ReadOptions) -> Columns:
    options = store.schema().options
    return {"key": list(options), "value": [str(v) for v in options.values()]}


def _tags(store: FileStore, opts: ReadOptions) -> Columns:
    out = _empty("tags")
    for tag in sorted(TagManager(store).list_tags(), key=lambda t: t.name):
        s = tag.snapshot
        out["tag_name"].append(tag.name)
        out["snapshot_id"].append(s.id)
        out["schema_id"].append(s.schema_id)
        out["commit_time"].append(_commit_time(s.time_millis))
        out["record_count"].append(s.total_record_count)
        out["create_time"].append(tag.create_time)
        out["time_retained"].append(None if tag.time_retained_ms is None else java_duration(tag.time_retained_ms))
    return out


def _branches(store: FileStore, opts: ReadOptions) -> Columns:
    """Every branch of the table but ``main`` (the same rows whichever branch the table is addressed on),
    created at its lineage time or, for branches Paimon made, its directory's modification time. The
    ``created_from_*`` columns come from the lineage file, else are inferred as Paimon 0.9 did
    (``BranchManager._inferred_origin``)."""
    out = _empty("branches")
    for info in BranchManager(store).list_branches():
        out["branch_name"].append(info.name)
        out["created_from_tag"].append(info.source_tag)
        out["created_from_snapshot"].append(info.source_snapshot_id)
        out["create_time"].append(_commit_time(info.create_time_millis))
    return out


def _read_snapshot(store: FileStore, opts: ReadOptions) -> tuple[Snapshot | None, TableSchema]:
    """The snapshot the read sees (latest, or time travel) and the schema to describe it with."""
    store, opts = version_branch(store, opts)
    snapshot = resolve_snapshot(store, opts)
    if opts.time_travel and snapshot is not None:
        return snapshot, store.schemas.schema(snapshot.schema_id)
    return snapshot, store.schema()


def _sorted_entries(entries: list[ManifestEntry], labels: dict[bytes, str]) -> list[ManifestEntry]:
    return sorted(
        entries,
        key=lambda e: (labels[e.partition], e.bucket, e.file.level, e.file.min_sequence_number, e.file.file_name),
    )


class _StatsRenderer:
    """Renders a file's key and value statistics; evolves value stats to the read schema by field id."""

    def __init__(self, store: FileStore, schema: TableSchema):
        self.store = store
        self.schema = schema
        self._schemas: dict[int, TableSchema] = {schema.id: schema}

    def file_schema(self, schema_id: int) -> TableSchema:
        found = self._schemas.get(schema_id)
        if found is None:
            found = self.store.schemas.schema(schema_id)
            self._schemas[schema_id] = found
        return found

    def key(self, data: bytes, f: DataFileMeta) -> str | None:
        """``[v1, v2]`` of the trimmed primary key, NULL when the file has no key (append tables)."""
        if len(data) < 4 or struct.unpack(">i", data[:4])[0] <= 0:
            return None
        file_schema = self.file_schema(f.schema_id)
        types = [fld.type for fld in file_schema.trimmed_primary_key_fields]
        try:
            values = deserialize_row(data, types)
        except CorruptMetadataError:
            return None
        return "[" + ", ".join(_internal_string(v, t) for v, t in zip(values, types)) + "]"

    def values(self, f: DataFileMeta) -> tuple[str, str, str]:
        """(null_value_counts, min_value_stats, max_value_stats) over the read schema's columns."""
        file_schema = self.file_schema(f.schema_id)
        by_name = {fld.name: fld for fld in file_schema.fields}
        stats = f.value_stats
        arity = struct.unpack(">i", stats.min_values[:4])[0] if len(stats.min_values) >= 4 else 0
        covered = [fld.name for fld in file_schema.fields] if f.value_stats_cols is None else list(f.value_stats_cols)
        mins: tuple = ()
        maxs: tuple = ()
        if covered and len(covered) == arity and all(c in by_name for c in covered):
            # Nested columns never have bounds; their slot is a NULL of any fixed-size type.
            types: list[DataType] = [
                by_name[c].type if isinstance(by_name[c].type, AtomicType) else AtomicType("BIGINT") for c in covered
            ]
            try:
                mins = deserialize_row(stats.min_values, types)
                maxs = deserialize_row(stats.max_values, types)
            except CorruptMetadataError:
                mins = maxs = ()
        nulls_list = list(stats.null_counts or ())
        position = {name: i for i, name in enumerate(covered)}
        file_by_id = {fld.id: fld for fld in file_schema.fields}
        nulls: dict[str, str] = {}
        lows: dict[str, str] = {}
        highs: dict[str, str] = {}
        for fld in self.schema.fields:
            ffld = file_by_id.get(fld.id)
            if ffld is None:  # added after the file was written: all NULL in this file
                nulls[fld.name], lows[fld.name], highs[fld.name] = str(f.row_count), "null", "null"
                continue
            i = position.get(ffld.name)
            count = nulls_list[i] if i is not None and i < len(nulls_list) else None
            nulls[fld.name] = "null" if count is None else str(count)
            lows[fld.name] = _internal_string(mins[i], ffld.type) if i is not None and i < len(mins) else "null"
            highs[fld.name] = _internal_string(maxs[i], ffld.type) if i is not None and i < len(maxs) else "null"
        return _tree_map_string(nulls), _tree_map_string(lows), _tree_map_string(highs)


def _partition_labels(entries: list[ManifestEntry], schema: TableSchema) -> tuple[dict[bytes, tuple], dict[bytes, str]]:
    fields = schema.partition_fields
    types = [f.type for f in fields]
    values: dict[bytes, tuple] = {}
    labels: dict[bytes, str] = {}
    for e in entries:
        if e.partition not in values:
            values[e.partition] = tuple(deserialize_row(e.partition, types))
            labels[e.partition] = (
                "{" + ", ".join(_cast_string(v, f.type) for v, f in zip(values[e.partition], fields)) + "}"
            )
    return values, labels


def _files(store: FileStore, opts: ReadOptions) -> Columns:
    out = _empty("files")
    snapshot, schema = _read_snapshot(store, opts)
    entries = store.live_entries(snapshot)
    parts, labels = _partition_labels(entries, schema)
    stats = _StatsRenderer(store, schema)
    for e in _sorted_entries(entries, labels):
        f = e.file
        nulls, lows, highs = stats.values(f)
        path = f.external_path or f"{store.bucket_path(schema, parts[e.partition], e.bucket)}/{f.file_name}"
        source = (
            {FILE_SOURCE_APPEND: "APPEND", FILE_SOURCE_COMPACT: "COMPACT"}.get(f.file_source)
            if f.file_source is not None
            else None
        )
        for col, value in (
            ("partition", labels[e.partition]),
            ("bucket", e.bucket),
            ("file_path", path),
            ("file_format", _file_format(f.file_name)),
            ("schema_id", f.schema_id),
            ("level", f.level),
            ("record_count", f.row_count),
            ("file_size_in_bytes", f.file_size),
            ("min_key", stats.key(f.min_key, f)),
            ("max_key", stats.key(f.max_key, f)),
            ("null_value_counts", nulls),
            ("min_value_stats", lows),
            ("max_value_stats", highs),
            ("min_sequence_number", f.min_sequence_number),
            ("max_sequence_number", f.max_sequence_number),
            ("creation_time", _stored_wall_clock(f.creation_time_millis)),
            ("deleteRowCount", f.delete_row_count),
            ("file_source", source),
            ("first_row_id", f.first_row_id),
            ("write_cols", None if f.write_cols is None else list(f.write_cols)),
        ):
            out[col].append(value)
    return out


def _manifests(store: FileStore, opts: ReadOptions) -> Columns:
    out = _empty("manifests")
    snapshot, schema = _read_snapshot(store, opts)
    if snapshot is None:
        return out
    metas = store.data_manifests(snapshot)
    if snapshot.changelog_manifest_list:
        metas = metas + store.manifests.read_list(snapshot.changelog_manifest_list)
    fields = schema.partition_fields
    for m in metas:
        for col, value in (
            ("file_name", m.file_name),
            ("file_size", m.file_size),
            ("num_added_files", m.num_added_files),
            ("num_deleted_files", m.num_deleted_files),
            ("schema_id", m.schema_id),
            ("min_partition_stats", _row_to_string(m.partition_stats.min_values, fields)),
            ("max_partition_stats", _row_to_string(m.partition_stats.max_values, fields)),
            ("min_row_id", m.min_row_id),
            ("max_row_id", m.max_row_id),
        ):
            out[col].append(value)
    return out


def _partitions(store: FileStore, opts: ReadOptions) -> Columns:
    out = _empty("partitions")
    snapshot, schema = _read_snapshot(store, opts)
    entries = store.live_entries(snapshot)
    parts, _ = _partition_labels(entries, schema)
    options = schema.core_options
    default_name = options.partition_default_name
    has_dv = options.deletion_vectors_enabled
    groups: dict[str, dict[str, Any]] = {}
    for e in entries:
        label = _partition_spec_string(parts[e.partition], schema.partition_fields, default_name)
        g = groups.setdefault(label, {"records": 0, "size": 0, "count": 0, "last": None, "buckets": e.total_buckets})
        g["records"] += e.file.row_count
        g["size"] += e.file.file_size
        g["count"] += 1
        created = e.file.creation_time_millis
        if created is not None and (g["last"] is None or created > g["last"]):
            g["last"] = created
    for label in sorted(groups):
        g = groups[label]
        for col, value in (
            ("partition", label),
            ("record_count", g["records"]),
            ("file_size_in_bytes", g["size"]),
            ("file_count", g["count"]),
            ("last_update_time", _stored_wall_clock(g["last"])),
            ("created_at", None),
            ("created_by", None),
            ("updated_by", None),
            ("options", None),
            ("total_buckets", g["buckets"]),
            ("done", False),
            ("deleted_record_count", None if has_dv else 0),
        ):
            out[col].append(value)
    return out


def _buckets(store: FileStore, opts: ReadOptions) -> Columns:
    """Totals per (partition, bucket), sorted by the partition text then the bucket; the partition as Java 1.0
    prints it (``Arrays.toString`` of the values: ``[a, 1]``, ``[]`` when unpartitioned; Paimon master prints
    ``{a, 1}``)."""
    out = _empty("buckets")
    snapshot, schema = _read_snapshot(store, opts)
    entries = store.live_entries(snapshot)
    parts, _ = _partition_labels(entries, schema)
    fields = schema.partition_fields
    groups: dict[tuple[str, int], list[int | None]] = {}
    for e in entries:
        label = "[" + ", ".join(_cast_string(v, f.type) for v, f in zip(parts[e.partition], fields)) + "]"
        g = groups.setdefault((label, e.bucket), [0, 0, 0, None])
        g[0] = (g[0] or 0) + e.file.row_count
        g[1] = (g[1] or 0) + e.file.file_size
        g[2] = (g[2] or 0) + 1
        created = e.file.creation_time_millis
        if created is not None and (g[3] is None or created > g[3]):
            g[3] = created
    for (label, bucket), (records, size, count, last) in sorted(groups.items()):
        for col, value in (
            ("partition", label),
            ("bucket", bucket),
            ("record_count", records),
            ("file_size_in_bytes", size),
            ("file_count", count),
            ("last_update_time", _stored_wall_clock(last)),
        ):
            out[col].append(value)
    return out


def _consumers(store: FileStore, opts: ReadOptions) -> Columns:
    """The branch's consumers (``consumer/consumer-<id>``) by id."""
    found = ConsumerManager(store).consumers()
    ids = sorted(found)
    return {"consumer_id": ids, "next_snapshot_id": [found[i] for i in ids]}


def _statistics(store: FileStore, opts: ReadOptions) -> Columns:
    """The statistics file of the snapshot read (Spark's ``ANALYZE TABLE`` writes it; none: no row); ``colstat``
    is its ``colStats`` as Java's pretty-printed JSON."""
    out = _empty("statistics")
    snapshot, _ = _read_snapshot(store, opts)
    if snapshot is None or not snapshot.statistics:
        return out
    path = f"{store.table_path}/statistics/{snapshot.statistics}"
    try:
        stats = json.loads(store.fileio.read_text(path))
    except (OSError, ValueError) as exc:
        raise CorruptMetadataError(
            f"The statistics file {path} of snapshot {snapshot.id} cannot be read ({exc}); run ANALYZE TABLE again "
            "with Paimon to rewrite it."
        ) from exc
    out["snapshot_id"].append(stats.get("snapshotId"))
    out["schema_id"].append(stats.get("schemaId"))
    out["mergedRecordCount"].append(stats.get("mergedRecordCount"))
    out["mergedRecordSize"].append(stats.get("mergedRecordSize"))
    out["colstat"].append(to_jackson_json(stats.get("colStats") or {}))
    return out


def _aggregation_fields(store: FileStore, opts: ReadOptions) -> Columns:
    """One row per column of the latest schema: its SQL type, and the values and keys of its ``fields.<col>.*``
    options as Java prints a Guava list (``[sum]``, ``[fields.v.aggregate-function]``; ``[]`` when none)."""
    out = _empty("aggregation_fields")
    schema = store.schema()
    values: dict[str, list[str]] = {}
    keys: dict[str, list[str]] = {}
    for key, value in schema.options.items():
        parts = key.split(".")
        if len(parts) > 2 and parts[0] == "fields":
            values.setdefault(parts[1], []).append(str(value))
            keys.setdefault(parts[1], []).append(key)
    for f in schema.fields:
        out["field_name"].append(f.name)
        out["field_type"].append(type_to_sql(f.type))
        out["function"].append("[" + ", ".join(values.get(f.name, [])) + "]")
        out["function_options"].append("[" + ", ".join(keys.get(f.name, [])) + "]")
        out["comment"].append(f.description)
    return out


def _table_indexes(store: FileStore, opts: ReadOptions) -> Columns:
    """The index manifest's live entries of the snapshot read (deletion vectors, dynamic-bucket hash indexes):
    the partition as ``$files`` prints it, deletion-vector ranges per data file (global indexes: none here)."""
    out = _empty("table_indexes")
    snapshot, schema = _read_snapshot(store, opts)
    if snapshot is None or not snapshot.index_manifest:
        return out
    entries = read_index_manifest(store.fileio, store.manifests.path(snapshot.index_manifest))
    fields = schema.partition_fields
    for e in entries:
        ranges = (
            None
            if e.dv_ranges is None
            else [{"f0": n, "f1": o, "f2": ln, "_CARDINALITY": c} for n, o, ln, c in e.dv_ranges]
        )
        for col, value in (
            ("partition", _row_to_string(e.partition, fields)),
            ("bucket", e.bucket),
            ("index_type", e.index_type),
            ("file_name", e.file_name),
            ("file_size", e.file_size),
            ("row_count", e.row_count),
            ("dv_ranges", ranges),
            ("row_range_start", None),
            ("row_range_end", None),
            ("index_field_id", None),
            ("index_field_name", None),
        ):
            out[col].append(value)
    return out


def _file_key_ranges(store: FileStore, opts: ReadOptions) -> Columns:
    """``$files``' key columns (the same files, order and renderings)."""
    files = _files(store, opts)
    return {col: files[col] for col, _ in _COLUMNS["file_key_ranges"]}


_BUILDERS: dict[str, _Builder] = {
    "snapshots": _snapshots,
    "schemas": _schemas,
    "options": _options,
    "tags": _tags,
    "branches": _branches,
    "files": _files,
    "manifests": _manifests,
    "partitions": _partitions,
    "buckets": _buckets,
    "consumers": _consumers,
    "statistics": _statistics,
    "aggregation_fields": _aggregation_fields,
    "table_indexes": _table_indexes,
    "file_key_ranges": _file_key_ranges,
}
