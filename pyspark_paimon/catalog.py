"""``Catalog``: a Paimon catalog (filesystem, JDBC or REST; :mod:`pyspark_paimon.metadata.catalog`) and its tables."""

from __future__ import annotations

import json
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
from pyspark_paimon.metadata.catalog.catalog_options import CatalogConfig
from pyspark_paimon.metadata.catalog.connect import open_metastore
from pyspark_paimon.metadata.catalog.metastore import NewTable, WarehouseMetastore
from pyspark_paimon.metadata.identifier import parse_identifier, validate_branch_name
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.schema.options import (
    CHAIN_TABLE_ENABLED,
    SCAN_FALLBACK_DELTA_BRANCH,
    SCAN_FALLBACK_SNAPSHOT_BRANCH,
    validate_table_options,
)
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.types.arrow import from_arrow_schema
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.model import DataType
from pyspark_paimon.planner.chain.config import chain_options_enabled, validate_chain_definition
from pyspark_paimon.table import Table


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
    """Databases and tables of one Paimon catalog: a warehouse directory (the default, Paimon's filesystem
    catalog), a JDBC catalog (SQLite) or a REST catalog, chosen by catalog ``options`` named as Paimon names
    them (docs/catalogs.md)::

        Catalog("/data/warehouse")  # or "s3://bucket/wh", storage_options={"key": ..., "secret": ...}
        Catalog("/data/warehouse", options={"metastore": "jdbc", "uri": "jdbc:sqlite:/data/catalog.db"})
        Catalog("prod", options={"metastore": "rest", "uri": "http://catalog:8080", "token.provider": "bear",
                                 "token": "..."})

    >>> t = cat.create_table("default.orders", "id bigint, dt string", partition_keys=["dt"])

    ``storage_options`` are the fsspec file system's arguments (docs/deploying.md); a REST catalog's vended
    credentials (``data-token.enabled``) are merged over them per table. Spark reads and writes a catalog's
    tables by identifier with the same options: ``spark.read.format('paimon').options(**cat.spark_options())``."""

    def __init__(
        self,
        warehouse: str,
        *,
        options: Mapping[str, Any] | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ):
        self.config = CatalogConfig.of(warehouse, options, storage_options)
        """The catalog as options (``metastore``, ``uri``...; its ``repr`` hides secrets)."""
        self.metastore = open_metastore(self.config)
        """Where the catalog lists its databases and tables (``FilesystemMetastore``, ``JdbcMetastore``,
        ``RestMetastore``), for power users."""
        self.warehouse = warehouse
        """The warehouse as given: a local path or fsspec URL, or the warehouse name of a REST catalog."""
        located = self.metastore if isinstance(self.metastore, WarehouseMetastore) else None
        self.fileio: FileIO | None = located.fileio if located else None
        """The warehouse's file system (``FileIO``; None for a REST catalog, whose tables say where they are)."""
        self.warehouse_path: str | None = located.warehouse_path if located else None
        """The warehouse root's path in :attr:`fileio` (None for a REST catalog)."""

    def __repr__(self) -> str:
        return f"Catalog({self.warehouse!r}, metastore={self.config.metastore!r})"

    def spark_options(self) -> dict[str, str]:
        """This catalog as Spark read/write options, for reads and writes by identifier:
        ``spark.read.format('paimon').options(**cat.spark_options()).load('db.t')``. They include the catalog's
        secrets (a REST token): pass them to Spark, never print them."""
        out = self.config.as_strings()
        for key, value in self.config.storage_options.items():
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (dict, list)):
                text = json.dumps(value)
            else:
                text = str(value)
            out[f"fs.{key}"] = text
        return out

    # -- databases -------------------------------------------------------------------------------
    def database_path(self, database: str) -> str | None:
        """The directory of ``database`` (``<warehouse>/<database>.db``), whether or not it exists; None in a
        REST catalog."""
        return self.metastore.database_path(database)

    def list_databases(self) -> list[str]:
        """The catalog's databases, by name."""
        return self.metastore.list_databases()

    def create_database(
        self, name: str, ignore_if_exists: bool = True, properties: Mapping[str, str] | None = None
    ) -> None:
        """Create database ``name`` (with ``properties`` where the catalog keeps them: JDBC, REST); an existing one
        is kept, or refused with ``ignore_if_exists=False``."""
        if self.metastore.database_exists(name):
            if ignore_if_exists:
                return
            raise PaimonError(f"Database '{name}' already exists in {self.warehouse}.")
        self.metastore.create_database(name, {str(k): str(v) for k, v in (properties or {}).items()})

    def drop_database(self, name: str, cascade: bool = False) -> None:
        """Delete database ``name`` with everything under it; one that still holds tables is refused unless
        ``cascade=True``."""
        if not self.metastore.database_exists(name):
            raise DatabaseNotFoundError(f"Database '{name}' does not exist in {self.warehouse}.")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise DatabaseNotEmptyError(
                f"Database '{name}' still holds tables {tables}; drop them first or pass cascade=True."
            )
        for table in tables:
            self.metastore.drop_table(name, table)
        self.metastore.drop_database(name)

    # -- tables ----------------------------------------------------------------------------------
    def table_path(self, identifier: str) -> str:
        """The directory of table ``db.table`` (what Spark's ``load`` and :meth:`Table.open` take)."""
        db, table, _ = parse_identifier(identifier)
        return self.metastore.table_path(db, table)

    def list_tables(self, database: str) -> list[str]:
        """The tables of ``database``, by name."""
        return self.metastore.list_tables(database)

    def table_exists(self, identifier: str) -> bool:
        """Whether table ``db.table`` exists."""
        db, table, _ = parse_identifier(identifier)
        return self.metastore.table_exists(db, table)

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema | str | Sequence[tuple],
        *,
        partition_keys: Sequence[str] | None = (),
        primary_keys: Sequence[str] | None = (),
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a table and return it; ``schema`` is a pyarrow schema, a Spark DDL string
        (``"id bigint, dt string"``) or (name, Paimon type[, comment]) tuples. ``options`` are table options
        (docs/reference/options.md), validated before anything is written. No ``partition_keys`` /
        ``primary_keys`` (empty or None): an unpartitioned / append table. A missing database is created. An
        existing table is refused unless ``ignore_if_exists`` (then it is returned as it is)."""
        partition_keys, primary_keys = list(partition_keys or ()), list(primary_keys or ())
        db, name, suffix = parse_identifier(identifier)
        if suffix.branch or suffix.system_table:
            raise PaimonError(f"Create the table '{db}.{name}' first; branches are created with t.branches.create.")
        opts = {k: str(v) for k, v in (options or {}).items()}
        validate_table_options(opts, creating=True, table=identifier)
        if chain_options_enabled(opts):
            validate_chain_definition(list(partition_keys), list(primary_keys), opts, identifier)
        spec = NewTable(columns_from(schema), list(partition_keys), list(primary_keys), opts, comment)
        if not self.metastore.database_exists(db):
            self.metastore.create_database(db)
        try:
            location = self.metastore.create_table(db, name, spec)
        except TableAlreadyExistsError:
            if not ignore_if_exists:
                raise
            return self.get_table(f"{db}.{name}")
        return Table(location.store(), identifier=f"{db}.{name}")

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
        if self.config.metastore == "rest":
            raise PaimonError(
                f"Chain table '{identifier}' cannot be made in a REST catalog: its branches are created empty, which "
                "a REST server's branch endpoint does not offer. Use a filesystem or JDBC catalog for chain tables."
            )
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
            self.drop_table(table.identifier, ignore_if_not_exists=True)  # made just now: leave nothing half made
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
        store = self.metastore.locate(db, name).store(suffix.branch or MAIN_BRANCH)
        table = Table(store, identifier=f"{db}.{name}")
        table.schema  # noqa: B018 - fail now, with a clear message, if there is no such table or branch
        return table

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        """Delete table ``db.table`` with all its files and branches; a missing table raises TableNotFoundError
        unless ``ignore_if_not_exists``."""
        db, name, _ = parse_identifier(identifier)
        if not self.metastore.table_exists(db, name):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"Table '{db}.{name}' does not exist in {self.warehouse}.")
        self.metastore.drop_table(db, name)

    def rename_table(self, identifier: str, new_identifier: str) -> Table:
        """Rename table ``db.t`` to ``db2.t2`` (its catalog entry and, in a warehouse catalog, its directory) and
        return it under the new name. The target database must exist and the target name be free."""
        source, target = parse_identifier(identifier), parse_identifier(new_identifier)
        for ident, (_, _, suffix) in ((identifier, source), (new_identifier, target)):
            if suffix.branch or suffix.system_table:
                raise PaimonError(f"Rename tables, not branches or system tables: '{ident}'.")
        self.metastore.rename_table((source[0], source[1]), (target[0], target[1]))
        return self.get_table(f"{target[0]}.{target[1]}")
