"""Deletion vectors for Iceberg readers: a Puffin file mirroring one Paimon deletion-vector index file.

A 64-bit Paimon deletion vector (``deletion-vectors.bitmap64``) is byte for byte an Iceberg v3 deletion vector
blob (``deletion-vector-v1``: BE length, magic, portable 64-bit RoaringBitmap, BE CRC). Java points Iceberg's
delete entries at the vector's range inside Paimon's index file. That file starts with Paimon's version byte,
not a Puffin header, and PyIceberg (0.12) reads a deletion vector by opening the whole file as Puffin and
ignoring the entry's offset, so it cannot read Java's. We therefore copy each index file's vectors into a real
Puffin file (the same blobs, a Puffin footer naming each blob's data file) in the Iceberg metadata directory.

The copy is named after the index file, and index files are immutable, so an index file is mirrored once and
every later snapshot that keeps it reuses the mirror (and its delete entries). A 32-bit vector (written before
the table set ``deletion-vectors.bitmap64``) is re-encoded as a 64-bit blob.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from pyspark_paimon.metadata.iceberg.layout import IcebergLayout
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.deletion_vectors import (
    MAGIC_64,
    decode_deletion_vector,
    encode_deletion_vector,
)

__all__ = ["MAGIC", "ROW_POSITION_FIELD_ID", "DvBlob", "puffin_name", "write_puffin_mirror"]

MAGIC = b"PFA1"
#: Iceberg's ``_pos`` metadata column: the field a deletion vector blob covers.
ROW_POSITION_FIELD_ID = 2**31 - 1 - 2


@dataclass(frozen=True)
class DvBlob:
    """Where one data file's vector sits in a mirror, and how many rows it deletes."""

    data_file: str  # the data file's URI, as the Iceberg manifests name it
    offset: int
    length: int
    cardinality: int


def puffin_name(index_file_name: str) -> str:
    return f"{index_file_name}.puffin"


def _is_64(record: bytes) -> bool:
    return len(record) >= 8 and struct.unpack_from("<i", record, 4)[0] == MAGIC_64


def _blob(record: bytes, where: str) -> bytes:
    """The Iceberg blob of one Paimon vector record (size word, payload, CRC)."""
    if _is_64(record):
        (size,) = struct.unpack_from(">i", record, 0)
        return record[: size + 8]
    positions = decode_deletion_vector(record, None, where)
    return encode_deletion_vector(positions, bitmap64=True)[0]


def _footer(blobs: list[DvBlob]) -> bytes:
    payload = json.dumps(
        {
            "blobs": [
                {
                    "type": "deletion-vector-v1",
                    "fields": [ROW_POSITION_FIELD_ID],
                    "snapshot-id": -1,
                    "sequence-number": -1,
                    "offset": b.offset,
                    "length": b.length,
                    "properties": {"referenced-data-file": b.data_file, "cardinality": str(b.cardinality)},
                }
                for b in blobs
            ],
            "properties": {"created-by": "pyspark-paimon"},
        }
    ).encode()
    return MAGIC + payload + struct.pack("<i", len(payload)) + b"\x00\x00\x00\x00" + MAGIC


def write_puffin_mirror(
    layout: IcebergLayout,
    fileio: FileIO,
    index_path: str,
    ranges: list[tuple[str, int, int, int]],
    data_uri: dict[str, str],
) -> tuple[str, int, list[DvBlob]]:
    """Write the mirror of the index file at ``index_path`` (vector ranges: data file name, offset, length,
    cardinality); returns its path, size and blobs."""
    path = layout.path(puffin_name(index_path.rsplit("/", 1)[-1]))
    data = fileio.read_bytes(index_path)
    body = bytearray(MAGIC)
    blobs = []
    for name, offset, length, cardinality in ranges:
        record = data[offset : offset + length + 8]
        blob = _blob(record, f"of data file '{name}' in index file {fileio.uri(index_path)}")
        blobs.append(DvBlob(data_uri[name], len(body), len(blob), cardinality))
        body += blob
    out = bytes(body) + _footer(blobs)
    fileio.write_bytes(path, out)
    return path, len(out), blobs
