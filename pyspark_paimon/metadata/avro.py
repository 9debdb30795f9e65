"""Avro container files with Paimon's default ``zstandard`` block codec (and the other codecs Java can write).

fastavro supports zstd and snappy only through extra C libraries. pyarrow already ships both, so we register
block codec functions backed by pyarrow instead of adding a dependency. The zstd reader decompresses with a
streaming decoder because Java's Avro writer emits zstd frames without a content size.

``manifest.compression`` names the codec of new manifests the way Paimon does (:func:`avro_codec`): ``zstd``
is Avro's ``zstandard``; ``null``, ``deflate``, ``snappy``, ``bzip2`` and ``xz`` are Avro's own names. Other
names (``lz4``...) are refused, because Java's Avro could not read the files.
"""

from __future__ import annotations

import io
import zlib
from typing import Any, BinaryIO, Iterable, Iterator, cast

import fastavro
import fastavro._read as _fastavro_read
import fastavro._write as _fastavro_write
import fastavro.schema
import pyarrow as pa

from pyspark_paimon.errors import CorruptMetadataError, OptionError

_CODEC = "zstandard"
#: Paimon's name of a codec -> Avro's, for the codecs both Java's Avro and this module read and write.
AVRO_CODECS = {"zstd": "zstandard", "zstandard": "zstandard", "null": "null", "none": "null",
               "uncompressed": "null", "deflate": "deflate", "snappy": "snappy", "bzip2": "bzip2", "xz": "xz"}


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
        raise OptionError(f"Option '{key}' = '{name}' is not an Avro codec Paimon can read; use one of "
                          f"{', '.join(sorted(AVRO_CODECS))} (zstd is Paimon's default).")
    return codec


def write_avro(schema: dict[str, Any], records: Iterable[dict[str, Any]], codec: str = _CODEC) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


def read_avro(data: bytes, source: str) -> Iterator[dict[str, Any]]:
    try:
        yield from cast(Iterator[dict[str, Any]], fastavro.reader(io.BytesIO(data)))
    # A damaged file fails in many ways: truncated varints (EOFError), a cut zstd frame (pyarrow OSError), a
    # mangled header schema (KeyError, SchemaParseException), bad lengths (ValueError, IndexError).
    except (EOFError, ValueError, IndexError, KeyError, TypeError, OSError, fastavro.read.SchemaResolutionError,
            fastavro.schema.SchemaParseException) as e:
        raise CorruptMetadataError(
            f"Cannot read Avro file {source}: {e}. The file is truncated or corrupt; restore it, or roll the "
            "table back to a snapshot that does not reference it.") from e
