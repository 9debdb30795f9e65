"""Row orders that cluster data by some columns: z-order, Hilbert and lexicographic (Paimon's ``OrderType``).

Ordered compaction (``compact`` with ``order_strategy`` / ``order_by``), incremental clustering and clustering
writes (``clustering.columns``) all rewrite rows in one of these orders, so that each output file covers a small
box of the clustering columns and a range filter on any of them skips most files by their min/max statistics.
Why a curve: a lexicographic sort on (x, y) makes narrow x ranges but every file spans all of y; a z-order or
Hilbert order makes each file a compact box in both.

Every column becomes one or more order-preserving unsigned 64-bit words (Java's ``ZOrderByteUtils`` rules:
signed integers, dates and timestamps with the sign bit flipped, floating point by its IEEE bits, strings and
binaries by their first ``zorder.var-length-contribution`` bytes, NULL as all zero bits); the curve key is built
from those words with numpy, a bit position at a time over all rows (no per-row Python). Bit positions that are
equal in every row are left out: they cannot change the order, and a column of values in [0, 1000) then costs
10 bit steps instead of 64. The keys are a valid z-order / Hilbert order of the rows, not Java's bytes (nothing
stores them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema.table_schema import TableSchema

__all__ = ["ORDER_TYPES", "RowOrder", "row_order", "auto_strategy"]

#: Paimon's ``OrderType`` names (``none`` = no ordering).
ORDER_TYPES = ("zorder", "hilbert", "order")

_SIGN = np.uint64(1 << 63)
_ONE = np.uint64(1)


@dataclass(frozen=True)
class RowOrder:
    """An order of rows: a curve (``zorder`` / ``hilbert``) or a plain sort (``order``) over ``columns``."""

    strategy: str
    columns: tuple[str, ...]
    var_bytes: int = 8

    @staticmethod
    def of(strategy: str, columns: Sequence[str], schema: TableSchema, var_bytes: int = 8, what: str = "") -> RowOrder:
        """Check ``strategy`` and ``columns`` against ``schema`` (Java's rules: known columns, no partition
        column, at least one column); ``what`` names the caller in errors."""
        name = strategy.strip().lower()
        if name not in ORDER_TYPES:
            raise OptionError(
                f"{what}order strategy '{strategy}' is not one of {', '.join(ORDER_TYPES)} (or 'none' for no order)."
            )
        cols = tuple(c.strip() for c in columns if c.strip())
        if not cols:
            raise OptionError(f"{what}order strategy '{name}' needs at least one column to order by.")
        unknown = [c for c in cols if not schema.has_field(c)]
        if unknown:
            raise OptionError(
                f"{what}cannot order by {unknown}: not columns of the table (columns: {', '.join(schema.field_names)})."
            )
        partition = [c for c in cols if c in schema.partition_keys]
        if partition:
            raise OptionError(
                f"{what}cannot order by partition columns {partition} (every row of a partition has the same value, "
                f"so ordering by it is meaningless); order by other columns."
            )
        if var_bytes <= 0:
            raise OptionError(f"'zorder.var-length-contribution' must be positive, not {var_bytes}.")
        return RowOrder(name, cols, var_bytes)

    def indices(self, table: pa.Table) -> np.ndarray:
        """The positions of ``table``'s rows in this order (stable: equal keys keep their input order)."""
        return row_order(table, self)


def auto_strategy(strategy: str, columns: int) -> str:
    """Java's ``clusteringStrategy``: ``auto`` is ``order`` for one column, ``zorder`` below 5, else ``hilbert``."""
    name = strategy.strip().lower()
    if name != "auto":
        return name
    return "order" if columns == 1 else ("zorder" if columns < 5 else "hilbert")


def row_order(table: pa.Table, order: RowOrder) -> np.ndarray:
    """Row positions of ``table`` sorted by ``order`` (int64)."""
    n = table.num_rows
    if n <= 1:
        return np.arange(n, dtype=np.int64)
    if order.strategy == "order":
        # Spark's ascending order puts NULL first: a leading "is valid" key per column does that on every pyarrow.
        columns: dict[str, pa.ChunkedArray] = {}
        for i, c in enumerate(order.columns):
            columns[f"v{i}"] = pc.is_valid(table.column(c))
            columns[f"c{i}"] = table.column(c)
        keys = [(name, "ascending") for name in columns]
        return pc.sort_indices(pa.table(columns), sort_keys=keys).to_numpy()
    words = [_ordered_words(table.column(c).combine_chunks(), order.var_bytes) for c in order.columns]
    if order.strategy == "hilbert":
        streams = _hilbert_transpose([w[0] for w in words])
    else:
        streams = words
    key = _interleave(streams, n)
    if len(key) == 1:
        return np.argsort(key[0], kind="stable").astype(np.int64)
    return np.lexsort(key[::-1]).astype(np.int64)


# ------------------------------------------------------------------------------------------------ column keys
def _ordered_words(arr: pa.Array, var_bytes: int) -> list[np.ndarray]:
    """A column as order-preserving uint64 words (most significant first); NULL rows are all zero."""
    t = arr.type
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_dictionary(t):
        arr = arr.cast(t.value_type)
        t = arr.type
    if pa.types.is_boolean(t):
        words = [np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.uint64)]
    elif pa.types.is_integer(t) or pa.types.is_temporal(t):
        ints = arr.cast(pa.int64()) if not pa.types.is_temporal(t) else arr.view(_int_of(t)).cast(pa.int64())
        raw = np.asarray(ints.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        words = [raw.view(np.uint64) ^ _SIGN]
    elif pa.types.is_floating(t) or pa.types.is_decimal(t):
        floats = np.asarray(arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        bits = floats.view(np.uint64)
        negative = (bits & _SIGN) != 0
        words = [np.where(negative, ~bits, bits | _SIGN)]
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        words = _prefix_words(arr, var_bytes)
    else:
        raise OptionError(
            f"Cannot order rows by a column of type {t} (nested types have no order); order by atomic columns."
        )
    if valid is not None:
        words = [np.where(valid, w, np.uint64(0)) for w in words]
    return words


def _int_of(t: pa.DataType) -> pa.DataType:
    """The integer type a temporal type's values are stored as."""
    return pa.int32() if t.bit_width == 32 else pa.int64()


def _prefix_words(arr: pa.Array, var_bytes: int) -> list[np.ndarray]:
    """The first ``var_bytes`` bytes of each value, zero padded, as big-endian uint64 words."""
    binary = arr.cast(pa.large_binary()) if not pa.types.is_large_binary(arr.type) else arr
    binary = binary.fill_null(b"")
    n = len(binary)
    width = -(-var_bytes // 8) * 8
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int64, count=n + 1, offset=binary.offset * 8)
    data_buf = binary.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    matrix = np.zeros((n, width), dtype=np.uint8)
    for j in range(var_bytes):
        has = lengths > j
        if not has.any():
            break
        matrix[has, j] = data[starts[has] + j]
    as_words = matrix.view(">u8").astype(np.uint64)
    return [as_words[:, k].copy() for k in range(width // 8)]


# ------------------------------------------------------------------------------------------------ curves
def _varying_bits(words: list[np.ndarray]) -> list[tuple[np.ndarray, list[int]]]:
    """For each word of a column, the bit shifts (most significant first) whose bit differs between rows."""
    out = []
    for w in words:
        spread = int(np.bitwise_or.reduce(w ^ w[0]))
        out.append((w, [s for s in range(63, -1, -1) if (spread >> s) & 1]))
    return out


def _interleave(columns: list[list[np.ndarray]], n: int) -> list[np.ndarray]:
    """The z-order key of the columns' bit streams, as uint64 words (most significant first): bit i of every
    column in turn, then bit i + 1; a column whose bits run out drops out (Java's ``interleaveBits``). Bits
    equal in every row are skipped (they cannot change the order)."""
    streams: list[list[tuple[np.ndarray, int]]] = []
    for words in columns:
        bits: list[tuple[np.ndarray, int]] = []
        for w, shifts in _varying_bits(words):
            bits.extend((w, s) for s in shifts)
        streams.append(bits)
    longest = max((len(s) for s in streams), default=0)
    sequence = [stream[i] for i in range(longest) for stream in streams if i < len(stream)]
    if not sequence:
        return [np.zeros(n, dtype=np.uint64)]
    out = [np.zeros(n, dtype=np.uint64) for _ in range(-(-len(sequence) // 64))]
    for position, (w, shift) in enumerate(sequence):
        word, target = divmod(position, 64)
        bit = (w >> np.uint64(shift)) & _ONE
        out[word] |= bit << np.uint64(63 - target)
    return out


def _hilbert_transpose(coords: list[np.ndarray]) -> list[list[np.ndarray]]:
    """Skilling's "axes to transpose" over all rows at once: each coordinate (relative to its minimum, so only
    the bits that vary are walked) becomes one stream of the Hilbert index, which :func:`_interleave` then
    reads bit by bit, as the z-order reads raw coordinates."""
    rel = [c - c.min() for c in coords]
    bits = max(int(np.max(c)).bit_length() for c in rel)
    dims = len(rel)
    x = [c.copy() for c in rel]
    if bits == 0:
        return [[c] for c in x]
    for k in range(bits - 1, 0, -1):  # q = 2^k from the top bit down to 2
        p = np.uint64((1 << k) - 1)
        for i in range(dims):
            mask = np.negative((x[i] >> np.uint64(k)) & _ONE)  # all ones where bit k of x[i] is set
            # set: invert the low bits of x[0]; clear: exchange the low bits of x[0] and x[i]
            t = (x[0] ^ x[i]) & (p & ~mask)
            x[0] ^= (p & mask) | t
            x[i] ^= t
    for i in range(1, dims):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    for k in range(bits - 1, 0, -1):
        t ^= np.negative((x[dims - 1] >> np.uint64(k)) & _ONE) & np.uint64((1 << k) - 1)
    for i in range(dims):
        x[i] ^= t
    # Only the low `bits` bits of each transposed coordinate carry the index: shift them to the top of the word.
    shift = np.uint64(64 - bits)
    return [[c << shift] for c in x]
