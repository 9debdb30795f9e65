"""Groups 15a-15c: a range filter on two columns, before and after a z-order compaction on them.

Issue 37's target: a 2M-row table with ``x``, ``y`` uniform in [0, 1000) in 40 files; after a z-order compaction
on (x, y), ``x < 250 AND y < 250`` reads at most a quarter of the files, where the unordered table reads all of
them (every file spans the whole square, so min/max statistics exclude nothing).

Two unaware-bucket append tables of ``ORDER_ROWS`` rows (default 2,000,000), columns ``id bigint, x bigint,
y bigint, d double``, written once per session in 40 commits (40 files), then:

* ``zorder``: ``compact(order_strategy="zorder", order_by="x,y")`` with the compaction's ``target-file-size``
  overlaid (Paimon's ``options`` argument) at a 40th of the rows' in-memory size, so it writes about 40 files
  again;
* ``plain``: the same rows as written.

* **15a** ``t.scan(filter="x < 250 AND y < 250").to_arrow()`` in this process;
* **15b** the same through Spark: ``spark.read.format("paimon").option("filter", ...).load(path)``, counted;
* **15c** the compaction itself on a fresh copy of ``plain``: z-order, Hilbert and a plain ``order`` sort (which
  orders by x, then y, and so skips on x only).

Every round checks the work: the row count of the filter (computed once with pyarrow from the written rows), and
``extra_info`` records the plan's data files (``files_selected``, asserted at most a quarter of the files for
``zorder`` and all of them for ``plain``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import ROUNDS, loadavg

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.compact.compact import compact

ORDER_ROWS = int(os.environ.get("PAIMON_BENCH_ORDER_ROWS", "2000000").replace("_", ""))
FILES = 40
SEED = 20261129
FILTER = "x < 250 AND y < 250"
KINDS = ("zorder", "plain")
LABELS = {"zorder": "z-order compacted on (x, y)", "plain": "plain (as written)"}
STRATEGIES = ("zorder", "hilbert", "order")
COMPACT_ROUNDS = min(3, ROUNDS)


@dataclass(frozen=True)
class Tables:
    root: str
    paths: dict[str, str]  # kind -> table path
    matches: int  # rows the filter keeps
    target: str  # the compaction's target-file-size


def _rows(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "x": rng.integers(0, 1000, n), "y": rng.integers(0, 1000, n), "d": ids * 0.5})


def _files(path: str) -> int:
    t = Table.open(path)
    return len(t.store.live_entries(t.latest_snapshot()))


@pytest.fixture(scope="module")
def tables() -> Iterator[Tables]:
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-order-"))
    try:
        catalog = Catalog(str(root / "warehouse"))
        columns = "id bigint, x bigint, y bigint, d double"
        made = {kind: catalog.create_table(f"bench.{kind}", columns) for kind in KINDS}
        rng = np.random.default_rng(SEED)
        per_file = ORDER_ROWS // FILES
        matches = 0
        nbytes = 0
        for i in range(FILES):
            rows = _rows(rng, i * per_file, per_file)
            matches += pc.sum(pc.and_(pc.less(rows["x"], 250), pc.less(rows["y"], 250))).as_py()
            nbytes += rows.nbytes
            for t in made.values():
                t.write_arrow(rows)
        target = str(nbytes // FILES + 1)
        compact(made["zorder"].store, order_strategy="zorder", order_by="x,y", options={"target-file-size": target})
        paths = {k: t.store.table_path for k, t in made.items()}
        assert _files(paths["plain"]) == FILES
        assert FILES - 2 <= _files(paths["zorder"]) <= FILES + 2, _files(paths["zorder"])
        yield Tables(str(root), paths, matches, target)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_plan(tables: Tables, kind: str, benchmark: Any) -> None:
    counters = Table.open(tables.paths[kind]).scan(filter=FILTER).explain().counters
    selected, total = counters.files_selected, counters.files_total
    assert selected <= total // 4 if kind == "zorder" else selected == total, f"{kind}: {selected} of {total}"
    benchmark.extra_info.update(files_selected=selected, files_total=total)


@pytest.mark.parametrize("kind", KINDS)
def test_range_filter_in_process(benchmark: Any, tables: Tables, kind: str) -> None:
    benchmark.group = "15a ordered compaction: x < 250 AND y < 250 over 40 files, t.scan().to_arrow()"
    table = Table.open(tables.paths[kind])
    before = loadavg()
    got = benchmark.pedantic(lambda: table.scan(filter=FILTER).to_arrow(), rounds=ROUNDS, warmup_rounds=1)
    assert got.num_rows == tables.matches, kind
    _check_plan(tables, kind, benchmark)
    benchmark.extra_info.update(label=LABELS[kind], baseline=kind == "plain", loadavg=[before, loadavg()])


@pytest.mark.parametrize("kind", KINDS)
def test_range_filter_spark(benchmark: Any, spark: Any, tables: Tables, kind: str) -> None:
    benchmark.group = "15b ordered compaction: x < 250 AND y < 250 over 40 files, Spark"
    before = loadavg()
    got = benchmark.pedantic(
        lambda: spark.read.format("paimon").option("filter", FILTER).load(tables.paths[kind]).count(),
        rounds=ROUNDS,
        warmup_rounds=1,
    )
    assert got == tables.matches, kind
    _check_plan(tables, kind, benchmark)
    benchmark.extra_info.update(label=LABELS[kind], baseline=kind == "plain", loadavg=[before, loadavg()])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_compaction(benchmark: Any, tables: Tables, strategy: str) -> None:
    benchmark.group = f"15c ordered compaction: compact(order_strategy=..., order_by='x,y') of {ORDER_ROWS:,} rows"
    counter = iter(range(1000))

    def fresh() -> tuple[tuple[Table], dict[str, Any]]:
        copy = Path(tables.root) / f"copy-{strategy}-{next(counter)}"
        shutil.copytree(tables.paths["plain"], copy)
        return (Table.open(str(copy)),), {}

    before = loadavg()
    results = []
    benchmark.pedantic(
        lambda t: results.append(
            compact(t.store, order_strategy=strategy, order_by="x,y", options={"target-file-size": tables.target})
        ),
        setup=fresh,
        rounds=COMPACT_ROUNDS,
        warmup_rounds=0,
    )
    assert all(r.rows_before == r.rows_after == ORDER_ROWS and r.files_before == FILES for r in results)
    benchmark.extra_info.update(
        label=strategy, baseline=strategy == "zorder", files_after=results[0].files_after, loadavg=[before, loadavg()]
    )
