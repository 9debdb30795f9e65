"""DML results read by other engines (issue 24): Java Paimon, pypaimon and our Spark source read what
``t.delete`` / ``t.update`` / ``t.merge`` committed -- retractions and upserts on a primary-key table, a
copy-on-write OVERWRITE commit on an append table, and a change on a branch -- and see the same rows we do.
One JVM and one oracle batch for the module."""

from __future__ import annotations

from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from tests.interop.helpers import OracleBatch, canonical_rows, ours_spark, sorted_rows, table_uri
from tests.oracle.java_oracle import JavaOracle

pytestmark = pytest.mark.interop

PK_EXPECTED = [
    {"id": 1, "dt": "a", "v": 11, "s": "X"},
    {"id": 2, "dt": "a", "v": 25, "s": "y"},
    {"id": 7, "dt": "b", "v": 7, "s": "o"},
]
PU_EXPECTED = [{"id": 1, "a": "A1", "b": "b1"}, {"id": 3, "a": "a3", "b": None}]
FIX_EXPECTED = [{"id": 7, "dt": "b", "v": 7, "s": "o"}]  # the branch of PK_EXPECTED without partition a
AP_EXPECTED = [
    {"id": 1, "dt": "a", "v": 10},
    {"id": 2, "dt": "a", "v": 21},
    {"id": 5, "dt": "b", "v": 50},
    {"id": 9, "dt": "c", "v": 900},
]


@pytest.fixture(scope="module")
def warehouse_with_dml(tmp_path_factory: pytest.TempPathFactory) -> str:
    warehouse = str(tmp_path_factory.mktemp("dml-interop") / "warehouse")
    catalog = Catalog(warehouse)
    pk = catalog.create_table(
        "db.pk",
        "id BIGINT, dt STRING, v BIGINT, s STRING",
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    pk.write_arrow(pa.table({"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": [10, 20, 30, 40], "s": list("xyzw")}))
    pk.delete("id = 4")
    pk.update({"v": "v + 1", "s": "upper(s)"}, "id = 1")
    src = pa.table({"id": [2, 3, 7], "dt": ["a", "b", "b"], "v": [5, 6, 7], "s": ["m", "n", "o"]})
    (
        pk.merge(src, on=["id", "dt"])
        .when_matched_delete("source.id = 3")
        .when_matched_update({"v": "target.v + source.v"})
        .when_not_matched_insert_all()
        .execute()
    )

    ap = catalog.create_table("db.ap", "id BIGINT, dt STRING, v BIGINT", partition_keys=["dt"])
    ap.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [10, 20, 30]}))
    ap.write_arrow(pa.table({"id": [4, 5], "dt": ["b", "b"], "v": [40, 50]}))
    ap.delete("id IN (3, 4)")
    ap.update({"v": "v + 1"}, "id = 2")
    ap.merge(pa.table({"id": [9], "dt": ["c"], "v": [900]}), on="id").when_not_matched_insert_all().execute()

    # The same changes on append tables with deletion vectors (unaware and fixed buckets): vectors, not rewrites.
    for name, extra in (("db.apdv", {}), ("db.apdvb", {"bucket": "2", "bucket-key": "id"})):
        dv = catalog.create_table(
            name,
            "id BIGINT, dt STRING, v BIGINT",
            partition_keys=["dt"],
            options={"deletion-vectors.enabled": "true", **extra},
        )
        dv.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [10, 20, 30]}))
        dv.write_arrow(pa.table({"id": [4, 5], "dt": ["b", "b"], "v": [40, 50]}))
        assert dv.delete("id IN (3, 4)").deleted == 2
        dv.update({"v": "v + 1"}, "id = 2")
        dv.merge(pa.table({"id": [9], "dt": ["c"], "v": [900]}), on="id").when_not_matched_insert_all().execute()
        latest = dv.latest_snapshot()
        assert latest is not None and latest.index_manifest  # the changes are deletion vectors

    pu = catalog.create_table(
        "db.pu",
        "id BIGINT, a STRING, b STRING",
        primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    )
    pu.write_arrow(pa.table({"id": [1, 2, 3], "a": ["a1", "a2", "a3"], "b": [None, None, None]}))
    pu.write_arrow(pa.table({"id": [1, 2], "a": [None, None], "b": ["b1", "b2"]}))
    pu.delete("id = 2")
    pu.update({"a": "upper(a)"}, "id = 1")

    pk.branches.create("fix")
    pk.on_branch("fix").delete("dt = 'a'")
    return warehouse


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _ours(warehouse: str, identifier: str) -> list[dict[str, Any]]:
    return canonical_rows(Table.open(table_uri(warehouse, identifier)).scan().to_arrow())


def test_we_read_what_dml_committed(warehouse_with_dml: str) -> None:
    assert _ours(warehouse_with_dml, "db.pk") == sorted_rows(PK_EXPECTED)
    assert _ours(warehouse_with_dml, "db.ap") == sorted_rows(AP_EXPECTED)
    assert _ours(warehouse_with_dml, "db.apdv") == sorted_rows(AP_EXPECTED)
    assert _ours(warehouse_with_dml, "db.apdvb") == sorted_rows(AP_EXPECTED)
    assert _ours(warehouse_with_dml, "db.pu") == sorted_rows(PU_EXPECTED)
    assert _ours(warehouse_with_dml, "db.pk$branch_fix") == FIX_EXPECTED


def test_java_reads_dml_results(warehouse_with_dml: str, java: JavaOracle) -> None:
    for identifier, expected in (
        ("db.pk", PK_EXPECTED),
        ("db.ap", AP_EXPECTED),
        ("db.apdv", AP_EXPECTED),
        ("db.apdvb", AP_EXPECTED),
        ("db.pu", PU_EXPECTED),
    ):
        got = java.read(warehouse_with_dml, identifier)
        assert sorted_rows(got.rows) == sorted_rows(expected), identifier
        assert set(got.kinds) <= {"+I", "+U"}  # Java keeps the winning row's kind: an upsert reads as +U


def test_pypaimon_reads_dml_results(warehouse_with_dml: str, oracle_python: str) -> None:
    batch = OracleBatch(warehouse_with_dml)
    batch.read("pk", "db.pk", impls=("pypaimon",))
    batch.read("ap", "db.ap", impls=("pypaimon",))
    batch.read("apdv", "db.apdv", impls=("pypaimon",))
    batch.read("apdvb", "db.apdvb", impls=("pypaimon",))
    batch.read("fix", "db.pk$branch_fix", impls=("pypaimon",))
    # db.pu is left out: pypaimon refuses to read partial-update.remove-record-on-delete tables (Java reads it).
    batch.run()
    assert canonical_rows(batch.tables["pk"]["pypaimon"]) == sorted_rows(PK_EXPECTED)
    assert canonical_rows(batch.tables["ap"]["pypaimon"]) == sorted_rows(AP_EXPECTED)
    assert canonical_rows(batch.tables["apdv"]["pypaimon"]) == sorted_rows(AP_EXPECTED)
    assert canonical_rows(batch.tables["apdvb"]["pypaimon"]) == sorted_rows(AP_EXPECTED)
    assert canonical_rows(batch.tables["fix"]["pypaimon"]) == FIX_EXPECTED


def test_spark_reads_dml_results(warehouse_with_dml: str, spark: Any) -> None:
    for identifier in ("db.ap", "db.apdv"):
        got = ours_spark(spark, table_uri(warehouse_with_dml, identifier))
        assert canonical_rows(got) == sorted_rows(AP_EXPECTED), identifier


def test_dml_on_tables_java_wrote(tmp_path_factory: pytest.TempPathFactory, java: JavaOracle) -> None:
    """Our DML on Java-written files (a compacted primary-key table, a bucketed append table); Java reads the
    result, then writes on top of it."""
    warehouse = str(tmp_path_factory.mktemp("dml-java") / "warehouse")
    cols = [["id", "BIGINT", False], ["v", "STRING"]]
    java.create(warehouse, "db.jpk", cols, primary_keys=["id"], options={"bucket": 2})
    java.write(warehouse, "db.jpk", [{"id": i, "v": f"v{i}"} for i in range(6)])
    java.compact(warehouse, "db.jpk")
    java.write(warehouse, "db.jpk", [{"id": 1, "v": "new"}])
    java.create(warehouse, "db.jap", cols, options={"bucket": 2, "bucket-key": "id"})
    java.write(warehouse, "db.jap", [{"id": i, "v": f"v{i}"} for i in range(6)])

    jpk = Table.open(table_uri(warehouse, "db.jpk"))
    assert jpk.delete("id IN (0, 5)").deleted == 2
    assert jpk.update({"v": "concat(v, '!')"}, "id <= 2").updated == 2
    jap = Table.open(table_uri(warehouse, "db.jap"))
    assert jap.delete("id = 3").deleted == 1
    assert jap.update({"v": "upper(v)"}, "id = 4").updated == 1

    pk_want = [{"id": 1, "v": "new!"}, {"id": 2, "v": "v2!"}, {"id": 3, "v": "v3"}, {"id": 4, "v": "v4"}]
    ap_want = [{"id": i, "v": v} for i, v in [(0, "v0"), (1, "v1"), (2, "v2"), (4, "V4"), (5, "v5")]]
    assert sorted_rows(java.read(warehouse, "db.jpk").rows) == sorted_rows(pk_want)
    assert sorted_rows(java.read(warehouse, "db.jap").rows) == sorted_rows(ap_want)
    java.write(warehouse, "db.jpk", [{"id": 2, "v": "java"}])
    java.compact(warehouse, "db.jpk")
    pk_want[1] = {"id": 2, "v": "java"}
    assert sorted_rows(java.read(warehouse, "db.jpk").rows) == sorted_rows(pk_want)
    assert _ours(warehouse, "db.jpk") == sorted_rows(pk_want)
