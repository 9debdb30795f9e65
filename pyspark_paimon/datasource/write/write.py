"""Executor-side writing of Arrow data into a Paimon table: :class:`TableWriter`, one per Spark write task.

The writer buffers the incoming Arrow batches (conformed to the table on arrival by ``conform``, so a bad batch
fails the task at once, naming the column), and when the buffer exceeds ``write-buffer-size`` or the task ends it
*flushes*:

1. ``bucket_routing`` groups the rows by partition and bucket (vectorised, Java's bucket functions);
2. each (partition, bucket) gets sequence numbers continuing from the bucket's current maximum, in arrival
   order (Java's `SortMergeReaderWithMinHeap`); primary-key rows are then sorted by (key, user sequence fields,
   sequence number) and duplicate keys are folded with the table's merge engine; retractions are kept, because
   they must delete older versions that live in other files;
3. ``data_files`` writes the rows as Parquet files of about ``target-file-size`` in the Paimon layout and
   describes each by a :class:`DataFileMeta`.

This module holds that sequence (buffer, sequence, sort, fold) and the writer's public surface; compaction writes
already merged rows through :meth:`TableWriter.write_compacted` / :meth:`TableWriter.write_changelog`.
:meth:`TableWriter.prepare_commit` returns one :class:`CommitMessage` per (partition, bucket) for the driver to
commit (``open_buckets``); :meth:`TableWriter.abort` deletes every file the writer created. This module never
imports pyspark.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.merge import merge
from pyspark_paimon.datasource.write import postpone
from pyspark_paimon.datasource.write.bucket_routing import BucketRouter
from pyspark_paimon.datasource.write.clustering import RowOrder, auto_strategy
from pyspark_paimon.datasource.write.conform import InputConformer, rowkind_column
from pyspark_paimon.datasource.write.data_files import SEQUENCE_NUMBER, DataFileWriter
from pyspark_paimon.datasource.write.open_buckets import BucketState, OpenBuckets
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import OptionError, PaimonError
from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    CLUSTERING_INCREMENTAL,
    IGNORE_UPDATE_BEFORE,
    POSTPONE_BUCKET,
    WRITE_BUFFER_SIZE,
    WRITE_MERGE_SCHEMA,
    ZORDER_VAR_LENGTH_CONTRIBUTION,
    CoreOptions,
    validate_table_options,
)
from pyspark_paimon.metadata.schema.row_tracking import TRACKING_COLUMNS
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.types.model import DataField

__all__ = ["TableWriter", "write_batches"]

# Buckets written at once by one writer (one per core; a Spark task's share of an executor is not visible here).
_WRITE_THREADS = max(1, os.cpu_count() or 1)


class TableWriter:
    """Writes Arrow data of one Spark task into data files of the table in ``ctx``.

    ``task_id`` names the writer in its commit messages (versions of one key written by two writers of one job
    have no order: ``key_conflicts``) and in log output; file names use fresh UUIDs, so concurrent tasks (and
    retried attempts) never collide.
    """

    def __init__(self, ctx: WriteContext, task_id: str = "") -> None:
        self._task_id = task_id
        schema = ctx.schema
        self._schema = schema
        self._opts: dict[str, str] = {**schema.options_with_defaults(), **(ctx.options or {})}
        options = CoreOptions(self._opts)
        self._fields: list[DataField] = list(schema.fields)
        arrow_schema = schema.arrow_schema()  # first: a column Spark cannot hold fails every write
        self._is_pk = bool(schema.primary_keys)
        num_buckets = options.bucket
        # Postpone-bucket tables (datasource/write/postpone.py): into real buckets, or raw into 'bucket-postpone'.
        postpone_mode = self._is_pk and num_buckets == POSTPONE_BUCKET
        postpone_fixed = postpone_mode and postpone.writes_real_buckets(options)
        where = ctx.table_path
        validate_table_options(self._opts, creating=False, writing=True, table=where)
        fmt = options.file_format
        if fmt != "parquet":
            raise OptionError(
                f"Table {where} has 'file.format' = '{fmt}'; pyspark-paimon writes only parquet data "
                "files. Set 'file.format' = 'parquet' (existing files stay readable)."
            )
        self._router = BucketRouter(ctx, options, num_buckets, postpone_fixed)
        key_fields = list(schema.trimmed_primary_key_fields) if self._is_pk else []
        self._key_names = [f.name for f in key_fields]
        rowkind_field = rowkind_column(schema, options)
        self._seq_fields = options.sequence_fields
        for name in self._seq_fields:
            if not schema.has_field(name):
                raise OptionError(
                    f"Option 'sequence.field' names '{name}', which is not a column of the table "
                    f"(columns: {', '.join(schema.field_names)})."
                )
        self._seq_descending = options.sequence_descending
        self._engine = options.merge_engine
        self._conformer = InputConformer(
            schema,
            arrow_schema,
            where,
            rowkind_field,
            ignore_delete=options.ignore_delete,
            ignore_update_before=options.get(IGNORE_UPDATE_BEFORE),
            fill_missing=options.get(WRITE_MERGE_SCHEMA),
        )
        # Columns the merge engine folds (partial-update / aggregation); key columns are never merged.
        pk = set(schema.primary_keys)
        self._merge_value_names = [f.name for f in self._fields if f.name not in pk]

        self._write_order = _write_order(schema, options)
        self._buffer_limit = options.get(WRITE_BUFFER_SIZE)
        raw_postpone = postpone_mode and not postpone_fixed
        self._files = DataFileWriter(
            ctx.fileio, where, schema, self._opts, key_fields, commit_user=ctx.commit_user, postpone_writer=raw_postpone
        )
        # 'changelog-producer' = input: every input row also goes to a changelog file, as Java's MergeTreeWriter
        # hands each flushed buffer's raw records to its changelog writer (sorted, before the merge). Java's
        # postpone writers write no changelog.
        self._changelog_input = self._is_pk and options.get(CHANGELOG_PRODUCER) == "input" and not raw_postpone
        self._buckets = OpenBuckets(self._files.directory, ctx.sequence_bases, ctx.snapshot_id)
        self._buffer: list[pa.Table] = []
        self._buffered_bytes = 0

    # ------------------------------------------------------------------------------------------ input
    def write(self, batch: pa.RecordBatch | pa.Table, kinds: pa.Array | None = None) -> None:
        """Validate and buffer ``batch``; flushes to files when the buffer exceeds ``write-buffer-size``.

        ``kinds`` (int8 row kinds, primary-key tables only) gives every row's kind directly, as DML does for
        its retractions and upserts; otherwise they come from ``rowkind.field`` or are all +I."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        if table.num_rows == 0:
            return
        aligned = self._conformer.conform(table, kinds)
        if aligned.num_rows == 0:
            return
        self._buffer.append(aligned)
        self._buffered_bytes += aligned.nbytes
        if self._buffered_bytes >= self._buffer_limit:
            self.flush()

    # ------------------------------------------------------------------------------------------ flush
    def flush(self) -> None:
        """Write everything buffered into data files (one or more per touched partition and bucket)."""
        if not self._buffer:
            return
        table = pa.concat_tables(self._buffer) if len(self._buffer) > 1 else self._buffer[0]
        self._buffer = []
        self._buffered_bytes = 0
        work: list[tuple[BucketState, pa.Table]] = []
        for routed in self._router.route(table):
            state = self._buckets.for_write(
                routed.partition, routed.partition_values, routed.bucket, routed.total_buckets
            )
            if routed.key_hashes is not None:
                state.key_hashes.append(routed.key_hashes)
            work.append((state, routed.rows))
        # Sorting and Parquet encoding release the GIL, so buckets are written on every core at once; each bucket
        # (its state, sequence numbers and files) is written by exactly one thread, in order.
        threads = min(len(work), _WRITE_THREADS)
        if threads <= 1:
            for state, sub in work:
                self._write_bucket(state, sub)
            return
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="paimon-write") as pool:
            for _ in pool.map(lambda item: self._write_bucket(*item), work):
                pass  # re-raises the first failure; abort() then removes every file created so far

    def _write_bucket(self, state: BucketState, table: pa.Table) -> None:
        files = self._files
        n = table.num_rows
        if state.bucket == POSTPONE_BUCKET:
            # Java's postpone writer: the rows as they came (no sort, no fold), each with the unknown sequence -1.
            table = table.append_column(
                pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(np.full(n, -1, dtype=np.int64))
            )
            for chunk in files.chunks(files.pk_physical(table)):
                files.write_file(state, chunk, None)
            return
        seq = np.arange(state.next_sequence, state.next_sequence + n, dtype=np.int64)
        state.next_sequence += n
        if self._is_pk:
            table = table.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(seq))
            table = merge.sort_for_merge(table, self._key_names, self._seq_fields, self._seq_descending)
            if self._changelog_input:  # the sorted input, before the fold
                for chunk in files.chunks(files.pk_physical(table)):
                    files.write_file(state, chunk, None, changelog=True)
            table = self._fold(table)
            physical = files.pk_physical(table)
            for chunk in files.chunks(physical):
                files.write_file(state, chunk, None)
        else:
            if self._write_order is not None:  # clustering.columns: each flush written in the clustering order
                table = table.take(self._write_order.indices(table))
            for start, chunk in files.chunk_offsets(table):
                files.write_file(state, chunk, (int(seq[start]), int(seq[start + chunk.num_rows - 1])))

    def _fold(self, ordered: pa.Table) -> pa.Table:
        """Fold duplicate keys of rows sorted by (key, user sequence, _SEQUENCE_NUMBER), keeping retractions."""
        return merge.merge_sorted(
            ordered,
            self._key_names,
            self._engine,
            self._opts,
            self._merge_value_names,
            drop_retracts=False,
            primary_keys=self._schema.primary_keys,
        )

    # ------------------------------------------------------------------------------------------ compaction
    @property
    def tracks_rows(self) -> bool:
        """Whether :meth:`write_compacted` stores each row's ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` (row tracking)."""
        return self._files.tracks_rows

    def write_compacted(
        self,
        partition: bytes,
        partition_values: tuple,
        bucket: int,
        total_buckets: int,
        table: pa.Table,
        level: int,
        first_sequence: int = 0,
    ) -> None:
        """Write rows that compaction already merged and ordered into files of ``level`` (``_FILE_SOURCE`` =
        COMPACT), rolled at ``target-file-size``: nothing is re-sorted, re-folded or re-sequenced.

        Primary-key rows carry their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` and must be in key order, so the
        files come out sorted and non-overlapping; append rows are numbered from ``first_sequence`` on (what
        Java's append compaction does: the outputs continue the first input's sequence numbers). Call it as
        often as needed per bucket; :meth:`prepare_commit` returns the files, and the caller adds the inputs
        as ``compact_before``."""
        if table.num_rows == 0:
            return
        files = self._files
        state = self._buckets.for_level(
            False, partition, partition_values, bucket, total_buckets, level, first_sequence
        )
        if self._is_pk:
            physical = files.pk_physical(table)
            for chunk in files.chunks(physical):
                files.write_file(state, chunk, None)
            return
        names = [f.name for f in self._fields]
        if files.tracks_rows:  # a compaction of a row-tracking table keeps every row's id and sequence number
            names += list(TRACKING_COLUMNS)
        data = table.select(names)
        for _, chunk in files.chunk_offsets(data):
            lo = state.next_sequence
            state.next_sequence += chunk.num_rows
            files.write_file(state, chunk, (lo, state.next_sequence - 1))

    def write_row_range(
        self,
        partition: bytes,
        partition_values: tuple,
        bucket: int,
        total_buckets: int,
        table: pa.Table,
        first_row_id: int,
        sequences: tuple[int, int],
        file_source: int = FILE_SOURCE_COMPACT,
    ) -> None:
        """Write the rows of a data-evolution compaction (ids ``first_row_id``, ``first_row_id + 1``, ... in order)
        as ONE file of all the table's columns (Java forces one output whatever its size, so the file's first row id
        gives every row its id) with the sequence range ``sequences`` and no stored ``_ROW_ID``. A row-level change
        of a row-tracking table writes its rewritten rows so too (``file_source`` APPEND: ``dml/tracked_rewrite``)."""
        state = self._buckets.for_level(False, partition, partition_values, bucket, total_buckets, 0, sequences[0])
        state.file_source = file_source
        self._files.write_file(
            state, table.select([f.name for f in self._fields]), sequences, first_row_id=first_row_id
        )

    def write_changelog(
        self, partition: bytes, partition_values: tuple, bucket: int, total_buckets: int, table: pa.Table, level: int
    ) -> None:
        """Write changelog rows a compaction produced (keys, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` = the change's
        kind, values; in key order) into changelog files of ``level``, as Java's compaction writes them (its
        changelog writer marks them APPEND, at the compaction's output level)."""
        if table.num_rows == 0:
            return
        files = self._files
        state = self._buckets.for_level(True, partition, partition_values, bucket, total_buckets, level)
        state.file_source = FILE_SOURCE_APPEND
        for chunk in files.chunks(files.pk_physical(table)):
            files.write_file(state, chunk, None, changelog=True)

    # ------------------------------------------------------------------------------------------ end
    def prepare_commit(self) -> list[CommitMessage]:
        """Flush and describe the new files: one message per (partition, bucket) written since the last call."""
        self.flush()
        return self._buckets.messages(self._task_id)

    def abort(self) -> None:
        """Delete every file this writer created and drop the buffer (the task failed or was cancelled)."""
        self._buffer = []
        self._buffered_bytes = 0
        errors = self._files.delete_created()
        self._buckets.forget_files()
        if errors:
            raise PaimonError(
                "Could not delete some data files of the aborted write (they are not referenced "
                "by any snapshot; remove them by hand or with orphan-file cleanup): " + "; ".join(errors)
            )


def _write_order(schema: TableSchema, options: CoreOptions) -> RowOrder | None:
    """What Java's Spark writer does with ``clustering.columns`` on an unaware-bucket append table without
    incremental clustering: the rows are sorted by the columns' curve before they are written (here per flush;
    partition columns, constant within a bucket, are left out; ``auto`` picks the curve by the number of
    clustering columns, Paimon's documented rule)."""
    columns = [c for c in options.clustering_columns if c not in schema.partition_keys]
    if schema.primary_keys or options.bucket != -1 or not columns or options.get(CLUSTERING_INCREMENTAL):
        return None
    strategy = auto_strategy(options.clustering_strategy, len(columns))
    return RowOrder.of(strategy, columns, schema, options.get(ZORDER_VAR_LENGTH_CONTRIBUTION), "clustering.columns: ")


def write_batches(
    ctx: WriteContext, batches: Iterator[pa.RecordBatch] | Sequence[pa.RecordBatch], task_id: str = ""
) -> list[CommitMessage]:
    """Write all ``batches`` with one :class:`TableWriter`; on any error delete its files and re-raise."""
    writer = TableWriter(ctx, task_id)
    try:
        for batch in batches:
            writer.write(batch)
        return writer.prepare_commit()
    except BaseException:
        try:
            writer.abort()
        except PaimonError:
            pass
        raise
