"""Structured Streaming through Spark: readStream/writeStream, restarts, replays, limits, and the correction
workflow that branches exist for (stream into main, branch from a tag, stream the fix into the branch, publish
it while a reader keeps streaming main)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.spark.streaming import HAS_ADMISSION_CONTROL
from tests.sparkutil import load, sorted_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _stream(spark, source: str, sink: str, checkpoint: str, read_options=None, write_options=None):
    """Run paimon -> paimon with Trigger.AvailableNow to the end; returns the finished query."""
    q = (
        spark.readStream.format("paimon")
        .options(**(read_options or {}))
        .load(source)
        .writeStream.format("paimon")
        .options(**(write_options or {}))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(sink)
    )
    q.awaitTermination()
    assert q.exception() is None
    return q


def _batches_with_rows(q) -> list[int]:
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]


def test_stream_restarts_from_its_checkpoint_and_reads_only_new_commits(spark, catalog, tmp_path):
    t = catalog.create_table("db.src", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    sink, ck = f"{catalog.warehouse}/db.db/dst", str(tmp_path / "ck")
    _stream(spark, t.store.table_path, sink, ck, write_options={"primary-key": "id", "bucket": "1"})
    assert sorted_rows(load(spark, sink)) == [(1, "a"), (2, "b")]
    t.write_arrow(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))
    q = _stream(spark, t.store.table_path, sink, ck)
    assert _batches_with_rows(q) == [2]  # only the new commit
    assert sorted_rows(load(spark, sink)) == [(1, "a"), (2, "B"), (3, "c")]
    users = {s.commit_user for s in Catalog(catalog.warehouse).get_table("db.dst").snapshots()}
    assert len(users) == 1  # one commit user for every run of the query: the idempotency key


def test_a_replayed_batch_is_not_committed_twice(spark, catalog, tmp_path):
    """Crash between the table commit and Spark's commit log: Spark replays the batch with the same id."""
    t = catalog.create_table("db.src", SCHEMA)  # append tables show duplicates
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    sink, ck = f"{catalog.warehouse}/db.db/dst", tmp_path / "ck"
    _stream(spark, t.store.table_path, sink, str(ck))
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    _stream(spark, t.store.table_path, sink, str(ck))
    dst = Catalog(catalog.warehouse).get_table("db.dst")
    before = len(dst.snapshots())
    last = max(int(n) for n in os.listdir(ck / "commits") if n.isdigit())
    (ck / "commits" / str(last)).unlink()  # the batch committed to the table, but Spark did not log it
    (ck / "commits" / f".{last}.crc").unlink(missing_ok=True)
    q = _stream(spark, t.store.table_path, sink, str(ck))
    assert _batches_with_rows(q) == [1]  # Spark did replay the batch
    assert sorted_rows(load(spark, sink)) == [(1, "a"), (2, "b"), (3, "c")]  # ... and no row is duplicated
    assert len(dst.snapshots()) == before
    bucket = Path(dst.store.table_path) / "bucket-0"
    referenced = {e.file.file_name for e in dst.store.live_entries(dst.store.snapshots.latest())}
    assert {p.name for p in bucket.iterdir() if p.name.startswith("data-")} == referenced  # replay files deleted


def test_admission_control_limits_each_micro_batch(spark, catalog, tmp_path):
    t = catalog.create_table("db.src", SCHEMA)
    for i in range(3):
        t.write_arrow(pa.table({"id": [2 * i, 2 * i + 1], "v": ["x", "y"]}, schema=SCHEMA))
    q = _stream(
        spark,
        t.store.table_path,
        f"{catalog.warehouse}/db.db/dst",
        str(tmp_path / "ck"),
        read_options={"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxFilesPerTrigger": "1"},
    )
    if HAS_ADMISSION_CONTROL:  # Spark 4.2+: one file per micro-batch
        assert _batches_with_rows(q) == [2, 2, 2]
    else:  # Spark 4.1 has no admission control for Python sources: whole snapshots in one batch
        assert _batches_with_rows(q) == [6]
    assert len(sorted_rows(load(spark, f"{catalog.warehouse}/db.db/dst"))) == 6


def test_read_changelog_adds_the_row_kind_column(spark, catalog, tmp_path):
    t = catalog.create_table(
        "db.src",
        pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op"},
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}))
    t.write_arrow(pa.table({"id": [1], "v": ["a"], "op": ["-D"]}))
    df = (
        spark.readStream.format("paimon")
        .option("read.changelog", "true")
        .option("scan.mode", "from-snapshot")
        .option("scan.snapshot-id", "1")
        .load(t.store.table_path)
    )
    assert df.columns == ["rowkind", "id", "v", "op"]
    out = tmp_path / "out"
    q = (
        df.writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert sorted_rows(spark.read.parquet(str(out))) == [
        ("+I", 1, "a", "+I"),
        ("+I", 2, "b", "+I"),
        ("-D", 1, "a", "-D"),
    ]


def test_a_filtered_stream_emits_only_the_selected_rows(spark, catalog, tmp_path):
    t = catalog.create_table(
        "db.src",
        pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())]),
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1"},
    )
    t.write_arrow(pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 1], "v": ["x", "y", "x"]}))
    out, ck = tmp_path / "out", str(tmp_path / "ck")

    def run() -> None:
        q = (
            spark.readStream.format("paimon")
            .option("filter", "dt = 'a' AND v <> 'y'")
            .load(t.uri)
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", ck)
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert q.exception() is None

    run()
    t.write_arrow(pa.table({"dt": ["a", "a", "b"], "id": [3, 4, 2], "v": ["x", "y", "x"]}))
    run()  # the full scan, then a delta: both filtered
    assert sorted_rows(spark.read.parquet(str(out))) == [("a", 1, "x"), ("a", 3, "x")]


def test_stream_of_a_catalog_table(spark, catalog, tmp_path):
    t = catalog.create_table("db.src", SCHEMA)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    spark.sql("DROP TABLE IF EXISTS stream_src")
    try:
        spark.sql(f"CREATE TABLE stream_src USING paimon LOCATION '{t.store.table_path}'")
        out = tmp_path / "out"
        q = (
            spark.readStream.table("stream_src")
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert sorted_rows(spark.read.parquet(str(out))) == [(1, "a"), (2, "b")]
    finally:
        spark.sql("DROP TABLE IF EXISTS stream_src")


def test_stream_errors_are_clear(spark, catalog, tmp_path):
    t = catalog.create_table("db.src", SCHEMA)
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    with pytest.raises(Exception, match="checkpointLocation"):
        spark.conf.set("spark.sql.streaming.checkpointLocation", str(tmp_path / "session-ck"))
        try:
            q = (
                spark.readStream.format("paimon")
                .load(t.store.table_path)
                .writeStream.format("paimon")
                .trigger(availableNow=True)
                .start(f"{catalog.warehouse}/db.db/dst")
            )
            q.awaitTermination()
        finally:
            spark.conf.unset("spark.sql.streaming.checkpointLocation")
    with pytest.raises(Exception, match="apply to streaming reads only"):
        load(spark, t.store.table_path, **{"scan.mode": "latest"}).collect()


def test_correction_workflow_with_streams(spark, catalog, tmp_path):
    """The workflow branches exist for, with real streams (every query bounded: AvailableNow or
    processAllAvailable, no sleeps).

    Stream A reads the upstream table ``events`` and writes ``orders`` with a bug (amounts x100 from day 2 on);
    ``orders`` is tagged daily. The bug is found after day 2: branch ``fix`` from tag ``day1``; stream B (the
    fixed logic) reads ``events`` from the snapshot after its own day-1 tag into ``orders$branch_fix`` and catches
    up; ``fix`` is published into main. Stream C reads ``orders`` main with ``read.changelog`` the whole time
    and applies the changes to a mirror table: it ends with exactly the corrected data, without restarting.
    """
    wh = catalog.warehouse
    ev_schema = pa.schema([("id", pa.int64()), ("day", pa.int32()), ("amount", pa.int64())])
    events = catalog.create_table("db.events", ev_schema)
    orders_path = f"{wh}/db.db/orders"

    def land(day: int, ids: list[int]) -> None:
        events.write_arrow(
            pa.table({"id": ids, "day": [day] * len(ids), "amount": [i * 10 for i in ids]}, schema=ev_schema)
        )
        events.tags.create(f"day{day}")

    def stream_a() -> None:  # buggy logic
        df = spark.readStream.format("paimon").load(events.store.table_path)
        df = df.selectExpr("id", "CASE WHEN day >= 2 THEN amount * 100 ELSE amount END AS amount")
        q = (
            df.writeStream.format("paimon")
            .option("checkpointLocation", str(tmp_path / "ck-a"))
            .option("primary-key", "id")
            .option("bucket", "2")
            .trigger(availableNow=True)
            .start(orders_path)
        )
        q.awaitTermination()

    mirror = catalog.create_table(
        "db.mirror",
        pa.schema([("rowkind", pa.string()), ("id", pa.int64()), ("amount", pa.int64())]),
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "rowkind"},
    )
    land(1, [1, 2])
    stream_a()
    orders = Catalog(wh).get_table("db.orders")
    orders.tags.create("day1")
    reader = (
        spark.readStream.format("paimon")
        .option("read.changelog", "true")
        .load(orders_path)
        .writeStream.format("paimon")
        .option("checkpointLocation", str(tmp_path / "ck-c"))
        .start(mirror.store.table_path)
    )
    try:
        reader.processAllAvailable()
        land(2, [3, 4])
        stream_a()
        orders.tags.create("day2")
        reader.processAllAvailable()
        assert sorted_rows(load(spark, mirror.store.table_path).select("id", "amount")) == [
            (1, 10),
            (2, 20),
            (3, 3000),
            (4, 4000),
        ]
        # The fix: a branch from the last good tag, and stream B with the fixed logic from the upstream's tag.
        orders.branches.create("fix", tag="day1")
        day1 = {tag.name: tag.snapshot.id for tag in events.tags.list()}["day1"]
        q = (
            spark.readStream.format("paimon")
            .option("scan.mode", "from-snapshot")
            .option("scan.snapshot-id", str(day1 + 1))  # the upstream's commits after its day-1 tag
            .load(events.store.table_path)
            .selectExpr("id", "amount")
            .writeStream.format("paimon")
            .option("checkpointLocation", str(tmp_path / "ck-b"))
            .trigger(availableNow=True)
            .start(orders_path + "$branch_fix")
        )
        q.awaitTermination()
        fixed = sorted_rows(load(spark, orders_path, branch="fix"))
        assert fixed == [(1, 10), (2, 20), (3, 30), (4, 40)]
        orders.branches.fast_forward("fix", force=True)
        reader.processAllAvailable()
        assert sorted_rows(load(spark, orders_path)) == fixed
        assert sorted_rows(load(spark, mirror.store.table_path).select("id", "amount")) == fixed  # the reader followed
        # Main goes on after the switch; the reader keeps streaming.
        Catalog(wh).get_table("db.orders").write_arrow(pa.table({"id": [5], "amount": [50]}))
        reader.processAllAvailable()
        assert sorted_rows(load(spark, mirror.store.table_path).select("id", "amount")) == [*fixed, (5, 50)]
        assert reader.exception() is None
    finally:
        reader.stop()


def test_update_mode_is_spark_s_refusal_and_foreach_batch_upserts_instead(spark, catalog, tmp_path):
    """Spark 4 gives no Python sink the Update output mode; docs/streaming.md sends keyed aggregations to
    foreachBatch, whose batch writes upsert by primary key (a replayed batch rewrites the same rows)."""
    src = catalog.create_table("db.src", SCHEMA)
    src.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "a"]}, schema=SCHEMA))
    counts = spark.readStream.format("paimon").load(src.store.table_path).groupBy("v").count()
    sink = f"{catalog.warehouse}/db.db/counts"
    catalog.create_table(
        "db.counts", pa.schema([("v", pa.string()), ("count", pa.int64())]), primary_keys=["v"], options={"bucket": "1"}
    )
    refused = counts.writeStream.format("paimon").outputMode("update")
    q = refused.option("checkpointLocation", str(tmp_path / "ck-update")).trigger(availableNow=True).start(sink)
    with pytest.raises(Exception, match="does not support Update mode"):
        q.awaitTermination()

    def upsert(batch, _batch_id: int) -> None:
        batch.write.format("paimon").mode("append").save(sink)

    def run() -> None:
        q = (
            counts.writeStream.outputMode("update")
            .foreachBatch(upsert)
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert q.exception() is None

    run()
    assert sorted_rows(load(spark, sink)) == [("a", 2), ("b", 1)]
    src.write_arrow(pa.table({"id": [4], "v": ["b"]}, schema=SCHEMA))
    run()
    assert sorted_rows(load(spark, sink)) == [("a", 2), ("b", 2)]  # the changed group is upserted


def test_a_chain_table_streams_its_content_then_its_delta_commits_with_deletes(spark, catalog, tmp_path):
    """Java's ChainTableStreamScan: the start is the latest snapshot partition (and later deltas), then the delta
    branch's commits, whose -D reaches the stream (tests/datasource/test_chain_stream.py covers the rest)."""
    row = pa.schema(
        [("t1", pa.int64()), ("t2", pa.int64()), ("t3", pa.string()), ("op", pa.string()), ("dt", pa.string())]
    )
    t = catalog.create_chain_table(
        "db.chain",
        row,
        partition_keys=["dt"],
        primary_keys=["dt", "t1"],
        options={
            "bucket": "1",
            "sequence.field": "t2",
            "rowkind.field": "op",
            "partition.timestamp-pattern": "$dt",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )

    def write(branch: str, rows: list[tuple]) -> None:
        t.on_branch(branch).write_arrow(pa.Table.from_pylist([dict(zip(row.names, r)) for r in rows], schema=row))

    write("snapshot", [(1, 1, "a", "+I", "20250810"), (2, 1, "b", "+I", "20250810"), (3, 1, "c", "+I", "20250810")])
    out, ck = tmp_path / "out", str(tmp_path / "ck")

    def run() -> None:
        q = (
            spark.readStream.format("paimon")
            .option("read.changelog", "true")
            .load(t.uri)
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", ck)
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        assert q.exception() is None

    run()
    assert sorted_rows(spark.read.parquet(str(out))) == [
        ("+I", 1, 1, "a", "+I", "20250810"),
        ("+I", 2, 1, "b", "+I", "20250810"),
        ("+I", 3, 1, "c", "+I", "20250810"),
    ]
    write("delta", [(2, 2, "B", "+U", "20250811"), (3, 2, "c", "-D", "20250811"), (4, 1, "d", "+I", "20250811")])
    run()
    assert sorted_rows(spark.read.parquet(str(out)))[3:] == [
        ("+I", 4, 1, "d", "+I", "20250811"),
        ("+U", 2, 2, "B", "+U", "20250811"),
        ("-D", 3, 2, "c", "-D", "20250811"),
    ]


def test_spark_sinks_write_the_input_changelog_and_streams_read_it(spark, catalog, tmp_path):
    """changelog-producer = input: a streaming sink's and a batch write's input rows become changelog files,
    and a changelog stream of the table carries them with their kinds (the stream follows the changelog)."""
    src = catalog.create_table("db.src", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    src.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    dst = catalog.create_table(
        "db.dst", SCHEMA, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "input"}
    )
    _stream(spark, src.store.table_path, dst.store.table_path, str(tmp_path / "ck"))
    spark.createDataFrame([(2, "B")], "id long, v string").write.format("paimon").mode("append").save(
        dst.store.table_path
    )
    assert [s.changelog_record_count for s in dst.snapshots()] == [2, 1]
    out = tmp_path / "out"
    q = (
        spark.readStream.format("paimon")
        .option("read.changelog", "true")
        .option("scan.mode", "from-snapshot")
        .option("scan.snapshot-id", "1")
        .load(dst.store.table_path)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "ck2"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    assert sorted_rows(spark.read.parquet(str(out))) == [("+I", 1, "a"), ("+I", 2, "B"), ("+I", 2, "b")]


def test_a_streaming_sink_expires_its_snapshots_as_it_commits(spark, catalog, tmp_path):
    """Each micro-batch commit runs the post-commit maintenance: the sink keeps snapshot.num-retained.max."""
    t = catalog.create_table("db.src", SCHEMA)
    sink, ck = f"{catalog.warehouse}/db.db/dst", str(tmp_path / "ck")
    retention = {"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"}
    for i in range(3):
        t.write_arrow(pa.table({"id": [i], "v": [f"v{i}"]}, schema=SCHEMA))
        _stream(spark, t.store.table_path, sink, ck, write_options=retention)
    dst = Catalog(catalog.warehouse).get_table("db.dst")
    assert [s.id for s in dst.snapshots()] == [2, 3]
    assert sorted_rows(load(spark, sink)) == [(0, "v0"), (1, "v1"), (2, "v2")]
