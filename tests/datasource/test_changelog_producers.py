"""Changelog producers without Spark: 'input' writes the input rows as changelog files, a full compaction of a
'full-compaction' table writes the changes it publishes, and streams of such tables follow those files (Java's
ChangelogFollowUpScanner). Java produces the same files for the same inputs: tests/interop/test_java_changelog.py."""

from __future__ import annotations

from typing import Sequence

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.planner.stream_offset import StreamOffset

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("_rk", pa.string())])


def _table(catalog: Catalog, producer: str, **options: str) -> Table:
    opts = {"bucket": "1", "changelog-producer": producer, "rowkind.field": "_rk", **options}
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options=opts)


def _write(t: Table, rows: Sequence[tuple[int, str, str]], mode: str = "append") -> None:
    t.write_arrow(pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA), mode=mode)


def _stream(t: Table, start: StreamOffset | None = None, **options: str) -> tuple[list[tuple], StreamOffset]:
    job = StreamReadJob(t.store, {"path": t.store.table_path, **options})
    pos = start or job.initial_offset()
    splits, end = job.next_batch(pos)
    ctx = job.context()
    return [tuple(r.values())[:3] for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()], end


def _changelog_files(t: Table) -> list[str]:
    return [n for n in t.store.fileio.list_names(f"{t.store.table_path}/bucket-0") if n.startswith("changelog-")]


FROM_FIRST = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}


def test_input_producer_streams_the_input_rows_with_their_kinds(catalog: Catalog) -> None:
    t = _table(catalog, "input")
    _write(t, [(1, "a", "+I"), (2, "b", "+I"), (1, "c", "+U")])
    _write(t, [(2, "b", "-D"), (1, "c", "-U")])
    assert [s.changelog_record_count for s in t.snapshots()] == [3, 2]
    assert len(_changelog_files(t)) == 2
    rows, _ = _stream(t, **FROM_FIRST, **{"read.changelog": "true"})
    # Every input row, in key order per write (Java sorts a write buffer before its changelog writer sees it).
    assert rows == [("+I", 1, "a"), ("+U", 1, "c"), ("+I", 2, "b"), ("-U", 1, "c"), ("-D", 2, "b")]
    rows, _ = _stream(t, **FROM_FIRST)  # without read.changelog: only the rows that are a key's new state
    assert rows == [(1, "a", "+I"), (1, "c", "+U"), (2, "b", "+I")]
    assert t.scan().to_arrow().num_rows == 0  # batch reads never read changelog files


def test_input_producer_overwrite_commits_no_changelog(catalog: Catalog) -> None:
    t = _table(catalog, "input")
    _write(t, [(1, "a", "+I")])
    _write(t, [(2, "b", "+I")], mode="overwrite")
    assert [(s.commit_kind, s.changelog_record_count) for s in t.snapshots()] == [("APPEND", 1), ("OVERWRITE", None)]
    assert len(_changelog_files(t)) == 1  # the overwrite's changelog file was deleted, as Java ignores it


def test_full_compaction_changelog_streams_before_images(catalog: Catalog) -> None:
    t = _table(catalog, "full-compaction", **{"write-only": "true"})
    _write(t, [(1, "a", "+I"), (2, "b", "+I")])
    rows, pos = _stream(t, **FROM_FIRST, **{"read.changelog": "true"})
    assert rows == []  # nothing before a full compaction publishes it
    t.maintenance.compact(full=True)
    _write(t, [(1, "a2", "+U"), (2, "b", "-D"), (3, "c", "+I")])
    t.maintenance.compact()  # a minor compaction stays below the top level: no changelog
    t.maintenance.compact(full=True)
    rows, _ = _stream(t, pos, **{"read.changelog": "true"})
    assert rows == [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b"), ("+I", 3, "c")]
    assert [(s.commit_kind, s.changelog_record_count) for s in t.snapshots()][-1] == ("COMPACT", 4)


def test_full_compaction_stream_starts_from_the_top_level(catalog: Catalog) -> None:
    t = _table(catalog, "full-compaction", **{"write-only": "true"})
    _write(t, [(1, "a", "+I")])
    t.maintenance.compact(full=True)
    _write(t, [(2, "b", "+I")])  # level 0: a later full compaction reports it
    rows, pos = _stream(t, **{"read.changelog": "true"})
    assert rows == [("+I", 1, "a")]
    t.maintenance.compact(full=True)
    rows, _ = _stream(t, pos, **{"read.changelog": "true"})
    assert rows == [("+I", 2, "b")]


def test_lookup_changelog_streams_before_images(catalog: Catalog) -> None:
    """Each write's lookup compaction writes the changes with their before-images, looked up in the higher
    levels (Java's LookupChangelogMergeFunctionWrapper): what Java writes for the same inputs,
    tests/interop/test_java_changelog.py."""
    t = _table(catalog, "lookup")
    _write(t, [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")])
    _write(t, [(1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I"), (3, "c", "+I")])
    rows, end = _stream(t, **FROM_FIRST, **{"read.changelog": "true"})
    assert rows == [
        ("+I", 1, "a"),
        ("+I", 2, "b"),
        ("+I", 3, "c"),
        ("-U", 1, "a"),
        ("+U", 1, "a2"),
        ("-D", 2, "b"),
        ("-U", 3, "c"),
        ("+U", 3, "c"),
        ("+I", 4, "d"),
    ]
    _write(t, [(3, "c", "+I"), (4, "d2", "+I")])
    t.update_schema().set_options({"changelog-producer.row-deduplicate": "true"}).commit()
    _write(t, [(3, "c", "+I"), (4, "d3", "+I")])  # row-deduplicate: the unchanged key 3 yields nothing
    rows, _ = _stream(t, end, **{"read.changelog": "true"})
    assert rows == [("-U", 3, "c"), ("+U", 3, "c"), ("-U", 4, "d"), ("+U", 4, "d2"), ("-U", 4, "d2"), ("+U", 4, "d3")]


def test_lookup_changelog_of_first_row(catalog: Catalog) -> None:
    """first-row: only a key seen for the first time is a change (+I); later rows of it are dropped."""
    t = _table(catalog, "lookup", **{"merge-engine": "first-row"})
    _write(t, [(1, "a", "+I"), (2, "b", "+I")])
    _write(t, [(1, "x", "+I"), (3, "c", "+I")])
    rows, _ = _stream(t, **FROM_FIRST, **{"read.changelog": "true"})
    assert rows == [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")]
    assert sorted((r["id"], r["v"]) for r in t.scan().to_arrow().to_pylist()) == [(1, "a"), (2, "b"), (3, "c")]


def test_an_expired_changelog_is_a_clear_error(catalog: Catalog) -> None:
    t = _table(catalog, "input")
    _write(t, [(1, "a", "+I")])
    snapshot = t.store.snapshots.latest()
    assert snapshot is not None and snapshot.changelog_manifest_list is not None
    t.store.fileio.delete(t.store.manifests.path(snapshot.changelog_manifest_list))
    with pytest.raises(SnapshotNotFoundError, match="the changelog of snapshot 1 .*is gone"):
        _stream(t, **FROM_FIRST)


def _start(t: Table, **options: str) -> StreamOffset:
    return StreamReadJob(t.store, {"path": t.store.table_path, **options}).initial_offset()


def test_compacted_full_starts_at_the_latest_full_compaction(catalog: Catalog) -> None:
    t = _table(catalog, "full-compaction", **{"write-only": "true"})
    _write(t, [(1, "a", "+I")])
    t.maintenance.compact(full=True)  # snapshot 2
    _write(t, [(2, "b", "+I")])  # snapshot 3: no changelog
    options = {"scan.mode": "compacted-full", "read.changelog": "true"}
    assert _start(t, **options) == StreamOffset(2, -1, "full")
    rows, pos = _stream(t, **options)
    assert rows == [("+I", 1, "a")]  # the compacted snapshot's top level; snapshot 3 has no changelog
    t.maintenance.compact(full=True)
    assert _stream(t, pos, **options)[0] == [("+I", 2, "b")]


def test_compacted_full_without_a_producer_starts_at_the_latest_compaction(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.p", SCHEMA, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "_rk", "write-only": "true"}
    )
    _write(t, [(1, "a", "+I")])
    _write(t, [(2, "b", "+I")])
    assert _start(t, **{"scan.mode": "compacted-full"}) == StreamOffset(2, -1, "full")  # no compaction: latest
    t.maintenance.compact(full=True)
    _write(t, [(3, "c", "+I")])
    assert _start(t, **{"scan.mode": "compacted-full"}) == StreamOffset(3, -1, "full")
    rows, _ = _stream(t, **{"scan.mode": "compacted-full"})
    assert rows == [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")]  # the compaction's rows, then its deltas


def test_streaming_read_overwrite_is_refused_with_compaction_producers(catalog: Catalog) -> None:
    t = _table(catalog, "full-compaction")
    with pytest.raises(OptionError, match="'streaming-read-overwrite' cannot be used .* read them twice"):
        _stream(t, **{"streaming-read-overwrite": "true"})


def test_row_deduplicate_ignores_the_named_fields(catalog: Catalog) -> None:
    t = _table(
        catalog,
        "full-compaction",
        **{
            "write-only": "true",
            "changelog-producer.row-deduplicate": "true",
            "changelog-producer.row-deduplicate-ignore-fields": "_rk",
        },
    )
    _write(t, [(1, "a", "+I"), (2, "b", "+I")])
    t.maintenance.compact(full=True)
    _write(t, [(1, "a", "+U"), (2, "B", "+U"), (9, "z", "-D")])  # 1: only _rk changed; 9: never existed
    t.maintenance.compact(full=True)
    rows, _ = _stream(t, **FROM_FIRST, **{"read.changelog": "true"})
    assert rows == [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 2, "b"), ("+U", 2, "B")]


def test_full_compaction_changelog_of_a_partitioned_table(catalog: Catalog) -> None:
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
    t = catalog.create_table(
        "db.p",
        schema,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "changelog-producer": "full-compaction", "write-only": "true"},
    )
    t.write_arrow(pa.table({"dt": ["d1", "d1", "d2"], "id": [1, 2, 1], "v": ["a", "b", "c"]}, schema=schema))
    t.maintenance.compact(full=True)
    t.write_arrow(pa.table({"dt": ["d1", "d2"], "id": [2, 3], "v": ["B", "x"]}, schema=schema))
    t.maintenance.compact(full=True)
    job = StreamReadJob(t.store, {"path": t.store.table_path, "read.changelog": "true", **FROM_FIRST})
    splits, _ = job.next_batch(job.initial_offset())
    ctx = job.context()
    rows = [tuple(r.values()) for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]
    first, second = rows[:3], rows[3:]
    assert sorted(first) == [("+I", "d1", 1, "a"), ("+I", "d1", 2, "b"), ("+I", "d2", 1, "c")]
    assert sorted(second) == [("+I", "d2", 3, "x"), ("+U", "d1", 2, "B"), ("-U", "d1", 2, "b")]
    assert t.snapshots()[-1].changelog_record_count == 3


def test_decoupled_changelog_outlives_its_snapshots(catalog: Catalog) -> None:
    """A changelog retention longer than the snapshots' (Java's decoupled lifecycle): expiring snapshots are kept
    as changelog/changelog-N, a stream still reads their changes, and expire_changelogs frees them later while
    the table's data stays whole."""
    from pyspark_paimon.metadata.maintenance.expire import expire_changelogs

    t = _table(
        catalog,
        "lookup",
        **{
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "2",
            "snapshot.time-retained": "1 ms",
            "changelog.num-retained.max": "50",
            "changelog.time-retained": "1 d",
        },
    )
    _write(t, [(1, "a", "+I"), (2, "b", "+I")])
    _write(t, [(1, "a2", "+I")])
    _write(t, [(2, "b", "-D"), (3, "c", "+I")])
    snapshot_ids = t.store.snapshots.list_ids()
    assert snapshot_ids[0] > 1  # snapshots expired...
    changelog_dir = f"{t.store.table_path}/changelog"
    kept = sorted(n for n in t.store.fileio.list_names(changelog_dir) if n.startswith("changelog-"))
    assert kept == [f"changelog-{i}" for i in range(1, snapshot_ids[0])]  # ...into long-lived changelog
    rows, _ = _stream(t, **FROM_FIRST, **{"read.changelog": "true"})
    assert rows == [
        ("+I", 1, "a"),
        ("+I", 2, "b"),
        ("-U", 1, "a"),
        ("+U", 1, "a2"),
        ("-D", 2, "b"),
        ("+I", 3, "c"),
    ]
    expired = expire_changelogs(t.store, now=2**50)
    assert expired.expired_changelogs == list(range(1, snapshot_ids[0] - 1))  # the newest changelog stays
    assert expired.deleted_data_files  # the changelog and data files only they used
    assert sorted((r["id"], r["v"]) for r in t.scan().to_arrow().to_pylist()) == [(1, "a2"), (3, "c")]
    assert t.maintenance.remove_orphan_files(older_than=2**50, dry_run=True).files == []  # nothing left behind


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation"])
def test_force_lookup_compacts_level_0_up_after_every_write_without_changelog(catalog: Catalog, engine: str) -> None:
    """``force-lookup`` (Java's LookupStrategy): no changelog producer, yet every write is followed by the lookup
    compaction, so no level-0 file stays; each key merges with its newest older record (the aggregation sums
    once, not twice, when an older version stays in a higher level), and no changelog file is written."""
    schema = pa.schema([("id", pa.int64()), ("n", pa.int64())])
    options = {"bucket": "1", "force-lookup": "true", "num-levels": "3"}
    if engine == "aggregation":
        options |= {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"}
    t = catalog.create_table("db.t", schema, primary_keys=["id"], options=options)
    expected: dict[int, int] = {}
    for i, keys in enumerate([range(50), [1, 2, 60], [2, 3], [2, 70]]):
        t.write_arrow(
            pa.table({"id": pa.array(list(keys), pa.int64()), "n": pa.array([i + 1] * len(keys), pa.int64())})
        )
        for k in keys:
            expected[k] = expected.get(k, 0) + (i + 1) if engine == "aggregation" else i + 1
        levels = [e.file.level for e in t.store.live_entries(t.latest_snapshot())]
        assert 0 not in levels, levels
        assert {r["id"]: r["n"] for r in t.scan().to_arrow().to_pylist()} == expected
    assert len({e.file.level for e in t.store.live_entries(t.latest_snapshot())}) > 1  # older versions stay above
    assert _changelog_files(t) == []
