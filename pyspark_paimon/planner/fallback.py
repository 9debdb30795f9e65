"""Fallback-branch reads (``scan.fallback-branch``, Java's `FallbackReadFileStoreTable`): partitions missing from the
read branch are read from the fallback branch.

This is Paimon's ``FallbackReadFileStoreTable`` for batch reads: a partition that exists in the branch being
read is read from it alone (even if the fallback branch also has it: no merging across branches); every
other partition the fallback branch has, and that the read's partition filter selects, is read from the
fallback branch. The typical use is a table whose ``main`` receives corrected/streamed partitions while a
``backfill`` branch holds the bulk history.

Details and decisions:

* The option comes from the read options or, failing that, from the read branch's table options. A
  fallback equal to the read branch is ignored (a branch copied from main inherits main's option and would
  otherwise fall back to itself, which Paimon also skips).
* "Exists in the read branch" is decided on partitions alone (a plan with only the partition filter), so
  file-level pruning by data filters can never make a partition look missing and pull in the fallback's
  copy of it.
* Both branches must have the same columns (name, field id, type ignoring nullability), partition keys and
  primary keys; Paimon validates the row type the same way. Files keep their own branch's schemas for
  reading (``DataSplit.file_branches``), so the caller must give the reader both branches' schemas.
* Time travel: the fallback branch has its own snapshot ids (ids overlap across branches, see Paimon #9323), so
  the fallback is read at the newest of its snapshots committed at or before the time of the snapshot read
  on the main side (or the requested timestamp); without time travel, at its latest snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Mapping, Sequence

from pyspark_paimon.errors import BranchNotFoundError, SchemaError
from pyspark_paimon.metadata.schema.options import SCAN_FALLBACK_BRANCH, CoreOptions
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot, require_branch_exists
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.predicate import Leaf, leaves_on
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.scan import ScanCounters, ScanPlan, ScanPlanner

FALLBACK_OPTION = SCAN_FALLBACK_BRANCH.key


@dataclass
class FallbackResult:
    plan: ScanPlan
    # branch -> schema id -> schema, for the reader context (only the fallback branch's).
    schemas: dict[str, dict[int, TableSchema]]


def fallback_branch(opts: ReadOptions, table_options: Mapping[str, str], branch: str) -> str | None:
    name = opts.fallback_branch or CoreOptions(table_options).get(SCAN_FALLBACK_BRANCH)
    if not name or not name.strip() or name == branch:
        return None
    return name


def _type_str(field_type: object) -> str:
    return str(field_type).replace(" NOT NULL", "")


def _check_compatible(schema: TableSchema, fb: TableSchema, fb_branch: str, branch: str) -> None:
    def why(msg: str) -> SchemaError:
        return SchemaError(
            f"Cannot read partitions from fallback branch '{fb_branch}' while reading branch '{branch}': {msg}. "
            f"Evolve both branches the same way, or drop the '{FALLBACK_OPTION}' option."
        )

    if list(schema.partition_keys) != list(fb.partition_keys):
        raise why(f"partition keys differ ({schema.partition_keys} vs {fb.partition_keys})")
    if list(schema.primary_keys) != list(fb.primary_keys):
        raise why(f"primary keys differ ({schema.primary_keys} vs {fb.primary_keys})")
    if schema.field_names != fb.field_names:
        raise why(f"columns differ ({schema.field_names} vs {fb.field_names})")
    for f in schema.fields:
        g = fb.field(f.name)
        if g.id != f.id or _type_str(g.type) != _type_str(f.type):
            raise why(f"column '{f.name}' is {f.type} (id {f.id}) vs {g.type} (id {g.id})")


def _fallback_snapshot(store: FileStore, opts: ReadOptions, main_snapshot: Snapshot | None) -> Snapshot | None:
    ts = opts.timestamp_millis
    if ts is None and opts.time_travel and main_snapshot is not None:
        ts = main_snapshot.time_millis
    if ts is None:
        return store.snapshots.latest()
    return store.snapshots.earlier_or_equal_time_millis(ts)


def _add_counters(a: ScanCounters, b: ScanCounters) -> ScanCounters:
    return ScanCounters(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in fields(ScanCounters)})


def add_fallback_splits(
    store: FileStore,
    fb_branch: str,
    schema: TableSchema,
    snapshot: Snapshot | None,
    plan: ScanPlan,
    predicate: Sequence[Leaf],
    opts: ReadOptions,
    partition_filter: Callable[[dict[str, Any]], bool] | None = None,
) -> FallbackResult:
    """``plan`` (of ``store``'s branch at ``snapshot``) plus splits of the fallback branch's partitions that
    the read branch does not have. ``partition_filter`` (the load-time selection) applies to both branches."""
    try:
        require_branch_exists(store.fileio, store.table_path, fb_branch)
    except BranchNotFoundError as e:
        raise BranchNotFoundError(f"{e} (named by option '{FALLBACK_OPTION}').") from None
    fb_store = store.with_branch(fb_branch)
    fb_snapshot = _fallback_snapshot(fb_store, opts, snapshot)
    fb_schemas = {sid: fb_store.schemas.schema(sid) for sid in fb_store.schemas.list_ids()}
    fb_schema = fb_store.schema()
    if opts.time_travel and fb_snapshot is not None:
        fb_schema = fb_schemas.get(fb_snapshot.schema_id) or fb_store.schemas.schema(fb_snapshot.schema_id)
    _check_compatible(schema, fb_schema, fb_branch, store.branch)
    if fb_snapshot is None:
        return FallbackResult(plan, {fb_branch: fb_schemas})

    part_names = [f.name for f in schema.partition_fields]
    part_only = leaves_on(predicate, part_names)
    if len(part_only) == len(predicate):
        present_plan = plan
    else:
        present_plan = ScanPlanner(store, schema, {}).plan(snapshot, part_only, partition_filter=partition_filter)
    present = {s.partition_values for s in present_plan.splits}

    def missing(named: dict) -> bool:
        return tuple(named[n] for n in part_names) not in present and (
            partition_filter is None or partition_filter(named)
        )

    fb_plan = ScanPlanner(fb_store, fb_schema, opts.planner_options).plan(
        fb_snapshot, predicate, partition_filter=missing
    )
    fb_splits = [replace(s, file_branches={f.file_name: fb_branch for f in s.files}) for s in fb_plan.splits]
    n_parts = len({s.partition_values for s in fb_splits})
    notes = list(plan.notes)
    if fb_splits:
        notes.append(f"{n_parts} partition(s) read from fallback branch '{fb_branch}' (snapshot {fb_snapshot.id})")
    merged = ScanPlan(
        plan.snapshot, plan.schema, list(plan.splits) + fb_splits, _add_counters(plan.counters, fb_plan.counters), notes
    )
    return FallbackResult(merged, {fb_branch: fb_schemas})


__all__ = ["FALLBACK_OPTION", "FallbackResult", "fallback_branch", "add_fallback_splits"]
