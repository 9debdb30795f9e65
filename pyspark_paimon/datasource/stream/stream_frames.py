"""A micro-batch of a Paimon stream as a Spark DataFrame whose merge-free files Spark's own reader reads.

Why: a Python streaming source makes every byte of every micro-batch cross into a Python worker, which costs a
stream paimon -> paimon 3.5x Spark's parquet -> parquet (issue 40). The JVM stream path keeps offsets, planning,
exactly-once and row kinds here, and lets Spark move the data: the ``paimon`` stream source, given
:data:`OFFSETS_KEY`, plans the offsets (one small row per micro-batch, its start and end offsets,
:data:`OFFSET_COLUMNS`, which nothing evaluates); the step Spark runs for each micro-batch (``foreachBatch``,
:mod:`pyspark_paimon.jvm_stream`) reads those offsets from Spark's offset log
(:mod:`~pyspark_paimon.datasource.stream.offset_log`), replans exactly those splits
(``StreamReadJob.splits_between``: the same splits for the same offsets, so a replayed batch reads the same rows)
and :func:`batch_frame` turns them into one DataFrame:

* splits that are files as stored, every row an insert -- a ``full`` phase's merge-free buckets, an append
  table's new files -- go to Spark's Parquet/ORC reader (:func:`~pyspark_paimon.datasource.read.jvm_read.
  jvm_splits_frame`, chosen as ``Scan.to_spark`` chooses: :func:`~pyspark_paimon.datasource.read.routing.
  route_splits`), with a literal ``'+I'`` row kind under ``read.changelog``;
* every other split (merges, row kinds, diffs, chain starts) is read by the ``paimon`` source as a batch read of
  that micro-batch (:data:`BATCH_KEY`: the offsets and the splits' positions among them), which reads it as the
  Python stream source does (``read_stream_split``). A primary-key bucket with one such split sends all of its
  splits of the micro-batch there, so a key's versions keep their commit order within one task.

Nothing here imports pyspark: SQL text and DataFrame methods of the session given, like ``jvm_read``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from pyspark_paimon.datasource.read.jvm_read import jvm_splits_frame
from pyspark_paimon.datasource.read.routing import route_splits
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.types.ddl import quote_ident, to_spark_ddl
from pyspark_paimon.planner.read_options import FILTER_KEY
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_offset import StreamOffset, StreamSplit
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN

#: Internal ``readStream`` option: the stream emits each micro-batch's offsets, not its rows, and starts at the
#: offset this option holds (JSON; the driver pins it, as Spark does not log a query's initial offset).
OFFSETS_KEY = "pyspark-paimon.stream-offsets"
#: Internal batch-read option: read these splits of one micro-batch (JSON of :class:`BatchRange`).
BATCH_KEY = "pyspark-paimon.stream-batch"
#: The columns of the offsets stream (each a ``StreamOffset`` as JSON).
OFFSET_COLUMNS = ("start", "end")
INTERNAL_KEYS = (OFFSETS_KEY, BATCH_KEY)


@dataclass(frozen=True)
class BatchRange:
    """Some splits of the micro-batch between two offsets: their positions in ``splits_between(start, end)``."""

    start: StreamOffset
    end: StreamOffset
    positions: tuple[int, ...]

    def to_json(self) -> str:
        return json.dumps({"start": self.start.to_dict(), "end": self.end.to_dict(), "splits": list(self.positions)})

    @staticmethod
    def from_json(text: str) -> "BatchRange":
        try:
            raw = json.loads(text)
            return BatchRange(
                StreamOffset.from_dict(raw["start"]),
                StreamOffset.from_dict(raw["end"]),
                tuple(int(i) for i in raw["splits"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise OptionError(
                f"Option '{BATCH_KEY}' is internal to the JVM stream path (pyspark_paimon.jvm_stream) and must be "
                f"the JSON of a micro-batch's offsets and split positions, got {text!r} ({exc})."
            ) from exc


def without_internal(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` minus this module's internal keys (what the stream's own option checks see)."""
    return {k: v for k, v in options.items() if k.lower() not in INTERNAL_KEYS}


def initial_offset(text: str) -> StreamOffset:
    """The initial offset :data:`OFFSETS_KEY` carries (the JSON of a ``StreamOffset``, pinned by the driver)."""
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise OptionError(
            f"Option '{OFFSETS_KEY}' is internal to the JVM stream path (pyspark_paimon.jvm_stream) and must be "
            f"the JSON of the stream's initial offset, got {text!r}."
        )
    return StreamOffset.from_dict(raw)


def stream_ddl(job: StreamReadJob) -> str:
    """The Spark DDL of the stream's rows: its columns, behind ``rowkind`` with ``read.changelog``."""
    ctx = job.context()
    schema = ctx.read.schema
    names = list(job.columns) if job.columns is not None else schema.field_names
    ddl = to_spark_ddl([schema.field(n) for n in names])
    return f"{quote_ident(ROW_KIND_COLUMN)} STRING, {ddl}" if ctx.changelog else ddl


@dataclass
class BatchFrame:
    """One micro-batch's DataFrame and how it was read (for tests and the docs' rule)."""

    frame: Any
    jvm_files: int
    python_splits: int


def _jvm_positions(job: StreamReadJob, splits: Sequence[StreamSplit]) -> set[int]:
    """The positions of the splits Spark's file readers can read: a ``full`` split routed to the JVM as a batch
    read's split would be, or an append table's ``delta`` split (its files as stored, all inserts) without
    deletion vectors."""
    ctx = job.context().read
    schema = ctx.schema
    primary = bool(schema.primary_keys)
    candidates: dict[int, DataSplit] = {}
    for i, s in enumerate(splits):
        if s.after is None:
            continue
        if s.phase == "full":
            candidates[i] = s.after
        elif s.phase == "delta" and not primary and not s.after.deletion_files:
            candidates[i] = replace(s.after, raw_convertible=True)  # one append file read as stored: no merge
    routing = route_splits("plain", schema, ctx, list(candidates.values()))
    jvm_ids = {id(s) for s in routing.jvm}
    chosen = {i for i, s in candidates.items() if id(s) in jvm_ids}
    if primary:  # a bucket goes one way: its versions stay in commit order in one Python task
        python_buckets = {_bucket_of(s) for i, s in enumerate(splits) if i not in chosen}
        chosen = {i for i in chosen if _bucket_of(splits[i]) not in python_buckets}
    return chosen


def _bucket_of(s: StreamSplit) -> tuple[bytes, int] | None:
    return (s.after.partition, s.after.bucket) if s.after is not None else None


def batch_frame(
    session: Any,
    job: StreamReadJob,
    start: StreamOffset,
    end: StreamOffset,
    *,
    table_uri: str,
    read_options: Mapping[str, str],
) -> BatchFrame:
    """The rows of the micro-batch from ``start`` to ``end`` of ``job``'s stream as a DataFrame of ``session``
    (see the module docstring); ``read_options`` are the stream's (storage options included) for the Python half."""
    splits = job.splits_between(start, end)
    jvm = _jvm_positions(job, splits)
    sctx = job.context()
    ctx = sctx.read
    names = list(job.columns) if job.columns is not None else ctx.schema.field_names
    frames = []
    if jvm:
        chosen = [a for a in (splits[i].after for i in sorted(jvm)) if a is not None]
        part = jvm_splits_frame(session, ctx, ctx.schema, chosen, read_options.get(FILTER_KEY), names)
        if sctx.changelog:
            part = part.selectExpr(f"'+I' AS {quote_ident(ROW_KIND_COLUMN)}", "*")
        frames.append(part)
    rest = tuple(i for i in range(len(splits)) if i not in jvm)
    if rest or not frames:
        opts = {**without_internal(read_options), BATCH_KEY: BatchRange(start, end, rest).to_json()}
        frames.append(session.read.format("paimon").options(**opts).schema(stream_ddl(job)).load(table_uri))
    frame = frames[0]
    for other in frames[1:]:
        frame = frame.unionByName(other)
    return BatchFrame(frame, sum(splits[i].file_count for i in jvm), len(rest))


__all__ = [
    "BATCH_KEY",
    "OFFSETS_KEY",
    "OFFSET_COLUMNS",
    "BatchFrame",
    "BatchRange",
    "batch_frame",
    "initial_offset",
    "stream_ddl",
    "without_internal",
]
