"""Manifest lists and manifest files (Java's `ManifestFile`, `ManifestList`).

A snapshot names two manifest lists: the *base* (every file live before the commit) and the *delta* (what
the commit changed). Each list names manifest files; each manifest file holds ADD/DELETE entries of data
files. Folding all entries in order gives the snapshot's live files (:func:`merge_entries`).

Avro schemas follow Java's field names, types, nullability and order; record names follow Java's
``org.apache.paimon.avro.generated.record`` convention. Readers resolve fields by name, so files written by
pypaimon (other record names, extra fields) read the same.
"""

from __future__ import annotations

import datetime as _dt
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Sequence

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.io.avro import AVRO_CODECS, read_avro, write_avro
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.entry_index import ManifestIndex, build_index

KIND_ADD = 0
KIND_DELETE = 1
FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1
MANIFEST_FORMAT_VERSION = 2
EMPTY_ROW = b"\x00\x00\x00\x00" + b"\x00" * 8  # serialized BinaryRow of arity 0


@dataclass(frozen=True)
class SimpleStats:
    """Min/max BinaryRows (one field per covered column) and null counts."""

    min_values: bytes = EMPTY_ROW
    max_values: bytes = EMPTY_ROW
    null_counts: tuple[int | None, ...] | None = ()

    @classmethod
    def empty(cls) -> "SimpleStats":
        return cls(EMPTY_ROW, EMPTY_ROW, ())


@dataclass(frozen=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes = EMPTY_ROW
    max_key: bytes = EMPTY_ROW
    key_stats: SimpleStats = field(default_factory=SimpleStats.empty)
    value_stats: SimpleStats = field(default_factory=SimpleStats.empty)
    min_sequence_number: int = 0
    max_sequence_number: int = 0
    schema_id: int = 0
    level: int = 0
    extra_files: tuple[str, ...] = ()
    creation_time_millis: int | None = None
    delete_row_count: int | None = 0
    embedded_index: bytes | None = None
    file_source: int | None = FILE_SOURCE_APPEND
    value_stats_cols: tuple[str, ...] | None = ()
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None

    def with_level(self, level: int) -> "DataFileMeta":
        return replace(self, level=level)


@dataclass(frozen=True)
class ManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index, f.external_path)


@dataclass(frozen=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


# --------------------------------------------------------------------------------------- Avro schemas
_NS = "org.apache.paimon.avro.generated"


def _opt(t: Any) -> list:
    return ["null", t]


def _stats_schema(name: str) -> dict:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {"name": "_NULL_COUNTS", "type": _opt({"type": "array", "items": _opt("long")}), "default": None},
        ],
    }


def _nullable(name: str, t: Any) -> dict:
    return {"name": name, "type": _opt(t), "default": None}


DATA_FILE_FIELDS = [
    {"name": "_FILE_NAME", "type": "string"},
    {"name": "_FILE_SIZE", "type": "long"},
    {"name": "_ROW_COUNT", "type": "long"},
    {"name": "_MIN_KEY", "type": "bytes"},
    {"name": "_MAX_KEY", "type": "bytes"},
    {"name": "_KEY_STATS", "type": _stats_schema("record__FILE__KEY_STATS")},
    {"name": "_VALUE_STATS", "type": _stats_schema("record__FILE__VALUE_STATS")},
    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
    {"name": "_SCHEMA_ID", "type": "long"},
    {"name": "_LEVEL", "type": "int"},
    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
    _nullable("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
    _nullable("_DELETE_ROW_COUNT", "long"),
    _nullable("_EMBEDDED_FILE_INDEX", "bytes"),
    _nullable("_FILE_SOURCE", "int"),
    _nullable("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
    _nullable("_EXTERNAL_PATH", "string"),
    _nullable("_FIRST_ROW_ID", "long"),
    _nullable("_WRITE_COLS", {"type": "array", "items": "string"}),
]

MANIFEST_ENTRY_SCHEMA = {
    "type": "record",
    "name": "record",
    "namespace": _NS,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "record__FILE", "fields": DATA_FILE_FIELDS}},
    ],
}

MANIFEST_FILE_META_SCHEMA = {
    "type": "record",
    "name": "record",
    "namespace": _NS,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _nullable("_MIN_BUCKET", "int"),
        _nullable("_MAX_BUCKET", "int"),
        _nullable("_MIN_LEVEL", "int"),
        _nullable("_MAX_LEVEL", "int"),
        _nullable("_MIN_ROW_ID", "long"),
        _nullable("_MAX_ROW_ID", "long"),
    ],
}


# --------------------------------------------------------------------------------------- conversion
def _millis(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(round(value.timestamp() * 1000))
    return int(value)


def _stats_to_avro(s: SimpleStats) -> dict:
    return {
        "_MIN_VALUES": s.min_values,
        "_MAX_VALUES": s.max_values,
        "_NULL_COUNTS": None if s.null_counts is None else list(s.null_counts),
    }


def _stats_from_avro(d: dict | None) -> SimpleStats:
    if d is None:
        return SimpleStats.empty()
    nc = d.get("_NULL_COUNTS")
    return SimpleStats(bytes(d["_MIN_VALUES"]), bytes(d["_MAX_VALUES"]), None if nc is None else tuple(nc))


def _tuple_or_none(v: Any) -> tuple | None:
    return None if v is None else tuple(v)


def file_to_avro(f: DataFileMeta) -> dict:
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to_avro(f.key_stats),
        "_VALUE_STATS": _stats_to_avro(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time_millis,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_index,
        "_FILE_SOURCE": f.file_source,
        "_VALUE_STATS_COLS": None if f.value_stats_cols is None else list(f.value_stats_cols),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": None if f.write_cols is None else list(f.write_cols),
    }


def file_from_avro(d: dict) -> DataFileMeta:
    return DataFileMeta(
        file_name=d["_FILE_NAME"],
        file_size=d["_FILE_SIZE"],
        row_count=d["_ROW_COUNT"],
        min_key=bytes(d["_MIN_KEY"]),
        max_key=bytes(d["_MAX_KEY"]),
        key_stats=_stats_from_avro(d.get("_KEY_STATS")),
        value_stats=_stats_from_avro(d.get("_VALUE_STATS")),
        min_sequence_number=d["_MIN_SEQUENCE_NUMBER"],
        max_sequence_number=d["_MAX_SEQUENCE_NUMBER"],
        schema_id=d["_SCHEMA_ID"],
        level=d["_LEVEL"],
        extra_files=tuple(d.get("_EXTRA_FILES") or ()),
        creation_time_millis=_millis(d.get("_CREATION_TIME")),
        delete_row_count=d.get("_DELETE_ROW_COUNT"),
        embedded_index=d.get("_EMBEDDED_FILE_INDEX"),
        file_source=d.get("_FILE_SOURCE"),
        value_stats_cols=_tuple_or_none(d.get("_VALUE_STATS_COLS")),
        external_path=d.get("_EXTERNAL_PATH"),
        first_row_id=d.get("_FIRST_ROW_ID"),
        write_cols=_tuple_or_none(d.get("_WRITE_COLS")),
    )


def entry_to_avro(e: ManifestEntry) -> dict:
    return {
        "_VERSION": MANIFEST_FORMAT_VERSION,
        "_KIND": e.kind,
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_TOTAL_BUCKETS": e.total_buckets,
        "_FILE": file_to_avro(e.file),
    }


def entry_from_avro(d: dict, source: str) -> ManifestEntry:
    if d.get("_VERSION") != MANIFEST_FORMAT_VERSION:
        raise CorruptMetadataError(
            f"Manifest {source} has format version {d.get('_VERSION')}; only version 2 is supported."
        )
    return ManifestEntry(
        d["_KIND"], bytes(d["_PARTITION"]), d["_BUCKET"], d["_TOTAL_BUCKETS"], file_from_avro(d["_FILE"])
    )


def meta_to_avro(m: ManifestFileMeta) -> dict:
    return {
        "_VERSION": MANIFEST_FORMAT_VERSION,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": m.num_added_files,
        "_NUM_DELETED_FILES": m.num_deleted_files,
        "_PARTITION_STATS": _stats_to_avro(m.partition_stats),
        "_SCHEMA_ID": m.schema_id,
        "_MIN_BUCKET": m.min_bucket,
        "_MAX_BUCKET": m.max_bucket,
        "_MIN_LEVEL": m.min_level,
        "_MAX_LEVEL": m.max_level,
        "_MIN_ROW_ID": m.min_row_id,
        "_MAX_ROW_ID": m.max_row_id,
    }


def meta_from_avro(d: dict, source: str) -> ManifestFileMeta:
    if d.get("_VERSION") != MANIFEST_FORMAT_VERSION:
        raise CorruptMetadataError(
            f"Manifest list {source} has format version {d.get('_VERSION')}; only version 2 is supported."
        )
    return ManifestFileMeta(
        d["_FILE_NAME"],
        d["_FILE_SIZE"],
        d["_NUM_ADDED_FILES"],
        d["_NUM_DELETED_FILES"],
        _stats_from_avro(d["_PARTITION_STATS"]),
        d["_SCHEMA_ID"],
        d.get("_MIN_BUCKET"),
        d.get("_MAX_BUCKET"),
        d.get("_MIN_LEVEL"),
        d.get("_MAX_LEVEL"),
        d.get("_MIN_ROW_ID"),
        d.get("_MAX_ROW_ID"),
    )


# --------------------------------------------------------------------------------------- selective reads
#: Decides from an entry's serialized partition whether a selective read (:meth:`ManifestStore.select_entries`)
#: needs the entry; the data files of the others are never decoded. Only the partition: it is part of a data
#: file's identity, so an ADD and the DELETE that cancels it always get the same answer (the bucket is too, but
#: bucket pruning also needs the total bucket count, which Java does not promise to repeat in a DELETE).
PartitionTest = Callable[[bytes], bool]


@dataclass
class SkippedFiles:
    """What a selective read skipped without decoding, per ``(partition, bucket)``: the number and bytes of ADD
    entries minus those of DELETE entries. A DELETE names the same file (and size) as the ADD it cancels, so
    over a consistent set of manifests these are the live files a full read would have found there."""

    net: dict[tuple[bytes, int], list[int]] = field(default_factory=dict)

    def add(self, partition: bytes, bucket: int, kind: int, size: int) -> None:
        tally = self.net.get((partition, bucket))
        if tally is None:
            tally = self.net[(partition, bucket)] = [0, 0]
        if kind == KIND_ADD:
            tally[0] += 1
            tally[1] += size
        else:
            tally[0] -= 1
            tally[1] -= size

    def live(self) -> Iterator[tuple[bytes, int, int, int]]:
        """``(partition, bucket, files, bytes)`` of each bucket that still holds live files (a DELETE whose ADD
        sits in a manifest the read did not open can leave a bucket at zero or below)."""
        for (partition, bucket), (files, size) in self.net.items():
            if files > 0:
                yield partition, bucket, files, size


class _IndexedManifest:
    """A manifest in the cache as a :class:`ManifestIndex` plus the entries decoded so far (by position).

    Selective reads decode only what they keep; a full read decodes the rest, and the store then caches the
    plain list instead. Entries are decoded completely, never partially, so whatever any reader gets is
    exactly what a full decode yields.
    """

    def __init__(self, index: ManifestIndex):
        self.index = index
        self.decoded: dict[int, ManifestEntry] = {}

    def __len__(self) -> int:
        return len(self.index)

    def _decode(self, positions: list[int]) -> None:
        index = self.index
        missing = [i for i in positions if i not in self.decoded]
        if not missing:
            return
        records = index.file_records(missing)
        try:
            for i, d in zip(missing, records):
                self.decoded[i] = ManifestEntry(
                    index.kinds[i], index.partitions[i], index.buckets[i], index.total_buckets[i], file_from_avro(d)
                )
        except (KeyError, TypeError) as e:
            raise _missing_field("Manifest", index.source, e) from e

    def select(self, test: PartitionTest, skipped: SkippedFiles) -> list[ManifestEntry]:
        index = self.index
        kinds, partitions, buckets, sizes = index.kinds, index.partitions, index.buckets, index.file_sizes
        wanted = {p: test(p) for p in set(partitions)}  # one test per partition, not per entry
        keep = []
        add = skipped.add
        for i, partition in enumerate(partitions):
            if wanted[partition]:
                keep.append(i)
            else:
                add(partition, buckets[i], kinds[i], sizes[i])
        self._decode(keep)
        return [self.decoded[i] for i in keep]

    def complete(self) -> list[ManifestEntry]:
        positions = list(range(len(self.index)))
        self._decode(positions)
        return [self.decoded[i] for i in positions]


def _missing_field(what: str, source: str, error: BaseException) -> CorruptMetadataError:
    return CorruptMetadataError(
        f"{what} {source} has a record without required field {error}; the file is corrupt or not a Paimon "
        "manifest. Restore it, or roll the table back to a snapshot that does not reference it."
    )


# --------------------------------------------------------------------------------------- files
class _ManifestCache:
    """Process-wide bounded LRU of parsed manifest files and manifest lists.

    Manifest files and lists are immutable (their names carry a UUID and are never rewritten), so a parsed
    copy can be shared by every query of every table in this process: re-planning the same snapshot, or a
    newer snapshot sharing base manifests, decodes nothing again. Keys are (file-system protocol, full path);
    the bound is a total number of records (entries or metas), so a few huge manifests cannot pin memory.
    A manifest only read selectively so far is held as an index with its kept entries (``_IndexedManifest``).
    It lives at module level so pickling a :class:`ManifestStore` (or a ``FileStore``) never ships it.
    """

    def __init__(self, max_records: int = 2_000_000):
        self.max_records = max_records
        self._data: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._records = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: tuple, value: Any) -> None:
        weight = len(value) + 1
        if weight > self.max_records:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._records -= len(old) + 1
            self._data[key] = value
            self._records += weight
            while self._records > self.max_records and self._data:
                _, evicted = self._data.popitem(last=False)
                self._records -= len(evicted) + 1

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._records = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


MANIFEST_CACHE = _ManifestCache()


class ManifestStore:
    """Reads and writes manifest files and manifest lists in a table's shared ``manifest/`` directory.

    Manifest files are immutable, so parsed contents are cached per instance. With ``shared_cache=True``
    (scan planning and commits) they are cached process-wide instead (:data:`MANIFEST_CACHE`): planning
    several queries of the same table, snapshots sharing base manifests, or the next commit of a growing
    table decode each file once per process. Maintenance (expiration, orphan removal) keeps the default, so a
    deleted or damaged manifest is always noticed before anything is deleted. Pickling never ships either
    cache.
    """

    def __init__(self, fileio: FileIO, table_path: str, shared_cache: bool = False):
        self.fileio = fileio
        self.table_path = table_path
        self.manifest_dir = f"{table_path}/manifest"
        self.shared_cache = shared_cache
        self._local: dict[tuple, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"fileio": self.fileio, "table_path": self.table_path, "shared_cache": self.shared_cache}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["fileio"], state["table_path"], state.get("shared_cache", False))  # type: ignore[misc]

    def _get(self, key: tuple) -> Any:
        return MANIFEST_CACHE.get(key) if self.shared_cache else self._local.get(key)

    def _put(self, key: tuple, value: Any) -> None:
        if self.shared_cache:
            MANIFEST_CACHE.put(key, value)
        else:
            self._local[key] = value

    def _key(self, name: str) -> tuple[str, str]:
        return (str(getattr(self.fileio, "protocol", "file")), self.path(name))

    def path(self, name: str) -> str:
        return f"{self.manifest_dir}/{name}"

    def _read(self, name: str, what: str) -> bytes:
        try:
            return self.fileio.read_bytes(self.path(name))
        except FileNotFoundError:
            raise CorruptMetadataError(
                f"{what} {self.path(name)} is missing. A snapshot still references it, so the table metadata is "
                "damaged (files deleted outside Paimon?). Roll back to a snapshot or tag that does not need it."
            ) from None

    def _decode(self, name: str, what: str, convert: Callable[[dict, str], Any]) -> list:
        source = self.path(name)
        records = read_avro(self._read(name, what), source)
        try:
            return [convert(d, source) for d in records]
        except (KeyError, TypeError) as e:  # a required field is missing or null: not a Paimon manifest
            raise _missing_field(what, source, e) from e

    def read_manifest(self, name: str) -> list[ManifestEntry]:
        key = self._key(name)
        cached = self._get(key)
        if isinstance(cached, _IndexedManifest):  # read selectively before: decode the remaining entries
            cached = cached.complete()
            self._put(key, cached)
        elif cached is None:
            cached = self._decode(name, "Manifest", entry_from_avro)
            self._put(key, cached)
        return cached

    def select_manifest(self, name: str, test: PartitionTest, skipped: SkippedFiles) -> list[ManifestEntry]:
        """The entries of manifest ``name`` that ``test`` keeps, in file order, exactly as :meth:`read_manifest`
        returns them; the others are tallied in ``skipped`` and, on a first read, never decoded."""
        key = self._key(name)
        cached = self._get(key)
        if cached is None:
            index = build_index(self._read(name, "Manifest"), self.path(name), MANIFEST_FORMAT_VERSION)
            if index is None:  # a layout Java does not write: decode it whole
                return self._select_list(self.read_manifest(name), test, skipped)
            cached = _IndexedManifest(index)
            self._put(key, cached)
        if isinstance(cached, _IndexedManifest):
            return cached.select(test, skipped)
        return self._select_list(cached, test, skipped)

    @staticmethod
    def _select_list(entries: list[ManifestEntry], test: PartitionTest, skipped: SkippedFiles) -> list[ManifestEntry]:
        keep = []
        for e in entries:
            if test(e.partition):
                keep.append(e)
            else:
                skipped.add(e.partition, e.bucket, e.kind, e.file.file_size)
        return keep

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        key = ("list",) + self._key(name)
        cached = self._get(key)
        if cached is None:
            cached = self._decode(name, "Manifest list", meta_from_avro)
            self._put(key, cached)
        return cached

    def write_manifest(
        self,
        entries: Sequence[ManifestEntry],
        schema_id: int,
        partition_stats: SimpleStats,
        codec: str = AVRO_CODECS["zstd"],
    ) -> ManifestFileMeta:
        """Write ``entries`` as one manifest file (``codec``: an Avro codec name, see ``avro.avro_codec``)."""
        data = write_avro(MANIFEST_ENTRY_SCHEMA, (entry_to_avro(e) for e in entries), codec=codec)
        return self._store_manifest(entries, schema_id, partition_stats, data)

    def write_manifests(
        self,
        entries: Sequence[ManifestEntry],
        schema_id: int,
        stats_of: Callable[[Sequence[ManifestEntry]], SimpleStats],
        *,
        codec: str = AVRO_CODECS["zstd"],
        target_size: int | None = None,
    ) -> list[ManifestFileMeta]:
        """Write ``entries`` as manifest files of about ``target_size`` bytes each (``manifest.target-file-size``:
        Java rolls manifests at that size, so planning can prune them by partition and read them in parallel).
        ``stats_of`` gives the partition statistics of each file's entries."""
        data = write_avro(MANIFEST_ENTRY_SCHEMA, (entry_to_avro(e) for e in entries), codec=codec)
        if target_size is None or len(data) <= target_size or len(entries) < 2:
            return [self._store_manifest(entries, schema_id, stats_of(entries), data)]
        parts = min(len(entries), -(-len(data) // max(target_size, 1)))
        step = -(-len(entries) // parts)
        return [
            self.write_manifest(entries[i : i + step], schema_id, stats_of(entries[i : i + step]), codec)
            for i in range(0, len(entries), step)
        ]

    def _store_manifest(
        self, entries: Sequence[ManifestEntry], schema_id: int, partition_stats: SimpleStats, data: bytes
    ) -> ManifestFileMeta:
        name = f"manifest-{uuid.uuid4()}-0"
        self.fileio.write_bytes(self.path(name), data)
        self._put(self._key(name), list(entries))
        if not self.shared_cache:
            MANIFEST_CACHE.put(self._key(name), list(entries))
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        # Row-id bounds only when every entry has a first row id (Java's ManifestAvroWriter.RowIdStats).
        tracked = bool(entries) and all(e.file.first_row_id is not None for e in entries)
        return ManifestFileMeta(
            file_name=name,
            file_size=len(data),
            num_added_files=sum(1 for e in entries if e.kind == KIND_ADD),
            num_deleted_files=sum(1 for e in entries if e.kind == KIND_DELETE),
            partition_stats=partition_stats,
            schema_id=schema_id,
            min_bucket=min(buckets) if buckets else None,
            max_bucket=max(buckets) if buckets else None,
            min_level=min(levels) if levels else None,
            max_level=max(levels) if levels else None,
            min_row_id=min(e.file.first_row_id or 0 for e in entries) if tracked else None,
            max_row_id=max((e.file.first_row_id or 0) + e.file.row_count - 1 for e in entries) if tracked else None,
        )

    def write_list(self, metas: Sequence[ManifestFileMeta], codec: str = AVRO_CODECS["zstd"]) -> tuple[str, int]:
        name = f"manifest-list-{uuid.uuid4()}-0"
        data = write_avro(MANIFEST_FILE_META_SCHEMA, (meta_to_avro(m) for m in metas), codec=codec)
        self.fileio.write_bytes(self.path(name), data)
        self._put(("list",) + self._key(name), list(metas))
        return name, len(data)

    def read_entries(self, metas: Iterable[ManifestFileMeta]) -> list[ManifestEntry]:
        out: list[ManifestEntry] = []
        for m in metas:
            out.extend(self.read_manifest(m.file_name))
        return out

    def select_entries(
        self, metas: Iterable[ManifestFileMeta], test: PartitionTest
    ) -> tuple[list[ManifestEntry], SkippedFiles]:
        """:meth:`read_entries` of only the entries whose partition ``test`` keeps, and a tally of the others.
        The entries of one data file share its partition, so the test keeps a DELETE exactly when it keeps the
        ADD it cancels, whichever manifests they sit in: folding the kept entries gives the kept part of the
        fold of all entries."""
        skipped = SkippedFiles()
        out: list[ManifestEntry] = []
        for m in metas:
            out.extend(self.select_manifest(m.file_name, test, skipped))
        return out, skipped


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Fold ADD/DELETE entries in order into the live ADD entries (Java's `FileEntry.mergeEntries`).

    A DELETE without a matching ADD is kept only while folding a delta; a full file set must not end with
    one, which callers that need a complete set check with :func:`live_files`.
    """
    live: dict[tuple, ManifestEntry] = {}
    for e in entries:
        key = e.identifier
        if e.kind == KIND_ADD:
            if key in live and live[key].kind == KIND_ADD:
                raise CorruptMetadataError(
                    f"File {e.file.file_name} (bucket {e.bucket}) is added twice without a delete in between; "
                    "the manifests are inconsistent."
                )
            live[key] = e
        else:
            if key in live and live[key].kind == KIND_ADD:
                del live[key]
            else:
                live[key] = e
    return list(live.values())


def live_files(entries: Iterable[ManifestEntry], source: str) -> list[ManifestEntry]:
    merged = merge_entries(entries)
    dangling = [e for e in merged if e.kind != KIND_ADD]
    if dangling:
        raise CorruptMetadataError(
            f"{source}: {len(dangling)} DELETE entries have no matching file (first: {dangling[0].file.file_name}); "
            "the manifests are inconsistent."
        )
    return merged
