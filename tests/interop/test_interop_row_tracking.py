"""Row tracking and data evolution across implementations (issue 36): pypaimon 2.1 writes row-tracking and
data-evolution tables -- appends, a column updated by ``_ROW_ID``, a column added and filled for existing rows, an
upsert by key, a delete by row id (deletion vectors) -- and we read exactly its rows, with its ``_ROW_ID`` and
``_SEQUENCE_NUMBER``, through ``t.scan``, ``$row_tracking`` and Spark. We write row-tracking tables (ids assigned at
commit, as Java does) that pypaimon reads with the same ids and appends to without reusing one.

All oracle work runs in one batch: every table is built, then read by pypaimon with the hidden columns projected.
"""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import CompactionError, OptionError
from tests.interop.helpers import OracleBatch, assert_same_table, ours_spark, table_uri

pytestmark = pytest.mark.interop

TRACKED = {"read.row-tracking-columns": "true"}
COLUMNS = [["id", "INT"], ["dt", "STRING"], ["name", "STRING"], ["score", "DOUBLE"]]
FIRST = [[1, "a", "a", 1.0], [2, "a", "b", 2.0], [3, "b", "c", 3.0]]
SECOND = [[4, "a", "d", 4.0], [5, "b", "e", 5.0]]
HIDDEN = ["_ROW_ID", "_SEQUENCE_NUMBER"]


def _evolution(dv: bool) -> dict[str, Any]:
    return {
        "columns": COLUMNS,
        "partition_keys": ["dt"],
        "options": {
            "row-tracking.enabled": "true",
            "data-evolution.enabled": "true",
            "deletion-vectors.enabled": "true" if dv else "false",
        },
    }


def _rows(rows: list[list[Any]]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int32()),
            "dt": [r[1] for r in rows],
            "name": [r[2] for r in rows],
            "score": [r[3] for r in rows],
        }
    )


@pytest.fixture(scope="module")
def batch(module_warehouse: str, oracle_python: str) -> Iterator[OracleBatch]:
    catalog = Catalog(module_warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    ours = catalog.create_table(
        "db.ours",
        "id int, dt string, name string, score double",
        partition_keys=["dt"],
        options={"row-tracking.enabled": "true"},
    )
    ours.write_arrow(_rows(FIRST))
    ours.refresh().write_arrow(_rows(SECOND))
    ours.refresh().write_arrow(_rows([[6, "b", "f", 6.0]]), mode="overwrite", overwrite_partition={"dt": "b"})
    catalog.create_table("db.plain", "id int").write_arrow(pa.table({"id": pa.array([1], pa.int32())}))
    compacted = catalog.create_table("db.compacted", "id int, v string", options={"row-tracking.enabled": "true"})
    for i in range(6):  # compaction.min.file-num = 5
        compacted.write_arrow(pa.table({"id": pa.array([2 * i, 2 * i + 1], pa.int32()), "v": ["a", "b"]}))
    assert compacted.refresh().maintenance.compact(full=True).files_after == 1
    # Our data-evolution writes: an update by row id, a new column filled for existing rows, an upsert by key;
    # then pypaimon updates our table by row id too.
    written = catalog.create_table(
        "db.de_ours",
        "id int, dt string, name string, score double",
        partition_keys=["dt"],
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
    )
    written.write_arrow(_rows(FIRST))
    written.refresh().write_arrow(_rows(SECOND))
    written.refresh().write_arrow(
        pa.table({"_ROW_ID": pa.array([1, 3], pa.int64()), "score": [20.0, 40.0]}), mode="update"
    )
    written.refresh().update_schema().add_column("extra", "string").commit()
    written.refresh().write_arrow(
        pa.table({"_ROW_ID": pa.array([0, 4], pa.int64()), "extra": ["x0", "x4"]}), mode="update"
    )
    upsert = _rows([[2, "a", "B", 22.0], [9, "b", "new", 9.0]]).append_column("extra", pa.array(["u", "n"]))
    written.refresh().write_arrow(upsert, mode="upsert", on="id")
    # Our DML on a data-evolution table: an update and a merge, by _ROW_ID (the merge also appends a new row).
    dml = catalog.create_table(
        "db.de_dml",
        "id int, dt string, name string, score double",
        partition_keys=["dt"],
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"},
    )
    dml.write_arrow(_rows(FIRST))
    dml.refresh().write_arrow(_rows(SECOND))
    dml.refresh().update({"score": "score * 10"}, "id >= 3")
    source = _rows([[2, "a", "M2", 0.0], [7, "b", "M7", 7.0]])
    dml.refresh().merge(source, on=["id", "dt"]).when_matched_update(
        {"name": "source.name"}
    ).when_not_matched_insert_all().execute()
    # Our DML on row-tracking tables (copy-on-write and deletion vectors): a delete, an update, a merge.
    for name, dv in (("rt_dml", "false"), ("rt_dml_dv", "true")):
        t = catalog.create_table(
            f"db.{name}",
            "id int, dt string, name string, score double",
            partition_keys=["dt"],
            options={"row-tracking.enabled": "true", "deletion-vectors.enabled": dv},
        )
        t.write_arrow(_rows(FIRST))
        t.refresh().write_arrow(_rows(SECOND))
        t.refresh().delete("id = 1")
        t.refresh().update({"score": "score + 0.5"}, "id = 4")
        merge_source = _rows([[2, "a", "M2", 2.0], [8, "b", "h", 8.0]])
        t.refresh().merge(merge_source, on="id").when_matched_update(
            {"name": "source.name"}
        ).when_not_matched_insert_all().execute()
    # With deletion vectors a data-evolution table takes deletes too (vectors on each range's oldest file).
    dv = catalog.create_table(
        "db.de_dml_dv",
        "id int, dt string, name string, score double",
        partition_keys=["dt"],
        options={"row-tracking.enabled": "true", "data-evolution.enabled": "true", "deletion-vectors.enabled": "true"},
    )
    dv.write_arrow(_rows(FIRST))
    dv.refresh().write_arrow(_rows(SECOND))
    dv.refresh().update({"name": "upper(name)"}, "id <= 2")
    dv.refresh().delete("id = 1 or id = 5")
    dv_source = _rows([[2, "a", "gone", 0.0], [4, "a", "M4", 44.0], [6, "b", "n6", 6.0]])
    dv.refresh().merge(dv_source, on=["id", "dt"]).when_matched_delete("source.name = 'gone'").when_matched_update(
        {"score": "source.score"}
    ).when_not_matched_insert_all().execute()
    b = OracleBatch(module_warehouse)
    for name in ("rt_dml", "rt_dml_dv", "de_dml_dv"):
        b.read(name, f"db.{name}", impls=("pypaimon",), projection=["id", "dt", "name", "score", *HIDDEN])
        b.read(f"{name}_rust", f"db.{name}", impls=("rust",))
    b.read("de_dml", "db.de_dml", impls=("pypaimon",), projection=["id", "dt", "name", "score", *HIDDEN])
    b.read("de_dml_rust", "db.de_dml", impls=("rust",))
    de_columns = ["id", "dt", "name", "score", "extra", *HIDDEN]
    b.read("de_ours", "db.de_ours", impls=("pypaimon",), projection=de_columns)
    b.read("de_ours_rust", "db.de_ours", impls=("rust",))
    b.row_update("db.de_ours", "update_by_row_id", columns=["name"], rows=[[0, "P0"], [5, "P5"]])
    b.read("de_ours_after", "db.de_ours", impls=("pypaimon",), projection=de_columns)
    b.read("ours", "db.ours", impls=("pypaimon",), projection=["id", "dt", "name", "score", *HIDDEN])
    b.read("ours_rust", "db.ours", impls=("rust",))
    b.read("compacted", "db.compacted", impls=("pypaimon",), projection=["id", "v", *HIDDEN])
    b.read("compacted_rust", "db.compacted", impls=("rust",))
    b.write("db.ours", [{"rows": [[7, "a", "g", 7.0]]}])  # pypaimon appends after our commits
    b.read("ours_after", "db.ours", impls=("pypaimon",), projection=["id", "dt", "name", "score", *HIDDEN])
    # Row tracking alone: ids assigned at commit, no partial files.
    b.write(
        "db.tracked",
        [{"rows": FIRST}, {"rows": SECOND}],
        create={"columns": COLUMNS, "options": {"row-tracking.enabled": "true"}},
    )
    # The "done when": one column updated by row id.
    b.write("db.updated", [{"rows": FIRST}, {"rows": SECOND}], create=_evolution(dv=False))
    b.row_update("db.updated", "update_by_row_id", columns=["score"], rows=[[1, 20.0], [3, 40.0]])
    # Every shape pypaimon writes: updates, a new column for existing rows, an upsert by key, a delete by id.
    b.write("db.evolved", [{"rows": FIRST}, {"rows": SECOND}], create=_evolution(dv=True))
    b.row_update("db.evolved", "update_by_row_id", columns=["score"], rows=[[1, 20.0], [3, 40.0]])
    b.evolve("db.evolved", [{"op": "add_column", "name": "extra", "type": "STRING"}])
    b.row_update("db.evolved", "update_by_row_id", columns=["extra"], rows=[[0, "x0"], [4, "x4"]])
    b.row_update(
        "db.evolved",
        "upsert_by_key",
        keys=["id"],
        rows=[[2, "a", "B", 22.0, "u"], [9, "b", "new", 9.0, "n"]],
    )
    b.row_update("db.evolved", "delete_by_row_id", row_ids=[2])
    for name, columns in (
        ("tracked", ["id", "dt", "name", "score"]),
        ("updated", ["id", "dt", "name", "score"]),
        ("evolved", ["id", "dt", "name", "score", "extra"]),
    ):
        b.read(name, f"db.{name}", impls=("pypaimon",), projection=[*columns, *HIDDEN])
    b.read("evolved_rust", "db.evolved", impls=("rust",))
    b.read("updated_before", "db.updated", {"scan.snapshot-id": "2"}, impls=("pypaimon",), projection=["id", *HIDDEN])
    yield b.run()


def _ours(warehouse: str, name: str, options: dict[str, str] | None = None) -> pa.Table:
    return Table.open(table_uri(warehouse, f"db.{name}")).scan(read_options={**TRACKED, **(options or {})}).to_arrow()


def _by_id(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.select(["_ROW_ID", "id", "score"]).to_pylist())


def test_an_update_by_row_id_reads_exactly_as_pypaimon_wrote_it(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "updated")
    theirs = batch.tables["updated"]["pypaimon"]
    assert_same_table(ours, theirs.select(ours.column_names), "updated")
    # Derived by hand: rows 1 and 3 (ids 2 and 4) took the new scores in snapshot 3, the others kept theirs.
    assert _by_id(ours) == [(0, 1, 1.0), (1, 2, 20.0), (2, 3, 3.0), (3, 4, 40.0), (4, 5, 5.0)]
    # The newest file of each row range: the update's (snapshot 3) for the ranges it touched ([0, 1] and [3] of
    # partition a), the appends' (snapshots 1 and 2) for the others.
    sequences = dict(zip(ours.column("_ROW_ID").to_pylist(), ours.column("_SEQUENCE_NUMBER").to_pylist()))
    assert sequences == {0: 3, 1: 3, 2: 1, 3: 3, 4: 2}
    plain = Table.open(table_uri(module_warehouse, "db.updated")).scan().to_arrow()
    assert plain.column_names == ["id", "dt", "name", "score"]  # no hidden column unless asked
    assert plain.num_rows == 5


def test_time_travel_before_the_update(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "updated", {"scan.snapshot-id": "2"}).select(["id", *HIDDEN])
    assert_same_table(ours, batch.tables["updated_before"]["pypaimon"], "updated at snapshot 2")


def test_every_data_evolution_shape_with_deletion_vectors(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "evolved")
    theirs = batch.tables["evolved"]["pypaimon"]
    assert_same_table(ours, theirs.select(ours.column_names), "evolved")
    rows = {r["_ROW_ID"]: r for r in ours.to_pylist()}
    assert sorted(rows) == [0, 1, 3, 4, 5]  # row 2 deleted by its id, row 5 appended by the upsert
    assert rows[1]["name"] == "B" and rows[1]["score"] == 22.0  # upserted over the earlier update
    assert rows[0]["extra"] == "x0" and rows[3]["extra"] is None  # the new column filled for some rows only
    assert_same_table(batch.tables["evolved_rust"]["rust"], ours.drop_columns(HIDDEN), "evolved read by rust")
    table = Table.open(table_uri(module_warehouse, "db.evolved"))
    assert table.scan().count() == 5
    assert sorted(table.scan(filter="score > 10").to_arrow().column("id").to_pylist()) == [2, 4]
    assert_same_table(table.inspect.row_tracking(), ours, "$row_tracking")


def test_row_tracking_alone(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "tracked")
    assert_same_table(ours, batch.tables["tracked"]["pypaimon"].select(ours.column_names), "tracked")
    assert sorted(ours.column("_ROW_ID").to_pylist()) == [0, 1, 2, 3, 4]
    picked = _ours(module_warehouse, "tracked", {"filter": "_ROW_ID >= 3"})
    assert sorted(picked.column("id").to_pylist()) == sorted(r["id"] for r in ours.to_pylist() if r["_ROW_ID"] >= 3)


def test_pypaimon_reads_the_ids_we_assigned(batch: OracleBatch, module_warehouse: str) -> None:
    table = Table.open(table_uri(module_warehouse, "db.ours"))
    # Our three commits, then pypaimon's append: it must continue from our snapshot's next row id.
    ids = {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in _ours(module_warehouse, "ours").to_pylist()}
    first_a = sorted(ids[i][0] for i in (1, 2))
    assert sorted(v[0] for v in ids.values()) == [*first_a, 3, 5, 6]  # 2 (b, id 3) and 4 (b, id 5) overwritten
    assert ids[6] == (5, 3) and ids[7] == (6, 4) and ids[4][1] == 2
    snapshots = table.inspect.snapshots().to_pylist()
    assert [s["next_row_id"] for s in snapshots] == [3, 5, 6, 7]
    assert_same_table(batch.tables["ours_after"]["pypaimon"], _ours(module_warehouse, "ours"), "ours after pypaimon")
    rust = batch.tables["ours_rust"]["rust"]
    assert_same_table(rust, _ours(module_warehouse, "ours", {"scan.snapshot-id": "3"}).drop_columns(HIDDEN), "rust")
    before = batch.tables["ours"]["pypaimon"]
    assert_same_table(before, _ours(module_warehouse, "ours", {"scan.snapshot-id": "3"}), "ours as we wrote it")


def test_oracles_read_the_ids_our_compaction_kept(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "compacted")
    assert sorted(ours.column("_ROW_ID").to_pylist()) == list(range(12))
    assert dict(zip(ours.column("id").to_pylist(), ours.column("_SEQUENCE_NUMBER").to_pylist()))[11] == 6
    assert_same_table(batch.tables["compacted"]["pypaimon"], ours, "compacted, read by pypaimon")
    assert_same_table(batch.tables["compacted_rust"]["rust"], ours.drop_columns(HIDDEN), "compacted, read by rust")


def test_pypaimon_reads_our_data_evolution_writes(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "de_ours", {"scan.snapshot-id": "5"})  # ours: 2 appends, 2 updates, 1 upsert
    assert_same_table(batch.tables["de_ours"]["pypaimon"].select(ours.column_names), ours, "de_ours by pypaimon")
    assert_same_table(batch.tables["de_ours_rust"]["rust"], ours.drop_columns(HIDDEN), "de_ours by rust")
    rows = {r["_ROW_ID"]: r for r in ours.to_pylist()}
    # Derived by hand: partition a holds ids 0 (id 1), 1 (id 2), 3 (id 4); b holds 2 (id 3), 4 (id 5).
    assert {i: (r["id"], r["name"], r["score"], r["extra"]) for i, r in rows.items()} == {
        0: (1, "a", 1.0, "x0"),
        1: (2, "B", 22.0, "u"),  # updated to 20.0 by row id, then upserted by key
        2: (3, "c", 3.0, None),
        3: (4, "d", 40.0, None),
        4: (5, "e", 5.0, "x4"),
        5: (9, "new", 9.0, "n"),  # a new key: appended with the next id
    }
    assert {i: r["_SEQUENCE_NUMBER"] for i, r in rows.items()} == {0: 5, 1: 5, 2: 1, 3: 3, 4: 4, 5: 5}


def test_oracles_read_our_dml_of_a_data_evolution_table(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "de_dml")
    assert_same_table(batch.tables["de_dml"]["pypaimon"].select(ours.column_names), ours, "de_dml by pypaimon")
    assert_same_table(batch.tables["de_dml_rust"]["rust"], ours.drop_columns(HIDDEN), "de_dml by rust")
    rows = {r["_ROW_ID"]: (r["id"], r["name"], r["score"], r["_SEQUENCE_NUMBER"]) for r in ours.to_pylist()}
    # Derived by hand: partition a holds ids 0 (id 1), 1 (id 2), 3 (id 4); b holds 2 (id 3), 4 (id 5). The update
    # (snapshot 3) rewrites the score of ranges 2-2, 3-3 and 4-4; the merge (4) the name of range 0-1 and appends 5.
    assert rows == {
        0: (1, "a", 1.0, 4),
        1: (2, "M2", 2.0, 4),
        2: (3, "c", 30.0, 3),
        3: (4, "d", 40.0, 3),
        4: (5, "e", 50.0, 3),
        5: (7, "M7", 7.0, 4),
    }


@pytest.mark.parametrize("name", ["rt_dml", "rt_dml_dv"])
def test_oracles_read_our_dml_of_a_row_tracking_table(batch: OracleBatch, module_warehouse: str, name: str) -> None:
    ours = _ours(module_warehouse, name)
    assert_same_table(batch.tables[name]["pypaimon"].select(ours.column_names), ours, f"{name} by pypaimon")
    assert_same_table(batch.tables[f"{name}_rust"]["rust"], ours.drop_columns(HIDDEN), f"{name} by rust")
    rows = {r["_ROW_ID"]: (r["id"], r["name"], r["score"], r["_SEQUENCE_NUMBER"]) for r in ours.to_pylist()}
    # Derived by hand: ids 0 (id 1), 1 (id 2), 3 (id 4) in partition a; 2 (id 3), 4 (id 5) in b. The delete is
    # snapshot 3, the update (id 4) 4, the merge (id 2 updated, id 8 new: id 5) 5; every other row keeps its own.
    assert rows == {
        1: (2, "M2", 2.0, 5),
        2: (3, "c", 3.0, 1),
        3: (4, "d", 4.5, 4),
        4: (5, "e", 5.0, 2),
        5: (8, "h", 8.0, 5),
    }


def test_oracles_read_our_deletes_of_a_data_evolution_table(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "de_dml_dv")
    pypaimon = batch.tables["de_dml_dv"]["pypaimon"].select(ours.column_names)
    assert_same_table(pypaimon, ours, "de_dml_dv by pypaimon")
    assert_same_table(batch.tables["de_dml_dv_rust"]["rust"], ours.drop_columns(HIDDEN), "de_dml_dv by rust")
    rows = {r["_ROW_ID"]: (r["id"], r["name"], r["score"]) for r in ours.to_pylist()}
    # Derived by hand: ids 0 (id 1), 1 (id 2), 3 (id 4) in partition a; 2 (id 3), 4 (id 5) in b. The delete drops
    # row ids 0 and 4, the merge row id 1 (id 2), updates row id 3 and appends id 6 as row id 5.
    assert rows == {2: (3, "c", 3.0), 3: (4, "d", 44.0), 5: (6, "n6", 6.0)}


def test_we_read_pypaimons_update_of_our_table(batch: OracleBatch, module_warehouse: str) -> None:
    ours = _ours(module_warehouse, "de_ours")
    assert_same_table(batch.tables["de_ours_after"]["pypaimon"].select(ours.column_names), ours, "de_ours after")
    names = dict(zip(ours.column("_ROW_ID").to_pylist(), ours.column("name").to_pylist()))
    assert names == {0: "P0", 1: "B", 2: "c", 3: "d", 4: "e", 5: "P5"}


def test_what_stays_refused(batch: OracleBatch, module_warehouse: str) -> None:
    evolved = Table.open(table_uri(module_warehouse, "db.evolved"))
    with pytest.raises(OptionError, match="data-evolution.enabled"):
        evolved.scan(read_options={"incremental-between": "1,3"}).to_arrow()
    with pytest.raises(OptionError, match="data-evolution.enabled"):
        evolved.diff(1, 3)
    tracked = Table.open(table_uri(module_warehouse, "db.tracked"))
    with pytest.raises(CompactionError, match="tracks rows"):
        tracked.maintenance.compact(order_strategy="zorder", order_by=["id", "score"])
    with pytest.raises(OptionError, match="does not track rows"):
        _ours(module_warehouse, "plain")  # no ids to return


def test_spark_reads_the_same_rows_and_ids(spark: Any, batch: OracleBatch, module_warehouse: str) -> None:
    for name in ("updated", "evolved"):
        uri = table_uri(module_warehouse, f"db.{name}")
        expected = _ours(module_warehouse, name)
        assert_same_table(ours_spark(spark, uri, TRACKED), expected, f"spark {name}")
        assert_same_table(ours_spark(spark, uri + "$row_tracking"), expected, f"spark {name}$row_tracking")
        plain = ours_spark(spark, uri)
        assert_same_table(plain, expected.drop_columns(HIDDEN), f"spark {name} without the hidden columns")


def test_spark_writes_get_row_ids(spark: Any, module_warehouse: str) -> None:
    table = Catalog(module_warehouse).create_table(
        "db.spark_written", "id bigint, name string", options={"row-tracking.enabled": "true"}
    )
    uri = table_uri(module_warehouse, "db.spark_written")
    spark.createDataFrame([(1, "x"), (2, "y")], ["id", "name"]).write.format("paimon").mode("append").save(uri)
    spark.createDataFrame([(3, "z")], ["id", "name"]).write.format("paimon").mode("append").save(uri)
    got = _ours(module_warehouse, "spark_written")
    assert sorted(got.column("_ROW_ID").to_pylist()) == [0, 1, 2]
    assert dict(zip(got.column("id").to_pylist(), got.column("_SEQUENCE_NUMBER").to_pylist()))[3] == 2
    assert [s["next_row_id"] for s in table.refresh().inspect.snapshots().to_pylist()] == [2, 3]
