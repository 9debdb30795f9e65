"""Writes of data-evolution tables here (issue 36), without the oracles: updates of some columns by ``_ROW_ID``
(files of those columns for whole row-id ranges, committed once), a new column filled for existing rows, upserts by
key (matched rows updated, new keys appended), the commit's conflict check, an abort that leaves nothing behind, and
what stays refused. pypaimon reading what we write (and us reading its writes) is
``tests/interop/test_interop_row_tracking.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.write import key_upsert, row_id_update
from pyspark_paimon.datasource.write.row_id_update import commit_row_id_update, plan_row_id_update
from pyspark_paimon.errors import (
    CommitConflictError,
    DmlError,
    OptionError,
    SchemaError,
    SchemaMismatchError,
)
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD

TRACKED = {"read.row-tracking-columns": "true"}
EVOLUTION = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


def _rows(ids: list[int], dts: list[str], vs: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int32()), "dt": dts, "v": vs})


@pytest.fixture
def table(tmp_path: Path) -> Table:
    """Partition a: ids 0 (id 1), 1 (id 3) then 3 (id 5); partition b: 2 (id 2) then 4 (id 4)."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", "id int, dt string, v string", partition_keys=["dt"], options=EVOLUTION)
    t.write_arrow(_rows([1, 3, 2], ["a", "a", "b"], ["x1", "x3", "x2"]))
    t.refresh().write_arrow(_rows([5, 4], ["a", "b"], ["x5", "x4"]))
    return t.refresh()


def _by_row_id(t: Table) -> dict[int, dict[str, Any]]:
    rows = t.refresh().scan(read_options=TRACKED).to_arrow().to_pylist()
    return {r.pop("_ROW_ID"): r for r in rows}


def _live_files(t: Table) -> list[Any]:
    t = t.refresh()
    snapshot = t.latest_snapshot()
    assert snapshot is not None
    return [e.file for e in t.store.live_entries(snapshot) if e.kind == KIND_ADD]


def test_an_update_by_row_id_writes_one_file_of_the_column_per_touched_range(table: Table) -> None:
    before = _by_row_id(table)
    ids = {r: before[r]["id"] for r in before}
    update = pa.table({"_ROW_ID": pa.array([1, 4], pa.int64()), "v": ["new1", "new4"]})
    result = table.write_arrow(update, mode="update")
    assert result.snapshot_id == 3 and result.files_added == 2
    after = _by_row_id(table)
    assert {r: (after[r]["id"], after[r]["v"]) for r in after} == {
        0: (ids[0], "x1"),
        1: (ids[1], "new1"),
        2: (ids[2], "x2"),
        3: (ids[3], "x5"),
        4: (ids[4], "new4"),
    }
    # Updated rows carry the update's snapshot; the other rows of a rewritten range do too (the range's newest
    # file is the update's, as Java and pypaimon read it), untouched ranges keep theirs.
    assert {r: after[r]["_SEQUENCE_NUMBER"] for r in after} == {0: 3, 1: 3, 2: 1, 3: 2, 4: 3}
    new = [f for f in _live_files(table) if f.write_cols is not None]
    assert sorted((f.first_row_id, f.row_count, f.write_cols) for f in new) == [(0, 2, ("v",)), (4, 1, ("v",))]
    assert all(f.min_sequence_number == f.max_sequence_number == 3 for f in new)
    assert table.refresh().latest_snapshot().next_row_id == 5  # type: ignore[union-attr]
    assert table.refresh().scan(filter="v = 'new4'").to_arrow().column("id").to_pylist() == [ids[4]]


def test_a_new_column_filled_for_some_existing_rows(table: Table) -> None:
    table.update_schema().add_column("extra", "bigint").commit()
    table.refresh().write_arrow(pa.table({"_ROW_ID": pa.array([0, 3], pa.int64()), "extra": [10, 30]}), mode="update")
    after = _by_row_id(table)
    assert {r: after[r]["extra"] for r in after} == {0: 10, 1: None, 2: None, 3: 30, 4: None}
    assert {r: after[r]["v"] for r in after}[3] == "x5"  # the other columns stay as they were


def test_updates_of_updates_take_the_newest(table: Table) -> None:
    table.write_arrow(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["first"]}), mode="update")
    table.refresh().write_arrow(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "v": ["second"]}), mode="update")
    after = _by_row_id(table)
    assert (after[0]["v"], after[1]["v"]) == ("first", "second")  # the second update copied the first's row 0


def test_an_upsert_updates_matched_keys_and_appends_new_ones(table: Table) -> None:
    before = _by_row_id(table)
    row_of = {(r["dt"], r["id"]): rid for rid, r in before.items()}
    data = _rows([3, 4, 9, 2], ["a", "b", "a", "a"], ["u3", "u4", "n9", "n2a"])
    result = table.write_arrow(data, mode="upsert", on="id")
    assert result.snapshot_id == 3
    after = _by_row_id(table)
    assert after[row_of[("a", 3)]]["v"] == "u3" and after[row_of[("b", 4)]]["v"] == "u4"
    assert after[row_of[("b", 2)]]["v"] == "x2"  # key 2 of partition a is new: partition b's row 2 is untouched
    assert sorted((r["dt"], r["id"], r["v"]) for rid, r in after.items() if rid >= 5) == [
        ("a", 2, "n2a"),
        ("a", 9, "n9"),
    ]
    assert len(after) == 7 and table.refresh().latest_snapshot().next_row_id == 7  # type: ignore[union-attr]


def test_an_upsert_refuses_repeated_keys_and_partial_rows(table: Table) -> None:
    with pytest.raises(DmlError, match="more than once"):
        table.write_arrow(_rows([7, 7], ["a", "a"], ["p", "q"]), mode="upsert", on="id")
    with pytest.raises(SchemaMismatchError, match="lacks column"):
        table.write_arrow(pa.table({"id": pa.array([7], pa.int32()), "v": ["p"]}), mode="upsert", on="id")
    assert table.refresh().latest_snapshot().id == 2  # type: ignore[union-attr]


def test_updates_refuse_unknown_repeated_ids_and_partition_columns(table: Table) -> None:
    with pytest.raises(DmlError, match=r"\[7\]"):
        table.write_arrow(pa.table({"_ROW_ID": pa.array([1, 7], pa.int64()), "v": ["a", "b"]}), mode="update")
    with pytest.raises(DmlError, match="more than once"):
        table.write_arrow(pa.table({"_ROW_ID": pa.array([1, 1], pa.int64()), "v": ["a", "b"]}), mode="update")
    with pytest.raises(SchemaMismatchError, match="partition column"):
        table.write_arrow(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "dt": ["b"]}), mode="update")
    with pytest.raises(SchemaMismatchError, match="_ROW_ID"):
        table.write_arrow(pa.table({"v": ["a"]}), mode="update")
    with pytest.raises(SchemaMismatchError, match="not table columns"):
        table.write_arrow(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "nope": ["a"]}), mode="update")
    with pytest.raises(OptionError, match="on="):
        table.write_arrow(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "v": ["a"]}), mode="update", on="id")
    assert table.refresh().latest_snapshot().id == 2  # type: ignore[union-attr]


def test_a_concurrent_update_of_the_same_range_is_a_conflict(table: Table) -> None:
    store = table.store
    mine = plan_row_id_update(
        store, pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["mine"]}), "test", store.snapshots.latest()
    )
    table.write_arrow(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "v": ["theirs"]}), mode="update")
    written = [f.file_name for m in mine.messages for f in m.new_files]
    with pytest.raises(CommitConflictError, match="run the update again"):
        commit_row_id_update(mine)
    assert table.refresh().latest_snapshot().id == 3  # type: ignore[union-attr]
    names = {p.name for p in Path(table.store.table_path, "dt=a", "bucket-0").iterdir()}
    assert not names & set(written)  # the refused update's files are gone
    # An append in between touches no existing range: no conflict.
    other = plan_row_id_update(
        store, pa.table({"_ROW_ID": pa.array([2], pa.int64()), "v": ["ok"]}), "test", store.snapshots.latest()
    )
    table.refresh().write_arrow(_rows([8], ["a"], ["x8"]))
    assert commit_row_id_update(other) is not None
    assert _by_row_id(table)[2]["v"] == "ok"


def test_a_failure_before_the_commit_leaves_no_snapshot_and_no_file(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    def files() -> set[Path]:
        return {p for p in Path(table.store.table_path).rglob("*.parquet")}

    before = files()
    calls = []
    real = row_id_update._write_range

    def failing(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(*args)

    monkeypatch.setattr(row_id_update, "_write_range", failing)
    with pytest.raises(OSError, match="disk full"):
        table.write_arrow(pa.table({"_ROW_ID": pa.array([0, 4], pa.int64()), "v": ["a", "b"]}), mode="update")
    assert len(calls) == 2  # the first range's file was written, then removed
    assert files() == before
    assert table.refresh().latest_snapshot().id == 2  # type: ignore[union-attr]


def test_a_compaction_after_updates_and_an_update_after_it_keep_every_value(table: Table) -> None:
    table.write_arrow(pa.table({"_ROW_ID": pa.array([1, 4], pa.int64()), "v": ["u1", "u4"]}), mode="update")
    before = _by_row_id(table)
    table.refresh().maintenance.compact(options={"compaction.min.file-num": "2"})
    compacted = [f for f in _live_files(table)]
    assert all(f.write_cols is None for f in compacted)  # the column files were merged into whole rows
    assert {r: v["v"] for r, v in _by_row_id(table).items()} == {r: v["v"] for r, v in before.items()}
    table.refresh().write_arrow(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["again"]}), mode="update")
    after = _by_row_id(table)
    assert {r: v["v"] for r, v in after.items()} == {**{r: v["v"] for r, v in before.items()}, 0: "again"}


def test_what_stays_refused(table: Table, tmp_path: Path) -> None:
    with pytest.raises(DmlError, match="deletion-vectors.enabled"):  # Java needs deletion vectors there
        table.delete("id = 1")
    plain = Catalog(str(tmp_path)).create_table("db.plain", "id int, v string")
    with pytest.raises(OptionError, match="data-evolution.enabled"):
        plain.write_arrow(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["a"]}), mode="update")
    with pytest.raises(OptionError, match="write_arrow"):
        table.write_spark(object(), mode="update")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="mode='update'"):  # never a column of its own (Java master reserves it)
        table.write_arrow(
            pa.table({"_ROW_ID": pa.array([0], pa.int64()), "id": pa.array([1], pa.int32()), "dt": ["a"], "v": ["x"]}),
            merge_schema=True,
        )
    assert table.refresh().schema.field_names == ["id", "dt", "v"]
    with pytest.raises(OptionError, match="data-evolution.row-sidecar.enabled"):
        Catalog(str(tmp_path)).create_table(
            "db.sidecar", "id int", options={**EVOLUTION, "data-evolution.row-sidecar.enabled": "true"}
        )


def test_file_indexes_of_other_columns_do_not_stop_an_update(tmp_path: Path) -> None:
    """The update's file holds one column: it gets that column's index, and none of the others'."""
    options = {**EVOLUTION, "file-index.bloom-filter.columns": "id,v", "file-index.bloom-filter.id.fpp": "0.01"}
    t = Catalog(str(tmp_path)).create_table("db.i", "id int, v string, w bigint", options=options)
    t.write_arrow(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"], "w": [1, 2, 3]}))
    t.refresh().write_arrow(pa.table({"_ROW_ID": pa.array([1], pa.int64()), "w": [20]}), mode="update")
    t.refresh().write_arrow(pa.table({"_ROW_ID": pa.array([2], pa.int64()), "v": ["C"]}), mode="update")
    assert t.refresh().scan(filter="v = 'C'").to_arrow().to_pylist() == [{"id": 3, "v": "C", "w": 3}]
    assert t.refresh().scan(filter="v = 'c'").to_arrow().num_rows == 0
    assert t.refresh().scan(filter="w = 20").to_arrow().column("id").to_pylist() == [2]
    indexed = {f.write_cols: f.embedded_index is not None or bool(f.extra_files) for f in _live_files(t)}
    assert indexed == {None: True, ("w",): False, ("v",): True}


def test_an_upsert_into_an_empty_table_appends_and_null_keys_never_match(tmp_path: Path) -> None:
    t = Catalog(str(tmp_path)).create_table("db.e", "id int, v string", options=EVOLUTION)
    assert t.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "v": ["x"]}), mode="upsert", on=["id"])
    t.refresh().write_arrow(pa.table({"id": pa.array([1, None], pa.int32()), "v": ["y", "z"]}), mode="upsert", on="id")
    t.refresh().write_arrow(pa.table({"id": pa.array([None], pa.int32()), "v": ["n"]}), mode="upsert", on="id")
    assert {r["_ROW_ID"]: (r["id"], r["v"]) for r in t.refresh().scan(read_options=TRACKED).to_arrow().to_pylist()} == {
        0: (1, "y"),
        1: (None, "z"),
        2: (None, "n"),
    }


def test_an_upsert_refused_at_commit_leaves_neither_its_updates_nor_its_new_rows(
    table: Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent update of a range the upsert rewrites lands between its read and its commit."""
    real = key_upsert.plan_row_id_update

    def racing(*args: Any) -> Any:
        planned = real(*args)
        table.refresh().write_arrow(pa.table({"_ROW_ID": pa.array([0], pa.int64()), "v": ["theirs"]}), mode="update")
        return planned

    monkeypatch.setattr(key_upsert, "plan_row_id_update", racing)
    before = {p.name for p in Path(table.store.table_path).rglob("*.parquet")}
    with pytest.raises(CommitConflictError, match="run the update again"):
        table.write_arrow(_rows([3, 9], ["a", "a"], ["u3", "n9"]), mode="upsert", on="id")
    after = {p.name for p in Path(table.store.table_path).rglob("*.parquet")}
    assert table.refresh().latest_snapshot().id == 3  # type: ignore[union-attr]
    assert len(after - before) == 1  # only the racing update's file
    assert sorted(r["v"] for r in _by_row_id(table).values()) == ["theirs", "x2", "x3", "x4", "x5"]
