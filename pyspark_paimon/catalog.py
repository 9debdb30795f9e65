"""``Catalog``: a Paimon filesystem catalog (``<warehouse>/<db>.db/<table>``) on local disk or fsspec storage."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.datasource.system_tables import SYSTEM_TABLES
from pyspark_paimon.errors import (
    DatabaseNotEmptyError,
    DatabaseNotFoundError,
    PaimonError,
    SchemaError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from pyspark_paimon.metadata.identifier import parse_identifier, validate_branch_name
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.schema.options import (
    CHAIN_TABLE_ENABLED,
    SCAN_FALLBACK_DELTA_BRANCH,
    SCAN_FALLBACK_SNAPSHOT_BRANCH,
    validate_table_options,
)
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.arrow import from_arrow_schema
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.model import DataType
from pyspark_paimon.planner.chain.config import chain_options_enabled, validate_chain_definition
from pyspark_paimon.table import Table

DB_SUFFIX = ".db"


def columns_from(schema: pa.Schema | str | Sequence[tuple]) -> list[tuple]:
    """Accept a pyarrow schema, a Spark DDL string, or (name, Paimon type[, comment]) tuples."""
    if isinstance(schema, pa.Schema):
        return list(from_arrow_schema(schema))
    if isinstance(schema, str):
        return list(parse_ddl(schema))
    out = []
    for col in schema:
        if not isinstance(col[1], DataType):
            raise SchemaError(f"Column {col[0]!r}: expected a Paimon DataType, got {col[1]!r}.")
        out.append(tuple(col))
    return out


class Catalog:
    """Databases and tables under one warehouse directory, laid out as Paimon's filesystem catalog.

    >>> cat = Catalog("/data/warehouse")  # or Catalog("s3://bucket/wh", storage_options={"key": ..., "secret": ...})
    >>> t = cat.create_table("default.orders", "id bigint, dt string", partition_keys=["dt"])

    ``storage_options`` are the fsspec file system's arguments (docs/deploying.md)."""

    def __init__(self, warehouse: str, *, storage_options: Mapping[str, Any] | None = None):
        self.fileio, self.warehouse_path = FileIO.for_uri(warehouse, dict(storage_options or {}))
        """The warehouse's file system (``FileIO``) and the root's path in it, for power users."""
        self.warehouse = warehouse
        """The warehouse root as given (a local path or an fsspec URL)."""

    # -- databases -------------------------------------------------------------------------------
    def database_path(self, database: str) -> str:
        """The directory of ``database`` (``<warehouse>/<database>.db``), whether or not it exists."""
        return f"{self.warehouse_path}/{database}{DB_SUFFIX}"

    def list_databases(self) -> list[str]:
        """The databases of the warehouse (``*.db`` directories), by name."""
        return sorted(
            s.name[: -len(DB_SUFFIX)]
            for s in self.fileio.list_status(self.warehouse_path)
            if s.is_dir and s.name.endswith(DB_SUFFIX)
        )

    def create_database(self, name: str, ignore_if_exists: bool = True) -> None:
        """Create database ``name`` (a directory); an existing one is kept, or refused with
        ``ignore_if_exists=False``."""
        path = self.database_path(name)
        if self.fileio.exists(path):
            if ignore_if_exists:
                return
            raise PaimonError(f"Database '{name}' already exists at {path}.")
        self.fileio.mkdirs(path)

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """Delete database ``name`` with everything under it; one that still holds tables is refused unless
        ``cascade=True``."""
        path = self.database_path(name)
        if not self.fileio.exists(path):
            raise DatabaseNotFoundError(f"Database '{name}' does not exist in {self.warehouse}.")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"Database '{name}' still holds tables {tables}; drop them first or pass cascade=True."
            )
        self.fileio.delete_dir(path)

    # -- tables ----------------------------------------------------------------------------------
    def table_path(self, identifier: str) -> str:
        """The directory of table ``db.table`` (what Spark's ``load`` and :meth:`Table.open` take)."""
        db, table, _ = parse_identifier(identifier)
        return f"{self.database_path(db)}/{table}"

    def list_tables(self, database: str) -> list[str]:
        """The tables of ``database`` (directories holding a ``schema`` directory), by name."""
        path = self.database_path(database)
        if not self.fileio.exists(path):
            raise DatabaseNotFoundError(f"Database '{database}' does not exist in {self.warehouse}.")
        return sorted(
            s.name for s in self.fileio.list_status(path) if s.is_dir and self.fileio.exists(f"{s.path}/schema")
        )

    def table_exists(self, identifier: str) -> bool:
        """Whether table ``db.table`` exists (has a schema)."""
        return SchemaManager(self.fileio, self.table_path(identifier)).latest() is not None

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema | str | Sequence[tuple],
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a table and return it; ``schema`` is a pyarrow schema, a Spark DDL string
        (``"id bigint, dt string"``) or (name, Paimon type[, comment]) tuples. ``options`` are table options
        (docs/reference/options.md), validated before anything is written. An existing table is refused unless
        ``ignore_if_exists`` (then it is returned as it is)."""
        db, name, suffix = parse_identifier(identifier)
        if suffix.branch or suffix.system_table:
            raise PaimonError(f"Create the table '{db}.{name}' first; branches are created with t.branches.create.")
        if not self.fileio.exists(self.database_path(db)):
            self.create_database(db)
        path = self.table_path(identifier)
        opts = {k: str(v) for k, v in (options or {}).items()}
        validate_table_options(opts, creating=True, table=identifier)
        if chain_options_enabled(opts):
            validate_chain_definition(list(partition_keys), list(primary_keys), opts, identifier)
        try:
            SchemaManager(self.fileio, path).create_table(
                columns_from(schema), list(partition_keys), list(primary_keys), opts, comment
            )
        except TableAlreadyExistsError:
            if not ignore_if_exists:
                raise TableAlreadyExistsError(
                    f"Table '{identifier}' already exists at {path}. Use ignore_if_exists=True to reuse it, or "
                    "drop it first."
                ) from None
        return Table(FileStore(self.fileio, path), identifier=f"{db}.{name}")

    def create_chain_table(
        self,
        identifier: str,
        schema: pa.Schema | str | Sequence[tuple],
        *,
        partition_keys: Sequence[str],
        primary_keys: Sequence[str],
        options: Mapping[str, Any] | None = None,
        snapshot_branch: str = "snapshot",
        delta_branch: str = "delta",
        comment: str | None = None,
    ) -> Table:
        """Create a chain table in one call: the table with ``chain-table.enabled`` and
        both fallback-branch options, and its empty snapshot and delta branches, all with the same schema.

        ``options`` must include what Paimon requires of a chain table: ``bucket`` > 0, ``sequence.field``,
        ``partition.timestamp-pattern`` and ``partition.timestamp-formatter`` (and optionally
        ``chain-table.chain-partition-keys``, ``chain-table.compact.auto-threshold``). Everything is validated
        before anything is written. Returns the main branch: full (chain) reads go through it; write full
        partitions with ``option('branch', snapshot_branch)`` and increments with ``option('branch', delta_branch)``.
        """
        for b in (snapshot_branch, delta_branch):
            validate_branch_name(b)
        opts = {k: str(v) for k, v in (options or {}).items()}
        opts.update(
            {
                CHAIN_TABLE_ENABLED.key: "true",
                SCAN_FALLBACK_SNAPSHOT_BRANCH.key: snapshot_branch,
                SCAN_FALLBACK_DELTA_BRANCH.key: delta_branch,
            }
        )
        validate_table_options(opts, creating=True, table=identifier)
        validate_chain_definition(list(partition_keys), list(primary_keys), opts, identifier)
        table = self.create_table(
            identifier, schema, partition_keys=partition_keys, primary_keys=primary_keys, options=opts, comment=comment
        )
        try:
            for b in (snapshot_branch, delta_branch):
                table.branches.create(b, empty=True)
        except BaseException:
            self.fileio.delete_dir(table.store.table_path)  # the table was created just now: leave nothing half made
            raise
        return table

    def get_table(self, identifier: str) -> Table:
        """Table ``db.t`` (on ``main``) or ``db.t$branch_b`` (on branch ``b``); TableNotFoundError or
        BranchNotFoundError when there is none."""
        db, name, suffix = parse_identifier(identifier)
        if suffix.system_table:
            system = suffix.system_table
            how = (
                f"read it with get_table('{db}.{name}').inspect.{system}()"
                if system in SYSTEM_TABLES
                else f"t.inspect reads {', '.join(SYSTEM_TABLES)}"
            )
            raise PaimonError(
                f"'{identifier}' is a system table, not a table: {how}, or through Spark: "
                f"spark.read.format('paimon').load(path + '${system}')."
            )
        store = FileStore(self.fileio, self.table_path(identifier), suffix.branch or MAIN_BRANCH)
        table = Table(store, identifier=f"{db}.{name}")
        table.schema  # noqa: B018 - fail now, with a clear message, if there is no such table or branch
        return table

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        """Delete table ``db.table`` with all its files and branches; a missing table raises TableNotFoundError
        unless ``ignore_if_not_exists``."""
        path = self.table_path(identifier)
        if not self.fileio.exists(f"{path}/schema"):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"Table '{identifier}' does not exist at {path}.")
        self.fileio.delete_dir(path)
