"""The JDBC catalog over SQLite: Java's SQL layout, the Catalog API over it, and the catalog lock on commits.

pypaimon's ``JdbcCatalog`` sharing the same database both ways is tests/interop/test_catalog_interop.py.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.errors import (
    CatalogError,
    CommitConflictError,
    DatabaseNotEmptyError,
    OptionError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from pyspark_paimon.metadata.catalog.jdbc_lock import JdbcLock, JdbcLockCommit


def jdbc(tmp_path: Path, **extra: str) -> Catalog:
    return Catalog(
        str(tmp_path / "wh"),
        options={"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}", **extra},
    )


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute(sql).fetchall())


def test_tables_and_databases_live_in_javas_sql_tables(tmp_path: Path) -> None:
    cat = jdbc(tmp_path)
    cat.create_database("sales", properties={"owner": "team-a"})
    t = cat.create_table(
        "sales.orders",
        "dt string, id bigint, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    db = tmp_path / "catalog.db"
    assert rows(db, "SELECT catalog_key, database_name, table_name FROM paimon_tables") == [("jdbc", "sales", "orders")]
    props = dict(
        (k, v)
        for _, k, v in rows(db, "SELECT database_name, property_key, property_value FROM paimon_database_properties")
    )
    assert props == {"exists": "true", "owner": "team-a", "location": str(tmp_path / "wh" / "sales.db")}
    table_props = dict(rows(db, "SELECT property_key, property_value FROM paimon_table_properties"))
    assert table_props == {"bucket": "2", "primary-key": "dt,id", "partition": "dt", "bucket-key": "id"}
    assert t.store.table_path == str(tmp_path / "wh" / "sales.db" / "orders")
    assert (tmp_path / "wh" / "sales.db" / "orders" / "schema" / "schema-0").exists()
    assert cat.list_databases() == ["sales"] and cat.list_tables("sales") == ["orders"]
    assert cat.metastore.database_properties("sales")["owner"] == "team-a"


def test_write_read_rename_drop(tmp_path: Path) -> None:
    cat = jdbc(tmp_path)
    t = cat.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    moved = cat.rename_table("db.t", "db.t2")
    assert cat.list_tables("db") == ["t2"] and not cat.table_exists("db.t")
    assert moved.scan().to_arrow().sort_by("id").to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    assert not (tmp_path / "wh" / "db.db" / "t").exists()
    db = tmp_path / "catalog.db"
    assert {r[0] for r in rows(db, "SELECT table_name FROM paimon_table_properties")} == {"t2"}
    with pytest.raises(TableNotFoundError):
        cat.get_table("db.t")
    with pytest.raises(DatabaseNotEmptyError):
        cat.drop_database("db")
    cat.drop_table("db.t2")
    assert cat.list_tables("db") == [] and not (tmp_path / "wh" / "db.db" / "t2").exists()
    assert rows(db, "SELECT * FROM paimon_tables") == [] and rows(db, "SELECT * FROM paimon_table_properties") == []
    cat.drop_database("db")
    assert cat.list_databases() == []


def test_a_table_only_on_disk_is_not_in_the_catalog(tmp_path: Path) -> None:
    Catalog(str(tmp_path / "wh")).create_table("db.stray", "id bigint")
    cat = jdbc(tmp_path)
    assert cat.list_databases() == []
    with pytest.raises(TableNotFoundError, match="not listed until it is registered"):
        cat.get_table("db.stray")
    with pytest.raises(TableAlreadyExistsError):  # its files are there: creating must not overwrite them
        cat.create_table("db.stray", "id bigint")


def test_catalog_keys_keep_catalogs_apart(tmp_path: Path) -> None:
    a = jdbc(tmp_path, **{"catalog-key": "a"})
    b = jdbc(tmp_path, **{"catalog-key": "b"})
    a.create_table("db.t", "id bigint")
    assert a.list_tables("db") == ["t"] and b.list_databases() == []


def test_bad_catalog_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="jdbc:sqlite"):
        Catalog(str(tmp_path), options={"metastore": "jdbc", "uri": "jdbc:mysql://h/db"})
    with pytest.raises(OptionError, match="did you mean 'lock.enabled'"):
        Catalog(str(tmp_path), options={"metastore": "jdbc", "uri": "jdbc:sqlite:x.db", "lock.enable": "true"})
    with pytest.raises(OptionError, match="'metastore' is 'filesystem'"):
        Catalog(str(tmp_path), options={"uri": "jdbc:sqlite:x.db"})


def test_commits_take_the_catalog_lock(tmp_path: Path) -> None:
    cat = jdbc(tmp_path, **{"lock.enabled": "true", "lock-acquire-timeout": "1 s", "lock-check-max-sleep": "50 ms"})
    t = cat.create_table("db.t", "id bigint")
    assert isinstance(t.store.snapshot_commit, JdbcLockCommit)
    # another writer holds the table's lock (its row expires after its own timeout, a minute): our commit waits,
    # then gives up after its 1 s
    holder = JdbcLock(t.store.snapshot_commit.lock.db, "jdbc", acquire_timeout_ms=60_000, max_sleep_ms=50)
    with holder.held("db", "t"):
        with pytest.raises(CommitConflictError, match="Nothing was committed: .*lock 'jdbc.db.t'"):
            t.write_arrow(pa.table({"id": [1]}))
        with pytest.raises(CatalogError, match="lock-acquire-timeout"):  # creating a table takes it too
            cat.create_table("db.t", "id bigint")
    assert t.latest_snapshot() is None
    assert rows(tmp_path / "catalog.db", "SELECT lock_id FROM paimon_distributed_locks") == []
    t.write_arrow(pa.table({"id": [1]}))
    assert t.latest_snapshot().id == 1


def test_a_dead_holders_lock_expires(tmp_path: Path) -> None:
    cat = jdbc(tmp_path, **{"lock.enabled": "true", "lock-acquire-timeout": "1 s"})
    t = cat.create_table("db.t", "id bigint")
    with sqlite3.connect(tmp_path / "catalog.db") as conn:  # left by a writer that died an hour ago
        conn.execute(
            "INSERT INTO paimon_distributed_locks (lock_id, acquired_at, expire_time_seconds) "
            "VALUES ('jdbc.db.t', datetime('now', '-1 hour'), 1)"
        )
    t.write_arrow(pa.table({"id": [1]}))
    assert t.latest_snapshot().id == 1


def test_concurrent_locked_commits_all_land(tmp_path: Path) -> None:
    cat = jdbc(tmp_path, **{"lock.enabled": "true"})
    cat.create_table("db.t", "id bigint")
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            jdbc(tmp_path, **{"lock.enabled": "true"}).get_table("db.t").write_arrow(pa.table({"id": [i]}))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    t = cat.get_table("db.t")
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3]
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4]
