"""The Spark-native surface: load-time selection (``filter``, ``scan.partitions``), the session's
``partitionOverwriteMode``, Spark's store-assignment casts on write, and catalog tables
(``CREATE TABLE ... USING paimon LOCATION``, ``spark.table``, ``INSERT INTO``)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterator

import pytest
from pyspark.errors import PySparkException

from tests.sparkutil import load, sorted_rows
from tests.sparkutil import save as write

pytestmark = pytest.mark.spark

OVERWRITE_CONF = "spark.sql.sources.partitionOverwriteMode"


def error_text(action: Any) -> str:
    with pytest.raises(PySparkException) as err:
        action()
    return str(err.value)


@pytest.fixture
def events(spark: Any, warehouse: str) -> str:
    """A partitioned primary-key table: (id, dt) keys, 2 buckets, 3 days of 4 rows."""
    path = f"{warehouse}/db.db/events"
    df = spark.createDataFrame([(i, f"d{i % 3}", f"v{i}") for i in range(12)], "id long, dt string, v string")
    write(df, path, **{"primary-key": "id,dt", "partition": "dt", "bucket": "2"})
    return path


# ------------------------------------------------------------------------------------------------ selection
def test_filter_and_scan_partitions_at_load(spark: Any, events: str) -> None:
    df = load(spark, events, filter="id IN (1, 4, 5) OR v = 'v9'")
    assert sorted_rows(df) == [(1, "d1", "v1"), (4, "d1", "v4"), (5, "d2", "v5"), (9, "d0", "v9")]
    # the selection belongs to the loaded relation: a second query on the same DataFrame sees the same rows
    assert df.count() == 4 and df.where("dt = 'd1'").count() == 2
    days = load(spark, events, **{"scan.partitions": "dt=d0;dt=d2", "filter": "id < 6"})
    assert sorted_rows(days) == [(0, "d0", "v0"), (2, "d2", "v2"), (3, "d0", "v3"), (5, "d2", "v5")]
    # a bad filter fails at load(), naming the option, the text and the problem
    text = error_text(lambda: load(spark, events, filter="idd = 1"))
    assert "Read option 'filter' = 'idd = 1': unknown column 'idd'" in text
    text = error_text(lambda: load(spark, events, filter="id = 'one'"))
    assert "'one' is not a BIGINT NOT NULL literal for column 'id'" in text


# ------------------------------------------------------------------------------------------------ overwrite
@pytest.fixture
def no_overwrite_conf(spark: Any) -> Iterator[None]:
    yield
    spark.conf.unset(OVERWRITE_CONF)


def test_overwrite_follows_the_session_partition_overwrite_mode(
    spark: Any, events: str, no_overwrite_conf: None
) -> None:
    new = spark.createDataFrame([(100, "d1", "new")], "id long, dt string, v string")
    spark.conf.set(OVERWRITE_CONF, "dynamic")
    write(new, events, mode="overwrite")  # replaces d1 only
    rows = sorted_rows(load(spark, events))
    assert {r[1] for r in rows} == {"d0", "d1", "d2"} and [r for r in rows if r[1] == "d1"] == [(100, "d1", "new")]
    # the write's own option wins over the session
    write(new, events, mode="overwrite", partitionOverwriteMode="static")
    assert sorted_rows(load(spark, events)) == [(100, "d1", "new")]
    spark.conf.set(OVERWRITE_CONF, "STATIC")  # Spark's default: the whole table
    write(spark.createDataFrame([(7, "d2", "x")], "id long, dt string, v string"), events, mode="overwrite")
    assert sorted_rows(load(spark, events)) == [(7, "d2", "x")]


# ------------------------------------------------------------------------------------------------ casts
def test_store_assignment_casts(spark: Any, warehouse: str) -> None:
    path = f"{warehouse}/db.db/casts"
    write(spark.createDataFrame([(1, 1.0, Decimal("1.00"), 1)], "id long, x double, d decimal(5,2), n int"), path)
    # decimal into double, int into bigint, int into decimal: Spark's INSERT casts these (ANSI store assignment)
    write(spark.sql("SELECT CAST(2 AS INT) AS id, 2 * 0.5 AS x, 7 AS d, CAST(3 AS SMALLINT) AS n"), path)
    assert sorted_rows(load(spark, path)) == [(1, 1.0, Decimal("1.00"), 1), (2, 1.0, Decimal("7.00"), 3)]
    # lossy casts are refused before any task runs, naming the column and the fix
    for sql, column in [
        ("SELECT 3L AS id, 1.0D AS x, 1.00BD AS d, 5L AS n", "n"),
        ("SELECT 3L AS id, 1.0D AS x, 1.00BD AS d, 1.5D AS n", "n"),
        ("SELECT 3L AS id, 1.0D AS x, 1.00BD AS d, '5' AS n", "n"),
    ]:
        text = error_text(lambda sql=sql: write(spark.sql(sql), path))
        assert f"Column '{column}' is" in text and "store assignment" in text and f"col('{column}').cast(" in text
    # a legal but narrowing cast whose value does not fit raises instead of wrapping
    text = error_text(lambda: write(spark.sql("SELECT 3L AS id, 1.0D AS x, 12345.5BD AS d, 1 AS n"), path))
    assert "Column 'd'" in text and "DECIMAL(5, 2)" in text
    assert len(sorted_rows(load(spark, path))) == 2


# ------------------------------------------------------------------------------------------------ catalog tables
def test_create_table_using_paimon_location(spark: Any, events: str) -> None:
    name = "surface_events"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        spark.sql(f"CREATE TABLE {name} USING paimon LOCATION '{events}' OPTIONS (filter 'id < 3')")
        assert sorted_rows(spark.table(name)) == [(0, "d0", "v0"), (1, "d1", "v1"), (2, "d2", "v2")]
        assert spark.sql(f"SELECT count(*) FROM {name} WHERE dt = 'd1'").first()[0] == 1
        # per-query options still apply on top of the remembered ones
        assert sorted_rows(spark.read.option("filter", "id = 1").table(name)) == [(1, "d1", "v1")]
        # Spark passes no location to writes of a catalog table: a clear error, and the ways that work
        text = error_text(lambda: spark.sql(f"INSERT INTO {name} VALUES (50, 'd1', 'x')").collect())
        assert "Spark gave the write no table" in text and "INSERT INTO t WITH ('path'" in text
        spark.sql(f"INSERT INTO {name} WITH ('path' = '{events}') VALUES (50, 'd1', 'x')").collect()
        assert sorted_rows(load(spark, events, filter="id = 50")) == [(50, "d1", "x")]
        # true unknowns are still errors
        text = error_text(
            lambda: spark.sql(f"CREATE TABLE {name}_bad USING paimon LOCATION '{events}' OPTIONS (bukcet '2')")
        )
        assert "Unknown read option 'bukcet'" in text
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
        spark.sql(f"DROP TABLE IF EXISTS {name}_bad")
