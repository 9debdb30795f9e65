"""Postpone-bucket tables (bucket = -2): batch scans read only the real buckets, as Java's batch scans do
(``AbstractBatchTableScan`` -> ``onlyReadRealBuckets``), and count the ``bucket-postpone`` files they leave
out; streams without a changelog producer keep every bucket (tests/datasource/test_postpone_write.py has the
writes and the stream with one).

The table is assembled through the metadata layer: data files written by
ordinary tables of the same schema are copied into a ``bucket = -2`` table's bucket directories and committed
there, the real-bucket files as buckets 0 and 1 of 2, the others as bucket -2 (``bucket-postpone``), the
layout Java's postpone writes and postpone compaction leave.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.table import Table

SCHEMA = "k int not null, v string, p string"


def _write(t: Table, keys: list[int], v: str, p: str) -> None:
    t.write_arrow(pa.table({"k": pa.array(keys, pa.int32()), "v": [v] * len(keys), "p": [p] * len(keys)}))


def _adopt(source: Table, target: Table, bucket: int | None = None) -> list[CommitMessage]:
    """Commit messages that add ``source``'s live files to ``target`` (copied into its bucket directories), in
    their own buckets or, with ``bucket``, all in that one."""
    schema = target.store.schema()
    types = [f.type for f in schema.partition_fields]
    messages = []
    src_schema = source.store.schema()
    for e in source.store.live_entries(source.latest_snapshot()):
        values = tuple(deserialize_row(e.partition, types))
        src = source.store.bucket_path(src_schema, values, e.bucket)
        to_bucket = e.bucket if bucket is None else bucket
        dst = target.store.bucket_path(schema, values, to_bucket)
        Path(dst).mkdir(parents=True, exist_ok=True)
        Path(f"{dst}/{e.file.file_name}").write_bytes(Path(f"{src}/{e.file.file_name}").read_bytes())
        total = e.total_buckets if bucket is None else bucket
        messages.append(CommitMessage(e.partition, to_bucket, total, (e.file,)))
    return messages


def _postpone_table(tmp_path: Path) -> tuple[Table, int]:
    """A postpone table with keys 1..4 in real buckets of partitions a and b, and a pending postpone file per
    partition (key 1 updated, key 9 new) in ``bucket-postpone``; returns it and the postpone files' bytes."""
    catalog = Catalog(str(tmp_path))
    pk = {"primary_keys": ["k", "p"], "partition_keys": ["p"]}
    real = catalog.create_table("db.real", SCHEMA, **pk, options={"bucket": "2", "write-only": "true"})
    pending = catalog.create_table("db.pending", SCHEMA, **pk, options={"bucket": "1", "write-only": "true"})
    for p in ("a", "b"):
        _write(real, [1, 2, 3, 4], "bucketed", p)
        _write(pending, [1, 9], "pending", p)
    t = catalog.create_table("db.t", SCHEMA, **pk, options={"bucket": "-2"})
    commit = FileStoreCommit(t.store, options=dict(t.store.schema().options))
    assert commit.commit(_adopt(real, t))
    postpone = _adopt(pending, t, bucket=-2)
    assert commit.commit(postpone)
    assert {e.bucket for e in t.store.live_entries(t.latest_snapshot())} == {0, 1, -2}
    assert (Path(t.store.table_path) / "p=a" / "bucket-postpone").is_dir()
    return t, sum(f.file_size for m in postpone for f in m.new_files)


def _rows(t: Table, **options: Any) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"]) for r in t.scan(read_options=options or None).to_arrow().to_pylist())


def test_batch_reads_skip_the_postpone_bucket(tmp_path: Path) -> None:
    t, postpone_bytes = _postpone_table(tmp_path)
    assert _rows(t) == [(p, k, "bucketed") for p in ("a", "b") for k in (1, 2, 3, 4)]
    c = t.scan().explain().counters
    assert (c.files_skipped_postpone, c.bytes_skipped_postpone) == (2, postpone_bytes)
    assert c.files_total == c.files_selected + c.files_skipped_postpone
    assert c.buckets_total == 4  # (a, 0), (a, 1), (b, 0), (b, 1): the postpone bucket is not a bucket here


def test_partition_filtered_scans_count_the_other_partitions_postpone_files_as_postpone(tmp_path: Path) -> None:
    t, postpone_bytes = _postpone_table(tmp_path)
    c = t.scan(filter="p = 'a'").explain().counters
    assert c.files_skipped_postpone == 2 and c.bytes_skipped_postpone == postpone_bytes
    assert c.files_total == c.files_selected + c.files_skipped_postpone + c.files_skipped_partition
    assert c.partitions_selected == 1
    assert _rows(t, **{"scan.partitions": "p=a"}) == [("a", k, "bucketed") for k in (1, 2, 3, 4)]


def test_incremental_and_time_travel_reads_skip_it_too(tmp_path: Path) -> None:
    t, _ = _postpone_table(tmp_path)
    # Snapshot 2 added only postpone files: an incremental batch read of it is empty, as in Java.
    assert _rows(t, **{"incremental-between": "1,2"}) == []
    assert len(_rows(t, **{"scan.snapshot-id": "2"})) == 8


def test_streams_keep_every_bucket(tmp_path: Path) -> None:
    """Streams of a table without a changelog producer keep the postpone bucket: Java's streams skip postpone
    files only with a changelog producer (``DataTableStreamScan``; tests/datasource/test_postpone_write.py)."""
    t, _ = _postpone_table(tmp_path)
    snapshot = t.latest_snapshot()
    assert {s.bucket for s in ScanPlanner(t.store, t.store.schema(), streaming=True).plan(snapshot).splits} == {
        0,
        1,
        -2,
    }
    job = StreamReadJob(t.store, {"path": t.store.table_path})
    start = job.initial_offset()
    splits, _ = job.next_batch(start, None, None)
    assert -2 in {s.after.bucket for s in splits if s.after is not None}
