"""Keep a table's Iceberg metadata true: one Iceberg snapshot per Paimon snapshot of the main branch.

What Iceberg readers see follows Java's ``IcebergCommitCallback``:

* append tables: every data file;
* primary-key tables with deletion vectors published (``deletion-vectors.enabled`` and ``.bitmap64``,
  ``metadata.iceberg.format-version`` = 3): every file above level 0 and its deletion vector, which is what a
  Paimon read of such a table reads;
* other primary-key tables: only the files of the top level, i.e. the data as of the last full compaction.

**Incremental, as Java.** ``v<N>.metadata.json`` is built from ``v<N-1>`` and Paimon snapshot N's delta (its
delta manifest list): untouched manifests are reused, manifests holding a removed file are rewritten (their
partitions found through the manifest list's partition summaries), added files go to one new manifest, and
small manifests are merged once there are many (``metadata.iceberg.compaction.*``). Deletion-vector entries
are rebuilt when the index manifest changes, reusing the Puffin mirror (:mod:`.puffin`) of every unchanged
index file. So a commit costs a few small files, not a walk of the table. The base is used only if it was made
from Paimon snapshot N-1 as it is now (the ``paimon-commit-identity`` of its current snapshot); otherwise,
after a rollback, a fast-forward or a failed earlier step, the metadata is rebuilt from snapshot N's live
files (keeping the table uuid, so loaded readers keep refreshing it) and every file the rebuild does not use
is removed from the metadata directory, including versions above N that Iceberg's Hadoop tables would
otherwise take for newer ones.

**Which Iceberg snapshots are kept**: those whose Paimon snapshot still exists (ids from the main branch's
earliest on); tags become Iceberg tags when their snapshot is kept. Paimon expiration calls :func:`prune`
before it deletes anything, so every file an Iceberg snapshot references belongs to a Paimon snapshot that
still exists, and the reachability rule that protects Paimon's snapshots protects the Iceberg view too. A
dropped Iceberg snapshot takes the manifests, lists and Puffin files no later snapshot uses with it (snapshots
form one chain and files only ever move forward, so the next snapshot's list decides, as in Java).

**Failures.** The Paimon commit has landed before :func:`publish` runs; callers log its failure and report the
write as done. The version hint then still names the previous metadata, so Iceberg readers see the previous,
consistent version, and the next commit (or ``t.maintenance.sync_iceberg()``) rebuilds it.
"""

from __future__ import annotations

import logging
import math
import struct
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

from pyspark_paimon.errors import CorruptMetadataError, OptionError, PaimonError
from pyspark_paimon.metadata.iceberg.iceberg_manifests import (
    CONTENT_DATA,
    CONTENT_POSITION_DELETES,
    MANIFEST_DATA,
    MANIFEST_DELETES,
    STATUS_ADDED,
    STATUS_DELETED,
    STATUS_EXISTING,
    DataFile,
    Entry,
    ManifestMeta,
    ManifestWriter,
    has_field_ids,
    local_path,
    read_manifest,
    read_manifest_list,
    write_manifest_list,
)
from pyspark_paimon.metadata.iceberg.iceberg_schema import (
    NAME_MAPPING,
    PARTITION_FIELD_ID_START,
    check_schema,
    has_bounds,
    iceberg_schema,
    name_mapping,
    partition_avro_value,
    partition_spec,
    single_value,
)
from pyspark_paimon.metadata.iceberg.layout import IcebergLayout, iceberg_layout
from pyspark_paimon.metadata.iceberg.puffin import puffin_name, write_puffin_mirror
from pyspark_paimon.metadata.iceberg.table_metadata import COMMIT_IDENTITY, IcebergSnapshot, TableMetadata
from pyspark_paimon.metadata.manifests.deletion_vectors import DELETION_VECTORS_INDEX
from pyspark_paimon.metadata.manifests.index_manifest import IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, KIND_DELETE, DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot, now_millis
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import AtomicType

__all__ = [
    "TagSnapshots",
    "publish",
    "check_writable",
    "sync_head",
    "resync_quietly",
    "refresh_tags",
    "prune",
    "referenced_data_files",
    "identity",
]

log = logging.getLogger(__name__)

#: The tags of the main branch, name -> snapshot id (read by the caller, which owns the tag manager).
TagSnapshots = Callable[[], Mapping[str, int]]

_FORMATS = {"parquet": "PARQUET", "orc": "ORC", "avro": "AVRO"}
# What the stats of a file cannot be turned into (a type changed since, a value outside Iceberg's range).
_BOUND_ERRORS = (CorruptMetadataError, ValueError, OverflowError, struct.error, TypeError, AttributeError)


def identity(snapshot: Snapshot) -> str:
    """Java's commit identity of a Paimon snapshot: its uuid, else ``user:identifier:time``."""
    if snapshot.uuid:
        return snapshot.uuid
    return f"{snapshot.commit_user}:{snapshot.commit_identifier}:{snapshot.time_millis}"


def _read_metadata(layout: IcebergLayout, version: int) -> TableMetadata | None:
    path = layout.metadata_path(version)
    try:
        text = layout.fileio.read_bytes(path)
    except FileNotFoundError:
        return None
    return TableMetadata.from_json(text, layout.fileio.uri(path))


def _matches(metadata: TableMetadata | None, snapshot: Snapshot | None) -> bool:
    """Whether ``metadata``'s current snapshot was made from ``snapshot`` (metadata without an identity, as Java
    1.x wrote it, is taken to match)."""
    if metadata is None or snapshot is None or metadata.current_snapshot_id != snapshot.id:
        return False
    current = metadata.current
    return current is not None and current.identity in (None, identity(snapshot))


# ---------------------------------------------------------------------------------------------- one sync
@dataclass
class _Sync:
    """The state of one sync of one table (schemas, paths and the writers' files)."""

    store: FileStore
    schema: TableSchema  # the latest schema: partition spec, current Iceberg schema
    layout: IcebergLayout
    writer: ManifestWriter = field(init=False)
    _file_schemas: dict[int, TableSchema] = field(default_factory=dict)
    _bucket_dirs: dict[tuple[bytes, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.partition_fields = list(self.schema.partition_fields)
        self.partition_types = [f.type for f in self.partition_fields]
        self.writer = ManifestWriter(
            self.layout, self.partition_fields, iceberg_schema(self.schema), partition_spec(self.schema)
        )
        self.top_level = self.schema.core_options.num_levels - 1 if self.schema.primary_keys else 0

    # -- which files Iceberg sees -------------------------------------------------------------------
    def in_view(self, f: DataFileMeta) -> bool:
        if not self.schema.primary_keys:
            return True
        if self.layout.deletion_vectors:
            return f.level > 0
        return f.level == self.top_level

    def file_schema(self, schema_id: int) -> TableSchema:
        s = self._file_schemas.get(schema_id)
        if s is None:
            s = self._file_schemas[schema_id] = self.store.schemas.schema(schema_id)
        return s

    def partition_values(self, partition: bytes) -> tuple[Any, ...]:
        return deserialize_row(partition, self.partition_types) if self.partition_types else ()

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        d = self._bucket_dirs.get(key)
        if d is None:
            d = self._bucket_dirs[key] = self.store.bucket_path(self.schema, self.partition_values(partition), bucket)
        return d

    def data_uri(self, e: ManifestEntry) -> str:
        if e.file.external_path:
            return e.file.external_path
        return self.store.fileio.uri(f"{self.bucket_dir(e.partition, e.bucket)}/{e.file.file_name}")

    def avro_partition(self, partition: bytes) -> tuple[Any, ...]:
        values = self.partition_values(partition)
        return tuple(partition_avro_value(t, v) for t, v in zip(self.partition_types, values))  # type: ignore[arg-type]

    # -- data files ----------------------------------------------------------------------------------
    def data_file(self, e: ManifestEntry) -> DataFile:
        f = e.file
        nulls, lows, highs = self._stats(f)
        extension = f.file_name.rsplit(".", 1)[-1].lower()
        return DataFile(
            content=CONTENT_DATA,
            path=self.data_uri(e),
            file_format=_FORMATS.get(extension, extension.upper()),
            partition=self.avro_partition(e.partition),
            record_count=f.row_count,
            file_size=f.file_size,
            null_value_counts=nulls,
            lower_bounds=lows,
            upper_bounds=highs,
        )

    def _stats(self, f: DataFileMeta) -> tuple[dict[int, int], dict[int, bytes], dict[int, bytes]]:
        """Per-column null counts and bounds by field id, for columns whose type is still the current one
        (bounds of a column whose type changed would be read with the wrong width)."""
        nulls: dict[int, int] = {}
        lows: dict[int, bytes] = {}
        highs: dict[int, bytes] = {}
        try:
            file_schema = self.file_schema(f.schema_id)
        except PaimonError:
            return nulls, lows, highs
        by_name = {fld.name: fld for fld in file_schema.fields}
        names = [fld.name for fld in file_schema.fields] if f.value_stats_cols is None else list(f.value_stats_cols)
        if not names or not all(n in by_name for n in names):
            return nulls, lows, highs
        stats = f.value_stats
        counts = list(stats.null_counts or ())
        for i, name in enumerate(names):
            if i < len(counts) and counts[i] is not None:
                nulls[by_name[name].id] = int(counts[i])  # type: ignore[arg-type]
        current = {fld.id: fld for fld in self.schema.fields}
        types = [by_name[n].type if isinstance(by_name[n].type, AtomicType) else AtomicType("BIGINT") for n in names]
        try:
            mins = deserialize_row(stats.min_values, types)
            maxs = deserialize_row(stats.max_values, types)
        except _BOUND_ERRORS:
            return nulls, lows, highs
        for name, t, lo, hi in zip(names, types, mins, maxs):
            fld = by_name[name]
            cur = current.get(fld.id)
            if lo is None or hi is None or cur is None or cur.type != fld.type or not has_bounds(fld.type):
                continue
            if isinstance(lo, float) and (math.isnan(lo) or math.isnan(hi)):
                continue
            try:
                lows[fld.id], highs[fld.id] = single_value(t, lo), single_value(t, hi)  # type: ignore[arg-type]
            except _BOUND_ERRORS:
                continue
        return nulls, lows, highs

    # -- deletion vectors ----------------------------------------------------------------------------
    def index_entries(self, snapshot: Snapshot) -> list[IndexManifestEntry]:
        if not snapshot.index_manifest:
            return []
        entries = read_index_manifest(self.store.fileio, self.store.manifests.path(snapshot.index_manifest))
        return [e for e in entries if e.index_type == DELETION_VECTORS_INDEX and e.dv_ranges]

    def dv_entries(self, index: IndexManifestEntry, snapshot_id: int) -> list[Entry]:
        """Write the Puffin mirror of one index file; its delete entries. Like Java, every vector of the index
        is published: Paimon keeps vectors only of live files, and of primary-key tables only of files above
        level 0 (a level-0 file is compacted up before any vector points at it)."""
        bucket_dir = self.bucket_dir(index.partition, index.bucket)
        ranges = [(n, o, ln, c if c is not None else -1) for n, o, ln, c in index.dv_ranges or ()]
        uris = {n: self.store.fileio.uri(f"{bucket_dir}/{n}") for n, *_ in ranges}
        index_path = index.external_path or f"{self.store.table_path}/index/{index.file_name}"
        if any(c < 0 for *_, c in ranges):
            raise CorruptMetadataError(
                f"Deletion-vector index file {index_path} does not record how many rows its vectors delete, which "
                "Iceberg readers check. Compact the table fully (t.maintenance.compact(full=True)) to rewrite it."
            )
        path, size, blobs = write_puffin_mirror(self.layout, self.store.fileio, index_path, ranges, uris)
        self.writer.written.append(path)
        partition = self.avro_partition(index.partition)
        return [
            Entry(
                STATUS_ADDED,
                snapshot_id,
                snapshot_id,
                snapshot_id,
                DataFile(
                    content=CONTENT_POSITION_DELETES,
                    path=self.layout.fileio.uri(path),
                    file_format="PUFFIN",
                    partition=partition,
                    record_count=b.cardinality,
                    file_size=size,
                    referenced_data_file=b.data_file,
                    content_offset=b.offset,
                    content_size=b.length,
                ),
            )
            for b in blobs
        ]


def _totals(manifests: Iterable[ManifestMeta]) -> tuple[int, int]:
    ms = list(manifests)
    return sum(m.live_files for m in ms), sum(m.live_rows for m in ms)


def _summary(operation: str, snapshot: Snapshot, values: Mapping[str, int]) -> dict[str, str]:
    out = {"operation": operation}
    out.update({k: str(max(0, v)) for k, v in values.items()})
    for k, v in (snapshot.properties or {}).items():
        out[k] = str(v)
    out[COMMIT_IDENTITY] = identity(snapshot)
    return out


def _assign_row_ids(manifests: list[ManifestMeta], first: int | None) -> tuple[list[ManifestMeta], int]:
    """Format 3 row lineage (Java's ``assignManifestFirstRowIds``): data manifests without a ``first_row_id``
    get the next free ids; returns the manifests and how many ids were handed out."""
    if first is None:
        return manifests, 0
    watermark = first
    out = []
    for m in manifests:
        if m.content == MANIFEST_DATA and m.first_row_id is None:
            out.append(replace(m, first_row_id=watermark))
            watermark += m.added_rows + m.existing_rows
        else:
            out.append(m)
    return out, watermark - first


def _materialize_row_ids(meta: ManifestMeta, entries: list[Entry]) -> list[Entry]:
    """Entries copied out of a manifest that had a ``first_row_id`` keep the ids they inherited from it."""
    if meta.content != MANIFEST_DATA or meta.first_row_id is None:
        return entries
    watermark = meta.first_row_id
    out = []
    for e in entries:
        if e.status != STATUS_DELETED and e.file.first_row_id is None:
            out.append(replace(e, file=replace(e.file, first_row_id=watermark)))
            watermark += e.file.record_count
        else:
            out.append(e)
    return out


# ---------------------------------------------------------------------------------------------- publish
def check_writable(store: FileStore, schema: TableSchema) -> None:
    """Refuse, before a commit, a table whose Iceberg metadata could not be written or would show other rows
    than Paimon: a metadata location that cannot be, a type Iceberg lacks, or an append table with deletion
    vectors that are not published (Iceberg readers would see the deleted rows; Java publishes them anyway)."""
    layout = iceberg_layout(store, schema)
    if layout is None:
        return
    check_schema(schema)
    if not schema.primary_keys and schema.core_options.deletion_vectors_enabled and not layout.deletion_vectors:
        raise OptionError(
            f"Table {store.fileio.uri(store.table_path)} is an append table with 'deletion-vectors.enabled', and "
            "its Iceberg metadata would list every data file without the vectors, so Iceberg readers would see "
            "deleted rows. Set 'metadata.iceberg.format-version' = '3' and 'deletion-vectors.bitmap64' = 'true' "
            "(the vectors are then published), or 'metadata.iceberg.storage' = 'disabled'."
        )


def publish(store: FileStore, snapshot: Snapshot, schema: TableSchema, tags: TagSnapshots) -> int | None:
    """Write the Iceberg metadata of Paimon ``snapshot`` of ``store`` (a no-op unless the table keeps Iceberg
    metadata and ``store`` is its main branch). Returns the metadata version written (None: nothing to do)."""
    layout = iceberg_layout(store, schema)
    if layout is None:
        return None
    return _publish(_Sync(store, schema, layout), snapshot, tags, force_rebuild=False)


def _publish(sync: _Sync, snapshot: Snapshot, tags: TagSnapshots, force_rebuild: bool) -> int:
    layout, store = sync.layout, sync.store
    n = snapshot.id
    existing = _read_quietly(layout, n) if not force_rebuild else None
    if _matches(existing, snapshot) and existing is not None and existing.format_version == layout.format_version:
        if store.snapshots.latest_id() == n and layout.read_hint() != n:
            layout.write_hint(n)  # an earlier attempt wrote the file but did not move the hint
        return n
    base: TableMetadata | None = None
    previous: Snapshot | None = None
    if n > 1 and not force_rebuild:
        base = _read_quietly(layout, n - 1)
        try:
            previous = store.snapshots.snapshot(n - 1)
        except PaimonError:
            previous = None
        if not _matches(base, previous) or base is None or base.format_version != layout.format_version:
            base = None
        elif base.current is None or not has_field_ids(layout, base.current.manifest_list):
            base = None  # Paimon 0.9's metadata: unreadable by Iceberg readers, so not worth extending
    dropped: list[IcebergSnapshot] = []
    if base is not None and previous is not None:
        metadata, dropped = _incremental(sync, snapshot, previous, base, tags)
    else:
        abandoned = existing or _read_quietly(layout, layout.read_hint() or 0)
        metadata = _rebuild(sync, snapshot, tags, abandoned.table_uuid if abandoned else None)
    layout.fileio.write_bytes(layout.metadata_path(n), metadata.to_json().encode())
    if store.snapshots.latest_id() == n:
        layout.write_hint(n)
    # Only now that the new version is in place: files the previous version still used may go.
    if base is None:
        _remove_unused(sync, metadata)
        return n
    if dropped:
        _drop_snapshots(layout, dropped, metadata.snapshots[0])
    if layout.delete_after_commit:
        old = n - 1 - layout.previous_versions_max
        while old >= 1 and layout.fileio.delete(layout.metadata_path(old)):
            old -= 1
    return n


def _read_quietly(layout: IcebergLayout, version: int) -> TableMetadata | None:
    """A version to build on or to take the table uuid from; an unreadable one is as good as none (a rebuild
    replaces it)."""
    try:
        return _read_metadata(layout, version)
    except CorruptMetadataError as e:
        log.warning("%s; rebuilding the Iceberg metadata", e)
        return None


def _incremental(
    sync: _Sync, snapshot: Snapshot, previous: Snapshot, base: TableMetadata, tags: TagSnapshots
) -> tuple[TableMetadata, list[IcebergSnapshot]]:
    """Metadata of ``snapshot`` from ``base`` (the metadata of ``previous``, its parent) and the snapshot's delta;
    also the base snapshots it no longer keeps (their files go once the new version is written)."""
    layout, store, n = sync.layout, sync.store, snapshot.id
    base_current = base.current
    assert base_current is not None
    base_manifests = read_manifest_list(layout, base_current.manifest_list)
    data = [m for m in base_manifests if m.content == MANIFEST_DATA]
    deletes = [m for m in base_manifests if m.content == MANIFEST_DELETES]

    delta = store.manifests.read_entries(store.manifests.read_list(snapshot.delta_manifest_list))
    added: dict[str, ManifestEntry] = {}
    removed: dict[str, ManifestEntry] = {}
    for e in delta:
        if not sync.in_view(e.file):
            continue
        uri = sync.data_uri(e)
        if e.kind == KIND_ADD:
            if removed.pop(uri, None) is None:
                added[uri] = e
        elif e.kind == KIND_DELETE and added.pop(uri, None) is None:
            removed[uri] = e

    new_data: list[ManifestMeta] = []
    changed = False
    if removed:
        wanted = {e.partition for e in removed.values()}
        for m in data:
            if not _may_hold(sync, m, wanted):
                new_data.append(m)
                continue
            entries = read_manifest(layout, m, sync.partition_fields)
            live = [e for e in entries if e.live]
            for listed in live:
                added.pop(listed.file.path, None)  # already listed (Java's guard against a duplicate)
            if not any(e.file.path in removed for e in live):
                new_data.append(m)
                continue
            changed = True
            rewritten = [
                replace(e, status=STATUS_DELETED, snapshot_id=n)
                if e.file.path in removed
                else replace(e, status=STATUS_EXISTING)
                for e in _materialize_row_ids(m, live)
            ]
            new_data.append(sync.writer.write(rewritten, n, n, MANIFEST_DATA))
    else:
        new_data = list(data)
    fresh = [Entry(STATUS_ADDED, n, n, n, sync.data_file(e)) for e in added.values()]
    new_data = _compact(sync, new_data, fresh, n)
    changed = changed or bool(fresh)

    new_deletes = deletes
    if layout.deletion_vectors and snapshot.index_manifest != previous.index_manifest:
        new_deletes = _rebuild_deletes(sync, snapshot, previous, deletes)
        changed = True

    first_row_id = (base.next_row_id or 0) if layout.format_version >= 3 else None
    manifests, assigned = _assign_row_ids(new_data + new_deletes, first_row_id)
    if changed or manifests != base_manifests:
        manifest_list = write_manifest_list(layout, manifests, n, n - 1)
    else:
        manifest_list = base_current.manifest_list  # nothing Iceberg sees changed: share the list
    files, rows = _totals(m for m in manifests if m.content == MANIFEST_DATA)
    dv_files, dv_rows = _totals(m for m in manifests if m.content == MANIFEST_DELETES)
    values = {
        "added-data-files": len(fresh),
        "added-records": sum(e.file.record_count for e in fresh),
        "added-files-size": sum(e.file.file_size for e in fresh),
        "deleted-data-files": len(removed),
        "deleted-records": sum(e.file.row_count for e in removed.values()),
        "removed-files-size": sum(e.file.file_size for e in removed.values()),
        "total-records": rows,
        "total-data-files": files,
        "total-delete-files": dv_files,
        "total-position-deletes": dv_rows,
        "total-equality-deletes": 0,
    }
    operation = "append" if not removed else ("replace" if snapshot.commit_kind == "COMPACT" else "overwrite")
    new = IcebergSnapshot(
        snapshot_id=n,
        sequence_number=n,
        parent_id=n - 1,
        timestamp_ms=snapshot.time_millis,
        summary=_summary(operation, snapshot, values),
        manifest_list=manifest_list,
        schema_id=snapshot.schema_id,
        first_row_id=first_row_id,
        added_rows=assigned if first_row_id is not None else None,
    )
    earliest = store.snapshots.earliest_id() or n
    kept = [s for s in base.snapshots if earliest <= s.snapshot_id < n]
    dropped = [s for s in base.snapshots if s.snapshot_id < earliest]
    schemas = list(base.schemas)
    known = {s.get("schema-id") for s in schemas}
    for sid in sorted({snapshot.schema_id, sync.schema.id} - known):
        schemas.append(iceberg_schema(sync.file_schema(sid)))
    metadata = TableMetadata(
        format_version=base.format_version,
        table_uuid=base.table_uuid,
        location=base.location,
        last_sequence_number=n,
        last_updated_ms=now_millis(),
        last_column_id=max(base.last_column_id, sync.schema.highest_field_id),
        schemas=tuple(schemas),
        current_schema_id=sync.schema.id,
        partition_spec=base.partition_spec,
        last_partition_id=base.last_partition_id,
        snapshots=(*kept, new),
        current_snapshot_id=n,
        next_row_id=(first_row_id + assigned) if first_row_id is not None else None,
        properties={**base.properties, NAME_MAPPING: name_mapping(schemas)},
    ).with_refs(dict(tags()))
    return metadata, dropped


_STRING_ORDERED = ("CHAR", "VARCHAR", "BINARY", "VARBINARY")
_INT_ORDERED = {"TINYINT": "<i", "SMALLINT": "<i", "INT": "<i", "DATE": "<i", "BIGINT": "<q"}


def _order_key(t: AtomicType, encoded: bytes) -> Any:
    """A value comparable in the type's order, from Iceberg's single-value bytes (None: not compared)."""
    if t.name in _STRING_ORDERED:
        return encoded  # UTF-8 and binary compare as unsigned bytes
    fmt = _INT_ORDERED.get(t.name)
    if fmt is not None and len(encoded) == struct.calcsize(fmt):
        return struct.unpack(fmt, encoded)[0]
    return None


def _may_hold(sync: _Sync, m: ManifestMeta, partitions: set[bytes]) -> bool:
    """Whether manifest ``m`` may list files of one of ``partitions`` (its partition summaries say so)."""
    if not sync.partition_fields or len(m.partitions) != len(sync.partition_fields):
        return True
    for raw in partitions:
        values = sync.partition_values(raw)
        ok = True
        for fld, v, s in zip(sync.partition_fields, values, m.partitions):
            if v is None:
                ok = bool(s.get("contains_null"))
            elif isinstance(fld.type, AtomicType) and s.get("lower_bound") is not None:
                t = fld.type
                value = _order_key(t, single_value(t, v))
                lo, hi = _order_key(t, s["lower_bound"]), _order_key(t, s["upper_bound"] or b"")
                if value is not None and lo is not None and hi is not None:
                    ok = lo <= value <= hi
            if not ok:
                break
        if ok:
            return True
    return False


def _compact(sync: _Sync, manifests: list[ManifestMeta], fresh: list[Entry], n: int) -> list[ManifestMeta]:
    """Add ``fresh`` entries, merging small data manifests as Java does: once ``compaction.min.file-num`` are
    smaller than 2/3 of ``manifest.target-file-size`` and either ``compaction.max.file-num`` are, or they add up
    to the target size. Entries of older snapshots become EXISTING, older deletions are dropped."""
    layout = sync.layout
    target = layout.target_size
    small = [m for m in manifests if m.length < target * 2 // 3]
    big = [m for m in manifests if m.length >= target * 2 // 3]
    due = len(small) + (1 if fresh else 0) >= layout.compact_min and (
        len(small) + (1 if fresh else 0) >= layout.compact_max or sum(m.length for m in small) >= target
    )
    if not due:
        return manifests + ([sync.writer.write(fresh, n, n, MANIFEST_DATA)] if fresh else [])
    merged: list[Entry] = []
    for m in small:
        ours = m.added_snapshot_id == n and local_path(layout, m.path) in sync.writer.written
        for e in _materialize_row_ids(m, read_manifest(layout, m, sync.partition_fields)):
            if ours:
                merged.append(e)  # written by this very sync: its entries keep their status
            elif e.status != STATUS_DELETED:
                merged.append(replace(e, status=STATUS_EXISTING))
        if ours:
            layout.fileio.delete(local_path(layout, m.path))  # no snapshot lists it
    merged.extend(fresh)
    return big + ([sync.writer.write(merged, n, n, MANIFEST_DATA)] if merged else [])


def _rebuild_deletes(
    sync: _Sync, snapshot: Snapshot, previous: Snapshot | None, deletes: list[ManifestMeta]
) -> list[ManifestMeta]:
    """The delete manifest of ``snapshot``: entries of index files it still has are kept (their mirrors
    reused), index files new since ``previous`` are mirrored."""
    layout, n = sync.layout, snapshot.id
    index = sync.index_entries(snapshot)
    if not index:
        return []
    by_puffin = {puffin_name(e.file_name): e.file_name for e in index}
    old_index = {e.file_name for e in sync.index_entries(previous)} if previous is not None else set()
    kept: list[Entry] = []
    mirrored: set[str] = set()
    for m in deletes:
        for e in read_manifest(layout, m, sync.partition_fields):
            index_name = by_puffin.get(e.file.path.rsplit("/", 1)[-1])
            if e.live and index_name is not None and index_name in old_index:
                kept.append(replace(e, status=STATUS_EXISTING))
                mirrored.add(index_name)
    for entry in index:
        if entry.file_name not in mirrored:
            kept.extend(sync.dv_entries(entry, n))
    return [sync.writer.write(kept, n, n, MANIFEST_DELETES)] if kept else []


def _rebuild(sync: _Sync, snapshot: Snapshot, tags: TagSnapshots, table_uuid: str | None) -> TableMetadata:
    """Metadata of ``snapshot`` alone, from its live files (Java's ``createMetadataWithoutBase``)."""
    layout, store, n = sync.layout, sync.store, snapshot.id
    fresh = [
        Entry(STATUS_ADDED, n, n, n, sync.data_file(e)) for e in store.live_entries(snapshot) if sync.in_view(e.file)
    ]
    manifests = [sync.writer.write(fresh, n, n, MANIFEST_DATA)] if fresh else []
    if layout.deletion_vectors:
        manifests += _rebuild_deletes(sync, snapshot, None, [])
    first = 0 if layout.format_version >= 3 else None
    manifests, assigned = _assign_row_ids(manifests, first)
    manifest_list = write_manifest_list(layout, manifests, n, None)
    files, rows = _totals(m for m in manifests if m.content == MANIFEST_DATA)
    dv_files, dv_rows = _totals(m for m in manifests if m.content == MANIFEST_DELETES)
    values = {
        "added-data-files": files,
        "added-records": rows,
        "added-files-size": sum(e.file.file_size for e in fresh),
        "changed-partition-count": len({e.file.partition for e in fresh}),
        "total-records": rows,
        "total-data-files": files,
        "total-files-size": sum(e.file.file_size for e in fresh),
        "total-delete-files": dv_files,
        "total-position-deletes": dv_rows,
        "total-equality-deletes": 0,
    }
    new = IcebergSnapshot(
        snapshot_id=n,
        sequence_number=n,
        parent_id=None,
        timestamp_ms=snapshot.time_millis,
        summary=_summary("append", snapshot, values),
        manifest_list=manifest_list,
        schema_id=snapshot.schema_id,
        first_row_id=first,
        added_rows=assigned if first is not None else None,
    )
    ids = sorted({snapshot.schema_id, sync.schema.id})
    schemas = tuple(iceberg_schema(sync.file_schema(i)) for i in ids)
    spec = partition_spec(sync.schema)
    return TableMetadata(
        format_version=layout.format_version,
        table_uuid=table_uuid or str(uuid.uuid4()),
        location=layout.table_location,
        last_sequence_number=n,
        last_updated_ms=now_millis(),
        last_column_id=max(sync.file_schema(i).highest_field_id for i in ids),
        schemas=schemas,
        current_schema_id=sync.schema.id,
        partition_spec=spec,
        last_partition_id=PARTITION_FIELD_ID_START + len(spec["fields"]) - 1,
        snapshots=(new,),
        current_snapshot_id=n,
        next_row_id=(first + assigned) if first is not None else None,
        properties={NAME_MAPPING: name_mapping(schemas)},
    ).with_refs(dict(tags()))


# ---------------------------------------------------------------------------------------------- cleanup
def _in_dir(layout: IcebergLayout, path: str) -> str | None:
    """The FileIO path of ``path`` when it lies in the metadata directory (only those files are ours to delete:
    Java's metadata may point at Paimon's own index files)."""
    local = local_path(layout, path)
    return local if local.startswith(layout.metadata_dir + "/") else None


def _delete(layout: IcebergLayout, path: str) -> None:
    local = _in_dir(layout, path)
    if local is not None:
        layout.fileio.delete(local)


def _drop_snapshots(layout: IcebergLayout, dropped: list[IcebergSnapshot], following: IcebergSnapshot) -> None:
    """Delete what only ``dropped`` (the oldest snapshots, in order) used: each one's list, and the manifests
    and Puffin files of its list that the next snapshot's list no longer has."""
    chain = [*dropped, following]
    lists: dict[str, list[ManifestMeta]] = {}

    def manifests_of(s: IcebergSnapshot) -> list[ManifestMeta]:
        if s.manifest_list not in lists:
            try:
                lists[s.manifest_list] = read_manifest_list(layout, s.manifest_list)
            except FileNotFoundError:
                lists[s.manifest_list] = []
        return lists[s.manifest_list]

    for old, nxt in zip(chain, chain[1:]):
        if old.manifest_list == nxt.manifest_list:
            continue
        keep = {m.path for m in manifests_of(nxt)}
        gone = [m for m in manifests_of(old) if m.path not in keep]
        if any(m.content == MANIFEST_DELETES for m in gone):
            still = _puffins(layout, [m for m in manifests_of(nxt) if m.content == MANIFEST_DELETES])
            for path in _puffins(layout, [m for m in gone if m.content == MANIFEST_DELETES]) - still:
                _delete(layout, path)
        for m in gone:
            _delete(layout, m.path)
        _delete(layout, old.manifest_list)


def _puffins(layout: IcebergLayout, manifests: list[ManifestMeta]) -> set[str]:
    out: set[str] = set()
    for m in manifests:
        try:
            out.update(e.file.path for e in read_manifest(layout, m, ()) if e.file.path.endswith(".puffin"))
        except FileNotFoundError:
            continue
    return out


def _referenced(layout: IcebergLayout, metadata: TableMetadata, partition_fields: Any) -> set[str]:
    """Every file of the metadata directory ``metadata`` uses (lists, manifests, Puffin files)."""
    out: set[str] = set()
    for s in metadata.snapshots:
        out.add(local_path(layout, s.manifest_list))
        for m in read_manifest_list(layout, s.manifest_list):
            out.add(local_path(layout, m.path))
            if m.content == MANIFEST_DELETES:
                out.update(local_path(layout, e.file.path) for e in read_manifest(layout, m, partition_fields))
    return out


def _remove_unused(sync: _Sync, metadata: TableMetadata) -> None:
    """After a rebuild: delete every file of the metadata directory the new metadata does not use (older and
    abandoned versions, their lists, manifests and mirrors)."""
    layout = sync.layout
    keep = _referenced(layout, metadata, sync.partition_fields)
    keep.add(layout.metadata_path(metadata.current_snapshot_id))
    keep.add(layout.hint_path)
    for status in layout.fileio.list_status(layout.metadata_dir):
        if not status.is_dir and status.path not in keep and not _is_foreign(status.name):
            layout.fileio.delete(status.path)


def _is_foreign(name: str) -> bool:
    """Files that are not Paimon's Iceberg metadata (kept: someone else put them there)."""
    return not (
        name.endswith((".metadata.json", ".avro", ".puffin")) or (name.startswith(".") and name.endswith(".tmp"))
    )


# ---------------------------------------------------------------------------------------------- entry points
def sync_head(store: FileStore, tags: TagSnapshots) -> int | None:
    """Make the Iceberg metadata show the main branch's latest snapshot after history was rewritten (rollback,
    fast-forward, replace of main) or a failed sync: rebuilt when its base is not that snapshot's, and versions
    above it removed."""
    main = store.with_branch("main")
    schema = main.schemas.latest()
    if schema is None:
        return None
    layout = iceberg_layout(main, schema)
    if layout is None:
        return None
    latest = main.snapshots.latest()
    if latest is None:
        return None
    stale_above = any(v > latest.id for v in layout.versions())
    return _publish(_Sync(main, schema, layout), latest, tags, force_rebuild=stale_above)


def resync_quietly(store: FileStore, tags: TagSnapshots) -> None:
    """:func:`sync_head` and :func:`refresh_tags` after an operation that rewrote the main branch's history
    (rollback, fast-forward, replace of main) and has already succeeded: a failure is logged, and the next
    commit (or ``t.maintenance.sync_iceberg()``) repairs the metadata."""
    try:
        sync_head(store, tags)
        refresh_tags(store.with_branch("main"), tags)
    except Exception as e:  # noqa: BLE001 - see the docstring
        log.warning(
            "Updating the Iceberg metadata of %s failed: %s. Iceberg readers may see the previous version until "
            "the next commit; t.maintenance.sync_iceberg() writes it now.",
            store.table_path,
            e,
        )


def _current(store: FileStore) -> tuple[IcebergLayout, TableMetadata, int] | None:
    main = store.with_branch("main")
    schema = main.schemas.latest()
    layout = iceberg_layout(main, schema) if schema is not None else None
    if layout is None:
        return None
    version = layout.read_hint()
    metadata = _read_metadata(layout, version) if version else None
    if version is None or metadata is None:
        return None
    return layout, metadata, version


def refresh_tags(store: FileStore, tags: TagSnapshots) -> None:
    """Rewrite the current metadata's tags (a tag of the main branch was created, moved, renamed or deleted).
    Like Java, the current version is replaced in place (atomically where the store allows)."""
    if store.branch != "main":
        return
    found = _current(store)
    if found is None:
        return
    layout, metadata, version = found
    updated = metadata.with_refs(dict(tags()))
    if updated.refs != metadata.refs:
        layout.fileio.write_bytes(layout.metadata_path(version), updated.to_json().encode())


def prune(store: FileStore, expired: Iterable[int]) -> None:
    """Drop the Iceberg snapshots of Paimon snapshots about to expire, and the files only they used. Called by
    expiration before it deletes anything, so no Iceberg snapshot outlives the data its Paimon snapshot kept."""
    if store.branch != "main":
        return
    found = _current(store)
    if found is None:
        return
    layout, metadata, version = found
    gone = set(expired)
    dropped = [s for s in metadata.snapshots if s.snapshot_id in gone and s.snapshot_id != metadata.current_snapshot_id]
    if not dropped:
        return
    kept = tuple(s for s in metadata.snapshots if s not in dropped)
    updated = replace(metadata, snapshots=kept).with_refs(metadata.refs)
    layout.fileio.write_bytes(layout.metadata_path(version), updated.to_json().encode())
    first_kept = min(kept, key=lambda s: s.snapshot_id)
    _drop_snapshots(layout, sorted(dropped, key=lambda s: s.snapshot_id), first_kept)


def referenced_data_files(store: FileStore) -> set[str]:
    """Base names of the data files the current Iceberg metadata references in any snapshot it keeps (what
    orphan removal must never delete, whatever the Paimon side says)."""
    found = _current(store)
    if found is None:
        return set()
    layout, metadata, _ = found
    schema = store.with_branch("main").schema()
    fields = list(schema.partition_fields)
    out: set[str] = set()
    seen: set[str] = set()
    for s in metadata.snapshots:
        for m in read_manifest_list(layout, s.manifest_list):
            if m.content != MANIFEST_DATA or m.path in seen:
                continue
            seen.add(m.path)
            out.update(e.file.path.rsplit("/", 1)[-1] for e in read_manifest(layout, m, fields))
    return out
