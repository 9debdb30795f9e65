"""The Java lane of the system tables Java 1.0 has: ``$audit_log``, ``$ro``, ``$buckets``, ``$consumers``,
``$statistics`` and ``$aggregation_fields`` read by Java (``db.t$name`` through its catalog) and by us, on tables
Java wrote (partitioned, several buckets, updates and deletes by row kind, a full compaction with level-0 files
on top, an aggregation table, an append table, a deletion-vector table) and on tables we wrote: the same column
names, Paimon types and rows.

(``$binlog``, ``$table_indexes`` and ``$file_key_ranges`` are newer than Java 1.0: tests/datasource/
test_system_tables_more.py checks them against master's columns and the other tables' rows.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.system_tables import read_system_table, system_table_fields
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.types.model import type_to_sql
from tests.interop.helpers import canonical_rows, sorted_rows, table_uri
from tests.oracle.java_oracle import JavaOracle

pytestmark = pytest.mark.interop

JAVA_1_0 = ("audit_log", "ro", "buckets", "consumers", "statistics", "aggregation_fields")


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _agree(java: JavaOracle, warehouse: str, identifier: str, names: tuple[str, ...] = JAVA_1_0) -> None:
    """Every system table in ``names``: Java's columns (names and Paimon types) are ours, and so are its rows."""
    t = Table.open(table_uri(warehouse, identifier))
    for name in names:
        by_java = java.read(warehouse, f"{identifier}${name}")
        fields = system_table_fields(name, t.store)
        assert [f.name for f in fields] == by_java.names, name
        assert [type_to_sql(f.type) for f in fields] == by_java.types, name
        ours = read_system_table(t.store, name)
        assert canonical_rows(ours) == sorted_rows(by_java.rows), name
        if name == "audit_log":
            assert by_java.rows, "the comparison needs rows"


def test_java_written_primary_key_table(java: JavaOracle, tmp_path: Path) -> None:
    """Partitions x 2 buckets, updates and deletes by row kind, Java's full compaction, then level-0 files
    on top: $ro sees the compacted top level only (stale for the later updates, as in Java)."""
    wh = str(tmp_path)
    ident = "db.pk"
    java.create(
        wh,
        ident,
        [["dt", "STRING", False], ["id", "INT", False], ["v", "STRING"], ["n", "BIGINT"]],
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    java.write(wh, ident, [{"dt": d, "id": i, "v": f"v{i}", "n": i} for d in ("a", "b") for i in range(8)])
    java.write(wh, ident, [{"dt": "a", "id": 1, "v": "u1", "n": 10}, {"dt": "b", "id": 2}], kinds=["+U", "-D"])
    java.compact(wh, ident)
    java.write(wh, ident, [{"dt": "a", "id": 3, "v": "u3", "n": 30}, {"dt": "a", "id": 20, "v": "new"}])
    java.write(wh, ident, [{"dt": "b", "id": 4, "v": "u4", "n": 40}], kinds=["+U"])
    ConsumerManager(Table.open(table_uri(wh, ident)).store).record("reader-1", 3)
    ConsumerManager(Table.open(table_uri(wh, ident)).store).record("a-reader", 5)
    _agree(java, wh, ident)
    ro = canonical_rows(read_system_table(Table.open(table_uri(wh, ident)).store, "ro"))
    assert {"dt": "a", "id": 3, "v": "v3", "n": 3} in ro and len(ro) == 15


def test_java_written_aggregation_and_append_tables(java: JavaOracle, tmp_path: Path) -> None:
    wh = str(tmp_path)
    java.create(
        wh,
        "db.agg",
        [["id", "INT", False], ["total", "BIGINT"], ["last", "STRING"]],
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.total.ignore-retract": "true",
            "fields.last.aggregate-function": "last_non_null_value",
        },
    )
    java.write(wh, "db.agg", [{"id": 1, "total": 1, "last": "x"}, {"id": 2, "total": 2}])
    java.write(wh, "db.agg", [{"id": 1, "total": 5}, {"id": 3, "total": 3, "last": "z"}], kinds=["+U", "+I"])
    _agree(java, wh, "db.agg")
    java.create(wh, "db.log", [["id", "INT", False], ["s", "STRING"]], partition_keys=[], options={"bucket": "-1"})
    java.write(wh, "db.log", [{"id": i, "s": f"s{i}"} for i in range(5)])
    java.write(wh, "db.log", [{"id": i, "s": None} for i in range(5, 7)])
    _agree(java, wh, "db.log")


def test_java_written_deletion_vector_table(java: JavaOracle, tmp_path: Path) -> None:
    wh = str(tmp_path)
    ident = "db.dv"
    java.create(
        wh,
        ident,
        [["id", "INT", False], ["v", "STRING"]],
        primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    java.write(wh, ident, [{"id": i, "v": f"v{i}"} for i in range(6)])
    java.write(wh, ident, [{"id": 1, "v": "u1"}, {"id": 2}], kinds=["+U", "-D"])
    _agree(java, wh, ident)


def test_tables_we_wrote(java: JavaOracle, tmp_path: Path) -> None:
    """Our writes (updates through DML, a full compaction, a later write on top) and a statistics file in Java's
    layout: Java reads the same system tables from them."""
    wh = str(tmp_path)
    t = Catalog(wh).create_table(
        "db.ours",
        "dt string, id int, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "write-only": "true"},
    )
    t.write_arrow(pa.table({"dt": ["a", "a", "b"], "id": pa.array([1, 2, 3], pa.int32()), "v": ["x", "y", "z"]}))
    t.update({"v": "'w'"}, "id = 2")
    t.maintenance.compact(full=True)
    t.write_arrow(pa.table({"dt": ["b"], "id": pa.array([4], pa.int32()), "v": ["n"]}))
    _write_statistics(t)
    _agree(java, wh, "db.ours")
    stats = read_system_table(t.store, "statistics").to_pylist()
    assert stats and stats[0]["mergedRecordCount"] == 4


def _write_statistics(t: Table) -> None:
    """A statistics file as Paimon's ``ANALYZE TABLE`` leaves it, named by the latest snapshot (written here
    by hand: the snapshot file gains its ``statistics`` field, as Java's commit of statistics does)."""
    snapshot = t.latest_snapshot()
    assert snapshot is not None
    name = "stat-0a1b2c3d-0000-4000-8000-000000000000-0"
    stats = {
        "snapshotId": snapshot.id,
        "schemaId": snapshot.schema_id,
        "mergedRecordCount": 4,
        "mergedRecordSize": 1234,
        "colStats": {"id": {"colId": 1, "distinctCount": 4, "min": "1", "max": "4", "nullCount": 0}},
    }
    directory = f"{t.store.table_path}/statistics"
    t.store.fileio.mkdirs(directory)
    t.store.fileio.write_bytes(f"{directory}/{name}", json.dumps(stats).encode())
    path = t.store.snapshots.snapshot_path(snapshot.id)
    data: dict[str, Any] = json.loads(t.store.fileio.read_text(path))
    data["statistics"] = name
    t.store.fileio.write_bytes(path, json.dumps(data).encode())
