"""Reads and writes through Spark (``format("paimon")``), checked by reading the rows back.

Every test uses the one session-scoped SparkSession and tiny data; Spark actions are the expensive part, so
each test does as few of them as it can while still asserting real rows.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any, Iterator

import pyarrow as pa
import pytest
from pyspark import cloudpickle

from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.datasource.spark.source import PaimonDataSource, pushdown_is_safe
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from tests.sparkutil import load, pushdown_forced, sorted_rows
from tests.sparkutil import save as write

pytestmark = pytest.mark.spark


# ------------------------------------------------------------------------------------------------ helpers
def rows(spark: Any, target: str, **options: str) -> list[tuple]:
    """All rows of the table as sorted tuples (None sorts first)."""
    return sorted_rows(load(spark, target, **options))


def table_path(warehouse: str, name: str) -> str:
    return f"{warehouse}/db.db/{name}"


# ------------------------------------------------------------------------------------------------ writes
def test_append_by_path_and_by_identifier(spark, warehouse, catalog) -> None:
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    write(df, "db.t", warehouse=warehouse)  # creates the table under the warehouse
    # Columns are matched by name, so a reordered DataFrame appends fine (by path this time).
    write(spark.createDataFrame([("c", 3)], "v string, id long"), table_path(warehouse, "t"))

    expected = [(1, "a"), (2, "b"), (3, "c")]
    assert rows(spark, "db.t", warehouse=warehouse) == expected
    assert rows(spark, table_path(warehouse, "t")) == expected
    assert catalog.get_table("db.t").scan().to_arrow().num_rows == 3
    assert [s.id for s in catalog.get_table("db.t").snapshots()] == [1, 2]


def test_new_table_from_options_folds_duplicates_and_orders_by_sequence_field(spark, warehouse, catalog) -> None:
    path = table_path(warehouse, "pk")
    first = spark.createDataFrame(
        [(1, "a", 5, "d1"), (1, "b", 3, "d1"), (2, "x", 1, "d2"), (3, "y", 1, "d2")],
        "id long, v string, ts int, dt string",
    )
    write(
        first,
        path,
        **{
            "primary-key": "id,dt",
            "partition": "dt",
            "bucket": "2",
            "sequence.field": "ts",
            "merge-engine": "deduplicate",
            "target-file-size": "64 mb",
        },
    )

    table = catalog.get_table("db.pk")
    assert table.primary_keys == ["id", "dt"]
    assert table.partition_keys == ["dt"]
    assert table.options == {
        "bucket": "2",
        "sequence.field": "ts",
        "merge-engine": "deduplicate",
        "target-file-size": "64 mb",
    }
    # The DataFrame's schema, with the primary key made NOT NULL.
    assert [(f.name, f.type, f.nullable) for f in table.schema.arrow_schema()] == [
        ("id", pa.int64(), False),
        ("v", pa.string(), True),
        ("ts", pa.int32(), True),
        ("dt", pa.string(), False),
    ]

    # Within the first write id 1 kept ts=5 ('a'). Across commits the higher ts wins, not the later commit.
    write(
        spark.createDataFrame([(1, "old", 4, "d1"), (2, "new", 2, "d2")], "id long, v string, ts int, dt string"), path
    )
    assert rows(spark, path) == [(1, "a", 5, "d1"), (2, "new", 2, "d2"), (3, "y", 1, "d2")]


def test_overwrite_whole_table(spark, warehouse) -> None:
    path = table_path(warehouse, "ow")
    schema = "id long, dt string"
    write(spark.createDataFrame([(1, "d1"), (2, "d2")], schema), path, partition="dt")
    write(spark.createDataFrame([(9, "d3")], schema), path, mode="overwrite")
    assert rows(spark, path) == [(9, "d3")]


def test_dynamic_and_static_partition_overwrite(spark, warehouse) -> None:
    path = table_path(warehouse, "parts")
    schema = "id long, v string, dt string"
    write(
        spark.createDataFrame([(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d3")], schema),
        path,
        **{"primary-key": "id,dt", "partition": "dt", "bucket": "1"},
    )

    # Dynamic: only the partitions present in the data (d2) are replaced.
    write(spark.createDataFrame([(20, "x", "d2")], schema), path, mode="overwrite", partitionOverwriteMode="dynamic")
    # Static: exactly the named partition is replaced.
    write(spark.createDataFrame([(10, "y", "d1")], schema), path, mode="overwrite", **{"overwrite-partition": "dt=d1"})
    expected = [(3, "c", "d3"), (10, "y", "d1"), (20, "x", "d2")]
    assert sorted(rows(spark, path)) == expected

    # A static overwrite that also carries rows of another partition is refused, and nothing changes.
    with pytest.raises(Exception) as err:
        write(
            spark.createDataFrame([(11, "z", "d1"), (30, "w", "d3")], schema),
            path,
            mode="overwrite",
            **{"overwrite-partition": "dt=d1"},
        )
    assert "Static overwrite of partition {'dt': 'd1'} got rows for partition {'dt': 'd3'}" in str(err.value)
    assert sorted(rows(spark, path)) == expected


def test_rowkind_field_updates_and_deletes(spark, warehouse) -> None:
    path = table_path(warehouse, "cdc")
    schema = "id long, v string, op string"
    write(
        spark.createDataFrame([(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")], schema),
        path,
        **{"primary-key": "id", "bucket": "1", "rowkind.field": "op"},
    )
    write(spark.createDataFrame([(1, "a", "-U"), (1, "A", "+U"), (2, "b", "-D"), (4, "d", "+I")], schema), path)
    assert rows(spark, path) == [(1, "A", "+U"), (3, "c", "+I"), (4, "d", "+I")]


def test_partial_update_and_aggregation_merge_engines(spark, warehouse) -> None:
    pu = table_path(warehouse, "pu")
    write(
        spark.createDataFrame([(1, "a", None), (2, "b", 2)], "id long, name string, n int"),
        pu,
        **{"primary-key": "id", "bucket": "1", "merge-engine": "partial-update"},
    )
    write(spark.createDataFrame([(1, None, 7), (2, "B", None)], "id long, name string, n int"), pu)
    assert rows(spark, pu) == [(1, "a", 7), (2, "B", 2)]

    agg = table_path(warehouse, "agg")
    # Duplicate keys inside one write are summed too.
    write(
        spark.createDataFrame([(1, 10), (1, 5), (2, 1)], "id long, total long"),
        agg,
        **{"primary-key": "id", "bucket": "1", "merge-engine": "aggregation", "fields.total.aggregate-function": "sum"},
    )
    write(spark.createDataFrame([(1, 100), (3, 3)], "id long, total long"), agg)
    assert rows(spark, agg) == [(1, 115), (2, 1), (3, 3)]


def test_append_tables_and_many_tasks_writing_one_bucket(spark, warehouse, catalog) -> None:
    data = spark.range(60).selectExpr("id", "cast(id % 3 as string) AS k").repartition(4)

    unaware = table_path(warehouse, "app")  # bucket -1 (the default for append tables)
    write(data, unaware)
    fixed = table_path(warehouse, "appb")
    write(data, fixed, **{"bucket": "2", "bucket-key": "k"})
    pk = table_path(warehouse, "pkb")  # 4 tasks all writing rows of bucket 0 in one job
    write(data, pk, **{"primary-key": "id", "bucket": "1"})

    expected = [(i, str(i % 3)) for i in range(60)]
    assert rows(spark, unaware) == expected
    assert rows(spark, fixed) == expected
    assert rows(spark, pk) == expected
    # Every task wrote its own files: 4 tasks -> 4 files in the single bucket of the PK table.
    assert len(catalog.get_table("db.pkb").scan().read_job().splits[0].files) == 4
    # bucket-key routes rows by k: every k value lives in exactly one of the two buckets.
    job = catalog.get_table("db.appb").scan().read_job()
    ks_by_bucket: dict[int, set] = {}
    for split in job.splits:
        ks = pa.Table.from_batches(list(job.read_batches([split]))).column("k").to_pylist()
        ks_by_bucket.setdefault(split.bucket, set()).update(ks)
    assert set(ks_by_bucket) <= {0, 1}
    assert sorted(k for ks in ks_by_bucket.values() for k in ks) == ["0", "1", "2"]


ALL_TYPES = (
    "b boolean, t tinyint, s smallint, i int, l bigint, f float, d double, d1 decimal(10,2), "
    "d2 decimal(38,10), str string, bin binary, dte date, ts timestamp, tsn timestamp_ntz, "
    "arr array<int>, m map<string,int>, st struct<x:int,y:string>"
)


def test_all_types_round_trip_with_nulls(spark, warehouse) -> None:
    utc = dt.timezone.utc
    data = [
        (
            True,
            1,
            2,
            3,
            4,
            1.5,
            2.5,
            Decimal("12.34"),
            Decimal("1234567890123456789012345678.0123456789"),
            "héllo",
            b"\x00\x01",
            dt.date(2025, 8, 11),
            dt.datetime(2025, 8, 11, 12, 30, 45, 123456, tzinfo=utc),
            dt.datetime(2025, 8, 11, 1, 2, 3, 4),
            [1, None, 3],
            {"a": 1, "b": None},
            (7, "y"),
        ),
        (
            False,
            -128,
            32767,
            -2147483648,
            9223372036854775807,
            -3.25,
            1e300,
            Decimal("-99999999.99"),
            Decimal("-9999999999999999999999999999.9999999999"),
            "",
            b"",
            dt.date(1969, 12, 31),
            dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=utc),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            [],
            {},
            (None, None),
        ),
        (None,) * 17,
    ]
    df = spark.createDataFrame(data, ALL_TYPES)
    path = table_path(warehouse, "types")
    write(df, path)

    back = load(spark, path)
    assert [(f.name, f.dataType) for f in back.schema.fields] == [(f.name, f.dataType) for f in df.schema.fields]
    assert back.orderBy("i").collect() == df.orderBy("i").collect()


def test_double_prices_go_into_a_decimal_column_as_their_decimals(spark, warehouse, catalog) -> None:
    """A DOUBLE DataFrame column into DECIMAL(12, 2): each price is written as the two-decimal number it was typed
    as (issue 32: about one in seven was refused); 1.005, which the column would round, is refused."""
    catalog.create_table("db.prices", "id bigint, amount decimal(12, 2)")
    rng = random.Random(320)
    prices = [round(rng.uniform(0, 100_000), 2) for _ in range(300)]
    write(spark.createDataFrame(list(enumerate(prices)), "id long, amount double"), table_path(warehouse, "prices"))
    got = dict(rows(spark, table_path(warehouse, "prices")))
    assert [got[i] for i in range(300)] == [Decimal(f"{p:.2f}") for p in prices]
    bad = spark.createDataFrame([(1000, 1.005)], "id long, amount double")
    with pytest.raises(Exception) as err:
        write(bad, table_path(warehouse, "prices"))
    assert "holds 1.005, which a DECIMAL(12, 2) column cannot store exactly" in str(err.value)
    assert len(got) == 300 == len(rows(spark, table_path(warehouse, "prices")))


def test_nested_nullability_of_written_dataframes(spark, warehouse, catalog) -> None:
    """Spark marks literal arrays/maps/structs' values NOT NULL; such data fits nullable table fields, while
    possibly-NULL nested values are refused for NOT NULL table fields (Arrow would not check them)."""
    literal = spark.sql("SELECT array(1, 2) AS arr, map('k', 1) AS m, named_struct('x', 1, 'y', 'a') AS st")
    catalog.create_table("db.nested", "arr array<int>, m map<string,int>, st struct<x:int,y:string>")
    write(literal, "db.nested", warehouse=warehouse)
    assert [r.asDict(recursive=True) for r in load(spark, "db.nested", warehouse=warehouse).collect()] == [
        {"arr": [1, 2], "m": {"k": 1}, "st": {"x": 1, "y": "a"}}
    ]

    strict = table_path(warehouse, "strict")
    write(literal.select("arr"), strict)  # a new table keeps the DataFrame's nested NOT NULL
    assert not catalog.get_table("db.strict").schema.field("arr").type.element.nullable
    with pytest.raises(Exception) as err:
        write(spark.sql("SELECT array(3, NULL) AS arr"), strict)
    assert "Column 'arr' is array<int> with nested values that may be NULL" in str(err.value)


def test_timestamps_in_a_non_utc_session_time_zone(spark, warehouse, catalog) -> None:
    path = table_path(warehouse, "tz")
    query = "SELECT timestamp'2025-08-11 12:00:00' AS ts, timestamp_ntz'2025-08-11 12:00:00' AS tsn"
    as_text = ["cast(ts AS string)", "cast(tsn AS string)"]
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        write(spark.sql(query), path)
        assert [tuple(r) for r in load(spark, path).selectExpr(*as_text).collect()] == [
            ("2025-08-11 12:00:00", "2025-08-11 12:00:00")
        ]
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    # The LTZ value is an instant (12:00 in Los Angeles = 19:00 UTC); the NTZ value is wall-clock time.
    assert [tuple(r) for r in load(spark, path).selectExpr(*as_text).collect()] == [
        ("2025-08-11 19:00:00", "2025-08-11 12:00:00")
    ]
    stored = catalog.get_table("db.tz").scan().to_arrow().to_pylist()[0]
    assert stored["ts"] == dt.datetime(2025, 8, 11, 19, 0, tzinfo=dt.timezone.utc)
    assert stored["tsn"] == dt.datetime(2025, 8, 11, 12, 0)


# ------------------------------------------------------------------------------------------------ reads
def test_time_travel_by_snapshot_id_and_version_as_of(spark, warehouse, catalog) -> None:
    path = table_path(warehouse, "tt")
    write(spark.createDataFrame([(1, "a")], "id long, v string"), path)
    catalog.get_table("db.tt").update_schema().add_column("n", "int").commit()
    write(spark.createDataFrame([(2, "b", 7)], "id long, v string, n int"), path)

    old = load(spark, path, **{"scan.snapshot-id": "1"})
    assert old.columns == ["id", "v"]  # the schema the snapshot was written with
    assert [tuple(r) for r in old.collect()] == [(1, "a")]
    assert rows(spark, path, versionAsOf="2") == [(1, "a", None), (2, "b", 7)]


def test_branch_suffix(spark, warehouse, catalog) -> None:
    path = table_path(warehouse, "br")
    write(spark.createDataFrame([(1, "a")], "id long, v string"), path)
    with pytest.raises(Exception) as err:
        load(spark, path + "$branch_nope").collect()
    assert "Branch 'nope' does not exist in table" in str(err.value)

    catalog.get_table("db.br").branches.create("dev")
    write(spark.createDataFrame([(2, "b")], "id long, v string"), path + "$branch_dev")
    assert rows(spark, path + "$branch_dev") == [(1, "a"), (2, "b")]
    assert rows(spark, path) == [(1, "a")]


def test_user_schema_selects_columns(spark, warehouse) -> None:
    path = table_path(warehouse, "proj")
    write(spark.createDataFrame([(1, "a", 1.5), (2, "b", 2.5)], "id long, v string, w double"), path)
    df = spark.read.schema("v string, id long").format("paimon").load(path)
    assert df.columns == ["v", "id"]
    assert sorted(tuple(r) for r in df.collect()) == [("a", 1), ("b", 2)]


def test_empty_table_reads_no_rows_with_its_schema(spark, catalog, warehouse) -> None:
    catalog.create_table(
        "db.empty", "id bigint not null, v string, d decimal(10,2)", primary_keys=["id"], options={"bucket": "1"}
    )
    df = load(spark, "db.empty", warehouse=warehouse)
    assert df.schema.simpleString() == "struct<id:bigint,v:string,d:decimal(10,2)>"
    assert not df.schema["id"].nullable
    assert df.collect() == []


def test_files_written_under_older_schemas_read_through_the_latest(spark, catalog, warehouse) -> None:
    table = catalog.create_table("db.evo", "id bigint, a string, b int")
    table.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "a": ["x"], "b": pa.array([1], pa.int32())}))
    table.update_schema().add_column("c", "double").commit()
    table.update_schema().rename_column("a", "a2").commit()
    table.update_schema().drop_column("b").commit()
    table.write_arrow(pa.table({"id": pa.array([2], pa.int64()), "a2": ["y"], "c": [2.5]}))
    df = load(spark, "db.evo", warehouse=warehouse)
    assert df.columns == ["id", "a2", "c"]
    assert sorted(tuple(r) for r in df.collect()) == [(1, "x", None), (2, "y", 2.5)]


def test_many_small_splits_are_packed_into_few_spark_partitions(spark, warehouse, catalog) -> None:
    path = table_path(warehouse, "pack")
    write(spark.range(40).selectExpr("id", "cast(id AS string) AS dt"), path, partition="dt")
    assert len(catalog.get_table("db.pack").scan().read_job().splits) == 40
    df = load(spark, path)
    assert df.rdd.getNumPartitions() <= 4
    assert df.count() == 40


def test_executors_read_the_planned_snapshot_without_planning_again(catalog) -> None:
    """Spark pickles the reader for the executors before it calls ``partitions()``; the partitions must carry
    the plan, or each task re-plans against whatever the table looks like by then."""
    table = catalog.create_table("db.race", "id bigint, v string, w int")
    table.write_arrow(
        pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"], "w": pa.array([1, 2], pa.int32())})
    )
    source = PaimonDataSource({"path": table.store.table_path})
    reader = source.reader(source.schema())
    shipped = cloudpickle.dumps(reader)  # what Spark sends to executors: not yet planned
    partitions = reader.partitions()
    table.update_schema().drop_column("w").commit()  # a concurrent change between planning and reading
    table.write_arrow(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}), mode="overwrite")

    executor_reader = cloudpickle.loads(shipped)
    batches = [b for p in partitions for b in executor_reader.read(cloudpickle.loads(cloudpickle.dumps(p)))]
    assert sorted(pa.Table.from_batches(batches).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "w": 1},
        {"id": 2, "v": "b", "w": 2},
    ]


# ------------------------------------------------------------------------------------------------ pushdown
@pytest.fixture
def pushdown(spark) -> Iterator[Any]:
    """Filter pushdown forced on for one test; the default registration is restored afterwards."""
    with pushdown_forced(spark):
        yield spark


@pytest.fixture
def filter_table(spark, warehouse) -> str:
    path = table_path(warehouse, "flt")
    data = [(i, None if i % 7 == 0 else f"x{i}", f"d{i % 10}") for i in range(40)]
    write(spark.createDataFrame(data, "id long, v string, dt string"), path, partition="dt")
    return path


def expected_rows(predicate) -> list[tuple]:
    data = [(i, None if i % 7 == 0 else f"x{i}", f"d{i % 10}") for i in range(40)]
    return sorted(r for r in data if predicate(*r))


def test_default_registration_reuses_one_dataframe_safely(spark, filter_table) -> None:
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "false"
    df = load(spark, filter_table)
    assert sorted(tuple(r) for r in df.where("dt = 'd3'").collect()) == expected_rows(lambda i, v, d: d == "d3")
    assert df.count() == 40


def test_pushed_filters_return_exact_rows_and_prune_partitions(pushdown, filter_table, catalog) -> None:
    spark = pushdown
    queries = {
        "dt = 'd3'": lambda i, v, d: d == "d3",
        "dt IN ('d1', 'd2') AND id > 15": lambda i, v, d: d in ("d1", "d2") and i > 15,
        "v IS NULL": lambda i, v, d: v is None,
        "v LIKE 'x1%' AND NOT (dt = 'd1')": lambda i, v, d: v is not None and v.startswith("x1") and d != "d1",
    }
    for where, predicate in queries.items():  # a fresh DataFrame per query (see pushdown_is_safe)
        got = sorted(tuple(r) for r in load(spark, filter_table).where(where).collect())
        assert got == expected_rows(predicate), where

    # The same partition predicate, planned in Python, prunes to one partition of ten.
    store = catalog.get_table("db.flt").store
    plan = prepare_read(store, ReadOptions(), [Leaf("dt", "=", "d3")]).plan
    assert (plan.counters.partitions_total, plan.counters.partitions_selected) == (10, 1)
    assert plan.counters.files_selected < plan.counters.files_total
    assert {s.partition_values for s in plan.splits} == {("d3",)}


def test_pushdown_hazard_of_reusing_a_dataframe_is_real_on_this_spark(pushdown, filter_table) -> None:
    """Documents why pushdown is off by default: Spark 4.1-4.3 reuse the first query's pushed plan. If this
    starts failing, Spark fixed it and ``pushdown_is_safe`` can accept this version."""
    df = load(pushdown, filter_table)
    assert len(df.where("dt = 'd3'").collect()) == 4
    if pushdown_is_safe(pushdown.version):
        assert df.count() == 40
    else:
        assert df.count() == 4
