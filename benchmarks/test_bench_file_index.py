"""Groups 14a-14c: a point lookup on a column of random strings, with and without a bloom-filter file index.

Issue 37's target: a 2M-row append table in 40 files with a bloom-filter index on a string column of random
values; the lookup of one value present once opens at most 2 data files (index files counted apart), beside
the same lookup on the same rows without the index, which opens all 40 (min/max statistics of random strings
exclude nothing).

Two tables of ``FILE_INDEX_ROWS`` rows (default 2,000,000) in 40 files of equal size, written once per session
(40 commits), columns ``id bigint, s string, d double`` with ``s`` 16 random hex digits:

* ``indexed``: ``file-index.bloom-filter.columns = s`` with ``file-index.bloom-filter.s.items`` = the rows per
  file (Java's advice: the expected distinct values of one file; the default, 1,000,000 items, makes a 600 KB
  filter per file) and ``fpp`` 0.001 (the default 0.1 lets about 4 of the 39 other files through); each filter
  is 90 KB at 50,000 rows per file, above the in-manifest threshold (500 B), so each data file has an index
  file, which planning reads;
* ``plain``: the same rows without an index.

* **14a** ``t.scan(filter="s = '<value>'").to_arrow()`` in this process (planning, index files, data files);
* **14b** the same through Spark: ``spark.read.format("paimon").option("filter", ...).load(path)``, collected;
* **14c** ``Table.write_arrow`` of one file's rows (N/40) into each table: what writing the index costs.

Every round checks the work: exactly one row (the looked-up id) comes back, and ``extra_info`` records the
plan's data files (``data_files_opened``, asserted at most 2 for ``indexed`` and 40 for ``plain``) and the index
files it read.
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
import pytest
from conftest import ROUNDS, loadavg

from pyspark_paimon import Catalog, Table

FILE_INDEX_ROWS = int(os.environ.get("PAIMON_BENCH_FILE_INDEX_ROWS", "2000000").replace("_", ""))
FILES = 40
SEED = 20261129
KINDS = ("indexed", "plain")
LABELS = {"indexed": "indexed (bloom filter on s)", "plain": "plain (no index)"}
WRITE_ROUNDS = ROUNDS  # one small file per round: cheap, and noisy on a loaded machine
# With 39 files that do not hold the value, a false-positive rate p opens about 39 p of them too: 0.1 (Java's
# default) would open about 4, 0.001 about 0.04.
FPP = 0.001


@dataclass(frozen=True)
class Lookup:
    warehouse: str
    tables: dict[str, str]  # kind -> table path
    needle_id: int
    needle_s: str
    rows_per_file: int


def _random_hex(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` strings of 16 random hex digits, built column-wise."""
    digits = np.frombuffer(b"0123456789abcdef", np.uint8)[rng.integers(0, 16, size=(n, 16))]
    return pa.array(digits.view("S16").ravel().astype(str))


def _rows(rng: np.random.Generator, start: int, n: int) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "s": _random_hex(rng, n), "d": ids * 0.5})


def _options(kind: str, per_file: int) -> dict[str, str]:
    if kind == "plain":
        return {}
    return {
        "file-index.bloom-filter.columns": "s",
        "file-index.bloom-filter.s.items": str(per_file),
        "file-index.bloom-filter.s.fpp": str(FPP),
    }


@pytest.fixture(scope="module")
def lookup() -> Iterator[Lookup]:
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-file-index-"))
    try:
        warehouse = str(root / "warehouse")
        catalog = Catalog(warehouse)
        per_file = FILE_INDEX_ROWS // FILES
        tables = {
            kind: catalog.create_table(
                f"bench.{kind}", "id bigint, s string, d double", options=_options(kind, per_file)
            )
            for kind in KINDS
        }
        rng = np.random.default_rng(SEED)
        needle_file = FILES // 2 + 3
        needle: dict[str, Any] = {}
        for i in range(FILES):
            rows = _rows(rng, i * per_file, per_file)
            if i == needle_file:
                needle = rows.slice(per_file // 3, 1).to_pylist()[0]
            for t in tables.values():
                t.write_arrow(rows)
        for kind, t in tables.items():
            files = list(t.store.live_entries(t.latest_snapshot()))
            assert len(files) == FILES, f"{kind}: {len(files)} files"
            assert all(bool(e.file.extra_files) == (kind == "indexed") for e in files), kind
        yield Lookup(warehouse, {k: t.store.table_path for k, t in tables.items()}, needle["id"], needle["s"], per_file)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_plan(lookup: Lookup, kind: str, benchmark: Any) -> None:
    counters = Table.open(lookup.tables[kind]).scan(filter=f"s = '{lookup.needle_s}'").explain().counters
    opened = counters.files_selected
    assert opened <= 2 if kind == "indexed" else opened == FILES, f"{kind}: plan opens {opened} data files"
    benchmark.extra_info.update(
        data_files_opened=opened,
        index_files_read=counters.index_files_read,
        files_skipped_index=counters.files_skipped_index,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_lookup_in_process(benchmark: Any, lookup: Lookup, kind: str) -> None:
    benchmark.group = "14a file index: lookup of one random string in 40 files, t.scan().to_arrow()"
    table = Table.open(lookup.tables[kind])
    before = loadavg()
    got = benchmark.pedantic(
        lambda: table.scan(filter=f"s = '{lookup.needle_s}'").to_arrow(), rounds=ROUNDS, warmup_rounds=1
    )
    assert got.column("id").to_pylist() == [lookup.needle_id], kind
    _check_plan(lookup, kind, benchmark)
    benchmark.extra_info.update(label=LABELS[kind], baseline=kind == "plain", loadavg=[before, loadavg()])


@pytest.mark.parametrize("kind", KINDS)
def test_lookup_spark(benchmark: Any, spark: Any, lookup: Lookup, kind: str) -> None:
    benchmark.group = "14b file index: lookup of one random string in 40 files, Spark"
    cond = f"s = '{lookup.needle_s}'"
    before = loadavg()
    got = benchmark.pedantic(
        lambda: spark.read.format("paimon").option("filter", cond).load(lookup.tables[kind]).collect(),
        rounds=ROUNDS,
        warmup_rounds=1,
    )
    assert [r["id"] for r in got] == [lookup.needle_id], kind
    _check_plan(lookup, kind, benchmark)
    benchmark.extra_info.update(label=LABELS[kind], baseline=kind == "plain", loadavg=[before, loadavg()])


@pytest.mark.parametrize("kind", KINDS)
def test_write_one_file(benchmark: Any, lookup: Lookup, kind: str) -> None:
    benchmark.group = "14c file index: Table.write_arrow of one file's rows (N/40)"
    rows = _rows(np.random.default_rng(SEED + 1), 10 * FILE_INDEX_ROWS, lookup.rows_per_file)
    per_file = lookup.rows_per_file
    counter = iter(range(1000))

    def fresh() -> tuple[tuple[Table], dict[str, Any]]:
        name = f"bench.write_{kind}_{next(counter)}"
        return (
            Catalog(lookup.warehouse).create_table(
                name, "id bigint, s string, d double", options=_options(kind, per_file)
            ),
        ), {}

    before = loadavg()
    benchmark.pedantic(lambda t: t.write_arrow(rows), setup=fresh, rounds=WRITE_ROUNDS, warmup_rounds=0)
    benchmark.extra_info.update(
        label=LABELS[kind], baseline=kind == "plain", rows=per_file, loadavg=[before, loadavg()]
    )
