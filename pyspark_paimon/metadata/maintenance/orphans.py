"""Orphan-file removal: delete table files that no snapshot, tag or changelog of any branch references.

Orphans come from failed or abandoned writes (data files written but never committed), from commits that
lost a race (their manifests), from rolled-back snapshots (rollback deletes no data files), from dropped
branches and deleted tags, and from interrupted expirations.

What is scanned, and nothing else:

* ``manifest/`` (manifest lists, manifests, index manifests, temp files of interrupted writes);
* ``index/`` and ``statistics/``;
* the bucket directories of the data layout: ``<k1>=<v>/.../<kn>=<v>/bucket-<b>/`` for the table's partition
  keys (``bucket-<b>/`` directly under the table for unpartitioned tables), below ``data-file.path-directory``
  when the table sets it;
* in the metadata directories of every branch (the table root and each ``branch/branch-<b>/``, and their
  ``schema/``, ``snapshot/``, ``tag/``, ``changelog/``, ``consumer/``): **only temp files**,
  ``.<name>.<uuid>.tmp`` (:func:`fileio.is_temp_file`), which a commit, schema change, tag or branch write
  killed between writing its temp file and linking/renaming it into place leaves behind. Nothing reads them.

Half-made branches (``metadata/refs/branch_making.py``: a create or a ``replace_main`` copy stopped before it
finished) claimed before the cutoff are removed first, whole, and so are branch directories older than the cutoff
that hold neither ``branch.json`` nor a schema: nothing lists or reads them. A half-made branch somebody committed
to is kept.

Data files the table's Iceberg metadata references (``metadata.iceberg.storage``) are kept too, and the Iceberg
metadata directory is never scanned (the Iceberg sync removes what it no longer uses).

Files in the staging directories of ``t.write_spark`` (``_jvm-write-<uuid>/`` under the table: Spark's own file
names, which no manifest ever references, left by a driver killed before it moved them into their buckets) are
orphans once older than the cutoff, and an emptied staging directory is removed.

Never touched: any other file of those metadata directories (snapshots, ``LATEST``/``EARLIEST`` hints,
schemas, tags, ``branch.json``), any file outside the layout above, and files living outside the table
directory.

A file is an orphan only if **(a)** no root of any branch references it (``reachability.py``) **and (b)** it is
older than the cutoff (default: one day before now). (b) protects writes in flight: a writer creates its
data files and manifests before the snapshot that references them, so a young unreferenced file may be
about to become live, and a temp file younger than the cutoff may belong to a commit that is linking it
right now. Files are listed *before* the roots are read, and the roots are re-read right
before deleting, so a commit that lands during the run protects its files.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pyspark_paimon.metadata.effects import taking_effect, took_effect
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.io.fileio import FileIO, FileStatus, is_temp_file
from pyspark_paimon.metadata.maintenance.deletion import nothing_deleted_yet
from pyspark_paimon.metadata.maintenance.reachability import FileRefs, ReachabilityScanner, all_roots, iter_new_roots
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.refs.branch_making import BranchMaker
from pyspark_paimon.metadata.rows.partition import escape_path_name
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, branch_dirs, branch_path
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import now_millis, to_millis

log = logging.getLogger(__name__)

DEFAULT_OLDER_THAN_MS = 24 * 3600 * 1000
#: The directories ``t.write_spark`` stages Spark's files in (``<table>/_jvm-write-<uuid>/``) before it moves them
#: into their buckets; a driver killed meanwhile leaves one. Nothing references a staged file.
JVM_STAGING_PREFIX = "_jvm-write-"
# Directories of the table root that hold per-branch metadata: scanned for temp files only.
METADATA_DIRS = frozenset({"schema", "snapshot", "tag", "branch", "changelog", "consumer"})
_BRANCH_METADATA_DIRS = ("schema", "snapshot", "tag", "changelog", "consumer")


@dataclass
class OrphanResult:
    """Orphans found (deleted unless ``dry_run``): full paths and their total size."""

    files: list[str] = field(default_factory=list)
    """The orphan files (full paths): deleted, or with ``dry_run`` found."""
    total_bytes: int = 0
    """Their total size."""
    dry_run: bool = False
    """True when nothing was deleted, only reported."""
    branches: list[str] = field(default_factory=list)
    """Half-made branches removed (or, with ``dry_run``, found): creates stopped before they finished."""

    @property
    def deleted_file_count(self) -> int:
        """How many orphan files (``len(files)``)."""
        return len(self.files)


def _bucket_dirs(fileio: FileIO, directory: str, keys: list[str]) -> list[str]:
    """Bucket directories under ``directory`` following the partition layout ``keys``."""
    if not keys:
        return [s.path for s in fileio.list_status(directory) if s.is_dir and s.name.startswith("bucket-")]
    prefix = escape_path_name(keys[0]) + "="
    out = []
    for s in fileio.list_status(directory):
        if s.is_dir and s.name.startswith(prefix):
            out.extend(_bucket_dirs(fileio, s.path, keys[1:]))
    return out


def _candidates(store: FileStore, cutoff_ms: int) -> list[tuple[str, FileStatus]]:
    """(category, status) of every file in the scanned directories older than the cutoff (laid out by the main
    branch's latest schema, whichever branch ``store`` is on)."""
    fileio, table_path = store.fileio, store.table_path
    schema = SchemaManager(fileio, table_path, MAIN_BRANCH).latest()
    keys = list(schema.partition_keys) if schema is not None else []
    dirs: list[tuple[str, str]] = [
        ("manifest", f"{table_path}/manifest"),
        ("index", f"{table_path}/index"),
        ("statistics", f"{table_path}/statistics"),
    ]
    if schema is not None:
        if keys and keys[0] in METADATA_DIRS:  # pragma: no cover - a partition key named like a metadata dir
            log.warning("partition key %r collides with a metadata directory; data directories not scanned", keys[0])
        else:
            data_root = "/".join(p for p in (table_path, schema.core_options.data_file_directory) if p)
            dirs.extend(("data", d) for d in _bucket_dirs(fileio, data_root, keys))
    out = []
    for category, directory in dirs:
        for status in fileio.list_status(directory):
            if not status.is_dir and status.mtime_millis < cutoff_ms:
                out.append((category, status))
    for directory in _metadata_dirs(store):
        for status in fileio.list_status(directory):
            if not status.is_dir and is_temp_file(status.name) and status.mtime_millis < cutoff_ms:
                out.append(("temp", status))
    for directory in _staging_dirs(store):
        out.extend(("staging", status) for status in _files_under(fileio, directory) if status.mtime_millis < cutoff_ms)
    return out


def _staging_dirs(store: FileStore) -> list[str]:
    return [
        s.path for s in store.fileio.list_status(store.table_path) if s.is_dir and s.name.startswith(JVM_STAGING_PREFIX)
    ]


def _files_under(fileio: FileIO, directory: str) -> list[FileStatus]:
    out = []
    for status in fileio.list_status(directory):
        out.extend(_files_under(fileio, status.path) if status.is_dir else [status])
    return out


def _metadata_dirs(store: FileStore) -> list[str]:
    """The directories where schemas, snapshots, hints, tags and lineage files are written atomically (temp
    file, then link or rename): each branch's root and its metadata subdirectories, main's included."""
    fileio, table_path = store.fileio, store.table_path
    out = []
    for root in [table_path, *(branch_path(table_path, b) for b in branch_dirs(fileio, table_path))]:
        out.append(root)
        out.extend(f"{root}/{d}" for d in _BRANCH_METADATA_DIRS)
    return out


def _referenced(name: str, refs: FileRefs) -> bool:
    """A name referenced in *any* role is kept, whatever directory it was found in."""
    return name in refs.data_files or name in refs.manifests or name in refs.index_files or name in refs.statistics


def remove_orphan_files(
    store: FileStore,
    *,
    older_than: object = None,
    dry_run: bool = False,
    now: object = None,
    progress: Progress | None = None,
) -> OrphanResult:
    """Delete (or, with ``dry_run``, only list) orphan files older than ``older_than`` (epoch ms or datetime;
    default one day before ``now``). See the module docstring for what is scanned."""
    now_ms = to_millis(now, "now") if now is not None else now_millis()
    cutoff = to_millis(older_than, "older_than") if older_than is not None else now_ms - DEFAULT_OLDER_THAN_MS
    fileio, table_path = store.fileio, store.table_path
    result = OrphanResult(dry_run=dry_run)
    maker = BranchMaker(fileio, table_path)
    for name in maker.abandoned(cutoff, dry_run=dry_run):  # before the roots are read: theirs are no roots
        if not dry_run:
            maker.remove(name)
        result.branches.append(name)
    candidates = _candidates(store, cutoff)  # listed first: roots read later protect newer commits
    if not candidates:
        return result
    scanner = ReachabilityScanner(store)
    with nothing_deleted_yet("remove_orphan_files"):  # every root is read before the first deletion
        roots = all_roots(store)
        refs = scanner.refs_of(roots)
        # Data files the Iceberg view references (metadata.iceberg.storage): kept whatever Paimon says, e.g.
        # after a rollback whose Iceberg sync failed, or metadata another writer left with a longer history.
        iceberg = iceberg_sync.referenced_data_files(store)
        orphans = [
            (c, s) for c, s in candidates if c == "staging" or (not _referenced(s.name, refs) and s.name not in iceberg)
        ]
        if orphans and not dry_run:
            new = list(iter_new_roots(store, {r.key for r in roots}))
            if new:
                refs.update(scanner.refs_of(new))
                orphans = [(c, s) for c, s in orphans if c == "staging" or not _referenced(s.name, refs)]
    for done, (_, status) in enumerate(sorted(orphans, key=lambda cs: cs[1].path), 1):
        report(progress, "delete orphan files", done, len(orphans))
        with taking_effect(f"deleting orphan file {status.path}"):
            deleted = dry_run or fileio.delete(status.path)
        if deleted:
            if not dry_run and not result.files:
                took_effect(f"orphan file {status.path} deleted")
            result.files.append(status.path)
            result.total_bytes += status.size
    if not dry_run:  # a staging directory whose every file went is removed with its empty subdirectories
        for directory in _staging_dirs(store):
            if not _files_under(fileio, directory):
                fileio.delete_dir(directory)
    log.info(
        "%s %d orphan files (%d bytes) in %s",
        "found" if dry_run else "deleted",
        len(result.files),
        result.total_bytes,
        table_path,
    )
    return result


__all__ = ["DEFAULT_OLDER_THAN_MS", "JVM_STAGING_PREFIX", "OrphanResult", "remove_orphan_files"]
