"""Streams survive a history rewrite at any moment, Spark-free.

Each test drives :class:`StreamReadJob` the way ``datasource/spark/streaming.py`` does (``initialOffset``, then
per micro-batch ``latestOffset`` -> ``partitions(start, end)`` -> ``commit(end)``) and rewrites the branch's
history at the worst moment: after ``latestOffset`` fixed a batch's range and before ``partitions`` plans it.
The stream's changes (``read.changelog``) applied in order must give exactly the table at the end.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Callable

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.jobs import prepare_read, prepare_write
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import SnapshotNotFoundError
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.rollback import rollback_to
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.micro_batch import Admission
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.stream_offset import StreamOffset

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(catalog: Catalog, pk: bool) -> FileStore:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"] if pk else (), options={"bucket": "2" if pk else "-1"})
    return t.store


def _write(store: FileStore, ids: list[int], vs: list[str]) -> None:
    job = prepare_write(store, None)
    writer = job.new_writer("local")
    writer.write(pa.table({"id": ids, "v": vs}, schema=SCHEMA))
    job.commit(writer.prepare_commit())


def _table_rows(store: FileStore) -> Counter:
    if store.snapshots.latest_id() is None:
        return Counter()
    return Counter(tuple(r.values()) for r in prepare_read(store, ReadOptions()).to_arrow().to_pylist())


class Follower:
    """A stream and the state a downstream job builds by applying its row kinds."""

    def __init__(self, store: FileStore, pk: bool, **options: str):
        self.job = StreamReadJob(store, {"path": store.table_path, "read.changelog": "true", **options})
        self.pk = pk
        self.pos = StreamOffset.from_dict(self.job.initial_offset().to_dict())
        self.state: Counter = Counter()

    def latest_offset(self) -> StreamOffset:
        _, end = self.job.next_batch(self.pos)
        return StreamOffset.from_dict(end.to_dict())  # offsets go through JSON in Spark's log

    def partitions_and_commit(self, end: StreamOffset) -> None:
        splits = self.job.splits_between(self.pos, end)
        ctx = self.job.context()
        for s in splits:
            for batch in read_stream_split(ctx, s):
                for kind, k, v in (tuple(r.values()) for r in batch.to_pylist()):
                    self._apply(kind, k, v)
        self.job.commit(end)
        self.pos = end

    def _apply(self, kind: str, k: int, v: str) -> None:
        if self.pk:
            for row in [r for r in self.state if r[0] == k]:
                del self.state[row]
            if kind in ("+I", "+U"):
                self.state[(k, v)] = 1
        elif kind in ("+I", "+U"):
            self.state[(k, v)] += 1
        else:
            assert self.state[(k, v)] > 0, f"a retraction of a row the stream never emitted: {(kind, k, v)}"
            self.state[(k, v)] -= 1
            if not self.state[(k, v)]:
                del self.state[(k, v)]

    def batch(self, between: Callable[[], None] | None = None) -> None:
        end = self.latest_offset()
        if between is not None:
            between()
        self.partitions_and_commit(end)

    def catch_up(self) -> None:
        for _ in range(20):
            end = self.latest_offset()
            if end == self.pos:
                return
            self.partitions_and_commit(end)
        raise AssertionError("the stream did not settle")


def _fork(store: FileStore, at: int, ids: list[int], vs: list[str]) -> None:
    """Branch 'fix' from snapshot ``at`` with one commit of its own."""
    BranchManager(store).create("fix", snapshot_id=at)
    _write(store.with_branch("fix"), ids, vs)


def _fast_forward(store: FileStore) -> None:
    BranchManager(store).fast_forward("fix", force=True)


def _replace_main(store: FileStore) -> None:
    BranchManager(store).replace_main("fix")


def _rollback(store: FileStore) -> None:
    rollback_to(store, snapshot_id=2)


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize(
    "rewrite", [_fast_forward, _replace_main, _rollback], ids=["fast_forward", "replace", "rollback"]
)
@pytest.mark.parametrize("scan_mode", ["latest-full", "latest"])
def test_a_rewrite_between_latest_offset_and_partitions(catalog, pk, rewrite, scan_mode):
    store = _table(catalog, pk)
    _write(store, [1, 2], ["a", "b"])
    _write(store, [2, 3], ["b2", "c"])
    f = Follower(store, pk, **{"scan.mode": scan_mode})
    if scan_mode == "latest":
        f.state = _table_rows(store)  # the downstream already holds the table as of the start
    f.batch()
    for i in range(4, 8):  # snapshots 3..6, fixed in one batch's range
        _write(store, [i, 1], [f"d{i}", f"a{i}"])
    if rewrite is not _rollback:
        _fork(store, 2, [2, 9], ["FIX", "z"])  # the branch: snapshots 1, 2 and its own 3
    # The batch covering snapshots 3..6 is fixed, then history is rewritten before it is planned.
    f.batch(between=lambda: rewrite(store))
    f.catch_up()
    assert f.state == _table_rows(store)
    # The stream goes on with the new history.
    _write(store, [5], ["e"])
    f.catch_up()
    assert f.state == _table_rows(store)


def test_a_replayed_batch_after_a_rewrite_reads_the_same(catalog):
    store = _table(catalog, True)
    _write(store, [1, 2], ["a", "b"])
    f = Follower(store, True)
    f.batch()
    _write(store, [3], ["c"])
    _write(store, [1], ["A"])
    end = f.latest_offset()
    _fork(store, 1, [2], ["B"])
    _fast_forward(store)
    first = f.job.splits_between(f.pos, end)
    assert first == f.job.splits_between(f.pos, end)  # Spark replaying the batch gets the same splits
    f.partitions_and_commit(end)
    f.catch_up()
    assert f.state == _table_rows(store) == Counter({(1, "a"): 1, (2, "B"): 1})


def test_two_rewrites_around_one_batch(catalog):
    """A rewrite before ``latestOffset`` (the batch is a diff to the new head) and another before ``partitions``."""
    store = _table(catalog, True)
    _write(store, [1, 2], ["a", "b"])
    _write(store, [3], ["c"])
    f = Follower(store, True)
    f.batch()
    _write(store, [4], ["d"])
    _fork(store, 1, [2], ["B"])
    _fast_forward(store)
    bm = BranchManager(store)
    bm.create("fix2", snapshot_id=1)
    _write(store.with_branch("fix2"), [1, 5], ["A", "e"])
    f.batch(between=lambda: bm.fast_forward("fix2", force=True))
    f.catch_up()
    assert f.state == _table_rows(store) == Counter({(1, "A"): 1, (2, "b"): 1, (5, "e"): 1})


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_random_commits_rewrites_and_batches(catalog, pk):
    """30 random steps of commit / rewrite / micro-batch with rewrites landing inside batches: the stream's
    state equals the table after every completed batch that follows the last change."""
    rng = random.Random(22)
    store = _table(catalog, pk)
    bm = BranchManager(store)
    _write(store, [0], ["init"])
    f = Follower(store, pk)
    pending: StreamOffset | None = None  # a batch range fixed by latestOffset, not planned yet
    forks = 0

    def commit() -> None:
        n = rng.randint(1, 3)
        _write(store, [rng.randint(0, 6) for _ in range(n)], [f"v{rng.randint(0, 99)}" for _ in range(n)])

    def rewrite() -> None:
        nonlocal forks
        ids = store.snapshots.list_ids()
        at = rng.choice(ids)
        kind = rng.choice(["fast_forward", "replace", "rollback"])
        if kind == "rollback":
            rollback_to(store, snapshot_id=at)
            return
        forks += 1
        name = f"fix{forks}"
        bm.create(name, snapshot_id=at)
        for _ in range(rng.randint(1, 2)):
            _write(store.with_branch(name), [rng.randint(0, 6)], [f"b{forks}"])
        if kind == "fast_forward":
            bm.fast_forward(name, force=True)
        else:
            bm.replace_main(name)

    for _ in range(30):
        step = rng.choice(["commit", "commit", "rewrite", "offset", "plan"])
        if step == "commit":
            commit()
        elif step == "rewrite":
            rewrite()
        elif step == "offset" and pending is None:
            pending = f.latest_offset()
        elif step == "plan" and pending is not None:
            f.partitions_and_commit(pending)
            pending = None
    if pending is not None:
        f.partitions_and_commit(pending)
    f.catch_up()
    assert f.state == _table_rows(store)


def test_a_rewrite_under_a_batch_that_starts_mid_snapshot_is_a_clear_error(catalog):
    """The documented limit: a batch starting inside a snapshot (read limits split it) has no known state."""
    store = _table(catalog, True)
    _write(store, [1], ["a"])
    f = Follower(store, True, **{"scan.mode": "latest"})
    _write(store, [1, 2, 3, 4], ["b", "c", "d", "e"])  # one file per bucket: two splits
    _, end = f.job.next_batch(f.pos, Admission(max_files=1))
    assert end.index == 0  # the batch stops inside snapshot 2
    f.partitions_and_commit(end)
    end = f.latest_offset()
    _fork(store, 1, [9], ["z"])
    _fast_forward(store)
    with pytest.raises(SnapshotNotFoundError, match="middle of snapshot 2"):
        f.job.splits_between(f.pos, end)


def test_a_rewrite_of_a_deletion_vector_aggregation_table_reads_each_state_with_its_vectors(catalog):
    """The diff after a rollback reads both states' files with their deletion vectors: a sum's older records,
    which a lookup compaction merged into a newer file and deleted by vector, must not be summed again."""
    t = catalog.create_table(
        "db.agg",
        pa.schema([("id", pa.int64()), ("v", pa.int64())]),
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "deletion-vectors.enabled": "true",
            "changelog-producer": "lookup",  # a sum's stream follows the changelog (Java's rule)
        },
    )
    store = t.store
    base = {i: i for i in range(1, 201)}  # a large older file, so compactions delete its rows by vector
    t.write_arrow(pa.table({"id": list(base), "v": list(base.values())}))
    f = Follower(store, True, **{"scan.mode": "latest-full"})
    f.catch_up()
    t.write_arrow(pa.table({"id": [1], "v": [10]}))
    t.tags.create("t")  # the state to roll back to: key 1 = 11, its older record deleted by vector
    assert store.snapshots.latest().index_manifest
    t.write_arrow(pa.table({"id": [1, 2], "v": [5, 7]}))
    f.catch_up()
    assert f.state == _table_rows(store)
    assert (1, 16) in f.state and (2, 9) in f.state
    rollback_to(store, tag="t")
    f.catch_up()
    assert f.state == _table_rows(store)
    assert (1, 11) in f.state and (2, 2) in f.state


def test_offsets_record_the_consumed_index_manifest_and_read_older_offsets():
    """The consumed state's index manifest is the fourth element when there is one; offsets written before it
    was recorded (three elements) still read, as a state without deletion vectors."""
    old = StreamOffset.from_dict({"snapshotId": 4, "index": -1, "phase": "delta", "consumed": [3, "b", "d"]})
    assert old.consumed is not None and old.consumed.index_manifest is None
    assert old.to_dict()["consumed"] == [3, "b", "d"]
    new = StreamOffset.from_dict({"snapshotId": 4, "index": -1, "phase": "delta", "consumed": [3, "b", "d", "i"]})
    assert new.consumed is not None and new.consumed.index_manifest == "i"
    assert StreamOffset.from_dict(new.to_dict()) == new
