"""Streams and Java Paimon 1.0: we stream the changes Java commits (row kinds included), Java reads what our
stream sink committed, and Java's commits after a compaction are streamed without re-reading compacted rows."""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.planner.stream_offset import StreamOffset
from tests.oracle.java_oracle import JavaOracle


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _changes(job: StreamReadJob, start: StreamOffset) -> tuple[list[tuple], StreamOffset]:
    splits, end = job.next_batch(start)
    ctx = job.context()
    rows = [tuple(r.values()) for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]
    return sorted(rows, key=repr), end


def test_we_stream_java_commits_with_their_row_kinds(java: JavaOracle, warehouse: str) -> None:
    java.create(
        warehouse, "db.j", [["id", "BIGINT", False], ["v", "STRING"]], primary_keys=["id"], options={"bucket": 1}
    )
    java.write(warehouse, "db.j", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
    table = Catalog(warehouse).get_table("db.j")
    job = StreamReadJob(table.store, {"path": table.store.table_path, "read.changelog": "true"})
    rows, pos = _changes(job, job.initial_offset())
    assert rows == [("+I", 1, "a"), ("+I", 2, "b")]
    java.write(warehouse, "db.j", [{"id": 1, "v": "a"}, {"id": 3, "v": "c"}], kinds=["-D", "+I"])
    java.compact(warehouse, "db.j")  # a COMPACT snapshot: nothing new to stream
    java.write(warehouse, "db.j", [{"id": 2, "v": "B"}], kinds=["+U"])
    rows, pos = _changes(job, pos)
    assert rows == [("+I", 3, "c"), ("+U", 2, "B"), ("-D", 1, "a")]
    assert _changes(job, pos)[0] == []


def test_java_reads_what_our_stream_sink_committed(java: JavaOracle, warehouse: str, spark: Any, tmp_path) -> None:
    cat = Catalog(warehouse)
    src = cat.create_table(
        "db.src", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"], options={"bucket": "2"}
    )
    src.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    sink = f"{warehouse}/db.db/sink"

    def run() -> None:
        q = (
            spark.readStream.format("paimon")
            .load(src.store.table_path)
            .writeStream.format("paimon")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .option("primary-key", "id")
            .option("bucket", "2")
            .trigger(availableNow=True)
            .start(sink)
        )
        q.awaitTermination()

    run()
    src.write_arrow(pa.table({"id": [2, 4], "v": ["B", "d"]}))
    run()
    by_java = java.read(warehouse, "db.sink")
    assert sorted((r["id"], r["v"]) for r in by_java.rows) == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
    ids = [s.commit_identifier for s in cat.get_table("db.sink").snapshots()]
    assert ids == [0, 1]  # one commit per micro-batch, identified by Spark's batch id
