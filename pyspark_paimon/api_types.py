"""The types of the Python API's arguments, so that every signature says the same thing the same way.

An instant is an :data:`Instant` and a length of time a :data:`Duration` wherever a method takes one, and each
closed set of strings is a ``Literal`` a type checker can check; what a write takes is :data:`ArrowData`. They are
importable from the package (``from pyspark_paimon import Instant``) and documented once, here (the API reference's
Types page). Each is defined where its values are decided -- ``metadata/timeutil.py`` converts instants and
durations, ``metadata/refs/tags.py`` applies the timestamp rules, ``datasource/versions/branch_merge.py`` resolves
conflicts -- and collected here for users; :data:`WriteMode` belongs to the API alone.
"""

from __future__ import annotations

from typing import Literal

from pyspark_paimon.datasource.versions.branch_merge import OnConflict
from pyspark_paimon.datasource.write.arrow_input import ArrowData
from pyspark_paimon.metadata.refs.tags import TimestampRule
from pyspark_paimon.metadata.timeutil import Duration, Instant

WriteMode = Literal["append", "overwrite", "update", "upsert"]
"""How :meth:`~pyspark_paimon.table.Table.write_arrow` commits, the first two as Spark's save modes of the same
names: ``'append'`` adds rows (primary-key tables: upserts), ``'overwrite'`` replaces the whole table, the
partitions the data touches (``dynamic_partition_overwrite=True``) or one given partition (``overwrite_partition=``).
Data-evolution tables only (docs/row-tracking.md): ``'update'`` sets the data's columns on the rows its ``_ROW_ID``
column names, ``'upsert'`` updates the rows whose key columns (``on=``) match and appends the other rows."""

__all__ = ["ArrowData", "Duration", "Instant", "OnConflict", "TimestampRule", "WriteMode"]
