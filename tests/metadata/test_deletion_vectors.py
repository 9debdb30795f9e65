"""Deletion vectors: RoaringBitmap decoding (array, bitmap and run containers; 32 and 64 bit), the record
framing Java writes (size, magic, CRC32), corrupt vectors, and the index manifest.

The reference vectors in ``fixtures/roaring`` were written by Java RoaringBitmap and CRoaring (see the README
there); the small encoder below builds the edge cases (few containers without offsets, many with them).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from pyspark_paimon.errors import CorruptMetadataError, OptionError
from pyspark_paimon.metadata.io.avro import write_avro
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests import deletion_vectors as dv
from pyspark_paimon.metadata.manifests.deletion_vectors import (
    MAGIC_32,
    MAGIC_64,
    DeletionFile,
    decode_deletion_vector,
    decode_roaring32,
    decode_roaring64,
    deletion_files,
    merge_on_read,
    read_deletion_vector,
    refuse_deletion_vector_writes,
)
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange, rewrite_index_manifest

FIXTURES = Path(__file__).parent / "fixtures" / "roaring"


# ------------------------------------------------------------------------------------------------ encoder
def encode_roaring32(values: list[int], runs: bool = True) -> bytes:
    """A portable 32-bit bitmap of ``values``: run containers where ``runs`` and a run is shorter, else
    array (<= 4096 values) or bitmap containers. Test helper, written from the format spec."""
    by_key: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        by_key.setdefault(v >> 16, []).append(v & 0xFFFF)
    keys = sorted(by_key)
    bodies: list[bytes] = []
    is_run: list[bool] = []
    for k in keys:
        low = by_key[k]
        pairs: list[tuple[int, int]] = []
        for v in low:
            if pairs and pairs[-1][0] + pairs[-1][1] + 1 == v:
                pairs[-1] = (pairs[-1][0], pairs[-1][1] + 1)
            else:
                pairs.append((v, 0))
        run_size = 2 + 4 * len(pairs)
        plain_size = 2 * len(low) if len(low) <= 4096 else 8192
        if runs and run_size < plain_size:
            bodies.append(struct.pack("<H", len(pairs)) + b"".join(struct.pack("<HH", s, n) for s, n in pairs))
            is_run.append(True)
        elif len(low) <= 4096:
            bodies.append(struct.pack(f"<{len(low)}H", *low))
            is_run.append(False)
        else:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[low] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
            is_run.append(False)
    size = len(keys)
    header = b"".join(struct.pack("<HH", k, len(by_key[k]) - 1) for k in keys)
    if any(is_run):
        flags = bytearray((size + 7) // 8)
        for i, r in enumerate(is_run):
            if r:
                flags[i // 8] |= 1 << (i % 8)
        out = struct.pack("<I", 12347 | ((size - 1) << 16)) + bytes(flags) + header
        with_offsets = size >= 4
    else:
        out = struct.pack("<II", 12346, size) + header
        with_offsets = True
    if with_offsets:
        pos = len(out) + 4 * size
        for b in bodies:
            out += struct.pack("<I", pos)
            pos += len(b)
    return out + b"".join(bodies)


def encode_roaring64(values: list[int]) -> bytes:
    by_high: dict[int, list[int]] = {}
    for v in sorted(set(values)):
        by_high.setdefault(v >> 32, []).append(v & 0xFFFFFFFF)
    return struct.pack("<q", len(by_high)) + b"".join(
        struct.pack("<I", h) + encode_roaring32(low) for h, low in sorted(by_high.items())
    )


def record32(values: list[int]) -> bytes:
    """One 32-bit vector as Java frames it: BE size, BE magic + bitmap, BE CRC32 of magic + bitmap."""
    payload = struct.pack(">i", MAGIC_32) + encode_roaring32(values)
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


def record64(values: list[int]) -> bytes:
    payload = struct.pack("<i", MAGIC_64) + encode_roaring64(values)
    return struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))


# ------------------------------------------------------------------------------------------------ vectors
def _spec_values() -> np.ndarray:
    return np.concatenate([np.arange(0, 100000, 1000), 3 * np.arange(100000, 200000), np.arange(700000, 800000)])


@pytest.mark.parametrize("name", ["bitmapwithoutruns.bin", "bitmapwithruns.bin"])
def test_reference_bitmaps_of_the_format_spec(name: str) -> None:
    """Java RoaringBitmap's own serialization (array, bitmap and run containers, with offset headers)."""
    got = decode_roaring32((FIXTURES / name).read_bytes())
    np.testing.assert_array_equal(got, np.sort(_spec_values()))


def test_reference_portable_64_bit_bitmap() -> None:
    values = []
    for high in (0, 1):
        base = high << 32
        values += [base + v for v in range(0x0, 0x9001)] + [base + v for v in range(0xA000, 0x10001)]
        values += [base + 0x20000, base + 0x20005] + [base + 0x80000 + v for v in range(0, 0x10000, 2)]
    np.testing.assert_array_equal(
        decode_roaring64((FIXTURES / "portable_bitmap64.bin").read_bytes()), np.array(sorted(values), dtype=np.int64)
    )


@pytest.mark.parametrize(
    "values",
    [
        [],
        [5],
        [0, 3, 65535, 65536, 70000],  # arrays in two containers, run cookie not used
        list(range(100, 200)) + [300],  # one run container and nothing else: no offset header
        list(range(0, 65536, 2)),  # one bitmap container
        list(range(0, 20000, 3)) + list(range(65536 * 3, 65536 * 3 + 5000)) + [65536 * 5 + 1, 65536 * 9],  # mixed
        [65536 * k + 7 for k in range(6)] + list(range(65536 * 7, 65536 * 8)),  # >= 4 containers with a run: offsets
    ],
    ids=["empty", "one", "arrays", "run-no-offsets", "bitmap", "mixed", "offsets-with-runs"],
)
def test_container_kinds_round_trip(values: list[int]) -> None:
    expected = np.array(sorted(set(values)), dtype=np.int64)
    np.testing.assert_array_equal(decode_roaring32(encode_roaring32(values)), expected)
    np.testing.assert_array_equal(decode_roaring32(encode_roaring32(values, runs=False)), expected)


def test_64_bit_bitmap_over_several_high_keys() -> None:
    values = [1, 2, 3, (1 << 32) + 5, (7 << 32) + 65536 * 2 + 1, (7 << 32) + 65536 * 2 + 2]
    np.testing.assert_array_equal(decode_roaring64(encode_roaring64(values)), np.array(values, dtype=np.int64))


def test_records_of_both_widths() -> None:
    values = [0, 2, 4, 100, 100000]
    rec = record32(values)
    np.testing.assert_array_equal(decode_deletion_vector(rec, len(rec) - 8, "x"), values)
    rec64 = record64(values)
    np.testing.assert_array_equal(decode_deletion_vector(rec64, len(rec64), "x"), values)  # length counts framing


# ------------------------------------------------------------------------------------------------ corrupt
def _index_file(tmp_path: Path, records: list[bytes]) -> tuple[FileIO, str, list[DeletionFile]]:
    data = bytearray(b"\x01")
    files = []
    path = str(tmp_path / "index-abc-0")
    for rec in records:
        files.append(DeletionFile(path, len(data), len(rec) - 8, None))
        data += rec
    Path(path).write_bytes(bytes(data))
    fileio, _ = FileIO.for_uri(str(tmp_path), {})
    return fileio, path, files


def test_read_from_an_index_file(tmp_path: Path) -> None:
    fileio, _, files = _index_file(tmp_path, [record32([1, 2]), record32(list(range(5000)))])
    np.testing.assert_array_equal(read_deletion_vector(fileio, files[0], "data-1.parquet"), [1, 2])
    np.testing.assert_array_equal(read_deletion_vector(fileio, files[1], "data-2.parquet"), np.arange(5000))


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda rec: rec[:-1] + bytes([rec[-1] ^ 1]), "CRC32 mismatch"),
        (lambda rec: rec[:10] + bytes([rec[10] ^ 0xFF]) + rec[11:], "CRC32 mismatch"),
        (lambda rec: rec[:4] + b"\x00\x00\x00\x01" + rec[8:], "CRC32 mismatch"),
    ],
    ids=["crc", "bitmap-byte", "magic"],
)
def test_corrupt_vector_names_the_files(tmp_path: Path, damage: object, message: str) -> None:
    rec = damage(record32([3, 4, 5]))  # type: ignore[operator]
    fileio, path, files = _index_file(tmp_path, [rec])
    with pytest.raises(CorruptMetadataError, match=message) as info:
        read_deletion_vector(fileio, files[0], "data-7.parquet")
    assert "data-7.parquet" in str(info.value) and "index-abc-0" in str(info.value)
    assert "roll the table back" in str(info.value)


def test_wrong_magic_with_a_valid_crc(tmp_path: Path) -> None:
    payload = struct.pack(">i", 42) + encode_roaring32([1])
    rec = struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    fileio, _, files = _index_file(tmp_path, [rec])
    with pytest.raises(CorruptMetadataError, match="unknown magic number 42"):
        read_deletion_vector(fileio, files[0], "data-1.parquet")


def test_size_and_cardinality_mismatches(tmp_path: Path) -> None:
    rec = record32([1, 2, 3])
    fileio, path, files = _index_file(tmp_path, [rec])
    with pytest.raises(CorruptMetadataError, match="does not match the index manifest's length"):
        read_deletion_vector(fileio, DeletionFile(path, 1, len(rec) - 7, None), "d")
    with pytest.raises(CorruptMetadataError, match="holds 3 positions, but the index manifest says 4"):
        read_deletion_vector(fileio, DeletionFile(path, 1, len(rec) - 8, 4), "d")
    with pytest.raises(CorruptMetadataError, match="size word"):
        decode_deletion_vector(struct.pack(">i", 1000) + rec[4:], None, "d")


def test_bad_version_and_missing_file(tmp_path: Path) -> None:
    fileio, path, files = _index_file(tmp_path, [record32([1])])
    Path(path).write_bytes(b"\x02" + Path(path).read_bytes()[1:])
    with pytest.raises(CorruptMetadataError, match="version"):
        read_deletion_vector(fileio, files[0], "d")
    with pytest.raises(CorruptMetadataError, match="missing"):
        read_deletion_vector(fileio, DeletionFile(str(tmp_path / "gone"), 1, 10), "d")


def test_truncated_bitmap_is_corrupt() -> None:
    payload = struct.pack(">i", MAGIC_32) + encode_roaring32(list(range(0, 9000, 2)))[:-100]
    rec = struct.pack(">i", len(payload)) + payload + struct.pack(">I", zlib.crc32(payload))
    with pytest.raises(CorruptMetadataError, match="cannot be decoded"):
        decode_deletion_vector(rec, None, "d")


# ------------------------------------------------------------------------------------------------ manifest
_RANGE = {
    "type": "record",
    "name": "r_ranges",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        {"name": "_CARDINALITY", "type": ["null", "long"], "default": None},
    ],
}
_INDEX_SCHEMA = {
    "type": "record",
    "name": "record",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_DELETIONS_VECTORS_RANGES", "type": ["null", {"type": "array", "items": _RANGE}], "default": None},
        {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": None},
    ],
}


def _entry(kind: int, bucket: int, index_type: str, name: str, ranges: list | None) -> dict:
    return {
        "_VERSION": 1,
        "_KIND": kind,
        "_PARTITION": b"\x00" * 12,
        "_BUCKET": bucket,
        "_INDEX_TYPE": index_type,
        "_FILE_NAME": name,
        "_FILE_SIZE": 10,
        "_ROW_COUNT": len(ranges or []),
        "_DELETIONS_VECTORS_RANGES": ranges,
        "_EXTERNAL_PATH": None,
    }


def test_index_manifest_to_deletion_files(tmp_path: Path) -> None:
    records = [
        _entry(
            0,
            0,
            "DELETION_VECTORS",
            "index-1",
            [
                {"f0": "data-a", "f1": 1, "f2": 20, "_CARDINALITY": 3},
                {"f0": "data-b", "f1": 29, "f2": 22, "_CARDINALITY": None},
            ],
        ),
        _entry(0, 1, "HASH", "index-2", None),
        _entry(0, 1, "DELETION_VECTORS", "index-3", [{"f0": "data-c", "f1": 1, "f2": 5, "_CARDINALITY": 1}]),
        _entry(1, 1, "DELETION_VECTORS", "index-3", None),  # deleted again: no vectors for bucket 1
    ]
    (tmp_path / "index-manifest-x").write_bytes(write_avro(_INDEX_SCHEMA, records))
    fileio, _ = FileIO.for_uri(str(tmp_path), {})
    got = deletion_files(fileio, str(tmp_path / "index-manifest-x"), lambda e: f"/t/index/{e.file_name}")
    assert got == {
        (b"\x00" * 12, 0): {
            "data-a": DeletionFile("/t/index/index-1", 1, 20, 3),
            "data-b": DeletionFile("/t/index/index-1", 29, 22, None),
        }
    }
    with pytest.raises(CorruptMetadataError, match="Index manifest .* is missing"):
        deletion_files(fileio, str(tmp_path / "nope"), lambda e: e.file_name)


def test_options() -> None:
    assert merge_on_read({}) is False and merge_on_read({"deletion-vectors.merge-on-read": "TRUE"}) is True
    with pytest.raises(OptionError, match="deletion-vectors.merge-on-read"):
        merge_on_read({"deletion-vectors.merge-on-read": "maybe"})
    refuse_deletion_vector_writes(False, "t")
    refuse_deletion_vector_writes(True, "t", overwrite=False)
    with pytest.raises(OptionError, match="does not maintain chain tables on deletion vectors"):
        refuse_deletion_vector_writes(True, "t")


# ------------------------------------------------------------------------------------------------ writing
@pytest.mark.parametrize(
    "values",
    [[], [0], [5, 9, 70000], list(range(0, 10000, 2)), list(range(5000)) + [1 << 20, (1 << 31) - 1]],
)
def test_written_bitmaps_are_the_portable_format(values: list[int]) -> None:
    """Our encoder writes exactly what the spec helper above writes without run containers (array and
    bitmap containers, offsets always present), and the decoder reads it back."""
    encoded = dv.encode_roaring32(np.array(values, dtype=np.uint32))
    assert encoded == encode_roaring32(values, runs=False)
    assert decode_roaring32(encoded).tolist() == values
    record, length = dv.encode_deletion_vector(np.array(values[::-1] + values, dtype=np.int64))
    assert decode_deletion_vector(record, length, "x").tolist() == values and length == len(record) - 8


def test_position_beyond_32_bits_is_refused() -> None:
    with pytest.raises(OptionError, match="deletion-vectors.bitmap64"):
        dv.encode_deletion_vector(np.array([1 << 31], dtype=np.int64))


def test_written_index_file_and_manifest_read_back(tmp_path: Path) -> None:
    """A bucket's vectors in one index file (version byte, one framed record per data file), named by an index
    manifest written from scratch, then replaced in a second one that keeps the other bucket's entry."""
    fileio, _ = FileIO.for_uri(str(tmp_path), {})
    part = b"\x00" * 12
    first = dv.write_deletion_vector_file(
        fileio, str(tmp_path), part, 0, {"data-a": np.array([3, 1]), "data-b": np.arange(5000)}
    )
    other = dv.write_deletion_vector_file(fileio, str(tmp_path), part, 1, {"data-c": np.array([0])})
    assert first.row_count == 2 and first.file_size == (tmp_path / first.file_name).stat().st_size
    name = rewrite_index_manifest(fileio, str(tmp_path), None, IndexChange(added=(first, other)), "zstandard")
    assert name is not None
    got = deletion_files(fileio, str(tmp_path / name), lambda e: str(tmp_path / e.file_name))
    assert read_deletion_vector(fileio, got[(part, 0)]["data-a"], "data-a").tolist() == [1, 3]
    assert read_deletion_vector(fileio, got[(part, 0)]["data-b"], "data-b").tolist() == list(range(5000))
    assert got[(part, 0)]["data-b"].cardinality == 5000
    second = dv.write_deletion_vector_file(fileio, str(tmp_path), part, 0, {"data-a": np.array([1, 2, 3])})
    again = rewrite_index_manifest(fileio, str(tmp_path), name, IndexChange(added=(second,)), "zstandard")
    assert again is not None
    got = deletion_files(fileio, str(tmp_path / again), lambda e: str(tmp_path / e.file_name))
    assert set(got[(part, 0)]) == {"data-a"} and set(got[(part, 1)]) == {"data-c"}
    assert read_deletion_vector(fileio, got[(part, 0)]["data-a"], "data-a").tolist() == [1, 2, 3]
    both = IndexChange(frozenset({(part, 0, dv.DELETION_VECTORS_INDEX), (part, 1, dv.DELETION_VECTORS_INDEX)}))
    assert rewrite_index_manifest(fileio, str(tmp_path), again, both, "zstandard") is None
