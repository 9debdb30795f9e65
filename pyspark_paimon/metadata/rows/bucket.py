"""Fixed-bucket assignment (Java's `DefaultBucketFunction`): murmur3 over BinaryRow bytes, ``abs(h % n)``.

Java routes a row to ``abs(hash % numBuckets)`` where ``hash`` is a word-wise Murmur3-32 (seed 42) of the
BinaryRow of the bucket-key values. Readers rely on this: a key written to the wrong bucket is invisible to
Java's point lookups and breaks primary-key merging, so both paths here must be bit-exact.

* :func:`hash_bytes` / :func:`bucket_of` — one row (metadata, tests).
* :func:`hash_rows` / :func:`bucket_ids` — whole Arrow columns with numpy, for the write path.
"""

from __future__ import annotations

import struct
from typing import Any, Sequence

import numpy as np

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.rows.binary_row import DataType, EncodedRows, encode_rows, row_bytes

__all__ = [
    "bucket_ids",
    "bucket_of",
    "bucket_of_values",
    "hash_bytes",
    "hash_encoded",
    "hash_row_bytes",
    "hash_rows",
]

_SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_M = 0xE6546B64
_F1 = 0x85EBCA6B
_F2 = 0xC2B2AE35
_MASK = 0xFFFFFFFF


# ----------------------------------------------------------------------------------------------------------
# Scalar
# ----------------------------------------------------------------------------------------------------------


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * _F1) & _MASK
    h ^= h >> 13
    h = (h * _F2) & _MASK
    h ^= h >> 16
    return h


def hash_bytes(data: bytes) -> int:
    """Java ``MurmurHashUtils.hashBytesByWords`` with seed 42, as a signed int32.

    ``data`` must be BinaryRow bytes without the arity prefix; their length is a multiple of 8 (so of 4),
    which is why Java hashes whole words and has no tail handling.
    """
    if len(data) % 4:
        raise ValueError(f"word-wise murmur needs a multiple of 4 bytes, got {len(data)}")
    h = _SEED
    for (k,) in struct.iter_unpack("<I", data):
        k = (k * _C1) & _MASK
        k = _rotl(k, 15)
        k = (k * _C2) & _MASK
        h ^= k
        h = _rotl(h, 13)
        h = (h * 5 + _M) & _MASK
    h = _fmix(h, len(data))
    return h - (1 << 32) if h & 0x80000000 else h


hash_row_bytes = hash_bytes
"""Alias named after the DEVELOPERS.md contract."""


def bucket_of(hash_value: int, num_buckets: int) -> int:
    """``Math.abs(hash % numBuckets)`` with Java's truncated remainder.

    ``abs(h) % n`` equals Java's result for every int32 ``h`` (including ``-2**31``) because Python ints
    do not overflow.
    """
    _check_num_buckets(num_buckets)
    return abs(int(hash_value)) % num_buckets


def bucket_of_values(values: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> int:
    """Bucket of one row of bucket-key Python values (see :func:`row_bytes` for accepted values)."""
    return bucket_of(hash_bytes(row_bytes(values, types)), num_buckets)


def _check_num_buckets(num_buckets: int) -> None:
    if int(num_buckets) <= 0:
        raise OptionError(
            f"Hash bucketing needs 'bucket' > 0, got {num_buckets}; -1 (dynamic/unaware) and -2 (postpone) "
            "tables do not assign buckets by hash."
        )


# ----------------------------------------------------------------------------------------------------------
# Vectorised
# ----------------------------------------------------------------------------------------------------------


def _rotl_np(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_words(words: np.ndarray) -> np.ndarray:
    """The per-word ``k`` scrambling of murmur3; independent per word, so done for the whole buffer."""
    k = words * np.uint32(_C1)
    k = _rotl_np(k, 15)
    return k * np.uint32(_C2)


def _fmix_np(h: np.ndarray, length_bytes: np.ndarray) -> np.ndarray:
    h = h ^ length_bytes.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= np.uint32(_F1)
    h ^= h >> np.uint32(13)
    h *= np.uint32(_F2)
    h ^= h >> np.uint32(16)
    return h


def hash_encoded(rows: EncodedRows) -> np.ndarray:
    """Murmur3 (seed 42) of every row of :func:`encode_rows` output, as int32.

    Rows differ in length when strings exceed 7 bytes. Rows are ordered by word count (longest first), so
    at word position ``j`` the rows still being hashed form a prefix of that order: each step is one numpy
    operation over that prefix. This is equivalent to grouping rows by length and hashing each group's
    ``(rows, words)`` matrix column by column, but needs only ``max words`` Python-level steps in total
    instead of the sum over the distinct lengths, and never materialises padded matrices.
    """
    n = len(rows)
    if n == 0:
        return np.zeros(0, dtype=np.int32)
    width = int(rows.lengths[0])
    if width * n == len(rows.buffer) and bool((rows.lengths == width).all()):
        return _hash_fixed_width(rows.buffer, n, width)
    with np.errstate(over="ignore"):
        mixed = _mix_words(rows.buffer.view("<u4").astype(np.uint32, copy=False))
        word_counts = rows.lengths // 4
        order = np.argsort(-word_counts, kind="stable")
        first_word = (rows.starts // 4)[order]
        sorted_counts = word_counts[order]
        # active[j] = number of rows longer than j words = length of the prefix still hashing at step j.
        active = np.searchsorted(-sorted_counts, -np.arange(int(sorted_counts[0])), side="left")
        h = np.full(n, _SEED, dtype=np.uint32)
        for j, m in enumerate(active.tolist()):
            h[:m] = _murmur_step(h[:m], mixed[first_word[:m] + j])
        h = _fmix_np(h, sorted_counts * 4)
    result = np.empty(n, dtype=np.uint32)
    result[order] = h
    return result.view(np.int32)


def _hash_fixed_width(buffer: np.ndarray, n: int, width: int) -> np.ndarray:
    """:func:`hash_encoded` when every row has the same length and the rows fill the buffer back to back (keys
    without long strings, the common case): the buffer is then an ``(n, words)`` matrix, so each murmur step
    reads a strided column instead of gathering by row offsets, and nothing needs reordering."""
    words = buffer.view("<u4").reshape(n, width // 4)
    h = np.full(n, _SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h = _murmur_step(h, _mix_words(words[:, j].astype(np.uint32)))
        h = _fmix_np(h, np.full(n, width, dtype=np.uint32))
    return h.view(np.int32)


def _murmur_step(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = h ^ k
    h = _rotl_np(h, 13)
    return h * np.uint32(5) + np.uint32(_M)


def hash_rows(columns: Sequence[Any], types: Sequence[DataType]) -> np.ndarray:
    """Java ``BinaryRow.hashCode()`` of the row formed by ``columns`` at every position (int32 array).

    ``columns`` are ``pa.Array``/``pa.ChunkedArray`` of the bucket-key fields in bucket-key order.
    """
    return hash_encoded(encode_rows(columns, types))


def bucket_ids(columns: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> np.ndarray:
    """Bucket of every row for a fixed-bucket table (int32 array), bit-exact with Java.

    Fully vectorised: BinaryRow bytes are built by :func:`encode_rows` (every partition/key type, including
    non-compact DECIMAL/TIMESTAMP and NULLs with Java's layout) and hashed by :func:`hash_encoded`.
    No per-row Python loop is used for any supported type; nested types raise ``UnsupportedTypeError``.
    """
    _check_num_buckets(num_buckets)
    hashes = hash_rows(columns, types).astype(np.int64)
    return (np.abs(hashes) % int(num_buckets)).astype(np.int32)
