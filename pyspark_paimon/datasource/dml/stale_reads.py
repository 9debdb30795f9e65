"""Stale-read checks of primary-key changes: a change computed from rows read at one snapshot must not land on top of
a commit that may hold those rows or the keys it writes (:func:`unchanged_since`); when one did, the change is read,
decided and written again (:func:`replanned`, :data:`DML_ATTEMPTS` times). Branch merges use the same check.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence, TypeVar

from pyspark_paimon.errors import CommitConflictError, PaimonError
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.scan import ScanPlanner
from pyspark_paimon.planner.sections import decoded_key_range

__all__ = ["StaleReadError", "DML_ATTEMPTS", "unchanged_since", "replanned"]

_T = TypeVar("_T")


class StaleReadError(CommitConflictError):
    """A primary-key change's commit found a commit newer than the rows it was computed from (raised by
    :func:`unchanged_since`; the Python API re-plans the change, :data:`DML_ATTEMPTS` times)."""


#: How many times a primary-key change is planned anew when writers keep committing between its read and its commit.
DML_ATTEMPTS = 5


def unchanged_since(
    store: FileStore,
    read: Snapshot | None,
    messages: Sequence[CommitMessage] = (),
    pruned_by: Sequence[Leaf] | None = None,
) -> Callable[[Snapshot | None], IndexChange]:
    """A commit check (``index_update`` changing nothing, run on every attempt): raise :class:`StaleReadError`
    when a commit that may touch this change's rows landed on the branch after ``read``.

    Why: a primary-key change is written as retractions and upserts whose sequence numbers were chosen when the
    change was prepared. A writer that committed the same key after ``read`` may hold equal or higher sequence
    numbers, so the change, committed later, would lose the merge (an acknowledged delete or update silently
    absent); and the change was decided on rows that writer replaced (or without rows it added).

    A compaction changes no row and keeps sequence numbers: never a conflict. With ``pruned_by`` (the leaves the
    change's read was pruned with) on a fixed-bucket table, an APPEND commit is a conflict only when one of its
    files may hold rows the read selected (the same partition, bucket and file-statistics pruning as the read)
    or overlaps, in a bucket of ``messages``, the key range of a file this change writes; so a writer on other
    partitions, buckets or keys does not make the change start over. Anything else (an overwrite, another
    bucket mode, no ``pruned_by``) is a conflict."""
    base = read.id if read is not None else 0
    schema = store.schema()
    precise = pruned_by is not None and schema.num_buckets > 0
    ours: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for m in messages:
        ours[(m.partition, m.bucket)].extend(m.new_files)
    key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]

    def overlaps(e: ManifestEntry) -> bool:
        mine = ours.get((e.partition, e.bucket))
        if not mine:
            return False
        try:
            lo, hi = decoded_key_range(e.file, key_types)
            return any(not (hi < a or b < lo) for a, b in (decoded_key_range(f, key_types) for f in mine))
        except (PaimonError, TypeError, ValueError, KeyError):
            return True  # keys that cannot be compared: assume they overlap

    def may_touch(other: Snapshot) -> bool:
        if not precise or other.commit_kind != "APPEND":
            return True
        entries = store.manifests.read_entries(store.manifests.read_list(other.delta_manifest_list))
        if any(e.kind != KIND_ADD for e in entries):
            return True
        if ScanPlanner(store, schema).plan_entries(entries, predicate=list(pruned_by or ())).splits:
            return True
        return any(overlaps(e) for e in entries)

    def check(latest: Snapshot | None) -> IndexChange:
        if latest is None or latest.id <= base:
            return IndexChange()
        for sid in range(base + 1, latest.id + 1):
            other = store.snapshots.snapshot(sid)
            if other.commit_kind != "COMPACT" and may_touch(other):
                raise StaleReadError(
                    f"Snapshot {sid} ({other.commit_kind}, commit user '{other.commit_user}') landed on branch "
                    f"'{store.branch}' of {store.table_path} after this change read its rows at snapshot {base}, "
                    "and may hold rows the change reads or writes, so the change would be ordered against rows it "
                    "never saw. Nothing was committed; run it again."
                )
        return IndexChange()

    return check


def replanned(store: FileStore, run: Callable[[], _T]) -> _T:
    """Run a change (read, decide, write, commit) again while its commit finds a newer commit than its read
    (:func:`unchanged_since`), so it applies to the rows it lands on."""
    last: StaleReadError | None = None
    for _ in range(DML_ATTEMPTS):
        try:
            return run()
        except StaleReadError as exc:
            last = exc
    raise CommitConflictError(
        f"A change to branch '{store.branch}' of {store.table_path} was planned {DML_ATTEMPTS} times and each time "
        f"another writer committed between its read and its commit (last: {last}). Nothing was committed; run it "
        "again when the branch is quieter."
    )
