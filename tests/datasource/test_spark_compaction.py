"""Compaction through Spark: each bucket in an executor, one commit on the driver (t.maintenance.compact(spark=...))."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD


def test_compact_through_spark_executors(spark, warehouse: str) -> None:
    t = Catalog(warehouse).create_table(
        "db.t",
        "k int not null, v string, dt string",
        primary_keys=["k", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    for i in range(3):
        t.write_arrow(
            pa.table({"k": pa.array([1, 2, 3, 10 + i], pa.int32()), "v": [f"w{i}"] * 4, "dt": ["a", "a", "b", "b"]})
        )
    path = t.store.table_path
    before = sorted(map(tuple, spark.read.format("paimon").load(path).collect()))
    result = t.maintenance.compact(full=True, spark=spark)
    assert result and result.snapshot_id is not None and t.snapshot(result.snapshot_id).commit_kind == "COMPACT"
    assert result.buckets == len({(e.partition, e.bucket) for e in t.store.live_entries(t.latest_snapshot())})
    assert sorted(map(tuple, spark.read.format("paimon").load(path).collect())) == before
    assert {e.file.level for e in t.store.live_entries(t.latest_snapshot()) if e.kind == KIND_ADD} == {5}
    assert len(t.snapshots()) == 4  # one commit for every bucket
    # Outputs live in their bucket directories (written by the executors).
    for e in t.store.live_entries(t.latest_snapshot()):
        assert any(p.name == e.file.file_name for p in Path(path).rglob("*.parquet"))


def test_spark_writes_to_a_deletion_vector_table_are_visible_at_once(spark, warehouse: str) -> None:
    """Spark's writes into a deletion-vector table are compacted after their commit (level 0 up, superseded rows
    in vectors) and read by Spark right away, also a partial compaction through the executors."""
    t = Catalog(warehouse).create_table(
        "db.dv",
        "k int not null, v string",
        primary_keys=["k"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    path = t.store.table_path
    for i, keys in enumerate(([1, 2, 3], [2, 4], [3, 4, 5])):
        spark.createDataFrame([(k, f"w{i}") for k in keys], "k int, v string").write.format("paimon").mode(
            "append"
        ).save(path)
    assert sorted(map(tuple, spark.read.format("paimon").load(path).collect())) == [
        (1, "w0"),
        (2, "w1"),
        (3, "w2"),
        (4, "w2"),
        (5, "w2"),
    ]
    assert 0 not in {e.file.level for e in t.store.live_entries(t.latest_snapshot())}
    t.update_schema().set_options({"write-only": "true"}).commit()
    spark.createDataFrame([(1, "w3")], "k int, v string").write.format("paimon").mode("append").save(path)
    assert t.maintenance.compact(spark=spark)
    assert (1, "w3") in set(map(tuple, spark.read.format("paimon").load(path).collect()))
