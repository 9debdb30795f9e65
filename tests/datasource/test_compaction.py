"""Compaction without Spark (datasource/compact/): same rows before and after for every merge engine, LSM
layout and COMPACT commits as Java writes them, retraction dropping, rolling, races, crashes, append tables, automatic
compaction after writes."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.datasource.compact import compact as compact_mod
from pyspark_paimon.datasource.compact.bucket_rewrite import compact_bucket
from pyspark_paimon.datasource.compact.compact import compact
from pyspark_paimon.datasource.compact.compact_plan import CompactPlan, plan_compaction
from pyspark_paimon.datasource.compact.compact_runners import run_in_process
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.errors import CommitConflictError
from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_COMPACT, KIND_ADD, KIND_DELETE, ManifestEntry
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.table import Table

WRITE_ONLY = {"write-only": "true"}


def rows(t: Table, **options: str) -> list[dict[str, Any]]:
    data = t.scan(read_options=options or None).to_arrow()
    return sorted(data.to_pylist(), key=lambda r: tuple(str(r[k]) for k in sorted(r)))


def model(writes: list[pa.Table], engine: str = "deduplicate", keys: tuple[str, ...] = ("k",)) -> list[dict[str, Any]]:
    """The rows a primary-key table must hold after ``writes`` (in commit order), by the merge engine's rules
    applied to plain dicts: an independent oracle for what compaction may (not) change. ``aggregation`` is
    ``ENGINES``' setting: ``n`` summed, other columns keep their last non-null value."""
    state: dict[tuple, dict[str, Any]] = {}
    for data in writes:
        for r in data.to_pylist():
            key = tuple(r[k] for k in keys)
            old = state.get(key)
            if old is None:
                state[key] = r
            elif engine == "deduplicate":
                state[key] = r
            elif engine == "partial-update":
                state[key] = {c: old[c] if v is None else v for c, v in r.items()}
            elif engine == "aggregation":
                state[key] = {c: old[c] + v if c == "n" else (old[c] if v is None else v) for c, v in r.items()}
            elif engine != "first-row":
                raise AssertionError(engine)
    return sorted(state.values(), key=lambda r: tuple(str(r[k]) for k in sorted(r)))


def pk_table(
    tmp_path: Path,
    options: dict[str, str] | None = None,
    schema: str = "k int not null, v string, n bigint",
    partition_keys: tuple[str, ...] = (),
) -> Table:
    return Catalog(str(tmp_path)).create_table(
        "db.t",
        schema,
        primary_keys=["k", *partition_keys],
        partition_keys=list(partition_keys),
        options={"bucket": "2", **WRITE_ONLY, **(options or {})},
    )


def batch(keys: list[int], v: str, n: int | None = None, kinds: list[str] | None = None) -> pa.Table:
    cols: dict[str, Any] = {
        "k": pa.array(keys, pa.int32()),
        "v": [v] * len(keys),
        "n": pa.array([n if n is not None else i for i in range(len(keys))], pa.int64()),
    }
    if kinds is not None:
        cols["kind"] = kinds
    return pa.table(cols)


def delta_entries(t: Table) -> list[ManifestEntry]:
    snap = t.latest_snapshot()
    assert snap is not None
    ms = t.store.manifests
    return ms.read_entries(ms.read_list(snap.delta_manifest_list))


def live(t: Table) -> list[ManifestEntry]:
    return t.store.live_entries(t.latest_snapshot())


# ------------------------------------------------------------------------------------------------------ PK
ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_full_compaction_keeps_rows_for_every_engine(tmp_path: Path, engine: str) -> None:
    t = pk_table(tmp_path, ENGINES[engine])
    writes = []
    for i in range(6):
        data = batch([1, 2, 3, 10 + i], f"w{i}", i)
        if engine == "partial-update" and i % 2:
            data = data.set_column(1, "v", pa.array([None] * 4, pa.string()))
        t.write_arrow(data)
        writes.append(data)
    before = rows(t)
    assert before == model(writes, engine)
    levels_before = sorted(e.file.level for e in live(t))
    assert t.scan().explain().splits.max_sorted_runs == 6
    result = t.maintenance.compact(full=True)
    assert result and result.snapshot_id is not None and t.snapshot(result.snapshot_id).commit_kind == "COMPACT"
    assert rows(t) == model(writes, engine)
    # Inputs deleted at their original levels, outputs added at the max level as compaction output.
    entries = delta_entries(t)
    deleted = sorted(e.file.level for e in entries if e.kind == KIND_DELETE)
    assert deleted == levels_before == [0] * 12
    added = [e for e in entries if e.kind == KIND_ADD]
    assert added and all(e.file.level == 5 and e.file.file_source == FILE_SOURCE_COMPACT for e in added)
    plan = t.scan().explain()
    assert plan.splits.raw_convertible == plan.splits.count == 2  # reads no longer merge
    assert plan.splits.max_sorted_runs == 1 and {s.sorted_runs for s in plan.split_list} == {1}
    files = t.inspect.files()
    assert set(files.column("level").to_pylist()) == {5}
    assert not t.maintenance.compact(full=True)  # one max-level run per bucket: nothing to do


def test_outputs_keep_sequence_numbers_kinds_and_exact_stats(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "1"})
    writes = [batch(list(range(i, 40, 3)), f"w{i}", i) for i in range(4)]
    for data in writes:
        t.write_arrow(data)
    before = model(writes)
    newest = max(e.file.max_sequence_number for e in live(t))
    t.maintenance.compact(full=True)
    assert rows(t) == before
    (entry,) = live(t)
    f = entry.file
    data = pq.read_table(f"{t.store.table_path}/bucket-0/{f.file_name}")
    assert data.column_names[:3] == ["_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    keys = data.column("_KEY_k").to_pylist()
    assert keys == sorted(keys) and len(keys) == len(set(keys)) == f.row_count == len(before)
    seq = data.column("_SEQUENCE_NUMBER")
    assert (f.min_sequence_number, f.max_sequence_number) == (pc.min(seq).as_py(), pc.max(seq).as_py())
    assert f.max_sequence_number == newest  # sequence numbers are kept, not renumbered
    key_type = [t.schema.field("k").type.copy(nullable=False)]
    assert deserialize_row(f.min_key, key_type) == (keys[0],) and deserialize_row(f.max_key, key_type) == (keys[-1],)
    assert (
        f.delete_row_count == 0 and f.file_size == Path(f"{t.store.table_path}/bucket-0/{f.file_name}").stat().st_size
    )
    # A new write continues after the kept sequence numbers and wins over the compacted rows.
    t.write_arrow(batch([0], "after"))
    assert [r["v"] for r in rows(t) if r["k"] == 0] == ["after"]


def test_full_compaction_drops_retractions_intermediate_keeps_them(tmp_path: Path) -> None:
    t = pk_table(
        tmp_path, {"bucket": "1", "rowkind.field": "kind"}, schema="k int not null, v string, n bigint, kind string"
    )
    t.write_arrow(batch(list(range(20000)), "a", kinds=["+I"] * 20000))
    t.maintenance.compact(full=True)  # a large base run at level 5
    t.write_arrow(batch([2], "a", kinds=["-D"]))
    for i in range(4):
        t.write_arrow(batch([100000 + i], "x", kinds=["+I"]))
    expected = sorted(set(range(20000)) - {2} | set(range(100000, 100004)))
    # Universal compaction: five small level-0 runs against a large base go to level 4 (the base stays): the
    # -D of key 2 must survive there, or key 2 would come back from the base.
    result = compact(t.store, full=False)
    assert result
    assert sorted({e.file.level for e in live(t)}) == [4, 5]
    mid = [e.file for e in live(t) if e.file.level == 4]
    assert sum(f.delete_row_count or 0 for f in mid) == 1
    assert sorted(r["k"] for r in rows(t)) == expected
    t.maintenance.compact(full=True)
    assert {e.file.level for e in live(t)} == {5}
    assert all(e.file.delete_row_count == 0 for e in live(t))
    assert sorted(r["k"] for r in rows(t)) == expected


def test_outputs_roll_at_target_file_size_sorted_and_disjoint(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "1", "target-file-size": "8 kb"})
    writes = [batch(list(range(i * 2000, 3000 + i * 2000)), "v" * 20, i) for i in range(3)]
    for data in writes:
        t.write_arrow(data)
    t.maintenance.compact(full=True)
    assert rows(t) == model(writes)
    files = sorted((e.file for e in live(t)), key=lambda f: f.min_key)
    assert len(files) > 3
    key_type = [t.schema.field("k").type.copy(nullable=False)]
    ranges = sorted((deserialize_row(f.min_key, key_type)[0], deserialize_row(f.max_key, key_type)[0]) for f in files)
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))


def test_large_disjoint_files_are_upgraded_not_rewritten(tmp_path: Path) -> None:
    """Java's MergeTreeCompactTask: a large file that overlaps nothing moves to the output level by metadata
    alone (DELETE at its level + ADD of the same file at the new one); only overlapping sections are merged."""
    t = pk_table(tmp_path, {"bucket": "1", "target-file-size": "16 kb", "compaction.small-file-ratio": "0.1"})
    t.write_arrow(batch(list(range(20000)), "base"))  # one commit rolled into disjoint level-0 files
    base = {e.file.file_name: e.file for e in live(t)}
    assert len(base) > 3 and {f.level for f in base.values()} == {0}
    t.maintenance.compact(full=True)
    after = {e.file.file_name: e.file for e in live(t)}
    assert set(after) == set(base) and {f.level for f in after.values()} == {5}
    assert {f.file_source for f in after.values()} == {base[n].file_source for n in base}  # not rewritten
    deleted = [e for e in delta_entries(t) if e.kind == KIND_DELETE]
    assert {e.file.level for e in deleted} == {0} and len(deleted) == len(base)
    # A small update overlapping the first base file: only that file and the update are merged and rewritten.
    t.write_arrow(batch([5, 6], "new"))
    before = rows(t)
    t.maintenance.compact(full=True)
    assert rows(t) == before
    entries = delta_entries(t)
    rewritten = {e.file.file_name for e in entries if e.kind == KIND_DELETE}
    assert len(rewritten) == 2 and len(rewritten & set(base)) == 1
    untouched = set(base) - rewritten
    assert untouched <= {e.file.file_name for e in live(t)}
    assert all(e.file.file_source == FILE_SOURCE_COMPACT for e in entries if e.kind == KIND_ADD)
    assert {e.file.level for e in live(t)} == {5}


def test_losing_compaction_never_deletes_upgraded_inputs(tmp_path: Path) -> None:
    """An upgraded file is an input, not an output: when the compaction loses to a concurrent one, cleaning up
    its outputs must leave that file alone (the winner may have upgraded the very same file)."""
    t = pk_table(tmp_path, {"bucket": "1", "target-file-size": "16 kb", "compaction.small-file-ratio": "0.1"})
    t.write_arrow(batch(list(range(20000)), "base"))
    before = rows(t)

    def runner(plan: CompactPlan) -> list[CommitMessage]:
        messages = run_in_process(plan)
        if len(runs) == 0:
            assert any(f.file_name in {b.file_name for b in m.compact_before} for m in messages for f in m.new_files)
            assert compact(t.store, full=True)  # the same upgrades win first
        runs.append(1)
        return messages

    runs: list[int] = []
    result = compact(t.store, full=True, runner=runner)
    assert not result and result.attempts == 2  # re-planned: nothing left to do
    assert rows(t) == before


def test_partitions_argument_compacts_only_those(tmp_path: Path) -> None:
    t = pk_table(tmp_path, schema="k int not null, v string, n bigint, dt string", partition_keys=("dt",))
    writes = []
    for i in range(3):
        writes.append(batch([1, 2], "x", i).append_column("dt", pa.array(["a", "a"])))
        writes.append(batch([1, 2], "y", i).append_column("dt", pa.array(["b", "b"])))
        t.write_arrow(writes[-2])
        t.write_arrow(writes[-1])
    t.maintenance.compact(partitions="dt=a", full=True)
    assert rows(t) == model(writes, keys=("k", "dt"))
    by_part = {(deserialize_row(e.partition, [t.schema.field("dt").type])[0], e.file.level) for e in live(t)}
    assert by_part == {("a", 5), ("b", 0)}
    with pytest.raises(Exception, match="'zz'.*not partition columns"):
        t.maintenance.compact({"zz": 1})


def test_schema_evolution_outputs_latest_schema(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "1"})
    t.write_arrow(batch([1, 2], "old"))
    t.update_schema().add_column("extra", "string").commit()
    t.write_arrow(batch([2, 3], "new").append_column("extra", pa.array(["e", "e"])))
    before = rows(t)
    t.maintenance.compact(full=True)
    assert rows(t) == before
    assert {e.file.schema_id for e in live(t)} == {t.schema.id}


def test_lookup_changelog_tables_are_compacted_after_each_write(tmp_path: Path) -> None:
    """A lookup-producer table is compacted (its level 0 forced up) after every write, as Java's writers do, and
    each such compaction writes changelog files; explicit compactions work too."""
    t = pk_table(tmp_path, {"changelog-producer": "lookup", "write-only": "false"})
    for i in range(3):
        t.write_arrow(batch([1, i + 2], f"w{i}"))
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "COMPACT"] * 3
    assert [s.changelog_record_count for s in t.snapshots()][1::2] == [2, 3, 3]
    assert {e.file.level for e in live(t)} != {0}
    t.maintenance.compact(full=True)
    assert sorted((r["k"], r["v"]) for r in rows(t)) == [(1, "w2"), (2, "w0"), (3, "w1"), (4, "w2")]


def test_first_row_automatic_compaction_moves_level0_up(tmp_path: Path) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.t",
        "k int not null, v string, n bigint",
        primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "first-row"},
    )
    t.write_arrow(batch([1, 2], "first"))
    t.write_arrow(batch([2, 3], "second"))
    assert 0 not in {e.file.level for e in live(t)}  # as Java's lookup compaction leaves first-row buckets
    assert {r["k"]: r["v"] for r in rows(t)} == {1: "first", 2: "first", 3: "second"}
    # Key 2 of the second write was dropped, not kept below the first one: each key is in one level only
    # (what lets Java read first-row buckets without merging).
    assert sum(e.file.row_count for e in live(t)) == 3


def test_deletion_vector_tables_compact_partially_and_after_writes(tmp_path: Path) -> None:
    """Write-only appends to a deletion-vector table are level 0, which batch reads skip (as Java's); a partial
    compaction moves every level-0 file up (Java's ForceUpLevel0Compaction), a full one to the max level; and
    without write-only every write is compacted at once. The vectors written on the way:
    tests/datasource/test_deletion_vector_write.py."""
    t = pk_table(tmp_path, {"deletion-vectors.enabled": "true"})
    t.write_arrow(batch([1, 2], "a"))
    t.write_arrow(batch([2, 3], "b"))
    assert rows(t) == []
    assert t.maintenance.compact(full=False)
    assert 0 not in {e.file.level for e in live(t)}
    assert {r["k"]: r["v"] for r in rows(t)} == {1: "a", 2: "b", 3: "b"}
    t.write_arrow(batch([3], "c"))
    assert t.maintenance.compact(full=True)
    assert {r["k"]: r["v"] for r in rows(t)} == {1: "a", 2: "b", 3: "c"}
    assert t.latest_snapshot().index_manifest is None
    t.update_schema().set_options({"write-only": "false"}).commit()
    t.write_arrow(batch([4], "d"))
    assert {r["k"]: r["v"] for r in rows(t)} == {1: "a", 2: "b", 3: "c", 4: "d"}


def test_deletion_vectors_changed_meanwhile_is_a_conflict(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"deletion-vectors.enabled": "true", "bucket": "1"})
    t.write_arrow(batch([1, 2], "a"))
    t.write_arrow(batch([2, 3], "b"))
    attempts: list[CompactPlan] = []

    def runner(plan: CompactPlan) -> list[CommitMessage]:
        attempts.append(plan)
        if len(attempts) == 1:  # pretend the bucket had a vector when planned: the commit sees a change
            assert plan.vector_files == {}
            plan.vector_files = {(t.store.live_entries(t.latest_snapshot())[0].partition, 0): frozenset({"x"})}
        return run_in_process(plan)

    result = compact(t.store, full=True, runner=runner)
    assert result.attempts == 2 and "deletion vectors of bucket 0 changed" in result.notes[0]
    assert {r["k"]: r["v"] for r in rows(t)} == {1: "a", 2: "b", 3: "b"}


# ------------------------------------------------------------------------------------------------------ races
def test_writer_committing_during_compaction_loses_nothing(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "1"})
    for i in range(3):
        t.write_arrow(batch([1, 2, 3], f"w{i}"))

    def runner(plan: CompactPlan) -> list[CommitMessage]:
        messages = run_in_process(plan)
        t.write_arrow(batch([2, 99], "racing"))  # lands between the plan and the compaction's commit
        return messages

    result = compact(t.store, full=True, runner=runner)
    assert result and result.attempts == 1
    got = {r["k"]: r["v"] for r in rows(t)}
    assert got == {1: "w2", 2: "racing", 3: "w2", 99: "racing"}
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == ["APPEND"] * 4 + ["COMPACT"]


def test_two_compactions_racing_replan_instead_of_corrupting(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "1"})
    for i in range(3):
        t.write_arrow(batch([1, 2, 3], f"w{i}"))
    before = rows(t)
    calls = []

    def runner(plan: CompactPlan) -> list[CommitMessage]:
        messages = run_in_process(plan)
        if not calls:
            calls.append(1)
            assert compact(t.store, full=True)  # another compaction wins in between
            t.write_arrow(batch([4], "late"))
            t.write_arrow(batch([5], "late"))
        return messages

    result = compact(t.store, full=True, runner=runner)
    assert result.attempts == 2 and result.notes and "no longer live" in result.notes[0]
    assert rows(t) == sorted(
        before + [{"k": 4, "v": "late", "n": 0}, {"k": 5, "v": "late", "n": 0}],
        key=lambda r: tuple(str(r[k]) for k in sorted(r)),
    )
    # The losing attempt deleted its outputs: every data file on disk is referenced by some snapshot.
    on_disk = {p.name for p in (Path(t.store.table_path) / "bucket-0").iterdir()}
    referenced = {e.file.file_name for s in t.snapshots() for e in t.store.live_entries(s)}
    assert on_disk == referenced


def test_conflict_every_attempt_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = pk_table(tmp_path, {"bucket": "1"})
    for i in range(2):
        t.write_arrow(batch([1, 2], f"w{i}"))
    before = rows(t)
    monkeypatch.setattr(compact_mod, "MAX_ATTEMPTS", 2)

    def runner(plan: CompactPlan) -> list[CommitMessage]:
        messages = run_in_process(plan)
        t.maintenance.compact(full=True)  # removes this attempt's inputs every time...
        t.write_arrow(batch([3], "x"))  # ...and leaves something for the next plan
        return messages

    with pytest.raises(CommitConflictError, match="lost 2 times.*Nothing was committed"):
        compact(t.store, full=True, runner=runner)
    assert {r["k"] for r in rows(t)} == {r["k"] for r in before} | {3}


def test_crash_mid_compaction_leaves_table_readable(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "2"})
    for i in range(3):
        t.write_arrow(batch([1, 2, 3, 4, 5], f"w{i}"))
    before = rows(t)
    snapshots = len(t.snapshots())

    def crashing(plan: CompactPlan) -> list[CommitMessage]:
        compact_bucket(plan.context, plan.tasks[0])  # files written, never committed
        raise KeyboardInterrupt("killed")

    with pytest.raises(KeyboardInterrupt):
        compact(t.store, full=True, runner=crashing)
    assert rows(t) == before and len(t.snapshots()) == snapshots
    orphans = t.maintenance.remove_orphan_files(older_than=10**15)
    assert orphans.files and all(p.endswith(".parquet") for p in orphans.files)
    assert rows(t) == before
    assert t.maintenance.compact(full=True) and rows(t) == before


def test_failing_task_deletes_its_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = pk_table(tmp_path, {"bucket": "1", "target-file-size": "4 kb"})
    for i in range(2):
        t.write_arrow(batch(list(range(3000)), "v" * 10, i))
    files_before = {p.name for p in (Path(t.store.table_path) / "bucket-0").iterdir()}
    real = TableWriter.write_compacted
    calls = []

    def fail_later(self: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        real(self, *args, **kwargs)

    monkeypatch.setattr(TableWriter, "write_compacted", fail_later)
    with pytest.raises(OSError, match="disk full"):
        t.maintenance.compact(full=True)
    assert {p.name for p in (Path(t.store.table_path) / "bucket-0").iterdir()} == files_before


# ------------------------------------------------------------------------------------------------------ append
@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_append_small_files_compaction(tmp_path: Path, bucket: str) -> None:
    opts = {"bucket": bucket, **WRITE_ONLY, **({"bucket-key": "k"} if bucket != "-1" else {})}
    t = Catalog(str(tmp_path)).create_table("db.a", "k int, v string", options=opts)
    for i in range(6):
        t.write_arrow(pa.table({"k": pa.array([i, i + 100], pa.int32()), "v": [f"r{i}", f"s{i}"]}))
    before = [{"k": k, "v": f"{p}{i}"} for i in range(6) for k, p in ((i, "r"), (i + 100, "s"))]  # every row written
    files_before = len(live(t))
    assert compact(t.store) and t.latest_snapshot().commit_kind == "COMPACT"
    after = t.scan().to_arrow().to_pylist()
    assert sorted(after, key=str) == sorted(before, key=str)
    assert len(live(t)) < files_before
    added = [e.file for e in delta_entries(t) if e.kind == KIND_ADD]
    assert all(f.level == 0 and f.file_source == FILE_SOURCE_COMPACT for f in added)
    # Sequence ranges of the outputs continue from the first input's, as Java's append rewrite numbers them.
    assert all(f.max_sequence_number - f.min_sequence_number + 1 == f.row_count for f in added)
    assert not compact(t.store)  # fewer than compaction.min.file-num small files left


def test_append_min_file_num(tmp_path: Path) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.a", "k int, v string", options={**WRITE_ONLY, "compaction.min.file-num": "4"}
    )
    for i in range(3):
        t.write_arrow(pa.table({"k": pa.array([i], pa.int32()), "v": ["x"]}))
    assert not t.maintenance.compact()
    t.write_arrow(pa.table({"k": pa.array([9], pa.int32()), "v": ["x"]}))
    assert t.maintenance.compact() and len(live(t)) == 1


# ------------------------------------------------------------------------------------------------------ unaware
def unaware_table(tmp_path: Path, options: dict[str, str] | None = None, partitioned: bool = False) -> Table:
    return Catalog(str(tmp_path)).create_table(
        "db.u",
        "k int, v string" + (", p string" if partitioned else ""),
        partition_keys=["p"] if partitioned else [],
        options={**WRITE_ONLY, **(options or {})},
    )


def write_files(t: Table, count: int, start: int = 0, rows_per_file: int = 100, **columns: str) -> None:
    for i in range(start, start + count):
        data = {"k": pa.array(range(i * 1000, i * 1000 + rows_per_file), pa.int32()), "v": [f"r{i}"] * rows_per_file}
        t.write_arrow(pa.table({**data, **{c: [v] * rows_per_file for c, v in columns.items()}}))


@pytest.mark.parametrize("full", [False, True])
def test_unaware_twenty_tiny_files_become_one(tmp_path: Path, full: bool) -> None:
    """Java's AppendCompactCoordinator (what CALL sys.compact runs for bucket = -1, whatever the strategy):
    20 small files are one task, rewritten into one file. The fixed-bucket rule would take 5."""
    t = unaware_table(tmp_path)
    write_files(t, 20)
    before = rows(t)
    result = t.maintenance.compact(full=full)
    assert result and (result.files_before, result.files_after, result.buckets) == (20, 1, 1)
    assert rows(t) == before and len(before) == 2000
    (out,) = live(t)
    assert (out.bucket, out.file.level, out.file.row_count) == (0, 0, 2000)
    assert (out.file.min_sequence_number, out.file.max_sequence_number) == (0, 1999)
    assert not t.maintenance.compact(full=full)  # one file: nothing to pack


def test_unaware_bins_close_at_twice_the_target_with_javas_open_file_cost(tmp_path: Path) -> None:
    """target-file-size 100 kb: a bin closes at 200 kb. Each ~0.5 kb file counts 4 mb more (Java's
    open-file cost, not our read packing's 64 kb, with which bins would hold 4 files), so bins of 2."""
    t = unaware_table(tmp_path, {"target-file-size": "100 kb"})
    write_files(t, 7)
    before = rows(t)
    plan = plan_compaction(t.store)
    assert [len(task.files) for task in plan.tasks] == [2, 2, 2]  # the seventh file alone stays
    result = t.maintenance.compact()
    assert result and (result.buckets, result.files_before, result.files_after) == (1, 6, 3)
    assert len(live(t)) == 4 and rows(t) == before
    # Set on the table, the option is used: ~65 kb a file, so 4 files close a bin.
    t2 = unaware_table(tmp_path / "b", {"target-file-size": "100 kb", "source.split.open-file-cost": "64 kb"})
    write_files(t2, 7)
    assert [len(task.files) for task in plan_compaction(t2.store).tasks] == [4]  # 3 left < min-file-num


def test_unaware_files_at_the_compaction_size_stay(tmp_path: Path) -> None:
    """Only files below target-file-size x compaction.small-file-ratio are compacted; larger ones are never
    inputs, wherever they sit in sequence order (the fixed-bucket full rule only skips leading ones)."""
    t = unaware_table(tmp_path)
    write_files(t, 3)
    # one large file in the middle of the sequence (distinct random strings do not compress)
    t.write_arrow(pa.table({"k": pa.array(range(500), pa.int32()), "v": [os.urandom(16).hex() for _ in range(500)]}))
    write_files(t, 3, start=4)
    t.update_schema().set_options({"target-file-size": "8 kb"}).commit()  # small files are now those below 5734 bytes
    large = {e.file.file_name for e in live(t) if e.file.file_size >= 5734}
    assert len(large) == 1
    before = rows(t)
    result = t.maintenance.compact()
    assert result and result.files_before == 6
    assert large <= {e.file.file_name for e in live(t)} and rows(t) == before


def test_unaware_file_num_limit(tmp_path: Path) -> None:
    t = unaware_table(tmp_path, {"compaction.file-num-limit": "6"})
    write_files(t, 9)
    before = rows(t)
    result = t.maintenance.compact()
    assert result and (result.files_before, result.files_after) == (6, 1)
    assert len(live(t)) == 4 and rows(t) == before
    t.update_schema().set_options({"compaction.file-num-limit": "4"}).commit()
    assert not t.maintenance.compact()  # the first 4 small files are fewer than compaction.min.file-num


def test_unaware_partitions_are_packed_separately(tmp_path: Path) -> None:
    t = unaware_table(tmp_path, partitioned=True)
    write_files(t, 6, p="a")
    write_files(t, 4, start=10, p="b")  # fewer than compaction.min.file-num
    write_files(t, 5, start=20, p="c")
    before = rows(t)
    result = t.maintenance.compact(partitions=[{"p": "a"}, {"p": "b"}])
    assert result and (result.files_before, result.files_after, result.buckets) == (6, 1, 1)
    assert sorted(Counter(e.partition for e in live(t)).values()) == [1, 4, 5]
    assert t.maintenance.compact() and sorted(Counter(e.partition for e in live(t)).values()) == [1, 1, 4]
    assert rows(t) == before


# ------------------------------------------------------------------------------------------------------ auto
def test_automatic_compaction_after_writes(tmp_path: Path) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.t", "k int not null, v string, n bigint", primary_keys=["k"], options={"bucket": "1"}
    )
    for i in range(5):
        t.write_arrow(batch([1, 2, i + 10], f"w{i}", i))
    kinds = [s.commit_kind for s in t.snapshots()]
    # The fifth level-0 run trips the size-amplification rule: everything goes to the max level.
    assert kinds == ["APPEND"] * 5 + ["COMPACT"]
    assert {e.file.level for e in live(t)} == {5}
    assert {r["k"]: r["v"] for r in rows(t)} == {1: "w4", 2: "w4", 10: "w0", 11: "w1", 12: "w2", 13: "w3", 14: "w4"}


def test_write_only_and_full_compaction_delta_commits(tmp_path: Path) -> None:
    t = pk_table(tmp_path, {"bucket": "1"})  # write-only
    for i in range(7):
        t.write_arrow(batch([1], f"w{i}"))
    assert {s.commit_kind for s in t.snapshots()} == {"APPEND"}
    t.update_schema().set_options({"write-only": "false", "full-compaction.delta-commits": "1"}).commit()
    t.write_arrow(batch([2], "x"))
    assert [s.commit_kind for s in t.snapshots()][-2:] == ["APPEND", "COMPACT"]
    assert {e.file.level for e in live(t)} == {5}
    t.update_schema().set_options({"write-only": "false", "write.compaction-skip": "true"}).commit()
    t.write_arrow(batch([3], "y"))
    assert t.latest_snapshot().commit_kind == "APPEND"


def test_plan_is_empty_without_snapshot(tmp_path: Path) -> None:
    t = pk_table(tmp_path)
    assert plan_compaction(t.store, full=True).tasks == []
    assert not t.maintenance.compact(full=True)
