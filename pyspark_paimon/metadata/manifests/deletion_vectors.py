"""Deletion vectors (Java's `IndexManifestEntry`, `DeletionVector`): the index manifest, ``DELETION_VECTORS`` index
files and their bitmaps.

A table with ``deletion-vectors.enabled`` keeps, per data file, a bitmap of the row positions that are no
longer live (superseded by a newer version of the key, or deleted). Java's compaction writes them into index
files named by the snapshot's index manifest. A batch read applies them to every data file it reads, so a
bucket whose files are all above level 0 is read without any merge.

Layout, as Java writes it (``DeletionFileWriter``, ``BitmapDeletionVector``, ``Bitmap64DeletionVector``):

* an index file starts with the version byte ``1``;
* the vector of one data file sits at ``offset`` (``_DELETIONS_VECTORS_RANGES.f1``): a BE int32 ``size``, then
  ``size`` bytes of payload, then the BE CRC32 of the payload;
* 32-bit vectors: the payload is the BE magic ``1581511376`` and a RoaringBitmap in the portable format; the
  range's ``length`` equals ``size``;
* 64-bit vectors (``deletion-vectors.bitmap64``): the payload is the magic ``1681511377`` written
  little-endian, an LE int64 count of 32-bit bitmaps, then per bitmap an LE uint32 high key and a portable
  32-bit bitmap; the range's ``length`` is ``size + 8`` (it counts the size and CRC words).

Bitmaps decode per container with numpy (no per-position Python loop): array containers are uint16 lists,
bitmap containers 8 KiB bit sets, run containers (start, length - 1) pairs.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from pyspark_paimon.errors import CorruptMetadataError, OptionError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.index_manifest import KIND_ADD, IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.schema.options import DELETION_VECTORS_MERGE_ON_READ, CoreOptions

__all__ = [
    "DELETION_VECTORS_INDEX",
    "MAGIC_32",
    "MAGIC_64",
    "DeletionFile",
    "deletion_files",
    "read_deletion_vector",
    "decode_deletion_vector",
    "decode_roaring32",
    "decode_roaring64",
    "merge_on_read",
    "refuse_deletion_vector_writes",
    "bucket_vector_files",
    "encode_roaring32",
    "encode_roaring64",
    "encode_roaring32_concat",
    "encode_deletion_vector",
    "write_deletion_vector_file",
]

DELETION_VECTORS_INDEX = "DELETION_VECTORS"
INDEX_VERSION = 1
MAGIC_32 = 1581511376
MAGIC_64 = 1681511377

_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192


@dataclass(frozen=True)
class DeletionFile:
    """Where one data file's deletion vector lives: a byte range of an index file (small and picklable, so
    it travels inside a split to the executor that reads the data file)."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None


def deletion_files(
    fileio: FileIO, index_manifest_path: str, index_file_path: Callable[[IndexManifestEntry], str]
) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
    """Per (partition bytes, bucket): data file name -> its :class:`DeletionFile` (java
    ``DeletionVectorsIndexFile.toDeletionFiles``). ``index_file_path`` places an index file (``index/`` of the
    table, or its bucket directory with ``index-file-in-data-file-dir``); an external path wins."""
    out: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
    for e in read_index_manifest(fileio, index_manifest_path):
        if e.index_type != DELETION_VECTORS_INDEX or not e.dv_ranges:
            continue
        path = e.external_path or index_file_path(e)
        per_bucket = out.setdefault((e.partition, e.bucket), {})
        for name, offset, length, cardinality in e.dv_ranges:
            per_bucket[name] = DeletionFile(path, offset, length, cardinality)
    return out


def bucket_vector_files(entries: list[IndexManifestEntry]) -> dict[tuple[bytes, int], frozenset[str]]:
    """Per (partition, bucket): the names of its ``DELETION_VECTORS`` index files (what a compaction checks
    again at commit time: a vector written meanwhile for one of its inputs is a conflict)."""
    out: dict[tuple[bytes, int], set[str]] = {}
    for e in entries:
        if e.index_type == DELETION_VECTORS_INDEX:
            out.setdefault((e.partition, e.bucket), set()).add(e.file_name)
    return {k: frozenset(v) for k, v in out.items()}


def _ascending_distinct(values: np.ndarray) -> np.ndarray:
    """``values`` sorted without repeats; one comparison pass when they already are (positions from a lookup
    or a vector read back), a sort otherwise (numpy 2.3+'s hash-based ``np.unique`` is far slower)."""
    if len(values) < 2 or bool((values[1:] > values[:-1]).all()):
        return values
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]]


def encode_deletion_vector(positions: np.ndarray, bitmap64: bool = False) -> tuple[bytes, int]:
    """One data file's vector as Java writes it: BE int32 size, the payload, BE CRC32 of the payload. Returns the
    bytes and the range length the index manifest records.

    32-bit (``BitmapDeletionVector``): the payload is the BE magic and a portable 32-bit RoaringBitmap; the range
    length is the payload size. 64-bit (``deletion-vectors.bitmap64``, ``Bitmap64DeletionVector``): the LE magic
    and a portable 64-bit RoaringBitmap; the range length also counts the size and CRC words. The 64-bit record
    is exactly an Iceberg v3 deletion vector blob (``deletion-vector-v1``)."""
    values = _ascending_distinct(np.asarray(positions, dtype=np.int64))
    if len(values) and values[0] < 0:
        raise OptionError(f"A deletion vector position ({int(values[0])}) is negative; positions count rows from 0.")
    if bitmap64:
        payload = struct.pack("<i", MAGIC_64) + encode_roaring64(values)
        return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload)), len(payload) + 8
    if len(values) and values[-1] > 0x7FFFFFFF:
        raise OptionError(
            f"A deletion vector position ({int(values[-1])}) does not fit a 32-bit deletion vector; data files of "
            "more than 2^31 rows need 'deletion-vectors.bitmap64' = 'true'."
        )
    payload = struct.pack(">i", MAGIC_32) + encode_roaring32(values.astype(np.uint32))
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload)), len(payload)


def write_deletion_vector_file(
    fileio: FileIO,
    index_dir: str,
    partition: bytes,
    bucket: int,
    vectors: Mapping[str, np.ndarray],
    bitmap64: bool = False,
) -> IndexManifestEntry:
    """Write the vectors of one bucket (data file name -> deleted positions) into a new ``DELETION_VECTORS``
    index file in ``index_dir`` (Java's ``DeletionFileWriter``: the version byte, then one record per data
    file, its range starting at its size word); returns the index manifest entry naming it. ``bitmap64``: the
    table's ``deletion-vectors.bitmap64``."""
    out = bytearray([INDEX_VERSION])
    ranges: list[tuple[str, int, int, int | None]] = []
    for name, positions in vectors.items():
        values = _ascending_distinct(np.asarray(positions, dtype=np.int64))
        record, length = encode_deletion_vector(values, bitmap64)  # finds them ascending and distinct: one pass
        ranges.append((name, len(out), length, len(values)))
        out += record
    file_name = f"index-{uuid.uuid4()}-0"
    fileio.write_bytes(f"{index_dir}/{file_name}", bytes(out))
    return IndexManifestEntry(
        KIND_ADD, partition, bucket, DELETION_VECTORS_INDEX, file_name, len(out), len(ranges), tuple(ranges)
    )


# ------------------------------------------------------------------------------------------------------
# RoaringBitmap portable format (github.com/RoaringBitmap/RoaringFormatSpec)
# ------------------------------------------------------------------------------------------------------
def _roaring32(buf: bytes, pos: int) -> tuple[np.ndarray, int]:
    """Decode one portable 32-bit bitmap starting at ``pos``: (sorted uint32 values, end position).
    Raises ValueError on a malformed buffer (the caller names the file)."""
    (cookie,) = struct.unpack_from("<I", buf, pos)
    pos += 4
    run_flags: np.ndarray | None = None
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        flag_bytes = (size + 7) // 8
        run_flags = np.unpackbits(np.frombuffer(buf, np.uint8, flag_bytes, pos), bitorder="little")[:size]
        pos += flag_bytes
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        (size,) = struct.unpack_from("<I", buf, pos)
        pos += 4
    else:
        raise ValueError(f"unknown roaring cookie {cookie}")
    header = np.frombuffer(buf, "<u2", 2 * size, pos).astype(np.uint32)
    pos += 4 * size
    keys, cards = header[0::2], header[1::2] + 1
    if run_flags is None or size >= _NO_OFFSET_THRESHOLD:
        pos += 4 * size  # offsets: containers follow one another, so they are not needed
    parts: list[np.ndarray] = []
    for i in range(size):
        base = np.uint32(int(keys[i]) << 16)
        if run_flags is not None and run_flags[i]:
            (n_runs,) = struct.unpack_from("<H", buf, pos)
            pos += 2
            runs = np.frombuffer(buf, "<u2", 2 * n_runs, pos).astype(np.int64)
            pos += 4 * n_runs
            starts, counts = runs[0::2], runs[1::2] + 1
            ends = np.cumsum(counts)
            # value k of the run r is starts[r] + (k - first index of r): one arange, shifted per run
            values = np.arange(int(ends[-1]) if n_runs else 0, dtype=np.int64) + np.repeat(
                starts - (ends - counts), counts
            )
            parts.append(values.astype(np.uint32) + base)
        elif cards[i] > _ARRAY_MAX:
            bits = np.unpackbits(np.frombuffer(buf, np.uint8, _BITMAP_BYTES, pos), bitorder="little")
            pos += _BITMAP_BYTES
            parts.append(np.flatnonzero(bits).astype(np.uint32) + base)
        else:
            n = int(cards[i])
            parts.append(np.frombuffer(buf, "<u2", n, pos).astype(np.uint32) + base)
            pos += 2 * n
    if pos > len(buf):
        raise ValueError("bitmap is truncated")
    return (np.concatenate(parts) if parts else np.empty(0, np.uint32)), pos


def encode_roaring32(values: np.ndarray) -> bytes:
    """The portable serialization (without run containers) of ascending unique uint32 ``values``: the
    no-run cookie, the container count, per container its key and cardinality - 1, the containers' offsets,
    then array containers (uint16 values) or, above 4096 values, 8 KiB bitmap containers."""
    values = np.asarray(values, dtype=np.uint32)
    return encode_roaring32_concat(values, np.array([0, len(values)], dtype=np.int64))[0]


def _put(out: np.ndarray, at: np.ndarray, values: np.ndarray, dtype: str) -> None:
    """Scatter little-endian ``values`` (of ``dtype``) into the byte array ``out`` at byte positions ``at``."""
    width = np.dtype(dtype).itemsize
    raw = np.asarray(values).astype(dtype).view(np.uint8).reshape(len(at), width)
    out[at[:, None] + np.arange(width)] = raw


def encode_roaring32_concat(values: np.ndarray, bounds: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Many bitmaps at once, each as :func:`encode_roaring32` writes it, concatenated: bitmap ``g`` holds
    ``values[bounds[g] : bounds[g + 1]]`` (ascending unique uint32). Returns the bytes and each bitmap's byte
    length. Vectorised over all containers (a bitmap index writes one bitmap per distinct value of a column);
    only the rare bitmap containers (more than 4096 values under one 16-bit key) are built one by one."""
    values = np.asarray(values, dtype=np.uint32)
    bounds = np.asarray(bounds, dtype=np.int64)
    groups = len(bounds) - 1
    n = len(values)
    highs = (values >> np.uint32(16)).astype(np.int64)
    group_of = np.repeat(np.arange(groups), np.diff(bounds))
    first = np.zeros(n, dtype=bool)
    first[bounds[:-1][bounds[:-1] < n]] = True
    if n:
        first[1:] |= highs[1:] != highs[:-1]
    starts = np.flatnonzero(first)  # each container's first value
    cards = np.diff(np.r_[starts, n]).astype(np.int64)
    cont_group = group_of[starts]
    per_group = np.bincount(cont_group, minlength=groups).astype(np.int64)
    first_cont = np.r_[0, np.cumsum(per_group)][:-1]  # index of each group's first container
    local = np.arange(len(starts)) - first_cont[cont_group]
    body = np.where(cards > _ARRAY_MAX, _BITMAP_BYTES, 2 * cards)
    body_before = np.cumsum(body) - body  # bodies of all earlier containers
    body_in_group = body_before - np.r_[0, np.cumsum(body)][first_cont[cont_group]]
    head = 8 + 8 * per_group
    body_total = np.bincount(cont_group, weights=body, minlength=groups).astype(np.int64)
    lengths = head + body_total
    group_at = np.r_[0, np.cumsum(lengths)][:-1]
    out = np.zeros(int(lengths.sum()), dtype=np.uint8)
    _put(out, group_at, np.full(groups, _SERIAL_COOKIE_NO_RUN), "<u4")
    _put(out, group_at + 4, per_group, "<u4")
    cont_at = group_at[cont_group]
    _put(out, cont_at + 8 + 4 * local, highs[starts], "<u2")
    _put(out, cont_at + 10 + 4 * local, cards - 1, "<u2")
    offsets = head[cont_group] + body_in_group
    _put(out, cont_at + 8 + 4 * per_group[cont_group] + 4 * local, offsets, "<u4")
    body_at = cont_at + offsets
    arrays = cards <= _ARRAY_MAX
    in_array = np.repeat(arrays, cards)
    cont_of = np.repeat(np.arange(len(starts)), cards)
    rank = np.arange(n) - starts[cont_of]
    lows = values & np.uint32(0xFFFF)
    _put(out, (body_at[cont_of] + 2 * rank)[in_array], lows[in_array], "<u2")
    for c in np.flatnonzero(~arrays).tolist():  # bitmap containers: one 8 KiB bit set each
        bits = np.zeros(1 << 16, dtype=bool)
        bits[lows[starts[c] : starts[c] + cards[c]]] = True
        out[body_at[c] : body_at[c] + _BITMAP_BYTES] = np.packbits(bits, bitorder="little")
    return out.tobytes(), lengths


def encode_roaring64(values: np.ndarray) -> bytes:
    """The portable 64-bit serialization of ascending unique non-negative int64 ``values``: the LE int64 count of
    32-bit bitmaps, then per high 32-bit key (ascending) its LE uint32 key and the portable 32-bit bitmap of
    the low halves (what Java's ``RoaringBitmap64`` and Iceberg's ``RoaringPositionBitmap`` write)."""
    values = np.asarray(values, dtype=np.int64)
    highs = (values >> np.int64(32)).astype(np.uint32)
    starts = np.flatnonzero(np.r_[True, highs[1:] != highs[:-1]]) if len(highs) else np.empty(0, np.int64)
    ends = np.r_[starts[1:], len(values)]
    parts = [struct.pack("<q", len(starts))]
    for start, end in zip(starts.tolist(), ends.tolist()):  # one step per 2^32 positions
        low = (values[start:end] & np.int64(0xFFFFFFFF)).astype(np.uint32)
        parts.append(struct.pack("<I", int(highs[start])) + encode_roaring32(low))
    return b"".join(parts)


def decode_roaring32(buf: bytes) -> np.ndarray:
    """The values of a portable 32-bit RoaringBitmap, ascending, as int64."""
    values, _ = _roaring32(buf, 0)
    return values.astype(np.int64)


def decode_roaring64(buf: bytes) -> np.ndarray:
    """The values of a portable 64-bit RoaringBitmap (LE int64 count, then per 32-bit bitmap its LE uint32
    high key and the bitmap), ascending, as int64."""
    (count,) = struct.unpack_from("<q", buf, 0)
    if count < 0:
        raise ValueError(f"negative bitmap count {count}")
    pos = 8
    parts: list[np.ndarray] = []
    for _ in range(count):
        (high,) = struct.unpack_from("<I", buf, pos)
        values, pos = _roaring32(buf, pos + 4)
        parts.append(values.astype(np.int64) + (np.int64(high) << np.int64(32)))
    return np.concatenate(parts) if parts else np.empty(0, np.int64)


# ------------------------------------------------------------------------------------------------------
# One data file's vector
# ------------------------------------------------------------------------------------------------------
def decode_deletion_vector(record: bytes, expected_length: int | None, where: str) -> np.ndarray:
    """Deleted positions of one serialized vector (size word, payload, CRC word), ascending int64.

    Java trusts the CRC; we check it, so a damaged index file is an error instead of resurrected rows.
    ``where`` names the index file and data file in errors.
    """

    def corrupt(why: str) -> CorruptMetadataError:
        return CorruptMetadataError(
            f"Deletion vector {where} is corrupt: {why}. Restore the index file, or roll the table back to a "
            "snapshot that does not reference it (t.maintenance.rollback_to)."
        )

    if len(record) < 12:
        raise corrupt(f"only {len(record)} bytes")
    (size,) = struct.unpack_from(">i", record, 0)
    if size < 4 or 4 + size + 4 > len(record):
        raise corrupt(f"its size word says {size} bytes, but the range holds {len(record) - 8}")
    payload = record[4 : 4 + size]
    (crc,) = struct.unpack_from(">I", record, 4 + size)
    if zlib.crc32(payload) != crc:
        raise corrupt(f"CRC32 mismatch (stored {crc:#010x}, computed {zlib.crc32(payload):#010x})")
    (magic_be,) = struct.unpack_from(">i", payload, 0)
    (magic_le,) = struct.unpack_from("<i", payload, 0)
    try:
        if magic_be == MAGIC_32:
            if expected_length is not None and expected_length != size:
                raise corrupt(f"size {size} does not match the index manifest's length {expected_length}")
            return decode_roaring32(payload[4:])
        if magic_le == MAGIC_64:
            if expected_length is not None and expected_length != size + 8:
                raise corrupt(f"size {size} does not match the index manifest's length {expected_length} - 8")
            return decode_roaring64(payload[4:])
    except (ValueError, struct.error) as exc:
        raise corrupt(f"the bitmap cannot be decoded ({exc})") from exc
    raise corrupt(f"unknown magic number {magic_be} (expected {MAGIC_32}, or {MAGIC_64} little-endian)")


def read_deletion_vector(fileio: FileIO, dfile: DeletionFile, data_file: str) -> np.ndarray:
    """The deleted row positions of ``data_file`` (ascending int64), read from its range of the index file."""
    where = f"of data file '{data_file}' in index file {fileio.uri(dfile.path)} at offset {dfile.offset}"
    # 32-bit ranges count only the payload; read the size and CRC words around it too (64-bit ranges
    # already include them, so a few bytes more are read there and ignored).
    try:
        with fileio.open_input(dfile.path) as fh:
            version = fh.read(1)
            fh.seek(dfile.offset)
            record = fh.read(dfile.length + 8)
    except FileNotFoundError:
        raise CorruptMetadataError(
            f"Deletion vector {where} cannot be read: the index file is missing, but the snapshot being read "
            "references it. Restore it, or roll the table back to a snapshot that does not reference it."
        ) from None
    if version != bytes([INDEX_VERSION]):
        raise CorruptMetadataError(
            f"Deletion vector {where}: the index file starts with version {version!r}, expected {INDEX_VERSION}; "
            "it is not a deletion-vector file or is corrupt. Restore it, or roll the table back."
        )
    positions = decode_deletion_vector(record, dfile.length, where)
    if dfile.cardinality is not None and len(positions) != dfile.cardinality:
        raise CorruptMetadataError(
            f"Deletion vector {where} holds {len(positions)} positions, but the index manifest says "
            f"{dfile.cardinality}. Restore the index file, or roll the table back to an earlier snapshot."
        )
    return positions


# ------------------------------------------------------------------------------------------------------
# Options
# ------------------------------------------------------------------------------------------------------
def merge_on_read(options: Mapping[str, str]) -> bool:
    """``deletion-vectors.merge-on-read``: batch reads of a deletion-vector table also merge level-0 files
    (Java's ``CoreOptions.batchScanSkipLevel0``; default false: uncompacted data is invisible)."""
    return CoreOptions(options).get(DELETION_VECTORS_MERGE_ON_READ)


def refuse_deletion_vector_writes(deletion_vectors_enabled: bool, table: str, overwrite: bool = True) -> None:
    """Chain-table maintenance on a deletion-vector snapshot branch is refused (chain reads of deletion-vector
    tables are not supported either). Plain writes and overwrites of deletion-vector tables are supported: the
    automatic compaction after them (``datasource.compact.compact.auto_compact``) moves their level-0 files up and
    writes the vectors, and an overwrite drops the overwritten buckets' vectors. ``overwrite`` False: nothing
    to refuse (an append)."""
    if deletion_vectors_enabled and overwrite:
        raise OptionError(
            f"Table {table} has 'deletion-vectors.enabled' = 'true'; pyspark-paimon does not maintain chain tables "
            "on deletion vectors yet. Set 'deletion-vectors.enabled' = 'false' on the chain's branches, or "
            "maintain the chain with Paimon."
        )
