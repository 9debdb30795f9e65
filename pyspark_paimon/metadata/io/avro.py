"""Avro container files with Paimon's default ``zstandard`` block codec (and the other codecs Java can write).

fastavro supports zstd and snappy only through extra C libraries. pyarrow already ships both, so we register
block codec functions backed by pyarrow instead of adding a dependency. The zstd reader decompresses with a
streaming decoder because Java's Avro writer emits zstd frames without a content size.

``manifest.compression`` names the codec of new manifests the way Paimon does (:func:`avro_codec`): ``zstd``
is Avro's ``zstandard``; ``null``, ``deflate``, ``snappy``, ``bzip2`` and ``xz`` are Avro's own names. Other
names (``lz4``...) are refused, because Java's Avro could not read the files.
"""

from __future__ import annotations

import functools
import io
import zlib
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, BinaryIO, Callable, Iterable, Iterator, cast

import fastavro
import fastavro._read as _fastavro_read
import fastavro._write as _fastavro_write
import fastavro.schema
import pyarrow as pa

from pyspark_paimon.errors import CorruptMetadataError, OptionError

_CODEC = "zstandard"
#: Paimon's name of a codec -> Avro's, for the codecs both Java's Avro and this module read and write.
AVRO_CODECS = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "null": "null",
    "none": "null",
    "uncompressed": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "bzip2": "bzip2",
    "xz": "xz",
}


def _write_long(fo: BinaryIO, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    fo.write(bytes(out))


def _read_long(fo: BinaryIO) -> int:
    shift = 0
    result = 0
    while True:
        b = fo.read(1)
        if not b:
            raise EOFError("truncated Avro block")
        byte = b[0]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1)


def _zstd_write_block(fo: BinaryIO, block_bytes: bytes, compression_level: int | None) -> None:
    data = pa.Codec("zstd", compression_level or 1).compress(block_bytes, asbytes=True)
    _write_long(fo, len(data))
    fo.write(data)


def _zstd_read_block(fo: BinaryIO) -> io.BytesIO:
    size = _read_long(fo)
    data = fo.read(size)
    return io.BytesIO(pa.CompressedInputStream(pa.BufferReader(data), "zstd").read())


def _snappy_write_block(fo: BinaryIO, block_bytes: bytes, compression_level: int | None) -> None:
    """Avro's snappy block: raw snappy data followed by the big-endian CRC32 of the uncompressed bytes."""
    data = pa.Codec("snappy").compress(block_bytes, asbytes=True) + zlib.crc32(block_bytes).to_bytes(4, "big")
    _write_long(fo, len(data))
    fo.write(data)


def _snappy_read_block(fo: BinaryIO) -> io.BytesIO:
    size = _read_long(fo)
    data = fo.read(size)
    body, crc = data[:-4], data[-4:]
    length = shift = 0
    for byte in body[:5]:  # raw snappy data starts with the uncompressed length as a varint
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    out = pa.Codec("snappy").decompress(body, decompressed_size=length, asbytes=True)
    if zlib.crc32(out).to_bytes(4, "big") != crc:
        raise ValueError("snappy block checksum mismatch")
    return io.BytesIO(out)


_fastavro_write.BLOCK_WRITERS[_CODEC] = _zstd_write_block  # type: ignore[attr-defined]  # runtime registry
_fastavro_read.BLOCK_READERS[_CODEC] = _zstd_read_block
_fastavro_write.BLOCK_WRITERS["snappy"] = _snappy_write_block  # type: ignore[attr-defined]
_fastavro_read.BLOCK_READERS["snappy"] = _snappy_read_block


def avro_codec(name: str, key: str = "manifest.compression") -> str:
    """Avro's name of the codec Paimon calls ``name`` (option ``key``); refuses codecs Java cannot read."""
    codec = AVRO_CODECS.get(name.strip().lower())
    if codec is None:
        raise OptionError(
            f"Option '{key}' = '{name}' is not an Avro codec Paimon can read; use one of "
            f"{', '.join(sorted(AVRO_CODECS))} (zstd is Paimon's default)."
        )
    return codec


def write_avro(
    schema: dict[str, Any],
    records: Iterable[dict[str, Any]],
    codec: str = _CODEC,
    metadata: dict[str, str] | None = None,
) -> bytes:
    """An Avro container file of ``records``; ``metadata``: extra header entries (Iceberg's manifests carry
    their schema, spec and format version there)."""
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, metadata=metadata)
    return buf.getvalue()


# A damaged file fails in many ways: truncated varints (EOFError), a cut zstd frame (pyarrow OSError), a
# mangled header schema (KeyError, SchemaParseException), bad lengths (ValueError, IndexError).
AVRO_READ_ERRORS = (
    EOFError,
    ValueError,
    IndexError,
    KeyError,
    TypeError,
    OSError,
    fastavro.read.SchemaResolutionError,
    fastavro.schema.SchemaParseException,
)


def corrupt_avro(source: str, error: BaseException) -> CorruptMetadataError:
    return CorruptMetadataError(
        f"Cannot read Avro file {source}: {error}. The file is truncated or corrupt; restore it, or roll the "
        "table back to a snapshot that does not reference it."
    )


def read_avro(data: bytes, source: str) -> Iterator[dict[str, Any]]:
    try:
        yield from cast(Iterator[dict[str, Any]], fastavro.reader(io.BytesIO(data)))
    except AVRO_READ_ERRORS as e:
        raise corrupt_avro(source, e) from e


@dataclass(frozen=True)
class AvroBlocks:
    """An Avro container file's writer schema and its decompressed data blocks, for callers that walk the
    records themselves (``read_long`` ... below) to decode only some of them."""

    writer_schema: Any
    named_schemas: dict[str, Any]
    options: dict[str, Any]
    blocks: list[tuple[bytes, int]]  # (decompressed bytes, record count)


def read_avro_blocks(data: bytes, source: str) -> AvroBlocks:
    try:
        reader = fastavro.block_reader(io.BytesIO(data))
        blocks = [(block.bytes_.getvalue(), block.num_records) for block in reader]  # type: ignore[attr-defined]
        # The writer schema's named types (a reused record name refers to them); fastavro has no public accessor,
        # and its own blocks read with this same dict (fastavro 1.8 to 1.13).
        named = reader._named_schemas  # type: ignore[attr-defined]  # noqa: SLF001
        return AvroBlocks(reader.writer_schema, named, dict(getattr(reader, "options", None) or {}), blocks)
    except AVRO_READ_ERRORS as e:
        raise corrupt_avro(source, e) from e


# fastavro's compiled readers of single values of a decompressed block (an ``io.BytesIO`` over
# ``AvroBlocks.blocks[i][0]``), for readers that look at a few leading fields of every record and decode the rest
# of only some: skipping walks a value without building Python objects. Wrap their use in ``AVRO_READ_ERRORS``
# handling (a truncated block raises ``EOFError``). ``read_record(stream, schema, named_schemas, None, options)``.
# ``VALUE_READERS``: whether this fastavro has them all (1.8 to 1.13 do); without them callers decode whole files.
_VALUE_READER_NAMES = ("read_long", "read_bytes", "skip_utf8", "skip_record", "read_record")
_compiled: Any = _fastavro_read  # the compiled module; its type stubs do not list these cpdef functions
VALUE_READERS = all(hasattr(_compiled, n) for n in _VALUE_READER_NAMES)
if not VALUE_READERS:  # never called then (build_index checks VALUE_READERS); keep the names importable
    _compiled = SimpleNamespace(**dict.fromkeys(_VALUE_READER_NAMES))
read_long: Callable[[BinaryIO], int] = _compiled.read_long  # Avro int and long: zig-zag varints
read_bytes: Callable[[BinaryIO], bytes] = _compiled.read_bytes
skip_string: Callable[[BinaryIO], None] = _compiled.skip_utf8
skip_record: Callable[[BinaryIO, Any, dict[str, Any]], None] = _compiled.skip_record
read_record: Callable[..., dict[str, Any]] = _compiled.read_record


_PROBE_SCHEMA = {
    "type": "record",
    "name": "probe",
    "fields": [
        {"name": "n", "type": "long"},
        {"name": "b", "type": "bytes"},
        {"name": "s", "type": "string"},
        {
            "name": "r",
            "type": {
                "type": "record",
                "name": "probe_r",
                "fields": [
                    {"name": "x", "type": ["null", "long"]},
                    {"name": "y", "type": {"type": "array", "items": "string"}},
                ],
            },
        },
        {
            "name": "t",
            "type": {
                "type": "record",
                "name": "probe_t",
                "fields": [{"name": "x", "type": ["null", "long"]}, {"name": "z", "type": "probe_r"}],
            },
        },
    ],
}


@functools.cache
def value_readers_work() -> bool:
    """Whether the compiled value readers above read a record of a file written by fastavro's public writer as
    expected. They are fastavro internals: a release that changes them must make selective readers fall back to
    whole-file decoding, not report every manifest as corrupt. Checked once per process, on first use."""
    if not VALUE_READERS:
        return False
    record = {
        "n": -3,
        "b": b"\x00\x01",
        "s": "pa",
        "r": {"x": 7, "y": ["a", "b"]},
        "t": {"x": None, "z": {"x": 1, "y": []}},
    }
    try:
        blocks = read_avro_blocks(write_avro(_PROBE_SCHEMA, [record, record], "null"), "probe")
        buffer, count = blocks.blocks[0]
        stream = io.BytesIO(buffer)
        fields = {f["name"]: f["type"] for f in blocks.writer_schema["fields"]}
        ok = count == 2 and read_long(stream) == -3 and read_bytes(stream) == b"\x00\x01"
        skip_string(stream)
        skip_record(stream, fields["r"], blocks.named_schemas)
        ok = ok and read_record(stream, fields["t"], blocks.named_schemas, None, blocks.options) == record["t"]
        return bool(ok and read_long(stream) == -3)  # the second record starts where the first one ended
    except Exception:  # noqa: BLE001 (any failure of an internal API means: do not use it)
        return False
