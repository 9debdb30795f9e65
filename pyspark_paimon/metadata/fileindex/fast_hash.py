"""The 64-bit value hashes of Paimon's bloom-filter index (Java's ``FastHash``), column at a time.

A bloom filter written by Java and read here (or the reverse) only works if both sides hash every value to
the same 64 bits, so this module reproduces Java's rule per Paimon type:

* CHAR / VARCHAR (UTF-8 bytes) and BINARY / VARBINARY: XXH64 with seed 0 of the bytes
  (``LongHashFunction.xx()``);
* TINYINT, SMALLINT, INT, DATE, BIGINT: Thomas Wang's 64-bit integer hash of the value widened to a long;
  FLOAT / DOUBLE: the same hash of ``floatToIntBits`` / ``doubleToLongBits`` (NaN canonical);
  TIMESTAMP / TIMESTAMP_LTZ: of epoch milliseconds for precision <= 3, else epoch microseconds;
* every other type (BOOLEAN, DECIMAL, nested types) has no hash: Java refuses such a bloom filter.

Everything is vectorised with numpy on the column's Arrow buffers (uint64 arithmetic wraps, as Java's
``long`` does): XXH64 walks all values of a column stripe by stripe, so the Python loop runs once per 32
bytes of the *longest* value, never once per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyspark_paimon.metadata.types.model import AtomicType, DataType

__all__ = ["hashable", "hash_column", "xxh64", "long_hash"]

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)
_V1 = np.uint64((int(_P1) + int(_P2)) % 2**64)  # the stripe accumulators' seeds (seed 0)
_V4 = np.uint64(-int(_P1) % 2**64)

_INTEGRAL = frozenset({"TINYINT", "SMALLINT", "INT", "BIGINT", "DATE", "TIME"})
_BYTES = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY"})


def hashable(t: DataType) -> bool:
    """Whether Java's bloom filter index can hold a column of type ``t``."""
    return isinstance(t, AtomicType) and (
        t.root in _INTEGRAL or t.root in _BYTES or t.root in ("FLOAT", "DOUBLE", "TIMESTAMP", "TIMESTAMP_LTZ")
    )


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * _P2, 31) * _P1


def xxh64(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of the byte strings ``data[starts[i] : starts[i] + lengths[i]]``, as uint64."""
    n = len(starts)
    out = np.empty(n, np.uint64)
    if n == 0:
        return out
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    # every 8-byte (and 4-byte) little-endian word at every byte position, without copying: unaligned views
    words64 = np.ndarray(shape=(len(data) + 1,), dtype="<u8", buffer=padded, offset=0, strides=(1,))
    words32 = np.ndarray(shape=(len(data) + 5,), dtype="<u4", buffer=padded, offset=0, strides=(1,))
    starts = starts.astype(np.int64)
    lengths = lengths.astype(np.int64)
    stripes = lengths // 32
    # values with at least one 32-byte stripe, longest first, so each step's active rows are a prefix
    big = np.flatnonzero(stripes > 0)
    big = big[np.argsort(-stripes[big], kind="stable")]
    h = np.full(n, _P5, np.uint64)
    if len(big):
        counts = stripes[big]
        descending = -counts  # ascending, for searchsorted
        pos = starts[big]
        v1 = np.full(len(big), _V1, np.uint64)
        v2 = np.full(len(big), _P2, np.uint64)
        v3 = np.zeros(len(big), np.uint64)
        v4 = np.full(len(big), _V4, np.uint64)
        for step in range(int(counts[0])):
            m = int(np.searchsorted(descending, -step, side="left"))  # rows with more than `step` stripes
            p = pos[:m] + 32 * step
            v1[:m] = _round(v1[:m], words64[p])
            v2[:m] = _round(v2[:m], words64[p + 8])
            v3[:m] = _round(v3[:m], words64[p + 16])
            v4[:m] = _round(v4[:m], words64[p + 24])
        acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            acc = (acc ^ _round(np.zeros(len(big), np.uint64), v)) * _P1 + _P4
        h[big] = acc
    h += lengths.astype(np.uint64)
    pos = starts + stripes * 32
    rest = lengths - stripes * 32
    for k in range(3):  # up to three 8-byte words
        idx = np.flatnonzero(rest // 8 > k)
        if not len(idx):
            break
        k1 = _round(np.zeros(len(idx), np.uint64), words64[pos[idx]])
        h[idx] = _rotl(h[idx] ^ k1, 27) * _P1 + _P4
        pos[idx] += 8
    idx = np.flatnonzero(rest % 8 >= 4)
    if len(idx):
        h[idx] = _rotl(h[idx] ^ (words32[pos[idx]].astype(np.uint64) * _P1), 23) * _P2 + _P3
        pos[idx] += 4
    for k in range(3):  # up to three single bytes
        idx = np.flatnonzero(rest % 4 > k)
        if not len(idx):
            break
        h[idx] = _rotl(h[idx] ^ (padded[pos[idx]].astype(np.uint64) * _P5), 11) * _P1
        pos[idx] += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    out[:] = h
    return out


def long_hash(keys: np.ndarray) -> np.ndarray:
    """Thomas Wang's 64-bit integer hash of int64 ``keys`` (Java's ``FastHash.getLongHash``), as uint64."""
    key = keys.astype(np.int64).view(np.uint64)

    def sar(x: np.ndarray, r: int) -> np.ndarray:  # Java's >> (arithmetic) on the signed view
        return (x.view(np.int64) >> np.int64(r)).view(np.uint64)

    key = ~key + (key << np.uint64(21))
    key = key ^ sar(key, 24)
    key = key + (key << np.uint64(3)) + (key << np.uint64(8))
    key = key ^ sar(key, 14)
    key = key + (key << np.uint64(2)) + (key << np.uint64(4))
    key = key ^ sar(key, 28)
    return key + (key << np.uint64(31))


def _binary_hashes(arr: pa.Array) -> np.ndarray:
    arr = arr.cast(pa.large_binary())
    offsets = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data_buffer = arr.buffers()[2]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.empty(0, np.uint8)
    return xxh64(data, offsets[:-1], np.diff(offsets))


def _timestamp_longs(arr: pa.Array, precision: int) -> np.ndarray:
    unit = arr.type.unit
    values = arr.cast(pa.int64()).to_numpy(zero_copy_only=False)
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    target = 1_000 if precision <= 3 else 1_000_000
    if per_second >= target:
        return values // (per_second // target)  # floor: Java's Timestamp keeps a non-negative sub-part
    return values * (target // per_second)


def hash_column(arr: pa.Array | pa.ChunkedArray, t: DataType) -> np.ndarray:
    """Java's ``FastHash`` of every non-null value of ``arr`` (a column of Paimon type ``t``), in order, as
    int64 (Java's signed ``long``). Nulls are left out, as Java's bloom filter never hashes them."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not isinstance(t, AtomicType) or not hashable(t):
        raise ValueError(f"type {t} has no bloom filter hash")
    if arr.null_count:
        arr = pc.drop_null(arr)
    root = t.root
    if root in _BYTES:
        return _binary_hashes(arr).view(np.int64)
    if root in _INTEGRAL:
        keys = arr.cast(pa.int32() if root in ("DATE", "TIME") else pa.int64()).to_numpy(zero_copy_only=False)
    elif root == "FLOAT":
        floats = arr.cast(pa.float32()).to_numpy(zero_copy_only=False).copy()
        floats[np.isnan(floats)] = np.float32("nan")  # floatToIntBits: one canonical NaN
        keys = floats.view(np.int32)  # widened to long with its sign, as Java's int -> long
    elif root == "DOUBLE":
        doubles = arr.cast(pa.float64()).to_numpy(zero_copy_only=False).copy()
        doubles[np.isnan(doubles)] = np.float64("nan")
        keys = doubles.view(np.int64)
    else:  # TIMESTAMP, TIMESTAMP_LTZ
        keys = _timestamp_longs(arr, t.precision if t.precision is not None else 6)
    return long_hash(np.asarray(keys).astype(np.int64)).view(np.int64)
