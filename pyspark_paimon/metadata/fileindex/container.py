"""The file index container (Java's ``FileIndexFormat``): every index of one data file in one byte string.

A data file of a table with ``file-index.<type>.columns`` gets one container holding, per indexed column, one
blob per index type. The container is stored inline in the manifest (``_EMBEDDED_FILE_INDEX``) when it is at
most ``file-index.in-manifest-threshold`` bytes, else in an index file beside the data file
(``<data file>.index``, listed in the entry's ``_EXTRA_FILES``). This module only frames blobs: what a blob
means is :mod:`~pyspark_paimon.metadata.fileindex.bloom_filter`'s or
:mod:`~pyspark_paimon.metadata.fileindex.bitmap_index`'s business.

Layout (all integers big-endian, strings as Java's ``DataOutput.writeUTF``: an unsigned 16-bit length and
modified UTF-8)::

    magic        int64  1493475289347502
    version      int32  1
    head length  int32  bytes from the start of the container to the first body byte
    columns      int32
      per column: name (UTF), index count int32,
        per index: type name (UTF), start int32 (from the container's start; -1 = empty index), length int32
    redundant    int32  0, then that many bytes (room for later versions)
    body         the blobs, in header order

An *empty* index (start -1) is one that saw no value at all (a nested map key no row had); Java's reader
answers "no row matches" for it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Mapping

from pyspark_paimon.errors import CorruptMetadataError

__all__ = ["MAGIC", "VERSION", "EMPTY_INDEX", "FileIndexContainer", "encode_container", "java_utf", "read_java_utf"]

MAGIC = 1493475289347502
VERSION = 1
#: The start of an index that saw no value (Java's ``EMPTY_INDEX_FLAG``).
EMPTY_INDEX = -1
_FIXED_HEAD = 8 + 4 + 4  # magic, version, head length


def java_utf(text: str) -> bytes:
    """``text`` as Java's ``DataOutput.writeUTF`` writes it: a BE uint16 byte count, then modified UTF-8 (NUL as
    two bytes, characters beyond the BMP as two three-byte surrogates)."""
    data = text.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(data) // 2}H", data)
    out = bytearray()
    for u in units:
        if 0 < u < 0x80:
            out.append(u)
        elif u < 0x800:
            out += bytes((0xC0 | (u >> 6), 0x80 | (u & 0x3F)))
        else:
            out += bytes((0xE0 | (u >> 12), 0x80 | ((u >> 6) & 0x3F), 0x80 | (u & 0x3F)))
    if len(out) > 0xFFFF:
        raise ValueError(f"name of {len(out)} bytes is longer than Java's writeUTF allows (65535)")
    return struct.pack(">H", len(out)) + bytes(out)


def read_java_utf(data: bytes, pos: int) -> tuple[str, int]:
    """The string Java's ``writeUTF`` wrote at ``pos`` and the position after it."""
    (size,) = struct.unpack_from(">H", data, pos)
    raw = data[pos + 2 : pos + 2 + size]
    if len(raw) != size:
        raise ValueError("truncated string")
    units: list[int] = []
    i = 0
    while i < size:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        else:
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
    text = struct.pack(f">{len(units)}H", *units).decode("utf-16-be", "surrogatepass")
    return text, pos + 2 + size


def encode_container(columns: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Java's container of ``columns`` (column -> index type -> blob; None = an empty index), in the given
    order, byte for byte what ``FileIndexFormat.Writer.writeColumnIndexes`` writes for the same order."""
    names = b"".join(java_utf(c) + b"".join(java_utf(t) for t in blobs) for c, blobs in columns.items())
    indexes = sum(len(blobs) for blobs in columns.values())
    head_length = _FIXED_HEAD + 4 + 8 * indexes + 4 * len(columns) + 4 + len(names)
    head = bytearray(struct.pack(">qii", MAGIC, VERSION, head_length))
    head += struct.pack(">i", len(columns))
    body = bytearray()
    for column, blobs in columns.items():
        head += java_utf(column) + struct.pack(">i", len(blobs))
        for index_type, blob in blobs.items():
            if blob is None:
                head += java_utf(index_type) + struct.pack(">ii", EMPTY_INDEX, 0)
            else:
                head += java_utf(index_type) + struct.pack(">ii", head_length + len(body), len(blob))
                body += blob
    head += struct.pack(">i", 0)  # redundant length
    return bytes(head + body)


@dataclass(frozen=True)
class FileIndexContainer:
    """A parsed container: where each (column, index type) blob sits. ``data`` is the whole container (the
    embedded bytes, or the index file's content)."""

    data: bytes
    slots: Mapping[str, Mapping[str, tuple[int, int]]]

    @classmethod
    def parse(cls, data: bytes, where: str) -> "FileIndexContainer":
        """Parse the header; ``where`` names the data file (and index file) for the error a malformed or newer
        container raises."""
        try:
            magic, version, head_length = struct.unpack_from(">qii", data, 0)
            if magic != MAGIC:
                raise ValueError(f"magic {magic} is not a file index's ({MAGIC})")
            if version != VERSION:
                raise ValueError(f"version {version} is newer than the supported version {VERSION}")
            pos = _FIXED_HEAD
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            slots: dict[str, dict[str, tuple[int, int]]] = {}
            for _ in range(count):
                column, pos = read_java_utf(data, pos)
                (n,) = struct.unpack_from(">i", data, pos)
                pos += 4
                per_type = slots.setdefault(column, {})
                for _ in range(n):
                    index_type, pos = read_java_utf(data, pos)
                    start, length = struct.unpack_from(">ii", data, pos)
                    pos += 8
                    if start != EMPTY_INDEX and (start < head_length or start + length > len(data)):
                        raise ValueError(f"index {column}/{index_type} lies outside the container")
                    per_type[index_type] = (start, length)
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            raise CorruptMetadataError(
                f"The file index of {where} is unreadable ({e}); rewrite it with rewrite_file_index, or read "
                "with the read option file-index.read.enabled = false."
            ) from None
        return cls(data, slots)

    def blob(self, column: str, index_type: str) -> bytes | None:
        """The blob of one index of ``column``; None when the container has no such index."""
        slot = self.slots.get(column, {}).get(index_type)
        if slot is None:
            return None
        start, length = slot
        return b"" if start == EMPTY_INDEX else self.data[start : start + length]

    def is_empty(self, column: str, index_type: str) -> bool:
        """Whether that index saw no value at all (Java's ``EmptyFileIndexReader``: no row can match)."""
        slot = self.slots.get(column, {}).get(index_type)
        return slot is not None and slot[0] == EMPTY_INDEX

    def blobs(self) -> dict[str, dict[str, bytes | None]]:
        """Every blob, column -> index type -> bytes (None for an empty index): what a rewrite keeps."""
        return {
            column: {t: (None if s[0] == EMPTY_INDEX else self.data[s[0] : s[0] + s[1]]) for t, s in per.items()}
            for column, per in self.slots.items()
        }
