"""Merging the files of a primary-key split per key-overlap section (Java's ``MergeFileSplitRead``,
``IntervalPartition`` and ``MergeFunction`` wrappers).

* **Sections** (:func:`key_sections`): files whose key ranges overlap form a section. A section of one file is
  streamed (a data file holds one row per key; only its retractions may have to go); a section of several files
  is read whole, sorted into Java's merge order and merged with the table's merge engine
  (:mod:`pyspark_paimon.datasource.merge.merge`). How a split's sections merge (engine, options, value columns,
  sequence order, retractions, key order) is one :class:`_MergeSpec`, built once per read.
* **Bounded memory**: a section larger than ``ReadContext.merge_window_bytes`` is merged window by window on the
  first key column (:func:`~pyspark_paimon.datasource.read.file_read.plan_windows`). All records of a key share
  its first-column value, so each key is merged whole in exactly one window and the output equals the
  whole-section merge.
* **Lookup tables** (:func:`_lookup_merge`): with ``changelog-producer = lookup`` or ``force-lookup`` only the
  newest record above level 0 of a key takes part, as in Java's ``LookupMergeFunction``.
* :func:`read_merged` is what compaction rewrites; :func:`merge_records` merges records a caller read itself
  (:mod:`~pyspark_paimon.datasource.read.key_probes`) exactly as a read would.

This module never imports pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.merge import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    deduplicated_rows,
    is_retract,
    keys_strictly_increasing,
    merge_sorted,
    sort_for_merge,
)
from pyspark_paimon.datasource.read.file_read import plan_windows, read_data_file, read_window, stream_data_file
from pyspark_paimon.datasource.read.read_context import ReadColumns, ReadContext, ReadMetrics
from pyspark_paimon.errors import PaimonError, SchemaError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import CHANGELOG_PRODUCER, FORCE_LOOKUP, CoreOptions
from pyspark_paimon.metadata.types.model import DataType
from pyspark_paimon.planner.sections import decoded_key_range
from pyspark_paimon.planner.sections import key_sections as _key_sections
from pyspark_paimon.planner.split import DataSplit

__all__ = [
    "java_order",
    "key_sections",
    "merge_records",
    "merged_sections",
    "oldest_first",
    "read_merged",
    "without_retracts",
]

_RANK = "__paimon_chain_rank__"


def key_sections(files: Sequence[DataFileMeta], key_types: Any) -> list[list[DataFileMeta]]:
    """Key-overlap sections of ``files``; ``key_types(file)`` gives the trimmed-PK types of its keys."""
    return _key_sections(files, lambda f: decoded_key_range(f, key_types(f)))


def without_retracts(data: pa.Table) -> pa.Table:
    """``data`` without its retraction rows (``_VALUE_KIND`` -U or -D): what a merged key ending in one reads."""
    kinds = np.asarray(data.column(VALUE_KIND).to_numpy(), dtype=np.int8)
    retract = is_retract(kinds)
    return data.filter(pa.array(~retract)) if retract.any() else data


def read_merged(
    ctx: ReadContext, split: DataSplit, drop_retracts: bool, metrics: ReadMetrics | None = None
) -> Iterator[pa.Table]:
    """The merged records of a primary-key ``split`` with their ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND``, in key
    order, one table per key-overlap section (or merge window): what compaction rewrites. Every column of
    ``ctx.schema`` is read (in read types; ``ctx.read_fields`` must be None). With ``drop_retracts`` keys whose
    merged record is a retraction disappear (Java's ``dropDelete``); without, they stay, so that they still
    shadow older versions in files outside the compaction. Deletion vectors in the split are applied."""
    if ctx.read_fields is not None:
        raise SchemaError("read_merged reads whole records; build its ReadContext without read_fields.")
    plan = ReadColumns.of(ctx, None)
    yield from merged_sections(ctx, split, plan, drop_retracts, metrics or ReadMetrics())


def oldest_first(split: DataSplit, files: Iterable[DataFileMeta]) -> list[DataFileMeta]:
    """``files`` in merge order, oldest first (a chain read's file rank, then sequence numbers), so records that
    tie on every sort key keep the older one first."""
    ranks = split.file_ranks
    return sorted(files, key=lambda f: (ranks.get(f.file_name, 0), f.max_sequence_number, f.min_sequence_number))


def merge_records(
    ctx: ReadContext,
    split: DataSplit,
    tables: Sequence[pa.Table],
    drop_retracts: bool,
    files: Sequence[DataFileMeta] | None = None,
) -> pa.Table:
    """Merge records read by :func:`~pyspark_paimon.datasource.read.key_probes.read_records` (``tables`` oldest
    first, so full ties keep the older one first) with the table's merge engine, in key order: one key-overlap
    section merged in memory.

    ``files``: the file each table was read from (:func:`oldest_first` order), when the tables are the files'
    records as a read sees them; the read's rule for lookup tables then applies too (only the newest record
    above level 0 of a key takes part, :func:`_lookup_merge`), so the result is what
    :func:`~pyspark_paimon.datasource.read.read.read_split` merges."""
    plan = ReadColumns.of(ctx, None)
    spec = _MergeSpec.of(ctx, split, plan, ReadMetrics(), drop_retracts)
    ordered = split.files if files is None else files
    tables = list(tables)
    if files is not None and _lookup_merge(spec.options):
        tables = _newest_high_level_only(plan.key_names, plan.seq_fields, spec.descending, files, tables)
    return _sort_and_merge(spec, ordered, ordered, tables)


def merged_sections(
    ctx: ReadContext,
    split: DataSplit,
    plan: ReadColumns,
    drop_retracts: bool,
    metrics: ReadMetrics,
    key_order: bool = True,
) -> Iterator[pa.Table]:
    """Merged records of each key-overlap section of ``split`` (system columns kept), in key order unless
    ``key_order`` is False (a read, which may then pass untouched rows of a big file through unsorted)."""
    spec = _MergeSpec.of(ctx, split, plan, metrics, drop_retracts, key_order)
    system = (SEQUENCE_NUMBER, VALUE_KIND)
    key_fields = [ctx.schema.field(n) for n in plan.key_names]

    def key_types(f: DataFileMeta) -> list[DataType]:
        file_schema = ctx.file_schema(split, f)
        by_id = {fld.id: fld for fld in file_schema.fields}
        return [by_id[k.id].type if k.id in by_id else k.type for k in key_fields]

    for section in key_sections(split.files, key_types):
        if len(section) == 1:
            # A data file holds one row per key, already merged; only its retractions may have to go. Its rows
            # are final, so row groups the pushed predicate rules out are skipped as in a raw read (compaction
            # pushes none, so it reads every row).
            for data in stream_data_file(ctx, split, section[0], plan.read_fields, system, skip_row_groups=metrics):
                yield without_retracts(data) if drop_retracts else data
            continue
        ordered = oldest_first(split, section)
        windows = None
        if sum(f.file_size for f in ordered) > ctx.merge_window_bytes:
            windows = plan_windows(ctx, split, plan, ordered)
        if windows is None:
            tables = [read_data_file(ctx, split, f, plan.read_fields, system) for f in ordered]
            yield _merge_tables(spec, section, ordered, tables)
            continue
        metrics.windowed_sections += 1
        for lo, hi, per_file in windows:
            tables = [read_window(ctx, split, plan, f, rgs, lo, hi, system) for f, rgs in zip(ordered, per_file)]
            if not any(t.num_rows for t in tables):
                continue
            yield _merge_tables(spec, section, ordered, tables)


@dataclass(frozen=True)
class _MergeSpec:
    """How the sections of one split are merged: the same for every section (and window) of a read, so it is
    built once per read (:meth:`of`) and handed to each section's merge with the section's files and tables.

    ``value_names``: the columns the merge engine merges (neither key nor primary key); ``descending``: the
    sequence fields order newest first; ``drop_retracts``: keys whose merged record is a retraction disappear;
    ``key_order``: the output must be in key order (compaction), else rows of a big file no other file touches
    may pass through unsorted (a read). ``metrics`` counts the merges.
    """

    ctx: ReadContext
    split: DataSplit
    plan: ReadColumns
    engine: str
    options: Mapping[str, str]
    value_names: list[str]
    descending: bool
    metrics: ReadMetrics
    drop_retracts: bool = True
    key_order: bool = True

    @classmethod
    def of(
        cls,
        ctx: ReadContext,
        split: DataSplit,
        plan: ReadColumns,
        metrics: ReadMetrics,
        drop_retracts: bool,
        key_order: bool = True,
    ) -> "_MergeSpec":
        """The merge of ``split``'s sections under the read schema's options overlaid by ``ctx.options``."""
        options = ctx.merge_options()
        core_options = CoreOptions(options)
        pk = list(ctx.schema.primary_keys)
        value_names = [f.name for f in plan.read_fields if f.name not in plan.key_names and f.name not in pk]
        return cls(
            ctx,
            split,
            plan,
            core_options.merge_engine,
            options,
            value_names,
            core_options.sequence_descending,
            metrics,
            drop_retracts,
            key_order,
        )


def _merge_tables(
    spec: _MergeSpec, section: Sequence[DataFileMeta], ordered: Sequence[DataFileMeta], tables: list[pa.Table]
) -> pa.Table:
    """Concatenate ``tables`` (one per file of ``ordered``), sort into merge order and merge."""
    plan = spec.plan
    if _lookup_merge(spec.options):
        tables = _newest_high_level_only(plan.key_names, plan.seq_fields, spec.descending, ordered, tables)
    untouched = None
    if not spec.key_order and spec.drop_retracts:
        untouched, tables = _split_untouched(plan.key_names, tables)
    merged = _sort_and_merge(spec, section, ordered, tables)
    if untouched is None or not untouched.num_rows:
        return merged
    return pa.concat_tables([without_retracts(untouched), merged.select(untouched.column_names)])


def java_order(table: pa.Table, order: Sequence[tuple[str, str]]) -> pa.Array:
    """Row indices of ``table`` sorted by ``order`` ((column, "ascending"/"descending") pairs) with NULLs first,
    as Java's comparators order a NULL sequence field (Arrow's default puts them last)."""
    keys: list[tuple[str, str]] = []
    columns = {}
    for i, (name, direction) in enumerate(order):
        column = table.column(name)
        if column.null_count:
            valid = f"__paimon_valid_{i}__"
            columns[valid] = pc.is_valid(column)
            keys.append((valid, direction))
        keys.append((name, direction))
    if columns:
        table = table.select(list(dict.fromkeys(n for n, _ in order)))
        for name, column in columns.items():
            table = table.append_column(name, column)
    return pc.sort_indices(table, sort_keys=keys)


def _lookup_merge(options: Mapping[str, str]) -> bool:
    """Whether the table merges as Java's ``LookupMergeFunction`` does (``changelog-producer = lookup`` or
    ``force-lookup``, without deletion vectors, not ``first-row``): its lookup compaction writes a key's merged
    state above level 0 while older versions stay in higher levels, so only the newest record above level 0
    may take part in a merge (an aggregation would otherwise count the older state twice)."""
    core = CoreOptions(options)
    return (
        (core.get(CHANGELOG_PRODUCER) == "lookup" or bool(core.get(FORCE_LOOKUP)))
        and core.merge_engine != "first-row"
        and not core.deletion_vectors_enabled
    )


_HIGH_TABLE, _HIGH_ROW = "__paimon_high_table__", "__paimon_high_row__"


def _newest_high_level_only(
    key_names: Sequence[str],
    seq: Sequence[str],
    descending: bool,
    ordered: Sequence[DataFileMeta],
    tables: list[pa.Table],
) -> list[pa.Table]:
    """``tables`` without the records above level 0 that a newer record above level 0 supersedes (see
    :func:`_lookup_merge`); level-0 records all stay. Newer: later in Java's merge order (the sequence fields
    ``seq``, then the sequence number)."""
    high = [i for i, f in enumerate(ordered) if f.level > 0 and tables[i].num_rows]
    if len(high) < 2:
        return tables
    names = list(dict.fromkeys([*key_names, *seq, SEQUENCE_NUMBER]))
    parts = [
        tables[i]
        .select(names)
        .append_column(_HIGH_TABLE, pa.array(np.full(tables[i].num_rows, i, dtype=np.int32)))
        .append_column(_HIGH_ROW, pa.array(np.arange(tables[i].num_rows, dtype=np.int64)))
        for i in high
    ]
    direction = "descending" if descending else "ascending"
    order = [*((f, direction) for f in seq), (SEQUENCE_NUMBER, "ascending")]
    ranked = pa.concat_tables(parts, promote_options="permissive")
    ranked = ranked.take(java_order(ranked, order))
    rank = "__paimon_high_rank__"
    ranked = ranked.append_column(rank, pa.array(np.arange(ranked.num_rows, dtype=np.int64)))
    newest = ranked.group_by(list(key_names), use_threads=False).aggregate([(rank, "max")])
    chosen = ranked.take(newest.column(f"{rank}_max"))
    which = np.asarray(chosen.column(_HIGH_TABLE).to_numpy(), dtype=np.int32)
    rows = np.asarray(chosen.column(_HIGH_ROW).to_numpy(), dtype=np.int64)
    out = list(tables)
    for i in high:
        keep = np.zeros(tables[i].num_rows, dtype=bool)
        keep[rows[which == i]] = True
        if not keep.all():
            out[i] = tables[i].filter(pa.array(keep))
    return out


def _split_untouched(key_names: Sequence[str], tables: list[pa.Table]) -> tuple[pa.Table | None, list[pa.Table]]:
    """(rows of the biggest table whose key no other table holds, the tables without them).

    A big sorted run overlaid by a few small newer ones (a chain anchor and its deltas, a compacted bucket and
    today's commits) needs no sort for the keys only it holds: a key with one record keeps that record under
    every merge engine (Java's ``ReducerMergeFunctionWrapper``), and one file holds each key once. Only the keys
    the small tables touch are sorted and merged, the rest pass through (and so out of key order). Applies
    when the others hold at most a quarter of the biggest's rows, the key is one non-float column and the
    biggest table is strictly ordered by it (which proves its keys unique)."""
    if len(key_names) != 1 or len(tables) < 2:
        return None, tables
    big = max(range(len(tables)), key=lambda i: tables[i].num_rows)
    base = tables[big]
    others = [t for i, t in enumerate(tables) if i != big]
    key = key_names[0]
    if (
        sum(t.num_rows for t in others) * 4 > base.num_rows
        or pa.types.is_floating(base.schema.field(key).type)
        or not keys_strictly_increasing(base, key_names)
    ):
        return None, tables
    keys = pa.chunked_array(
        [c for t in others for c in t.column(key).chunks], type=base.schema.field(key).type
    ).combine_chunks()
    touched = pc.is_in(base.column(key), value_set=keys)
    return base.filter(pc.invert(touched)), [*tables[:big], base.filter(touched), *tables[big + 1 :]]


def _sort_and_merge(
    spec: _MergeSpec, section: Sequence[DataFileMeta], ordered: Sequence[DataFileMeta], tables: list[pa.Table]
) -> pa.Table:
    """``tables`` (one per file of ``ordered``, the files of ``section`` oldest first) sorted into Java's merge
    order and merged with the table's merge engine."""
    ctx, split, plan, metrics = spec.ctx, spec.split, spec.plan, spec.metrics
    engine, options, drop_retracts = spec.engine, spec.options, spec.drop_retracts
    ranks = split.file_ranks
    if ranks:
        # Chain read: sequence numbers are branch-local, so the file's rank breaks user-sequence ties.
        tables = [
            t.append_column(_RANK, pa.repeat(pa.scalar(ranks.get(f.file_name, 0), pa.int32()), t.num_rows))
            for f, t in zip(ordered, tables)
        ]
    data = pa.concat_tables(tables)
    metrics.merged_sections += 1
    metrics.max_merge_rows = max(metrics.max_merge_rows, data.num_rows)
    try:
        if drop_retracts and not ranks and engine == "deduplicate":
            winners = deduplicated_rows(data, plan.key_names, options)
            if winners is not None:
                return winners
        data = sort_for_merge(data, plan.key_names, plan.seq_fields, spec.descending, _RANK if ranks else None)
        if ranks:
            data = data.drop_columns([_RANK])
        return merge_sorted(
            data,
            plan.key_names,
            engine,
            options,
            spec.value_names,
            drop_retracts=drop_retracts,
            primary_keys=list(ctx.schema.primary_keys),
        )
    except PaimonError as exc:
        names = ", ".join(f.file_name for f in section)
        raise type(exc)(f"{exc} (while merging bucket {split.bucket} files {names} of {ctx.table_path})") from exc
