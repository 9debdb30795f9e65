"""A manifest file indexed by the leading fields of its entries, with each entry's data file decoded on demand.

Planning one partition of a big table still has to look at every entry of a manifest that spans many
partitions (a merged manifest usually spans all of them), but it needs the data file metadata (names,
statistics, ...) of only the entries it keeps. Avro has no per-record lengths, so the index walks every record
once: it reads the entry's kind, partition, bucket, total bucket count and the data file's size (for the scan's
counters), remembers where the ``_FILE`` record starts, and skips the rest without building Python objects.
The kept entries' ``_FILE`` records are then decoded from those positions. The index holds the decompressed
blocks, so later reads with other filters, or a full read, never decompress or walk the file again.

Only the record layout Java writes (and so pypaimon and this package) is indexed; any other layout (or a
fastavro without the compiled value readers) returns ``None`` and the caller decodes the file whole.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.io.avro import (
    AVRO_READ_ERRORS,
    VALUE_READERS,
    corrupt_avro,
    read_avro_blocks,
    read_bytes,
    read_long,
    read_record,
    skip_record,
    skip_string,
    value_readers_work,
)

#: The top-level fields of a manifest entry, in the order Java writes them.
_ENTRY_LAYOUT = (
    ("_VERSION", "int"),
    ("_KIND", "int"),
    ("_PARTITION", "bytes"),
    ("_BUCKET", "int"),
    ("_TOTAL_BUCKETS", "int"),
)
#: The leading fields of the ``_FILE`` record the index reads (the rest is skipped).
_FILE_LAYOUT = (("_FILE_NAME", "string"), ("_FILE_SIZE", "long"))


@dataclass
class ManifestIndex:
    """Per entry of one manifest file (same positions in every list): kind, partition (serialized BinaryRow),
    bucket, total buckets, data file size, and where its ``_FILE`` record starts in ``buffers[block]``."""

    source: str
    version: int
    file_schema: dict[str, Any]
    named_schemas: dict[str, Any]
    options: dict[str, Any]
    buffers: list[bytes]
    kinds: list[int]
    partitions: list[bytes]
    buckets: list[int]
    total_buckets: list[int]
    file_sizes: list[int]
    blocks: list[int]
    offsets: list[int]

    def __len__(self) -> int:
        return len(self.kinds)

    def file_records(self, positions: list[int]) -> list[dict[str, Any]]:
        """The decoded ``_FILE`` records (fastavro dicts) of the entries at ``positions``."""
        streams: dict[int, io.BytesIO] = {}
        out = []
        try:
            for i in positions:
                block = self.blocks[i]
                stream = streams.get(block)
                if stream is None:  # one stream per block per call: several threads may read one index
                    stream = streams[block] = io.BytesIO(self.buffers[block])
                stream.seek(self.offsets[i])
                out.append(read_record(stream, self.file_schema, self.named_schemas, None, self.options))
        except AVRO_READ_ERRORS as e:
            raise corrupt_avro(self.source, e) from e
        return out


def _field_types(schema: Any) -> list[tuple[str, Any]] | None:
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    return [(f.get("name"), f.get("type")) for f in schema.get("fields", [])]


def build_index(data: bytes, source: str, version: int) -> ManifestIndex | None:
    """Index the manifest file ``data`` (read from ``source``); ``None`` when its writer schema is not laid out
    as Java writes it. Every entry must carry format ``version`` (:class:`CorruptMetadataError` otherwise)."""
    if not VALUE_READERS or not value_readers_work():
        return None
    avro = read_avro_blocks(data, source)
    top = _field_types(avro.writer_schema)
    if top is None or len(top) != len(_ENTRY_LAYOUT) + 1 or tuple(top[:-1]) != _ENTRY_LAYOUT or top[-1][0] != "_FILE":
        return None
    file_schema = top[-1][1]
    file_fields = _field_types(file_schema)
    if file_fields is None or tuple(file_fields[:2]) != _FILE_LAYOUT:
        return None
    rest = {"type": "record", "name": f"{file_schema.get('name', '_FILE')}__rest", "fields": file_schema["fields"][2:]}
    kinds: list[int] = []
    partitions: list[bytes] = []
    buckets: list[int] = []
    total_buckets: list[int] = []
    sizes: list[int] = []
    blocks: list[int] = []
    offsets: list[int] = []
    buffers = [buffer for buffer, _ in avro.blocks]
    try:
        named = avro.named_schemas
        for block, (buffer, count) in enumerate(avro.blocks):
            stream = io.BytesIO(buffer)
            for _ in range(count):
                if read_long(stream) != version:
                    raise CorruptMetadataError(
                        f"Manifest {source} has an entry of another format version; only version {version} is "
                        "supported."
                    )
                kinds.append(read_long(stream))
                partitions.append(read_bytes(stream))
                buckets.append(read_long(stream))
                total_buckets.append(read_long(stream))
                offsets.append(stream.tell())
                skip_string(stream)
                sizes.append(read_long(stream))
                skip_record(stream, rest, named)
            blocks.extend([block] * count)
            if stream.tell() != len(buffer):
                raise ValueError(f"block {block} has {len(buffer) - stream.tell()} bytes after its last record")
    except AVRO_READ_ERRORS as e:
        raise corrupt_avro(source, e) from e
    return ManifestIndex(
        source,
        version,
        file_schema,
        avro.named_schemas,
        avro.options,
        buffers,
        kinds,
        partitions,
        buckets,
        total_buckets,
        sizes,
        blocks,
        offsets,
    )
