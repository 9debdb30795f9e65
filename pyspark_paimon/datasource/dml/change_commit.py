"""Writing and committing one row-level change: :func:`write_change` writes a part of it with one writer (retractions
and upserts on primary-key tables, ``copy_on_write`` rewrites, ``vector_update`` vectors) into a :class:`Written`,
and :func:`commit_change` commits every part as ONE snapshot, so the Arrow DML and the Spark merge (whose tasks each
write a part) commit alike; :func:`apply_change` is both in one process. A failed commit removes the new files.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from pyspark_paimon.datasource.dml.change_target import Target
from pyspark_paimon.datasource.dml.copy_on_write import rewrite_files
from pyspark_paimon.datasource.dml.stale_reads import unchanged_since
from pyspark_paimon.datasource.dml.tracked_rewrite import write_with_ids
from pyspark_paimon.datasource.dml.vector_update import grown_vectors, vector_update
from pyspark_paimon.datasource.jobs import WriteJob, prepare_write
from pyspark_paimon.datasource.write.write import TableWriter
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf

__all__ = [
    "KIND_INSERT",
    "KIND_UPDATE_AFTER",
    "KIND_DELETE",
    "MergeResult",
    "Written",
    "apply_change",
    "write_change",
    "commit_change",
]

KIND_INSERT, KIND_UPDATE_AFTER, KIND_DELETE = 0, 2, 3


@dataclass(frozen=True)
class MergeResult:
    """What one DML commit changed (``t.delete``, ``t.update``, ``t.merge(...).execute()``). Truthy when a
    snapshot was committed."""

    inserted: int = 0
    """Rows inserted (merge's ``when_not_matched_insert*``)."""
    updated: int = 0
    """Rows updated."""
    deleted: int = 0
    """Rows deleted."""
    copied: int = 0
    """Unchanged rows that copy-on-write rewrote with the touched ones (append tables without deletion vectors)."""
    files_rewritten: int = 0
    """Data files copy-on-write replaced (append tables)."""
    snapshot_id: int | None = None
    """The snapshot committed (None: no row matched, nothing was committed)."""
    vectors_written: int = 0
    """Data files whose deletion vector the change wrote (append tables with deletion vectors)."""
    files_read: int = 0
    """Data files the change read after pruning by partition, bucket and key statistics (a merge prunes by its
    source's keys): its cost shows as what it touched."""

    def __bool__(self) -> bool:
        return self.snapshot_id is not None


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


def apply_change(
    store: FileStore,
    schema: TableSchema,
    target: Target,
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
    target: Target,
    deleted: np.ndarray,
    updated: np.ndarray,
    new_rows: pa.Table | None,
    inserts: pa.Table | None,
) -> Written:
    """Write one part of a change with ``writer`` (files and the vectors to add), without committing."""
    n_del, n_upd = int(deleted.sum()), int((updated & ~deleted).sum())
    n_ins = inserts.num_rows if inserts is not None else 0
    old: dict[tuple[bytes, int, int], list[DataFileMeta]] = {}
    bucket_vectors: dict[tuple[bytes, int], dict[str, np.ndarray]] = {}
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
            bucket_vectors = grown_vectors(target, deleted | updated)
            if n_upd and ROW_ID in rows.column_names:  # a row-tracking table: the new versions keep their ids
                assert target.file_of_row is not None
                for i in np.unique(target.file_of_row[updated & ~deleted]):
                    mine = updated & ~deleted & (target.file_of_row == i)
                    write_with_ids(writer, schema, target.files[int(i)][0], changed.filter(pa.array(mine)), mine[mine])
            elif n_upd:
                writer.write(changed.filter(pa.array(updated & ~deleted)))  # the new versions, as new rows
        else:
            old, copied = rewrite_files(writer, store, target, deleted, updated, new_rows)
        if inserts is not None and inserts.num_rows:
            if schema.primary_keys:
                writer.write(inserts, kinds=pa.array(np.full(inserts.num_rows, KIND_INSERT, dtype=np.int8)))
            else:
                writer.write(inserts)
        messages = writer.prepare_commit()
    except BaseException:
        writer.abort()
        raise
    return Written(list(messages), old, bucket_vectors, n_ins, n_upd, n_del, copied)


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
            index_update, index_paths = vector_update(store, schema, snapshot, bucket_vectors)
        except BaseException:
            abort()
            raise

    def abort_all() -> None:
        abort()
        for path in index_paths:
            store.fileio.delete(path)

    result = job.commit(messages, kind="OVERWRITE" if old else "APPEND", index_update=index_update, abort=abort_all)
    return MergeResult(
        inserted=sum(p.inserted for p in parts),
        updated=sum(p.updated for p in parts),
        deleted=sum(p.deleted for p in parts),
        copied=sum(p.copied for p in parts),
        files_rewritten=sum(len(v) for v in old.values()),
        snapshot_id=result.id if result is not None else None,
        vectors_written=sum(len(v) for v in bucket_vectors.values()),
    )
