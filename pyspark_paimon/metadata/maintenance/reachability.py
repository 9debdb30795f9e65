"""Which files are still in use: the union over every snapshot, tag and changelog of *every branch*.

Snapshot expiration, tag cleanup and orphan-file removal all delete files, and all three must answer the same
question first: "could anything still read this file?". Paimon Java answers it per branch (and, until
apache/paimon#9867, even forgot the branch's own tags), which is how expiring ``main`` could delete the files
a branch created from a since-deleted tag still reads (apache/paimon#6272). We answer it globally:

* **roots** are every ``snapshot-N``, every ``tag-<name>`` and every long-lived ``changelog-N`` of the main
  branch and of every ``branch/branch-<b>`` directory (branches share the table root's ``manifest/`` and
  data directories, so their roots protect the same files);
* a root reaches its manifest lists (base, delta, changelog), its index manifest and statistics file, every
  manifest those lists name, every **live** data file of the snapshot (the ADD entries left after folding
  base + delta, Java's `FileEntry.mergeEntries`), its extra files, its changelog files, and the index files its index
  manifest names. A long-lived changelog whose data manifest lists Java's expiration already deleted (Java keeps
  only what streams read of it) reaches what is left: its changelog manifest list, or its delta list, and the
  files they add.

Only *live* data files count, not every file any manifest mentions: a long-lived base manifest still holds
the ADD entry of a file that a later commit deleted, and counting it would keep that file forever.

Folding the complete file set of every root is the expensive part, so consecutive snapshots of one branch
are folded incrementally: when snapshot k+1's base list names exactly snapshot k's base + delta manifests
(what every writer produces unless it merged manifests) its live set is snapshot k's plus its own delta.
That shortcut is checked, never assumed; any other root is folded from scratch. Roots with identical
manifest lists (a tag and the snapshot it copies, a branch's copy of its source snapshot) are folded once.

**Per-root cache.** What a snapshot or tag references is fixed by its manifest lists (base, delta, changelog),
its index manifest and its statistics file: all immutable files whose names embed a UUID. So the file set of
a snapshot/tag root is cached process-wide (:data:`ROOT_REFS_CACHE`, a bounded LRU) keyed by the table path and
those names, never by the root's name: a tag replaced, renamed or deleted by another process is simply a
different (or absent) key, because the roots themselves are re-listed every time. Without it, every automatic
expiration after a streaming commit re-read the manifests of every retained snapshot and every tag, a cost that
grew with history; with it, a commit reads only the manifests of roots it has not seen yet (a hit still checks
that the root's lists exist, so a root whose metadata went missing fails the computation as before). Long-lived
changelog roots are not cached (what is left of them depends on which of their lists Java's expiration already
deleted).

A root whose metadata cannot be read makes the whole computation fail: if we cannot tell what a snapshot
uses, nothing may be deleted. Callers therefore compute it before their first deletion and say so in the
error (``deletion.nothing_deleted_yet``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Literal

from pyspark_paimon.errors import CorruptMetadataError, PaimonError, SnapshotNotFoundError, TagNotFoundError
from pyspark_paimon.metadata.io.avro import read_avro
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, KIND_DELETE, ManifestEntry, ManifestStore
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot, branch_dirs
from pyspark_paimon.metadata.store import FileStore

CHANGELOG_PREFIX = "changelog-"

RootKind = Literal["snapshot", "tag", "changelog"]
_KIND_ORDER = {"snapshot": 0, "changelog": 1, "tag": 2}


@dataclass(frozen=True)
class Root:
    """One thing that keeps files alive: a snapshot, tag or long-lived changelog of a branch."""

    branch: str
    kind: RootKind
    name: str  # snapshot/changelog id as a string, or the tag name
    snapshot: Snapshot

    @property
    def key(self) -> tuple:
        """Identity including the manifest lists, so a tag replaced in the meantime counts as a new root."""
        s = self.snapshot
        return (
            self.branch,
            self.kind,
            self.name,
            s.base_manifest_list,
            s.delta_manifest_list,
            s.changelog_manifest_list,
            s.index_manifest,
        )

    def describe(self) -> str:
        what = f"tag '{self.name}'" if self.kind == "tag" else f"{self.kind} {self.name}"
        return f"{what} of branch '{self.branch}'"


@dataclass(frozen=True)
class DataFileRef:
    """Where a data (or changelog / extra) file lives: its bucket directory, or an external path."""

    partition: bytes
    bucket: int
    external_path: str | None = None


@dataclass
class FileRefs:
    """Files referenced by a set of roots, by kind. Names are base names (they embed UUIDs)."""

    data_files: dict[str, DataFileRef] = field(default_factory=dict)  # data, changelog and extra files
    manifests: set[str] = field(default_factory=set)  # manifest lists, manifests, index manifests
    index_files: set[str] = field(default_factory=set)
    statistics: set[str] = field(default_factory=set)

    def update(self, other: "FileRefs") -> None:
        for name, ref in other.data_files.items():
            self.data_files.setdefault(name, ref)
        self.manifests |= other.manifests
        self.index_files |= other.index_files
        self.statistics |= other.statistics

    def minus(self, other: "FileRefs") -> "FileRefs":
        """What ``self`` references and ``other`` does not. A name used in *any* role by ``other`` is kept, so a
        file is never deleted because it was classified differently on the two sides."""
        used = set(other.data_files) | other.manifests | other.index_files | other.statistics
        return FileRefs(
            {n: r for n, r in self.data_files.items() if n not in used},
            {n for n in self.manifests if n not in used},
            {n for n in self.index_files if n not in used},
            {n for n in self.statistics if n not in used},
        )

    def is_empty(self) -> bool:
        return not (self.data_files or self.manifests or self.index_files or self.statistics)


@dataclass(frozen=True)
class _CachedRoot:
    """A root's complete file set, plus what lets the next root of its branch fold incrementally from it."""

    refs: FileRefs
    names: tuple[str, ...]  # base + delta manifest names
    live: dict[tuple, ManifestEntry]  # never mutated: copied before folding into it


class RootRefsCache:
    """Bounded, thread-safe LRU of :class:`_CachedRoot` keyed by the immutable files that define a root.

    Entries can never be stale: a key names immutable files, and a root that no longer exists is simply never
    looked up again (it falls out by LRU). ``hits`` / ``misses`` are for tests and benchmarks."""

    def __init__(self, max_entries: int = 256):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, _CachedRoot] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple) -> _CachedRoot | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def put(self, key: tuple, entry: _CachedRoot) -> None:
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


#: The process-wide cache of snapshot/tag file sets (see the module docstring).
ROOT_REFS_CACHE = RootRefsCache()


def content_key(table_path: str, s: Snapshot) -> tuple:
    """The immutable files that fix what snapshot ``s`` references (branches share the table's manifests)."""
    return (
        table_path,
        s.base_manifest_list,
        s.delta_manifest_list,
        s.changelog_manifest_list,
        s.index_manifest,
        s.statistics,
    )


# ------------------------------------------------------------------------------------------- roots
def _changelog_ids(store: FileStore) -> list[int]:
    ids = []
    for name in store.fileio.list_names(f"{store.branch_root}/changelog"):
        if name.startswith(CHANGELOG_PREFIX) and name[len(CHANGELOG_PREFIX) :].isdigit():
            ids.append(int(name[len(CHANGELOG_PREFIX) :]))
    return sorted(ids)


def branch_roots(store: FileStore) -> list[Root]:
    """Every snapshot, long-lived changelog and tag of ``store``'s branch (files deleted while we list are
    skipped)."""
    fileio, branch = store.fileio, store.branch
    roots: list[Root] = []
    snapshots = store.snapshots
    for sid in snapshots.list_ids():
        try:
            roots.append(Root(branch, "snapshot", str(sid), snapshots.snapshot(sid)))
        except SnapshotNotFoundError:
            continue
    changelog_dir = f"{store.branch_root}/changelog"
    for cid in _changelog_ids(store):
        path = f"{changelog_dir}/{CHANGELOG_PREFIX}{cid}"
        try:
            data = fileio.read_bytes(path)
        except FileNotFoundError:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptMetadataError(
                f"{path} is not UTF-8 text ({e}); the changelog file is corrupt. Restore it "
                "from a backup, or delete it if its changelog is no longer needed."
            ) from e
        roots.append(Root(branch, "changelog", str(cid), Snapshot.from_json(text, path)))
    tags = TagManager(store)
    for name in tags.list_names():
        try:
            roots.append(Root(branch, "tag", name, tags.get_tag(name).snapshot))
        except TagNotFoundError:
            continue
    return roots


def all_roots(store: FileStore) -> list[Root]:
    """The roots of every branch of the table (whichever branch ``store`` is on)."""
    out: list[Root] = []
    for branch in [MAIN_BRANCH, *branch_dirs(store.fileio, store.table_path)]:
        out.extend(branch_roots(store.with_branch(branch)))
    return out


# ------------------------------------------------------------------------------------------- folding
def _fold(live: dict[tuple, ManifestEntry], entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Apply entries to a live set in place (lenient: this only decides what to *keep*); returns the ADDs."""
    added = []
    for e in entries:
        key = e.identifier
        if e.kind == KIND_ADD:
            live[key] = e
            added.append(e)
        elif e.kind == KIND_DELETE:
            live.pop(key, None)
    return added


def _add_data(refs: FileRefs, entries: Iterable[ManifestEntry]) -> None:
    for e in entries:
        ref = DataFileRef(e.partition, e.bucket, e.file.external_path)
        refs.data_files.setdefault(e.file.file_name, ref)
        for extra in e.file.extra_files:
            refs.data_files.setdefault(extra, DataFileRef(e.partition, e.bucket, None))


class ReachabilityScanner:
    """Computes :class:`FileRefs` of roots, sharing one manifest cache across calls. Roots of every branch
    share the table's manifests, so ``store``'s own branch does not matter here."""

    def __init__(self, store: FileStore, manifests: ManifestStore | None = None, cache: RootRefsCache | None = None):
        self.cache = cache if cache is not None else ROOT_REFS_CACHE
        self.fileio = store.fileio
        self.table_path = store.table_path
        self.manifests = manifests or ManifestStore(store.fileio, store.table_path)
        self._index_cache: dict[str, list[str]] = {}

    def _index_file_names(self, name: str) -> list[str]:
        cached = self._index_cache.get(name)
        if cached is None:
            path = self.manifests.path(name)
            try:
                data = self.fileio.read_bytes(path)
            except FileNotFoundError:
                raise CorruptMetadataError(f"Index manifest {path} is missing.") from None
            # Every entry's file is protected whatever its kind: over-protecting an index file is harmless.
            cached = [str(r["_FILE_NAME"]) for r in read_avro(data, path) if r.get("_FILE_NAME")]
            self._index_cache[name] = cached
        return cached

    def refs_of(self, roots: Iterable[Root]) -> FileRefs:
        """Everything the given roots reference (see the module docstring)."""
        refs = FileRefs()
        by_branch: dict[str, list[Root]] = {}
        for r in roots:
            by_branch.setdefault(r.branch, []).append(r)
        for branch_list in by_branch.values():
            branch_list.sort(key=lambda r: (r.snapshot.id, _KIND_ORDER[r.kind], r.name))
            prev_names: list[str] | None = None  # base + delta manifest names of the previous folded root
            live: dict[tuple, ManifestEntry] = {}
            live_shared = False  # ``live`` belongs to a cache entry: copy before folding into it
            for root in branch_list:
                key = content_key(self.table_path, root.snapshot) if root.kind != "changelog" else None
                cached = self.cache.get(key) if key is not None else None
                if cached is not None and self._lists_exist(root.snapshot):
                    refs.update(cached.refs)
                    prev_names, live, live_shared = list(cached.names), cached.live, True
                    continue
                own = FileRefs()
                try:
                    start = dict(live) if live_shared else live
                    prev_names, live = self._visit(root, own, set(), prev_names, start)
                except PaimonError as e:
                    raise type(e)(
                        f"While finding the files used by {root.describe()} of {self.table_path}: {e} "
                        "Repair or delete that snapshot/tag, then retry."
                    ) from e
                live_shared = False
                if prev_names is not None:
                    _add_data(own, live.values())  # the incremental fold added only the delta's files
                refs.update(own)
                if key is not None and prev_names is not None:
                    self.cache.put(key, _CachedRoot(own, tuple(prev_names), live))
                    live_shared = True
        return refs

    def _lists_exist(self, s: Snapshot) -> bool:
        """A cache hit still checks that the root's own lists exist (a few stats, no reads): a root whose
        metadata went missing must fail the computation as it would without the cache."""
        ms = self.manifests
        return all(
            self.fileio.exists(ms.path(n))
            for n in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list, s.index_manifest)
            if n
        )

    def _visit_trimmed_changelog(self, s: Snapshot, refs: FileRefs) -> None:
        """A long-lived changelog whose data manifest lists Java's expiration already deleted (with a changelog
        producer it keeps only the changelog manifest list; without, the delta list and its added files): it
        references what is left of those, which is all a stream reads of it."""
        ms = self.manifests
        for name in (s.changelog_manifest_list, s.delta_manifest_list):
            if not name or not self.fileio.exists(ms.path(name)):
                continue
            refs.manifests.add(name)
            metas = ms.read_list(name)
            refs.manifests.update(m.file_name for m in metas)
            _add_data(refs, (e for e in ms.read_entries(metas) if e.kind == KIND_ADD))

    def _visit(
        self,
        root: Root,
        refs: FileRefs,
        done: set[tuple[str, str]],
        prev_names: list[str] | None,
        live: dict[tuple, ManifestEntry],
    ) -> tuple[list[str] | None, dict[tuple, ManifestEntry]]:
        s = root.snapshot
        ms = self.manifests
        if root.kind == "changelog" and not all(
            self.fileio.exists(ms.path(n)) for n in (s.base_manifest_list, s.delta_manifest_list, s.index_manifest) if n
        ):
            self._visit_trimmed_changelog(s, refs)
            return None, {}
        refs.manifests.update(
            n for n in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list, s.index_manifest) if n
        )
        if s.statistics:
            refs.statistics.add(s.statistics)
        if s.index_manifest:
            refs.index_files.update(self._index_file_names(s.index_manifest))
        if s.changelog_manifest_list:
            changelog_metas = ms.read_list(s.changelog_manifest_list)
            refs.manifests.update(m.file_name for m in changelog_metas)
            _add_data(refs, (e for e in ms.read_entries(changelog_metas) if e.kind == KIND_ADD))

        pair = (s.base_manifest_list, s.delta_manifest_list)
        base = ms.read_list(s.base_manifest_list)
        delta = ms.read_list(s.delta_manifest_list)
        base_names = [m.file_name for m in base]
        delta_names = [m.file_name for m in delta]
        refs.manifests.update(base_names)
        refs.manifests.update(delta_names)
        names = base_names + delta_names
        if pair in done:
            # Same lists as a root already folded: same live set. Chain from it only if it was the previous one.
            return (names, live) if prev_names is not None and names == prev_names else (None, {})
        done.add(pair)
        if prev_names is not None and base_names == prev_names:
            added = _fold(live, ms.read_entries(delta))
            _add_data(refs, added)
        else:
            live = {}
            _fold(live, ms.read_entries(base))
            _fold(live, ms.read_entries(delta))
            _add_data(refs, live.values())
        return names, live


def used_files(store: FileStore, scanner: ReachabilityScanner | None = None) -> FileRefs:
    """Everything any snapshot, tag or changelog of any branch of the table references."""
    scanner = scanner or ReachabilityScanner(store)
    return scanner.refs_of(all_roots(store))


def iter_new_roots(store: FileStore, seen: set[tuple]) -> Iterator[Root]:
    """Roots that appeared (or changed) since ``seen`` was taken: used to re-check right before deleting."""
    for root in all_roots(store):
        if root.key not in seen:
            yield root


__all__ = [
    "Root",
    "DataFileRef",
    "FileRefs",
    "ReachabilityScanner",
    "RootRefsCache",
    "ROOT_REFS_CACHE",
    "content_key",
    "branch_roots",
    "all_roots",
    "used_files",
    "iter_new_roots",
]
