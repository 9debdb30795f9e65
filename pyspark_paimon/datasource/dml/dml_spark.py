"""``t.merge(spark_df, on=...)``: a MERGE whose source is a Spark DataFrame. Matching runs in the executors, the
driver commits once.

1. The driver checks the source's keys are unique (one small aggregation job) and, unless target-only rows
   matter (``when_not_matched_by_source_*``), collects the source's distinct keys (up to ``change_target.PRUNE_KEYS``,
   else their range: one more small job) to plan only the target's partitions, buckets and files they can
   touch, as the Arrow merge does; then it plans the target (one unit per primary-key split, per append file).
2. Executors read the target units (:func:`read_units`, through ``mapInArrow``: the same engine reads as
   the Arrow DML, with each append row's position in its file), and Spark joins them with the source on
   the keys (full outer when target-only rows matter: ``when_not_matched_by_source_*`` or copy-on-write;
   source-preserving when there are insert clauses; inner otherwise).
3. The joined rows are repartitioned by unit, so a task holds all rows of each unit it touches, and each task
   applies the clauses (:meth:`MergeBuilder.decide`, the Arrow merge's own rules) and writes its part of the
   change with its own writer (:func:`merge_tasks`): retractions and upserts, rewritten files, or the deletion
   vectors to add; what it wrote travels back pickled.
4. The driver commits every part as ONE snapshot (``change_commit.commit_change``); a failed commit removes the files.

Nothing here imports pyspark: only the DataFrame's own methods are called (``createDataFrame``, ``mapInArrow``,
``selectExpr``, ``join``, ``repartition``, ``collect``), so it works on classic Spark and Spark Connect alike.
"""

from __future__ import annotations

import functools
import pickle
import uuid
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.dml.change_commit import MergeResult, Written, commit_change, write_change
from pyspark_paimon.datasource.dml.change_rules import refuse_foreign, writes_vectors
from pyspark_paimon.datasource.dml.change_target import PRUNE_KEYS, Target, key_prune, read_unit
from pyspark_paimon.datasource.dml.merge_builder import MergeBuilder
from pyspark_paimon.datasource.jobs import WriteJob, prepare_read, prepare_write
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.errors import DmlError
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.schema.row_tracking import row_tracking_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.ddl import to_spark_ddl
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.read_plan import plan_read
from pyspark_paimon.planner.split import DataSplit

__all__ = ["SparkMergeBuilder", "is_spark_frame", "read_units", "merge_tasks"]

UNIT, POS, T_FLAG, S_FLAG, UNIT_IN, PAYLOAD = "__dml_unit", "__dml_pos", "__dml_t", "__dml_s", "__dml_u", "__dml_out"
T_PREFIX, S_PREFIX = "__dml_t_", "__dml_s_"


def is_spark_frame(source: object) -> bool:
    """A Spark DataFrame (classic or Connect), recognised by its methods, without importing pyspark."""
    return all(hasattr(source, a) for a in ("mapInArrow", "sparkSession", "selectExpr", "join"))


@dataclass
class _Plan:
    """What the executors need (pickled into the tasks)."""

    store: FileStore
    schema: TableSchema
    read: ReadContext
    units: list[DataSplit]
    vectors: bool
    job: WriteJob
    builder: MergeBuilder  # the clauses (its source is replaced per task)
    source_names: list[str]


def read_units(plan: _Plan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: the rows of each target unit named in ``batches``, prefixed, with unit and position."""
    names = [f.name for f in plan.read.output_schema()]
    for batch in batches:
        for unit in batch.column(UNIT_IN).to_pylist():
            split = plan.units[unit]
            if plan.schema.primary_keys:
                parts = list(read_split(plan.read, split))
                if not parts:
                    continue
                data = pa.Table.from_batches(parts, schema=plan.read.output_schema())
                pos = np.zeros(data.num_rows, dtype=np.int64)
            else:
                got = read_unit(plan.read, split, plan.vectors)
                if got is None:
                    continue
                data, pos, _ = got
                if not plan.vectors:
                    pos = np.zeros(data.num_rows, dtype=np.int64)
            if data.num_rows == 0:
                continue
            out = data.rename_columns([T_PREFIX + n for n in names])
            out = out.append_column(UNIT, pa.array(np.full(data.num_rows, unit, dtype=np.int64)))
            out = out.append_column(POS, pa.array(pos))
            yield from out.combine_chunks().to_batches()


def merge_tasks(plan: _Plan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor side: apply the clauses to this task's joined rows and write its part of the change."""
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    joined = pa.concat_tables(tables)
    names = [f.name for f in plan.read.output_schema()]
    tmask = pc.fill_null(joined.column(T_FLAG), False).to_numpy(zero_copy_only=False).astype(bool)
    smask = pc.fill_null(joined.column(S_FLAG), False).to_numpy(zero_copy_only=False).astype(bool)
    rows = joined.filter(pa.array(tmask)).select([T_PREFIX + n for n in names]).rename_columns(names)
    rows = rows.cast(plan.read.output_schema())
    source = joined.filter(pa.array(smask)).select([S_PREFIX + n for n in plan.source_names])
    source = source.rename_columns(plan.source_names)
    both = tmask & smask
    t_idx = (np.cumsum(tmask) - 1)[both].astype(np.int64)
    s_idx = (np.cumsum(smask) - 1)[both].astype(np.int64)
    builder = plan.builder.with_source(source)
    deleted, updated, new_rows, inserts = builder.decide(plan.schema, rows, source, t_idx, s_idx)
    target = Target(rows)
    if not plan.schema.primary_keys:
        units = joined.column(UNIT).filter(pa.array(tmask)).to_numpy(zero_copy_only=False).astype(np.int64)
        target.files = [(u, u.files[0]) for u in plan.units]
        target.file_of_row = units
        if plan.vectors:
            target.positions = joined.column(POS).filter(pa.array(tmask)).to_numpy(zero_copy_only=False)
            for u in np.unique(units[deleted | updated]):
                split = plan.units[int(u)]
                name = split.files[0].file_name
                dfile = split.deletion_files.get(name)
                if dfile is not None:
                    target.existing[int(u)] = read_deletion_vector(plan.read.fileio, dfile, name)
    nothing = not deleted.any() and not (updated & ~deleted).any() and (inserts is None or inserts.num_rows == 0)
    if nothing:
        return
    writer = plan.job.new_writer(f"merge-{uuid.uuid4()}")
    written = write_change(writer, plan.store, plan.schema, target, deleted, updated, new_rows, inserts)
    yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(written)], pa.binary())], names=[PAYLOAD])


class SparkMergeBuilder(MergeBuilder):
    """``t.merge(spark_df, on=...)``: the clauses of :class:`MergeBuilder`, run by Spark (module docstring)."""

    def __init__(self, store: FileStore, source: Any, on: str | Sequence[str]):
        schema_only = pa.schema([pa.field(n, pa.null()) for n in source.columns])
        super().__init__(store, schema_only.empty_table(), on)
        self._frame = source

    @records_effects("merge")
    def execute(self) -> MergeResult:
        store, frame = self._store, self._frame
        schema = store.schema()
        on, src_on = self._checked_keys(schema)
        self._refuse_duplicate_frame_keys(frame, src_on)
        if row_tracking_enabled(schema.options):
            # Row-tracking tables keep their rows' ids (data evolution: changes by _ROW_ID, row_id_dml; else rewrites
            # cut at id runs, tracked_rewrite), which the driver plans: the source is collected as Arrow and merged as
            # an Arrow source is.
            return self.with_source(frame.toArrow()).run()

        prune = [] if self._by_source else self._frame_key_prune(frame, schema, on, src_on)
        plan, snapshot, files_read = self._plan(store, schema, prune)
        session = frame.sparkSession
        out_fields = [(T_PREFIX + f.name, f.type) for f in schema.fields]
        units = session.createDataFrame([(i,) for i in range(len(plan.units))] or [], schema=f"`{UNIT_IN}` BIGINT")
        units = units.repartition(max(1, min(len(plan.units), 64)))
        target = units.mapInArrow(
            functools.partial(read_units, plan),
            f"{to_spark_ddl(out_fields)}, `{UNIT}` BIGINT, `{POS}` BIGINT".replace(" NOT NULL", ""),
        ).selectExpr("*", f"true AS `{T_FLAG}`")
        src = frame.selectExpr(*[f"`{c}` AS `{S_PREFIX}{c}`" for c in frame.columns], f"true AS `{S_FLAG}`")
        condition = [target[T_PREFIX + k] == src[S_PREFIX + sk] for k, sk in zip(on, src_on)]
        copy_on_write = not schema.primary_keys and not plan.vectors
        how = "full_outer" if self._by_source or copy_on_write else ("right_outer" if self._not_matched else "inner")
        joined = target.join(src, condition, how).repartition(max(1, min(len(plan.units), 64)), UNIT)
        out = joined.mapInArrow(functools.partial(merge_tasks, plan), f"`{PAYLOAD}` BINARY")
        parts: list[Written] = [pickle.loads(bytes(row[PAYLOAD])) for row in out.collect()]
        if not parts:
            return MergeResult(files_read=files_read)
        result = commit_change(
            store, schema, plan.job, parts, snapshot, abort=lambda: _delete_written(plan, parts), read=list(prune)
        )
        return replace(result, files_read=files_read)

    def _plan(
        self, store: FileStore, schema: TableSchema, prune: Sequence[Leaf] = ()
    ) -> tuple[_Plan, Snapshot | None, int]:
        vectors = writes_vectors(schema)
        if schema.primary_keys:
            job = prepare_read(store, ReadOptions.from_options({}), list(prune))
            refuse_foreign(job.planned.kind, store)
            read, units, snapshot = job.context, list(job.splits), job.plan.snapshot
            files_read = job.plan.counters.files_selected
        else:
            planned = plan_read(store, ReadOptions.from_options({}), list(prune))
            refuse_foreign(planned.kind, store)
            # Files are rewritten whole: the read must not skip row groups by the pruning predicate.
            read = ReadContext.for_plan(store, replace(planned, predicate=(), selection=None))
            units = [replace(s, files=(f,)) for s in planned.plan.splits for f in s.files]
            snapshot = planned.plan.snapshot
            files_read = len(units)
        plan = _Plan(store, schema, read, units, vectors, prepare_write(store), self, list(self._frame.columns))
        return plan, snapshot, files_read

    @staticmethod
    def _frame_key_prune(frame: Any, schema: TableSchema, on: list[str], src_on: list[str]) -> list[Leaf]:
        """Pruning leaves from the source DataFrame's keys (see :func:`change_target.key_prune`): its distinct keys when
        there are at most ``PRUNE_KEYS``, else each key column's range. Only key types whose Python values
        Spark returns exactly as Paimon compares them (integers, strings, dates, decimals) prune."""
        arrow = schema.arrow_schema()
        exact = (pa.types.is_integer, pa.types.is_string, pa.types.is_large_string, pa.types.is_date)
        usable = [
            (k, sk)
            for k, sk in zip(on, src_on)
            if any(check(arrow.field(k).type) for check in (*exact, pa.types.is_decimal))
        ]
        if not usable:
            return []
        valid = " AND ".join(f"`{sk}` IS NOT NULL" for _, sk in usable)
        keys = frame.where(valid).selectExpr(*[f"`{sk}` AS `{k}`" for k, sk in usable]).distinct()
        rows = keys.limit(PRUNE_KEYS + 1).collect()
        if len(rows) <= PRUNE_KEYS:
            table = pa.table({k: pa.array([r[k] for r in rows], arrow.field(k).type) for k, _ in usable})
            return key_prune(table, [k for k, _ in usable])
        bounds = keys.selectExpr(
            *[e for i, (k, _) in enumerate(usable) for e in (f"min(`{k}`) AS `min_{i}`", f"max(`{k}`) AS `max_{i}`")]
        )
        row = bounds.collect()[0]
        leaves: list[Leaf] = []
        for i, (k, _) in enumerate(usable):
            leaves += [Leaf(k, ">=", row[f"min_{i}"]), Leaf(k, "<=", row[f"max_{i}"])]
        return leaves

    @staticmethod
    def _refuse_duplicate_frame_keys(frame: Any, keys: list[str]) -> None:
        cols = ", ".join(f"`{k}`" for k in keys)
        valid = " AND ".join(f"`{k}` IS NOT NULL" for k in keys)
        dup = frame.where(valid).groupBy(*keys).count().where("count > 1").limit(1).collect()
        if dup:
            first = {k: dup[0][k] for k in keys}
            raise DmlError(
                f"The merge source holds key(s) ({cols}) more than once (e.g. {first}); a target row would match "
                "several source rows. Deduplicate the source by the merge keys first."
            )

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_frame", None)  # executors get the clauses, never the DataFrame
        return state


def _delete_written(plan: _Plan, parts: Sequence[Written]) -> None:
    """Remove the data files of a change whose commit did not land (best effort: leftovers are orphans)."""
    fileio = plan.store.fileio
    types = [f.type for f in plan.schema.partition_fields]
    from pyspark_paimon.metadata.rows.binary_row import deserialize_row  # noqa: PLC0415

    for p in parts:
        for m in p.messages:
            base = plan.store.bucket_path(plan.schema, tuple(deserialize_row(m.partition, types)), m.bucket)
            for f in m.new_files:
                try:
                    fileio.delete(f.external_path or f"{base}/{f.file_name}")
                except OSError:
                    pass
