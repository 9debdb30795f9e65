"""Incremental (batch) reads: the rows committed between two snapshots, tags or instants.

Options (Paimon's names):

* ``incremental-between = 'start,end'``: two snapshot ids or two tag names (a name that is an existing tag
  of the branch is a tag, otherwise it must be a snapshot id; the two sides may mix). ``start`` is
  exclusive, ``end`` inclusive.
* ``incremental-between-timestamp = 'startMillis,endMillis'`` (epoch ms, or ``'yyyy-MM-dd HH:mm:ss'`` in the
  local time zone): ``start`` is the latest snapshot committed at or before ``startMillis`` (or "before the
  earliest snapshot" when there is none), ``end`` the latest one at or before ``endMillis``.

What is read is Paimon's ``delta`` scan mode (what its default ``auto`` mode does for tables without a
changelog producer, and the only mode here: batch reads never read changelog files, streams do). For a table
with a changelog producer, ``auto`` would read its changelog files, so such a read is refused unless it asks for
``delta`` (read option or table option ``incremental-between-scan-mode``):

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

Differences from Java, on purpose: for two *tags* Java's default (``incremental-between-tag-to-snapshot =
false``) diffs the two tags' file sets; we read the snapshots between them as above (Java's ``true``
setting), which gives the same rows when no compaction ran in between, and needs those snapshots to still
exist (a clear error names the expired one). With ``incremental-between-timestamp``, an end instant before
the first snapshot reads nothing (Java would read up to the latest snapshot). The schema read is the
branch's latest schema; older files are evolved to it by field id, as in a normal read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD, ManifestEntry
from pyspark_paimon.metadata.refs.tags import TagManager, find_snapshot
from pyspark_paimon.metadata.schema.options import CHANGELOG_PRODUCER, INCREMENTAL_BETWEEN_SCAN_MODE
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions, parse_timestamp_millis
from pyspark_paimon.planner.scan import ScanPlan, ScanPlanner

__all__ = ["IncrementalRange", "is_incremental", "resolve_range", "delta_entries", "plan_incremental"]

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
        return IncrementalRange(start, max(start, end), f"{key} = '{raw}'")
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
    return IncrementalRange(start, end, f"{key} = '{raw}'")


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
    """Splits reading the range's changed files (see the module docstring), pruned like a normal scan."""
    options = schema.core_options
    mode = opts.incremental_scan_mode or options.get(INCREMENTAL_BETWEEN_SCAN_MODE)
    producer = options.get(CHANGELOG_PRODUCER)
    if mode == "auto" and producer != "none":
        raise OptionError(
            f"Table {store.table_path} has '{CHANGELOG_PRODUCER.key}' = '{producer}', so Paimon's incremental read "
            f"('{INCREMENTAL_BETWEEN_SCAN_MODE.key}' = 'auto') returns its changelog files, which a batch read of "
            f"pyspark-paimon does not read. Pass the read option '{INCREMENTAL_BETWEEN_SCAN_MODE.key}' = 'delta' to "
            "read the changed data files instead, or stream the changelog (a streaming read with 'scan.mode' = "
            "'from-snapshot' and 'read.changelog' = 'true' follows the changelog files, row kinds included)."
        )
    rng = resolve_range(store, opts)
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
