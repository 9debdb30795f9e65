"""Executor-side reading of one split into Arrow record batches (Java's ``RawFileSplitRead``,
``MergeFileSplitRead``, ``MergeFileSplitRead.createChainReader``).

What a split read has to get right, and where it happens:

* **Append tables and raw-convertible primary-key splits** stream file by file, batch by batch
  (:func:`~pyspark_paimon.datasource.read.file_read.stream_data_file`: schema evolution by field id, deletion
  vectors, Parquet row-group skipping).
* **Data-evolution splits** (the files of one row-id range) are put together column by column
  (:func:`~pyspark_paimon.datasource.read.row_id_merge.read_row_id_group`).
* **Other primary-key splits** are merged per key-overlap section, in bounded memory
  (:func:`~pyspark_paimon.datasource.read.merged_read.merged_sections`).
* **The residual filter runs after the merge** (:func:`_finish`). Filtering an older version of a row before
  merging would let it resurface once its newer version is filtered away.
* **Output** batches have exactly ``to_arrow_schema(projected fields)`` as schema.
* **A stream's delta** (:func:`read_file_changes`): a commit's files as stored, not merged, with their row kinds.

The context is :mod:`~pyspark_paimon.datasource.read.read_context`; the records other merges probe by key or
position are :mod:`~pyspark_paimon.datasource.read.key_probes`.

Deliberate deviation: for the ``first-row`` engine Java's batch scans skip level-0 files, so data that was
never compacted is invisible there. We merge all levels instead: the first-row merge of all levels is exactly
what Java returns once the files are compacted, and our automatic compaction moves level 0 up after each write
(as Java's writers do), so the two agree unless the table is ``write-only``.

This module never imports pyspark; :class:`~pyspark_paimon.datasource.read.read_context.ReadContext` and splits
are pickled to Spark's Python workers.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa

from pyspark_paimon.datasource.merge.merge import SEQUENCE_NUMBER, VALUE_KIND
from pyspark_paimon.datasource.read.file_read import stream_data_file
from pyspark_paimon.datasource.read.merged_read import merged_sections, without_retracts
from pyspark_paimon.datasource.read.read_context import (
    ROW_KIND_FIELD,
    ReadColumns,
    ReadContext,
    ReadMetrics,
    row_kind_names,
)
from pyspark_paimon.datasource.read.row_id_merge import read_row_id_group
from pyspark_paimon.errors import SchemaError
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.planner.split import DataSplit

__all__ = ["coalesce_batches", "read_file_changes", "read_split"]


def _finish(ctx: ReadContext, plan: ReadColumns, data: pa.Table) -> Iterator[pa.RecordBatch]:
    """Partition override, residual filter, projection and the exact output schema, in batches."""
    n = data.num_rows
    for name, value in plan.override.items():
        f = ctx.schema.field(name)
        arrow_type = to_arrow_type(f.type, name)
        try:
            const = pa.nulls(n, arrow_type) if value is None else pa.repeat(pa.scalar(value, arrow_type), n)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SchemaError(f"Partition value {value!r} does not fit column '{name}' ({arrow_type}).") from exc
        pos = data.schema.get_field_index(name)
        if pos >= 0:
            data = data.set_column(pos, pa.field(name, arrow_type), const)
        else:
            data = data.append_column(pa.field(name, arrow_type), const)
    names = [f.name for f in plan.out_fields]
    if ctx.row_kinds:  # $audit_log / $binlog: the record's kind leads (append rows and unread kinds are +I)
        codes = (
            data.column(VALUE_KIND).cast(pa.int8())
            if VALUE_KIND in data.column_names
            else pa.chunked_array([pa.repeat(pa.scalar(0, pa.int8()), n)], pa.int8())
        )
        data = data.append_column(ROW_KIND_FIELD, row_kind_names(codes))
        names = [ROW_KIND_FIELD.name, *names]
    if ctx.residual is not None and n:
        data = ctx.filter_rows(data)
    if data.num_rows == 0:
        return
    data = data.select(names)
    batch_size = max(1, ctx.batch_size)
    if data.num_columns and data.column(0).num_chunks * batch_size > 4 * data.num_rows:
        data = data.combine_chunks()  # many small pieces (e.g. merge output): copy once into full batches
    for batch in data.to_batches(max_chunksize=batch_size):
        if batch.num_rows == 0:
            continue
        arrays = [
            col if col.type == fld.type else col.cast(fld.type) for col, fld in zip(batch.columns, plan.out_schema)
        ]
        if arrays:
            yield pa.RecordBatch.from_arrays(arrays, schema=plan.out_schema)
        else:
            yield batch.select([])


def read_split(
    ctx: ReadContext,
    split: DataSplit,
    partition_override: Mapping[str, Any] | None = None,
    metrics: ReadMetrics | None = None,
) -> Iterator[pa.RecordBatch]:
    """Read ``split`` into record batches whose schema is exactly ``ctx.output_schema()``.

    ``partition_override`` (chain-table reads) replaces the given partition columns by constants: the split's
    logical partition, whichever partition the rows physically came from. It is applied before the residual
    filter, so a filter on a partition column sees the logical value. A split planned with
    ``relabel_partition`` (every chain split) applies its own ``partition_values`` this way.

    For the ``first-row`` engine all levels are merged, unlike Java's batch scans that skip level 0 (see the
    module docstring). ``metrics`` (a fresh one when None) counts what the read did.
    """
    metrics = ReadMetrics() if metrics is None else metrics
    if partition_override is None and split.relabel_partition:
        partition_override = dict(zip(ctx.schema.partition_keys, split.partition_values))
    plan = ReadColumns.of(ctx, partition_override)
    if not ctx.schema.primary_keys:
        if len(split.files) > 1 and data_evolution_enabled(ctx.schema.options):
            # One row-id range of a data-evolution table: its files hold the columns of the same rows.
            yield from _finish(ctx, plan, read_row_id_group(ctx, split, plan.read_fields))
            return
        for f in split.files:
            for data in stream_data_file(ctx, split, f, plan.read_fields, (), skip_row_groups=metrics):
                yield from _finish(ctx, plan, data)
        return

    system = (SEQUENCE_NUMBER, VALUE_KIND)
    if split.raw_convertible:
        for f in split.files:
            # A file whose metadata counts no retractions needs no row kinds: the system columns stay unread.
            clean = f.delete_row_count == 0 and not ctx.row_kinds
            for data in stream_data_file(
                ctx, split, f, plan.read_fields, () if clean else system, skip_row_groups=metrics
            ):
                yield from _finish(ctx, plan, data if clean else without_retracts(data))
        return

    for data in merged_sections(ctx, split, plan, drop_retracts=True, metrics=metrics, key_order=False):
        yield from _finish(ctx, plan, data)


def read_file_changes(ctx: ReadContext, split: DataSplit) -> Iterator[pa.RecordBatch]:
    """Every row of ``split``'s files as stored, not merged, with its row kind (``_VALUE_KIND``: 0 +I, 1 -U,
    2 +U, 3 -D) as an extra last column: what a streaming read of a commit's new files returns (Java reads a
    streaming split without merging and keeps retractions). Append tables have only +I rows. The other columns
    are exactly ``ctx.output_schema()``. ``ctx.residual`` (a stream's ``filter``) keeps the rows, of any kind,
    that satisfy it: each change row is tested on its own."""
    plan = ReadColumns.of(ctx, None)
    system = (SEQUENCE_NUMBER, VALUE_KIND) if ctx.schema.primary_keys else ()
    kind_field = pa.field(VALUE_KIND, pa.int8(), nullable=False)
    out_schema = pa.schema([*plan.out_schema, kind_field])
    for f in split.files:
        for data in stream_data_file(ctx, split, f, plan.read_fields, system):
            if ctx.residual is not None:
                data = ctx.filter_rows(data)
                if not data.num_rows:
                    continue
            kinds = (
                data.column(VALUE_KIND).cast(pa.int8())
                if system
                else pa.chunked_array([pa.repeat(pa.scalar(0, pa.int8()), data.num_rows)])
            )
            columns = [data.column(fld.name) for fld in plan.out_fields]
            table = pa.Table.from_arrays([*columns, kinds], names=[*out_schema.names]).combine_chunks()
            for batch in table.to_batches(max_chunksize=max(1, ctx.batch_size)):
                if batch.num_rows:
                    arrays = [
                        col if col.type == fld.type else col.cast(fld.type)
                        for col, fld in zip(batch.columns, out_schema)
                    ]
                    yield pa.RecordBatch.from_arrays(arrays, schema=out_schema)


def coalesce_batches(batches: Iterable[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    """``batches`` (one schema), in order, with runs of small ones joined into batches of about ``batch_size`` rows.

    A task of many small files or buckets reads each as its own few-row batch, and every batch handed to
    Spark pays a fixed cost on both sides of the Arrow stream (thousands of 20-row batches cost more than the
    rows). Batches of at least a quarter of ``batch_size`` pass through as they are. Row order is kept, so a
    stream's changes of one key stay in the order they were made.
    """
    small = max(1, batch_size // 4)
    pending: list[pa.RecordBatch] = []
    rows = 0

    def joined() -> Iterator[pa.RecordBatch]:
        if len(pending) == 1:
            yield pending[0]
        elif pending:
            yield from pa.Table.from_batches(pending).combine_chunks().to_batches()

    for batch in batches:
        if batch.num_rows >= small:
            yield from joined()
            pending, rows = [], 0
            yield batch
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= batch_size:
            yield from joined()
            pending, rows = [], 0
    yield from joined()
