"""Where a compaction's tasks run: :func:`run_in_process` (threads, one bucket each), :func:`session_runner` (each
bucket in a Spark executor, through a session's DataFrame methods only, so classic Spark and Spark Connect alike),
and :func:`compact_batches`, the executor side over Arrow batches of pickled tasks (Spark's ``mapInArrow``).
:func:`delete_outputs` removes the files of an attempt that was not committed.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from pyspark_paimon.datasource.compact.bucket_rewrite import compact_bucket
from pyspark_paimon.datasource.compact.compact_plan import CompactContext, CompactPlan
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, delete_new_files

__all__ = ["compact_batches", "run_in_process", "session_runner", "delete_outputs", "TASK_COLUMN", "MESSAGE_COLUMN"]


log = logging.getLogger(__name__)


#: Column names of the Arrow batches :func:`compact_batches` consumes and produces.
TASK_COLUMN = "task"


MESSAGE_COLUMN = "message"


#: Buckets compacted at once by :func:`run_in_process` (one per core).
_COMPACT_THREADS = max(1, os.cpu_count() or 1)


def compact_batches(ctx: CompactContext, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Compact every pickled :class:`CompactTask` in the ``task`` column of ``batches``; yields one batch per
    task with its pickled :class:`CommitMessage` in the ``message`` column (Spark's ``mapInArrow`` contract)."""
    schema = pa.schema([pa.field(MESSAGE_COLUMN, pa.binary())])
    for batch in batches:
        for payload in batch.column(TASK_COLUMN).to_pylist():
            task = pickle.loads(payload)
            message = compact_bucket(ctx, task)
            yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(message)], pa.binary())], schema=schema)


def run_in_process(plan: CompactPlan, progress: Progress | None = None) -> list[CommitMessage]:
    """Run every task here, several buckets at once on threads (one per core: reading Parquet, joining and
    encoding release the GIL, and each task has its own writer); on an error delete what the other tasks
    wrote and re-raise the first error."""
    threads = min(len(plan.tasks), _COMPACT_THREADS)
    messages: list[CommitMessage] = []
    try:
        if threads <= 1:
            for done, task in enumerate(plan.tasks, 1):
                messages.append(compact_bucket(plan.context, task))
                report(progress, "compact buckets", done, len(plan.tasks))
            return messages
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-compact") as pool:
            futures = [pool.submit(compact_bucket, plan.context, task) for task in plan.tasks]
            try:
                for done, future in enumerate(futures, 1):
                    messages.append(future.result())
                    report(progress, "compact buckets", done, len(plan.tasks))
            except BaseException:
                for rest in futures[len(messages) + 1 :]:  # the tasks still running finish; their files go too
                    if not rest.cancel() and rest.exception() is None:
                        messages.append(rest.result())
                raise
        return messages
    except BaseException:
        delete_outputs(plan, messages)
        raise


def session_runner(session: Any) -> Callable[[CompactPlan], list[CommitMessage]]:
    """A runner that compacts each bucket in a Spark executor: a DataFrame of pickled tasks (one partition
    each) through ``mapInArrow`` with :func:`compact_batches`, the messages collected on the driver.

    It only calls methods of the ``session`` it is given (``createDataFrame``, ``repartition``,
    ``mapInArrow``, ``collect``) and imports nothing of pyspark, so it works on classic Spark and Spark Connect
    alike and the Python API can offer it without depending on the Spark adapters. If the Spark job fails, the
    files that finished tasks wrote are never committed (orphans for ``t.maintenance.remove_orphan_files``)."""

    def run(plan: CompactPlan) -> list[CommitMessage]:
        rows = [(pickle.dumps(task),) for task in plan.tasks]
        frame = session.createDataFrame(rows, schema=f"{TASK_COLUMN} binary").repartition(len(rows))
        out = frame.mapInArrow(functools.partial(compact_batches, plan.context), f"{MESSAGE_COLUMN} binary")
        return [pickle.loads(bytes(row[MESSAGE_COLUMN])) for row in out.collect()]

    return run


def delete_outputs(plan: CompactPlan, messages: Sequence[CommitMessage]) -> None:
    """Remove the files of an attempt that was not committed (best effort: leftovers are orphans)."""
    delete_new_files(plan.store, plan.context.write.schema, messages)
