"""Streams of chain tables without Spark (Java's `ChainTableStreamScan`): the start (the latest snapshot partition
per group and the later deltas, or both merged with ``chain-table.streaming.merge-snapshot``), then the delta
branch's commits with their row kinds, and what a chain stream refuses."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.planner.micro_batch import Admission
from pyspark_paimon.planner.stream_offset import StreamOffset

ROW = pa.schema([("t1", pa.int64()), ("t2", pa.int64()), ("t3", pa.string()), ("op", pa.string()), ("dt", pa.string())])
OPTIONS = {
    "bucket": "1",
    "bucket-key": "t1",
    "sequence.field": "t2",
    "rowkind.field": "op",
    "partition.timestamp-pattern": "$dt",
    "partition.timestamp-formatter": "yyyyMMdd",
}


def _table(catalog: Catalog, name: str = "db.c", **options: str):
    return catalog.create_chain_table(
        name,
        "t1 bigint, t2 bigint, t3 string, op string, dt string",
        partition_keys=["dt"],
        primary_keys=["dt", "t1"],
        options={**OPTIONS, **options},
    )


def _write(table, branch: str, rows: list[tuple]) -> None:
    table.on_branch(branch).write_arrow(pa.Table.from_pylist([dict(zip(ROW.names, r)) for r in rows], schema=ROW))


def _base(catalog: Catalog, **options: str):
    """Snapshot partition 20250810 = {1, 2, 3}; the delta branch holds that day's changes too (older than the
    snapshot partition: never streamed)."""
    t = _table(catalog, **options)
    day = [(1, 1, "a", "+I", "20250810"), (2, 1, "b", "+I", "20250810"), (3, 1, "c", "+I", "20250810")]
    _write(t, "snapshot", day)
    _write(t, "delta", day)
    return t


DAY_11 = [(2, 2, "B", "+U", "20250811"), (3, 2, "c", "-D", "20250811"), (4, 1, "d", "+I", "20250811")]


def _job(table, **options: str) -> StreamReadJob:
    return StreamReadJob(table.store, {"path": table.store.table_path, "read.changelog": "true", **options})


def _drain(job: StreamReadJob, start: StreamOffset) -> tuple[list[tuple], StreamOffset]:
    """Every row of every micro-batch from ``start`` (row kind first), checking that replays read the same."""
    ctx = job.context()

    def rows(splits) -> list[tuple]:
        out = [tuple(r.values()) for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]
        return sorted(out, key=repr)

    got: list[tuple] = []
    pos = start
    for _ in range(50):
        splits, end = job.next_batch(pos)
        if end == pos:
            break
        assert rows(job.splits_between(pos, end)) == rows(splits)
        got.extend(rows(splits))
        pos = end
    return sorted(got, key=repr), pos


def test_the_start_is_the_latest_snapshot_partition_and_later_deltas_then_the_delta_commits(catalog):
    t = _base(catalog)
    _write(t, "delta", DAY_11)
    job = _job(t)
    assert job.store.branch == "delta"
    start = job.initial_offset()
    assert start.phase == "chain" and start.pinned == 1 and start.snapshot == 2
    assert StreamOffset.from_dict(json.loads(json.dumps(start.to_dict()))) == start
    rows, pos = _drain(job, start)
    # Java's default start: the snapshot partition as it is, the later delta partition merged on its own (key
    # 3's delete has nothing to delete there); the delta of 20250810 is not emitted again.
    assert rows == [
        ("+I", 1, 1, "a", "+I", "20250810"),
        ("+I", 2, 1, "b", "+I", "20250810"),
        ("+I", 2, 2, "B", "+U", "20250811"),
        ("+I", 3, 1, "c", "+I", "20250810"),
        ("+I", 4, 1, "d", "+I", "20250811"),
    ]
    assert pos == StreamOffset(3, -1, "delta", pos.consumed)
    _write(t, "delta", [(4, 2, "d", "-D", "20250812"), (5, 1, "e", "+I", "20250812")])
    _write(t, "snapshot", [(9, 1, "z", "+I", "20250812")])  # the snapshot branch is not followed
    rows, _ = _drain(job, pos)
    assert rows == [("+I", 5, 1, "e", "+I", "20250812"), ("-D", 4, 2, "d", "-D", "20250812")]


def test_a_delta_committed_after_the_start_streams_its_deletes(catalog):
    t = _base(catalog)
    job = _job(t)
    rows, pos = _drain(job, job.initial_offset())
    assert [r[1] for r in rows] == [1, 2, 3]
    _write(t, "delta", DAY_11)
    rows, _ = _drain(job, pos)
    assert rows == [
        ("+I", 4, 1, "d", "+I", "20250811"),
        ("+U", 2, 2, "B", "+U", "20250811"),
        ("-D", 3, 2, "c", "-D", "20250811"),
    ]
    # Without read.changelog a retraction is not a row: the -D is dropped, the new state stays.
    plain = StreamReadJob(t.store, {"path": t.store.table_path})
    start = StreamOffset(2, -1, "delta", None)
    splits, _ = plain.next_batch(start)
    ctx = plain.context()
    assert sorted(r["t1"] for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()) == [2, 4]


def test_merge_snapshot_merges_the_start_under_the_latest_delta_partition(catalog):
    t = _base(catalog, **{"chain-table.streaming.merge-snapshot": "true"})
    _write(t, "delta", DAY_11)
    rows, pos = _drain(_job(t), _job(t).initial_offset())
    assert rows == [
        ("+I", 1, 1, "a", "+I", "20250811"),
        ("+I", 2, 2, "B", "+U", "20250811"),
        ("+I", 4, 1, "d", "+I", "20250811"),
    ]
    # The read option overrides the table's.
    rows, _ = _drain(_job(t, **{"chain-table.streaming.merge-snapshot": "false"}), pos)
    assert rows == []
    job = _job(t, **{"chain-table.streaming.merge-snapshot": "false"})
    rows, _ = _drain(job, job.initial_offset())
    assert {r[5] for r in rows} == {"20250810", "20250811"}


def test_groups_and_empty_branches(catalog):
    t = catalog.create_chain_table(
        "db.g",
        "t1 bigint, t2 bigint, t3 string, op string, region string, dt string",
        partition_keys=["region", "dt"],
        primary_keys=["region", "dt", "t1"],
        options={**OPTIONS, "chain-table.chain-partition-keys": "dt"},
    )
    schema = pa.schema([*ROW][:4] + [pa.field("region", pa.string()), pa.field("dt", pa.string())])

    def write(branch: str, rows: list[tuple]) -> None:
        t.on_branch(branch).write_arrow(pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema))

    job = StreamReadJob(t.store, {"path": t.store.table_path})
    empty = job.initial_offset()
    assert empty == StreamOffset(0, -1, "chain", None, None)
    rows, pos = _drain(job, empty)
    assert rows == [] and pos == StreamOffset(1)
    write("snapshot", [(1, 1, "eu-old", "+I", "eu", "20250809"), (1, 1, "eu", "+I", "eu", "20250810")])
    write("snapshot", [(1, 1, "us", "+I", "us", "20250810")])
    write("delta", [(2, 1, "us2", "+I", "us", "20250811"), (3, 1, "asia", "+I", "asia", "20250808")])
    job = StreamReadJob(t.store, {"path": t.store.table_path})
    rows, _ = _drain(job, job.initial_offset())
    # eu: its latest snapshot partition only; us: snapshot partition and the later delta; asia: deltas only.
    assert sorted((r[2], r[5]) for r in rows) == [
        ("asia", "20250808"),
        ("eu", "20250810"),
        ("us", "20250810"),
        ("us2", "20250811"),
    ]


@pytest.mark.parametrize(
    "options, what",
    [
        ({"scan.snapshot-id": "1"}, "'scan.snapshot-id' = '1'"),
        ({"scan.mode": "latest"}, "'scan.mode' = 'latest'"),
        ({"scan.timestamp-millis": "1"}, "scan.timestamp"),
        ({"scan.tag-name": "t"}, "'scan.tag-name' = 't'"),
        ({"consumer-id": "c1"}, "'consumer-id' = 'c1'"),
        ({"scan.partitions": "dt=20250810"}, "'scan.partitions'"),
        ({"filter": "dt = '20250810'"}, "partition columns ['dt']"),
    ],
)
def test_what_a_chain_stream_refuses(catalog, options, what):
    t = _base(catalog)
    with pytest.raises(ChainTableError, match="refuses") as info:
        StreamReadJob(t.store, {"path": t.store.table_path, **options})
    assert what in str(info.value)
    assert "option('branch', 'delta')" in str(info.value) and "$branch_delta" in str(info.value)
    # The delta branch streams as an ordinary table from any position.
    if "scan.partitions" not in options and "filter" not in options and "scan.tag-name" not in options:
        StreamReadJob(t.on_branch("delta").store, {"path": t.store.table_path, **options}).initial_offset()


def test_a_value_filter_is_applied_to_the_start_and_the_deltas(catalog):
    t = _base(catalog)
    job = _job(t, filter="t3 <> 'b'")
    rows, pos = _drain(job, job.initial_offset())
    assert [r[1] for r in rows] == [1, 3]
    _write(t, "delta", DAY_11)
    rows, _ = _drain(job, pos)
    assert [(r[0], r[1]) for r in rows] == [("+I", 4), ("+U", 2), ("-D", 3)]


def test_a_limited_start_spans_micro_batches_and_replays_the_same(catalog):
    t = _base(catalog)
    _write(t, "delta", DAY_11)
    job = _job(t, **{"read.stream.maxFilesPerTrigger": "1"})
    ctx = job.context()
    pos, got, ends = job.initial_offset(), [], []
    for _ in range(10):
        splits, end = job.next_batch(pos, Admission(max_files=1))
        if end == pos:
            break
        assert job.splits_between(pos, end) == splits
        got += [r["t1"] for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]
        ends.append(end)
        pos = end
    assert [e.phase for e in ends] == ["chain", "delta"] and ends[0].pinned == 1
    assert sorted(got) == [1, 2, 2, 3, 4]
