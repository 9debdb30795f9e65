"""The connector over Spark Connect: ``register()`` on a Connect session, then write, read and stream (time travel,
the ``filter`` read option, an overwrite following the session's ``partitionOverwriteMode``, a stream, a merge whose
source is a Connect DataFrame, ``t.write_spark`` of a Connect DataFrame).

``SparkSession.builder.remote("local[2]")`` starts a local Connect server in a fresh process, so this runs in a
subprocess. It needs pyspark's ``connect`` extra (grpcio, grpcio-status, googleapis-common-protos, zstandard,
pandas), which the ``test`` extra installs; without them the test fails and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from pyspark_paimon import register

    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    try:
        assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
        register(spark)
        path = sys.argv[1] + "/db.db/t"
        (spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("paimon")
            .mode("append").option("primary-key", "id").option("bucket", "1").save(path))
        (spark.createDataFrame([(2, "B"), (3, "c")], "id long, v string").write.format("paimon")
            .mode("append").save(path))
        from pyspark_paimon.table import Table
        # buckets compacted in Connect's executors
        compacted = Table.open(path).maintenance.compact(full=True, spark=spark)
        print("COMPACT=" + json.dumps(Table.open(path).snapshot(compacted.snapshot_id).commit_kind))
        latest = spark.read.format("paimon").load(path).collect()
        first = spark.read.format("paimon").option("scan.snapshot-id", "1").load(path).collect()
        print("LATEST=" + json.dumps(sorted(list(r) for r in latest)))
        print("FIRST=" + json.dumps(sorted(list(r) for r in first)))
        # Scan.to_spark over Connect: the compacted bucket through Spark's Parquet reader, snapshot 1 (a level-0
        # file, merged) through the paimon source
        jvm = Table.open(path).scan("id > 1").to_spark(spark)
        mixed = Table.open(path).scan(snapshot_id=1).to_spark(spark)
        same_schema = jvm.schema == spark.read.format("paimon").load(path).schema
        print("TO_SPARK=" + json.dumps([sorted(list(r) for r in jvm.collect()),
                                        sorted(list(r) for r in mixed.collect()), same_schema]))
        # A stream over Connect: paimon -> paimon, exactly the latest full state of the source.
        sink = sys.argv[1] + "/db.db/s"
        q = (spark.readStream.format("paimon").load(path).writeStream.format("paimon")
             .option("checkpointLocation", sys.argv[1] + "/_checkpoint").trigger(availableNow=True).start(sink))
        q.awaitTermination()
        print("STREAMED=" + json.dumps(sorted(list(r) for r in spark.read.format("paimon").load(sink).collect())))
        # the session's partitionOverwriteMode reaches the writer over Connect too
        parts = sys.argv[1] + "/db.db/parts"
        (spark.createDataFrame([(1, "a", "d1"), (2, "b", "d2")], "id long, v string, dt string").write
            .format("paimon").mode("append").option("partition", "dt").save(parts))
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        (spark.createDataFrame([(3, "c", "d1")], "id long, v string, dt string").write.format("paimon")
            .mode("overwrite").save(parts))
        dynamic = spark.read.format("paimon").option("filter", "id > 1").load(parts).collect()
        print("DYNAMIC=" + json.dumps(sorted(list(r) for r in dynamic)))
        # t.merge(<Connect DataFrame>): matched in Connect's executors, committed once from this client
        src = spark.createDataFrame([(1, "A"), (9, "z")], "id long, v string")
        merged = Table.open(path).merge(src, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
        after = sorted(list(r) for r in spark.read.format("paimon").load(path).collect())
        print("MERGED=" + json.dumps([merged.updated, merged.inserted, after]))
        # t.write_spark(<Connect DataFrame>): Spark's Parquet writer in Connect's server, footers read and
        # committed from this client
        from pyspark_paimon import Catalog
        events = Catalog(sys.argv[1]).create_table("db.events", "id bigint, v string, dt string", partition_keys=["dt"])
        rows = spark.createDataFrame([(1, "a", "d1"), (2, None, "d2")], "id long, v string, dt string")
        wrote = events.write_spark(rows)
        print("JVM_WRITE=" + json.dumps([wrote.path, wrote.files_added, sorted(events.scan().to_arrow().to_pylist(),
                                                                            key=lambda r: r["id"])]))
        # ... and a fixed-bucket primary-key table: the paimon_bucket Arrow UDF register() added, over Connect
        keyed = Catalog(sys.argv[1]).create_table("db.keyed", "id bigint not null, v string", primary_keys=["id"],
                                                  options={"bucket": "2"})
        keyed.write_spark(spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id long, v string"))
        keyed.write_spark(spark.createDataFrame([(2, "B")], "id long, v string"))
        print("JVM_PK=" + json.dumps(sorted(list(r.values()) for r in keyed.scan().to_arrow().to_pylist())))
    finally:
        spark.stop()
""")


@pytest.mark.spark
def test_register_write_and_read_over_spark_connect(warehouse, tmp_path) -> None:
    import importlib.util

    missing = [
        m
        for m in ("grpc", "grpc_status", "google.rpc", "zstandard", "pandas")
        if importlib.util.find_spec(m.split(".")[0]) is None
    ]
    assert not missing, f"Spark Connect needs {missing}: run ./dev setup (pip install -e '.[test]')."
    script = tmp_path / "connect_roundtrip.py"
    script.write_text(SCRIPT)
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    proc = subprocess.run(
        [sys.executable, str(script), warehouse], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    out = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert proc.returncode == 0 and "LATEST" in out, proc.stderr[-3000:]
    assert json.loads(out["COMPACT"]) == "COMPACT"
    assert json.loads(out["LATEST"]) == [[1, "a"], [2, "B"], [3, "c"]]
    assert json.loads(out["FIRST"]) == [[1, "a"], [2, "b"]]
    assert json.loads(out["TO_SPARK"]) == [[[2, "B"], [3, "c"]], [[1, "a"], [2, "b"]], True]
    assert json.loads(out["STREAMED"]) == [[1, "a"], [2, "B"], [3, "c"]]
    assert json.loads(out["DYNAMIC"]) == [[2, "b", "d2"], [3, "c", "d1"]]
    assert json.loads(out.get("MERGED", "null")) == [1, 1, [[1, "A"], [2, "B"], [3, "c"], [9, "z"]]], proc.stderr[
        -3000:
    ]
    assert json.loads(out.get("JVM_PK", "null")) == [[1, "a"], [2, "B"], [3, "c"]], proc.stderr[-3000:]
    assert json.loads(out.get("JVM_WRITE", "null")) == [
        "jvm",
        2,
        [{"id": 1, "v": "a", "dt": "d1"}, {"id": 2, "v": None, "dt": "d2"}],
    ], proc.stderr[-3000:]
