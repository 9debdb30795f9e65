"""Iceberg's table metadata file (``v<N>.metadata.json``): the snapshots, schemas, partition spec and tags.

The records keep only what Paimon's Iceberg metadata uses (Java's ``IcebergMetadata``, ``IcebergSnapshot``,
``IcebergRef``): one partition spec, one (empty) sort order, tags as refs. Schemas and the spec stay the JSON
objects :mod:`.iceberg_schema` builds. Reading accepts metadata Java wrote (fields we do not model are
dropped, as Java's reader drops them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark_paimon.errors import CorruptMetadataError

__all__ = ["IcebergSnapshot", "TableMetadata", "COMMIT_IDENTITY", "MAX_REF_AGE_MS"]

#: Snapshot summary key holding the Paimon snapshot an Iceberg snapshot was made from (Java's
#: ``paimon-commit-identity``: the Paimon snapshot's uuid, else ``user:identifier:time``).
COMMIT_IDENTITY = "paimon-commit-identity"
#: Tags never expire on the Iceberg side: Paimon expires them (Java's ``IcebergRef``).
MAX_REF_AGE_MS = 2**63 - 1


@dataclass(frozen=True)
class IcebergSnapshot:
    snapshot_id: int
    sequence_number: int
    parent_id: int | None
    timestamp_ms: int
    summary: dict[str, str]
    manifest_list: str
    schema_id: int
    first_row_id: int | None = None
    added_rows: int | None = None

    @property
    def identity(self) -> str | None:
        return self.summary.get(COMMIT_IDENTITY)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sequence-number": self.sequence_number, "snapshot-id": self.snapshot_id}
        if self.parent_id is not None:
            out["parent-snapshot-id"] = self.parent_id
        out.update(
            {
                "timestamp-ms": self.timestamp_ms,
                "summary": self.summary,
                "manifest-list": self.manifest_list,
                "schema-id": self.schema_id,
            }
        )
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
            out["added-rows"] = self.added_rows
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "IcebergSnapshot":
        return cls(
            snapshot_id=int(d["snapshot-id"]),
            sequence_number=int(d.get("sequence-number", d["snapshot-id"])),
            parent_id=d.get("parent-snapshot-id"),
            timestamp_ms=int(d["timestamp-ms"]),
            summary={str(k): str(v) for k, v in (d.get("summary") or {}).items()},
            manifest_list=str(d["manifest-list"]),
            schema_id=int(d.get("schema-id", 0)),
            first_row_id=d.get("first-row-id"),
            added_rows=d.get("added-rows"),
        )


@dataclass(frozen=True)
class TableMetadata:
    format_version: int
    table_uuid: str
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[dict[str, Any], ...]
    current_schema_id: int
    partition_spec: dict[str, Any]
    last_partition_id: int
    snapshots: tuple[IcebergSnapshot, ...]
    current_snapshot_id: int
    refs: dict[str, int] = field(default_factory=dict)  # tag name -> snapshot id
    next_row_id: int | None = None
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def current(self) -> IcebergSnapshot | None:
        for s in self.snapshots:
            if s.snapshot_id == self.current_snapshot_id:
                return s
        return None

    def with_refs(self, refs: dict[str, int]) -> "TableMetadata":
        """The same metadata with ``refs`` limited to the snapshots it keeps (Iceberg readers refuse a ref to a
        snapshot the file does not hold)."""
        kept = {s.snapshot_id for s in self.snapshots}
        return replace(self, refs={name: sid for name, sid in sorted(refs.items()) if sid in kept})

    def to_json(self) -> str:
        d: dict[str, Any] = {
            "format-version": self.format_version,
            "table-uuid": self.table_uuid,
            "location": self.location,
            "last-sequence-number": self.last_sequence_number,
            "last-updated-ms": self.last_updated_ms,
            "last-column-id": self.last_column_id,
            "schemas": list(self.schemas),
            "current-schema-id": self.current_schema_id,
            "partition-specs": [self.partition_spec],
            "default-spec-id": self.partition_spec.get("spec-id", 0),
            "last-partition-id": self.last_partition_id,
            "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0,
            "snapshots": [s.to_json() for s in self.snapshots],
            "current-snapshot-id": self.current_snapshot_id,
        }
        if self.next_row_id is not None:
            d["next-row-id"] = self.next_row_id
        d["properties"] = self.properties
        d["refs"] = {
            name: {"snapshot-id": sid, "type": "tag", "max-ref-age-ms": MAX_REF_AGE_MS}
            for name, sid in self.refs.items()
        }
        return json.dumps(d, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes, source: str) -> "TableMetadata":
        try:
            d = json.loads(text)
            specs = d.get("partition-specs") or [{"spec-id": 0, "fields": []}]
            default_spec = d.get("default-spec-id", 0)
            spec = next((s for s in specs if s.get("spec-id") == default_spec), specs[0])
            refs = {
                str(name): int(r["snapshot-id"])
                for name, r in (d.get("refs") or {}).items()
                if r.get("type", "tag") == "tag"
            }
            return cls(
                format_version=int(d["format-version"]),
                table_uuid=str(d["table-uuid"]),
                location=str(d["location"]),
                last_sequence_number=int(d.get("last-sequence-number", 0)),
                last_updated_ms=int(d.get("last-updated-ms", 0)),
                last_column_id=int(d.get("last-column-id", 0)),
                schemas=tuple(d.get("schemas") or ()),
                current_schema_id=int(d.get("current-schema-id", 0)),
                partition_spec=spec,
                last_partition_id=int(d.get("last-partition-id", 999)),
                snapshots=tuple(IcebergSnapshot.from_json(s) for s in d.get("snapshots") or ()),
                current_snapshot_id=int(d.get("current-snapshot-id", -1)),
                refs=refs,
                next_row_id=d.get("next-row-id"),
                properties={str(k): str(v) for k, v in (d.get("properties") or {}).items()},
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptMetadataError(
                f"Iceberg metadata {source} cannot be read ({e!r}). Delete the Iceberg metadata directory; the next "
                "commit (or t.maintenance.sync_iceberg()) writes it again from the Paimon table."
            ) from e
