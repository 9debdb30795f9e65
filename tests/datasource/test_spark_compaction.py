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
    assert result and result.snapshot is not None and result.snapshot.commit_kind == "COMPACT"
    assert result.buckets == len({(e.partition, e.bucket) for e in t.store.live_entries(t.latest_snapshot())})
    assert sorted(map(tuple, spark.read.format("paimon").load(path).collect())) == before
    assert {e.file.level for e in t.store.live_entries(t.latest_snapshot()) if e.kind == KIND_ADD} == {5}
    assert len(t.snapshots()) == 4  # one commit for every bucket
    # Outputs live in their bucket directories (written by the executors).
    for e in t.store.live_entries(t.latest_snapshot()):
        assert any(p.name == e.file.file_name for p in Path(path).rglob("*.parquet"))
