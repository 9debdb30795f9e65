"""Avro container files with Paimon's default ``zstandard`` block codec.

fastavro supports zstd only through an extra C library. pyarrow already ships zstd, so we register block
codec functions backed by pyarrow instead of adding a dependency. The reader decompresses with a streaming
decoder because Java's Avro writer emits zstd frames without a content size.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO, Iterable, Iterator, cast

import fastavro
import fastavro._read as _fastavro_read
import fastavro._write as _fastavro_write
import fastavro.schema
import pyarrow as pa

from pyspark_paimon.errors import CorruptMetadataError

_CODEC = "zstandard"


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


_fastavro_write.BLOCK_WRITERS[_CODEC] = _zstd_write_block  # type: ignore[attr-defined]  # runtime registry
_fastavro_read.BLOCK_READERS[_CODEC] = _zstd_read_block


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
