"""Group 1: full scans of an append table, the paimon source against Spark's Parquet and the pyarrow floor.

All alternatives read the same 4 Parquet files (the table's live data files, listed through the planner):

* ``paimon``: ``spark.read.format("paimon").load(path)``, registered by ``pyspark_paimon.register(spark)``
  (on Spark 4.x without filter pushdown; see ``pushdown_is_safe``).
* ``paimon_pushdown``: the same after ``register(spark, pushdown=True)`` (filter query only): the source
  prunes files by their statistics and applies ``id < 1000`` itself.
* ``to_spark``: ``Table.scan().to_spark(spark)`` (full aggregate only): the same files through Spark's own
  Parquet reader, planned by pyspark-paimon (schema mapping, the ``paimon`` source only for splits that merge).
* ``parquet``: ``spark.read.parquet(<the same files>)``: Spark's vectorised JVM reader, with column pruning
  and row-group skipping, which no Python source has on Spark 4.3.
* ``floor_same_tasks``: benchmarks/floor_source.py, pyarrow ``iter_batches`` over the files, with exactly
  the paimon source's Spark tasks; ``floor_per_file``: the same with one task per file.

Every round loads a fresh DataFrame (``load()`` is part of what a query costs), then runs the query.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from conftest import ROUNDS, Datasets, loadavg
from floor_source import FLOOR_FORMAT
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def q_count(df: DataFrame) -> tuple:
    return (df.count(),)


def q_sum_id(df: DataFrame) -> tuple:
    return tuple(df.agg(F.sum("id")).collect()[0])


def q_full_agg(df: DataFrame) -> tuple:
    return tuple(df.agg(F.sum("id"), F.sum("d"), F.max(F.length("s"))).collect()[0])


def q_filter(df: DataFrame) -> tuple:
    return (df.filter("id < 1000").count(),)


QUERIES: dict[str, tuple[str, Callable[[DataFrame], tuple]]] = {
    "count": ("count()", q_count),
    "sum_id": ("agg(sum(id))", q_sum_id),
    "full_agg": ("agg(sum(id), sum(d), max(length(s)))", q_full_agg),
    "filter": ("filter(id < 1000).count()", q_filter),
}
SOURCES = ["paimon", "parquet", "floor_same_tasks", "floor_per_file"]
CASES = [(q, s) for q in QUERIES for s in SOURCES] + [("filter", "paimon_pushdown"), ("full_agg", "to_spark")]


def expected_result(query: str, data: Datasets) -> tuple:
    e = data.append_expected
    return {
        "count": (e.rows,),
        "sum_id": (e.sum_id,),
        "full_agg": (e.sum_id, e.sum_d, e.max_len_s),
        "filter": (min(1000, e.rows),),
    }[query]


def loader(spark: SparkSession, data: Datasets, source: str) -> Callable[[], DataFrame]:
    if source in ("paimon", "paimon_pushdown"):
        return lambda: spark.read.format("paimon").load(data.append_path)
    if source == "parquet":
        return lambda: spark.read.parquet(*data.append_files)
    if source == "to_spark":
        from pyspark_paimon.table import Table

        return lambda: Table.open(data.append_path).scan().to_spark(spark)
    groups = data.append_groups if source == "floor_same_tasks" else [[p] for p in data.append_files]
    option = json.dumps(groups)
    return lambda: spark.read.format(FLOOR_FORMAT).option("groups", option).load()


@pytest.mark.parametrize(("query", "source"), CASES, ids=[f"{q}-{s}" for q, s in CASES])
def test_append_scan(benchmark: Any, spark: SparkSession, datasets: Datasets, query: str, source: str) -> None:
    from pyspark_paimon import register

    title, run_query = QUERIES[query]
    benchmark.group = f"1 append scan: {title}"
    load = loader(spark, datasets, source)
    if source == "paimon_pushdown":
        register(spark, pushdown=True)
    try:
        tasks = load().rdd.getNumPartitions()
        load_before = loadavg()
        result = benchmark.pedantic(lambda: run_query(load()), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    finally:
        if source == "paimon_pushdown":
            register(spark)  # back to the default for the benchmarks that follow
    want = expected_result(query, datasets)
    assert result[0] == want[0] and result[-1] == want[-1], f"{source} {query}: got {result}, expected {want}"
    if len(want) == 3:
        assert abs(result[1] - want[1]) <= 1e-9 * abs(want[1])
    benchmark.extra_info.update(
        label=source,
        rows=datasets.rows,
        spark_tasks=tasks,
        files=len(datasets.append_files),
        baseline=source == "paimon",
        loadavg=[load_before, loadavg()],
    )
