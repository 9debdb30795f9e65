"""Cross-partition upsert: a dynamic-bucket primary-key table whose primary key lacks a partition key (Java's
``KEY_DYNAMIC`` bucket mode: `GlobalIndexAssigner`, `IndexBootstrap`, the `ExistingProcessor`s, `BucketAssigner`).

A key may then live in any partition, but in only one at a time, so a write must know where every existing key
lives. Before the tasks run, the driver reads the primary-key columns of the latest snapshot (merged, so deleted
keys are gone) with the partition and bucket each came from: the *key index* (:func:`bootstrap`). Every write
task then routes its rows in arrival order, vectorised per flush (:class:`CrossPartitionRouter`):

* a key the index does not know gets a bucket in its partition: the lowest bucket holding fewer than
  ``dynamic-bucket.target-row-num`` keys, else the lowest unused bucket (``dynamic-bucket.max-buckets`` does not
  apply, as in Java);
* a known key arriving in its own partition goes to its bucket;
* a known key arriving in another partition follows the merge engine: ``deduplicate`` deletes it from the old
  partition (a ``-D`` row in its old bucket) and inserts it in the new one; ``partial-update`` and
  ``aggregation`` write the row into the old partition and bucket (its partition columns take the old values);
  ``first-row`` drops the new row.

Java writes no ``HASH`` index files in this mode (the key index lives in the writer's local state and is rebuilt
from the data by every job), and neither does this module: a commit holds data files only.

Tasks of one Spark job do not see each other's rows. Two tasks that place one key in different partitions or
buckets would leave it twice in the table, so :func:`check_one_home_per_key` refuses such a commit.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.merge import VALUE_KIND
from pyspark_paimon.datasource.read.file_read import read_data_file
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.errors import ConflictingKeysError, OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.options import (
    CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM,
    CROSS_PARTITION_UPSERT_INDEX_TTL,
    DELETION_VECTORS_MERGE_ON_READ,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, OverwriteSpec
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "BUCKET_COLUMN",
    "CrossPartitionRouter",
    "bootstrap",
    "check_one_home_per_key",
    "is_cross_partition",
    "refuse_unsupported_overwrite",
]

#: The routed bucket of every row, a column the router appends and the writer consumes.
BUCKET_COLUMN = "__xp_bucket"
_INDEX_BUCKET = "__xp_index_bucket"
_PART = "__xp_part_"
_HOME = "__xp_home_"
_ROW = "__xp_row"
_FIRST = "__xp_row_min"
_LAST = "__xp_row_max"
_DELETE = 3  # RowKind.DELETE as Paimon stores it in _VALUE_KIND
_RETRACT_KINDS = (1, 3)  # -U, -D (a pa.array at import time would load pandas)
_SHOWN = 5


def is_cross_partition(schema: TableSchema) -> bool:
    """A dynamic-bucket (``bucket = -1``) primary-key table whose primary key lacks a partition key."""
    return (
        bool(schema.primary_keys)
        and schema.num_buckets == -1
        and any(k not in schema.primary_keys for k in schema.partition_keys)
    )


def _index_schema(schema: TableSchema) -> pa.Schema:
    arrow = schema.arrow_schema()
    # All nullable: Arrow joins drop NOT NULL flags, and the index is rebuilt from join results.
    fields = [pa.field(k, arrow.field(k).type) for k in schema.primary_keys]
    fields += [pa.field(_PART + k, arrow.field(k).type) for k in schema.partition_keys]
    fields.append(pa.field(_INDEX_BUCKET, pa.int32()))
    return pa.schema(fields)


def _epoch_millis(f: DataFileMeta) -> int | None:
    """A file's creation time as epoch millis (it is stored as local wall-clock time read as UTC)."""
    if f.creation_time_millis is None:
        return None
    offset = _dt.datetime.now().astimezone().utcoffset() or _dt.timedelta()
    return f.creation_time_millis - int(offset.total_seconds() * 1000)


def bootstrap(store: FileStore, schema: TableSchema, snapshot: Snapshot | None) -> pa.Table:
    """The key index of ``snapshot``: every live primary key with the partition (``__xp_part_*`` columns) and
    bucket it lives in. Only the key columns are read; ``cross-partition-upsert.bootstrap-parallelism`` buckets
    at once. With ``cross-partition-upsert.index-ttl`` buckets whose files are all older than the TTL are left out,
    as Java's bootstrap leaves them out (their keys are then written again as new keys)."""
    index_schema = _index_schema(schema)
    if snapshot is None:
        return index_schema.empty_table()
    options = schema.core_options
    # Every level, as Java's bootstrap reads deletion-vector tables (level 0 holds keys not yet compacted).
    every_level = {DELETION_VECTORS_MERGE_ON_READ.key: "true"}
    splits = ScanPlanner(store, schema, every_level).plan(snapshot).splits
    ttl = options.get(CROSS_PARTITION_UPSERT_INDEX_TTL)
    if ttl is not None:
        now = int(time.time() * 1000)
        splits = [
            s for s in splits if any(_epoch_millis(f) is None or now <= (_epoch_millis(f) or 0) + ttl for f in s.files)
        ]
    if not splits:
        return index_schema.empty_table()
    ctx = ReadContext.for_store(store, schema, options=every_level, read_fields=schema.primary_keys)
    key_schema = ctx.output_schema()

    def one(split: DataSplit) -> pa.Table:
        keys = pa.Table.from_batches(list(read_split(ctx, split)), schema=key_schema)
        n = keys.num_rows
        cols = [keys.column(k).combine_chunks() for k in schema.primary_keys]
        for k, v in zip(schema.partition_keys, split.partition_values):
            cols.append(pa.repeat(pa.scalar(v, index_schema.field(_PART + k).type), n))
        cols.append(pa.repeat(pa.scalar(split.bucket, pa.int32()), n))
        return pa.Table.from_arrays(cols, schema=index_schema)

    workers = min(len(splits), options.get(CROSS_PARTITION_UPSERT_BOOTSTRAP_PARALLELISM))
    if workers <= 1:
        parts = [one(s) for s in splits]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="paimon-key-index") as pool:
            parts = list(pool.map(one, splits))
    return pa.concat_tables(parts).combine_chunks()


def refuse_unsupported_overwrite(schema: TableSchema, overwrite: OverwriteSpec | None, table: str) -> None:
    """A partition overwrite of a cross-partition table would leave the keys of other partitions that the new
    rows move stale; only a whole-table overwrite (which starts the key index afresh) is written."""
    if overwrite is None or overwrite.mode == "all" or not is_cross_partition(schema):
        return
    missing = [k for k in schema.partition_keys if k not in schema.primary_keys]
    raise OptionError(
        f"Table {table} is a cross-partition upsert table (bucket = -1 and primary key "
        f"{list(schema.primary_keys)} lacks partition keys {missing}); "
        "pyspark-paimon does not overwrite some of its partitions. Overwrite the whole table, or delete the "
        "partition's rows and then write (an upsert moves keys between partitions)."
    )


class CrossPartitionRouter:
    """Routes one write task's rows (see the module docstring); ``index`` is the task's copy of the key index,
    updated as rows are routed so that later flushes of the task see the keys earlier ones placed."""

    def __init__(self, schema: TableSchema, index: pa.Table | None, target_row_num: int, table: str) -> None:
        options = schema.core_options
        if options.sequence_fields:
            raise OptionError(
                f"Table {table} is a cross-partition upsert table (bucket = -1 and the primary key lacks a partition "
                "key) with 'sequence.field', which Java refuses for such tables. Remove 'sequence.field', or add "
                "the partition keys to the primary key (a new table)."
            )
        self._keys = list(schema.primary_keys)
        self._parts = list(schema.partition_keys)
        self._engine = options.merge_engine
        self._target = target_row_num
        self._index = index if index is not None else _index_schema(schema).empty_table()
        self._counts: dict[tuple, dict[int, int]] = defaultdict(dict)
        if self._index.num_rows:
            part_cols = [_PART + k for k in self._parts]
            grouped = (
                self._index.select([*part_cols, _INDEX_BUCKET])
                .group_by([*part_cols, _INDEX_BUCKET], use_threads=False)
                .aggregate([([], "count_all")])
            )
            data = grouped.to_pydict()
            for i in range(grouped.num_rows):  # once per (partition, bucket)
                part = tuple(data[c][i] for c in part_cols)
                self._counts[part][int(data[_INDEX_BUCKET][i])] = int(data["count_all"][i])

    def route(self, table: pa.Table) -> pa.Table:
        """``table`` (aligned rows with ``_VALUE_KIND``, in arrival order) routed: rows the engine drops removed,
        partition columns rewritten where the engine keeps the old partition, ``-D`` rows for keys that left their
        partition appended, and the bucket of every row in :data:`BUCKET_COLUMN`."""
        n = table.num_rows
        rows = pa.array(np.arange(n, dtype=np.int64))
        light = table.select(self._keys).append_column(_ROW, rows)
        per_key = light.group_by(self._keys, use_threads=False).aggregate([(_ROW, "min"), (_ROW, "max")])
        per_key = per_key.join(self._index, self._keys, join_type="left outer")
        first = per_key.column(_FIRST).combine_chunks()
        last = per_key.column(_LAST).combine_chunks()
        old_bucket = per_key.column(_INDEX_BUCKET).combine_chunks()
        exists = pc.is_valid(old_bucket).to_numpy(zero_copy_only=False)
        old_parts = [per_key.column(_PART + k).combine_chunks() for k in self._parts]
        if self._engine == "deduplicate":
            homes = [table.column(k).take(last).combine_chunks() for k in self._parts]
            arrival = last.to_numpy()
        else:
            firsts = [table.column(k).take(first).combine_chunks() for k in self._parts]
            homes = [pc.if_else(pa.array(exists), o, f) for o, f in zip(old_parts, firsts)]
            arrival = first.to_numpy()
        same = exists & _equal_all(old_parts, homes)
        home_bucket = np.where(same, old_bucket.fill_null(0).to_numpy(zero_copy_only=False), -1).astype(np.int32)
        moved = exists & ~same  # only the deduplicate engine moves a key (the others keep the old partition)

        if moved.any():  # each moved key leaves its old bucket one key lighter
            idx = pa.array(np.flatnonzero(moved))
            cols = [o.take(idx) for o in old_parts] + [old_bucket.take(idx)]
            names = [*self._parts, _INDEX_BUCKET]
            left = (
                pa.Table.from_arrays(cols, names=names)
                .group_by(names, use_threads=False)
                .aggregate([([], "count_all")])
            )
            data = left.to_pydict()
            for g in range(left.num_rows):  # once per (partition, bucket) that lost keys
                counts = self._counts[tuple(data[k][g] for k in self._parts)]
                b = int(data[_INDEX_BUCKET][g])
                counts[b] = max(0, counts.get(b, 0) - int(data["count_all"][g]))
        new = np.flatnonzero(~same)
        if len(new):
            new = new[np.argsort(arrival[new], kind="stable")]  # Java assigns in arrival order
            idx = pa.array(new)
            by_part = pa.Table.from_arrays(
                [h.take(idx) for h in homes] + [pa.array(np.arange(len(new)))], names=[*self._parts, _ROW]
            )
            grouped = by_part.group_by(self._parts, use_threads=False).aggregate([(_ROW, "list")])
            data = grouped.select(self._parts).to_pydict()
            lists = grouped.column(_ROW + "_list").combine_chunks()
            flat = lists.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
            ends = np.cumsum(pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64))
            for g in range(grouped.num_rows):  # once per partition receiving new keys
                counts = self._counts[tuple(data[k][g] for k in self._parts)]
                positions = np.sort(flat[(ends[g - 1] if g else 0) : ends[g]])  # arrival order
                home_bucket[new[positions]] = _fill(counts, len(positions), self._target)

        # Every row's home (partition and bucket), by the key it belongs to.
        decided = per_key.select(self._keys)
        for k, h in zip(self._parts, homes):
            decided = decided.append_column(_HOME + k, h)
        decided = decided.append_column(BUCKET_COLUMN, pa.array(home_bucket, pa.int32()))
        joined = light.join(decided, self._keys, join_type="inner")
        joined = joined.take(pc.sort_indices(joined.column(_ROW)))  # back to arrival order, one row per row
        row_home = [joined.column(_HOME + k).combine_chunks() for k in self._parts]
        row_bucket = joined.column(BUCKET_COLUMN).combine_chunks()
        if self._engine in ("deduplicate", "first-row"):
            keep = _equal_all([table.column(k).combine_chunks() for k in self._parts], row_home)
            out = table.filter(pa.array(keep)).append_column(BUCKET_COLUMN, row_bucket.filter(pa.array(keep)))
        else:  # partial-update / aggregation: every row goes where its key lives
            out = table
            for k, h in zip(self._parts, row_home):
                out = out.set_column(out.schema.get_field_index(k), out.schema.field(k), h)
            out = out.append_column(BUCKET_COLUMN, row_bucket)
        if moved.any():
            idx = pa.array(np.flatnonzero(moved))
            retract = table.take(last.take(idx))
            for k, o in zip(self._parts, old_parts):
                retract = retract.set_column(retract.schema.get_field_index(k), retract.schema.field(k), o.take(idx))
            kind_at = retract.schema.get_field_index(VALUE_KIND)
            retract = retract.set_column(
                kind_at, retract.schema.field(kind_at), pa.repeat(pa.scalar(_DELETE, pa.int8()), len(idx))
            )
            retract = retract.append_column(BUCKET_COLUMN, old_bucket.take(idx).cast(pa.int32()))
            out = pa.concat_tables([out, retract])

        # The index now places every key of this flush at its home.
        placed = decided.rename_columns([*self._keys, *(_PART + k for k in self._parts), _INDEX_BUCKET])
        kept = self._index.join(per_key.select(self._keys), self._keys, join_type="left anti")
        schema = self._index.schema
        self._index = pa.concat_tables([kept.select(placed.column_names).cast(schema), placed.cast(schema)])
        return out


def _equal_all(left: Sequence[pa.Array], right: Sequence[pa.Array]) -> np.ndarray:
    """Row-wise null-safe equality of several column pairs (True where every pair holds equal values)."""
    n = len(left[0]) if left else 0
    out = np.ones(n, dtype=bool)
    for a, b in zip(left, right):
        eq = pc.fill_null(pc.equal(a, b), False).to_numpy(zero_copy_only=False)
        both_null = (pc.is_null(a).to_numpy(zero_copy_only=False)) & (pc.is_null(b).to_numpy(zero_copy_only=False))
        out &= eq | both_null
    return out


def _fill(counts: dict[int, int], n: int, target: int) -> np.ndarray:
    """Buckets for ``n`` new keys of one partition, in arrival order (Java's `BucketAssigner`): the lowest bucket
    holding fewer than ``target`` keys first, then the lowest unused buckets; ``counts`` is updated."""
    out: list[np.ndarray] = []
    left = n
    for b in sorted(counts):
        if left == 0:
            break
        room = min(target - counts[b], left)
        if room > 0:
            out.append(np.full(room, b, np.int32))
            counts[b] += room
            left -= room
    b = 0
    while left > 0:
        if b not in counts:
            room = min(target, left)
            out.append(np.full(room, b, np.int32))
            counts[b] = room
            left -= room
        b += 1
    return np.concatenate(out) if out else np.empty(0, np.int32)


def check_one_home_per_key(store: FileStore, schema: TableSchema, messages: Sequence[CommitMessage]) -> None:
    """Raise :class:`ConflictingKeysError` when different tasks of one write placed a key in different
    (partition, bucket)s: each task routed by the same key index, so two tasks meeting one key can disagree, and
    the table would then hold the key twice. Only the key columns of the job's new files are read, and only when
    more than one task wrote files."""
    if not is_cross_partition(schema):
        return
    written = [m for m in messages if m.new_files and not m.compact_before]
    if len({m.writer for m in written}) < 2:
        return
    ctx = ReadContext.for_store(store, schema)
    keys = list(schema.primary_keys)
    key_fields = [schema.field(k) for k in keys]
    types = [f.type for f in schema.partition_fields]
    homes: list[tuple[bytes, int]] = []
    parts = []
    for m in written:
        values = deserialize_row(m.partition, types)
        split = DataSplit(
            partition=m.partition,
            partition_values=values,
            bucket=m.bucket,
            total_buckets=-1,
            files=tuple(m.new_files),
            bucket_path=store.bucket_path(schema, values, m.bucket),
        )
        home = pa.scalar(len(homes), pa.int32())
        homes.append((m.partition, m.bucket))
        for f in m.new_files:
            t = read_data_file(ctx, split, f, key_fields, (VALUE_KIND,))
            t = t.filter(pc.invert(pc.is_in(t.column(VALUE_KIND), value_set=pa.array(_RETRACT_KINDS, pa.int8()))))
            parts.append(t.select(keys).append_column(_ROW, pa.repeat(home, t.num_rows)))
    if not parts:
        return
    placed = pa.concat_tables(parts).group_by(keys, use_threads=False).aggregate([(_ROW, "count_distinct")])
    bad = placed.filter(pc.greater(placed.column(f"{_ROW}_count_distinct"), 1))
    if bad.num_rows == 0:
        return
    shown = "; ".join(", ".join(f"{k}={v!r}" for k, v in r.items()) for r in bad.select(keys).to_pylist()[:_SHOWN])
    raise ConflictingKeysError(
        f"The write to {store.table_path} (branch '{store.branch}') would place {bad.num_rows} primary key(s) in "
        f"more than one partition or bucket, e.g. {shown}: different Spark tasks met the same key (a cross-partition "
        "upsert table routes each key where the table holds it, and tasks do not see each other's rows). Nothing "
        "was committed. Fix: write each key from one task, e.g. df.repartition(<primary key columns>), and re-run "
        "the write."
    )
