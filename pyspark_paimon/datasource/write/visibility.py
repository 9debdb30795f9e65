"""Which writes would commit rows no batch read returns, refused before any task writes.

A write to a deletion-vector primary-key table becomes visible only once a compaction moves its level-0 files up
(batch reads skip level 0). Our compaction does that after every write, except for tables whose changelog Paimon's
full compaction produces, which it refuses; writes to those are refused too, unless ``write-only`` says a Paimon
job compacts the table. The rule is the writer's (``jobs.prepare_write`` applies it), though compaction is why.
"""

from __future__ import annotations

from pyspark_paimon.errors import CompactionError
from pyspark_paimon.metadata.schema.options import CHANGELOG_PRODUCER
from pyspark_paimon.metadata.schema.table_schema import TableSchema

__all__ = ["refuse_invisible_writes"]


def refuse_invisible_writes(schema: TableSchema, table: str) -> None:
    """A write to a deletion-vector primary-key table is visible only once compacted, and our compaction
    refuses deletion-vector tables whose changelog Paimon's full compaction produces (``full-compaction``;
    :func:`~pyspark_paimon.datasource.compact.compact_plan.refuse_unsupported`): such a write would commit rows
    no batch read returns. Refused unless ``write-only`` says a Paimon job compacts the table."""
    options = schema.core_options
    producer = options.get(CHANGELOG_PRODUCER)
    if (
        schema.primary_keys
        and options.deletion_vectors_enabled
        and producer == "full-compaction"
        and not options.write_only
    ):
        raise CompactionError(
            f"Table {table} has 'deletion-vectors.enabled' = 'true' and 'changelog-producer' = '{producer}': its "
            "writes become visible only through Paimon's compaction, which produces the changelog and which "
            "pyspark-paimon does not run for such tables. Set 'write-only' = 'true' and compact the table with "
            "Paimon (a Flink or Spark compaction job), or write it with Paimon."
        )
