"""The later commit of a key wins (issue 34): writers prepared on one snapshot and committed in any order leave
every key with the value of the last commit, at every snapshot from that commit on."""

from __future__ import annotations

import random
import threading
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.jobs import WriteJob, prepare_write
from pyspark_paimon.datasource.write import data_files
from pyspark_paimon.metadata.snapshots.commit import CommitMessage


def _table(catalog: Catalog, name: str, **options: str) -> Table:
    return catalog.create_table(
        f"db.{name}", "id BIGINT, v STRING, n BIGINT", primary_keys=["id"], options={"bucket": "1", **options}
    )


def _prepared(t: Table, rows: dict[str, list[Any]]) -> tuple[WriteJob, list[CommitMessage]]:
    job = prepare_write(t.store)
    writer = job.new_writer("w")
    writer.write(pa.table(rows, schema=pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])))
    return job, writer.prepare_commit()


def _rows(t: Table, snapshot_id: int | None = None) -> dict[int, tuple[Any, Any]]:
    got = t.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
    return {r["id"]: (r["v"], r["n"]) for r in got}


def _stored_sequences(t: Table, snapshot_id: int) -> None:
    """Every live file's recorded sequence range is the range its rows hold."""
    store = t.store
    schema = store.schema()
    for e in store.live_entries(store.snapshots.snapshot(snapshot_id)):
        path = f"{store.bucket_path(schema, (), e.bucket)}/{e.file.file_name}"
        seq = pq.read_table(path, columns=["_SEQUENCE_NUMBER"]).column(0).to_pylist()
        assert (min(seq), max(seq)) == (e.file.min_sequence_number, e.file.max_sequence_number)


@pytest.mark.parametrize("bucket", ["1", "-1"])
def test_the_writer_committed_last_wins_though_prepared_first(catalog: Catalog, bucket: str) -> None:
    t = _table(catalog, f"later_wins_{bucket.replace('-', 'm')}", bucket=bucket)
    t.write_arrow(pa.table({"id": [1, 2], "v": ["old", "old"], "n": [0, 0]}))
    a, a_messages = _prepared(t, {"id": [1, 2], "v": ["a", "a"], "n": [1, 1]})
    b, b_messages = _prepared(t, {"id": [1, 3], "v": ["b", "b"], "n": [2, 2]})
    b_snapshot = b.commit(b_messages)
    a_snapshot = a.commit(a_messages)
    assert b_snapshot is not None and a_snapshot is not None
    assert _rows(t, b_snapshot.id) == {1: ("b", 2), 2: ("old", 0), 3: ("b", 2)}
    assert _rows(t, a_snapshot.id) == {1: ("a", 1), 2: ("a", 1), 3: ("b", 2)}  # A committed last: key 1 is A's
    _stored_sequences(t, a_snapshot.id)


def test_partial_update_takes_each_field_from_the_later_commit(catalog: Catalog) -> None:
    t = _table(catalog, "later_wins_partial", **{"merge-engine": "partial-update"})
    t.write_arrow(pa.table({"id": [1], "v": ["old"], "n": [0]}))
    a, a_messages = _prepared(t, {"id": [1], "v": ["a"], "n": [None]})
    b, b_messages = _prepared(t, {"id": [1], "v": ["b"], "n": [2]})
    b.commit(b_messages)
    a.commit(a_messages)
    assert _rows(t) == {1: ("a", 2)}  # v from A (committed last), n from B (A left it null)


def test_files_no_later_commit_reached_are_not_rewritten(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(catalog, "later_wins_quiet", bucket="2")
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": list("wxyz"), "n": [0, 0, 0, 0]}))
    rewrites: list[str] = []
    real = data_files.DataFileWriter.resequenced

    def counted(self: Any, path: str, meta: Any, offset: int) -> Any:
        rewrites.append(path)
        return real(self, path, meta, offset)

    monkeypatch.setattr(data_files.DataFileWriter, "resequenced", counted)
    job, messages = _prepared(t, {"id": [1], "v": ["a"], "n": [1]})
    job.commit(messages)  # nothing came between
    assert rewrites == []
    # A concurrent commit to the other bucket only: still nothing to rewrite.
    key_bucket = {m.bucket for m in messages}
    a, a_messages = _prepared(t, {"id": [1, 2, 3, 4], "v": list("abcd"), "n": [1, 1, 1, 1]})
    b, b_messages = _prepared(t, {"id": [1, 2, 3, 4], "v": list("efgh"), "n": [2, 2, 2, 2]})
    other = [m for m in b_messages if m.bucket not in key_bucket]
    b.commit(other)
    a.commit([m for m in a_messages if m.bucket in key_bucket])
    assert rewrites == []
    assert len({m.bucket for m in a_messages}) == 2  # the keys do span both buckets


@pytest.mark.parametrize(
    "options",
    [{"merge-engine": "first-row"}, {"sequence.field": "n"}, {"merge-engine": "aggregation"}],
    ids=["first-row", "sequence-field", "aggregation"],
)
def test_tables_with_their_own_order_are_left_alone(catalog: Catalog, options: dict[str, str]) -> None:
    name = "own_order_" + "_".join(options.values()).replace("-", "_")
    t = _table(catalog, name, **options)
    a, a_messages = _prepared(t, {"id": [1], "v": ["a"], "n": [1]})
    b, b_messages = _prepared(t, {"id": [1], "v": ["b"], "n": [2]})
    b.commit(b_messages)
    landed = a.commit(a_messages)
    assert landed is not None
    manifests = t.store.manifests
    delta = manifests.read_entries(manifests.read_list(landed.delta_manifest_list))
    files = {e.file.file_name: e.file for e in delta}
    assert all(files[f.file_name].min_sequence_number == f.min_sequence_number for m in a_messages for f in m.new_files)


def test_any_commit_order_of_many_writers_ends_with_the_last(catalog: Catalog) -> None:
    """Writers prepared in a seeded random order (some after others committed) and committed in another: at
    every snapshot each key holds the value of the last commit that wrote it."""
    t = _table(catalog, "later_wins_many")
    rng = random.Random(34)
    expected: dict[int, tuple[Any, Any]] = {}
    pending: list[tuple[int, WriteJob, list[CommitMessage], list[int]]] = []
    for i in range(24):
        keys = sorted(rng.sample(range(8), 3))
        job, messages = _prepared(t, {"id": keys, "v": [f"w{i}"] * 3, "n": [i] * 3})
        pending.append((i, job, messages, keys))
        while pending and rng.random() < 0.4:
            j, job, messages, keys = pending.pop(rng.randrange(len(pending)))
            snapshot = job.commit(messages)
            assert snapshot is not None
            expected.update({k: (f"w{j}", j) for k in keys})
            assert _rows(t, snapshot.id) == expected
    rng.shuffle(pending)
    for j, job, messages, keys in pending:
        snapshot = job.commit(messages)
        assert snapshot is not None
        expected.update({k: (f"w{j}", j) for k in keys})
        assert _rows(t, snapshot.id) == expected


def test_two_racing_writers_each_hold_their_values_at_their_snapshot(catalog: Catalog) -> None:
    """Two threads upsert one key set of one bucket as fast as they can: every acknowledged commit's values are
    the table's at its own snapshot, and the final values are the last commit's."""
    t = _table(catalog, "later_wins_race")
    keys = list(range(10))
    landed: list[tuple[int, str]] = []
    errors: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            for i in range(15):
                value = f"{name}{i}"
                job, messages = _prepared(t, {"id": keys, "v": [value] * 10, "n": [i] * 10})
                snapshot = job.commit(messages)
                assert snapshot is not None
                landed.append((snapshot.id, value))
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in "ab"]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for sid, value in landed:
        assert {v for v, _ in _rows(t, sid).values()} == {value}, f"snapshot {sid}"
    assert {v for v, _ in _rows(t).values()} == {max(landed)[1]}
