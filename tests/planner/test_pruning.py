"""Scan pruning (bucket pruning, file skipping from statistics) proven on counters, and identical results
with and without predicates on append, primary-key and chain tables (plus one Spark pushdown read)."""

from __future__ import annotations

import pickle
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.metadata.manifests.manifest import MANIFEST_CACHE
from pyspark_paimon.metadata.rows.bucket import bucket_of_values
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.explain import ScanExplain
from pyspark_paimon.planner.predicate import Leaf, could_match_stats, to_arrow_expression
from tests.engine_read import explain as engine_explain
from tests.engine_read import read_arrow as engine_read_arrow


def rows_of(t: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=repr)


def same_as_filtered(table: Any, leaves: Sequence[Leaf]) -> ScanExplain:
    """Assert the predicate read equals the unfiltered read filtered in Arrow; return the explain dict."""
    full = table.scan().to_arrow()
    expected = full.filter(to_arrow_expression(list(leaves), full.schema))
    got = engine_read_arrow(table, predicate=list(leaves))
    assert rows_of(got) == rows_of(expected)
    return engine_explain(table, predicate=list(leaves))


@pytest.fixture
def append_table(catalog: Catalog) -> Any:
    t = catalog.create_table(
        "default.a",
        "k int, v bigint, s string, dt string",
        partition_keys=["dt"],
        options={"bucket": "4", "bucket-key": "k"},
    )
    for batch in range(4):  # four commits: value ranges of v per file are disjoint
        n = 40
        t.write_arrow(
            pa.table(
                {
                    "k": pa.array([i % 10 for i in range(n)], pa.int32()),
                    "v": pa.array([batch * 1000 + i for i in range(n)], pa.int64()),
                    "s": [f"name-{batch}-{i:03d}-with-a-long-tail-beyond-16" for i in range(n)],
                    "dt": ["2025-01-01" if i % 2 else "2025-01-02" for i in range(n)],
                }
            )
        )
    return t


def test_bucket_pruning_by_equality_and_in(append_table: Any) -> None:
    ex = same_as_filtered(append_table, [Leaf("k", "=", 3)])
    c = ex.counters
    assert c.buckets_skipped > 0 and c.files_skipped_bucket > 0 and c.bytes_skipped_bucket > 0
    target = bucket_of_values([3], [AtomicType("INT")], 4)
    assert {s.bucket for s in ex.split_list} == {target}
    ex = same_as_filtered(append_table, [Leaf("k", "in", (3, 4, None))])
    buckets = {bucket_of_values([k], [AtomicType("INT")], 4) for k in (3, 4)}
    assert {s.bucket for s in ex.split_list} <= buckets
    # contradictory equalities select nothing; a range on the key prunes no bucket
    assert same_as_filtered(append_table, [Leaf("k", "=", 3), Leaf("k", "=", 4)]).splits.count == 0
    assert same_as_filtered(append_table, [Leaf("k", ">", 3)]).counters.buckets_skipped == 0
    # a literal that does not fit the column type never prunes by bucket
    assert same_as_filtered(append_table, [Leaf("k", "=", 3.5)]).counters.files_skipped_bucket == 0


def test_value_stats_skip_append_files(append_table: Any) -> None:
    ex = same_as_filtered(append_table, [Leaf("v", ">=", 3000)])
    c = ex.counters
    assert c.files_skipped_stats > 0 and c.bytes_skipped_stats > 0
    assert (
        c.files_selected + c.files_skipped_stats + c.files_skipped_bucket + c.files_skipped_partition == c.files_total
    )
    # partition + bucket + stats together
    ex = same_as_filtered(append_table, [Leaf("dt", "=", "2025-01-01"), Leaf("k", "=", 3), Leaf("v", "<", 1000)])
    c = ex.counters
    assert c.partitions_skipped == 1 and c.files_skipped_partition > 0
    assert c.files_selected == 1
    # truncated string stats: a value beyond the 16-char prefix still finds its file
    same_as_filtered(append_table, [Leaf("s", "=", "name-2-007-with-a-long-tail-beyond-16")])
    same_as_filtered(append_table, [Leaf("s", "starts_with", "name-3-01")])
    same_as_filtered(append_table, [Leaf("s", ">", "name-2-039-with-a-long-tail-beyond-16")])


def test_value_stats_modes_and_evolution(catalog: Catalog) -> None:
    t = catalog.create_table("default.m", "a int, b int", options={"metadata.stats-mode": "none"})
    t.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([1, 2], pa.int32())}))
    ex = same_as_filtered(t, [Leaf("a", "=", 100)])
    assert ex.counters.files_skipped_stats == 0  # no stats ([] columns): never skipped
    t2 = catalog.create_table("default.n", "a int, b int", options={"fields.a.stats-mode": "none"})
    t2.write_arrow(pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([1, 2], pa.int32())}))
    assert same_as_filtered(t2, [Leaf("a", "=", 100)]).counters.files_skipped_stats == 0
    assert same_as_filtered(t2, [Leaf("b", "=", 100)]).counters.files_skipped_stats == 1
    # renamed column: stats found by field id; a column added later has no stats in old files
    t2.update_schema().rename_column("b", "b2").commit()
    t2 = catalog.get_table("default.n")
    assert same_as_filtered(t2, [Leaf("b2", "=", 100)]).counters.files_skipped_stats == 1
    t2.update_schema().add_column("c", "int").commit()
    t2 = catalog.get_table("default.n")
    assert same_as_filtered(t2, [Leaf("c", "=", 1)]).counters.files_skipped_stats == 0


def test_pk_key_stats_skip_but_value_filters_do_not_drop_unmerged_files(catalog: Catalog) -> None:
    t = catalog.create_table(
        "default.p",
        "id bigint, v string, dt string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    t.write_arrow(pa.table({"id": pa.array(range(0, 50), pa.int64()), "v": ["old"] * 50, "dt": ["d"] * 50}))
    t.write_arrow(pa.table({"id": pa.array(range(100, 150), pa.int64()), "v": ["x"] * 50, "dt": ["d"] * 50}))
    # newer versions of some old keys with another value
    t.write_arrow(pa.table({"id": pa.array(range(0, 10), pa.int64()), "v": ["new"] * 10, "dt": ["d"] * 10}))
    ex = same_as_filtered(t, [Leaf("id", ">=", 100)])
    assert ex.counters.files_skipped_stats > 0
    # key = 5: bucket pruning + key stats
    ex = same_as_filtered(t, [Leaf("id", "=", 5)])
    assert ex.counters.buckets_skipped == 1
    # v = 'old' must not see key 5's old version: the newer file (v='new') is never skipped before merging
    ex = same_as_filtered(t, [Leaf("v", "=", "old")])
    assert ex.counters.files_skipped_stats == 0
    got = engine_read_arrow(t, predicate=[Leaf("v", "=", "old")])
    assert sorted(got.column("id").to_pylist()) == list(range(10, 50))


def test_could_match_stats_is_conservative() -> None:
    # truncated min (prefix) and rounded-up max still bound every value
    assert could_match_stats(Leaf("s", "=", "abcdefghijklmnopq-long"), "abcdefghijklmnop", "abcdefghijklmnoq", 0, 5)
    assert not could_match_stats(Leaf("s", "=", "zzz"), "abcdefghijklmnop", "abcdefghijklmnoq", 0, 5)
    # unknown max (NULL): nothing excluded by an upper-bound check
    assert could_match_stats(Leaf("s", ">", "zzz"), "abc", None, 0, 5)
    assert could_match_stats(Leaf("s", "starts_with", "abcdefghijklmnopX"), "abcdefghijklmnop", None, 0, 5)
    assert not could_match_stats(Leaf("s", "starts_with", "b"), "c", "d", 0, 5)
    assert could_match_stats(Leaf("x", "<=>", None), None, None, 5, 5)
    assert not could_match_stats(Leaf("x", "=", 1), None, None, 5, 5)
    assert could_match_stats(Leaf("x", ">", 5.0), 1.0, float("nan"), 0, 5)
    assert could_match_stats(Leaf("x", "=", 1), "a", "b", 0, 5)  # incomparable: keep
    assert not could_match_stats(Leaf("x", "=", 1, negated=True), 1, 1, 0, 5)
    assert could_match_stats(Leaf("x", "=", 1, negated=True), 1, 1, 1, 5)


def test_manifest_cache_is_shared_and_not_pickled(append_table: Any, catalog: Catalog) -> None:
    append_table.scan().explain()
    again = catalog.get_table("default.a")
    hits = MANIFEST_CACHE.hits
    again.scan().explain()
    assert MANIFEST_CACHE.hits > hits
    store = again.store
    _ = store.manifests, store.planning_manifests
    assert store.planning_manifests.shared_cache and not store.manifests.shared_cache
    blob = pickle.dumps(store)
    assert len(blob) < 4096
    assert pickle.loads(blob).planning_manifests.shared_cache


def test_chain_partition_filters_select_targets(catalog: Catalog) -> None:
    from tests.planner.test_chain import make, put  # noqa: PLC0415

    t = make(catalog)
    put(t, [(1, 1, "a", "20250810"), (2, 1, "b", "20250810")], "snapshot")
    put(t, [(1, 2, "a2", "20250811"), (3, 1, "c", "20250811")], "delta")
    put(t, [(2, 3, "b3", "20250812")], "delta")
    for leaves in (
        [Leaf("dt", "=", "20250812")],
        [Leaf("dt", ">=", "20250811"), Leaf("t1", "=", 1)],
        [Leaf("t3", "starts_with", "b")],
    ):
        full = t.scan().to_arrow()
        expected = full.filter(to_arrow_expression(leaves, full.schema))
        assert rows_of(engine_read_arrow(t, predicate=leaves)) == rows_of(expected)
    ex = engine_explain(t, predicate=[Leaf("dt", "=", "20250812")])
    assert ex.splits.partitions == 1


def test_spark_pushdown_results_match(spark: Any, append_table: Any) -> None:
    from pyspark_paimon import register  # noqa: PLC0415

    path = append_table.store.table_path
    plain = sorted(spark.read.format("paimon").load(path).where("k = 3 and v >= 2000").collect())
    register(spark, pushdown=True)
    try:
        pushed = sorted(spark.read.format("paimon").load(path).where("k = 3 and v >= 2000").collect())
        pushed_pk = sorted(
            spark.read.format("paimon").load(path).where("dt = '2025-01-01' and s like 'name-1%'").collect()
        )
    finally:
        register(spark)
    assert pushed == plain and len(plain) > 0
    assert pushed_pk == sorted(
        spark.read.format("paimon").load(path).where("dt = '2025-01-01' and s like 'name-1%'").collect()
    )
    assert len(pc.unique(append_table.scan().to_arrow().column("k"))) == 10


def test_bucket_key_values_dedupe_and_intersect_by_value() -> None:
    """The bucket selector's allowed values: repeats (by normalised value: 2 and 2.0, an aware and a naive UTC
    timestamp) kept once, the first spelling kept, and ``IN`` lists intersected, in linear time for the
    thousands of keys a merge prunes by."""
    import datetime as dt

    from pyspark_paimon.planner.scan import _key_values

    pred = (Leaf("k", "in", (1, 2.0, 2, 3, None)), Leaf("k", "in", (2, 3, 4)), Leaf("j", "=", 9))
    assert _key_values(pred, "k") == [2.0, 3]
    aware = dt.datetime(2024, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert _key_values((Leaf("t", "in", (aware, dt.datetime(2024, 1, 1))),), "t") == [aware]
    assert _key_values((Leaf("k", "in", tuple(range(20_000)) * 2),), "k") == list(range(20_000))
