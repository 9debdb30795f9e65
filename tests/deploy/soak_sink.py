"""The sink process of the streaming soak test (tests/deploy/test_stream_soak.py), which kills it with SIGKILL.

It drives the real streaming sink, :class:`pyspark_paimon.datasource.spark.streaming.PaimonStreamWriter`, the way
Spark's micro-batch engine does, without a Spark session (starting one per restart would cost more than the
whole soak): micro-batch ``b`` writes rows that depend on ``b`` alone (a replayed batch has the same input, as
Spark's offset log guarantees), commits them with ``commit(messages, b)``, and only then records ``b`` in the
checkpoint's commit log (``<checkpoint>/commits/<b>``). A restart resumes after the last recorded batch, so a
kill between the table commit and the commit log makes it replay a batch the table already holds: the sink must
skip it. Every ``--tag-every`` batches the sink tags the latest snapshot after that batch. Each batch's wall time is
appended to ``--timings`` (``batch,seconds,snapshot``).

Usage: ``python -m tests.deploy.soak_sink TABLE CHECKPOINT --batches N --rows R --tag-every K --timings FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pyarrow as pa
from pyspark.sql.types import LongType, StructField, StructType

from pyspark_paimon import Table
from pyspark_paimon.datasource.spark.streaming import PaimonStreamWriter
from pyspark_paimon.datasource.table_ref import resolve_table_ref

SCHEMA = StructType([StructField("id", LongType(), False), StructField("batch", LongType(), False)])
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("batch", pa.int64(), nullable=False)])


def batch_rows(batch: int, rows: int) -> pa.RecordBatch:
    """Micro-batch ``batch``'s input: ids ``batch * rows`` to ``batch * rows + rows - 1``."""
    ids = list(range(batch * rows, batch * rows + rows))
    return pa.record_batch([pa.array(ids, pa.int64()), pa.array([batch] * rows, pa.int64())], schema=ARROW_SCHEMA)


def last_committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return max((int(p.name) for p in commits.iterdir() if p.name.isdigit()), default=-1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("table")
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--batches", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--tag-every", type=int, required=True)
    parser.add_argument("--timings", type=Path, required=True)
    args = parser.parse_args()
    (args.checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    metadata = args.checkpoint / "metadata"
    if not metadata.exists():  # Spark writes the query id once, when the query first starts
        metadata.write_text(json.dumps({"id": "soak-query"}) + "\n")
    ref = resolve_table_ref({"path": args.table, "checkpointLocation": str(args.checkpoint)})
    sink = PaimonStreamWriter(ref, SCHEMA, overwrite=False)
    table = Table.open(args.table)
    with args.timings.open("a") as timings:
        for batch in range(last_committed(args.checkpoint) + 1, args.batches):
            start = time.perf_counter()
            message = sink.write(iter([batch_rows(batch, args.rows)]))
            sink.commit([message], batch)
            if batch % args.tag_every == 0:
                table.tags.create(f"batch-{batch}", ignore_if_exists=True)
            marker = args.checkpoint / "commits" / f".{batch}.tmp"
            marker.write_text("{}")
            os.replace(marker, args.checkpoint / "commits" / str(batch))
            latest = table.store.snapshots.latest_id()
            timings.write(f"{batch},{time.perf_counter() - start:.4f},{latest}\n")
            timings.flush()


if __name__ == "__main__":
    main()
