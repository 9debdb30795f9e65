"""Per-file column statistics, encoded the way Paimon stores them in manifests (Java's `SimpleStatsConverter`).

Every data file carries min/max/null-count statistics of its columns as two BinaryRows (Java's `BinaryRow`) and a list
of null counts. Readers use them to skip files, so they must be *correct bounds* even when they are not exact:
a truncated string minimum is still <= every value, a truncated maximum is rounded *up* (last code point
incremented) or dropped (NULL = unknown) when it cannot be rounded up.

Modes (``metadata.stats-mode``, per column ``fields.<f>.stats-mode``):

* ``none``: no statistics at all; with the default dense store the column is left out of the stats rows and
  the file lists the covered columns in ``_VALUE_STATS_COLS``;
* ``counts``: null counts only (min/max NULL);
* ``full``: exact min/max;
* ``truncate(N)`` (default ``truncate(16)``): like full, but strings/binaries are cut to N characters/bytes.

Nested columns (ARRAY/MAP/ROW/...) never have min/max (Paimon cannot order them) but do have null counts.
Floating-point NaN sorts above every number (Java ``Double.compare``), so a column holding NaN reports NaN
as its maximum: a reader's range check then can never wrongly skip a file whose only match is a NaN.

Everything is computed per column with ``pyarrow.compute`` (one min/max kernel call per column per file);
only the handful of resulting scalars are touched in Python. Files another writer made (Spark's Parquet writer,
``jvm_write``) are described from the summaries in their footers instead (:data:`Summarize`): the modes apply alike.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import OptionError, UnsupportedTypeError
from pyspark_paimon.metadata.manifests.manifest import SimpleStats
from pyspark_paimon.metadata.rows.binary_row import serialize_row, type_name
from pyspark_paimon.metadata.schema.options import (
    FIELD_STATS_MODE,
    METADATA_STATS_DENSE_STORE,
    METADATA_STATS_KEEP_FIRST_N_COLUMNS,
    METADATA_STATS_MODE,
    CoreOptions,
)
from pyspark_paimon.metadata.types.model import AtomicType, DataField, DataType

__all__ = [
    "DEFAULT_STATS_MODE",
    "SYSTEM_STATS_MODE",
    "StatsMode",
    "parse_stats_mode",
    "field_stats_mode",
    "mode_resolver",
    "truncate_min",
    "truncate_max",
    "collect_stats",
    "covered_columns",
    "collect_value_stats",
    "ColumnSummary",
    "Summarize",
    "arrow_summaries",
]

DEFAULT_STATS_MODE: str = METADATA_STATS_MODE.default_value
#: Paimon always keeps system/key columns (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) at this mode.
SYSTEM_STATS_MODE = "truncate(128)"

_TRUNCATE_RE = re.compile(r"truncate\s*\(\s*(\d+)\s*\)")
_STRING_ROOTS = frozenset({"CHAR", "VARCHAR"})
_BINARY_ROOTS = frozenset({"BINARY", "VARBINARY"})
_FLOAT_ROOTS = frozenset({"FLOAT", "DOUBLE"})
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)
#: Stand-in type used to encode the always-NULL min/max slot of a column that has no orderable type.
#: A NULL BIGINT is a set null bit and a zero slot, exactly what Java writes for a NULL nested field.
_NULL_PLACEHOLDER = AtomicType("BIGINT")


@dataclass(frozen=True)
class StatsMode:
    """A parsed stats mode. ``length`` is set only for ``truncate``."""

    kind: str  # "none" | "counts" | "full" | "truncate"
    length: int | None = None

    @property
    def has_min_max(self) -> bool:
        return self.kind in ("full", "truncate")

    @property
    def has_stats(self) -> bool:
        return self.kind != "none"


def parse_stats_mode(text: str, key: str = METADATA_STATS_MODE.key) -> StatsMode:
    """Parse ``none``/``counts``/``full``/``truncate(N)`` (case-insensitive); ``key`` names the option in errors."""
    t = str(text).strip().lower()
    if t in ("none", "counts", "full"):
        return StatsMode(t)
    m = _TRUNCATE_RE.fullmatch(t)
    if m:
        return StatsMode("truncate", int(m.group(1)))
    raise OptionError(
        f"Option '{key}' = '{text}' is not a stats mode; use none, counts, full or truncate(N), e.g. truncate(16)."
    )


def field_stats_mode(options: Mapping[str, str], field_name: str) -> str:
    """The mode text of one table column: ``fields.<f>.stats-mode``, else ``metadata.stats-mode``, else
    ``truncate(16)``."""
    opts = CoreOptions(options)
    return opts.field(field_name, FIELD_STATS_MODE) or opts.get(METADATA_STATS_MODE)


def mode_resolver(options: Mapping[str, str], fields: Sequence[DataField]) -> Callable[[DataField], str]:
    """``mode_for(field)`` for the table columns: per-field and table modes, and
    ``metadata.stats-keep-first-n-columns`` (columns past the first N get ``none``)."""
    keep = CoreOptions(options).get(METADATA_STATS_KEEP_FIRST_N_COLUMNS)
    position = {f.name: i for i, f in enumerate(fields)}

    def mode_for(f: DataField) -> str:
        if keep is not None and keep >= 0 and position.get(f.name, 0) >= keep:
            return "none"
        return field_stats_mode(options, f.name)

    return mode_for


# ------------------------------------------------------------------------------------------------
# Truncation (Java's `SimpleStatsConverter`)
# ------------------------------------------------------------------------------------------------
def truncate_min(value: str | bytes | None, length: int) -> str | bytes | None:
    """A lower bound of at most ``length`` characters (str) or bytes: the prefix is always <= the value."""
    if value is None:
        return None
    return value[:length]


def truncate_max(value: str | bytes | None, length: int) -> str | bytes | None:
    """An upper bound of at most ``length`` characters/bytes, or None when none exists.

    The prefix alone would be *smaller* than the value, so its last code point (byte) is incremented; when
    it cannot be (U+10FFFF / 0xFF) the one before is tried and the tail dropped. Code points are compared
    the way their UTF-8 bytes compare, so the result bounds the value in Paimon's byte order too.
    """
    if value is None:
        return None
    if len(value) <= length:
        return value
    if isinstance(value, str):
        for i in range(length - 1, -1, -1):
            nxt = ord(value[i]) + 1
            if nxt in _SURROGATES:  # not encodable in UTF-8; the next valid code point is still greater
                nxt = _SURROGATES.stop
            if nxt <= _MAX_CODE_POINT:
                return value[:i] + chr(nxt)
        return None
    data = bytes(value)
    for i in range(length - 1, -1, -1):
        if data[i] != 0xFF:
            return data[:i] + bytes([data[i] + 1])
    return None


# ------------------------------------------------------------------------------------------------
# Collection
# ------------------------------------------------------------------------------------------------
def _orderable_root(t: DataType) -> str | None:
    """The BinaryRow type name when the column can have min/max, else None (nested, VARIANT, ...)."""
    if not isinstance(t, AtomicType):
        return None
    try:
        return type_name(t)
    except UnsupportedTypeError:
        return None


def _min_max(column: pa.ChunkedArray | pa.Array, root: str) -> tuple[Any, Any]:
    if len(column) == 0 or column.null_count == len(column):
        return None, None
    result = pc.min_max(column)
    lo, hi = result["min"].as_py(), result["max"].as_py()
    if root in _FLOAT_ROOTS:
        # pyarrow skips NaN; Java orders NaN above everything, so the true maximum is NaN, and so is the
        # minimum when every non-NULL value is NaN (pyarrow 18 then reports (inf, -inf), newer ones NaN).
        nans = pc.sum(pc.is_nan(column).cast(pa.int64())).as_py() or 0
        if nans:
            hi = math.nan
            if nans == len(column) - column.null_count:
                lo = math.nan
    return lo, hi


@dataclass(frozen=True)
class ColumnSummary:
    """What one file holds of one column, before any stats mode applies: its least and greatest value (None when
    unknown or every value is NULL; a float column holding NaN has NaN as its greatest) and its NULL count (None:
    unknown, which a footer may not record)."""

    min: Any
    max: Any
    nulls: int | None


#: The summary of a table column in one file; ``root`` is its BinaryRow type name when min/max are wanted, None
#: when only the NULL count is. Stats come from a file's Arrow data (:func:`arrow_summaries`) or from what a
#: writer recorded in the file's footer (``jvm_write``), through this one shape.
Summarize = Callable[[DataField, "str | None"], ColumnSummary]


def arrow_summaries(table: pa.Table) -> Summarize:
    """Summaries of the columns of ``table`` (looked up by name), each computed when asked for."""

    def summarize(f: DataField, root: str | None) -> ColumnSummary:
        column = table.column(f.name)
        nulls = int(column.null_count)
        if root is None:
            return ColumnSummary(None, None, nulls)
        lo, hi = _min_max(column, root)
        return ColumnSummary(lo, hi, nulls)

    return summarize


def _column_stats(summarize: Summarize, f: DataField, mode: StatsMode) -> tuple[object, object, int | None, DataType]:
    """(min, max, null count, type used to encode min/max) of one column."""
    if not mode.has_stats:
        return None, None, None, _NULL_PLACEHOLDER
    root = _orderable_root(f.type)
    if root is None:
        return None, None, summarize(f, None).nulls, _NULL_PLACEHOLDER
    if not mode.has_min_max:
        return None, None, summarize(f, None).nulls, f.type
    summary = summarize(f, root)
    lo, hi = summary.min, summary.max
    if mode.kind == "truncate" and (root in _STRING_ROOTS or root in _BINARY_ROOTS):
        lo, hi = truncate_min(lo, mode.length or 0), truncate_max(hi, mode.length or 0)
    return lo, hi, summary.nulls, f.type


def _resolve(mode_for: Callable[[DataField], str] | str | None, f: DataField) -> StatsMode:
    if mode_for is None:
        text = DEFAULT_STATS_MODE
    elif isinstance(mode_for, str):
        text = mode_for
    else:
        text = mode_for(f)
    return parse_stats_mode(text, f"fields.{f.name}.stats-mode")


def _stats_over(summarize: Summarize, fields: Sequence[DataField], modes: Sequence[StatsMode]) -> SimpleStats:
    mins, maxs, counts, types = [], [], [], []
    for f, mode in zip(fields, modes):
        lo, hi, nulls, t = _column_stats(summarize, f, mode)
        mins.append(lo)
        maxs.append(hi)
        counts.append(nulls)
        types.append(t)
    return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(counts))


def _summaries(table: pa.Table | Summarize) -> Summarize:
    return arrow_summaries(table) if isinstance(table, pa.Table) else table


def collect_stats(
    table: pa.Table | Summarize, fields: Sequence[DataField], mode_for: Callable[[DataField], str] | str | None = None
) -> SimpleStats:
    """Stats of the columns of ``fields`` (looked up in ``table`` by name) as Paimon stores them.

    ``mode_for(field)`` returns the mode text (or pass one mode string for all; default ``truncate(16)``).
    Columns whose mode is ``none`` are left out of the rows (dense store), so the result covers exactly
    :func:`covered_columns`; with every column ``none`` it is the empty stats (empty rows, no counts).
    """
    modes = [_resolve(mode_for, f) for f in fields]
    kept = [(f, m) for f, m in zip(fields, modes) if m.has_stats]
    if not kept:
        return SimpleStats.empty()
    return _stats_over(_summaries(table), [f for f, _ in kept], [m for _, m in kept])


def covered_columns(
    fields: Sequence[DataField], mode_for: Callable[[DataField], str] | str | None = None
) -> tuple[str, ...] | None:
    """``_VALUE_STATS_COLS`` for :func:`collect_stats`' result: None when every column has stats, else the
    names of the covered columns in order (``()`` when none is)."""
    modes = [_resolve(mode_for, f) for f in fields]
    if all(m.has_stats for m in modes):
        return None
    return tuple(f.name for f, m in zip(fields, modes) if m.has_stats)


def collect_value_stats(
    table: pa.Table | Summarize,
    fields: Sequence[DataField],
    options: Mapping[str, str],
    mode_for: Callable[[DataField], str] | None = None,
) -> tuple[SimpleStats, tuple[str, ...] | None]:
    """Value stats and ``_VALUE_STATS_COLS`` of a data file, honouring the table options.

    Default (dense store): only columns with stats are stored and listed (None = all of them). With
    ``metadata.stats-dense-store = false`` every column is present (``none`` columns as NULL min/max and
    NULL null count) and the list is None. ``table`` is the file's data, or a :data:`Summarize` of it.
    """
    resolver = mode_for or mode_resolver(options, fields)
    dense = CoreOptions(options).get(METADATA_STATS_DENSE_STORE)
    if dense:
        return collect_stats(table, fields, resolver), covered_columns(fields, resolver)
    modes = [_resolve(resolver, f) for f in fields]
    if not fields:
        return SimpleStats.empty(), None
    return _stats_over(_summaries(table), fields, modes), None
