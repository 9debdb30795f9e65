"""Re-sequencing a write's new files at commit time, so that the later commit of a key wins (the rule and why:
:mod:`pyspark_paimon.metadata.snapshots.commit_order`; the commit decides when, this module rewrites the files).

Which tables: primary-key tables whose merge orders a key's versions by the system sequence number alone, that is
``deduplicate`` and ``partial-update`` without ``sequence.field`` (:func:`ordered_by_commit`). ``first-row`` keeps
the first version by design, ``aggregation`` combines versions, and a ``sequence.field`` orders them by the user's
column; those keep their own rules.

How: a new level-0 file is rewritten *in place* (same name, same path) with every ``_SEQUENCE_NUMBER`` raised by
one offset per bucket. The file is new and no snapshot references it (the commit rewrites it only between
attempts that certainly did not land), so nobody can read it meanwhile; keeping its name keeps every abort path
right (each deletes the files it wrote by name). Changelog files keep their numbers: nothing merges them.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark_paimon.datasource.write.data_files import DataFileWriter
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, Resequence
from pyspark_paimon.metadata.store import FileStore

__all__ = ["ordered_by_commit", "resequencer"]

#: Merge engines whose result for a key is decided by the order of its versions alone.
_ORDERED_ENGINES = ("deduplicate", "partial-update")


def ordered_by_commit(schema: TableSchema) -> bool:
    """Whether the versions of a key in this table must be ordered by commit (the later commit wins)."""
    options = schema.core_options
    return bool(schema.primary_keys) and options.merge_engine in _ORDERED_ENGINES and not options.sequence_fields


def resequencer(store: FileStore, schema: TableSchema) -> Resequence:
    """The commit's ``resequence`` for ``store``: rewrite a message's new level-0 files with sequence numbers
    ``offset`` higher, each by the schema it was written with and the table's layout options."""
    writers: dict[int, DataFileWriter] = {}
    types = [f.type for f in schema.partition_fields]

    def writer(schema_id: int) -> DataFileWriter:
        found = writers.get(schema_id)
        if found is None:
            written = schema if schema_id == schema.id else store.schemas.schema(schema_id)
            found = writers[schema_id] = DataFileWriter(
                store.fileio,
                store.table_path,
                written,
                written.options_with_defaults(),
                list(written.trimmed_primary_key_fields),
            )
        return found

    def resequence(message: CommitMessage, offset: int) -> CommitMessage:
        directory = store.bucket_path(schema, tuple(deserialize_row(message.partition, types)), message.bucket)
        files = tuple(
            writer(f.schema_id).resequenced(f.external_path or f"{directory}/{f.file_name}", f, offset)
            if f.level == 0
            else f
            for f in message.new_files
        )
        return replace(message, new_files=files)

    return resequence
