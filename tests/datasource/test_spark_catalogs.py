"""Spark reads and writes tables by identifier through a JDBC catalog (SQLite) and a REST catalog (the in-suite
server), with the catalog given as options (``Catalog.spark_options()``): a write that creates the table creates
it in the catalog, commits take the JDBC lock or go through the REST ``commit`` endpoint."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.table_ref import resolve_table_ref
from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.catalog.jdbc_lock import JdbcLockCommit
from tests.rest_catalog_server import RestCatalogServer


def rows(df) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r) for r in df.collect())


def test_spark_by_identifier_through_a_jdbc_catalog(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cat = Catalog(
        str(tmp_path / "wh"),
        options={"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path / 'cat.db'}", "lock.enabled": "true"},
    )
    options = cat.spark_options()
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    df.write.format("paimon").options(**options).option("primary-key", "id").option("bucket", "1").mode("append").save(
        "db.t"
    )  # creates the table in the catalog
    assert cat.list_tables("db") == ["t"]
    t = cat.get_table("db.t")
    assert isinstance(t.store.snapshot_commit, JdbcLockCommit) and t.primary_keys == ["id"]
    spark.createDataFrame([(2, "B")], "id long, v string").write.format("paimon").options(**options).mode(
        "append"
    ).save("db.t")
    assert rows(spark.read.format("paimon").options(**options).load("db.t")) == [(1, "a"), (2, "B")]
    cat.rename_table("db.t", "db.t2")
    assert rows(spark.read.format("paimon").options(**options).load("db.t2")) == [(1, "a"), (2, "B")]
    with pytest.raises(Exception, match="does not exist|No Paimon table"):
        spark.read.format("paimon").options(**options).load("db.t").collect()


def test_spark_by_identifier_through_a_rest_catalog(  # type: ignore[no-untyped-def]
    spark, rest_server: RestCatalogServer, rest_options: dict[str, str]
) -> None:
    cat = Catalog("warehouse", options=rest_options)
    t = cat.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    options = cat.spark_options()
    spark.createDataFrame([(1, "A"), (2, "b")], "id long, v string").write.format("paimon").options(**options).mode(
        "append"
    ).save("db.t")
    assert [c["table"] for c in rest_server.state.commits] == ["db.t", "db.t"], "Spark committed through the server"
    assert rows(spark.read.format("paimon").options(**options).load("db.t")) == [(1, "A"), (2, "b")]
    assert rows(spark.read.format("paimon").options(**options).option("scan.snapshot-id", "1").load("db.t")) == [
        (1, "a")
    ]
    with pytest.raises(Exception, match="Create it first"):  # a REST table's location is the server's to choose
        spark.createDataFrame([(1, "x")], "id long, v string").write.format("paimon").options(**options).mode(
            "append"
        ).save("db.missing")
    with pytest.raises(PaimonError, match="need a table named by identifier"):
        resolve_table_ref({"path": t.uri, "metastore": "rest"})
