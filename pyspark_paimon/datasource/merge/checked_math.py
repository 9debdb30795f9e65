"""Exact integer sums and products over runs of rows, with Java's overflow rule, vectorised.

Java's ``sum`` and ``product`` aggregate functions fold the records of a key one at a time with
``Math.addExact`` / ``multiplyExact`` (and byte/short equivalents), so an accumulator that leaves its type's
range at *any* step raises ``ArithmeticException``, even if later records would bring it back. Arrow's hash
aggregations and numpy's reductions wrap silently instead. The functions here reproduce Java's verdict, and
its result where there is no overflow, without a Python loop per row:

* :func:`segment_sums`: prefix sums of signed values inside segments, computed exactly in two 32-bit limbs
  (so even a BIGINT prefix beyond 2^63 is seen), each prefix checked against the type's range;
* :func:`segment_products`: a product that may also divide (retraction), checked at every step. A run of
  multiplications is collapsed into one factor whose exact magnitude is known from its base-2 logarithm and
  whose low 64 bits are known from wrapping int64 arithmetic; together they decide every intermediate step,
  because before a zero the magnitude of a running product never shrinks. Integer division truncates, so a
  division cannot be moved across multiplications: the runs between two divisions are applied in order, one
  vectorised step per division (a loop over the most retractions one key has in one merge, across all keys at
  once, never over rows).

A *segment* is a run of consecutive rows folded into one accumulator: the records of one key, or (with
``aggregation.remove-record-on-delete``) the records after a DELETE that re-initialised the row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyspark_paimon.errors import PaimonError

__all__ = ["CheckedArithmeticError", "IntRange", "int_range", "segment_ids", "segment_sums", "segment_products"]

_LOW32 = np.int64(0xFFFFFFFF)


class CheckedArithmeticError(PaimonError):
    """An exact accumulation failed at ``row`` (overflow, or an integer division by zero). The merge engine
    turns it into an error naming the column, the key and the fix."""

    def __init__(self, row: int, reason: str) -> None:
        super().__init__(reason)
        self.row = row
        self.reason = reason


@dataclass(frozen=True)
class IntRange:
    """Range of a signed integer type of ``bits`` bits."""

    bits: int

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1))

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1


def int_range(dtype: np.dtype) -> IntRange:
    """The range of a numpy signed integer dtype."""
    return IntRange(np.dtype(dtype).itemsize * 8)


def segment_ids(seg_start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(segment id of each row, first row of each segment) for a mask of segment-starting rows (row 0 must
    start one)."""
    starts = np.flatnonzero(seg_start)
    return np.cumsum(seg_start) - 1, starts


def segment_sums(values: np.ndarray, signs: np.ndarray, seg_start: np.ndarray, rng: IntRange) -> np.ndarray:
    """Running sum of ``signs * values`` inside each segment, as int64, one per row.

    ``values`` are int64 (any content where ``signs`` is 0); ``signs`` are +1 (add), -1 (subtract) or 0
    (skip). Raises :class:`CheckedArithmeticError` at the first row whose running sum leaves ``rng``, which is where
    Java's exact arithmetic throws (a prefix never equals a sum Java skipped, as NULLs add nothing)."""
    n = len(values)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    v = values.astype(np.int64, copy=False)
    s = signs.astype(np.int64)
    seg, starts = segment_ids(seg_start)
    if np.abs(v[s != 0].astype(np.float64)).sum() < 2.0 ** (rng.bits - 2):
        # Fast path (the common case): no prefix can reach half the range, so plain int64 sums are exact.
        c = s * v
        cum = np.cumsum(c)
        return cum - (cum[starts] - c[starts])[seg]
    # v = hi * 2^32 + lo with lo in [0, 2^32): both limbs' running sums fit int64 for < 2^31 rows, and the
    # negation of -2^63 (a retraction of Long.MIN_VALUE) is exact in limbs.
    c_lo = s * (v & _LOW32)
    c_hi = s * (v >> 32)
    cum_lo = np.cumsum(c_lo)
    cum_hi = np.cumsum(c_hi)
    p_lo = cum_lo - (cum_lo[starts] - c_lo[starts])[seg]
    p_hi = cum_hi - (cum_hi[starts] - c_hi[starts])[seg]
    high = p_hi + (p_lo >> 32)  # arithmetic shift = floor division: normalises lo into [0, 2^32)
    low = p_lo & _LOW32
    in_int64 = (high >= -(1 << 31)) & (high < (1 << 31))
    total = np.where(in_int64, high, 0) * np.int64(1 << 32) + np.where(in_int64, low, 0)
    ok = in_int64 & (total >= rng.lo) & (total <= rng.hi)
    if not ok.all():
        row = int(np.flatnonzero(~ok)[0])
        raise CheckedArithmeticError(row, f"the running sum leaves the {rng.bits}-bit range [{rng.lo}, {rng.hi}]")
    return total


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Java's integer division (truncates toward zero); callers exclude b == 0 and MIN / -1."""
    rem = np.fmod(a, b)  # C semantics: the remainder has the dividend's sign
    return (a - rem) // b  # exact, so floor division equals truncation


def segment_products(
    values: np.ndarray, factor: np.ndarray, divisor: np.ndarray, seg_start: np.ndarray, rng: IntRange | None
) -> tuple[np.ndarray, np.ndarray]:
    """Java's product accumulator of each segment: ``(value, has_value)`` per segment.

    ``factor`` rows multiply the accumulator (the first one of a segment sets it); ``divisor`` rows divide it
    (Java's product retraction), but only once the segment has a value (Java leaves a NULL accumulator NULL).
    ``rng`` is the integer type's range (overflow and division by zero raise :class:`CheckedArithmeticError` at the
    row where Java throws); None means a floating-point column (IEEE arithmetic, nothing raises)."""
    n = len(values)
    seg, seg_rows = segment_ids(seg_start)
    num_segs = len(seg_rows)
    idx = np.arange(n, dtype=np.int64)
    if n == 0:
        return values[:0].copy(), np.zeros(0, dtype=bool)
    # A division is a no-op until the segment has a value (Java: retract(null, x) = null).
    first_factor = np.minimum.reduceat(np.where(factor, idx, n), seg_rows)
    divisor = divisor & (idx > first_factor[seg])
    has = np.zeros(num_segs, dtype=bool)
    has[seg[factor]] = True

    # Blocks: a segment cut before every division; a block is [optional division] + factors.
    boundary = seg_start | divisor
    block_rows = np.flatnonzero(boundary)
    block_of_row = np.cumsum(boundary) - 1
    block_seg = seg[block_rows]
    first_block = np.searchsorted(block_seg, np.arange(num_segs))
    ordinal = np.arange(len(block_rows)) - first_block[block_seg]
    block_div = divisor[block_rows]
    block_has_factor = np.zeros(len(block_rows), dtype=bool)
    block_has_factor[block_of_row[factor]] = True

    is_float = rng is None
    v = values
    if is_float:
        acc = np.ones(num_segs, dtype=v.dtype)
        with np.errstate(over="ignore", invalid="ignore"):
            block_prod = np.multiply.reduceat(np.where(factor, v, v.dtype.type(1)), block_rows)
    else:
        acc = np.ones(num_segs, dtype=np.int64)
        v = v.astype(np.int64, copy=False)
        # Before a block's first zero every factor has |f| >= 1, so the running magnitude never shrinks.
        zero_at = np.minimum.reduceat(np.where(factor & (v == 0), idx, n), block_rows)
        pre = factor & (idx < zero_at[block_of_row])
        block_zero = zero_at < n
        with np.errstate(over="ignore"):
            block_res = np.multiply.reduceat(np.where(pre, v, 1), block_rows)  # exact product mod 2^64
        magnitude = np.abs(v.astype(np.float64))
        with np.errstate(divide="ignore"):
            block_log = np.add.reduceat(np.where(pre, np.log2(np.where(pre, magnitude, 1.0)), 0.0), block_rows)
        block_negs = np.add.reduceat((pre & (v < 0)).astype(np.int64), block_rows)
        # -1 factors after the block's last factor of magnitude >= 2: from there on the running product keeps
        # its magnitude and flips sign, so a final MIN_VALUE may have passed through +2^(bits-1) on the way.
        last_big = np.maximum.reduceat(np.where(pre & (v != 1) & (v != -1), idx, -1), block_rows)
        minus_one = np.cumsum(pre & (v == -1))
        block_end = np.append(block_rows[1:], n) - 1
        after = np.maximum(last_big, block_rows - 1)
        block_m1 = minus_one[block_end] - np.where(after >= 0, minus_one[np.maximum(after, 0)], 0)

    for j in range(int(ordinal.max()) + 1 if len(ordinal) else 0):
        blocks = np.flatnonzero(ordinal == j)
        segs = block_seg[blocks]
        a = acc[segs]
        divides = block_div[blocks]
        if divides.any():
            d_rows = block_rows[blocks][divides]
            d = v[d_rows]
            num = a[divides]
            if is_float:
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    a[divides] = num / d
            else:
                assert rng is not None
                bad = d == 0
                if bad.any():
                    raise CheckedArithmeticError(int(d_rows[bad][0]), "a retraction divides the product by zero")
                bad = (num == rng.lo) & (d == -1)
                if bad.any():
                    raise CheckedArithmeticError(
                        int(d_rows[bad][0]),
                        f"the product leaves the {rng.bits}-bit range [{rng.lo}, {rng.hi}] (MIN_VALUE / -1)",
                    )
                a[divides] = _trunc_div(num, d)
        mult = block_has_factor[blocks]
        if mult.any():
            b = blocks[mult]
            cur = a[mult]
            if is_float:
                with np.errstate(over="ignore", invalid="ignore"):
                    a[mult] = cur * block_prod[b]
            else:
                assert rng is not None
                a[mult] = _checked_multiply(
                    cur, block_res[b], block_log[b], block_negs[b], block_m1[b], block_zero[b], block_rows[b], rng
                )
        acc[segs] = a
    return acc, has


def _checked_multiply(
    acc: np.ndarray,
    res: np.ndarray,
    log: np.ndarray,
    negs: np.ndarray,
    m1: np.ndarray,
    zero: np.ndarray,
    rows: np.ndarray,
    rng: IntRange,
) -> np.ndarray:
    """``acc`` times each block's factors, raising where a step of Java's multiplyExact would overflow.

    ``res`` is the product of the block's factors before its first zero modulo 2^64, ``log`` its base-2
    magnitude, ``negs`` its count of negative factors, ``m1`` the -1 factors after its last factor of
    magnitude >= 2, ``zero`` whether a zero factor follows (the result is then 0)."""
    with np.errstate(over="ignore", divide="ignore"):
        x = acc * res  # exact modulo 2^64
        total_log = np.log2(np.abs(acc.astype(np.float64))) + log
    live = acc != 0  # 0 times anything is 0: never an overflow
    sign = np.where(acc < 0, -1, 1) * np.where(negs % 2 == 1, -1, 1)
    top = rng.bits - 1
    exact = total_log < 62.5  # |x| < 2^62.5: the wrapped product is the product
    if rng.bits == 64:
        # 2^62.5 <= |x| <= 2^63.5 (logarithms are far more precise than 0.5): the true value is x or x -+ 2^64,
        # and only x itself (same sign as the true product) lies in range.
        exact = exact | ((total_log <= 63.5) & (np.sign(x) == sign))
    fits = exact & (x >= rng.lo) & (x <= rng.hi)
    # A final MIN_VALUE went through +2^top if a -1 followed the last factor that changed the magnitude.
    fits &= ~((x == rng.lo) & (m1 > 0))
    bad = live & ~fits
    if bad.any():
        raise CheckedArithmeticError(
            int(rows[bad][0]), f"the product leaves the {rng.bits}-bit range [{rng.lo}, {rng.hi}] (2^{top} and beyond)"
        )
    return np.where(zero, 0, np.where(live, x, 0))
