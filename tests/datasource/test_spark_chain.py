"""Chain tables through Spark (Java's `ChainTableBatchScan`): the Paimon documentation example, Paimon's
``SparkChainTableITCase`` scenario, writes routed by the ``branch`` option, the delta-overwrite rule,
time travel, and identical results with filter pushdown on and off."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.predicate import Leaf
from tests.engine_read import read_arrow as engine_read_arrow
from tests.sparkutil import load, pushdown_forced
from tests.sparkutil import sorted_rows as rows

SCHEMA = "t1 bigint, t2 bigint, t3 string, dt string"
OPTIONS = {
    "bucket": "2",
    "bucket-key": "t1",
    "sequence.field": "t2",
    "partition.timestamp-pattern": "$dt",
    "partition.timestamp-formatter": "yyyyMMdd",
}


def make_branch(table: Any, name: str) -> None:
    """An empty branch (Paimon's create_branch without a source): the current schema, no data."""
    table.branches.create(name, empty=True)


def write(
    spark: Any,
    path: str,
    rows: list[tuple],
    schema: str = SCHEMA,
    branch: str | None = None,
    mode: str = "append",
    **options: str,
) -> None:
    w = spark.createDataFrame(rows, schema).write.format("paimon").mode(mode)
    if branch:
        w = w.option("branch", branch)
    for k, v in options.items():
        w = w.option(k, v)
    w.save(path)


# ------------------------------------------------------------------------------------------------------
# The documentation example (chain-table.mdx), following the API
# ------------------------------------------------------------------------------------------------------
def test_documentation_example_through_spark(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table(
        "default.t",
        "t1 string, t2 string, t3 string, date string",
        partition_keys=["date"],
        primary_keys=["date", "t1"],
        options={
            "chain-table.enabled": "true",
            "bucket": "2",
            "bucket-key": "t1",
            "sequence.field": "t2",
            "partition.timestamp-pattern": "$date",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )
    make_branch(t, "snapshot")
    make_branch(t, "delta")
    t.update_schema().set_options(
        {"scan.fallback-snapshot-branch": "snapshot", "scan.fallback-delta-branch": "delta"}
    ).commit()
    for b in ("snapshot", "delta"):  # set on all three branches by the one call on main
        assert t.on_branch(b).options["scan.fallback-delta-branch"] == "delta"
    path = t.uri
    schema = "t1 string, t2 string, t3 string, date string"
    write(
        spark,
        path,
        [("1", "1", "1", "20250810")],
        schema,
        branch="snapshot",
        mode="overwrite",
        partitionOverwriteMode="dynamic",
    )
    write(
        spark,
        path,
        [("2", "1", "1", "20250811")],
        schema,
        branch="delta",
        mode="overwrite",
        partitionOverwriteMode="dynamic",
    )

    full = load(spark, path).where("date = '20250811'")
    assert rows(full) == [("1", "1", "1", "20250811"), ("2", "1", "1", "20250811")]
    incremental = load(spark, path, branch="delta").where("date = '20250811'")
    assert rows(incremental) == [("2", "1", "1", "20250811")]
    hybrid = full.unionByName(incremental)
    assert rows(hybrid) == [("1", "1", "1", "20250811"), ("2", "1", "1", "20250811"), ("2", "1", "1", "20250811")]
    assert rows(load(spark, path + "$branch_delta")) == [("2", "1", "1", "20250811")]
    assert len(t.chain.hybrid("date = '20250811'")) == 3
    with pushdown_forced(spark):
        assert rows(load(spark, path).where("date = '20250811'")) == rows(full)


# ------------------------------------------------------------------------------------------------------
# Paimon's SparkChainTableITCase.testChainTable
# ------------------------------------------------------------------------------------------------------
MAIN_0810 = [(1, 1, "1", "20250810"), (2, 1, "1", "20250810")]
DELTA = {
    "20250809": [(1, 1, "1"), (2, 1, "1")],
    "20250810": [(1, 2, "1-1"), (3, 1, "1")],
    "20250811": [(2, 2, "1-1"), (4, 1, "1")],
    "20250812": [(3, 2, "1-1"), (4, 2, "1-1"), (7, 1, "1")],
    "20250813": [(5, 1, "1"), (6, 1, "1")],
    "20250814": [(5, 2, "1-1"), (6, 2, "1-1")],
}
SNAPSHOT = {
    "20250810": [(1, 2, "1-1"), (2, 1, "1"), (3, 1, "1")],
    "20250812": [(1, 2, "1-1"), (2, 2, "1-1"), (3, 2, "1-1"), (4, 2, "1-1")],
    "20250814": [(i, 2, "1-1") for i in range(1, 7)],
}


def with_dt(data: list[tuple], dt: str) -> list[tuple]:
    return [(*r, dt) for r in data]


def arrow_write(table: Any, data: list[tuple], branch: str | None = None, **kw: Any) -> None:
    target = table.on_branch(branch) if branch else table
    names = table.schema.arrow_schema().names
    target.write_arrow(
        pa.table({n: [r[i] for r in data] for i, n in enumerate(names)}).cast(table.schema.arrow_schema()), **kw
    )


def build_scenario(catalog: Catalog, name: str = "default.chain") -> tuple[Any, str]:
    """The layout of Paimon's ``SparkChainTableITCase``, written with the Python API (Spark writes are covered by the
    docs example)."""
    t = catalog.create_chain_table(name, SCHEMA, partition_keys=["dt"], primary_keys=["dt", "t1"], options=OPTIONS)
    arrow_write(t, MAIN_0810)
    for dt, data in DELTA.items():
        arrow_write(t, with_dt(data, dt), "delta", mode="overwrite", dynamic_partition_overwrite=True)
    for dt, data in SNAPSHOT.items():
        arrow_write(t, with_dt(data, dt), "snapshot", mode="overwrite", dynamic_partition_overwrite=True)
    return t, t.uri


@pytest.fixture(scope="module")
def shared_scenario(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    """Read-only tests share one table."""
    return build_scenario(Catalog(str(tmp_path_factory.mktemp("chain_wh"))))


@pytest.fixture
def scenario(catalog: Catalog) -> tuple[Any, str]:
    return build_scenario(catalog)


EXPECTED = {
    "20250809": with_dt(DELTA["20250809"], "20250809"),  # no anchor: the delta rows
    "20250810": MAIN_0810,  # main wins
    "20250811": with_dt([(1, 2, "1-1"), (2, 2, "1-1"), (3, 1, "1"), (4, 1, "1")], "20250811"),
    "20250812": with_dt(SNAPSHOT["20250812"], "20250812"),  # snapshot partitions are complete
    "20250813": with_dt(
        [(1, 2, "1-1"), (2, 2, "1-1"), (3, 2, "1-1"), (4, 2, "1-1"), (5, 1, "1"), (6, 1, "1")], "20250813"
    ),
    "20250814": with_dt(SNAPSHOT["20250814"], "20250814"),
}


def test_paimon_scenario(spark: Any, shared_scenario: tuple[Any, str]) -> None:
    t, path = shared_scenario
    for dt, expected in EXPECTED.items():
        assert rows(load(spark, path).where(f"dt = '{dt}'")) == sorted(expected), dt
    assert rows(load(spark, path).where("dt = '20250812' AND t1 = 7")) == []
    assert rows(load(spark, path).where("dt IN ('20250810', '20250811', '20250812')")) == sorted(
        EXPECTED["20250810"] + EXPECTED["20250811"] + EXPECTED["20250812"]
    )
    assert rows(load(spark, path)) == sorted(r for v in EXPECTED.values() for r in v)
    # Incremental read: the delta branch as it is.
    assert rows(load(spark, path, branch="delta").where("dt = '20250811'")) == sorted(
        with_dt(DELTA["20250811"], "20250811")
    )
    explained = {e["partition"]["dt"]: e for e in t.chain.explain()}
    assert explained["20250810"]["source"] == "main"
    assert explained["20250811"]["source"] == "chain"
    assert explained["20250811"]["anchor"] == {"dt": "20250810"}
    assert explained["20250811"]["deltas"] == [{"dt": "20250811"}]  # delta 0810 is not used
    assert explained["20250809"]["anchor"] is None and explained["20250809"]["deltas"] == [{"dt": "20250809"}]
    assert explained["20250812"]["source"] == "snapshot"


def test_pushdown_and_python_predicate_agree(spark: Any, shared_scenario: tuple[Any, str]) -> None:
    t, path = shared_scenario
    queries = [
        "dt = '20250811'",
        "dt = '20250813' AND t1 > 2",
        "dt IN ('20250809', '20250811')",
        "dt >= '20250811' AND t3 = '1'",
        "t1 = 4",
    ]
    plain = {q: rows(load(spark, path).where(q)) for q in queries}
    with pushdown_forced(spark):
        pushed = {q: rows(load(spark, path).where(q)) for q in queries}  # a fresh DataFrame per query
    assert pushed == plain
    py = engine_read_arrow(t, predicate=[Leaf("dt", "=", "20250813"), Leaf("t1", ">", 2)]).to_pylist()
    assert sorted(tuple(r.values()) for r in py) == plain["dt = '20250813' AND t1 > 2"]
    py = engine_read_arrow(t, predicate=[Leaf("dt", "in", ("20250809", "20250811"))]).to_pylist()
    assert sorted(tuple(r.values()) for r in py) == plain["dt IN ('20250809', '20250811')"]


def test_delta_overwrite_truncates_snapshot_partition(spark: Any, scenario: tuple[Any, str]) -> None:
    t, path = scenario
    new_0814 = [(5, 3, "2-2"), (8, 1, "1")]
    write(
        spark, path, with_dt(new_0814, "20250814"), branch="delta", mode="overwrite", partitionOverwriteMode="dynamic"
    )
    # Paimon: overwriting delta 0814 empties snapshot 0814, so 0814 is chained again (anchor 0812).
    assert rows(load(spark, path, branch="snapshot").where("dt = '20250814'")) == []
    expected = with_dt(
        [(1, 2, "1-1"), (2, 2, "1-1"), (3, 2, "1-1"), (4, 2, "1-1"), (5, 3, "2-2"), (6, 1, "1"), (8, 1, "1")],
        "20250814",
    )
    assert rows(load(spark, path).where("dt = '20250814'")) == sorted(expected)
    # Other snapshot partitions are untouched.
    assert rows(load(spark, path).where("dt = '20250812'")) == sorted(EXPECTED["20250812"])


def test_dropping_a_needed_snapshot_partition_is_refused(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_chain_table(
        "default.drop", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "t1"], options=OPTIONS
    )
    path = t.uri
    write(spark, path, [(1, 1, "a", "20250810")], branch="snapshot")
    write(spark, path, [(2, 1, "b", "20250811")], branch="delta")
    empty = spark.createDataFrame([], SCHEMA)
    with pytest.raises(Exception, match="Snapshot partition cannot be dropped"):
        empty.write.format("paimon").option("branch", "snapshot").option("overwrite-partition", "dt=20250810").mode(
            "overwrite"
        ).save(path)
    assert rows(load(spark, path).where("dt = '20250811'")) == [(1, 1, "a", "20250811"), (2, 1, "b", "20250811")]
    # With an earlier snapshot partition to anchor the deltas, the drop is allowed.
    write(spark, path, [(0, 1, "z", "20250801")], branch="snapshot")
    empty.write.format("paimon").option("branch", "snapshot").option("overwrite-partition", "dt=20250810").mode(
        "overwrite"
    ).save(path)
    assert rows(load(spark, path).where("dt = '20250811'")) == [(0, 1, "z", "20250811"), (2, 1, "b", "20250811")]


def test_time_travel_by_timestamp_and_chain_tag(spark: Any, scenario: tuple[Any, str]) -> None:
    t, path = scenario
    t.chain.create_tag("v1")
    time.sleep(0.01)
    ts = int(time.time() * 1000)
    time.sleep(0.01)
    write(spark, path, with_dt([(2, 9, "new")], "20250811"), branch="delta")
    changed = sorted(with_dt([(1, 2, "1-1"), (2, 9, "new"), (3, 1, "1"), (4, 1, "1")], "20250811"))
    assert rows(load(spark, path).where("dt = '20250811'")) == changed
    assert rows(load(spark, path, **{"scan.timestamp-millis": str(ts)}).where("dt = '20250811'")) == sorted(
        EXPECTED["20250811"]
    )
    assert rows(load(spark, path, **{"scan.tag-name": "v1"}).where("dt = '20250811'")) == sorted(EXPECTED["20250811"])
    with pytest.raises(Exception, match="branch-local"):
        load(spark, path, **{"scan.snapshot-id": "1"}).collect()
    with pytest.raises(ChainTableError, match="chain tag"):
        t.scan(read_options={"scan.tag-name": "nope"}).to_arrow()


def test_compaction_then_reads_hit_the_snapshot_branch(spark: Any, scenario: tuple[Any, str]) -> None:
    t, path = scenario
    before = rows(load(spark, path).where("dt = '20250813'"))
    result = t.chain.compact({"dt": "20250813"})
    assert result and result.compacted == [{"dt": "20250813"}]
    assert rows(load(spark, path, branch="snapshot").where("dt = '20250813'")) == before
    assert rows(load(spark, path).where("dt = '20250813'")) == before
    assert [e["source"] for e in t.chain.explain("dt=20250813")] == ["snapshot"]
    assert not t.chain.compact("dt=20250813")  # already there


def test_group_and_hourly_chains_with_and_without_pushdown(spark: Any, catalog: Catalog) -> None:
    schema = "t1 bigint, t2 bigint, t3 string, region string, dt string, hour string"
    t = catalog.create_chain_table(
        "default.gh",
        schema,
        partition_keys=["region", "dt", "hour"],
        primary_keys=["region", "dt", "hour", "t1"],
        options={
            **OPTIONS,
            "chain-table.chain-partition-keys": "dt,hour",
            "partition.timestamp-pattern": "$dt $hour:00:00",
            "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
        },
    )
    path = t.uri
    write(
        spark,
        path,
        [(1, 1, "eu-s", "eu", "20250810", "23"), (2, 1, "us-s", "us", "20250811", "00")],
        schema,
        branch="snapshot",
    )
    write(
        spark,
        path,
        [
            (3, 1, "eu-d", "eu", "20250811", "00"),
            (4, 1, "eu-d", "eu", "20250811", "01"),
            (1, 2, "us-d", "us", "20250811", "01"),
            (5, 1, "us-old", "us", "20250810", "22"),
        ],
        schema,
        branch="delta",
    )
    q = "dt = '20250811' AND hour = '01'"
    expected = [
        (1, 1, "eu-s", "eu", "20250811", "01"),
        (1, 2, "us-d", "us", "20250811", "01"),
        (2, 1, "us-s", "us", "20250811", "01"),
        (3, 1, "eu-d", "eu", "20250811", "01"),
        (4, 1, "eu-d", "eu", "20250811", "01"),
    ]
    assert rows(load(spark, path).where(q)) == expected
    with pushdown_forced(spark):
        assert rows(load(spark, path).where(q)) == expected
    plain_us = rows(load(spark, path).where("region = 'us'"))
    with pushdown_forced(spark):
        assert rows(load(spark, path).where("region = 'us'")) == plain_us
    plan = {(e["partition"]["region"], e["partition"]["hour"]): e for e in t.chain.explain({"dt": "20250811"})}
    assert plan[("us", "01")]["anchor"] == {"region": "us", "dt": "20250811", "hour": "00"}
    assert [d["hour"] for d in plan[("eu", "01")]["deltas"]] == ["00", "01"]


def test_deletes_and_auto_compaction_through_spark(spark: Any, catalog: Catalog) -> None:
    schema = "t1 bigint, t2 bigint, t3 string, op string, dt string"
    t = catalog.create_chain_table(
        "default.del",
        schema,
        partition_keys=["dt"],
        primary_keys=["dt", "t1"],
        options={**OPTIONS, "rowkind.field": "op", "chain-table.compact.auto-threshold": "2"},
    )
    path = t.uri
    write(spark, path, [(1, 1, "a", "+I", "20250810"), (2, 1, "b", "+I", "20250810")], schema, branch="snapshot")
    write(spark, path, [(1, 2, "a", "-D", "20250811"), (3, 1, "c", "+I", "20250811")], schema, branch="delta")
    assert rows(load(spark, path).where("dt = '20250811'")) == [
        (2, 1, "b", "+I", "20250811"),
        (3, 1, "c", "+I", "20250811"),
    ]
    write(spark, path, [(4, 1, "d", "+I", "20250812")], schema, branch="delta")
    assert t.chain.explain("dt=20250812")[0]["source"] == "chain"
    write(spark, path, [(2, 5, "b2", "+U", "20250813")], schema, branch="delta")  # 3 deltas > 2: compacted
    assert t.chain.explain("dt=20250813")[0]["source"] == "snapshot"
    assert rows(load(spark, path, branch="snapshot").where("dt = '20250813'")) == [
        (2, 5, "b2", "+U", "20250813"),
        (3, 1, "c", "+I", "20250813"),
        (4, 1, "d", "+I", "20250813"),
    ]
    assert rows(load(spark, path).where("dt = '20250813'")) == rows(
        load(spark, path, branch="snapshot").where("dt = '20250813'")
    )


def test_branch_schema_mismatch_fails_the_spark_read(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_chain_table(
        "default.mm", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "t1"], options=OPTIONS
    )
    t.on_branch("snapshot").update_schema().add_column("x", "int").commit()
    load(spark, t.uri).collect()  # a branch ahead of main (a chain schema change between its steps) reads
    main = SchemaManager(t.store.fileio, t.store.table_path, "main")
    main.commit_changes([main.add_column_change("only_main", AtomicType("INT"))])  # main diverged: refused
    with pytest.raises(Exception, match="does not have the same columns"):
        load(spark, t.uri).collect()
