"""Scale curves: the main write and read benchmarks at several sizes and bucket counts, and planning and reading
a table with a lot of metadata (1,000 partitions x 16 buckets built by 500 commits).

Curves (``PAIMON_BENCH_SCALE_ROWS``, default ``2000000``; ``PAIMON_BENCH_SCALE_BUCKETS``, default ``4,64``;
every combination is one point; ``PAIMON_BENCH_SCALE_ROUNDS`` overrides the timed rounds, by default 3 up to
2M rows and 1 above):

* ``write``: N rows (``conftest.make_rows``: id, s = 'str_<id>', d = id * 0.5) into a fresh, empty primary-key
  table (``id``, B buckets, created untimed before each round) in one commit: ``spark_paimon``
  (``spark.range`` shaped into (id, s, d) in the JVM, then ``.write.format("paimon")``, 2 tasks),
  ``table_write_arrow`` (``Table.write_arrow``) and ``pypaimon_rust`` (its batch writer in the oracle venv,
  one subprocess per round, compared by its in-process time). After each round the snapshot must hold N
  records.
* ``read``: the table one ``Table.write_arrow`` of the same rows wrote (one file per bucket), read back whole:
  ``spark_paimon`` (``spark.read.format("paimon")`` + count, sum(id), sum(d), max(length(s)), so every column
  crosses into the JVM), ``table_to_arrow`` and ``pypaimon_rust``. Every alternative must return the same
  count and sums.
  pypaimon's pure-Python reader and writer are left out (about a minute per 2M rows, see README).

Big metadata (benchmarks/scale_data.py; the shape comes from ``PAIMON_BENCH_META_*``): planning the whole
table and one partition with ``Table.explain`` (a fresh Catalog each round; ``cold`` clears the process-wide
manifest cache before each round, ``warm`` keeps it), pypaimon's planning of the same (benchmarks/
oracle_plan.py, one subprocess per round, compared in process), a full read in process (``Table.to_arrow``),
a Spark aggregate over the whole table and a Spark read of one partition through ``scan.partitions``.

The terminal summary ("paimon scale curves", conftest.py) puts each alternative's medians side by side per point
with the growth ratios (rows: largest / smallest size at equal buckets; buckets: most / fewest at equal rows).
"""

from __future__ import annotations

import itertools
import os
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import Expected, _expected_plain, assert_reads_back, loadavg, make_rows, oracle_plan_runner
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from scale_data import MetaTable, get_meta

from tests.engine_read import explain as engine_explain


def _sizes(name: str, default: str) -> list[int]:
    return [int(v.strip().replace("_", "")) for v in os.environ.get(name, default).split(",") if v.strip()]


SCALE_ROWS = _sizes("PAIMON_BENCH_SCALE_ROWS", "2000000")
SCALE_BUCKETS = _sizes("PAIMON_BENCH_SCALE_BUCKETS", "4,64")
POINTS = list(itertools.product(SCALE_ROWS, SCALE_BUCKETS))
META_PLAN_ROUNDS = 5
META_READ_ROUNDS = 2  # full reads of the big-metadata table (tens of seconds each), no warm-up round
PYPAIMON_PLAN_ROUNDS = 3
SCOPE_LABELS = {
    "all": "all",
    "one_partition_filter": "1 part filter",
    "one_partition_scan_partitions": "1 part scan.partitions",
}
_names = itertools.count()


def rounds_for(rows: int) -> int:
    env = os.environ.get("PAIMON_BENCH_SCALE_ROUNDS")
    return int(env) if env else (3 if rows <= 2_000_000 else 1)


def _point_id(point: tuple[int, int]) -> str:
    rows, buckets = point
    return (f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else f"{rows}") + f"x{buckets}b"


@dataclass
class Point:
    rows: int
    buckets: int
    data: pa.Table
    ipc: str
    expected: Expected
    read_identifier: str
    read_path: str


@dataclass
class ScaleData:
    root: Path
    warehouse: str
    points: dict[tuple[int, int], Point]

    def point(self, rows: int, buckets: int) -> Point:
        """The rows of size ``rows`` and a table of them with ``buckets`` buckets (written on first use)."""
        key = (rows, buckets)
        if key not in self.points:
            from pyspark_paimon import Catalog

            same = next((p for (r, _), p in self.points.items() if r == rows), None)
            if same is not None:
                data, ipc, expected = same.data, same.ipc, same.expected
            else:
                data = make_rows(np.arange(rows, dtype=np.int64))
                ipc = str(self.root / f"rows-{rows}.arrow")
                with pa.OSFile(ipc, "wb") as sink, pa.ipc.new_file(sink, data.schema) as writer:
                    writer.write_table(data)
                expected = _expected_plain(rows)
            ident = f"scale.read_{rows}_{buckets}"
            table = Catalog(self.warehouse).create_table(
                ident, "id bigint not null, s string, d double", primary_keys=["id"], options={"bucket": str(buckets)}
            )
            table.write_arrow(data)
            self.points[key] = Point(rows, buckets, data, ipc, expected, ident, table.store.table_path)
        return self.points[key]


@pytest.fixture(scope="module")
def scale(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScaleData]:
    root = tmp_path_factory.mktemp("scale")
    yield ScaleData(root, str(root / "warehouse"), {})


@pytest.fixture(scope="module")
def meta() -> MetaTable:
    return get_meta()


def _curve(benchmark: Any, op: str, label: str, point: Point, before: float, **extra: Any) -> None:
    benchmark.extra_info.update(
        label=label, rows=point.rows, buckets=point.buckets, curve=op, loadavg=[before, loadavg()], **extra
    )


def _check(expected: Expected, got: tuple, who: str) -> None:
    expected.check(int(got[0]), int(got[1]), float(got[2]), int(got[3]), who)


def _arrow_checks(data: pa.Table) -> tuple:
    return (
        data.num_rows,
        pc.sum(data.column("id")).as_py(),
        pc.sum(data.column("d")).as_py(),
        pc.max(pc.utf8_length(data.column("s"))).as_py(),
    )


# ------------------------------------------------------------------------------------------- curves: write


def _fresh(scale: ScaleData, buckets: int, label: str) -> Any:
    from pyspark_paimon import Catalog

    return Catalog(scale.warehouse).create_table(
        f"scale_w.{label}_{next(_names)}",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options={"bucket": str(buckets)},
    )


def _write_rounds(
    benchmark: Any, scale: ScaleData, point: Point, label: str, write: Callable[[Any], None], warmup: int = 1
) -> None:
    from pyspark_paimon import Catalog

    read_back: list[bool] = []

    def check_and_drop(table: Any) -> None:
        snapshot = table.latest_snapshot()
        assert snapshot is not None and snapshot.total_record_count == point.rows, (
            f"{label}: expected {point.rows} records, got {snapshot}"
        )
        if not read_back:  # the first round's table, read back in full once (outside the timed function)
            read_back.append(True)
            assert_reads_back(table.scan().to_arrow(), point.data, f"{label} {point.rows} rows")
        Catalog(scale.warehouse).drop_table(table.identifier)

    benchmark.pedantic(
        write,
        setup=lambda: ((_fresh(scale, point.buckets, label),), {}),
        teardown=check_and_drop,
        rounds=rounds_for(point.rows),
        warmup_rounds=warmup if point.rows <= 2_000_000 else 0,
        iterations=1,
    )


@pytest.mark.parametrize("point", POINTS, ids=[_point_id(p) for p in POINTS])
@pytest.mark.parametrize("alt", ["spark_paimon", "table_write_arrow", "pypaimon_rust"])
def test_scale_write(
    benchmark: Any, spark: SparkSession, scale: ScaleData, oracle_bench: Any, point: tuple[int, int], alt: str
) -> None:
    p = scale.point(*point)
    benchmark.group = f"scale write: {p.rows:,} rows x {p.buckets} buckets"
    before = loadavg()
    extra: dict[str, Any] = {"baseline": alt == "spark_paimon"}
    if alt == "spark_paimon":

        def write(table: Any) -> None:
            (
                spark.range(0, p.rows, 1, 2)
                .selectExpr("id", "concat('str_', cast(id as string)) as s", "cast(id as double) * 0.5 as d")
                .write.format("paimon")
                .mode("append")
                .save(table.store.table_path)
            )

        _write_rounds(benchmark, scale, p, alt, write)
    elif alt == "table_write_arrow":
        _write_rounds(benchmark, scale, p, alt, lambda table: table.write_arrow(p.data))
    else:
        reports: list[dict[str, Any]] = []
        _write_rounds(
            benchmark,
            scale,
            p,
            "rust",
            lambda table: reports.append(
                oracle_bench("write", impl="rust", warehouse=scale.warehouse, table=table.identifier, ipc=p.ipc)
            ),
            warmup=0,
        )
        inproc = [r["times_s"][0] for r in reports]
        extra.update(inproc_s=inproc, inproc_median_s=statistics.median(inproc))
    _curve(benchmark, "write", alt, p, before, **extra)


# -------------------------------------------------------------------------------------------- curves: read


@pytest.mark.parametrize("point", POINTS, ids=[_point_id(p) for p in POINTS])
@pytest.mark.parametrize("alt", ["spark_paimon", "table_to_arrow", "pypaimon_rust"])
def test_scale_read(
    benchmark: Any, spark: SparkSession, scale: ScaleData, oracle_bench: Any, point: tuple[int, int], alt: str
) -> None:
    from pyspark_paimon import Table

    p = scale.point(*point)
    benchmark.group = f"scale read: {p.rows:,} rows x {p.buckets} buckets"
    rounds, warmup = rounds_for(p.rows), (1 if p.rows <= 2_000_000 else 0)
    before = loadavg()
    extra: dict[str, Any] = {"baseline": alt == "spark_paimon"}
    if alt == "spark_paimon":

        def run() -> tuple:
            return tuple(
                spark.read.format("paimon")
                .load(p.read_path)
                .agg(F.count("*"), F.sum("id"), F.sum("d"), F.max(F.length("s")))
                .collect()[0]
            )

        got = benchmark.pedantic(run, rounds=rounds, warmup_rounds=warmup, iterations=1)
        extra["spark_tasks"] = spark.read.format("paimon").load(p.read_path).rdd.getNumPartitions()
        _check(p.expected, got, alt)
    elif alt == "table_to_arrow":
        table = Table.open(p.read_path)
        data = benchmark.pedantic(lambda: table.scan().to_arrow(), rounds=rounds, warmup_rounds=warmup, iterations=1)
        _check(p.expected, _arrow_checks(data), alt)
    else:
        reports: list[dict[str, Any]] = []
        benchmark.pedantic(
            lambda: reports.append(
                oracle_bench("read", impl="rust", warehouse=scale.warehouse, table=p.read_identifier, reads=1)
            ),
            rounds=rounds,
            warmup_rounds=0,
            iterations=1,
        )
        for r in reports:
            c = r["checks"]
            _check(p.expected, (c["rows"], c["sum_id"], c["sum_d"], c["max_len_s"]), alt)
        inproc = [r["times_s"][0] for r in reports]
        extra.update(inproc_s=inproc, inproc_median_s=statistics.median(inproc))
    _curve(benchmark, "read", alt, p, before, **extra)


# ------------------------------------------------------------------------------------------- big metadata


def _meta_group(meta: MetaTable, what: str) -> str:
    return f"scale meta {what}: {meta.partitions:,} partitions x {meta.buckets} buckets x {meta.commits} commits"


def _meta_info(benchmark: Any, meta: MetaTable, label: str, before: float, **extra: Any) -> None:
    benchmark.extra_info.update(
        label=label,
        live_files=meta.files,
        manifests=meta.manifests,
        build_s=round(meta.build_s, 1),
        write_s_first=round(meta.write_s_first, 3),
        write_s_last=round(meta.write_s_last, 3),
        loadavg=[before, loadavg()],
        **extra,
    )


@pytest.mark.parametrize("cache", ["cold", "warm"])
@pytest.mark.parametrize("scope", ["all", "one_partition_filter", "one_partition_scan_partitions"])
def test_scale_meta_planning(benchmark: Any, meta: MetaTable, scope: str, cache: str) -> None:
    from pyspark_paimon import Catalog
    from pyspark_paimon.metadata.manifests.manifest import MANIFEST_CACHE
    from pyspark_paimon.planner.predicate import Leaf

    benchmark.group = _meta_group(meta, "planning (explain)")
    predicate = [Leaf("dt", "=", meta.one_day)] if scope == "one_partition_filter" else []
    options = {"scan.partitions": f"dt={meta.one_day}"} if scope == "one_partition_scan_partitions" else {}

    def plan() -> Any:
        return engine_explain(Catalog(meta.warehouse).get_table(meta.identifier), options=options, predicate=predicate)

    def setup() -> tuple[tuple, dict]:
        if cache == "cold":
            MANIFEST_CACHE.clear()
        return (), {}

    before = loadavg()
    got = benchmark.pedantic(plan, setup=setup, rounds=META_PLAN_ROUNDS, warmup_rounds=1, iterations=1)
    want_partitions = meta.partitions if scope == "all" else 1
    assert got.splits.partitions == want_partitions, got.splits
    assert got.splits.rows >= (meta.rows if scope == "all" else meta.one_day_rows), got.splits
    _meta_info(
        benchmark,
        meta,
        f"explain {SCOPE_LABELS[scope]}, {cache}",
        before,
        splits=got.splits.count,
        files=got.splits.files,
        baseline=(scope, cache) == ("all", "warm"),
    )


@pytest.mark.parametrize("scope", ["all", "one_partition"])
def test_scale_meta_planning_pypaimon(benchmark: Any, meta: MetaTable, scope: str) -> None:
    benchmark.group = _meta_group(meta, "planning (explain)")
    args = ["--warehouse", meta.warehouse, "--table", meta.identifier, "--reps", "1"]
    if scope == "one_partition":
        args += ["--column", "dt", "--value", meta.one_day]
    plan, inproc = oracle_plan_runner(args, timeout=1800)

    before = loadavg()
    got = benchmark.pedantic(plan, rounds=PYPAIMON_PLAN_ROUNDS, warmup_rounds=0, iterations=1)
    assert got["splits"] >= (1 if scope == "one_partition" else meta.partitions), got
    _meta_info(
        benchmark,
        meta,
        f"pypaimon plan {'all' if scope == 'all' else '1 part filter'} (subproc)",
        before,
        inproc_s=inproc,
        inproc_median_s=statistics.median(inproc),
        splits=got["splits"],
        files=got["files"],
    )


def test_scale_meta_read_in_process(benchmark: Any, meta: MetaTable) -> None:
    from pyspark_paimon import Table

    benchmark.group = _meta_group(meta, "read")
    table = Table.open(meta.path)
    before = loadavg()
    data = benchmark.pedantic(lambda: table.scan().to_arrow(), rounds=META_READ_ROUNDS, warmup_rounds=0, iterations=1)
    _check(Expected(meta.rows, meta.sum_id, meta.sum_d, meta.max_len_s), _arrow_checks(data), "Table.to_arrow")
    _meta_info(benchmark, meta, "table_to_arrow (all)", before, rows=meta.rows)


@pytest.mark.parametrize("scope", ["all", "one_partition_scan_partitions"])
def test_scale_meta_read_spark(benchmark: Any, spark: SparkSession, meta: MetaTable, scope: str) -> None:
    benchmark.group = _meta_group(meta, "read")

    def load() -> Any:
        reader = spark.read.format("paimon")
        if scope != "all":
            reader = reader.option("scan.partitions", f"dt={meta.one_day}")
        return reader.load(meta.path)

    def run() -> tuple:
        return tuple(load().agg(F.count("*"), F.sum("d")).collect()[0])

    before = loadavg()
    full = scope == "all"
    got = benchmark.pedantic(
        run, rounds=META_READ_ROUNDS if full else META_PLAN_ROUNDS, warmup_rounds=0 if full else 1, iterations=1
    )
    want = (meta.rows, meta.sum_d) if scope == "all" else (meta.one_day_rows, meta.one_day_sum_d)
    assert got[0] == want[0] and abs(got[1] - want[1]) <= 1e-9 * abs(want[1]), f"{scope}: {got}, expected {want}"
    _meta_info(
        benchmark,
        meta,
        f"spark_paimon {SCOPE_LABELS[scope]}",
        before,
        rows=want[0],
        baseline=full,
        spark_tasks=load().rdd.getNumPartitions(),
    )
