"""Rewriting the file indexes of existing data files (Paimon's ``rewrite_file_index`` procedure).

A table that gains ``file-index.<type>.columns`` only indexes the files written afterwards; this builds, for
every live data file (of the given partitions), the indexes the table's options name now, from the file's own
rows, and commits the files again with them: one COMPACT snapshot whose entries delete each file and add it
back with its new index (the data files themselves are untouched, as in Java's ``RewriteFileIndexSink``). A
container up to ``file-index.in-manifest-threshold`` goes into the manifest; a larger one into a new index file
beside the data file (``<data file>.index``, or the next number after the file's current index file, Java's
``createNewFileIndexFilePath``), never over an index file an older snapshot still reads. Indexes the options no
longer name are dropped. A file's columns are matched by field id, so files written before a rename get
their index under the name they hold. A data-evolution file of some columns (``_WRITE_COLS``) is indexed on those
columns only: the others are not in it, and an index of them would say their values are absent.

A concurrent commit that removed one of the files makes the commit a conflict: the new index files are deleted
and the rewrite is planned again on the new latest snapshot (up to ``MAX_ATTEMPTS`` times).
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from pyspark_paimon.datasource.compact.compact import MAX_ATTEMPTS
from pyspark_paimon.datasource.compact.compact_plan import PartitionSpecs, partition_matcher
from pyspark_paimon.datasource.read.file_read import read_file_columns
from pyspark_paimon.errors import CommitConflictError
from pyspark_paimon.metadata.fileindex.index_spec import (
    INDEX_FILE_SUFFIX,
    FileIndexSpec,
    index_file_name,
    next_index_file_name,
)
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit, commit_or_abort
from pyspark_paimon.metadata.snapshots.snapshot import now_millis
from pyspark_paimon.metadata.store import FileStore

__all__ = ["RewriteFileIndexResult", "rewrite_file_index"]

_THREADS = 8


@dataclass
class RewriteFileIndexResult:
    """What one rewrite did: the snapshot it committed, the data files it re-indexed, and how many of their
    containers went into the manifest and into index files. Truthy when a snapshot was committed."""

    snapshot_id: int | None = None
    """The COMPACT snapshot committed (None: no file needed new indexes)."""
    files: int = 0
    """Data files re-indexed."""
    embedded: int = 0
    """Of those, the files whose index container went into the manifest."""
    index_files: int = 0
    """Index files written (``<data file>.index``)."""
    attempts: int = 0
    """Plans made: more than one when a concurrent commit conflicted."""
    notes: list[str] = field(default_factory=list)
    """What else happened (a conflict retried)."""

    def __bool__(self) -> bool:
        return self.snapshot_id is not None


@dataclass(frozen=True)
class _Rewritten:
    entry: ManifestEntry
    new: DataFileMeta
    written: str | None  # the index file written, if any


def _rewrite_one(store: FileStore, schema: TableSchema, spec: FileIndexSpec, entry: ManifestEntry) -> _Rewritten:
    f = entry.file
    file_schema = schema if f.schema_id == schema.id else store.schemas.schema(f.schema_id)
    file_fields = file_schema.fields
    if f.write_cols is not None:  # a data-evolution file of some columns: index only the columns it holds
        file_fields = [c for c in file_fields if c.name in f.write_cols]
    file_spec = spec.for_file(schema.fields, file_fields)
    values = tuple(deserialize_row(entry.partition, [p.type for p in schema.partition_fields]))
    directory = (
        f.external_path.rsplit("/", 1)[0] if f.external_path else store.bucket_path(schema, values, entry.bucket)
    )
    old_index = [x for x in f.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
    extras = tuple(x for x in f.extra_files if not x.endswith(INDEX_FILE_SUFFIX))
    if not file_spec.active:
        return _Rewritten(entry, replace(f, embedded_index=None, extra_files=extras), None)
    rows = read_file_columns(
        store.fileio, f"{directory}/{f.file_name}", f, file_schema.core_options, [i.column for i in file_spec.indexes]
    )
    name = next_index_file_name(old_index[0]) if old_index else index_file_name(f.file_name)
    written: list[str] = []
    embedded, index_file = file_spec.place(store.fileio, file_spec.build(rows), f"{directory}/{name}", written)
    new = replace(f, embedded_index=embedded, extra_files=extras + ((index_file,) if index_file else ()))
    return _Rewritten(entry, new, written[0] if written else None)


def rewrite_file_index(
    store: FileStore, partitions: PartitionSpecs = None, *, progress: Progress | None = None
) -> RewriteFileIndexResult:
    """Give every live data file of ``store``'s branch (in ``partitions``: dicts or 'k=v,k2=v2' specs; default
    all) the file indexes the table's options name now, in one COMPACT snapshot. ``progress(step, done,
    total)`` is called per data file."""
    store.fileio.require_exclusive_create()
    result = RewriteFileIndexResult()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        result.attempts = attempt
        schema = store.schema()
        snapshot = store.snapshots.latest()
        if snapshot is None:
            return result
        matcher = partition_matcher(schema, partitions, what="rewrite_file_index")
        types = [p.type for p in schema.partition_fields]
        entries = [
            e
            for e in store.live_entries(snapshot)
            if matcher is None or matcher(tuple(deserialize_row(e.partition, types)))
        ]
        done = _rewrite_all(
            store, schema, FileIndexSpec.of(schema.options, schema.fields, store.table_path), entries, progress
        )
        changed = [r for r in done if r.new != r.entry.file]
        if not changed:
            return result
        messages: dict[tuple[bytes, int], tuple[int, list[DataFileMeta], list[DataFileMeta]]] = {}
        for r in changed:
            _, before, after = messages.setdefault((r.entry.partition, r.entry.bucket), (r.entry.total_buckets, [], []))
            before.append(r.entry.file)
            after.append(r.new)
        commit = FileStoreCommit(store, schema.options)
        user = schema.core_options.new_commit_user()
        started = now_millis()
        try:
            committed = commit_or_abort(
                functools.partial(
                    commit.commit,
                    [
                        CommitMessage(part, bucket, total, tuple(after), compact_before=tuple(before))
                        for (part, bucket), (total, before, after) in messages.items()
                    ],
                    kind="COMPACT",
                    commit_user=user,
                ),
                functools.partial(_delete_written, store, changed),
                functools.partial(store.snapshots.commit_of, user, started),
            )
            result.snapshot_id = committed.id if committed is not None else None
        except CommitConflictError as exc:
            if attempt == MAX_ATTEMPTS:
                raise CommitConflictError(
                    f"rewrite_file_index of {store.table_path} (branch '{store.branch}') lost {attempt} times to "
                    f"concurrent commits ({exc}). Nothing was committed; run it again when fewer writers touch the "
                    "table."
                ) from exc
            result.notes.append(f"attempt {attempt}: {exc}")
            continue
        result.files = len(changed)
        result.embedded = sum(1 for r in changed if r.new.embedded_index is not None)
        result.index_files = sum(1 for r in changed if r.written is not None)
        return result
    return result  # pragma: no cover - the loop returns or raises


def _rewrite_all(
    store: FileStore, schema: TableSchema, spec: FileIndexSpec, entries: list[ManifestEntry], progress: Progress | None
) -> list[_Rewritten]:
    """Every entry's new index, on threads (reading Parquet and hashing release the GIL); on an error the index
    files already written are deleted."""
    done: list[_Rewritten] = []
    one = functools.partial(_rewrite_one, store, schema, spec)
    with ThreadPoolExecutor(max_workers=max(1, min(_THREADS, len(entries))), thread_name_prefix="paimon-index") as pool:
        try:
            for count, item in enumerate(pool.map(one, entries), 1):
                done.append(item)
                report(progress, "rewrite file indexes", count, len(entries))
        except BaseException:
            _delete_written(store, done)
            raise
    return done


def _delete_written(store: FileStore, items: list[_Rewritten]) -> None:
    for r in items:
        if r.written is not None:
            store.fileio.delete(r.written)
