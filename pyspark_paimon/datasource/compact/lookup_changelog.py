"""The changelog a lookup compaction produces (``changelog-producer = lookup``), vectorised.

Paimon's rule (Java 1.0's ``LookupMergeTreeCompactRewriter`` with ``LookupChangelogMergeFunctionWrapper``, or
``FirstRowMergeFunctionWrapper`` for the ``first-row`` engine): a compaction step whose output level is above 0
and whose inputs hold a level-0 file produces changelog for every key that a level-0 input holds. Per key:

* the *before-image* is the newest record of the key among the step's inputs above level 0; when there is none,
  the key is looked up in the bucket's levels above the output level (the lowest level holding it wins, as the
  newest). Only that one high-level record takes part in the merge (Java's ``LookupMergeFunction``), so the
  result is the merged state, not an increment;
* the *after-image* is the merge of the key's level-0 records with the before-image;
* no before-image (or a retraction) and an added after-image: ``+I`` (after); a before-image and a retracted
  after-image: ``-D`` (before); both added: ``-U`` (before) then ``+U`` (after), unless
  ``changelog-producer.row-deduplicate`` finds them equal (minus ``row-deduplicate-ignore-fields``).

``first-row``: a key already above level 0 (in the step or, looked up, above the output level) keeps its first
row and produces nothing (and a level-0 record of such a key is dropped); any other key is new: ``+I``.

A level-0 file that the compaction moves up without rewriting (Java's ``CHANGELOG_NO_REWRITE`` upgrade) produces
the same changelog: the rules above do not depend on whether the data file is rewritten.

With deletion vectors the lookup sees only live rows, and the position of each older row found is returned so
that the caller marks it in the file's new vector (the newer version supersedes it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.compact.full_changelog import full_compaction_changelog
from pyspark_paimon.datasource.merge.merge import VALUE_KIND, is_retract
from pyspark_paimon.datasource.read.file_read import read_data_file
from pyspark_paimon.datasource.read.key_probes import read_records
from pyspark_paimon.datasource.read.merged_read import java_order, merge_records
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE,
    CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS,
    FORCE_LOOKUP,
    CoreOptions,
)
from pyspark_paimon.planner.split import DataSplit


class CompactStep(Protocol):
    """What this module needs of :class:`~pyspark_paimon.datasource.compact.compact_plan.CompactTask` (whose
    module imports this one)."""

    @property
    def older_files(self) -> tuple[DataFileMeta, ...]: ...

    @property
    def output_level(self) -> int: ...

    @property
    def drop_delete(self) -> bool: ...

    def split(self, files: tuple[DataFileMeta, ...] | None = None) -> DataSplit: ...


__all__ = ["LookupChangelog", "LookupStep", "forces_lookup", "lookup_compacts", "produces_lookup_changelog"]

_SEQ = "_SEQUENCE_NUMBER"
_ROW = "__lookup_row__"
_POS = "__lookup_position__"
_FILE = "__lookup_file__"
_LEVEL = "__lookup_level__"


def produces_lookup_changelog(options: CoreOptions, primary_key: bool) -> bool:
    """Whether compactions of the table write lookup changelog files."""
    return primary_key and options.get(CHANGELOG_PRODUCER) == "lookup"


def forces_lookup(options: CoreOptions, primary_key: bool) -> bool:
    """Whether ``force-lookup`` alone makes the table a lookup table (Java's ``LookupStrategy``): a primary-key
    table whose compaction is not already a lookup compaction (``changelog-producer = lookup``, deletion vectors,
    ``first-row``) nor the full-compaction producer's rewriter. Its compactions then run as the lookup
    producer's, without writing changelog: level-0 files move up after every write, each key merged with the
    newest older record found above the output level (Java's ``LookupMergeTreeCompactRewriter`` with
    ``produceChangelog`` false)."""
    return (
        primary_key
        and bool(options.get(FORCE_LOOKUP))
        and options.get(CHANGELOG_PRODUCER) not in ("lookup", "full-compaction")
        and not options.deletion_vectors_enabled
        and options.merge_engine != "first-row"
    )


def lookup_compacts(options: CoreOptions, primary_key: bool) -> bool:
    """Whether compactions of the table run :class:`LookupChangelog` steps (the producer's, or ``force-lookup``)."""
    return produces_lookup_changelog(options, primary_key) or forces_lookup(options, primary_key)


@dataclass
class LookupStep:
    """What one lookup compaction step produced: the rows to write at the output level (None: nothing),
    the changelog rows (None: none), and per older file the positions of the rows the step superseded."""

    merged: pa.Table | None
    changelog: pa.Table | None
    superseded: dict[str, np.ndarray] = field(default_factory=dict)


def _concat(tables: Sequence[pa.Table]) -> pa.Table | None:
    parts = [t for t in tables if t.num_rows]
    if not parts:
        return None
    return pa.concat_tables(parts, promote_options="permissive") if len(parts) > 1 else parts[0]


def _pick(table: pa.Table, keys: list[str], order: list[tuple[str, str]], pick: str) -> pa.Table:
    """One row per key of ``table``: after sorting by ``order``, the first (``pick`` = "min") or last ("max")."""
    ranked = table.take(java_order(table, order))
    ranked = ranked.append_column(_ROW, pa.array(np.arange(ranked.num_rows, dtype=np.int64)))
    chosen = ranked.group_by(keys, use_threads=False).aggregate([(_ROW, pick)])
    rows = np.sort(np.asarray(chosen.column(f"{_ROW}_{pick}").to_numpy(), dtype=np.int64))
    return ranked.take(pa.array(rows)).drop_columns([_ROW])


class LookupChangelog:
    """The lookup changelog of one compaction task (see the module docstring); :meth:`step` per rewritten or
    upgraded group of inputs that holds level-0 files."""

    def __init__(self, read: ReadContext, options: CoreOptions, task: CompactStep) -> None:
        self.read = read
        self.task = task
        schema = read.schema
        self.key_names = list(schema.trimmed_primary_keys) or list(schema.primary_keys)
        self.key_fields = [schema.field(k) for k in self.key_names]
        self.first_row = options.merge_engine == "first-row"
        # Java's merge order of a key's records: the sequence fields (if any), then the sequence number.
        direction = "descending" if options.sequence_descending else "ascending"
        self.merge_order = [*((f, direction) for f in options.sequence_fields), (_SEQ, "ascending")]
        self.compare: list[str] | None = None
        if options.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE):
            ignored = set(options.get(CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS) or ())
            self.compare = [f.name for f in schema.fields if f.name not in ignored]
        # Java looks keys up from the level above the output level upwards.
        self.older = [f for f in task.older_files if f.level > task.output_level]
        self._index: pa.Table | None = None

    def applies(self, files: Sequence[DataFileMeta]) -> bool:
        """Java produces lookup changelog only for an output level above 0 and inputs holding level-0 files."""
        return self.task.output_level > 0 and any(f.level == 0 for f in files)

    # ------------------------------------------------------------------------------------------- lookup
    def _older_index(self) -> pa.Table:
        """Key columns of every live row of the older files, with file index, level and row position."""
        if self._index is None:
            parts = []
            for i, f in enumerate(self.older):
                split = self.task.split((f,))
                keys = read_data_file(self.read, replace(split, deletion_files={}), f, self.key_fields)
                n = keys.num_rows
                live = np.ones(n, dtype=bool)
                dfile = split.deletion_files.get(f.file_name)
                if dfile is not None:
                    gone = read_deletion_vector(self.read.fileio, dfile, f.file_name)
                    live[gone[gone < n]] = False
                keys = (
                    keys.append_column(_POS, pa.array(np.arange(n, dtype=np.int64)))
                    .append_column(_FILE, pa.array(np.full(n, i, dtype=np.int32)))
                    .append_column(_LEVEL, pa.array(np.full(n, f.level, dtype=np.int32)))
                )
                parts.append(keys.filter(pa.array(live)))
            self._index = _concat(parts) or pa.table({_POS: pa.array([], pa.int64())})
        return self._index

    def _looked_up(self, keys: pa.Table, values: bool) -> tuple[pa.Table | None, pa.Table, dict[str, np.ndarray]]:
        """(the records found for ``keys`` above the output level, or None when ``values`` is False; the keys
        found; per older file the positions found). The lowest level holding a key wins."""
        index = self._older_index()
        if not index.num_rows or not keys.num_rows:
            return None, keys.slice(0, 0), {}
        hits = index.join(keys, self.key_names, join_type="inner", use_threads=False)
        if not hits.num_rows:
            return None, keys.slice(0, 0), {}
        hits = _pick(hits, self.key_names, [(_LEVEL, "ascending"), (_POS, "ascending")], "min")
        files = np.asarray(hits.column(_FILE).to_numpy(), dtype=np.int32)
        positions = np.asarray(hits.column(_POS).to_numpy(), dtype=np.int64)
        found: dict[str, np.ndarray] = {}
        records = []
        for i in np.unique(files).tolist():
            f = self.older[i]
            at = np.sort(positions[files == i])
            found[f.file_name] = at
            if values:
                records.append(read_records(self.read, self.task.split((f,)), f, at))
        return (_concat(records) if values else None), hits.select(self.key_names), found

    # ------------------------------------------------------------------------------------------- steps
    def step(self, files: Sequence[DataFileMeta]) -> LookupStep:
        """Merge ``files`` (one step of the task) as Java's lookup compaction does and produce its changelog."""
        split = self.task.split(tuple(files))
        ranked = sorted(files, key=lambda f: (f.max_sequence_number, f.min_sequence_number, f.file_name))
        low = [read_records(self.read, split, f) for f in ranked if f.level == 0]
        high = [read_records(self.read, split, f) for f in ranked if f.level > 0]
        low_all = _concat(low)
        high_all = _concat(high)
        if self.first_row:
            return self._first_row_step(split, ranked, high_all)
        low_keys = (
            low_all.select(self.key_names).group_by(self.key_names, use_threads=False).aggregate([])
            if low_all is not None
            else None
        )
        before_parts = []
        if high_all is not None:
            # LookupMergeFunction: only the newest high-level record of a key takes part.
            before_parts.append(_pick(high_all, self.key_names, self.merge_order, "max"))
        superseded: dict[str, np.ndarray] = {}
        if low_keys is not None:
            need = low_keys
            if before_parts:
                need = low_keys.join(before_parts[0].select(self.key_names), self.key_names, join_type="left anti")
            found, _, superseded = self._looked_up(need, values=True)
            if found is not None:
                before_parts.append(found)
        before = _concat(before_parts)
        merged = merge_records(self.read, split, [t for t in (before, *low) if t is not None], False)
        changelog = None
        if low_keys is not None and merged.num_rows:
            top = merged.slice(0, 0) if before is None else before
            kinds = np.asarray(top.column(VALUE_KIND).to_numpy(), dtype=np.int8)
            adds = ~is_retract(kinds)
            if not adds.all():  # a retracted before-image counts as none
                top = top.filter(pa.array(adds))
            changelog = full_compaction_changelog(merged, top, low_keys, self.key_names, self.compare)
        if self.task.drop_delete and merged.num_rows:
            kinds = np.asarray(merged.column(VALUE_KIND).to_numpy(), dtype=np.int8)
            merged = merged.filter(pa.array(~is_retract(kinds)))
        return LookupStep(merged if merged.num_rows else None, changelog, superseded)

    def _first_row_step(
        self, split: DataSplit, ranked: Sequence[DataFileMeta], high_all: pa.Table | None
    ) -> LookupStep:
        tables = [read_records(self.read, split, f) for f in ranked]
        merged = merge_records(self.read, split, tables, self.task.drop_delete)
        if not merged.num_rows:
            return LookupStep(None, None)
        high_keys = (
            high_all.select(self.key_names).group_by(self.key_names, use_threads=False).aggregate([])
            if high_all is not None
            else None
        )
        candidates = merged
        if high_keys is not None:
            candidates = merged.join(high_keys, self.key_names, join_type="left anti", use_threads=False)
        _, in_older, _ = self._looked_up(candidates.select(self.key_names), values=False)
        numbered = merged.append_column(_ROW, pa.array(np.arange(merged.num_rows, dtype=np.int64)))
        kept = numbered.join(in_older, self.key_names, join_type="left anti", use_threads=False).sort_by(_ROW)
        new = kept
        if high_keys is not None:
            new = kept.join(high_keys, self.key_names, join_type="left anti", use_threads=False).sort_by(_ROW)
        out = kept.drop_columns([_ROW]).select(merged.column_names)
        changelog = new.drop_columns([_ROW]).select(merged.column_names)
        return LookupStep(out if out.num_rows else None, changelog if changelog.num_rows else None)
