"""The Parquet layout of our data files (datasource/write/parquet_layout.py): dictionary only where it pays, PLAIN
elsewhere, no ARROW:schema footer entry, and the files read back exactly (also on the min-deps pyarrow)."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.write import parquet_layout
from pyspark_paimon.datasource.write.parquet_layout import dictionary_columns, dictionary_pays, leaf_paths
from pyspark_paimon.errors import OptionError


def test_dictionary_pays_only_for_repeated_values() -> None:
    n = 5000
    assert not dictionary_pays(pa.array(range(n), pa.int64()))  # keys: distinct
    assert not dictionary_pays(pa.array([f"v{i}" for i in range(n)]))  # distinct strings
    assert dictionary_pays(pa.array([i % 3 for i in range(n)], pa.int64()))  # day numbers, flags
    assert dictionary_pays(pa.array(["20250101"] * n))  # a partition value
    assert dictionary_pays(pa.array([None] * n, pa.string()))  # all NULL
    assert not dictionary_pays(pa.array([True, False] * n))  # 1 bit per value already
    # long strings repeated a few times each: the dictionary stores each once
    assert dictionary_pays(pa.array([("x" * 50) + str(i % 100) for i in range(n)]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-3, 40)), max_size=60), st.booleans(), st.booleans())
def test_the_increasing_shortcut_decides_as_the_distinct_count(values: list, sort: bool, as_text: bool) -> None:
    """Strictly increasing columns (keys, sequence numbers) skip the distinct count; the decision must be the
    one the count gives, for any column."""
    if sort:
        values = sorted(set(v for v in values if v is not None))
    col = pa.array(
        [None if v is None else (f"k{v:03d}" if as_text else v) for v in values], pa.string() if as_text else pa.int64()
    )
    shortcut = dictionary_pays(col)
    real = parquet_layout._strictly_increasing
    try:
        parquet_layout._strictly_increasing = lambda c: False  # type: ignore[assignment]
        assert shortcut == dictionary_pays(col)
    finally:
        parquet_layout._strictly_increasing = real
    got = col.to_pylist()
    assert parquet_layout._strictly_increasing(col) == (
        len(got) >= 2 and None not in got and all(a < b for a, b in zip(got, got[1:]))
    )


def test_nested_columns_keep_a_dictionary_on_every_leaf() -> None:
    t = pa.table(
        {
            "id": pa.array(range(100), pa.int64()),
            "arr": pa.array([["a", None]] * 100, pa.list_(pa.string())),
            "m": pa.array([[(1, "x")]] * 100, pa.map_(pa.int32(), pa.string())),
            "r": pa.array([{"x": 1, "y": "z"}] * 100, pa.struct([("x", pa.int32()), ("y", pa.string())])),
        }
    )
    assert leaf_paths(t.schema) == [
        ["id"],
        ["arr.list.element"],
        ["m.key_value.key", "m.key_value.value"],
        ["r.x", "r.y"],
    ]
    assert dictionary_columns(t) == ["arr.list.element", "m.key_value.key", "m.key_value.value", "r.x", "r.y"]


def test_pk_files_are_plain_where_values_are_distinct_and_read_back(warehouse: str) -> None:
    table = Catalog(warehouse).create_table(
        "db.t",
        "id bigint not null, v string, d double, day string, n int",
        primary_keys=["id"],
        options={"bucket": "1"},
    )
    n = 3000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "v": [f"v_{i}" for i in range(n)],
            "d": [i * 0.5 for i in range(n)],
            "day": ["20250101"] * n,
            "n": pa.array([None if i % 7 == 3 else i % 4 for i in range(n)], pa.int32()),
        }
    )
    table.write_arrow(data)
    (path,) = glob.glob(os.path.join(table.store.table_path, "bucket-0", "*.parquet"))
    md = pq.ParquetFile(path).metadata
    assert md.metadata is None or b"ARROW:schema" not in md.metadata
    enc = {md.row_group(0).column(c).path_in_schema: md.row_group(0).column(c).encodings for c in range(md.num_columns)}
    for plain in ("_KEY_id", "_SEQUENCE_NUMBER", "id", "v", "d"):
        assert "RLE_DICTIONARY" not in enc[plain], (plain, enc[plain])
    for dictionary in ("_VALUE_KIND", "day", "n"):
        assert "RLE_DICTIONARY" in enc[dictionary], (dictionary, enc[dictionary])
    assert table.scan().to_arrow().sort_by("id").to_pylist() == data.to_pylist()


def _encodings(path: str) -> dict[str, tuple[str, ...]]:
    md = pq.ParquetFile(path).metadata
    return {
        md.row_group(0).column(c).path_in_schema: md.row_group(0).column(c).encodings for c in range(md.num_columns)
    }


def test_writer_v2_is_opt_in_delta_encodings(warehouse: str) -> None:
    """``parquet.writer.version = v2`` (Paimon's pass-through key): DELTA encodings where no dictionary pays."""
    table = Catalog(warehouse).create_table(
        "db.t",
        "id bigint not null, v string, d double, day string, ts timestamp_ntz, n int",
        primary_keys=["id"],
        options={"bucket": "1", "parquet.writer.version": "V2"},
    )
    n = 3000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "v": [None if i % 5 == 0 else f"v_{i}" for i in range(n)],
            "d": [i * 0.5 for i in range(n)],
            "day": ["20250101"] * n,
            "ts": pa.array([i * 1_000_003 for i in range(n)], pa.timestamp("us")),
            "n": pa.array([None if i % 7 == 3 else i for i in range(n)], pa.int32()),
        }
    )
    table.write_arrow(data)
    (path,) = glob.glob(os.path.join(table.store.table_path, "bucket-0", "*.parquet"))
    enc = _encodings(path)
    for delta in ("_KEY_id", "_SEQUENCE_NUMBER", "id", "ts", "n"):
        assert "DELTA_BINARY_PACKED" in enc[delta], (delta, enc[delta])
    assert "DELTA_BYTE_ARRAY" in enc["v"]
    assert "RLE_DICTIONARY" not in enc["d"] and "PLAIN" in enc["d"]
    assert "RLE_DICTIONARY" in enc["day"] and "RLE_DICTIONARY" in enc["_VALUE_KIND"]
    assert table.scan().to_arrow().sort_by("id").to_pylist() == data.to_pylist()


def test_unknown_writer_version_is_refused(warehouse: str) -> None:
    with pytest.raises(OptionError, match="parquet.writer.version"):
        Catalog(warehouse).create_table(
            "db.t", "id bigint not null", primary_keys=["id"], options={"bucket": "1", "parquet.writer.version": "v3"}
        )
