"""A micro-batch's start and end offsets read from Spark's offset log in the query's checkpoint.

Why: the JVM stream path (:mod:`pyspark_paimon.jvm_stream`) must know which offsets a micro-batch covers before it
replans that batch's splits. Collecting the offsets row its source emits costs a Spark job per micro-batch (a
third of a small batch's latency, issue 40). Spark writes ``<checkpoint>/offsets/<batchId>`` before it runs the
batch -- a version line (``v1``), a line of batch metadata (JSON), then one line per source, that source's end
offset as JSON -- and a batch starts where the previous batch ended (``offsets/<batchId - 1>``; batch 0 at the
source's initial offset, which the JVM stream path pins when the query starts and hands its source). The file is
read with the project's :class:`~pyspark_paimon.metadata.io.fileio.FileIO`, so a checkpoint on an object store
works, and its offset line is parsed as a :class:`~pyspark_paimon.planner.stream_offset.StreamOffset`: a log that
is not this query's (a missing batch, another source's offsets, several sources) is a clear error, not a guess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.planner.stream_offset import StreamOffset

__all__ = ["OffsetLog", "OffsetLogError"]


class OffsetLogError(OptionError):
    """Spark's offset log does not hold the micro-batch of this stream that the JVM stream path is asked for."""


@dataclass(frozen=True)
class OffsetLog:
    """The offset log of one query whose only source is a Paimon stream starting at ``initial``."""

    fileio: FileIO
    path: str  # <checkpoint>/offsets, within fileio's file system
    checkpoint: str  # as the user gave it (for messages)
    initial: StreamOffset

    @classmethod
    def of(cls, checkpoint: str, initial: StreamOffset, like: FileIO | None = None) -> "OffsetLog":
        """The log under ``checkpoint``; ``like``'s storage options apply when the checkpoint is on its file
        system (a checkpoint in the table's bucket, read with the table's credentials)."""
        fileio, path = FileIO.for_uri(checkpoint.rstrip("/"))
        if like is not None and like.protocol == fileio.protocol:
            fileio, path = FileIO.for_uri(checkpoint.rstrip("/"), like.storage_options, like.credentials)
        return cls(fileio, f"{path}/offsets", checkpoint, initial)

    def batch(self, batch_id: int) -> tuple[StreamOffset, StreamOffset]:
        """The start and end offsets of micro-batch ``batch_id``."""
        end = self.end_of(batch_id)
        start = self.initial if batch_id == 0 else self.end_of(batch_id - 1)
        return start, end

    def end_of(self, batch_id: int) -> StreamOffset:
        """The end offset Spark logged for micro-batch ``batch_id``."""
        where = f"{self.checkpoint.rstrip('/')}/offsets/{batch_id}"
        try:
            text = self.fileio.read_text(f"{self.path}/{batch_id}")
        except FileNotFoundError:
            raise OffsetLogError(
                f"Spark's offset log has no micro-batch {batch_id} ({where} does not exist): the checkpoint given "
                "to stream_spark must be the query's own checkpointLocation, and not be cleaned while it runs."
            ) from None
        lines = text.splitlines()
        sources = lines[2:]
        if len(lines) < 3 or not lines[0].startswith("v") or len(sources) != 1:
            raise OffsetLogError(
                f"{where} is not the offset log of a query with one source ({len(sources)} source lines after "
                f"its version line {lines[0] if lines else ''!r} and metadata line): stream_spark's query reads "
                "one Paimon stream; start it with a new checkpoint location."
            )
        try:
            raw = json.loads(sources[0])
        except ValueError:
            raw = None
        if not isinstance(raw, dict):
            raise OffsetLogError(
                f"{where} holds {sources[0][:200]!r}, not a Paimon stream offset: the checkpoint belongs to another "
                "query; start stream_spark with a new checkpoint location."
            )
        try:
            return StreamOffset.from_dict(raw)
        except OptionError as exc:
            raise OffsetLogError(f"{where}: {exc}") from None
