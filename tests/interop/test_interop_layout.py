"""Our Parquet layout (`datasource/write/parquet_layout.py`) is read by every reader of Paimon tables.

Data files now mix PLAIN column chunks (columns of distinct values: keys, ``_SEQUENCE_NUMBER``, most values)
with RLE_DICTIONARY ones (low-cardinality columns, nested leaves) and carry no ``ARROW:schema`` footer entry.
One primary-key table with every common type, NULLs and nested values, written by us in two commits, must
read the same in Java Paimon 1.0 (whose reader decodes only PLAIN and dictionary pages), pypaimon,
pypaimon-rust and ourselves; the files must really hold both encodings, or the test proves nothing. That table
and its twin with the opt-in writer v2 are read by pypaimon and rust in one oracle process (the module fixture
`written`).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow.parquet as pq
import pytest

from tests.interop.helpers import OracleBatch, assert_oracles_agree, assert_same_table, canonical_rows, table_uri
from tests.interop.test_java import (
    COMMON,
    EXTRA,
    SHORT_DECIMALS,
    _create_ours,
    _full,
    _ours,
    _upsert,
    _write_ours,
    assert_agree,
    common_row,
)
from tests.oracle.java_oracle import JavaOracle, JavaOracleError

pytestmark = pytest.mark.interop

T, T_V2 = "db.layout", "db.layout_v2"
COLUMNS = [*COMMON, *SHORT_DECIMALS, *EXTRA, ["grade", "STRING"], ["part", "STRING", False]]


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _rows(ids: range, tag: str) -> list[dict[str, Any]]:  # common_row: i < 100 (TINYINT, DECIMAL(20, 4))
    # `grade` has 3 values (dictionary pays), `id`/`s`/`big`/... are distinct (PLAIN); every 7th row is NULL
    return [
        {**common_row(i, tag, extra=True), "grade": None if i % 7 == 3 else f"g{i % 3}", "part": f"p{i % 2}"}
        for i in ids
    ]


def _encodings(warehouse: str, identifier: str) -> dict[str, set[str]]:
    """Column -> the data encodings of its chunks across every data file of the table."""
    found: dict[str, set[str]] = {}
    for path in glob.glob(os.path.join(table_uri(warehouse, identifier), "part=*", "bucket-*", "*.parquet")):
        f = pq.ParquetFile(path)
        assert f.metadata.metadata is None or b"ARROW:schema" not in f.metadata.metadata, path
        for rg in range(f.metadata.num_row_groups):
            for c in range(f.metadata.num_columns):
                chunk = f.metadata.row_group(rg).column(c)
                found.setdefault(chunk.path_in_schema, set()).update(chunk.encodings)
    return found


@dataclass
class Written:
    """The module's two tables (our default layout `T`, the opt-in writer v2 `T_V2`), the rows every reader must
    return for each, and both oracles' reads of them."""

    warehouse: str
    states: dict[str, dict[Any, dict[str, Any]]]
    theirs: OracleBatch


@pytest.fixture(scope="module")
def written(module_warehouse: str) -> Written:
    """Both tables, each written by us in two commits, then read by pypaimon and rust in ONE oracle process."""
    states: dict[str, dict[Any, dict[str, Any]]] = {}
    for identifier, writer_options in ((T, {}), (T_V2, {"parquet.writer.version": "v2"})):
        table = _create_ours(
            module_warehouse,
            identifier,
            COLUMNS,
            partition_keys=["part"],
            primary_keys=["part", "id"],
            options={"bucket": 2, **writer_options},
        )
        state = states[identifier] = {}
        for commit in (_rows(range(96), "c1"), _rows(range(0, 96, 9), "c2")):
            _write_ours(table, commit)
            _upsert(state, commit, None, ("part", "id"))
    batch = OracleBatch(module_warehouse)
    for identifier in (T, T_V2):
        batch.read(identifier, identifier)
    return Written(module_warehouse, states, batch.run())


def test_every_reader_reads_the_mixed_plain_and_dictionary_layout(java: JavaOracle, written: Written) -> None:
    warehouse = written.warehouse
    enc = _encodings(warehouse, T)
    for plain in ("_KEY_id", "_SEQUENCE_NUMBER", "id", "s", "big", "d", "ts"):
        assert "RLE_DICTIONARY" not in enc[plain] and "PLAIN" in enc[plain], (plain, enc[plain])
    for dictionary in ("grade", "_VALUE_KIND", "part", "arr.list.element"):
        assert "RLE_DICTIONARY" in enc[dictionary], (dictionary, enc[dictionary])
    assert set().union(*enc.values()) <= {"PLAIN", "RLE", "RLE_DICTIONARY"}, enc

    ours = _ours(warehouse, T)
    assert_agree(ours, java.read(warehouse, T), written.states[T].values())
    theirs = assert_oracles_agree(written.theirs.tables[T], "layout")
    assert_same_table(ours, theirs, "layout")
    assert canonical_rows(ours) == canonical_rows(theirs)


def test_writer_v2_reads_in_pypaimon_and_rust_but_not_java_1_0_0(java: JavaOracle, written: Written) -> None:
    """The opt-in ``parquet.writer.version = v2`` (DELTA encodings): pypaimon and pypaimon-rust read it as we do;
    Java 1.0.0 refuses the pages, which is why it is not our default (Java >= 1.0.1 reads them)."""
    warehouse = written.warehouse
    enc = _encodings(warehouse, T_V2)
    for delta in ("_KEY_id", "_SEQUENCE_NUMBER", "id", "big", "day", "ts"):
        assert "DELTA_BINARY_PACKED" in enc[delta], (delta, enc[delta])
    assert "DELTA_BYTE_ARRAY" in enc["s"], enc["s"]

    ours = _ours(warehouse, T_V2)
    assert canonical_rows(ours) == _full(written.states[T_V2].values(), ours.column_names)
    assert_same_table(ours, assert_oracles_agree(written.theirs.tables[T_V2], "v2"), "v2")
    with pytest.raises(JavaOracleError, match="Unsupported encoding: DELTA"):
        java.read(warehouse, T_V2)
