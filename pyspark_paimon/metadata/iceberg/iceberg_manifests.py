"""Iceberg manifests and manifest lists: the Avro files an Iceberg snapshot lists its data and delete files in.

The layout is Iceberg's (spec "Manifests", "Manifest Lists") with Java Paimon's choices: every field carries its
Iceberg ``field-id`` (readers match fields by id), maps are Avro arrays of key/value records named as Iceberg
names them (``k121_v122``...), a data file records only its path, format, partition, counts, per-column null
counts and bounds; a deletion vector also its referenced data file and its byte range in the Puffin file.
Format 3 adds ``first_row_id`` (row lineage) to both files. Readers accept manifests Java wrote (its
nullable ``added_snapshot_id``, Iceberg 1.4's field names).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

from pyspark_paimon.metadata.iceberg.iceberg_schema import (
    PARTITION_FIELD_ID_START,
    partition_avro_type,
    partition_avro_value,
    single_value,
)
from pyspark_paimon.metadata.iceberg.layout import IcebergLayout
from pyspark_paimon.metadata.io.avro import read_avro, write_avro
from pyspark_paimon.metadata.types.model import AtomicType, DataField

__all__ = [
    "STATUS_EXISTING",
    "STATUS_ADDED",
    "STATUS_DELETED",
    "CONTENT_DATA",
    "CONTENT_POSITION_DELETES",
    "MANIFEST_DATA",
    "MANIFEST_DELETES",
    "DataFile",
    "Entry",
    "ManifestMeta",
    "ManifestWriter",
    "read_manifest",
    "write_manifest_list",
    "read_manifest_list",
    "has_field_ids",
    "local_path",
]

STATUS_EXISTING, STATUS_ADDED, STATUS_DELETED = 0, 1, 2
CONTENT_DATA, CONTENT_POSITION_DELETES = 0, 1
MANIFEST_DATA, MANIFEST_DELETES = 0, 1


@dataclass(frozen=True)
class DataFile:
    """One Iceberg ``data_file``: a data file, or a deletion vector (``content`` 1, format PUFFIN)."""

    content: int
    path: str
    file_format: str
    partition: tuple[Any, ...]  # Avro-ready values, in partition-field order
    record_count: int
    file_size: int
    null_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size: int | None = None
    first_row_id: int | None = None


@dataclass(frozen=True)
class Entry:
    status: int
    snapshot_id: int
    sequence_number: int
    file_sequence_number: int
    file: DataFile

    @property
    def live(self) -> bool:
        return self.status != STATUS_DELETED


@dataclass(frozen=True)
class ManifestMeta:
    """One manifest as a manifest list lists it."""

    path: str
    length: int
    content: int
    sequence_number: int
    min_sequence_number: int
    added_snapshot_id: int
    added_files: int
    existing_files: int
    deleted_files: int
    added_rows: int
    existing_rows: int
    deleted_rows: int
    partitions: tuple[dict[str, Any], ...] = ()  # contains_null, contains_nan, lower_bound, upper_bound
    first_row_id: int | None = None

    @property
    def live_rows(self) -> int:
        return self.added_rows + self.existing_rows

    @property
    def live_files(self) -> int:
        return self.added_files + self.existing_files


# ---------------------------------------------------------------------------------------------- schemas
def _opt(avro: Any) -> list[Any]:
    return ["null", avro]


def _int_map(name: str, field_id: int, key_id: int, value: str) -> dict[str, Any]:
    items = {
        "type": "record",
        "name": f"k{key_id}_v{key_id + 1}",
        "fields": [
            {"name": "key", "type": "int", "field-id": key_id},
            {"name": "value", "type": value, "field-id": key_id + 1},
        ],
    }
    return {"name": name, "type": _opt({"type": "array", "logicalType": "map", "items": items}), "default": None,
            "field-id": field_id}  # fmt: skip


def _entry_schema(partition_fields: Sequence[DataField], format_version: int) -> dict[str, Any]:
    partition = {
        "type": "record",
        "name": "r102",
        "fields": [partition_avro_type(f, PARTITION_FIELD_ID_START + i) for i, f in enumerate(partition_fields)],
    }
    data_file: list[dict[str, Any]] = [
        {"name": "content", "type": "int", "field-id": 134},
        {"name": "file_path", "type": "string", "field-id": 100},
        {"name": "file_format", "type": "string", "field-id": 101},
        {"name": "partition", "type": partition, "field-id": 102},
        {"name": "record_count", "type": "long", "field-id": 103},
        {"name": "file_size_in_bytes", "type": "long", "field-id": 104},
        _int_map("null_value_counts", 110, 121, "long"),
        _int_map("lower_bounds", 125, 126, "bytes"),
        _int_map("upper_bounds", 128, 129, "bytes"),
        {"name": "referenced_data_file", "type": _opt("string"), "default": None, "field-id": 143},
        {"name": "content_offset", "type": _opt("long"), "default": None, "field-id": 144},
        {"name": "content_size_in_bytes", "type": _opt("long"), "default": None, "field-id": 145},
    ]
    if format_version >= 3:
        data_file.append({"name": "first_row_id", "type": _opt("long"), "default": None, "field-id": 142})
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            {"name": "status", "type": "int", "field-id": 0},
            {"name": "snapshot_id", "type": _opt("long"), "default": None, "field-id": 1},
            {"name": "sequence_number", "type": _opt("long"), "default": None, "field-id": 3},
            {"name": "file_sequence_number", "type": _opt("long"), "default": None, "field-id": 4},
            {"name": "data_file", "type": {"type": "record", "name": "r2", "fields": data_file}, "field-id": 2},
        ],
    }


def _list_schema(format_version: int, legacy: bool) -> dict[str, Any]:
    count = "{}_data_files_count" if legacy else "{}_files_count"
    summary = {
        "type": "record",
        "name": "r508",
        "fields": [
            {"name": "contains_null", "type": "boolean", "field-id": 509},
            {"name": "contains_nan", "type": _opt("boolean"), "default": None, "field-id": 518},
            {"name": "lower_bound", "type": _opt("bytes"), "default": None, "field-id": 510},
            {"name": "upper_bound", "type": _opt("bytes"), "default": None, "field-id": 511},
        ],
    }
    fields: list[dict[str, Any]] = [
        {"name": "manifest_path", "type": "string", "field-id": 500},
        {"name": "manifest_length", "type": "long", "field-id": 501},
        {"name": "partition_spec_id", "type": "int", "field-id": 502},
        {"name": "content", "type": "int", "field-id": 517},
        {"name": "sequence_number", "type": "long", "field-id": 515},
        {"name": "min_sequence_number", "type": "long", "field-id": 516},
        {"name": "added_snapshot_id", "type": "long", "field-id": 503},
        {"name": count.format("added"), "type": "int", "field-id": 504},
        {"name": count.format("existing"), "type": "int", "field-id": 505},
        {"name": count.format("deleted"), "type": "int", "field-id": 506},
        {"name": "added_rows_count", "type": "long", "field-id": 512},
        {"name": "existing_rows_count", "type": "long", "field-id": 513},
        {"name": "deleted_rows_count", "type": "long", "field-id": 514},
        {
            "name": "partitions",
            "type": _opt({"type": "array", "items": summary, "element-id": 508}),
            "default": None,
            "field-id": 507,
        },
    ]
    if format_version >= 3:
        fields.append({"name": "first_row_id", "type": _opt("long"), "default": None, "field-id": 520})
    return {"type": "record", "name": "manifest_file", "fields": fields}


# ---------------------------------------------------------------------------------------------- records
def _map_out(values: dict[int, Any] | None) -> list[dict[str, Any]] | None:
    return None if values is None else [{"key": k, "value": v} for k, v in sorted(values.items())]


def _map_in(items: Any) -> dict[int, Any] | None:
    if items is None:
        return None
    if isinstance(items, dict):
        return {int(k): v for k, v in items.items()}
    return {int(i["key"]): i["value"] for i in items}


def _entry_record(e: Entry, names: Sequence[str], format_version: int) -> dict[str, Any]:
    f = e.file
    data_file: dict[str, Any] = {
        "content": f.content,
        "file_path": f.path,
        "file_format": f.file_format,
        "partition": dict(zip(names, f.partition)),
        "record_count": f.record_count,
        "file_size_in_bytes": f.file_size,
        "null_value_counts": _map_out(f.null_value_counts),
        "lower_bounds": _map_out(f.lower_bounds),
        "upper_bounds": _map_out(f.upper_bounds),
        "referenced_data_file": f.referenced_data_file,
        "content_offset": f.content_offset,
        "content_size_in_bytes": f.content_size,
    }
    if format_version >= 3:
        data_file["first_row_id"] = f.first_row_id
    return {
        "status": e.status,
        "snapshot_id": e.snapshot_id,
        "sequence_number": e.sequence_number,
        "file_sequence_number": e.file_sequence_number,
        "data_file": data_file,
    }


def read_manifest(layout: IcebergLayout, meta: ManifestMeta, partition_fields: Sequence[DataField]) -> list[Entry]:
    """Every entry of a manifest (live and deleted), with sequence numbers inherited as Iceberg readers do."""
    path = meta.path
    types = [f.type for f in partition_fields]
    out = []
    for r in read_avro(layout.fileio.read_bytes(_local(layout, path)), path):
        d = r["data_file"]
        part = d.get("partition") or {}
        values = tuple(
            partition_avro_value(t, v) if isinstance(t, AtomicType) else v
            for t, v in zip(types, (part.get(f.name) for f in partition_fields))
        )
        status = int(r["status"])
        inherit = status == STATUS_ADDED
        seq = r.get("sequence_number")
        fseq = r.get("file_sequence_number")
        out.append(
            Entry(
                status=status,
                snapshot_id=int(r["snapshot_id"] if r.get("snapshot_id") is not None else meta.added_snapshot_id),
                sequence_number=int(seq if seq is not None else (meta.sequence_number if inherit else 0)),
                file_sequence_number=int(fseq if fseq is not None else (meta.sequence_number if inherit else 0)),
                file=DataFile(
                    content=int(d.get("content", CONTENT_DATA)),
                    path=str(d["file_path"]),
                    file_format=str(d["file_format"]),
                    partition=values,
                    record_count=int(d["record_count"]),
                    file_size=int(d["file_size_in_bytes"]),
                    null_value_counts=_map_in(d.get("null_value_counts")),
                    lower_bounds=_map_in(d.get("lower_bounds")),
                    upper_bounds=_map_in(d.get("upper_bounds")),
                    referenced_data_file=d.get("referenced_data_file"),
                    content_offset=d.get("content_offset"),
                    content_size=d.get("content_size_in_bytes"),
                    first_row_id=d.get("first_row_id"),
                ),
            )
        )
    return out


def _local(layout: IcebergLayout, path: str) -> str:
    """A path the table's FileIO opens: metadata records files by URI (what other engines open), Java's local
    tables as ``file:/...``."""
    if "://" in path:
        return path.split("://", 1)[1]
    return path[len("file:") :] if path.startswith("file:/") else path


@dataclass
class _Summary:
    contains_null: bool = False
    contains_nan: bool = False
    lower: Any = None
    upper: Any = None


@dataclass
class ManifestWriter:
    """Writes the entries of one snapshot's manifest (Java's ``IcebergManifestFile.rollingWrite`` without rolling:
    Paimon tables keep few top-level files, one manifest per change is what readers open fastest)."""

    layout: IcebergLayout
    partition_fields: Sequence[DataField]
    table_schema_json: dict[str, Any]
    spec_json: dict[str, Any]
    written: list[str] = field(default_factory=list)

    def write(self, entries: Iterable[Entry], sequence_number: int, snapshot_id: int, content: int) -> ManifestMeta:
        entries = list(entries)
        names = [f.name for f in self.partition_fields]
        version = self.layout.format_version
        data = write_avro(
            _entry_schema(self.partition_fields, version),
            (_entry_record(e, names, version) for e in entries),
            self.layout.codec,
            metadata={
                "schema": json.dumps(self.table_schema_json),
                "partition-spec": json.dumps(self.spec_json["fields"]),
                "partition-spec-id": "0",
                "format-version": str(version),
                "content": "deletes" if content == MANIFEST_DELETES else "data",
            },
        )
        name = f"{uuid.uuid4()}-m0.avro"
        path = self.layout.path(name)
        self.layout.fileio.write_bytes(path, data)
        self.written.append(path)
        counts = {s: [0, 0] for s in (STATUS_EXISTING, STATUS_ADDED, STATUS_DELETED)}
        summaries = [_Summary() for _ in self.partition_fields]
        for e in entries:
            counts[e.status][0] += 1
            counts[e.status][1] += e.file.record_count
            for s, v in zip(summaries, e.file.partition):
                if v is None:
                    s.contains_null = True
                elif isinstance(v, float) and v != v:
                    s.contains_nan = True
                else:
                    s.lower = v if s.lower is None or v < s.lower else s.lower
                    s.upper = v if s.upper is None or v > s.upper else s.upper
        partitions = tuple(
            {
                "contains_null": s.contains_null,
                "contains_nan": s.contains_nan,
                "lower_bound": None if s.lower is None else _bound(f, s.lower),
                "upper_bound": None if s.upper is None else _bound(f, s.upper),
            }
            for f, s in zip(self.partition_fields, summaries)
        )
        seqs = [e.sequence_number for e in entries]
        return ManifestMeta(
            path=self.layout.fileio.uri(path),
            length=len(data),
            content=content,
            sequence_number=sequence_number,
            min_sequence_number=min(seqs) if seqs else sequence_number,
            added_snapshot_id=snapshot_id,
            added_files=counts[STATUS_ADDED][0],
            existing_files=counts[STATUS_EXISTING][0],
            deleted_files=counts[STATUS_DELETED][0],
            added_rows=counts[STATUS_ADDED][1],
            existing_rows=counts[STATUS_EXISTING][1],
            deleted_rows=counts[STATUS_DELETED][1],
            partitions=partitions,
        )


def _bound(f: DataField, value: Any) -> bytes:
    assert isinstance(f.type, AtomicType)
    return single_value(f.type, value)


def write_manifest_list(layout: IcebergLayout, manifests: Sequence[ManifestMeta], snapshot_id: int,
                        parent_id: int | None) -> str:  # fmt: skip
    """Write a snapshot's manifest list; returns its URI (what the snapshot records)."""
    legacy = layout.legacy_manifest_list
    count = "{}_data_files_count" if legacy else "{}_files_count"
    version = layout.format_version
    records = []
    for m in manifests:
        r: dict[str, Any] = {
            "manifest_path": m.path,
            "manifest_length": m.length,
            "partition_spec_id": 0,
            "content": m.content,
            "sequence_number": m.sequence_number,
            "min_sequence_number": m.min_sequence_number,
            "added_snapshot_id": m.added_snapshot_id,
            count.format("added"): m.added_files,
            count.format("existing"): m.existing_files,
            count.format("deleted"): m.deleted_files,
            "added_rows_count": m.added_rows,
            "existing_rows_count": m.existing_rows,
            "deleted_rows_count": m.deleted_rows,
            "partitions": list(m.partitions),
        }
        if version >= 3:
            r["first_row_id"] = m.first_row_id
        records.append(r)
    meta = {"snapshot-id": str(snapshot_id), "sequence-number": str(snapshot_id), "format-version": str(version)}
    if parent_id is not None:
        meta["parent-snapshot-id"] = str(parent_id)
    data = write_avro(_list_schema(version, legacy), records, layout.codec, metadata=meta)
    path = layout.path(f"snap-{snapshot_id}-1-{uuid.uuid4()}.avro")
    layout.fileio.write_bytes(path, data)
    return layout.fileio.uri(path)


def read_manifest_list(layout: IcebergLayout, path: str) -> list[ManifestMeta]:
    out = []
    for r in read_avro(layout.fileio.read_bytes(_local(layout, path)), path):

        def count(kind: str, rec: dict[str, Any] = r) -> int:
            value = rec.get(f"{kind}_files_count", rec.get(f"{kind}_data_files_count"))
            return int(value or 0)

        out.append(
            ManifestMeta(
                path=str(r["manifest_path"]),
                length=int(r["manifest_length"]),
                content=int(r.get("content") or 0),
                sequence_number=int(r.get("sequence_number") or 0),
                min_sequence_number=int(r.get("min_sequence_number") or 0),
                added_snapshot_id=int(r.get("added_snapshot_id") or 0),
                added_files=count("added"),
                existing_files=count("existing"),
                deleted_files=count("deleted"),
                added_rows=int(r.get("added_rows_count") or 0),
                existing_rows=int(r.get("existing_rows_count") or 0),
                deleted_rows=int(r.get("deleted_rows_count") or 0),
                partitions=tuple(r.get("partitions") or ()),
                first_row_id=r.get("first_row_id"),
            )
        )
    return out


def has_field_ids(layout: IcebergLayout, path: str) -> bool:
    """Whether the Avro file at ``path`` declares Iceberg field ids (Paimon before 1.0 wrote Iceberg manifests
    without them, which Iceberg readers cannot resolve: such metadata is rebuilt, never extended)."""
    data = layout.fileio.read_bytes(_local(layout, path))
    return b'"field-id"' in data[: 64 * 1024]


def local_path(layout: IcebergLayout, path: str) -> str:
    """The FileIO path of a file the metadata records by URI."""
    return _local(layout, path)


def with_first_row_id(meta: ManifestMeta, first_row_id: int) -> ManifestMeta:
    return replace(meta, first_row_id=first_row_id)
