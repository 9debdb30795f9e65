"""What a Spark user sees when something is wrong: Spark wraps our exception, and its text must carry our
explanation (the thing that is wrong and the fix)."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from pyspark.errors import PySparkException

from pyspark_paimon import Catalog
from tests.sparkutil import load
from tests.sparkutil import save as write

pytestmark = pytest.mark.spark


def error_text(action) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(PySparkException) as err:
        action()
    return str(err.value)


@pytest.fixture
def kv_table(spark, warehouse) -> str:
    """A primary-key table (id bigint not null, v string) holding one row."""
    path = f"{warehouse}/db.db/kv"
    write(spark.createDataFrame([(1, "a")], "id long, v string"), path, **{"primary-key": "id", "bucket": "1"})
    return path


def test_missing_table_names_the_path(spark, warehouse) -> None:
    path = f"{warehouse}/db.db/nope"
    text = error_text(lambda: load(spark, path).collect())
    assert f"No Paimon table at {path}" in text
    assert "create the table first" in text


def test_write_with_missing_extra_or_incompatible_columns(spark, kv_table) -> None:
    text = error_text(lambda: write(spark.createDataFrame([(2,)], "id long"), kv_table))
    assert "Missing: ['v']" in text and "Table columns: ['id', 'v']" in text
    text = error_text(lambda: write(spark.createDataFrame([(2, "b", 1)], "id long, v string, x int"), kv_table))
    assert "not in the table: ['x']" in text
    text = error_text(lambda: write(spark.createDataFrame([(2, 3)], "id long, v int"), kv_table))
    assert "Column 'v' is int in the DataFrame but string in the table" in text
    assert "cast('string')" in text
    # A widening cast (int into bigint) is accepted; nothing above was written.
    write(spark.createDataFrame([(2, "b")], "id int, v string"), kv_table)
    assert sorted(tuple(r) for r in load(spark, kv_table).collect()) == [(1, "a"), (2, "b")]


def test_null_in_a_primary_key_column(spark, kv_table) -> None:
    text = error_text(lambda: write(spark.createDataFrame([(None, "x")], "id long, v string"), kv_table))
    assert "Column 'id' is NOT NULL in the table but the data holds 1 NULL value(s)" in text
    assert [tuple(r) for r in load(spark, kv_table).collect()] == [(1, "a")]


def test_a_value_error_in_a_task_is_raised_first_by_the_driver(spark, kv_table) -> None:
    """Each refusing task returns its refusal instead of failing (no task failure, no retry, no executor stack
    traces first); the driver's commit raises our message, and the other tasks' files are deleted."""
    rows = [(i, "x") for i in range(2, 40)] + [(None, "n1"), (None, "n2")]
    df = spark.createDataFrame(rows, "id long, v string").repartition(4)
    text = error_text(lambda: write(df, kv_table))
    assert "Failed to commit" in text and "stage failure" not in text and "Lost task" not in text
    assert "SchemaMismatchError: Column 'id' is NOT NULL in the table but the data holds 1 NULL value(s)" in text
    assert [tuple(r) for r in load(spark, kv_table).collect()] == [(1, "a")]
    written = [f for _, _, files in os.walk(kv_table) for f in files if f.endswith(".parquet")]
    assert len(written) == 1  # the table's first file; the write's files were deleted


def test_unknown_table_option_suggests_the_right_one(spark, warehouse, kv_table) -> None:
    path = f"{warehouse}/db.db/typo"
    df = spark.createDataFrame([(1, "a")], "id long, v string")
    text = error_text(lambda: write(df, path, bukcet="2"))
    assert "Unknown table option 'bukcet' (did you mean 'bucket'?)" in text
    assert not os.path.exists(f"{path}/schema")
    # On an existing table, table-defining options are not silently ignored either.
    assert "Unknown table option 'bukcet'" in error_text(lambda: write(df, kv_table, bukcet="2"))
    text = error_text(lambda: write(df, kv_table, bucket="4"))
    assert "already exists" in text and "'bucket' = '4' (table: '1')" in text
    write(spark.createDataFrame([(2, "b")], "id long, v string"), kv_table, bucket="1", **{"primary-key": "id"})
    assert sorted(tuple(r) for r in load(spark, kv_table).collect()) == [(1, "a"), (2, "b")]


def test_semantic_table_options_are_refused_with_the_key_and_the_fix(spark, warehouse, kv_table) -> None:
    df = spark.createDataFrame([(2, "b")], "id long, v string")
    # A Java-only overwrite switch would silently turn into a whole-table overwrite: refused, pointing at Spark's.
    text = error_text(lambda: write(df, kv_table, mode="overwrite", **{"dynamic-partition-overwrite": "true"}))
    assert "'dynamic-partition-overwrite'" in text and "partitionOverwriteMode" in text
    # A semantic key we do not implement cannot create a table...
    path = f"{warehouse}/db.db/snapshot_ordering"
    text = error_text(lambda: write(df, path, **{"primary-key": "id", "sequence.snapshot-ordering": "true"}))
    assert "Option 'sequence.snapshot-ordering' = 'true'" in text and "Fix: " in text
    assert not os.path.exists(f"{path}/schema")
    # ...and a stored time-travel option would make every read time travel.
    text = error_text(lambda: write(df, kv_table, **{"scan.snapshot-id": "1"}))
    assert "Option 'scan.snapshot-id' = '1'" in text and "read option" in text
    assert sorted(tuple(r) for r in load(spark, kv_table).collect()) == [(1, "a")]


def test_error_if_exists_is_spark_s_refusal(spark, kv_table) -> None:
    df = spark.createDataFrame([(2, "b")], "id long, v string")
    for action in (
        lambda: df.write.format("paimon").mode("error").save(kv_table),
        lambda: df.write.format("paimon").save(kv_table),
    ):
        text = error_text(action)
        assert "UNSUPPORTED_DATA_SOURCE_SAVE_MODE" in text and "Append" in text


def test_system_table_write_is_refused(spark, kv_table) -> None:
    df = spark.createDataFrame([(2, "b")], "id long, v string")
    assert "System table $snapshots is read-only" in error_text(lambda: write(df, kv_table + "$snapshots"))


def test_unknown_and_conflicting_read_options(spark, kv_table) -> None:
    text = error_text(lambda: load(spark, kv_table, **{"scan.snapshot_id": "1"}).collect())
    assert "Unknown read option 'scan.snapshot_id' (did you mean 'scan.snapshot-id'?)" in text
    text = error_text(lambda: load(spark, kv_table, **{"scan.snapshot-id": "1", "scan.tag-name": "t"}).collect())
    assert "Conflicting read options ['scan.snapshot-id', 'scan.tag-name']" in text


def test_corrupt_snapshot_file_is_named(spark, kv_table) -> None:
    snapshot = f"{kv_table}/snapshot/snapshot-1"
    with open(snapshot, "r+") as f:
        f.truncate(20)
    text = error_text(lambda: load(spark, kv_table).collect())
    assert f"{snapshot} is not valid JSON" in text


def test_memory_uri_is_refused_with_the_reason(spark) -> None:
    """memory:// lives in one Python process; Spark's readers and writers run in other processes, which see an
    empty file system. A Spark read or write of a memory:// path (or warehouse) must say so up front instead
    of "No Paimon table", and the Python API keeps working on memory:// in-process."""
    table = Catalog("memory://spark-test-wh").create_table("db.t", "id bigint, v string")
    table.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": ["a"]}))
    assert table.scan().to_arrow().num_rows == 1
    df = spark.createDataFrame([(2, "b")], "id long, v string")
    for action in (
        lambda: load(spark, "memory://spark-test-wh/db.db/t").collect(),
        lambda: spark.read.format("paimon").option("warehouse", "memory://spark-test-wh").load("db.t").collect(),
        lambda: write(df, "memory://spark-test-wh/db.db/t"),
        lambda: df.write.format("paimon").mode("append").option("warehouse", "memory://spark-test-wh").save("db.t"),
    ):
        text = error_text(action)
        assert "memory://" in text and "Spark" in text and "local path or object storage" in text, text
        assert "No Paimon table" not in text, text
    assert table.scan().to_arrow().num_rows == 1, "nothing was written through Spark"
