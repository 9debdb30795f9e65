"""Open the metastore a :class:`~.catalog_options.CatalogConfig` names, and find a table in it by identifier.

The one place that maps ``metastore`` to its implementation, used by the Python API's ``Catalog`` and by the
Spark source's by-identifier reads and writes (``datasource/table_ref.py``), so both address a catalog's
tables the same way.
"""

from __future__ import annotations

from pyspark_paimon.errors import TableNotFoundError
from pyspark_paimon.metadata.catalog.catalog_options import CatalogConfig
from pyspark_paimon.metadata.catalog.jdbc_metastore import JdbcMetastore
from pyspark_paimon.metadata.catalog.metastore import (
    FilesystemMetastore,
    Metastore,
    TableLocation,
    WarehouseMetastore,
)
from pyspark_paimon.metadata.catalog.rest_metastore import RestMetastore


def open_metastore(config: CatalogConfig) -> Metastore:
    """The metastore of ``config`` (a JDBC catalog creates its SQL tables if missing; a REST catalog asks the
    server for its config)."""
    if config.metastore == "jdbc":
        return JdbcMetastore(config)
    if config.metastore == "rest":
        return RestMetastore(config)
    return FilesystemMetastore(config)


def table_location(metastore: Metastore, database: str, table: str) -> TableLocation:
    """Where ``database.table`` is, or where a write that creates it puts it: a warehouse catalog's tables have
    a fixed directory; a REST table must exist (its server decides where it lives)."""
    if isinstance(metastore, WarehouseMetastore) and not metastore.table_exists(database, table):
        return metastore.location(database, table)
    try:
        return metastore.locate(database, table)
    except TableNotFoundError:
        raise TableNotFoundError(
            f"Table '{database}.{table}' does not exist in the REST catalog {metastore.config.options.get('uri')}. "
            "Create it first (Catalog(..., options={'metastore': 'rest', ...}).create_table), then read or write "
            "it by identifier."
        ) from None
