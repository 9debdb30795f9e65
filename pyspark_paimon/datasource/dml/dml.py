"""Row-level DML on one branch: ``delete``, ``update`` and a delta-rs-style ``merge``, each ONE atomic commit.

How a change is written depends on the table, as in Java Paimon's Spark DML:

* **Primary-key tables** change rows through the merge engine: a deleted row is written as a retraction
  (``-D``, the row with its key), an updated row as an upsert of the whole new row (``+U``), an inserted row
  as ``+I``, all in new level-0 files of one APPEND commit whose sequence numbers follow every existing row,
  so the change wins the merge. Engines that define no such change refuse it (:func:`check_merge_engine`).
  No commit that may hold the rows it read or the keys it writes may land between its read and its commit
  (:func:`unchanged_since`); when a writer's did, the change is read, decided and written again
  (:data:`DML_ATTEMPTS`).
* **Append tables** are rewritten copy-on-write: every data file holding a matched row is read whole, its
  matched rows dropped or replaced, the rest written to new files, and the commit (kind OVERWRITE, as Java
  marks a rewrite) DELETEs the old files and ADDs the new ones. The commit checks that every file it deletes is
  still live, so a concurrent commit that removed one of them (a compaction, an overwrite, another DML) makes
  this one fail cleanly with :class:`CommitConflictError` and nothing changed; re-running it is safe.
  A file carrying a deletion vector is refused (compact first): its rewrite would leave the vector behind.
* **Append tables with** ``deletion-vectors.enabled`` write deletion vectors instead (Java's Spark DML does the
  same): the positions of the deleted rows, and of the old versions of updated rows, are added to each touched
  data file's vector; every vector of a touched bucket goes into one new ``DELETION_VECTORS`` index file
  (Java's layout), and the APPEND commit (Java commits them as a data increment) replaces the bucket's index
  entries. Updated rows are appended as new files. No data file is rewritten. The commit is a conflict when
  the touched buckets' vectors changed meanwhile (another delete or a compaction wrote some) or a touched file
  was removed (compacted away): nothing lands, and re-running is safe.

The ``filter`` is the ``filter`` read option's SQL (``planner.sql_filter``): it prunes partitions, files and
row groups when the rows are read, and selects the rows exactly. New values and merge conditions are SQL
expressions evaluated on Arrow by :mod:`pyspark_paimon.datasource.dml.sql_eval`. The rows a change touches are
read in this process (the driver); the data is never collected through Python objects.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.dml.sql_eval import Scope, evaluate, evaluate_condition, parse_expression
from pyspark_paimon.datasource.jobs import WriteJob, prepare_read, prepare_write
from pyspark_paimon.datasource.read.read import ReadContext, read_split
from pyspark_paimon.datasource.write.store_assignment import cast_for_store
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.errors import CommitConflictError, DmlError, OptionError, PaimonError
from pyspark_paimon.metadata.manifests.deletion_vectors import (
    DELETION_VECTORS_INDEX,
    bucket_vector_files,
    deletion_files,
    read_deletion_vector,
    write_deletion_vector_file,
)
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange, IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.schema.options import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    DELETION_VECTORS_BITMAP64,
    DELETION_VECTORS_ENABLED,
    IGNORE_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    WRITE_ONLY,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import type_to_sql
from pyspark_paimon.planner.predicate import Leaf, implied_leaves, tree_columns, tree_expression
from pyspark_paimon.planner.read_options import FILTER_KEY, ReadOptions
from pyspark_paimon.planner.read_plan import plan_read
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.sections import decoded_key_range
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.sql_filter import parse_filter

KIND_INSERT, KIND_UPDATE_AFTER, KIND_DELETE = 0, 2, 3
# A merge source with at most this many distinct keys (one key column) prunes the target read by them.
_PRUNE_KEYS = 10_000


@dataclass(frozen=True)
class MergeResult:
    """What one DML commit changed. ``copied``: unchanged rows that copy-on-write rewrote (append tables);
    ``vectors_written``: data files whose deletion vector the change wrote (deletion-vector append tables);
    ``files_read``: data files the change read after pruning by partition, bucket and key statistics (a merge
    prunes by its source's keys), so its cost shows as what it touched."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    copied: int = 0
    files_rewritten: int = 0
    snapshot_id: int | None = None
    vectors_written: int = 0
    files_read: int = 0


# ------------------------------------------------------------------------------------------- checks
def check_merge_engine(schema: TableSchema, table: str, *, deletes: bool, updates: bool) -> None:
    """Refuse a change the table's merge engine gives no meaning, as Java Paimon's Spark DML does (and one on a
    ``write-only`` deletion-vector primary-key table, whose writes are never compacted into sight)."""
    if not schema.primary_keys:
        return
    opts = schema.core_options
    if opts.deletion_vectors_enabled and opts.write_only:
        # Reads of such a table skip level 0 (Java's rule); only the compaction after each write, which
        # write-only turns off, moves it up, so the change would neither see rows only written there nor show.
        raise DmlError(
            f"Table {table} is a primary-key table with '{DELETION_VECTORS_ENABLED.key}' = 'true' and "
            f"'{WRITE_ONLY.key}' = 'true': its new rows stay invisible until a compaction, so a change would "
            "neither see nor show them. Compact it first (t.maintenance.compact()) and unset "
            f"'{WRITE_ONLY.key}' to change rows."
        )
    engine = opts.merge_engine
    if engine == "first-row" and (deletes or updates):
        raise DmlError(
            f"Table {table} uses merge-engine 'first-row', which keeps the first row of each key: Paimon defines no "
            "UPDATE or DELETE for it. Recreate the table with merge-engine 'deduplicate' to change rows."
        )
    if updates and engine == "aggregation":
        raise DmlError(
            f"Table {table} uses merge-engine 'aggregation': an updated row would be aggregated with the old one, "
            "not replace it, so Paimon refuses UPDATE there. Write the change as new input rows instead."
        )
    if not deletes:
        return
    if opts.ignore_delete:
        raise DmlError(
            f"Table {table} sets '{IGNORE_DELETE.key}' = 'true': every retraction would be dropped, so a DELETE "
            f"would change nothing. Unset '{IGNORE_DELETE.key}' to delete rows."
        )
    if engine == "partial-update" and not opts.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE):
        raise DmlError(
            f"Table {table} uses merge-engine 'partial-update', which accepts a DELETE only with "
            f"'{PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key}' = 'true'. Set that option to delete rows."
        )
    if engine == "aggregation" and not opts.get(AGGREGATION_REMOVE_RECORD_ON_DELETE):
        raise DmlError(
            f"Table {table} uses merge-engine 'aggregation', which accepts a DELETE only with "
            f"'{AGGREGATION_REMOVE_RECORD_ON_DELETE.key}' = 'true'. Set that option to delete rows."
        )


def _check_assigned(schema: TableSchema, table: str, columns: Sequence[str]) -> list[str]:
    """The table's spelling of each assigned column; key and partition columns cannot change (Java refuses
    updating a primary key; a changed partition would need the row moved, which DML does not do)."""
    out = []
    for name in columns:
        matches = [f.name for f in schema.fields if f.name == name] or [
            f.name for f in schema.fields if f.name.lower() == str(name).lower()
        ]
        if len(matches) != 1:
            raise OptionError(
                f"Table {table} has no column '{name}' to set (columns: {', '.join(schema.field_names)})."
            )
        col = matches[0]
        if col in schema.primary_keys:
            raise DmlError(
                f"Column '{col}' of {table} is part of the primary key, which an update cannot change. Delete the row "
                "and insert the new one instead."
            )
        if col in schema.partition_keys:
            raise DmlError(
                f"Column '{col}' of {table} is a partition column, which an update cannot change. Delete the rows and "
                "insert them with the new partition value instead."
            )
        out.append(col)
    return out


# ------------------------------------------------------------------------------------------- loading
@dataclass
class _Target:
    """The rows a change may touch. Append tables: every row of each candidate file, in file order, with the
    file each row came from (``file_of_row`` indexes ``files``); primary-key tables: merged rows."""

    rows: pa.Table
    files: list[tuple[DataSplit, DataFileMeta]] = field(default_factory=list)
    file_of_row: np.ndarray | None = None
    # Deletion-vector append tables: each row's position in its file, each file's already deleted positions
    # (by index in ``files``) and the snapshot the rows were read at.
    positions: np.ndarray | None = None
    existing: dict[int, np.ndarray] = field(default_factory=dict)
    snapshot: Snapshot | None = None
    files_read: int = 0
    # Primary-key tables: the leaves the read was pruned with (what a concurrent commit must avoid, see
    # :func:`unchanged_since`).
    pruned_by: list[Leaf] | None = None


def _writes_vectors(schema: TableSchema) -> bool:
    """Append tables with ``deletion-vectors.enabled`` change rows by deletion vectors, not copy-on-write."""
    return not schema.primary_keys and schema.core_options.deletion_vectors_enabled


def _load(store: FileStore, schema: TableSchema, filter_text: str | None, prune: Sequence[Leaf] = ()) -> _Target:
    """Read what the change may touch. ``filter_text`` selects rows exactly on primary-key tables (the read's own
    filter) and prunes on append tables (whose files are read whole); ``prune`` only prunes."""
    tree = parse_filter(filter_text, schema) if filter_text else None
    leaves = [*implied_leaves(tree), *prune] if tree is not None else list(prune)
    if schema.primary_keys:
        opts = ReadOptions.from_options({FILTER_KEY: filter_text} if filter_text else {})
        job = prepare_read(store, opts, leaves)
        _refuse_foreign(job.planned.kind, store)
        return _Target(
            job.to_arrow(), snapshot=job.plan.snapshot, files_read=job.plan.counters.files_selected, pruned_by=leaves
        )
    planned = plan_read(store, ReadOptions.from_options({}), leaves)
    _refuse_foreign(planned.kind, store)
    # Files are rewritten whole: the context must not skip row groups by the pruning predicate.
    ctx = ReadContext.for_plan(store, replace(planned, predicate=(), selection=None))
    vectors = _writes_vectors(schema)
    files: list[tuple[DataSplit, DataFileMeta]] = []
    tables: list[pa.Table] = []
    owners: list[np.ndarray] = []
    positions: list[np.ndarray] = []
    existing: dict[int, np.ndarray] = {}
    for split in planned.plan.splits:
        for f in split.files:
            one = replace(split, files=(f,))
            unit = read_unit(ctx, one, vectors)
            if unit is None:
                continue
            data, pos, gone = unit
            if vectors:
                existing[len(files)] = gone
                positions.append(pos)
            owners.append(np.full(data.num_rows, len(files), dtype=np.int64))
            files.append((one, f))
            tables.append(data)
    rows = pa.concat_tables(tables) if tables else ctx.output_schema().empty_table()
    empty = np.zeros(0, dtype=np.int64)
    return _Target(
        rows,
        files,
        np.concatenate(owners) if owners else empty,
        positions=(np.concatenate(positions) if positions else empty) if vectors else None,
        existing=existing,
        snapshot=planned.plan.snapshot,
        files_read=len(files),
    )


def read_unit(ctx: ReadContext, split: DataSplit, vectors: bool) -> tuple[pa.Table, np.ndarray, np.ndarray] | None:
    """The live rows of the one data file of ``split`` (None when it has none), with each row's position in the
    file and the positions its deletion vector already deletes (``vectors``: read positions, for a table whose
    changes are deletion vectors; else positions are not tracked and the read applies the vector itself)."""
    f = split.files[0]
    dfile = split.deletion_files.get(f.file_name)
    if vectors:  # read every row, to know each one's position, and drop the deleted ones here
        split = replace(split, deletion_files={})
    batches = list(read_split(ctx, split))
    data = pa.Table.from_batches(batches, schema=ctx.output_schema()) if batches else None
    none = np.zeros(0, dtype=np.int64)
    if data is None or data.num_rows == 0:
        return None
    if not vectors:
        return data, none, none
    if data.num_rows != f.row_count:
        raise DmlError(
            f"Data file {f.file_name} of {ctx.table_path} read {data.num_rows} rows but its metadata says "
            f"{f.row_count}; row positions for its deletion vector cannot be known."
        )
    pos = np.arange(data.num_rows, dtype=np.int64)
    gone = read_deletion_vector(ctx.fileio, dfile, f.file_name) if dfile is not None else none
    if len(gone):
        keep = ~np.isin(pos, gone)
        data, pos = data.filter(pa.array(keep)), pos[keep]
        if data.num_rows == 0:
            return None
    return data, pos, gone


def _refuse_foreign(kind: str, store: FileStore) -> None:
    if kind != "plain":
        raise DmlError(
            f"Table {store.table_path} (branch '{store.branch}') is read as a {kind} read (fallback branch or chain "
            "table): DML changes only a branch's own files. Run it on the branch that holds the rows."
        )


def _filter_mask(target: _Target, schema: TableSchema, filter_text: str | None) -> np.ndarray:
    """Which loaded rows the filter selects (primary-key loads are already exact)."""
    n = target.rows.num_rows
    if not filter_text or schema.primary_keys:
        return np.ones(n, dtype=bool)
    expr = tree_expression(parse_filter(filter_text, schema), target.rows.schema)
    positions = target.rows.append_column("__dml_pos", pa.array(np.arange(n, dtype=np.int64))).filter(expr)
    mask = np.zeros(n, dtype=bool)
    mask[positions.column("__dml_pos").to_numpy()] = True
    return mask


def _store_column(values: pa.ChunkedArray, schema: TableSchema, name: str) -> pa.ChunkedArray:
    f = schema.field(name)
    want = schema.arrow_schema().field(name).type
    if pa.types.is_null(values.type):
        return pa.chunked_array([pa.nulls(len(values), want)])
    return cast_for_store(values, want, name, type_to_sql(f.type))


def _with_columns(rows: pa.Table, columns: Mapping[str, pa.ChunkedArray]) -> pa.Table:
    out = rows
    for name, values in columns.items():
        out = out.set_column(out.schema.get_field_index(name), name, values)
    return out


# ------------------------------------------------------------------------------------------- writing
@dataclass
class Written:
    """The files one writer wrote for a change, before the commit (a Spark merge task sends it to the driver)."""

    messages: list[CommitMessage] = field(default_factory=list)
    removed: dict[tuple[bytes, int, int], list[DataFileMeta]] = field(default_factory=dict)  # copy-on-write
    vectors: dict[tuple[bytes, int], dict[str, np.ndarray]] = field(default_factory=dict)  # deletion vectors
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    copied: int = 0


def _write(
    store: FileStore,
    schema: TableSchema,
    target: _Target,
    deleted: np.ndarray,
    updated: np.ndarray,
    new_rows: pa.Table | None,
    inserts: pa.Table | None,
) -> MergeResult:
    """Write the change as ONE commit (see the module docstring for how each table kind takes it)."""
    if not deleted.any() and not (updated & ~deleted).any() and (inserts is None or inserts.num_rows == 0):
        return MergeResult(files_read=target.files_read)
    job = prepare_write(store)
    writer = job.new_writer("dml")
    written = write_change(writer, store, schema, target, deleted, updated, new_rows, inserts)
    result = commit_change(store, schema, job, [written], target.snapshot, abort=writer.abort, read=target.pruned_by)
    return replace(result, files_read=target.files_read)


def write_change(
    writer: TableWriter,
    store: FileStore,
    schema: TableSchema,
    target: _Target,
    deleted: np.ndarray,
    updated: np.ndarray,
    new_rows: pa.Table | None,
    inserts: pa.Table | None,
) -> Written:
    """Write one part of a change with ``writer`` (files and the vectors to add), without committing."""
    n_del, n_upd = int(deleted.sum()), int((updated & ~deleted).sum())
    n_ins = inserts.num_rows if inserts is not None else 0
    old: dict[tuple[bytes, int, int], list[DataFileMeta]] = defaultdict(list)
    bucket_vectors: dict[tuple[bytes, int], dict[str, np.ndarray]] = defaultdict(dict)
    copied = 0
    try:
        rows = target.rows
        changed = new_rows if new_rows is not None else rows
        if schema.primary_keys:
            if n_del:
                gone = rows.filter(pa.array(deleted))
                writer.write(gone, kinds=pa.array(np.full(gone.num_rows, KIND_DELETE, dtype=np.int8)))
            if n_upd:
                upserts = changed.filter(pa.array(updated & ~deleted))
                writer.write(upserts, kinds=pa.array(np.full(upserts.num_rows, KIND_UPDATE_AFTER, dtype=np.int8)))
        elif target.positions is not None:
            assert target.file_of_row is not None
            marked = deleted | updated
            for i in np.unique(target.file_of_row[marked]):
                split, f = target.files[int(i)]
                add = target.positions[marked & (target.file_of_row == i)]
                bucket_vectors[(split.partition, split.bucket)][f.file_name] = np.union1d(
                    target.existing.get(int(i), add[:0]), add
                )
            if n_upd:
                writer.write(changed.filter(pa.array(updated & ~deleted)))  # the new versions, as new rows
        else:
            assert target.file_of_row is not None
            touched = np.unique(target.file_of_row[deleted | updated])
            merged = rows if new_rows is None else _replace_rows(rows, new_rows, updated)
            for i in touched:
                split, f = target.files[int(i)]
                _refuse_deletion_vector(store, split, f)
                keep = (target.file_of_row == i) & ~deleted
                kept = merged.filter(pa.array(keep))
                copied += kept.num_rows - int((keep & updated).sum())
                writer.write(kept)
                old[(split.partition, split.bucket, split.total_buckets)].append(f)
        if inserts is not None and inserts.num_rows:
            if schema.primary_keys:
                writer.write(inserts, kinds=pa.array(np.full(inserts.num_rows, KIND_INSERT, dtype=np.int8)))
            else:
                writer.write(inserts)
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    return Written(list(messages), dict(old), dict(bucket_vectors), n_ins, n_upd, n_del, copied)


def commit_change(
    store: FileStore,
    schema: TableSchema,
    job: WriteJob,
    parts: Sequence[Written],
    snapshot: Snapshot | None,
    abort: Callable[[], None],
    read: Sequence[Leaf] | None = None,
) -> MergeResult:
    """Commit every part of a change as ONE snapshot (``snapshot``: the one the target rows were read at);
    ``abort`` removes the new files when the commit certainly did not land; ``read``: the leaves a primary-key
    change's read was pruned with (:func:`unchanged_since`; None: any newer commit is a conflict)."""
    messages = [m for p in parts for m in p.messages]
    old: dict[tuple[bytes, int, int], list[DataFileMeta]] = defaultdict(list)
    bucket_vectors: dict[tuple[bytes, int], dict[str, np.ndarray]] = defaultdict(dict)
    for p in parts:
        for k, files in p.removed.items():
            old[k].extend(files)
        for b, vectors in p.vectors.items():
            bucket_vectors[b].update(vectors)
    messages += [CommitMessage(p, b, total, (), tuple(files)) for (p, b, total), files in old.items()]
    # A primary-key change is computed from the rows read at ``snapshot``: it must land right on top of it.
    index_update = unchanged_since(store, snapshot, messages, read) if schema.primary_keys and messages else None
    index_paths: list[str] = []
    if bucket_vectors:
        try:
            index_update, index_paths = _vector_update(store, schema, snapshot, bucket_vectors)
        except BaseException:
            abort()
            raise
    try:
        result = job.commit(messages, kind="OVERWRITE" if old else "APPEND", index_update=index_update)
    except CommitConflictError:
        abort()  # the commit certainly did not land: its new files are nobody's
        for path in index_paths:
            store.fileio.delete(path)
        raise
    return MergeResult(
        inserted=sum(p.inserted for p in parts),
        updated=sum(p.updated for p in parts),
        deleted=sum(p.deleted for p in parts),
        copied=sum(p.copied for p in parts),
        files_rewritten=sum(len(v) for v in old.values()),
        snapshot_id=result.id if result is not None else None,
        vectors_written=sum(len(v) for v in bucket_vectors.values()),
    )


class StaleReadError(CommitConflictError):
    """A primary-key change's commit found a commit newer than the rows it was computed from (raised by
    :func:`unchanged_since`; the Python API re-plans the change, :data:`DML_ATTEMPTS` times)."""


#: How many times a primary-key change is planned anew when writers keep committing between its read and its commit.
DML_ATTEMPTS = 5


def unchanged_since(
    store: FileStore,
    read: Snapshot | None,
    messages: Sequence[CommitMessage] = (),
    pruned_by: Sequence[Leaf] | None = None,
) -> Callable[[Snapshot | None], IndexChange]:
    """A commit check (``index_update`` changing nothing, run on every attempt): raise :class:`StaleReadError`
    when a commit that may touch this change's rows landed on the branch after ``read``.

    Why: a primary-key change is written as retractions and upserts whose sequence numbers were chosen when the
    change was prepared. A writer that committed the same key after ``read`` may hold equal or higher sequence
    numbers, so the change, committed later, would lose the merge (an acknowledged delete or update silently
    absent); and the change was decided on rows that writer replaced (or without rows it added).

    A compaction changes no row and keeps sequence numbers: never a conflict. With ``pruned_by`` (the leaves the
    change's read was pruned with) on a fixed-bucket table, an APPEND commit is a conflict only when one of its
    files may hold rows the read selected (the same partition, bucket and file-statistics pruning as the read)
    or overlaps, in a bucket of ``messages``, the key range of a file this change writes; so a writer on other
    partitions, buckets or keys does not make the change start over. Anything else (an overwrite, another
    bucket mode, no ``pruned_by``) is a conflict."""
    base = read.id if read is not None else 0
    schema = store.schema()
    precise = pruned_by is not None and schema.num_buckets > 0
    ours: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for m in messages:
        ours[(m.partition, m.bucket)].extend(m.new_files)
    key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]

    def overlaps(e: ManifestEntry) -> bool:
        mine = ours.get((e.partition, e.bucket))
        if not mine:
            return False
        try:
            lo, hi = decoded_key_range(e.file, key_types)
            return any(not (hi < a or b < lo) for a, b in (decoded_key_range(f, key_types) for f in mine))
        except (PaimonError, TypeError, ValueError, KeyError):
            return True  # keys that cannot be compared: assume they overlap

    def may_touch(other: Snapshot) -> bool:
        if not precise or other.commit_kind != "APPEND":
            return True
        entries = store.manifests.read_entries(store.manifests.read_list(other.delta_manifest_list))
        if any(e.kind != KIND_ADD for e in entries):
            return True
        if ScanPlanner(store, schema).plan_entries(entries, predicate=list(pruned_by or ())).splits:
            return True
        return any(overlaps(e) for e in entries)

    def check(latest: Snapshot | None) -> IndexChange:
        if latest is None or latest.id <= base:
            return IndexChange()
        for sid in range(base + 1, latest.id + 1):
            other = store.snapshots.snapshot(sid)
            if other.commit_kind != "COMPACT" and may_touch(other):
                raise StaleReadError(
                    f"Snapshot {sid} ({other.commit_kind}, commit user '{other.commit_user}') landed on branch "
                    f"'{store.branch}' of {store.table_path} after this change read its rows at snapshot {base}, "
                    "and may hold rows the change reads or writes, so the change would be ordered against rows it "
                    "never saw. Nothing was committed; run it again."
                )
        return IndexChange()

    return check


def _replanned(store: FileStore, run: Callable[[], MergeResult]) -> MergeResult:
    """Run a change (read, decide, write, commit) again while its commit finds a newer commit than its read
    (:func:`unchanged_since`), so it applies to the rows it lands on."""
    last: StaleReadError | None = None
    for _ in range(DML_ATTEMPTS):
        try:
            return run()
        except StaleReadError as exc:
            last = exc
    raise CommitConflictError(
        f"A change to branch '{store.branch}' of {store.table_path} was planned {DML_ATTEMPTS} times and each time "
        f"another writer committed between its read and its commit (last: {last}). Nothing was committed; run it "
        "again when the branch is quieter."
    )


def _vector_update(
    store: FileStore,
    schema: TableSchema,
    base: Snapshot | None,
    changed: Mapping[tuple[bytes, int], Mapping[str, np.ndarray]],
) -> tuple[Callable[[Snapshot | None], IndexChange], list[str]]:
    """Write one new index file per touched bucket (its untouched files' vectors copied, the touched ones'
    grown) and return the commit's index update and the files written.

    The update checks, against the snapshot each commit attempt builds on, that the touched buckets' vector
    files are still the ones read (a concurrent delete or compaction wrote others: ours would drop their
    positions) and that every touched data file is still live (a compaction moved its rows elsewhere: the
    positions would mark nothing); either is a :class:`CommitConflictError`."""
    if str(schema.options.get("index-file-in-data-file-dir", "")).strip().lower() == "true":
        raise DmlError(
            f"Table {store.table_path} sets 'index-file-in-data-file-dir' = 'true'; pyspark-paimon writes deletion "
            "vectors only into the table's index/ directory. Unset the option, or run the change with Paimon."
        )
    fileio = store.fileio
    index_dir = f"{store.table_path}/index"
    base_manifest = base.index_manifest if base is not None else None
    base_entries = read_index_manifest(fileio, store.manifests.path(base_manifest)) if base_manifest else []
    base_files = bucket_vector_files(base_entries)
    current = (
        deletion_files(fileio, store.manifests.path(base_manifest), lambda e: f"{index_dir}/{e.file_name}")
        if base_manifest
        else {}
    )
    bitmap64 = store.schema().core_options.get(DELETION_VECTORS_BITMAP64)
    added: list[IndexManifestEntry] = []
    written: list[str] = []
    try:
        for (partition, bucket), grown in changed.items():
            vectors = {
                name: read_deletion_vector(fileio, dfile, name)
                for name, dfile in current.get((partition, bucket), {}).items()
                if name not in grown
            }
            vectors.update(grown)
            entry = write_deletion_vector_file(fileio, index_dir, partition, bucket, vectors, bitmap64)
            written.append(f"{index_dir}/{entry.file_name}")
            added.append(entry)
    except BaseException:
        for path in written:
            fileio.delete(path)
        raise
    buckets = set(changed)
    touched = {name for grown in changed.values() for name in grown}
    change = IndexChange(frozenset((p, b, DELETION_VECTORS_INDEX) for p, b in buckets), tuple(added))

    def update(latest: Snapshot | None) -> IndexChange:
        manifest = latest.index_manifest if latest is not None else None
        now = bucket_vector_files(read_index_manifest(fileio, store.manifests.path(manifest))) if manifest else {}
        for b in buckets:
            if now.get(b, frozenset()) != base_files.get(b, frozenset()):
                raise CommitConflictError(
                    f"The deletion vectors of bucket {b[1]} of {store.table_path} changed while rows were being "
                    "deleted (another delete or a compaction wrote new ones). Nothing was committed; re-run it."
                )
        if latest is not None and (base is None or latest.id != base.id):
            live = {e.file.file_name for e in store.live_entries(latest)}
            gone = sorted(touched - live)
            if gone:
                raise CommitConflictError(
                    f"Data file(s) {gone[:3]} of {store.table_path} were removed (compacted or overwritten) while "
                    "rows in them were being deleted. Nothing was committed; re-run the change."
                )
        return change

    return update, written


def _replace_rows(rows: pa.Table, new_rows: pa.Table, updated: np.ndarray) -> pa.Table:
    mask = pa.array(updated)
    cols = []
    for name in rows.column_names:
        cols.append(pc.if_else(mask, new_rows.column(name), rows.column(name)))
    return pa.Table.from_arrays(cols, schema=rows.schema)


# ------------------------------------------------------------------------------------------- delete / update
def delete_rows(store: FileStore, filter_text: str) -> MergeResult:
    """Delete the rows ``filter_text`` (the ``filter`` read option's SQL) selects, in one commit."""
    if not isinstance(filter_text, str) or not filter_text.strip():
        raise OptionError(
            'delete needs a filter (SQL, e.g. "id = 3"); to empty a table overwrite it with no rows, or use '
            "filter 'true'."
        )
    schema = store.schema()
    check_merge_engine(schema, store.table_path, deletes=True, updates=False)
    text = None if filter_text.strip().lower() == "true" else filter_text
    if not schema.primary_keys and (
        text is None or tree_columns(parse_filter(text, schema)) <= set(schema.partition_keys)
    ):
        whole = _delete_files(store, text)
        if whole is not None:
            return whole

    def run() -> MergeResult:
        target = _load(store, schema, text)
        mask = _filter_mask(target, schema, text)
        return _write(store, schema, target, mask, np.zeros_like(mask), None, None)

    return _replanned(store, run)


def _delete_files(store: FileStore, filter_text: str | None) -> MergeResult | None:
    """An append-table delete whose filter names only partition columns selects whole files: they are removed
    without being read (as Java drops the partitions), in one OVERWRITE commit of DELETE entries. Files written
    concurrently into those partitions are not removed; a concurrent removal of one of ours fails the commit."""
    planned = plan_read(store, ReadOptions.from_options({FILTER_KEY: filter_text} if filter_text else {}))
    _refuse_foreign(planned.kind, store)
    old: dict[tuple[bytes, int, int], list[DataFileMeta]] = defaultdict(list)
    rows = 0
    for split in planned.plan.splits:
        for f in split.files:
            if split.deletion_files.get(f.file_name) is not None and _writes_vectors(store.schema()):
                return None  # its vector would be left behind: delete its rows through the vectors instead
            _refuse_deletion_vector(store, split, f)
            old[(split.partition, split.bucket, split.total_buckets)].append(f)
            rows += f.row_count
    if not old:
        return MergeResult()
    job = prepare_write(store)
    messages = [CommitMessage(p, b, total, (), tuple(files)) for (p, b, total), files in old.items()]
    snapshot = job.commit(messages, kind="OVERWRITE")
    return MergeResult(
        deleted=rows,
        files_rewritten=sum(len(v) for v in old.values()),
        snapshot_id=snapshot.id if snapshot is not None else None,
    )


def _refuse_deletion_vector(store: FileStore, split: DataSplit, f: DataFileMeta) -> None:
    if split.deletion_files.get(f.file_name) is not None:
        raise DmlError(
            f"Data file {f.file_name} of {store.table_path} has a deletion vector, which removing or rewriting the "
            "file would leave behind. Compact the table (t.maintenance.compact) and re-run the change."
        )


def update_rows(store: FileStore, assignments: Mapping[str, str], filter_text: str | None = None) -> MergeResult:
    """Set ``column = <SQL expression>`` on the rows ``filter_text`` selects (all rows without it)."""
    if not assignments:
        raise OptionError("update needs at least one assignment, e.g. set={'v': 'v + 1'}.")
    schema = store.schema()
    check_merge_engine(schema, store.table_path, deletes=False, updates=True)
    columns = _check_assigned(schema, store.table_path, list(assignments))
    parsed = {col: parse_expression(expr) for col, expr in zip(columns, assignments.values())}

    def run() -> MergeResult:
        target = _load(store, schema, filter_text)
        mask = _filter_mask(target, schema, filter_text)
        rows = target.rows
        scope = Scope({"target": {n: rows.column(n) for n in rows.column_names}}, rows.num_rows, default="target")
        new_values = {col: _store_column(evaluate(node, scope), schema, col) for col, node in parsed.items()}
        return _write(store, schema, target, np.zeros_like(mask), mask, _with_columns(rows, new_values), None)

    return _replanned(store, run)


# ------------------------------------------------------------------------------------------- merge
@dataclass(frozen=True)
class _Clause:
    action: str  # update | update_all | delete | insert | insert_all
    condition: str | None = None
    values: Mapping[str, str] | None = None


class MergeBuilder:
    """``t.merge(source, on=...)``: clauses in delta-rs's style, run by :meth:`execute` as ONE commit.

    Expressions name ``source.<col>`` and ``target.<col>``; an unqualified name must be unambiguous. Within one
    group (matched, not matched, not matched by source) the first clause whose condition holds takes a row.
    """

    def __init__(self, store: FileStore, source: pa.Table | pa.RecordBatchReader, on: str | Sequence[str]):
        self._store = store
        if isinstance(source, pa.RecordBatchReader):
            source = source.read_all()
        if not isinstance(source, pa.Table):
            raise OptionError(
                f"A merge source must be a pyarrow Table or RecordBatchReader, got {type(source).__name__}. Convert "
                "a pandas DataFrame with pyarrow.Table.from_pandas. Spark DataFrame sources are not taken yet: "
                "DataFrame.toArrow() collects one to the driver, which only suits small sources."
            )
        self._source = source
        self._on = [on] if isinstance(on, str) else list(on)
        if not self._on:
            raise OptionError("merge needs at least one key column in 'on'.")
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []
        self._by_source: list[_Clause] = []

    def when_matched_update(self, set: Mapping[str, str], condition: str | None = None) -> "MergeBuilder":
        self._matched.append(_Clause("update", condition, dict(set)))
        return self

    def when_matched_update_all(self, condition: str | None = None) -> "MergeBuilder":
        self._matched.append(_Clause("update_all", condition))
        return self

    def when_matched_delete(self, condition: str | None = None) -> "MergeBuilder":
        self._matched.append(_Clause("delete", condition))
        return self

    def when_not_matched_insert(self, values: Mapping[str, str], condition: str | None = None) -> "MergeBuilder":
        self._not_matched.append(_Clause("insert", condition, dict(values)))
        return self

    def when_not_matched_insert_all(self, condition: str | None = None) -> "MergeBuilder":
        self._not_matched.append(_Clause("insert_all", condition))
        return self

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> "MergeBuilder":
        self._by_source.append(_Clause("delete", condition))
        return self

    # ---------------------------------------------------------------------------------------------
    def _checked_keys(self, schema: TableSchema) -> tuple[list[str], list[str]]:
        """The join keys as (table columns, source columns), once the clauses exist and the merge engine can
        apply them (shared by the Arrow and the Spark merge)."""
        if not (self._matched or self._not_matched or self._by_source):
            raise OptionError("merge has no clause; add when_matched_* / when_not_matched_* clauses before execute().")
        deletes = any(c.action == "delete" for c in [*self._matched, *self._by_source])
        updates = any(c.action.startswith("update") for c in self._matched)
        check_merge_engine(schema, self._store.table_path, deletes=deletes, updates=updates)
        return [self._table_column(schema, k) for k in self._on], [self._source_column(k) for k in self._on]

    # ---------------------------------------------------------------------------------------------
    def execute(self) -> MergeResult:
        store, source = self._store, self._source
        schema = store.schema()
        on, src_on = self._checked_keys(schema)
        keyed_source = source.select(src_on).rename_columns(on)
        keyed_source = pa.table({k: _store_column(keyed_source.column(k), schema, k) for k in on})
        self._refuse_duplicate_keys(keyed_source, on)

        # Without by-source clauses only target rows whose keys the source holds can change: prune the read by
        # the source's keys (partitions, buckets, file and row-group statistics).
        prune = [] if self._by_source else key_prune(keyed_source, on)

        def run() -> MergeResult:
            target = _load(store, schema, None, prune)
            t_idx, s_idx = _join(target.rows, keyed_source, on)
            if not self._by_source and (target.file_of_row is None or target.positions is not None):
                # Primary-key and deletion-vector changes touch only the matched rows: drop the rest before the
                # clauses run (copy-on-write keeps every row of a file, for the rewrite).
                target, t_idx = _only_rows(target, t_idx), np.arange(len(t_idx), dtype=np.int64)
            rows = target.rows
            deleted, updated, new_rows, inserts = self.decide(schema, rows, source, t_idx, s_idx)
            return _write(store, schema, target, deleted, updated, new_rows, inserts)

        return _replanned(store, run)

    def with_source(self, source: pa.Table) -> "MergeBuilder":
        """The same clauses over another Arrow source (a Spark merge task's share of the source rows)."""
        other = MergeBuilder(self._store, source, self._on)
        other._matched, other._not_matched, other._by_source = self._matched, self._not_matched, self._by_source
        return other

    def decide(
        self, schema: TableSchema, rows: pa.Table, source: pa.Table, t_idx: np.ndarray, s_idx: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, pa.Table | None, pa.Table | None]:
        """Apply the clauses to target ``rows`` and ``source`` rows matched as (``t_idx``, ``s_idx``) pairs: which
        target rows are deleted and updated, the updated rows' new values, and the rows to insert."""
        matched_t = np.zeros(rows.num_rows, dtype=bool)
        matched_t[t_idx] = True
        matched_s = np.zeros(source.num_rows, dtype=bool)
        matched_s[s_idx] = True
        deleted = np.zeros(rows.num_rows, dtype=bool)
        updated = np.zeros(rows.num_rows, dtype=bool)
        new_rows: pa.Table | None = None
        if self._matched and len(t_idx):
            new_rows = self._apply_matched(schema, rows, source, t_idx, s_idx, deleted, updated)
        if self._by_source:
            self._apply_by_source(rows, np.flatnonzero(~matched_t), deleted)
        inserts = (
            self._inserts(schema, source.take(pa.array(np.flatnonzero(~matched_s)))) if self._not_matched else None
        )
        return deleted, updated, new_rows, inserts

    def _table_column(self, schema: TableSchema, name: str) -> str:
        return _check_key(schema, name, self._store.table_path)

    def _source_column(self, name: str) -> str:
        names = self._source.column_names
        if name in names:
            return name
        lower = [n for n in names if n.lower() == name.lower()]
        if len(lower) != 1:
            raise OptionError(f"The merge source has no column '{name}' (columns: {', '.join(names)}).")
        return lower[0]

    @staticmethod
    def _refuse_duplicate_keys(keys: pa.Table, on: list[str]) -> None:
        valid = keys.filter(
            pc.and_(*[pc.is_valid(keys.column(k)) for k in on]) if len(on) > 1 else pc.is_valid(keys.column(on[0]))
        )
        counts = valid.group_by(on, use_threads=False).aggregate([([], "count_all")])
        dup = counts.filter(pc.greater(counts.column("count_all"), 1))
        if dup.num_rows:
            first = {k: dup.column(k)[0].as_py() for k in on}
            raise DmlError(
                f"The merge source holds {dup.num_rows} key(s) more than once (e.g. {first}); a target row would "
                "match several source rows. Deduplicate the source by the merge keys first."
            )

    def _scope(self, target: pa.Table | None, source: pa.Table | None, default: str | None) -> Scope:
        cols: dict[str, dict[str, pa.ChunkedArray]] = {}
        n = 0
        if target is not None:
            cols["target"] = {c: target.column(c) for c in target.column_names}
            n = target.num_rows
        if source is not None:
            cols["source"] = {c: source.column(c) for c in source.column_names}
            n = source.num_rows
        return Scope(cols, n, default)

    def _apply_matched(
        self,
        schema: TableSchema,
        rows: pa.Table,
        source: pa.Table,
        t_idx: np.ndarray,
        s_idx: np.ndarray,
        deleted: np.ndarray,
        updated: np.ndarray,
    ) -> pa.Table | None:
        tgt = rows.take(pa.array(t_idx))
        src = source.take(pa.array(s_idx))
        scope = self._scope(tgt, src, None)
        remaining = np.ones(len(t_idx), dtype=bool)
        new_cols: dict[str, pa.ChunkedArray] = {}
        upd_any = np.zeros(len(t_idx), dtype=bool)
        for clause in self._matched:
            cond = _condition(clause.condition, scope)
            hit = remaining & cond
            remaining &= ~hit
            if clause.action == "delete":
                deleted[t_idx[hit]] = True
                continue
            if clause.action == "update_all":
                names = [self._source_column(f.name) if _has(src, f.name) else None for f in schema.fields]
                assigned = {
                    f.name: f"source.`{s}`"
                    for f, s in zip(schema.fields, names)
                    if s is not None and f.name not in schema.primary_keys and f.name not in schema.partition_keys
                }
            else:
                assigned = dict(clause.values or {})
            columns = _check_assigned(schema, self._store.table_path, list(assigned))
            mask = pa.array(hit)
            for col, expr in zip(columns, assigned.values()):
                value = _store_column(evaluate(expr, scope), schema, col)
                base = new_cols.get(col, tgt.column(col))
                chosen = pc.if_else(mask, value, base)
                new_cols[col] = chosen if isinstance(chosen, pa.ChunkedArray) else pa.chunked_array([chosen])
            upd_any |= hit
        updated[t_idx[upd_any]] = True
        if not new_cols:
            return None
        # Scatter the matched rows' new values back to target positions: concat + take, no per-row Python.
        n = rows.num_rows
        positions = np.arange(n, dtype=np.int64)
        positions[t_idx] = n + np.arange(len(t_idx), dtype=np.int64)
        index = pa.array(positions)
        full = {}
        for col, values in new_cols.items():
            joined = pa.chunked_array([*rows.column(col).chunks, *values.chunks], type=rows.column(col).type)
            full[col] = joined.take(index)
        return _with_columns(rows, full)

    def _apply_by_source(self, rows: pa.Table, unmatched: np.ndarray, deleted: np.ndarray) -> None:
        tgt = rows.take(pa.array(unmatched))
        scope = self._scope(tgt, None, "target")
        remaining = np.ones(len(unmatched), dtype=bool)
        for clause in self._by_source:
            hit = remaining & _condition(clause.condition, scope)
            remaining &= ~hit
            deleted[unmatched[hit]] = True

    def _inserts(self, schema: TableSchema, src: pa.Table) -> pa.Table | None:
        scope = self._scope(None, src, "source")
        remaining = np.ones(src.num_rows, dtype=bool)
        parts: list[pa.Table] = []
        arrow = schema.arrow_schema()
        for clause in self._not_matched:
            hit = remaining & _condition(clause.condition, scope)
            remaining &= ~hit
            if not hit.any():
                continue
            if clause.action == "insert_all":
                values = {f.name: f"source.`{self._source_column(f.name)}`" for f in schema.fields if _has(src, f.name)}
            else:
                values = dict(clause.values or {})
                unknown = [c for c in values if not schema.has_field(c)]
                if unknown:
                    raise OptionError(
                        f"Table {self._store.table_path} has no column(s) {unknown} to insert into (columns: "
                        f"{', '.join(schema.field_names)})."
                    )
            picked = src.filter(pa.array(hit))
            sub = self._scope(None, picked, "source")
            cols = []
            for f in schema.fields:
                if f.name in values:
                    cols.append(_store_column(evaluate(values[f.name], sub), schema, f.name))
                else:
                    cols.append(pa.chunked_array([pa.nulls(picked.num_rows, arrow.field(f.name).type)]))
            parts.append(pa.Table.from_arrays(cols, schema=arrow))
        if not parts:
            return None
        return pa.concat_tables(parts)


def _has(table: pa.Table, name: str) -> bool:
    return name in table.column_names or sum(1 for n in table.column_names if n.lower() == name.lower()) == 1


def _check_key(schema: TableSchema, name: str, table: str) -> str:
    if schema.has_field(name):
        return name
    lower = [f.name for f in schema.fields if f.name.lower() == name.lower()]
    if len(lower) != 1:
        raise OptionError(
            f"Table {table} has no column '{name}' to merge on (columns: {', '.join(schema.field_names)})."
        )
    return lower[0]


def _condition(text: str | None, scope: Scope) -> np.ndarray:
    if text is None:
        return np.ones(scope.num_rows, dtype=bool)
    return evaluate_condition(text, scope).to_numpy(zero_copy_only=False).astype(bool)


def key_prune(keys: pa.Table, on: Sequence[str]) -> list[Leaf]:
    """Pruning leaves that hold for every row whose key the source ``keys`` holds: per key column, ``in`` its
    values when there are at most ``_PRUNE_KEYS`` (which also selects the buckets of a key that fixes them),
    else its value range (skips files and row groups outside it). NULL keys match nothing."""
    leaves: list[Leaf] = []
    for k in on:
        column = keys.column(k).drop_null()
        if len(column) == 0:
            return leaves
        values = pc.unique(column)
        if len(values) <= _PRUNE_KEYS:
            leaves.append(Leaf(k, "in", tuple(values.to_pylist())))
        else:
            bounds = pc.min_max(column)
            leaves += [Leaf(k, ">=", bounds["min"].as_py()), Leaf(k, "<=", bounds["max"].as_py())]
    return leaves


def _only_rows(target: _Target, t_idx: np.ndarray) -> _Target:
    """``target`` reduced to the rows ``t_idx`` (each row once), in that order."""
    index = pa.array(t_idx)
    return replace(
        target,
        rows=target.rows.take(index),
        file_of_row=target.file_of_row[t_idx] if target.file_of_row is not None else None,
        positions=target.positions[t_idx] if target.positions is not None else None,
    )


def _join(rows: pa.Table, keys: pa.Table, on: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(target row, source row) index pairs whose keys are equal and not NULL (SQL equality)."""
    t = rows.select(on).append_column("__t", pa.array(np.arange(rows.num_rows, dtype=np.int64)))
    s = keys.append_column("__s", pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    for k in on:
        t = t.filter(pc.is_valid(t.column(k)))
        s = s.filter(pc.is_valid(s.column(k)))
    if t.num_rows == 0 or s.num_rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    joined = t.join(s, keys=on, join_type="inner", use_threads=False)
    return (
        joined.column("__t").to_numpy().astype(np.int64),
        joined.column("__s").to_numpy().astype(np.int64),
    )
