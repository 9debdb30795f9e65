"""Scan planning: which snapshot, which files, which splits.

Runs on the driver. The result is a :class:`ScanPlan` whose splits executors read. Planning prunes as early
as it can (manifest partition stats, then entry partitions, then buckets, then file statistics) and counts
what it skipped, so tests and users can see pruning happen without timing anything.
"""

from __future__ import annotations

import itertools
import math
import struct
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.manifests.deletion_vectors import DeletionFile, deletion_files, merge_on_read
from pyspark_paimon.metadata.manifests.index_manifest import IndexManifestEntry
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta, ManifestEntry, ManifestFileMeta, SkippedFiles
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.bucket import bucket_ids
from pyspark_paimon.metadata.schema.options import (
    BUCKET_FUNCTION_TYPE,
    CHANGELOG_PRODUCER,
    POSTPONE_BUCKET,
    SOURCE_SPLIT_OPEN_FILE_COST,
    SOURCE_SPLIT_TARGET_SIZE,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled, row_tracking_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.file_index_pruning import FileIndexPruner
from pyspark_paimon.planner.predicate import (
    Leaf,
    comparable_value,
    could_match_stats,
    eval_on_values,
    leaves_on,
    literal_array,
)
from pyspark_paimon.planner.row_ranges import RowIdFilter, row_id_groups
from pyspark_paimon.planner.split import DataSplit

# What decoding statistics written by any engine may raise. Pruning on statistics we cannot read is never
# done (the file is kept); anything else (a bug here) propagates instead of silently turning into a full scan.
_STATS_DECODE_ERRORS = (PaimonError, ValueError, OverflowError, struct.error)
# What hashing an Arrow column of predicate literals may raise for values that do not fit.
_LITERAL_ERRORS = (PaimonError, pa.ArrowException, TypeError, ValueError, OverflowError)


@dataclass
class ScanCounters:
    """What planning looked at and what each pruning level skipped (for explain output and tests).

    Levels, in the order they run: manifests (partition stats of the manifest list), postpone (a batch scan
    of a postpone-bucket table leaves out the ``bucket-postpone`` files, as Java's ``onlyReadRealBuckets``),
    partitions (exact partition predicate on entries), buckets (the bucket key fixed by ``=``/``IN``),
    row ids (row-tracking tables: a file's row-id range against a filter on ``_ROW_ID``), statistics (file
    min/max/null counts), index (bloom-filter and bitmap file indexes, embedded in the manifest or in index files:
    ``index_files_read`` counts the index files planning read, apart from data files, which planning never opens).
    ``*_skipped_<level>`` counts what that level dropped; files in skipped manifests are never opened, so they
    appear in no file counter. Entries of partitions the exact partition filter rejects are not decoded either:
    their files are counted from the entries' leading fields (ADDs minus DELETEs per bucket), so with deletion
    vectors they include the level-0 files a batch scan skips.
    """

    manifests_total: int = 0
    """Manifests of the snapshot."""
    manifests_skipped: int = 0
    """Manifests whose partition statistics exclude the filter (never opened)."""
    partitions_total: int = 0
    """Partitions planning saw in the opened manifests."""
    partitions_selected: int = 0
    """Partitions the exact partition filter keeps."""
    partitions_skipped: int = 0
    """Partitions it drops."""
    buckets_total: int = 0
    """Buckets of the selected partitions."""
    buckets_selected: int = 0
    """Buckets the bucket key (fixed by ``=`` / ``IN``) keeps."""
    buckets_skipped: int = 0
    """Buckets it drops."""
    files_total: int = 0
    """Data files in the opened manifests."""
    files_selected: int = 0
    """Data files the plan reads."""
    files_skipped_postpone: int = 0
    """Files of ``bucket-postpone`` a batch scan leaves out."""
    files_skipped_partition: int = 0
    """Files the partition filter drops."""
    files_skipped_bucket: int = 0
    """Files the bucket key drops."""
    files_skipped_row_ids: int = 0
    """Row-tracking tables: files whose row-id range (first row id, row count) excludes the filter on ``_ROW_ID``."""
    files_skipped_stats: int = 0
    """Files whose min/max/null-count statistics exclude the filter."""
    files_skipped_index: int = 0
    """Files whose bloom-filter or bitmap index excludes the filter."""
    index_files_read: int = 0
    """Index files planning read (apart from data files, which planning never opens)."""
    bytes_total: int = 0
    """Bytes of ``files_total``."""
    bytes_selected: int = 0
    """Bytes of ``files_selected``."""
    bytes_skipped_postpone: int = 0
    """Bytes of ``files_skipped_postpone``."""
    bytes_skipped_partition: int = 0
    """Bytes of ``files_skipped_partition``."""
    bytes_skipped_row_ids: int = 0
    """Bytes of ``files_skipped_row_ids``."""
    bytes_skipped_bucket: int = 0
    """Bytes of ``files_skipped_bucket``."""
    bytes_skipped_stats: int = 0
    """Bytes of ``files_skipped_stats``."""
    bytes_skipped_index: int = 0
    """Bytes of ``files_skipped_index``."""

    def as_dict(self) -> dict[str, int]:
        """Every counter by name (JSON-friendly)."""
        return dict(self.__dict__)


@dataclass
class ScanPlan:
    snapshot: Snapshot | None
    schema: TableSchema
    splits: list[DataSplit]
    counters: ScanCounters = field(default_factory=ScanCounters)
    notes: list[str] = field(default_factory=list)


def partition_values(entry_partition: bytes, schema: TableSchema, cache: dict[bytes, tuple]) -> tuple:
    values = cache.get(entry_partition)
    if values is None:
        values = tuple(deserialize_row(entry_partition, [f.type for f in schema.partition_fields]))
        cache[entry_partition] = values
    return values


class _PartitionSelector:
    """The exact partition filter of one scan (partition predicate and caller's ``partition_filter``) on
    serialized partitions, memoised per partition. Planning asks it before decoding entries
    (:meth:`FileStore.selected_entries`) and again for the decoded ones, with the same answers."""

    def __init__(
        self,
        schema: TableSchema,
        part_pred: Sequence[Leaf],
        partition_filter: Callable[[dict[str, Any]], bool] | None,
        values: dict[bytes, tuple],
    ):
        self.schema = schema
        self.names = [f.name for f in schema.partition_fields]
        self.pred = part_pred
        self.partition_filter = partition_filter
        self.values = values
        self.answers: dict[bytes, bool] = {}

    @property
    def active(self) -> bool:
        return bool(self.pred) or self.partition_filter is not None

    def __call__(self, partition: bytes) -> bool:
        ok = self.answers.get(partition)
        if ok is None:
            named = dict(zip(self.names, partition_values(partition, self.schema, self.values)))
            ok = (not self.pred or eval_on_values(self.pred, named)) and (
                self.partition_filter is None or self.partition_filter(named)
            )
            self.answers[partition] = ok
        return ok


def _manifest_may_match(meta: ManifestFileMeta, schema: TableSchema, pred: Sequence[Leaf]) -> bool:
    if not pred:
        return True
    types = [f.type for f in schema.partition_fields]
    stats = meta.partition_stats
    try:
        lows = deserialize_row(stats.min_values, types)
        highs = deserialize_row(stats.max_values, types)
    except _STATS_DECODE_ERRORS:  # stats absent or unreadable: never prune on them
        return True
    nulls = stats.null_counts or ()
    for i, f in enumerate(schema.partition_fields):
        for leaf in pred:
            if leaf.column != f.name:
                continue
            nc = nulls[i] if i < len(nulls) else None
            rows = meta.num_added_files + meta.num_deleted_files
            if not could_match_stats(
                leaf, lows[i] if i < len(lows) else None, highs[i] if i < len(highs) else None, nc, max(rows, 1)
            ):
                return False
    return True


# ------------------------------------------------------------------------------------------------------
# Bucket pruning (Java's `DefaultBucketFunction`)
# ------------------------------------------------------------------------------------------------------
# Types whose SQL equality is exactly equality of the BinaryRow bytes the writer hashed. Floats are out
# (0.0 = -0.0 but they hash differently; NaN), CHAR is out (padding), nested types have no hash here.
_BUCKET_PRUNABLE = {
    "TINYINT",
    "SMALLINT",
    "INT",
    "BIGINT",
    "BOOLEAN",
    "VARCHAR",
    "DATE",
    "DECIMAL",
    "TIMESTAMP",
    "TIMESTAMP_LTZ",
    "BINARY",
    "VARBINARY",
}
_MAX_BUCKET_COMBOS = 4096


def _key_values(pred: Sequence[Leaf], column: str) -> list[Any] | None:
    """The values ``column`` may take under ``pred`` (its ``=``/``<=>``/``IN`` leaves, intersected), or None."""
    allowed: list[Any] | None = None
    for leaf in pred:
        if leaf.column != column or leaf.negated:
            continue
        if leaf.op == "=" or (leaf.op == "<=>" and leaf.value is not None):
            vals = [] if leaf.value is None else [leaf.value]
        elif leaf.op == "in":
            vals = [v for v in leaf.value if v is not None]
        else:
            continue
        if allowed is None:
            allowed = _distinct(vals)
        else:
            allowed = _intersect(allowed, vals)
    return allowed


def _distinct(vals: list[Any]) -> list[Any]:
    """``vals`` without repeats, first spelling kept. Hashing the normalised values keeps it linear: a merge
    prunes by thousands of source keys, where pairwise comparison took seconds."""
    try:
        seen: dict[Any, Any] = {}
        for v in vals:
            seen.setdefault(comparable_value(v), v)
        return list(seen.values())
    except TypeError:  # an unhashable literal: compare pairwise
        out: list[Any] = []
        for v in vals:
            if not any(_same(v, a) for a in out):
                out.append(v)
        return out


def _intersect(allowed: list[Any], vals: list[Any]) -> list[Any]:
    try:
        wanted = {comparable_value(v) for v in vals}
        return [a for a in allowed if comparable_value(a) in wanted]
    except TypeError:
        return [a for a in allowed if any(_same(a, v) for v in vals)]


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(comparable_value(a) == comparable_value(b))
    except TypeError:
        return False


def _coerce_column(values: list[Any], f: Any) -> pa.Array | None:
    """``values`` as an Arrow array of the column's type, or None when any value does not fit exactly."""
    try:
        arrow_type = to_arrow_type(f.type, f.name)
    except PaimonError:  # a column type without an Arrow form: do not prune
        return None
    return literal_array(values, arrow_type)


class _BucketSelector:
    """Target buckets of a predicate that fixes the whole bucket key, per ``total_buckets``."""

    def __init__(self, schema: TableSchema, pred: Sequence[Leaf]):
        self.columns: list[pa.Array] | None = None
        self.types: list[Any] = []
        self._cache: dict[int, frozenset[int]] = {}
        if not pred or schema.core_options.get(BUCKET_FUNCTION_TYPE) != "default":
            return
        # Hash buckets: fixed, and the real buckets of a postpone table (each entry carries its count), as Java's
        # BucketSelectConverter.
        if schema.num_buckets <= 0 and not (schema.num_buckets == POSTPONE_BUCKET and schema.primary_keys):
            return
        keys = schema.bucket_keys
        if not keys or any(k in schema.partition_keys or not schema.has_field(k) for k in keys):
            return
        per_key: list[pa.Array] = []
        for k in keys:
            f = schema.field(k)
            if not isinstance(f.type, AtomicType) or f.type.root not in _BUCKET_PRUNABLE:
                return
            vals = _key_values(pred, k)
            if vals is None:
                return
            arr = _coerce_column(vals, f)
            if arr is None:
                return
            per_key.append(arr)
        combos = 1
        for arr in per_key:
            combos *= len(arr)
        if combos > _MAX_BUCKET_COMBOS:
            return
        # Cartesian product of the allowed values, column-wise (a handful of values: Python is fine here).
        idx = [list(range(len(a))) for a in per_key]
        rows = list(itertools.product(*idx))
        self.columns = [a.take(pa.array([r[i] for r in rows], pa.int64())) for i, a in enumerate(per_key)]
        self.types = [schema.field(k).type for k in keys]

    @property
    def active(self) -> bool:
        return self.columns is not None

    def buckets(self, total_buckets: int) -> frozenset[int] | None:
        """Buckets that may hold matching rows in a partition with ``total_buckets`` (None = all)."""
        if self.columns is None or total_buckets <= 0:
            return None
        hit = self._cache.get(total_buckets)
        if hit is None:
            if len(self.columns[0]) == 0:
                hit = frozenset()
            else:
                try:
                    hit = frozenset(int(b) for b in bucket_ids(self.columns, self.types, total_buckets))
                except _LITERAL_ERRORS:  # unsupported key type: do not prune
                    self._cache[total_buckets] = None  # type: ignore[assignment]
                    return None
            self._cache[total_buckets] = hit
        return hit


# ------------------------------------------------------------------------------------------------------
# File statistics (Java's `SimpleStatsConverter`)
# ------------------------------------------------------------------------------------------------------
def _base_type(t: Any) -> Any:
    try:
        return replace(t, nullable=True)
    except TypeError:
        return t


def _row_arity(data: bytes) -> int:
    return int.from_bytes(data[:4], "big") if len(data) >= 4 else -1


@dataclass
class _StatsLayout:
    """Where the stats of the predicate's columns sit in a file's stats rows (one per file schema/cols)."""

    types: list[Any]  # file types of every stats column, to decode the rows
    wanted: list[tuple[int, str]]  # (position in the stats row, current column name)


class _StatsPruner:
    """Decides per file whether any row could match, from key or value statistics; never guesses."""

    def __init__(self, store: FileStore, schema: TableSchema, pred: Sequence[Leaf], columns: Iterable[str]):
        self.store = store
        self.schema = schema
        cols = set(columns)
        self.pred = tuple(leaf for leaf in pred if leaf.column in cols)
        self.columns = {leaf.column for leaf in self.pred}
        self._layouts: dict[tuple, _StatsLayout | None] = {}

    @property
    def active(self) -> bool:
        return bool(self.pred)

    def _file_schema(self, schema_id: int) -> TableSchema | None:
        if schema_id == self.schema.id:
            return self.schema
        try:
            return self.store.schemas.schema(schema_id)
        except PaimonError:  # unknown schema: no stats (reading the file reports it)
            return None

    def _layout(self, schema_id: int, stats_names: tuple[str, ...] | None, key: bool) -> _StatsLayout | None:
        cache_key = (schema_id, stats_names, key)
        if cache_key in self._layouts:
            return self._layouts[cache_key]
        layout = None
        fs = self._file_schema(schema_id)
        if fs is not None:
            try:
                if key:
                    file_fields = [fs.field(n) for n in fs.trimmed_primary_keys]
                elif stats_names is None:
                    file_fields = list(fs.fields)
                else:
                    file_fields = [fs.field(n) for n in stats_names]
                current = {f.id: f for f in self.schema.fields}
                wanted = []
                for pos, ff in enumerate(file_fields):
                    cf = current.get(ff.id)
                    if cf is None or cf.name not in self.columns:
                        continue
                    if not isinstance(ff.type, AtomicType) or _base_type(ff.type) != _base_type(cf.type):
                        continue  # type changed since the file was written: its stats say nothing reliable
                    wanted.append((pos, cf.name))
                layout = _StatsLayout([f.type for f in file_fields], wanted) if wanted else None
            except PaimonError:  # unknown column in the stats list: do not prune
                layout = None
        self._layouts[cache_key] = layout
        return layout

    def may_match(self, f: DataFileMeta, key: bool) -> bool:
        """False only when the ``key`` (trimmed PK) or value statistics prove no row of ``f`` matches."""
        if not self.pred:
            return True
        if key:
            stats, names = f.key_stats, None
        else:
            stats, names = f.value_stats, (None if f.value_stats_cols is None else tuple(f.value_stats_cols))
            if names is not None and not names:
                return True  # [] = no column has statistics
        layout = self._layout(f.schema_id, names, key)
        if layout is None:
            return True
        n = len(layout.types)
        if _row_arity(stats.min_values) != n or _row_arity(stats.max_values) != n:
            return True
        try:
            lows = deserialize_row(stats.min_values, layout.types)
            highs = deserialize_row(stats.max_values, layout.types)
        except _STATS_DECODE_ERRORS:  # unreadable stats: never prune on them
            return True
        nulls = stats.null_counts
        for pos, name in layout.wanted:
            nc = nulls[pos] if nulls is not None and pos < len(nulls) else None
            for leaf in self.pred:
                if leaf.column == name and not could_match_stats(leaf, lows[pos], highs[pos], nc, f.row_count):
                    return False
        return True


class ScanPlanner:
    """Plans a batch read of one snapshot of one branch.

    ``pk_value_skipping`` allows skipping primary-key files by *value* statistics in raw-convertible buckets
    (each key in exactly one file). Incremental reads turn it off: their files may overlap in key even when
    the bucket looks raw-convertible.

    ``streaming``: the planner serves a stream. Batch scans of a postpone-bucket table (``bucket = -2``) read
    only the real buckets, as Java's batch scans do (``AbstractBatchTableScan`` calls ``onlyReadRealBuckets``):
    records still in ``bucket-postpone`` become visible when Paimon's postpone compaction moves them into
    buckets. Streams do as Java's ``DataTableStreamScan``: with a changelog producer they read only the real
    buckets too (the move into buckets produces the changelog they follow); without one they keep the postpone
    bucket, whose files are the stream's only sight of the rows until a compaction moves them (a COMPACT
    snapshot, which such streams skip).
    """

    def __init__(
        self,
        store: FileStore,
        schema: TableSchema,
        options: dict[str, str] | None = None,
        pk_value_skipping: bool = True,
        streaming: bool = False,
    ):
        self.store = store
        self.schema = schema
        self.options = options or {}
        self.pk_value_skipping = pk_value_skipping
        self.streaming = streaming

    @property
    def only_real_buckets(self) -> bool:
        """Whether this scan leaves out the postpone bucket's files (a ``bucket = -2`` table's batch scan, or its
        stream when it has a changelog producer)."""
        options = CoreOptions({**self.schema.options, **self.options})
        if options.bucket != POSTPONE_BUCKET:
            return False
        return not self.streaming or options.get(CHANGELOG_PRODUCER) != "none"

    def plan(
        self,
        snapshot: Snapshot | None,
        predicate: Sequence[Leaf] = (),
        partition_filter: Callable[[dict[str, Any]], bool] | None = None,
    ) -> ScanPlan:
        """Live files of ``snapshot`` grouped into splits, pruned by ``predicate`` and ``partition_filter``."""
        counters = ScanCounters()
        if snapshot is None:
            return ScanPlan(None, self.schema, [], counters)
        part_names = [f.name for f in self.schema.partition_fields]
        part_pred = leaves_on(predicate, part_names)
        metas = self.store.data_manifests(snapshot, cached=True)
        counters.manifests_total = len(metas)
        kept = [m for m in metas if _manifest_may_match(m, self.schema, part_pred)]
        counters.manifests_skipped = len(metas) - len(kept)
        # Deletes in skipped manifests can only cancel adds of the same partition, which the same stats
        # exclude, so pruning whole manifests cannot resurrect a deleted file.
        selector = _PartitionSelector(self.schema, part_pred, partition_filter, {})
        skipped = None
        entries: Iterable[ManifestEntry]
        if selector.active:  # entries of other partitions are never decoded (nor cached decoded)
            entries, skipped = self.store.selected_entries(kept, selector, cached=True)
        else:
            entries = self.store.live_entries(snapshot, kept, cached=True)
        if not self._deletion_vectors:
            return self.plan_entries(
                entries, predicate, partition_filter, counters, snapshot, skipped=skipped, selector=selector
            )
        if (
            self.schema.primary_keys
            and not self.streaming
            and not merge_on_read({**self.schema.options, **self.options})
        ):
            # Java's batch scans of deletion-vector tables skip level 0 (CoreOptions.batchScanSkipLevel0,
            # AbstractBatchTableScan): data not yet compacted is invisible unless merge-on-read is set. A stream's
            # first (full) plan reads every level (DataTableStreamScan.tryFirstPlan): a stream starting at the
            # APPEND snapshot of a write, before its COMPACT, must not lose that write (the delta phase skips
            # COMPACT snapshots).
            entries = [e for e in entries if e.file.level > 0]
        plan = self.plan_entries(
            entries,
            predicate,
            partition_filter,
            counters,
            snapshot,
            deletion_vectors=True,
            skipped=skipped,
            selector=selector,
        )
        plan.splits = self.with_deletion_files(plan.splits, snapshot.index_manifest)
        return plan

    @property
    def _data_evolution(self) -> bool:
        return data_evolution_enabled(self.schema.options)

    @property
    def _deletion_vectors(self) -> bool:
        return CoreOptions({**self.schema.options, **self.options}).deletion_vectors_enabled

    def deletion_files_of(self, index_manifest: str | None) -> dict[tuple[bytes, int], dict[str, DeletionFile]]:
        """The deletion file of every data file that has one in a snapshot's index manifest (none without)."""
        if not index_manifest:
            return {}
        in_bucket_dir = (
            str(
                self.options.get(
                    "index-file-in-data-file-dir", self.schema.options.get("index-file-in-data-file-dir", "")
                )
            )
            .strip()
            .lower()
            == "true"
        )
        index_dir = f"{self.store.table_path}/index"
        cache: dict[bytes, tuple] = {}

        def index_path(e: IndexManifestEntry) -> str:
            if in_bucket_dir:
                values = partition_values(e.partition, self.schema, cache)
                return f"{self.store.bucket_path(self.schema, values, e.bucket)}/{e.file_name}"
            return f"{index_dir}/{e.file_name}"

        return deletion_files(self.store.fileio, self.store.manifests.path(index_manifest), index_path)

    def with_deletion_files(self, splits: list[DataSplit], index_manifest: str | None) -> list[DataSplit]:
        """``splits`` with the deletion file each of their data files has in ``index_manifest`` (a snapshot's)."""
        vectors = self.deletion_files_of(index_manifest)
        if not vectors:
            return splits
        out = []
        for s in splits:
            found = vectors.get((s.partition, s.bucket), {})
            out.append(
                replace(s, deletion_files={f.file_name: found[f.file_name] for f in s.files if f.file_name in found})
            )
        return out

    def plan_entries(
        self,
        entries: Iterable[ManifestEntry],
        predicate: Sequence[Leaf] = (),
        partition_filter: Callable[[dict[str, Any]], bool] | None = None,
        counters: ScanCounters | None = None,
        snapshot: Snapshot | None = None,
        deletion_vectors: bool = False,
        skipped: SkippedFiles | None = None,
        selector: _PartitionSelector | None = None,
    ) -> ScanPlan:
        """Splits of ``entries``. ``deletion_vectors``: the caller attaches every file's deletion vector, so a
        PK bucket above level 0 is raw-convertible whatever its levels (without them, overlapping levels must
        be merged: incremental reads of a deletion-vector table take this path). ``skipped``: the live files
        of the partitions left out of ``entries`` undecoded, by ``selector`` (the same filter), for the
        counters."""
        counters = counters or ScanCounters()
        schema = self.schema
        part_names = [f.name for f in schema.partition_fields]
        part_pred = leaves_on(predicate, part_names)
        bucket_selector = _BucketSelector(schema, predicate)
        if selector is None:
            selector = _PartitionSelector(schema, part_pred, partition_filter, {})
        cache = selector.values
        answers = selector.answers  # read inline: this loop runs once per live file of the table
        groups: dict[tuple[bytes, int], list[DataFileMeta]] = {}
        total_buckets: dict[tuple[bytes, int], int] = {}
        seen_partitions: set[bytes] = set()
        selected_partitions: set[bytes] = set()
        seen_buckets: set[tuple[bytes, int]] = set()
        skipped_buckets: set[tuple[bytes, int]] = set()
        real_only = self.only_real_buckets
        for e in entries:
            size = e.file.file_size
            counters.files_total += 1
            counters.bytes_total += size
            if real_only and e.bucket < 0:
                counters.files_skipped_postpone += 1
                counters.bytes_skipped_postpone += size
                continue
            seen_partitions.add(e.partition)
            seen_buckets.add((e.partition, e.bucket))
            ok = answers.get(e.partition)
            if ok is None:
                ok = selector(e.partition)
            if not ok:
                counters.files_skipped_partition += 1
                counters.bytes_skipped_partition += size
                continue
            selected_partitions.add(e.partition)
            if bucket_selector.active and e.bucket >= 0:
                targets = bucket_selector.buckets(e.total_buckets)
                if targets is not None and e.bucket not in targets:
                    skipped_buckets.add((e.partition, e.bucket))
                    counters.files_skipped_bucket += 1
                    counters.bytes_skipped_bucket += size
                    continue
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
            total_buckets[(e.partition, e.bucket)] = e.total_buckets
        for part, bucket, count, size in skipped.live() if skipped is not None else ():
            counters.files_total += count
            counters.bytes_total += size
            if real_only and bucket < 0:
                counters.files_skipped_postpone += count
                counters.bytes_skipped_postpone += size
                continue
            counters.files_skipped_partition += count
            counters.bytes_skipped_partition += size
            seen_partitions.add(part)
            seen_buckets.add((part, bucket))
        counters.partitions_total = len(seen_partitions)
        counters.partitions_selected = len(selected_partitions)
        counters.partitions_skipped = len(seen_partitions) - len(selected_partitions)
        counters.buckets_total = len(seen_buckets)
        counters.buckets_skipped = len(skipped_buckets)
        non_part = [leaf for leaf in predicate if leaf.column not in set(part_names)]
        if schema.primary_keys:
            keys = schema.trimmed_primary_keys or schema.primary_keys
            key_pruner = _StatsPruner(self.store, schema, non_part, [k for k in keys if k not in part_names])
            value_pruner = _StatsPruner(
                self.store,
                schema,
                non_part if self.pk_value_skipping else (),
                [f.name for f in schema.fields if f.name not in part_names],
            )
        else:
            key_pruner = _StatsPruner(self.store, schema, (), ())
            value_pruner = _StatsPruner(
                self.store, schema, non_part, [f.name for f in schema.fields if f.name not in part_names]
            )
        # A filter on _ROW_ID skips files by their row-id range (a data-evolution group's files share one range).
        row_ids = RowIdFilter.of(non_part) if row_tracking_enabled(schema.options) else None
        part_dirs: dict[bytes, str] = {}
        order = {part: repr(values) for part, values in cache.items()}
        kept_groups: list[tuple[bytes, int, list[DataFileMeta], str]] = []
        for (part, bucket), files in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
            files.sort(key=lambda f: (f.level, f.min_sequence_number, f.file_name))
            if row_ids is not None:
                in_range = [f for f in files if row_ids.may_match(f)]
                counters.files_skipped_row_ids += len(files) - len(in_range)
                counters.bytes_skipped_row_ids += sum(f.file_size for f in files) - sum(f.file_size for f in in_range)
                files = in_range
            kept = self._skip_files(files, key_pruner, value_pruner, counters, deletion_vectors)
            if not kept:
                continue
            part_dir = part_dirs.get(part)
            if part_dir is None:
                part_dir = part_dirs[part] = self.store.partition_dir(schema, cache[part])
            kept_groups.append((part, bucket, kept, self.store.bucket_in(part_dir, bucket)))
        kept_groups = self._skip_by_index(kept_groups, non_part, counters, deletion_vectors)
        splits = []
        for part, bucket, kept, path in kept_groups:
            splits.extend(
                self._make_splits(
                    part, cache[part], bucket, total_buckets[(part, bucket)], kept, path, deletion_vectors
                )
            )
        counters.buckets_selected = len(kept_groups)
        counters.files_selected = sum(len(s.files) for s in splits)
        counters.bytes_selected = sum(s.size_bytes for s in splits)
        return ScanPlan(snapshot, schema, splits, counters)

    def _skip_files(
        self,
        files: list[DataFileMeta],
        key_pruner: _StatsPruner,
        value_pruner: _StatsPruner,
        counters: ScanCounters,
        deletion_vectors: bool = False,
    ) -> list[DataFileMeta]:
        """The files of one bucket that statistics cannot exclude.

        Append files are independent, so value statistics decide alone. In a primary-key bucket every version
        of a key carries the key, so key statistics may drop files; value statistics may drop a file only when
        the bucket is raw-convertible (each key lives in exactly one file), otherwise dropping an old version's
        file could not change the result but dropping the newest version's file would resurrect an old one.
        """
        if (not key_pruner.active and not value_pruner.active) or self._data_evolution:
            # A data-evolution file's statistics cover the columns it wrote, whose values a newer file of the same
            # rows may have replaced: only the whole row-id group could be judged, so nothing is skipped.
            return files
        if not self.schema.primary_keys:
            kept = [f for f in files if value_pruner.may_match(f, key=False)]
        else:
            kept = [f for f in files if key_pruner.may_match(f, key=True)] if key_pruner.active else files
            if value_pruner.active and kept and _raw_convertible(kept, deletion_vectors):
                kept = [f for f in kept if value_pruner.may_match(f, key=False)]
        if len(kept) != len(files):
            dropped = len(files) - len(kept)
            counters.files_skipped_stats += dropped
            counters.bytes_skipped_stats += sum(f.file_size for f in files) - sum(f.file_size for f in kept)
        return kept

    def _skip_by_index(
        self,
        groups: list[tuple[bytes, int, list[DataFileMeta], str]],
        pred: Sequence[Leaf],
        counters: ScanCounters,
        deletion_vectors: bool,
    ) -> list[tuple[bytes, int, list[DataFileMeta], str]]:
        """``groups`` (partition, bucket, files, bucket directory) without the files whose file index excludes
        ``pred``, by the rule of value statistics: any append file, primary-key files only in buckets where each
        key lives in one file (raw-convertible). One pass over all buckets, so index files load in parallel."""
        pruner = FileIndexPruner(self.store, self.schema, pred, self.options)
        if not pruner.active or self._data_evolution:  # as for statistics (_skip_files)
            return groups
        candidates = [
            (f, path)
            for _, _, files, path in groups
            if not self.schema.primary_keys or (self.pk_value_skipping and _raw_convertible(files, deletion_vectors))
            for f in files
        ]
        excluded = pruner.prune(candidates)
        counters.index_files_read += pruner.counters.index_files_read
        if not excluded:
            return groups
        counters.files_skipped_index += pruner.counters.files_skipped
        counters.bytes_skipped_index += pruner.counters.bytes_skipped
        out = []
        for part, bucket, files, path in groups:
            kept = [f for f in files if f.file_name not in excluded]
            if kept:
                out.append((part, bucket, kept, path))
        return out

    def _make_splits(
        self,
        part: bytes,
        values: tuple,
        bucket: int,
        total_buckets: int,
        files: list[DataFileMeta],
        path: str,
        deletion_vectors: bool = False,
    ) -> list[DataSplit]:
        if self._data_evolution:
            # The files of one row-id range make one row each: read together, newest first (planner/row_ranges.py).
            return [
                DataSplit(part, values, bucket, total_buckets, group, path, len(group) == 1)
                for group in row_id_groups(files, self.store.table_path)
            ]
        if not self.schema.primary_keys:
            # Append files are independent: one split each, so packing can spread them over every core.
            return [DataSplit(part, values, bucket, total_buckets, (f,), path, True) for f in files]
        if bucket == POSTPONE_BUCKET:
            # A stream's postpone bucket (batch scans skip it): Java reads it without merging (its rows carry no
            # sequence numbers), which is a raw read here while no row is a retraction.
            raw = all(f.delete_row_count == 0 for f in files)
        else:
            raw = _raw_convertible(files, deletion_vectors)
        return [DataSplit(part, values, bucket, total_buckets, tuple(files), path, raw)]


def _raw_convertible(files: Sequence[DataFileMeta], deletion_vectors: bool = False) -> bool:
    """A PK bucket readable without merging (Java's ``MergeTreeSplitGenerator.splitForBatch``): every file
    above level 0 without retract rows, and all in one level unless deletion vectors are on (then each key has
    exactly one position not deleted, whatever the levels)."""
    return (
        all(f.level > 0 for f in files)
        and all(f.delete_row_count == 0 or (deletion_vectors and f.delete_row_count is None) for f in files)
        and (deletion_vectors or len({f.level for f in files}) == 1)
    )


def split_target_size(table_options: Mapping[str, str], read_options: Mapping[str, str]) -> int:
    """``source.split.target-size``: the read's value, else the table's, else the default."""
    read = CoreOptions(read_options)
    chosen = read if read.is_set(SOURCE_SPLIT_TARGET_SIZE) else CoreOptions(table_options)
    return chosen.get(SOURCE_SPLIT_TARGET_SIZE)


def split_open_file_cost(table_options: Mapping[str, str], read_options: Mapping[str, str]) -> int:
    """``source.split.open-file-cost``: the read's value, else the table's, else our default (64 KB, not Java's
    4 MB: see :func:`pack_splits`)."""
    read = CoreOptions(read_options)
    chosen = read if read.is_set(SOURCE_SPLIT_OPEN_FILE_COST) else CoreOptions(table_options)
    return chosen.get(SOURCE_SPLIT_OPEN_FILE_COST)


def split_packing(
    table_options: Mapping[str, str], target_size: int | None = None, open_file_cost: int | None = None
) -> tuple[int, int]:
    """(``source.split.target-size``, ``source.split.open-file-cost``) of a batch read or a stream: the read's
    own parsed values where given, else the table's, else the defaults."""
    return (
        split_target_size(table_options, {}) if target_size is None else target_size,
        split_open_file_cost(table_options, {}) if open_file_cost is None else open_file_cost,
    )


def split_weight(size_bytes: int, file_count: int, open_file_cost: int) -> int:
    """What a split (or a stream's bucket of splits) counts for when packing: its bytes, but at least
    ``open_file_cost`` per file, because opening a file costs time however little it holds."""
    return max(size_bytes, open_file_cost * max(file_count, 1))


def pack_splits(
    splits: Sequence[DataSplit],
    target_size: int,
    open_file_cost: int = SOURCE_SPLIT_OPEN_FILE_COST.default_value,
    max_groups: int | None = None,
    min_groups: int = 1,
) -> list[list[DataSplit]]:
    """Pack splits into few groups of about ``target_size`` bytes each (one Spark task per group).

    Every Python task costs ~30 ms, so many small splits must share a task; but fewer groups than
    ``min_groups`` (the cores) would leave cores idle, so small reads still get one group per core while
    they have splits to spread. A greedy longest-first packing into the least-loaded group keeps groups
    balanced.

    Each split weighs :func:`split_weight`. The default open-file cost is 64 KB, not Java's 4 MB: a Python task
    opens a small Parquet file in ~0.7 ms and reads ~95 MB/s of file bytes, so a file costs what ~64 KB of data
    does. At 4 MB a 128 MB task held 32 tiny files, ~25 ms of work for ~30 ms of task start; at 64 KB it holds
    2,048, and files of 4 MB and more weigh their size under either cost, so big reads pack as Java's do.
    """
    weights = [split_weight(s.size_bytes, len(s.files), open_file_cost) for s in splits]
    return [[splits[i] for i in group] for group in pack_weights(weights, target_size, max_groups, min_groups)]


def pack_weights(
    weights: Sequence[int], target_size: int, max_groups: int | None = None, min_groups: int = 1
) -> list[list[int]]:
    """The packing of :func:`pack_splits` on bare weights: groups of item indices (each group in input order)."""
    if not weights:
        return []
    n = max(1, math.ceil(sum(weights) / max(target_size, 1)), min_groups)
    n = min(n, len(weights))
    if max_groups is not None:
        n = max(1, min(n, max_groups))
    groups: list[list[int]] = [[] for _ in range(n)]
    loads = [0] * n
    for idx in sorted(range(len(weights)), key=lambda i: -weights[i]):
        j = loads.index(min(loads))
        groups[j].append(idx)
        loads[j] += weights[idx]
    return [sorted(g) for g in groups if g]
