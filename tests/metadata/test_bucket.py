"""Bucket hashing: test vectors confirmed by pypaimon's bucket directories, scalar == vectorised, Java remainder
semantics."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.errors import OptionError, UnsupportedTypeError
from pyspark_paimon.metadata.rows.binary_row import row_bytes
from pyspark_paimon.metadata.rows.bucket import (
    bucket_ids,
    bucket_of,
    bucket_of_values,
    hash_bytes,
    hash_row_bytes,
    hash_rows,
)
from pyspark_paimon.metadata.types.model import ArrayType, AtomicType

STRING = AtomicType("VARCHAR", length=2147483647)
INT = AtomicType("INT")
BIGINT = AtomicType("BIGINT")

BUCKET_COUNTS = (2, 3, 4, 5, 10)

# Java's `DefaultBucketFunction` on these keys, confirmed on disk by pypaimon's bucket directories:
# (values, types, signed hash, {num_buckets: bucket})
SPEC_VECTORS = [
    (["1"], [STRING], 452634210, (0, 0, 2, 0, 0)),
    (["2"], [STRING], 1812590304, (0, 0, 0, 4, 4)),
    (["3"], [STRING], -2067295756, (0, 1, 0, 1, 6)),
    (["4"], [STRING], -2099821757, (1, 2, 1, 2, 7)),
    (["5"], [STRING], -1375427619, (1, 0, 3, 4, 9)),
    (["6"], [STRING], 2057292639, (1, 0, 3, 4, 9)),
    (["7"], [STRING], -2113004360, (0, 2, 0, 0, 0)),
    (["8"], [STRING], -1452037644, (0, 0, 0, 4, 4)),
    (["hello world"], [STRING], 161593394, (0, 2, 2, 4, 4)),
    (["abcdefgh"], [STRING], -843760178, (0, 2, 2, 3, 8)),
    ([0], [INT], -300363099, (1, 0, 3, 4, 9)),
    ([1], [INT], 1465514398, (0, 1, 2, 3, 8)),
    ([2], [INT], 1340390384, (0, 2, 0, 4, 4)),
    ([3], [INT], -771300025, (1, 1, 1, 0, 5)),
    ([-1], [INT], 1133687267, (1, 2, 3, 2, 7)),
    ([100], [INT], 694654213, (1, 1, 1, 3, 3)),
    ([-1], [BIGINT], -821098432, (0, 1, 0, 2, 2)),
    ([0, "k0"], [INT, STRING], -1239858962, {4: 2}),
    ([1, "key-1-long-string"], [INT, STRING], -587043626, {4: 2}),
]


def _expected_buckets(buckets) -> dict[int, int]:
    return buckets if isinstance(buckets, dict) else dict(zip(BUCKET_COUNTS, buckets))


def _column(value, t) -> pa.Array:
    arrow = {"VARCHAR": pa.string(), "INT": pa.int32(), "BIGINT": pa.int64()}[t.name]
    return pa.array([value], arrow)


def _ids(vectors):
    return [f"{'-'.join(map(str, v[0]))}:{'-'.join(t.name for t in v[1])}" for v in vectors]


@pytest.mark.parametrize("values,types,hash_value,buckets", SPEC_VECTORS, ids=_ids(SPEC_VECTORS))
def test_spec_vectors_scalar(values, types, hash_value, buckets):
    assert hash_bytes(row_bytes(values, types)) == hash_value
    assert hash_row_bytes(row_bytes(values, types)) == hash_value
    for n, bucket in _expected_buckets(buckets).items():
        assert bucket_of(hash_value, n) == bucket
        assert bucket_of_values(values, types, n) == bucket


@pytest.mark.parametrize("values,types,hash_value,buckets", SPEC_VECTORS, ids=_ids(SPEC_VECTORS))
def test_spec_vectors_vectorised(values, types, hash_value, buckets):
    columns = [_column(v, t) for v, t in zip(values, types)]
    assert hash_rows(columns, types).tolist() == [hash_value]
    for n, bucket in _expected_buckets(buckets).items():
        result = bucket_ids(columns, types, n)
        assert result.dtype == np.int32 and result.tolist() == [bucket]


@pytest.mark.parametrize(
    "values,types,row_hex",
    [
        (["1"], [STRING], "0000000000000000 3100000000000081"),
        (["2"], [STRING], "0000000000000000 3200000000000081"),
        (["3"], [STRING], "0000000000000000 3300000000000081"),
        (["4"], [STRING], "0000000000000000 3400000000000081"),
        (["hello world"], [STRING], "0000000000000000 0b00000010000000 68656c6c6f20776f726c640000000000"),
        (["abcdefgh"], [STRING], "0000000000000000 0800000010000000 6162636465666768"),
        ([1], [INT], "0000000000000000 0100000000000000"),
    ],
)
def test_spec_vector_row_bytes(values, types, row_hex):
    assert row_bytes(values, types) == bytes.fromhex(row_hex.replace(" ", ""))


def test_multi_column_vector_bytes_prefix():
    row = row_bytes([1, "key-1-long-string"], [INT, STRING])
    assert row[8:].startswith(bytes.fromhex("01000000 00000000 11000000 18000000 6b65792d".replace(" ", "")))


def test_all_spec_vectors_in_one_batch():
    """Mixed row lengths in one call: every row must keep its own hash."""
    strings = [v for v in SPEC_VECTORS if v[1] == [STRING]]
    column = pa.array([v[0][0] for v in strings])
    assert hash_rows([column], [STRING]).tolist() == [v[2] for v in strings]
    assert bucket_ids([column], [STRING], 10).tolist() == [_expected_buckets(v[3])[10] for v in strings]


@pytest.mark.parametrize(
    "hash_value,n,bucket",
    [(-7, 4, 3), (7, 4, 3), (-(2**31), 3, 2), (-(2**31), 2, 0), (2**31 - 1, 10, 7), (0, 1, 0)],
)
def test_bucket_of_java_truncated_remainder(hash_value, n, bucket):
    assert bucket_of(hash_value, n) == bucket


@pytest.mark.parametrize("n", [0, -1, -2])
def test_non_positive_bucket_count_rejected(n):
    with pytest.raises(OptionError, match="bucket"):
        bucket_of(1, n)
    with pytest.raises(OptionError):
        bucket_ids([pa.array([1], pa.int32())], [INT], n)


def test_nested_bucket_key_rejected():
    with pytest.raises(UnsupportedTypeError, match="ARRAY"):
        bucket_ids([pa.array([[1]])], [ArrayType(INT)], 2)


def test_empty_input():
    assert bucket_ids([pa.array([], pa.string())], [STRING], 4).tolist() == []


def test_chunked_input():
    column = pa.chunked_array([["1", "2"], ["3", None, "hello world"]])
    expected = [bucket_of_values([v], [STRING], 4) for v in column.to_pylist()]
    assert bucket_ids([column], [STRING], 4).tolist() == expected


# -------------------------------------------------------------------------------------------------------
# Vectorised == scalar on random data
# -------------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.none() | st.text(max_size=40), st.none() | st.integers(-(2**31), 2**31 - 1)),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 17),
)
def test_vectorised_matches_scalar_strings_ints_nulls(rows, n):
    strings = pa.array([r[0] for r in rows], pa.string())
    ints = pa.array([r[1] for r in rows], pa.int32())
    types = [STRING, INT]
    expected_hashes = [hash_bytes(row_bytes(list(r), types)) for r in rows]
    assert hash_rows([strings, ints], types).tolist() == expected_hashes
    assert bucket_ids([strings, ints], types, n).tolist() == [bucket_of(x, n) for x in expected_hashes]


def _random_value(rng: random.Random, kind: str):
    if rng.random() < 0.15:
        return None
    if kind == "string":
        return "".join(rng.choice("abcé€𝄞 /=") for _ in range(rng.choice([0, 1, 7, 8, 9, 15, 16, 17, 40])))
    if kind == "binary":
        return rng.randbytes(rng.randint(0, 24))
    if kind == "int":
        return rng.randint(-(2**31), 2**31 - 1)
    if kind == "bigint":
        return rng.randint(-(2**63), 2**63 - 1)
    if kind == "smallint":
        return rng.randint(-(2**15), 2**15 - 1)
    if kind == "tinyint":
        return rng.randint(-128, 127)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "date":
        return dt.date(1970, 1, 1) + dt.timedelta(days=rng.randint(-30000, 30000))
    if kind in ("float", "double"):
        return rng.uniform(-1e6, 1e6)
    if kind in ("dec18", "dec30"):
        digits = 18 if kind == "dec18" else 30
        return Decimal(f"{rng.randint(-(10**digits) + 1, 10**digits - 1)}E-4")
    micros = rng.randint(-(10**15), 4 * 10**15)
    value = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    return value.replace(microsecond=value.microsecond // 1000 * 1000) if kind == "ts3" else value


KINDS = {
    "string": (STRING, pa.string()),
    "binary": (AtomicType("VARBINARY", length=2147483647), pa.binary()),
    "int": (INT, pa.int32()),
    "bigint": (BIGINT, pa.int64()),
    "smallint": (AtomicType("SMALLINT"), pa.int16()),
    "tinyint": (AtomicType("TINYINT"), pa.int8()),
    "boolean": (AtomicType("BOOLEAN"), pa.bool_()),
    "date": (AtomicType("DATE"), pa.date32()),
    "float": (AtomicType("FLOAT"), pa.float32()),
    "double": (AtomicType("DOUBLE"), pa.float64()),
    "dec18": (AtomicType("DECIMAL", precision=18, scale=4), pa.decimal128(18, 4)),
    "dec30": (AtomicType("DECIMAL", precision=30, scale=4), pa.decimal128(30, 4)),
    "ts3": (AtomicType("TIMESTAMP", precision=3), pa.timestamp("ms")),
    "ts6": (AtomicType("TIMESTAMP", precision=6), pa.timestamp("us")),
}


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_matches_scalar_random_multi_column_keys(seed):
    rng = random.Random(seed)
    kinds = [rng.choice(sorted(KINDS)) for _ in range(rng.randint(1, 4))]
    types = [KINDS[k][0] for k in kinds]
    n_rows = 300
    columns_py = [[_random_value(rng, k) for _ in range(n_rows)] for k in kinds]
    for i, k in enumerate(kinds):
        if k == "float":  # round to float32 so the scalar path sees the value Arrow stores
            columns_py[i] = [None if v is None else float(np.float32(v)) for v in columns_py[i]]
    columns = [pa.array(col, KINDS[k][1]) for col, k in zip(columns_py, kinds)]
    expected = [hash_bytes(row_bytes(list(r), types)) for r in zip(*columns_py)]
    assert hash_rows(columns, types).tolist() == expected, kinds
    assert bucket_ids(columns, types, 7).tolist() == [bucket_of(x, 7) for x in expected]


def test_fixed_width_rows_match_scalar():
    """Keys of one row width (no long strings) take the matrix path; it must hash exactly as the scalar one."""
    rng = random.Random(7)
    values = [[rng.randint(-(2**63), 2**63 - 1), rng.choice([None, "", "abc", "1234567"])] for _ in range(500)]
    types = [BIGINT, STRING]
    columns = [pa.array([v[0] for v in values], pa.int64()), pa.array([v[1] for v in values], pa.string())]
    assert hash_rows(columns, types).tolist() == [hash_bytes(row_bytes(v, types)) for v in values]


def test_large_batch_matches_the_scalar_hash():
    """A million mixed-length string keys (1,000 distinct, repeated) get the buckets the per-row scalar path
    gives. (Its speed is measured by benchmarks/test_bench_write.py::test_bucket_ids_million_strings.)"""
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 30, size=1000)
    distinct = ["x" * int(k) for k in lengths]
    result = bucket_ids([pa.array(distinct * 1000)], [STRING], 16)
    expected = [bucket_of(hash_bytes(row_bytes([v], [STRING])), 16) for v in distinct]
    assert len(result) == 1_000_000 and result.tolist() == expected * 1000
