"""Which snapshot a read sees: latest, or the one a time-travel option names (Paimon's resolution rules)."""

from __future__ import annotations

from dataclasses import replace

from pyspark_paimon.errors import OptionError, TagNotFoundError
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot, last_snapshot_at_or_before
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.read_options import ReadOptions

WATERMARK_PREFIX = "watermark-"
BRANCH_REF_SEPARATOR = "."


def version_branch(store: FileStore, opts: ReadOptions) -> tuple[FileStore, ReadOptions]:
    """Where a ``<branch>.<tag>`` / ``<branch>.<snapshot id>`` version (``versionAsOf``, ``scan.version``)
    points: that branch's store and the version within it; anything else is returned unchanged.

    Paimon's branch design addresses a branch's tags and snapshots this way; Java's ``scan.version`` resolves
    a tag first, so a tag whose literal name contains the dot (``v1.2``) on the branch being read still wins,
    and only a version that is no such tag is split at a dot whose left side is an existing branch (``main``
    included). Applying this twice is harmless (the remainder resolves on the branch itself)."""
    version = opts.version
    if version is None or BRANCH_REF_SEPARATOR not in version:
        return store, opts
    if TagManager(store).exists(version):
        return store, opts
    branches = BranchManager(store)
    splits = [(version[:i], version[i + 1 :]) for i, ch in enumerate(version) if ch == BRANCH_REF_SEPARATOR]
    found = [(b, rest) for b, rest in splits if b and rest and b != store.branch and branches.exists(b)]
    if store.branch in [b for b, rest in splits if rest]:
        found.append((store.branch, version[len(store.branch) + 1 :]))
    if not found:
        return store, opts
    if len(found) > 1:
        raise OptionError(
            f"Version '{version}' is ambiguous on {store.table_path}: it can be read as "
            f"{' or '.join(f'{rest!r} of branch {b!r}' for b, rest in found)}. Read the branch directly "
            "(option 'branch' or a $branch_<name> suffix) with the version inside it."
        )
    branch, rest = found[0]
    if branch == store.branch:
        return store, replace(opts, version=rest)
    if store.branch != MAIN_BRANCH or (opts.branch and opts.branch != branch):
        raise OptionError(
            f"Version '{version}' names branch '{branch}', but the read addresses branch '{store.branch}'. Give "
            f"the version without the branch ('{rest}'), or read branch '{branch}' instead."
        )
    return store.with_branch(branch), replace(opts, version=rest, branch=branch)


def resolve_snapshot(store: FileStore, opts: ReadOptions) -> Snapshot | None:
    """The snapshot to read on ``store``'s branch; None for a table without snapshots (reads empty)."""
    tags = TagManager(store)
    if opts.snapshot_id is not None:
        return find_snapshot(store.snapshots, tags, opts.snapshot_id)
    if opts.tag_name is not None:
        return tags.get(opts.tag_name)
    if opts.version is not None:
        return resolve_version(store, tags, opts.version)
    if opts.timestamp_millis is not None:
        return snapshot_at_time(store, tags, opts.timestamp_millis)
    if opts.watermark is not None:
        return snapshot_at_watermark(store, opts.watermark)
    return store.snapshots.latest()


def resolve_version(store: FileStore, tags: TagManager, version: str) -> Snapshot:
    """Paimon's ``scan.version``: a tag first, then ``watermark-<n>``, then a snapshot id."""
    if tags.exists(version):
        return tags.get(version)
    if version.startswith(WATERMARK_PREFIX) and version[len(WATERMARK_PREFIX) :].lstrip("-").isdigit():
        return snapshot_at_watermark(store, int(version[len(WATERMARK_PREFIX) :]))
    if version.isdigit():
        return find_snapshot(store.snapshots, tags, int(version))
    raise TagNotFoundError(
        f"Version '{version}' is neither a tag nor a snapshot id on branch '{store.branch}' of {store.table_path}, "
        f"nor '<branch>.<tag or snapshot id>' of an existing branch. Existing tags: {tags.list_names() or 'none'}."
    )


def snapshot_at_time(store: FileStore, tags: TagManager, ts: int) -> Snapshot:
    """The latest snapshot committed at or before ``ts``; if those expired, the latest tag at or before it. The
    same rule makes a branch or tag "as of" an instant (``tags.AT_OR_BEFORE``), so both see the same state."""
    return last_snapshot_at_or_before(store.snapshots, tags, ts)


def snapshot_at_watermark(store: FileStore, watermark: int) -> Snapshot:
    """The first snapshot whose watermark is at or after ``watermark``."""
    for snap in store.snapshots.snapshots():
        if snap.watermark is not None and snap.watermark >= watermark:
            return snap
    raise OptionError(f"No snapshot of branch '{store.branch}' of {store.table_path} has a watermark >= {watermark}.")
