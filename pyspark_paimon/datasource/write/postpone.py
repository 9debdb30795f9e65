"""Postpone-bucket primary-key tables (``bucket = -2``), written and compacted by Paimon 1.4's rules.

Java's engines write such a table in one of two ways:

* **into real buckets** (``postpone.batch-write-fixed-bucket`` = true, the default; Java's Spark writer follows it
  for every write, Flink for batch writes; here every write, ``write_arrow`` and Spark's batch and streaming): a
  partition that already has real buckets keeps its bucket count; a new partition gets here
  ``postpone.default-bucket-num`` buckets (default 1). Java's engines pick the writer parallelism for a new partition
  instead; a count that depends on the number of Spark tasks would make a table's layout depend on the cluster,
  so the default option decides (it is what Java's postpone compaction gives a new partition too). The files are
  ordinary level-0 files of the bucket (sorted, folded, sequence numbers continuing the bucket's), their manifest
  entries carry the partition's bucket count, and no compaction follows (Java writes them ``write-only``).
* **into the postpone bucket** (the option false, and Flink's streaming writes): every row as it arrived, unsorted
  and unmerged, at level 0 in ``bucket-postpone``; manifest entries say bucket -2 and total buckets -2; file
  names start ``<data-file.prefix>-u-<commit user>-s-<write id>-w-`` so the files of one writer can be read back
  in their order; every row's ``_SEQUENCE_NUMBER`` is -1 (Java's writer keeps records' unknown sequence). Java
  writes these files in Avro without statistics; ours are Parquet (every reader picks the format by extension).

Batch reads skip ``bucket-postpone`` (``planner.scan``); a compaction (``postpone_compact``) moves its rows
into real buckets: per partition the existing bucket count, else ``postpone.default-bucket-num``, the rows of one
writer in file order (files by creation time), then written as a batch write of the real buckets would write them
(new sequence numbers, so later rows win); the postpone files leave and the new files arrive in one COMPACT
snapshot, as Java's ``CompactAction`` and Spark's postpone compaction commit them (Paimon 2.x adds bucket-count
estimates from data sizes, which are not followed here).
"""

from __future__ import annotations

import random
from typing import Iterable, Sequence

from pyspark_paimon.errors import CompactionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import POSTPONE_BATCH_WRITE_FIXED_BUCKET, POSTPONE_BUCKET, CoreOptions
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import type_to_sql

#: Directory of a partition's postpone bucket (Java's path factory names bucket -2 so).
POSTPONE_DIRECTORY = "bucket-postpone"


def is_postpone(schema: TableSchema, options: CoreOptions | None = None) -> bool:
    """Whether ``schema`` (with ``options`` in force) is a postpone-bucket primary-key table."""
    opts = options if options is not None else schema.core_options
    return bool(schema.primary_keys) and opts.bucket == POSTPONE_BUCKET


def writes_real_buckets(options: CoreOptions) -> bool:
    """Whether a write of a postpone-bucket table goes straight into real buckets."""
    return bool(options.get(POSTPONE_BATCH_WRITE_FIXED_BUCKET))


def writer_prefix(data_file_prefix: str, commit_user: str) -> str:
    """The name prefix of one postpone writer's files: Java's ``<prefix>-u-<user>-s-<write id>-w-`` with a random
    write id (Java's writers without an id draw one the same way), so a compaction can keep each writer's order."""
    return f"{data_file_prefix}-u-{commit_user}-s-{random.randrange(2**31 - 1)}-w-"


def writer_of(file_name: str) -> str:
    """The writer prefix of a postpone file (the file name itself when it does not follow the pattern)."""
    cut = file_name.rfind("-w-")
    return file_name[: cut + 3] if cut >= 0 else file_name


def ordered_by_writer(files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """Postpone files in the order their rows are replayed: writers in order of first appearance, each writer's
    files by creation time then name (the writer's counter); writers have no order among themselves."""
    groups: dict[str, list[DataFileMeta]] = {}
    for f in files:
        groups.setdefault(writer_of(f.file_name), []).append(f)
    out: list[DataFileMeta] = []
    for group in groups.values():
        out.extend(sorted(group, key=lambda f: (f.creation_time_millis, _counter(f.file_name), f.file_name)))
    return out


def _counter(file_name: str) -> int:
    stem = file_name.split(".", 1)[0]
    tail = stem.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


#: Paimon types whose Avro form (as Java's and pypaimon's postpone writers store it) converts to Arrow directly.
_AVRO_PLAIN_TYPES = frozenset(
    {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "CHAR", "VARCHAR", "STRING", "DATE"}
)


def refuse_unreadable(files: Sequence[DataFileMeta], schema: TableSchema, table: str) -> None:
    """Postpone files in Avro (Java's and pypaimon's postpone writers switch to it whenever the schema allows) are
    moved only when they were written with the current schema and every column has a plain type (numbers,
    strings, booleans, dates): the Avro forms of decimals, timestamps, binaries and nested types are not decoded
    here."""
    avro = [f for f in files if f.file_name.lower().endswith(".avro")]
    if not avro:
        return
    stale = [f.file_name for f in avro if f.schema_id != schema.id]
    other = [f"{fld.name} {type_to_sql(fld.type)}" for fld in schema.fields if fld.type.root not in _AVRO_PLAIN_TYPES]
    if stale or other:
        why = (
            f"written with an older schema ({stale[0]})"
            if stale
            else f"with columns whose Avro form is not decoded here ({', '.join(other)})"
        )
        raise CompactionError(
            f"Table {table} has postpone-bucket files in Avro format {why}. Compact the table with Paimon (Flink's "
            "compact action or Spark's CALL sys.compact with the Paimon jar)."
        )
