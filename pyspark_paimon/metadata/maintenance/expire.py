"""Snapshot expiration (Java's `ExpireSnapshotsImpl`), tag and branch deletion and expiration (Java's `TagManager`),
deleting only files nothing can still read.

**Which snapshots expire** follows Java's ``ExpireSnapshotsImpl`` exactly:

* ``snapshot.num-retained.min`` (default 10) newest snapshots are always kept, ``snapshot.num-retained.max``
  (default unbounded) caps how many are kept, and at most ``snapshot.expire.limit`` (default 50) snapshots
  expire per call;
* consumers (``consumer/consumer-<id>``, ``{"nextSnapshot": N}``) protect snapshot N and newer;
* between those bounds a snapshot expires only if its *next* snapshot is older than
  ``now - snapshot.time-retained`` (default 1 h) or the explicit ``older_than``: a snapshot stays readable for
  at least that long after it was superseded.

**Which files are deleted** is where we deliberately differ from Java. Java deletes what the expired
snapshots' deltas removed, skipping files of the same branch's tags; that misses other branches and (until
#9867) a branch's own tags, which lost data (apache/paimon#6272). We use full reachability
(``reachability.py``): a file is deleted only if an expired snapshot referenced it and *no* remaining
snapshot, tag or changelog of *any* branch does. Manifests and manifest lists are handled the same way.

**Order of effects**, chosen so that a crash or an error at any point loses nothing: (1) compute the plan,
reading *every* snapshot, tag and changelog of every branch and the manifests they use (a corrupt tag or
snapshot anywhere raises here, before anything is deleted); (2) delete the expired snapshot files, oldest
first, and write ``EARLIEST`` (a crash here leaves unreferenced files, which ``remove_orphan_files``
reclaims, but never a snapshot whose files are gone; Java deletes data first, which can leave exactly that);
(3) re-list every root of every branch and protect anything that appeared meanwhile (a tag or branch created
concurrently); (4) delete data, changelog, index and statistics files; (5) delete manifests and manifest
lists. :func:`delete_tags` / :func:`expire_tags` with ``clean_files`` follow the same order with tag files in (2),
and :func:`delete_branches` / :func:`expire_branches` (branch retention, ``create_branch(time_retained=)``) with
whole branch directories in (2), after handing each surviving child branch the history it inherits through the
deleted one. Tags and branches report alike (:class:`RefDeleteResult`).

**After every commit** (as Java's writers do, unless ``write-only``), :mod:`.post_commit` calls
:func:`expire_snapshots` with the table's options, behind a gate of a few small reads so that a commit with
nothing to expire never walks the table. :func:`expire_snapshots` (``t.maintenance.expire_snapshots``) can also
be called explicitly with other bounds. Tags are expired only by :func:`expire_tags`.
"""

from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping

from pyspark_paimon.errors import OptionError, TagNotFoundError
from pyspark_paimon.metadata.effects import taking_effect, took_effect
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.maintenance.deletion import SweepResult, nothing_deleted_yet, plan_unreachable, sweep
from pyspark_paimon.metadata.maintenance.reachability import CHANGELOG_PREFIX, ReachabilityScanner, Root, branch_roots
from pyspark_paimon.metadata.progress import Progress
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_NUM_RETAINED_MAX,
    CHANGELOG_NUM_RETAINED_MIN,
    CHANGELOG_TIME_RETAINED,
    SNAPSHOT_EXPIRE_LIMIT,
    SNAPSHOT_NUM_RETAINED_MAX,
    SNAPSHOT_NUM_RETAINED_MIN,
    SNAPSHOT_TIME_RETAINED,
    ConfigOption,
    CoreOptions,
)
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import (
    EARLIEST,
    LATEST,
    Snapshot,
    SnapshotManager,
    require_branch_exists,
)
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import now_millis, to_local_datetime, to_millis

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1


@dataclass
class ExpireResult:
    """What an expiration removed (or, with ``dry_run``, would remove). Paths are full paths. No snapshot is
    committed."""

    expired_snapshots: list[int] = field(default_factory=list)
    """The snapshots expired."""
    deleted_data_files: list[str] = field(default_factory=list)
    """Data and changelog files only the expired snapshots referenced."""
    deleted_manifests: list[str] = field(default_factory=list)
    """Manifests and manifest lists only they referenced."""
    deleted_other_files: list[str] = field(default_factory=list)  # index and statistics files
    """Index and statistics files only they referenced."""
    dry_run: bool = False
    """True when nothing was deleted, only reported."""
    # Decoupled changelog: the expired snapshots kept as changelog/changelog-N (by expire_snapshots), or the
    # long-lived changelogs expired (by expire_changelogs).
    kept_changelogs: list[int] = field(default_factory=list)
    """Expired snapshots kept as ``changelog/changelog-N`` for streams (a longer ``changelog.*`` retention)."""
    expired_changelogs: list[int] = field(default_factory=list)
    """Long-lived changelogs expired."""

    @property
    def deleted_snapshots_count(self) -> int:
        """How many snapshots expired (``len(expired_snapshots)``)."""
        return len(self.expired_snapshots)


@dataclass
class RefDeleteResult:
    """What deleting or expiring tags or branches did (with ``dry_run``: would do), one shape for both kinds. Truthy
    when a ref was deleted. No snapshot is committed: a tag is a file and a branch a directory; the data files,
    manifests and other files only the deleted refs kept alive are deleted with them (``clean_files``)."""

    kind: Literal["tag", "branch"]
    """What was deleted: ``'tag'`` or ``'branch'``."""
    deleted: list[str] = field(default_factory=list)
    """The refs deleted (with ``dry_run``: that would be), branches parents first."""
    kept: dict[str, str] = field(default_factory=dict)
    """Refs past their retention that were kept, and why (a branch another branch's options read from)."""
    relinked_branches: list[str] = field(default_factory=list)
    """Surviving branches created from a deleted branch: their ``branch.json`` now records the history they
    inherited through it."""
    deleted_data_files: list[str] = field(default_factory=list)
    """Data and changelog files only the deleted refs referenced (full paths)."""
    deleted_manifests: list[str] = field(default_factory=list)
    """Manifests and manifest lists only the deleted refs referenced (full paths)."""
    deleted_other_files: list[str] = field(default_factory=list)
    """Index and statistics files only the deleted refs referenced (full paths)."""
    dry_run: bool = False
    """True when nothing was deleted, only reported."""

    def __bool__(self) -> bool:
        return bool(self.deleted)


def _options(store: FileStore, options: Mapping[str, str] | None) -> dict[str, str]:
    if options is not None:
        return dict(options)
    schema = store.schemas.latest()
    return dict(schema.options) if schema is not None else {}


def min_consumer_next_snapshot(store: FileStore) -> int | None:
    """The smallest ``nextSnapshot`` of the branch's consumers: that snapshot is still going to be read."""
    return ConsumerManager(store).min_next_snapshot()


# Each changelog retention option and the snapshot option it defaults to (Java's ``CoreOptions.changelog*``).
_CHANGELOG_OPTIONS: tuple[tuple[ConfigOption[int | None], ConfigOption[int]], ...] = (
    (CHANGELOG_NUM_RETAINED_MIN, SNAPSHOT_NUM_RETAINED_MIN),
    (CHANGELOG_NUM_RETAINED_MAX, SNAPSHOT_NUM_RETAINED_MAX),
    (CHANGELOG_TIME_RETAINED, SNAPSHOT_TIME_RETAINED),
)


def decoupled_changelog_option(opts: CoreOptions) -> ConfigOption[Any] | None:
    """The first changelog retention option that retains *more* than its snapshot option, or None.

    That is Java's ``changelogLifecycleDecoupled``: only then does Java move the changelog of expiring snapshots
    to ``changelog/changelog-N`` and expire it separately. A changelog retention equal to or shorter than the
    snapshot's is not decoupled: the changelog goes with its snapshot, exactly as we expire it."""
    for changelog_option, snapshot_option in _CHANGELOG_OPTIONS:
        value = opts.get(changelog_option)
        if value is not None and value > opts.get(snapshot_option):
            return changelog_option
    return None


def expire_range(
    snapshots: SnapshotManager,
    *,
    retain_min: int,
    retain_max: int,
    older_than_ms: int,
    limit: int,
    consumer_next: int | None,
) -> tuple[int, int] | None:
    """``(earliest, end_exclusive)``: the snapshot ids ``[earliest, end_exclusive)`` expire (may be empty)."""
    latest = snapshots.latest_id()
    earliest = snapshots.earliest_id()
    if latest is None or earliest is None:
        return None
    lowest = max(latest - retain_max + 1, earliest)
    end = latest - retain_min + 1
    if consumer_next is not None:
        end = min(end, consumer_next)
    end = min(end, earliest + limit)
    if end <= earliest:
        return earliest, earliest
    for sid in range(lowest, end):
        # A snapshot expires only once its successor has existed for longer than the retention time.
        nxt = sid + 1
        if snapshots.exists(nxt) and older_than_ms <= snapshots.snapshot(nxt).time_millis:
            return earliest, sid
    return earliest, end


def expire_snapshots(
    store: FileStore,
    *,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than: object = None,
    max_deletes: int | None = None,
    options: Mapping[str, str] | None = None,
    now: object = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ExpireResult:
    """Expire old snapshots of ``branch`` (see the module docstring). Arguments override the table options
    ``snapshot.num-retained.max`` / ``.min``, ``snapshot.time-retained`` (``older_than``: an epoch-ms or
    ``datetime`` instant; snapshots superseded before it may expire) and ``snapshot.expire.limit``
    (``max_deletes``)."""
    fileio, table_path, branch = store.fileio, store.table_path, store.branch
    require_branch_exists(fileio, table_path, branch)
    opts = CoreOptions(_options(store, options))
    retain_min = retain_min if retain_min is not None else opts.get(SNAPSHOT_NUM_RETAINED_MIN)
    retain_max = retain_max if retain_max is not None else opts.get(SNAPSHOT_NUM_RETAINED_MAX)
    limit = max_deletes if max_deletes is not None else opts.get(SNAPSHOT_EXPIRE_LIMIT)
    if retain_min < 1:
        raise OptionError(
            f"retain_min / 'snapshot.num-retained.min' must be at least 1, got {retain_min}: the "
            "latest snapshot can never expire."
        )
    if retain_max < retain_min:
        raise OptionError(
            f"retain_max / 'snapshot.num-retained.max' ({retain_max}) must be >= retain_min ({retain_min})."
        )
    if limit < 1:
        raise OptionError(f"max_deletes / 'snapshot.expire.limit' must be at least 1, got {limit}.")
    decoupled = decoupled_changelog_option(opts) is not None
    now_ms = to_millis(now, "now") if now is not None else now_millis()
    if older_than is not None:
        older_than_ms = to_millis(older_than, "older_than")
    else:
        older_than_ms = now_ms - opts.get(SNAPSHOT_TIME_RETAINED)

    snapshots = store.snapshots
    bounds = expire_range(
        snapshots,
        retain_min=retain_min,
        retain_max=retain_max,
        older_than_ms=older_than_ms,
        limit=limit,
        consumer_next=min_consumer_next_snapshot(store),
    )
    result = ExpireResult(dry_run=dry_run)
    if bounds is None:
        return result
    earliest, end = bounds
    expired = [sid for sid in range(earliest, end) if snapshots.exists(sid)]
    if not expired:
        if not dry_run and not fileio.exists(f"{snapshots.snapshot_dir}/{EARLIEST}"):
            snapshots.commit_earliest_hint(earliest)
        return result

    if not dry_run:
        # Iceberg snapshots never outlive their Paimon snapshot (metadata/iceberg/sync.py): dropped first, so
        # nothing below deletes a file an Iceberg reader may still open. A failure stops here, nothing deleted.
        with nothing_deleted_yet("expire_snapshots"):
            iceberg_sync.prune(store, expired)
    if decoupled:
        return _keep_as_changelog(store, expired, end, result)
    scanner = ReachabilityScanner(store)
    with nothing_deleted_yet("expire_snapshots"):
        expired_roots = [Root(branch, "snapshot", str(sid), snapshots.snapshot(sid)) for sid in expired]
        candidates = scanner.refs_of(expired_roots)
    # Everything else is read now, before the first deletion: a corrupt tag must not cost a snapshot.
    plan = plan_unreachable(
        store, candidates, scanner, exclude={r.key for r in expired_roots}, operation="expire_snapshots"
    )
    if not dry_run:
        for sid in expired:  # oldest first: what remains is always a contiguous run of snapshots
            with taking_effect(f"deleting snapshot {sid} of branch '{branch}'"):
                fileio.delete(snapshots.snapshot_path(sid))
            took_effect(f"snapshot {sid} of branch '{branch}' expired")
        snapshots.commit_earliest_hint(end)
    result.expired_snapshots = expired
    _fill(
        result,
        sweep(
            store,
            plan,
            scanner,
            dry_run=dry_run,
            progress=progress,
            already_deleted=f"Snapshots {expired} of branch '{branch}' were expired (their snapshot files deleted)",
        ),
    )
    log.info(
        "expired snapshots %s of %s (branch %s): %d data files, %d manifests deleted",
        expired,
        table_path,
        branch,
        len(result.deleted_data_files),
        len(result.deleted_manifests),
    )
    return result


def _keep_as_changelog(store: FileStore, expired: list[int], end: int, result: ExpireResult) -> ExpireResult:
    """Decoupled changelog (Java's ``ExpireSnapshotsImpl`` with ``changelogLifecycleDecoupled``): every expiring
    snapshot is kept as ``changelog/changelog-N`` (its snapshot file, unchanged) before its snapshot file goes,
    so streams still read its changes. A long-lived changelog reaches what its snapshot reached
    (``reachability.py``), so no file the expired snapshots used can be freed yet: nothing else is deleted
    here; :func:`expire_changelogs` frees it when the changelog expires (Java frees the data manifests now and
    keeps only the changelog's; we keep more, never less)."""
    result.expired_snapshots = expired
    result.kept_changelogs = expired
    if result.dry_run:
        return result
    fileio, snapshots = store.fileio, store.snapshots
    directory = _changelog_dir(store)
    for sid in expired:  # oldest first, each written before its snapshot file is deleted
        fileio.write_bytes(f"{directory}/{CHANGELOG_PREFIX}{sid}", fileio.read_bytes(snapshots.snapshot_path(sid)))
        with taking_effect(f"deleting snapshot {sid} of branch '{store.branch}'"):
            fileio.delete(snapshots.snapshot_path(sid))
        took_effect(f"snapshot {sid} of branch '{store.branch}' expired (kept as changelog)")
    fileio.write_bytes(f"{directory}/{LATEST}", str(expired[-1]).encode())
    snapshots.commit_earliest_hint(end)
    log.info(
        "expired snapshots %s of %s (branch %s), kept as long-lived changelog", expired, store.table_path, store.branch
    )
    return result


def _changelog_dir(store: FileStore) -> str:
    return f"{store.branch_root}/changelog"


def _changelog_ids(store: FileStore) -> list[int]:
    names = store.fileio.list_names(_changelog_dir(store))
    return sorted(
        int(n[len(CHANGELOG_PREFIX) :])
        for n in names
        if n.startswith(CHANGELOG_PREFIX) and n[len(CHANGELOG_PREFIX) :].isdigit()
    )


def expire_changelogs(
    store: FileStore,
    *,
    options: Mapping[str, str] | None = None,
    now: object = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> ExpireResult:
    """Expire the long-lived changelogs (``changelog/changelog-N``) of ``store``'s branch by Java's
    ``ExpireChangelogImpl`` rules: ``changelog.num-retained.min`` / ``.max`` and ``changelog.time-retained``
    (each defaulting to its ``snapshot.*`` option) count from the latest *snapshot*; consumers protect their
    next snapshot; at most ``snapshot.expire.limit`` go per call; the newest changelog always stays; and a
    changelog younger than the retention time stops the range. Files are deleted by reachability, as
    :func:`expire_snapshots` does (a file another snapshot, tag or changelog of any branch uses stays)."""
    fileio, branch = store.fileio, store.branch
    require_branch_exists(fileio, store.table_path, branch)
    opts = CoreOptions(_options(store, options))
    retain_max = opts.get(CHANGELOG_NUM_RETAINED_MAX)
    retain_max = retain_max if retain_max is not None else opts.get(SNAPSHOT_NUM_RETAINED_MAX)
    retain_min = opts.get(CHANGELOG_NUM_RETAINED_MIN)
    retain_min = retain_min if retain_min is not None else opts.get(SNAPSHOT_NUM_RETAINED_MIN)
    time_retained = opts.get(CHANGELOG_TIME_RETAINED)
    time_retained = time_retained if time_retained is not None else opts.get(SNAPSHOT_TIME_RETAINED)
    if retain_max < retain_min:
        raise OptionError(
            f"'changelog.num-retained.max' ({retain_max}) must be >= 'changelog.num-retained.min' ({retain_min})."
        )
    result = ExpireResult(dry_run=dry_run)
    snapshots = store.snapshots
    latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
    ids = _changelog_ids(store)
    if latest is None or earliest is None or not ids:
        return result
    now_ms = to_millis(now, "now") if now is not None else now_millis()
    older_than_ms = now_ms - time_retained
    first, last = ids[0], ids[-1]
    lowest = max(latest - retain_max + 1, first)
    end = latest - retain_min + 1
    consumer_next = min_consumer_next_snapshot(store)
    if consumer_next is not None:
        end = min(end, consumer_next)
    end = min(end, first + opts.get(SNAPSHOT_EXPIRE_LIMIT), last)
    present = set(ids)
    directory = _changelog_dir(store)
    for cid in range(lowest, end + 1):
        if cid in present:
            path = f"{directory}/{CHANGELOG_PREFIX}{cid}"
            if older_than_ms <= Snapshot.from_json(fileio.read_text(path), path).time_millis:
                end = cid
                break
    expired = [cid for cid in ids if first <= cid < end]
    if not expired:
        return result
    scanner = ReachabilityScanner(store)
    with nothing_deleted_yet("expire_changelogs"):
        roots = [
            Root(branch, "changelog", str(cid), Snapshot.from_json(fileio.read_text(p), p))
            for cid in expired
            for p in [f"{directory}/{CHANGELOG_PREFIX}{cid}"]
        ]
        candidates = scanner.refs_of(roots)
    plan = plan_unreachable(store, candidates, scanner, exclude={r.key for r in roots}, operation="expire_changelogs")
    if not dry_run:
        for cid in expired:
            with taking_effect(f"deleting changelog {cid} of branch '{store.branch}'"):
                fileio.delete(f"{directory}/{CHANGELOG_PREFIX}{cid}")
            took_effect(f"changelog {cid} of branch '{store.branch}' expired")
        fileio.write_bytes(f"{directory}/{EARLIEST}", str(end).encode())
    result.expired_changelogs = expired
    _fill(
        result,
        sweep(
            store,
            plan,
            scanner,
            dry_run=dry_run,
            progress=progress,
            already_deleted=f"Changelogs {expired} of branch '{branch}' were expired (their files deleted)",
        ),
    )
    return result


def _fill(result: ExpireResult | RefDeleteResult, swept: SweepResult) -> None:
    result.deleted_data_files = list(swept.data_files)
    result.deleted_manifests = list(swept.manifests)
    result.deleted_other_files = list(swept.other_files)


# ------------------------------------------------------------------------------------------- branches
def _parents_first(names: list[str], mgr: BranchManager) -> list[str]:
    """``names`` ordered so a branch comes before the branches created from it (lineage), which lets each drop
    hand the history it carried on to its children."""
    remaining, out = list(names), []
    while remaining:
        ready = [n for n in remaining if (lin := mgr.lineage(n)) is None or lin.source_branch not in remaining]
        ready = ready or remaining[:1]  # a lineage cycle cannot be made by us; do not loop on a hand-edited one
        out.extend(ready)
        remaining = [n for n in remaining if n not in ready]
    return out


def expire_branches(
    store: FileStore,
    *,
    older_than: object = None,
    now: object = None,
    clean_files: bool = True,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RefDeleteResult:
    """Delete the branches whose retention has passed (``create_branch(time_retained=)``: created + retained <
    now) and, when ``older_than`` (epoch ms or datetime) is given, every branch created before it, as
    :func:`delete_branches` does.

    A branch another branch's options read from (``scan.fallback-branch``, a chain table's branches) is kept and
    reported in ``kept``."""
    mgr = BranchManager(store)
    now_ms = to_millis(now, "now") if now is not None else now_millis()
    older_ms = to_millis(older_than, "older_than") if older_than is not None else None
    result = RefDeleteResult("branch", dry_run=dry_run)
    doomed = []
    for info in mgr.list_branches():
        end = info.expire_time_millis
        if (end is not None and now_ms > end) or (older_ms is not None and info.create_time_millis < older_ms):
            deps = mgr.dependents(info.name)
            if deps:
                result.kept[info.name] = "; ".join(deps)
            else:
                doomed.append(info.name)
    _delete_branches(store, mgr, doomed, result, "expire_branches", clean_files=clean_files, progress=progress)
    return result


def delete_branches(
    store: FileStore,
    names: Iterable[str],
    *,
    clean_files: bool = False,
    ignore_if_not_exists: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RefDeleteResult:
    """Delete branches (their directories). A missing branch raises BranchNotFoundError unless
    ``ignore_if_not_exists``, and a branch another branch's options read from raises BranchError, before anything
    is deleted. Branches created from a deleted branch keep their lineage: its history up to their fork is written
    into their ``branch.json`` first (``BranchManager.detach_children``). With ``clean_files`` also delete the files
    only those branches referenced, checked against every remaining snapshot, tag and changelog of every branch (a
    branch made from another branch's tag keeps sharing its files, and those stay); without, Paimon's
    ``delete_branch``: metadata only, ``remove_orphan_files`` reclaims the rest later."""
    mgr = BranchManager(store)
    present = [n for n in dict.fromkeys(names) if mgr.deletable(n, ignore_if_not_exists=ignore_if_not_exists)]
    result = RefDeleteResult("branch", dry_run=dry_run)
    _delete_branches(store, mgr, present, result, "delete_branches", clean_files=clean_files, progress=progress)
    return result


def _delete_branches(
    store: FileStore,
    mgr: BranchManager,
    names: list[str],
    result: RefDeleteResult,
    operation: str,
    *,
    clean_files: bool,
    progress: Progress | None,
) -> None:
    """Delete the branch directories ``names`` (checked by the caller) parents first, after handing each surviving
    child the history it inherits, and (``clean_files``) then the files nothing else reaches."""
    if not names:
        return
    names = _parents_first(names, mgr)
    scanner = ReachabilityScanner(store)
    plan = None
    if clean_files:
        with nothing_deleted_yet(operation):
            roots = [r for name in names for r in branch_roots(store.with_branch(name))]
            candidates = scanner.refs_of(roots)
        plan = plan_unreachable(store, candidates, scanner, exclude={r.key for r in roots}, operation=operation)
    if not result.dry_run:
        for name in names:
            result.relinked_branches.extend(c for c in mgr.detach_children(name) if c not in names)
            with taking_effect(f"deleting branch '{name}'"):
                store.fileio.delete_dir(mgr.branch_dir(name))
            took_effect(f"branch '{name}' deleted")
    result.deleted = names
    if plan is None:
        return
    already = f"Branches {names} were deleted (their directories)"
    _fill(result, sweep(store, plan, scanner, dry_run=result.dry_run, progress=progress, already_deleted=already))
    log.info(
        "deleted branches %s of %s: %d data files, %d manifests deleted",
        names,
        store.table_path,
        len(result.deleted_data_files),
        len(result.deleted_manifests),
    )


# ------------------------------------------------------------------------------------------- tags
def delete_tags(
    store: FileStore,
    names: Iterable[str],
    *,
    clean_files: bool = False,
    ignore_if_not_exists: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RefDeleteResult:
    """Delete tags. With ``clean_files`` also delete the files only those tags kept alive (Java's behaviour),
    checked against every remaining snapshot, tag and changelog of every branch."""
    branch = store.branch
    require_branch_exists(store.fileio, store.table_path, branch)
    tags = TagManager(store)
    result = RefDeleteResult("tag", dry_run=dry_run)
    present: list[str] = []
    for name in dict.fromkeys(names):
        try:
            tags.read_bytes(name)  # exists? (without clean_files a corrupt tag can still be deleted)
        except TagNotFoundError:
            if ignore_if_not_exists:
                continue
            raise
        present.append(name)
    plan = None
    scanner = ReachabilityScanner(store)
    if clean_files:
        # Read the tags, then every other root of every branch, before the first tag file goes.
        with nothing_deleted_yet("delete_tags(clean_files=True)"):
            roots = [Root(tags.branch, "tag", name, tags.get_tag(name).snapshot) for name in present]
            candidates = scanner.refs_of(roots)
        plan = plan_unreachable(
            store, candidates, scanner, exclude={r.key for r in roots}, operation="delete_tags(clean_files=True)"
        )
    if not dry_run:
        for name in present:
            tags.delete(name, ignore_if_not_exists=True)
    result.deleted = present
    if plan is not None and not plan.doomed.is_empty():
        already = f"Tag files {present} of branch '{branch}' were deleted"
        _fill(result, sweep(store, plan, scanner, dry_run=dry_run, progress=progress, already_deleted=already))
    return result


def expire_tags(
    store: FileStore,
    *,
    older_than: object = None,
    now: object = None,
    clean_files: bool = False,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RefDeleteResult:
    """Delete the branch's tags whose retention has passed (``tagCreateTime + tagTimeRetained < now``) and,
    when ``older_than`` (epoch ms or datetime) is given, every tag created before it (as Java's
    ``expire_tags(older_than)``: tags without a create time use their file's modification time)."""
    tags = TagManager(store)
    now_dt = to_local_datetime(now, "now") if now is not None else _dt.datetime.now()
    older = to_local_datetime(older_than, "older_than") if older_than is not None else None
    expired = [t.name for t in tags.expired_tags(now_dt, older)]
    return delete_tags(
        store, expired, clean_files=clean_files, ignore_if_not_exists=True, dry_run=dry_run, progress=progress
    )


__all__ = [
    "ExpireResult",
    "RefDeleteResult",
    "delete_branches",
    "expire_branches",
    "expire_snapshots",
    "expire_changelogs",
    "expire_range",
    "expire_tags",
    "delete_tags",
    "min_consumer_next_snapshot",
    "INT_MAX",
]
