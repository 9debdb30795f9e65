"""Groups 17a and 17b: the JVM write path (issue 40), N rows into an empty table, one commit: 17a an append table
(``bucket = -1``), 17b a primary-key table (``id``, ``bucket = 4``).

The rows are ``spark.range(0, N, 1, 2)`` shaped into (id, s, d) in the JVM, as in group 3, and every round writes
them into a fresh target (created untimed; after the round its rows are checked, untimed, and it is removed):

* ``parquet``: ``df.write.parquet(<fresh directory>)``: Spark's own writer alone, the baseline;
* ``paimon_python``: ``df.write.format("paimon").save(<table>)``: the Python Data Source write path;
* ``write_spark``: ``t.write_spark(df)``: Spark's Parquet writer writes, this package reads the footers, moves the
  files into the table and commits (``WriteResult.path == "jvm"``).

17b's baseline is what a Parquet user does to get 4 key-sorted buckets:
``df.repartition(4, "id").sortWithinPartitions("id").write.parquet(<fresh directory>)``.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq
import pytest
from conftest import ROUNDS, ROWS, loadavg
from pyspark.sql import SparkSession

GROUP = "17a JVM write path: append table (bucket -1), one commit"
PK_GROUP = "17b JVM write path: primary-key table (4 buckets), one commit"
WRITE_ROUNDS = max(1, min(ROUNDS, 3))
_names = itertools.count()
pytestmark = pytest.mark.benchmark(group=GROUP)


def _rows(spark: SparkSession) -> Any:
    return spark.range(0, ROWS, 1, 2).selectExpr(
        "id", "concat('str_', cast(id as string)) as s", "cast(id as double) * 0.5 as d"
    )


def _table(warehouse: Path, pk: bool = False) -> Any:
    from pyspark_paimon import Catalog

    if pk:
        return Catalog(str(warehouse)).create_table(
            f"bench_j.k{next(_names)}",
            "id bigint not null, s string, d double",
            primary_keys=["id"],
            options={"bucket": "4"},
        )
    return Catalog(str(warehouse)).create_table(f"bench_j.t{next(_names)}", "id bigint, s string, d double")


def _check_table(table: Any) -> None:
    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.total_record_count == ROWS, f"{table.identifier}: {snapshot}"
    shutil.rmtree(table.store.table_path)


def _run(benchmark: Any, label: str, write: Callable[..., None], setup: Callable[[], Any], check: Any) -> None:
    load_before = loadavg()
    benchmark.pedantic(
        write,
        setup=lambda: ((setup(),), {}),
        teardown=check,
        rounds=WRITE_ROUNDS,
        warmup_rounds=1,
        iterations=1,
    )
    benchmark.extra_info.update(label=label, rows=ROWS, spark_tasks=2, loadavg=[load_before, loadavg()])


def _check_parquet(path: str) -> None:
    written = sum(pq.ParquetFile(p).metadata.num_rows for p in Path(path).glob("*.parquet"))
    assert written == ROWS, f"df.write.parquet wrote {written} rows, expected {ROWS}"
    shutil.rmtree(path)


def test_jvm_write_parquet(benchmark: Any, spark: SparkSession, tmp_path: Path) -> None:
    _run(
        benchmark,
        "parquet (df.write.parquet)",
        lambda path: _rows(spark).write.option("compression", "zstd").parquet(path),
        lambda: str(tmp_path / f"parquet-{next(_names)}"),
        _check_parquet,
    )
    benchmark.extra_info["baseline"] = True


def test_jvm_write_paimon_python(benchmark: Any, spark: SparkSession, tmp_path: Path) -> None:
    _run(
        benchmark,
        "paimon_python (format('paimon'))",
        lambda t: _rows(spark).write.format("paimon").mode("append").save(t.uri),
        lambda: _table(tmp_path),
        _check_table,
    )


def test_jvm_write_spark(benchmark: Any, spark: SparkSession, tmp_path: Path) -> None:
    def write(t: Any) -> None:
        assert t.write_spark(_rows(spark)).path == "jvm"

    _run(benchmark, "write_spark (JVM path)", write, lambda: _table(tmp_path), _check_table)


@pytest.mark.benchmark(group=PK_GROUP)
def test_jvm_write_pk_parquet(benchmark: Any, spark: SparkSession, tmp_path: Path) -> None:
    def write(path: str) -> None:
        _rows(spark).repartition(4, "id").sortWithinPartitions("id").write.option("compression", "zstd").parquet(path)

    _run(
        benchmark,
        "parquet (repartition(4, id), sorted)",
        write,
        lambda: str(tmp_path / f"pk-parquet-{next(_names)}"),
        _check_parquet,
    )
    benchmark.extra_info["baseline"] = True


@pytest.mark.benchmark(group=PK_GROUP)
def test_jvm_write_pk_paimon_python(benchmark: Any, spark: SparkSession, tmp_path: Path) -> None:
    _run(
        benchmark,
        "paimon_python (format('paimon'))",
        lambda t: _rows(spark).write.format("paimon").mode("append").save(t.uri),
        lambda: _table(tmp_path, pk=True),
        _check_table,
    )


@pytest.mark.benchmark(group=PK_GROUP)
def test_jvm_write_pk_spark(benchmark: Any, spark: SparkSession, tmp_path: Path) -> None:
    def write(t: Any) -> None:
        assert t.write_spark(_rows(spark)).path == "jvm"

    _run(benchmark, "write_spark (JVM path)", write, lambda: _table(tmp_path, pk=True), _check_table)
