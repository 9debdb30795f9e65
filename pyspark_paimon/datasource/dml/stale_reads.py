"""Stale-read checks of primary-key changes: a change computed from rows read at one snapshot must not land on top of
a commit that may hold those rows or the keys it writes (:func:`unchanged_since`); when one did, the change is read,
decided and written again (:func:`replanned`, :data:`DML_ATTEMPTS` times). Branch merges use the same check.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence, TypeVar

from pyspark_paimon.datasource.write.cross_partition import is_cross_partition
from pyspark_paimon.errors import CommitConflictError, PaimonError
from pyspark_paimon.metadata.manifests.index_manifest import IndexChange
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, DataFileMeta, ManifestEntry
from pyspark_paimon.metadata.schema.options import POSTPONE_BUCKET
from pyspark_paimon.metadata.schema.table_schema import TableSchema
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

    Why: a primary-key change is written as retractions and upserts decided on the rows read at ``read``. A
    writer that committed one of those keys (or a row the change's filter selects) after ``read`` would make the
    change land on rows it never saw: its commit would win the key (the later commit wins,
    :mod:`pyspark_paimon.metadata.snapshots.commit_order`) with a decision made without that writer's row.

    A compaction changes no row and keeps sequence numbers: never a conflict. With ``pruned_by`` (the leaves the
    change's read was pruned with), an APPEND commit is a conflict only when one of its files may hold rows the
    read selected (the same partition, bucket and file-statistics pruning as the read) or may hold a key this
    change writes: its key range overlaps that of a file of ours where the key could live in both. Where a key
    can live (:func:`_key_neighbours`), by bucket mode: a fixed bucket, a dynamic bucket (the hash index keeps a key in
    one bucket of its partition; a commit putting it in another fails on the index) and a postpone table's real
    bucket hold a key in one (partition, bucket); a postpone-bucket file may hold any key of its partition (its
    rows move to real buckets when compacted); a cross-partition table's key may move to any partition, so every
    file of ours is compared. So a writer of other partitions, buckets or keys does not make the change start
    over, whatever the bucket mode. Anything else (an overwrite, no ``pruned_by``) is a conflict."""
    base = read.id if read is not None else 0
    schema = store.schema()
    precise = pruned_by is not None
    ours: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for m in messages:
        ours[(m.partition, m.bucket)].extend(m.new_files)
    mine_near = _key_neighbours(schema, ours)
    key_types = [schema.field(k).type for k in schema.trimmed_primary_keys]

    def overlaps(e: ManifestEntry) -> bool:
        mine = mine_near(e.partition, e.bucket)
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

    cleared: set[int] = set()  # snapshots an earlier attempt found harmless: not read again on a retry

    def check(latest: Snapshot | None) -> IndexChange:
        if latest is None or latest.id <= base:
            return IndexChange()
        for sid in range(base + 1, latest.id + 1):
            if sid in cleared:
                continue
            other = store.snapshots.snapshot(sid)
            if other.commit_kind == "COMPACT" or not may_touch(other):
                cleared.add(sid)
            else:
                raise StaleReadError(
                    f"Snapshot {sid} ({other.commit_kind}, commit user '{other.commit_user}') landed on branch "
                    f"'{store.branch}' of {store.table_path} after this change read its rows at snapshot {base}, "
                    "and may hold rows the change reads or writes, so the change was decided without them. Nothing "
                    "was committed; run it again."
                )
        return IndexChange()

    return check


def _key_neighbours(
    schema: TableSchema, ours: dict[tuple[bytes, int], list[DataFileMeta]]
) -> Callable[[bytes, int], list[DataFileMeta]]:
    """The files of ours that may hold a key a file of (partition, bucket) holds (see :func:`unchanged_since`):
    the same bucket's; with the postpone bucket's of that partition (its keys go to any real bucket), or every
    bucket's of the partition for a postpone-bucket file; every file of ours on a cross-partition table."""
    if is_cross_partition(schema):
        everything = [f for files in ours.values() for f in files]
        return lambda partition, bucket: everything
    by_partition: dict[bytes, list[DataFileMeta]] = defaultdict(list)
    for (partition, _), files in ours.items():
        by_partition[partition].extend(files)

    def near(partition: bytes, bucket: int) -> list[DataFileMeta]:
        if bucket < 0:
            return by_partition.get(partition, [])
        return [*ours.get((partition, bucket), ()), *ours.get((partition, POSTPONE_BUCKET), ())]

    return near


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
