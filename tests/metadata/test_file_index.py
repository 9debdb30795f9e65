"""File index formats against vectors written by Java Paimon (``fixtures/fileindex/java_vectors.json``, made by
the Java oracle's jar, see ``fixtures/fileindex/java_vectors.py``): hashes, bloom filters and containers byte for
byte; bitmaps by content (Java orders a bitmap index's values by hash-map order, so its bytes are one valid
layout among many), both ways: ours decode Java's and Java's layout rules hold for ours.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pyspark_paimon.errors import CorruptMetadataError, OptionError
from pyspark_paimon.metadata.fileindex.bitmap_index import BitmapIndex, encode_bitmap_index
from pyspark_paimon.metadata.fileindex.bloom_filter import BloomFilter
from pyspark_paimon.metadata.fileindex.container import FileIndexContainer, encode_container, java_utf, read_java_utf
from pyspark_paimon.metadata.fileindex.fast_hash import hash_column, long_hash, xxh64
from pyspark_paimon.metadata.fileindex.index_spec import FileIndexSpec, index_file_name, next_index_file_name
from pyspark_paimon.metadata.types.arrow import to_arrow_type
from pyspark_paimon.metadata.types.json_codec import parse_type
from pyspark_paimon.metadata.types.model import DataField, DataType
from tests.metadata.fixtures.fileindex.java_vectors import BITMAP_CASES, BLOOM_CASES, CONTAINER_CASES, VECTORS
from tests.oracle.oracle import type_json

JAVA = json.loads(VECTORS.read_text())


def _type(name: str) -> DataType:
    return parse_type(type_json(name))


def _column(type_name: str, values: list[Any]) -> tuple[DataType, pa.Array]:
    t = _type(type_name)
    return t, pa.array(values, type=to_arrow_type(t))


def _java_bytes(entry: dict[str, Any], ours: bytes) -> None:
    if "hex" in entry:
        assert ours.hex() == entry["hex"]
    else:
        assert (len(ours), hashlib.sha256(ours).hexdigest()) == (entry["length"], entry["sha256"])


# ------------------------------------------------------------------------------------------------ hashes


@pytest.mark.parametrize("name,type_name,values,options", BLOOM_CASES, ids=[c[0] for c in BLOOM_CASES])
def test_hashes_and_bloom_filters_are_javas(name: str, type_name: str, values: list, options: dict) -> None:
    t, arr = _column(type_name, values)
    hashes = hash_column(arr, t)
    assert hashes.tolist() == JAVA["bloom"][name]["hashes"]
    items, fpp = int(options.get("items", 1_000_000)), float(options.get("fpp", 0.1))
    bloom = BloomFilter.build(hashes, items, fpp)
    _java_bytes(JAVA["bloom"][name], bloom.encode())
    back = BloomFilter.decode(bloom.encode())
    assert back == bloom and back.may_contain(hashes).all()


def test_xxh64_is_the_reference_function() -> None:
    # XXH64 seed 0 reference values (xxHash's sanity list): "" and "a".
    data = np.frombuffer(b"a", np.uint8)
    assert xxh64(np.empty(0, np.uint8), np.array([0]), np.array([0])).tolist() == [0xEF46DB3751D8E999]
    assert xxh64(data, np.array([0]), np.array([1])).tolist() == [0xD24EC4F1A98C6E5B]


def test_xxh64_of_a_value_does_not_depend_on_its_neighbours() -> None:
    """Every length from 0 to 100 bytes (each branch of the stripe/word/byte walk), at odd offsets, hashed
    together and each alone: the column walk masks every step to the values it applies to."""
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 6000, dtype=np.uint8)
    lengths = np.arange(101)
    starts = np.cumsum(np.r_[3, lengths[:-1] + 1])
    vectorised = xxh64(data, starts, lengths)
    one_by_one = [int(xxh64(data, np.array([s]), np.array([n]))[0]) for s, n in zip(starts, lengths)]
    assert vectorised.tolist() == one_by_one
    # a value longer than every other one (many stripes for one row only)
    assert xxh64(data, np.array([0, 10]), np.array([5000, 3])).tolist() == [
        int(xxh64(data, np.array([0]), np.array([5000]))[0]),
        int(xxh64(data, np.array([10]), np.array([3]))[0]),
    ]


def test_long_hash_wraps_like_java() -> None:
    keys = np.array([0, -1, 2**63 - 1, -(2**63)], np.int64)
    assert long_hash(keys).dtype == np.uint64 and len(set(long_hash(keys).tolist())) == 4


def test_bloom_filter_shape_is_javas() -> None:
    # int(-items * ln(fpp) / ln2^2) rounded up to whole bytes (+8 on exact multiples), k = round(m/items*ln2)
    assert BloomFilter.shape(10, 0.1) == (48, 3)
    assert BloomFilter.shape(1_000_000, 0.1) == (4792536, 3)
    with pytest.raises(ValueError):
        BloomFilter.shape(0, 0.1)


def test_bloom_filter_answers_membership() -> None:
    t, arr = _column("STRING", [f"v{i}" for i in range(1000)])
    bloom = BloomFilter.build(hash_column(arr, t), 1000, 0.01)
    absent = hash_column(pa.array([f"w{i}" for i in range(1000)]), t)
    assert bloom.may_contain(hash_column(arr, t)).all()
    assert bloom.may_contain(absent).mean() < 0.05  # about fpp


# ------------------------------------------------------------------------------------------------ bitmaps


def _content(index: BitmapIndex, t: DataType) -> dict[Any, list[int]]:
    values = index.values(t).to_pylist()
    return {_key(v): index.positions(i).tolist() for i, v in enumerate(values)}


def _key(v: Any) -> Any:
    """A hashable key telling apart what Java tells apart (-0.0 and 0.0; every NaN is one value)."""
    if isinstance(v, float):
        return ("nan",) if math.isnan(v) else (v, math.copysign(1, v))
    return v


def _expected(values: list[Any], arr: pa.Array) -> tuple[dict[Any, list[int]], list[int]]:
    out: dict[Any, list[int]] = {}
    for row, v in enumerate(arr.to_pylist()):
        if v is not None:
            out.setdefault(_key(v), []).append(row)
    return out, [row for row, v in enumerate(values) if v is None]


@pytest.mark.parametrize("name,type_name,values", BITMAP_CASES, ids=[c[0] for c in BITMAP_CASES])
def test_bitmaps_of_java_decode_and_ours_hold_the_same(name: str, type_name: str, values: list) -> None:
    t, arr = _column(type_name, values)
    expected, nulls = _expected(values, arr)
    java = BitmapIndex.decode(bytes.fromhex(JAVA["bitmap"][name]["hex"]), t)
    ours = BitmapIndex.decode(encode_bitmap_index(arr, t), t)
    for index in (java, ours):
        assert index.row_count == len(values)
        assert index.has_null == bool(nulls)
        assert index.null_positions().tolist() == nulls
        assert _content(index, t) == expected
    # Java's layout rules: a value (or NULL) of one row is a negative offset, not a bitmap
    assert all((o < 0) == (len(expected[_key(v)]) == 1) for o, v in zip(ours.offsets, ours.values(t).to_pylist()))


def test_bitmap_layout_matches_java_when_the_value_order_does() -> None:
    # Java's hash map happens to keep small INT keys in ascending order, as ours (first appearance) here: the
    # bytes are then identical.
    t, arr = _column("INT", [1, 2, 1, None, 3, None])
    assert encode_bitmap_index(arr, t).hex() == JAVA["bitmap"]["int_small"]["hex"]


def test_bitmap_version_2_is_read() -> None:
    """Java 1.1+ writes version 2 by default: the same facts behind a block directory."""
    t = _type("INT")
    single_rows = {5: 0, 9: 3}  # value -> its only row
    # version, rows, distinct, has null, null offset, null length, 1 block (first key 5, offset 0), body offset
    head = bytes([2]) + (4).to_bytes(4, "big") + (3).to_bytes(4, "big") + b"\x01"
    head += (-1 - 2).to_bytes(4, "big", signed=True) + (0).to_bytes(4, "big")
    head += (1).to_bytes(4, "big") + (5).to_bytes(4, "big") + (0).to_bytes(4, "big")
    block = (3).to_bytes(4, "big")
    entries = [(5, -1 - single_rows[5], -1), (7, -1 - 1, -1), (9, -1 - single_rows[9], -1)]
    for value, offset, length in entries:
        block += b"".join(x.to_bytes(4, "big", signed=True) for x in (value, offset, length))
    blob = head + len(block).to_bytes(4, "big") + block
    index = BitmapIndex.decode(blob, t)
    assert index.version == 2 and index.row_count == 4
    assert index.values(t).to_pylist() == [5, 7, 9]
    assert [index.positions(i).tolist() for i in range(3)] == [[0], [1], [3]]
    assert index.null_positions().tolist() == [2]


def test_bitmap_refuses_what_it_cannot_hold() -> None:
    with pytest.raises(ValueError, match="no bitmap index"):
        encode_bitmap_index(pa.array([True]), _type("BOOLEAN"))
    with pytest.raises(ValueError, match="newer"):
        BitmapIndex.decode(bytes([3]) + bytes(20), _type("INT"))


# ------------------------------------------------------------------------------------------------ containers


@pytest.mark.parametrize("name,columns", CONTAINER_CASES, ids=[c[0] for c in CONTAINER_CASES])
def test_containers_are_javas(name: str, columns: dict) -> None:
    ours = encode_container(columns)
    assert ours.hex() == JAVA["container"][name]["hex"]
    parsed = FileIndexContainer.parse(ours, "f")
    assert parsed.blobs() == columns
    for column, blobs in columns.items():
        for index_type, blob in blobs.items():
            assert parsed.is_empty(column, index_type) == (blob is None)
            assert parsed.blob(column, index_type) == (b"" if blob is None else blob)
    assert parsed.blob("absent", "bitmap") is None


def test_java_utf_round_trips_and_encodes_nul_and_surrogates() -> None:
    for text in ("", "abc", "é名", "😀", "a\x00b"):
        assert read_java_utf(java_utf(text), 0) == (text, len(java_utf(text)))
    assert java_utf("\x00") == b"\x00\x02\xc0\x80"
    assert java_utf("😀") == b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"


def test_a_malformed_container_names_the_file_and_the_fix() -> None:
    with pytest.raises(CorruptMetadataError, match="data-1.parquet.*rewrite_file_index"):
        FileIndexContainer.parse(b"\x00" * 30, "data-1.parquet")
    good = encode_container({"a": {"bitmap": b"123"}})
    with pytest.raises(CorruptMetadataError, match="outside"):
        FileIndexContainer.parse(good[:-2], "data-1.parquet")


# ------------------------------------------------------------------------------------------------ the spec


FIELDS = [
    DataField(0, "id", _type("BIGINT")),
    DataField(1, "s", _type("STRING")),
    DataField(2, "flag", _type("BOOLEAN")),
    DataField(3, "m", _type("MAP<STRING, INT>")),
    DataField(4, "d", _type("DECIMAL(10, 2)")),
]


def test_spec_reads_javas_options() -> None:
    spec = FileIndexSpec.of(
        {
            "file-index.bloom-filter.columns": "id, s,m[k]",
            "file-index.bloom-filter.s.items": "100",
            "file-index.bloom-filter.m.fpp": "0.2",
            "file-index.bitmap.columns": "s",
            "file-index.bsi.columns": "id",  # not written here
            "file-index.in-manifest-threshold": "1 kb",
        },
        FIELDS,
    )
    assert [(i.name, i.index_type, dict(i.options)) for i in spec.indexes] == [
        ("id", "bloom-filter", {}),
        ("s", "bloom-filter", {"items": "100"}),
        ("m[k]", "bloom-filter", {"fpp": "0.2"}),
        ("s", "bitmap", {}),
    ]
    assert spec.in_manifest_threshold == 1024
    assert FileIndexSpec.of({}, FIELDS).in_manifest_threshold == 500 and not FileIndexSpec.of({}, FIELDS).active
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "s": ["a", None],
            "m": pa.array([[("k", 7)], None], pa.map_(pa.string(), pa.int32())),
        }
    )
    container = FileIndexContainer.parse(spec.build(table), "f")
    assert sorted(container.slots) == ["id", "m[k]", "s"]
    assert sorted(container.slots["s"]) == ["bitmap", "bloom-filter"]
    nested = BloomFilter.decode(container.blob("m[k]", "bloom-filter") or b"")
    assert nested.may_contain(hash_column(pa.array([7], pa.int32()), _type("INT"))).all()


@pytest.mark.parametrize(
    "options,message",
    [
        ({"file-index.bloom-filter.columns": "id,,s"}, "empty column"),
        ({"file-index.bloom-filter.columns": "nope"}, "column 'nope'"),
        ({"file-index.bloom-filter.columns": "flag"}, "type BOOLEAN"),
        ({"file-index.bitmap.columns": "flag"}, "type BOOLEAN"),
        ({"file-index.bloom-filter.columns": "d"}, "DECIMAL"),
        ({"file-index.bitmap.columns": "s[k]"}, "not a map"),
        ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.s.items": "5"}, "does not list"),
        ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.fpp": "2"}, "not usable"),
        ({"file-index.bloom-filter.columns": "id", "file-index.bloom-filter.id.items": "x"}, "not usable"),
    ],
)
def test_spec_refuses_what_java_refuses(options: dict, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        FileIndexSpec.of(options, FIELDS)


def test_index_file_names_follow_java() -> None:
    assert index_file_name("data-u-0.parquet") == "data-u-0.parquet.index"
    assert next_index_file_name("data-u-0.parquet.index") == "data-u-0.parquet-1.index"
    assert next_index_file_name("data-u-0.parquet-1.index") == "data-u-0.parquet-2.index"
