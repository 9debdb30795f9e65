"""``Table.diff(from_ref, to_ref)`` (issue 24): the rows that differ between two versions, by key for primary-key
tables and by file lineage for append tables, reading only the buckets / files that differ."""

from __future__ import annotations

import os
import random
import tempfile
from collections import Counter
from typing import Any
from unittest.mock import patch

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.stream import stream_jobs
from pyspark_paimon.datasource.versions.diff import DiffMetrics, diff_snapshots, resolve_ref
from pyspark_paimon.datasource.write import data_files
from pyspark_paimon.errors import SnapshotNotFoundError, TagNotFoundError

PK = ["id", "dt"]


def _pk(catalog: Catalog, name: str = "pk", bucket: int = 2) -> Table:
    return catalog.create_table(
        f"db.{name}",
        "id BIGINT, dt STRING, v BIGINT, s STRING",
        partition_keys=["dt"],
        primary_keys=PK,
        options={"bucket": str(bucket)},
    )


def _rows(t: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in t.to_pylist()]


def _model_diff(before: pa.Table, after: pa.Table) -> list[tuple]:
    """The expected diff by key, computed row by row in Python from two full reads."""
    return _model_diff_by(before, after, PK)


def _model_diff_by(before: pa.Table, after: pa.Table, key: list[str]) -> list[tuple]:
    b = {tuple(r[k] for k in key): r for r in before.to_pylist()}
    a = {tuple(r[k] for k in key): r for r in after.to_pylist()}
    out: list[tuple] = []
    for key in sorted(set(a) | set(b)):
        old, new = b.get(key), a.get(key)
        if old is None:
            assert new is not None
            out.append(("+I", *new.values()))
        elif new is None:
            out.append(("-D", *old.values()))
        elif old != new:
            out.append(("-U", *old.values()))
            out.append(("+U", *new.values()))
    return out


def test_pk_diff_between_tags(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": [10, 20, 30, 40], "s": list("wxyz")}))
    t.tags.create("v1")
    t.write_arrow(pa.table({"id": [2, 5], "dt": ["a", "b"], "v": [21, 50], "s": ["X", "n"]}))
    t.delete("id = 3")
    t.write_arrow(pa.table({"id": [4], "dt": ["b"], "v": [40], "s": ["z"]}))  # same row again: no change
    t.tags.create("v2")
    got = t.diff("v1", "v2")
    assert got.column_names == ["rowkind", "id", "dt", "v", "s"]
    assert _rows(got) == [
        ("-U", 2, "a", 20, "x"),
        ("+U", 2, "a", 21, "X"),
        ("-D", 3, "b", 30, "y"),
        ("+I", 5, "b", 50, "n"),
    ]
    # reversed: inserts become deletes and the update pair swaps
    assert _rows(t.diff("v2", "v1")) == [
        ("-U", 2, "a", 21, "X"),
        ("+U", 2, "a", 20, "x"),
        ("+I", 3, "b", 30, "y"),
        ("-D", 5, "b", 50, "n"),
    ]


def test_pk_diff_between_snapshot_ids_and_identical_versions(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["a", "a"], "v": [1, 2], "s": ["p", "q"]}))
    t.write_arrow(pa.table({"id": [1], "dt": ["a"], "v": [9], "s": ["p"]}))
    assert _rows(t.diff(1, 2)) == [("-U", 1, "a", 1, "p"), ("+U", 1, "a", 9, "p")]
    same = t.diff(2, 2)
    assert same.num_rows == 0 and same.column_names == ["rowkind", "id", "dt", "v", "s"]
    t.tags.create("head")
    assert t.diff("head", 2).num_rows == 0
    t.maintenance.compact(full=True)
    # a compaction rewrites files but changes no row
    assert t.diff(2, t.latest_snapshot().id).num_rows == 0  # type: ignore[union-attr]


def test_unknown_refs_raise_not_found_errors_naming_them(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.write_arrow(pa.table({"id": [1], "dt": ["a"], "v": [1], "s": ["p"]}))
    with pytest.raises(SnapshotNotFoundError, match="42"):
        t.diff(1, 42)
    with pytest.raises(TagNotFoundError, match="nobranch.v1"):
        t.diff("nobranch.v1", 1)
    with pytest.raises(TagNotFoundError, match="nope"):
        t.diff("nope", 1)


def _counted_diff(t: Table, from_ref: Any, to_ref: Any) -> tuple[list[tuple], DiffMetrics]:
    metrics = DiffMetrics()
    (from_store, before), (to_store, after) = resolve_ref(t.store, from_ref), resolve_ref(t.store, to_ref)
    return _rows(diff_snapshots(from_store, before, to_store, after, metrics=metrics)), metrics


def test_diff_reads_only_the_changed_buckets_and_compares_only_changed_keys(catalog: Catalog) -> None:
    t = _pk(catalog, bucket=4)
    ids = list(range(200))
    t.write_arrow(pa.table({"id": ids, "dt": ["a"] * 200, "v": ids, "s": ["x"] * 200}))
    t.write_arrow(pa.table({"id": ids, "dt": ["b"] * 200, "v": ids, "s": ["x"] * 200}))
    t.tags.create("before")
    t.write_arrow(pa.table({"id": [7], "dt": ["b"], "v": [700], "s": ["y"]}))
    t.tags.create("after")
    rows, metrics = _counted_diff(t, "before", "after")
    assert rows == [("-U", 7, "b", 7, "x"), ("+U", 7, "b", 700, "y")]
    # one bucket of one partition; the other 7 buckets are never opened. Its shared base file (about 50 rows) is
    # read once, not once per side, and only key 7's merged row of each side is compared, not the whole bucket.
    shared = [e.file for e in t.store.live_entries(t.store.snapshots.snapshot(1)) if e.file.row_count > 1]
    bucket_rows = {f.row_count for f in shared}
    assert metrics.buckets_by_key == 1 and metrics.buckets_whole == 0
    assert metrics.files_read == 2  # the shared file once, the new file once
    assert metrics.rows_read - 1 in bucket_rows and metrics.rows_read < 100
    assert metrics.rows_compared == 2
    # the other direction and a key that only one side holds
    t.write_arrow(pa.table({"id": [500], "dt": ["b"], "v": [5], "s": ["z"]}))
    rows, metrics = _counted_diff(t, "after", t.latest_snapshot().id)  # type: ignore[union-attr]
    assert rows == [("+I", 500, "b", 5, "z")]
    assert metrics.buckets_by_key == 1 and metrics.rows_compared == 1


def test_a_change_clustered_in_key_order_reads_only_its_row_groups(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_files, "ROW_GROUP_ROWS", 10)
    t = _pk(catalog, "clustered", bucket=1)
    ids = list(range(100))
    t.write_arrow(pa.table({"id": ids, "dt": ["a"] * 100, "v": ids, "s": ["x"] * 100}))  # 10 row groups
    t.tags.create("before")
    t.write_arrow(pa.table({"id": [13, 17], "dt": ["a", "a"], "v": [0, 0], "s": ["y", "y"]}))
    rows, metrics = _counted_diff(t, "before", t.latest_snapshot().id)  # type: ignore[union-attr]
    assert rows == [
        ("-U", 13, "a", 13, "x"),
        ("+U", 13, "a", 0, "y"),
        ("-U", 17, "a", 17, "x"),
        ("+U", 17, "a", 0, "y"),
    ]
    assert metrics.rows_read == 10 + 2  # keys 10-19 of the base file, and the new file


def test_lookup_table_diff_by_key_merges_as_a_read_does(catalog: Catalog) -> None:
    # A lookup table's compaction writes a key's merged state to level 4 and leaves the older state at level 5:
    # only the newest record above level 0 may take part in the merge, or the sum counts the old state twice.
    t = catalog.create_table(
        "db.lookup",
        "id BIGINT, v BIGINT",
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "changelog-producer": "lookup",
        },
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}))
    t.maintenance.compact(full=True)
    for i in (4, 5):
        t.write_arrow(pa.table({"id": [1, i], "v": [1, 1]}))  # each compacted into the level-5 file
    t.tags.create("v1")
    t.write_arrow(pa.table({"id": [1, 6], "v": [1, 1]}))  # compacted to level 4 (id 1 merged with level 5)
    levels = sorted(e.file.level for e in t.store.live_entries(t.latest_snapshot()))  # type: ignore[arg-type]
    assert levels == [4, 5]
    rows, metrics = _counted_diff(t, "v1", t.latest_snapshot().id)  # type: ignore[union-attr]
    assert rows == [("-U", 1, 12), ("+U", 1, 13), ("+I", 6, 1)]
    assert metrics.buckets_by_key == 1 and metrics.rows_compared == 3


def test_deletion_vector_aggregation_diff_applies_the_vectors(catalog: Catalog) -> None:
    # A deletion-vector compaction to level 4 merges key 1's level-5 record into its output and deletes that
    # record by vector; a diff that ignored the vectors summed both (25 instead of 13).
    t = catalog.create_table(
        "db.dvagg",
        "id BIGINT, v BIGINT",
        primary_keys=["id"],
        options={
            "bucket": "1",
            "deletion-vectors.enabled": "true",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
        },
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}))
    t.maintenance.compact(full=True)
    t.tags.create("v1")
    for i in (4, 5):
        t.write_arrow(pa.table({"id": [1, i], "v": [1, 1]}))
        t.maintenance.compact()
    t.write_arrow(pa.table({"id": [1, 6], "v": [1, 1]}))
    t.maintenance.compact()
    levels = sorted(e.file.level for e in t.store.live_entries(t.latest_snapshot()))  # type: ignore[arg-type]
    assert levels == [4, 5]
    want = _model_diff_by(t.scan(tag="v1").to_arrow(), t.scan().to_arrow(), ["id"])
    assert want == [("-U", 1, 10), ("+U", 1, 13), ("+I", 4, 1), ("+I", 5, 1), ("+I", 6, 1)]
    rows, metrics = _counted_diff(t, "v1", t.latest_snapshot().id)  # type: ignore[union-attr]
    assert rows == want
    assert rows == _whole_bucket_diff(t, "v1", t.latest_snapshot().id)  # type: ignore[union-attr]


def test_a_shared_file_whose_deletion_vector_changed_is_read_per_side(catalog: Catalog) -> None:
    # The level-5 file is in both versions, but the later one deletes key 1's row in it by vector (its new row
    # went to level 4): the file counts as each side's own, so key 1's old row is still seen on the old side.
    t = catalog.create_table(
        "db.dvdedup",
        "id BIGINT, v BIGINT",
        primary_keys=["id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": [10, 20, 30]}))
    t.maintenance.compact(full=True)
    for i in (4, 5):
        t.write_arrow(pa.table({"id": [1, i], "v": [7 + i, 10 * i]}))
        t.maintenance.compact()
    t.tags.create("v1")
    t.write_arrow(pa.table({"id": [1, 6], "v": [13, 60]}))
    t.maintenance.compact()
    old = {e.file.file_name for e in t.store.live_entries(t.tags.get("v1").snapshot)}
    new = {(e.file.file_name, e.file.level) for e in t.store.live_entries(t.latest_snapshot())}  # type: ignore[arg-type]
    assert any(name in old and level == 5 for name, level in new) and len(new) == 2
    rows, metrics = _counted_diff(t, "v1", t.latest_snapshot().id)  # type: ignore[union-attr]
    assert rows == [("-U", 1, 12), ("+U", 1, 13), ("+I", 6, 60)]
    assert rows == _model_diff_by(t.scan(tag="v1").to_arrow(), t.scan().to_arrow(), ["id"])
    assert metrics.buckets_whole == 1  # no file left in common: the whole bucket, the level-5 file once per side


def test_diff_by_key_across_schema_changes(catalog: Catalog) -> None:
    # Files written under three schemas in one bucket: each is read in the latest schema (by field id) before
    # the keys are matched, so the by-key comparison equals the whole-bucket one.
    t = _pk(catalog, "evolved", bucket=1)
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a"] * 3, "v": [10, 20, 30], "s": list("xyz")}))
    t.tags.create("v1")
    t.update_schema().add_column("n", "BIGINT").commit()
    t.write_arrow(pa.table({"id": [2], "dt": ["a"], "v": [21], "s": ["y"], "n": [5]}))
    t.tags.create("v2")
    t.update_schema().rename_column("s", "label").commit()
    t.write_arrow(pa.table({"id": [3, 4], "dt": ["a", "a"], "v": [30, 40], "label": ["Z", "w"], "n": [None, 1]}))
    t.tags.create("v3")
    for x, y in (("v1", "v2"), ("v1", "v3"), ("v2", "v3"), ("v3", "v1")):
        rows, metrics = _counted_diff(t, x, y)
        assert rows == _whole_bucket_diff(t, x, y)
        assert metrics.buckets_by_key == 1
    assert _counted_diff(t, "v2", "v3")[0] == [
        ("-U", 3, "a", 30, "z", None),
        ("+U", 3, "a", 30, "Z", None),
        ("+I", 4, "a", 40, "w", 1),
    ]


def test_append_table_diff_by_file_lineage(catalog: Catalog) -> None:
    t = catalog.create_table("db.app", "id BIGINT, dt STRING, v BIGINT", partition_keys=["dt"])
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [10, 20, 30]}))
    t.tags.create("v1")
    t.write_arrow(pa.table({"id": [4, 5], "dt": ["b", "b"], "v": [40, 50]}))
    assert _rows(t.diff("v1", 2)) == [("+I", 4, "b", 40), ("+I", 5, "b", 50)]
    t.delete("id = 2")  # copy-on-write: rewrites the file of partition 'a'; row 1 cancels out
    t.tags.create("v3")
    assert _rows(t.diff("v1", "v3")) == [("-D", 2, "a", 20), ("+I", 4, "b", 40), ("+I", 5, "b", 50)]
    assert _rows(t.diff("v3", "v1")) == [("+I", 2, "a", 20), ("-D", 4, "b", 40), ("-D", 5, "b", 50)]


def test_diff_between_branches(catalog: Catalog) -> None:
    t = _pk(catalog)
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["a", "a"], "v": [1, 2], "s": ["p", "q"]}))
    t.tags.create("base")
    t.branches.create("fix", tag="base")
    fix = t.on_branch("fix")
    fix.write_arrow(pa.table({"id": [2, 3], "dt": ["a", "a"], "v": [20, 3], "s": ["q", "r"]}))
    fix.tags.create("done")
    want = [("-U", 2, "a", 2, "q"), ("+U", 2, "a", 20, "q"), ("+I", 3, "a", 3, "r")]
    assert _rows(t.diff("main", "fix")) == want
    assert _rows(t.diff("base", "fix.done")) == want


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_diff_matches_a_model_of_two_full_reads(catalog: Catalog, seed: int) -> None:
    rng = random.Random(seed)
    t = _pk(catalog, f"m{seed}", bucket=rng.choice([1, 3]))
    versions: list[int] = []
    for _ in range(6):
        op = rng.random()
        n = rng.randint(1, 6)
        ids = [rng.randint(0, 12) for _ in range(n)]
        dts = [rng.choice("ab") for _ in range(n)]
        if op < 0.7 or not versions:
            rows = {(i, d): (rng.randint(0, 3), rng.choice("xy")) for i, d in zip(ids, dts)}
            t.write_arrow(
                pa.table(
                    {
                        "id": [k[0] for k in rows],
                        "dt": [k[1] for k in rows],
                        "v": [v[0] for v in rows.values()],
                        "s": [v[1] for v in rows.values()],
                    }
                )
            )
        else:
            t.delete(f"id <= {rng.randint(0, 12)} AND dt = '{rng.choice('ab')}'")
        snap = t.latest_snapshot()
        assert snap is not None
        versions.append(snap.id)
    for _ in range(4):
        x, y = rng.choice(versions), rng.choice(versions)
        want = _model_diff(t.scan(snapshot_id=x).to_arrow(), t.scan(snapshot_id=y).to_arrow())
        got = _rows(t.diff(x, y))
        assert got == want, (x, y)
        assert Counter(r[0] for r in got)["-U"] == Counter(r[0] for r in got)["+U"]


@pytest.mark.parametrize("seed", [5, 6])
def test_append_diff_matches_a_multiset_model(catalog: Catalog, seed: int) -> None:
    rng = random.Random(seed)
    t = catalog.create_table(f"db.app{seed}", "id BIGINT, dt STRING, v BIGINT", partition_keys=["dt"])
    versions: list[int] = []
    for _ in range(6):
        if rng.random() < 0.7 or not versions:
            n = rng.randint(1, 5)
            t.write_arrow(
                pa.table(
                    {
                        "id": [rng.randint(0, 9) for _ in range(n)],
                        "dt": [rng.choice("ab") for _ in range(n)],
                        "v": [rng.randint(0, 2) for _ in range(n)],
                    }
                )
            )
        else:
            t.delete(f"id = {rng.randint(0, 9)}")
        snap = t.latest_snapshot()
        assert snap is not None
        versions.append(snap.id)
    for _ in range(4):
        x, y = rng.choice(versions), rng.choice(versions)
        before = Counter(_rows(t.scan(snapshot_id=x).to_arrow()))
        after = Counter(_rows(t.scan(snapshot_id=y).to_arrow()))
        want = Counter({("+I", *r): c for r, c in (after - before).items()})
        want.update({("-D", *r): c for r, c in (before - after).items()})
        assert Counter(_rows(t.diff(x, y))) == want, (x, y)


# ------------------------------------------------------------------------------------------------------
# The diff by key equals the whole-bucket comparison (the path it replaced, kept as the oracle)
# ------------------------------------------------------------------------------------------------------
EXAMPLES = int(os.environ.get("PAIMON_HYPOTHESIS_EXAMPLES", "12"))
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "aggregation.remove-record-on-delete": "true",
    },
    "first-row": {"merge-engine": "first-row"},
    # only the newest record above level 0 of a key takes part in a lookup table's merge
    "aggregation, lookup changelog": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "aggregation.remove-record-on-delete": "true",
        "changelog-producer": "lookup",
    },
    "deduplicate, sequence.field": {"sequence.field": "v"},
}
_ROW = st.tuples(
    st.integers(0, 7), st.sampled_from("xy"), st.one_of(st.none(), st.integers(0, 3)), st.sampled_from("pq")
)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), st.lists(_ROW, min_size=1, max_size=4)),
        st.tuples(st.just("delete"), st.integers(0, 7)),
        st.tuples(st.just("compact"), st.booleans()),
    ),
    min_size=1,
    max_size=5,
)


def _whole_bucket_diff(t: Table, x: Any, y: Any) -> list[tuple]:
    with patch.object(stream_jobs, "_sides_by_key", return_value=None):
        return _rows(t.diff(x, y))


def test_diff_by_key_equals_the_whole_bucket_comparison() -> None:
    used = DiffMetrics()

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True)
    @given(
        engine=st.sampled_from(sorted(ENGINES)),
        dv=st.booleans(),
        composite=st.booleans(),
        first=st.lists(_ROW, min_size=1, max_size=4),
        ops=_OPS,
    )
    def check(engine: str, dv: bool, composite: bool, first: list[tuple], ops: list[tuple[str, Any]]) -> None:
        # row groups of 3 rows, so that shared files' row groups outside the changed keys' range are skipped
        with tempfile.TemporaryDirectory() as root, patch.object(data_files, "ROW_GROUP_ROWS", 3):
            options = {"bucket": "2", **ENGINES[engine]}
            if dv:
                options["deletion-vectors.enabled"] = "true"
            # composite: the bucket key (the primary key without the partition) is (id, g); else just id
            t = Catalog(root).create_table(
                "db.t",
                "id BIGINT NOT NULL, g STRING NOT NULL, dt STRING NOT NULL, v BIGINT, s STRING",
                partition_keys=["dt"] if composite else [],
                primary_keys=["id", "g", "dt"] if composite else ["id"],
                options=options,
            )
            versions: list[int] = []
            for op, arg in [("upsert", first), *ops]:
                if op == "upsert":
                    rows = {(r[0], r[1] if composite else "x"): r for r in arg}
                    t.write_arrow(
                        pa.table(
                            {
                                "id": [k[0] for k in rows],
                                "g": [k[1] for k in rows],
                                "dt": ["a" if k[0] % 3 else "b" for k in rows],
                                "v": [r[2] for r in rows.values()],
                                "s": [r[3] for r in rows.values()],
                            }
                        )
                    )
                elif op == "delete" and not engine.startswith("first-row"):
                    t.delete(f"id <= {arg}")
                elif op == "compact":
                    t.maintenance.compact(full=arg)
                snap = t.latest_snapshot()
                assert snap is not None
                versions.append(snap.id)
            versions = sorted(set(versions))
            for x, y in {(versions[0], versions[-1]), (versions[-1], versions[0]), *zip(versions, versions[1:])}:
                got, metrics = _counted_diff(t, x, y)
                assert got == _whole_bucket_diff(t, x, y), (engine, dv, composite, x, y)
                used.add(metrics)

    check()
    assert used.buckets_by_key > 0  # the examples took the new path, not only the fallback
