"""Postpone-bucket tables (``bucket = -2``) written and compacted as Java's engines do (Paimon 1.4 / 2.0 rules,
datasource/write/postpone.py): writes into real buckets by default (``postpone.batch-write-fixed-bucket``), raw writes
into ``bucket-postpone`` otherwise, and the compaction that moves those into real buckets in one COMPACT
snapshot."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import CommitStateUnknownError, CompactionError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import AtomicType
from tests.sparkutil import load, save, sorted_rows

STR = AtomicType("VARCHAR", nullable=False, length=2147483647)
SCHEMA = "p string not null, k int not null, v string"


def _table(catalog: Catalog, name: str, **options: str) -> Table:
    return catalog.create_table(
        name, SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "-2", **options}
    )


def _rows(p: str, keys: list[int], v: str) -> pa.Table:
    return pa.table({"p": [p] * len(keys), "k": pa.array(keys, pa.int32()), "v": [v] * len(keys)})


def _read(t: Table) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"]) for r in t.scan().to_arrow().to_pylist())


def _entries(t: Table) -> list[tuple[str, int, int, int, str]]:
    """(partition value, bucket, total buckets, level, file name) of every live file."""
    store = t.store
    return sorted(
        (deserialize_row(e.partition, [STR])[0], e.bucket, e.total_buckets, e.file.level, e.file.file_name)
        for e in store.live_entries(store.snapshots.latest())
    )


def test_batch_writes_go_into_real_buckets_with_the_known_count_or_the_default(catalog: Catalog) -> None:
    t = _table(catalog, "db.fixed", **{"postpone.default-bucket-num": "2"})
    t.write_arrow(_rows("a", [1, 2, 3, 4], "x"))
    entries = _entries(t)
    assert {(p, total, level) for p, _, total, level, _ in entries} == {("a", 2, 0)}
    assert {b for _, b, *_ in entries} <= {0, 1}
    assert _read(t) == [("a", k, "x") for k in (1, 2, 3, 4)]
    # The partition keeps its bucket count even when the default changes; a new partition takes the new default.
    with t.update_schema() as u:
        u.set_options({"postpone.default-bucket-num": "3"})
    t.write_arrow(pa.concat_tables([_rows("a", [1], "y"), _rows("b", [5, 6], "z")]))
    assert {(p, total) for p, _, total, *_ in _entries(t)} == {("a", 2), ("b", 3)}
    assert _read(t) == [("a", 1, "y"), ("a", 2, "x"), ("a", 3, "x"), ("a", 4, "x"), ("b", 5, "z"), ("b", 6, "z")]
    # No automatic compaction (Java's fixed-bucket writes are write-only): every snapshot is an APPEND.
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND"]


def test_postpone_writes_wait_in_the_postpone_bucket_until_compaction_moves_them(catalog: Catalog) -> None:
    t = _table(catalog, "db.raw", **{"postpone.batch-write-fixed-bucket": "false"})
    t.write_arrow(pa.concat_tables([_rows("a", [2, 1], "x"), _rows("a", [1], "y")]))
    t.write_arrow(_rows("b", [7], "z"))
    entries = _entries(t)
    assert [(p, b, total, level) for p, b, total, level, _ in entries] == [("a", -2, -2, 0), ("b", -2, -2, 0)]
    name = entries[0][4]
    assert name.startswith("data--u-") and "-s-" in name and "-w-" in name
    # The file holds the rows as they came: unsorted, unmerged, sequence -1.
    path = f"{t.store.table_path}/p=a/bucket-postpone/{name}"
    data = pq.ParquetFile(path).read()
    assert data.column("k").to_pylist() == [2, 1, 1]
    assert set(data.column("_SEQUENCE_NUMBER").to_pylist()) == {-1}
    assert _read(t) == []  # batch reads skip bucket-postpone, as Java's

    result = t.maintenance.compact()
    assert result and result.files_before == 2 and result.rows_before == 4
    snaps = t.snapshots()
    assert [s.commit_kind for s in snaps] == ["APPEND", "APPEND", "COMPACT"]
    # Default bucket count 1 for partitions without real buckets; later rows of a key win.
    assert {(p, b, total) for p, b, total, *_ in _entries(t)} == {("a", 0, 1), ("b", 0, 1)}
    assert _read(t) == [("a", 1, "y"), ("a", 2, "x"), ("b", 7, "z")]

    assert not t.maintenance.compact()  # nothing left to move, nothing to compact


def test_retractions_move_into_the_buckets(catalog: Catalog) -> None:
    t = _table(catalog, "db.kinds", **{"postpone.batch-write-fixed-bucket": "false", "rowkind.field": "v"})
    t.write_arrow(_rows("a", [1, 2], "+I"))
    t.write_arrow(_rows("a", [1], "-D"))
    t.maintenance.compact()
    assert _read(t) == [("a", 2, "+I")]


def test_streams_see_postpone_files_without_a_changelog_producer(catalog: Catalog) -> None:
    from pyspark_paimon.planner.scan import ScanPlanner

    for producer, expected in (("none", True), ("input", False)):
        t = _table(
            catalog,
            f"db.stream_{producer}",
            **{"postpone.batch-write-fixed-bucket": "false", "changelog-producer": producer},
        )
        t.write_arrow(_rows("a", [1], "x"))
        store = t.store
        plan = ScanPlanner(store, store.schema(), streaming=True).plan(store.snapshots.latest())
        assert any(s.bucket == -2 for s in plan.splits) is expected


def test_avro_postpone_files_of_plain_types_and_the_current_schema_are_moved_others_refused(
    catalog: Catalog,
) -> None:
    from pyspark_paimon.datasource.write.postpone import refuse_unreadable

    t = _table(catalog, "db.avro", **{"postpone.batch-write-fixed-bucket": "false"})
    t.write_arrow(_rows("a", [1], "x"))
    store = t.store
    (entry,) = store.live_entries(store.snapshots.latest())
    avro = dataclasses.replace(entry.file, file_name="data--u-x-s-1-w-a-0.avro")
    refuse_unreadable([entry.file, avro], store.schema(), "t")  # parquet, and Avro of plain types: moved
    with pytest.raises(CompactionError, match="older schema"):
        refuse_unreadable([dataclasses.replace(avro, schema_id=7)], store.schema(), "t")
    d = catalog.create_table(
        "db.avro_dec", "k int not null, d decimal(10, 2)", primary_keys=["k"], options={"bucket": "-2"}
    )
    with pytest.raises(CompactionError, match=r"d DECIMAL\(10, 2\)"):
        refuse_unreadable([avro], d.store.schema(), "t")


@pytest.mark.spark
def test_spark_writes_and_compaction(spark: Any, catalog: Catalog, warehouse: str) -> None:
    t = _table(catalog, "db.spost", **{"postpone.default-bucket-num": "2"})
    df = spark.createDataFrame([("a", k, "s") for k in range(6)], "p string, k int, v string")
    save(df.repartition(3), "db.spost", warehouse=warehouse)  # three tasks, one bucket layout
    assert {(p, total) for p, _, total, *_ in _entries(t)} == {("a", 2)}
    with t.update_schema() as u:
        u.set_options({"postpone.batch-write-fixed-bucket": "false"})
    save(
        spark.createDataFrame([("a", 1, "n"), ("b", 9, "n")], "p string, k int, v string"),
        "db.spost",
        warehouse=warehouse,
    )
    assert sorted_rows(load(spark, "db.spost", warehouse=warehouse)) == [("a", k, "s") for k in range(6)]
    assert t.maintenance.compact(spark=spark)
    assert {(p, total) for p, _, total, *_ in _entries(t)} == {("a", 2), ("b", 2)}
    assert sorted_rows(load(spark, "db.spost", warehouse=warehouse)) == sorted(
        [("a", k, "n" if k == 1 else "s") for k in range(6)] + [("b", 9, "n")]
    )


def test_overwrite_replaces_the_postpone_files_and_keeps_bucket_counts(catalog: Catalog) -> None:
    t = _table(catalog, "db.over", **{"postpone.default-bucket-num": "2"})
    t.write_arrow(_rows("a", [1, 2], "x"))
    with t.update_schema() as u:
        u.set_options({"postpone.batch-write-fixed-bucket": "false", "postpone.default-bucket-num": "1"})
    t.write_arrow(_rows("a", [3], "y"))
    with t.update_schema() as u:
        u.set_options({"postpone.batch-write-fixed-bucket": "true"})
    t.write_arrow(_rows("a", [5], "z"), mode="overwrite")
    assert [(p, total) for p, _, total, *_ in _entries(t)] == [("a", 2)]
    assert _read(t) == [("a", 5, "z")]


def test_lookup_producer_tables_get_their_changelog_after_the_move(catalog: Catalog) -> None:
    """The move commits no changelog (a COMPACT of rows never seen); the lookup compaction of the buckets it wrote
    then does, as Java's bucket writers behind its move would: +I for new keys, -U/+U for a later update."""
    t = _table(catalog, "db.lookup", **{"postpone.batch-write-fixed-bucket": "false", "changelog-producer": "lookup"})
    t.write_arrow(_rows("a", [1, 2], "x"))
    t.maintenance.compact()
    t.write_arrow(_rows("a", [1], "y"))
    t.maintenance.compact()
    kinds = [(s.commit_kind, s.changelog_record_count) for s in t.snapshots()]
    assert kinds == [("APPEND", None), ("COMPACT", None), ("COMPACT", 2)] * 2
    assert _read(t) == [("a", 1, "y"), ("a", 2, "x")]


def test_a_stream_reads_the_postpone_rows_once_as_written_and_skips_the_move(catalog: Catalog) -> None:
    """Without a changelog producer a stream reads bucket-postpone (unmerged, as Java's no-merge reader) and skips
    the COMPACT snapshot of the move; with one, it reads only the real buckets (Java's DataTableStreamScan)."""
    from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split

    def rows(job: StreamReadJob, pos: object) -> tuple[list[tuple], object]:
        splits, end = job.next_batch(pos, None, None)  # type: ignore[arg-type]
        ctx = job.context()
        got = [tuple(r.values())[:3] for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]
        return sorted(got), end

    t = _table(catalog, "db.stream_rows", **{"postpone.batch-write-fixed-bucket": "false"})
    t.write_arrow(pa.concat_tables([_rows("a", [1], "x"), _rows("a", [1], "y")]))
    job = StreamReadJob(t.store, {"path": t.store.table_path})
    first, pos = rows(job, job.initial_offset())
    assert first == [("a", 1, "x"), ("a", 1, "y")]
    t.maintenance.compact()
    t.write_arrow(_rows("a", [2], "z"))
    later, _ = rows(job, pos)
    assert later == [("a", 2, "z")]


def test_key_filters_prune_the_real_buckets(catalog: Catalog) -> None:
    t = _table(catalog, "db.prune", **{"postpone.default-bucket-num": "4"})
    t.write_arrow(_rows("a", list(range(16)), "x"))
    scan = t.scan(filter="k = 3")
    assert [(r["k"], r["v"]) for r in scan.to_arrow().to_pylist()] == [(3, "x")]
    assert scan.explain().counters.files_skipped_bucket == 3


class _LosesSnapshotAnswer(FileIO):
    """Creates the next snapshot file, then fails as if the answer was lost (``error``: what the caller sees)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__("file")
        self.error: BaseException | None = error

    def try_create(self, path: str, data: bytes) -> bool:
        created = super().try_create(path, data)
        if self.error is not None and "/snapshot/snapshot-" in path:
            error, self.error = self.error, None
            raise error
        return created


@pytest.mark.parametrize("error", [OSError("connection reset"), KeyboardInterrupt()], ids=["lost-answer", "ctrl-c"])
def test_a_move_whose_snapshot_landed_keeps_its_files_when_the_answer_is_lost(
    catalog: Catalog, error: BaseException
) -> None:
    """The COMPACT snapshot is created but the caller sees an error (a lost answer, or Ctrl-C right after the
    create): its new files must stay, or every later read fails on the missing files."""
    t = _table(catalog, "db.lost", **{"postpone.batch-write-fixed-bucket": "false"})
    t.write_arrow(_rows("a", [1, 2], "x"))
    t.write_arrow(_rows("a", [2, 3], "y"))
    io = _LosesSnapshotAnswer(error)
    hooked = Table(FileStore(io, t.store.table_path))
    with pytest.raises((CommitStateUnknownError, KeyboardInterrupt)):
        hooked.maintenance.compact()
    assert io.error is None, "the snapshot create was reached"
    fresh = Table(FileStore(FileIO("file"), t.store.table_path))
    assert [s.commit_kind for s in fresh.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    for e in fresh.store.live_entries(fresh.store.snapshots.latest()):
        bucket_dir = fresh.store.bucket_path(fresh.schema, tuple(deserialize_row(e.partition, [STR])), e.bucket)
        assert fresh.store.fileio.exists(f"{bucket_dir}/{e.file.file_name}"), e.file.file_name
    assert _read(fresh) == [("a", 1, "x"), ("a", 2, "y"), ("a", 3, "y")]
    assert not fresh.maintenance.compact()  # the move is done: nothing left to move
    assert _read(fresh) == [("a", 1, "x"), ("a", 2, "y"), ("a", 3, "y")]
