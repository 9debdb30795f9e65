"""Streaming reads without Spark: start positions, offsets, admission, row kinds, expiry, consumers, rewrites."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.maintenance import expire
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.micro_batch import Admission, task_groups
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.stream_offset import StreamOffset
from pyspark_paimon.planner.stream_options import StreamOptions

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
TARGET, OPEN_COST = 128 << 20, 64 << 10  # the default source.split.target-size and open-file-cost


def _pk(catalog: Catalog, **options: str):
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2", **options})


def _write(table, ids, vs):
    return table.write_arrow(pa.table({"id": ids, "v": vs}, schema=SCHEMA))


def _rows(job: StreamReadJob, splits) -> list[tuple]:
    ctx = job.context()
    out = []
    for s in splits:
        for batch in read_stream_split(ctx, s):
            out.extend(tuple(r.values()) for r in batch.to_pylist())
    return sorted(out, key=repr)


def _drain(job: StreamReadJob, start: StreamOffset, admission_factory=None, stop_at=None):
    """Every micro-batch until no progress: [(rows, end)], checking each replays identically."""
    batches = []
    pos = start
    for _ in range(100):
        splits, end = job.next_batch(pos, admission_factory() if admission_factory else None, stop_at)
        if end == pos:
            break
        assert _rows(job, job.splits_between(pos, end)) == _rows(job, splits)  # a replay reads the same rows
        batches.append((_rows(job, splits), end))
        pos = end
    return batches, pos


def _job(table, **options: str) -> StreamReadJob:
    return StreamReadJob(table.store, {"path": table.store.table_path, **options})


def test_latest_full_reads_the_snapshot_then_every_change(catalog):
    t = _pk(catalog)
    _write(t, [1, 2], ["a", "b"])
    _write(t, [2, 3], ["B", "c"])
    job = _job(t)
    start = job.initial_offset()
    assert start == StreamOffset(2, -1, "full")
    batches, pos = _drain(job, start)
    assert [rows for rows, _ in batches] == [[(1, "a"), (2, "B"), (3, "c")]]
    _write(t, [1], ["A"])
    batches, pos = _drain(job, pos)
    assert [rows for rows, _ in batches] == [[(1, "A")]]
    assert pos.snapshot == 4 and pos.index == -1 and pos.consumed.snapshot_id == 3


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"scan.mode": "latest"}, [[(9, "z")]]),
        ({"scan.mode": "from-snapshot", "scan.snapshot-id": "2"}, [[(2, "B"), (3, "c"), (9, "z")]]),
        ({"scan.snapshot-id": "2"}, [[(2, "B"), (3, "c"), (9, "z")]]),  # default mode with a snapshot id
        ({"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"}, [[(1, "a"), (2, "B"), (3, "c"), (9, "z")]]),
        ({"scan.tag-name": "t1"}, [[(1, "a"), (2, "b"), (2, "B"), (3, "c"), (9, "z")]]),
    ],
)
def test_start_positions(catalog, options, expected):
    t = _pk(catalog)
    _write(t, [1, 2], ["a", "b"])
    t.tags.create("t1", snapshot_id=1)
    _write(t, [2, 3], ["B", "c"])
    job = _job(t, **options)
    start = job.initial_offset()  # fixed before the next commit, like a query that has started
    _write(t, [9], ["z"])
    batches, _ = _drain(job, start)
    assert [sorted(sum((rows for rows, _ in batches), []), key=repr)] == [sorted(expected[0], key=repr)]


def test_from_timestamp_reads_snapshots_committed_at_or_after_it(catalog):
    t = _pk(catalog)
    _write(t, [1], ["a"])
    _write(t, [2], ["b"])
    second = t.snapshot(2).time_millis
    _write(t, [3], ["c"])
    job = _job(t, **{"scan.mode": "from-timestamp", "scan.timestamp-millis": str(second)})
    batches, _ = _drain(job, job.initial_offset())
    rows = sum((r for r, _ in batches), [])
    assert (2, "b") in rows and (3, "c") in rows and (1, "a") not in rows


@pytest.mark.parametrize(
    "options, message",
    [
        ({"scan.mode": "from-snapshot"}, "needs option 'scan.snapshot-id'"),
        ({"scan.mode": "latest", "scan.snapshot-id": "3"}, "starts from the latest snapshot"),
        ({"scan.mode": "incremental"}, "not supported by a streaming read"),
        ({"scan.mode": "compacted-full", "scan.snapshot-id": "1"}, "starts from the latest compacted snapshot"),
        ({"scan.snapshot-id": "1", "scan.tag-name": "x"}, "Conflicting start options"),
        ({"read.stream.minRowsPerTrigger": "5"}, "both"),
        ({"read.stream.maxFilesPerTrigger": "0"}, "positive integer"),
        ({"versionAsOf": "1"}, "Unknown streaming read option 'versionasof'"),
        ({"consumer-id": "a/b"}, "not a valid consumer id"),
    ],
)
def test_bad_stream_options_are_errors(options, message):
    with pytest.raises(OptionError, match=message):
        StreamOptions.from_options({k.lower(): v for k, v in options.items()})


def test_stream_only_options_are_refused_by_batch_reads():
    with pytest.raises(OptionError, match="apply to streaming reads only"):
        ReadOptions.from_options({"scan.mode": "latest"})


def test_offsets_are_json_round_trips(catalog):
    t = _pk(catalog)
    _write(t, [1], ["a"])
    job = _job(t)
    _, end = _drain(job, job.initial_offset())
    text = json.dumps(end.to_dict())
    assert StreamOffset.from_dict(json.loads(text)) == end
    with pytest.raises(OptionError, match="new checkpoint location"):
        StreamOffset.from_dict({"snapshotId": 1})


def test_admission_control_spans_one_big_commit_over_batches(catalog):
    t = catalog.create_table("db.a", SCHEMA)
    job = prepare_write(t.store)
    messages = []
    for task in range(3):  # three tasks, three files, one commit
        writer = job.new_writer(str(task))
        writer.write(pa.table({"id": [task * 2, task * 2 + 1], "v": ["x", "y"]}, schema=SCHEMA))
        messages.extend(writer.prepare_commit())
    job.commit(messages)
    stream = _job(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    batches, _ = _drain(stream, stream.initial_offset(), lambda: Admission(max_files=1))
    assert len(batches) == 3  # one file per micro-batch, positions inside the snapshot
    assert sorted(r for rows, _ in batches for r in rows) == sorted((i, "xy"[i % 2]) for i in range(6))
    assert [end.snapshot for _, end in batches] == [1, 1, 2]
    batches, _ = _drain(stream, stream.initial_offset(), lambda: Admission(max_rows=4))
    assert [len(rows) for rows, _ in batches] == [4, 2]  # a split is admitted while the limit has room


@pytest.mark.parametrize(
    "mode, table_mode, sizes, recorded",
    [
        # exactly-once (the default): a consumer's batches hold whole commits, so its progress is exact
        (None, None, [6, 2], [2, 3]),
        # at-least-once: the limit is exact; the consumer names the commit it is inside (read again on restart)
        ("at-least-once", None, [2, 2, 2, 2], [1, 1, 2, 3]),
        # the table's option is the default of its streams, a read option wins over it
        (None, "at-least-once", [2, 2, 2, 2], [1, 1, 2, 3]),
        ("exactly-once", "at-least-once", [6, 2], [2, 3]),
    ],
)
def test_consumer_mode_decides_whether_a_batch_may_end_inside_a_commit(catalog, mode, table_mode, sizes, recorded):
    t = catalog.create_table("db.a", SCHEMA, options={"consumer.mode": table_mode} if table_mode else {})
    _commit_files(t, [pa.table({"id": [k * 2, k * 2 + 1], "v": ["x", "y"]}, schema=SCHEMA) for k in range(3)])
    _write(t, [6, 7], ["x", "y"])
    options = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "consumer-id": "app"}
    stream = _job(t, **options, **({"consumer.mode": mode} if mode else {}))
    consumers = ConsumerManager(FileStore(t.store.fileio, t.store.table_path, "main"))
    pos, seen = stream.initial_offset(), []
    for _ in range(10):
        splits, end = stream.next_batch(pos, Admission(max_files=1))
        if end == pos:
            break
        stream.commit(end)  # Spark committed the micro-batch: the consumer records its progress
        seen.append((len(_rows(stream, splits)), consumers.next_snapshot("app")))
        pos = end
    assert [n for n, _ in seen] == sizes
    assert [c for _, c in seen] == recorded
    # A restart from the consumer reads the rest: nothing is lost (at-least-once may repeat the commit it was in).
    assert _job(t, **options).initial_offset().snapshot == recorded[-1]


def test_consumer_mode_is_checked():
    with pytest.raises(OptionError, match="'consumer.mode' must be one of exactly-once, at-least-once"):
        StreamOptions.from_options({"consumer.mode": "once"})


def _commit_files(table, batches) -> None:
    """One commit of one data file per batch (one write task each)."""
    job = prepare_write(table.store)
    messages = []
    for task, batch in enumerate(batches):
        writer = job.new_writer(str(task))
        writer.write(batch)
        messages.extend(writer.prepare_commit())
    job.commit(messages)


def test_an_unaware_append_table_spreads_its_files_over_every_core(catalog):
    t = catalog.create_table("db.a", SCHEMA)  # bucket -1: no order promised
    _commit_files(t, [pa.table({"id": [i, i + 10], "v": ["x", "y"]}, schema=SCHEMA) for i in range(4)])
    _write(t, [100], ["z"])
    stream = _job(t)
    splits, _ = stream.next_batch(stream.initial_offset())
    assert [len(s.after.files) for s in splits] == [1] * 5  # one bucket (0): one split per file
    groups = task_groups(splits, t.schema, TARGET, OPEN_COST, 2)
    assert sorted(len(g) for g in groups) == [2, 3]  # the 5 files over 2 tasks
    assert _rows(stream, [s for g in groups for s in g]) == _rows(stream, splits)  # exactly the batch's rows
    assert len(task_groups(splits, t.schema, TARGET, OPEN_COST, 1)) == 1  # small files share one task on one core


@pytest.mark.parametrize(
    "options, primary_keys",
    [({"bucket": "3"}, ["id"]), ({"bucket": "3", "bucket-key": "id"}, [])],
    ids=["primary_key", "fixed_bucket_append"],
)
def test_a_bucket_stays_in_one_task_in_commit_order(catalog, options, primary_keys):
    t = catalog.create_table("db.b", SCHEMA, primary_keys=primary_keys, options=options)
    job = _job(t, **{"scan.mode": "latest"})
    start = job.initial_offset()
    ids = list(range(12))
    for k in range(3):
        _write(t, ids, [f"v{k}"] * len(ids))
    splits, _ = job.next_batch(start)
    assert len(splits) == 9  # 3 commits x 3 buckets, one file each
    groups = task_groups(splits, t.schema, TARGET, OPEN_COST, 2)
    assert len(groups) == 2
    home = {}
    for g, group in enumerate(groups):
        for s in group:
            assert home.setdefault(s.after.bucket, g) == g  # every split of a bucket in one task ...
        for b in {s.after.bucket for s in group}:
            snapshots = [s.snapshot_id for s in group if s.after.bucket == b]
            assert snapshots == [1, 2, 3]  # ... in commit order
    assert sorted(home) == [0, 1, 2]


def test_available_now_stops_at_the_snapshot_latest_at_start(catalog):
    t = _pk(catalog)
    _write(t, [1], ["a"])
    job = _job(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    stop_at = t.store.snapshots.latest_id()
    _write(t, [2], ["b"])
    batches, pos = _drain(job, job.initial_offset(), stop_at=stop_at)
    assert [rows for rows, _ in batches] == [[(1, "a")]] and pos.snapshot == 2


def test_row_kinds_of_a_delta_are_kept_with_read_changelog(catalog):
    t = catalog.create_table(
        "db.k",
        pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op"},
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}))
    start = _job(t, **{"scan.mode": "latest"}).initial_offset()
    t.write_arrow(pa.table({"id": [1, 3], "v": ["a", "c"], "op": ["-D", "+I"]}))
    batches, _ = _drain(_job(t, **{"scan.mode": "latest", "read.changelog": "true"}), start)
    assert sum((r for r, _ in batches), []) == [("+I", 3, "c", "+I"), ("-D", 1, "a", "-D")]
    batches, _ = _drain(_job(t, **{"scan.mode": "latest"}), start)
    assert sum((r for r, _ in batches), []) == [(3, "c", "+I")]  # the delete is not an ordinary row


def test_compact_and_overwrite_snapshots_are_skipped_by_default(catalog):
    t = _pk(catalog)
    _write(t, [1], ["a"])
    start = _job(t, **{"scan.mode": "latest"}).initial_offset()
    t.write_arrow(pa.table({"id": [7], "v": ["o"]}, schema=SCHEMA), mode="overwrite")
    _write(t, [2], ["b"])
    batches, pos = _drain(_job(t, **{"scan.mode": "latest"}), start)
    assert sum((r for r, _ in batches), []) == [(2, "b")] and pos.snapshot == 4


def test_streaming_read_overwrite_emits_the_change_by_key(catalog):
    t = _pk(catalog)
    _write(t, [1, 2], ["a", "b"])
    start = _job(t, **{"scan.mode": "latest"}).initial_offset()
    t.write_arrow(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA), mode="overwrite")
    job = _job(t, **{"scan.mode": "latest", "streaming-read-overwrite": "true", "read.changelog": "true"})
    batches, _ = _drain(job, start)
    assert sum((r for r, _ in batches), []) == [("+I", 2, "B"), ("+I", 3, "c"), ("-D", 1, "a")]


def test_streaming_read_overwrite_needs_primary_keys(catalog):
    t = catalog.create_table("db.a", SCHEMA)
    with pytest.raises(OptionError, match="primary-key table"):
        _job(t, **{"streaming-read-overwrite": "true"})


def test_an_expired_next_snapshot_is_an_error_not_a_skip(catalog):
    t = _pk(catalog)
    for i in range(4):
        _write(t, [i], [str(i)])
    job = _job(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
    start = job.initial_offset()
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1, older_than="2999-01-01 00:00:00")
    with pytest.raises(SnapshotNotFoundError, match="snapshot 2, the next one this stream must read, has expired"):
        job.next_batch(start)
    with pytest.raises(SnapshotNotFoundError, match="has expired"):
        _job(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "2"}).initial_offset()


def test_consumer_progress_protects_snapshots_from_expiration(catalog):
    t = _pk(catalog)
    for i in range(3):
        _write(t, [i], [str(i)])
    job = _job(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "consumer-id": "app"})
    _, end = job.next_batch(job.initial_offset(), Admission(max_files=1))  # snapshot 1 only
    job.commit(end)
    consumers = ConsumerManager(FileStore(t.store.fileio, t.store.table_path, "main"))
    assert consumers.next_snapshot("app") == 2
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1, older_than="2999-01-01 00:00:00")
    assert t.store.snapshots.earliest_id() == 2  # snapshot 2 is still needed by the consumer
    batches, _ = _drain(job, end)
    assert sum((r for r, _ in batches), []) == [(1, "1"), (2, "2")]
    # A new stream with the same consumer id continues where the consumer stopped.
    assert _job(t, **{"consumer-id": "app"}).initial_offset().snapshot == 2


@pytest.mark.parametrize("tagged", [False, True], ids=["mid-expiration", "tagged"])
def test_a_consumed_snapshot_that_expires_under_the_stream_is_no_rewrite(catalog, monkeypatch, tagged):
    """A consumer keeps its next snapshot, not the one its offset records as consumed, so that one expires
    normally. A stream that plans while expiration has deleted the snapshot file but not yet its manifest lists
    (the deploy soak's race), or whose consumed snapshot's lists a tag keeps, must not take that for a rewritten
    history: it goes on with the next snapshot's delta, and Spark planning the batch after the sweep reads the
    same splits."""
    t = catalog.create_table("db.a", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    for i in range(4):
        _write(t, [i], [str(i)])
    if tagged:
        t.tags.create("kept", snapshot_id=2)
    job = _job(
        t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "consumer-id": "app", "read.changelog": "true"}
    )
    _, pos = job.next_batch(job.initial_offset(), stop_at=2)
    job.commit(pos)
    assert pos.consumed is not None and pos.consumed.snapshot_id == 2
    assert ConsumerManager(t.store).next_snapshot("app") == 3
    planned = []
    real_sweep = expire.sweep

    def plan_then_sweep(*args, **kwargs):  # Spark's latestOffset lands between the two deletions
        planned.append(job.next_batch(pos))
        return real_sweep(*args, **kwargs)

    monkeypatch.setattr(expire, "sweep", plan_then_sweep)
    assert t.maintenance.expire_snapshots(retain_max=1, retain_min=1, older_than="2999-01-01 00:00:00")
    assert t.store.snapshots.earliest_id() == 3 and len(planned) == 1
    [(splits, end)] = planned
    assert {s.phase for s in splits} == {"delta"}
    assert _rows(job, splits) == [("+I", 2, "2"), ("+I", 3, "3")]
    assert job.splits_between(pos, end) == splits  # partitions, after the sweep
    assert job.next_batch(pos) == (splits, end)


def test_a_batch_whose_start_state_expired_under_a_rewrite_is_a_clear_error(catalog):
    """Without a consumer, expiration may delete the state a stream started a batch from; when a rewrite then
    makes that batch a change of states, the error says what happened, not that the table is corrupt."""
    t = catalog.create_table("db.a", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    for i in range(4):
        _write(t, [i], [str(i)])
    # Its own store, as a stream's planning worker has (the writer's caches the manifest lists it commits on).
    store = FileStore(t.store.fileio, t.store.table_path, "main")
    job = StreamReadJob(store, {"path": store.table_path, "scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    _, pos = job.next_batch(job.initial_offset(), stop_at=2)
    _, end = job.next_batch(pos)  # latestOffset fixes the batch over snapshots 3 and 4
    t.maintenance.rollback_to(snapshot_id=3)
    _write(t, [9], ["z"])  # snapshot 4 is another commit now
    t.maintenance.expire_snapshots(retain_max=2, retain_min=1, older_than="2999-01-01 00:00:00")
    with pytest.raises(SnapshotNotFoundError, match="consumed snapshot 2.*consumer-id"):
        job.splits_between(pos, end)


def test_a_rewritten_history_is_streamed_as_the_change_to_the_new_head(catalog):
    t = _pk(catalog)
    _write(t, [1, 2], ["a", "b"])
    t.tags.create("good", snapshot_id=1)
    _write(t, [2, 3], ["BAD", "bad"])  # the bad batch, already streamed
    job = _job(t, **{"read.changelog": "true"})
    _, pos = _drain(job, job.initial_offset())
    t.branches.create("fix", tag="good")
    fix = t.on_branch("fix")
    fix.write_arrow(pa.table({"id": [2, 4], "v": ["b2", "d"]}, schema=SCHEMA))
    t.branches.fast_forward("fix", force=True)
    batches, pos = _drain(job, pos)
    changes = sum((r for r, _ in batches), [])
    # Applying the changes to what the stream had seen gives exactly the new head.
    seen = {1: "a", 2: "BAD", 3: "bad"}
    for kind, k, v in changes:
        if kind == "-D":
            seen.pop(k)
        else:
            seen[k] = v
    assert seen == {1: "a", 2: "b2", 4: "d"}
    _write(t, [5], ["e"])
    batches, _ = _drain(job, pos)
    assert sum((r for r, _ in batches), []) == [("+I", 5, "e")]


def test_a_chain_table_streams_its_content_then_its_delta_branch(catalog):
    options = {
        "bucket": "1",
        "bucket-key": "t1",
        "sequence.field": "t2",
        "partition.timestamp-pattern": "$dt",
        "partition.timestamp-formatter": "yyyyMMdd",
    }
    t = catalog.create_chain_table(
        "db.c",
        "t1 bigint, t2 bigint, t3 string, dt string",
        partition_keys=["dt"],
        primary_keys=["dt", "t1"],
        options=options,
    )
    row = pa.schema([("t1", pa.int64()), ("t2", pa.int64()), ("t3", pa.string()), ("dt", pa.string())])
    t.on_branch("snapshot").write_arrow(
        pa.table({"t1": [1, 2], "t2": [1, 1], "t3": ["a", "b"], "dt": ["20250810"] * 2}, schema=row)
    )
    t.on_branch("delta").write_arrow(pa.table({"t1": [2], "t2": [2], "t3": ["B"], "dt": ["20250811"]}, schema=row))
    job = _job(t)
    assert job.store.branch == "delta"
    batches, _ = _drain(job, job.initial_offset())
    # The start: the latest snapshot partition and the later delta partitions (see test_chain_stream.py).
    assert sum((r for r, _ in batches), []) == [
        (1, 1, "a", "20250810"),
        (2, 1, "b", "20250810"),
        (2, 2, "B", "20250811"),
    ]


@pytest.mark.parametrize("where", ["read", "table"])
def test_streaming_read_append_overwrite_streams_the_rows_an_append_overwrite_adds(catalog, where):
    key = "streaming-read-append-overwrite"
    t = catalog.create_table("db.a", SCHEMA, options={"bucket": "-1", **({key: "true"} if where == "table" else {})})
    _write(t, [1, 2], ["a", "b"])
    job = _job(t, **({key: "true"} if where == "read" else {}))
    skipping = _job(t)
    start = job.initial_offset()
    _, pos = _drain(job, start)
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA), mode="overwrite")
    _write(t, [4], ["d"])
    batches, _ = _drain(job, pos)
    # As Java: the overwrite's new rows arrive as inserts; the rows it removed are not retracted.
    assert sorted(sum((r for r, _ in batches), []), key=repr) == [(3, "c"), (4, "d")]
    if where == "read":  # without the option an append overwrite is skipped
        batches, _ = _drain(skipping, pos)
        assert sum((r for r, _ in batches), []) == [(4, "d")]


def test_streaming_read_overwrite_on_an_append_table_names_the_append_option(catalog):
    t = catalog.create_table("db.a", SCHEMA, options={"bucket": "-1"})
    _write(t, [1], ["a"])
    with pytest.raises(OptionError, match="streaming-read-append-overwrite"):
        _job(t, **{"streaming-read-overwrite": "true"})


def test_streaming_read_overwrite_reads_the_replaced_files_with_their_deletion_vectors(catalog):
    """The files an overwrite replaced are read with the vectors they had just before it: a sum's older record,
    deleted by vector when a lookup compaction merged it into a newer file, is not summed again, so a key the
    overwrite leaves at its value is no change."""
    t = catalog.create_table(
        "db.dvagg",
        pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "deletion-vectors.enabled": "true",
        },
    )
    t.write_arrow(pa.table({"id": list(range(1, 201)), "v": list(range(1, 201))}))
    t.write_arrow(pa.table({"id": [1], "v": [10]}))  # key 1 = 11; its older record deleted by vector
    assert t.store.snapshots.latest().index_manifest
    start = _job(t, **{"scan.mode": "latest"}).initial_offset()
    t.write_arrow(pa.table({"id": [1, 2], "v": [11, 200]}), mode="overwrite")
    job = _job(t, **{"scan.mode": "latest", "streaming-read-overwrite": "true", "read.changelog": "true"})
    rows = sum((r for r, _ in _drain(job, start)[0]), [])
    assert [r for r in rows if r[1] in (1, 2)] == [("+I", 2, 200)]  # key 1 kept its value 11
    assert ("-D", 3, 3) in rows and len(rows) == 1 + 198
