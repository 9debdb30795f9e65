"""Key-aware branch merge, cherry-pick and safe publish: three-way merges written as ONE commit on the target.

A three-way merge needs a *base*: the version both sides started from. For ``t.branches.merge(source, into)``
it is the fork point the branch lineage (``branch.json``, :mod:`pyspark_paimon.metadata.refs.branches`) records:
the nearest common ancestor of the two lines of descent, also when a branch was created from another branch
(each child branch keeps a copy of the snapshot it was created from, so the base survives expiration on the
parent); branches without lineage (made by Paimon or pypaimon) use the
child branch's earliest snapshot. For a cherry-pick the base is the picked snapshot's parent (id - 1).

**Primary-key tables** (merge engine ``deduplicate``, no ``sequence.field``: it would reorder the merged rows):
both sides' changes since the base come from
:func:`~pyspark_paimon.datasource.versions.diff.diff_snapshots`, so the cost follows the changed buckets, not the table.
Each changed key has an *after state* per side (its new row, or deleted). A key only the source changed is
applied to the target; a key both changed to the same state is already merged; a key both changed differently
is a *conflict*: ``on_conflict="fail"`` raises :class:`BranchMergeConflictError` (the first keys and the count;
nothing is written), ``"source"`` takes the source's state, ``"target"`` keeps the target's. The changes are
written through the DML write path (retractions ``-D`` and upserts ``+U``/``+I`` in new level-0 files whose
sequence numbers follow every row of the target), all joins in Arrow.

**Append tables** have no key, so they merge by file lineage, as :func:`diff_snapshots` compares them: the data
files the source added since the base are added to the target (the files are shared, nothing is copied) and the
files it removed since the base (a delete or update rewrote them) are removed from the target. A file the
source *and* the target both removed since the base is a conflict (both rewrote the same rows); it cannot be
resolved row by row without a key, so every ``on_conflict`` refuses it, naming the files. Tables with deletion
vectors are refused (a vector is not carried by a file-level merge).

**Retries.** The commit is an ordinary commit on the target: a concurrent commit that lands first makes it
land on top (its rows are kept), and a commit conflict (a file the merge removes is gone) re-plans the merge
from the target's new head, up to :data:`MERGE_ATTEMPTS` times. On a primary-key table a commit (other than a
compaction) that lands on the target between planning and commit and may hold one of the keys the source
changed is such a conflict too (:func:`~pyspark_paimon.datasource.dml.stale_reads.unchanged_since`): the merge's
decision for that key was made without it, so the merge is re-planned on top of it and both land in commit order. A
writer of other keys does not disturb it, on any bucket mode.

**Repeated merges.** After ``merge(source, into)`` the merged source snapshot becomes the base of the next merge
in that direction (as git's merge base moves with a merge commit), so changes already merged, and conflicts
already resolved, are not seen again. The record is ``merge-bases.json`` in the directory of whichever branch is
not ``main`` (Paimon and pypaimon read only a branch's ``schema/``, ``snapshot/`` and ``tag/`` there); it names
the target snapshot the merge left too, and is ignored once that snapshot is gone or replaced (a rollback) or the
source snapshot expired, falling back to the fork point. The record is written twice: right before the merge's
commit, as a pending entry naming the commit's user and the head it was planned on, and after it, complete. So a
failure (or a kill) after the commit never loses it: the next merge finds the pending entry's commit on the target
and takes its source snapshot as the base (a pending entry whose commit never landed is ignored, and the previous
merge's entry, kept beside it, still counts). Writing the record first keeps it next to the commit it describes
rather than leaving the next merge to guess a base from the fork point, which would report changes merged already
as conflicts (or, with ``on_conflict='source'``, undo later target changes of those keys).
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from typing import Callable, Literal, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.dml.change_commit import KIND_DELETE, KIND_INSERT, KIND_UPDATE_AFTER
from pyspark_paimon.datasource.dml.change_rules import check_merge_engine
from pyspark_paimon.datasource.dml.change_target import key_prune
from pyspark_paimon.datasource.dml.stale_reads import unchanged_since
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.versions.diff import diff_snapshots
from pyspark_paimon.errors import (
    BranchError,
    BranchMergeConflictError,
    CommitConflictError,
    OptionError,
    PaimonError,
    SnapshotNotFoundError,
)
from pyspark_paimon.metadata.manifests.manifest import ManifestEntry
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot
from pyspark_paimon.metadata.schema.row_tracking import row_tracking_enabled
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.row_ranges import refuse_data_evolution
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN

log = logging.getLogger(__name__)

__all__ = [
    "BranchMergeResult",
    "MERGE_ATTEMPTS",
    "ON_CONFLICT",
    "OnConflict",
    "cherry_pick",
    "fork_point",
    "merge_branch",
    "publish_branch",
]


OnConflict = Literal["fail", "source", "target"]
"""What a branch merge does with a key both sides changed differently since their fork: ``'fail'`` (the default:
:class:`~pyspark_paimon.errors.BranchMergeConflictError` listing the first keys and the count, nothing written),
``'source'`` (take the merged branch's row) or ``'target'`` (keep the row of the branch merged into)."""
ON_CONFLICT: tuple[OnConflict, ...] = get_args(OnConflict)
MERGE_ATTEMPTS = 5
#: How many conflicting keys an error lists (the count is always exact).
CONFLICTS_SHOWN = 10
_KIND = "__merge_kind"
_CODES = {"+I": KIND_INSERT, "+U": KIND_UPDATE_AFTER, "-D": KIND_DELETE}


@dataclass(frozen=True)
class BranchMergeResult:
    """What a branch merge, cherry-pick or publish wrote on ``into`` (one snapshot, or none when nothing was to
    change). ``base``: the version the three-way merge started from (``<branch>.<snapshot id>``).
    ``conflicts``: keys both sides changed differently (resolved by ``on_conflict``); ``target_unchanged``: the
    target had not changed since the base, so its content now equals the source's."""

    source: str
    """The branch merged (a cherry-pick: the commit picked, ``<branch>.<id>``)."""
    into: str
    """The branch merged into."""
    base: str
    """The version the three-way merge started from, ``<branch>.<snapshot id>``."""
    upserted: int = 0
    """Rows written as inserts or updates (primary-key tables)."""
    deleted: int = 0
    """Rows deleted (primary-key tables)."""
    files_added: int = 0
    """Data files added (append tables)."""
    files_removed: int = 0
    """Data files removed (append tables)."""
    conflicts: int = 0
    """Keys both sides changed differently, resolved by ``on_conflict``."""
    target_unchanged: bool = False
    """True when ``into`` had not changed since the base: its content now equals the source's."""
    snapshot_id: int | None = None
    """The snapshot committed on ``into`` (None: nothing was to change)."""
    source_snapshot_id: int | None = None  # the source snapshot merged (the next merge's base)
    """The source snapshot merged (the next merge's base)."""


# ------------------------------------------------------------------------------------------- versions
def _head(store: FileStore) -> Snapshot:
    head = store.snapshots.latest()
    if head is None:
        raise BranchError(
            f"Branch '{store.branch}' of {store.table_path} has no snapshot: there is nothing to merge from or into. "
            "Write to it first."
        )
    return head


def _snapshot(store: FileStore, sid: int) -> Snapshot:
    return find_snapshot(store.snapshots, TagManager(store), sid)


def _ancestry(manager: BranchManager, name: str) -> tuple[list[tuple[str, int | None, str]], str | None]:
    """``name``'s line of descent by lineage: ``(branch, snapshot id, holder)`` from ``(name, None, name)`` (its
    head) up through every branch it was created from, ``snapshot id`` being where the line left that branch and
    ``holder`` the child branch that kept a copy of that snapshot. Second: the branch whose lineage says it was
    created empty, when the walk stopped there."""
    chain: list[tuple[str, int | None, str]] = [(name, None, name)]
    current = name
    while current != MAIN_BRANCH:
        lineage = manager.lineage(current)
        if lineage is None or not lineage.source_branch or any(b == lineage.source_branch for b, _, _ in chain):
            return chain, None
        if lineage.source_snapshot_id is None:
            return chain, current
        chain.append((lineage.source_branch, lineage.source_snapshot_id, current))
        current = lineage.source_branch
    return chain, None


def fork_point(store: FileStore, source: str, into: str) -> tuple[FileStore, Snapshot]:
    """The base of merging ``source`` into ``into``: their nearest common ancestor by lineage -- on the first
    branch both lines of descent reach, the earlier of the two snapshots they left it at (so a branch created
    from another branch merges into ``main`` from where its parent left ``main``) -- else the earliest snapshot
    of the one that is not ``main`` (branches without lineage). Both must exist."""
    manager = BranchManager(store)
    for name in (source, into):
        if not manager.exists(name):
            raise BranchError(
                f"Table {store.table_path} has no branch '{name}' (branches: main, "
                f"{', '.join(manager.names()) or 'none other'})."
            )
    if source == into:
        raise BranchError(f"Cannot merge branch '{source}' of {store.table_path} into itself.")
    src_chain, src_empty = _ancestry(manager, source)
    into_chain, into_empty = _ancestry(manager, into)
    reached = {b: (sid, holder) for b, sid, holder in into_chain}
    for branch, sid, holder in src_chain:
        if branch not in reached:
            continue
        other_sid, other_holder = reached[branch]
        options = [(i, h) for i, h in ((sid, holder), (other_sid, other_holder)) if i is not None]
        base_id, base_holder = min(options)
        for name in dict.fromkeys((base_holder, branch)):  # the child's copy, else the parent's own snapshot
            try:
                holder_store = store.with_branch(name)
                return holder_store, _snapshot(holder_store, base_id)
            except SnapshotNotFoundError:
                continue
        raise BranchError(
            f"The fork point of '{source}' and '{into}' of {store.table_path} (snapshot {base_id} of '{branch}') "
            "expired on both branches, so there is no base to merge from. Tag fork points you merge from later."
        )
    empty = src_empty or into_empty
    if empty is not None:
        lineage = manager.lineage(empty)
        parent = lineage.source_branch if lineage is not None else MAIN_BRANCH
        raise BranchError(
            f"Branch '{empty}' of {store.table_path} was created empty, so it shares no version with "
            f"'{parent}' to merge from. Write its rows into '{parent}' directly (Table.merge)."
        )
    child = source if source != MAIN_BRANCH else into
    child_store = store.with_branch(child)
    earliest = child_store.snapshots.earliest_id()
    if earliest is None:
        raise BranchError(f"Branch '{child}' of {store.table_path} has no snapshot to take as the merge base.")
    return child_store, _snapshot(child_store, earliest)


def _check_same_schema(source: FileStore, into: FileStore) -> None:
    a, b = source.schema(), into.schema()
    if a.arrow_schema() != b.arrow_schema() or list(a.primary_keys) != list(b.primary_keys):
        raise BranchError(
            f"Branches '{source.branch}' and '{into.branch}' of {into.table_path} have different schemas (schema "
            f"{a.id} vs {b.id}); a merge writes rows of one into the other by column. Alter '{into.branch}' to the "
            f"same columns first, or publish with t.branches.fast_forward('{source.branch}')."
        )


# ------------------------------------------------------------------------------------------- key merge
def _after_states(changes: pa.Table) -> pa.Table:
    """One row per changed key: its new row (``+I``/``+U``) or its old row marked deleted (``-D``)."""
    kinds = changes.column(ROW_KIND_COLUMN)
    kept = changes.filter(pc.not_equal(kinds, "-U"))
    codes = pc.replace_with_mask(
        pa.array(np.full(kept.num_rows, KIND_UPDATE_AFTER, dtype=np.int8)),
        pc.equal(kept.column(ROW_KIND_COLUMN), "-D").combine_chunks(),
        pa.array(np.full(kept.num_rows, KIND_DELETE, dtype=np.int8)),
    )
    codes = pc.if_else(pc.equal(kept.column(ROW_KIND_COLUMN), "+I"), pa.scalar(KIND_INSERT, pa.int8()), codes)
    return kept.drop_columns([ROW_KIND_COLUMN]).append_column(_KIND, codes)


def _same_state(src: pa.Table, tgt: pa.Table, columns: list[str]) -> np.ndarray:
    """Row by row (aligned tables): both deleted, or neither deleted and every column equal (NULL = NULL)."""
    src_del = pc.equal(src.column(_KIND), KIND_DELETE).to_numpy(zero_copy_only=False)
    tgt_del = pc.equal(tgt.column(_KIND), KIND_DELETE).to_numpy(zero_copy_only=False)
    same = np.ones(src.num_rows, dtype=bool)
    for name in columns:
        a, b = src.column(name), tgt.column(name)
        if pa.types.is_nested(a.type):
            # No vectorised equality for nested values: only keys both sides changed get here, a small set.
            eq = np.array([x == y for x, y in zip(a.to_pylist(), b.to_pylist())], dtype=bool)
        else:
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            eq = pc.fill_null(pc.or_(pc.equal(a, b), both_null), False).to_numpy(zero_copy_only=False)
        same &= eq
    return (src_del & tgt_del) | (~src_del & ~tgt_del & same)


def _key_changes(
    base: tuple[FileStore, Snapshot],
    source: tuple[FileStore, Snapshot],
    into: tuple[FileStore, Snapshot],
    on_conflict: OnConflict,
    label: str,
) -> tuple[pa.Table, int, bool, list[Leaf]]:
    """The after states to write on ``into``, the number of conflicts (module docstring), whether ``into`` is
    unchanged since the base, and leaves selecting the keys the source changed (the only target rows the
    decisions read)."""
    schema = into[0].schema()
    keys = list(schema.primary_keys)
    columns = [n for n in schema.field_names if n not in keys]
    src = _after_states(diff_snapshots(base[0], base[1], source[0], source[1]))
    tgt = _after_states(diff_snapshots(base[0], base[1], into[0], into[1]))
    src = src.append_column("__s", pa.array(np.arange(src.num_rows, dtype=np.int64)))
    tgt_keys = tgt.select(keys).append_column("__t", pa.array(np.arange(tgt.num_rows, dtype=np.int64)))
    pairs = src.select([*keys, "__s"]).join(tgt_keys, keys=keys, join_type="inner", use_threads=False)
    s_idx = pairs.column("__s").to_numpy().astype(np.int64)
    t_idx = pairs.column("__t").to_numpy().astype(np.int64)
    apply = np.ones(src.num_rows, dtype=bool)
    conflicts = 0
    if len(s_idx):
        both_src, both_tgt = src.take(pa.array(s_idx)), tgt.take(pa.array(t_idx))
        same = _same_state(both_src, both_tgt, columns)
        apply[s_idx[same]] = False  # already merged
        differ = s_idx[~same]
        conflicts = len(differ)
        if conflicts and on_conflict == "fail":
            shown = src.take(pa.array(differ[:CONFLICTS_SHOWN])).select(keys)
            raise BranchMergeConflictError(
                f"{label}: {conflicts} key(s) changed differently on both sides since {_ref(*base)}: "
                f"{_render(shown)}{' …' if conflicts > CONFLICTS_SHOWN else ''}. Nothing was written. "
                "Inspect them with t.diff, then merge again with on_conflict='source' (take the source's rows) "
                "or 'target' (keep the target's).",
                keys=shown,
                count=conflicts,
            )
        if on_conflict == "target":
            apply[differ] = False
    out = src.filter(pa.array(apply)).drop_columns(["__s"])
    return out, conflicts, tgt.num_rows == 0, key_prune(src.select(keys), keys)


def _render(keys: pa.Table) -> str:
    rows = keys.to_pylist()
    if keys.num_columns == 1:
        return ", ".join(repr(next(iter(r.values()))) for r in rows)
    return ", ".join(str(r) for r in rows)


def _ref(store: FileStore, snapshot: Snapshot) -> str:
    return f"{store.branch}.{snapshot.id}"


# Called right before a merge's commit with the commit user, the target head the merge was planned on and the
# source snapshot merged: the record the commit's outcome is found by later (``_pending_base``).
BeforeCommit = Callable[[str, Snapshot, Snapshot], None]


def _write_keys(
    into: FileStore,
    changes: pa.Table,
    planned_on: Snapshot,
    decided_on: list[Leaf],
    before_commit: Callable[[str], None] | None = None,
) -> tuple[int, int, int | None]:
    """Write the after states as one commit that must land on ``planned_on`` (the target head the merge was
    planned against): a newer commit that may hold rows of the keys the merge decided on (``decided_on``) is a
    :class:`CommitConflictError` that re-plans the merge. ``before_commit(commit user)`` runs last before the
    commit (a failure there aborts: nothing was committed)."""
    schema = into.schema()
    kinds = changes.column(_KIND).combine_chunks()
    n_del = int(pc.sum(pc.equal(kinds, KIND_DELETE)).as_py() or 0)
    if changes.num_rows == 0:
        return 0, 0, None
    job = prepare_write(into)
    writer = job.new_writer("branch-merge")
    try:
        writer.write(changes.select(schema.field_names), kinds=kinds)
        messages = writer.prepare_commit()
        if before_commit is not None:
            before_commit(job.commit_user)
    except BaseException:
        writer.abort()
        raise
    snapshot = job.commit(
        messages,
        kind="APPEND",
        index_update=unchanged_since(into, planned_on, messages, decided_on),
        abort=writer.abort,
    )
    return changes.num_rows - n_del, n_del, snapshot.id if snapshot is not None else None


# ------------------------------------------------------------------------------------------- file merge
def _files(store: FileStore, snapshot: Snapshot) -> dict[str, ManifestEntry]:
    return {e.file.file_name: e for e in store.live_entries(snapshot)}


def _file_changes(
    base: tuple[FileStore, Snapshot],
    source: tuple[FileStore, Snapshot],
    into: tuple[FileStore, Snapshot],
    label: str,
) -> tuple[list[ManifestEntry], list[ManifestEntry], bool]:
    """Append tables: (files to add, files to remove, target unchanged since the base)."""
    before = _files(*base)
    src = _files(*source)
    tgt = _files(*into)
    added = [e for n, e in src.items() if n not in before and n not in tgt]
    removed_src = {n for n in before if n not in src}
    removed_tgt = {n for n in before if n not in tgt}
    both = sorted(removed_src & removed_tgt)
    if both:
        raise BranchMergeConflictError(
            f"{label}: {len(both)} data file(s) were rewritten or removed on both sides since {_ref(*base)}: "
            f"{', '.join(both[:CONFLICTS_SHOWN])}{' …' if len(both) > CONFLICTS_SHOWN else ''}. An append table has no "
            "key to merge their rows by, so no on_conflict resolves this; nothing was written. Compare both sides "
            "with t.diff and apply the change on one of them with Table.delete/update/merge.",
            keys=pa.table({"file_name": both[:CONFLICTS_SHOWN]}),
            count=len(both),
        )
    removed = [tgt[n] for n in sorted(removed_src) if n in tgt]
    unchanged = set(tgt) == set(before)
    return added, removed, unchanged


def _write_files(
    into: FileStore,
    added: list[ManifestEntry],
    removed: list[ManifestEntry],
    before_commit: Callable[[str], None] | None = None,
) -> int | None:
    if not added and not removed:
        return None
    groups: dict[tuple[bytes, int, int], tuple[list, list]] = {}
    for e in added:
        groups.setdefault((e.partition, e.bucket, e.total_buckets), ([], []))[0].append(e.file)
    for e in removed:
        groups.setdefault((e.partition, e.bucket, e.total_buckets), ([], []))[1].append(e.file)
    messages = [CommitMessage(p, b, n, tuple(new), tuple(old)) for (p, b, n), (new, old) in groups.items()]
    job = prepare_write(into)
    if before_commit is not None:
        before_commit(job.commit_user)
    # The files added are the source branch's own (data files are shared): a failed commit deletes none of them.
    snapshot = job.commit(messages, kind="OVERWRITE" if removed else "APPEND", abort=lambda: None)
    return snapshot.id if snapshot is not None else None


# ------------------------------------------------------------------------------------------- operations
def _check_on_conflict(on_conflict: str) -> None:
    if on_conflict not in ON_CONFLICT:
        raise OptionError(f"on_conflict must be one of {', '.join(map(repr, ON_CONFLICT))}; got {on_conflict!r}.")


def three_way(
    base: tuple[FileStore, Snapshot],
    src_branch: FileStore,
    source: Snapshot | None,
    into: FileStore,
    on_conflict: OnConflict,
    label: str,
    before_commit: BeforeCommit | None = None,
) -> BranchMergeResult:
    """Apply the changes from ``base`` to ``source`` of ``src_branch`` (None: its head, re-read per attempt) onto
    ``into``'s head in one commit, re-planned on a commit conflict (module docstring). ``before_commit`` runs
    right before each attempt's commit."""
    _check_on_conflict(on_conflict)
    _check_same_schema(src_branch, into)
    schema = into.schema()
    refuse_data_evolution(schema, into.table_path, label)
    if row_tracking_enabled(schema.options):
        raise BranchError(
            f"{label}: table {into.table_path} tracks rows ('row-tracking.enabled'); a merge of its branches must "
            "keep or re-number the rows' ids as Paimon does, which is not implemented. Publish with "
            "t.branches.fast_forward, or merge with Paimon."
        )
    if schema.primary_keys:
        check_merge_engine(schema, into.table_path, deletes=True, updates=True)
        if schema.core_options.merge_engine != "deduplicate":
            raise BranchError(
                f"{label}: table {into.table_path} uses merge-engine '{schema.core_options.merge_engine}', whose rows "
                "are combined from their inputs; a merge by key writes whole rows, which only 'deduplicate' keeps as "
                "written. Merge such tables by replaying the source's input rows."
            )
        if schema.core_options.sequence_fields:
            raise BranchError(
                f"{label}: table {into.table_path} orders the rows of a key by 'sequence.field' "
                f"({', '.join(schema.core_options.sequence_fields)}), so a merged row older by that field than the "
                "target's would be dropped by the merge engine and the merge would not land as planned. Publish with "
                "t.branches.fast_forward, or apply the change with Table.merge."
            )
    elif schema.core_options.deletion_vectors_enabled:
        raise BranchError(
            f"{label}: append table {into.table_path} has 'deletion-vectors.enabled' = 'true'; a merge by data file "
            "would not carry the vectors. Compact both branches first, or apply the change with Table.delete/update."
        )
    last: CommitConflictError | None = None
    for _ in range(MERGE_ATTEMPTS):
        src = (src_branch, source if source is not None else _head(src_branch))
        tgt = (into, _head(into))
        hook = None
        if before_commit is not None:
            hook = functools.partial(_call_before, before_commit, tgt[1], src[1])
        try:
            if schema.primary_keys:
                changes, conflicts, unchanged, decided_on = _key_changes(base, src, tgt, on_conflict, label)
                upserted, deleted, sid = _write_keys(into, changes, tgt[1], decided_on, hook)
                return BranchMergeResult(
                    src[0].branch,
                    into.branch,
                    _ref(*base),
                    upserted,
                    deleted,
                    0,
                    0,
                    conflicts,
                    unchanged,
                    sid,
                    src[1].id,
                )
            added, removed, unchanged = _file_changes(base, src, tgt, label)
            sid = _write_files(into, added, removed, hook)
            return BranchMergeResult(
                src[0].branch,
                into.branch,
                _ref(*base),
                files_added=len(added),
                files_removed=len(removed),
                target_unchanged=unchanged,
                snapshot_id=sid,
                source_snapshot_id=src[1].id,
            )
        except CommitConflictError as exc:
            last = exc
    raise CommitConflictError(
        f"{label}: the commit on '{into.branch}' of {into.table_path} conflicted {MERGE_ATTEMPTS} times with "
        f"concurrent commits (last: {last}). Nothing was written; run it again."
    )


def _call_before(before_commit: BeforeCommit, planned_on: Snapshot, source: Snapshot, commit_user: str) -> None:
    before_commit(commit_user, planned_on, source)


def merge_branch(store: FileStore, source: str, into: str, on_conflict: OnConflict = "fail") -> BranchMergeResult:
    """Three-way merge of branch ``source`` into branch ``into`` from their fork point, one commit on ``into``."""
    _check_on_conflict(on_conflict)
    base = fork_point(store, source, into)
    base = _recorded_base(store, source, into) or base
    label = f"Merging branch '{source}' into '{into}' of {store.table_path}"

    def pending(commit_user: str, planned_on: Snapshot, merged: Snapshot) -> None:
        _record_pending(store, source, into, commit_user, planned_on, merged)

    result = three_way(base, store.with_branch(source), None, store.with_branch(into), on_conflict, label, pending)
    if result.snapshot_id is None:
        _record_base(store, source, into, result)  # no commit: this record is the merge's only effect
        return result
    try:
        _record_base(store, source, into, result)
    except (OSError, PaimonError) as e:  # the commit landed: its pending record already names it
        log.warning(
            "Branch '%s' was merged into '%s' of %s (snapshot %s), but rewriting %s failed (%s); the record written "
            "before the commit still leads the next merge to this base",
            source,
            into,
            store.table_path,
            result.snapshot_id,
            MERGE_BASES_FILE,
            e,
        )
    return result


MERGE_BASES_FILE = "merge-bases.json"


def _bases_path(store: FileStore, source: str, into: str) -> str:
    holder = source if source != MAIN_BRANCH else into
    return f"{BranchManager(store).branch_dir(holder)}/{MERGE_BASES_FILE}"


def _read_bases(store: FileStore, path: str) -> dict:
    try:
        data = json.loads(store.fileio.read_text(path))
    except (FileNotFoundError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _recorded_base(store: FileStore, source: str, into: str) -> tuple[FileStore, Snapshot] | None:
    """The source snapshot the last merge of ``source`` into ``into`` merged, while ``into`` still holds the
    snapshot that merge left (module docstring, "Repeated merges"); a merge whose record was written only before
    its commit counts once that commit is found on ``into``."""
    entry = _read_bases(store, _bases_path(store, source, into)).get(f"{source}->{into}")
    if not isinstance(entry, dict):
        return None
    src, tgt = store.with_branch(source), store.with_branch(into)
    pending = _pending_base(src, tgt, entry.get("pending"))
    if pending is not None:
        return src, pending[0]
    try:
        base = _snapshot(src, int(entry["sourceSnapshotId"]))
        left = _snapshot(tgt, int(entry["intoSnapshotId"]))
    except (SnapshotNotFoundError, KeyError, TypeError, ValueError):
        return None
    if base.uuid != entry.get("sourceSnapshotUuid") or left.uuid != entry.get("intoSnapshotUuid"):
        return None
    return src, base


def _pending_base(src: FileStore, tgt: FileStore, pending: object) -> tuple[Snapshot, Snapshot] | None:
    """The source snapshot of a merge recorded before its commit and the snapshot that commit left on ``tgt``, if
    it landed (a snapshot above the head it was planned on, by its commit user) and the source snapshot is still
    the one merged."""
    if not isinstance(pending, dict):
        return None
    try:
        planned_on, user = int(pending["plannedOn"]), str(pending["commitUser"])
        merged = _snapshot(src, int(pending["sourceSnapshotId"]))
    except (SnapshotNotFoundError, KeyError, TypeError, ValueError):
        return None
    if merged.uuid != pending.get("sourceSnapshotUuid"):
        return None
    for sid in tgt.snapshots.list_ids():
        if sid <= planned_on:
            continue
        try:
            left = tgt.snapshots.snapshot(sid)
        except SnapshotNotFoundError:  # expired while we looked
            continue
        if left.commit_user == user:
            return merged, left
    return None


def _record_pending(
    store: FileStore, source: str, into: str, commit_user: str, planned_on: Snapshot, merged: Snapshot
) -> None:
    """Before a merge's commit: add to the pair's record the commit that is about to be made, so that the next
    merge finds its base even if nothing after the commit is written (module docstring, "Repeated merges"). The
    last merge's entry stays, for the case that this commit never lands."""
    path = _bases_path(store, source, into)
    bases = _read_bases(store, path)
    key = f"{source}->{into}"
    found = bases.get(key)
    entry: dict = found if isinstance(found, dict) else {}
    landed = _pending_base(store.with_branch(source), store.with_branch(into), entry.get("pending"))
    if landed is not None:  # an earlier merge's commit landed without its final record: that record first
        entry = _entry(*landed)
    entry["pending"] = {
        "sourceSnapshotId": merged.id,
        "sourceSnapshotUuid": merged.uuid,
        "commitUser": commit_user,
        "plannedOn": planned_on.id,
    }
    bases[key] = entry
    store.fileio.write_bytes(path, json.dumps(bases, indent=2).encode("utf-8"))


def _record_base(store: FileStore, source: str, into: str, result: BranchMergeResult) -> None:
    tgt = store.with_branch(into)
    left = _snapshot(tgt, result.snapshot_id) if result.snapshot_id is not None else tgt.snapshots.latest()
    if result.source_snapshot_id is None or left is None:
        return
    merged = _snapshot(store.with_branch(source), result.source_snapshot_id)
    path = _bases_path(store, source, into)
    bases = _read_bases(store, path)
    bases[f"{source}->{into}"] = _entry(merged, left)
    store.fileio.write_bytes(path, json.dumps(bases, indent=2).encode("utf-8"))


def _entry(merged: Snapshot, left: Snapshot) -> dict:
    """A pair's record: the source snapshot merged and the target snapshot the merge left."""
    return {
        "sourceSnapshotId": merged.id,
        "sourceSnapshotUuid": merged.uuid,
        "intoSnapshotId": left.id,
        "intoSnapshotUuid": left.uuid,
    }


def cherry_pick(store: FileStore, version: int | str, onto: str, on_conflict: OnConflict = "fail") -> BranchMergeResult:
    """The changes of the one commit ``version`` (a snapshot id or tag of ``store``'s branch, or
    ``<branch>.<id or tag>``) applied by key onto branch ``onto``: a three-way merge whose base is the commit's
    parent snapshot (id - 1) and whose source is the commit."""
    from pyspark_paimon.datasource.versions.diff import resolve_ref  # noqa: PLC0415

    _check_on_conflict(on_conflict)
    vstore, picked = resolve_ref(store, version)
    if picked.id <= 1:
        raise BranchError(
            f"Snapshot {picked.id} of branch '{vstore.branch}' of {store.table_path} is the first commit; it has no "
            "parent to take its changes from. Merge the branch instead."
        )
    parent = _snapshot(vstore, picked.id - 1)
    if not BranchManager(store).exists(onto):
        raise BranchError(f"Table {store.table_path} has no branch '{onto}' to cherry-pick onto.")
    label = f"Cherry-picking {_ref(vstore, picked)} onto '{onto}' of {store.table_path}"
    return three_way((vstore, parent), vstore, picked, store.with_branch(onto), on_conflict, label)


def publish_branch(store: FileStore, branch: str, into: str, on_conflict: OnConflict = "fail") -> BranchMergeResult:
    """Safe publish: :func:`merge_branch` of ``branch`` into ``into``. When ``into`` has not changed since the
    fork, the result's content equals the branch head (``target_unchanged``); otherwise it is the three-way
    merge, so commits a live writer made on ``into`` meanwhile are kept. One ordinary commit on ``into``:
    readers never see a partial publish and a writer racing it simply commits before or after it."""
    return merge_branch(store, branch, into, on_conflict)
