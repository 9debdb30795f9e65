"""Row tracking and data evolution (Paimon 1.3+): which tables have them, and their two hidden columns.

A table with ``row-tracking.enabled`` gives every row a stable id at commit: each data file's ``_FIRST_ROW_ID``
(manifest) is the id of its first row, so row ``i`` of the file has id ``first_row_id + i`` unless the file
stores a ``_ROW_ID`` column of its own (non-NULL values win); its ``_SEQUENCE_NUMBER`` is the file's stored
column where present, else the file's max sequence number. ``data-evolution.enabled`` (which needs row
tracking) lets files hold only some columns (``_WRITE_COLS``) for a row-id range that other files hold too:
a read assembles each row from the newest file of its range that wrote each column.

The hidden columns are not part of the table's schema; reads that ask for them (the ``read.row-tracking-columns``
read option, the ``$row_tracking`` system table) read a schema with both appended (Java's
``SpecialFields.rowTypeWithRowTracking``: BIGINT NOT NULL, Java's field ids), which is what this module builds.
"""

from __future__ import annotations

from typing import Mapping

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.model import AtomicType, DataField

__all__ = [
    "DATA_EVOLUTION_KEY",
    "READ_COLUMNS_KEY",
    "ROW_ID",
    "ROW_ID_FIELD_ID",
    "ROW_TRACKING_KEY",
    "SEQUENCE_NUMBER",
    "SEQUENCE_NUMBER_FIELD_ID",
    "TRACKING_COLUMNS",
    "data_evolution_enabled",
    "has_tracking_columns",
    "row_tracking_enabled",
    "tracking_fields",
    "with_tracking_columns",
]

ROW_TRACKING_KEY = "row-tracking.enabled"
DATA_EVOLUTION_KEY = "data-evolution.enabled"
#: The read option that appends ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` to a read (Spark gives a Python data source
#: no metadata columns, so a read asks for them by option).
READ_COLUMNS_KEY = "read.row-tracking-columns"

ROW_ID = "_ROW_ID"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
# Java's SpecialFields ids (Integer.MAX_VALUE - 5 and - 1): no user column can have them.
ROW_ID_FIELD_ID = 2**31 - 1 - 5
SEQUENCE_NUMBER_FIELD_ID = 2**31 - 1 - 1
TRACKING_COLUMNS = (ROW_ID, SEQUENCE_NUMBER)
_TRACKING_IDS = frozenset((ROW_ID_FIELD_ID, SEQUENCE_NUMBER_FIELD_ID))


def _flag(options: Mapping[str, str], key: str) -> bool:
    return str(options.get(key, "")).strip().lower() == "true"


def row_tracking_enabled(options: Mapping[str, str]) -> bool:
    """Whether a table with these options tracks rows (data evolution implies it: Java refuses it without)."""
    return _flag(options, ROW_TRACKING_KEY) or _flag(options, DATA_EVOLUTION_KEY)


def data_evolution_enabled(options: Mapping[str, str]) -> bool:
    """Whether files of a table with these options may hold only some columns, merged by row id on read."""
    return _flag(options, DATA_EVOLUTION_KEY)


def has_tracking_columns(schema: TableSchema) -> bool:
    """Whether ``schema`` is a read schema with the hidden columns appended (:func:`with_tracking_columns`)."""
    return any(f.id in _TRACKING_IDS for f in schema.fields)


def tracking_fields() -> list[DataField]:
    """``_ROW_ID`` and ``_SEQUENCE_NUMBER`` as Java declares them (BIGINT NOT NULL, its field ids): the columns a read
    appends, and the columns a compaction of a row-tracking table stores in its files."""
    return [
        DataField(ROW_ID_FIELD_ID, ROW_ID, AtomicType("BIGINT", nullable=False)),
        DataField(SEQUENCE_NUMBER_FIELD_ID, SEQUENCE_NUMBER, AtomicType("BIGINT", nullable=False)),
    ]


def with_tracking_columns(schema: TableSchema, table: str) -> TableSchema:
    """``schema`` with ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` appended, for a read that asked for them; refused for a
    table without row tracking (no row has an id) or one whose own columns take those names."""
    if not row_tracking_enabled(schema.options):
        raise OptionError(
            f"Table {table} does not track rows ('{ROW_TRACKING_KEY}' is not 'true'), so its rows have no "
            f"{ROW_ID} or {SEQUENCE_NUMBER}. Drop the read option '{READ_COLUMNS_KEY}' (or the $row_tracking "
            "system table), or read a table created with row tracking."
        )
    if has_tracking_columns(schema):
        return schema
    taken = [n for n in TRACKING_COLUMNS if schema.has_field(n)]
    if taken:
        raise OptionError(
            f"Table {table} has its own column(s) {taken}, which the row-tracking columns would shadow; read it "
            f"without '{READ_COLUMNS_KEY}'."
        )
    return schema.copy(fields=[*schema.fields, *tracking_fields()])
