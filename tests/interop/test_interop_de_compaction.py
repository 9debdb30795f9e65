"""Compaction of data-evolution tables pypaimon 2.1 wrote (issue 36): a table's row ranges held by a full file and
partial-column files (an update by ``_ROW_ID``, a column added and filled for existing rows) are rewritten as one
whole-row file per run of ranges whose ids follow on, as Java's data-evolution compaction does; afterwards we and
pypaimon read exactly the rows, values and ids we read before.

A filter on ``_ROW_ID`` skips the files of ranges it excludes, and ``explain()`` counts a range's rows once.

Two oracle batches: pypaimon writes the tables, we compact them, pypaimon reads them again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Table
from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.datasource.read.row_id_merge import read_row_id_group
from pyspark_paimon.planner.read_options import ReadOptions
from tests.interop.helpers import OracleBatch, assert_same_table, ours_spark, table_uri

pytestmark = pytest.mark.interop

TRACKED = {"read.row-tracking-columns": "true"}
HIDDEN = ["_ROW_ID", "_SEQUENCE_NUMBER"]
COLUMNS = [["id", "INT"], ["dt", "STRING"], ["name", "STRING"], ["score", "DOUBLE"]]
FIRST = [[1, "a", "a", 1.0], [2, "a", "b", 2.0], [3, "b", "c", 3.0]]
SECOND = [[4, "a", "d", 4.0], [5, "b", "e", 5.0]]
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}
# Java's default compaction.min.file-num (5) would leave these small tables alone.
TWO = {"compaction.min.file-num": "2"}


def _ours(warehouse: str, name: str) -> pa.Table:
    return Table.open(table_uri(warehouse, f"db.{name}")).scan(read_options=TRACKED).to_arrow()


def _by_id(table: pa.Table, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.select(["_ROW_ID", *columns]).to_pylist())


@pytest.fixture(scope="module")
def compacted(module_warehouse: str, oracle_python: str) -> dict[str, Any]:
    b = OracleBatch(module_warehouse)
    # Unpartitioned: ranges [0, 2] and [3, 4] follow on, each a full file plus an update of 'score'; then a new
    # column filled for two rows of different ranges.
    b.write("db.flat", [{"rows": FIRST}, {"rows": SECOND}], create={"columns": COLUMNS, "options": EVOLUTION})
    b.row_update("db.flat", "update_by_row_id", columns=["score"], rows=[[1, 20.0], [3, 40.0]])
    b.evolve("db.flat", [{"op": "add_column", "name": "extra", "type": "STRING"}])
    b.row_update("db.flat", "update_by_row_id", columns=["extra"], rows=[[0, "x0"], [4, "x4"]])
    # Partitioned, commits spanning partitions: partition a holds ids 0-1 and 3, b holds 2 and 4, so a's ranges do
    # not follow on and are compacted one by one; b's ranges have one file each and stay.
    b.write(
        "db.parted",
        [{"rows": FIRST}, {"rows": SECOND}],
        create={"columns": COLUMNS, "partition_keys": ["dt"], "options": EVOLUTION},
    )
    b.row_update("db.parted", "update_by_row_id", columns=["score"], rows=[[1, 20.0], [3, 40.0]])
    # Left uncompacted for the reads: ranges [0, 2] and [3, 4], each a full file and a 'score' file.
    b.write("db.pruned", [{"rows": FIRST}, {"rows": SECOND}], create={"columns": COLUMNS, "options": EVOLUTION})
    b.row_update("db.pruned", "update_by_row_id", columns=["score"], rows=[[1, 20.0], [3, 40.0]])
    # Deletion vectors: id 1 deleted, so range [0, 2] has a vector and stays; range [3, 4] is compacted.
    b.write(
        "db.deleted",
        [{"rows": FIRST}, {"rows": SECOND}],
        create={"columns": COLUMNS, "options": {**EVOLUTION, "deletion-vectors.enabled": "true"}},
    )
    b.row_update("db.deleted", "update_by_row_id", columns=["score"], rows=[[1, 20.0], [3, 40.0]])
    b.row_update("db.deleted", "delete_by_row_id", row_ids=[1])
    b.run()
    out: dict[str, Any] = {}
    for name in ("flat", "parted", "deleted"):
        table = Table.open(table_uri(module_warehouse, f"db.{name}"))
        out[f"{name}_before"] = _ours(module_warehouse, name)
        out[f"{name}_files_before"] = table.inspect.files().to_pylist()
        out[f"{name}_result"] = table.maintenance.compact(options=TWO)
        out[f"{name}_files_after"] = Table.open(table_uri(module_warehouse, f"db.{name}")).inspect.files().to_pylist()
    after = OracleBatch(module_warehouse)
    after.read("flat", "db.flat", impls=("pypaimon",), projection=["id", "dt", "name", "score", "extra", *HIDDEN])
    after.read("parted", "db.parted", impls=("pypaimon",), projection=["id", "dt", "name", "score", *HIDDEN])
    after.read("flat_rust", "db.flat", impls=("rust",))
    after.read("deleted", "db.deleted", impls=("pypaimon",), projection=["id", "dt", "name", "score", *HIDDEN])
    after.run()
    out["pypaimon"] = after.tables
    return out


def test_column_groups_merge_into_one_file_keeping_rows_and_ids(
    compacted: dict[str, Any], module_warehouse: str
) -> None:
    before = compacted["flat_before"]
    # Derived by hand: ids 1 and 3 took the new scores, ids 0 and 4 the new column.
    assert _by_id(before, ["id", "score", "extra"]) == [
        (0, 1, 1.0, "x0"),
        (1, 2, 20.0, None),
        (2, 3, 3.0, None),
        (3, 4, 40.0, None),
        (4, 5, 5.0, "x4"),
    ]
    assert len(compacted["flat_files_before"]) == 6
    files = compacted["flat_files_after"]
    assert len(files) == 1, files
    (only,) = files
    assert only["first_row_id"] == 0 and only["record_count"] == 5
    assert only["write_cols"] is None  # every column, as Java writes a compacted file
    assert compacted["flat_result"].files_before == 6 and compacted["flat_result"].files_after == 1
    after = _ours(module_warehouse, "flat")
    assert _by_id(after, ["id", "dt", "name", "score", "extra"]) == _by_id(
        before, ["id", "dt", "name", "score", "extra"]
    )
    # Java's rule: the output's sequence numbers span the inputs', so every row reads the newest of them.
    assert set(after.column("_SEQUENCE_NUMBER").to_pylist()) == {only["max_sequence_number"]}
    assert only["max_sequence_number"] == max(f["max_sequence_number"] for f in compacted["flat_files_before"])
    theirs = compacted["pypaimon"]["flat"]["pypaimon"]
    assert_same_table(theirs, after.select(theirs.column_names), "flat compacted, read by pypaimon")
    rust = compacted["pypaimon"]["flat_rust"]["rust"]
    assert_same_table(rust, after.drop_columns(HIDDEN), "flat compacted, read by pypaimon-rust")


def test_partitioned_ranges_compact_per_run_of_consecutive_ids(
    compacted: dict[str, Any], module_warehouse: str
) -> None:
    before = compacted["parted_before"]
    after = _ours(module_warehouse, "parted")
    assert _by_id(after, ["id", "dt", "name", "score"]) == _by_id(before, ["id", "dt", "name", "score"])
    assert _by_id(after, ["id", "score"]) == [(0, 1, 1.0), (1, 2, 20.0), (2, 3, 3.0), (3, 4, 40.0), (4, 5, 5.0)]
    ranges = sorted((f["partition"], f["first_row_id"], f["record_count"]) for f in compacted["parted_files_after"])
    # Partition a: its two ranges (each a full file and an update) became one file each; b's stayed as written.
    assert len(compacted["parted_files_before"]) == 6
    assert len(ranges) == 4, ranges
    assert sorted(r[1:] for r in ranges) == [(0, 2), (2, 1), (3, 1), (4, 1)]
    theirs = compacted["pypaimon"]["parted"]["pypaimon"]
    assert_same_table(theirs, after.select(theirs.column_names), "parted compacted, read by pypaimon")


def test_ranges_with_deletion_vectors_stay_as_they_are(compacted: dict[str, Any], module_warehouse: str) -> None:
    before = compacted["deleted_before"]
    assert _by_id(before, ["id", "score"]) == [(0, 1, 1.0), (2, 3, 3.0), (3, 4, 40.0), (4, 5, 5.0)]
    after = _ours(module_warehouse, "deleted")
    assert _by_id(after, ["id", "dt", "name", "score"]) == _by_id(before, ["id", "dt", "name", "score"])
    ranges = sorted((f["first_row_id"], f["record_count"]) for f in compacted["deleted_files_after"])
    assert ranges == [(0, 3), (0, 3), (3, 2)], ranges  # [0, 2] as written (2 files), [3, 4] one file
    theirs = compacted["pypaimon"]["deleted"]["pypaimon"]
    assert_same_table(theirs, after.select(theirs.column_names), "deleted compacted, read by pypaimon")


def test_a_row_id_filter_skips_whole_ranges(compacted: dict[str, Any], module_warehouse: str) -> None:
    table = Table.open(table_uri(module_warehouse, "db.pruned"))
    scan = table.scan(filter="_ROW_ID = 4", read_options=TRACKED)
    explain = scan.explain()
    assert explain.counters.files_skipped_row_ids == 2  # range [0, 2]: its full file and its 'score' file
    assert explain.splits.files == 2 and explain.splits.rows == 2  # range [3, 4], read whole, its rows once
    assert _by_id(scan.to_arrow(), ["id", "score"]) == [(4, 5, 5.0)]
    both = table.scan(filter="_ROW_ID IN (1, 3)", read_options=TRACKED)
    assert both.explain().counters.files_skipped_row_ids == 0
    assert _by_id(both.to_arrow(), ["id", "score"]) == [(1, 2, 20.0), (3, 4, 40.0)]


def test_explain_counts_each_range_once(compacted: dict[str, Any], module_warehouse: str) -> None:
    explain = Table.open(table_uri(module_warehouse, "db.pruned")).scan().explain()
    assert explain.splits.files == 4
    assert [s.rows for s in explain.split_list] == [3, 2]  # not 6 and 4: a range's column files hold the same rows
    assert explain.splits.rows == 5


def test_a_row_id_filter_reads_only_the_ids_it_allows_from_a_range(
    compacted: dict[str, Any], module_warehouse: str
) -> None:
    table = Table.open(table_uri(module_warehouse, "db.pruned"))
    job = prepare_read(table.store, ReadOptions.from_options({**TRACKED, "filter": "_ROW_ID = 1"}))
    (split,) = job.plan.splits  # range [0, 2]: its full file and its 'score' file
    assert len(split.files) == 2
    unfiltered = replace(job.context, residual=None)  # what the files give before the exact filter runs
    fields = [table.store.schema().field(n) for n in ("id", "score")]
    rows = read_row_id_group(unfiltered, split, fields)
    assert rows.to_pylist() == [{"id": 2, "score": 20.0}]  # one row of three read, its newest score
    spanning = table.scan(filter="_ROW_ID >= 1 AND _ROW_ID <= 3", read_options=TRACKED).to_arrow()
    assert _by_id(spanning, ["id", "score"]) == [(1, 2, 20.0), (2, 3, 3.0), (3, 4, 40.0)]
    between = table.scan(filter="_ROW_ID > 1 AND _ROW_ID < 2", read_options=TRACKED)  # no id, yet no range excluded
    assert between.explain().counters.files_skipped_row_ids == 2 and between.to_arrow().num_rows == 0
    # A deleted row inside the window stays deleted (range [0, 2] of db.deleted kept its vector).
    deleted = Table.open(table_uri(module_warehouse, "db.deleted"))
    window = deleted.scan(filter="_ROW_ID >= 1 AND _ROW_ID < 3", read_options=TRACKED).to_arrow()
    assert _by_id(window, ["id", "score"]) == [(2, 3, 3.0)]


def test_spark_reads_a_compacted_table_and_prunes_by_row_id(
    spark: Any, compacted: dict[str, Any], module_warehouse: str
) -> None:
    flat = ours_spark(spark, table_uri(module_warehouse, "db.flat"), TRACKED)
    assert_same_table(flat, _ours(module_warehouse, "flat"), "flat compacted, read by Spark")
    pruned = ours_spark(spark, table_uri(module_warehouse, "db.pruned"), {**TRACKED, "filter": "_ROW_ID IN (1, 4)"})
    assert _by_id(pruned, ["id", "score"]) == [(1, 2, 20.0), (4, 5, 5.0)]
