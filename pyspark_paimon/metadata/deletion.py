"""The one place that deletes table files a removed snapshot or tag referenced (shared by expiration and tag
cleanup), after proving that nothing else still references them.

:func:`delete_unreachable` takes the files the removed roots referenced (``candidates``), subtracts what every
remaining root of every branch references, re-lists the roots right before deleting to catch tags, branches
or commits created in the meantime, and deletes the rest: data/changelog/extra files, then index and
statistics files, then manifests and manifest lists last (so an interrupted run leaves unreferenced
files for the orphan cleaner, never a manifest pointing at deleted data).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pyspark_paimon.metadata.binary_row import deserialize_row
from pyspark_paimon.metadata.fileio import FileIO
from pyspark_paimon.metadata.reachability import (
    DataFileRef,
    FileRefs,
    ReachabilityScanner,
    all_roots,
    iter_new_roots,
)
from pyspark_paimon.metadata.schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshot import MAIN_BRANCH
from pyspark_paimon.metadata.store import FileStore

log = logging.getLogger(__name__)


@dataclass
class SweepResult:
    data_files: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)


class DataPathResolver:
    """Full path of a data file from its manifest coordinates (partition BinaryRow, bucket)."""

    def __init__(self, fileio: FileIO, table_path: str):
        self.store = FileStore(fileio, table_path, MAIN_BRANCH)
        schema = SchemaManager(fileio, table_path, MAIN_BRANCH).latest()
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


def delete_unreachable(fileio: FileIO, table_path: str, candidates: FileRefs, scanner: ReachabilityScanner, *,
                       exclude: set[tuple], dry_run: bool = False) -> SweepResult:
    """Delete the ``candidates`` no remaining root references. ``exclude``: keys of the roots being removed
    (still on disk during a dry run, so they must not protect their own files)."""
    roots = [r for r in all_roots(fileio, table_path) if r.key not in exclude]
    doomed = candidates.minus(scanner.refs_of(roots))
    if not dry_run and not doomed.is_empty():
        seen = {r.key for r in roots} | set(exclude)
        new = list(iter_new_roots(fileio, table_path, seen))
        if new:
            doomed = doomed.minus(scanner.refs_of(new))
    result = SweepResult()
    resolver = DataPathResolver(fileio, table_path)
    for name in sorted(doomed.data_files):
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
        f"{table_path}/statistics/{n}" for n in sorted(doomed.statistics)]
    for path in others:
        if (fileio.exists(path) if dry_run else fileio.delete(path)):
            result.other_files.append(path)
    for name in sorted(doomed.manifests):
        path = scanner.manifests.path(name)
        if (fileio.exists(path) if dry_run else fileio.delete(path)):
            result.manifests.append(path)
    return result


__all__ = ["SweepResult", "DataPathResolver", "delete_unreachable"]
