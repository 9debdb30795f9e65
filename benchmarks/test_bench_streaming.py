"""Groups 9 and 10: Structured Streaming, the paimon source and sink against Spark's file source.

Both read the same 4 Parquet files (the live data files of ``bench.append_t``; the file source gets a directory
of links to them):

* **9 stream throughput**: ``Trigger.AvailableNow`` over all N rows, a fresh checkpoint each round (query start
  is part of the time, as for a user): ``paimon->noop`` and ``parquet->noop`` (the sources alone),
  ``floor->noop`` (benchmarks/floor_source.py's bare Python streaming source handing Spark the same 4 files as
  one micro-batch in 2 tasks: what any Python streaming source costs before doing any work),
  ``paimon->paimon`` (into a new append table), ``parquet->parquet`` (Spark's file sink) and ``floor->floor``
  (the floor source into the floor's streaming sink, which writes each task's batches into one Parquet file and
  commits nothing: what any Python source plus Python sink costs before doing any work of its own).
* the JVM stream path (``pyspark_paimon.stream_spark``, issue 40) beside them: ``jvm->noop`` (the table streamed
  as offsets, each micro-batch's files read by Spark's Parquet reader, written to ``noop`` in ``foreachBatch``)
  and ``jvm->jvm`` (into a new append table through Spark's Parquet writer, one commit per micro-batch).
* **10 micro-batch latency**: a running query (default trigger) on a small table; each round commits 1,000 rows
  upstream and waits with ``processAllAvailable()`` until the query has processed them: ``paimon->noop`` after
  a ``Table.write_arrow`` commit, ``parquet->noop`` after a new Parquet file lands in the watched directory,
  ``jvm->noop`` the JVM stream path after the same commit.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import ROUNDS, Datasets, assert_reads_back, loadavg, make_rows
from pyspark.sql import SparkSession

SCHEMA_DDL = "id bigint, s string, d double"
THROUGHPUT = [
    *("paimon->noop", "parquet->noop", "floor->noop", "paimon->paimon", "parquet->parquet", "floor->floor"),
    *("jvm->noop", "jvm->jvm"),
]
LATENCY = ["paimon->noop", "parquet->noop", "jvm->noop"]
_counter = itertools.count()


@pytest.fixture(scope="module")
def parquet_dir(datasets: Datasets) -> Any:
    """A directory holding links to the append table's data files (the file source's input)."""
    root = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    src = root / "files"
    src.mkdir()
    for i, path in enumerate(datasets.append_files):
        os.symlink(path, src / f"part-{i}.parquet")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _start(
    spark: SparkSession, datasets: Datasets, parquet_dir: Path, case: str, checkpoint: Path, outputs: list[str]
) -> Any:
    source, sink = case.split("->")
    if source == "jvm":
        from pyspark_paimon import Catalog, Table, stream_spark

        target: Any = _noop_sink
        if sink == "jvm":
            outputs.append(f"{datasets.warehouse}/bench.db/stream_out_{next(_counter)}")
            target = Catalog(datasets.warehouse).create_table(f"bench.{Path(outputs[-1]).name}", SCHEMA_DDL)
        source_table = Table.open(datasets.append_path)
        return stream_spark(spark, source_table, target, checkpoint=str(checkpoint), trigger={"availableNow": True})
    if source == "paimon":
        df = spark.readStream.format("paimon").load(datasets.append_path)
    elif source == "floor":
        from floor_source import FLOOR_FORMAT

        groups = [list(map(str, datasets.append_files[i::2])) for i in range(2)]
        df = spark.readStream.format(FLOOR_FORMAT).schema(SCHEMA_DDL).option("groups", json.dumps(groups)).load()
    else:
        df = spark.readStream.schema(SCHEMA_DDL).parquet(str(parquet_dir / "files"))
    writer = df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    n = next(_counter)
    if sink == "noop":
        return writer.format("noop").start()
    if sink == "paimon":
        outputs.append(f"{datasets.warehouse}/bench.db/stream_out_{n}")
        return writer.format("paimon").start(outputs[-1])
    if sink == "floor":
        from floor_source import FLOOR_FORMAT

        return writer.format(FLOOR_FORMAT).start(str(parquet_dir / f"floor-out-{n}"))
    outputs.append(str(parquet_dir / f"out-{n}"))
    return writer.format("parquet").start(outputs[-1])


_jvm_rows: list[int] = []  # rows the JVM stream path's micro-batches held (its source's numInputRows are offsets)


def _noop_sink(df: Any, batch_id: int) -> None:
    """The JVM stream path's counterpart of the ``noop`` sink: every row read (and counted, in the same pass),
    nothing written."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    seen = Observation()
    df.observe(seen, F.count(F.lit(1)).alias("rows")).write.format("noop").mode("overwrite").save()
    _jvm_rows.append(int(seen.get["rows"]))


@pytest.mark.parametrize("case", THROUGHPUT)
def test_stream_throughput(
    benchmark: Any, spark: SparkSession, datasets: Datasets, parquet_dir: Path, case: str
) -> None:
    benchmark.group = "9 stream throughput: AvailableNow over all rows"
    processed: list[int] = []
    outputs: list[str] = []

    def run() -> None:
        _jvm_rows.clear()
        q = _start(spark, datasets, parquet_dir, case, parquet_dir / f"ck-{next(_counter)}", outputs)
        q.awaitTermination()
        if case == "jvm->noop":
            processed.append(sum(_jvm_rows))
        elif case == "jvm->jvm":
            from pyspark_paimon import Table

            processed.append(Table.open(outputs[-1]).scan().count())
        else:
            processed.append(sum(p["numInputRows"] for p in q.recentProgress))

    load_before = loadavg()
    benchmark.pedantic(run, rounds=min(3, ROUNDS), warmup_rounds=1, iterations=1)
    assert set(processed) == {datasets.rows}, f"{case} processed {processed}, expected {datasets.rows} each round"
    if outputs:  # a real sink: read one round's output back in full (outside the timed function)
        from pyspark_paimon import Table

        sink = case.split("->")[1]
        is_table = sink in ("paimon", "jvm")
        written = Table.open(outputs[-1]).scan().to_arrow() if is_table else pq.read_table(outputs[-1])
        assert_reads_back(written, datasets.write_data, f"{case} output {outputs[-1]}")
    benchmark.extra_info.update(
        label=case, rows=datasets.rows, baseline=case == "paimon->noop", loadavg=[load_before, loadavg()]
    )


@pytest.mark.parametrize("case", LATENCY)
def test_micro_batch_latency(
    benchmark: Any, spark: SparkSession, datasets: Datasets, parquet_dir: Path, case: str
) -> None:
    from pyspark_paimon import Catalog

    benchmark.group = "10 micro-batch latency: commit 1,000 rows, wait until processed"
    source = case.split("->")[0]
    n = next(_counter)
    watched = parquet_dir / f"latency-{n}"
    watched.mkdir()
    table = Catalog(datasets.warehouse).create_table(f"bench.latency_{n}", SCHEMA_DDL)
    checkpoint = str(parquet_dir / f"ck-lat-{n}")
    _jvm_rows.clear()
    if source == "jvm":
        from pyspark_paimon import stream_spark

        q = stream_spark(spark, table, _noop_sink, checkpoint=checkpoint)
    else:
        if source == "paimon":
            df = spark.readStream.format("paimon").load(table.store.table_path)
        else:
            df = spark.readStream.schema(SCHEMA_DDL).parquet(str(watched))
        q = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
    batches = itertools.count()

    def commit_and_wait() -> None:
        rows = make_rows(np.arange(1000, dtype=np.int64) + 1000 * next(batches))
        if source in ("paimon", "jvm"):
            table.write_arrow(rows)
        else:
            tmp = parquet_dir / f"tmp-{n}.parquet"
            pq.write_table(rows, tmp)
            os.replace(tmp, watched / f"batch-{next(_counter)}.parquet")  # the file source must see whole files
        q.processAllAvailable()

    try:
        load_before = loadavg()
        benchmark.pedantic(commit_and_wait, rounds=max(5, ROUNDS), warmup_rounds=1, iterations=1)
        processed = sum(_jvm_rows) if source == "jvm" else sum(p["numInputRows"] for p in q.recentProgress)
    finally:
        q.stop()
    assert processed == 1000 * (max(5, ROUNDS) + 1), f"{case} processed {processed} rows"
    benchmark.extra_info.update(
        label=case, rows=1000, baseline=case == "paimon->noop", loadavg=[load_before, loadavg()]
    )
