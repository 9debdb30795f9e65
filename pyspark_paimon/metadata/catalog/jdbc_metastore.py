"""Paimon's JDBC catalog (``metastore`` = ``jdbc``): databases and tables listed in SQL tables, files in the
warehouse.

The SQL tables and their layout are :mod:`.jdbc_store`'s; the lock is :mod:`.jdbc_lock`'s. What Java's
``JdbcCatalog`` does, this does in the same order and the same rows: a database is its ``exists`` property row
(and ``location``), a table its ``paimon_tables`` row plus ``schema-0`` at ``<warehouse>/<db>.db/<table>``
(with ``sync-all-properties``, its options and keys copied to ``paimon_table_properties``), a rename updates the
rows and moves the directory, a drop deletes rows and files. Creating and renaming take the catalog lock when
``lock.enabled``, and so does every commit (:class:`~.jdbc_lock.JdbcLockCommit`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Mapping

from pyspark_paimon.errors import (
    DatabaseNotFoundError,
    PaimonError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from pyspark_paimon.metadata.catalog.catalog_options import (
    CATALOG_KEY,
    LOCK_ACQUIRE_TIMEOUT,
    LOCK_CHECK_MAX_SLEEP,
    LOCK_ENABLED,
    SYNC_ALL_PROPERTIES,
    URI,
    CatalogConfig,
)
from pyspark_paimon.metadata.catalog.jdbc_lock import JdbcLock, JdbcLockCommit
from pyspark_paimon.metadata.catalog.jdbc_store import (
    DATABASE_PROPERTIES,
    EXISTS_PROPERTY,
    LOCATION_PROPERTY,
    TABLE_PROPERTIES,
    TABLES,
    VIEWS,
    SqlDatabase,
)
from pyspark_paimon.metadata.catalog.metastore import NewTable, TableLocation, WarehouseMetastore
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import SnapshotCommit


def table_properties(schema: TableSchema) -> dict[str, str]:
    """What Java's JDBC catalog copies into ``paimon_table_properties``: the options, plus ``primary-key``,
    ``partition`` and ``bucket-key`` where the table has them."""
    out = dict(schema.options)
    for key, names in (
        ("primary-key", schema.primary_keys),
        ("partition", schema.partition_keys),
        ("bucket-key", schema.bucket_keys),
    ):
        if names:
            out[key] = ",".join(names)
    return out


class JdbcMetastore(WarehouseMetastore):
    """A JDBC catalog over SQLite (see the module docstring)."""

    def __init__(self, config: CatalogConfig):
        super().__init__(config)
        self.db = SqlDatabase(config.options[URI].strip())
        self.key = config.get(CATALOG_KEY) or "jdbc"
        self.lock_enabled = config.flag(LOCK_ENABLED, default=self.fileio.is_remote)
        self.sync_properties = config.flag(SYNC_ALL_PROPERTIES, default=True)
        self.lock = JdbcLock(
            self.db, self.key, config.millis(LOCK_ACQUIRE_TIMEOUT), config.millis(LOCK_CHECK_MAX_SLEEP)
        )
        self.db.initialize(with_locks=self.lock_enabled)

    def snapshot_commit(self, database: str, table: str) -> SnapshotCommit | None:
        return JdbcLockCommit(self.lock, database, table) if self.lock_enabled else None

    def _locked(self, *names: tuple[str, str]) -> contextlib.ExitStack:
        """The catalog locks of ``names`` (in one order, so two renames cannot deadlock), when enabled."""
        stack = contextlib.ExitStack()
        if self.lock_enabled:
            for database, table in sorted(set(names)):
                stack.enter_context(self.lock.held(database, table))
        return stack

    # -- databases ---------------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        names: set[str] = set()
        for table in (TABLES, DATABASE_PROPERTIES, VIEWS):
            rows = self.db.query(f"SELECT DISTINCT database_name FROM {table} WHERE catalog_key = ?", (self.key,))
            names.update(r[0] for r in rows)
        return sorted(names)

    def database_exists(self, name: str) -> bool:
        return any(
            self.db.query(
                f"SELECT 1 FROM {table} WHERE catalog_key = ? AND database_name = ? LIMIT 1", (self.key, name)
            )
            for table in (TABLES, DATABASE_PROPERTIES, VIEWS)
        )

    def database_properties(self, name: str) -> dict[str, str]:
        """The database's properties as Java returns them (``location`` included, ``exists`` left out)."""
        rows = self.db.query(
            f"SELECT property_key, property_value FROM {DATABASE_PROPERTIES} "
            "WHERE catalog_key = ? AND database_name = ?",
            (self.key, name),
        )
        props = {k: v for k, v in rows if k is not None}
        props.pop(EXISTS_PROPERTY, None)
        props.setdefault(LOCATION_PROPERTY, self.database_path(name))
        return props

    def create_database(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        if self.database_exists(name):
            raise PaimonError(f"Database '{name}' already exists in the JDBC catalog {self.db.uri}.")
        props = {EXISTS_PROPERTY: "true", **{str(k): str(v) for k, v in (properties or {}).items()}}
        props.setdefault(LOCATION_PROPERTY, self.database_path(name))
        self.db.run(
            [
                (
                    f"INSERT INTO {DATABASE_PROPERTIES} (catalog_key, database_name, property_key, property_value) "
                    "VALUES (?, ?, ?, ?)",
                    (self.key, name, k, v),
                )
                for k, v in props.items()
            ]
        )

    def drop_database(self, name: str) -> None:
        if not self.database_exists(name):
            raise DatabaseNotFoundError(f"Database '{name}' does not exist in the JDBC catalog {self.db.uri}.")
        self.db.run(
            [
                (f"DELETE FROM {table} WHERE catalog_key = ? AND database_name = ?", (self.key, name))
                for table in (TABLES, DATABASE_PROPERTIES, TABLE_PROPERTIES, VIEWS)
            ]
        )
        self.fileio.delete_dir(self.database_path(name))

    # -- tables ------------------------------------------------------------------------------------
    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"Database '{database}' does not exist in the JDBC catalog {self.db.uri}.")
        rows = self.db.query(
            f"SELECT table_name FROM {TABLES} WHERE catalog_key = ? AND database_name = ?", (self.key, database)
        )
        return sorted(r[0] for r in rows)

    def table_exists(self, database: str, table: str) -> bool:
        return bool(
            self.db.query(
                f"SELECT 1 FROM {TABLES} WHERE catalog_key = ? AND database_name = ? AND table_name = ? LIMIT 1",
                (self.key, database, table),
            )
        )

    def locate(self, database: str, table: str) -> TableLocation:
        if not self.table_exists(database, table):
            raise TableNotFoundError(
                f"Table '{database}.{table}' does not exist in the JDBC catalog {self.db.uri} (catalog key "
                f"'{self.key}'). Create it through the catalog; a table made elsewhere in the warehouse is not "
                "listed until it is registered."
            )
        return self.location(database, table)

    def create_table(self, database: str, table: str, spec: NewTable) -> TableLocation:
        with self._locked((database, table)):
            if self.table_exists(database, table):
                raise TableAlreadyExistsError(
                    f"Table '{database}.{table}' already exists in the JDBC catalog {self.db.uri}. Use "
                    "ignore_if_exists=True to reuse it, or drop it first."
                )
            schema = self.write_schema(database, table, spec)
            statements = [
                (
                    f"INSERT INTO {TABLES} (catalog_key, database_name, table_name) VALUES (?, ?, ?)",
                    (self.key, database, table),
                )
            ]
            if self.sync_properties:
                statements += self._property_rows(database, table, schema)
            try:
                self.db.run(statements)
            except sqlite3.IntegrityError:
                self.fileio.delete_dir(self.table_path(database, table))
                raise TableAlreadyExistsError(
                    f"Table '{database}.{table}' was created concurrently in the JDBC catalog {self.db.uri}."
                ) from None
            except BaseException:
                self.fileio.delete_dir(self.table_path(database, table))
                raise
        return self.location(database, table)

    def _property_rows(self, database: str, table: str, schema: TableSchema) -> list[tuple[str, tuple]]:
        return [
            (
                f"INSERT INTO {TABLE_PROPERTIES} (catalog_key, database_name, table_name, property_key, "
                "property_value) VALUES (?, ?, ?, ?, ?)",
                (self.key, database, table, k, v),
            )
            for k, v in table_properties(schema).items()
        ]

    def drop_table(self, database: str, table: str) -> None:
        if not self.table_exists(database, table):
            raise TableNotFoundError(f"Table '{database}.{table}' does not exist in the JDBC catalog {self.db.uri}.")
        self.db.run(
            [
                (
                    f"DELETE FROM {name} WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
                    (self.key, database, table),
                )
                for name in (TABLES, TABLE_PROPERTIES)
            ]
        )
        self.fileio.delete_dir(self.table_path(database, table))

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        with self._locked(source, target):
            if not self.table_exists(*source):
                raise TableNotFoundError(
                    f"Table '{'.'.join(source)}' does not exist in the JDBC catalog {self.db.uri}; nothing to rename."
                )
            if not self.database_exists(target[0]):
                raise DatabaseNotFoundError(
                    f"Database '{target[0]}' does not exist in the JDBC catalog {self.db.uri}; create it before "
                    f"renaming '{'.'.join(source)}' into it."
                )
            if self.table_exists(*target):
                raise TableAlreadyExistsError(
                    f"Cannot rename '{'.'.join(source)}' to '{'.'.join(target)}': that table exists in the JDBC "
                    f"catalog {self.db.uri}."
                )
            self.move_table_dir(source, target)
            try:
                self.db.run(
                    [
                        (
                            f"UPDATE {name} SET database_name = ?, table_name = ? WHERE catalog_key = ? AND "
                            "database_name = ? AND table_name = ?",
                            (target[0], target[1], self.key, source[0], source[1]),
                        )
                        for name in (TABLES, TABLE_PROPERTIES)
                    ]
                )
            except BaseException:
                self.move_table_dir(target, source)  # leave the catalog and the files as they were
                raise
