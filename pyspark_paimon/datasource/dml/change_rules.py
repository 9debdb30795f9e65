"""Which row-level changes a table accepts, checked before a change reads or writes anything.

Java Paimon's Spark DML refuses what a table's merge engine gives no meaning (:func:`check_merge_engine`), columns an
update cannot set (:func:`check_assigned`), changes through a fallback branch or a chain (:func:`refuse_foreign`), and
rewrites of files that carry a deletion vector (:func:`refuse_deletion_vector`); :func:`writes_vectors` says which
append tables change rows by deletion vectors instead of copy-on-write. One module, so every DML path (delete,
update, the Arrow and the Spark merge, branch merges) applies the same rules.
"""

from __future__ import annotations

from typing import Sequence

from pyspark_paimon.errors import DmlError, OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    DELETION_VECTORS_ENABLED,
    IGNORE_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    WRITE_ONLY,
)
from pyspark_paimon.metadata.schema.row_tracking import data_evolution_enabled
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.split import DataSplit

__all__ = ["check_merge_engine", "check_assigned", "writes_vectors", "refuse_foreign", "refuse_deletion_vector"]


def check_merge_engine(schema: TableSchema, table: str, *, deletes: bool, updates: bool) -> None:
    """Refuse a change the table's merge engine gives no meaning, as Java Paimon's Spark DML does (and one on a
    ``write-only`` deletion-vector primary-key table, whose writes are never compacted into sight)."""
    if not schema.primary_keys:
        return
    opts = schema.core_options
    if opts.deletion_vectors_enabled and opts.write_only:
        # Reads of such a table skip level 0 (Java's rule); only the compaction after each write, which
        # write-only turns off, moves it up, so the change would neither see rows only written there nor show.
        raise DmlError(
            f"Table {table} is a primary-key table with '{DELETION_VECTORS_ENABLED.key}' = 'true' and "
            f"'{WRITE_ONLY.key}' = 'true': its new rows stay invisible until a compaction, so a change would "
            "neither see nor show them. Compact it first (t.maintenance.compact()) and unset "
            f"'{WRITE_ONLY.key}' to change rows."
        )
    engine = opts.merge_engine
    if engine == "first-row" and (deletes or updates):
        raise DmlError(
            f"Table {table} uses merge-engine 'first-row', which keeps the first row of each key: Paimon defines no "
            "UPDATE or DELETE for it. Recreate the table with merge-engine 'deduplicate' to change rows."
        )
    if updates and engine == "aggregation":
        raise DmlError(
            f"Table {table} uses merge-engine 'aggregation': an updated row would be aggregated with the old one, "
            "not replace it, so Paimon refuses UPDATE there. Write the change as new input rows instead."
        )
    if not deletes:
        return
    if opts.ignore_delete:
        raise DmlError(
            f"Table {table} sets '{IGNORE_DELETE.key}' = 'true': every retraction would be dropped, so a DELETE "
            f"would change nothing. Unset '{IGNORE_DELETE.key}' to delete rows."
        )
    if engine == "partial-update" and not opts.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE):
        raise DmlError(
            f"Table {table} uses merge-engine 'partial-update', which accepts a DELETE only with "
            f"'{PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key}' = 'true'. Set that option to delete rows."
        )
    if engine == "aggregation" and not opts.get(AGGREGATION_REMOVE_RECORD_ON_DELETE):
        raise DmlError(
            f"Table {table} uses merge-engine 'aggregation', which accepts a DELETE only with "
            f"'{AGGREGATION_REMOVE_RECORD_ON_DELETE.key}' = 'true'. Set that option to delete rows."
        )


def check_assigned(schema: TableSchema, table: str, columns: Sequence[str]) -> list[str]:
    """The table's spelling of each assigned column; key and partition columns cannot change (Java refuses
    updating a primary key; a changed partition would need the row moved, which DML does not do)."""
    out = []
    for name in columns:
        matches = [f.name for f in schema.fields if f.name == name] or [
            f.name for f in schema.fields if f.name.lower() == str(name).lower()
        ]
        if len(matches) != 1:
            raise OptionError(
                f"Table {table} has no column '{name}' to set (columns: {', '.join(schema.field_names)})."
            )
        col = matches[0]
        if col in schema.primary_keys:
            raise DmlError(
                f"Column '{col}' of {table} is part of the primary key, which an update cannot change. Delete the row "
                "and insert the new one instead."
            )
        if col in schema.partition_keys:
            raise DmlError(
                f"Column '{col}' of {table} is a partition column, which an update cannot change. Delete the rows and "
                "insert them with the new partition value instead."
            )
        out.append(col)
    return out


def writes_vectors(schema: TableSchema) -> bool:
    """Append tables with ``deletion-vectors.enabled`` change rows by deletion vectors, not copy-on-write."""
    return not schema.primary_keys and schema.core_options.deletion_vectors_enabled


def refuse_foreign(kind: str, store: FileStore) -> None:
    """Refuse changes to rows that are not the branch's own (a fallback or chain read), and deletes of a
    data-evolution table (which changes rows by id, ``row_id_dml``, and would need deletion vectors to delete)."""
    options = store.schema().options
    if data_evolution_enabled(options):
        raise DmlError(
            f"Table {store.table_path} is a data-evolution table ('data-evolution.enabled'): t.update and a merge's "
            "updates and inserts change its rows by _ROW_ID, but a delete, or a merge that deletes rows, needs "
            "deletion vectors on such a table (Paimon master refuses it without 'deletion-vectors.enabled'). Update "
            "the rows instead, or delete them in a table created with 'deletion-vectors.enabled' = 'true'."
        )
    if kind != "plain":
        raise DmlError(
            f"Table {store.table_path} (branch '{store.branch}') is read as a {kind} read (fallback branch or chain "
            "table): DML changes only a branch's own files. Run it on the branch that holds the rows."
        )


def refuse_deletion_vector(store: FileStore, split: DataSplit, f: DataFileMeta) -> None:
    if split.deletion_files.get(f.file_name) is not None:
        raise DmlError(
            f"Data file {f.file_name} of {store.table_path} has a deletion vector, which removing or rewriting the "
            "file would leave behind. Compact the table (t.maintenance.compact) and re-run the change."
        )
