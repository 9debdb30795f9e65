"""``pyspark_paimon.stream_spark``: one call that runs a Structured Streaming query whose data Spark's JVM moves.

Why a function of its own: the ``paimon`` Python source and sink make every byte of a micro-batch cross into a
Python worker (a stream paimon -> paimon took 3.5x Spark's parquet -> parquet, issue 40). Here offsets, planning,
exactly-once and row kinds stay ours, and the data does not pass through Python where it need not:

* a :class:`~pyspark_paimon.table.Table` source is streamed by the ``paimon`` source as offsets only (one row per
  micro-batch, :mod:`pyspark_paimon.datasource.stream.stream_frames`); the ``foreachBatch`` step replans that
  micro-batch's splits and reads them as one DataFrame, Spark's Parquet reader for the files that need no merge
  and the Python reader for the rest;
* a :class:`~pyspark_paimon.table.Table` sink writes each micro-batch with Spark's Parquet writer (the JVM write
  path of ``t.write_spark``, :mod:`pyspark_paimon.datasource.write.jvm_write`) and commits it once, with Spark's
  batch id as the commit identifier and a commit user derived from the checkpoint, as the Python sink does: a
  batch that Spark replays after a crash between our commit and its commit log is found committed and skipped;
* any other source is a streaming DataFrame, any other sink a function ``(DataFrame, batch_id)``.

A module-level function, not a ``Table`` member: the call joins two ends (either of which may be no table), and
``Table`` is at its cap of public members (tests/test_structure.py). Nothing here imports pyspark: Spark is
reached through the session and DataFrames given (classic Spark; see docs/streaming.md for Spark Connect).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.stream.offset_log import OffsetLog
from pyspark_paimon.datasource.stream.stream_frames import OFFSETS_KEY, BatchFrame, batch_frame
from pyspark_paimon.datasource.stream.stream_jobs import StreamCommitter, StreamReadJob, stream_commit_user
from pyspark_paimon.datasource.write.jvm_write import discard, refuse_unsupported, stage_frame
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.options import COMMIT_USER_PREFIX
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.table import Table

log = logging.getLogger(__name__)

#: A sink that is not a table: called with each micro-batch's DataFrame and Spark's batch id.
BatchSink = Callable[[Any, int], None]


@dataclass
class _TableSource:
    """A table streamed as offsets, and how to turn a micro-batch's offsets into its rows."""

    table: Table
    job: StreamReadJob
    read_options: dict[str, str]  # of the Python half: the stream's options, the branch and the storage options
    offsets: OffsetLog  # the query's offset log: each micro-batch's offsets without a Spark job

    def frame(self, session: Any, batch_id: int) -> Any:
        start, end = self.offsets.batch(batch_id)
        read: BatchFrame = batch_frame(
            session, self.job, start, end, table_uri=self.table.uri, read_options=self.read_options
        )
        log.info(
            "Micro-batch %d of %s: Spark's reader reads %d files, the Python reader %d splits.",
            batch_id,
            self.table.identifier,
            read.jvm_files,
            read.python_splits,
        )
        return read.frame


@dataclass
class _TableSink:
    """Commits each micro-batch into a table once (see the module docstring)."""

    table: Table
    checkpoint: str

    def __call__(self, frame: Any, batch_id: int) -> Snapshot | None:
        store = self.table.store
        prefix = store.schema().core_options.get(COMMIT_USER_PREFIX)
        user = stream_commit_user(prefix, self.checkpoint, store.table_path)
        landed = StreamCommitter(store, user).landed(batch_id)
        if landed is not None:
            log.warning(
                "Micro-batch %d of the stream into %s was already committed (snapshot %d, commit user '%s'): Spark "
                "replays it after a restart; skipping it so it is not written twice.",
                batch_id,
                self.table.identifier,
                landed.id,
                user,
            )
            return None
        job = prepare_write(store)
        job.commit_user = user
        job.context = replace(job.context, commit_user=user)
        staged = stage_frame(frame, store, job.context)
        try:
            if not staged.messages:
                return None
            return job.commit(staged.messages, commit_identifier=batch_id)  # its abort deletes the moved files
        finally:
            discard(store, staged, files=False)


@dataclass
class _MicroBatch:
    """The ``foreachBatch`` function: the micro-batch's rows (from offsets for a table source), then the sink."""

    source: _TableSource | None
    sink: Callable[[Any, int], Any]

    def __call__(self, frame: Any, batch_id: int) -> None:
        # A table source's own DataFrame (its offsets row) is never evaluated: Spark runs no job for it.
        rows = self.source.frame(frame.sparkSession, batch_id) if self.source is not None else frame
        self.sink(rows, batch_id)


def _table_source(
    spark: Any, table: Table, read_options: Mapping[str, Any], checkpoint: str
) -> tuple[_TableSource, Any]:
    opts = {str(k): str(v) for k, v in read_options.items()}
    if any(k.lower() == "branch" for k in opts):
        raise OptionError("Give the source branch as the table (t.on_branch(name)), not as a 'branch' read option.")
    job = StreamReadJob(table.store, opts)
    job.columns = tuple(job.store.schema().field_names)  # fixed when the stream starts, as the Python source does
    job.context()  # unknown options or columns: an error now, not in the first micro-batch
    store = table.store
    python_opts = {**opts, "branch": table.branch}
    for key, value in store.fileio.current_storage_options().items():
        python_opts[f"fs.{key}"] = value if isinstance(value, str) else json.dumps(value)
    # Batch 0 starts at the initial offset, which Spark does not log: pinned here and handed to the source, so the
    # source and the offset log agree on it (a restart pins it again, as Spark asks a source for it again).
    initial = job.initial_offset()
    offsets = OffsetLog.of(checkpoint, initial, like=store.fileio)
    stream = (
        spark.readStream.format("paimon")
        .options(**python_opts)
        .option(OFFSETS_KEY, json.dumps(initial.to_dict()))
        .load(table.uri)
    )
    return _TableSource(table, job, python_opts, offsets), stream


def stream_spark(
    spark: Any,
    source: Table | Any,
    sink: Table | BatchSink,
    *,
    checkpoint: str,
    trigger: Mapping[str, Any] | None = None,
    read_options: Mapping[str, Any] | None = None,
    query_name: str | None = None,
) -> Any:
    """Start a streaming query from ``source`` to ``sink`` on the JVM stream path and return its
    ``StreamingQuery``.

    ``source``: a :class:`~pyspark_paimon.table.Table` (its branch streamed with ``read_options``, the options of
    ``spark.readStream.format("paimon")``: ``scan.mode``, ``read.changelog``, ``read.stream.maxFilesPerTrigger``...)
    or any streaming DataFrame. ``sink``: a :class:`~pyspark_paimon.table.Table` (each micro-batch written by
    Spark's Parquet writer and committed exactly once; the tables ``t.write_spark`` writes) or a function
    ``(DataFrame, batch_id)`` that writes a micro-batch anywhere (make it idempotent per ``batch_id``: Spark
    replays a micro-batch that did not reach its commit log). ``checkpoint``: the query's checkpoint location
    (required: exactly-once commits are keyed by it). ``trigger``: ``DataStreamWriter.trigger`` keywords, e.g.
    ``{"availableNow": True}`` or ``{"processingTime": "10 seconds"}``."""
    if not checkpoint:
        raise OptionError("stream_spark needs checkpoint=: exactly-once commits are keyed by the query's checkpoint.")
    if not isinstance(source, Table) and not isinstance(sink, Table):
        raise OptionError(
            "stream_spark moves data from or into a Paimon table: give a Table as the source or the sink (or both)."
        )
    if read_options and not isinstance(source, Table):
        raise OptionError("read_options apply to a Table source; set a DataFrame source's options on its reader.")
    deliver: Callable[[Any, int], Any]
    if isinstance(sink, Table):
        try:
            refuse_unsupported(sink.schema, sink.store.table_path)  # before the query starts
        except OptionError as exc:
            raise OptionError(
                f"stream_spark writes micro-batches through t.write_spark's path, which refuses this sink: {exc} "
                f"For a stream, write it with writeStream.format('paimon').start('{sink.uri}')."
            ) from exc
        deliver = _TableSink(sink, checkpoint)
    elif callable(sink):
        deliver = sink
    else:
        raise OptionError(f"sink must be a Table or a function (DataFrame, batch_id), got {type(sink).__name__}.")
    table_source = None
    if isinstance(source, Table):
        table_source, stream = _table_source(spark, source, read_options or {}, checkpoint)
    else:
        stream = source
    writer = stream.writeStream.foreachBatch(_MicroBatch(table_source, deliver)).option(
        "checkpointLocation", checkpoint
    )
    if trigger:
        writer = writer.trigger(**trigger)
    if query_name:
        writer = writer.queryName(query_name)
    return writer.start()


__all__ = ["BatchSink", "stream_spark"]
