"""Paimon's bucket of a row as one Spark SQL expression, for the JVM write path's key types that allow it.

Why: ``t.write_spark`` must route each row to the bucket Java computes (a word-wise Murmur3-32, seed 42, of the
bucket key's BinaryRow, then ``abs(hash % n)``: ``metadata/rows/bucket.py``). Computing it in a Python UDF makes every
row's key cross into a Python worker and back, which cost the JVM path more than its whole data write. Spark's own
``hash(<binary>)`` is that very Murmur3 over the bytes, word by word with seed 42 (its per-byte tail never runs: a
BinaryRow's length is a multiple of 8), so the bucket is exact in Spark when the BinaryRow's bytes can be built in
SQL: the header and null bits, one 8-byte little-endian slot per field, and the variable part of strings and
binaries longer than 7 bytes (each padded to 8 bytes), as :func:`~pyspark_paimon.metadata.rows.binary_row.encode_rows`
lays them out. This holds for the types of :data:`SQL_BUCKET_TYPES`; a key with any other type (floating point,
decimals, timestamps) keeps the Arrow UDF. Tests compare both against ``bucket_ids`` value by value.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark_paimon.metadata.rows.binary_row import null_bits_size
from pyspark_paimon.metadata.types.model import AtomicType, DataField, quote_ident

__all__ = ["SQL_BUCKET_TYPES", "bucket_stages"]

# Paimon type -> the SQL of the field's slot bits as a BIGINT ({k}: the column), for the fixed-width types.
_SLOT_BITS = {
    "BIGINT": "{k}",
    "INT": "(CAST({k} AS BIGINT) & 4294967295L)",
    "SMALLINT": "(CAST({k} AS BIGINT) & 65535L)",
    "TINYINT": "(CAST({k} AS BIGINT) & 255L)",
    "BOOLEAN": "if({k}, 1L, 0L)",
    "DATE": "(CAST(unix_date({k}) AS BIGINT) & 4294967295L)",
}
_BYTES = frozenset({"CHAR", "VARCHAR", "BINARY", "VARBINARY"})
#: The key types whose BinaryRow this module builds in SQL.
SQL_BUCKET_TYPES = frozenset(_SLOT_BITS) | _BYTES
_INLINE = 7  # bytes of a string or binary kept inside its slot
_ZERO_SLOT = "X'0000000000000000'"


def _le8(bits: str) -> str:
    """The 8 little-endian bytes of the BIGINT ``bits`` as a BINARY: its bytes reversed into a BIGINT whose (unsigned)
    hex digits, 16 with leading zeros, are the wanted bytes in order."""
    swapped = " | ".join(f"shiftleft(shiftright({bits}, {8 * i}) & 255L, {8 * (7 - i)})" for i in range(8))
    return f"unhex(lpad(hex({swapped}), 16, '0'))"


_MASK = 0xFFFFFFFF
_C1, _C2, _M, _F1, _F2, _SEED = 0xCC9E2D51, 0x1B873593, 0xE6546B64, 0x85EBCA6B, 0xC2B2AE35, 42
_TEMP = "__paimon_h{}"
# A 32-bit word: a constant (int) or the SQL of a BIGINT in [0, 2**32).
_Word = int | str


def bucket_stages(keys: Sequence[DataField], num_buckets: int, column: str) -> list[list[str]] | None:
    """The SQL that adds ``column`` (a row's bucket, INT) over the bucket-key columns ``keys``, as stages: each a list
    of ``expr AS name`` for one ``selectExpr("*", ...)``, after which the caller drops the ``__paimon_h*`` columns of
    the stages before the last. None when a key's type is not in :data:`SQL_BUCKET_TYPES`.

    Keys of fixed-width types hash in BIGINT arithmetic (Murmur3's steps on 32-bit words, constant words folded
    here); one stage per dependent step, because each step reads the previous value twice and Spark would otherwise
    inline it into an exponentially larger expression. Keys with strings or binaries build the row's bytes and hash
    them with Spark's ``hash``."""
    if not keys or not all(isinstance(f.type, AtomicType) and f.type.root in SQL_BUCKET_TYPES for f in keys):
        return None
    n = int(num_buckets)
    if any(f.type.root in _BYTES for f in keys):
        return [[f"abs(hash({_row_bytes(keys)}) % {n}) AS {quote_ident(column)}"]]
    return _arithmetic_stages(keys, n, column)


def _arithmetic_stages(keys: Sequence[DataField], n: int, column: str) -> list[list[str]]:
    arity = len(keys)
    null_bytes = null_bits_size(arity)
    words: list[_Word] = []
    for word in range(null_bytes // 4):  # header byte 0 (+I), bit 8 + i set when field i is NULL
        terms = [
            f"if({quote_ident(f.name)} IS NULL, {1 << (i + 8 - 32 * word)}L, 0L)"
            for i, f in enumerate(keys)
            if f.type.nullable and 0 <= i + 8 - 32 * word < 32
        ]
        words.append(" | ".join(terms) if terms else 0)
    for f in keys:
        bits = f"coalesce({_SLOT_BITS[f.type.root].format(k=quote_ident(f.name))}, 0L)"
        words += [f"({bits} & {_MASK}L)", f"(shiftright({bits}, 32) & {_MASK}L)"]
    stages: list[list[str]] = []
    names = iter(range(1 << 30))
    mixed: list[_Word] = []
    stage: list[str] = []
    for w in words:  # the per-word scrambling is independent per word: one stage
        if isinstance(w, int):
            mixed.append(_mul(_rotl(_mul(w, _C1), 15), _C2))
        else:
            name = _TEMP.format(next(names))
            stage.append(f"{_mul(_rotl(_mul(w, _C1), 15), _C2)} AS {name}")
            mixed.append(name)
    if stage:
        stages.append(stage)
    h: _Word = _SEED
    for k in mixed:
        step = _mix_h(h, k)
        if isinstance(step, int):
            h = step
        else:
            h = _TEMP.format(next(names))
            stages.append([f"{step} AS {h}"])
    a = _TEMP.format(next(names))
    first = _xorshift(_xor(h, 4 * len(words)), 16)
    stages.append([f"{_mul(first, _F1)} AS {a}"])
    b = _TEMP.format(next(names))
    stages.append([f"{_mul(_xorshift(a, 13), _F2)} AS {b}"])
    signed = f"(({_xorshift(b, 16)} ^ 2147483648L) - 2147483648L)"
    stages.append([f"CAST(abs({signed} % {n}) AS INT) AS {quote_ident(column)}"])
    return stages


def _mul(x: _Word, c: int) -> _Word:
    """``x * c`` modulo 2**32. In SQL both factors as signed 32-bit values, whose product fits a BIGINT (no overflow
    under ANSI mode), masked back to the low 32 bits."""
    if isinstance(x, int):
        return (x * c) & _MASK
    signed_c = c - (1 << 32) if c & 0x80000000 else c
    return f"(((({x}) ^ 2147483648L) - 2147483648L) * {signed_c}L & {_MASK}L)"


def _rotl(x: _Word, r: int) -> _Word:
    if isinstance(x, int):
        return ((x << r) | (x >> (32 - r))) & _MASK
    return f"((shiftleft({x}, {r}) & {_MASK}L) | shiftright({x}, {32 - r}))"


def _xor(x: _Word, y: _Word) -> _Word:
    if isinstance(x, int) and isinstance(y, int):
        return x ^ y
    return f"(({x}) ^ ({y}L))" if isinstance(y, int) else f"(({x}) ^ ({y}))"


def _xorshift(x: _Word, r: int) -> _Word:
    if isinstance(x, int):
        return x ^ (x >> r)
    return f"(({x}) ^ shiftright({x}, {r}))"


def _mix_h(h: _Word, k: _Word) -> _Word:
    x = _xor(k, h) if isinstance(k, str) or isinstance(h, int) else _xor(h, k)
    rotated = _rotl(x, 13)
    if isinstance(rotated, int):
        return (rotated * 5 + _M) & _MASK
    return f"(({rotated}) * 5 + {_M}L & {_MASK}L)"


def _row_bytes(keys: Sequence[DataField]) -> str:
    """The SQL (BINARY) of the keys' BinaryRow: header and null bits, slots, then the variable parts."""
    arity = len(keys)
    null_bytes = null_bits_size(arity)
    header_longs = []
    for word in range(null_bytes // 8):
        terms = [
            f"if({quote_ident(f.name)} IS NULL, shiftleft(1L, {i + 8 - 64 * word}), 0L)"
            for i, f in enumerate(keys)
            if f.type.nullable and 0 <= i + 8 - 64 * word < 64
        ]
        header_longs.append(_le8(" | ".join(terms)) if terms else _ZERO_SLOT)
    slots: list[str] = []
    var_parts: list[str] = []
    offset = str(null_bytes + 8 * arity)  # the SQL of the row offset where the next variable part starts
    for f in keys:
        k = quote_ident(f.name)
        root = f.type.root
        if root in _SLOT_BITS:
            slots.append(f"coalesce({_le8(_SLOT_BITS[root].format(k=k))}, {_ZERO_SLOT})")
            continue
        raw = f"CAST({k} AS BINARY)" if root in ("CHAR", "VARCHAR") else k
        size = f"octet_length({raw})"
        padded = f"(({size} + 7) div 8 * 8)"
        inline = f"concat(rpad({raw}, {_INLINE}, X'00'), unhex(hex(128 + {size})))"
        outline = _le8(f"shiftleft(CAST({offset} AS BIGINT), 32) | {size}")
        slots.append(f"coalesce(if({size} <= {_INLINE}, {inline}, {outline}), {_ZERO_SLOT})")
        var_parts.append(f"coalesce(if({size} <= {_INLINE}, unhex(''), rpad({raw}, {padded}, X'00')), unhex(''))")
        offset = f"({offset} + coalesce(if({size} <= {_INLINE}, 0, {padded}), 0))"
    return f"concat({', '.join(header_longs + slots + var_parts)})"
