"""Chain tables without Spark (Java's `ChainTableBatchScan`): validation, the read resolution (anchors, deltas,
groups, hourly chains), cross-branch merge order and deletes, compaction, write rules, time travel and
explain. The partition-time formatter is tested in test_java_date.py."""

from __future__ import annotations

import time
from typing import Any, Sequence

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.errors import BranchError, ChainTableError, PaimonError
from pyspark_paimon.metadata.identifier import validate_branch_name
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.chain.config import ChainConfig, validate_chain_definition
from pyspark_paimon.planner.chain.plan import snapshot_drop_violations
from pyspark_paimon.planner.predicate import Leaf
from tests.engine_read import read_arrow as engine_read_arrow
from tests.engine_read import read_job as engine_read_job

BASE = {
    "bucket": "2",
    "bucket-key": "t1",
    "sequence.field": "t2",
    "partition.timestamp-pattern": "$dt",
    "partition.timestamp-formatter": "yyyyMMdd",
}
SCHEMA = "t1 bigint, t2 bigint, t3 string, dt string"


def make(
    catalog: Catalog,
    name: str = "default.c",
    schema: str = SCHEMA,
    partition_keys: Sequence[str] = ("dt",),
    primary_keys: Sequence[str] = ("dt", "t1"),
    options: dict[str, str] | None = None,
) -> Any:
    return catalog.create_chain_table(
        name,
        schema,
        partition_keys=list(partition_keys),
        primary_keys=list(primary_keys),
        options={**BASE, **(options or {})},
    )


def put(table: Any, rows: list[tuple], branch: str | None = None, *, overwrite: bool = False, **kw: Any) -> Any:
    target = table.on_branch(branch) if branch else table
    schema = table.schema.arrow_schema()
    data = pa.table({n: [r[i] for r in rows] for i, n in enumerate(schema.names)}).cast(schema)
    if overwrite:
        kw.setdefault("dynamic_partition_overwrite", True)
        return target.write_arrow(data, mode="overwrite", **kw)
    return target.write_arrow(data, **kw)


def read(table: Any, *leaves: Leaf, options: dict[str, str] | None = None) -> list[tuple]:
    return sorted(
        tuple(r.values()) for r in engine_read_arrow(table, options=options, predicate=list(leaves)).to_pylist()
    )


def eq(column: str, value: Any) -> Leaf:
    return Leaf(column, "=", value)


# ------------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "parts,pks,change,match",
    [
        (["dt"], [], {}, "primary key"),
        ([], ["t1"], {}, "partitioned"),
        (["dt"], ["dt", "t1"], {"bucket": "-1"}, "fixed bucket"),
        (["dt"], ["dt", "t1"], {"sequence.field": None}, "sequence.field"),
        (["dt"], ["dt", "t1"], {"partition.timestamp-pattern": None}, "partition.timestamp-pattern"),
        (["dt"], ["dt", "t1"], {"partition.timestamp-formatter": None}, "partition.timestamp-formatter"),
        (["dt"], ["dt", "t1"], {"partition.timestamp-formatter": "yyyyMM"}, "complete date"),
        (["dt"], ["dt", "t1"], {"changelog-producer": "lookup"}, "changelog-producer"),
        (["dt"], ["dt", "t1"], {"merge-engine": "first-row"}, "first-row"),
        (["dt"], ["dt", "t1"], {"merge-engine": "aggregation", "fields.t2.aggregate-function": "max"}, "aggregated"),
        (["region", "dt"], ["region", "dt", "t1"], {"chain-table.chain-partition-keys": "region"}, "contiguous suffix"),
        (["region", "dt"], ["region", "dt", "t1"], {"chain-table.chain-partition-keys": "x"}, "not partition keys"),
        (["dt"], ["dt", "t1"], {"partition.expiration-strategy": "update-time"}, "values-time"),
        (["dt"], ["dt", "t1"], {"chain-table.compact.auto-threshold": "0"}, "positive integer"),
        (["dt"], ["dt", "t1"], {"partition.timestamp-pattern": "$t3"}, "references no partition column"),
    ],
)
def test_validation(parts: list[str], pks: list[str], change: dict[str, str | None], match: str) -> None:
    opts = {**BASE, "chain-table.enabled": "true", **{k: v for k, v in change.items() if v is not None}}
    for k, v in change.items():
        if v is None:
            opts.pop(k, None)
    with pytest.raises(ChainTableError, match=match):
        validate_chain_definition(parts, pks, opts, "t")


@pytest.mark.parametrize("name", ["a.b", "main", "", "  ", "42", "a$b", "a/b"])
@pytest.mark.parametrize("which", ["snapshot_branch", "delta_branch"])
def test_chain_branch_names_follow_the_one_branch_name_rule(catalog: Catalog, name: str, which: str) -> None:
    """Catalog.create_chain_table refuses a branch name with exactly the error every branch operation gives
    (``validate_branch_name``), before anything is written."""
    with pytest.raises(BranchError) as rule:
        validate_branch_name(name)
    with pytest.raises(BranchError) as created:
        catalog.create_chain_table(
            "default.named", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "t1"], options=BASE, **{which: name}
        )
    assert str(created.value) == str(rule.value)
    assert not catalog.table_exists("default.named")


def test_validation_on_create_and_set_options(catalog: Catalog) -> None:
    with pytest.raises(ChainTableError, match="sequence.field"):
        catalog.create_table(
            "default.bad",
            SCHEMA,
            partition_keys=["dt"],
            primary_keys=["dt", "t1"],
            options={**{k: v for k, v in BASE.items() if k != "sequence.field"}, "chain-table.enabled": "true"},
        )
    assert not catalog.table_exists("default.bad")
    with pytest.raises(ChainTableError, match="fixed bucket"):
        catalog.create_chain_table(
            "default.bad2", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "t1"], options={**BASE, "bucket": "-1"}
        )
    assert not catalog.table_exists("default.bad2")
    t = make(catalog)
    with pytest.raises(ChainTableError, match="changelog-producer"):
        t.update_schema().set_options({"changelog-producer": "full-compaction"}).commit()
    with pytest.raises(ChainTableError, match="does not exist"):
        t.update_schema().set_options({"scan.fallback-delta-branch": "nope"}).commit()
    with pytest.raises(ChainTableError, match="not a chain table"):
        catalog.create_table(
            "default.plain", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "t1"], options={"bucket": "1"}
        ).chain.explain()


def test_branches_must_share_the_schema(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "a", "20250810")], "snapshot")
    put(t, [(2, 1, "b", "20250811")], "delta")
    t.on_branch("delta").update_schema().add_column("extra", "int").commit()  # only one branch evolves
    # delta is ahead of main (as between the steps of a chain schema change): reads keep main's schema.
    assert read(t, eq("dt", "20250811")) == [(1, 1, "a", "20250811"), (2, 1, "b", "20250811")]
    t.update_schema().add_column("extra", "int").commit()  # snapshot and main follow; delta already has it
    assert read(t, eq("dt", "20250811")) == [(1, 1, "a", "20250811", None), (2, 1, "b", "20250811", None)]
    # A branch that diverged (columns main never had, or main ahead of it) is still refused.
    t.on_branch("snapshot").update_schema().add_column("only_snap", "int").commit()
    SchemaManager(t.store.fileio, t.store.table_path, "main").commit_changes(
        [SchemaManager(t.store.fileio, t.store.table_path, "main").add_column_change("only_main", AtomicType("INT"))]
    )
    with pytest.raises(ChainTableError, match="only_main"):
        t.scan().to_arrow()
    t2 = make(catalog, "default.c2")
    t2.update_schema().add_column("extra", "int").commit()  # on a fresh chain table: all three branches at once
    assert all("extra" in t2.on_branch(b).schema.field_names for b in ("main", "snapshot", "delta"))
    put(t2, [(1, 1, "a", "20250810", 5)], "snapshot")
    put(t2, [(2, 1, "b", "20250811", 6)], "delta")
    assert read(t2, eq("dt", "20250811")) == [(1, 1, "a", "20250811", 5), (2, 1, "b", "20250811", 6)]
    t2.update_schema().rename_column("extra", "more").commit()
    assert read(t2, eq("dt", "20250811"))[0] == (1, 1, "a", "20250811", 5)
    assert t2.on_branch("delta").schema.field_names[-1] == "more"


@pytest.mark.parametrize("fail_on", ["delta", "main"])
def test_a_chain_schema_change_that_fails_midway_is_never_seen_half_done(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, fail_on: str
) -> None:
    """Paimon's #8810: the three branches change one after the other. Inject a failure at a later step: reads in
    between see the old schema (main is the commit point), and running the change again finishes it."""
    t = make(catalog, f"default.mid_{fail_on}")
    put(t, [(1, 1, "a", "20250810")], "snapshot")
    put(t, [(2, 1, "b", "20250811")], "delta")
    real = SchemaManager.commit_changes
    calls: list[str] = []

    def flaky(self: SchemaManager, changes: Any) -> Any:
        calls.append(self.branch)
        if self.branch == fail_on:
            raise OSError(f"injected: storage failed writing branch {self.branch}'s schema")
        return real(self, changes)

    monkeypatch.setattr(SchemaManager, "commit_changes", flaky)
    with pytest.raises(ChainTableError, match="run the same change again|Fix the cause and run the same change"):
        t.update_schema().add_column("extra", "int").commit()
    assert calls == ["snapshot", "delta"] if fail_on == "delta" else ["snapshot", "delta", "main"]
    assert "extra" not in t.schema.field_names
    delta = t.on_branch("delta")  # a writer of the delta branch writes with that branch's schema
    put(delta, [(3, 1, "c", "20250811", 7)] if fail_on == "main" else [(3, 1, "c", "20250811")])
    assert read(t, eq("dt", "20250811")) == [(1, 1, "a", "20250811"), (2, 1, "b", "20250811"), (3, 1, "c", "20250811")]
    monkeypatch.setattr(SchemaManager, "commit_changes", real)
    t.update_schema().add_column("extra", "int").commit()  # the retry skips the branches that have it
    assert [t.on_branch(b).schema.field_names[-1] for b in ("main", "snapshot", "delta")] == ["extra"] * 3
    assert [len(t.on_branch(b).store.schemas.list_ids()) for b in ("main", "snapshot", "delta")] == [2, 2, 2]
    rows = read(t, eq("dt", "20250811"))
    assert rows[-1] == (3, 1, "c", "20250811", 7 if fail_on == "main" else None)


def test_missing_branch_and_inconsistent_buckets(catalog: Catalog) -> None:
    t = make(catalog)
    t.on_branch("delta").update_schema().set_options({"bucket": "3"}).commit()
    put(t, [(1, 1, "a", "20250810")], "snapshot")
    put(t, [(2, 1, "b", "20250811")], "delta")
    with pytest.raises(ChainTableError, match="inconsistent bucket"):
        t.scan().to_arrow()
    assert read(t, eq("dt", "20250810")) == [(1, 1, "a", "20250810")]  # no chain merge needed
    import shutil

    shutil.rmtree(f"{t.store.table_path}/branch/branch-delta")
    with pytest.raises(ChainTableError, match="delta branch 'delta' does not exist"):
        t.scan().to_arrow()


# ------------------------------------------------------------------------------------------------------
# Resolution
# ------------------------------------------------------------------------------------------------------
def test_anchor_is_the_latest_earlier_snapshot_and_deltas_are_after_it(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "s0805", "20250805")], "snapshot")
    put(t, [(1, 2, "s0808", "20250808"), (2, 2, "s0808", "20250808")], "snapshot")
    for day, rows in {
        "20250806": [(3, 3, "d0806")],
        "20250808": [(4, 3, "d0808")],
        "20250809": [(1, 5, "d0809")],
        "20250811": [(5, 5, "d0811")],
        "20250812": [(6, 5, "d0812")],
    }.items():
        put(t, [(*r, day) for r in rows], "delta")
    got = read(t, eq("dt", "20250811"))
    # anchor 0808 (not 0805, not the delta 0808), deltas 0809 and 0811 (not 0806/0808, not the later 0812)
    assert got == [(1, 5, "d0809", "20250811"), (2, 2, "s0808", "20250811"), (5, 5, "d0811", "20250811")]
    [e] = t.chain.explain("dt=20250811")
    assert e["anchor"] == {"dt": "20250808"} and e["deltas"] == [{"dt": "20250809"}, {"dt": "20250811"}]
    assert e["files"] == {"snapshot": 1, "delta": 2} and e["source"] == "chain"
    # no partition filter resolves every partition; the same rows for 0811
    assert [r for r in read(t) if r[3] == "20250811"] == got
    assert {e["partition"]["dt"]: e["source"] for e in t.chain.explain()} == {
        "20250805": "snapshot",
        "20250806": "chain",
        "20250808": "snapshot",
        "20250809": "chain",
        "20250811": "chain",
        "20250812": "chain",
    }
    # a requested partition that exists nowhere yields nothing
    assert read(t, eq("dt", "20250810")) == []


def test_no_anchor_merges_every_earlier_delta(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "a", "20250801")], "delta")
    put(t, [(1, 2, "b", "20250802"), (2, 1, "c", "20250802")], "delta")
    put(t, [(3, 1, "d", "20250803")], "delta")
    assert read(t, eq("dt", "20250802")) == [(1, 2, "b", "20250802"), (2, 1, "c", "20250802")]
    [e] = t.chain.explain({"dt": "20250803"})
    assert e["anchor"] is None and [d["dt"] for d in e["deltas"]] == ["20250801", "20250802", "20250803"]


def test_sequence_field_decides_across_branches_and_ties_go_to_later_partitions(catalog: Catalog) -> None:
    t = make(catalog)
    # Several snapshot commits give the anchor's rows large branch-local sequence numbers.
    for i in range(3):
        put(
            t,
            [(1, 5, f"anchor{i}", "20250810"), (2, 9, "anchor", "20250810"), (3, 1, "anchor", "20250810")],
            "snapshot",
        )
    put(t, [(1, 5, "tie-d11", "20250811"), (2, 4, "older", "20250811"), (3, 1, "tie-d11", "20250811")], "delta")
    put(t, [(3, 1, "tie-d12", "20250812")], "delta")
    assert read(t, eq("dt", "20250811")) == [
        (1, 5, "tie-d11", "20250811"),
        (2, 9, "anchor", "20250811"),
        (3, 1, "tie-d11", "20250811"),
    ]
    assert read(t, eq("dt", "20250812"))[2] == (3, 1, "tie-d12", "20250812")


def test_deletes_in_a_delta_remove_anchor_rows(catalog: Catalog) -> None:
    t = make(catalog, schema="t1 bigint, t2 bigint, t3 string, op string, dt string", options={"rowkind.field": "op"})
    assert t.options["rowkind.field"] == "op"
    put(t, [(1, 1, "a", "+I", "20250810"), (2, 1, "b", "+I", "20250810"), (3, 1, "c", "+I", "20250810")], "snapshot")
    put(t, [(2, 2, "b", "-D", "20250811"), (4, 1, "d", "+I", "20250811")], "delta")
    put(t, [(3, 0, "c", "-D", "20250812")], "delta")  # older than the anchor row: no effect
    put(t, [(9, 1, "x", "-D", "20250812")], "delta")  # deleting a key that never existed
    assert [r[0] for r in read(t, eq("dt", "20250811"))] == [1, 3, 4]
    assert [r[0] for r in read(t, eq("dt", "20250812"))] == [1, 3, 4]
    assert read(t, eq("dt", "20250812"), Leaf("t1", "=", 2)) == []


def test_partial_update_merges_across_the_chain(catalog: Catalog) -> None:
    t = make(
        catalog,
        schema="t1 bigint, t2 bigint, a string, b string, dt string",
        options={"merge-engine": "partial-update"},
    )
    put(t, [(1, 1, "a0", "b0", "20250810")], "snapshot")
    put(t, [(1, 2, None, "b1", "20250811")], "delta")
    put(t, [(1, 3, "a2", None, "20250812")], "delta")
    assert read(t, eq("dt", "20250812")) == [(1, 3, "a2", "b1", "20250812")]


def test_group_partitions_chain_independently(catalog: Catalog) -> None:
    t = make(
        catalog,
        schema="t1 bigint, t2 bigint, t3 string, region string, dt string",
        partition_keys=("region", "dt"),
        primary_keys=("region", "dt", "t1"),
        options={"chain-table.chain-partition-keys": "dt"},
    )
    put(t, [(1, 1, "eu-s0810", "eu", "20250810")], "snapshot")
    put(t, [(1, 1, "us-s0805", "us", "20250805")], "snapshot")
    put(t, [(2, 1, "eu-d0811", "eu", "20250811")], "delta")
    put(t, [(2, 1, "us-d0809", "us", "20250809")], "delta")
    put(t, [(3, 1, "us-d0811", "us", "20250811")], "delta")
    put(t, [(4, 1, "ap-d0811", "ap", "20250811")], "delta")
    got = read(t, eq("dt", "20250811"))
    assert got == [
        (1, 1, "eu-s0810", "eu", "20250811"),
        (1, 1, "us-s0805", "us", "20250811"),
        (2, 1, "eu-d0811", "eu", "20250811"),
        (2, 1, "us-d0809", "us", "20250811"),
        (3, 1, "us-d0811", "us", "20250811"),
        (4, 1, "ap-d0811", "ap", "20250811"),
    ]
    plan = {e["partition"]["region"]: e for e in t.chain.explain({"dt": "20250811"})}
    assert plan["eu"]["anchor"] == {"region": "eu", "dt": "20250810"}
    assert plan["us"]["anchor"] == {"region": "us", "dt": "20250805"}
    assert [d["dt"] for d in plan["us"]["deltas"]] == ["20250809", "20250811"]
    assert plan["ap"]["anchor"] is None
    assert read(t, eq("region", "us"), eq("dt", "20250811")) == [r for r in got if r[3] == "us"]


def test_hourly_chain(catalog: Catalog) -> None:
    t = make(
        catalog,
        schema="t1 bigint, t2 bigint, t3 string, dt string, hour string",
        partition_keys=("dt", "hour"),
        primary_keys=("dt", "hour", "t1"),
        options={
            "partition.timestamp-pattern": "$dt $hour:00:00",
            "partition.timestamp-formatter": "yyyyMMdd HH:mm:ss",
        },
    )
    put(t, [(1, 1, "s22", "20250810", "22"), (2, 1, "s22", "20250810", "22")], "snapshot")
    put(t, [(1, 2, "d22", "20250810", "22")], "delta")  # same hour as the anchor: excluded
    put(t, [(2, 2, "d23", "20250810", "23")], "delta")
    put(t, [(3, 2, "d00", "20250811", "00")], "delta")
    put(t, [(4, 2, "d01", "20250811", "01")], "delta")
    put(t, [(5, 2, "d02", "20250811", "02")], "delta")
    got = read(t, eq("dt", "20250811"), eq("hour", "01"))
    assert got == [
        (1, 1, "s22", "20250811", "01"),
        (2, 2, "d23", "20250811", "01"),
        (3, 2, "d00", "20250811", "01"),
        (4, 2, "d01", "20250811", "01"),
    ]
    [e] = t.chain.explain("dt=20250811,hour=01")
    assert [(d["dt"], d["hour"]) for d in e["deltas"]] == [("20250810", "23"), ("20250811", "00"), ("20250811", "01")]


def test_key_range_splits_give_the_same_rows(catalog: Catalog) -> None:
    t = make(catalog, options={"bucket": "1", "source.split.target-size": "1 b"})
    put(t, [(i, 1, "s", "20250810") for i in range(0, 10)], "snapshot")
    put(t, [(i, 2, "d", "20250811") for i in range(5, 8)], "delta")
    put(t, [(i, 2, "d", "20250811") for i in range(20, 25)], "delta")  # its own key range
    job = engine_read_job(t, predicate=[eq("dt", "20250811")])
    assert len(job.splits) == 2  # one bucket cut into two independent key ranges
    split_rows = read(t, eq("dt", "20250811"))
    t.update_schema().set_options({"chain-table.split.key-range-enabled": "false"}).commit()
    assert len(engine_read_job(t, predicate=[eq("dt", "20250811")]).splits) == 1
    assert read(t, eq("dt", "20250811")) == split_rows
    assert len(split_rows) == 15


def test_main_partitions_win_and_are_not_anchors(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "main", "20250810")])
    put(t, [(1, 1, "snap", "20250809")], "snapshot")
    put(t, [(2, 1, "d", "20250810")], "delta")
    put(t, [(3, 1, "d", "20250811")], "delta")
    assert read(t, eq("dt", "20250810")) == [(1, 1, "main", "20250810")]
    assert read(t, eq("dt", "20250811")) == [
        (1, 1, "snap", "20250811"),
        (2, 1, "d", "20250811"),
        (3, 1, "d", "20250811"),
    ]


# ------------------------------------------------------------------------------------------------------
# Compaction
# ------------------------------------------------------------------------------------------------------
def chain_days(t: Any) -> None:
    put(t, [(1, 1, "s", "20250810"), (2, 1, "s", "20250810")], "snapshot")
    for i, day in enumerate(["20250811", "20250812", "20250813", "20250814", "20250815"]):
        put(t, [(10 + i, 1, "d", day), (1, 2 + i, f"u{day}", day)], "delta")


def test_compact_single_partition(catalog: Catalog) -> None:
    t = make(catalog)
    chain_days(t)
    before = read(t, eq("dt", "20250813"))
    result = t.chain.compact({"dt": "20250813"})
    assert result.compacted == [{"dt": "20250813"}] and result.snapshot_id is not None
    assert t.on_branch("snapshot").snapshot(result.snapshot_id).commit_kind == "OVERWRITE"
    assert read(t, eq("dt", "20250813")) == before
    assert engine_read_arrow(t.on_branch("snapshot"), predicate=[eq("dt", "20250813")]).num_rows == len(before)
    # 0815 is now anchored on the compacted 0813
    [e] = t.chain.explain("dt=20250815")
    assert e["anchor"] == {"dt": "20250813"} and [d["dt"] for d in e["deltas"]] == ["20250814", "20250815"]
    skipped = t.chain.compact("dt=20250813")
    assert not skipped and "already in the snapshot branch" in skipped.skipped[0]["reason"]
    assert "not in the delta branch" in t.chain.compact("dt=20250899").skipped[0]["reason"]
    # overwrite recomputes it from its anchor and deltas
    put(t, [(1, 99, "late", "20250813")], "delta")
    assert t.chain.compact("dt=20250813", overwrite=True)
    assert (1, 99, "late", "20250813") in read(t, eq("dt", "20250813"))
    assert read(t, eq("dt", "20250813")) == sorted(
        set(before) - {(1, 4, "u20250813", "20250813")} | {(1, 99, "late", "20250813")}
    )


def test_compact_a_range_in_one_commit(catalog: Catalog) -> None:
    t = make(catalog)
    chain_days(t)
    views = {d: read(t, eq("dt", d)) for d in ("20250811", "20250812", "20250813", "20250814", "20250815")}
    snaps = len(t.on_branch("snapshot").snapshots())
    result = t.chain.compact(start={"dt": "20250812"}, end="dt=20250814")
    assert [p["dt"] for p in result.compacted] == ["20250812", "20250813", "20250814"]
    assert len(t.on_branch("snapshot").snapshots()) == snaps + 1
    assert {d: read(t, eq("dt", d)) for d in views} == views
    assert {e["partition"]["dt"]: e["source"] for e in t.chain.explain()} == {
        "20250810": "snapshot",
        "20250811": "chain",
        "20250812": "snapshot",
        "20250813": "snapshot",
        "20250814": "snapshot",
        "20250815": "chain",
    }
    result = t.chain.compact(["dt=20250811", {"dt": "20250815"}])
    assert len(result.compacted) == 2
    assert {d: read(t, eq("dt", d)) for d in views} == views
    with pytest.raises(ChainTableError, match="needs the partitions"):
        t.chain.compact()


def test_auto_compaction_after_delta_writes(catalog: Catalog) -> None:
    t = make(catalog, options={"chain-table.compact.auto-threshold": "2"})
    put(t, [(1, 1, "s", "20250810")], "snapshot")
    put(t, [(2, 1, "d", "20250811")], "delta")
    put(t, [(3, 1, "d", "20250812")], "delta")
    assert [e["source"] for e in t.chain.explain()] == ["snapshot", "chain", "chain"]
    put(t, [(4, 1, "d", "20250813")], "delta")  # reading 0813 would merge 3 > 2 deltas: compacted
    sources = {e["partition"]["dt"]: e for e in t.chain.explain()}
    assert sources["20250813"]["source"] == "snapshot"
    assert read(t, eq("dt", "20250813")) == [
        (1, 1, "s", "20250813"),
        (2, 1, "d", "20250813"),
        (3, 1, "d", "20250813"),
        (4, 1, "d", "20250813"),
    ]
    put(t, [(5, 1, "d", "20250814")], "delta")  # anchored on 0813: one delta, no compaction
    assert {e["partition"]["dt"]: e["source"] for e in t.chain.explain()}["20250814"] == "chain"


# ------------------------------------------------------------------------------------------------------
# Write rules
# ------------------------------------------------------------------------------------------------------
def test_drop_rules(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "s", "20250810")], "snapshot")
    put(t, [(2, 1, "d", "20250811")], "delta")
    empty: list[tuple] = []
    with pytest.raises(ChainTableError, match="Snapshot partition cannot be dropped"):
        put(
            t,
            empty,
            "snapshot",
            overwrite=True,
            overwrite_partition={"dt": "20250810"},
            dynamic_partition_overwrite=False,
        )
    with pytest.raises(ChainTableError, match="cannot be dropped"):
        put(t, empty, "snapshot", overwrite=True, dynamic_partition_overwrite=False)  # whole-branch overwrite
    # overwriting delta 0810 would truncate the only anchor of delta 0811: refused before committing
    put(t, [(3, 1, "d", "20250810")], "delta")
    delta_snaps = len(t.on_branch("delta").snapshots())
    with pytest.raises(ChainTableError, match="truncates the same snapshot partition"):
        put(t, [(3, 2, "d2", "20250810")], "delta", overwrite=True)
    assert len(t.on_branch("delta").snapshots()) == delta_snaps
    assert read(t, eq("dt", "20250811")) == [(1, 1, "s", "20250811"), (2, 1, "d", "20250811")]
    # a snapshot partition without dependants can be dropped; rewriting one is not a drop
    put(t, [(7, 1, "s", "20250820")], "snapshot")
    put(t, [(7, 2, "s2", "20250820")], "snapshot", overwrite=True)
    put(t, empty, "snapshot", overwrite=True, overwrite_partition={"dt": "20250820"}, dynamic_partition_overwrite=False)
    assert read(t, eq("dt", "20250820")) == []


def test_snapshot_drop_violations_helper() -> None:
    cfg = ChainConfig("s", "d", ("region", "dt"), ("dt",), "$dt", "yyyyMMdd")
    snaps = [("eu", "10"), ("eu", "12"), ("us", "10")]
    deltas = [("eu", "11"), ("eu", "13"), ("us", "11")]
    assert snapshot_drop_violations(cfg, snaps, deltas, [("eu", "12")]) == []  # eu/10 still anchors 13
    assert snapshot_drop_violations(cfg, snaps, deltas, [("eu", "10")]) == [(("eu", "10"), [("eu", "11")])]
    assert snapshot_drop_violations(cfg, snaps, deltas, [("us", "10")]) == [(("us", "10"), [("us", "11")])]


# ------------------------------------------------------------------------------------------------------
# Time travel, explain, pushdown-free equivalence
# ------------------------------------------------------------------------------------------------------
def test_time_travel(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "v1", "20250810")], "snapshot")
    put(t, [(2, 1, "v1", "20250811")], "delta")
    tags = t.chain.create_tag("v1")
    assert set(tags.tags) == {"snapshot", "delta"} and tags.skipped == ["main"]  # main has no snapshot to tag
    time.sleep(0.01)
    ts = int(time.time() * 1000)
    time.sleep(0.01)
    put(t, [(1, 2, "v2", "20250810")], "snapshot")
    put(t, [(2, 2, "v2", "20250811"), (3, 2, "v2", "20250811")], "delta")
    put(t, [(9, 9, "main", "20250811")])  # main gains the partition after the tag
    v1 = [(1, 1, "v1", "20250811"), (2, 1, "v1", "20250811")]
    assert read(t, eq("dt", "20250811")) == [(9, 9, "main", "20250811")]
    assert read(t, eq("dt", "20250811"), options={"scan.timestamp-millis": str(ts)}) == v1
    assert read(t, eq("dt", "20250811"), options={"scan.tag-name": "v1"}) == v1
    assert read(t, eq("dt", "20250811"), options={"scan.version": "v1"}) == v1
    assert t.chain.explain("dt=20250811", read_options={"scan.tag-name": "v1"})[0]["source"] == "chain"
    with pytest.raises(ChainTableError, match="branch-local"):
        t.scan(read_options={"scan.snapshot-id": "1"}).to_arrow()
    with pytest.raises(ChainTableError, match="chain tag"):
        t.scan(read_options={"scan.tag-name": "missing"}).to_arrow()
    t.on_branch("snapshot").tags.create("only-snapshot")
    with pytest.raises(ChainTableError, match="not on the delta branch"):
        t.scan(read_options={"scan.tag-name": "only-snapshot"}).to_arrow()
    with pytest.raises(ChainTableError, match="delta branch"):
        t.scan(read_options={"incremental-between": "1,2"}).to_arrow()
    # A branch that was empty when the chain tag was made reads as empty at that tag.
    t2 = make(catalog, "default.tt")
    put(t2, [(2, 1, "d", "20250811")], "delta")
    t2.chain.create_tag("early")
    put(t2, [(1, 1, "s", "20250810")], "snapshot")
    assert read(t2, eq("dt", "20250811"), options={"scan.tag-name": "early"}) == [(2, 1, "d", "20250811")]
    assert len(read(t2, eq("dt", "20250811"))) == 2


def test_plain_branch_reads_ignore_the_chain(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "s", "20250810")], "snapshot")
    put(t, [(2, 1, "d", "20250811")], "delta")
    assert read(t.on_branch("delta")) == [(2, 1, "d", "20250811")]
    assert read(t.on_branch("snapshot")) == [(1, 1, "s", "20250810")]
    assert read(t, options={"branch": "delta"}) == [(2, 1, "d", "20250811")]
    with pytest.raises(ChainTableError, match="plain table"):
        t.on_branch("delta").chain.explain()


def test_chain_with_partial_fallback_options_is_plain(catalog: Catalog) -> None:
    t = catalog.create_table(
        "default.p",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "t1"],
        options={**BASE, "chain-table.enabled": "true"},
    )
    put(t, [(1, 1, "main", "20250810")])
    assert read(t) == [(1, 1, "main", "20250810")]
    with pytest.raises(PaimonError, match="fallback"):
        t.chain.explain()


# ------------------------------------------------------------------------------------------------------
# A late delta fix reaches the snapshot partitions compacted from it (issue 22 item 5)
# ------------------------------------------------------------------------------------------------------
def test_a_delta_fix_before_compacted_days_recomputes_them(catalog: Catalog) -> None:
    t = make(catalog)
    put(t, [(1, 1, "base", "20250810"), (2, 1, "base", "20250810")], "snapshot")
    put(t, [(1, 2, "bad", "20250812")], "delta")
    put(t, [(3, 1, "d13", "20250813")], "delta")
    put(t, [(4, 1, "d14", "20250814")], "delta")
    assert t.chain.compact(start="dt=20250813", end="dt=20250814")
    assert [e["source"] for e in t.chain.explain()] == ["snapshot", "chain", "snapshot", "snapshot"]
    put(t, [(1, 3, "fixed", "20250812")], "delta")  # the late fix of day 12 (a newer sequence value)
    for day in ("20250812", "20250813", "20250814"):
        rows = {r[0]: r[2] for r in read(t, eq("dt", day))}
        assert rows[1] == "fixed", day
    # Days 13 and 14 were recomputed in the snapshot branch (the reads above hit it), each from the anchor below
    # it through every delta: day 14 did not inherit day 13's stale copy.
    assert [e["source"] for e in t.chain.explain()] == ["snapshot", "chain", "snapshot", "snapshot"]
    snap = {r[0]: r[2] for r in read(t.on_branch("snapshot"), eq("dt", "20250814"))}
    assert snap == {1: "fixed", 2: "base", 3: "d13", 4: "d14"}
    # An overwrite of the delta day works the same way (and truncates that day's own snapshot copy, as in Paimon).
    put(t, [(1, 4, "again", "20250813")], "delta", overwrite=True)
    assert {r[0]: r[2] for r in read(t, eq("dt", "20250814"))} == {1: "again", 2: "base", 4: "d14"}


def test_a_full_load_stops_the_cascade(catalog: Catalog) -> None:
    """A snapshot partition without a delta partition of its own is a full load: authoritative (Paimon's rule), so a
    delta written before it changes neither it nor the partitions it anchors."""
    t = make(catalog)
    put(t, [(1, 1, "d11", "20250811")], "delta")
    put(t, [(1, 1, "load", "20250812")], "snapshot")  # a full load of day 12
    put(t, [(1, 1, "d13", "20250813")], "delta")
    assert t.chain.compact("dt=20250813")
    put(t, [(1, 9, "late", "20250811")], "delta")
    assert read(t, eq("dt", "20250812")) == [(1, 1, "load", "20250812")]
    assert read(t, eq("dt", "20250813")) == [(1, 1, "d13", "20250813")]
    assert read(t, eq("dt", "20250811")) == [(1, 9, "late", "20250811")]


# ------------------------------------------------------------------------------------------------------
# A chain-compacted day is one top-level run (merge-free for every reader)
# ------------------------------------------------------------------------------------------------------
def snapshot_levels(t: Any, day: str) -> list[tuple[int, int, int]]:
    """(bucket, level, retract count) of the snapshot branch's live files of ``day``."""
    store = t.on_branch("snapshot").store
    snap = store.snapshots.latest()
    entries = store.manifests.read_entries(store.manifests.read_list(snap.base_manifest_list))
    entries += store.manifests.read_entries(store.manifests.read_list(snap.delta_manifest_list))
    live: dict[str, Any] = {}
    for e in entries:
        if e.kind == 0:
            live[e.file.file_name] = e
        else:
            live.pop(e.file.file_name, None)
    schema = t.schema
    from pyspark_paimon.metadata.rows.binary_row import deserialize_row

    types = [f.type for f in schema.partition_fields]
    return sorted(
        (e.bucket, e.file.level, e.file.delete_row_count)
        for e in live.values()
        if deserialize_row(e.partition, types)[0] == day
    )


def test_a_compacted_day_is_one_top_level_run(catalog: Catalog) -> None:
    t = make(catalog)
    chain_days(t)
    before = read(t, eq("dt", "20250813"))
    assert t.chain.compact("dt=20250813")
    top = t.schema.core_options.num_levels - 1
    assert {level for _, level, _ in snapshot_levels(t, "20250813")} == {top}
    readers = t.scan("dt = '20250813'").explain().readers
    assert readers.python_splits == 0 and readers.jvm_splits == 2
    assert read(t, eq("dt", "20250813")) == before
    # A later write into that snapshot partition lands at level 0 over the run and wins by sequence.
    put(t, [(1, 50, "over", "20250813")], "snapshot")
    assert {level for _, level, _ in snapshot_levels(t, "20250813")} == {0, top}
    rows = {r[0]: r[2] for r in read(t, eq("dt", "20250813"))}
    assert rows[1] == "over" and len(rows) == len(before)
    assert t.scan("dt = '20250813'").explain().readers.python_reasons == {"merge needed": 1}
    # The late-fix cascade recomputes day 13 (an overwrite of the partition): one top-level run again.
    put(t, [(1, 60, "late", "20250812")], "delta")
    assert {level for _, level, _ in snapshot_levels(t, "20250813")} == {top}
    assert {r[0]: r[2] for r in read(t, eq("dt", "20250813"))}[1] == "late"
    assert t.scan("dt = '20250813'").explain().readers.python_splits == 0
