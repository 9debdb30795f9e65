"""Parquet row-group skipping in raw reads, and column pruning of projected reads."""

from __future__ import annotations

import datetime as dt
import io
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.read import file_read
from pyspark_paimon.datasource.read.file_read import select_row_groups
from pyspark_paimon.datasource.read.read_context import ReadMetrics
from pyspark_paimon.planner.predicate import Leaf, to_arrow_expression
from tests.engine_read import read_arrow as engine_read_arrow
from tests.engine_read import read_job as engine_read_job


def _rewrite_with_small_row_groups(table: Any, rows_per_group: int) -> int:
    """Rewrite every data file of ``table`` in place with small row groups (same rows, same schema)."""
    n = 0
    for path in Path(table.store.table_path).rglob("*.parquet"):
        data = pq.read_table(path, partitioning=None)
        pq.write_table(data, path, row_group_size=rows_per_group)
        n += 1
    return n


def _table(catalog: Catalog, pk: bool = False) -> Any:
    t = catalog.create_table(
        "default.r",
        "id bigint, v bigint, s string, dt string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"] if pk else [],
        options={"bucket": "1"} if pk else {},
    )
    t.write_arrow(
        pa.table(
            {
                "id": pa.array(range(1000), pa.int64()),
                "v": pa.array(range(1000), pa.int64()),
                "s": [f"s{i:04d}" for i in range(1000)],
                "dt": ["d"] * 1000,
            }
        )
    )
    assert _rewrite_with_small_row_groups(t, 100) == 1
    return t


def test_select_row_groups_uses_statistics() -> None:
    buf = io.BytesIO()
    pq.write_table(
        pa.table({"a": pa.array(range(100), pa.int64()), "b": [None] * 50 + ["x"] * 50}), buf, row_group_size=10
    )
    f = pq.ParquetFile(io.BytesIO(buf.getvalue()))
    assert select_row_groups(f, []) is None
    metrics = ReadMetrics()
    assert select_row_groups(f, [Leaf("a", ">=", 95)], metrics) == [9]
    assert (metrics.row_groups_total, metrics.row_groups_skipped) == (10, 9)
    assert select_row_groups(f, [Leaf("a", "in", (5, 55))]) == [0, 5]
    assert select_row_groups(f, [Leaf("b", "is_not_null")]) == [5, 6, 7, 8, 9]
    assert select_row_groups(f, [Leaf("a", "<", 0)]) == []
    assert select_row_groups(f, [Leaf("missing", "=", 1)]) is None
    assert select_row_groups(f, [Leaf("a", "=", "text")]) == list(range(10))  # incomparable: keep all


def test_append_read_skips_row_groups_and_stays_exact(catalog: Catalog) -> None:
    t = _table(catalog)
    full = t.scan().to_arrow()
    for leaves in ([Leaf("v", ">=", 950)], [Leaf("id", "in", (5, 505))], [Leaf("s", "starts_with", "s01")]):
        job = engine_read_job(t, predicate=leaves)
        got = job.to_arrow()
        expected = full.filter(to_arrow_expression(leaves, full.schema))
        assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())
        assert job.metrics.row_groups_total == 10 and job.metrics.row_groups_skipped >= 8
    job = engine_read_job(t, predicate=[Leaf("v", ">", 2000)])
    assert job.to_arrow().num_rows == 0
    assert job.metrics.row_groups_total == 0  # the file itself was skipped by its manifest statistics
    job = t.scan().read_job()
    assert job.to_arrow().num_rows == 1000
    assert job.metrics.row_groups_total == 0  # nothing pushed: no statistics consulted


def test_pk_raw_convertible_only(catalog: Catalog) -> None:
    t = _table(catalog, pk=True)  # one level-0 file: not raw-convertible, but alone in its key range
    job = engine_read_job(t, predicate=[Leaf("v", ">=", 950)])
    assert sorted(job.to_arrow().column("id").to_pylist()) == list(range(950, 1000))
    # a file no other file overlaps holds final rows, so its row groups are skipped as in a raw read
    assert job.metrics.row_groups_total == 10 and job.metrics.row_groups_skipped == 9
    assert job.metrics.merged_sections == 0
    # a second file overlapping it: the section is merged, and nothing is skipped before the merge
    t.write_arrow(
        pa.table({"id": pa.array([960], pa.int64()), "v": pa.array([1], pa.int64()), "s": ["new"], "dt": ["d"]})
    )
    job = engine_read_job(t, predicate=[Leaf("v", ">=", 950)])
    assert sorted(job.to_arrow().column("id").to_pylist()) == [i for i in range(950, 1000) if i != 960]
    assert job.metrics.row_groups_skipped == 0 and job.metrics.merged_sections == 1


def test_projection_reads_only_needed_columns(catalog: Catalog, monkeypatch: Any) -> None:
    t = _table(catalog)
    seen: list[list[str]] = []
    original = file_read._FileReader.batches

    def spy(self: Any, columns: list[str], batch_size: int, row_groups: Any = None) -> Any:
        seen.append(list(columns))
        return original(self, columns, batch_size, row_groups)

    monkeypatch.setattr(file_read._FileReader, "batches", spy)
    job = t.scan(columns=["v"]).read_job()
    assert job.context.read_fields == ("v",)
    out = job.to_arrow()
    assert out.column_names == ["v"] and out.num_rows == 1000
    assert seen == [["v"]]
    seen.clear()
    out = engine_read_arrow(t, predicate=[Leaf("s", "=", "s0007")], columns=["v"])
    assert out.column("v").to_pylist() == [7]
    assert seen == [["v", "s"]]  # the filter column, nothing else
    # the read context (what executors receive) stays small: no manifests or caches inside
    assert len(pickle.dumps(job.context)) < 20000


def test_statistics_outside_pythons_range_keep_row_groups(catalog: Catalog) -> None:
    """A timestamp beyond year 9999 (Java writes such sentinels) has Parquet statistics that Python cannot
    decode (OverflowError): the row group is kept and the exact filter still answers."""
    t = catalog.create_table("default.far", "id bigint, ts timestamp(6)")
    t.write_arrow(
        pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "ts": pa.array([1577836800000000, 1577836800000001], pa.timestamp("us")),
            }
        )
    )
    (path,) = Path(t.store.table_path).rglob("*.parquet")
    data = pq.read_table(path, partitioning=None)
    i = data.schema.get_field_index("ts")
    far = pa.array([1577836800000000, 2**62], pa.int64()).cast(data.schema.field(i).type)
    pq.write_table(data.set_column(i, data.schema.field(i), far), path)
    job = engine_read_job(t, predicate=[Leaf("ts", "=", dt.datetime(2020, 1, 1))])
    assert job.to_arrow().column("id").to_pylist() == [1]
    assert job.metrics.row_groups_total == 1 and job.metrics.row_groups_skipped == 0
