"""Group 2: full read of a primary-key table whose 4 buckets each hold 5 overlapping commits.

Every reader must merge (deduplicate) the 5 level-0 files of each bucket. Alternatives:

* ``spark_paimon``: ``spark.read.format("paimon").load(path)`` then ``agg(sum(id), sum(d), max(length(s)))``,
  which makes every column cross from the Python workers to the JVM (Spark 4.3 cannot prune columns of a
  Python source, so ``count()`` would cost nearly the same).
* ``spark_paimon_split1mb``: the same with ``.option("source.split.target-size", "1mb")``, so each bucket
  becomes its own Spark task (by default the planner packs this table into one task; see README).
* ``table_to_arrow``: ``Table.to_arrow()``, our Python API, no Spark (one thread, in this process).
* ``pypaimon`` / ``pypaimon_rust``: their own readers in the oracle venv, through benchmarks/oracle_bench.py.
  Each round is one subprocess doing exactly one read, so the wall time includes interpreter start and
  imports; the in-process read time the script reports is in ``extra_info`` (``inproc_s``) and is what the
  comparison summary uses. For pypaimon-rust, one more subprocess doing 3 reads records warm in-process times
  (``warm_inproc_s``; the first read of a process pays one-off runtime start-up).
"""

from __future__ import annotations

import statistics
from typing import Any

import pyarrow.compute as pc
import pytest
from conftest import ROUNDS, Datasets, loadavg
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

GROUP = "2 PK table full read (4 buckets x 5 overlapping commits)"
# pypaimon's pure-Python merge takes about a minute per read at 2M rows, so it gets a single round.
SUBPROCESS_ROUNDS = {"pypaimon": 1, "rust": 3}
pytestmark = pytest.mark.benchmark(group=GROUP)


def _info(benchmark: Any, label: str, data: Datasets, **extra: Any) -> None:
    benchmark.extra_info.update(label=label, rows=data.rows, files=data.pk_files, **extra)


@pytest.mark.parametrize("split_target", [None, "1mb"], ids=["spark_paimon", "spark_paimon_split1mb"])
def test_pk_read_spark(benchmark: Any, spark: SparkSession, datasets: Datasets, split_target: str | None) -> None:
    def load() -> Any:
        reader = spark.read.format("paimon")
        if split_target:
            reader = reader.option("source.split.target-size", split_target)
        return reader.load(datasets.pk_path)

    def run() -> tuple:
        return tuple(load().agg(F.count("*"), F.sum("id"), F.sum("d"), F.max(F.length("s"))).collect()[0])

    tasks = load().rdd.getNumPartitions()
    load_before = loadavg()
    rows, sum_id, sum_d, max_len = benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    datasets.pk_expected.check(rows, sum_id, sum_d, max_len, "spark paimon")
    _info(
        benchmark,
        "spark_paimon" + (f" (split-target {split_target})" if split_target else ""),
        datasets,
        spark_tasks=tasks,
        baseline=split_target is None,
        loadavg=[load_before, loadavg()],
    )


def test_pk_read_table_to_arrow(benchmark: Any, datasets: Datasets) -> None:
    from pyspark_paimon import Table

    table = Table.open(datasets.pk_path)
    load_before = loadavg()
    data = benchmark.pedantic(lambda: table.scan().to_arrow(), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    datasets.pk_expected.check(
        data.num_rows,
        pc.sum(data.column("id")).as_py(),
        pc.sum(data.column("d")).as_py(),
        pc.max(pc.utf8_length(data.column("s"))).as_py(),
        "Table.to_arrow",
    )
    _info(benchmark, "table_to_arrow (no Spark)", datasets, loadavg=[load_before, loadavg()])


@pytest.mark.parametrize("impl", ["pypaimon", "rust"], ids=["pypaimon", "pypaimon_rust"])
def test_pk_read_oracle(benchmark: Any, datasets: Datasets, oracle_bench: Any, impl: str) -> None:
    reports: list[dict[str, Any]] = []

    def run() -> None:
        reports.append(
            oracle_bench("read", impl=impl, warehouse=datasets.warehouse, table=datasets.pk_identifier, reads=1)
        )

    load_before = loadavg()
    benchmark.pedantic(run, rounds=SUBPROCESS_ROUNDS[impl], warmup_rounds=0, iterations=1)
    load_after = loadavg()
    for report in reports:
        c = report["checks"]
        datasets.pk_expected.check(c["rows"], c["sum_id"], c["sum_d"], c["max_len_s"], impl)
    inproc = [r["times_s"][0] for r in reports]
    extra: dict[str, Any] = {}
    if impl == "rust":
        warm = oracle_bench("read", impl=impl, warehouse=datasets.warehouse, table=datasets.pk_identifier, reads=3)
        extra["warm_inproc_s"] = warm["times_s"][1:]
    _info(
        benchmark,
        ("pypaimon" if impl == "pypaimon" else "pypaimon_rust") + " (subprocess)",
        datasets,
        inproc_s=inproc,
        inproc_median_s=statistics.median(inproc),
        import_s=statistics.median(r["import_s"] for r in reports),
        loadavg=[load_before, load_after],
        **extra,
    )
