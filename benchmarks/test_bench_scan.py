"""Scan performance: filter pushdown, bucket pruning, partition pruning, planning time and chain filters.

Groups (all prefixed ``scan``); each Spark round loads a fresh DataFrame. "pushdown" means the source after
``register(spark, pushdown=True)`` (restored to ``register(spark)`` afterwards; on Spark 4.x pushdown is off by
default, see ``pushdown_is_safe``).

* ``scan a`` - selective range filter (1,000 rows of N) on conftest's ``bench.append_t`` (4 files, N =
  ``PAIMON_BENCH_ROWS``): paimon with pushdown, ``spark.read.parquet`` of the same files, paimon without.
* ``scan b`` - PK point lookup ``id = k`` on ``bench.pk16`` (16 buckets, ``PAIMON_BENCH_SCAN_ROWS`` rows, one
  commit): pushdown (bucket pruning + key-range/statistics skipping), the ``filter`` read option (the same
  pruning, without pushdown), and none (a full scan that Spark filters).
* ``scan c`` - ``dt = <day>`` on ``bench.parts365`` (365 partitions x 1,000 rows, one file each): pushdown vs
  none; and planning only: ``Table.explain(predicate=...)`` (fresh catalog + table each round) vs pypaimon 2.1
  planning ``new_read_builder().with_filter(...).new_scan().plan()`` in the oracle venv (benchmarks/
  oracle_plan.py in a subprocess; the in-process time is in ``extra_info.inproc_median_s``).
* ``scan d`` - chain read of day N (benchmarks/chain_data.py) with pushdown, without and with a filter on the
  value column ``d`` (~1% of the rows match).
* ``scan e`` - what selecting 1 of 200 partitions costs in Spark's planner worker, side by side (pushdown on,
  ``agg(count, sum(id))``): ``alone`` reads a one-partition table holding the same rows as the selected
  partition, ``part`` selects that partition of a 200-partition table (200 x 1,000 rows, one commit), ``full``
  reads all of it. The last case prints (t_part - t_alone) / (t_full - t_alone) of the minima: the share of a
  full scan's own work that selecting one partition costs (issue 40's target: at most 0.1).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable

import pytest
from chain_data import ChainData, ScanData, get_chain, get_scan
from conftest import Datasets, loadavg, oracle_plan_runner
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from tests.engine_read import explain as engine_explain

ROUNDS = 3


@pytest.fixture(scope="module")
def scan() -> ScanData:
    return get_scan()


@pytest.fixture(scope="module")
def chain() -> ChainData:
    return get_chain()


def timed(benchmark: Any, spark: SparkSession, run: Callable[[], Any], pushdown: bool) -> Any:
    from pyspark_paimon import register

    if pushdown:
        register(spark, pushdown=True)
    try:
        return benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    finally:
        if pushdown:
            register(spark)


@pytest.mark.parametrize("case", ["paimon_pushdown", "parquet", "paimon"])
def test_scan_selective_append(benchmark: Any, spark: SparkSession, datasets: Datasets, case: str) -> None:
    lo = datasets.rows // 2 + 17
    cond = f"id >= {lo} AND id < {lo + 1000}"
    benchmark.group = f"scan a: append {cond}"
    if case == "parquet":
        load = lambda: spark.read.parquet(*datasets.append_files)  # noqa: E731
    else:
        load = lambda: spark.read.format("paimon").load(datasets.append_path)  # noqa: E731
    before = loadavg()
    got = timed(
        benchmark,
        spark,
        lambda: load().where(cond).agg(F.count(F.lit(1)), F.sum("id")).collect()[0],
        case == "paimon_pushdown",
    )
    assert (got[0], got[1]) == (1000, sum(range(lo, lo + 1000))), f"{case}: {got}"
    benchmark.extra_info.update(
        label=case, rows=datasets.rows, baseline=case == "paimon_pushdown", loadavg=[before, loadavg()]
    )


@pytest.mark.parametrize("case", ["pushdown", "filter_option", "no_pushdown"])
def test_scan_pk_point(benchmark: Any, spark: SparkSession, scan: ScanData, case: str) -> None:
    key = scan.rows // 3 + 7
    benchmark.group = f"scan b: PK point lookup id = k (16 buckets, {scan.rows:,} rows)"
    before = loadavg()
    if case == "filter_option":  # the selection given at load(): safe without pushdown (Spark 4's default)
        run = lambda: spark.read.format("paimon").option("filter", f"id = {key}").load(scan.pk16_path).collect()  # noqa: E731
    else:
        run = lambda: spark.read.format("paimon").load(scan.pk16_path).where(f"id = {key}").collect()  # noqa: E731
    got = timed(benchmark, spark, run, case == "pushdown")
    assert len(got) == 1 and got[0]["id"] == key and got[0]["s"] == f"str_{key}", got
    benchmark.extra_info.update(label=case, rows=scan.rows, baseline=case == "pushdown", loadavg=[before, loadavg()])


@pytest.mark.parametrize("case", ["pushdown", "no_pushdown"])
def test_scan_partition_filter(benchmark: Any, spark: SparkSession, scan: ScanData, case: str) -> None:
    benchmark.group = f"scan c: dt = day on {scan.partitions} partitions x 1,000 rows"
    before = loadavg()
    got = timed(
        benchmark,
        spark,
        lambda: (
            spark.read.format("paimon")
            .load(scan.parts_path)
            .where(f"dt = '{scan.day}'")
            .agg(F.count(F.lit(1)), F.sum("id"))
            .collect()[0]
        ),
        case == "pushdown",
    )
    assert got[0] == 1000, got
    benchmark.extra_info.update(
        label=case, rows=scan.parts_rows, baseline=case == "pushdown", loadavg=[before, loadavg()]
    )


@pytest.mark.parametrize("case", ["ours_explain", "pypaimon_plan"])
def test_scan_partition_planning(benchmark: Any, scan: ScanData, case: str) -> None:
    from pyspark_paimon import Catalog
    from pyspark_paimon.planner.predicate import Leaf

    benchmark.group = f"scan c: planning dt = day ({scan.partitions} partitions)"
    before = loadavg()
    if case == "ours_explain":

        def plan() -> Any:
            return engine_explain(
                Catalog(scan.warehouse).get_table(scan.parts_identifier), predicate=[Leaf("dt", "=", scan.day)]
            )

        got = benchmark.pedantic(plan, rounds=ROUNDS, warmup_rounds=1, iterations=1)
        assert got.splits.files == 1, got.splits
        benchmark.extra_info.update(splits=got.splits.count, files=got.splits.files)
    else:
        plan, inproc = oracle_plan_runner(
            [
                "--warehouse",
                scan.warehouse,
                "--table",
                scan.parts_identifier,
                "--column",
                "dt",
                "--value",
                scan.day,
                "--reps",
                "1",
            ],
            timeout=600,
        )

        got = benchmark.pedantic(plan, rounds=ROUNDS, warmup_rounds=1, iterations=1)
        assert got["splits"] >= 1, got
        timed_inproc = inproc[1:]  # drop the warm-up round
        benchmark.extra_info.update(
            inproc_s=timed_inproc,
            inproc_median_s=statistics.median(timed_inproc),
            splits=got["splits"],
            files=got["files"],
        )
    benchmark.extra_info.update(label=case, baseline=case == "ours_explain", loadavg=[before, loadavg()])


@pytest.mark.parametrize("case", ["no_value_filter", "value_filter"])
def test_scan_chain_filter(benchmark: Any, spark: SparkSession, chain: ChainData, case: str) -> None:
    benchmark.group = "scan d: chain read of day N (pushdown on)"
    cond = f"date = '{chain.last_day}'" + (f" AND d > {chain.filter_threshold}" if case == "value_filter" else "")
    before = loadavg()
    got = timed(
        benchmark,
        spark,
        lambda: (
            spark.read.format("paimon")
            .load(chain.chain_path)
            .where(cond)
            .agg(F.count(F.lit(1)), F.sum("d"))
            .collect()[0]
        ),
        True,
    )
    want = chain.filter_expected if case == "value_filter" else chain.rows
    assert got[0] == want, f"{case}: {got[0]} rows, expected {want}"
    benchmark.extra_info.update(
        label=case, rows=chain.rows, baseline=case == "no_value_filter", loadavg=[before, loadavg()]
    )


SELECT_PARTITIONS = 200
SELECT_ROWS = 10_000
SELECT_ROUNDS = 7
SELECT_DAY = "d100"
_selection_minima: dict[str, float] = {}


@dataclass
class SelectionTables:
    parts_path: str
    alone_path: str


@pytest.fixture(scope="module")
def selection(tmp_path_factory: pytest.TempPathFactory) -> SelectionTables:
    import numpy as np
    import pyarrow as pa

    from pyspark_paimon import Catalog

    catalog = Catalog(str(tmp_path_factory.mktemp("selection_wh")))
    ids = np.arange(SELECT_PARTITIONS * SELECT_ROWS, dtype=np.int64)
    days = pa.array([f"d{i:03d}" for i in range(SELECT_PARTITIONS)]).take(pa.array(ids // SELECT_ROWS))
    data = pa.table({"id": ids, "d": ids * 0.5, "dt": days})
    parts = catalog.create_table("bench.parts200", "id bigint, d double, dt string", partition_keys=["dt"])
    parts.write_arrow(data)
    alone = catalog.create_table("bench.parts1", "id bigint, d double, dt string", partition_keys=["dt"])
    alone.write_arrow(data.filter(pa.compute.equal(data["dt"], SELECT_DAY)))
    return SelectionTables(parts.store.table_path, alone.store.table_path)


@pytest.mark.parametrize("case", ["alone", "part", "full"])
def test_scan_partition_selection_cost(
    benchmark: Any, spark: SparkSession, selection: SelectionTables, case: str
) -> None:
    benchmark.group = f"scan e: 1 of {SELECT_PARTITIONS} partitions vs alone vs full (planner worker)"
    path = selection.alone_path if case == "alone" else selection.parts_path

    def run() -> Any:
        df = spark.read.format("paimon").load(path)
        if case == "part":
            df = df.where(f"dt = '{SELECT_DAY}'")
        return df.agg(F.count(F.lit(1)), F.sum("id")).collect()[0]

    from pyspark_paimon import register

    before = loadavg()
    register(spark, pushdown=True)
    try:  # more rounds than the other groups: the ratio's denominator is a difference of two small times
        got = benchmark.pedantic(run, rounds=SELECT_ROUNDS, warmup_rounds=1, iterations=1)
    finally:
        register(spark)
    rows = SELECT_PARTITIONS * SELECT_ROWS if case == "full" else SELECT_ROWS
    assert got[0] == rows, f"{case}: {got}"
    _selection_minima[case] = benchmark.stats.stats.min
    extra: dict[str, Any] = {}
    if len(_selection_minima) == 3:
        m = _selection_minima
        ratio = (m["part"] - m["alone"]) / (m["full"] - m["alone"])
        extra["ratio_part_over_full"] = round(ratio, 3)
        print(
            f"\n[scan e] alone {m['alone']:.3f} s, part {m['part']:.3f} s, full {m['full']:.3f} s: "
            f"(t_part - t_alone) / (t_full - t_alone) = {ratio:.3f}"
        )
    benchmark.extra_info.update(label=case, baseline=case == "alone", loadavg=[before, loadavg()], **extra)
