"""Spark Structured Streaming: ``spark.readStream.format("paimon")`` and ``df.writeStream.format("paimon")``.

The reader is Spark's ``DataSourceStreamReader``. Offsets are :class:`pyspark_paimon.planner.stream_offset.StreamOffset`
dicts. On Spark 4.2+ ``latestOffset(start, limit)`` admits splits up to the ``read.stream.*PerTrigger`` limits
and ``Trigger.AvailableNow`` stops at the snapshot that was latest when the query started; Spark 4.1 calls
``latestOffset()`` without arguments, so each micro-batch there takes every complete snapshot available.
``partitions(start, end)`` replans exactly the splits between two logged offsets, so a replayed batch reads the
same rows. Splits of one (partition, bucket) stay in one task, in commit order, so that a key's changes reach
the sink in the order they were made; unaware-bucket append tables, which promise no order, spread their files
over every core (:func:`pyspark_paimon.planner.micro_batch.task_groups`).

The writer is Spark's ``DataSourceStreamArrowWriter``: tasks write data files, and ``commit(messages,
batchId)`` on the driver commits them once per micro-batch, idempotently (see
:mod:`pyspark_paimon.datasource.stream.stream_jobs`).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StringType, StructField, StructType

from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.read.read import coalesce_batches
from pyspark_paimon.datasource.spark.reader import conform, spark_arrow_schema
from pyspark_paimon.datasource.spark.writer import (
    PaimonCommitMessage,
    check_write_schema,
    delete_written_files,
    ensure_table,
    merge_for_write,
    raise_refusals,
    write_task,
)
from pyspark_paimon.datasource.stream.stream_frames import OFFSET_COLUMNS, BatchRange
from pyspark_paimon.datasource.stream.stream_jobs import (
    StreamCommitter,
    StreamReadContext,
    StreamReadJob,
    read_stream_split,
    stream_commit_user,
)
from pyspark_paimon.datasource.table_ref import TableRef, route_to_audit_branch
from pyspark_paimon.errors import OptionError, PaimonError
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.schema.options import COMMIT_USER_PREFIX
from pyspark_paimon.metadata.snapshots.commit import OverwriteSpec
from pyspark_paimon.planner.micro_batch import Admission, limits_of
from pyspark_paimon.planner.stream_offset import StreamOffset, StreamSplit
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN

try:  # Spark 4.2+: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxBytes,
        ReadMaxFiles,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    HAS_ADMISSION_CONTROL = True
except ImportError:  # Spark 4.1
    HAS_ADMISSION_CONTROL = False

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stands in for Spark 4.2's mixin on 4.1, where Python sources have no Trigger.AvailableNow."""


log = logging.getLogger(__name__)

# Options Spark adds to a streaming write (they are not table options).
_STREAM_WRITE_KEYS = ("checkpointlocation", "queryname")


@dataclass(frozen=True)
class PaimonStreamPartition(InputPartition):
    index: int
    splits: tuple[StreamSplit, ...]
    context: StreamReadContext


class PaimonStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streams one branch of one table (see the module docstring). Lives in Spark's long-running planning
    worker; ``read`` runs in executors on a pickled copy that carries everything in its partition."""

    def __init__(self, ref: TableRef, schema: StructType):
        if ref.system_table:
            raise OptionError(f"System table ${ref.system_table} cannot be read as a stream; read it in batch.")
        self.ref = ref
        self.spark_schema = schema
        self.job = StreamReadJob(ref.store(), ref.options)
        names = [f.name for f in schema.fields]
        if self.job.opts.changelog:
            if not names or names[0] != ROW_KIND_COLUMN:
                raise OptionError(
                    f"With 'read.changelog' the stream's first column is '{ROW_KIND_COLUMN}'; a schema "
                    "given to readStream.schema(...) must start with it."
                )
            names = names[1:]
        self.job.columns = tuple(names)
        self.job.context()  # the columns exist (a clear error now, not in the first batch)
        self.stop_at: int | None = None  # Trigger.AvailableNow: the latest snapshot when the query started
        self.last_trigger = 0.0

    # -- offsets ------------------------------------------------------------------------------------
    def initialOffset(self) -> dict:  # noqa: N802 (Spark's names)
        return self.job.initial_offset().to_dict()

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:  # noqa: N802
        if start is None:  # Spark 4.1: no admission control, every complete snapshot available
            latest = self.job.store.snapshots.latest()
            if latest is None:
                return StreamOffset(1).to_dict()
            return StreamOffset(latest.id, -1, "full").after(latest).to_dict()
        begin = StreamOffset.from_dict(start)
        admission = self._admission(limit)
        splits, end = self.job.next_batch(begin, admission, self.stop_at)
        opts = self.job.opts
        if (
            opts.min_rows is not None
            and opts.max_trigger_delay_ms is not None
            and self.stop_at is None
            and sum(s.row_count for s in splits) < opts.min_rows
            and (time.time() - self.last_trigger) * 1000 < opts.max_trigger_delay_ms
        ):
            return start  # read.stream.minRowsPerTrigger: wait for more rows, at most maxTriggerDelayMs
        if end != begin:
            self.last_trigger = time.time()
        return end.to_dict()

    def _admission(self, limit: Any) -> Admission | None:
        if not HAS_ADMISSION_CONTROL or limit is None or isinstance(limit, ReadAllAvailable):
            return None
        admission = limits_of(self.job.opts)
        if isinstance(limit, ReadMaxRows):
            admission.max_rows = min(limit.max_rows, admission.max_rows or limit.max_rows)
        elif isinstance(limit, ReadMaxFiles):
            admission.max_files = min(limit.max_files, admission.max_files or limit.max_files)
        elif isinstance(limit, ReadMaxBytes):
            admission.max_bytes = min(limit.max_bytes, admission.max_bytes or limit.max_bytes)
        return admission

    def getDefaultReadLimit(self) -> Any:  # noqa: N802
        """One of the configured limits (Spark takes a single one); all of them apply in ``latestOffset``."""
        opts = self.job.opts
        if opts.max_rows is not None:
            return ReadMaxRows(opts.max_rows)
        if opts.max_files is not None:
            return ReadMaxFiles(opts.max_files)
        if opts.max_bytes is not None:
            return ReadMaxBytes(opts.max_bytes)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self.stop_at = self.job.latest_snapshot_id() or 0

    # -- batches ------------------------------------------------------------------------------------
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        splits = self.job.splits_between(StreamOffset.from_dict(start), StreamOffset.from_dict(end))
        if not splits:
            return []
        ctx = self.job.context()
        return [PaimonStreamPartition(i, tuple(group), ctx) for i, group in enumerate(self.job.task_groups(splits))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PaimonStreamPartition)
        target = spark_arrow_schema(self.spark_schema)
        batches = (
            batch for s in partition.splits for batch in read_stream_split(partition.context, s) if batch.num_rows
        )
        for batch in coalesce_batches(batches, partition.context.read.batch_size):
            yield conform(batch, target)

    def commit(self, end: dict) -> None:
        self.job.commit(StreamOffset.from_dict(end))

    def stop(self) -> None:
        pass


@dataclass(frozen=True)
class OffsetsPartition(InputPartition):
    start: str
    end: str


#: The schema of the offsets stream of the JVM stream path (``pyspark_paimon.jvm_stream``).
OFFSETS_SCHEMA = StructType([StructField(name, StringType(), False) for name in OFFSET_COLUMNS])


class PaimonOffsetStreamReader(PaimonStreamReader):
    """The stream of the JVM stream path: the same offsets as :class:`PaimonStreamReader` (planning, admission,
    consumer progress), but each micro-batch is one row, its start and end offsets as JSON; the ``foreachBatch``
    step reads the rows (:mod:`pyspark_paimon.datasource.stream.stream_frames`). It starts at ``initial``, the
    offset the driver pinned and reads back as batch 0's start (``datasource.stream.offset_log``)."""

    def __init__(self, ref: TableRef, schema: StructType, initial: StreamOffset):
        super().__init__(ref, schema)
        self.initial = initial

    def initialOffset(self) -> dict:  # noqa: N802 (Spark's name)
        return self.initial.to_dict()

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return [OffsetsPartition(json.dumps(start), json.dumps(end))]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, OffsetsPartition)
        yield (partition.start, partition.end)


class PaimonStreamBatchReader(DataSourceReader):
    """A batch read of some splits of one micro-batch of a stream (``stream_frames.BATCH_KEY``): the splits the
    JVM stream path leaves to Python, read as :class:`PaimonStreamReader` reads them."""

    def __init__(self, ref: TableRef, schema: StructType, batch: BatchRange):
        self.stream = PaimonStreamReader(ref, schema)
        self.batch = batch

    def partitions(self) -> Sequence[InputPartition]:
        job = self.stream.job
        splits = job.splits_between(self.batch.start, self.batch.end)
        chosen = [splits[i] for i in self.batch.positions]
        ctx = job.context()
        groups = job.task_groups(chosen) if chosen else [[]]
        return [PaimonStreamPartition(i, tuple(group), ctx) for i, group in enumerate(groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.stream.read(partition)


def _table_options_only(ref: TableRef) -> TableRef:
    return replace(ref, options={k: v for k, v in ref.options.items() if k not in _STREAM_WRITE_KEYS})


class PaimonStreamWriter(DataSourceStreamArrowWriter):
    """Writes each micro-batch as one commit, exactly once (see the module docstring)."""

    def __init__(self, ref: TableRef, schema: StructType, overwrite: bool):
        self.checkpoint = ref.options.get("checkpointlocation")
        table_ref = route_to_audit_branch(_table_options_only(ref))
        for key in ("partitionoverwritemode", "overwrite-partition"):
            if key in table_ref.options:
                raise OptionError(
                    f"Option '{key}' does not apply to streaming writes: outputMode('append') appends "
                    "and outputMode('complete') replaces the whole table with each micro-batch."
                )
        table, write_options = merge_for_write(table_ref, schema, ensure_table(table_ref, schema))
        check_write_schema(schema, table, fill_missing=bool(write_options))
        stream_commit_user(None, self.checkpoint, ref.path)  # no checkpoint location: a clear error at start
        self.ref = table_ref
        self.job = prepare_write(table_ref.store(), OverwriteSpec("all") if overwrite else None, write_options)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PaimonCommitMessage:
        ctx = TaskContext.get()
        task_id = f"{ctx.partitionId()}-{ctx.attemptNumber()}" if ctx else "0"
        return write_task(self.job.refreshed_writer(task_id), task_id, iterator)

    def _committer(self) -> StreamCommitter:
        prefix = self.job.schema.core_options.get(COMMIT_USER_PREFIX)
        user = stream_commit_user(prefix, self.checkpoint, self.ref.path)
        self.job.commit_user = user
        return StreamCommitter(self.job.store, user)

    @records_effects("streaming micro-batch commit")
    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        raise_refusals(messages)
        committer = self._committer()
        landed = committer.landed(batchId)
        if landed is not None:
            log.warning(
                "Micro-batch %d of the stream into %s (branch '%s') was already committed (snapshot %d, "
                "commit user '%s'): Spark replays it after a restart; skipping it so it is not written twice.",
                batchId,
                self.ref.path,
                self.job.store.branch,
                landed.id,
                committer.commit_user,
            )
            delete_written_files(self.job, messages)
            return
        flat = [m for msg in messages if isinstance(msg, PaimonCommitMessage) for m in msg.messages]
        if not flat and self.job.overwrite is None:
            return
        self.job.commit(flat, commit_identifier=batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        try:
            landed = self._committer().landed(batchId)
        except PaimonError:
            return
        if landed is not None:
            log.warning(
                "Spark aborts micro-batch %d of the stream into %s, but it is committed (snapshot %d): "
                "keeping its files.",
                batchId,
                self.ref.path,
                landed.id,
            )
            return
        delete_written_files(self.job, messages)
