"""The index manifest (Java's ``IndexManifestEntry``, ``IndexManifestFile``, ``IndexManifestFileHandler``): the
one Avro file a snapshot names that lists the index files of every bucket, whatever the index.

Two indexes live there: ``HASH`` (dynamic bucket mode: which key hashes a bucket holds) and
``DELETION_VECTORS`` (which rows of a data file are gone). Both are kept per (partition, bucket, index type), and
a commit that changes either writes a whole new manifest: the live entries of the current one minus the
(partition, bucket, index type) slots it replaces, plus the files it adds. Doing that in one place means a commit
can change both indexes at once (a dynamic-bucket table with deletion vectors), an overwrite drops the overwritten
buckets' entries of every kind, and one Avro schema is written.
"""

from __future__ import annotations

import io
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

import fastavro

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.io.avro import read_avro, write_avro
from pyspark_paimon.metadata.io.fileio import FileIO

__all__ = [
    "INDEX_MANIFEST_SCHEMA",
    "IndexChange",
    "IndexManifestEntry",
    "IndexSlot",
    "read_index_manifest",
    "rewrite_index_manifest",
]

KIND_ADD = 0

#: One index file's place: (partition bytes, bucket, index type). A bucket holds at most one file per index type
#: once a commit rewrote it (Java's ``BucketedCombiner``), so the slot is what a commit replaces.
IndexSlot = tuple[bytes, int, str]

#: Java's index manifest record (``IndexManifestEntry`` through its Avro converter), used when a table has no
#: index manifest yet or the current one lacks a field. ``_GLOBAL_INDEX`` (newer Java) is left out: every reader
#: takes a missing nullable field as NULL.
INDEX_MANIFEST_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {
            "name": "_DELETIONS_VECTORS_RANGES",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "record__DELETIONS_VECTORS_RANGES",
                        "fields": [
                            {"name": "f0", "type": "string"},
                            {"name": "f1", "type": "int"},
                            {"name": "f2", "type": "int"},
                            {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
                        ],
                    },
                },
            ],
            "default": None,
        },
        {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
    ],
}
_FIELDS = frozenset(f["name"] for f in INDEX_MANIFEST_SCHEMA["fields"])


@dataclass(frozen=True)
class IndexManifestEntry:
    """One record of an index manifest (Java's ``IndexManifestEntry`` + ``IndexFileMeta``)."""

    kind: int
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    # (data file name, offset, length, cardinality) per data file, for DELETION_VECTORS files.
    dv_ranges: tuple[tuple[str, int, int, int | None], ...] | None = None
    external_path: str | None = None

    @property
    def slot(self) -> IndexSlot:
        return (self.partition, self.bucket, self.index_type)


@dataclass(frozen=True)
class IndexChange:
    """What a commit does to the index manifest: the slots whose current files it drops, and the files it adds
    (an added file replaces whatever sat in its slot). Changes of several indexes combine with ``|``."""

    dropped: frozenset[IndexSlot] = frozenset()
    added: tuple[IndexManifestEntry, ...] = ()
    # Files an attempt wrote for ``added``: deleted when the attempt does not land.
    written: tuple[str, ...] = field(default=(), compare=False)

    def __or__(self, other: "IndexChange") -> "IndexChange":
        return IndexChange(self.dropped | other.dropped, self.added + other.added, self.written + other.written)

    def __bool__(self) -> bool:
        return bool(self.dropped or self.added)


def _read(fileio: FileIO, path: str, why: str) -> tuple[list[dict], Any]:
    try:
        data = fileio.read_bytes(path)
    except FileNotFoundError:
        raise CorruptMetadataError(
            f"Index manifest {path} is missing, but {why} names it. Restore it, or roll the table back to a "
            "snapshot that does not reference it."
        ) from None
    records = list(read_avro(data, path))  # a damaged file raises CorruptMetadataError here
    return records, fastavro.reader(io.BytesIO(data)).writer_schema


def _fold(records: Iterable[dict]) -> dict[tuple[bytes, int, str, str], dict]:
    """The live records by (partition, bucket, type, file): a snapshot's index manifest is the complete set, but
    a DELETE record still cancels the ADD of the same file should a writer leave both."""
    live: dict[tuple[bytes, int, str, str], dict] = {}
    for r in records:
        key = (bytes(r["_PARTITION"]), int(r["_BUCKET"]), str(r["_INDEX_TYPE"]), str(r["_FILE_NAME"]))
        if int(r.get("_KIND", KIND_ADD)) == KIND_ADD:
            live[key] = r
        else:
            live.pop(key, None)
    return live


def read_index_manifest(fileio: FileIO, path: str) -> list[IndexManifestEntry]:
    """The live entries of the index manifest at ``path``."""
    records, _ = _read(fileio, path, "the snapshot being read")
    out = []
    for r in _fold(records).values():
        ranges = r.get("_DELETIONS_VECTORS_RANGES")
        out.append(
            IndexManifestEntry(
                kind=KIND_ADD,
                partition=bytes(r["_PARTITION"]),
                bucket=int(r["_BUCKET"]),
                index_type=str(r["_INDEX_TYPE"]),
                file_name=str(r["_FILE_NAME"]),
                file_size=int(r["_FILE_SIZE"]),
                row_count=int(r["_ROW_COUNT"]),
                dv_ranges=None
                if ranges is None
                else tuple(
                    (
                        str(x["f0"]),
                        int(x["f1"]),
                        int(x["f2"]),
                        None if x.get("_CARDINALITY") is None else int(x["_CARDINALITY"]),
                    )
                    for x in ranges
                ),
                external_path=r.get("_EXTERNAL_PATH"),
            )
        )
    return out


def _record(e: IndexManifestEntry) -> dict:
    return {
        "_VERSION": 1,
        "_KIND": KIND_ADD,
        "_PARTITION": e.partition,
        "_BUCKET": e.bucket,
        "_INDEX_TYPE": e.index_type,
        "_FILE_NAME": e.file_name,
        "_FILE_SIZE": e.file_size,
        "_ROW_COUNT": e.row_count,
        "_DELETIONS_VECTORS_RANGES": None
        if e.dv_ranges is None
        else [{"f0": n, "f1": o, "f2": ln, "_CARDINALITY": c} for n, o, ln, c in e.dv_ranges],
        "_EXTERNAL_PATH": e.external_path,
    }


def rewrite_index_manifest(
    fileio: FileIO, manifest_dir: str, current: str | None, change: IndexChange, codec: str
) -> str | None:
    """The index manifest after ``change``: the live entries of ``current`` (None: the table has none yet) minus
    the dropped slots and the slots an added file takes, plus the added files. Returns the new file's name,
    ``current`` itself when the change removes and adds nothing, or None when no entry is left (the snapshot then
    names no index manifest).

    Kept records are copied as read, with the current file's own Avro schema when it has every field this
    writer fills (so the fields of whichever writer made it, Java, pypaimon or a later Paimon, survive);
    otherwise Java's schema, with the fields an old record lacks set to NULL."""
    records: list[dict] = []
    schema: Any = INDEX_MANIFEST_SCHEMA
    if current is not None:
        path = f"{manifest_dir}/{current}"
        raw, old = _read(fileio, path, "the latest snapshot")
        if not isinstance(old, dict):
            raise CorruptMetadataError(f"Index manifest {path} has no record schema; it is not an index manifest.")
        if _FIELDS <= {f["name"] for f in old.get("fields", [])}:
            schema = old
        records = list(_fold(raw).values())
    replaced = set(change.dropped) | {e.slot for e in change.added}
    kept = [r for r in records if (bytes(r["_PARTITION"]), int(r["_BUCKET"]), str(r["_INDEX_TYPE"])) not in replaced]
    if current is not None and len(kept) == len(records) and not change.added:
        return current
    if schema is INDEX_MANIFEST_SCHEMA:
        kept = [{**dict.fromkeys(_FIELDS), **{k: v for k, v in r.items() if k in _FIELDS}} for r in kept]
    names = dict.fromkeys(f["name"] for f in schema["fields"])  # a later Java's extra fields: NULL
    kept.extend({**names, **_record(e)} for e in change.added)
    if not kept:
        return None
    name = f"index-manifest-{uuid.uuid4()}-0"
    fileio.write_bytes(f"{manifest_dir}/{name}", write_avro(schema, kept, codec=codec))
    return name
