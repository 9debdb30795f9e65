"""The deletion-vector lookup of a compaction (Java's ``LookupMergeTreeCompactRewriter`` with deletion vectors).

A deletion-vector primary-key bucket is compacted so that no level-0 file survives (batch reads skip level 0):
the keys a step writes are looked up in the bucket's older files, the superseded rows there are marked in those
files' vectors (:class:`DvLookup`), and the bucket's vectors after the compaction go into one new index file
(:func:`write_bucket_vectors`). :func:`dv_upgrades_level0` is Java's rule for moving a lone level-0 file up by
metadata instead of rewriting it (its keys are still looked up).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.compact.compact_plan import CompactContext, CompactTask
from pyspark_paimon.datasource.read.file_read import read_data_file
from pyspark_paimon.datasource.read.key_probes import read_records
from pyspark_paimon.datasource.read.merged_read import merge_records, read_merged
from pyspark_paimon.metadata.manifests.deletion_vectors import read_deletion_vector, write_deletion_vector_file
from pyspark_paimon.metadata.manifests.hash_index import sorted_unique
from pyspark_paimon.metadata.manifests.index_manifest import IndexManifestEntry
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.options import CHANGELOG_PRODUCER, DELETION_VECTORS_BITMAP64, CoreOptions

__all__ = ["DvLookup", "dv_upgrades_level0", "is_dv_lookup", "write_bucket_vectors"]


_INTEGER_ROOTS = frozenset({"TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT"})


_POS = "__paimon_dv_position__"


_FILE = "__paimon_dv_file__"


def dv_upgrades_level0(ctx: CompactContext, task: CompactTask) -> bool:
    """Whether a lone level-0 file of ``task`` that holds no retraction moves up by metadata instead of being
    rewritten (Java's ``LookupMergeTreeCompactRewriter.upgradeStrategy`` with deletion vectors: no rewrite when
    the output is the max level, or when the engine is deduplicate without a sequence field, whose newest record
    always wins). The file's keys are still looked up (:meth:`DvLookup.mark_upgraded`), so the older rows they
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


def is_dv_lookup(ctx: CompactContext, task: CompactTask) -> bool:
    """Whether ``task`` is a lookup compaction of a deletion-vector bucket: there are older files outside the
    unit whose superseded rows must be marked (first-row buckets keep their older rows instead)."""
    options = CoreOptions(ctx.write.options)
    return options.deletion_vectors_enabled and options.merge_engine != "first-row" and bool(task.older_files)


class DvLookup:
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
        """A level-0 file moved up without a rewrite (:func:`dv_upgrades_level0`; deduplicate without a sequence
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


def write_bucket_vectors(
    ctx: CompactContext, task: CompactTask, replaced: tuple[DataFileMeta, ...], lookup: DvLookup | None
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
    bitmap64 = ctx.write.schema.core_options.get(DELETION_VECTORS_BITMAP64)
    return (write_deletion_vector_file(ctx.write.fileio, index_dir, task.partition, task.bucket, vectors, bitmap64),)
