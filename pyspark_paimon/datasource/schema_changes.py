"""Schema changes that depend on the table's data: stored values checked against a new schema, and the schema a
write's data needs (``write.merge-schema``) committed before its files are written.

A column whose type or nullability changes keeps its old files, whose values every read converts
(``datasource/read/file_read.py``). Paimon commits such a change without looking at the data, so a value that does
not fit (``'x'`` in a column changed to INT, a NULL in a column made NOT NULL, 2**40 in a BIGINT column made INT)
makes every later read of the table fail. ``t.update_schema()`` and writes with ``write.merge-schema`` call
:func:`check_stored_values` first: the changed columns are read once, converted, and the change is refused naming
the column and the value's problem. Changes that always fit (a wider integer, a longer VARCHAR...) read nothing.
A row written between the check and the commit is not checked.

:func:`merge_data_schema` is a write's schema evolution (``metadata/schema/schema_merge.py`` decides the new schema):
committed as the next schema of the branch before any data file is written, so the data files and their commit carry
its id, and retried from the latest schema when another writer changed it first.
"""

from __future__ import annotations

from typing import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.errors import ChainTableError, SchemaError
from pyspark_paimon.metadata.schema.options import WRITE_MERGE_SCHEMA
from pyspark_paimon.metadata.schema.schema_merge import SchemaMerge
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.arrow import from_arrow_schema
from pyspark_paimon.metadata.types.casts import always_fits, convert_array
from pyspark_paimon.metadata.types.model import DataField, DataType, RowType, type_to_sql
from pyspark_paimon.planner.chain.config import chain_options_enabled
from pyspark_paimon.planner.read_options import ReadOptions

__all__ = ["check_stored_values", "merge_arrow_schema", "merge_data_schema"]


def check_stored_values(store: FileStore, old: TableSchema, new: TableSchema, table: str) -> None:
    """Refuse ``new`` (the schema about to replace ``old`` on ``store``'s branch) when a stored value of a changed
    column does not fit its new type (see the module docstring)."""
    new_by_id = {f.id: f for f in new.fields}
    changed = [
        (f, new_by_id[f.id]) for f in old.fields if f.id in new_by_id and not always_fits(f.type, new_by_id[f.id].type)
    ]
    if not changed or store.snapshots.latest() is None:
        return
    opts = ReadOptions.from_options({})
    data = prepare_read(store, opts, (), [f.name for f, _ in changed]).to_arrow()
    for before, after in changed:
        _fits(data.column(before.name).combine_chunks(), before.type, after.type, _misfit(table, after))


def merge_data_schema(
    store: FileStore, merge: SchemaMerge, incoming: Sequence[tuple[str, DataType]], table: str
) -> TableSchema:
    """The branch's schema with the data's columns ``incoming`` merged in as ``merge`` says, committed first when it
    changes (stored values checked); the latest schema otherwise."""
    latest = store.schema()
    change = merge.change(incoming, table)
    preview = change(latest)
    if preview is None:
        return latest
    if chain_options_enabled(latest.options):
        raise ChainTableError(
            f"Chain table {table}: 'write.merge-schema' would change only the branch written to. Evolve a chain "
            "table with t.update_schema(), which changes its snapshot and delta branches together."
        )
    check_stored_values(store, latest, preview, table)
    return store.schemas.commit_changes([change])


def merge_arrow_schema(store: FileStore, data_schema: pa.Schema, table: str, requested: bool) -> dict[str, str]:
    """``Table.write_arrow``'s schema evolution: with ``requested`` (its ``merge_schema``) or the table option
    ``write.merge-schema``, the table takes the Arrow data's columns first (types as Arrow declares them: pyarrow's
    int64 for Python ints widens an INT column only with type widening on). Returns the options the write's
    tasks need."""
    merge = SchemaMerge.of(store.schema().options, {WRITE_MERGE_SCHEMA.key: "true"} if requested else {})
    if merge is None:
        return {}
    merge_data_schema(store, merge, from_arrow_schema(data_schema), table)
    return {WRITE_MERGE_SCHEMA.key: "true"}


def _misfit(table: str, new: DataField) -> Callable[[str], SchemaError]:
    def error(reason: str) -> SchemaError:
        return SchemaError(
            f"Cannot change column '{new.name}' of {table} to {type_to_sql(new.type)}: a stored value does not fit "
            f"({reason}). Update or delete such rows first, or add a new column and copy the values."
        )

    return error


def _fits(values: pa.Array, old: DataType, new: DataType, error: Callable[[str], SchemaError]) -> None:
    if isinstance(old, RowType) and isinstance(new, RowType):
        members = {f.id: f for f in old.fields}
        for f in new.fields:
            o = members.get(f.id)
            if o is not None and not always_fits(o.type, f.type):
                _fits(pc.struct_field(values, o.name), o.type, f.type, error)
    elif not always_fits(old.copy(nullable=True), new.copy(nullable=True)):
        values = convert_array(values, old, new, error)
    if not new.nullable and values.null_count:
        raise error(f"{values.null_count} NULL value(s) in a NOT NULL column")
