"""How a read is planned: the one place that decides between a plain, fallback, incremental and chain read.

Spark's ``schema()``, Spark's ``partitions()`` and ``Table.scan().to_arrow``/``explain``/``new_read`` need the same
answers (which schema, which snapshot, which files), and two copies of the decision drift. So a table read
goes through :func:`read_schema` (the schema, no file planned) and :func:`plan_read` (the files), which share
one decision (:func:`_decide`):

* **chain**: ``store``'s branch is the main side of a complete chain table (Java's `ChainTableBatchScan`): every branch
  is resolved and merged (:mod:`pyspark_paimon.planner.chain.plan`);
* **incremental**: ``incremental-between[-timestamp]`` reads the files changed in a snapshot range, with the
  latest schema (:mod:`pyspark_paimon.planner.incremental`);
* **fallback**: ``scan.fallback-branch`` fills partitions the branch lacks (:mod:`pyspark_paimon.planner.fallback`);
* **plain**: one snapshot of one branch (latest, or the one time travel names).

Chain *maintenance* (``compact_chain``, ``explain_chain``) plans chain partitions with its own flags through
:func:`pyspark_paimon.planner.chain.plan.plan_chain`, and system tables resolve their snapshot directly: neither is
a table read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.options import validate_table_options
from pyspark_paimon.metadata.schema.row_tracking import READ_COLUMNS_KEY, with_tracking_columns
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.chain.config import ChainConfig, chain_read_config
from pyspark_paimon.planner.chain.plan import ChainReadPlan, plan_chain
from pyspark_paimon.planner.chain.versions import chain_read_schema
from pyspark_paimon.planner.fallback import add_fallback_splits, fallback_branch
from pyspark_paimon.planner.incremental import is_incremental, plan_incremental
from pyspark_paimon.planner.predicate import Expr, Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.row_ranges import refuse_data_evolution
from pyspark_paimon.planner.scan import ScanPlan, ScanPlanner
from pyspark_paimon.planner.selection import selection_of
from pyspark_paimon.planner.time_travel import resolve_snapshot, version_branch

ReadKind = Literal["plain", "fallback", "incremental", "chain"]

__all__ = [
    "PlannedRead",
    "ReadKind",
    "read_kind",
    "read_schema",
    "plan_read",
    "branch_schemas",
]


@dataclass
class PlannedRead:
    """What a read returns and which files it reads: the driver's answer, turned into an executor context by
    :meth:`pyspark_paimon.datasource.read.read_context.ReadContext.for_plan`."""

    kind: ReadKind
    plan: ScanPlan
    schema: TableSchema  # the read schema: latest, time-travelled, or the chain's
    schemas: dict[str, dict[int, TableSchema]]  # branch -> schema id -> schema, for every file's own schema
    # What pruned the plan (partitions exactly, files and row groups by statistics). It does not filter rows:
    # a pruned file may still hold rows that fail it; ReadContext.residual filters exactly.
    predicate: tuple[Leaf, ...] = ()
    # The load-time selection (``scan.partitions`` / ``filter``): applied exactly to the rows by the residual.
    selection: Expr | None = None

    @classmethod
    def of_chain(
        cls, cp: ChainReadPlan, predicate: Sequence[Leaf] = (), selection: Expr | None = None
    ) -> "PlannedRead":
        return cls("chain", cp.plan, cp.schema, cp.schemas, tuple(predicate), selection)


def branch_schemas(store: FileStore) -> dict[int, TableSchema]:
    return {sid: store.schemas.schema(sid) for sid in store.schemas.list_ids()}


@dataclass(frozen=True)
class _Decision:
    kind: ReadKind
    latest: TableSchema  # the branch's latest schema, listed once per decision
    chain: ChainConfig | None = None
    fallback: str | None = None


def _decide(store: FileStore, opts: ReadOptions) -> _Decision:
    latest = store.schema()  # a clear error when the table or branch does not exist
    chain = chain_read_config(store, latest)
    if chain is not None:
        return _Decision("chain", latest, chain=chain)
    if is_incremental(opts):
        return _Decision("incremental", latest)
    fallback = fallback_branch(opts, latest.options, store.branch)
    if fallback is not None:
        return _Decision("fallback", latest, fallback=fallback)
    return _Decision("plain", latest)


def _tracked(schema: TableSchema, opts: ReadOptions, kind: ReadKind, table: str) -> TableSchema:
    """The read schema with ``_ROW_ID`` / ``_SEQUENCE_NUMBER`` appended when the read asks for them."""
    if not opts.row_tracking:
        return schema
    if kind not in ("plain", "fallback"):
        raise OptionError(
            f"Option '{READ_COLUMNS_KEY}' applies to reads of one version of a table; a {kind} read of {table} "
            "cannot return row ids. Drop the option, or read one version."
        )
    return with_tracking_columns(schema, table)


def read_kind(store: FileStore, opts: ReadOptions) -> ReadKind:
    return _decide(store, opts).kind


def read_schema(store: FileStore, opts: ReadOptions) -> TableSchema:
    """The schema a read of ``store`` with ``opts`` returns, without planning any file."""
    store, opts = version_branch(store, opts)
    decision = _decide(store, opts)
    schema = decision.latest
    if decision.chain is not None:
        schema = chain_read_schema(store, decision.chain, opts)
    elif opts.time_travel and decision.kind != "incremental":
        snap = resolve_snapshot(store, opts)
        if snap is not None:
            schema = store.schemas.schema(snap.schema_id)
    schema = _tracked(schema, opts, decision.kind, store.table_path)
    selection_of(opts, schema)  # a bad 'filter' / 'scan.partitions' fails at load(), not at the first action
    return schema


def plan_read(store: FileStore, opts: ReadOptions, predicate: Sequence[Leaf] = ()) -> PlannedRead:
    """Plan a read of ``store`` (already on the right branch). ``predicate`` prunes partitions exactly and
    files by statistics; it is not applied to rows here (see ``ReadContext.residual``). The read options'
    load-time selection (``scan.partitions``, ``filter``) prunes the same way and is kept in
    ``PlannedRead.selection``, which the read applies exactly to the rows."""
    store, opts = version_branch(store, opts)
    decision = _decide(store, opts)
    kind, latest = decision.kind, decision.latest
    if decision.chain is not None:
        if latest.core_options.deletion_vectors_enabled:
            raise OptionError(
                f"Chain table {store.table_path} has 'deletion-vectors.enabled' = 'true'; chain reads of "
                "deletion-vector tables are not supported yet. Read its branches one by one, or with Paimon."
            )
        selection = selection_of(opts, chain_read_schema(store, decision.chain, opts))
        pred = (*predicate, *selection.leaves)
        chain = plan_chain(store, decision.chain, opts, pred, partition_filter=selection.partition_filter())
        planned = PlannedRead.of_chain(chain, pred, selection.expr)
        _tracked(planned.schema, opts, kind, store.table_path)  # refused: a chain merges several branches
        validate_table_options(planned.schema.options, creating=False, table=store.table_path)
        return planned
    validate_table_options(latest.options, creating=False, table=store.table_path)
    schemas = {store.branch: branch_schemas(store)}
    if kind == "incremental":  # the files changed in a snapshot range, read with the latest schema
        refuse_data_evolution(latest, store.table_path, "an incremental read")
        _tracked(latest, opts, kind, store.table_path)
        selection = selection_of(opts, latest)
        pred = (*predicate, *selection.leaves)
        plan = plan_incremental(store, latest, opts, pred, partition_filter=selection.partition_filter())
        return PlannedRead(kind, plan, latest, schemas, pred, selection.expr)
    snapshot = resolve_snapshot(store, opts)
    schema = store.schemas.schema(snapshot.schema_id) if (opts.time_travel and snapshot is not None) else latest
    read = _tracked(schema, opts, kind, store.table_path)
    selection = selection_of(opts, read)
    pred = (*predicate, *selection.leaves)
    plan = ScanPlanner(store, schema, opts.planner_options).plan(
        snapshot, pred, partition_filter=selection.partition_filter()
    )
    if decision.fallback is not None:  # partitions missing here are read from the fallback branch
        extended = add_fallback_splits(
            store, decision.fallback, schema, snapshot, plan, pred, opts, partition_filter=selection.partition_filter()
        )
        plan = extended.plan
        schemas.update(extended.schemas)
    return PlannedRead(kind, plan, read, schemas, pred, selection.expr)
