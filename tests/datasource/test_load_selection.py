"""Load-time selection (the ``filter`` and ``scan.partitions`` read options) without Spark: the rows are exactly
those the predicate selects, and partitions, buckets, files and row groups are pruned."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.errors import OptionError
from tests.planner.test_chain import make, put

N = 400


def _rows() -> pa.Table:
    ids = list(range(N))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "dt": [f"2024-01-0{i % 4 + 1}" for i in ids],
            "name": [None if i % 7 == 0 else f"n{i % 13}" for i in ids],
            "d": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 30) for i in ids],
            "amt": pa.array([decimal.Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
            "ok": [i % 3 == 0 for i in ids],
        }
    )


def _table(catalog: Catalog, pk: bool) -> Any:
    t = catalog.create_table(
        "default.s",
        "id bigint, dt string, name string, d date, amt decimal(10,2), ok boolean",
        partition_keys=["dt"],
        primary_keys=["id", "dt"] if pk else [],
        options={"bucket": "4"} if pk else {},
    )
    t.write_arrow(_rows())
    if pk:  # a second version of some rows: the selection must see the merged (newest) values
        upd = _rows().filter(pa.compute.less(pa.compute.field("id"), 40))
        t.write_arrow(upd.set_column(2, "name", pa.array(["updated"] * upd.num_rows)))
    return t


def _expected(catalog_rows: list[dict], keep: Callable[[dict], bool]) -> list[int]:
    return sorted(r["id"] for r in catalog_rows if keep(r))


CASES: list[tuple[str, Callable[[dict], bool]]] = [
    ("id = 5", lambda r: r["id"] == 5),
    ("id IN (5, 6, 399) AND dt = '2024-01-02'", lambda r: r["id"] in (5, 6, 399) and r["dt"] == "2024-01-02"),
    (
        "(dt = '2024-01-01' AND id < 40) OR (dt = '2024-01-02' AND id BETWEEN 10 AND 30)",
        lambda r: (r["dt"] == "2024-01-01" and r["id"] < 40) or (r["dt"] == "2024-01-02" and 10 <= r["id"] <= 30),
    ),
    ("NOT (id >= 30) AND ok", lambda r: r["id"] < 30 and r["ok"]),
    ("name IS NULL OR name = 'updated'", lambda r: r["name"] is None or r["name"] == "updated"),
    ("name <> 'n1'", lambda r: r["name"] is not None and r["name"] != "n1"),
    ("d >= DATE '2024-01-25' AND amt > 50.5", lambda r: r["d"] >= dt.date(2024, 1, 25) and r["amt"] > 50.5),
    ("id NOT IN (1, 2, 3) AND id < 6", lambda r: r["id"] in (0, 4, 5)),
]


@pytest.mark.parametrize("pk", [False, True])
def test_filter_is_exact(catalog: Catalog, pk: bool) -> None:
    t = _table(catalog, pk)
    everything = t.scan().to_arrow().to_pylist()
    assert len(everything) == N
    for text, keep in CASES:
        got = sorted(t.scan(read_options={"filter": text}).to_arrow().column("id").to_pylist())
        assert got == _expected(everything, keep), text


def test_filter_prunes_partitions_buckets_and_files(catalog: Catalog) -> None:
    t = _table(catalog, pk=True)
    point = t.scan(read_options={"filter": "id = 5"}).explain().counters
    full = t.scan().explain().counters
    assert point.buckets_skipped > 0 and point.files_selected < full.files_selected
    part = t.scan(read_options={"filter": "dt = '2024-01-02' AND id > 100"}).explain().counters
    assert part.partitions_selected == 1 and part.partitions_skipped == 3
    either = t.scan(read_options={"filter": "dt = '2024-01-02' OR (dt = '2024-01-03' AND id = 2)"}).explain().counters
    assert either.partitions_selected == 2


def test_filter_skips_row_groups(catalog: Catalog) -> None:
    t = catalog.create_table("default.rg", "id bigint, v string", options={})
    t.write_arrow(pa.table({"id": pa.array(range(1000), pa.int64()), "v": [f"v{i}" for i in range(1000)]}))
    [path] = list(Path(t.store.table_path).rglob("*.parquet"))
    pq.write_table(pq.read_table(path, partitioning=None), path, row_group_size=100)
    # a range inside an OR implies no leaf, so nothing is skipped, and the rows are still exact
    job = t.scan(read_options={"filter": "id >= 950 OR id = 951"}).read_job()
    assert sorted(job.to_arrow().column("id").to_pylist()) == list(range(950, 1000))
    assert job.metrics.row_groups_skipped == 0
    job = t.scan(read_options={"filter": "id >= 950"}).read_job()
    assert job.to_arrow().num_rows == 50
    assert job.metrics.row_groups_total == 10 and job.metrics.row_groups_skipped == 9


def test_a_double_filter_keeps_the_nan_rows_statistics_leave_out(catalog: Catalog) -> None:
    """Spark orders NaN above every number, so ``x > 500`` holds for NaN; Parquet's row-group statistics leave
    NaN out (this file's groups say max 99, 199, ...), so no row group may be skipped on it. A condition NaN
    fails still skips them."""
    t = catalog.create_table("default.nan", "id bigint, x double", options={})
    xs = [float("nan") if i % 250 == 7 else float(i % 100) for i in range(1000)]
    t.write_arrow(pa.table({"id": pa.array(range(1000), pa.int64()), "x": xs}))
    [path] = list(Path(t.store.table_path).rglob("*.parquet"))
    pq.write_table(pq.read_table(path, partitioning=None), path, row_group_size=100)
    job = t.scan("x > 500").read_job()
    assert sorted(job.to_arrow().column("id").to_pylist()) == [7, 257, 507, 757]
    assert job.metrics.row_groups_skipped == 0
    assert sorted(t.scan("NOT (x <= 98.5) AND id < 300").to_arrow().column("id").to_pylist()) == [7, 99, 199, 257, 299]
    job = t.scan("x < -1").read_job()
    assert job.to_arrow().num_rows == 0 and job.metrics.row_groups_skipped == 10


def test_scan_partitions(catalog: Catalog) -> None:
    t = _table(catalog, pk=False)
    got = t.scan(read_options={"scan.partitions": "dt=2024-01-02;dt=2024-01-04"}).to_arrow()
    assert set(got.column("dt").to_pylist()) == {"2024-01-02", "2024-01-04"} and got.num_rows == N // 2
    counters = t.scan(read_options={"scan.partitions": "dt=2024-01-02"}).explain().counters
    assert counters.partitions_selected == 1
    both = t.scan(read_options={"scan.partitions": "dt=2024-01-02", "filter": "id < 20"}).to_arrow()
    assert sorted(both.column("id").to_pylist()) == [1, 5, 9, 13, 17]
    with pytest.raises(OptionError, match="'scan.partitions'"):
        t.scan(read_options={"scan.partitions": "nope=1"}).to_arrow()


def test_errors_are_raised_before_reading(catalog: Catalog) -> None:
    t = _table(catalog, pk=False)
    with pytest.raises(OptionError, match="unknown column 'nope'"):
        t.scan(read_options={"filter": "nope = 1"}).read_job()


def test_chain_read_resolves_only_the_requested_partitions(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "s0808", "20250808"), (2, 1, "s0808", "20250808")], "snapshot")
    for day, rows in {
        "20250809": [(1, 5, "d0809")],
        "20250810": [(3, 5, "d0810")],
        "20250811": [(2, 6, "d0811")],
    }.items():
        put(t, [(*r, day) for r in rows], "delta")
    got = t.scan(read_options={"scan.partitions": "dt=20250810"}).to_arrow().to_pylist()
    assert sorted((r["t1"], r["t3"], r["dt"]) for r in got) == [
        (1, "d0809", "20250810"),
        (2, "s0808", "20250810"),
        (3, "d0810", "20250810"),
    ]
    full = [r for r in t.scan().to_arrow().to_pylist() if r["dt"] == "20250810"]
    assert sorted(map(str, full)) == sorted(map(str, got))
    plan = t.scan(read_options={"scan.partitions": "dt=20250810"}).explain()
    assert {s.partition["dt"] for s in plan.split_list} == {"20250810"}
    assert len(t.scan().explain().split_list) > len(plan.split_list)
    # the filter runs after the chain merge: key 1's anchor row 's0808' is superseded by 'd0809', so a filter
    # on the old value finds nothing (filtering before the merge would resurrect it)
    assert t.scan(read_options={"filter": "dt = '20250811' AND t3 = 's0808'"}).to_arrow().num_rows == 0
    filtered = t.scan(read_options={"filter": "dt = '20250811' AND t3 = 'd0809'"}).to_arrow().to_pylist()
    assert [(r["t1"], r["dt"]) for r in filtered] == [(1, "20250811")]


def test_fallback_and_incremental_reads_use_the_selection(catalog: Catalog) -> None:
    t = catalog.create_table("default.f", "id bigint, dt string", partition_keys=["dt"])
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["a", "b"]}))
    t.branches.create("backfill")
    t.on_branch("backfill").write_arrow(pa.table({"id": [3, 4], "dt": ["c", "d"]}))
    fb = {"scan.fallback-branch": "backfill"}
    assert sorted(t.scan(read_options={**fb, "scan.partitions": "dt=b;dt=c"}).to_arrow().column("id").to_pylist()) == [
        2,
        3,
    ]
    assert t.scan(read_options={**fb, "filter": "dt = 'd' OR id = 1"}).to_arrow().column("id").to_pylist() in (
        [1, 4],
        [4, 1],
    )
    t.write_arrow(pa.table({"id": [5, 6], "dt": ["a", "b"]}))  # snapshot 2
    inc = {"incremental-between": "1,2"}
    assert t.scan(read_options={**inc, "scan.partitions": "dt=b"}).to_arrow().column("id").to_pylist() == [6]
    assert t.scan(read_options={**inc, "filter": "id > 5"}).to_arrow().column("id").to_pylist() == [6]
