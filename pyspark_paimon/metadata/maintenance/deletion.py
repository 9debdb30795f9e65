"""The one place that deletes table files a removed snapshot or tag referenced (shared by expiration and tag
cleanup), after proving that nothing else still references them.

Two phases, because the caller deletes its own snapshot or tag files *between* them:

* :func:`plan_unreachable`, before anything at all is deleted: reads every remaining root of every branch
  (so a corrupt tag or snapshot anywhere stops the operation while nothing is lost yet) and subtracts what
  they reference from the files the removed roots referenced (``candidates``);
* :func:`sweep`, after the caller removed its snapshot/tag files: re-lists the roots right before deleting to
  catch tags, branches or commits created in the meantime, and deletes the rest: data/changelog/extra files,
  then index and statistics files, then manifests and manifest lists last (so an interrupted run leaves
  unreferenced files for the orphan cleaner, never a manifest pointing at deleted data).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.maintenance.reachability import (
    DataFileRef,
    FileRefs,
    ReachabilityScanner,
    all_roots,
    iter_new_roots,
)
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore

log = logging.getLogger(__name__)


@dataclass
class SweepResult:
    data_files: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)


class DataPathResolver:
    """Full path of a data file from its manifest coordinates (partition BinaryRow, bucket)."""

    def __init__(self, store: FileStore):
        """Data files are laid out by the main branch's latest schema, whichever branch ``store`` is on."""
        self.store = store.with_branch(MAIN_BRANCH)
        schema = SchemaManager(store.fileio, store.table_path, MAIN_BRANCH).latest()
        self.schema: TableSchema | None = schema
        self._dirs: dict[tuple[bytes, int], str] = {}

    def bucket_dir(self, ref: DataFileRef) -> str | None:
        key = (ref.partition, ref.bucket)
        cached = self._dirs.get(key)
        if cached is None:
            if self.schema is None:
                return None
            types = [f.type for f in self.schema.partition_fields]
            values = deserialize_row(ref.partition, types) if types else ()
            cached = self.store.bucket_path(self.schema, values, ref.bucket)
            self._dirs[key] = cached
        return cached

    def path(self, name: str, ref: DataFileRef) -> str | None:
        if ref.external_path:
            return None  # outside the table directory: never deleted by us
        directory = self.bucket_dir(ref)
        return f"{directory}/{name}" if directory else None


@contextmanager
def nothing_deleted_yet(operation: str) -> Iterator[None]:
    """Errors raised inside say that ``operation`` deleted nothing (the caller guarantees it has not yet)."""
    try:
        yield
    except PaimonError as e:
        raise type(e)(
            f"{e} Nothing was deleted: {operation} reads every snapshot, tag and changelog of every "
            "branch before deleting anything."
        ) from e


@dataclass
class SweepPlan:
    """What :func:`sweep` may delete, and the roots that were read to decide it."""

    doomed: FileRefs
    seen: set[tuple]


def plan_unreachable(
    store: FileStore,
    candidates: FileRefs,
    scanner: ReachabilityScanner,
    *,
    exclude: set[tuple],
    operation: str,
) -> SweepPlan:
    """Phase one, before the caller deletes anything: the ``candidates`` that no remaining root references.
    ``exclude``: keys of the roots being removed (still on disk, so they must not protect their own files).
    Any unreadable root raises here, with "Nothing was deleted"."""
    with nothing_deleted_yet(operation):
        roots = [r for r in all_roots(store) if r.key not in exclude]
        doomed = candidates.minus(scanner.refs_of(roots))
    return SweepPlan(doomed, {r.key for r in roots} | set(exclude))


def sweep(
    store: FileStore,
    plan: SweepPlan,
    scanner: ReachabilityScanner,
    *,
    dry_run: bool = False,
    already_deleted: str = "",
    progress: Progress | None = None,
) -> SweepResult:
    """Phase two: re-read the roots (protecting anything created since the plan) and delete what is still
    unreferenced. ``already_deleted`` says what the caller removed since the plan, for an error here."""
    fileio, table_path = store.fileio, store.table_path
    doomed = plan.doomed
    if not dry_run and not doomed.is_empty():
        try:
            new = list(iter_new_roots(store, plan.seen))
            if new:
                doomed = doomed.minus(scanner.refs_of(new))
        except PaimonError as e:
            raise type(e)(
                f"{e} {already_deleted or 'Nothing was deleted'}; no data file or manifest was deleted. "
                "Once repaired, remove_orphan_files reclaims whatever is no longer used."
            ) from e
    result = SweepResult()
    resolver = DataPathResolver(store)
    total = len(doomed.data_files)
    for done, name in enumerate(sorted(doomed.data_files), 1):
        report(progress, "delete data files", done, total)
        ref = doomed.data_files[name]
        try:
            path = resolver.path(name, ref)
        except Exception as e:  # noqa: BLE001 - an undecodable partition must not stop the sweep
            log.warning("cannot locate data file %s (%s); leaving it for orphan cleaning", name, e)
            continue
        if path is None:
            continue
        if dry_run:
            if fileio.exists(path):
                result.data_files.append(path)
        elif fileio.delete(path):
            result.data_files.append(path)
    others = [f"{table_path}/index/{n}" for n in sorted(doomed.index_files)] + [
        f"{table_path}/statistics/{n}" for n in sorted(doomed.statistics)
    ]
    for path in others:
        if fileio.exists(path) if dry_run else fileio.delete(path):
            result.other_files.append(path)
    for name in sorted(doomed.manifests):
        path = scanner.manifests.path(name)
        if fileio.exists(path) if dry_run else fileio.delete(path):
            result.manifests.append(path)
    return result


def delete_unreachable(
    store: FileStore,
    candidates: FileRefs,
    scanner: ReachabilityScanner,
    *,
    exclude: set[tuple],
    dry_run: bool = False,
    progress: Progress | None = None,
) -> SweepResult:
    """Both phases at once, for callers that delete nothing of their own in between."""
    plan = plan_unreachable(store, candidates, scanner, exclude=exclude, operation="this cleanup")
    return sweep(store, plan, scanner, dry_run=dry_run, progress=progress)


__all__ = [
    "SweepResult",
    "SweepPlan",
    "DataPathResolver",
    "plan_unreachable",
    "sweep",
    "delete_unreachable",
    "nothing_deleted_yet",
]
