"""Metastores: what a catalog knows about its databases and tables beyond their files.

Paimon's catalogs share one layout of table files and differ in where the list of databases and tables lives
and in who takes part in a commit: a warehouse directory (``filesystem``: the directories themselves are the
list), SQL tables of a JDBC database (``jdbc``, :mod:`.jdbc_metastore`), or a REST service (``rest``,
:mod:`.rest_metastore`). :class:`Metastore` is that difference as one interface, so the Python API's
``Catalog`` and the Spark source's by-identifier reads and writes work alike over all three; a table is found
as a :class:`TableLocation`: its file system, its directory and the catalog's commit (None: the file system's
own create-if-absent of ``snapshot-N``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Mapping, Sequence

from pyspark_paimon.errors import (
    DatabaseNotFoundError,
    PaimonError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from pyspark_paimon.metadata.catalog.catalog_options import CatalogConfig
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore, SnapshotCommit

DB_SUFFIX = ".db"


@dataclass(frozen=True)
class TableLocation:
    """Where a catalog's table is: ``db.table``, its file system and directory, and the catalog's commit."""

    identifier: str
    fileio: FileIO
    path: str
    snapshot_commit: SnapshotCommit | None = None

    def store(self, branch: str = MAIN_BRANCH) -> FileStore:
        return FileStore(self.fileio, self.path, branch or MAIN_BRANCH, self.snapshot_commit)


@dataclass(frozen=True)
class NewTable:
    """What a catalog needs to create a table: columns as ``(name, Paimon type[, comment])`` tuples, keys,
    table options (strings, already validated) and a comment."""

    columns: Sequence[tuple]
    partition_keys: Sequence[str] = ()
    primary_keys: Sequence[str] = ()
    options: Mapping[str, str] | None = None
    comment: str | None = None


class Metastore(ABC):
    """The databases and tables of one catalog (see the module docstring). Names are plain ``db`` / ``table``
    strings; identifiers with suffixes are resolved by the caller."""

    def __init__(self, config: CatalogConfig):
        self.config = config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    # -- databases ---------------------------------------------------------------------------------
    @abstractmethod
    def list_databases(self) -> list[str]: ...

    @abstractmethod
    def database_exists(self, name: str) -> bool: ...

    @abstractmethod
    def create_database(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        """Create database ``name``; an existing one raises :class:`PaimonError`."""

    @abstractmethod
    def drop_database(self, name: str) -> None:
        """Drop an empty database (the caller drops its tables first)."""

    # -- tables ------------------------------------------------------------------------------------
    @abstractmethod
    def list_tables(self, database: str) -> list[str]: ...

    @abstractmethod
    def table_exists(self, database: str, table: str) -> bool: ...

    @abstractmethod
    def locate(self, database: str, table: str) -> TableLocation:
        """Where table ``database.table`` is; :class:`TableNotFoundError` when the catalog has no such table."""

    @abstractmethod
    def create_table(self, database: str, table: str, spec: NewTable) -> TableLocation:
        """Create the table (``schema-0`` and the catalog's entry); :class:`TableAlreadyExistsError` when it
        exists."""

    @abstractmethod
    def drop_table(self, database: str, table: str) -> None:
        """Delete the table's entry and files; :class:`TableNotFoundError` when there is none."""

    @abstractmethod
    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        """Rename ``(db, table)`` to ``(db2, table2)`` (the catalog entry and, where the catalog keeps tables at
        ``<warehouse>/<db>.db/<table>``, the directory)."""

    def table_path(self, database: str, table: str) -> str:
        """The table's directory (also for a table that does not exist yet, where the catalog decides it)."""
        return self.locate(database, table).path

    def database_path(self, database: str) -> str | None:
        """The database's directory, where the catalog keeps one (None for a REST catalog)."""
        return None


def warehouse_io(config: CatalogConfig) -> tuple[FileIO, str]:
    """The file system and root path of a ``filesystem`` or ``jdbc`` catalog's warehouse."""
    return FileIO.for_uri(config.warehouse, dict(config.storage_options))


class WarehouseMetastore(Metastore):
    """A metastore whose tables live at ``<warehouse>/<db>.db/<table>`` (filesystem and JDBC catalogs)."""

    def __init__(self, config: CatalogConfig):
        super().__init__(config)
        self.fileio, self.warehouse_path = warehouse_io(config)

    def database_path(self, database: str) -> str:
        return f"{self.warehouse_path}/{database}{DB_SUFFIX}"

    def table_path(self, database: str, table: str) -> str:
        return f"{self.database_path(database)}/{table}"

    def snapshot_commit(self, database: str, table: str) -> SnapshotCommit | None:
        """The catalog's commit of this table's snapshots (None: the file system's create-if-absent)."""
        return None

    def location(self, database: str, table: str) -> TableLocation:
        return TableLocation(
            f"{database}.{table}",
            self.fileio,
            self.table_path(database, table),
            self.snapshot_commit(database, table),
        )

    def write_schema(self, database: str, table: str, spec: NewTable) -> TableSchema:
        """``schema-0`` of a new table in its directory (both catalogs write it the same way)."""
        path = self.table_path(database, table)
        try:
            return SchemaManager(self.fileio, path).create_table(
                list(spec.columns),
                list(spec.partition_keys),
                list(spec.primary_keys),
                dict(spec.options or {}),
                spec.comment,
            )
        except TableAlreadyExistsError:
            raise TableAlreadyExistsError(
                f"Table '{database}.{table}' already exists at {path}. Use ignore_if_exists=True to reuse it, or "
                "drop it first."
            ) from None

    def move_table_dir(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        """Move a table's directory to its new name (what Paimon's catalogs do on rename)."""
        src, dst = self.table_path(*source), self.table_path(*target)
        if self.fileio.exists(dst):
            raise TableAlreadyExistsError(
                f"Cannot rename '{'.'.join(source)}' to '{'.'.join(target)}': {dst} already exists. Drop it first or "
                "choose another name."
            )
        if self.fileio.exists(src):
            self.fileio.rename(src, dst)


class FilesystemMetastore(WarehouseMetastore):
    """Paimon's filesystem catalog: databases are ``<db>.db`` directories, tables their subdirectories that
    hold a ``schema`` directory."""

    def list_databases(self) -> list[str]:
        return sorted(
            s.name[: -len(DB_SUFFIX)]
            for s in self.fileio.list_status(self.warehouse_path)
            if s.is_dir and s.name.endswith(DB_SUFFIX)
        )

    def database_exists(self, name: str) -> bool:
        return self.fileio.exists(self.database_path(name))

    def create_database(self, name: str, properties: Mapping[str, str] | None = None) -> None:
        path = self.database_path(name)
        if self.fileio.exists(path):
            raise PaimonError(f"Database '{name}' already exists at {path}.")
        self.fileio.mkdirs(path)

    def drop_database(self, name: str) -> None:
        path = self.database_path(name)
        if not self.fileio.exists(path):
            raise DatabaseNotFoundError(f"Database '{name}' does not exist in {self.config.warehouse}.")
        self.fileio.delete_dir(path)

    def list_tables(self, database: str) -> list[str]:
        path = self.database_path(database)
        if not self.fileio.exists(path):
            raise DatabaseNotFoundError(f"Database '{database}' does not exist in {self.config.warehouse}.")
        return sorted(
            s.name for s in self.fileio.list_status(path) if s.is_dir and self.fileio.exists(f"{s.path}/schema")
        )

    def table_exists(self, database: str, table: str) -> bool:
        return SchemaManager(self.fileio, self.table_path(database, table)).latest() is not None

    def locate(self, database: str, table: str) -> TableLocation:
        return self.location(database, table)

    def create_table(self, database: str, table: str, spec: NewTable) -> TableLocation:
        if not self.database_exists(database):
            self.create_database(database)
        self.write_schema(database, table, spec)
        return self.location(database, table)

    def drop_table(self, database: str, table: str) -> None:
        path = self.table_path(database, table)
        if not self.fileio.exists(f"{path}/schema"):
            raise TableNotFoundError(f"Table '{database}.{table}' does not exist at {path}.")
        self.fileio.delete_dir(path)

    def rename_table(self, source: tuple[str, str], target: tuple[str, str]) -> None:
        if not self.table_exists(*source):
            raise TableNotFoundError(
                f"Table '{'.'.join(source)}' does not exist at {self.table_path(*source)}; nothing to rename."
            )
        if not self.database_exists(target[0]):
            raise DatabaseNotFoundError(
                f"Database '{target[0]}' does not exist in {self.config.warehouse}; create it before renaming "
                f"'{'.'.join(source)}' into it."
            )
        self.move_table_dir(source, target)
