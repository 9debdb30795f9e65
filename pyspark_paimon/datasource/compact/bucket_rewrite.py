"""Rewriting one bucket's compaction task (anywhere: the inputs are picklable): :func:`compact_bucket`.

The task's files are read through the read path (:func:`~pyspark_paimon.datasource.read.merged_read.read_merged`:
key-overlap sections, the table's merge engine, schema evolution, bounded-memory windows) and the merged rows are
written in key order with :meth:`TableWriter.write_compacted` at the output level: sorted, non-overlapping files
rolled at ``target-file-size`` with exact statistics, ``_SEQUENCE_NUMBER`` and ``_VALUE_KIND`` kept. A primary-key
unit is done in Java's steps (rewrite a key-overlap candidate, or upgrade a lone large file by metadata), with the
hooks of the changelog producers (``full_changelog``, ``lookup_changelog``) and of the deletion-vector lookup
(``dv_lookup``). A data-evolution unit (runs of row-id groups whose ids follow on) is read as assembled rows and
written as one whole-row file, as Java's ``DataEvolutionNormalCompactTask`` does. The result is a
:class:`CommitMessage` whose ``compact_before`` lists the inputs.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.compact.compact_plan import CompactContext, CompactTask
from pyspark_paimon.datasource.compact.dv_lookup import DvLookup, dv_upgrades_level0, is_dv_lookup, write_bucket_vectors
from pyspark_paimon.datasource.compact.full_changelog import full_compaction_changelog, upgrade_changelog
from pyspark_paimon.datasource.compact.lookup_changelog import (
    LookupChangelog,
    lookup_compacts,
    produces_lookup_changelog,
)
from pyspark_paimon.datasource.compact.ordered_compact import ordered_rows
from pyspark_paimon.datasource.merge.merge import VALUE_KIND, is_retract
from pyspark_paimon.datasource.read.file_read import read_data_file
from pyspark_paimon.datasource.read.merged_read import key_sections, read_merged
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.errors import CorruptMetadataError, PaimonError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.index_manifest import IndexManifestEntry
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE,
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS,
    CoreOptions,
)
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.planner.row_ranges import row_id_groups, row_range
from pyspark_paimon.planner.split import DataSplit

__all__ = ["compact_bucket", "delete_index_files", "id_runs"]


log = logging.getLogger(__name__)


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
            lookup = DvLookup(ctx, task) if is_dv_lookup(ctx, task) else None
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
                index_files = write_bucket_vectors(ctx, task, replaced, lookup)
        elif data_evolution_enabled(ctx.read.schema.options):
            _rewrite_row_ranges(ctx, task, writer)
        elif task.order is not None:
            # Sort compaction / incremental clustering: the unit's rows (vectors applied) in the order, at once.
            tables = [pa.Table.from_batches([b]) for b in read_split(ctx.read, task.split())]
            if tables:
                write(ordered_rows(tables, task.order))
        else:
            # Append files are concatenated in sequence order; the outputs continue the first input's numbers.
            ordered = sorted(task.files, key=lambda f: (f.min_sequence_number, f.file_name))
            if writer.tracks_rows:  # row tracking: only runs of consecutive ids, so every output has a first id
                ordered = [f for run in id_runs(task.files, task.deletion_files) if len(run) > 1 for f in run]
                replaced = tuple(ordered)
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
                index_files = write_bucket_vectors(ctx, task, replaced, None)
        messages = writer.prepare_commit()
    except BaseException:
        delete_index_files(ctx.write.fileio, ctx.write.table_path, index_files)
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


def _rewrite_row_ranges(ctx: CompactContext, task: CompactTask, writer: TableWriter) -> None:
    """A data-evolution unit as one file (Java's ``DataEvolutionNormalCompactTask``): every row-id group's rows
    assembled from its column files, in id order, written with all the table's columns (no ``_WRITE_COLS``), the
    first group's first row id, and the inputs' lowest and highest sequence numbers. The planner put only groups
    without deletion vectors here, so every stored row is kept and the ids still follow from the first row id."""
    groups = row_id_groups(task.files, ctx.write.table_path)
    parts: list[pa.Table] = []
    for group in groups:
        split = replace(task.split(group), raw_convertible=len(group) == 1)
        parts.extend(pa.Table.from_batches([b]) for b in read_split(ctx.read, split))
    rows = pa.concat_tables(parts) if parts else None
    expected = sum(g[0].row_count for g in groups)
    if rows is None or rows.num_rows != expected:
        raise CorruptMetadataError(
            f"The row ranges of {[f.file_name for f in task.files]} hold {expected} rows by their manifest entries, "
            f"but {0 if rows is None else rows.num_rows} were read; nothing was compacted. Read the table with Paimon."
        )
    first = row_range(groups[0][0], ctx.write.table_path)[0]
    sequences = (min(f.min_sequence_number for f in task.files), max(f.max_sequence_number for f in task.files))
    writer.write_row_range(
        task.partition, task.partition_values, task.bucket, task.total_buckets, rows, first, sequences
    )


def id_runs(files: Sequence[DataFileMeta], vectors: Mapping[str, object]) -> list[list[DataFileMeta]]:
    """``files`` of a row-tracking bucket in row-id order, cut into runs whose ids follow on (each file's first row
    id is where the previous one ended). A file without a first row id (Java's compactions store ids that may not
    run on) or with a deletion vector (its rows' ids have gaps) is a run of its own. A run's rows, concatenated, keep
    consecutive ids, so their compacted file can carry a first row id every reader agrees with."""
    runs: list[list[DataFileMeta]] = []
    end: int | None = None
    for f in sorted(files, key=lambda f: (f.first_row_id is None, f.first_row_id or 0, f.file_name)):
        alone = f.first_row_id is None or f.file_name in vectors
        if runs and not alone and end is not None and f.first_row_id == end:
            runs[-1].append(f)
        else:
            runs.append([f])
        end = None if alone else (f.first_row_id or 0) + f.row_count
    return runs


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
    lookup: DvLookup | None,
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
    unless :func:`dv_upgrades_level0` says Java moves it up by metadata."""
    options = CoreOptions(ctx.write.options)
    lookup = options.deletion_vectors_enabled or bool(task.older_files)
    upgrades_level0 = dv_upgrades_level0(ctx, task)
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


def delete_index_files(fileio: FileIO, table_path: str, entries: Iterable[IndexManifestEntry]) -> None:
    for e in entries:
        path = f"{table_path}/index/{e.file_name}"
        try:
            fileio.delete(path)
        except OSError as exc:
            log.warning(
                "Could not delete %s of a compaction that was not committed (%s); "
                "t.maintenance.remove_orphan_files will remove it.",
                path,
                exc,
            )
