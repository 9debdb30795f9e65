"""Compaction: rewrite the files of a bucket into fewer, merged, sorted ones and commit a COMPACT snapshot.

Three halves, so that Spark can run the middle one on its executors and the Python API in process:

1. :func:`plan_compaction` (driver): the latest snapshot's live files per (partition, bucket), and per bucket a
   :class:`CompactTask` chosen by :mod:`pyspark_paimon.planner.compact_strategy` (full, universal, or Java's
   append rules): which files, which output level, whether retractions may be dropped. Unaware-bucket append
   tables get Java's coordinator instead: small files packed by size, several tasks per partition possible.
2. :func:`compact_bucket` (anywhere, picklable inputs): read the task's files through the read path
   (:func:`~pyspark_paimon.datasource.read.read.read_merged`: key-overlap sections, the table's merge
   engine, schema evolution, bounded-memory windows), and write the merged rows in key order with
   :meth:`TableWriter.write_compacted` at the output level: sorted, non-overlapping files rolled at
   ``target-file-size`` with exact statistics, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` kept. The result is a
   :class:`CommitMessage` whose ``compact_before`` lists the inputs (DELETE entries at their own levels).
   :func:`compact_batches` is the same over Arrow batches of pickled tasks (Spark's ``mapInArrow``).
3. :func:`commit_compaction` (driver): one ``COMPACT`` commit. The commit refuses a DELETE of a file that is
   no longer live and, for primary-key tables, files of one level >= 1 whose key ranges overlap
   (:class:`~pyspark_paimon.errors.CommitConflictError`); :func:`compact` then deletes the attempt's outputs,
   re-plans on the new latest snapshot and tries again, a few times.

Nothing is visible before the commit: a compaction that dies midway leaves only unreferenced files
(``Table.remove_orphan_files`` reclaims them). Deletion-vector tables are compacted as Java's writers do
(:class:`_DvLookup`): their vectors are applied while the inputs are read, every level-0 file goes up, the
keys of the outputs are looked up in the bucket's older files and the superseded rows there are marked in new
vectors; the compaction writes the bucket's vectors into a new index file that replaces the old ones in the
index manifest. This module never imports pyspark.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.compact.full_changelog import full_compaction_changelog, upgrade_changelog
from pyspark_paimon.datasource.compact.lookup_changelog import (
    LookupChangelog,
    lookup_compacts,
    produces_lookup_changelog,
)
from pyspark_paimon.datasource.compact.postpone_compact import compact_postpone
from pyspark_paimon.datasource.merge.merge import VALUE_KIND, is_retract
from pyspark_paimon.datasource.read.read import (
    ReadContext,
    key_sections,
    merge_records,
    read_data_file,
    read_merged,
    read_records,
    read_split,
)
from pyspark_paimon.datasource.write.postpone import is_postpone
from pyspark_paimon.datasource.write.write import TableWriter, WriteContext
from pyspark_paimon.errors import CommitConflictError, CompactionError, OptionError, PaimonError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.deletion_vectors import (
    DELETION_VECTORS_INDEX,
    DeletionFile,
    bucket_vector_files,
    deletion_files,
    read_deletion_vector,
    write_deletion_vector_file,
)
from pyspark_paimon.metadata.manifests.hash_index import sorted_unique
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange, IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import coerce_partition_value, parse_partition_spec
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE,
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS,
    COMPACTION_FILE_NUM_LIMIT,
    COMPACTION_FORCE_UP_LEVEL_0,
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
    COMPACTION_MIN_FILE_NUM,
    COMPACTION_SIZE_RATIO,
    FORCE_LOOKUP,
    FULL_COMPACTION_DELTA_COMMITS,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    POSTPONE_BUCKET,
    SOURCE_SPLIT_OPEN_FILE_COST,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.compact_strategy import (
    APPEND_COMPACT_OPEN_FILE_COST,
    CompactUnit,
    drop_delete,
    level_sorted_runs,
    pack_unaware_append,
    pick_append,
    pick_append_full,
    pick_full,
    pick_universal,
)
from pyspark_paimon.planner.read_plan import branch_schemas
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "CompactTask",
    "CompactContext",
    "CompactPlan",
    "CompactResult",
    "PartitionSpecs",
    "partition_matcher",
    "plan_compaction",
    "compact_bucket",
    "compact_batches",
    "commit_compaction",
    "compact",
    "run_in_process",
    "session_runner",
    "auto_compact",
    "refuse_invisible_writes",
    "TASK_COLUMN",
    "MESSAGE_COLUMN",
]

log = logging.getLogger(__name__)

#: Column names of the Arrow batches :func:`compact_batches` consumes and produces.
TASK_COLUMN = "task"
MESSAGE_COLUMN = "message"
#: How often :func:`compact` re-plans after a concurrent commit removed or overlapped its inputs.
MAX_ATTEMPTS = 3

PartitionSpecs = Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None


@dataclass(frozen=True)
class CompactTask:
    """One compaction of a bucket (an unaware bucket may have several, one per coordinator bin): its input
    files, the output level and whether retractions may be dropped."""

    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    output_level: int
    drop_delete: bool
    # first-row buckets: the bucket's files outside the unit (all older). Keys they hold are dropped from the
    # outputs, as Java's lookup compaction does, so no key is in two levels and raw reads stay correct.
    older_files: tuple[DataFileMeta, ...] = ()
    # Deletion-vector tables: input file name -> its vector, applied while the inputs are read.
    deletion_files: dict[str, DeletionFile] = field(default_factory=dict, compare=False)

    def split(self, files: tuple[DataFileMeta, ...] | None = None) -> DataSplit:
        return DataSplit(
            self.partition,
            self.partition_values,
            self.bucket,
            self.total_buckets,
            self.files if files is None else files,
            self.bucket_path,
            deletion_files={
                f.file_name: self.deletion_files[f.file_name]
                for f in (self.files if files is None else files)
                if f.file_name in self.deletion_files
            },
        )


@dataclass(frozen=True)
class CompactContext:
    """What an executor needs to run tasks (picklable): how to read the inputs and how to write the outputs."""

    read: ReadContext
    write: WriteContext

    @property
    def primary_key(self) -> bool:
        return bool(self.read.schema.primary_keys)


@dataclass
class CompactPlan:
    store: FileStore
    snapshot: Snapshot | None
    context: CompactContext
    tasks: list[CompactTask]
    commit_user: str
    # Deletion-vector tables: per (partition, bucket), the index files holding its vectors when planned.
    vector_files: dict[tuple[bytes, int], frozenset[str]] | None = None


@dataclass
class CompactResult:
    """What a compaction did (truthy when it committed a snapshot)."""

    snapshot: Snapshot | None = None
    buckets: int = 0
    files_before: int = 0
    files_after: int = 0
    rows_before: int = 0
    rows_after: int = 0
    attempts: int = 0
    notes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.snapshot is not None


# ------------------------------------------------------------------------------------------------------ plan
def partition_matcher(
    schema: TableSchema, partitions: PartitionSpecs, what: str = "Compaction"
) -> Callable[[tuple], bool] | None:
    """A test on decoded partition values for ``partitions`` (dicts or 'k=v,k2=v2' texts; a partial spec
    matches every partition with those values), or None for every partition. ``what`` names the operation
    in the error for a spec naming a column that is not a partition column."""
    if partitions is None:
        return None
    items = [partitions] if isinstance(partitions, (str, Mapping)) else list(partitions)
    names = list(schema.partition_keys)
    specs = []
    for item in items:
        raw = parse_partition_spec(item) if isinstance(item, str) else dict(item)
        unknown = [k for k in raw if k not in names]
        if unknown:
            raise OptionError(
                f"{what} partition {dict(raw)} names {unknown}, which are not partition columns of "
                f"the table (partition columns: {', '.join(names) or 'none'})."
            )
        specs.append([(names.index(k), coerce_partition_value(schema, k, v)) for k, v in raw.items()])
    return lambda values: any(all(values[i] == v for i, v in spec) for spec in specs)


def _refuse_unsupported(schema: TableSchema, table: str, full: bool) -> None:
    """``full-compaction`` tables are compacted here (a compaction to the top level writes their changelog,
    :mod:`full_changelog`), but not with deletion vectors, whose lookup compaction here writes no full-compaction
    changelog. (``lookup`` tables: their lookup compaction writes the changelog, :mod:`lookup_changelog`.)"""
    producer = schema.core_options.get(CHANGELOG_PRODUCER)
    if producer == "full-compaction" and schema.primary_keys and schema.core_options.deletion_vectors_enabled:
        raise CompactionError(
            f"Table {table} has 'changelog-producer' = 'full-compaction' and 'deletion-vectors.enabled' = 'true': "
            "pyspark-paimon's compaction of deletion-vector tables (a lookup compaction) writes no full-compaction "
            "changelog, so streaming readers would miss changes. Compact it with Paimon (a Flink or Spark "
            "compaction job)."
        )


def plan_compaction(
    store: FileStore,
    partitions: PartitionSpecs = None,
    *,
    full: bool = False,
    buckets: Iterable[tuple[bytes, int]] | None = None,
    auto: bool = False,
) -> CompactPlan:
    """One :class:`CompactTask` per (partition, bucket) that needs compacting, on the latest snapshot.

    ``full``: primary-key buckets are compacted fully into the max level (unless already one max-level run),
    fixed-bucket append buckets by Java's full rule; otherwise primary-key buckets use universal compaction and
    fixed append buckets the ``compaction.min.file-num`` rule. Unaware-bucket append tables (without deletion
    vectors) are planned as Java's ``AppendCompactCoordinator`` either way, possibly several tasks per
    partition. ``buckets`` restricts the plan to those (partition bytes,
    bucket) pairs (automatic compaction after a write). ``auto``: the automatic compaction of a write, which
    leaves unaware-bucket append tables alone as Java's writers do.
    """
    store.fileio.require_exclusive_create()
    schema = store.schema()
    _refuse_unsupported(schema, store.table_path, full)
    options = schema.core_options
    pk = bool(schema.primary_keys)
    user = options.new_commit_user()
    read_ctx = ReadContext(
        fileio=store.fileio,
        table_path=store.table_path,
        schema=schema,
        schemas={store.branch: branch_schemas(store)},
        branch=store.branch,
        options=dict(schema.options),
    )
    write_ctx = WriteContext(
        fileio=store.fileio, table_path=store.table_path, schema=schema, options=dict(schema.options), commit_user=user
    )
    TableWriter(write_ctx)  # refuses a table we cannot write (file format, bucket mode) before any work
    context = CompactContext(read_ctx, write_ctx)
    snapshot = store.snapshots.latest()
    plan = CompactPlan(store, snapshot, context, [], user)
    if snapshot is None or (auto and not pk and options.bucket == -1):
        return plan
    dvs: dict[tuple[bytes, int], dict[str, DeletionFile]] = {}
    if options.deletion_vectors_enabled:
        plan.vector_files = {}
        if snapshot.index_manifest:
            index_path = store.manifests.path(snapshot.index_manifest)
            plan.vector_files = bucket_vector_files(read_index_manifest(store.fileio, index_path))
            dvs = deletion_files(store.fileio, index_path, lambda e: f"{store.table_path}/index/{e.file_name}")
    matcher = partition_matcher(schema, partitions)
    wanted = None if buckets is None else set(buckets)
    types = [f.type for f in schema.partition_fields]
    values_of: dict[bytes, tuple] = {}
    matched: dict[bytes, bool] = {}
    totals: dict[tuple[bytes, int], int] = {}
    scanned: list[tuple[tuple[bytes, int], DataFileMeta]] = []
    for e in store.live_entries(snapshot):
        key = (e.partition, e.bucket)
        if (wanted is not None and key not in wanted) or e.bucket == POSTPONE_BUCKET:  # postpone: postpone_compact
            continue
        if e.partition not in matched:
            values_of[e.partition] = tuple(deserialize_row(e.partition, types))
            matched[e.partition] = matcher is None or matcher(values_of[e.partition])
        if not matched[e.partition]:
            continue
        scanned.append((key, e.file))
        totals[key] = e.total_buckets
    if not pk and options.bucket == -1 and not options.deletion_vectors_enabled:
        # Java's AppendCompactCoordinator, which CALL sys.compact runs for these tables whatever the strategy.
        for (part, bucket), files in _unaware_bins(options, scanned):
            plan.tasks.append(
                CompactTask(
                    part,
                    values_of[part],
                    bucket,
                    totals[(part, bucket)],
                    store.bucket_path(schema, values_of[part], bucket),
                    tuple(sorted(files, key=lambda f: (f.min_sequence_number, f.file_name))),
                    0,
                    False,
                )
            )
        return plan
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for key, file in scanned:
        groups.setdefault(key, []).append(file)
    for (part, bucket), files in sorted(groups.items()):
        values = values_of[part]
        where = f" (partition {dict(zip(schema.partition_keys, values))}, bucket {bucket})"
        vectors = dvs.get((part, bucket), {})
        task = _bucket_task(options, pk, files, full, where, set(vectors))
        if task is None:
            continue
        unit, drop = task
        older: tuple[DataFileMeta, ...] = ()
        if pk and (
            options.merge_engine == "first-row"
            or options.deletion_vectors_enabled
            or lookup_compacts(options, pk)  # the lookup finds before-images there
        ):
            taken = {f.file_name for f in unit.files}
            older = tuple(f for f in files if f.file_name not in taken)
        plan.tasks.append(
            CompactTask(
                part,
                values,
                bucket,
                totals[(part, bucket)],
                store.bucket_path(schema, values, bucket),
                unit.files,
                unit.output_level,
                drop,
                older,
                vectors,
            )
        )
    return plan


def _unaware_bins(
    options: CoreOptions, scanned: list[tuple[tuple[bytes, int], DataFileMeta]]
) -> list[tuple[tuple[bytes, int], list[DataFileMeta]]]:
    """The coordinator's tasks over the scanned files, with Java's option values: ``source.split.open-file-cost``
    counts at Java's 4 mb default unless the table sets it (our read packing's lower default is a read tuning,
    not the rule that decides which files are compacted together)."""
    open_cost = (
        options.get(SOURCE_SPLIT_OPEN_FILE_COST)
        if options.is_set(SOURCE_SPLIT_OPEN_FILE_COST)
        else APPEND_COMPACT_OPEN_FILE_COST
    )
    tasks = pack_unaware_append(
        scanned,
        compaction_file_size=options.compaction_file_size(False),
        target_file_size=options.target_file_size(False),
        open_file_cost=open_cost,
        min_file_num=options.get(COMPACTION_MIN_FILE_NUM),
        file_num_limit=options.get(COMPACTION_FILE_NUM_LIMIT),
    )
    return sorted(tasks, key=lambda task: task[0])  # partitions in a stable order (the bins keep theirs)


def _bucket_task(
    options: CoreOptions, pk: bool, files: list[DataFileMeta], full: bool, where: str, with_vectors: set[str]
) -> tuple[CompactUnit, bool] | None:
    if not pk:
        target = options.target_file_size(False)
        picked = (
            pick_append_full(files, options.compaction_file_size(False))
            if full
            else pick_append(files, options.get(COMPACTION_MIN_FILE_NUM), target)
        )
        if options.deletion_vectors_enabled and full and with_vectors:
            # Java's full rule with deletion vectors: a file with a vector is always rewritten.
            picked = sorted(
                {
                    f.file_name: f for f in [*(picked or []), *(f for f in files if f.file_name in with_vectors)]
                }.values(),
                key=lambda f: (f.min_sequence_number, f.file_name),
            )
        return (CompactUnit(0, tuple(picked)), False) if picked else None
    num_levels = options.num_levels
    runs = level_sorted_runs(files, num_levels, where)
    if full and options.deletion_vectors_enabled:
        unit = pick_full(num_levels, runs)
        if unit is None and with_vectors:  # one max-level run: rewrite the files that have vectors
            unit = CompactUnit(num_levels - 1, tuple(f for f in files if f.file_name in with_vectors))
        # Java drops retractions whenever deletion vectors are on (the vectors shadow older rows).
        return (unit, True) if unit is not None else None
    if options.deletion_vectors_enabled:
        # Java's lookup strategy with deletion vectors: ForceUpLevel0Compaction, so no level-0 file survives a
        # compaction (batch reads skip level 0), and retractions always go (the vectors shadow older rows).
        unit = pick_universal(
            num_levels,
            runs,
            max_size_amp=options.get(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
            size_ratio=options.get(COMPACTION_SIZE_RATIO),
            trigger=options.get(NUM_SORTED_RUN_COMPACTION_TRIGGER),
            force_up_level0=True,
        )
        return (unit, unit.output_level != 0) if unit is not None else None
    if full:
        unit = pick_full(num_levels, runs)
    else:
        unit = pick_universal(
            num_levels,
            runs,
            max_size_amp=options.get(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
            size_ratio=options.get(COMPACTION_SIZE_RATIO),
            trigger=options.get(NUM_SORTED_RUN_COMPACTION_TRIGGER),
            force_up_level0=options.merge_engine == "first-row"
            or options.get(COMPACTION_FORCE_UP_LEVEL_0)
            or lookup_compacts(options, pk)  # Java: every lookup table (ForceUpLevel0Compaction)
            or (pk and bool(options.get(FORCE_LOOKUP))),
        )
    if unit is None:
        return None
    return unit, drop_delete(unit, runs)


# ------------------------------------------------------------------------------------------------------ work
def _accumulate(tables: Iterable[pa.Table], target: int, write: Callable[[pa.Table], None]) -> None:
    """Hand ``tables`` (in order) to ``write`` in pieces of about ``target`` in-memory bytes, so outputs roll at
    the target size instead of one file per merged section."""
    buffer: list[pa.Table] = []
    buffered = 0
    for t in tables:
        if t.num_rows == 0:
            continue
        buffer.append(t)
        buffered += t.nbytes
        if buffered < target:
            continue
        data = pa.concat_tables(buffer)
        per_file = max(1, target * data.num_rows // max(data.nbytes, 1))
        whole = (data.num_rows // per_file) * per_file
        write(data.slice(0, whole))
        rest = data.slice(whole)
        buffer = [rest] if rest.num_rows else []
        buffered = rest.nbytes if rest.num_rows else 0
    if buffer:
        write(pa.concat_tables(buffer))


def compact_bucket(ctx: CompactContext, task: CompactTask) -> CommitMessage:
    """Rewrite ``task``'s files; the message adds the outputs and deletes the inputs. On any error the files
    written so far are deleted and the error propagates."""
    writer = TableWriter(ctx.write, f"compact-{task.bucket}")
    options = CoreOptions(ctx.write.options)
    target = options.target_file_size(ctx.primary_key)

    def write(t: pa.Table) -> None:
        writer.write_compacted(
            task.partition, task.partition_values, task.bucket, task.total_buckets, t, task.output_level, first
        )

    def write_changelog(t: pa.Table) -> None:
        writer.write_changelog(
            task.partition, task.partition_values, task.bucket, task.total_buckets, t, task.output_level
        )

    upgraded: list[DataFileMeta] = []
    replaced: tuple[DataFileMeta, ...] = task.files
    index_files: tuple[IndexManifestEntry, ...] = ()
    first = min((f.min_sequence_number for f in task.files), default=0)
    changelog = _full_changelog_settings(ctx, task)
    try:
        if ctx.primary_key:
            steps = _merge_tree_steps(ctx, task)
            touched = {f.file_name for _, files in steps for f in files}
            replaced = tuple(f for f in task.files if f.file_name in touched)
            lookup = _DvLookup(ctx, task) if _dv_lookup(ctx, task) else None
            lookup_changelog = _lookup_changelog(ctx, task)
            # force-lookup: Java's lookup compaction without changelog
            lookup_sink = write_changelog if produces_lookup_changelog(options, ctx.primary_key) else _no_changelog
            for kind, files in steps:
                if kind == _UPGRADE:
                    if lookup is not None and files[0].level == 0:
                        lookup.mark_upgraded(files[0])
                    upgraded.append(files[0].with_level(task.output_level))
                    if lookup_changelog is not None and lookup_changelog.applies(files):  # hook: lookup changelog
                        _lookup_step(lookup_changelog, files, lookup, lookup_sink)
                    if changelog is not None and files[0].level != task.output_level:
                        rows = _collected(read_merged(ctx.read, task.split(files), drop_retracts=False))
                        if rows is not None:
                            write_changelog(upgrade_changelog(rows))
                    continue
                merged: Iterable[pa.Table]
                if lookup_changelog is not None and lookup_changelog.applies(files):  # hook: lookup changelog
                    merged = _lookup_step(lookup_changelog, files, lookup, lookup_sink)
                elif lookup is not None:
                    merged = lookup.merged(files)
                else:
                    if changelog is not None:
                        merged = _with_full_changelog(ctx, task, files, changelog, write_changelog)
                    else:
                        merged = read_merged(ctx.read, task.split(files), drop_retracts=task.drop_delete)
                    if task.older_files and CoreOptions(ctx.write.options).merge_engine == "first-row":
                        merged = _without_older_keys(ctx, task, merged)
                _accumulate(merged, target, write)  # one candidate's files never span an upgraded file
            if CoreOptions(ctx.write.options).deletion_vectors_enabled:
                index_files = _write_bucket_vectors(ctx, task, replaced, lookup)
        else:
            # Append files are concatenated in sequence order; the outputs continue the first input's numbers.
            ordered = sorted(task.files, key=lambda f: (f.min_sequence_number, f.file_name))
            _accumulate(
                (
                    pa.Table.from_batches([b])
                    for f in ordered
                    for b in read_split(
                        ctx.read,
                        DataSplit(
                            task.partition,
                            task.partition_values,
                            task.bucket,
                            task.total_buckets,
                            (f,),
                            task.bucket_path,
                            True,
                            deletion_files=task.split((f,)).deletion_files,
                        ),
                    )
                ),
                target,
                write,
            )
            if CoreOptions(ctx.write.options).deletion_vectors_enabled:
                index_files = _write_bucket_vectors(ctx, task, replaced, None)
        messages = writer.prepare_commit()
    except BaseException:
        _delete_index_files(ctx.write.fileio, ctx.write.table_path, index_files)
        try:
            writer.abort()
        except PaimonError as exc:  # the original error matters more; the files are orphans either way
            log.warning("Cleaning up after a failed compaction of bucket %d: %s", task.bucket, exc)
        raise
    new_files = tuple(f for m in messages for f in m.new_files) + tuple(upgraded)
    return CommitMessage(
        task.partition,
        task.bucket,
        task.total_buckets,
        new_files,
        compact_before=replaced,
        changelog_files=tuple(f for m in messages for f in m.changelog_files),
        index_files=index_files,
    )


def _no_changelog(rows: pa.Table) -> None:
    """The changelog sink of a ``force-lookup`` compaction: it produces none."""


def _full_changelog_settings(ctx: CompactContext, task: CompactTask) -> tuple[int, list[str] | None] | None:
    """(top level, the columns ``row-deduplicate`` compares or None) when this task produces changelog: a
    ``full-compaction`` producer table whose task writes the top level (Java's
    ``FullChangelogMergeTreeCompactRewriter``); None otherwise."""
    options = CoreOptions(ctx.write.options)
    if not ctx.primary_key or options.get(CHANGELOG_PRODUCER) != "full-compaction":
        return None
    top = options.num_levels - 1
    if task.output_level != top:
        return None
    if not options.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE):
        return top, None
    ignored = set(options.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS) or ())
    return top, [f.name for f in ctx.read.schema.fields if f.name not in ignored]


def _lookup_changelog(ctx: CompactContext, task: CompactTask) -> LookupChangelog | None:
    """The lookup changelog producer of ``task`` (``changelog-producer = lookup``, or ``force-lookup``, whose
    changelog is dropped), or None."""
    options = CoreOptions(ctx.write.options)
    return LookupChangelog(ctx.read, options, task) if lookup_compacts(options, ctx.primary_key) else None


def _lookup_step(
    producer: LookupChangelog,
    files: tuple[DataFileMeta, ...],
    lookup: _DvLookup | None,
    write_changelog: Callable[[pa.Table], None],
) -> list[pa.Table]:
    """One step of a lookup-producer compaction (:mod:`lookup_changelog`): writes its changelog, hands the
    older rows it superseded to the deletion-vector lookup (if any), returns the rows to write."""
    step = producer.step(files)
    if step.changelog is not None:
        write_changelog(step.changelog)
    if lookup is not None:
        for name, positions in step.superseded.items():
            lookup.deleted.setdefault(name, []).append(positions)
    return [step.merged] if step.merged is not None else []


def _collected(tables: Iterable[pa.Table]) -> pa.Table | None:
    parts = [t for t in tables if t.num_rows]
    if not parts:
        return None
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _with_full_changelog(
    ctx: CompactContext,
    task: CompactTask,
    files: tuple[DataFileMeta, ...],
    settings: tuple[int, list[str] | None],
    write_changelog: Callable[[pa.Table], None],
) -> Iterator[pa.Table]:
    """The merged rows of ``files`` (what the compaction writes), after writing their changelog
    (:mod:`pyspark_paimon.datasource.compact.full_changelog`): the top-level rows before against the merged rows."""
    top_level, compare = settings
    merged = _collected(read_merged(ctx.read, task.split(files), drop_retracts=False))
    if merged is None:
        return
    top_files = tuple(f for f in files if f.level == top_level)
    lower_files = tuple(f for f in files if f.level != top_level)
    top = _collected(read_merged(ctx.read, task.split(top_files), drop_retracts=False)) if top_files else None
    lower = _collected(read_merged(ctx.read, task.split(lower_files), drop_retracts=False)) if lower_files else None
    if lower is not None:
        keys = list(ctx.read.schema.primary_keys)
        write_changelog(
            full_compaction_changelog(merged, top if top is not None else merged.slice(0, 0), lower, keys, compare)
        )
    if task.drop_delete:
        kinds = np.asarray(merged.column(VALUE_KIND).to_numpy(), dtype=np.int8)
        merged = merged.filter(pa.array(~is_retract(kinds)))
    yield merged


_REWRITE = "rewrite"
_UPGRADE = "upgrade"


def _merge_tree_steps(ctx: CompactContext, task: CompactTask) -> list[tuple[str, tuple[DataFileMeta, ...]]]:
    """What to do with each input of a primary-key unit, in key order (Java's ``MergeTreeCompactTask``).

    Key-overlap sections with several files, and lone files smaller than the small-file size, gather into a
    *candidate* that is merged and rewritten; a lone large file closes the candidate and is *upgraded*: moved
    to the output level by metadata alone (DELETE at its level, ADD of the same file at the output level), or
    left where it is when already there. A file is rewritten instead when that is needed for correctness:
    retractions it holds would reach the max level, it has a deletion vector (its vectors leave the index), or
    it is a level-0 file of a first-row or deletion-vector bucket (its keys must be looked up in older levels),
    unless :func:`_dv_upgrades_level0` says Java moves it up by metadata."""
    options = CoreOptions(ctx.write.options)
    lookup = options.deletion_vectors_enabled or bool(task.older_files)
    upgrades_level0 = _dv_upgrades_level0(ctx, task)
    min_size = options.compaction_file_size(True)
    max_level = options.num_levels - 1
    split = task.split()
    schema = ctx.read.schema
    key_fields = [schema.field(k) for k in (list(schema.trimmed_primary_keys) or list(schema.primary_keys))]

    def key_types(f: DataFileMeta) -> list[Any]:
        by_id = {fld.id: fld for fld in ctx.read.file_schema(split, f).fields}
        return [by_id[k.id].type if k.id in by_id else k.type for k in key_fields]

    steps: list[tuple[str, tuple[DataFileMeta, ...]]] = []
    candidate: list[list[DataFileMeta]] = []

    def must_rewrite(f: DataFileMeta) -> bool:
        return (
            (task.output_level == max_level and (f.delete_row_count is None or f.delete_row_count > 0))
            or f.file_name in task.deletion_files
            or (lookup and f.level == 0 and not (upgrades_level0 and f.delete_row_count == 0))
        )

    def upgrade(f: DataFileMeta) -> None:
        if must_rewrite(f):
            steps.append((_REWRITE, (f,)))
        elif f.level != task.output_level:
            steps.append((_UPGRADE, (f,)))

    def flush() -> None:
        if len(candidate) == 1 and len(candidate[0]) == 1:
            upgrade(candidate[0][0])
        elif candidate:
            steps.append((_REWRITE, tuple(f for section in candidate for f in section)))
        candidate.clear()

    for section in key_sections(task.files, key_types):
        if len(section) > 1 or section[0].file_size < min_size:
            candidate.append(section)
        else:
            flush()
            upgrade(section[0])
    flush()
    return steps


def _dv_upgrades_level0(ctx: CompactContext, task: CompactTask) -> bool:
    """Whether a lone level-0 file of ``task`` that holds no retraction moves up by metadata instead of being
    rewritten (Java's ``LookupMergeTreeCompactRewriter.upgradeStrategy`` with deletion vectors: no rewrite when
    the output is the max level, or when the engine is deduplicate without a sequence field, whose newest record
    always wins). The file's keys are still looked up (:meth:`_DvLookup.mark_upgraded`), so the older rows they
    supersede get marked. Only where nothing else needs the rows: deletion vectors on, not first-row (Java's own
    rewriter), no changelog produced by compaction, one file format for every level; for other engines only into
    an empty max level (with no older file there is nothing to merge the file with)."""
    options = CoreOptions(ctx.write.options)
    if (
        not options.deletion_vectors_enabled
        or options.merge_engine == "first-row"
        or options.get(CHANGELOG_PRODUCER) not in ("none", "input")
        or ctx.write.options.get("file.format.per.level")
    ):
        return False
    if task.output_level == options.num_levels - 1 and not task.older_files:
        return True
    return options.merge_engine == "deduplicate" and not options.sequence_fields


def _without_older_keys(ctx: CompactContext, task: CompactTask, merged: Iterable[pa.Table]) -> Iterator[pa.Table]:
    """first-row: drop merged rows whose key an older file of the bucket holds (that older record is the first
    row and stays where it is). Java's lookup compaction does the same, so a key lives in one level only."""
    schema = ctx.read.schema
    key_names = list(schema.trimmed_primary_keys) or list(schema.primary_keys)
    key_fields = [schema.field(k) for k in key_names]
    split = task.split(task.older_files)
    older = pa.concat_tables([read_data_file(ctx.read, split, f, key_fields) for f in task.older_files])
    older = older.group_by(key_names).aggregate([])
    index = "__paimon_compact_row__"
    for t in merged:
        if t.num_rows == 0:
            continue
        numbered = t.append_column(index, pa.array(np.arange(t.num_rows, dtype=np.int64)))
        kept = numbered.join(older, key_names, join_type="left anti", use_threads=False)
        yield kept.sort_by(index).drop_columns([index]).select(t.column_names)


def _dv_lookup(ctx: CompactContext, task: CompactTask) -> bool:
    """Whether ``task`` is a lookup compaction of a deletion-vector bucket: there are older files outside the
    unit whose superseded rows must be marked (first-row buckets keep their older rows instead)."""
    options = CoreOptions(ctx.write.options)
    return options.deletion_vectors_enabled and options.merge_engine != "first-row" and bool(task.older_files)


#: Buckets compacted at once by :func:`run_in_process` (one per core).
_COMPACT_THREADS = max(1, os.cpu_count() or 1)
_INTEGER_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"})

_POS = "__paimon_dv_position__"
_FILE = "__paimon_dv_file__"


class _DvLookup:
    """Java's lookup compaction of a deletion-vector bucket (``LookupMergeTreeCompactRewriter`` with
    ``LookupChangelogMergeFunctionWrapper``): every key the unit holds is looked up in the bucket's older files
    (all at levels above the output level, outside the unit); each live older row found gets its position
    marked in that file's deletion vector, and, unless the engine is ``deduplicate`` without a sequence field
    (where the newer record wins anyway), the older record takes part in the merge as the oldest input, so
    partial-update and aggregation build on the value already stored.

    Vectorised: the older files' key columns are read once (with their row positions, live rows only) and
    joined with each step's keys in Arrow. A step's records and the older versions found are merged in memory
    (one key-overlap section; the unit of a commit-time compaction is the new level-0 data).

    ``changelog-producer = lookup`` steps holding level-0 files go through
    :class:`~pyspark_paimon.datasource.compact.lookup_changelog.LookupChangelog` instead, which hands the positions it
    superseded to :attr:`deleted`."""

    def __init__(self, ctx: CompactContext, task: CompactTask) -> None:
        self.ctx = ctx
        self.task = task
        schema = ctx.read.schema
        self.key_names = list(schema.trimmed_primary_keys) or list(schema.primary_keys)
        self.key_fields = [schema.field(k) for k in self.key_names]
        options = CoreOptions(ctx.write.options)
        self.needs_values = options.merge_engine != "deduplicate" or bool(options.sequence_fields)
        self.older = list(task.older_files)
        self.deleted: dict[str, list[np.ndarray]] = {}
        self._keys: pa.Table | None = None
        self._sorted: dict[int, tuple[np.ndarray, np.ndarray] | None] = {}

    def _older_keys(self) -> pa.Table:
        """Key columns of every live row of the older files, with the file's index and the row's position."""
        if self._keys is None:
            parts = []
            for i, f in enumerate(self.older):
                split = self.task.split((f,))
                keys = read_data_file(self.ctx.read, replace(split, deletion_files={}), f, self.key_fields)
                positions = np.arange(keys.num_rows, dtype=np.int64)
                dfile = split.deletion_files.get(f.file_name)
                live = np.ones(keys.num_rows, dtype=bool)
                if dfile is not None:
                    gone = read_deletion_vector(self.ctx.read.fileio, dfile, f.file_name)
                    live[gone[gone < keys.num_rows]] = False
                keys = keys.append_column(_POS, pa.array(positions)).append_column(
                    _FILE, pa.array(np.full(keys.num_rows, i, dtype=np.int32))
                )
                parts.append(keys.filter(pa.array(live)))
            self._keys = pa.concat_tables(parts)
        return self._keys

    def merged(self, files: tuple[DataFileMeta, ...]) -> Iterator[pa.Table]:
        split = self.task.split(files)
        step_keys = pa.concat_tables([read_data_file(self.ctx.read, split, f, self.key_fields) for f in files])
        located = self._search_older(step_keys)
        if located is None:
            step_keys = step_keys.group_by(self.key_names).aggregate([])
            hits = self._older_keys().join(step_keys, self.key_names, join_type="inner", use_threads=False)
            file_index = hits.column(_FILE).to_numpy()
            positions = hits.column(_POS).to_numpy()
            located = {i: np.sort(positions[file_index == i]) for i in np.unique(file_index).tolist()}
        if not located:
            yield from read_merged(self.ctx.read, split, drop_retracts=self.task.drop_delete)
            return
        before: list[pa.Table] = []
        for i, found in sorted(located.items()):  # one step per older file
            self.deleted.setdefault(self.older[i].file_name, []).append(found)
            if self.needs_values:
                f = self.older[i]
                before.append(read_records(self.ctx.read, self.task.split((f,)), f, found))
        if not self.needs_values:
            yield from read_merged(self.ctx.read, split, drop_retracts=self.task.drop_delete)
            return
        ranked = sorted(files, key=lambda f: (f.max_sequence_number, f.min_sequence_number, f.file_name))
        after = [read_records(self.ctx.read, split, f) for f in ranked]
        yield merge_records(self.ctx.read, split, [*before, *after], self.task.drop_delete)

    def mark_upgraded(self, file: DataFileMeta) -> None:
        """A level-0 file moved up without a rewrite (:func:`_dv_upgrades_level0`; deduplicate without a sequence
        field, where the newer record wins): only the older rows its keys supersede are marked, with nothing
        merged or written."""
        keys = read_data_file(self.ctx.read, self.task.split((file,)), file, self.key_fields)
        located = self._search_older(keys)
        if located is not None:
            for i, found in located.items():
                self.deleted.setdefault(self.older[i].file_name, []).append(found)
            return
        hits = self._older_keys().join(keys, self.key_names, join_type="inner", use_threads=False)
        if hits.num_rows == 0:
            return
        file_index = hits.column(_FILE).to_numpy()
        positions = hits.column(_POS).to_numpy()
        for i in np.flatnonzero(np.bincount(file_index, minlength=len(self.older))).tolist():
            self.deleted.setdefault(self.older[i].file_name, []).append(positions[file_index == i])

    def _search_older(self, keys: pa.Table) -> dict[int, np.ndarray] | None:
        """Older file index -> ascending positions of its live rows whose key ``keys`` holds, found by binary
        search in the older files' sorted key columns, reading only the files whose key range holds one of
        ``keys``; None unless the key is one integer column without nulls and every file read ascends (the
        caller then joins)."""
        if keys.num_columns != 1 or keys.column(0).null_count or not self._integer_key():
            return None
        new = keys.column(0).to_numpy()
        if len(new) > 1 and not bool((new[1:] >= new[:-1]).all()):  # several files' runs
            new = np.sort(new)
        wanted = self._files_holding(new)
        found_keys = [self._older_sorted(i) for i in wanted]
        if any(k is None for k in found_keys):
            return None
        out: dict[int, np.ndarray] = {}
        for i, got in zip(wanted, found_keys):
            assert got is not None
            older, live = got
            at = np.minimum(np.searchsorted(older, new), len(older) - 1)
            found = at[older[at] == new]
            found = sorted_unique(found[live[found]])  # two new rows of one key find one older row
            if len(found):
                out[i] = found
        return out

    def _integer_key(self) -> bool:
        """One primary-key column of an integer type: keys are found by binary search, files pruned by range."""
        return len(self.key_fields) == 1 and self.key_fields[0].type.root in _INTEGER_ROOTS

    def _files_holding(self, probe: np.ndarray) -> list[int]:
        """The older files whose key range (``min_key``/``max_key`` in the manifest) holds at least one key of
        ``probe`` (ascending): only those are read. Upserts of recent keys, or inserts of keys above every stored
        one, then read few or no older files instead of every key of the bucket."""
        key = self.key_fields[0]
        out = []
        for i, f in enumerate(self.older):
            # the range is stored in the key type of the file's schema (a widened key keeps its old bytes)
            stored = {fld.id: fld for fld in self.ctx.read.file_schema(self.task.split((f,)), f).fields}.get(key.id)
            if not f.min_key or not f.max_key or stored is None or stored.type.root not in _INTEGER_ROOTS:
                out.append(i)  # no usable range recorded: read the file
                continue
            types = [stored.type]
            low, high = deserialize_row(f.min_key, types)[0], deserialize_row(f.max_key, types)[0]
            if low is None or high is None or np.searchsorted(probe, low) < np.searchsorted(probe, high, "right"):
                out.append(i)
        return out

    def _older_sorted(self, i: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Older file ``i``: its keys (one integer key column) as a strictly ascending array, which files above
        level 0 are (sorted runs), and the mask of its live rows; so keys are found by binary search instead of
        a hash join. None when its keys are not integers without nulls or do not ascend (the join then). Read once
        per task, on first need."""
        if i not in self._sorted:
            f = self.older[i]
            split = self.task.split((f,))
            column = read_data_file(self.ctx.read, replace(split, deletion_files={}), f, self.key_fields).column(0)
            keys = column.to_numpy() if column.null_count == 0 else np.empty(0, np.float64)
            if keys.dtype.kind not in "iu" or (len(keys) > 1 and not bool((keys[1:] > keys[:-1]).all())):
                self._sorted[i] = None
            else:
                live = np.ones(len(keys), dtype=bool)
                dfile = split.deletion_files.get(f.file_name)
                if dfile is not None:
                    gone = read_deletion_vector(self.ctx.read.fileio, dfile, f.file_name)
                    live[gone[gone < len(keys)]] = False
                self._sorted[i] = (keys, live)
        return self._sorted[i]


def _write_bucket_vectors(
    ctx: CompactContext, task: CompactTask, replaced: tuple[DataFileMeta, ...], lookup: _DvLookup | None
) -> tuple[IndexManifestEntry, ...]:
    """The bucket's deletion vectors after the compaction, in one new index file (Java's bucketed
    maintainer): the old vectors of the files it keeps, with the positions the lookup found added. Rewritten
    files take their vectors with them. Nothing left: no file (the bucket's entries leave the index)."""
    gone = {f.file_name for f in replaced}
    vectors: dict[str, np.ndarray] = {}
    for name, dfile in sorted(task.deletion_files.items()):  # the whole bucket's vectors when planned
        if name not in gone:
            vectors[name] = read_deletion_vector(ctx.read.fileio, dfile, name)
    if lookup is not None:
        for name, found in lookup.deleted.items():
            vectors[name] = sorted_unique(np.concatenate([vectors.get(name, np.empty(0, np.int64)), *found]))
    if not vectors:
        return ()
    index_dir = f"{ctx.write.table_path}/index"
    return (write_deletion_vector_file(ctx.write.fileio, index_dir, task.partition, task.bucket, vectors),)


def _delete_index_files(fileio: FileIO, table_path: str, entries: Iterable[IndexManifestEntry]) -> None:
    for e in entries:
        path = f"{table_path}/index/{e.file_name}"
        try:
            fileio.delete(path)
        except OSError as exc:
            log.warning(
                "Could not delete %s of a compaction that was not committed (%s); "
                "Table.remove_orphan_files will remove it.",
                path,
                exc,
            )


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
        _delete_outputs(plan, messages)
        raise


def session_runner(session: Any) -> Callable[[CompactPlan], list[CommitMessage]]:
    """A runner that compacts each bucket in a Spark executor: a DataFrame of pickled tasks (one partition
    each) through ``mapInArrow`` with :func:`compact_batches`, the messages collected on the driver.

    It only calls methods of the ``session`` it is given (``createDataFrame``, ``repartition``,
    ``mapInArrow``, ``collect``) and imports nothing of pyspark, so it works on classic Spark and Spark Connect
    alike and the Python API can offer it without depending on the Spark adapters. If the Spark job fails, the
    files that finished tasks wrote are never committed (orphans for ``Table.remove_orphan_files``)."""

    def run(plan: CompactPlan) -> list[CommitMessage]:
        rows = [(pickle.dumps(task),) for task in plan.tasks]
        frame = session.createDataFrame(rows, schema=f"{TASK_COLUMN} binary").repartition(len(rows))
        out = frame.mapInArrow(functools.partial(compact_batches, plan.context), f"{MESSAGE_COLUMN} binary")
        return [pickle.loads(bytes(row[MESSAGE_COLUMN])) for row in out.collect()]

    return run


def _delete_outputs(plan: CompactPlan, messages: Sequence[CommitMessage]) -> None:
    """Remove the files of an attempt that was not committed (best effort: leftovers are orphans)."""
    by_bucket = {(t.partition, t.bucket): t.bucket_path for t in plan.tasks}
    fileio = plan.store.fileio
    for m in messages:
        _delete_index_files(fileio, plan.store.table_path, m.index_files)
        base = by_bucket.get((m.partition, m.bucket))
        inputs = {f.file_name for f in m.compact_before}
        for f in (*m.new_files, *m.changelog_files):
            if f.file_name in inputs:  # an upgraded input (same file, new level): it is not ours to delete
                continue
            path = f.external_path or (f"{base}/{f.file_name}" if base else None)
            if path is None:
                continue
            try:
                fileio.delete(path)
            except OSError as exc:
                log.warning(
                    "Could not delete %s of a compaction that was not committed (%s); "
                    "Table.remove_orphan_files will remove it.",
                    path,
                    exc,
                )


# ------------------------------------------------------------------------------------------------------ commit
def commit_compaction(plan: CompactPlan, messages: Sequence[CommitMessage]) -> Snapshot | None:
    """Commit ``messages`` as one COMPACT snapshot (None when nothing changed)."""
    messages = [m for m in messages if m.compact_before or m.new_files]
    if not messages:
        return None
    store = plan.store
    schema = plan.context.read.schema
    committer = FileStoreCommit(store, schema.options)
    index_update = None
    if plan.vector_files is not None:
        added = tuple(e for m in messages for e in m.index_files)
        index_update = _index_update(plan, {(m.partition, m.bucket) for m in messages}, added)
    return committer.commit(messages, kind="COMPACT", commit_user=plan.commit_user, index_update=index_update)


def _index_update(
    plan: CompactPlan, buckets: set[tuple[bytes, int]], added: tuple[IndexManifestEntry, ...]
) -> Callable[[Snapshot | None], IndexChange]:
    """The index change of a deletion-vector table's compaction: the compacted buckets' vectors are replaced by
    the ones the compaction wrote (``added``: the vectors of the files it kept, plus the positions its lookups
    found; none after a full compaction, which rewrote every file that had one). If a compacted bucket's vector
    files changed since the plan (another writer wrote new vectors for its files meanwhile), the commit is a
    conflict: the outputs were merged without them, and the kept vectors lack them."""
    store = plan.store
    planned = plan.vector_files or {}
    dropped = frozenset((partition, bucket, DELETION_VECTORS_INDEX) for partition, bucket in buckets)

    def update(latest: Snapshot | None) -> IndexChange:
        current = latest.index_manifest if latest else None
        now = bucket_vector_files(read_index_manifest(store.fileio, store.manifests.path(current))) if current else {}
        for b in buckets:
            if now.get(b, frozenset()) != planned.get(b, frozenset()):
                raise CommitConflictError(
                    f"The deletion vectors of bucket {b[1]} changed while it was compacted (a concurrent Paimon "
                    "compaction wrote new ones). Nothing was committed; re-run the compaction."
                )
        return IndexChange(dropped, added)

    return update


def compact(
    store: FileStore,
    partitions: PartitionSpecs = None,
    *,
    full: bool = False,
    runner: Callable[[CompactPlan], list[CommitMessage]] | None = None,
    buckets: Iterable[tuple[bytes, int]] | None = None,
    auto: bool = False,
    progress: Progress | None = None,
) -> CompactResult:
    """Plan, run (``runner``: in process by default; the Spark adapter passes one that uses executors) and
    commit a compaction. When a concurrent commit removed an input or wrote overlapping files at a level the
    outputs go to, the outputs are deleted and the whole compaction is planned again on the new latest
    snapshot, up to :data:`MAX_ATTEMPTS` times; then the conflict error propagates (nothing was committed)."""

    def run(plan: CompactPlan) -> list[CommitMessage]:
        total = len(plan.tasks)
        if runner is not None:  # elsewhere (Spark executors): report the start and the end
            report(progress, "compact buckets", 0, total)
            messages = runner(plan)
            report(progress, "compact buckets", total, total)
            return messages
        return run_in_process(plan, progress)

    wanted = None if buckets is None else list(buckets)
    moved: CompactResult | None = None
    result = CompactResult()
    if is_postpone(store.schema()) and not auto:
        # Postpone-bucket tables: 'bucket-postpone' moves into real buckets (one COMPACT snapshot); then the buckets
        # the move wrote are compacted by the usual rules (a second snapshot only when those rules pick files), as
        # the bucket writers of Java's move would.
        _refuse_unsupported(store.schema(), store.table_path, full)  # before the move commits anything
        move = compact_postpone(store, partition_matcher(store.schema(), partitions))
        if move is not None:
            moved = CompactResult(
                snapshot=move.snapshot,
                buckets=len(move.buckets),
                files_before=move.files_before,
                files_after=move.files_after,
                rows_before=move.rows_before,
                rows_after=move.rows_after,
                attempts=1,
            )
            wanted = [b for b in wanted if b in move.buckets] if wanted is not None else sorted(move.buckets)
            if move.snapshot is not None:
                result.notes.append(
                    f"moved {move.files_before} postpone file(s) ({move.rows_before} rows) into real buckets in "
                    f"snapshot {move.snapshot.id}"
                )
    for attempt in range(1, MAX_ATTEMPTS + 1):
        plan = plan_compaction(store, partitions, full=full, buckets=wanted, auto=auto)
        result.attempts = attempt
        if not plan.tasks:
            return moved if moved is not None else result
        messages = run(plan)
        try:
            snapshot = commit_compaction(plan, messages)
        except CommitConflictError as exc:
            _delete_outputs(plan, messages)
            if attempt == MAX_ATTEMPTS:
                raise CommitConflictError(
                    f"Compaction of {store.table_path} (branch '{store.branch}') lost {attempt} times to concurrent "
                    f"commits ({exc}). Nothing was committed; run it again when fewer writers touch the same "
                    "buckets."
                ) from exc
            result.notes.append(f"attempt {attempt}: {exc}")
            continue
        result.snapshot = snapshot
        result.buckets = len({(m.partition, m.bucket) for m in messages})  # an unaware bucket may have several
        result.files_before = sum(len(m.compact_before) for m in messages)
        result.files_after = sum(len(m.new_files) for m in messages)
        result.rows_before = sum(f.row_count for m in messages for f in m.compact_before)
        result.rows_after = sum(f.row_count for m in messages for f in m.new_files)
        return result
    return result  # pragma: no cover - the loop returns or raises


def refuse_invisible_writes(schema: TableSchema, table: str) -> None:
    """A write to a deletion-vector primary-key table is visible only once compacted, and our compaction
    refuses deletion-vector tables whose changelog Paimon's full compaction produces (``full-compaction``;
    :func:`_refuse_unsupported`): such a write would commit rows no batch read returns. Refused unless
    ``write-only`` says a Paimon job compacts the table."""
    options = schema.core_options
    producer = options.get(CHANGELOG_PRODUCER)
    if (
        schema.primary_keys
        and options.deletion_vectors_enabled
        and producer == "full-compaction"
        and not options.write_only
    ):
        raise CompactionError(
            f"Table {table} has 'deletion-vectors.enabled' = 'true' and 'changelog-producer' = '{producer}': its "
            "writes become visible only through Paimon's compaction, which produces the changelog and which "
            "pyspark-paimon does not run for such tables. Set 'write-only' = 'true' and compact the table with "
            "Paimon (a Flink or Spark compaction job), or write it with Paimon."
        )


def auto_compact(store: FileStore, messages: Sequence[CommitMessage]) -> CompactResult | None:
    """The automatic compaction after a write committed ``messages`` (None when it does not apply).

    Like Java's writers unless ``write-only`` is set: the written primary-key buckets are compacted by the
    universal rules, or fully when ``full-compaction.delta-commits`` > 0 (what Java does for batch writes);
    written fixed-bucket append buckets by ``compaction.min.file-num``; first-row buckets always move their
    level-0 files up (Java's lookup compaction), and so do deletion-vector primary-key buckets, whose new rows
    batch reads see only once they are above level 0 (Java's writers force that compaction before every
    commit: ``ForceUpLevel0Compaction``, ``lookup-wait``), with new vectors for the rows they supersede, and
    so do ``changelog-producer = lookup`` buckets, whose lookup compaction writes the changelog
    (:mod:`pyspark_paimon.datasource.compact.lookup_changelog`). Unaware-bucket append tables are left to explicit (or
    Paimon's) compaction; ``full-compaction`` producer tables are
    compacted like others, and a compaction that reaches the top level writes their changelog. It runs
    in this process, after the write's own commit, as a separate COMPACT snapshot: Java's batch writes also
    commit APPEND, then COMPACT."""
    schema = store.schema()
    options = schema.core_options
    buckets = {(m.partition, m.bucket) for m in messages if m.new_files}
    full = bool(schema.primary_keys) and (options.get(FULL_COMPACTION_DELTA_COMMITS) or 0) > 0
    if options.write_only or not buckets or is_postpone(schema):
        return None  # postpone-bucket tables: Java's writes of them never compact (fixed-bucket writes are write-only)
    return compact(store, full=full, buckets=buckets, auto=True)
