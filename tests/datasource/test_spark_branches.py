"""Branches through Spark: writes and reads routed by the ``branch`` option and by the ``$branch_<b>`` path
suffix, tags and time travel inside a branch, per-branch schemas, fallback-branch reads, and a branch
published with ``fast_forward`` read back through Spark."""

from __future__ import annotations

from typing import Any

import pytest

from pyspark_paimon import Catalog
from tests.sparkutil import load
from tests.sparkutil import sorted_rows as rows

SCHEMA = "id bigint, dt string, amount bigint"


def write(spark: Any, path: str, data: list[tuple], schema: str = SCHEMA, mode: str = "append", **options: str) -> None:
    w = spark.createDataFrame(data, schema).write.format("paimon").mode(mode)
    for k, v in options.items():
        w = w.option(k, v)
    w.save(path)


@pytest.fixture
def orders(spark: Any, catalog: Catalog) -> Any:
    t = catalog.create_table("default.orders", SCHEMA, partition_keys=["dt"])
    write(spark, t.store.table_path, [(1, "a", 10), (2, "a", 20)])
    t.tags.create("t1")
    write(spark, t.store.table_path, [(3, "b", 30)])
    return t


def test_write_and_read_a_branch_through_spark(spark: Any, orders: Any) -> None:
    path = orders.store.table_path
    orders.branches.create("fix", tag="t1")
    write(spark, path, [(9, "z", 90)], branch="fix")
    write(spark, path + "$branch_fix", [(8, "z", 80)])
    expected = [(1, "a", 10), (2, "a", 20), (8, "z", 80), (9, "z", 90)]
    assert rows(load(spark, path, branch="fix")) == expected
    assert rows(load(spark, path + "$branch_fix")) == expected
    assert rows(load(spark, path)) == [(1, "a", 10), (2, "a", 20), (3, "b", 30)], "main is untouched"
    assert [s.id for s in orders.on_branch("fix").snapshots()] == [1, 2, 3]
    with pytest.raises(Exception, match="give only one"):
        load(spark, path + "$branch_fix", branch="other").collect()
    with pytest.raises(Exception, match="does not exist"):
        write(spark, path, [(1, "a", 1)], branch="nope")


def test_tags_and_time_travel_inside_a_branch(spark: Any, orders: Any) -> None:
    path = orders.store.table_path
    orders.branches.create("fix", tag="t1")
    write(spark, path, [(9, "z", 90)], branch="fix")
    orders.on_branch("fix").tags.create("t_fix")
    write(spark, path, [(10, "z", 100)], branch="fix")
    assert rows(load(spark, path, branch="fix", **{"scan.tag-name": "t1"})) == [(1, "a", 10), (2, "a", 20)]
    assert len(rows(load(spark, path + "$branch_fix", **{"scan.tag-name": "t_fix"}))) == 3
    assert len(rows(load(spark, path, branch="fix", versionAsOf="2"))) == 3
    assert len(rows(load(spark, path, versionAsOf="2"))) == 3, "main's snapshot 2 is main's commit"
    assert rows(load(spark, path, versionAsOf="2")) != rows(load(spark, path, branch="fix", versionAsOf="2"))
    with pytest.raises(Exception, match="t_fix"):
        load(spark, path, **{"scan.tag-name": "t_fix"}).collect()


def test_per_branch_schema_through_spark(spark: Any, catalog: Catalog, orders: Any) -> None:
    path = orders.store.table_path
    orders.branches.create("fix")
    catalog.get_table("default.orders$branch_fix").update_schema().add_column("note", "string").commit()
    write(spark, path, [(4, "c", 40, "hello")], schema=SCHEMA + ", note string", branch="fix")
    fix = load(spark, path, branch="fix")
    assert fix.columns == ["id", "dt", "amount", "note"]
    assert (4, "c", 40, "hello") in rows(fix) and (1, "a", 10, None) in rows(fix)
    assert load(spark, path).columns == ["id", "dt", "amount"]
    with pytest.raises(Exception, match="note"):
        write(spark, path, [(4, "c", 40, "x")], schema=SCHEMA + ", note string")


def test_fallback_branch_through_spark(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("default.fb", SCHEMA, partition_keys=["dt"])
    t.branches.create("backfill", empty=True)
    write(spark, t.store.table_path, [(1, "1", 10), (2, "2", -1)], branch="backfill")
    write(spark, t.store.table_path, [(2, "2", 20)])
    expected = [(1, "1", 10), (2, "2", 20)]
    assert rows(load(spark, t.store.table_path)) == [(2, "2", 20)]
    assert rows(load(spark, t.store.table_path, **{"scan.fallback-branch": "backfill"})) == expected
    t.update_schema().set_options({"scan.fallback-branch": "backfill"}).commit()
    assert rows(load(spark, t.store.table_path)) == expected
    assert rows(load(spark, t.store.table_path).where("dt = '1'")) == [(1, "1", 10)]
    assert rows(load(spark, t.store.table_path, branch="backfill")) == [(1, "1", 10), (2, "2", -1)]


def test_fast_forward_then_read_through_spark(spark: Any, orders: Any) -> None:
    path = orders.store.table_path
    orders.branches.create("dev")
    write(spark, path, [(5, "e", 50)], branch="dev")
    orders.branches.fast_forward("dev")
    assert rows(load(spark, path)) == rows(load(spark, path, branch="dev"))
    write(spark, path, [(6, "f", 60)])
    assert orders.latest_snapshot().id == 4, "main continues after the published head (3)"


def test_write_audit_publish_through_the_audit_branch_option(spark: Any, orders: Any) -> None:
    """Issue 24: option 'audit-branch' sends the write to a branch created from main; publish lands it."""
    from pyspark_paimon import Table  # noqa: PLC0415

    path = orders.store.table_path
    write(spark, path, [(7, "w", 70)], **{"audit-branch": "audit_job1"})
    assert rows(load(spark, path)) == [(1, "a", 10), (2, "a", 20), (3, "b", 30)], "main is untouched"
    audited = rows(load(spark, path, branch="audit_job1"))
    assert audited == [(1, "a", 10), (2, "a", 20), (3, "b", 30), (7, "w", 70)]
    Table.open(path).branches.publish("audit_job1")
    assert rows(load(spark, path)) == audited
