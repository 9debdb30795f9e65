"""``scan.partitions`` and ``filter`` on streams, Spark-free: every phase (full, delta, diff) emits only the
selected rows, and partitions the selection rules out are never planned."""

from __future__ import annotations

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.stream_offset import StreamOffset

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])


def _store(catalog: Catalog, pk: bool) -> FileStore:
    t = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"] if pk else (),
        options={"bucket": "1" if pk else "-1"},
    )
    return t.store


def _write(store: FileStore, rows: list[tuple[str, int, int]]) -> None:
    job = prepare_write(store, None)
    writer = job.new_writer("local")
    writer.write(pa.table({n: [r[i] for r in rows] for i, n in enumerate(SCHEMA.names)}, schema=SCHEMA))
    job.commit(writer.prepare_commit())


def _job(store: FileStore, columns: list[str] | None = None, **options: str) -> StreamReadJob:
    return StreamReadJob(store, {"path": store.table_path, "read.changelog": "true", **options}, columns)


def _batch(job: StreamReadJob, pos: StreamOffset) -> tuple[list[tuple], StreamOffset]:
    """One micro-batch as Spark runs it: latestOffset, then partitions(start, end), read in order."""
    _, end = job.next_batch(pos)
    splits = job.splits_between(pos, end)
    assert all(p.partition_values == ("a",) for s in splits for p in s.splits), "a pruned partition was planned"
    ctx = job.context()
    rows = [tuple(r.values()) for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]
    return sorted(rows, key=repr), end


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize(
    "options",
    [{"scan.partitions": "dt=a"}, {"filter": "dt = 'a'"}, {"filter": "dt = 'a' AND v >= 0"}],
    ids=["scan.partitions", "filter-partition", "filter-rows"],
)
def test_full_and_delta_phases_emit_only_the_selected_partition(catalog, pk, options):
    store = _store(catalog, pk)
    _write(store, [("a", 1, 1), ("b", 1, 1), ("a", 2, 2)])
    job = _job(store, **options)
    rows, pos = _batch(job, job.initial_offset())
    assert rows == [("+I", "a", 1, 1), ("+I", "a", 2, 2)]
    _write(store, [("b", 3, 3), ("b", 4, 4)])  # a commit touching only the other partition plans no split
    assert job.splits_between(pos, job.next_batch(pos)[1]) == []
    _write(store, [("a", 3, 3), ("b", 5, 5)])
    rows, pos = _batch(job, pos)
    assert rows == [("+I", "a", 3, 3)]


def test_a_row_filter_applies_to_every_phase_of_a_primary_key_stream(catalog):
    store = _store(catalog, True)
    _write(store, [("a", 1, 10), ("a", 2, 1), ("a", 3, 20), ("b", 1, 30)])
    job = _job(store, filter="v >= 10 AND dt = 'a'")
    rows, pos = _batch(job, job.initial_offset())
    assert rows == [("+I", "a", 1, 10), ("+I", "a", 3, 20)]  # full: merged, then filtered
    _write(store, [("a", 2, 11), ("a", 4, 5)])
    rows, pos = _batch(job, pos)
    assert rows == [("+I", "a", 2, 11)]  # delta: each change row on its own
    # A rewrite is streamed as a diff of the two filtered states: key 1 stops matching (retracted), key 3 changes,
    # key 5 is new and matches, key 6 is new and does not.
    bm = BranchManager(store)
    bm.create("fix", snapshot_id=1)
    _write(store.with_branch("fix"), [("a", 1, 0), ("a", 3, 21), ("a", 5, 50), ("a", 6, 6)])
    bm.fast_forward("fix", force=True)
    rows, pos = _batch(job, pos)
    assert rows == [("+I", "a", 3, 21), ("+I", "a", 5, 50), ("-D", "a", 1, 10), ("-D", "a", 2, 11)]


def test_a_filter_on_a_column_the_stream_does_not_return(catalog):
    store = _store(catalog, False)
    _write(store, [("a", 1, 1), ("a", 2, 20)])
    job = _job(store, ["id"], filter="v > 10")
    rows, pos = _batch(job, job.initial_offset())
    assert rows == [("+I", 2)]
    _write(store, [("a", 3, 30), ("a", 4, 4)])
    rows, _ = _batch(job, pos)
    assert rows == [("+I", 3)]


@pytest.mark.parametrize(
    "options, message",
    [
        ({"filter": "nope > 1"}, "nope"),
        ({"scan.partitions": "region=x"}, "not a partition key"),
    ],
)
def test_a_bad_selection_fails_when_the_stream_starts(catalog, options, message):
    store = _store(catalog, True)
    with pytest.raises(OptionError, match=message):
        _job(store, **options)
