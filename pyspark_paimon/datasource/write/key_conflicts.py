"""One version of a primary key per write: versions written by different tasks of one job have no order.

A write's tasks number their rows independently, so when two Spark tasks of one job (or of one streaming
micro-batch) both write key 1, which version a read returns depends on which task got the higher sequence
numbers: chance. Java Paimon has the same hazard and leaves it to the user; here the job refuses to commit
instead, because a correction workflow that silently publishes the wrong version is worse than a failed job.

The check is cheap where it can be: only (partition, bucket)s that received level-0 files from more than one
task are looked at, within them only files whose key ranges overlap a file of another task (Java's
``IntervalPartition`` sections), and within those only the key columns are read until a key is found in two
tasks; the full rows of just those keys then decide. Identical versions pass: whichever wins, the table reads
the same. Tables whose ``sequence.field`` orders versions, append tables, and merge engines whose result does
not depend on the order of versions written by different tasks in a way we can check here (``aggregation``,
``partial-update``) are not checked.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.merge import SEQUENCE_NUMBER, VALUE_KIND
from pyspark_paimon.datasource.read.file_read import read_data_file
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.errors import ConflictingKeysError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.sections import decoded_key_range, key_sections
from pyspark_paimon.planner.split import DataSplit

# Merge engines whose result is "one version of the key": the last one (deduplicate) or the first (first-row).
_CHECKED_ENGINES = {"deduplicate": "last", "first-row": "first"}
_WRITER = "__writer"
_ROW = "__row"
_SHOWN = 5


def check_one_version_per_key(store: FileStore, schema: TableSchema, messages: Sequence[CommitMessage]) -> None:
    """Raise :class:`ConflictingKeysError` when different writer tasks of ``messages`` wrote different versions
    of one primary key into a table that cannot order them (see the module docstring)."""
    options = schema.core_options
    which = _CHECKED_ENGINES.get(options.merge_engine)
    if not schema.primary_keys or options.sequence_fields or which is None:
        return
    by_bucket: dict[tuple[bytes, int], dict[str, list[DataFileMeta]]] = defaultdict(lambda: defaultdict(list))
    for m in messages:
        if m.writer and not m.compact_before:
            by_bucket[(m.partition, m.bucket)][m.writer].extend(f for f in m.new_files if f.level == 0)
    key_names = list(schema.trimmed_primary_keys)
    key_types = [schema.field(k).type for k in key_names]
    found: list[tuple[dict, list[str]]] = []
    total = 0
    for (partition, bucket), writers in by_bucket.items():
        if sum(1 for fs in writers.values() if fs) < 2:
            continue
        owner = {f.file_name: w for w, fs in writers.items() for f in fs}
        files = [f for fs in writers.values() for f in fs]
        for section in key_sections(files, lambda f: decoded_key_range(f, key_types)):
            if len({owner[f.file_name] for f in section}) < 2:
                continue
            split = _split(store, schema, partition, bucket, section)
            keys, writer_names = _conflicting_keys(store, schema, split, owner, key_names, which)
            total += keys.num_rows
            for row, names in zip(keys.to_pylist()[: _SHOWN - len(found)], writer_names):
                found.append((row, names))
    if total:
        shown = "; ".join(
            ", ".join(f"{k}={v!r}" for k, v in row.items()) + f" (tasks {', '.join(names)})" for row, names in found
        )
        raise ConflictingKeysError(
            f"The write to {store.table_path} (branch '{store.branch}') holds {total} primary key(s) that different "
            f"Spark tasks wrote with different values, e.g. {shown}. The table has no 'sequence.field', so which "
            "version would win depends on chance; nothing was committed. Fix: write one version per key per "
            "batch (for example keep the latest row of each key before writing), or repartition by the primary "
            "key and sort within partitions by what orders the versions, or give the table a 'sequence.field' "
            "that orders them."
        )


def _split(
    store: FileStore, schema: TableSchema, partition: bytes, bucket: int, files: Sequence[DataFileMeta]
) -> DataSplit:
    values = deserialize_row(partition, [f.type for f in schema.partition_fields])
    return DataSplit(
        partition=partition,
        partition_values=values,
        bucket=bucket,
        total_buckets=-1,
        files=tuple(files),
        bucket_path=store.bucket_path(schema, values, bucket),
    )


def _conflicting_keys(
    store: FileStore,
    schema: TableSchema,
    split: DataSplit,
    owner: dict[str, str],
    key_names: list[str],
    which: str,
) -> tuple[pa.Table, list[list[str]]]:
    """The keys of ``split`` whose versions from different writers differ, and those writers per key."""
    ctx = ReadContext.for_store(store, schema)
    key_fields = [schema.field(k) for k in key_names]
    writer_ids = {w: i for i, w in enumerate(sorted(set(owner.values())))}
    names = sorted(writer_ids, key=writer_ids.__getitem__)

    def read(fields: list, system: tuple[str, ...]) -> pa.Table:
        parts = []
        for f in split.files:
            t = read_data_file(ctx, split, f, fields, system)
            writer = pa.scalar(writer_ids[owner[f.file_name]], pa.int32())
            parts.append(t.append_column(_WRITER, pa.repeat(writer, t.num_rows)))
        return pa.concat_tables(parts)

    keys = read(key_fields, ())
    shared = keys.group_by(key_names).aggregate([(_WRITER, "count_distinct")])
    shared = shared.filter(pc.greater(shared[f"{_WRITER}_count_distinct"], 1)).select(key_names)
    if shared.num_rows == 0:
        return shared, []
    rows = read(list(schema.fields), (SEQUENCE_NUMBER, VALUE_KIND))
    # Joins only on narrow columns (Arrow cannot carry nested columns through a join); rows are taken by index.
    light = rows.select([*key_names, _WRITER, SEQUENCE_NUMBER]).append_column(_ROW, pa.array(np.arange(rows.num_rows)))
    light = light.join(shared, key_names, join_type="left semi")
    # Each writer's version of each shared key: its last row (deduplicate) or its first (first-row).
    pick = light.group_by([*key_names, _WRITER]).aggregate([(SEQUENCE_NUMBER, "max" if which == "last" else "min")])
    pick = pick.rename_columns([*key_names, _WRITER, SEQUENCE_NUMBER])
    chosen = light.join(pick, [*key_names, _WRITER, SEQUENCE_NUMBER], join_type="inner").column(_ROW)
    versions = _comparable(rows.take(chosen))
    compared = [c for c in versions.column_names if c not in (*key_names, _WRITER, SEQUENCE_NUMBER)]
    counts = versions.group_by(key_names).aggregate(
        [(c, "count_distinct", pc.CountOptions(mode="all")) for c in compared] + [(_WRITER, "distinct")]
    )
    differs = pa.repeat(pa.scalar(False), counts.num_rows)
    for c in compared:
        differs = pc.or_(differs, pc.greater(counts[f"{c}_count_distinct"], 1))
    bad = counts.filter(differs)
    writers = [[names[i] for i in sorted(ws)] for ws in bad[f"{_WRITER}_distinct"].to_pylist()[:_SHOWN]]
    return bad.select(key_names), writers


def _comparable(table: pa.Table) -> pa.Table:
    """``table`` with nested columns (which Arrow cannot count distinct values of) replaced by a text form of
    each value. Only the rows of keys already written by two tasks get here, so this stays small."""
    for i, name in enumerate(table.column_names):
        if pa.types.is_nested(table.schema.field(name).type):
            text = pa.array([None if v is None else repr(v) for v in table.column(name).to_pylist()], pa.string())
            table = table.set_column(i, name, text)
    return table
