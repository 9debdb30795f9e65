"""Rollback of a branch to a snapshot or a tag (Java's `RollbackHelper`), with Paimon's (destructive) semantics.

Rolling back to snapshot N makes N the latest snapshot again:

1. snapshots ``> N`` are deleted (newest first, so every intermediate state is a valid, shorter history),
   and so are long-lived changelogs ``> N``;
2. tags of the branch whose snapshot id is ``> N`` are deleted (their snapshots never happened any more);
3. ``LATEST`` is set to N.

Rolling back to a tag does the same with N = the tag's snapshot id, and if snapshot N has already expired
it is first re-created from the tag (the tag file holds the full snapshot) and ``EARLIEST`` is set to N.
The snapshot is written *before* anything is deleted, so a crash never leaves a branch without snapshots.

**No data file or manifest is deleted**: files only the removed snapshots used become orphans, reclaimed by
``remove_orphan_files`` (which checks every branch). That is Paimon's behaviour and the safe one: the
removed snapshots may share files with other branches and tags.

Rollback is not safe against a concurrent writer on the same branch (neither is Java's): stop writers
first, or a commit racing the rollback may land on top of a partially rolled-back history.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark_paimon.errors import SnapshotNotFoundError, TagError
from pyspark_paimon.metadata.effects import taking_effect, took_effect
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.maintenance.reachability import CHANGELOG_PREFIX
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.snapshot import (
    LATEST,
    Snapshot,
    require_branch_exists,
)
from pyspark_paimon.metadata.store import FileStore


@dataclass(frozen=True)
class RollbackResult:
    """What ``t.maintenance.rollback_to`` changed: the branch's latest snapshot moved back; no data file is
    deleted (``remove_orphan_files`` reclaims what nothing reads any more)."""

    previous_snapshot_id: int | None
    """The latest snapshot before the rollback."""
    current_snapshot_id: int
    """The snapshot rolled back to: the branch's latest snapshot now."""
    deleted_snapshots: list[int] = field(default_factory=list)
    """The newer snapshots deleted."""
    deleted_tags: list[str] = field(default_factory=list)
    """The tags of newer snapshots deleted."""
    restored_from_tag: bool = False
    """True when the snapshot had expired and was restored from the tag that preserved it."""


def rollback_to(
    store: FileStore,
    *,
    snapshot_id: int | None = None,
    tag: str | None = None,
) -> RollbackResult:
    """Roll ``branch`` back to ``snapshot_id`` or to ``tag`` (exactly one)."""
    if (snapshot_id is None) == (tag is None):
        raise TagError("rollback_to needs exactly one of snapshot_id= or tag=.")
    fileio, table_path, branch = store.fileio, store.table_path, store.branch
    require_branch_exists(fileio, table_path, branch)
    snapshots = store.snapshots
    tags = TagManager(store)
    previous = snapshots.latest_id()
    restored = False
    all_tags = tags.list_tags()  # read (and validated) before anything is written or deleted
    if tag is not None:
        target: Snapshot = tags.get_tag(tag).snapshot
        if not snapshots.exists(target.id):
            # The tagged snapshot expired: bring it back from the tag before touching anything else.
            fileio.try_create(snapshots.snapshot_path(target.id), target.to_json().encode("utf-8"))
            restored = True
        elif not same_commit(snapshots.snapshot(target.id), target):
            # After a forced fast-forward a branch's tag can name an id where this branch holds another commit;
            # rolling back to that id would silently give other rows than the tag's.
            raise TagError(
                f"Tag '{tag}' of branch '{branch}' points at snapshot {target.id}, but snapshot {target.id} of the "
                "branch is a different commit (the tag came from another branch, e.g. through a forced fast-forward). "
                "Nothing was changed. Read the tag with scan.tag-name, or create a branch from it: "
                f"create_branch(name, tag='{tag}')."
            )
    else:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise TagError(f"snapshot_id must be an int, got {snapshot_id!r}.")
        if not snapshots.exists(snapshot_id):
            ids = snapshots.list_ids()
            have = f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshots"
            raise SnapshotNotFoundError(
                f"Cannot roll back branch '{branch}' of {table_path} to snapshot {snapshot_id}: it does not exist "
                f"(the branch has {have}). If a tag preserved it, roll back to that tag instead."
            )
        target = snapshots.snapshot(snapshot_id)
    n = target.id

    deleted_snapshots = [sid for sid in sorted(snapshots.list_ids(), reverse=True) if sid > n]
    for sid in deleted_snapshots:
        with taking_effect(f"deleting snapshot {sid} of branch '{store.branch}'"):
            fileio.delete(snapshots.snapshot_path(sid))
        took_effect(f"snapshot {sid} of branch '{store.branch}' rolled back")
    _delete_changelogs_after(store, n)
    deleted_tags = []
    for t in all_tags:
        if t.snapshot.id > n:
            tags.delete(t.name, ignore_if_not_exists=True)
            deleted_tags.append(t.name)
    if restored and not any(sid < n for sid in snapshots.list_ids()):
        snapshots.commit_earliest_hint(n)
    snapshots.commit_latest_hint(n)
    iceberg_sync.resync_quietly(store, tags.snapshot_ids)  # a no-op unless main keeps Iceberg metadata
    return RollbackResult(previous, n, sorted(deleted_snapshots), deleted_tags, restored)


def same_commit(a: Snapshot, b: Snapshot) -> bool:
    """Whether two snapshot records describe the same commit (by uuid when both have one)."""
    if a.uuid and b.uuid:
        return a.uuid == b.uuid
    return (a.base_manifest_list, a.delta_manifest_list, a.commit_user, a.time_millis) == (
        b.base_manifest_list,
        b.delta_manifest_list,
        b.commit_user,
        b.time_millis,
    )


def _delete_changelogs_after(store: FileStore, n: int) -> None:
    fileio = store.fileio
    directory = f"{store.branch_root}/changelog"
    names = fileio.list_names(directory)
    remaining = []
    for name in names:
        if name.startswith(CHANGELOG_PREFIX) and name[len(CHANGELOG_PREFIX) :].isdigit():
            cid = int(name[len(CHANGELOG_PREFIX) :])
            if cid > n:
                fileio.delete(f"{directory}/{name}")
            else:
                remaining.append(cid)
    if LATEST in names:
        if remaining:
            fileio.write_bytes(f"{directory}/{LATEST}", str(max(remaining)).encode())
        else:
            fileio.delete(f"{directory}/{LATEST}")


__all__ = ["RollbackResult", "rollback_to"]
