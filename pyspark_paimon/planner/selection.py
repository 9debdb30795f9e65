"""Load-time selection: the ``scan.partitions`` and ``filter`` read options as one predicate tree.

Filter pushdown stays off on Spark 4.x (a pushed-down plan is shared between queries of one DataFrame, see
``datasource/spark/source.py``), so a read given no selection at ``load()`` reads every partition. These two options
are part of the loaded relation instead, which makes them safe, and every read kind (plain, fallback,
incremental, chain) uses them the same way:

* partitions are selected **exactly** by evaluating the whole tree on each partition's values
  (:func:`pyspark_paimon.planner.predicate.may_hold_on_values`, other columns unknown);
* the leaves the tree implies (:func:`pyspark_paimon.planner.predicate.implied_leaves`) prune buckets
  (``=``/``IN`` on the bucket key), files and Parquet row groups by statistics, conservatively;
* the tree is applied exactly to the rows after merging (``ReadContext.residual``).

``scan.partitions`` follows Paimon's grammar (``ParameterUtils.getPartitions`` and Flink's
``StaticPartitionLoader``): partitions separated by ``;``, each a ``,``-separated list of ``key=value`` (split
at the first ``=``, both sides trimmed); a partition key left out means the default partition (NULL), the
value ``partition.default-name`` is NULL, other values are parsed as the column's type. Paimon's dynamic
forms ``max_pt()`` / ``max_two_pt()`` are refused with an error (not implemented here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pyspark_paimon.errors import OptionError, PaimonError
from pyspark_paimon.metadata.rows.partition import coerce_partition_value
from pyspark_paimon.metadata.schema.options import PARTITION_DEFAULT_NAME
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.planner.predicate import Expr, Leaf, Predicate, all_of, any_of, implied_leaves, may_hold_on_values
from pyspark_paimon.planner.read_options import SCAN_PARTITIONS_KEY, ReadOptions


@dataclass(frozen=True)
class Selection:
    """The load-time selection of one read: ``expr`` is None when the read selects nothing."""

    expr: Expr | None = None
    partition_keys: tuple[str, ...] = ()

    @property
    def leaves(self) -> Predicate:
        """Leaves every selected row satisfies (pruning only)."""
        return implied_leaves(self.expr) if self.expr is not None else ()

    def partition_filter(self) -> Callable[[dict[str, Any]], bool] | None:
        """Exact partition selection (None when the read selects nothing)."""
        expr = self.expr
        if expr is None:
            return None
        return lambda named: may_hold_on_values(expr, named)


def _scan_partitions(text: str, schema: TableSchema) -> Expr:
    def fail(why: str) -> OptionError:
        return OptionError(f"Read option '{SCAN_PARTITIONS_KEY}' = {text!r}: {why}")

    keys = list(schema.partition_keys)
    if not keys:
        raise fail("the table is not partitioned; use the 'filter' read option to select rows.")
    if "max_pt()" in text.lower() or "max_two_pt()" in text.lower():
        raise fail(
            "Paimon's dynamic forms max_pt() / max_two_pt() are not supported; list the partitions "
            "('dt=2024-01-01;dt=2024-01-02')."
        )
    default_name = schema.core_options.get(PARTITION_DEFAULT_NAME)
    specs = []
    for part in text.split(";"):
        if not part.strip():
            raise fail("an empty partition between ';'; give 'key=value[,key2=value2]' for each partition.")
        spec: dict[str, Any] = {}
        for kv in part.split(","):
            key, sep, value = kv.partition("=")
            if not sep:
                raise fail(f"'{kv}' is not of the form key=value.")
            key, value = key.strip(), value.strip()
            if key not in keys:
                raise fail(f"'{key}' is not a partition key of the table (partition keys: {', '.join(keys)}).")
            try:
                spec[key] = None if value == default_name else coerce_partition_value(schema, key, value)
            except PaimonError as e:
                raise fail(str(e)) from None
        # Paimon fills the keys a spec leaves out with the default partition name, i.e. NULL.
        specs.append(all_of(Leaf(k, "<=>", spec.get(k)) for k in keys))
    return any_of(specs)


def selection_of(opts: ReadOptions, schema: TableSchema) -> Selection:
    """The selection ``opts`` make over ``schema`` (the read schema); bad text raises :class:`OptionError`."""
    parts: list[Expr] = []
    if opts.scan_partitions is not None:
        parts.append(_scan_partitions(opts.scan_partitions, schema))
    if opts.filter is not None:
        # Imported here: sqlglot costs ~80 ms to import, paid by every fresh Python process that loads the
        # package (Spark's streaming-source runner, new executors, the CLI), and only this option needs it.
        from pyspark_paimon.planner.sql_filter import parse_filter  # noqa: PLC0415

        parts.append(parse_filter(opts.filter, schema))
    return Selection(all_of(parts) if parts else None, tuple(schema.partition_keys))


__all__ = ["Selection", "selection_of"]
