"""``pyspark_paimon.stream_spark``: the JVM stream path. Its micro-batches hold what the Python source and sink give
(paimon -> paimon, paimon -> any sink, any source -> paimon), their merge-free files read by Spark's own reader, and
a query failing at any of five points and restarted from its checkpoint delivers every row exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import jvm_stream, stream_spark
from pyspark_paimon.datasource.jobs import WriteJob
from pyspark_paimon.datasource.spark.streaming import HAS_ADMISSION_CONTROL
from pyspark_paimon.datasource.stream.stream_frames import BatchFrame
from pyspark_paimon.errors import OptionError
from pyspark_paimon.table import Table

pytestmark = pytest.mark.spark

COLUMNS = "id bigint not null, v string, d double"


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": [f"v{i}" if i % 4 else None for i in ids],
            "d": pa.array([i / 2 for i in ids], pa.float64()),
        }
    )


def source_table(catalog: Any, name: str = "db.src", commits: int = 3, **kw: Any) -> Table:
    t = catalog.create_table(name, COLUMNS, **kw)
    for c in range(commits):
        t.write_arrow(rows(c * 10, 5))
    return t


def table_rows(t: Table) -> list[tuple]:
    data = t.scan().to_arrow().sort_by("id")
    return [tuple(r.values()) for r in data.to_pylist()]


def expected(commits: int = 3) -> list[tuple]:
    return [tuple(r.values()) for c in range(commits) for r in rows(c * 10, 5).to_pylist()]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[BatchFrame]:
    """Every micro-batch's read as the JVM stream path made it."""
    seen: list[BatchFrame] = []
    real = jvm_stream.batch_frame

    def recording(*args: Any, **kw: Any) -> BatchFrame:
        out = real(*args, **kw)
        seen.append(out)
        return out

    monkeypatch.setattr(jvm_stream, "batch_frame", recording)
    return seen


def run(spark: Any, source: Any, sink: Any, checkpoint: Path, **kw: Any) -> Any:
    q = stream_spark(spark, source, sink, checkpoint=str(checkpoint), trigger={"availableNow": True}, **kw)
    q.awaitTermination()
    return q


def test_paimon_to_paimon_equals_the_python_path(spark, catalog, tmp_path, reads) -> None:
    src = source_table(catalog)
    jvm_sink = catalog.create_table("db.jvm_out", COLUMNS)
    py_sink = catalog.create_table("db.py_out", COLUMNS)
    opts = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxFilesPerTrigger": "1"}
    q = run(spark, src, jvm_sink, tmp_path / "ck-jvm", read_options=opts)
    progress = q.recentProgress
    # one micro-batch per commit (Spark 4.1 has no admission control for Python sources: one for all three), its
    # offsets read from the offset log:
    assert len(progress) == (3 if HAS_ADMISSION_CONTROL else 1)
    assert all(p["numInputRows"] == 0 for p in progress)  # Spark never ran the offsets source's read()
    (
        spark.readStream.format("paimon")
        .option("scan.mode", "from-snapshot")
        .option("scan.snapshot-id", "1")
        .load(src.uri)
        .writeStream.format("paimon")
        .option("checkpointLocation", str(tmp_path / "ck-py"))
        .trigger(availableNow=True)
        .start(py_sink.uri)
        .awaitTermination()
    )
    assert table_rows(jvm_sink) == table_rows(py_sink) == expected()
    assert sum(r.jvm_files for r in reads) == 3 and sum(r.python_splits for r in reads) == 0
    assert all(s.commit_kind == "APPEND" for s in jvm_sink.snapshots())


def test_primary_key_source_merges_in_python_and_writes_by_key(spark, catalog, tmp_path, reads) -> None:
    src = catalog.create_table("db.pk", COLUMNS, primary_keys=["id"], options={"bucket": "2"})
    src.write_arrow(rows(0, 6))
    src.write_arrow(rows(3, 6).set_column(1, "v", pa.array(["new"] * 6)))  # keys 3..5 updated: a merge
    sink = catalog.create_table("db.pk_out", COLUMNS, primary_keys=["id"], options={"bucket": "3"})
    run(spark, src, sink, tmp_path / "ck")  # latest-full: the merged table, one micro-batch
    assert table_rows(sink) == table_rows(src)
    assert sum(r.python_splits for r in reads) >= 1  # the overlapping bucket(s) need a merge
    src.maintenance.compact(full=True)  # one file per bucket at the top level: no merge, Spark's reader
    reads.clear()
    sink2 = catalog.create_table("db.pk_out2", COLUMNS, primary_keys=["id"], options={"bucket": "3"})
    run(spark, src, sink2, tmp_path / "ck2")
    assert table_rows(sink2) == table_rows(src)
    assert sum(r.python_splits for r in reads) == 0 and sum(r.jvm_files for r in reads) == 2


def test_changelog_rows_carry_their_kinds(spark, catalog, tmp_path) -> None:
    src = source_table(catalog, commits=2)
    got: list[tuple] = []
    run(
        spark,
        src,
        lambda df, batch_id: got.extend(tuple(r) for r in df.collect()),
        tmp_path / "ck",
        read_options={"read.changelog": "true"},
    )
    assert sorted(got, key=lambda r: r[1]) == [("+I", *r) for r in expected(2)]


def test_paimon_to_any_sink(spark, catalog, tmp_path) -> None:
    src = source_table(catalog)
    out = tmp_path / "parquet-out"
    collected: list[tuple] = []

    def to_parquet(df: Any, batch_id: int) -> None:
        df.write.mode("overwrite").parquet(str(out / f"batch={batch_id}"))  # idempotent per batch id
        collected.extend(tuple(r) for r in df.collect())

    run(spark, src, to_parquet, tmp_path / "ck", read_options={"read.stream.maxFilesPerTrigger": "1"})
    assert sorted(collected) == expected()
    written = pq.read_table(str(out)).drop_columns(["batch"]).sort_by("id")
    assert [tuple(r.values()) for r in written.to_pylist()] == expected()


def test_any_source_to_paimon(spark, catalog, tmp_path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    for c in range(3):
        pq.write_table(rows(c * 10, 5), landing / f"part-{c}.parquet")
    sink = catalog.create_table("db.from_files", COLUMNS)
    reader = spark.readStream.schema("id bigint, v string, d double").option("maxFilesPerTrigger", 1)
    source = reader.parquet(str(landing))
    run(spark, source, sink, tmp_path / "ck")
    assert table_rows(sink) == expected()
    assert len(sink.snapshots()) == 3  # one commit per micro-batch


class InjectedError(RuntimeError):
    """The failure a test injects."""


def _fail_once(point: str, monkeypatch: pytest.MonkeyPatch, batch: int = 1) -> Callable[[], int]:
    """Make the micro-batch ``batch`` (the second) fail once at ``point``; return how often it failed."""
    failures = [0]
    calls = [0]

    def hit() -> None:
        calls[0] += 1
        if calls[0] == batch + 1 and not failures[0]:
            failures[0] += 1
            raise InjectedError(point)

    def wrap(owner: Any, name: str, before: bool) -> None:
        real = getattr(owner, name)

        def wrapped(*args: Any, **kw: Any) -> Any:
            if before:
                hit()
            out = real(*args, **kw)
            if not before:
                hit()
            return out

        monkeypatch.setattr(owner, name, wrapped)

    if point == "before planning":
        wrap(jvm_stream, "batch_frame", before=True)
    elif point == "after planning":
        wrap(jvm_stream, "batch_frame", before=False)
    elif point == "after staging":
        wrap(jvm_stream, "stage_frame", before=False)  # files moved into buckets, not committed: orphans
    elif point == "after commit":
        wrap(WriteJob, "commit", before=False)  # the table holds the batch, Spark's commit log does not
    elif point == "after the sink":
        wrap(jvm_stream._TableSink, "__call__", before=False)
    return lambda: failures[0]


POINTS = ["before planning", "after planning", "after staging", "after commit", "after the sink"]


@pytest.mark.parametrize("point", POINTS)
def test_failure_and_restart_deliver_every_row_once(spark, catalog, tmp_path, monkeypatch, point) -> None:
    src = source_table(catalog)
    sink = catalog.create_table("db.out", COLUMNS)
    # Spark 4.2+ admits one commit per micro-batch and the second fails; Spark 4.1 (no admission control for
    # Python sources) reads all three in micro-batch 0, which fails.
    batch, per_batch = (1, 1) if HAS_ADMISSION_CONTROL else (0, 3)
    failures = _fail_once(point, monkeypatch, batch)
    opts = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxFilesPerTrigger": "1"}
    with pytest.raises(Exception, match=point):
        run(spark, src, sink, tmp_path / "ck", read_options=opts)
    assert failures() == 1
    committed = point in ("after commit", "after the sink")  # the failed batch is in the table, not in Spark's log
    assert table_rows(sink) == expected((batch + committed) * per_batch)
    src.write_arrow(rows(30, 5))  # a commit while the query is down
    run(spark, src, sink, tmp_path / "ck", read_options=opts)
    if not HAS_ADMISSION_CONTROL:  # Spark 4.1's AvailableNow stand-in ends after replaying the failed batch
        run(spark, src, sink, tmp_path / "ck", read_options=opts)
    assert table_rows(sink) == expected(4)


def test_refusals_name_the_way_out(catalog, tmp_path) -> None:
    src = source_table(catalog, commits=1)
    dynamic = catalog.create_table("db.dyn", COLUMNS, primary_keys=["id"])  # dynamic bucket: the Python sink's
    with pytest.raises(OptionError, match=r"writeStream\.format\('paimon'\)"):
        stream_spark(None, src, dynamic, checkpoint=str(tmp_path / "ck"))
    with pytest.raises(OptionError, match="give a Table as the source or the sink"):
        stream_spark(None, object(), lambda df, i: None, checkpoint=str(tmp_path / "ck"))
    with pytest.raises(OptionError, match="checkpoint"):
        stream_spark(None, src, lambda df, i: None, checkpoint="")
