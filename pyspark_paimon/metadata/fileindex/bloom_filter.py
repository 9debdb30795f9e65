"""The bloom-filter file index (Java's ``BloomFilterFileIndex`` over ``BloomFilter64``): "is this value perhaps in
the data file?" for ``=`` and ``IN`` lookups that min/max statistics cannot answer (random strings, ids).

Blob layout: the number of hash functions ``k`` as a BE int32, then the bit set (bit ``i`` is bit ``i % 8`` of
byte ``i // 8``). A value's 64-bit hash (:mod:`~pyspark_paimon.metadata.fileindex.fast_hash`) is split into its
low and high 32-bit halves ``h1``, ``h2`` (signed); the bits set for it are ``c_j % m`` for ``j = 1..k`` where
``c_j = h1 + j * h2`` in 32-bit arithmetic, with its bits flipped when negative, and ``m`` is the bit count.

Sizing follows Java exactly, so a file indexed here is the bytes Java would write: with ``items`` expected
values (``file-index.bloom-filter.<column>.items``, default 1,000,000) and false-positive rate ``fpp``
(``.fpp``, default 0.1), ``nb = int(-items * ln(fpp) / ln(2)^2)``, ``m = nb + 8 - nb % 8`` and
``k = max(1, round(m / items * ln(2)))``. NULLs are never added, so the filter says nothing about ``IS NULL``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_ITEMS", "DEFAULT_FPP", "BloomFilter"]

DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


def _positions(hashes: np.ndarray, k: int, num_bits: int) -> np.ndarray:
    """The bit positions of each hash, shape (len(hashes), k)."""
    h = np.asarray(hashes, dtype=np.int64).view(np.uint64)
    h1 = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    h2 = (h >> np.uint64(32)).astype(np.uint32).view(np.int32)
    j = np.arange(1, k + 1, dtype=np.int32)
    with np.errstate(over="ignore"):
        combined = j[None, :] * h2[:, None]  # int32 wrap-around, as Java's int
        combined += h1[:, None]
    combined ^= combined >> 31  # a negative value has all its bits flipped (x ^ -1 = ~x), others stay
    return combined.view(np.uint32) % np.uint32(num_bits)


@dataclass(frozen=True)
class BloomFilter:
    """One column's bloom filter: ``k`` hash functions over ``bits`` (``len(bits) * 8`` bits)."""

    num_hash_functions: int
    bits: bytes

    @property
    def num_bits(self) -> int:
        return len(self.bits) * 8

    @staticmethod
    def shape(items: int, fpp: float) -> tuple[int, int]:
        """(bit count, hash function count) Java's ``BloomFilter64(items, fpp)`` picks."""
        if items <= 0 or not 0.0 < fpp < 1.0:
            raise ValueError(f"a bloom filter needs items > 0 and 0 < fpp < 1, got items={items}, fpp={fpp}")
        nb = int(-items * math.log(fpp) / (math.log(2) * math.log(2)))
        num_bits = nb + (8 - nb % 8)
        return num_bits, max(1, math.floor(num_bits / items * math.log(2) + 0.5))

    @classmethod
    def build(cls, hashes: np.ndarray, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> "BloomFilter":
        """The filter of the values whose :func:`~pyspark_paimon.metadata.fileindex.fast_hash.hash_column`
        hashes are ``hashes``."""
        num_bits, k = cls.shape(items, fpp)
        flags = np.zeros(num_bits, dtype=bool)
        if len(hashes):
            flags[_positions(hashes, k, num_bits).ravel()] = True
        return cls(k, np.packbits(flags, bitorder="little").tobytes())

    def encode(self) -> bytes:
        return struct.pack(">i", self.num_hash_functions) + self.bits

    @classmethod
    def decode(cls, blob: bytes) -> "BloomFilter":
        if len(blob) < 5:
            raise ValueError(f"a bloom filter blob of {len(blob)} bytes is too short")
        (k,) = struct.unpack_from(">i", blob, 0)
        if k <= 0:
            raise ValueError(f"a bloom filter with {k} hash functions")
        return cls(k, bytes(blob[4:]))

    def may_contain(self, hashes: np.ndarray) -> np.ndarray:
        """Per hash: False when the value is certainly not in the file, True when it may be."""
        if not len(hashes):
            return np.zeros(0, dtype=bool)
        pos = _positions(hashes, self.num_hash_functions, self.num_bits)
        bits = np.frombuffer(self.bits, dtype=np.uint8)
        hit = (bits[pos >> 3] >> (pos & 7).astype(np.uint8)) & 1
        return np.asarray(hit.all(axis=1))
