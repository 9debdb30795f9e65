"""Read and write jobs: the driver-side halves shared by the Spark source and the Python ``Table`` API.

A :class:`ReadJob` is a planned read (snapshot, schema, splits, and the picklable context executors need).
A :class:`WriteJob` carries what executors need to write files (sequence-number bases per bucket, bucket
counts of existing partitions) and commits their messages once. Neither imports pyspark.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import pyarrow as pa

from pyspark_paimon.datasource.arrow_read import ReadContext, read_split
from pyspark_paimon.datasource.arrow_write import TableWriter, WriteContext
from pyspark_paimon.errors import OptionError, SchemaError
from pyspark_paimon.metadata.commit import CommitMessage, FileStoreCommit, OverwriteSpec
from pyspark_paimon.metadata.options import validate_table_options
from pyspark_paimon.metadata.schema import TableSchema
from pyspark_paimon.metadata.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.incremental import is_incremental, plan_incremental
from pyspark_paimon.planner.fallback import add_fallback_splits, fallback_branch
from pyspark_paimon.planner.predicate import Leaf, to_arrow_expression
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.scan import ScanPlan, ScanPlanner, pack_splits, split_target_size
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.time_travel import resolve_snapshot


def branch_schemas(store: FileStore) -> dict[int, TableSchema]:
    return {sid: store.schemas.schema(sid) for sid in store.schemas.list_ids()}


@dataclass
class ReadJob:
    plan: ScanPlan
    context: ReadContext

    @property
    def splits(self) -> list[DataSplit]:
        return self.plan.splits

    def groups(self, read_options: ReadOptions) -> list[list[DataSplit]]:
        """Splits packed into Spark tasks: about ``source.split.target-size`` each, at least one per core.

        The planning worker runs on the driver, whose core count stands in for the cluster's parallelism.
        """
        target = read_options.split_target_size or split_target_size(self.plan.schema.options, {})
        return pack_splits(self.plan.splits, target, read_options.open_file_cost or 4 * 1024 * 1024,
                           min_groups=max(os.cpu_count() or 1, 1))

    def read_batches(self, splits: Iterable[DataSplit] | None = None) -> Iterator[pa.RecordBatch]:
        for split in (self.plan.splits if splits is None else splits):
            yield from read_split(self.context, split)

    def to_arrow(self) -> pa.Table:
        batches = list(self.read_batches())
        schema = self.context.output_schema()
        return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def prepare_read(store: FileStore, opts: ReadOptions, predicate: Sequence[Leaf] = (),
                 read_fields: Sequence[str] | None = None, exact_filters: Sequence[Leaf] = ()) -> ReadJob:
    """Plan a read of ``store`` (already on the right branch): a snapshot (latest or time travel), or the
    changes of a snapshot range for ``incremental-between[-timestamp]`` (:mod:`pyspark_paimon.planner.incremental`).

    ``predicate`` prunes (partitions exactly, files by statistics); ``exact_filters`` are applied exactly to
    the merged rows (Spark does not re-check filters a source accepted).
    """
    chain = _chain_read(store, opts, predicate, read_fields, exact_filters)
    if chain is not None:
        return chain
    latest = store.schema()
    validate_table_options(latest.options, creating=False, table=store.table_path)
    snapshot = None if is_incremental(opts) else resolve_snapshot(store, opts)
    schema = store.schemas.schema(snapshot.schema_id) if (opts.time_travel and snapshot is not None) else latest
    if read_fields is not None:
        for name in read_fields:
            schema.field(name)  # raises with the list of existing columns
    if is_incremental(opts):  # the files changed in a snapshot range, read with the latest schema
        plan = plan_incremental(store, schema, opts, predicate)
    else:
        plan = ScanPlanner(store, schema, {}).plan(snapshot, predicate)
    schemas = {store.branch: branch_schemas(store)}
    fallback = None if is_incremental(opts) else fallback_branch(opts, latest.options, store.branch)
    if fallback is not None:  # partitions missing here are read from the fallback branch (planner/fallback.py)
        extended = add_fallback_splits(store, fallback, schema, snapshot, plan, predicate, opts)
        plan = extended.plan
        schemas.update(extended.schemas)
    residual = to_arrow_expression(list(exact_filters), schema.arrow_schema()) if exact_filters else None
    ctx = ReadContext(fileio=store.fileio, table_path=store.table_path, schema=schema,
                      schemas=schemas, branch=store.branch, options=dict(schema.options),
                      read_fields=tuple(read_fields) if read_fields is not None else None, residual=residual,
                      batch_size=opts.batch_size, pushed=tuple(predicate))
    return ReadJob(plan, ctx)


def _chain_read(store: FileStore, opts: ReadOptions, predicate: Sequence[Leaf], read_fields: Sequence[str] | None,
                exact_filters: Sequence[Leaf]) -> ReadJob | None:
    """A chain-table read (§10) when ``store``'s branch is the main side of a chain table, else None."""
    from pyspark_paimon.planner.chain import chain_read_config  # noqa: PLC0415

    cfg = chain_read_config(store)
    if cfg is None:
        return None
    from pyspark_paimon.datasource.chain import prepare_chain_read  # noqa: PLC0415

    return prepare_chain_read(store, cfg, opts, predicate, read_fields, exact_filters)


@dataclass
class WriteJob:
    store: FileStore
    schema: TableSchema
    context: WriteContext
    overwrite: OverwriteSpec | None = None
    commit_user: str = field(default_factory=lambda: str(uuid.uuid4()))

    def new_writer(self, task_id: str) -> TableWriter:
        return TableWriter(self.context, task_id)

    def commit(self, messages: Sequence[CommitMessage]) -> Snapshot | None:
        from pyspark_paimon.datasource.chain import ChainWriteHook  # noqa: PLC0415

        chain = ChainWriteHook.for_job(self)  # chain-table rules for its snapshot/delta branches, else None
        if chain is not None:
            chain.before_commit(messages)
        committer = FileStoreCommit(self.store.fileio, self.store.table_path, self.store.branch, self.schema.options)
        snapshot = committer.commit(list(messages), overwrite=self.overwrite, commit_user=self.commit_user)
        if chain is not None:
            chain.after_commit(snapshot, messages)
        return snapshot

    def committed(self) -> bool:
        """Whether a snapshot of this job exists (used by abort to decide whether files may be deleted)."""
        for snap in self.store.snapshots.snapshots():
            if snap.commit_user == self.commit_user:
                return True
        return False


def prepare_write(store: FileStore, overwrite: OverwriteSpec | None = None) -> WriteJob:
    """Everything executors need to write files that continue ``store``'s latest snapshot."""
    schema = store.schema()
    validate_table_options(schema.options, creating=False, table=store.table_path)
    latest = store.snapshots.latest()
    seq_bases: dict[tuple[bytes, int], int] = {}
    partition_buckets: dict[bytes, int] = {}
    for e in store.live_entries(latest):
        key = (e.partition, e.bucket)
        seq_bases[key] = max(seq_bases.get(key, 0), e.file.max_sequence_number + 1)
        if e.total_buckets != schema.num_buckets:
            partition_buckets[e.partition] = e.total_buckets
    if overwrite is not None and overwrite.mode == "all":
        partition_buckets = {}
    user = str(uuid.uuid4())
    ctx = WriteContext(fileio=store.fileio, table_path=store.table_path, schema=schema, options=dict(schema.options),
                       sequence_bases=seq_bases, partition_buckets=partition_buckets, commit_user=user)
    return WriteJob(store, schema, ctx, overwrite, user)


def overwrite_spec(schema: TableSchema, mode: str | None, static_partition: dict[str, object] | None) -> OverwriteSpec:
    """Build the overwrite spec for a write: whole table, dynamic partitions, or a static partition."""
    if static_partition:
        names = [f.name for f in schema.partition_fields]
        unknown = [k for k in static_partition if k not in names]
        if unknown:
            raise OptionError(
                f"Static overwrite names {unknown}, which are not partition columns of the table "
                f"(partition columns: {names or 'none'}).")
        typed = {k: coerce_partition_value(schema, k, v) for k, v in static_partition.items()}
        return OverwriteSpec("static", frozenset(), typed)
    if mode is None or mode == "static":
        return OverwriteSpec("all")
    if mode == "dynamic":
        if not schema.partition_keys:
            return OverwriteSpec("all")
        return OverwriteSpec("dynamic")
    raise OptionError(f"partitionOverwriteMode must be 'static' or 'dynamic', got '{mode}'.")


def coerce_partition_value(schema: TableSchema, column: str, value: object) -> object:
    """Turn a partition value given as text ('dt=20250811') into the column's Python value."""
    if value is None or not isinstance(value, str):
        return value
    t = schema.field(column).type
    arr = pa.array([value], pa.string())
    try:
        target = pa.schema([pa.field(column, schema.arrow_schema().field(column).type)]).field(0).type
        return arr.cast(target)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(f"Partition value '{value}' is not a valid {t} for column '{column}'.") from e


def parse_partition_spec(text: str) -> dict[str, str]:
    """'dt=20250811,hr=10' (or '/'-separated) to a dict."""
    out: dict[str, str] = {}
    for part in text.replace("/", ",").split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise OptionError(f"Cannot parse partition spec '{text}': expected 'col=value[,col2=value2]'.")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip().strip("'\"")
    return out
