"""How a read is planned: the one place that decides between a plain, fallback, incremental and chain read.

Spark's ``schema()``, Spark's ``partitions()``, ``Table.to_arrow``/``explain`` and system-table time travel all
need the same answers (which schema, which snapshot, which files), and two copies of the decision drift. So
:func:`read_schema` and :func:`plan_read` are the only entry points, and they share :func:`read_kind`:

* **chain**: ``store``'s branch is the main side of a complete chain table (§10): every branch is resolved
  and merged (:mod:`pyspark_paimon.planner.chain`);
* **incremental**: ``incremental-between[-timestamp]`` reads the files changed in a snapshot range, with the
  latest schema (:mod:`pyspark_paimon.planner.incremental`);
* **fallback**: ``scan.fallback-branch`` fills partitions the branch lacks (:mod:`pyspark_paimon.planner.fallback`);
* **plain**: one snapshot of one branch (latest, or the one time travel names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from pyspark_paimon.metadata.options import validate_table_options
from pyspark_paimon.metadata.schema import TableSchema
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain import ChainReadPlan, plan_chain
from pyspark_paimon.planner.chain_config import chain_read_config
from pyspark_paimon.planner.chain_versions import chain_read_schema
from pyspark_paimon.planner.fallback import add_fallback_splits, fallback_branch
from pyspark_paimon.planner.incremental import is_incremental, plan_incremental
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.scan import ScanPlan, ScanPlanner
from pyspark_paimon.planner.time_travel import resolve_snapshot

ReadKind = Literal["plain", "fallback", "incremental", "chain"]

__all__ = ["PlannedRead", "ReadKind", "read_kind", "read_schema", "plan_read", "branch_schemas"]


@dataclass
class PlannedRead:
    """What a read returns and which files it reads: the driver's answer, turned into an executor context by
    :meth:`pyspark_paimon.datasource.engine.read.ReadContext.for_plan`."""

    kind: ReadKind
    plan: ScanPlan
    schema: TableSchema  # the read schema: latest, time-travelled, or the chain's
    schemas: dict[str, dict[int, TableSchema]]  # branch -> schema id -> schema, for every file's own schema
    predicate: tuple[Leaf, ...] = ()  # what pruned the plan; every row read satisfies it

    @classmethod
    def of_chain(cls, cp: ChainReadPlan, predicate: Sequence[Leaf] = ()) -> "PlannedRead":
        return cls("chain", cp.plan, cp.schema, cp.schemas, tuple(predicate))


def branch_schemas(store: FileStore) -> dict[int, TableSchema]:
    return {sid: store.schemas.schema(sid) for sid in store.schemas.list_ids()}


def read_kind(store: FileStore, opts: ReadOptions) -> ReadKind:
    if chain_read_config(store) is not None:
        return "chain"
    if is_incremental(opts):
        return "incremental"
    if fallback_branch(opts, store.schema().options, store.branch) is not None:
        return "fallback"
    return "plain"


def read_schema(store: FileStore, opts: ReadOptions) -> TableSchema:
    """The schema a read of ``store`` with ``opts`` returns, without planning any file."""
    if read_kind(store, opts) == "chain":
        chain = chain_read_schema(store, opts)
        assert chain is not None
        return chain
    latest = store.schema()
    if opts.time_travel and not is_incremental(opts):
        snap = resolve_snapshot(store, opts)
        if snap is not None:
            return store.schemas.schema(snap.schema_id)
    return latest


def plan_read(store: FileStore, opts: ReadOptions, predicate: Sequence[Leaf] = ()) -> PlannedRead:
    """Plan a read of ``store`` (already on the right branch). ``predicate`` prunes partitions exactly and
    files by statistics; it is not applied to rows here (see ``ReadContext.residual``)."""
    kind = read_kind(store, opts)
    if kind == "chain":
        cfg = chain_read_config(store)
        assert cfg is not None
        planned = PlannedRead.of_chain(plan_chain(store, cfg, opts, predicate), predicate)
        validate_table_options(planned.schema.options, creating=False, table=store.table_path)
        return planned
    latest = store.schema()
    validate_table_options(latest.options, creating=False, table=store.table_path)
    schemas = {store.branch: branch_schemas(store)}
    if kind == "incremental":  # the files changed in a snapshot range, read with the latest schema
        return PlannedRead(kind, plan_incremental(store, latest, opts, predicate), latest, schemas, tuple(predicate))
    snapshot = resolve_snapshot(store, opts)
    schema = store.schemas.schema(snapshot.schema_id) if (opts.time_travel and snapshot is not None) else latest
    plan = ScanPlanner(store, schema, {}).plan(snapshot, predicate)
    if kind == "fallback":  # partitions missing here are read from the fallback branch
        fallback = fallback_branch(opts, latest.options, store.branch)
        assert fallback is not None
        extended = add_fallback_splits(store, fallback, schema, snapshot, plan, predicate, opts)
        plan = extended.plan
        schemas.update(extended.schemas)
    return PlannedRead(kind, plan, schema, schemas, tuple(predicate))
