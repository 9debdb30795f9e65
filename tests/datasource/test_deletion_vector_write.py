"""Writes to deletion-vector primary-key tables (datasource/compact/dv_lookup.py ``DvLookup``): every commit is followed
by Java's lookup compaction, so the rows are visible at once, no file stays at level 0, and the older rows the
new ones supersede are marked in deletion vectors of files that were not rewritten. Checked against a model of
the merge engines; Java, Spark, pypaimon and pypaimon-rust reading the same tables: tests/interop/test_java.py
and tests/interop/test_interop_write.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.datasource.compact import compact_runners, dv_lookup
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.errors import CommitError, CompactionError
from pyspark_paimon.metadata.manifests.deletion_vectors import deletion_files
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.table import Table

BASE = 3000  # rows of the first write: big enough that small upserts go to a level below it (a lookup)
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "sequence-field": {"sequence.field": "n"},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
}


def dv_table(tmp_path: Path, name: str = "t", **options: str) -> Table:
    return Catalog(str(tmp_path)).create_table(
        f"db.{name}",
        "k int not null, v string, n bigint",
        primary_keys=["k"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", **options},
    )


def batch(keys: list[int] | np.ndarray, v: list[str | None] | str, n: list[int | None] | None = None) -> pa.Table:
    keys = list(keys)
    return pa.table(
        {
            "k": pa.array(keys, pa.int32()),
            "v": [v] * len(keys) if isinstance(v, str) or v is None else v,
            "n": pa.array(n if n is not None else [1] * len(keys), pa.int64()),
        }
    )


def model(writes: list[pa.Table], engine: str) -> dict[int, tuple[Any, Any]]:
    state: dict[int, dict[str, Any]] = {}
    for data in writes:
        for r in data.to_pylist():
            old = state.get(r["k"])
            if old is None or engine == "deduplicate":
                state[r["k"]] = r
            elif engine == "sequence-field":
                if r["n"] >= old["n"]:
                    state[r["k"]] = r
            elif engine == "partial-update":
                state[r["k"]] = {c: old[c] if x is None else x for c, x in r.items()}
            else:
                state[r["k"]] = {c: old[c] + x if c == "n" else (old[c] if x is None else x) for c, x in r.items()}
    return {k: (r["v"], r["n"]) for k, r in state.items()}


def state(t: Table) -> dict[int, tuple[Any, Any]]:
    return {r["k"]: (r["v"], r["n"]) for r in t.scan().to_arrow().to_pylist()}


def vectors(t: Table) -> dict[str, int]:
    """Data file name -> how many positions its deletion vector holds, in the latest snapshot."""
    snap = t.latest_snapshot()
    assert snap is not None
    if not snap.index_manifest:
        return {}
    got = deletion_files(
        t.store.fileio,
        t.store.manifests.path(snap.index_manifest),
        lambda e: f"{t.store.table_path}/index/{e.file_name}",
    )
    return {name: d.cardinality or 0 for per_bucket in got.values() for name, d in per_bucket.items()}


def check_layout(t: Table) -> None:
    """No level-0 file, and the live rows (stored minus vectors) are exactly the visible ones."""
    entries = t.store.live_entries(t.latest_snapshot())
    assert entries and {e.file.level for e in entries} - {0} == {e.file.level for e in entries}
    dvs = vectors(t)
    assert set(dvs) <= {e.file.file_name for e in entries}
    assert sum(e.file.row_count for e in entries) - sum(dvs.values()) == t.scan().to_arrow().num_rows


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_upserts_are_visible_at_once(tmp_path: Path, engine: str) -> None:
    t = dv_table(tmp_path, **ENGINES[engine])
    writes = [
        batch(np.arange(BASE), "base", list(range(BASE))),
        batch([2, 4, BASE + 1], ["u2", None, "new"], [5000, 7, 3]),
        batch([4, 5, 2], [None, "u5", "w2"], [6000, None if engine == "partial-update" else 2, 1]),
    ]
    snapshots = []
    for w in writes:
        t.write_arrow(w)
        snapshots.append([s.commit_kind for s in t.snapshots()])
        check_layout(t)
    assert state(t) == model(writes, engine)
    # Java's shape: each write is an APPEND (its level-0 files) and a COMPACT (the lookup compaction).
    assert snapshots[-1] == ["APPEND", "COMPACT"] * 3
    dvs = vectors(t)
    base_file = [e.file for e in t.store.live_entries(t.latest_snapshot()) if e.file.row_count == BASE]
    assert base_file, "the big first file was never rewritten: the upserts were looked up in it"
    assert dvs[base_file[0].file_name] == 3  # keys 2, 4 and 5 of the base file were superseded


def test_deletes_are_vectors_not_rows(tmp_path: Path) -> None:
    """A retraction supersedes the older row through its vector and is dropped itself (Java's dropDelete with
    deletion vectors), so no file above level 0 holds retractions and batch reads need no merge."""
    t = dv_table(tmp_path, **{"rowkind.field": "kind"})
    t.update_schema().add_column("kind", "string").commit()
    base = batch(np.arange(BASE), "base").append_column("kind", pa.array(["+I"] * BASE))
    t.write_arrow(base)
    t.write_arrow(batch([7, 8], "gone").append_column("kind", pa.array(["-D", "-D"])))
    assert sorted(state(t)) == [k for k in range(BASE) if k not in (7, 8)]
    check_layout(t)
    assert all(e.file.delete_row_count == 0 for e in t.store.live_entries(t.latest_snapshot()))
    assert sorted(vectors(t).values()) == [2]


def index_slots(t: Table) -> dict[tuple[str, str], int]:
    """(index type, partition value) -> rows of its index files, in the latest snapshot's index manifest."""
    snap = t.latest_snapshot()
    assert snap is not None and snap.index_manifest
    out: dict[tuple[str, str], int] = {}
    types = [f.type for f in t.schema.partition_fields]
    for e in read_index_manifest(t.store.fileio, t.store.manifests.path(snap.index_manifest)):
        key = (e.index_type, deserialize_row(e.partition, types)[0])
        out[key] = out.get(key, 0) + e.row_count
    return out


@pytest.mark.parametrize("bucket", ["1", "-1"])
def test_overwrite_drops_the_overwritten_vectors(tmp_path: Path, bucket: str) -> None:
    """Also with dynamic buckets, where the same commit replaces the partition's HASH index: both indexes change
    in one new index manifest."""
    t = Catalog(str(tmp_path)).create_table(
        "db.p",
        "p string not null, k int not null, v string",
        primary_keys=["p", "k"],
        partition_keys=["p"],
        options={"bucket": bucket, "deletion-vectors.enabled": "true"},
    )

    def rows(p: str, keys: list[int], v: str) -> pa.Table:
        return pa.table({"p": [p] * len(keys), "k": pa.array(keys, pa.int32()), "v": [v] * len(keys)})

    t.write_arrow(pa.concat_tables([rows("a", list(range(BASE)), "a0"), rows("b", list(range(BASE)), "b0")]))
    t.write_arrow(pa.concat_tables([rows("a", [1], "a1"), rows("b", [1], "b1")]))
    assert len(vectors(t)) == 2  # one vector per partition's base file
    t.write_arrow(rows("a", [1, 2], "a2"), mode="overwrite", overwrite_partition={"p": "a"})
    got = {(r["p"], r["k"]): r["v"] for r in t.scan().to_arrow().to_pylist()}
    assert {k: v for k, v in got.items() if k[0] == "a"} == {("a", 1): "a2", ("a", 2): "a2"}
    assert len([k for k in got if k[0] == "b"]) == BASE and got[("b", 1)] == "b1"
    assert len(vectors(t)) == 1  # partition a's vector left with its files
    check_layout(t)
    if bucket == "-1":
        assert index_slots(t) == {("HASH", "a"): 2, ("HASH", "b"): BASE, ("DELETION_VECTORS", "b"): 1}
    t.write_arrow(rows("c", [1], "c"), mode="overwrite")
    assert t.scan().to_arrow().to_pylist() == [{"p": "c", "k": 1, "v": "c"}]
    assert vectors(t) == {}


def test_a_failed_write_leaves_nothing_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails before its commit leaves no snapshot. One whose automatic compaction fails (after its
    retries) has its rows committed at level 0, invisible to batch reads as in Java until a compaction moves them
    up: it raises a CommitError that says the write took effect (not to retry it), and the next write's compaction
    takes them along."""
    t = dv_table(tmp_path)
    t.write_arrow(batch(np.arange(10), "a"))
    before = len(t.snapshots())

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    with monkeypatch.context() as m:
        m.setattr(TableWriter, "prepare_commit", broken)
        with pytest.raises(OSError, match="disk full"):
            t.write_arrow(batch([1], "lost"))
    assert len(t.snapshots()) == before and state(t)[1] == ("a", 1)
    with monkeypatch.context() as m:
        m.setattr(compact_runners, "compact_bucket", broken)
        with pytest.raises(CommitError, match="took effect") as failed:
            t.write_arrow(batch([2], "late"))
    assert failed.value.outcome == "applied" and failed.value.safe_to_retry is False
    assert state(t)[2] == ("a", 1)
    assert 0 in {e.file.level for e in t.store.live_entries(t.latest_snapshot())}
    t.write_arrow(batch([3], "next"))
    assert state(t)[2] == ("late", 1) and state(t)[3] == ("next", 1)
    check_layout(t)


def test_incremental_reads_see_the_changes(tmp_path: Path) -> None:
    """An incremental read returns the level-0 files of the APPEND snapshots in the range, merged (the COMPACT
    snapshots that moved them up are skipped). Those files never have vectors: a vector only marks rows of
    older files, and Java's delta reads take a file's vectors as of the snapshot that added it (none yet)."""
    t = dv_table(tmp_path)
    t.write_arrow(batch(np.arange(BASE), "a"))
    t.write_arrow(batch([1, 2], "b"))
    t.write_arrow(batch([2, 3], "c"))
    got = t.scan(read_options={"incremental-between": "2,6"}).to_arrow().to_pylist()
    assert sorted((r["k"], r["v"]) for r in got) == [(1, "b"), (2, "c"), (3, "c")]


def test_writes_paimon_must_compact_are_refused(tmp_path: Path) -> None:
    """With a changelog producer that only Paimon's compaction feeds (full-compaction, with vectors), our
    automatic compaction stays away, so a write would never become visible: refused with the way out, unless
    write-only says a Paimon job compacts. (lookup: our lookup compaction writes its changelog.)"""
    t = dv_table(tmp_path, **{"changelog-producer": "full-compaction"})
    with pytest.raises(CompactionError, match="'changelog-producer' = 'full-compaction'.*'write-only' = 'true'"):
        t.write_arrow(batch([1], "a"))
    assert t.latest_snapshot() is None
    t.update_schema().set_options({"write-only": "true"}).commit()
    t.write_arrow(batch([1], "a"))
    assert state(t) == {}  # level 0 until Paimon compacts, as Java's write-only writers leave it


def test_a_stream_plan_reads_level_0(tmp_path: Path) -> None:
    """A stream's full phase reads every level of a deletion-vector table (Java's DataTableStreamScan), merging
    level 0 with the vectors of the files below; batch scans skip level 0 (Java's batchScanSkipLevel0)."""
    t = dv_table(tmp_path)
    t.write_arrow(batch(np.arange(BASE), "a"))
    t.update_schema().set_options({"write-only": "true"}).commit()
    t.write_arrow(batch([1], "b"))  # an APPEND not compacted yet, as a stream may find it
    snapshot, schema = t.latest_snapshot(), t.store.schema()
    assert snapshot is not None
    batch_levels = {f.level for s in ScanPlanner(t.store, schema, {}).plan(snapshot).splits for f in s.files}
    stream_plan = ScanPlanner(t.store, schema, {}, streaming=True).plan(snapshot)
    assert 0 not in batch_levels and 0 in {f.level for s in stream_plan.splits for f in s.files}
    assert not any(s.raw_convertible for s in stream_plan.splits if any(f.level == 0 for f in s.files))


def _level0_fate(t: Table) -> tuple[set[str], set[str]]:
    """(names of the files the last write added at level 0, names of the live files after its compaction)."""
    append, compacted = t.snapshots()[-2:]
    assert (append.commit_kind, compacted.commit_kind) == ("APPEND", "COMPACT")
    added = {e.file.file_name for e in t.store.live_entries(append) if e.file.level == 0}
    return added, {e.file.file_name for e in t.store.live_entries(compacted)}


@pytest.mark.parametrize(
    ("engine", "key_type", "upgraded"),
    [("deduplicate", "int", True), ("deduplicate", "string", True), ("partial-update", "int", False)],
)
def test_level_0_files_move_up_without_a_rewrite_where_java_does(
    tmp_path: Path, engine: str, key_type: str, upgraded: bool
) -> None:
    """Java's upgrade rule with deletion vectors (LookupMergeTreeCompactRewriter.upgradeStrategy): a lone level-0
    file without retractions keeps its bytes when it goes to the max level (a first write into an empty bucket)
    or when the engine is deduplicate without a sequence field; its keys are still looked up and the older rows
    they supersede marked (by binary search for one integer key, by a join otherwise). Other engines rewrite it
    when older rows exist, merging them in."""
    t = Catalog(str(tmp_path)).create_table(
        "db.t",
        f"k {key_type} not null, v string",
        primary_keys=["k"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", **ENGINES[engine]},
    )

    def rows(keys: list[int], v: str) -> pa.Table:
        k = pa.array(keys, pa.int32()) if key_type == "int" else pa.array([f"{x:06d}" for x in keys])
        return pa.table({"k": k, "v": [v] * len(keys)})

    t.write_arrow(rows(list(range(BASE)), "a"))
    added, live = _level0_fate(t)
    assert added == live  # into an empty bucket: moved to the max level as it is, for every engine
    t.write_arrow(rows([5, 7, BASE + 1], "b"))
    added, live = _level0_fate(t)
    assert (added <= live) is upgraded
    first = [e.file.file_name for e in t.store.live_entries(t.latest_snapshot()) if e.file.row_count == BASE]
    assert vectors(t) == {first[0]: 2}  # keys 5 and 7 of the first file
    assert t.scan().to_arrow().num_rows == BASE + 1
    check_layout(t)


def test_lookup_reads_only_older_files_whose_key_range_holds_a_new_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup after a write skips older files whose min/max key (the manifest's) holds none of the new keys:
    inserting keys above every stored one reads no older file, and an upsert reads only the file its keys fall in;
    the superseded rows are still marked."""
    t = dv_table(tmp_path)
    t.write_arrow(batch(range(100), "a"))
    t.write_arrow(batch(range(1000, 1050), "b"))
    files = {e.file.file_name: e.file for e in t.store.live_entries(t.latest_snapshot())}
    low = next(name for name, f in files.items() if f.row_count == 100)
    read: list[str] = []
    real = dv_lookup.read_data_file

    def counting(ctx: Any, split: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(f.file_name)
        return real(ctx, split, f, *args, **kwargs)

    monkeypatch.setattr(dv_lookup, "read_data_file", counting)
    t.write_arrow(batch(range(2000, 2010), "c"))  # above every stored key
    assert not set(read) & set(files)
    read.clear()
    t.write_arrow(batch([5, 7], "d"))  # inside the first file's range only
    assert set(read) & set(files) == {low}
    assert vectors(t)[low] == 2
    expected = {k: ("a", 1) for k in range(100)} | {k: ("b", 1) for k in range(1000, 1050)}
    expected |= {k: ("c", 1) for k in range(2000, 2010)} | {5: ("d", 1), 7: ("d", 1)}
    assert state(t) == expected
    check_layout(t)
