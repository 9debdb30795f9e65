"""Checking a table: is every file that a snapshot, tag or long-lived changelog of any branch references there?

A table damaged by files deleted outside Paimon (or by a bug of an older release that deleted a commit's files
after the commit landed) fails only when a reader reaches the damage, possibly months later and in another
engine. :func:`check_table` finds it first, per root, with the same reachability rules that expiration and
orphan removal use (``reachability.py``): a root reaches its manifest lists, manifests, index and statistics
files, and the live data, changelog and index files of its snapshot. Each root is checked on its own so the
result can say *which* snapshots and tags are damaged and which is the newest intact snapshot of each branch,
the one to roll back to (docs/maintenance.md, "Checking and repairing a table").

Existence is checked against directory listings (one listing per directory, never one request per file), so a
check costs the manifest reads of every root plus one listing per bucket directory. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.maintenance.deletion import DataPathResolver
from pyspark_paimon.metadata.maintenance.reachability import (
    FileRefs,
    ReachabilityScanner,
    Root,
    RootRefsCache,
    all_roots,
)
from pyspark_paimon.metadata.progress import Progress, report
from pyspark_paimon.metadata.store import FileStore

_SHOWN = 20  # missing files listed per damaged root; ``missing_count`` has them all


@dataclass(frozen=True)
class DamagedRoot:
    """A snapshot, tag or changelog of a branch that cannot be read whole."""

    branch: str
    """The branch it belongs to."""
    kind: str
    """``'snapshot'``, ``'tag'`` or ``'changelog'``."""
    name: str
    """The snapshot or changelog id (as text) or the tag name."""
    snapshot_id: int
    """The id of the snapshot it holds (a tag's snapshot)."""
    missing: tuple[str, ...]
    """Full paths of referenced files that are not there (the first 20; ``missing_count`` counts all)."""
    missing_count: int
    """How many referenced files are missing."""
    error: str | None = None
    """Why its metadata could not be read (a missing or corrupt manifest list or manifest), if so: then the files
    it references are not known and ``missing`` lists only what was found missing before."""

    def describe(self) -> str:
        """One line naming the root and what is wrong."""
        what = f"tag '{self.name}'" if self.kind == "tag" else f"{self.kind} {self.name}"
        reason = self.error or f"{self.missing_count} referenced file(s) missing, e.g. {self.missing[0]}"
        return f"{what} of branch '{self.branch}': {reason}"


@dataclass
class CheckResult:
    """What :func:`check_table` found."""

    roots_checked: int = 0
    """Snapshots, tags and long-lived changelogs checked, over every branch."""
    files_checked: int = 0
    """Distinct referenced files whose presence was checked."""
    damaged: list[DamagedRoot] = field(default_factory=list)
    """The roots that cannot be read whole, oldest first per branch."""
    last_intact: dict[str, int | None] = field(default_factory=dict)
    """Per branch: the newest snapshot whose files are all there (None: no intact snapshot), the one to roll
    back to when the branch's latest snapshots are damaged."""

    @property
    def ok(self) -> bool:
        """True when every referenced file of every branch is there."""
        return not self.damaged


class _Listings:
    """Names present in a directory, one listing per directory."""

    def __init__(self, fileio: FileIO):
        self.fileio = fileio
        self._names: dict[str, frozenset[str]] = {}

    def has(self, directory: str, name: str) -> bool:
        names = self._names.get(directory)
        if names is None:
            names = frozenset(s.name for s in self.fileio.list_status(directory) if not s.is_dir)
            self._names[directory] = names
        return name in names


def _missing(store: FileStore, refs: FileRefs, listings: _Listings, paths: DataPathResolver) -> list[str]:
    table = store.table_path
    out = [f"{table}/manifest/{n}" for n in sorted(refs.manifests) if not listings.has(f"{table}/manifest", n)]
    out += [f"{table}/index/{n}" for n in sorted(refs.index_files) if not listings.has(f"{table}/index", n)]
    out += [f"{table}/statistics/{n}" for n in sorted(refs.statistics) if not listings.has(f"{table}/statistics", n)]
    for name, ref in sorted(refs.data_files.items()):
        if ref.external_path:
            if not store.fileio.exists(ref.external_path):
                out.append(ref.external_path)
            continue
        directory = paths.bucket_dir(ref)
        if directory is not None and not listings.has(directory, name):
            out.append(f"{directory}/{name}")
    return out


def check_table(store: FileStore, progress: Progress | None = None) -> CheckResult:
    """Check every root of every branch of the table at ``store`` (whichever branch ``store`` is on); see the
    module docstring. ``progress(step, done, total)`` is called per root."""
    roots = sorted(all_roots(store), key=lambda r: (r.branch, r.snapshot.id, r.kind, r.name))
    scanner = ReachabilityScanner(store, cache=RootRefsCache())
    listings, paths = _Listings(store.fileio), DataPathResolver(store)
    result = CheckResult(roots_checked=len(roots))
    checked: set[str] = set()
    intact: dict[str, int | None] = {}
    for done, root in enumerate(roots, 1):
        damage = _check_root(store, root, scanner, listings, paths, checked)
        if damage is not None:
            result.damaged.append(damage)
        elif root.kind == "snapshot":  # roots come in snapshot-id order: the last intact one is the newest
            intact[root.branch] = root.snapshot.id
        intact.setdefault(root.branch, None)
        report(progress, "checking snapshots and tags", done, len(roots))
    result.files_checked = len(checked)
    result.last_intact = intact
    return result


def _check_root(
    store: FileStore,
    root: Root,
    scanner: ReachabilityScanner,
    listings: _Listings,
    paths: DataPathResolver,
    checked: set[str],
) -> DamagedRoot | None:
    try:
        refs = scanner.refs_of([root])
    except PaimonError as exc:
        return DamagedRoot(root.branch, root.kind, root.name, root.snapshot.id, (), 0, error=str(exc))
    checked.update(refs.manifests, refs.index_files, refs.statistics, refs.data_files)
    missing = _missing(store, refs, listings, paths)
    if not missing:
        return None
    return DamagedRoot(root.branch, root.kind, root.name, root.snapshot.id, tuple(missing[:_SHOWN]), len(missing))
