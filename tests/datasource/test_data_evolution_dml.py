"""Row-level DML on data-evolution tables (issue 36): ``t.update`` writes the changed columns of the matched rows by
``_ROW_ID`` (Paimon master's ``UpdatePaimonDataEvolutionTableCommand``), so every row keeps its id, in one commit;
deletes write deletion vectors, refused without ``deletion-vectors.enabled`` as Paimon master refuses them.
pypaimon reading the result is ``tests/interop/test_interop_row_tracking.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import DmlError
from pyspark_paimon.metadata.fileindex.container import FileIndexContainer
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD

TRACKED = {"read.row-tracking-columns": "true"}
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _make(tmp_path: Path, **options: str) -> Table:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table(
        "db.t", "id int, dt string, v string, n bigint", partition_keys=["dt"], options={**EVOLUTION, **options}
    )
    t.write_arrow(
        pa.table(
            {"id": pa.array([1, 3, 2], pa.int32()), "dt": ["a", "a", "b"], "v": ["x1", "x3", "x2"], "n": [10, 30, 20]}
        )
    )
    t.refresh().write_arrow(
        pa.table({"id": pa.array([5, 4], pa.int32()), "dt": ["a", "b"], "v": ["x5", "x4"], "n": [50, 40]})
    )
    return t.refresh()


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Partition a: row ids 0 (id 1), 1 (id 3) then 3 (id 5); partition b: 2 (id 2) then 4 (id 4)."""
    return _make(tmp_path)


def _by_row_id(t: Table) -> dict[int, dict[str, Any]]:
    rows = t.refresh().scan(read_options=TRACKED).to_arrow().to_pylist()
    return {r.pop("_ROW_ID"): r for r in rows}


def test_update_writes_only_the_changed_columns_by_row_id(table: Table) -> None:
    before = _by_row_id(table)
    result = table.update({"v": "concat(v, '!')", "n": "n + id"}, "n >= 30")
    assert result.updated == 3 and result.snapshot_id == 3
    after = _by_row_id(table)
    assert set(after) == set(before)  # every row keeps its id
    for rid, row in before.items():
        changed = row["n"] >= 30
        assert after[rid]["id"] == row["id"] and after[rid]["dt"] == row["dt"]
        assert after[rid]["v"] == (row["v"] + "!" if changed else row["v"])
        assert after[rid]["n"] == (row["n"] + row["id"] if changed else row["n"])
    snapshot = table.refresh().latest_snapshot()
    assert snapshot is not None and snapshot.next_row_id == 5  # no new ids
    new = [e.file for e in table.store.live_entries(snapshot) if e.kind == KIND_ADD and e.file.write_cols]
    assert new and all(f.write_cols == ("v", "n") for f in new)  # files of the assigned columns only


def test_update_without_filter_and_with_no_match(table: Table) -> None:
    assert not table.update({"n": "0"}, "id > 100")
    assert table.refresh().latest_snapshot().id == 2  # type: ignore[union-attr]
    result = table.refresh().update({"n": "n * 2"})
    assert result.updated == 5
    assert sorted(r["n"] for r in _by_row_id(table).values()) == [20, 40, 60, 80, 100]


def test_update_refuses_partition_columns(table: Table) -> None:
    with pytest.raises(DmlError, match="partition column"):
        table.update({"dt": "'c'"}, "id = 1")


def test_delete_stays_refused_with_the_reason(table: Table) -> None:
    with pytest.raises(DmlError, match="deletion-vectors.enabled"):
        table.delete("id = 1")
    assert len(_by_row_id(table)) == 5


def test_merge_updates_matched_rows_by_row_id_and_appends_new_ones(table: Table) -> None:
    before = _by_row_id(table)
    source = pa.table({"id": pa.array([3, 4, 9], pa.int32()), "dt": ["a", "b", "c"], "v": ["m3", "m4", "m9"]})
    result = (
        table.merge(source, on=["id", "dt"])
        .when_matched_update({"v": "source.v", "N": "target.n + 1"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.updated, result.inserted, result.deleted) == (2, 1, 0)
    after = _by_row_id(table)
    assert set(after) == {*before, 5}  # old rows keep their ids; the new row gets the next one
    for rid, row in before.items():
        hit = row["id"] in (3, 4)
        assert after[rid]["v"] == ("m" + str(row["id"]) if hit else row["v"])
        assert after[rid]["n"] == (row["n"] + 1 if hit else row["n"])
    assert after[5] == {"id": 9, "dt": "c", "v": "m9", "n": None, "_SEQUENCE_NUMBER": 3}
    snapshot = table.refresh().latest_snapshot()
    assert snapshot is not None and snapshot.id == 3 and snapshot.next_row_id == 6  # one commit


def test_merge_that_deletes_is_refused_before_writing(table: Table) -> None:
    source = pa.table({"id": pa.array([3], pa.int32()), "dt": ["a"], "v": ["m3"]})
    with pytest.raises(DmlError, match="deletion-vectors.enabled"):
        table.merge(source, on="id").when_matched_delete().execute()
    assert table.refresh().latest_snapshot().id == 2  # type: ignore[union-attr]


def test_rewrite_file_index_indexes_a_partial_file_on_its_own_columns(table: Table) -> None:
    table.update({"n": "n + 1"}, "id = 1")  # a file of column n for row-id range 0-1
    table.refresh().update_schema().set_options(
        {"file-index.bitmap.columns": "v,n", "file-index.in-manifest-threshold": "1 mb"}
    ).commit()
    assert table.refresh().maintenance.rewrite_file_index().files == 5
    t = table.refresh()
    snapshot = t.latest_snapshot()
    assert snapshot is not None
    slots = {}
    for e in t.store.live_entries(snapshot):
        assert e.file.embedded_index is not None
        slots[e.file.write_cols] = set(FileIndexContainer.parse(e.file.embedded_index, e.file.file_name).slots)
    assert slots == {None: {"v", "n"}, ("n",): {"n"}}  # the partial file holds no v, so has no index of it
    assert [r["id"] for r in t.scan(filter="v = 'x3'").to_arrow().to_pylist()] == [3]
    assert [r["n"] for r in t.scan(filter="n = 11").to_arrow().to_pylist()] == [11]


def test_with_deletion_vectors_delete_and_merge_delete_by_vectors_keeping_ids(tmp_path: Path) -> None:
    t = _make(tmp_path, **{"deletion-vectors.enabled": "true"})
    before = _by_row_id(t)
    t.update({"v": "'u'"}, "id = 3")  # a file of column v for range 0-1: the vector still goes to the oldest file
    result = t.refresh().delete("id in (1, 4)")
    assert result.deleted == 2 and result.vectors_written == 2 and result.snapshot_id == 4
    after = _by_row_id(t)
    assert sorted(after) == [1, 2, 3]
    assert {r: after[r]["id"] for r in after} == {r: before[r]["id"] for r in after}
    assert after[1]["v"] == "u"
    source = pa.table({"id": pa.array([2, 5, 7], pa.int32()), "dt": ["b", "a", "a"], "v": ["m2", "del", "m7"]})
    merged = (
        t.refresh()
        .merge(source, on=["id", "dt"])
        .when_matched_delete("source.v = 'del'")
        .when_matched_update({"v": "source.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    assert (merged.updated, merged.deleted, merged.inserted) == (1, 1, 1)
    final = _by_row_id(t)
    assert {r: (v["id"], v["v"]) for r, v in final.items()} == {1: (3, "u"), 2: (2, "m2"), 5: (7, "m7")}
    assert t.refresh().latest_snapshot().id == 5  # type: ignore[union-attr]
    # A compaction applies the vectors and keeps the ids.
    t.refresh().maintenance.compact(full=True)
    assert {r: (v["id"], v["v"]) for r, v in _by_row_id(t).items()} == {1: (3, "u"), 2: (2, "m2"), 5: (7, "m7")}
