"""Chain tables: storage and read cost of a daily chain (anchor + 1% daily deltas) against daily full copies.

Dataset: benchmarks/chain_data.py (``PAIMON_BENCH_CHAIN_ROWS`` keys, default 500,000; ``PAIMON_BENCH_CHAIN_DAYS``
days of 1% deltas, default 7). Day N below is the last day (``20250108`` by default): its chain read merges the
anchor with all N deltas, the worst case before compaction. Groups (all prefixed ``chain``):

* ``chain a: storage`` - on-disk bytes of the chain table vs daily full copies and vs its arithmetic *limit*
  (one full copy + the D days of changes, written by pyarrow as zstd Parquet), with a breakdown (anchor and
  delta data files; snapshots/schemas, manifest lists and manifests per branch), in extra_info and printed
  (the timed body is only the ``du`` walk).
* ``chain b: read day N`` - ``agg(count, sum(d), sum(seq))`` of day N: through the chain (filter pushdown on, so
  only day N is resolved; off, Spark 4's default, where every partition is resolved then filtered; and the
  ``scan.partitions`` read option, which resolves only day N without pushdown), from
  the snapshot branch after ``compact_chain``, from a plain PK table holding only day N's full copy, and
  ``spark.read.parquet`` of day N's full-copy file.
* ``chain c: traditional merge`` - the daily job a full-copy layout runs: yesterday's full copy + today's
  changes (Parquet), ``row_number() over (partition by id order by seq desc)``, keep rn = 1, aggregate.
* ``chain d: compact_chain`` - ``Table.compact_chain(partition=day N, overwrite=True)`` on a copy of the table.

Times are measured, never asserted; the checks only verify every alternative returned day N's content.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from chain_data import ChainData, day_name, du, get_chain
from conftest import loadavg
from floor_source import FLOOR_FORMAT
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

ROUNDS = 3


@pytest.fixture(scope="module")
def chain() -> ChainData:
    return get_chain()


def agg(df: DataFrame) -> tuple:
    r = df.agg(F.count(F.lit(1)), F.sum("d"), F.sum("seq")).collect()[0]
    return (int(r[0]), float(r[1]), int(r[2]))


def check(got: tuple, want: tuple, who: str) -> None:
    assert got[0] == want[0] and got[2] == want[2], f"{who}: got {got}, expected {want}"
    assert abs(got[1] - want[1]) <= 1e-9 * abs(want[1]), f"{who}: got {got}, expected {want}"


def info(benchmark: Any, chain: ChainData, label: str, before: float, **extra: Any) -> None:
    benchmark.extra_info.update(label=label, rows=chain.rows, days=chain.days, loadavg=[before, loadavg()], **extra)


def test_chain_storage(benchmark: Any, chain: ChainData) -> None:
    benchmark.group = "chain a: storage (du walk; bytes in extra_info)"
    before = loadavg()
    size = benchmark.pedantic(lambda: du(chain.chain_path), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    s, b = dict(chain.sizes), dict(chain.breakdown)
    assert sum(b.values()) == s["chain_table"], f"the breakdown {b} does not add up to {s['chain_table']}"
    ratio = s["full_copies"] / s["chain_table"]
    over_limit = s["chain_table"] / s["limit"]
    print(
        f"\n[chain storage] {chain.rows:,} keys, {chain.days} days of 1% deltas: chain table {s['chain_table']:,} B "
        f"(all branches, metadata included) vs {chain.days + 1} daily full copies {s['full_copies']:,} B "
        f"(Parquet zstd) = {ratio:.2f}x; limit (one full copy {s['full_copy_one_day']:,} B + changes as Parquet "
        f"{s['changes_parquet']:,} B) {s['limit']:,} B: chain / limit = {over_limit:.3f} (with "
        f"parquet.writer.version = v2: {s['chain_table_writer_v2']:,} B, "
        f"{s['chain_table_writer_v2'] / s['limit']:.3f}); plain PK table of day N "
        f"{s['full_day_pk_table']:,} B\n[chain storage] breakdown: " + ", ".join(f"{k} {v:,}" for k, v in b.items())
    )
    info(
        benchmark,
        chain,
        "du(chain table)",
        before,
        sizes=s,
        breakdown=b,
        full_copies_over_chain=round(ratio, 3),
        chain_over_limit=round(over_limit, 3),
        measured_chain_bytes=size,
    )


def _anchor_groups(chain: ChainData) -> list[list[str]]:
    """The anchor partition's data files (one per bucket), in two groups: the Spark tasks a chain read of a day
    gets on 2 cores."""
    from pyspark_paimon import Catalog

    snap = Catalog(chain.warehouse).get_table("bench.chain_t").on_branch("snapshot")
    files = sorted(split.file_path(f) for split in snap.scan().read_job().splits for f in split.files)
    assert len(files) == 4, files  # the anchor partition only: one file per bucket
    return [files[0::2], files[1::2]]


def _read_cases(spark: SparkSession, chain: ChainData) -> dict[str, tuple[Callable[[], DataFrame], bool]]:
    n = chain.last_day
    where = f"date = '{n}'"
    groups = json.dumps(_anchor_groups(chain))
    return {
        "chain_pushdown": (lambda: spark.read.format("paimon").load(chain.chain_path).where(where), True),
        "chain_no_pushdown": (lambda: spark.read.format("paimon").load(chain.chain_path).where(where), False),
        "chain_scan_partitions": (
            lambda: spark.read.format("paimon").option("scan.partitions", f"date={n}").load(chain.chain_path),
            False,
        ),
        # Spark 4's Python sources get no column pruning; a user-given schema is how a user prunes (README).
        "chain_scan_partitions_pruned": (
            lambda: (
                spark.read.schema("d double, seq bigint")
                .format("paimon")
                .option("scan.partitions", f"date={n}")
                .load(chain.chain_path)
            ),
            False,
        ),
        "compacted_snapshot": (lambda: spark.read.format("paimon").load(chain.compacted_path).where(where), True),
        "full_pk_table": (lambda: spark.read.format("paimon").load(chain.full_day_path), False),
        "parquet_full_copy": (lambda: spark.read.parquet(chain.full_dirs[n]), False),
        # The Python-source floor for a day: the anchor's own files (500k rows, the same columns, 2 tasks) handed
        # to Spark by benchmarks/floor_source.py, with no Paimon work at all (it returns day 0's content).
        "floor_anchor_files": (
            lambda: (
                spark.read.format(FLOOR_FORMAT)
                .option("ddl", "id bigint, v string, d double, seq bigint, date string")
                .option("groups", groups)
                .load()
            ),
            False,
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "chain_pushdown",
        "chain_no_pushdown",
        "chain_scan_partitions",
        "chain_scan_partitions_pruned",
        "compacted_snapshot",
        "full_pk_table",
        "parquet_full_copy",
        "floor_anchor_files",
    ],
)
def test_chain_read_day(benchmark: Any, spark: SparkSession, chain: ChainData, case: str) -> None:
    from pyspark_paimon import Catalog, register

    benchmark.group = "chain b: read day N agg(count, sum(d), sum(seq))"
    if case == "compacted_snapshot":  # make sure day N is in the copy's snapshot branch (skipped if it is)
        Catalog(chain.warehouse).get_table("bench.chain_compacted").chain.compact(f"date={chain.last_day}")
    load, pushdown = _read_cases(spark, chain)[case]
    if pushdown:
        register(spark, pushdown=True)
    try:
        before = loadavg()
        got = benchmark.pedantic(lambda: agg(load()), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    finally:
        if pushdown:
            register(spark)
    check(got, chain.expected[day_name(0) if case == "floor_anchor_files" else chain.last_day], case)
    info(benchmark, chain, case, before, baseline=case == "parquet_full_copy", pushdown=pushdown)


def test_chain_traditional_merge(benchmark: Any, spark: SparkSession, chain: ChainData) -> None:
    benchmark.group = "chain c: traditional daily merge (parquet full copy + changes, row_number)"
    n, prev = chain.last_day, sorted(chain.full_dirs)[-2]
    w = Window.partitionBy("id").orderBy(F.col("seq").desc())

    def job() -> tuple:
        full = spark.read.parquet(chain.full_dirs[prev])
        changes = spark.read.parquet(chain.change_dirs[n])
        merged = full.unionByName(changes).withColumn("rn", F.row_number().over(w)).where("rn = 1")
        return agg(merged)

    before = loadavg()
    got = benchmark.pedantic(job, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    check(got, chain.expected[n], "traditional merge")
    info(
        benchmark,
        chain,
        "spark_sql_row_number_merge",
        before,
        shuffle_partitions=spark.conf.get("spark.sql.shuffle.partitions"),
    )


def test_chain_compact(benchmark: Any, chain: ChainData) -> None:
    from pyspark_paimon import Catalog

    benchmark.group = "chain d: compact_chain(day N)"
    table = Catalog(chain.warehouse).get_table("bench.chain_compacted")
    part = f"date={chain.last_day}"
    before = loadavg()
    result = benchmark.pedantic(
        lambda: table.chain.compact(part, overwrite=True), rounds=ROUNDS, warmup_rounds=1, iterations=1
    )
    assert result.compacted, f"compact_chain wrote nothing: {result}"
    check(tuple(_arrow_agg(table, chain.last_day)), chain.expected[chain.last_day], "compact_chain result")
    info(benchmark, chain, "compact_chain(overwrite=True)", before)


def _arrow_agg(table: Any, day: str) -> tuple:
    import pyarrow.compute as pc

    snap = table.on_branch("snapshot").scan(f"date = '{day}'").to_arrow()
    return (snap.num_rows, float(pc.sum(snap["d"]).as_py()), int(pc.sum(snap["seq"]).as_py()))
