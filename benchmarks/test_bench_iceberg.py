"""Groups 13a and 13b: the Iceberg-compatible metadata (issue 38), read by DuckDB and kept up by every commit.

* **13a, DuckDB: Iceberg view vs the same Parquet files.** A primary-key table of ``PAIMON_BENCH_ICEBERG_ROWS``
  rows (default 2,000,000; ``bucket = 4``; one commit, then a full compaction) with
  ``metadata.iceberg.storage = table-location``. DuckDB (1.5.5, the ``iceberg`` and ``avro`` extensions of the
  ``duckdb-extension-*`` wheels) runs ``count(*), sum(id), sum(d), max(length(s))`` over ``iceberg_scan`` of
  the table, and over ``read_parquet`` of exactly the files the Iceberg view lists (the target: within 1.1x).
  Both are checked against what was written.
* **13b, an append commit with and without the metadata.** A 1,000-row ``Table.write_arrow`` into an append
  table that already holds 100 commits, once with ``metadata.iceberg.storage = table-location`` and once
  without: what keeping the Iceberg view costs a commit (incremental: one manifest, one manifest list, one
  metadata file; the earlier manifests are listed again, small ones merged now and then).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest
from conftest import ROUNDS, Expected, loadavg, make_rows
from pyiceberg.table import StaticTable

from pyspark_paimon import Catalog, Table
from tests.iceberg_readers import current_metadata_file, duckdb_connection

ROWS = int(os.environ.get("PAIMON_BENCH_ICEBERG_ROWS", "2000000").replace("_", ""))
READ_GROUP = "13a DuckDB: Iceberg view vs the same Parquet files"
COMMIT_GROUP = "13b append commit with vs without Iceberg metadata"
EARLIER_COMMITS = 100
COMMIT_ROWS = 1000
QUERY = "SELECT count(*), sum(id), sum(d), max(length(s)) FROM {source}"


@dataclass
class IcebergTables:
    root: Path
    location: str
    files: list[str]
    expected: Expected
    appends: dict[bool, Table]


def _build(root: Path) -> IcebergTables:
    cat = Catalog(str(root))
    t = cat.create_table(
        "bench.pk_iceberg",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options={"bucket": "4", "metadata.iceberg.storage": "table-location", "write-only": "true"},
    )
    ids = np.arange(ROWS, dtype=np.int64)
    t.write_arrow(make_rows(ids))
    t.maintenance.compact(full=True)
    location = str(root / "bench.db" / "pk_iceberg")
    table = StaticTable.from_metadata(current_metadata_file(location))
    files = sorted(task.file.file_path for task in table.scan().plan_files())
    live = {e.file.file_name for e in t.store.live_entries(t.latest_snapshot())}
    assert {f.rsplit("/", 1)[-1] for f in files} == live  # the view is the compacted table, nothing else
    expected = Expected(ROWS, int(ids.sum()), float((ids * 0.5).sum()), len(f"str_{ROWS - 1}"))
    appends = {}
    for with_iceberg in (True, False):
        options = {"metadata.iceberg.storage": "table-location"} if with_iceberg else {}
        a = cat.create_table(f"bench.append_iceberg_{with_iceberg}", "id bigint, s string, d double", options=options)
        for k in range(EARLIER_COMMITS):
            a.write_arrow(make_rows(np.arange(k * COMMIT_ROWS, (k + 1) * COMMIT_ROWS, dtype=np.int64)))
        appends[with_iceberg] = a
    return IcebergTables(root, location, files, expected, appends)


@pytest.fixture(scope="module")
def iceberg_tables() -> Iterator[IcebergTables]:
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-iceberg-"))
    try:
        yield _build(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def duck() -> Iterator[Any]:
    con = duckdb_connection()
    yield con
    con.close()


@pytest.mark.parametrize("source", ["iceberg_scan", "read_parquet"])
def test_duckdb_reads_the_iceberg_view(benchmark: Any, iceberg_tables: IcebergTables, duck: Any, source: str) -> None:
    benchmark.group = READ_GROUP
    if source == "iceberg_scan":
        sql = QUERY.format(source=f"iceberg_scan('{iceberg_tables.location}')")
    else:
        sql = QUERY.format(source="read_parquet([" + ", ".join(f"'{f}'" for f in iceberg_tables.files) + "])")
    result = duck.execute(sql).fetchone()
    iceberg_tables.expected.check(*result, who=f"DuckDB {source}")
    load = loadavg()
    benchmark.pedantic(lambda: duck.execute(sql).fetchone(), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    benchmark.extra_info.update(
        label=f"DuckDB {source}",
        rows=ROWS,
        files=len(iceberg_tables.files),
        baseline=source == "read_parquet",
        loadavg=[load, loadavg()],
    )


@pytest.mark.parametrize("with_iceberg", [True, False], ids=["iceberg", "plain"])
def test_append_commit_keeps_the_iceberg_view(
    benchmark: Any, iceberg_tables: IcebergTables, with_iceberg: bool
) -> None:
    benchmark.group = COMMIT_GROUP
    t = iceberg_tables.appends[with_iceberg]
    batches = iter(range(EARLIER_COMMITS, EARLIER_COMMITS + 10 * (ROUNDS + 1)))

    def commit() -> None:
        k = next(batches)
        t.write_arrow(make_rows(np.arange(k * COMMIT_ROWS, (k + 1) * COMMIT_ROWS, dtype=np.int64)))

    load = loadavg()
    benchmark.pedantic(commit, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    assert t.scan().to_arrow().num_rows == (EARLIER_COMMITS + ROUNDS + 1) * COMMIT_ROWS
    benchmark.extra_info.update(
        label=f"commit {'with' if with_iceberg else 'without'} Iceberg metadata",
        rows=COMMIT_ROWS,
        earlier_commits=EARLIER_COMMITS,
        baseline=not with_iceberg,
        loadavg=[load, loadavg()],
    )
