"""``t.chain``: what only chain tables have; logic in ``planner/chain`` and
``datasource/chain.py``. On a table that is not a chain table every method raises ChainTableError naming the
table and how to make one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from pyspark_paimon.api_types import Duration, Instant
from pyspark_paimon.datasource import chain as _chain
from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.effects import records_effects
from pyspark_paimon.metadata.refs.tags import Tag
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.selection import selection_of
from pyspark_paimon.table_refs import Tags
from pyspark_paimon.table_scan import TableView, version_options

PartitionSpecs = Iterable[Mapping[str, Any] | str] | Mapping[str, Any] | str | None


@dataclass(frozen=True)
class ChainTagResult:
    """What :meth:`Chain.create_tag` made: one tag of the same name on each branch of the chain table that had a
    snapshot. No snapshot is committed."""

    name: str
    """The tag's name."""
    tags: dict[str, Tag] = field(default_factory=dict)
    """The tag made on each branch, by branch (each names the snapshot it points at)."""
    skipped: list[str] = field(default_factory=list)
    """Branches without a snapshot, not tagged: a read of the tag sees them empty."""


class Chain:
    """The chain-table operations of a table (``t.chain``)."""

    def __init__(self, table: TableView):
        self._table = table

    def __repr__(self) -> str:
        return f"Chain({self._table.identifier!r})"

    def _config(self) -> _chain.ChainConfig:
        try:
            return _chain.require_chain_config(self._table.store)
        except ChainTableError as exc:
            raise ChainTableError(f"Table {self._table.identifier}: {exc}") from None

    def explain(
        self,
        partitions: PartitionSpecs = None,
        *,
        filter: str | None = None,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        read_options: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """How a full read resolves each partition: ``source`` ('main', 'snapshot' or 'chain'), ``anchor``
        (the snapshot partition merged from), ``deltas`` (merged in, in merge order), ``buckets``, ``files``
        per branch and ``splits``. ``partitions`` (dicts or 'k=v' specs, partial allowed) and ``filter``
        restrict the report; the version keywords time-travel as in :meth:`Table.scan`."""
        self._config()
        opts = ReadOptions.from_options(
            version_options(read_options, filter=filter, snapshot_id=snapshot_id, tag=tag, timestamp=timestamp)
        )
        store = self._table.store if not opts.branch else self._table.store.with_branch(opts.branch)
        predicate = selection_of(opts, store.schema()).leaves
        parts = [partitions] if isinstance(partitions, (str, Mapping)) else partitions
        return _chain.explain_chain(store, opts, predicate, parts)

    @records_effects("chain compaction", idempotent=True)
    def compact(
        self,
        partitions: PartitionSpecs = None,
        *,
        start: Mapping[str, Any] | str | None = None,
        end: Mapping[str, Any] | str | None = None,
        overwrite: bool = False,
    ) -> _chain.ChainCompactResult:
        """Write the chain-merged view of ``partitions`` (or of every delta partition from ``start`` to
        ``end`` inclusive) into the snapshot branch in one commit, so later reads of them hit the snapshot
        branch. A partition already in the snapshot branch is skipped unless ``overwrite``. Truthy when
        something was written."""
        self._config()
        parts = (
            None
            if partitions is None
            else ([partitions] if isinstance(partitions, (str, Mapping)) else list(partitions))
        )
        return _chain.compact_chain(
            self._table.store, partitions=parts or None, start=start, end=end, overwrite=overwrite
        )

    def hybrid(
        self,
        filter: str | None = None,
        columns: Sequence[str] | None = None,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp: Instant | None = None,
        read_options: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """Paimon's *hybrid* read: the full (chain) read UNION ALL the delta branch's rows, with the same
        filter. In Spark: ``full.unionByName(spark.read.format('paimon').option('branch', delta).load(p))``."""
        cfg = self._config()
        kwargs: dict[str, Any] = dict(snapshot_id=snapshot_id, tag=tag, timestamp=timestamp, read_options=read_options)
        full = self._table.scan(filter, columns, **kwargs).to_arrow()
        delta = self._table.on_branch(cfg.delta_branch or "").scan(filter, columns, **kwargs).to_arrow()
        return pa.concat_tables([full, delta.cast(full.schema)])

    @records_effects("create chain tag")
    def create_tag(
        self, name: str, *, time_retained: Duration | None = None, ignore_if_exists: bool = False
    ) -> ChainTagResult:
        """A *chain tag*: tag ``name`` on the latest snapshot of the delta, the snapshot and the main branch
        (each one that has a snapshot), so ``tag=name`` reads the chain table as it is now; a branch without
        snapshots reads as empty at that tag. Returns the tags by branch (``result.tags``). Not atomic across
        branches: do not write to the table while tagging."""
        cfg = self._config()
        out: dict[str, Tag] = {}
        skipped: list[str] = []
        for branch in (cfg.delta_branch, cfg.snapshot_branch, self._table.branch):
            table = self._table.on_branch(branch or "")
            if table.latest_snapshot() is None:
                skipped.append(table.branch)  # empty now: reads of the tag see it empty (no data when tagged)
                continue
            out[table.branch] = Tags(table).create(name, time_retained=time_retained, ignore_if_exists=ignore_if_exists)
        if not out:
            raise ChainTableError(
                f"Chain table {self._table.identifier} has no data on any branch yet; nothing to tag."
            )
        return ChainTagResult(name, out, skipped)


__all__ = ["Chain", "ChainTagResult"]
