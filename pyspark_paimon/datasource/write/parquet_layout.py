"""How our data files are laid out in Parquet: the writer settings every reader of Paimon tables can read.

Readers we must serve: Java Paimon 1.0.0, whose vectorized reader decodes top-level columns only in PLAIN or
dictionary encoding (``AbstractColumnReader`` refuses anything else; DELTA_* readers arrived in 1.0.1),
pypaimon (pyarrow) and pypaimon-rust (arrow-rs). So the encodings stay PLAIN and RLE_DICTIONARY, and what we
choose is *where* a dictionary is used.

pyarrow dictionary-encodes every column until the dictionary page reaches its size limit. For a column of
distinct values (keys, ``_SEQUENCE_NUMBER``, most value columns of a primary-key file) that stores every value
once in the dictionary page and then once more as a bit-packed index per row, which zstd barely compresses:
the anchor of a 500k-key chain table took 8.0 MB this way and 3.4 MB with PLAIN. Java's parquet-mr writer
avoids it by falling back to PLAIN after its first page when the dictionary does not pay; we make the same
kind of decision up front, per column of each file, from a sample of its first rows (:func:`dictionary_columns`).

Opt-in, with Paimon's pass-through key ``parquet.writer.version = v2`` (what Java hands to parquet-mr): integer
columns without a dictionary are written DELTA_BINARY_PACKED and string/binary ones DELTA_BYTE_ARRAY, in data
pages v2, as parquet-mr's v2 writer falls back from a dictionary. Sorted keys and sequence numbers shrink to
almost nothing (the chain anchor: 3.4 MB -> 1.7 MB), but Java 1.0.0 refuses those pages ("Unsupported encoding";
Java >= 1.0.1, pypaimon, pypaimon-rust and pyarrow >= 18 read them), hence not the default.

``store_schema`` is off: the ``ARROW:schema`` footer entry (about 1.3 KB per file, a large share of a small
delta file) is pyarrow-only; Java does not write it and every reader, ours included, takes the types from
the Parquet schema and Paimon's table schema instead.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "PARQUET_LAYOUT",
    "DICTIONARY_SAMPLE_ROWS",
    "dictionary_columns",
    "dictionary_pays",
    "leaf_paths",
    "encoding_settings",
    "is_writer_v2",
]

#: Parquet layout settings of every data file we write. ``store_decimal_as_integer``: DECIMAL(p <= 9) as INT32
#: and DECIMAL(p <= 18) as INT64 (with the DECIMAL logical type), wider ones as FIXED_LEN_BYTE_ARRAY of the
#: minimal length, which is how Java's ParquetSchemaConverter lays decimals out; Java 1.0 and older
#: read and compact no other layout. Our reader accepts both, because older versions of this library and
#: pypaimon wrote FIXED_LEN_BYTE_ARRAY for every precision. ``store_schema``: see the module docstring.
PARQUET_LAYOUT: dict[str, Any] = {"store_decimal_as_integer": True, "store_schema": False}

#: Rows of a column the dictionary decision looks at: about one data page, like parquet-mr's decision after
#: its first page; a file's first rows are representative because its rows are sorted by key.
DICTIONARY_SAMPLE_ROWS = 20_000

# Bytes per value of PLAIN-encoded variable-width values besides the value itself (the 4-byte length).
_LENGTH_PREFIX = 4


def _is_nested(t: pa.DataType) -> bool:
    return (
        pa.types.is_struct(t)
        or pa.types.is_map(t)
        or pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
    )


def _plain_width(col: pa.ChunkedArray | pa.Array, valid: int) -> float | None:
    """Average PLAIN bytes per non-null value, or None for types without a meaningful width."""
    t = col.type
    if pa.types.is_boolean(t):
        return 1 / 8
    if pa.types.is_decimal(t) or pa.types.is_fixed_size_binary(t):
        return float(t.byte_width)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        total = pc.sum(pc.binary_length(col)).as_py() or 0
        return total / valid + _LENGTH_PREFIX
    try:
        return t.bit_width / 8
    except ValueError:  # a type without a fixed width we do not know how to size
        return None


def _strictly_increasing(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether every value is greater than the one before (so all are distinct). Key columns and sequence
    numbers of a primary-key file usually are, and this comparison costs a tenth of a distinct count, which
    for a table of many buckets (many small files) was a third of the write's CPU."""
    n = len(col)
    if n < 2 or col.null_count:
        return False
    try:
        return pc.all(pc.greater(col.slice(1), col.slice(0, n - 1))).as_py() is True
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):  # a type without an order
        return False


def dictionary_pays(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether dictionary encoding stores ``col`` (a sample) in fewer bytes than PLAIN, before compression:
    dictionary = each distinct value once + a bit-packed index per value. Columns of distinct values never
    pay; low-cardinality ones (flags, dates, day numbers, row kinds) do."""
    valid = len(col) - col.null_count
    if valid == 0:
        return True  # all null: no values either way, and no index is written
    width = _plain_width(col, valid)
    if width is None:
        return True
    distinct = valid if _strictly_increasing(col) else pc.count_distinct(col, mode="only_valid").as_py()
    index_bits = max(1, math.ceil(math.log2(distinct))) if distinct > 1 else 1
    return distinct * width + valid * index_bits / 8 < valid * width


def dictionary_columns(table: pa.Table, sample_rows: int = DICTIONARY_SAMPLE_ROWS) -> list[str]:
    """Parquet column paths of ``table`` to dictionary-encode (pyarrow's ``use_dictionary`` list).

    Top-level primitive columns get a dictionary when :func:`dictionary_pays` on their first
    ``sample_rows`` rows. Nested columns keep a dictionary on every leaf (pyarrow's default, unchanged); their
    leaf paths are pyarrow's (``a.list.element``, ``m.key_value.key``, ``s.x``), enumerated by the caller's
    schema through :func:`leaf_paths`."""
    sample = table.slice(0, sample_rows)
    chosen: list[str] = []
    for field, paths in zip(table.schema, leaf_paths(table.schema)):
        if _is_nested(field.type) or dictionary_pays(sample.column(field.name)):
            chosen.extend(paths)
    return chosen


def is_writer_v2(version: str) -> bool:
    """``parquet.writer.version`` (already lower-cased and validated) names parquet-mr's v2 writer."""
    return version in ("v2", "parquet_2_0")


def _v2_encoding(t: pa.DataType) -> str | None:
    """parquet-mr's v2 fallback encoding of a column without a dictionary; None = PLAIN (floats, booleans,
    fixed-length binaries and decimals, which pyarrow does not delta-encode)."""
    if pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return "DELTA_BINARY_PACKED"
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return "DELTA_BYTE_ARRAY"
    return None


def encoding_settings(table: pa.Table, writer_v2: bool = False) -> dict[str, Any]:
    """pyarrow ``write_table`` arguments choosing each column's encoding: :func:`dictionary_columns`, and
    with ``writer_v2`` DELTA encodings for the other integer and string columns plus data pages v2."""
    dictionary = dictionary_columns(table)
    settings: dict[str, Any] = {"use_dictionary": dictionary}
    if writer_v2:
        chosen = set(dictionary)
        settings["data_page_version"] = "2.0"
        settings["column_encoding"] = {
            f.name: enc for f in table.schema if f.name not in chosen and (enc := _v2_encoding(f.type)) is not None
        }
    return settings


def leaf_paths(schema: pa.Schema) -> list[list[str]]:
    """Per top-level field, the dot paths of its Parquet leaf columns as pyarrow writes them (compliant
    nested types: lists as ``<name>.list.element``, maps as ``<name>.key_value.key`` / ``.value``)."""
    return [_paths(f.name, f.type) for f in schema]


def _paths(prefix: str, t: pa.DataType) -> list[str]:
    if pa.types.is_struct(t):
        return [p for i in range(t.num_fields) for p in _paths(f"{prefix}.{t.field(i).name}", t.field(i).type)]
    if pa.types.is_map(t):
        return _paths(f"{prefix}.key_value.key", t.key_type) + _paths(f"{prefix}.key_value.value", t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _paths(f"{prefix}.list.element", t.value_type)
    return [prefix]
