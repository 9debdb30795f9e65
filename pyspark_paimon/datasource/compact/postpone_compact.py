"""Postpone-bucket compaction: moves the rows of ``bucket-postpone`` into real buckets (rules: :mod:`postpone`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import pyarrow as pa

from pyspark_paimon.datasource.merge.merge import VALUE_KIND
from pyspark_paimon.datasource.read.key_probes import read_records
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.write.postpone import POSTPONE_DIRECTORY, ordered_by_writer, refuse_unreadable
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import CompactionError
from pyspark_paimon.metadata.io.avro import read_avro
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.options import POSTPONE_BATCH_WRITE_FIXED_BUCKET, POSTPONE_BUCKET
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit, commit_or_abort
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.split import DataSplit


@dataclass
class PostponeMove:
    """What a postpone compaction did: its COMPACT snapshot, the postpone files and rows it moved, the files and
    rows it wrote and the (partition, bucket) pairs they went to."""

    snapshot: Snapshot | None
    files_before: int
    rows_before: int
    files_after: int
    rows_after: int
    buckets: set[tuple[bytes, int]] = field(default_factory=set)


def compact_postpone(
    store: FileStore,
    matcher: Callable[[tuple], bool] | None = None,
) -> PostponeMove | None:
    """Move every postpone file of the partitions ``matcher`` accepts (all by default) into real buckets, in
    one COMPACT snapshot.

    None when the table has no postpone files there.
    The rows are read and rewritten in this process (postpone files are small by design: they wait for exactly
    this); Java's engines spread the same work over tasks."""
    store.fileio.require_exclusive_create()
    schema = store.schema()
    options = schema.core_options
    snapshot = store.snapshots.latest()
    if snapshot is None:
        return None
    types = [f.type for f in schema.partition_fields]
    postponed: dict[bytes, list[DataFileMeta]] = {}
    values_of: dict[bytes, tuple] = {}
    for e in store.live_entries(snapshot):
        if e.bucket != POSTPONE_BUCKET:
            continue
        if e.partition not in values_of:
            values_of[e.partition] = tuple(deserialize_row(e.partition, types))
        if matcher is not None and not matcher(values_of[e.partition]):
            continue
        postponed.setdefault(e.partition, []).append(e.file)
    if not postponed:
        return None
    refuse_unreadable([f for files in postponed.values() for f in files], schema, store.table_path)
    user = options.new_commit_user()
    read_ctx = ReadContext.for_store(store, schema)
    write_ctx = WriteContext.for_store(store, user)
    # Compaction always routes into real buckets, whatever the write option says.
    write_ctx = replace(write_ctx, options={**write_ctx.options, POSTPONE_BATCH_WRITE_FIXED_BUCKET.key: "true"})
    writer = TableWriter(write_ctx, "postpone-compact")
    before: list[CommitMessage] = []
    try:
        for part in sorted(postponed):
            files = ordered_by_writer(postponed[part])
            values = values_of[part]
            split = DataSplit(
                part, values, POSTPONE_BUCKET, POSTPONE_BUCKET, tuple(files), _bucket_dir(store, schema, values)
            )
            for f in files:
                if _is_avro(f):
                    rows = _read_avro_records(store, schema, split, f)
                else:
                    rows = read_records(read_ctx, split, f)
                if rows.num_rows == 0:
                    continue
                kinds = rows.column(VALUE_KIND).combine_chunks()
                writer.write(rows.select(list(schema.field_names)), kinds)
            before.append(CommitMessage(part, POSTPONE_BUCKET, POSTPONE_BUCKET, (), compact_before=tuple(files)))
        written = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    # The moved rows arrive as compaction outputs (Java's BucketFiles turns the writer's new files into
    # compactAfter), so the whole move is one COMPACT snapshot that streams of the real buckets skip.
    committed = commit_or_abort(
        lambda: FileStoreCommit(store, schema.options).commit([*before, *written], kind="COMPACT", commit_user=user),
        writer.abort,
        lambda: store.snapshots.commit_of(user),
    )
    return PostponeMove(
        committed,
        files_before=sum(len(m.compact_before) for m in before),
        rows_before=sum(f.row_count for m in before for f in m.compact_before),
        files_after=sum(len(m.new_files) for m in written),
        rows_after=sum(f.row_count for m in written for f in m.new_files),
        buckets={(m.partition, m.bucket) for m in written},
    )


def _bucket_dir(store: FileStore, schema: TableSchema, values: tuple) -> str:
    return FileIO.join(store.partition_dir(schema, values), POSTPONE_DIRECTORY)


def _is_avro(f: DataFileMeta) -> bool:
    return f.file_name.lower().endswith(".avro")


def _read_avro_records(store: FileStore, schema: TableSchema, split: DataSplit, f: DataFileMeta) -> pa.Table:
    """A key-value Avro file (Java's and pypaimon's postpone files): the value columns by name, in the table's
    Arrow types, plus ``_VALUE_KIND``. Only files of the current schema and of types whose Avro form converts
    to Arrow directly reach here (:func:`postpone.refuse_unreadable`)."""
    path = split.file_path(f)
    records = list(read_avro(store.fileio.read_bytes(path), path))
    arrow_schema = schema.arrow_schema()
    missing = [n for n in [*arrow_schema.names, VALUE_KIND] if records and n not in records[0]]
    if missing:
        raise CompactionError(
            f"Postpone file {path} has no column(s) {missing} of the table's current schema; compact the table "
            "with Paimon (Flink's compact action or Spark's CALL sys.compact with the Paimon jar)."
        )
    columns = {fld.name: pa.array([r.get(fld.name) for r in records], type=fld.type) for fld in arrow_schema}
    columns[VALUE_KIND] = pa.array([int(r[VALUE_KIND]) for r in records], pa.int8())
    return pa.table(columns)
