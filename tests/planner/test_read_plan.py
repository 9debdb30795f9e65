"""One decision for every read (planner/read_plan.py): which kind, which schema, which files, and the one
executor context built from it."""

from __future__ import annotations

import pyarrow as pa

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.read_plan import plan_read, read_kind, read_schema

CHAIN = {
    "bucket": "1",
    "sequence.field": "t2",
    "partition.timestamp-pattern": "$dt",
    "partition.timestamp-formatter": "yyyyMMdd",
}


def opts(**kv: str) -> ReadOptions:
    return ReadOptions.from_options(kv)


def test_plain_incremental_and_time_travel(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.update_schema().add_column("w", "int").commit()
    t.write_arrow(pa.table({"id": [3], "v": ["c"], "w": [7]}))
    store = t.store
    assert read_kind(store, opts()) == "plain"
    assert read_kind(store, opts(**{"incremental-between": "1,2"})) == "incremental"
    # Time travel selects the snapshot's schema; an incremental read uses the latest one.
    assert [f.name for f in read_schema(store, opts(**{"scan.snapshot-id": "1"})).fields] == ["id", "v"]
    assert [f.name for f in read_schema(store, opts(**{"incremental-between": "1,2"})).fields] == ["id", "v", "w"]
    planned = plan_read(store, opts(**{"incremental-between": "1,2"}))
    assert planned.kind == "incremental" and planned.schema.field_names == ["id", "v", "w"]
    assert sum(f.row_count for s in planned.plan.splits for f in s.files) == 1  # only snapshot 2's file
    assert prepare_read(store, opts(**{"incremental-between": "1,2"})).to_arrow().column("id").to_pylist() == [3]


def test_fallback(catalog: Catalog) -> None:
    t = catalog.create_table("db.f", "id bigint, dt string", partition_keys=["dt"])
    t.write_arrow(pa.table({"id": [1], "dt": ["a"]}))
    t.branches.create("backfill")
    t.on_branch("backfill").write_arrow(pa.table({"id": [2], "dt": ["b"]}))
    assert read_kind(t.store, opts()) == "plain"
    fb = opts(**{"scan.fallback-branch": "backfill"})
    planned = plan_read(t.store, fb)
    assert planned.kind == "fallback" and set(planned.schemas) == {"main", "backfill"}
    assert sorted(prepare_read(t.store, fb).to_arrow().column("id").to_pylist()) == [1, 2]


def test_chain_reads_are_planned_like_every_read_and_keep_their_pruning_predicate(catalog: Catalog) -> None:
    t = catalog.create_chain_table(
        "db.c", "t1 bigint, t2 bigint, dt string", partition_keys=["dt"], primary_keys=["dt", "t1"], options=CHAIN
    )
    schema = t.schema.arrow_schema()
    t.on_branch("snapshot").write_arrow(pa.table({"t1": [1, 2], "t2": [1, 1], "dt": ["20250810"] * 2}, schema=schema))
    t.on_branch("delta").write_arrow(pa.table({"t1": [2, 3], "t2": [2, 2], "dt": ["20250811"] * 2}, schema=schema))
    assert read_kind(t.store, opts()) == "chain"
    assert read_kind(t.on_branch("delta").store, opts()) == "plain"  # the delta branch reads as a table
    pred = [Leaf("dt", "=", "20250811"), Leaf("t2", ">=", 2)]
    job = prepare_read(t.store, opts(), pred, exact_filters=pred)
    assert job.planned.kind == "chain"
    assert job.context.pushed == tuple(pred)  # chain reads skip row groups like any read
    assert sorted(r["t1"] for r in job.to_arrow().to_pylist()) == [2, 3]
    full = prepare_read(t.store, opts(), [Leaf("dt", "=", "20250811")]).to_arrow().to_pylist()
    assert sorted((r["t1"], r["t2"]) for r in full) == [(1, 1), (2, 2), (3, 2)]  # anchor + delta merged
