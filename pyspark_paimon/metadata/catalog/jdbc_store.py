"""The SQL side of Paimon's JDBC catalog: its tables, in Java's layout, in a SQLite database.

Paimon's ``JdbcCatalog`` keeps the catalog in SQL tables keyed by ``catalog_key`` (option ``catalog-key``,
default ``jdbc``), so one database can hold several catalogs: ``paimon_tables`` (which tables exist),
``paimon_database_properties`` (databases and their properties, ``exists`` = ``true`` marking a database),
``paimon_table_properties`` (a copy of each table's options and keys, ``sync-all-properties``), ``paimon_views``
and, with ``lock.enabled``, ``paimon_distributed_locks`` (:mod:`.jdbc_lock`). The files of a table live where a
filesystem catalog keeps them, ``<warehouse>/<db>.db/<table>``, so pypaimon's ``JdbcCatalog``, Java's and ours
see the same databases, tables, options and renames.

SQLite through the standard library's ``sqlite3`` is the embedded default: no server, one file. Every call opens
its own short connection (``timeout`` waits for another writer's transaction), so nothing here holds a
connection between calls and the objects stay picklable.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing, contextmanager
from typing import Any, Iterator, Sequence

from pyspark_paimon.errors import CatalogError

TABLES = "paimon_tables"
DATABASE_PROPERTIES = "paimon_database_properties"
TABLE_PROPERTIES = "paimon_table_properties"
VIEWS = "paimon_views"
LOCKS = "paimon_distributed_locks"
#: The property that marks a database as existing (Java's ``DATABASE_EXISTS_PROPERTY``).
EXISTS_PROPERTY = "exists"
#: The property holding a database's directory (Java's ``Catalog.DB_LOCATION_PROP``).
LOCATION_PROPERTY = "location"
_BUSY_TIMEOUT_S = 30.0

# Java's DDL (JdbcUtils), with IF NOT EXISTS: pypaimon creates the same tables the same way.
SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {TABLES} (catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
    "table_name VARCHAR(255) NOT NULL, PRIMARY KEY (catalog_key, database_name, table_name))",
    f"CREATE TABLE IF NOT EXISTS {DATABASE_PROPERTIES} (catalog_key VARCHAR(255) NOT NULL, "
    "database_name VARCHAR(255) NOT NULL, property_key VARCHAR(255), property_value VARCHAR(1000), "
    "PRIMARY KEY (catalog_key, database_name, property_key))",
    f"CREATE TABLE IF NOT EXISTS {TABLE_PROPERTIES} (catalog_key VARCHAR(255) NOT NULL, "
    "database_name VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, property_key VARCHAR(255) NOT NULL, "
    "property_value VARCHAR(1000), PRIMARY KEY (catalog_key, database_name, table_name, property_key))",
    f"CREATE TABLE IF NOT EXISTS {VIEWS} (catalog_key VARCHAR(255) NOT NULL, database_name VARCHAR(255) NOT NULL, "
    "view_name VARCHAR(255) NOT NULL, view_schema TEXT NOT NULL, PRIMARY KEY (catalog_key, database_name, view_name))",
)
LOCK_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {LOCKS} (lock_id VARCHAR(255) NOT NULL, "
    "acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL, expire_time_seconds BIGINT DEFAULT 0 NOT NULL, "
    "PRIMARY KEY (lock_id))"
)


def sqlite_target(uri: str) -> tuple[str, bool]:
    """The ``sqlite3.connect`` target of ``jdbc:sqlite:<file>`` and whether it is a ``file:`` URI."""
    rest = uri[len("jdbc:sqlite:") :]
    return rest, rest.startswith("file:")


class SqlDatabase:
    """The JDBC catalog's SQL database (picklable: only the URI; a connection per call)."""

    def __init__(self, uri: str):
        self.uri = uri

    def __repr__(self) -> str:
        return f"SqlDatabase({self.uri!r})"

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        target, is_uri = sqlite_target(self.uri)
        try:
            conn = sqlite3.connect(target, timeout=_BUSY_TIMEOUT_S, uri=is_uri)
        except sqlite3.Error as e:
            raise CatalogError(f"Cannot open the JDBC catalog database {self.uri}: {e}. Check option 'uri'.") from e
        with closing(conn):
            yield conn

    def run(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        """Execute statements in one transaction; their row counts."""
        with self.connect() as conn:
            try:
                with conn:
                    return [conn.execute(sql, tuple(args)).rowcount for sql, args in statements]
            except sqlite3.IntegrityError:
                raise
            except sqlite3.Error as e:
                raise CatalogError(f"The JDBC catalog database {self.uri} failed: {e}.") from e

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self.connect() as conn:
            try:
                return list(conn.execute(sql, tuple(args)).fetchall())
            except sqlite3.Error as e:
                raise CatalogError(f"The JDBC catalog database {self.uri} failed: {e}.") from e

    def initialize(self, with_locks: bool) -> None:
        """Create the catalog's tables where they are missing (Java and pypaimon do the same)."""
        self.run([(sql, ()) for sql in (*SCHEMA, *((LOCK_SCHEMA,) if with_locks else ()))])
