"""Incremental (batch) reads: the rows committed between two snapshots, tags or instants.

Options (Paimon's names):

* ``incremental-between = 'start,end'``: two snapshot ids or two tag names (a name that is an existing tag
  of the branch is a tag, otherwise it must be a snapshot id; the two sides may mix). ``start`` is
  exclusive, ``end`` inclusive.
* ``incremental-between-timestamp = 'startMillis,endMillis'`` (epoch ms, or ``'yyyy-MM-dd HH:mm:ss'`` in the
  local time zone): ``start`` is the latest snapshot committed at or before ``startMillis`` (or "before the
  earliest snapshot" when there is none), ``end`` the latest one at or before ``endMillis``.

Two kinds of read, as in Java (``AbstractDataTableScan``):

* **diff** (Java's ``IncrementalDiffStartingScanner``; ``plan_diff``): between two *tags* unless
  ``incremental-between-tag-to-snapshot = true`` (read or table option), and for any range with
  ``incremental-between-scan-mode = diff``. The live files of the two versions are compared per bucket and the
  files both hold are set aside. A primary-key bucket returns the end version's row of each key that is new or
  whose merged row differs from the start version's (each side merged from the files it alone holds, as Java
  does); deleted keys are not rows. An append table returns the rows of the files only the end version holds.
  Only the two versions must exist (a tag keeps its snapshot), not the snapshots in between.
* **delta**, the default otherwise (what Paimon's default ``auto`` mode does for tables without a changelog
  producer; batch reads never read changelog files, streams do). For a table with a changelog producer,
  ``auto`` would read its changelog files, so such a read is refused unless it asks for ``delta`` or ``diff``
  (read option or table option ``incremental-between-scan-mode``):

  * the data files **ADDed** by the delta manifest lists of the ``APPEND`` snapshots in ``(start, end]``;
    ``COMPACT`` snapshots are skipped (their ADDs rewrite rows that already existed), and so are ``OVERWRITE``
    snapshots (Java skips them too: an overwrite's new rows are not reported, and its removals cannot be
    expressed as rows). DELETE entries are never rows. ``ANALYZE`` snapshots carry no data.
  * For **append tables** the result is every row of those files.
  * For **primary-key tables** the files of each (partition, bucket) are merged with each other only, with the
    table's merge engine: the result is the latest version *among the changed files* of each key touched in
    the range, and keys whose latest change is a delete (``-D``) are dropped, like any batch read. Rows of keys
    not touched in the range never appear. For ``aggregation``/``partial-update`` tables this is the merge of
    the changes alone, not of the full row (what Paimon's delta mode returns as well).
  * Every snapshot of the range must still exist (a clear error names the expired one).

Differences from Java, on purpose: one tag and one snapshot id are accepted together (a delta read; Java wants
two tags or two ids). With ``incremental-between-timestamp``, an end instant before the first snapshot reads
nothing (Java would read up to the latest snapshot). The schema read is the branch's latest schema; older files
are evolved to it by field id, as in a normal read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, ManifestEntry
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot
from pyspark_paimon.metadata.schema.options import (
    CHANGELOG_PRODUCER,
    INCREMENTAL_BETWEEN_SCAN_MODE,
    INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf, leaves_on
from pyspark_paimon.planner.read_options import ReadOptions, parse_timestamp_millis
from pyspark_paimon.planner.scan import ScanPlan, ScanPlanner

__all__ = ["IncrementalRange", "is_incremental", "resolve_range", "delta_entries", "plan_diff", "plan_incremental"]

INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_TIMESTAMP = "incremental-between-timestamp"
#: Commit kinds whose delta ADDs are new or changed rows (see the module docstring).
DELTA_COMMIT_KINDS = frozenset({"APPEND"})


@dataclass(frozen=True)
class IncrementalRange:
    """Snapshots ``(start_id, end_id]`` of one branch; empty when ``start_id == end_id``."""

    start_id: int
    end_id: int
    # What the user wrote, for messages.
    description: str
    # Both ends named tags (Java then diffs the two tags unless 'incremental-between-tag-to-snapshot').
    between_tags: bool = False
    # The start lies before the branch's history (snapshot 0, or a start instant before the first snapshot).
    start_before_history: bool = False

    @property
    def is_empty(self) -> bool:
        return self.start_id >= self.end_id

    @property
    def snapshot_ids(self) -> range:
        return range(self.start_id + 1, self.end_id + 1)


def is_incremental(opts: ReadOptions) -> bool:
    return opts.incremental_between is not None or opts.incremental_between_timestamp is not None


def _split_pair(value: str, key: str) -> tuple[str, str]:
    parts = [p.strip() for p in str(value).split(",")]
    if len(parts) != 2 or not all(parts):
        raise OptionError(
            f"Option '{key}' = '{value}' must be two values separated by a comma: 'start,end' (start exclusive, "
            "end inclusive), e.g. '3,7' or 'tag_a,tag_b'."
        )
    return parts[0], parts[1]


def _resolve_end_point(store: FileStore, tags: TagManager, text: str, key: str) -> int:
    """A tag of the branch (tags win, as in ``scan.version``) or a snapshot id."""
    if tags.exists(text):
        return tags.get(text).id
    if text.isdigit():
        return int(text)
    raise OptionError(
        f"Option '{key}': '{text}' is neither a tag of branch '{store.branch}' of {store.table_path} nor a "
        f"snapshot id. Existing tags: {tags.list_names() or 'none'}."
    )


def resolve_range(store: FileStore, opts: ReadOptions) -> IncrementalRange:
    """The snapshot range an incremental read covers, validated against the branch's snapshots."""
    tags = TagManager(store)
    if opts.incremental_between is not None:
        key, raw = INCREMENTAL_BETWEEN, opts.incremental_between
        left, right = _split_pair(raw, key)
        start = _resolve_end_point(store, tags, left, key)
        end = _resolve_end_point(store, tags, right, key)
        between_tags = tags.exists(left) and tags.exists(right)
    elif opts.incremental_between_timestamp is not None:
        key, raw = INCREMENTAL_BETWEEN_TIMESTAMP, opts.incremental_between_timestamp
        left, right = _split_pair(raw, key)
        start_ms, end_ms = parse_timestamp_millis(left, key), parse_timestamp_millis(right, key)
        if start_ms > end_ms:
            raise OptionError(f"Option '{key}' = '{raw}': the start instant is after the end instant.")
        earliest = store.snapshots.earliest_id()
        if earliest is None:
            return IncrementalRange(0, 0, f"{key} = '{raw}'")
        before_start = store.snapshots.earlier_or_equal_time_millis(start_ms)
        at_end = store.snapshots.earlier_or_equal_time_millis(end_ms)
        start = before_start.id if before_start is not None else earliest - 1
        end = at_end.id if at_end is not None else start  # nothing was committed by the end instant
        return IncrementalRange(start, max(start, end), f"{key} = '{raw}'", start_before_history=before_start is None)
    else:
        raise OptionError("Not an incremental read: set 'incremental-between' or 'incremental-between-timestamp'.")
    if start > end:
        raise OptionError(
            f"Option '{key}' = '{raw}': the start (snapshot {start}) is after the end (snapshot {end}); give "
            "'start,end' with start <= end."
        )
    latest = store.snapshots.latest_id()
    if end > 0 and (latest is None or end > latest):
        raise SnapshotNotFoundError(
            f"Option '{key}' = '{raw}': snapshot {end} does not exist on branch '{store.branch}' of "
            f"{store.table_path} (latest: {latest if latest is not None else 'none'})."
        )
    return IncrementalRange(start, end, f"{key} = '{raw}'", between_tags=between_tags, start_before_history=start == 0)


def _range_snapshots(store: FileStore, rng: IncrementalRange) -> list[Snapshot]:
    """Every snapshot of the range, from its file or, once expired, from a tag that preserved it."""
    tags = TagManager(store)
    out = []
    for sid in rng.snapshot_ids:
        try:
            out.append(find_snapshot(store.snapshots, tags, sid))
        except SnapshotNotFoundError:
            raise SnapshotNotFoundError(
                f"{rng.description}: snapshot {sid} of branch '{store.branch}' of {store.table_path} has expired, "
                "so the changes it made are gone. Pick a range of existing snapshots (see the $snapshots system "
                "table), or read a tag with 'scan.tag-name'."
            ) from None
    return out


def delta_entries(store: FileStore, rng: IncrementalRange) -> list[ManifestEntry]:
    """The ADD entries of the delta manifests of the range's APPEND snapshots, oldest snapshot first."""
    entries: list[ManifestEntry] = []
    for snapshot in _range_snapshots(store, rng):
        if snapshot.commit_kind not in DELTA_COMMIT_KINDS:
            continue
        metas = store.manifests.read_list(snapshot.delta_manifest_list)
        entries.extend(e for e in store.manifests.read_entries(metas) if e.kind == KIND_ADD)
    return entries


def plan_incremental(
    store: FileStore,
    schema: TableSchema,
    opts: ReadOptions,
    predicate: Sequence[Leaf] = (),
    partition_filter: Callable[[dict[str, Any]], bool] | None = None,
) -> ScanPlan:
    """Splits reading the range's changed files, or the two versions' differing files in a diff (see the module
    docstring), pruned like a normal scan."""
    options = schema.core_options
    mode = opts.incremental_scan_mode or options.get(INCREMENTAL_BETWEEN_SCAN_MODE)
    tag_to_snapshot = opts.incremental_tag_to_snapshot
    if tag_to_snapshot is None:
        tag_to_snapshot = options.get(INCREMENTAL_BETWEEN_TAG_TO_SNAPSHOT)
    rng = resolve_range(store, opts)
    if mode == "diff" or (rng.between_tags and not tag_to_snapshot):
        return plan_diff(store, schema, rng, predicate, partition_filter)
    producer = options.get(CHANGELOG_PRODUCER)
    if mode == "auto" and producer != "none":
        raise OptionError(
            f"Table {store.table_path} has '{CHANGELOG_PRODUCER.key}' = '{producer}', so Paimon's incremental read "
            f"('{INCREMENTAL_BETWEEN_SCAN_MODE.key}' = 'auto') returns its changelog files, which a batch read of "
            f"pyspark-paimon does not read. Pass the read option '{INCREMENTAL_BETWEEN_SCAN_MODE.key}' = 'delta' to "
            "read the changed data files instead (or 'diff': the rows that differ), or stream the changelog (a "
            "streaming read with 'scan.mode' = 'from-snapshot' and 'read.changelog' = 'true' follows the changelog "
            "files, row kinds included)."
        )
    end = None if rng.is_empty or rng.end_id <= 0 else find_snapshot(store.snapshots, TagManager(store), rng.end_id)
    entries = [] if rng.is_empty else delta_entries(store, rng)
    plan = ScanPlanner(store, schema, {}, pk_value_skipping=False).plan_entries(
        entries, predicate, partition_filter, snapshot=end
    )
    if schema.primary_keys:
        # Files of different commits may overlap in key even on one level above 0, so never read a bucket's
        # changed files one after another without merging them.
        plan.splits = [replace(s, raw_convertible=False) if len(s.files) > 1 else s for s in plan.splits]
    plan.notes.append(
        f"incremental read of snapshots ({rng.start_id}, {rng.end_id}] ({rng.description}): "
        f"{len(entries)} changed files"
    )
    return plan


def _version(store: FileStore, rng: IncrementalRange, snapshot_id: int, start: bool) -> Snapshot | None:
    """A diff's start or end version: the snapshot (or the copy a tag kept of it), None before the history."""
    if snapshot_id <= 0 or (start and rng.start_before_history):
        return None
    try:
        return find_snapshot(store.snapshots, TagManager(store), snapshot_id)
    except SnapshotNotFoundError:
        raise SnapshotNotFoundError(
            f"{rng.description}: snapshot {snapshot_id} of branch '{store.branch}' of {store.table_path} has "
            "expired and no tag kept it, so that version cannot be compared. Diff two tags, or existing snapshots "
            "(see the $snapshots system table)."
        ) from None


def plan_diff(
    store: FileStore,
    schema: TableSchema,
    rng: IncrementalRange,
    predicate: Sequence[Leaf] = (),
    partition_filter: Callable[[dict[str, Any]], bool] | None = None,
) -> ScanPlan:
    """Java's incremental diff (``IncrementalDiffStartingScanner``, ``SnapshotReaderImpl.readIncrementalDiff``):
    the live files of both versions, grouped by bucket, minus the files both hold unchanged. A primary-key bucket
    whose end side kept files becomes one split whose ``files`` are those and whose ``diff_before`` holds the
    start side's; the read returns the end side's row of each key whose merged row differs (deleted keys are not
    rows). Append tables return the rows of the files only the end version holds. Only partitions prune:
    statistics of one side cannot tell what the other side's files hold."""
    start = None if rng.is_empty else _version(store, rng, rng.start_id, start=True)
    end = None if rng.is_empty else _version(store, rng, rng.end_id, start=False)
    if end is None:
        return ScanPlan(None, schema, [])
    before = store.live_entries(start) if start is not None else []
    after = store.live_entries(end)

    def identity(e: ManifestEntry) -> tuple[str, int]:
        return e.file.file_name, e.file.level  # Java compares whole entries: a file moved up a level differs

    shared = {identity(e) for e in before} & {identity(e) for e in after}
    partitions = leaves_on(predicate, [f.name for f in schema.partition_fields])
    planner = ScanPlanner(store, schema, {}, pk_value_skipping=False)

    def side(entries: list[ManifestEntry], snapshot: Snapshot | None) -> ScanPlan:
        changed = [e for e in entries if identity(e) not in shared]
        plan = planner.plan_entries(changed, partitions, partition_filter, snapshot=snapshot)
        if snapshot is not None:
            plan.splits = planner.with_deletion_files(plan.splits, snapshot.index_manifest)
        return plan

    plan = side(after, end)
    if schema.primary_keys:
        starts = {(s.partition, s.bucket): s for s in side(before, start).splits}
        plan.splits = [
            replace(s, raw_convertible=False, diff_before=starts.get((s.partition, s.bucket))) for s in plan.splits
        ]
    plan.notes.append(
        f"incremental diff of snapshots {rng.start_id} and {rng.end_id} ({rng.description}): "
        f"{sum(len(s.files) for s in plan.splits)} changed files"
    )
    return plan
