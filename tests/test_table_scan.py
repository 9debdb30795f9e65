"""``Scan`` as the Arrow ecosystem reads it (issue 32): a ``RecordBatchReader`` that reads splits lazily, the Arrow
PyCapsule stream (``pa.table``, polars, DuckDB), ``limit``, ``count`` from metadata where exact, typed ``explain``."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

import duckdb
import polars as pl
import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource import jobs
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.read.row_count import stored_row_count
from pyspark_paimon.errors import OptionError
from pyspark_paimon.planner.explain import ReaderReport, ScanExplain, SplitReport, SplitTotals
from pyspark_paimon.planner.scan import ScanCounters
from pyspark_paimon.planner.split import DataSplit
from tests.planner.test_chain import make, put


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[DataSplit]:
    """The splits reads open, in order (every read of a split goes through ``jobs.read_planned_split``)."""
    seen: list[DataSplit] = []
    real = jobs.read_planned_split

    def spy(ctx: ReadContext, split: DataSplit, metrics: Any = None) -> Iterator[pa.RecordBatch]:
        seen.append(split)
        return real(ctx, split, metrics)

    monkeypatch.setattr(jobs, "read_planned_split", spy)
    return seen


@pytest.fixture
def append(catalog: Catalog) -> Table:
    """Five files of two rows (one split each), in two partitions."""
    t = catalog.create_table("db.events", "id BIGINT, dt STRING, v DOUBLE", partition_keys=["dt"])
    for i in range(5):
        t.write_arrow(pa.table({"id": [2 * i, 2 * i + 1], "dt": ["a" if i < 3 else "b"] * 2, "v": [i + 0.5, -1.0]}))
    return t


def test_the_batch_reader_reads_one_split_at_a_time(append: Table, opened: list[DataSplit]) -> None:
    reader = append.scan(columns=["id", "v"]).to_arrow_batch_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.float64())])
    assert opened == []  # planned, schema known, no data file opened yet
    first = reader.read_next_batch()
    assert first.num_rows == 2 and len(opened) == 1
    rest = reader.read_all()
    assert rest.num_rows == 8 and len(opened) == 5
    both = pa.concat_tables([pa.Table.from_batches([first]), rest])
    assert _rows(both) == _rows(append.scan(columns=["id", "v"]).to_arrow())


def test_an_empty_read_has_the_schema(append: Table) -> None:
    reader = append.scan("v > 1000", ["dt", "id"]).to_arrow_batch_reader()
    assert reader.schema.names == ["dt", "id"]
    assert reader.read_all().num_rows == 0
    assert pa.table(append.scan("v > 1000", ["dt", "id"])).schema.names == ["dt", "id"]


def test_arrow_consumers_read_a_scan_directly(append: Table) -> None:
    """``__arrow_c_stream__``: pyarrow, polars and DuckDB take the Scan itself; filter and columns hold."""
    scan = append.scan("dt = 'a' AND v > 0", ["id", "v"])
    want = _rows(scan.to_arrow())
    assert want == [(0, 0.5), (2, 1.5), (4, 2.5)]
    assert _rows(pa.table(scan)) == want
    assert _rows(pa.RecordBatchReader.from_stream(scan).read_all()) == want
    frame = pl.DataFrame(scan)
    assert sorted(frame.rows()) == want and frame.columns == ["id", "v"]
    assert duckdb.sql("select count(*), sum(v), max(id) from scan").fetchall() == [(3, 4.5, 4)]


def test_limit_stops_reading_once_enough_rows_are_out(append: Table, opened: list[DataSplit]) -> None:
    got = append.scan().limit(3).to_arrow()
    assert got.num_rows == 3 and len(opened) == 2  # two files of two rows: the third is never opened
    assert append.scan().limit(0).to_arrow().num_rows == 0
    assert append.scan("dt = 'b'").limit(100).to_arrow().num_rows == 4
    assert pa.table(append.scan().limit(5)).num_rows == 5
    assert append.scan().limit(7).count() == 7 and append.scan().limit(70).count() == 10
    assert "limit=3" in repr(append.scan().limit(3))
    for bad in (-1, 1.5, True):
        with pytest.raises(OptionError, match="limit must be an int >= 0"):
            append.scan().limit(bad)  # type: ignore[arg-type]


def test_count_reads_no_data_file_where_metadata_is_exact(append: Table, opened: list[DataSplit]) -> None:
    assert append.scan().count() == 10
    assert append.scan("dt = 'b'").count() == 4  # a partition filter is exact at planning
    assert append.scan(snapshot_id=2).count() == 4
    assert opened == []
    assert append.scan("v > 1").count() == 4  # a row filter is applied by reading
    assert len(opened) == 5


def test_count_of_primary_key_tables_merges_until_compacted(catalog: Catalog, opened: list[DataSplit]) -> None:
    t = catalog.create_table("db.pk", "id BIGINT, v STRING", primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": list("abcd")}))
    t.write_arrow(pa.table({"id": [3, 4, 5], "v": list("xyz")}))
    assert t.scan().count() == 5 == t.scan().to_arrow().num_rows
    assert opened, "level-0 files overlap: the buckets are merged to count"
    t.maintenance.compact(full=True)
    opened.clear()
    assert t.scan().count() == 5 and opened == []  # one sorted run per bucket, no retractions
    job = t.scan().read_job()
    split = job.splits[0]
    assert stored_row_count(job.planned, job.context, split) == split.row_count
    for retractions in (1, None):  # a run holding retractions (or not saying) is read: they are dropped
        files = tuple(dataclasses.replace(f, delete_row_count=retractions) for f in split.files)
        assert stored_row_count(job.planned, job.context, dataclasses.replace(split, files=files)) is None
    t.delete("id = 2")  # a retraction at level 0: that bucket is read again
    assert t.scan().count() == 4


def test_count_subtracts_deletion_vectors(catalog: Catalog, opened: list[DataSplit]) -> None:
    t = catalog.create_table("db.dv", "id BIGINT, v STRING", options={"deletion-vectors.enabled": "true"})
    t.write_arrow(pa.table({"id": list(range(10)), "v": ["x"] * 10}))
    t.delete("id < 3")  # a deletion vector of 3 positions, no file rewritten
    splits = t.scan().read_job().splits
    assert [len(s.deletion_files) for s in splits] == [1]
    opened.clear()
    assert t.scan().count() == 7 and opened == []
    assert t.scan().to_arrow().num_rows == 7


def test_explain_is_typed(append: Table) -> None:
    e = append.scan("dt = 'b'").explain()
    assert isinstance(e, ScanExplain) and isinstance(e.counters, ScanCounters)
    assert isinstance(e.splits, SplitTotals) and isinstance(e.readers, ReaderReport)
    assert all(isinstance(s, SplitReport) for s in e.split_list)
    assert e.snapshot_id == 5 and e.schema_id == 0
    assert (e.splits.count, e.splits.partitions, e.splits.rows, e.splits.max_sorted_runs) == (2, 1, 4, None)
    assert {s.partition["dt"] for s in e.split_list} == {"b"} and e.counters.manifests_skipped == 3
    assert e.readers.summary == "jvm: 2 files, python: 0 splits"
    as_dict = dataclasses.asdict(e)
    assert as_dict["counters"]["files_selected"] == 2 and as_dict["readers"]["jvm_splits"] == 2


@pytest.mark.parametrize(
    "read_options",
    [
        {},
        {"scan.snapshot-id": "2"},
        {"incremental-between": "1,3"},
        {"incremental-between": "1,3", "incremental-between-scan-mode": "diff"},
        {"filter": "v <> 'x'"},
    ],
    ids=["latest", "time_travel", "incremental", "incremental_diff", "filtered"],
)
def test_every_read_kind_streams_counts_and_limits_the_rows_to_arrow_returns(
    catalog: Catalog, read_options: dict[str, str]
) -> None:
    t = catalog.create_table(
        "db.kinds",
        "id BIGINT, v STRING, dt STRING",
        primary_keys=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": list("abc"), "dt": ["a", "a", "b"]}))
    t.write_arrow(pa.table({"id": [2, 3, 4], "v": list("xyz"), "dt": ["a", "b", "b"]}))
    t.write_arrow(pa.table({"id": [5], "v": ["q"], "dt": ["b"]}))
    scan = t.scan(read_options=read_options)
    want = _rows(scan.to_arrow())
    assert _rows(scan.to_arrow_batch_reader().read_all()) == want and want
    assert scan.count() == len(want)
    assert scan.limit(2).to_arrow().num_rows == 2 and scan.limit(2).count() == 2


def test_a_chain_table_streams_and_counts(catalog: Catalog) -> None:
    """A chain read (anchor snapshot partition merged with the delta branch) through the reader and count."""
    t = make(catalog)
    put(t, [(1, 1, "a", "20250810"), (2, 1, "b", "20250810")], "snapshot")
    put(t, [(2, 2, "b2", "20250811"), (3, 1, "c", "20250811")], "delta")
    scan = t.scan("dt = '20250811'")
    want = _rows(scan.to_arrow())
    assert want == [(1, 1, "a", "20250811"), (2, 2, "b2", "20250811"), (3, 1, "c", "20250811")]
    assert _rows(pa.table(scan)) == want and scan.count() == 3
