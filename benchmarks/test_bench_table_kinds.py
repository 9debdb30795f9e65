"""Groups 11a-11d: writes into a dynamic-bucket and a deletion-vector table next to a fixed-bucket write.

Issue 21 asks that writing a dynamic-bucket primary-key table (``bucket = -1``) and a deletion-vector table
cost at most 1.3x a fixed-bucket write of the same rows, through Spark and through ``Table.write_arrow``.
Three table kinds, all ``id bigint not null, s string, d double`` with primary key ``id``:

* ``fixed``: ``bucket = 4`` (the baseline of every group);
* ``dynamic``: ``bucket = -1`` with ``dynamic-bucket.target-row-num = rows / 4``, so a first write of all rows
  fills about 4 buckets (two Spark tasks each fill the same buckets, see docs/writing.md, so a few more may
  appear; the count is kept in ``extra_info["buckets"]``); every write also looks keys up in, and rewrites,
  the table's ``HASH`` index;
* ``dv``: ``bucket = 4`` and ``deletion-vectors.enabled = true``: every write is followed by the lookup
  compaction in the writing process (level-0 files moved up, superseded rows marked in deletion vectors).

Two operations, each through ``Table.write_arrow`` (in this process) and through Spark (2 write tasks):

* **first write**: all rows (``s = 'str_<id>'``, ``d = id * 0.5``) into a fresh, empty table (created untimed);
  through Spark the rows are made by ``spark.range`` in the JVM, as in group 3;
* **upsert**: a random 10% of the keys (``s = 'upd_<id>'``, ``d = id * 0.5 + 1``) into a table already holding
  all rows (a copy of a filled template, made untimed); through Spark the rows are read from two Parquet files
  (untimed to make), so two tasks write them. The ``dv`` table pays its lookup compaction here.

Rows: ``PAIMON_BENCH_KINDS_ROWS`` (default 2,000,000, the issue's size). As in the other modules, each
alternative's first round is read back in full outside the timed code and compared with what was written.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import ROUNDS, assert_reads_back, loadavg, make_rows

from pyspark_paimon import Catalog, Table

KINDS_ROWS = int(os.environ.get("PAIMON_BENCH_KINDS_ROWS", "2000000").replace("_", ""))
UPSERT_FRACTION = 0.1
BUCKETS = 4
SEED = 20261127
WRITE_ROUNDS = max(1, min(ROUNDS, 3))
KINDS = ("fixed", "dynamic", "dv")
LABELS = {"fixed": "fixed (bucket 4)", "dynamic": "dynamic (bucket -1)", "dv": "dv (deletion vectors, bucket 4)"}
GROUPS = {
    ("first", "arrow"): "11a table kinds: first write, Table.write_arrow",
    ("first", "spark"): "11b table kinds: first write, Spark",
    ("upsert", "arrow"): "11c table kinds: upsert 10% of keys, Table.write_arrow",
    ("upsert", "spark"): "11d table kinds: upsert 10% of keys, Spark",
}


def kind_options(kind: str, rows: int) -> dict[str, str]:
    """The table options of a kind (see the module docstring)."""
    if kind == "fixed":
        return {"bucket": str(BUCKETS)}
    if kind == "dynamic":
        return {"bucket": "-1", "dynamic-bucket.target-row-num": str(max(1, rows // BUCKETS))}
    return {"bucket": str(BUCKETS), "deletion-vectors.enabled": "true"}


@dataclass
class KindData:
    root: Path
    rows: int
    base: pa.Table  # every key, first version
    upsert: pa.Table  # 10% of the keys, second version
    upsert_parquet: list[str]  # the same rows in two Parquet files, for Spark
    after_upsert: pa.Table  # what a full read returns after the upsert
    filled: dict[str, str]  # kind -> path of a template table holding ``base``


def _after_upsert(base: pa.Table, upsert: pa.Table) -> pa.Table:
    keep = pc.invert(pc.is_in(base.column("id"), value_set=upsert.column("id")))
    return pa.concat_tables([base.filter(keep), upsert])


@pytest.fixture(scope="module")
def kind_data() -> Iterator[KindData]:
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-kinds-"))
    try:
        n = KINDS_ROWS
        base = make_rows(np.arange(n, dtype=np.int64))
        rng = np.random.default_rng(SEED)
        keys = np.sort(rng.choice(n, max(1, int(n * UPSERT_FRACTION)), replace=False)).astype(np.int64)
        upsert = make_rows(keys, "upd_", 1.0)
        half = upsert.num_rows // 2
        parquet = []
        for i, part in enumerate((upsert.slice(0, half), upsert.slice(half))):
            path = root / f"upsert-{i}.parquet"
            pq.write_table(part, path)
            parquet.append(str(path))
        catalog = Catalog(str(root / "templates"))
        filled = {}
        for kind in KINDS:
            t = catalog.create_table(
                f"bench.filled_{kind}",
                "id bigint not null, s string, d double",
                primary_keys=["id"],
                options=kind_options(kind, n),
            )
            t.write_arrow(base)
            filled[kind] = t.store.table_path
        yield KindData(root, n, base, upsert, parquet, _after_upsert(base, upsert), filled)
    finally:
        shutil.rmtree(root, ignore_errors=True)


_names = itertools.count()


def _fresh(data: KindData, kind: str, op: str) -> Table:
    """An empty table of ``kind`` (first write) or a copy of the filled template (upsert); untimed."""
    target = data.root / "rounds" / f"{op}_{kind}_{next(_names)}"
    if op == "upsert":
        shutil.copytree(data.filled[kind], target)
        return Table.open(str(target))
    catalog = Catalog(str(data.root / "rounds"))
    return catalog.create_table(
        f"bench.{target.name}",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options=kind_options(kind, data.rows),
    )


def _buckets(table: Table) -> int:
    return len({e.bucket for e in table.store.live_entries(table.latest_snapshot())})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("through", ["arrow", "spark"])
@pytest.mark.parametrize("op", ["first", "upsert"])
def test_write_table_kind(
    benchmark: Any, kind_data: KindData, request: pytest.FixtureRequest, kind: str, op: str, through: str
) -> None:
    data = kind_data
    spark = request.getfixturevalue("spark") if through == "spark" else None
    benchmark.group = GROUPS[(op, through)]
    written: list[Table] = []
    before: dict[str, int] = {}

    def setup() -> tuple[tuple, dict]:
        table = _fresh(data, kind, op)
        snapshot = table.latest_snapshot()
        before[table.store.table_path] = snapshot.id if snapshot is not None else 0
        return (table,), {}

    def write_arrow(table: Table) -> None:
        table.write_arrow(data.base if op == "first" else data.upsert)

    def write_spark(table: Table) -> None:
        assert spark is not None
        if op == "first":
            df = spark.range(0, data.rows, 1, 2).selectExpr(
                "id", "concat('str_', cast(id as string)) as s", "cast(id as double) * 0.5 as d"
            )
        else:
            df = spark.read.parquet(*data.upsert_parquet)
        df.write.format("paimon").mode("append").save(table.store.table_path)

    def teardown(table: Table) -> None:
        table = Table.open(table.store.table_path)  # the state after the write
        snapshot = table.latest_snapshot()
        assert snapshot is not None and snapshot.id > before[table.store.table_path], (
            f"{table.store.table_path}: the write committed nothing"
        )
        if not written:  # the first round's table is read back in full, outside the timed code
            written.append(table)
            expected = data.base if op == "first" else data.after_upsert
            assert_reads_back(table.scan().to_arrow(), expected, f"{kind} {op} {through}")
            benchmark.extra_info["buckets"] = _buckets(table)
        else:
            shutil.rmtree(table.store.table_path, ignore_errors=True)

    write: Callable[[Table], None] = write_arrow if through == "arrow" else write_spark
    load_before = loadavg()
    benchmark.pedantic(write, setup=setup, teardown=teardown, rounds=WRITE_ROUNDS, warmup_rounds=1, iterations=1)
    shutil.rmtree(written[0].store.table_path, ignore_errors=True)
    benchmark.extra_info.update(
        label=LABELS[kind],
        rows=data.rows if op == "first" else data.upsert.num_rows,
        baseline=kind == "fixed",
        loadavg=[load_before, loadavg()],
    )
