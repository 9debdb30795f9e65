"""Cross-partition upsert (``bucket = -1``, primary key ``k`` without partition key ``p``) across engines.

We write such a table in two commits (keys move to their newest partition); pypaimon, pypaimon-rust and Java read
one row per key. Java then writes into it routed as its ``GlobalIndexAssigner`` routes (its key index bootstrapped
from our files, moved keys deleted from our partitions), we write again from a key index that now includes
Java's placements, and both engines still read one row per key. A ``partial-update`` table checks the other rule:
a key keeps its old partition. One JVM and one oracle batch serve the whole module.
"""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from tests.interop.helpers import OracleBatch, canonical_rows, table_uri
from tests.oracle.java_oracle import JavaOracle

pytestmark = pytest.mark.interop

OURS = "db.xp_ours"
PARTIAL = "db.xp_partial"

Row = tuple[str, int, str]


def _arrow(rows: list[Row]) -> pa.Table:
    return pa.table(
        {"p": [r[0] for r in rows], "k": pa.array([r[1] for r in rows], pa.int32()), "v": [r[2] for r in rows]}
    )


def _ours(warehouse: str, identifier: str) -> list[dict[str, Any]]:
    return canonical_rows(Table.open(table_uri(warehouse, identifier)).scan().to_arrow())


def _moved(*layers: list[Row]) -> list[dict[str, Any]]:
    """Deduplicate: every key once, in the partition of its last row, with that row's value."""
    latest: dict[int, Row] = {}
    for layer in layers:
        for row in layer:
            latest[row[1]] = row
    return canonical_rows(_arrow(list(latest.values())))


OURS_1 = [("a", k, "ours1") for k in range(5)]
OURS_2 = [("b", 1, "ours2"), ("c", 5, "ours2"), ("a", 2, "ours2"), ("c", 3, "x"), ("b", 3, "ours2")]
JAVA_ON_OURS = [("c", 0, "java"), ("a", 1, "java"), ("d", 9, "java"), ("b", 2, "java")]
OURS_3 = [("a", 0, "ours3"), ("e", 9, "ours3"), ("e", 6, "ours3")]
PARTIAL_1 = [("a", 1, "one"), ("a", 2, "one")]
JAVA_PARTIAL = [("b", 1, "java"), ("c", 3, "java")]
OURS_PARTIAL = [("d", 3, "ours"), ("e", 2, "ours")]


@pytest.fixture(scope="module")
def results(module_warehouse: str, oracle_python: str) -> Iterator[dict[str, Any]]:
    wh = module_warehouse
    catalog = Catalog(wh)
    out: dict[str, Any] = {}
    schema = "p string not null, k int not null, v string"
    ours = catalog.create_table(
        OURS, schema, partition_keys=["p"], primary_keys=["k"], options={"dynamic-bucket.target-row-num": "2"}
    )
    ours.write_arrow(_arrow(OURS_1))
    Table.open(table_uri(wh, OURS)).write_arrow(_arrow(OURS_2))
    partial = catalog.create_table(
        PARTIAL, schema, partition_keys=["p"], primary_keys=["k"], options={"merge-engine": "partial-update"}
    )
    partial.write_arrow(_arrow(PARTIAL_1))
    # pypaimon cannot read manifests Java 1.0 writes (no _VALUE_STATS_COLS): the oracles read before Java writes
    batch = OracleBatch(wh)
    batch.read("ours", OURS)
    batch.run()
    out["oracles"] = batch.tables
    with JavaOracle() as java:
        out["java_reads_ours"] = canonical_rows(pa.Table.from_pylist(java.read(wh, OURS).rows))
        java.write_cross_partition(wh, OURS, [list(r) for r in JAVA_ON_OURS])
        out["java_reads_mixed"] = canonical_rows(pa.Table.from_pylist(java.read(wh, OURS).rows))
        out["ours_reads_mixed"] = _ours(wh, OURS)
        Table.open(table_uri(wh, OURS)).write_arrow(_arrow(OURS_3))
        out["java_reads_last"] = canonical_rows(pa.Table.from_pylist(java.read(wh, OURS).rows))
        java.write_cross_partition(wh, PARTIAL, [list(r) for r in JAVA_PARTIAL])
        Table.open(table_uri(wh, PARTIAL)).write_arrow(_arrow(OURS_PARTIAL))
        out["java_reads_partial"] = canonical_rows(pa.Table.from_pylist(java.read(wh, PARTIAL).rows))
    yield out


def test_java_and_oracles_read_one_row_per_key(results: dict[str, Any]) -> None:
    expected = _moved(OURS_1, OURS_2)
    assert results["java_reads_ours"] == expected
    for impl, table in results["oracles"]["ours"].items():
        assert canonical_rows(table) == expected, impl


def test_java_and_we_take_turns_moving_keys(results: dict[str, Any], module_warehouse: str) -> None:
    mixed = _moved(OURS_1, OURS_2, JAVA_ON_OURS)
    assert results["java_reads_mixed"] == mixed and results["ours_reads_mixed"] == mixed
    last = _moved(OURS_1, OURS_2, JAVA_ON_OURS, OURS_3)
    assert results["java_reads_last"] == last
    assert _ours(module_warehouse, OURS) == last


def test_partial_update_keeps_the_first_partition(results: dict[str, Any], module_warehouse: str) -> None:
    expected = canonical_rows(_arrow([("a", 1, "java"), ("a", 2, "ours"), ("c", 3, "ours")]))
    assert results["java_reads_partial"] == expected
    assert _ours(module_warehouse, PARTIAL) == expected
