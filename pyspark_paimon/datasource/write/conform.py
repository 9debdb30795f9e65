"""Input conformance: every batch a writer receives is made to fit the table before it is buffered.

Columns are matched by name (exactly, else case-insensitively when unambiguous) and put in schema order, cast to
the table's Arrow types by Spark's store-assignment rules (``store_assignment``), timestamps cut to their
precision, NOT NULL enforced, VARIANT values checked and made plain; then each row gets its kind
(``rowkind.field``, explicit kinds, or +I) and the kinds ``ignore-delete`` / ``ignore-update-before`` drop are
dropped. Doing this on arrival makes a bad batch fail its task at once, naming the column, instead of at the flush.
With ``write.merge-schema`` a nullable column the data lacks is written as NULL.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.write.data_files import VALUE_KIND
from pyspark_paimon.datasource.write.store_assignment import cast_for_store
from pyspark_paimon.errors import OptionError, SchemaMismatchError
from pyspark_paimon.metadata.schema.options import ROWKIND_FIELD, CoreOptions
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import DataField, type_to_sql
from pyspark_paimon.metadata.variant.shredding import rebuild_column

__all__ = ["InputConformer", "ROW_KINDS", "rowkind_column"]

#: RowKind spelling in ``rowkind.field`` columns, in byte-value order (0 = +I, 1 = -U, 2 = +U, 3 = -D).
ROW_KINDS = ("+I", "-U", "+U", "-D")


def rowkind_column(schema: TableSchema, options: CoreOptions) -> str | None:
    """The column ``rowkind.field`` names (None: unset); refused unless it is a STRING column of the table."""
    name = options.get(ROWKIND_FIELD)
    if name is None:
        return None
    name = name.strip()
    if not schema.has_field(name):
        raise OptionError(
            f"Option '{ROWKIND_FIELD.key}' names '{name}', which is not a column of the table "
            f"(columns: {', '.join(schema.field_names)})."
        )
    t = schema.field(name).type
    if getattr(t, "name", None) not in ("CHAR", "VARCHAR"):
        raise OptionError(
            f"Option 'rowkind.field' names column '{name}' of type "
            f"{type_to_sql(t)}; it must be a STRING column holding +I, -U, +U or -D."
        )
    return name


class InputConformer:
    """Conforms input batches to ``schema`` (whose ``arrow_schema()`` is ``arrow_schema``; see the module
    docstring). ``rowkind_field``: the column
    :func:`rowkind_column` checked; ``ignore_delete`` / ``ignore_update_before``: the options of those names;
    ``table_path`` names the table in errors."""

    def __init__(
        self,
        schema: TableSchema,
        arrow_schema: pa.Schema,
        table_path: str,
        rowkind_field: str | None,
        *,
        ignore_delete: bool,
        ignore_update_before: bool,
        fill_missing: bool = False,
    ) -> None:
        self._schema = schema
        self._table_path = table_path
        self._fields: list[DataField] = list(schema.fields)
        self._arrow_schema = arrow_schema
        self._is_pk = bool(schema.primary_keys)
        self._rowkind_field = rowkind_field
        self._ignore_delete = ignore_delete
        self._ignore_update_before = ignore_update_before
        self._fill_missing = fill_missing

    def conform(self, table: pa.Table, kinds: pa.Array | None = None) -> pa.Table:
        """``table`` aligned to the schema; primary-key tables (and ``rowkind.field`` tables, whose kinds are
        checked) get the ``_VALUE_KIND`` column, minus the ignored kinds. ``kinds`` (int8, primary-key tables
        only) gives every row's kind directly."""
        if kinds is not None and (not self._is_pk or len(kinds) != table.num_rows):
            raise SchemaMismatchError(
                f"Explicit row kinds need a primary-key table and one kind per row ({self._table_path})."
            )
        aligned = self._align(table)
        if self._rowkind_field is not None or self._is_pk:
            row_kinds = self._row_kinds(aligned) if kinds is None else pa.chunked_array([kinds.cast(pa.int8())])
            aligned = aligned.append_column(pa.field(VALUE_KIND, pa.int8(), False), row_kinds)
            aligned = self._drop_ignored_kinds(aligned)
            if not self._is_pk:
                aligned = aligned.drop_columns([VALUE_KIND])
        return aligned

    def _align(self, table: pa.Table) -> pa.Table:
        """Columns by name in schema order, cast to the table's Arrow types; NOT NULL enforced."""
        names = table.column_names
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise SchemaMismatchError(f"The data has duplicate columns {dup}; each column may appear once.")
        index = {n: i for i, n in enumerate(names)}
        lower: dict[str, list[str]] = {}
        for n in names:
            lower.setdefault(n.lower(), []).append(n)
        chosen: list[str | None] = []
        missing: list[str] = []
        for f in self._fields:
            if f.name in index:
                chosen.append(f.name)
            elif len(lower.get(f.name.lower(), [])) == 1:
                chosen.append(lower[f.name.lower()][0])
            else:
                chosen.append(None)
                missing.append(f.name)
        if self._fill_missing:  # write.merge-schema: a column the data lacks is written as NULL
            missing = [m for m in missing if not self._schema.field(m).type.nullable]
        if missing:
            desc = ", ".join(f"'{m}' {type_to_sql(self._schema.field(m).type)}" for m in missing)
            raise SchemaMismatchError(
                f"The data written to {self._table_path} lacks column(s) {desc}. Select every table column "
                f"({', '.join(self._schema.field_names)}), using NULL literals for unknown values."
            )
        chosen_set = set(chosen)
        extra = [n for n in names if n not in chosen_set]
        if extra:
            raise SchemaMismatchError(
                f"The data written to {self._table_path} has column(s) {extra} that the table does not have "
                f"(columns: {', '.join(self._schema.field_names)}). Drop them, add them to the table first, or let "
                "the write add them (merge_schema=True, or the Spark write option 'write.merge-schema')."
            )
        columns = []
        for f, src_name, target in zip(self._fields, chosen, self._arrow_schema):
            if src_name is None:
                columns.append(pa.chunked_array([pa.nulls(table.num_rows, target.type)], target.type))
                continue
            col = self._cast_column(table.column(index[src_name]), f, target)
            if not target.nullable and col.null_count:
                raise SchemaMismatchError(
                    f"Column '{f.name}' is NOT NULL in the table but the data holds {col.null_count} NULL "
                    "value(s); filter them out or fill them (e.g. coalesce) before writing."
                )
            columns.append(col)
        return pa.Table.from_arrays(columns, schema=self._arrow_schema)

    def _cast_column(self, col: pa.ChunkedArray, f: DataField, target: pa.Field) -> pa.ChunkedArray:
        src = col.type
        want = target.type
        try:
            if pa.types.is_dictionary(src):
                col = col.cast(src.value_type)
                src = col.type
            if f.type.root == "VARIANT" and pa.types.is_struct(src):
                where = f"column '{f.name}' of the data written to {self._table_path}"
                return pa.chunked_array([rebuild_column(chunk, where) for chunk in col.chunks], want)
            if pa.types.is_timestamp(src) and pa.types.is_timestamp(want):
                if want.tz is None and src.tz is not None:
                    # A zoned instant into TIMESTAMP (no zone): keep the wall clock of its zone, as Spark's
                    # cast from TIMESTAMP to TIMESTAMP_NTZ does with the session time zone.
                    col = pc.local_timestamp(col)
                if col.type != want:  # unit change (ns -> us truncates) or zone relabel (same instant)
                    col = col.cast(want, safe=False)
                return _truncate_timestamp(col, f)
            return cast_for_store(col, want, f.name, type_to_sql(f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise SchemaMismatchError(
                f"Column '{f.name}' has type {src}, which cannot be written to the table column of type "
                f"{type_to_sql(f.type)} (Arrow {want}): {e}. Cast the column to the table's type first."
            ) from None

    def _row_kinds(self, table: pa.Table) -> pa.ChunkedArray:
        if self._rowkind_field is None:
            return pa.chunked_array([pa.array(np.zeros(table.num_rows, dtype=np.int8))])
        col = table.column(self._rowkind_field)
        idx = pc.index_in(col, value_set=pa.array(ROW_KINDS))
        invalid = pc.is_null(idx)
        if pc.any(invalid).as_py():
            bad = pc.filter(col, invalid)[0].as_py()
            raise SchemaMismatchError(
                f"Column '{self._rowkind_field}' (option 'rowkind.field') holds {bad!r}, which is not a row kind; "
                "use one of '+I', '-U', '+U', '-D'."
            )
        kinds = idx.cast(pa.int8())
        if not self._is_pk and pc.any(pc.not_equal(kinds, 0)).as_py():
            raise SchemaMismatchError(
                f"Column '{self._rowkind_field}' (option 'rowkind.field') holds retractions or updates, but "
                f"{self._table_path} is an append table, which only accepts '+I' rows."
            )
        return kinds

    def _drop_ignored_kinds(self, table: pa.Table) -> pa.Table:
        """``ignore-delete`` drops -U/-D rows and ``ignore-update-before`` drops -U rows before writing."""
        if not (self._ignore_delete or self._ignore_update_before):
            return table
        dropped = [1, 3] if self._ignore_delete else [1]
        keep = pc.invert(pc.is_in(table.column(VALUE_KIND), value_set=pa.array(dropped, pa.int8())))
        return table.filter(keep)


def _truncate_timestamp(col: pa.ChunkedArray, f: DataField) -> pa.ChunkedArray:
    """Cut sub-precision digits (TIMESTAMP(3) holds milliseconds), as Java does when it stores a value."""
    p = getattr(f.type, "precision", None)
    if p is None or p >= 6 or col.null_count == len(col):
        return col
    return pc.floor_temporal(col, multiple=10 ** (6 - p), unit="microsecond")
