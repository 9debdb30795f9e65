"""File indexes between Java Paimon (the Java oracle's 1.0-SNAPSHOT jar) and us.

1. The recorded vectors (``tests/metadata/fixtures/fileindex/java_vectors.json``) are what the jar writes now.
2. Java's index readers answer on our index bytes as on its own: a value present keeps the file, a value a
   bitmap does not hold skips it.
3. Java writes bloom-filter and bitmap indexed append tables (indexes in the manifest and in index files); our
   scans skip exactly the files Java's index skips, counted in the explain, and return the same rows. (The jar
   writes no index for primary-key files: Java added those in 1.0's release, after this snapshot.)
4. We write indexed tables; Java's index skips the same files ours does, and Java reads every row.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.metadata.fileindex.bitmap_index import encode_bitmap_index
from pyspark_paimon.metadata.fileindex.bloom_filter import BloomFilter
from pyspark_paimon.metadata.fileindex.fast_hash import hash_column
from pyspark_paimon.metadata.types.json_codec import parse_type
from pyspark_paimon.planner.explain import ScanExplain
from tests.interop.helpers import canonical_rows, sorted_rows, table_uri
from tests.metadata.fixtures.fileindex.java_vectors import BITMAP_CASES, BLOOM_CASES, VECTORS, generate, java_value
from tests.metadata.test_file_index import _column
from tests.oracle.java_oracle import JavaOracle
from tests.oracle.oracle import type_json

pytestmark = pytest.mark.interop

COLUMNS = [["id", "INT", False], ["s", "STRING"], ["c", "STRING"], ["n", "BIGINT"]]


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _rows(batch: int, size: int) -> list[dict[str, Any]]:
    """Rows of one commit: ids and strings unique to the batch, ``c`` one of two colours per batch (or NULL)."""
    out = []
    for i in range(size):
        k = batch * 1000 + i
        out.append(
            {
                "id": k,
                "s": f"s-{k * 7919 % 100_003}",
                "c": None if i % 5 == 4 else f"colour-{batch}-{i % 2}",
                "n": k * 11,
            }
        )
    return out


def _explain(table: Table, filter: str, **read_options: str) -> ScanExplain:
    return table.scan(filter=filter, read_options=read_options).explain()


def _kept(table: Table, filter: str) -> set[str]:
    plan = table.scan(filter=filter).read_job().plan
    return {f.file_name for s in plan.splits for f in s.files}


# ------------------------------------------------------------------------------------ 1. the vectors


def test_recorded_vectors_are_what_the_jar_writes(java: JavaOracle) -> None:
    assert generate(java) == json.loads(VECTORS.read_text())


# ------------------------------------------------------------------------------------ 2. our bytes, Java's reader


def _present(values: list[Any]) -> list[Any]:
    return [v for v in values if v is not None and not (isinstance(v, float) and (math.isnan(v) or v == 0))]


@pytest.mark.parametrize("name,type_name,values,options", BLOOM_CASES, ids=[c[0] for c in BLOOM_CASES])
def test_java_reads_our_bloom_filters(java: JavaOracle, name: str, type_name: str, values: list, options: dict) -> None:
    t, arr = _column(type_name, values)
    items, fpp = int(options.get("items", 1_000_000)), float(options.get("fpp", 0.1))
    ours = BloomFilter.build(hash_column(arr, t), items, fpp).encode()
    probes = [{"op": "=", "values": [java_value(v)]} for v in _present(values)]
    assert all(java.file_index_probe(type_name, "bloom-filter", ours, probes))


@pytest.mark.parametrize("name,type_name,values", BITMAP_CASES, ids=[c[0] for c in BITMAP_CASES])
def test_java_reads_our_bitmaps(java: JavaOracle, name: str, type_name: str, values: list) -> None:
    t, arr = _column(type_name, values)
    ours = encode_bitmap_index(arr, t)
    present = _present(values)[:50]
    absent = {"STRING": "never-there", "DATE": "2001-01-01", "FLOAT": 99.5, "DOUBLE": 99.5}.get(type_name.split("(")[0])
    if absent is None:
        absent = "2011-11-11T11:11:11" if type_name.startswith("TIMESTAMP") else 99
    probes = [{"op": "=", "values": [java_value(v)]} for v in present]
    probes += [
        {"op": "=", "values": [absent]},
        {"op": "in", "values": [absent] + [java_value(v) for v in present[:1]]},
        {"op": "is_null"},
        {"op": "is_not_null"},
    ]
    non_null = any(v is not None for v in values)
    expected = [True] * len(present) + [False, bool(present), None in values, non_null]
    assert java.file_index_probe(type_name, "bitmap", ours, probes) == expected


# ------------------------------------------------------------------------------------ 3. Java writes, we prune


@pytest.mark.parametrize("threshold", ["500 B", "1 B"], ids=["in-manifest", "index-files"])
def test_we_prune_with_javas_indexes(java: JavaOracle, warehouse: str, threshold: str) -> None:
    t = "db.t"
    java.create(
        warehouse,
        t,
        COLUMNS,
        options={
            "file-index.bloom-filter.columns": "s,n",
            "file-index.bloom-filter.s.items": "50",
            "file-index.bloom-filter.n.items": "50",
            "file-index.bitmap.columns": "c",
            "file-index.in-manifest-threshold": threshold,
        },
    )
    batches = [_rows(b, 20) for b in range(5)]
    for rows in batches:
        java.write(warehouse, t, rows)
    files = java.files(warehouse, t)
    assert len(files) == 5
    if threshold == "1 B":
        assert all(f["embedded_index"] is None and f["extra_files"] for f in files)
    else:
        assert all(f["embedded_index"] is not None and not f["extra_files"] for f in files)
    table = Table.open(table_uri(warehouse, t))
    needle = batches[2][7]
    # (filter, Java's leaves, whether Java's index answers it as ours does; the bitmap lists every value, so
    # ours also answers comparisons, which Java's 1.0 index leaves alone)
    cases: list[tuple[str, list[dict[str, Any]], bool]] = [
        (f"s = '{needle['s']}'", [{"column": "s", "op": "=", "values": [needle["s"]]}], True),
        (f"n IN ({needle['n']}, -5)", [{"column": "n", "op": "in", "values": [needle["n"], -5]}], True),
        ("c = 'colour-3-1'", [{"column": "c", "op": "=", "values": ["colour-3-1"]}], True),
        ("c = 'colour-9-9'", [{"column": "c", "op": "=", "values": ["colour-9-9"]}], True),
        (
            "c IN ('colour-0-0', 'colour-4-1')",
            [{"column": "c", "op": "in", "values": ["colour-0-0", "colour-4-1"]}],
            True,
        ),
        ("c IS NULL", [{"column": "c", "op": "is_null"}], True),
        ("c > 'colour-3'", [{"column": "c", "op": "is_not_null"}], False),
    ]
    for sql, java_filter, same in cases:
        java_kept = {name for name, kept in java.file_index_verdicts(warehouse, t, java_filter).items() if kept}
        ours = _kept(table, sql)
        assert (ours == java_kept) if same else (ours < java_kept), sql
        explain = _explain(table, sql).counters
        assert explain.files_skipped_stats + explain.files_skipped_index == 5 - len(ours), sql
        read = 5 - explain.files_skipped_stats  # index files of the files statistics left (n is ordered)
        assert explain.index_files_read == (read if threshold == "1 B" else 0), sql
        expected = [r for rows in batches for r in rows if _matches(sql, r)]
        assert canonical_rows(table.scan(filter=sql).to_arrow()) == sorted_rows(expected), sql
    off = _explain(table, f"s = '{needle['s']}'", **{"file-index.read.enabled": "false"}).counters
    assert off.files_skipped_index == 0 and off.index_files_read == 0


def _matches(sql: str, r: dict[str, Any]) -> bool:
    c = r["c"]
    if sql.startswith("s = "):
        return f"s = '{r['s']}'" == sql
    if sql.startswith("n IN"):
        return sql.startswith(f"n IN ({r['n']},")
    if sql == "c IS NULL":
        return c is None
    if sql.startswith("c IN"):
        return c in ("colour-0-0", "colour-4-1")
    if sql.startswith("c >"):
        return c is not None and c > "colour-3"
    return c is not None and sql == f"c = '{c}'"


# ------------------------------------------------------------------------------------ 4. we write, Java prunes


def _catalog_table(warehouse: str, identifier: str, options: dict[str, str], pk: bool = False) -> Table:
    columns = [(c[0], parse_type(type_json(c[1] + ("" if len(c) < 3 or c[2] else " NOT NULL")))) for c in COLUMNS]
    return Catalog(warehouse).create_table(identifier, columns, primary_keys=["id"] if pk else (), options=options)


@pytest.mark.parametrize("threshold", ["500 B", "1 B"], ids=["in-manifest", "index-files"])
def test_java_prunes_with_our_indexes(java: JavaOracle, warehouse: str, threshold: str) -> None:
    t = "db.ours"
    table = _catalog_table(
        warehouse,
        t,
        {
            "file-index.bloom-filter.columns": "s,n",
            "file-index.bloom-filter.s.items": "50",
            "file-index.bloom-filter.n.items": "50",
            "file-index.bitmap.columns": "c",
            "file-index.in-manifest-threshold": threshold,
        },
    )
    batches = [_rows(b, 20) for b in range(4)]
    schema = table.schema.arrow_schema()
    for rows in batches:
        table.write_arrow(pa.Table.from_pylist(rows, schema=schema))
    files = java.files(warehouse, t)
    assert len(files) == 4
    if threshold == "1 B":
        assert all(f["embedded_index"] is None and f["extra_files"] == [f["file"] + ".index"] for f in files)
    else:
        assert all(f["embedded_index"] is not None for f in files)
    needle = batches[1][3]
    for sql, java_filter in [
        (f"s = '{needle['s']}'", [{"column": "s", "op": "=", "values": [needle["s"]]}]),
        (f"n = {needle['n']}", [{"column": "n", "op": "=", "values": [needle["n"]]}]),
        ("c = 'colour-2-0'", [{"column": "c", "op": "=", "values": ["colour-2-0"]}]),
        ("c IS NULL", [{"column": "c", "op": "is_null"}]),
    ]:
        verdicts = java.file_index_verdicts(warehouse, t, java_filter)
        assert _kept(table, sql) == {name for name, kept in verdicts.items() if kept}, sql
        assert sum(verdicts.values()) < len(verdicts) or sql == "c IS NULL", sql
    assert sorted_rows(java.read(warehouse, t).rows) == sorted_rows(r for rows in batches for r in rows)


def test_java_prunes_with_indexes_our_rewrite_added_to_its_table(java: JavaOracle, warehouse: str) -> None:
    t = "db.later"
    java.create(warehouse, t, COLUMNS)
    batches = [_rows(b, 20) for b in range(3)]
    for rows in batches:
        java.write(warehouse, t, rows)
    table = Table.open(table_uri(warehouse, t))
    table.update_schema().set_options(
        {"file-index.bitmap.columns": "c", "file-index.bloom-filter.columns": "s"}
    ).commit()
    result = table.maintenance.rewrite_file_index()
    assert result.files == 3 and result.index_files == 3  # a default-size bloom filter is 600 KB: index files
    verdicts = java.file_index_verdicts(warehouse, t, [{"column": "c", "op": "=", "values": ["colour-1-1"]}])
    assert sorted(verdicts.values()) == [False, False, True]
    assert _kept(table, "c = 'colour-1-1'") == {name for name, kept in verdicts.items() if kept}
    java.write(warehouse, t, _rows(3, 20))  # Java keeps writing the table, now indexing its own files
    assert all(f["extra_files"] for f in java.files(warehouse, t))
    assert sorted_rows(java.read(warehouse, t).rows) == sorted_rows(r for b in range(4) for r in _rows(b, 20))


def test_java_reads_our_indexed_primary_key_table(java: JavaOracle, warehouse: str) -> None:
    t = "db.pk"
    table = _catalog_table(
        warehouse, t, {"bucket": "2", "file-index.bloom-filter.columns": "s", "file-index.bitmap.columns": "c"}, pk=True
    )
    schema = table.schema.arrow_schema()
    table.write_arrow(pa.Table.from_pylist(_rows(0, 30), schema=schema))
    table.write_arrow(pa.Table.from_pylist(_rows(0, 10) + _rows(1, 5), schema=schema))
    table.maintenance.compact(full=True)
    assert all(f["embedded_index"] or f["extra_files"] for f in java.files(warehouse, t))
    assert sorted_rows(java.read(warehouse, t).rows) == sorted_rows(_rows(0, 30) + _rows(1, 5))
    assert canonical_rows(table.scan(filter="c = 'colour-1-0'").to_arrow()) == sorted_rows(
        r for r in _rows(1, 5) if r["c"] == "colour-1-0"
    )
