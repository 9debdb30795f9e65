"""Upserts by key into a data-evolution append table (pypaimon's ``upsert_by_key``): rows whose key the table holds
update those rows' columns by row id; rows of new keys are appended as new rows with new ids.

Why by row id: an append table has no primary key to merge versions of a row by, but a data-evolution table can
change existing rows in place through files of some columns (``row_id_update.py``), which keeps every row's id.
The key is matched within the row's partition (the partition columns are part of the match, as pypaimon's
partition-by-partition upsert), with an Arrow hash join of the input's keys and the table's keys and row ids: no
per-row work. Every existing row with a matching key is updated (an append table may hold a key more than once);
the input must hold each key once. The updates and the new rows are one commit.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.jobs import WriteResult, prepare_write
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.write.arrow_input import read_whole
from pyspark_paimon.datasource.write.conform import InputConformer
from pyspark_paimon.datasource.write.row_id_update import (
    commit_row_id_update,
    plan_row_id_update,
    refuse_without_data_evolution,
)
from pyspark_paimon.errors import DmlError, SchemaMismatchError
from pyspark_paimon.metadata.schema.row_tracking import ROW_ID, with_tracking_columns
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.scan import ScanPlanner

__all__ = ["upsert_by_key"]

_WHAT = "An upsert by key"
_INDEX = "__upsert_row"


def upsert_by_key(store: FileStore, data: Any, on: str | Sequence[str]) -> WriteResult:
    """Upsert ``data`` (Arrow data as ``t.write_arrow`` takes it, with every table column) into ``store``'s data-
    evolution append table by the key columns ``on``, in one commit (see the module docstring)."""
    schema = store.schema()
    table = store.table_path
    refuse_without_data_evolution(schema, table, _WHAT)
    keys = [on] if isinstance(on, str) else list(on)
    if not keys or len(set(keys)) != len(keys) or any(not schema.has_field(k) for k in keys):
        raise SchemaMismatchError(
            f"{_WHAT} of {table} needs one or more distinct table columns to match on (got {keys}; columns: "
            f"{', '.join(schema.field_names)})."
        )
    conformer = InputConformer(
        schema, schema.arrow_schema(), table, None, ignore_delete=False, ignore_update_before=False
    )
    source = conformer.conform(read_whole(data, schema.arrow_schema(), "write_arrow"))  # every column, typed
    match = [*(p for p in schema.partition_keys if p not in keys), *keys]
    counts = source.select(match).group_by(match).aggregate([([], "count_all")])
    if counts.num_rows != source.num_rows:
        raise DmlError(
            f"{_WHAT} of {table}: the data holds some key(s) of columns {match} more than once; give each key one row."
        )
    latest = store.snapshots.latest()
    existing = _keys_and_ids(store, latest, match)
    numbered = source.select(match).append_column(_INDEX, pa.array(range(source.num_rows), pa.int64()))
    pairs = existing.join(numbered, keys=match, join_type="inner").select([ROW_ID, _INDEX])
    matched = pc.is_in(numbered.column(_INDEX), value_set=pairs.column(_INDEX))
    columns = [c for c in schema.field_names if c not in match]
    job = prepare_write(store)
    update = None
    if pairs.num_rows and columns:
        changes = source.select(columns).take(pairs.column(_INDEX))
        changes = changes.append_column(ROW_ID, pairs.column(ROW_ID))
        update = plan_row_id_update(store, changes, _WHAT, latest)
    writer = job.new_writer("local")
    try:
        new_rows = source.filter(pc.invert(matched))
        if new_rows.num_rows:
            writer.write(new_rows)
        appended = writer.prepare_commit()
    except BaseException:
        writer.abort()
        if update is not None:
            update.discard()
        raise
    if update is None:
        messages = appended
        snapshot = job.commit(messages) if messages else None
    else:
        messages = [*update.messages, *appended]
        snapshot = commit_row_id_update(update, appended, job)
    return WriteResult.of(snapshot, messages)


def _keys_and_ids(store: FileStore, snapshot: Any, match: list[str]) -> pa.Table:
    """The ``match`` columns and ``_ROW_ID`` of every row of ``snapshot``."""
    schema = store.schema()
    read_schema = with_tracking_columns(schema, store.table_path)
    ctx = ReadContext.for_store(store, read_schema, read_fields=[*match, ROW_ID])
    fields = pa.schema([read_schema.arrow_schema().field(n) for n in [*match, ROW_ID]])
    splits = ScanPlanner(store, schema).plan(snapshot).splits if snapshot is not None else []
    batches = [b for s in splits for b in read_split(ctx, s)]
    if not batches:
        return fields.empty_table()
    return pa.Table.from_batches(batches).cast(fields)
