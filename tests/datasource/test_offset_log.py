"""``datasource.stream.offset_log``: a micro-batch's offsets read from Spark's offset log as Spark writes it (a
version line, a metadata line, one line per source): batch 0 from the pinned initial offset, later batches from
the previous entry, a restart from the log alone, and a log that is not this stream's a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyspark_paimon.datasource.stream.offset_log import OffsetLog, OffsetLogError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.planner.stream_offset import Consumed, StreamOffset

META = '{"batchWatermarkMs":0,"batchTimestampMs":1795957325785,"conf":{"spark.sql.shuffle.partitions":"2"}}'


def offset(snapshot: int) -> StreamOffset:
    return StreamOffset(snapshot + 1, -1, "delta", Consumed(snapshot, f"base-{snapshot}", f"delta-{snapshot}"))


def log_batch(fileio: FileIO, checkpoint: str, batch_id: int, *sources: str) -> None:
    fileio.write_bytes(f"{checkpoint}/offsets/{batch_id}", "\n".join(["v1", META, *sources]).encode())


def entry(o: StreamOffset) -> str:
    return json.dumps(o.to_dict())  # as Spark logs a Python source's offset: the dict's JSON


@pytest.fixture(params=["file", "memory"])
def checkpoint(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileIO, str, str]:
    """(FileIO, path within it, the checkpoint as a user gives it): a local one and one on another file system."""
    uri = str(tmp_path / "ck") if request.param == "file" else f"memory://ck-{tmp_path.name}"
    fileio, path = FileIO.for_uri(uri)
    return fileio, path, uri


def test_batches_start_where_the_previous_ended(checkpoint: tuple[FileIO, str, str]) -> None:
    fileio, path, uri = checkpoint
    initial = StreamOffset(1, -1, "full")
    for b in range(3):
        log_batch(fileio, path, b, entry(offset(b + 1)))
    log = OffsetLog.of(uri, initial)
    assert log.batch(0) == (initial, offset(1))  # the first batch: the pinned initial offset, Spark logs none
    assert log.batch(1) == (offset(1), offset(2))
    assert log.batch(2) == (offset(2), offset(3))


def test_a_restart_reads_the_log_alone(checkpoint: tuple[FileIO, str, str]) -> None:
    fileio, path, uri = checkpoint
    for b in range(2):
        log_batch(fileio, path, b, entry(offset(b + 1)))
    restarted = OffsetLog.of(uri, StreamOffset(7, -1, "full"))  # pinned again when the query restarts
    assert restarted.batch(1) == (offset(1), offset(2))  # the replayed batch: its logged offsets, not the pin
    assert restarted.batch(0) == (StreamOffset(7, -1, "full"), offset(1))


def test_a_log_that_is_not_this_streams_is_a_clear_error(checkpoint: tuple[FileIO, str, str]) -> None:
    fileio, path, uri = checkpoint
    log = OffsetLog.of(uri, StreamOffset(1))
    log_batch(fileio, path, 0, entry(offset(1)))
    with pytest.raises(OffsetLogError, match=r"no micro-batch 1 .*offsets/1 does not exist.*checkpointLocation"):
        log.batch(1)
    log_batch(fileio, path, 1, '{"logOffset":3}')  # a file source's offset
    with pytest.raises(OffsetLogError, match=r"offsets/1: Cannot read the streaming offset .*new checkpoint"):
        log.batch(1)
    log_batch(fileio, path, 1, "not json")
    with pytest.raises(OffsetLogError, match=r"'not json', not a Paimon stream offset"):
        log.batch(1)
    log_batch(fileio, path, 1, entry(offset(2)), entry(offset(3)))  # two sources
    with pytest.raises(OffsetLogError, match=r"not the offset log of a query with one source \(2 source lines"):
        log.batch(1)
    log_batch(fileio, path, 2, entry(offset(3)))
    with pytest.raises(OffsetLogError, match="one source"):  # batch 2's start is batch 1's (bad) entry
        log.batch(2)
