"""Independent Iceberg readers for the tests and benchmarks of the Iceberg-compatible metadata.

DuckDB (1.5.5) with the ``iceberg`` and ``avro`` extensions that the ``duckdb-extension-*`` wheels ship, LOADed
from those files (no network, no extension repository), and PyIceberg (0.12.0) through
``StaticTable.from_metadata``. Both are in the ``test`` extra of pyproject.toml.

DuckDB aborts the whole process (not an exception) on a data file without Parquet field ids, which only Paimon
before 1.0 writes; point it only at tables whose files pyspark-paimon (or Paimon 1.0+) wrote.
"""

from __future__ import annotations

import glob
import os
from typing import Any

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg
import pyarrow as pa
from pyiceberg.table import StaticTable

__all__ = ["duckdb_connection", "duckdb_table", "pyiceberg_table", "current_metadata_file", "rows"]


def _extension_file(module: Any) -> str:
    found = glob.glob(os.path.join(os.path.dirname(module.__file__), "extensions", "*", "*.duckdb_extension"))
    assert len(found) == 1, f"{module.__name__} ships {found}, expected one extension file"
    return found[0]


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the avro and iceberg extensions loaded from the wheels' files."""
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    for module in (duckdb_extension_avro, duckdb_extension_iceberg):
        con.execute(f"LOAD '{_extension_file(module)}'")
    return con


def duckdb_table(con: duckdb.DuckDBPyConnection, location: str, version: str | None = None) -> pa.Table:
    """The table DuckDB's ``iceberg_scan`` reads at ``location`` (the Iceberg table's directory; it finds the
    current metadata through ``metadata/version-hint.text``), or at a given metadata ``version``."""
    target = location if version is None else f"{location}/metadata/v{version}.metadata.json"
    return con.execute(f"SELECT * FROM iceberg_scan('{target}')").to_arrow_table()


def current_metadata_file(location: str) -> str:
    with open(f"{location}/metadata/version-hint.text") as f:
        return f"{location}/metadata/v{f.read().strip()}.metadata.json"


def pyiceberg_table(location: str, snapshot_id: int | None = None) -> pa.Table:
    """The table PyIceberg reads from the current metadata file (or at ``snapshot_id`` of it)."""
    table = StaticTable.from_metadata(current_metadata_file(location))
    return table.scan(snapshot_id=snapshot_id).to_arrow()


def rows(table: pa.Table, key: str | list[str]) -> list[dict[str, Any]]:
    """Rows as dicts in key order, for comparing readers."""
    keys = [key] if isinstance(key, str) else key
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()
