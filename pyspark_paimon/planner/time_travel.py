"""Which snapshot a read sees: latest, or the one a time-travel option names (Paimon's resolution rules)."""

from __future__ import annotations

from pyspark_paimon.errors import OptionError, SnapshotNotFoundError, TagNotFoundError
from pyspark_paimon.metadata.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.tags import TagManager, find_snapshot
from pyspark_paimon.planner.read_options import ReadOptions

WATERMARK_PREFIX = "watermark-"


def resolve_snapshot(store: FileStore, opts: ReadOptions) -> Snapshot | None:
    """The snapshot to read on ``store``'s branch; None for a table without snapshots (reads empty)."""
    tags = TagManager(store.fileio, store.table_path, store.branch)
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
    if version.startswith(WATERMARK_PREFIX) and version[len(WATERMARK_PREFIX):].lstrip("-").isdigit():
        return snapshot_at_watermark(store, int(version[len(WATERMARK_PREFIX):]))
    if version.isdigit():
        return find_snapshot(store.snapshots, tags, int(version))
    raise TagNotFoundError(
        f"Version '{version}' is neither a tag nor a snapshot id on branch '{store.branch}' of {store.table_path}. "
        f"Existing tags: {tags.list_names() or 'none'}.")


def snapshot_at_time(store: FileStore, tags: TagManager, ts: int) -> Snapshot:
    """The latest snapshot committed at or before ``ts``; if those expired, the latest tag at or before it."""
    snap = store.snapshots.earlier_or_equal_time_millis(ts)
    if snap is not None:
        return snap
    candidates = [t for t in tags.list_tags() if t.snapshot.time_millis <= ts]
    if candidates:
        return max(candidates, key=lambda t: t.snapshot.time_millis).snapshot
    raise SnapshotNotFoundError(
        f"No snapshot or tag of branch '{store.branch}' of {store.table_path} was committed at or before {ts} "
        "(epoch ms). Pick a later time.")


def snapshot_at_watermark(store: FileStore, watermark: int) -> Snapshot:
    """The first snapshot whose watermark is at or after ``watermark``."""
    for snap in store.snapshots.snapshots():
        if snap.watermark is not None and snap.watermark >= watermark:
            return snap
    raise OptionError(
        f"No snapshot of branch '{store.branch}' of {store.table_path} has a watermark >= {watermark}.")
