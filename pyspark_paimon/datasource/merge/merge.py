"""Vectorised merge functions of primary-key tables (Java's `SortMergeReaderWithMinHeap`, `CoreOptions.MergeEngine`).

Java merges the records of one key one at a time (``SortMergeReaderWithMinHeap`` feeding a
``MergeFunction``). We get the same answer column-wise: the input is one Arrow table sorted oldest-first
within each key (:func:`sort_for_merge`), the key groups are found by comparing each row with the next, and
every per-group decision ("the last row", "the last non-null value", "the sum") is a numpy ``reduceat`` over
row indices or an Arrow hash aggregation. No Python code runs per row or per key: a bucket can hold
millions of keys.

Input columns: the key columns, the value columns, ``_SEQUENCE_NUMBER`` (int64) and ``_VALUE_KIND`` (int8:
0 = +I, 1 = -U, 2 = +U, 3 = -D). Output: the same columns, one row per surviving key, in key order.

The reader calls :func:`merge_sorted` with ``drop_retracts=True`` (Java's ``DropDeleteReader``); the writer
calls it with ``drop_retracts=False`` to fold duplicate keys of a write buffer, keeping a ``-D`` result so
the delete still shadows older files. Both go through the same engines, as Java's write buffer and readers
share one ``MergeFunction``, and both apply Java's ``ReducerMergeFunctionWrapper``: a key with a single
record keeps it unmerged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.datasource.merge.checked_math import (
    CheckedArithmeticError,
    int_range,
    segment_ids,
    segment_products,
    segment_sums,
)
from pyspark_paimon.errors import OptionError, PaimonError, SchemaError
from pyspark_paimon.metadata.schema.options import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    FIELD_AGGREGATE_FUNCTION,
    FIELD_DISTINCT,
    FIELD_IGNORE_RETRACT,
    FIELD_LIST_AGG_DELIMITER,
    FIELD_SEQUENCE_GROUP,
    FIELDS_DEFAULT_AGGREGATE_FUNCTION,
    MERGE_ENGINES,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    REMOVED_AGGREGATE_FUNCTIONS,
    CoreOptions,
    removed_aggregate_function_error,
    validate_merge_options,
)
from pyspark_paimon.metadata.types.arrow import cast_array

__all__ = [
    "SEQUENCE_NUMBER",
    "VALUE_KIND",
    "KIND_INSERT",
    "KIND_UPDATE_BEFORE",
    "KIND_UPDATE_AFTER",
    "KIND_DELETE",
    "adjacent_differ",
    "keys_strictly_increasing",
    "MERGE_ENGINES",
    "AGGREGATE_FUNCTIONS",
    "MergeError",
    "sort_for_merge",
    "merge_sorted",
    "is_retract",
    "deduplicated_rows",
]

SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KIND_INSERT = 0
KIND_UPDATE_BEFORE = 1
KIND_UPDATE_AFTER = 2
KIND_DELETE = 3

#: Aggregate functions of the aggregation engine that we implement (Java names; ``first_not_null_value``
#: is Java's legacy spelling of ``first_non_null_value``).
AGGREGATE_FUNCTIONS = (
    "sum",
    "product",
    "min",
    "max",
    "last_value",
    "last_non_null_value",
    "first_value",
    "first_non_null_value",
    "first_not_null_value",
    "bool_and",
    "bool_or",
    "listagg",
)
# Functions whose retraction Java defines (sum subtracts, product divides, last_value / last_non_null_value
# clear the value). Every other function refuses -U/-D input unless the field ignores retractions.
_RETRACTABLE = frozenset({"sum", "product", "last_value", "last_non_null_value"})

_TEMP_IS_ADD = "__paimon_is_add__"
_TEMP_SORT = "__paimon_sort_"  # sort_for_merge's copies of the sort columns, numbered (names may repeat)
_TEMP_NULL_RANK = "__paimon_null_rank_"
_TEMP_GROUP = "__paimon_group__"


class MergeError(PaimonError):
    """The records of a key cannot be merged with the table's merge engine (e.g. a delete reached an
    engine that refuses deletes). The message names the option that would allow it."""


# ------------------------------------------------------------------------------------------------------
# Sorting
# ------------------------------------------------------------------------------------------------------
def is_retract(kinds: np.ndarray) -> np.ndarray:
    """Mask of -U/-D row kinds."""
    return (kinds == KIND_UPDATE_BEFORE) | (kinds == KIND_DELETE)


def _kinds(table: pa.Table) -> np.ndarray:
    if VALUE_KIND not in table.column_names:
        raise SchemaError(
            f"Merging needs the '{VALUE_KIND}' column; the input has only {', '.join(table.column_names)}."
        )
    col = table.column(VALUE_KIND)
    if col.null_count:
        raise SchemaError(f"Column '{VALUE_KIND}' holds NULLs; the data file is corrupt.")
    return np.asarray(col.to_numpy(), dtype=np.int8)


def sort_for_merge(
    table: pa.Table,
    key_names: Sequence[str],
    seq_fields: Sequence[str] = (),
    descending_seq: bool = False,
    rank_column: str | None = None,
) -> pa.Table:
    """Stable sort into Java's merge order: key ascending, then the user sequence fields (ascending, or
    descending with ``sequence.field.sort-order = descending``; NULLs always first, i.e. oldest), then
    ``_SEQUENCE_NUMBER``, then retractions before additions. Rows that tie on everything keep their input
    order, so concatenating files oldest-first keeps the older file's row first.

    ``rank_column`` (chain-table reads) is an ascending sort key between the sequence fields and
    ``_SEQUENCE_NUMBER``: sequence numbers are branch-local, so among rows tied on the user sequence fields
    the file's rank (anchor before deltas, deltas in partition order) decides which is newer."""
    if table.num_rows <= 1:
        return table
    for name in [*key_names, *seq_fields, *([rank_column] if rank_column else [])]:
        if name not in table.column_names:
            raise SchemaError(
                f"Cannot sort for merging: column '{name}' is missing (columns: {', '.join(table.column_names)})."
            )
    kinds = _kinds(table)
    if keys_strictly_increasing(table, key_names):
        return table
    if not seq_fields and rank_column is None:
        indices = _integer_key_order(table, key_names, kinds)
        if indices is not None:
            return table.take(indices)
    seq_order = "descending" if descending_seq else "ascending"
    # NULL sorts first in both directions (treated as oldest): a column holding NULLs sorts after its
    # _nulls_first_rank. The columns are copied under numbered names so no user column name can collide.
    ordered = (
        [(k, "ascending") for k in key_names]
        + [(s, seq_order) for s in seq_fields]
        + ([(rank_column, "ascending")] if rank_column else [])
        + [(SEQUENCE_NUMBER, "ascending")]
    )
    columns: dict[str, pa.ChunkedArray | pa.Array] = {}
    sort_keys: list[tuple[str, str]] = []
    for i, (name, order) in enumerate(ordered):
        col = table.column(name)
        rank = _nulls_first_rank(col)
        if rank is not None:
            columns[f"{_TEMP_NULL_RANK}{i}"] = rank
            sort_keys.append((f"{_TEMP_NULL_RANK}{i}", "ascending"))
        columns[f"{_TEMP_SORT}{i}"] = col
        sort_keys.append((f"{_TEMP_SORT}{i}", order))
    columns[_TEMP_IS_ADD] = pa.array(~is_retract(kinds))
    sort_keys.append((_TEMP_IS_ADD, "ascending"))
    indices = pc.sort_indices(pa.table(columns), options=pc.SortOptions(sort_keys=sort_keys))
    return table.take(indices)


def keys_strictly_increasing(table: pa.Table, key_names: Sequence[str]) -> bool:
    """Whether every row's key is greater than the previous row's, i.e. the table is already in merge order
    (the key alone decides it). Rows often arrive so: a sorted source, one bucket of a key-ordered write, a
    single data file. Checking costs one vectorised comparison per key column, against a full sort.

    Leading key columns holding one value throughout (a partition's columns in a bucket) are skipped; the
    first other column must rise strictly. NULL and NaN never pass (their comparisons are not an order)."""
    for name in key_names:
        col = table.column(name)
        if col.null_count:
            return False
        later, earlier = col.slice(1), col.slice(0, len(col) - 1)
        try:
            if bool(pc.all(pc.equal(later, earlier)).as_py()):
                continue
            return bool(pc.all(pc.greater(later, earlier)).as_py())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            return False  # a type Arrow cannot compare: let the sort decide
    return False


def _integer_key_order(table: pa.Table, key_names: Sequence[str], kinds: np.ndarray) -> np.ndarray | None:
    """The merge order (key, ``_SEQUENCE_NUMBER``, additions last) of a table with one integer key column and
    no NULL keys, computed with numpy; None when the table is not of that shape.

    The input is usually a concatenation of sorted files, oldest first, so a stable argsort of the key (a
    merge of the files' runs) mostly leaves each key's records in sequence order already: that is checked,
    and only otherwise is the full three-key sort run. Both are several times cheaper than Arrow's
    multi-column sort, which compares row by row."""
    if len(key_names) != 1:
        return None
    key_col = table.column(key_names[0])
    if key_col.null_count or not (pa.types.is_integer(key_col.type) or pa.types.is_date(key_col.type)):
        return None
    keys = key_col.to_numpy()
    seq = table.column(SEQUENCE_NUMBER).to_numpy()
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    rises = np.diff(seq[order]) > 0
    if bool((rises | (sorted_keys[1:] != sorted_keys[:-1])).all()):
        return order
    return np.lexsort((~is_retract(kinds), seq, keys))


def deduplicated_rows(table: pa.Table, key_names: Sequence[str], options: Mapping[str, str]) -> pa.Table | None:
    """The ``deduplicate`` merge of ``table`` (unsorted; any order of its files) with retractions dropped, as
    :func:`sort_for_merge` + :func:`merge_sorted` give it, or None when the table is not of the shape this
    shortcut handles (one integer key column, no sequence fields, no ``ignore-delete``).

    The winner of each key is its last record in merge order, so only its index is needed: the rows are
    gathered once, winners only, instead of sorting the whole table and then picking from it."""
    opts = CoreOptions(options)
    if opts.merge_engine != "deduplicate" or opts.sequence_fields or opts.ignore_delete or table.num_rows == 0:
        return None
    validate_merge_options(options, creating=False, engine="deduplicate")
    kinds = _kinds(table)
    order = _integer_key_order(table, key_names, kinds)
    if order is None:
        return None
    sorted_keys = table.column(key_names[0]).to_numpy()[order]
    last = np.r_[sorted_keys[1:] != sorted_keys[:-1], True]
    winners = order[last]
    return table.take(winners[~is_retract(kinds[winners])])


def _nulls_first_rank(col: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """Per row 0 for NULL, 1 for NaN, 2 for any other value; None when the column holds neither.

    Java's merge order puts NULL sequence values first (oldest) in both sort directions. Arrow can say so
    per sort key only from pyarrow 25 on (before, ``null_placement`` is one setting for all keys, and from 25
    on that setting is deprecated), so the placement is made explicit: this rank sorts ascending just before
    its column, which then sorts only among equal ranks and never meets a NULL. NaN gets its own rank because
    Arrow places NaN next to NULL (after it, with NULLs first), and the order must stay exactly the one every
    pyarrow version gives. Columns without NULL or NaN (``_SEQUENCE_NUMBER`` and non-float keys always, sequence
    fields nearly always) get no helper column and cost nothing extra."""
    has_nan = pa.types.is_floating(col.type) and bool(pc.any(pc.is_nan(col)).as_py())
    if not col.null_count and not has_nan:
        return None
    rank = pc.if_else(pc.is_null(col), pa.scalar(0, pa.int8()), pa.scalar(2, pa.int8()))
    if has_nan:
        rank = pc.if_else(pc.fill_null(pc.is_nan(col), False), pa.scalar(1, pa.int8()), rank)
    return rank


# ------------------------------------------------------------------------------------------------------
# Key groups
# ------------------------------------------------------------------------------------------------------
def _is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def adjacent_differ(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``out[i]``: whether row ``i + 1`` of ``column`` differs from row ``i``. NULL vs non-NULL differ; NULL vs
    NULL (and NaN vs NaN, as Java compares) are equal. Types Arrow cannot compare (nested) count as differing."""
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(col)
    if n < 2:
        return np.zeros(0, dtype=bool)
    a, b = col.slice(0, n - 1), col.slice(1)
    try:
        differ = pc.fill_null(pc.not_equal(a, b), False)
    except pa.ArrowNotImplementedError:
        return np.ones(n - 1, dtype=bool)
    differ = pc.or_(differ, pc.xor(pc.is_null(a), pc.is_null(b)))
    if _is_float(col.type):
        both_nan = pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)
        differ = pc.and_(differ, pc.invert(both_nan))
    return np.asarray(differ.to_numpy(zero_copy_only=False), dtype=bool)


@dataclass
class _Groups:
    """Key groups of a sorted table, as row-index arithmetic."""

    n: int
    starts: np.ndarray  # first row index of each group
    ends: np.ndarray  # last row index of each group
    gid: np.ndarray  # group id of each row

    @property
    def count(self) -> int:
        return len(self.starts)

    @classmethod
    def of(cls, table: pa.Table, key_names: Sequence[str]) -> "_Groups":
        n = table.num_rows
        boundary = np.zeros(n, dtype=bool)
        if n:
            boundary[0] = True
        if n > 1:
            for name in key_names:
                boundary[1:] |= adjacent_differ(table.column(name))
        starts = np.flatnonzero(boundary)
        ends = np.empty_like(starts)
        if len(starts):
            ends[:-1] = starts[1:] - 1
            ends[-1] = n - 1
        gid = np.cumsum(boundary) - 1
        return cls(n, starts, ends, gid)

    @classmethod
    def from_sizes(cls, sizes: np.ndarray) -> "_Groups":
        """Groups of consecutive rows with the given sizes (all > 0)."""
        ends = np.cumsum(sizes) - 1
        starts = ends - sizes + 1
        n = int(ends[-1]) + 1 if len(ends) else 0
        return cls(n, starts, ends, np.repeat(np.arange(len(sizes)), sizes))

    def last_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group: the index of the last row where ``mask`` holds, or -1."""
        if not self.count:
            return np.empty(0, dtype=np.int64)
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), -1)
        return np.maximum.reduceat(idx, self.starts)

    def first_where(self, mask: np.ndarray) -> np.ndarray:
        """Per group: the index of the first row where ``mask`` holds, or -1."""
        if not self.count:
            return np.empty(0, dtype=np.int64)
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), self.n)
        first = np.minimum.reduceat(idx, self.starts)
        return np.where(first >= self.n, -1, first)

    def broadcast(self, per_group: np.ndarray) -> np.ndarray:
        """A per-group value repeated onto each row of the group."""
        return per_group[self.gid]


def _take_or_null(column: pa.ChunkedArray | pa.Array, indices: np.ndarray) -> pa.Array:
    """``column[indices]`` with NULL where the index is -1."""
    idx = pa.array(indices.astype(np.int64), mask=indices < 0)
    result = column.take(idx)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return result


def _valid(column: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)


def _mask_to_null(column: pa.ChunkedArray, keep: np.ndarray) -> pa.ChunkedArray | pa.Array:
    """``column`` with NULL wherever ``keep`` is False."""
    if keep.all():
        return column
    return pc.if_else(pa.array(keep), column, pa.scalar(None, type=column.type))


def _hash_aggregate(
    groups: _Groups, values: pa.ChunkedArray | pa.Array, func: str, opts: pc.FunctionOptions | None
) -> pa.Array:
    """Per-group Arrow hash aggregation of ``values`` (one result per group, in group order)."""
    tbl = pa.table({_TEMP_GROUP: pa.array(groups.gid, pa.int64()), "v": values})
    agg = tbl.group_by(_TEMP_GROUP, use_threads=False).aggregate([("v", func, opts)])
    order = pc.sort_indices(agg.column(_TEMP_GROUP))
    result = agg.column(f"v_{func}").take(order)
    return result.combine_chunks() if isinstance(result, pa.ChunkedArray) else result


def _with_room(values: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Decimal ``values`` at the widest precision of their width (scale kept), others as they are. Arrow's sum
    and product of decimals keep the input's precision (sum: before pyarrow 19), so a result that outgrew its
    column would pass the cast back unchecked, as an invalid value; widened, :func:`_to_column_type` checks it
    on every pyarrow version."""
    t = values.type
    if pa.types.is_decimal128(t):
        return values.cast(pa.decimal128(38, t.scale))
    if pa.types.is_decimal256(t):
        return values.cast(pa.decimal256(76, t.scale))
    return values


def _to_column_type(result: pa.Array, target: pa.DataType, field: str, func: str) -> pa.Array:
    """An aggregation's ``result`` back in its column's type ``target``."""
    return cast_array(
        result,
        target,
        lambda reason: MergeError(
            f"Aggregate function '{func}' of column '{field}' produced a value that does not fit "
            f"the column type {target} ({reason}). Widen the column type."
        ),
    )


# ------------------------------------------------------------------------------------------------------
# Engines
# ------------------------------------------------------------------------------------------------------
@dataclass
class _Result:
    rows: np.ndarray  # per group: the row index supplying keys, sequence number and unmerged columns
    kinds: np.ndarray  # per group: the merged row kind
    keep: np.ndarray  # per group: whether the key produces a row at all
    values: dict[str, pa.Array]  # merged value columns (one entry per group)


def _deduplicate(table: pa.Table, groups: _Groups, kinds: np.ndarray) -> _Result:
    rows = groups.ends
    return _Result(rows, kinds[rows], np.ones(groups.count, dtype=bool), {})


def _first_row(table: pa.Table, groups: _Groups, kinds: np.ndarray) -> _Result:
    # A single record of a key never reaches Java's merge function, so only keys with several records refuse
    # retractions.
    several = groups.broadcast(groups.ends > groups.starts)
    if (is_retract(kinds) & several).any():
        raise MergeError(
            "The first-row merge engine cannot accept DELETE/UPDATE_BEFORE records. Set the table "
            "option 'ignore-delete' = 'true' to ignore them."
        )
    rows = groups.starts
    return _Result(rows, kinds[rows], np.ones(groups.count, dtype=bool), {})


def _partial_update(
    table: pa.Table, groups: _Groups, kinds: np.ndarray, options: CoreOptions, value_names: Sequence[str]
) -> _Result:
    """Java's ``PartialUpdateMergeFunction`` without sequence groups.

    The row starts empty and each addition overwrites the fields it sets (non-NULL). A retraction is an
    error unless ``ignore-delete`` (skip it) or ``partial-update.remove-record-on-delete`` (a DELETE
    removes the row, an UPDATE_BEFORE is skipped) is set. Java's ``initRow`` seeds the whole row, NULLs
    included, from a retraction: from the key's first record if it is one (even when retractions are
    ignored), and from every DELETE that removes the row. So additions after a DELETE overwrite the
    DELETE's values field by field; they do not start from NULLs. The key's result is a DELETE when its last
    record removed the row or when it had no addition at all."""
    retract = is_retract(kinds)
    remove_on_delete = options.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
    ignore_delete = options.ignore_delete
    if retract.any() and not (remove_on_delete or ignore_delete):
        raise MergeError(
            "The partial-update merge engine cannot accept DELETE/UPDATE_BEFORE records by default. Set the table "
            "option 'ignore-delete' = 'true' to ignore them, or 'partial-update.remove-record-on-delete' = "
            "'true' to let a DELETE remove the whole record."
        )
    adds = ~retract
    seed = np.zeros(groups.n, dtype=bool)
    seed[groups.starts] = retract[groups.starts]
    if remove_on_delete:
        seed |= kinds == KIND_DELETE
    seed_row = groups.last_where(seed)  # -1: the row starts empty
    eligible = adds & (np.arange(groups.n) > groups.broadcast(seed_row))
    last_add = groups.last_where(adds)
    has_add = last_add >= 0
    removed = (kinds[groups.ends] == KIND_DELETE) if remove_on_delete else np.zeros(groups.count, dtype=bool)
    out_kinds = np.where(removed | ~has_add, KIND_DELETE, KIND_INSERT).astype(np.int8)
    values: dict[str, pa.Array] = {}
    for name in value_names:
        col = table.column(name)
        last = groups.last_where(eligible & _valid(col))
        values[name] = _take_or_null(col, np.where(last >= 0, last, seed_row))
    # The sequence number is that of the last record Java did not skip (ignored retractions are skipped).
    rows = np.where(has_add, last_add, groups.ends) if ignore_delete else groups.ends
    return _Result(rows, out_kinds, np.ones(groups.count, dtype=bool), values)


def _agg_function(options: CoreOptions, name: str) -> str:
    """The column's aggregate function, else the table's default one, else Java's ``last_non_null_value``."""
    own = options.field(name, FIELD_AGGREGATE_FUNCTION)
    func = own or options.get(FIELDS_DEFAULT_AGGREGATE_FUNCTION) or "last_non_null_value"
    if func in REMOVED_AGGREGATE_FUNCTIONS:
        key = FIELD_AGGREGATE_FUNCTION.of(name).key if own else FIELDS_DEFAULT_AGGREGATE_FUNCTION.key
        raise removed_aggregate_function_error(func, name, key)
    if func not in AGGREGATE_FUNCTIONS:
        raise OptionError(
            f"Aggregate function '{func}' of column '{name}' is not supported by pyspark-paimon "
            f"(supported: {', '.join(AGGREGATE_FUNCTIONS)}). Change "
            f"'fields.{name}.aggregate-function' or use Paimon (Java) for this table."
        )
    return "first_non_null_value" if func == "first_not_null_value" else func


def _is_blank(col: pa.ChunkedArray) -> np.ndarray:
    """Java ``StringUtils.isBlank``: empty or whitespace only (NULL counts as not blank here)."""
    blank = pc.or_(pc.equal(pc.utf8_length(col), 0), pc.utf8_is_space(col))
    return np.asarray(pc.fill_null(blank, False).to_numpy(zero_copy_only=False), dtype=bool)


@dataclass
class _AggRows:
    """The row roles of one aggregation merge, shared by every column.

    Java's ``AggregateMergeFunction`` folds a key's records into one accumulator row. With
    ``aggregation.remove-record-on-delete`` a DELETE replaces that row by the DELETE's own values
    (``initRow``) and folding goes on from there, so a key's records split into *segments*: the first starts
    at the key's first record, each later one at such a DELETE (an *init* row). The result is the last
    segment's accumulator; the earlier segments still run (Java fails on an overflow or an unsupported
    retraction anywhere)."""

    groups: _Groups
    retract: np.ndarray  # -U, and -D unless it is an init row
    init: np.ndarray  # -D rows that re-initialise the row
    seg_start: np.ndarray  # rows starting a segment
    last_seg_row: np.ndarray  # per group: first row of its last segment
    in_last_segment: np.ndarray  # per row: inside its key's last segment
    key_names: Sequence[str]

    @classmethod
    def of(cls, groups: _Groups, kinds: np.ndarray, remove_on_delete: bool, key_names: Sequence[str]) -> "_AggRows":
        init = (kinds == KIND_DELETE) if remove_on_delete else np.zeros(groups.n, dtype=bool)
        seg_start = init.copy()
        seg_start[groups.starts] = True
        last_seg_row = np.maximum(groups.last_where(init), groups.starts)
        in_last = np.arange(groups.n) >= groups.broadcast(last_seg_row)
        return cls(groups, is_retract(kinds) & ~init, init, seg_start, last_seg_row, in_last, key_names)


def _key_text(table: pa.Table, key_names: Sequence[str], row: int) -> str:
    """``k1=1, k2='x'`` for the key of ``row`` (one error message, not a data path)."""
    return ", ".join(f"{k}={table.column(k)[row].as_py()!r}" for k in key_names)


def _values_numpy(col: pa.ChunkedArray, valid: np.ndarray) -> np.ndarray:
    """The column as a numpy array; NULL slots hold 0 (callers mask them)."""
    filled = pc.fill_null(col, pa.scalar(0, col.type)) if col.null_count else col
    return np.asarray(
        filled.to_numpy() if isinstance(filled, pa.Array) else filled.combine_chunks().to_numpy(zero_copy_only=False)
    )


def _arithmetic_error(
    table: pa.Table, rows: _AggRows, name: str, func: str, target: pa.DataType, fault: CheckedArithmeticError
) -> MergeError:
    key = _key_text(table, rows.key_names, fault.row)
    if "zero" in fault.reason:
        fix = (
            f"A retraction of 0 cannot be undone by division; set 'fields.{name}.ignore-retract' = 'true' to "
            "ignore retractions for this column"
        )
    else:
        fix = (
            "Java Paimon raises ArithmeticException here too. Store the column as a wider type, e.g. BIGINT or "
            "DECIMAL(38, 0), and rewrite the table"
        )
    return MergeError(
        f"Aggregate function '{func}' of column '{name}' ({target}) failed for key ({key}): {fault.reason}. {fix}."
    )


def _checked_sum(
    table: pa.Table, rows: _AggRows, col: pa.ChunkedArray, name: str, valid: np.ndarray, active: np.ndarray
) -> pa.Array:
    """Integer ``sum`` with Java's exact arithmetic: every step of the fold (add, subtract on retraction,
    restart from a DELETE's value) must stay in the column type's range."""
    groups = rows.groups
    values = _values_numpy(col, valid).astype(np.int64)
    signs = np.where(valid & active, np.where(rows.retract, -1, 1), 0).astype(np.int8)
    try:
        running = segment_sums(values, signs, rows.seg_start, int_range(col.type.to_pandas_dtype()))
    except CheckedArithmeticError as fault:
        raise _arithmetic_error(table, rows, name, "sum", col.type, fault) from None
    # NULL until the last segment sees a value (Java's accumulator starts NULL, and NULL inputs are skipped).
    has = groups.last_where(signs != 0) >= rows.last_seg_row
    return pa.array(running[groups.ends], type=col.type, mask=~has)


def _checked_product(
    table: pa.Table, rows: _AggRows, col: pa.ChunkedArray, name: str, valid: np.ndarray, active: np.ndarray
) -> pa.Array:
    """Integer or floating ``product`` as Java folds it: multiply by each added value, divide by each retracted
    one (integer division truncates), restart from a DELETE's value; integers raise where a step overflows."""
    groups = rows.groups
    values = _values_numpy(col, valid)
    factor = valid & ~rows.retract
    divisor = valid & rows.retract & active
    rng = int_range(values.dtype) if pa.types.is_integer(col.type) else None
    try:
        acc, has = segment_products(values, factor, divisor, rows.seg_start, rng)
    except CheckedArithmeticError as fault:
        raise _arithmetic_error(table, rows, name, "product", col.type, fault) from None
    seg, _ = segment_ids(rows.seg_start)
    last = seg[groups.ends]
    return pa.array(acc[last].astype(values.dtype), type=col.type, mask=~has[last])


def _aggregate_field(table: pa.Table, rows: _AggRows, name: str, func: str, options: CoreOptions) -> pa.Array:
    groups = rows.groups
    retract = rows.retract
    col = table.column(name)
    target = col.type
    has_retract = bool(retract.any())
    if has_retract and options.field(name, FIELD_IGNORE_RETRACT):
        active = ~retract  # retractions are no-ops for this field (Java FieldIgnoreRetractAgg)
    elif has_retract and func not in _RETRACTABLE:
        raise MergeError(
            f"Aggregate function '{func}' of column '{name}' does not support retraction "
            f"(UPDATE_BEFORE/DELETE records). Set 'fields.{name}.ignore-retract' = 'true' to ignore "
            "retractions for this column. ('ignore-delete' only drops retractions from new writes: "
            "Java still applies those already in data files.)"
        )
    else:
        active = np.ones(groups.n, dtype=bool)
    valid = _valid(col)
    in_last = rows.in_last_segment
    # Values folded into the result: additions and the init row of the last segment.
    adds = ~retract & in_last
    skip_nulls = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)

    if func == "sum":
        if pa.types.is_integer(target):
            return _checked_sum(table, rows, col, name, valid, active)
        signed = col
        if has_retract and (active & retract).any():
            try:
                signed = pc.if_else(pa.array(retract), pc.negate_checked(col), col)
            except pa.ArrowNotImplementedError as exc:
                raise MergeError(
                    f"Aggregate function 'sum' does not support column '{name}' of type {target}."
                ) from exc
        try:
            result = _hash_aggregate(groups, _with_room(_mask_to_null(signed, active & in_last)), "sum", skip_nulls)
        except pa.ArrowNotImplementedError as exc:
            raise MergeError(f"Aggregate function 'sum' does not support column '{name}' of type {target}.") from exc
        return _to_column_type(result, target, name, func)
    if func == "product":
        if pa.types.is_integer(target) or pa.types.is_floating(target):
            return _checked_product(table, rows, col, name, valid, active)
        if has_retract and (active & retract).any():
            raise MergeError(
                f"Retracting a product of DECIMAL column '{name}' ({target}) is not supported by "
                f"pyspark-paimon. Set 'fields.{name}.ignore-retract' = 'true' to ignore retractions for "
                "this column, or use Paimon (Java) for this table."
            )
        try:
            result = _hash_aggregate(groups, _with_room(_mask_to_null(col, adds)), "product", skip_nulls)
        except pa.ArrowNotImplementedError as exc:
            raise MergeError(
                f"Aggregate function 'product' does not support column '{name}' of type {target}."
            ) from exc
        return _to_column_type(result, target, name, func)
    if func in ("min", "max"):
        try:
            result = _hash_aggregate(groups, _mask_to_null(col, adds), func, skip_nulls)
        except pa.ArrowNotImplementedError as exc:
            raise MergeError(f"Aggregate function '{func}' does not support column '{name}' of type {target}.") from exc
        return _to_column_type(result, target, name, func)
    if func in ("bool_and", "bool_or"):
        if not pa.types.is_boolean(target):
            raise MergeError(f"Aggregate function '{func}' needs a BOOLEAN column; '{name}' is {target}.")
        result = _hash_aggregate(groups, _mask_to_null(col, adds), "all" if func == "bool_and" else "any", skip_nulls)
        return _to_column_type(result, target, name, func)
    if func in ("first_value", "first_non_null_value"):
        # Java's aggregator remembers that it took a value (a flag a DELETE's re-initialisation does not
        # reset): after an init row, a later value is taken only if the key never had one before.
        taking = ~retract & ~rows.init & (valid if func == "first_non_null_value" else True)
        first = groups.first_where(taking)
        init_row = rows.last_seg_row
        from_init = rows.init[init_row] & ((first < 0) | (first < init_row))
        return _take_or_null(col, np.where(from_init, init_row, first))
    if func in ("last_value", "last_non_null_value"):
        # A retraction clears the value (last_non_null_value: only a non-NULL retraction does); an init row
        # sets it, NULL included.
        considered = active if func == "last_value" else (active & valid) | rows.init
        last = groups.last_where(considered)
        cleared = np.zeros(len(last), dtype=bool)
        hit = last >= 0
        cleared[hit] = retract[last[hit]]
        return _take_or_null(col, np.where(cleared, -1, last))
    if func == "listagg":
        if not (pa.types.is_string(target) or pa.types.is_large_string(target)):
            raise MergeError(f"Aggregate function 'listagg' needs a string column; '{name}' is {target}.")
        if options.field(name, FIELD_DISTINCT):
            raise OptionError(
                f"'fields.{name}.distinct' = 'true' (distinct listagg) is not supported by "
                "pyspark-paimon; remove the option or use Paimon (Java) for this table."
            )
        delimiter = options.field(name, FIELD_LIST_AGG_DELIMITER)
        chosen = np.flatnonzero(adds & valid & ~_is_blank(col))
        counts = np.bincount(groups.gid[chosen], minlength=groups.count)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        items = col.take(pa.array(chosen, pa.int64()))
        items = items.combine_chunks() if isinstance(items, pa.ChunkedArray) else items
        lists = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items)
        joined = _to_column_type(pc.binary_join(lists, delimiter), target, name, func)
        # Nothing to join: NULL, or the init row's own (NULL or blank) value.
        init_row = rows.last_seg_row
        fallback = _take_or_null(col, np.where(rows.init[init_row], init_row, -1))
        return pc.if_else(pa.array(counts > 0), joined, fallback)
    raise OptionError(f"Aggregate function '{func}' of column '{name}' is not supported.")  # pragma: no cover


def _aggregation(
    table: pa.Table,
    groups: _Groups,
    kinds: np.ndarray,
    options: CoreOptions,
    value_names: Sequence[str],
    primary_keys: Sequence[str],
    key_names: Sequence[str],
) -> _Result:
    remove_on_delete = options.get(AGGREGATION_REMOVE_RECORD_ON_DELETE)
    rows = _AggRows.of(groups, kinds, remove_on_delete, key_names)
    values: dict[str, pa.Array] = {}
    pk = set(primary_keys)
    seq_fields = set(options.sequence_fields)
    for name in value_names:
        if name in pk:
            continue  # primary key fields are never aggregated
        # Java (AggregateMergeFunction.getAggFuncName): a sequence.field column is never aggregated; it takes
        # last_value, i.e. the newest record's value, so the merged row carries the winner's sequence value.
        func = "last_value" if name in seq_fields else _agg_function(options, name)
        values[name] = _aggregate_field(table, rows, name, func, options)
    # DELETE when the key's last record is a DELETE that removed the row, else INSERT.
    out_kinds = np.where(rows.init[groups.ends], KIND_DELETE, KIND_INSERT).astype(np.int8)
    return _Result(groups.ends, out_kinds, np.ones(groups.count, dtype=bool), values)


# ------------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------------
def merge_sorted(
    table: pa.Table,
    key_names: Sequence[str],
    engine: str,
    options: Mapping[str, str],
    value_names: Sequence[str],
    drop_retracts: bool = True,
    *,
    primary_keys: Sequence[str] = (),
) -> pa.Table:
    """Merge the records of each key of ``table`` (sorted by :func:`sort_for_merge`) into one.

    ``key_names`` identify a key (the trimmed primary key). ``value_names`` are the columns the engine
    merges (partial-update keeps each one's last non-NULL value, aggregation applies each one's function);
    every other column, and every column under deduplicate/first-row, comes from the record that decides
    the key (the newest one; the oldest for first-row). ``primary_keys`` names further columns that are
    never aggregated (the full primary key incl. partition fields).

    The result has the input's columns, one row per key in key order; ``_VALUE_KIND`` is the merged kind
    and ``_SEQUENCE_NUMBER`` that of the deciding record. A key with a single record keeps that record
    unmerged (Java's ``ReducerMergeFunctionWrapper``). With ``drop_retracts`` the keys whose result is a
    retraction (``-U``/``-D``) are removed.
    """
    engine = str(engine).strip().lower()
    if engine not in MERGE_ENGINES:
        raise OptionError(
            f"Option 'merge-engine' = '{engine}' is not supported; use one of {', '.join(MERGE_ENGINES)}."
        )
    for name in [*key_names, *value_names, SEQUENCE_NUMBER]:
        if name not in table.column_names:
            raise SchemaError(f"Cannot merge: column '{name}' is missing (columns: {', '.join(table.column_names)}).")
    if table.num_rows == 0:
        return table
    validate_merge_options(options, creating=False, engine=engine)
    opts = CoreOptions(options)
    seq_groups = opts.field_keys(FIELD_SEQUENCE_GROUP)
    if seq_groups and engine in ("partial-update", "aggregation"):
        raise OptionError(
            f"Sequence groups ({', '.join(sorted(seq_groups))}) are not supported by pyspark-paimon; "
            "read and write this table with Paimon (Java) instead."
        )
    kinds = _kinds(table)
    retract = is_retract(kinds)
    if engine in ("deduplicate", "first-row") and opts.ignore_delete and retract.any():
        # Their Java merge functions skip retractions under ignore-delete. Partial-update skips them itself
        # (a leading one still seeds the row); aggregation has no such switch: 'ignore-delete' only filters
        # new writes, and Java still folds the retractions data files already hold.
        table = table.filter(pa.array(~retract))
        kinds = kinds[~retract]
        if table.num_rows == 0:
            return table
    groups = _Groups.of(table, key_names)
    # Java wraps every merge function in ReducerMergeFunctionWrapper: a key with a single record keeps that
    # record as it is (kind and values) and never reaches the merge function, so nothing is aggregated, no
    # retraction is refused, and a lone -U/-D stays a retraction.
    # Deduplicate and first-row pick one of the key's records, which for a single record is that record.
    single = groups.starts == groups.ends
    if engine in ("deduplicate", "first-row"):
        single[:] = False
    multi_groups = np.flatnonzero(~single)
    if len(multi_groups) == 0:
        return _drop_retract_rows(table, kinds) if drop_retracts else table
    merged = _merge_groups(
        table, groups, multi_groups, kinds, engine, opts, value_names, primary_keys, key_names, drop_retracts
    )
    if not single.any():
        return merged[1]
    single_rows = groups.starts[single]
    if drop_retracts:
        single_rows = single_rows[~is_retract(kinds[single_rows])]
    singles = table.take(pa.array(single_rows, pa.int64()))
    # Back into key order: merged groups and single records interleave by group id.
    order = np.argsort(np.concatenate([merged[0], groups.gid[single_rows]]), kind="stable")
    return pa.concat_tables([merged[1], singles]).take(pa.array(order, pa.int64()))


def _drop_retract_rows(table: pa.Table, kinds: np.ndarray) -> pa.Table:
    keep = ~is_retract(kinds)
    return table if keep.all() else table.filter(pa.array(keep))


def _merge_groups(
    table: pa.Table,
    groups: _Groups,
    multi_groups: np.ndarray,
    kinds: np.ndarray,
    engine: str,
    opts: CoreOptions,
    value_names: Sequence[str],
    primary_keys: Sequence[str],
    key_names: Sequence[str],
    drop_retracts: bool,
) -> tuple[np.ndarray, pa.Table]:
    """Run the engine over the keys with several records (``multi_groups``): (their group ids, in output
    order, and the merged rows)."""
    if len(multi_groups) < groups.count:
        sizes = (groups.ends - groups.starts + 1)[multi_groups]
        rows = np.repeat(groups.starts[multi_groups], sizes) + (
            np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        )
        table = table.take(pa.array(rows, pa.int64()))
        kinds = kinds[rows]
        groups = _Groups.from_sizes(sizes)
    if engine == "deduplicate":
        result = _deduplicate(table, groups, kinds)
    elif engine == "first-row":
        result = _first_row(table, groups, kinds)
    elif engine == "partial-update":
        result = _partial_update(table, groups, kinds, opts, value_names)
    else:
        result = _aggregation(table, groups, kinds, opts, value_names, primary_keys, key_names)

    keep = result.keep
    if drop_retracts:
        keep = keep & ~is_retract(result.kinds)
    out = table.take(pa.array(result.rows[keep], pa.int64()))
    if result.values:
        keep_idx = pa.array(np.flatnonzero(keep), pa.int64())
        for name, merged in result.values.items():
            pos = out.schema.get_field_index(name)
            column = merged if keep.all() else merged.take(keep_idx)
            out = out.set_column(pos, out.schema.field(pos), column)
    pos = out.schema.get_field_index(VALUE_KIND)
    out = out.set_column(pos, out.schema.field(pos), pa.array(result.kinds[keep], out.schema.field(pos).type))
    return multi_groups[keep], out
