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

``test_key_table_full_agg`` measures issue 23's other ``to_spark`` targets with the full aggregate: a fully
compacted primary-key table and a compacted chain day against ``spark.read.parquet`` of the same files, and the
merge-on-read ``bench.pk_t`` against ``format("paimon")`` (benchmarks/README.md, "``Scan.to_spark``").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pytest
from conftest import PK_BUCKETS, ROUNDS, Datasets, loadavg, make_rows
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


# ---------------------------------------------------------------------------------- to_spark on key tables
# Issue 23's other targets, side by side in the same run: a fully compacted primary-key table and a compacted
# chain day (to_spark against spark.read.parquet of the same files), and bench.pk_t, which merges on read
# (to_spark against format("paimon"); every bucket needs a merge, so both go through the Python source).
KEY_CASES = [
    ("pk_compacted", "to_spark"),
    ("pk_compacted", "parquet"),
    ("pk_compacted", "paimon"),
    ("chain_day", "to_spark"),
    ("chain_day", "parquet"),
    ("pk_merge_on_read", "to_spark"),
    ("pk_merge_on_read", "paimon"),
]
CHAIN_DAY = "20250811"


@dataclass
class KeyTables:
    pk_path: str
    pk_files: list[str]
    chain_path: str
    chain_files: list[str]


def _split_files(table: Any, filter: str | None = None) -> list[str]:
    job = table.scan(filter).read_job()
    return [split.file_path(f) for split in job.splits for f in split.files]


@pytest.fixture(scope="module")
def key_tables(datasets: Datasets) -> KeyTables:
    """The compacted primary-key table and the chain table, next to the session's datasets (same rows)."""
    from pyspark_paimon import Catalog

    n = datasets.rows
    catalog = Catalog(datasets.warehouse)
    base = make_rows(np.arange(n, dtype=np.int64))
    quarter = make_rows(np.arange(0, n, 4, dtype=np.int64))  # the same values again: compaction merges them
    pk = catalog.create_table(
        "bench.pk_compacted",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options={"bucket": str(PK_BUCKETS), "write-only": "true"},
    )
    pk.write_arrow(base)
    pk.write_arrow(quarter)
    pk.maintenance.compact(full=True)
    assert pk.scan().explain().readers.python_splits == 0

    # Day 1 = the anchor day plus a delta of a quarter of the keys (same values, later sequence), compacted into
    # the snapshot branch: the snapshot branch serves that day whole.
    chain = catalog.create_chain_table(
        "bench.chain_tospark",
        "id bigint not null, s string, d double, seq bigint, dt string not null",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={
            "bucket": str(PK_BUCKETS),
            "bucket-key": "id",
            "sequence.field": "seq",
            "partition.timestamp-pattern": "$dt",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )

    def day(rows: pa.Table, seq: int, dt: str) -> pa.Table:
        m = rows.num_rows
        return rows.append_column("seq", pa.array([seq] * m, pa.int64())).append_column("dt", pa.array([dt] * m))

    chain.on_branch("snapshot").write_arrow(day(base, 0, "20250810"))
    chain.on_branch("delta").write_arrow(day(quarter, 1, CHAIN_DAY))
    assert chain.chain.compact({"dt": CHAIN_DAY})  # one top-level run per bucket: merge-free, read by the JVM
    day_filter = f"dt = '{CHAIN_DAY}'"
    assert chain.scan(day_filter).explain().readers.python_splits == 0
    return KeyTables(
        pk_path=pk.store.table_path,
        pk_files=_split_files(pk),
        chain_path=chain.store.table_path,
        chain_files=_split_files(chain.on_branch("snapshot"), day_filter),
    )


def key_loader(
    spark: SparkSession, data: Datasets, tables: KeyTables, table: str, source: str
) -> Callable[[], DataFrame]:
    from pyspark_paimon.table import Table

    path = {"pk_compacted": tables.pk_path, "chain_day": tables.chain_path, "pk_merge_on_read": data.pk_path}[table]
    if source == "parquet":
        files = tables.pk_files if table == "pk_compacted" else tables.chain_files
        return lambda: spark.read.parquet(*files)
    if source == "paimon":
        return lambda: spark.read.format("paimon").load(path)
    day_filter = f"dt = '{CHAIN_DAY}'" if table == "chain_day" else None
    return lambda: Table.open(path).scan(day_filter).to_spark(spark)


@pytest.mark.parametrize(("table", "source"), KEY_CASES, ids=[f"{t}-{s}" for t, s in KEY_CASES])
def test_key_table_full_agg(
    benchmark: Any, spark: SparkSession, datasets: Datasets, key_tables: KeyTables, table: str, source: str
) -> None:
    benchmark.group = f"1 to_spark {table}: agg(sum(id), sum(d), max(length(s)))"
    load = key_loader(spark, datasets, key_tables, table, source)
    tasks = load().rdd.getNumPartitions()
    load_before = loadavg()
    result = benchmark.pedantic(lambda: q_full_agg(load()), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    want = datasets.pk_expected if table == "pk_merge_on_read" else datasets.append_expected
    want.check(datasets.rows, result[0], result[1], result[2], f"{source} on {table}")
    benchmark.extra_info.update(
        label=source,
        rows=datasets.rows,
        spark_tasks=tasks,
        baseline=source == ("paimon" if table == "pk_merge_on_read" else "parquet"),
        loadavg=[load_before, loadavg()],
    )
