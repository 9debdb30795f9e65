"""What an executor needs to read the splits of one table scan, and what the reads count.

:class:`ReadContext` travels to Spark's Python workers with every split (it is picklable). It is built only by
:meth:`ReadContext.for_plan` (a planned read: plain, fallback, incremental or chain) or
:meth:`ReadContext.for_store` (a store's own files without a plan: compaction, a write's key checks, streams,
diffs), so every read describes each data file by every schema of its branch. :class:`ReadColumns` derives from a
context the columns a read decodes (the projection, the residual filter's columns, the merge keys and sequence
fields); :func:`referenced_columns` finds the filter's columns. :class:`ReadMetrics` counts what the reads of one
job did.

This module never imports pyspark.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import CorruptMetadataError, OptionError, SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import CoreOptions
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.arrow import to_arrow_field, to_arrow_schema, to_arrow_type
from pyspark_paimon.metadata.types.model import DataField
from pyspark_paimon.metadata.variant.path import VariantGet, variant_gets
from pyspark_paimon.planner.predicate import Leaf, to_arrow_expression, tree_columns, tree_expression
from pyspark_paimon.planner.split import DataSplit
from pyspark_paimon.planner.stream_options import ROW_KIND_COLUMN

if TYPE_CHECKING:  # pragma: no cover - types only: executors unpickling a context need no planner
    from pyspark_paimon.metadata.store import FileStore
    from pyspark_paimon.planner.read_plan import PlannedRead

__all__ = [
    "DeferredResidual",
    "ReadColumns",
    "ReadContext",
    "ReadMetrics",
    "referenced_columns",
    "ROW_KIND_FIELD",
    "row_kind_names",
]

#: The leading column of reads with row kinds (``$audit_log``, ``$binlog``): Paimon's ``rowkind``.
ROW_KIND_FIELD = pa.field(ROW_KIND_COLUMN, pa.string())
_KIND_NAMES = ("+I", "-U", "+U", "-D")


def row_kind_names(codes: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Paimon's row-kind codes (0 +I, 1 -U, 2 +U, 3 -D) as their short strings (the names are built here, not
    at import: an Arrow array built at import time loads pandas into every worker)."""
    return pc.take(pa.array(_KIND_NAMES, pa.string()), codes)


@dataclass
class ReadMetrics:
    """What the reads of one job did in this process (``ReadJob.metrics``), counted per read rather than in
    process-wide globals so concurrent reads (threads, tests) never mix their numbers.

    ``row_groups_total``/``row_groups_skipped``: Parquet row groups considered and skipped by raw reads;
    ``merged_sections``/``windowed_sections``: key-overlap sections merged, and those merged window by window;
    ``max_merge_rows``: the most rows one merge call held in memory.
    """

    row_groups_total: int = 0
    row_groups_skipped: int = 0
    merged_sections: int = 0
    windowed_sections: int = 0
    max_merge_rows: int = 0

    def add(self, other: "ReadMetrics") -> None:
        """Fold in the counts of another read (a thread's share of a job)."""
        self.row_groups_total += other.row_groups_total
        self.row_groups_skipped += other.row_groups_skipped
        self.merged_sections += other.merged_sections
        self.windowed_sections += other.windowed_sections
        self.max_merge_rows = max(self.max_merge_rows, other.max_merge_rows)


@dataclass(frozen=True)
class DeferredResidual:
    """A planned read's residual filter before it is an Arrow expression: the accepted filters and the load-time
    selection, typed by ``schema``. Building an Arrow expression turns its literals into Arrow scalars, and
    pyarrow's first scalar imports pandas (0.3 s and more in a cold process); so Spark's planner worker, which
    only plans and pickles the context, never builds it: the executors (or an in-process read) do, on first use."""

    filters: tuple[Leaf, ...]
    selection: Any  # a planner.selection tree, or None
    schema: pa.Schema

    def build(self) -> pc.Expression | None:
        parts = [
            e
            for e in (
                to_arrow_expression(list(self.filters), self.schema) if self.filters else None,
                tree_expression(self.selection, self.schema) if self.selection is not None else None,
            )
            if e is not None
        ]
        return parts[0] if len(parts) == 1 else (parts[0] & parts[1]) if parts else None


class _ResidualField:
    """The ``residual`` field of :class:`ReadContext`: an Arrow expression, None, or a :class:`DeferredResidual`
    that becomes the expression when first read (the built expression replaces it, and is what a pickle of the
    context carries from then on)."""

    def __get__(self, obj: Any, owner: Any = None) -> pc.Expression | None:
        if obj is None:
            return None  # the dataclass default
        value = obj.__dict__.get("_residual")
        if isinstance(value, DeferredResidual):
            value = value.build()
            obj.__dict__["_residual"] = value
        return value

    def __set__(self, obj: Any, value: "pc.Expression | DeferredResidual | None") -> None:
        obj.__dict__["_residual"] = value


@dataclass(frozen=True)
class ReadContext:
    """Everything an executor needs to read splits of one table scan (picklable).

    ``schema`` is the read schema (the table's current schema, or the one time travel selected);
    ``schemas`` maps branch -> schema id -> schema for files written under other schemas or branches
    (a file's branch is ``split.file_branches.get(name, branch)``). ``read_fields`` projects the output to
    these columns, in this order (None = all). ``residual`` is applied after merging. ``options`` overlay the
    read schema's options (see :meth:`merge_options`). ``pushed`` leaves skip Parquet row groups in raw
    (merge-free) reads only.
    """

    fileio: FileIO
    table_path: str
    schema: TableSchema
    schemas: dict[str, dict[int, TableSchema]] = field(default_factory=dict)
    branch: str = "main"
    options: dict[str, str] = field(default_factory=dict)
    read_fields: tuple[str, ...] | None = None
    residual: _ResidualField = _ResidualField()  # an Arrow expression (None: no filter), built lazily by for_plan
    batch_size: int = 65536
    # The pruning predicate (every output row satisfies it): raw reads skip Parquet row groups whose
    # statistics prove no row matches. The exact ``residual`` still runs afterwards.
    pushed: tuple[Leaf, ...] = ()
    # Key-overlap sections whose files total more than this many bytes are merged in windows of about this
    # many bytes of Parquet row groups (``file_read.plan_windows``), so memory stays bounded.
    merge_window_bytes: int = 64 << 20
    # Columns the residual filter reads that no file stores: values inside VARIANT columns (``variant_get``).
    derived: tuple[VariantGet, ...] = ()
    # ``$audit_log`` / ``$binlog``: every row leads with its row kind (``rowkind``: +I, -U, +U, -D), the kind of
    # the merged record for primary-key tables (a batch read drops retractions), +I for append tables.
    row_kinds: bool = False

    @classmethod
    def for_plan(
        cls,
        store: FileStore,
        planned: PlannedRead,
        read_fields: Sequence[str] | None = None,
        exact_filters: Sequence[Leaf] = (),
        batch_size: int = 65536,
    ) -> "ReadContext":
        """The one way to build a context from a planned read (plain, fallback, incremental or chain); reads of a
        store's own files without a plan use :meth:`for_store`.

        ``read_fields`` projects the output (validated against the read schema); ``exact_filters`` and the
        plan's load-time selection become the residual applied after the merge (Spark does not re-check filters
        a source accepted); the plan's pruning predicate is kept in ``pushed`` so raw reads skip Parquet row
        groups.
        """
        schema = planned.schema
        if read_fields is not None:
            for name in read_fields:
                schema.field(name)  # raises with the list of existing columns
        selection = planned.selection
        if selection is not None and tree_columns(selection) <= set(schema.partition_keys):
            selection = None  # partitions were selected exactly by it: every row of them satisfies it
        derived = tuple(variant_gets(tree_columns(selection), schema.fields)) if selection is not None else ()
        residual = (
            DeferredResidual(tuple(exact_filters), selection, residual_schema(schema, derived))
            if exact_filters or selection is not None
            else None
        )
        return cls(
            fileio=store.fileio,
            table_path=store.table_path,
            schema=schema,
            schemas=planned.schemas,
            branch=store.branch,
            options=dict(schema.options),
            read_fields=tuple(read_fields) if read_fields is not None else None,
            residual=residual,
            batch_size=batch_size,
            pushed=planned.predicate,
            derived=derived,
        )

    @classmethod
    def for_store(
        cls,
        store: FileStore,
        schema: TableSchema | None = None,
        *,
        also: Iterable[FileStore] = (),
        options: Mapping[str, str] | None = None,
        read_fields: Sequence[str] | None = None,
        residual: pc.Expression | None = None,
        batch_size: int = 65536,
        derived: Sequence[VariantGet] = (),
    ) -> "ReadContext":
        """The one way to build a context for reading a store's own files without a planned read (compaction,
        a write's checks, streams, diffs).

        ``schema`` is the read schema (the branch's latest when None). Every schema of ``store``'s branch, and of
        the branches of the ``also`` stores whose files the reads meet, describes the files, as in
        :meth:`for_plan`: a file written before a column was added reads with that column NULL wherever it is
        read. ``options`` overlay the schema's options; nothing is pushed down.
        """
        # Driver side only: executors unpickling a context need no planner.
        from pyspark_paimon.planner.read_plan import branch_schemas  # noqa: PLC0415

        schema = store.schema() if schema is None else schema
        schemas = {st.branch: branch_schemas(st) for st in (store, *also)}
        return cls(
            fileio=store.fileio,
            table_path=store.table_path,
            schema=schema,
            schemas=schemas,
            branch=store.branch,
            options={**schema.options, **(options or {})},
            read_fields=tuple(read_fields) if read_fields is not None else None,
            residual=residual,
            batch_size=batch_size,
            derived=tuple(derived),
        )

    def filter_rows(self, data: pa.Table) -> pa.Table:
        """``data`` (the read columns) without the rows the residual filter drops; derived columns (``variant_get``)
        are computed for the filter and dropped again."""
        if self.residual is None:
            return data
        if not self.derived:
            return data.filter(self.residual)
        extended = data
        for d in self.derived:
            extended = extended.append_column(d.name, d.evaluate(data.column(d.column)))
        return extended.filter(self.residual).drop_columns([d.name for d in self.derived])

    def merge_options(self) -> dict[str, str]:
        """The read schema's table options overlaid by ``options`` (merge engine, sequence fields...)."""
        return {**self.schema.options, **self.options}

    def core_options(self) -> CoreOptions:
        """Typed view of :meth:`merge_options`."""
        return CoreOptions(self.merge_options())

    def projected_fields(self) -> list[DataField]:
        names = self.schema.field_names if self.read_fields is None else list(self.read_fields)
        return [self.schema.field(n) for n in names]

    def output_schema(self) -> pa.Schema:
        schema = to_arrow_schema(self.projected_fields())
        return schema.insert(0, ROW_KIND_FIELD) if self.row_kinds else schema

    def file_schema(self, split: DataSplit, f: DataFileMeta) -> TableSchema:
        """The schema ``f`` was written with, on the branch the file belongs to."""
        branch = split.file_branches.get(f.file_name, self.branch)
        found = self.schemas.get(branch, {}).get(f.schema_id)
        if found is not None:
            return found
        if branch == self.branch and f.schema_id == self.schema.id:
            return self.schema
        known = sorted(self.schemas.get(branch, {}))
        raise CorruptMetadataError(
            f"Data file '{f.file_name}' was written with schema {f.schema_id} of branch '{branch}', which is not "
            f"available to the reader (known schema ids on that branch: {known or 'none'}). The schema file "
            f"'schema/schema-{f.schema_id}' of that branch may have been deleted; restore it to read the file."
        )


# ------------------------------------------------------------------------------------------------------
# Residual filter columns
# ------------------------------------------------------------------------------------------------------
def residual_schema(schema: TableSchema, derived: Sequence[VariantGet]) -> pa.Schema:
    """The Arrow schema a residual filter's literals are typed by: the table's columns and the derived ones."""
    arrow = schema.arrow_schema()
    for d in derived:
        arrow = arrow.append(to_arrow_field(d.field))
    return arrow


_REFS_CACHE: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
_REFS_LOCK = threading.Lock()


def _readable_schema(fields: Iterable[DataField]) -> pa.Schema:
    out = []
    for f in fields:
        try:
            out.append(pa.field(f.name, to_arrow_type(f.type, f.name), f.type.nullable))
        except UnsupportedTypeError:
            continue  # a residual filter cannot reference a column Spark cannot see
    return pa.schema(out)


def referenced_columns(expr: pc.Expression, schema: pa.Schema) -> tuple[str, ...]:
    """Columns of ``schema`` that ``expr`` references.

    pyarrow offers no introspection of expressions, so we bind the expression against empty tables that
    lack one column at a time: binding fails exactly when the missing column is referenced. Runs once per
    (expression, schema) thanks to a small cache; empty tables make it cheap.
    """
    cache_key = (str(expr), tuple(f"{f.name}:{f.type}" for f in schema))
    with _REFS_LOCK:
        hit = _REFS_CACHE.get(cache_key)
    if hit is not None:
        return hit
    empty = schema.empty_table()
    try:
        empty.filter(expr)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as exc:
        raise SchemaError(
            f"The filter {expr} cannot be evaluated on the table's columns ({', '.join(schema.names)}): {exc}"
        ) from exc
    refs = []
    for name in schema.names:
        try:
            empty.drop_columns([name]).filter(expr)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, KeyError):
            refs.append(name)
    result = tuple(refs)
    with _REFS_LOCK:
        if len(_REFS_CACHE) > 256:
            _REFS_CACHE.clear()
        _REFS_CACHE[cache_key] = result
    return result


# ------------------------------------------------------------------------------------------------------
# The columns of a read
# ------------------------------------------------------------------------------------------------------
@dataclass
class ReadColumns:
    """The columns a read of one context decodes and returns: ``out_fields``/``out_schema`` (the projection, in
    read types), ``read_fields`` (what is read from the files: the projection, the residual filter's columns,
    the merge keys and sequence fields), ``key_names`` (the trimmed primary key), ``seq_fields`` (the
    ``sequence.field`` columns) and ``override`` (partition columns replaced by constants, chain reads)."""

    out_fields: list[DataField]
    out_schema: pa.Schema
    read_fields: list[DataField]  # physically read table columns (read types)
    key_names: list[str]
    seq_fields: list[str]
    override: dict[str, Any]

    @classmethod
    def of(cls, ctx: ReadContext, partition_override: Mapping[str, Any] | None) -> "ReadColumns":
        """The columns of ``ctx``'s reads; ``partition_override`` columns are returned as constants (read from the
        files only when they are merge keys or sequence fields)."""
        schema = ctx.schema
        out_fields = ctx.projected_fields()
        out_schema = ctx.output_schema()
        filter_cols: tuple[str, ...] = ()
        if ctx.residual is not None:
            derived = {d.name: d.column for d in ctx.derived}
            refs = referenced_columns(ctx.residual, _readable_schema([*schema.fields, *(d.field for d in ctx.derived)]))
            filter_cols = tuple(dict.fromkeys(derived.get(name, name) for name in refs))
        key_names: list[str] = []
        seq: list[str] = []
        if schema.primary_keys:
            key_names = list(schema.trimmed_primary_keys) or list(schema.primary_keys)
            seq = ctx.core_options().sequence_fields
            for name in seq:
                if not schema.has_field(name):
                    raise OptionError(
                        f"Option 'sequence.field' names column '{name}', which the table does not have "
                        f"(columns: {', '.join(schema.field_names)})."
                    )
        override = dict(partition_override or {})
        for name in override:
            if not schema.has_field(name):
                raise SchemaError(f"Partition override names column '{name}', which the table does not have.")
        merge_cols = set(key_names) | set(seq)
        wanted = list(dict.fromkeys([*(f.name for f in out_fields), *filter_cols, *key_names, *seq]))
        read_names = [n for n in wanted if n not in override or n in merge_cols]
        return cls(out_fields, out_schema, [schema.field(n) for n in read_names], key_names, seq, override)
