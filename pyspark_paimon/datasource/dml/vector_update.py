"""Deletion-vector changes of append tables with ``deletion-vectors.enabled`` (Java's Spark DML does the same).

The positions of the deleted rows, and of the old versions of updated rows, are added to each touched data
file's vector (:func:`grown_vectors`); every vector of a touched bucket goes into one new ``DELETION_VECTORS`` index
file (Java's layout), and the commit's index update replaces the bucket's index entries, refusing the commit when
the bucket's vectors or the touched files changed since the read (:func:`vector_update`). No data file is rewritten.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Mapping

import numpy as np

from pyspark_paimon.datasource.dml.change_target import Target
from pyspark_paimon.errors import CommitConflictError, DmlError
from pyspark_paimon.metadata.manifests.deletion_vectors import (
    DELETION_VECTORS_INDEX,
    bucket_vector_files,
    deletion_files,
    read_deletion_vector,
    write_deletion_vector_file,
)
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange, IndexManifestEntry, read_index_manifest
from pyspark_paimon.metadata.schema.options import DELETION_VECTORS_BITMAP64
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore

__all__ = ["grown_vectors", "vector_update"]


def grown_vectors(target: Target, marked: np.ndarray) -> dict[tuple[bytes, int], dict[str, np.ndarray]]:
    """Per touched (partition, bucket): each touched file's vector grown by the positions of its ``marked`` rows."""
    assert target.file_of_row is not None and target.positions is not None
    bucket_vectors: dict[tuple[bytes, int], dict[str, np.ndarray]] = defaultdict(dict)
    for i in np.unique(target.file_of_row[marked]):
        split, f = target.files[int(i)]
        add = target.positions[marked & (target.file_of_row == i)]
        bucket_vectors[(split.partition, split.bucket)][f.file_name] = np.union1d(
            target.existing.get(int(i), add[:0]), add
        )
    return dict(bucket_vectors)


def vector_update(
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
