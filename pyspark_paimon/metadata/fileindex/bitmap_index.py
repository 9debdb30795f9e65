"""The bitmap file index (Java's ``BitmapFileIndex``): every distinct value of a column in one data file, with
the row positions holding it, for low-cardinality columns (``=``, ``IN``, ``IS NULL`` and, since the index lists
every value, any comparison).

Blob layout, version 1 (what Java 1.0 writes and reads; all integers big-endian)::

    version          byte   1
    row count        int32  rows of the data file
    distinct values  int32  non-null values with a bitmap
    has null         byte   0 / 1
    null offset      int32  (only with nulls)
    per value:       the value, then its offset int32
    body             portable RoaringBitmaps (the null bitmap first when it has more than one row)

A value is written as Java's ``DataOutput`` writes its key: CHAR/VARCHAR as an int32 byte count and UTF-8,
TINYINT (and BOOLEAN, read only) one byte, SMALLINT two, INT/DATE/TIME four, BIGINT eight, FLOAT/DOUBLE their
IEEE bits (NaN canonical, -0.0 its own value), TIMESTAMP/TIMESTAMP_LTZ an int64 of epoch milliseconds
(precision <= 3) or microseconds. An offset >= 0 is where the value's bitmap starts in the body; a negative
offset ``o`` means the value occurs once, at row ``-1 - o`` (the null offset likewise).

Version 2 (Java 1.1+ by default, ``file-index.bitmap.<column>.version``) is read too: after the null offset
comes the null bitmap's length, then a block directory (block count, per block its first value and offset,
then the bitmaps' start relative to the blocks) and blocks of sorted ``(value, offset, length)`` entries.
We write version 1, so Java 1.0 reads our tables.

Decoding the value list of CHAR/VARCHAR keys walks the entries one by one (each length decides where the
next starts); every other step is vectorised.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.metadata.manifests.deletion_vectors import (
    decode_roaring32,
    encode_roaring32,
    encode_roaring32_concat,
)
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.model import AtomicType, DataType

__all__ = ["VERSION_1", "VERSION_2", "writable", "readable", "encode_bitmap_index", "BitmapIndex"]

VERSION_1 = 1
VERSION_2 = 2

# Big-endian key formats of the fixed-width types.
_FIXED = {
    "TINYINT": ">i1",
    "SMALLINT": ">i2",
    "INT": ">i4",
    "DATE": ">i4",
    "TIME": ">i4",
    "BIGINT": ">i8",
    "TIMESTAMP": ">i8",
    "TIMESTAMP_LTZ": ">i8",
    "FLOAT": ">f4",
    "DOUBLE": ">f8",
    "BOOLEAN": ">i1",
}
_STRINGS = frozenset({"CHAR", "VARCHAR"})


def readable(t: DataType) -> bool:
    """Whether a bitmap index of a column of type ``t`` can be decoded here."""
    return isinstance(t, AtomicType) and (t.root in _FIXED or t.root in _STRINGS)


def writable(t: DataType) -> bool:
    """Whether we write a bitmap index of type ``t``: what Java 1.0 writes. BOOLEAN is left out: Java 1.0
    cannot write it, and a Java 1.0 reader would skip every file of a BOOLEAN bitmap newer Java wrote."""
    return readable(t) and t.root != "BOOLEAN"


def _timestamp_keys(arr: pa.Array, precision: int) -> np.ndarray:
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[arr.type.unit]
    target = 1_000 if precision <= 3 else 1_000_000
    values = arr.cast(pa.int64()).to_numpy(zero_copy_only=False)
    if per_second >= target:
        return values // (per_second // target)
    return values * (target // per_second)


def _fixed_keys(arr: pa.Array, t: AtomicType) -> np.ndarray:
    """The non-null values of ``arr`` as the key numbers Java writes (floats as their canonical IEEE bits)."""
    root = t.root
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_keys(arr, t.precision if t.precision is not None else 6)
    if root == "FLOAT":
        f = arr.cast(pa.float32()).to_numpy(zero_copy_only=False).copy()
        f[np.isnan(f)] = np.float32("nan")
        return f.view(np.int32)
    if root == "DOUBLE":
        d = arr.cast(pa.float64()).to_numpy(zero_copy_only=False).copy()
        d[np.isnan(d)] = np.float64("nan")
        return d.view(np.int64)
    if root in ("DATE", "TIME"):
        return arr.cast(pa.int32()).to_numpy(zero_copy_only=False)
    return arr.to_numpy(zero_copy_only=False)


def _string_entries(dictionary: pa.Array, offsets: np.ndarray) -> bytes:
    """``int32 length, bytes, int32 offset`` for each dictionary string, vectorised."""
    arr = dictionary.cast(pa.large_binary())
    src = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data_buffer = arr.buffers()[2]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
    lengths = np.diff(src)
    sizes = 8 + lengths
    at = np.r_[0, np.cumsum(sizes)][:-1]
    out = np.zeros(int(sizes.sum()), np.uint8)
    four = np.arange(4)
    out[at[:, None] + four] = lengths.astype(">i4").view(np.uint8).reshape(-1, 4)
    total = int(lengths.sum())
    if total:
        dest = np.arange(total) + np.repeat(at + 4 - (np.r_[0, np.cumsum(lengths)][:-1]), lengths)
        source = np.arange(total) + np.repeat(src[:-1] - np.r_[0, np.cumsum(lengths)][:-1], lengths)
        out[dest] = data[source]
    out[(at + 4 + lengths)[:, None] + four] = np.asarray(offsets).astype(">i4").view(np.uint8).reshape(-1, 4)
    return out.tobytes()


def encode_bitmap_index(arr: pa.Array | pa.ChunkedArray, t: DataType) -> bytes:
    """The version-1 bitmap index of one data file's column ``arr`` (of Paimon type ``t``), as Java's
    ``BitmapFileIndex.Writer`` lays it out (its values in first-appearance order rather than Java's hash-map
    order: readers look values up, so the order does not matter)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not isinstance(t, AtomicType) or not writable(t):
        raise ValueError(f"type {t} has no bitmap index")
    rows = len(arr)
    nulls = np.asarray(arr.is_null())
    null_rows = np.flatnonzero(nulls).astype(np.uint32)
    present_rows = np.flatnonzero(~nulls)
    present = pc.drop_null(arr) if len(null_rows) else arr
    if t.root in _STRINGS:
        encoded = present.cast(pa.string()).dictionary_encode()
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        dictionary: pa.Array | None = encoded.dictionary
        distinct = len(encoded.dictionary)
        keys = np.empty(0)
    else:
        dictionary = None
        keys, codes = np.unique(_fixed_keys(present, t), return_inverse=True)
        distinct = len(keys)
    order = np.argsort(codes, kind="stable")
    positions = present_rows[order].astype(np.uint32)  # ascending within each value
    counts = np.bincount(codes, minlength=distinct).astype(np.int64)
    starts = np.r_[0, np.cumsum(counts)][:-1]
    null_bitmap = encode_roaring32(null_rows) if len(null_rows) > 1 else b""
    multi = counts > 1
    multi_values = positions[np.repeat(multi, counts)]
    bodies, lengths = encode_roaring32_concat(multi_values, np.r_[0, np.cumsum(counts[multi])])
    offsets = np.empty(distinct, np.int64)
    offsets[~multi] = -1 - positions[starts[~multi]].astype(np.int64)
    offsets[multi] = len(null_bitmap) + np.r_[0, np.cumsum(lengths)][:-1]
    head = struct.pack(">Bii?", VERSION_1, rows, distinct, len(null_rows) > 0)
    if len(null_rows):
        head += struct.pack(">i", -1 - int(null_rows[0]) if len(null_rows) == 1 else 0)
    if dictionary is not None:
        entries = _string_entries(dictionary, offsets)
    else:
        fmt = _FIXED[t.root]
        if t.root in ("FLOAT", "DOUBLE"):
            fmt = ">i4" if t.root == "FLOAT" else ">i8"  # the canonical bits, written as Java's writeFloat
        table = np.empty(distinct, dtype=[("k", fmt), ("o", ">i4")])
        table["k"] = keys
        table["o"] = offsets
        entries = table.tobytes()
    return head + entries + null_bitmap + bodies


@dataclass(frozen=True)
class BitmapIndex:
    """A decoded bitmap index: the row count, the null facts and every distinct non-null value (``keys``:
    numbers as Java keys them, or the UTF-8 bytes of strings) with its offset (and, version 2, length)."""

    version: int
    row_count: int
    has_null: bool
    null_offset: int
    keys: np.ndarray | list[bytes]
    offsets: np.ndarray
    blob: bytes
    body_start: int

    @classmethod
    def decode(cls, blob: bytes, t: DataType) -> "BitmapIndex":
        """Parse ``blob`` of a column of type ``t``; ValueError / struct.error when it is malformed."""
        if not isinstance(t, AtomicType) or not readable(t):
            raise ValueError(f"type {t} has no bitmap index")
        version = blob[0]
        if version not in (VERSION_1, VERSION_2):
            raise ValueError(f"bitmap index version {version} is newer than the supported version {VERSION_2}")
        rows, distinct, has_null = struct.unpack_from(">ii?", blob, 1)
        pos = 10
        null_offset = 0
        if has_null:
            (null_offset,) = struct.unpack_from(">i", blob, pos)
            pos += 4 + (4 if version == VERSION_2 else 0)  # version 2: the null bitmap's length follows
        if distinct < 0 or rows < 0:
            raise ValueError("negative counts")
        if version == VERSION_1:
            keys, offsets, pos = _entries(blob, pos, distinct, t.root, with_length=False)
            return cls(version, rows, has_null, null_offset, keys, offsets, blob, pos)
        (blocks,) = struct.unpack_from(">i", blob, pos)
        pos += 4
        block_offsets: list[int] = []
        for _ in range(blocks):  # the block directory: each block's first key, then its offset
            _, first, pos = _entries(blob, pos, 1, t.root, with_length=False)
            block_offsets.append(int(first[0]))
        (body_offset,) = struct.unpack_from(">i", blob, pos)
        blocks_start = pos + 4
        key_parts: list = []
        offset_parts = []
        for offset in block_offsets:
            at = blocks_start + offset
            (count,) = struct.unpack_from(">i", blob, at)
            k, o, _ = _entries(blob, at + 4, count, t.root, with_length=True)
            key_parts.append(k)
            offset_parts.append(o)
        if t.root in _STRINGS:
            keys_all: np.ndarray | list[bytes] = [k for part in key_parts for k in part]
        else:
            keys_all = np.concatenate(key_parts) if key_parts else np.empty(0)
        offsets_all = np.concatenate(offset_parts) if offset_parts else np.empty(0, np.int64)
        if len(offsets_all) != distinct:
            raise ValueError(f"{len(offsets_all)} entries for {distinct} distinct values")
        return cls(version, rows, has_null, null_offset, keys_all, offsets_all, blob, blocks_start + body_offset)

    def values(self, t: DataType) -> pa.Array:
        """The distinct non-null values as an Arrow array of the column's type (``t``, the type the index was
        decoded with)."""
        assert isinstance(t, AtomicType)
        root = t.root
        if root in _STRINGS:
            return pa.array(self.keys, pa.binary()).cast(pa.string())
        keys = np.asarray(self.keys)
        if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            unit = "ms" if (t.precision if t.precision is not None else 6) <= 3 else "us"
            raw = pa.array(keys.astype(np.int64), pa.timestamp(unit, tz="UTC" if root == "TIMESTAMP_LTZ" else None))
        elif root == "FLOAT":
            raw = pa.array(keys.astype(np.int32).view(np.float32))
        elif root == "DOUBLE":
            raw = pa.array(keys.astype(np.int64).view(np.float64))
        elif root == "BOOLEAN":
            raw = pa.array(keys.astype(np.int8) != 0)
        elif root == "DATE":
            raw = pa.array(keys.astype(np.int32), pa.date32())
        elif root == "TIME":
            raw = pa.array(keys.astype(np.int32), pa.time32("ms"))
        else:
            raw = pa.array(keys)
        target = to_arrow_type(t)
        return raw if raw.type == target else raw.cast(target)

    def _bitmap_at(self, offset: int) -> np.ndarray:
        if offset < 0:
            return np.array([-1 - offset], np.int64)
        return decode_roaring32(self.blob[self.body_start + offset :])

    def null_positions(self) -> np.ndarray:
        """The rows holding NULL, ascending."""
        return self._bitmap_at(self.null_offset) if self.has_null else np.empty(0, np.int64)

    def positions(self, i: int) -> np.ndarray:
        """The rows holding the ``i``-th distinct value, ascending."""
        return self._bitmap_at(int(self.offsets[i]))


def _entries(blob: bytes, pos: int, count: int, root: str, with_length: bool) -> tuple:
    """``count`` (key, offset[, length]) entries at ``pos``: (keys, offsets, position after them)."""
    tail = 8 if with_length else 4
    if root in _STRINGS:
        strings: list[bytes] = []
        offsets = np.empty(count, np.int64)
        for i in range(count):
            (size,) = struct.unpack_from(">i", blob, pos)
            if size < 0 or pos + 4 + size + tail > len(blob):
                raise ValueError("string key outside the index")
            strings.append(bytes(blob[pos + 4 : pos + 4 + size]))
            (offsets[i],) = struct.unpack_from(">i", blob, pos + 4 + size)
            pos += 4 + size + tail
        return strings, offsets, pos
    fields = [("k", _FIXED[root]), ("o", ">i4")] + ([("l", ">i4")] if with_length else [])
    dtype = np.dtype(fields)
    if pos + dtype.itemsize * count > len(blob):
        raise ValueError("entries outside the index")
    table = np.frombuffer(blob, dtype=dtype, count=count, offset=pos)
    key_type = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[dtype["k"].itemsize]
    # floats keep their bits (as the writer keys them); integers their value, in native byte order
    native = table["k"].astype(dtype["k"].newbyteorder("="))
    keys = native.view(key_type) if root in ("FLOAT", "DOUBLE") else native.astype(key_type)
    return keys, table["o"].astype(np.int64), pos + dtype.itemsize * count
