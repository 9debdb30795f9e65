"""pypaimon's ``JdbcCatalog`` and ours share one SQLite JDBC catalog, both ways: databases (with properties),
tables created, written, renamed and dropped by either side are seen by the other."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pyspark_paimon import Catalog
from tests.interop.helpers import OracleBatch, canonical_rows
from tests.oracle import table_spec


def test_pypaimon_and_we_share_a_sqlite_jdbc_catalog(tmp_path: Path, oracle_python: str) -> None:
    options = {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}"}
    warehouse = str(tmp_path / "wh")
    cat = Catalog(warehouse, options=options)
    theirs = {**options, "warehouse": warehouse}

    # ours creates and writes; pypaimon lists, reads, creates and writes its own table, renames ours
    cat.create_database("shop", properties={"owner": "ours"})
    ours = cat.create_table("shop.a", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    ours.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    ours.write_arrow(pa.table({"id": [2], "v": ["B"]}))
    first = OracleBatch(theirs)
    listed = first.catalog(
        [
            {"op": "list_databases"},
            {"op": "get_database", "name": "shop"},
            {"op": "list_tables", "database": "shop"},
            {"op": "table", "identifier": "shop.a"},
        ]
    )
    first.read("a", "shop.a", impls=["pypaimon"])
    first.write(
        "shop.b",
        [[[10, "x"], [11, "y"]]],
        create=table_spec([["id", "BIGINT", False], ["v", "STRING"]], primary_keys=["id"], options={"bucket": "1"}),
    )
    renamed = first.catalog(
        [
            {"op": "rename_table", "source": "shop.a", "target": "shop.a2"},
            {"op": "list_tables", "database": "shop"},
        ]
    )
    first.run()
    dbs, db_props, tables, table = first.results[listed]["results"]
    assert dbs == ["shop"] and tables == ["a"]
    assert db_props["owner"] == "ours" and db_props["location"] == f"{warehouse}/shop.db"
    assert table["primary_keys"] == ["id"] and table["options"]["bucket"] == "1"
    assert canonical_rows(first.tables["a"]["pypaimon"]) == canonical_rows(pa.table({"id": [1, 2], "v": ["a", "B"]}))
    assert first.results[renamed]["results"][1] == ["a2", "b"]

    # we see pypaimon's table and rename; then rename theirs and drop ours
    assert cat.list_tables("shop") == ["a2", "b"] and not cat.table_exists("shop.a")
    assert cat.get_table("shop.a2").scan().to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "B"},
    ]
    b = cat.get_table("shop.b")
    assert b.primary_keys == ["id"] and sorted(b.scan().to_arrow()["id"].to_pylist()) == [10, 11]
    b.write_arrow(pa.table({"id": [12], "v": ["z"]}))
    cat.rename_table("shop.b", "shop.b2")
    cat.drop_table("shop.a2")
    cat.create_database("archive")

    second = OracleBatch(theirs)
    seen = second.catalog(
        [
            {"op": "list_databases"},
            {"op": "list_tables", "database": "shop"},
            {"op": "table", "identifier": "shop.a2", "expect_error": True},
        ]
    )
    second.read("b2", "shop.b2", impls=["pypaimon"])
    dropped = second.catalog(
        [
            {"op": "drop_table", "identifier": "shop.b2"},
            {"op": "drop_database", "name": "archive"},
            {"op": "list_tables", "database": "shop"},
        ]
    )
    second.run()
    all_dbs, shop_tables, gone = second.results[seen]["results"]
    assert all_dbs == ["archive", "shop"] and shop_tables == ["b2"] and gone["error"] == "TableNotExistException"
    assert sorted(second.tables["b2"]["pypaimon"]["id"].to_pylist()) == [10, 11, 12]
    assert second.results[dropped]["results"][2] == []

    assert cat.list_tables("shop") == [] and cat.list_databases() == ["shop"]
    assert not (tmp_path / "wh" / "shop.db" / "b2").exists()
