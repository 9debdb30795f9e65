"""Reads with engine-level predicates (``Leaf`` lists), for tests of pruning and planning.

``Table.scan`` takes SQL text; tests that check how a given ``Leaf`` predicate prunes (or build predicates
the SQL grammar cannot express) plan through the engine directly, exactly as ``Table.new_read`` did before
0.2.0."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pyspark_paimon.datasource.jobs import ReadJob, prepare_read
from pyspark_paimon.planner.explain import ScanExplain
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.table_scan import explain_job


def read_job(
    table: Any,
    options: Mapping[str, Any] | None = None,
    predicate: Sequence[Leaf] = (),
    columns: Sequence[str] | None = None,
) -> ReadJob:
    opts = ReadOptions.from_options({k: str(v) for k, v in (options or {}).items()})
    store = table.store if not opts.branch else table.store.with_branch(opts.branch)
    return prepare_read(store, opts, predicate, columns, exact_filters=predicate)


def read_arrow(
    table: Any,
    options: Mapping[str, Any] | None = None,
    predicate: Sequence[Leaf] = (),
    columns: Sequence[str] | None = None,
) -> Any:
    return read_job(table, options, predicate, columns).to_arrow()


def explain(table: Any, options: Mapping[str, Any] | None = None, predicate: Sequence[Leaf] = ()) -> ScanExplain:
    return explain_job(read_job(table, options, predicate))
