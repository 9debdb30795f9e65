"""Groups 7 and 8: what compaction buys a primary-key table, and what it costs.

Datasets (built once per session, ``PAIMON_BENCH_COMPACT_ROWS`` keys, default 200,000; 4 buckets,
``write-only`` so nothing compacts on its own): a first commit of every key, then 5, 50 or 200 upsert commits
of ``rows / 200`` random keys each (``s = 'c<k>_<id>'``, ``d = id * 0.5 + k``). Each table is copied and the
copy fully compacted with ``Table.compact(full=True)``, so the same rows exist twice: as 1 + C level-0 runs
per bucket, and as one max-level run per bucket.

* **Group 7, PK read after C commits**: ``Table.to_arrow()`` (our reader, in process) and pypaimon-rust
  (``benchmarks/oracle_bench.py`` in a subprocess; its in-process time is compared) reading the uncompacted
  and the compacted table. Every read is checked to return the same rows, sum(id), sum(d), max(length(s)).
* **Group 8, compaction throughput**: a full compaction of the 200-commit table, in process and through Spark
  (``Table.compact(spark=...)``: one executor task per bucket, one commit on the driver), each round on a
  fresh copy; rows/s counts the rows read (every record of every input file).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import ROUNDS, Expected, loadavg, make_rows

from pyspark_paimon import Catalog, Table

COMPACT_ROWS = int(os.environ.get("PAIMON_BENCH_COMPACT_ROWS", "200000").replace("_", ""))
COMMITS = (5, 50, 200)
BUCKETS = 4
SEED = 20261124
READ_GROUP = "7 PK read after C commits, uncompacted vs compacted"
COMPACT_GROUP = "8 PK full compaction throughput (200 commits)"


@dataclass
class CompactionTables:
    root: Path
    paths: dict[tuple[int, bool], str]  # (commits, compacted) -> table path
    expected: dict[int, Expected]
    input_rows: dict[int, int]  # records in the files a full compaction of the uncompacted table reads


def _expected(data: pa.Table) -> Expected:
    return Expected(
        data.num_rows,
        pc.sum(data.column("id")).as_py(),
        pc.sum(data.column("d")).as_py(),
        pc.max(pc.utf8_length(data.column("s"))).as_py(),
    )


def _build(root: Path) -> CompactionTables:
    rng = np.random.default_rng(SEED)
    paths: dict[tuple[int, bool], str] = {}
    expected: dict[int, Expected] = {}
    input_rows: dict[int, int] = {}
    per_commit = max(1, COMPACT_ROWS // 200)
    for commits in COMMITS:
        t = Catalog(str(root)).create_table(
            f"bench.pk_c{commits}",
            "id bigint not null, s string, d double",
            primary_keys=["id"],
            options={"bucket": str(BUCKETS), "write-only": "true"},
        )
        t.write_arrow(make_rows(np.arange(COMPACT_ROWS, dtype=np.int64)))
        for k in range(commits):
            ids = np.sort(rng.choice(COMPACT_ROWS, size=per_commit, replace=False)).astype(np.int64)
            t.write_arrow(make_rows(ids, prefix=f"c{k}_", d_offset=float(k)))
        data = t.scan().to_arrow()
        expected[commits] = _expected(data)
        input_rows[commits] = sum(e.file.row_count for e in t.store.live_entries(t.latest_snapshot()))
        copy = root / "bench.db" / f"pk_c{commits}_compacted"
        shutil.copytree(t.store.table_path, copy)
        assert Table.open(str(copy)).maintenance.compact(full=True)
        paths[(commits, False)] = t.store.table_path
        paths[(commits, True)] = str(copy)
    return CompactionTables(root, paths, expected, input_rows)


@pytest.fixture(scope="module")
def tables() -> Iterator[CompactionTables]:
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-compact-"))
    try:
        yield _build(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check(exp: Expected, data: pa.Table, who: str) -> None:
    exp.check(
        data.num_rows,
        pc.sum(data.column("id")).as_py(),
        pc.sum(data.column("d")).as_py(),
        pc.max(pc.utf8_length(data.column("s"))).as_py(),
        who,
    )


# --------------------------------------------------------------------------------------------------- group 7
@pytest.mark.benchmark(group=READ_GROUP)
@pytest.mark.parametrize("compacted", [False, True], ids=["uncompacted", "compacted"])
@pytest.mark.parametrize("commits", COMMITS)
def test_pk_read_after_commits_ours(benchmark: Any, tables: CompactionTables, commits: int, compacted: bool) -> None:
    table = Table.open(tables.paths[(commits, compacted)])
    runs = table.scan().explain().splits.max_sorted_runs
    load_before = loadavg()
    data = benchmark.pedantic(lambda: table.scan().to_arrow(), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    _check(tables.expected[commits], data, f"Table.to_arrow {commits} commits")
    benchmark.extra_info.update(
        label=f"ours {commits}c {'compacted' if compacted else 'uncompacted'}",
        rows=data.num_rows,
        sorted_runs=runs,
        baseline=(commits == 5 and compacted),
        loadavg=[load_before, loadavg()],
    )


@pytest.mark.benchmark(group=READ_GROUP)
@pytest.mark.parametrize("compacted", [False, True], ids=["uncompacted", "compacted"])
@pytest.mark.parametrize("commits", COMMITS)
def test_pk_read_after_commits_rust(
    benchmark: Any, tables: CompactionTables, oracle_bench: Any, commits: int, compacted: bool
) -> None:
    path = Path(tables.paths[(commits, compacted)])
    reports: list[dict[str, Any]] = []

    def run() -> None:
        reports.append(
            oracle_bench("read", impl="rust", warehouse=str(tables.root), table=f"bench.{path.name}", reads=1)
        )

    load_before = loadavg()
    benchmark.pedantic(run, rounds=3, warmup_rounds=0, iterations=1)
    for report in reports:
        c = report["checks"]
        tables.expected[commits].check(c["rows"], c["sum_id"], c["sum_d"], c["max_len_s"], "pypaimon-rust")
    inproc = [r["times_s"][0] for r in reports]
    benchmark.extra_info.update(
        label=f"rust {commits}c {'compacted' if compacted else 'uncompacted'}",
        rows=tables.expected[commits].rows,
        inproc_s=inproc,
        inproc_median_s=statistics.median(inproc),
        loadavg=[load_before, loadavg()],
    )


# --------------------------------------------------------------------------------------------------- group 8
@pytest.mark.benchmark(group=COMPACT_GROUP)
@pytest.mark.parametrize("through", ["in_process", "spark"])
def test_full_compaction_throughput(
    benchmark: Any, tables: CompactionTables, request: pytest.FixtureRequest, through: str
) -> None:
    source = Path(tables.paths[(200, False)])
    spark = request.getfixturevalue("spark") if through == "spark" else None
    scratch = Path(tempfile.mkdtemp(prefix="paimon-bench-compact-round-"))
    counter = iter(range(1000))

    def setup() -> tuple[tuple, dict]:
        target = scratch / f"round{next(counter)}"
        shutil.copytree(source, target)
        return (Table.open(str(target)),), {}

    results: list[Any] = []

    def run(table: Table) -> None:
        results.append(table.maintenance.compact(full=True, spark=spark))

    load_before = loadavg()
    try:
        benchmark.pedantic(run, setup=setup, rounds=min(3, ROUNDS), warmup_rounds=0, iterations=1)
        # The first round's compacted table, read back once (outside the timed function): the same rows.
        _check(tables.expected[200], Table.open(str(scratch / "round0")).to_arrow(), f"compacted {through}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert all(r and r.rows_before == tables.input_rows[200] for r in results)
    benchmark.extra_info.update(
        label=f"full compaction {through.replace('_', ' ')}",
        rows=tables.input_rows[200],
        buckets=results[0].buckets,
        baseline=through == "in_process",
        loadavg=[load_before, loadavg()],
    )
