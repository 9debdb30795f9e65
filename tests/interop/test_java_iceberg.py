"""The Java lane of the Iceberg-compatible metadata (issue 38): Java Paimon writes a table with Iceberg metadata,
we keep writing it, Java keeps writing ours, and DuckDB, PyIceberg, Java and we read the same rows.

Java here is the Paimon 1.0-SNAPSHOT bundle of ``paimon-python-ali`` (September 2024, see
``tests/oracle/java_oracle.py``), whose Iceberg switch is Paimon 0.9's ``metadata.iceberg-compatible`` (metadata
in ``<table>/metadata``, what ``metadata.iceberg.storage = table-location`` means since 1.0; we honour both
spellings). Three limits of that Java shape the test, none of them ours:

* its Avro has no snappy, so the table sets ``avro.codec`` / ``metadata.iceberg.manifest-compression`` = deflate;
* its Iceberg manifests carry no field ids, so no Iceberg reader resolves them: our first commit rebuilds the
  metadata instead of extending it, and readers are asked only after one of our commits;
* its Parquet files carry no field ids: PyIceberg reads them through the name mapping we publish, DuckDB 1.5
  aborts on them, so DuckDB reads once our full compaction has rewritten them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from tests.iceberg_readers import duckdb_connection, duckdb_table, pyiceberg_table, rows
from tests.oracle.java_oracle import JavaOracle

pytestmark = pytest.mark.interop

OPTIONS = {
    "metadata.iceberg-compatible": "true",
    "manifest.compression": "deflate",
    "avro.codec": "deflate",
    "metadata.iceberg.manifest-compression": "deflate",
}


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _java_rows(java: JavaOracle, warehouse: str) -> list[dict[str, Any]]:
    return sorted(java.read(warehouse, "db.t").rows, key=lambda r: r["id"])


def test_java_writes_we_keep_writing_and_every_reader_agrees(java: JavaOracle, tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    java.create(warehouse, "db.t", [["id", "BIGINT", False], ["v", "STRING"]], options=OPTIONS)
    java.write(warehouse, "db.t", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
    java.write(warehouse, "db.t", [{"id": 3, "v": "c"}])
    location = str(tmp_path / "db.db" / "t")
    assert (tmp_path / "db.db" / "t" / "metadata" / "v2.metadata.json").exists()  # Java's own Iceberg metadata

    t = Catalog(warehouse).get_table("db.t")
    t.write_arrow(pa.table({"id": pa.array([4, 5], pa.int64()), "v": ["d", "e"]}))
    ours = rows(t.scan().to_arrow(), "id")
    assert [r["id"] for r in ours] == [1, 2, 3, 4, 5]
    assert rows(pyiceberg_table(location), "id") == ours == _java_rows(java, warehouse)

    t.maintenance.compact(full=True)  # rewrites Java's files (no field ids) into ours
    con = duckdb_connection()
    try:
        assert rows(duckdb_table(con, location), "id") == ours == rows(pyiceberg_table(location), "id")

        java.write(warehouse, "db.t", [{"id": 6, "v": "f"}])  # Java extends the metadata we wrote
        assert (tmp_path / "db.db" / "t" / "metadata" / "v4.metadata.json").exists()
        t.write_arrow(pa.table({"id": pa.array([7], pa.int64()), "v": ["g"]}))
        t.maintenance.compact(full=True)
        ours = rows(t.scan().to_arrow(), "id")
        assert [r["id"] for r in ours] == [1, 2, 3, 4, 5, 6, 7]
        assert rows(duckdb_table(con, location), "id") == ours
        assert rows(pyiceberg_table(location), "id") == ours
        assert _java_rows(java, warehouse) == ours
    finally:
        con.close()
