"""Benchmark fixtures: one local[2] SparkSession, datasets generated once per session, oracle subprocesses.

Run with ``./dev bench`` (see benchmarks/README.md). The size is ``PAIMON_BENCH_ROWS`` (default 2,000,000
rows); ``PAIMON_BENCH_ROUNDS`` (default 5) sets the timed rounds of the in-process benchmarks. Speed is
only measured here, never asserted: the checks in the benchmarks verify that every alternative did the
same work (same rows, same sums), not how fast it was.

Datasets (all three columns ``id bigint, s string, d double``; ``s = 'str_<id>'``, ``d = id * 0.5``):

* ``bench.append_t``: an append table written by ``Table.write_arrow`` in 4 commits of N/4 rows, i.e. 4
  Parquet files.
* ``bench.pk_t``: a primary-key table (``id``, 4 buckets): one commit of all N keys, then 4 upsert commits,
  each of a random 25% of the keys (``s = 'upd<k>_<id>'``, ``d = id * 0.5 + k``). Every bucket then holds
  5 level-0 files whose key ranges all overlap, so every read must merge them.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROWS = int(os.environ.get("PAIMON_BENCH_ROWS", "2000000").replace("_", ""))
ROUNDS = int(os.environ.get("PAIMON_BENCH_ROUNDS", "5"))
ORACLE_BENCH = BENCH_DIR / "oracle_bench.py"
UPDATE_COMMITS = 4
UPDATE_FRACTION = 0.25
PK_BUCKETS = 4
SEED = 20240611


def loadavg() -> float:
    """The 1-minute load average, recorded around each benchmark: on a shared 2-core machine anything
    else running (load well above 2) inflates the times, and the summary shows it."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return -1.0


# ---------------------------------------------------------------------------------------------- data


def make_rows(ids: np.ndarray, prefix: str = "str_", d_offset: float = 0.0) -> pa.Table:
    """(id, s, d) rows for ``ids``, built column-wise (no Python loop over rows)."""
    id_arr = pa.array(ids, pa.int64())
    s = pc.binary_join_element_wise(prefix, pc.cast(id_arr, pa.string()), "")
    d = pc.add(pc.multiply(pc.cast(id_arr, pa.float64()), 0.5), d_offset)
    return pa.table({"id": id_arr, "s": s, "d": d})


def assert_reads_back(data: pa.Table, expected: pa.Table, who: str) -> None:
    """``data`` (a full read of what a benchmark wrote, made outside the timed code) holds exactly the rows of
    ``expected``, compared column by column in ``id`` order."""
    assert data.num_rows == expected.num_rows, f"{who}: read back {data.num_rows} rows, wrote {expected.num_rows}"
    got, want = data.sort_by("id"), expected.sort_by("id")
    for name in want.column_names:
        column = got.column(name).combine_chunks().cast(want.schema.field(name).type)
        assert column.equals(want.column(name).combine_chunks()), f"{who}: column {name} differs from what was written"


@dataclass(frozen=True)
class Expected:
    """What a full read must return (for correctness checks outside the timed code)."""

    rows: int
    sum_id: int
    sum_d: float
    max_len_s: int

    def check(self, rows: int, sum_id: int, sum_d: float, max_len_s: int, who: str) -> None:
        got = (rows, sum_id, max_len_s)
        want = (self.rows, self.sum_id, self.max_len_s)
        assert got == want, f"{who} returned (rows, sum id, max len s) = {got}, expected {want}"
        assert abs(sum_d - self.sum_d) <= 1e-9 * max(abs(self.sum_d), 1.0), (
            f"{who} returned sum(d) = {sum_d}, expected {self.sum_d}"
        )


@dataclass
class Datasets:
    root: Path
    warehouse: str
    rows: int
    append_path: str
    append_expected: Expected
    append_groups: list[list[str]]  # data files per Spark task of the paimon source
    pk_identifier: str
    pk_path: str
    pk_expected: Expected
    pk_files: int
    write_data: pa.Table  # the rows every write benchmark writes (= pk_t's first commit)
    write_ipc: str  # the same rows as an Arrow IPC file, for the oracle venv
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def append_files(self) -> list[str]:
        return [p for g in self.append_groups for p in g]


def _expected_plain(n: int) -> Expected:
    ids = np.arange(n, dtype=np.int64)
    return Expected(n, int(ids.sum()), float((ids * 0.5).sum()), len(f"str_{n - 1}"))


def _build(root: Path, n: int) -> Datasets:
    from pyspark_paimon import Catalog
    from pyspark_paimon.planner.read_options import ReadOptions

    warehouse = str(root / "warehouse")
    catalog = Catalog(warehouse)

    append = catalog.create_table("bench.append_t", "id bigint, s string, d double")
    quarter = [(i * n) // 4 for i in range(5)]
    for lo, hi in zip(quarter, quarter[1:]):
        append.write_arrow(make_rows(np.arange(lo, hi, dtype=np.int64)))
    job = append.scan().read_job()
    # The groups the paimon source turns into Spark tasks (the reader packs splits the same way).
    groups = [[split.file_path(f) for split in group for f in split.files] for group in job.groups(ReadOptions())]
    live = append.store.live_entries(append.latest_snapshot())
    assert sorted(p for g in groups for p in g) == sorted(
        append.store.bucket_path(append.schema, (), e.bucket) + "/" + e.file.file_name for e in live
    )

    # write-only: no automatic compaction, so every bucket keeps its 5 overlapping runs and every reader merges.
    pk = catalog.create_table(
        "bench.pk_t",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options={"bucket": str(PK_BUCKETS), "write-only": "true"},
    )
    base = make_rows(np.arange(n, dtype=np.int64))
    pk.write_arrow(base)
    rng = np.random.default_rng(SEED)
    last = np.zeros(n, dtype=np.int64)  # the last update commit that touched each key (0 = none)
    for k in range(1, UPDATE_COMMITS + 1):
        keys = np.sort(rng.choice(n, int(n * UPDATE_FRACTION), replace=False)).astype(np.int64)
        pk.write_arrow(make_rows(keys, f"upd{k}_", float(k)))
        last[keys] = k
    ids = np.arange(n, dtype=np.int64)
    digits = 1 + sum((ids >= 10**k).astype(np.int64) for k in range(1, len(str(n))))
    prefix_len = np.where(last == 0, len("str_"), len("upd0_"))
    pk_expected = Expected(n, int(ids.sum()), float((ids * 0.5 + last).sum()), int((digits + prefix_len).max()))
    pk_files = len(pk.store.live_entries(pk.latest_snapshot()))
    assert pk_files == PK_BUCKETS * (1 + UPDATE_COMMITS), f"bench.pk_t should hold 5 runs per bucket: {pk_files} files"

    ipc = root / "write_data.arrow"
    with pa.OSFile(str(ipc), "wb") as sink, pa.ipc.new_file(sink, base.schema) as writer:
        writer.write_table(base)

    return Datasets(
        root=root,
        warehouse=warehouse,
        rows=n,
        append_path=append.store.table_path,
        append_expected=_expected_plain(n),
        append_groups=groups,
        pk_identifier="bench.pk_t",
        pk_path=pk.store.table_path,
        pk_expected=pk_expected,
        pk_files=pk_files,
        write_data=base,
        write_ipc=str(ipc),
    )


@pytest.fixture(scope="session")
def datasets() -> Iterator[Datasets]:
    """The benchmark tables, written once per session into a temporary directory (removed afterwards)."""
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-"))
    try:
        yield _build(root, ROWS)
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------------------------- spark


@pytest.fixture(scope="session")
def spark() -> Iterator["SparkSession"]:  # noqa: F821
    """The tests' session settings (local[2], UTC, Arrow on) with ``paimon`` and the pyarrow floor registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Spark's Python workers must import pyspark_paimon from this checkout, whatever the current directory.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    import floor_source
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    from pyspark_paimon import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pyspark-paimon-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    cloudpickle.register_pickle_by_value(floor_source)  # workers need not import the benchmarks dir
    session.dataSource.register(floor_source.PyarrowFloorDataSource)
    yield session
    session.stop()


# -------------------------------------------------------------------------------------------- oracle


def _oracle_env() -> dict[str, str]:
    """Keep the main venv's packages (PYTHONPATH, VIRTUAL_ENV) out of the oracle interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def oracle_plan_runner(args: list[str], timeout: int) -> tuple[Callable[[], dict[str, Any]], list[float]]:
    """(a callable running benchmarks/oracle_plan.py ``args`` once in the oracle venv and returning its JSON
    report, the list each run appends its in-process planning times to)."""
    from tests.oracle import require_oracle_python

    argv = [require_oracle_python(), str(BENCH_DIR / "oracle_plan.py"), *args]
    inproc: list[float] = []

    def plan() -> dict[str, Any]:
        proc = subprocess.run(argv, capture_output=True, text=True, env=_oracle_env(), check=False, timeout=timeout)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"oracle_plan.py failed ({proc.returncode}): {proc.stderr[-3000:]}")
        out: dict[str, Any] = json.loads(lines[-1])
        inproc.extend(out["times_s"])
        return out

    return plan, inproc


@pytest.fixture(scope="session")
def oracle_bench() -> Callable[..., dict[str, Any]]:
    """``oracle_bench("read", impl="rust", ...)`` runs benchmarks/oracle_bench.py in the oracle venv.

    The venv is found like the interop tests find it (``PAIMON_ORACLE_PYTHON`` or ``.venv-oracle``); a
    missing venv fails the benchmark with the setup command.
    """
    from tests.oracle import require_oracle_python

    python = require_oracle_python()

    def run(op: str, **kwargs: Any) -> dict[str, Any]:
        argv = [python, str(ORACLE_BENCH), op]
        for key, value in kwargs.items():
            argv += [f"--{key}", str(value)]
        proc = subprocess.run(argv, capture_output=True, text=True, env=_oracle_env(), check=False, timeout=3600)
        lines = proc.stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"{' '.join(argv)} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
        return json.loads(lines[-1])

    return run


# ------------------------------------------------------------------------------------------- reports


def _versions() -> str:
    import pyspark

    return f"pyspark {pyspark.__version__}, pyarrow {pa.__version__}, python {platform.python_version()}"


def pytest_report_header(config: pytest.Config) -> list[str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    return [
        f"paimon bench: {ROWS:,} rows (PAIMON_BENCH_ROWS), {ROUNDS} rounds (PAIMON_BENCH_ROUNDS), "
        f"Spark local[2]; machine: {os.cpu_count()} cores ({cpu}); {_versions()}"
    ]


def comparable_seconds(bench: Any) -> float:
    """Median in-process seconds when the benchmark ran in a subprocess, else its own median."""
    inproc = bench.extra_info.get("inproc_median_s")
    return float(inproc) if inproc is not None else float(bench.stats.median)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Per group: medians side by side, rows/s and the ratio to the group's baseline.

    Subprocess benchmarks (pypaimon, pypaimon-rust) are compared by the in-process time the script
    reported, since their wall time includes ~1-3 s of interpreter start and imports.
    """
    session = getattr(terminalreporter.config, "_benchmarksession", None)
    benches = [b for b in getattr(session, "benchmarks", []) if b and not b.has_error]
    if not benches:
        return
    tr = terminalreporter
    tr.write_sep(
        "=",
        f"paimon bench comparison ({ROWS:,} rows; ratio and rows/s from medians, in-process "
        "for subprocess benchmarks; load = 1-min load average)",
    )
    groups: dict[str, list[Any]] = {}
    for b in benches:
        groups.setdefault(b.group or "", []).append(b)
    for group in sorted(groups):
        items = sorted(groups[group], key=comparable_seconds)
        base = next((b for b in items if b.extra_info.get("baseline")), items[0])
        base_s = comparable_seconds(base)
        tr.write_line("")
        tr.write_line(f"{group}  (baseline: {base.extra_info.get('label', base.name)})")
        tr.write_line(
            f"  {'alternative':<40} {'min s':>8} {'median s':>9} {'in-proc s':>10} {'M rows/s':>9} "
            f"{'ratio':>7} {'rounds':>6}  load"
        )
        for b in items:
            label = b.extra_info.get("label", b.name)
            inproc = b.extra_info.get("inproc_median_s")
            secs = comparable_seconds(b)
            rows = b.extra_info.get("rows")
            rate = f"{rows / secs / 1e6:9.2f}" if rows and secs > 0 else f"{'':>9}"
            tr.write_line(
                f"  {label:<40} {b.stats.min:8.3f} {b.stats.median:9.3f} "
                f"{(f'{inproc:.3f}' if inproc is not None else '-'):>10} {rate} "
                f"{secs / base_s:6.2f}x {b.stats.rounds:>6}  {max(b.extra_info.get('loadavg') or [-1]):.1f}"
            )
    _curve_summary(tr, benches)


def _curve_summary(tr: Any, benches: list[Any]) -> None:
    """The scale curves (test_bench_scale.py): per operation, each alternative's median at every (rows,
    buckets) point, then how time grows: the largest / smallest row count at equal buckets, and the most /
    fewest buckets at equal rows."""
    curves = [b for b in benches if b.extra_info.get("curve")]
    if not curves:
        return
    tr.write_sep("=", "paimon scale curves (median s, in-process for subprocess benchmarks; growth = time ratio)")
    for op in sorted({b.extra_info["curve"] for b in curves}):
        items = [b for b in curves if b.extra_info["curve"] == op]
        points = sorted({(b.extra_info["rows"], b.extra_info["buckets"]) for b in items})
        rows = sorted({r for r, _ in points})
        buckets = sorted({k for _, k in points})
        growth: list[tuple[str, tuple[int, int], tuple[int, int]]] = []
        if len(rows) > 1:
            growth += [(f"{rows[-1] / rows[0]:g}x rows @{k}b", (rows[0], k), (rows[-1], k)) for k in buckets]
        if len(buckets) > 1:
            growth += [(f"{buckets[-1]}b/{buckets[0]}b @{r / 1e6:g}M", (r, buckets[0]), (r, buckets[-1])) for r in rows]
        heads = [f"{r / 1e6:g}M x {k}b" for r, k in points] + [g[0] for g in growth]
        tr.write_line("")
        tr.write_line(f"{op}")
        tr.write_line(f"  {'alternative':<22}" + "".join(f"{h:>16}" for h in heads) + "   load")
        for label in sorted({b.extra_info.get("label", b.name) for b in items}):
            secs = {
                (b.extra_info["rows"], b.extra_info["buckets"]): comparable_seconds(b)
                for b in items
                if b.extra_info.get("label", b.name) == label
            }
            cells = [f"{secs[p]:16.3f}" if p in secs else f"{'-':>16}" for p in points]
            cells += [
                f"{secs[b] / secs[a]:15.2f}x" if a in secs and b in secs and secs[a] > 0 else f"{'-':>16}"
                for _, a, b in growth
            ]
            load = max(
                max(b.extra_info.get("loadavg") or [-1]) for b in items if b.extra_info.get("label", b.name) == label
            )
            tr.write_line(f"  {label:<22}" + "".join(cells) + f"   {load:.1f}")
