"""Compaction planning (driver side): which files of which buckets a compaction rewrites.

:func:`plan_compaction` reads the latest snapshot's live files per (partition, bucket) and, per bucket, picks a
:class:`CompactTask` by :mod:`pyspark_paimon.planner.compact_strategy` (full, universal, or Java's append rules):
which files, which output level, whether retractions may be dropped, and for lookup compactions the bucket's older
files. Unaware-bucket append tables get Java's coordinator instead: small files packed by size, several tasks per
partition possible; data-evolution tables get Java's data-evolution coordinator (``planner/row_ranges.py``): runs of
row-id groups whose ids follow on, each rewritten as one whole-row file. The tasks and their :class:`CompactContext`
are picklable, so executors can run them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from pyspark_paimon.datasource.compact.lookup_changelog import lookup_compacts
from pyspark_paimon.datasource.compact.ordered_compact import (
    cluster_order,
    clustering_incremental,
    pick_cluster,
    sort_order,
)
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.write.clustering import RowOrder
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import CompactionError, OptionError
from pyspark_paimon.metadata.manifests.deletion_vectors import DeletionFile, bucket_vector_files, deletion_files
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.partition import coerce_partition_value, parse_partition_spec
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    COMPACTION_FILE_NUM_LIMIT,
    COMPACTION_FORCE_UP_LEVEL_0,
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
    COMPACTION_MIN_FILE_NUM,
    COMPACTION_SIZE_RATIO,
    FORCE_LOOKUP,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    POSTPONE_BUCKET,
    SOURCE_SPLIT_OPEN_FILE_COST,
    CoreOptions,
    validate_table_options,
)
from pyspark_paimon.metadata.schema.row_tracking import (
    data_evolution_enabled,
    row_tracking_enabled,
    with_tracking_columns,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
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
    sorted_run_count,
)
from pyspark_paimon.planner.row_ranges import pack_row_ranges
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "CompactTask",
    "CompactContext",
    "CompactPlan",
    "PartitionSpecs",
    "plan_compaction",
    "partition_matcher",
    "refuse_unsupported",
]


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
    # Sort compaction and incremental clustering (ordered_compact.py): the inputs' rows are written in this order.
    order: RowOrder | None = None

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
    # Why there are no tasks (None when there are): the rule that picked nothing, in the user's terms.
    idle: str | None = None


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


def refuse_unsupported(schema: TableSchema, table: str, full: bool) -> None:
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
    order_strategy: str | None = None,
    order_by: Sequence[str] | str | None = None,
    table_options: Mapping[str, str] | None = None,
) -> CompactPlan:
    """One :class:`CompactTask` per (partition, bucket) that needs compacting, on the latest snapshot.

    ``full``: primary-key buckets are compacted fully into the max level (unless already one max-level run),
    fixed-bucket append buckets by Java's full rule; otherwise primary-key buckets use universal compaction and
    fixed append buckets the ``compaction.min.file-num`` rule. Unaware-bucket append tables (without deletion
    vectors) are planned as Java's ``AppendCompactCoordinator`` either way, possibly several tasks per
    partition. ``buckets`` restricts the plan to those (partition bytes,
    bucket) pairs (automatic compaction after a write). ``auto``: the automatic compaction of a write, which
    leaves unaware-bucket append tables alone as Java's writers do.

    ``order_strategy`` (zorder / hilbert / order; ``none`` or None = no order) with ``order_by`` makes it a sort
    compaction of every file of each partition, and an unaware-bucket append table with ``clustering.incremental``
    is clustered instead of packed (:mod:`ordered_compact`). ``table_options`` overlay the table's options for this
    compaction (Paimon's ``options`` argument: ``target-file-size``, ``compaction.*`` ...).
    """
    store.fileio.require_exclusive_create()
    schema = store.schema()
    if table_options:
        overlay = {**schema.options, **{str(k): str(v) for k, v in table_options.items()}}
        validate_table_options(overlay, creating=False, writing=True, table=store.table_path)
        schema = replace(schema, options=overlay)
    refuse_unsupported(schema, store.table_path, full)
    order = _order_of(schema, store.table_path, order_strategy, order_by, auto)
    if order is not None and row_tracking_enabled(schema.options):
        raise CompactionError(
            f"Table {store.table_path} tracks rows ('row-tracking.enabled'): a sort compaction or clustering would "
            "leave the rows' ids out of order in its files, which pypaimon and pypaimon-rust then read wrong. "
            "Compact it without order_strategy / clustering, or with Paimon."
        )
    clustering = order is not None and order_strategy is None
    options = schema.core_options
    pk = bool(schema.primary_keys)
    user = options.new_commit_user()
    # A row-tracking table's compaction reads each row's id and sequence number and stores them in its outputs.
    # A data-evolution compaction writes whole rows whose ids its files' first row id gives (as Java), so it reads
    # the assembled rows without the hidden columns.
    evolution = data_evolution_enabled(schema.options)
    tracked = (
        with_tracking_columns(schema, store.table_path)
        if row_tracking_enabled(schema.options) and not evolution
        else schema
    )
    read_ctx = ReadContext.for_store(store, tracked)
    write_ctx = WriteContext(
        fileio=store.fileio, table_path=store.table_path, schema=schema, options=dict(schema.options), commit_user=user
    )
    TableWriter(write_ctx)  # refuses a table we cannot write (file format, bucket mode) before any work
    context = CompactContext(read_ctx, write_ctx)
    snapshot = store.snapshots.latest()
    plan = CompactPlan(store, snapshot, context, [], user)
    if snapshot is None:
        plan.idle = f"branch '{store.branch}' has no snapshot yet"
        return plan
    if auto and not pk and options.bucket == -1:
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
    if order is not None:
        plan.tasks.extend(_ordered_tasks(store, schema, scanned, values_of, totals, dvs, order, full, clustering))
        if not plan.tasks:
            plan.idle = _idle(partitions, scanned) or "the incremental clustering rules picked no file to cluster"
        return plan
    if evolution:
        plan.tasks.extend(_evolution_tasks(store, schema, scanned, values_of, totals, dvs))
        if not plan.tasks:
            plan.idle = _idle(partitions, scanned) or (
                f"no run of row ranges whose ids follow on holds {options.get(COMPACTION_MIN_FILE_NUM)} or more "
                "files (compaction.min.file-num; Java's data-evolution coordinator, whatever the strategy)"
            )
        return plan
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
        if not plan.tasks:
            plan.idle = _idle(partitions, scanned) or (
                f"no partition holds {options.get(COMPACTION_MIN_FILE_NUM)} or more files smaller than the "
                "compaction file size to pack together (compaction.min.file-num; Java's coordinator, whatever "
                "the strategy)"
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
    if not plan.tasks:
        plan.idle = _idle(partitions, scanned) or _no_pick(options, pk, full, groups)
    return plan


def _idle(partitions: PartitionSpecs, scanned: list[tuple[tuple[bytes, int], DataFileMeta]]) -> str | None:
    """Why nothing is planned when there is nothing to look at (None when there are files)."""
    if scanned:
        return None
    return "no data files in the partitions given" if partitions is not None else "the table holds no data files"


_FULL_ANYWAY = "a full compaction (full=True; CLI: --compact_strategy full) rewrites them anyway"


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _no_pick(options: CoreOptions, pk: bool, full: bool, groups: dict[tuple[bytes, int], list[DataFileMeta]]) -> str:
    """Why the strategy's rules picked no file in any of the ``groups`` (buckets) looked at."""
    buckets = _count(len(groups), "bucket")
    if pk and full:
        return f"every bucket ({buckets}) is already one sorted run at the top level (level {options.num_levels - 1})"
    if pk:
        runs = max(sorted_run_count(files) for files in groups.values())
        return (
            f"the minor (universal) rules picked no file in {buckets}: each has at most {_count(runs, 'sorted run')}, "
            f"below num-sorted-run.compaction-trigger = {options.get(NUM_SORTED_RUN_COMPACTION_TRIGGER)}, and none "
            f"reached its size-amplification or size-ratio limit ({COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT.key}, "
            f"{COMPACTION_SIZE_RATIO.key}); {_FULL_ANYWAY}"
        )
    if full:
        return (
            f"no bucket ({buckets}) has at least three files of which more are small than large (Java's full rule "
            "for append buckets: files reach the compaction file size first)"
        )
    return (
        f"no bucket ({buckets}) holds {options.get(COMPACTION_MIN_FILE_NUM)} files within twice the target file size "
        f"(compaction.min.file-num); {_FULL_ANYWAY}"
    )


def _order_of(
    schema: TableSchema,
    table: str,
    order_strategy: str | None,
    order_by: Sequence[str] | str | None,
    auto: bool,
) -> RowOrder | None:
    """The order a compaction writes in: the sort compaction's, the table's incremental clustering, or None."""
    columns = [c for c in (order_by.split(",") if isinstance(order_by, str) else (order_by or ())) if c.strip()]
    if order_strategy is not None and order_strategy.strip().lower() != "none":
        return sort_order(schema, table, order_strategy, columns)
    if columns:
        raise OptionError(
            'order_strategy "none" cannot work with order_by columns: name a strategy (zorder, hilbert, order).'
        )
    if not auto and clustering_incremental(schema):
        return cluster_order(schema, table)
    return None


def _ordered_tasks(
    store: FileStore,
    schema: TableSchema,
    scanned: list[tuple[tuple[bytes, int], DataFileMeta]],
    values_of: dict[bytes, tuple],
    totals: dict[tuple[bytes, int], int],
    dvs: dict[tuple[bytes, int], dict[str, DeletionFile]],
    order: RowOrder,
    full: bool,
    clustering: bool,
) -> list[CompactTask]:
    """Per partition (an unaware bucket is the whole partition) one ordered task: all files for a sort
    compaction, the runs incremental clustering picks otherwise."""
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for key, file in scanned:
        groups.setdefault(key, []).append(file)
    options = schema.core_options
    schema_columns: dict[int, list[str]] = {}
    if clustering:
        for sid in {f.schema_id for files in groups.values() for f in files}:
            schema_columns[sid] = store.schemas.schema(sid).core_options.clustering_columns
    tasks = []
    for (part, bucket), files in sorted(groups.items()):
        values = values_of[part]
        if clustering:
            where = f" (partition {dict(zip(schema.partition_keys, values))})"
            unit = pick_cluster(options, files, full, order.columns, schema_columns, where)
            if unit is None:
                continue
        else:
            unit = CompactUnit(0, tuple(files))
        tasks.append(
            CompactTask(
                part,
                values,
                bucket,
                totals[(part, bucket)],
                store.bucket_path(schema, values, bucket),
                tuple(sorted(unit.files, key=lambda f: (f.min_sequence_number, f.file_name))),
                unit.output_level,
                False,
                deletion_files=dvs.get((part, bucket), {}),
                order=order,
            )
        )
    return tasks


def _evolution_tasks(
    store: FileStore,
    schema: TableSchema,
    scanned: list[tuple[tuple[bytes, int], DataFileMeta]],
    values_of: dict[bytes, tuple],
    totals: dict[tuple[bytes, int], int],
    dvs: dict[tuple[bytes, int], dict[str, DeletionFile]],
) -> list[CompactTask]:
    """Per partition (an unaware bucket is the whole partition) Java's data-evolution tasks (:func:`pack_row_ranges`),
    at Java's option values: the open file cost counts at its 4 mb default unless the table sets it."""
    options = schema.core_options
    open_cost = (
        options.get(SOURCE_SPLIT_OPEN_FILE_COST)
        if options.is_set(SOURCE_SPLIT_OPEN_FILE_COST)
        else APPEND_COMPACT_OPEN_FILE_COST
    )
    groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for key, file in scanned:
        groups.setdefault(key, []).append(file)
    tasks = []
    for (part, bucket), files in sorted(groups.items()):
        values = values_of[part]
        for unit in pack_row_ranges(
            files,
            store.table_path,
            target_file_size=options.target_file_size(False),
            open_file_cost=open_cost,
            min_file_num=options.get(COMPACTION_MIN_FILE_NUM),
            with_vectors=set(dvs.get((part, bucket), {})),
        ):
            path = store.bucket_path(schema, values, bucket)
            tasks.append(CompactTask(part, values, bucket, totals[(part, bucket)], path, unit, 0, False))
    return tasks


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
