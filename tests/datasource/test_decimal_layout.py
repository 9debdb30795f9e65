"""DECIMAL columns in our Parquet data files are laid out as Java writes them (Java's `ParquetSchemaConverter`).

Java's ParquetSchemaConverter stores DECIMAL(p <= 9) as INT32, DECIMAL(p <= 18) as INT64 (logical type DECIMAL
on both) and wider ones as FIXED_LEN_BYTE_ARRAY of the minimal length; Java 1.0 and older read nothing else.
Files of the other layout (FIXED_LEN_BYTE_ARRAY for every precision: older versions of this library, pypaimon)
must keep reading, alone and merged with new files, and the manifest statistics must not depend on the layout.
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.read.file_read import select_row_groups
from pyspark_paimon.datasource.read.read_context import ReadMetrics
from pyspark_paimon.datasource.write import data_files
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.predicate import Leaf

#: (precision, scale) -> (Parquet physical type, FIXED_LEN_BYTE_ARRAY length or None)
LAYOUT = {
    (1, 0): ("INT32", None),
    (9, 2): ("INT32", None),
    (10, 0): ("INT64", None),
    (18, 4): ("INT64", None),
    (19, 0): ("FIXED_LEN_BYTE_ARRAY", 9),
    (38, 10): ("FIXED_LEN_BYTE_ARRAY", 16),
}
COLUMNS = {f"d{p}": (p, s) for p, s in LAYOUT}


def largest(p: int, s: int) -> Decimal:
    """The largest value of DECIMAL(p, s): p nines. Built from text, and negated with ``copy_negate``, because
    Decimal arithmetic (unary minus included) rounds to 28 digits."""
    return Decimal("9" * (p - s) + "." + "9" * s) if s else Decimal("9" * p)


def extremes(p: int, s: int) -> list[Decimal | None]:
    """The largest and smallest value of DECIMAL(p, s), small values of both signs, zero and NULL."""
    tiny = Decimal(1).scaleb(-s)
    return [largest(p, s), largest(p, s).copy_negate(), tiny, -tiny, Decimal(0).scaleb(-s), None]


def arrow_rows(ids: list[int], with_array: bool = True) -> pa.Table:
    cols: dict[str, Any] = {"id": pa.array(ids, pa.int32())}
    for name, (p, s) in COLUMNS.items():
        values = extremes(p, s)
        cols[name] = pa.array([values[i % len(values)] for i in ids], pa.decimal128(p, s))
    if with_array:
        cols["arr"] = pa.array(
            [[Decimal("-1.50"), None, Decimal("9999999.99")] for _ in ids], pa.list_(pa.decimal128(9, 2))
        )
    return pa.table(cols)


def ddl(with_array: bool = True) -> str:
    decs = ", ".join(f"{name} decimal({p},{s})" for name, (p, s) in COLUMNS.items())
    return f"id int not null, {decs}" + (", arr array<decimal(9,2)>" if with_array else "")


def parquet_files(table: Table) -> list[str]:
    out = []
    for root, _, files in os.walk(table.uri.removeprefix("file://")):
        out += [os.path.join(root, f) for f in files if f.endswith(".parquet")]
    return sorted(out, key=os.path.getmtime)


def physical(path: str) -> dict[str, tuple[str, int | None, str]]:
    schema = pq.ParquetFile(path).schema
    out = {}
    for i in range(len(schema)):
        col = schema.column(i)
        length = col.length if col.physical_type == "FIXED_LEN_BYTE_ARRAY" else None
        out[col.path] = (col.physical_type, length, str(col.logical_type))
    return out


def files_of_snapshot(table: Table, snapshot_id: int) -> list[DataFileMeta]:
    store = table.store
    snapshot = table.snapshot(snapshot_id)
    return [e.file for e in store.manifests.read_entries(store.manifests.read_list(snapshot.delta_manifest_list))]


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(str(tmp_path / "wh"))


@pytest.mark.parametrize("primary_key", [False, True])
def test_parquet_physical_type_per_precision(catalog: Catalog, primary_key: bool) -> None:
    t = catalog.create_table(
        "db.t",
        ddl(),
        primary_keys=["id", "d9"] if primary_key else [],
        options={"bucket": "1"} if primary_key else None,
    )
    data = arrow_rows(list(range(12)))
    if primary_key:  # key columns are NOT NULL
        i = data.schema.get_field_index("d9")
        data = data.set_column(i, "d9", pc.fill_null(data.column("d9"), Decimal("0.00")))
    t.write_arrow(data)
    [path] = parquet_files(t)
    cols = physical(path)
    for name, (p, s) in COLUMNS.items():
        kind, length = LAYOUT[(p, s)]
        assert cols[name] == (kind, length, f"Decimal(precision={p}, scale={s})"), name
    assert cols["arr.list.element"][:2] == ("INT32", None)
    if primary_key:
        assert cols["_KEY_d9"][:2] == ("INT32", None)  # key copies follow the same rule
        assert cols["_KEY_id"][:2] == ("INT32", None)
    # the Arrow schema stays decimal128: only the Parquet storage changed
    assert pq.read_schema(path).field("d18").type == pa.decimal128(18, 4)


def test_round_trip_extremes_append_and_primary_key(catalog: Catalog) -> None:
    data = arrow_rows(list(range(12)))
    append = catalog.create_table("db.a", ddl())
    append.write_arrow(data)
    assert append.scan().to_arrow().sort_by("id").to_pylist() == data.to_pylist()

    pk = catalog.create_table("db.pk", ddl(), primary_keys=["id"], options={"bucket": "2"})
    pk.write_arrow(data)
    newer = arrow_rows(list(range(0, 12, 3)))
    newer = newer.set_column(1, "d1", pa.array([Decimal(-9)] * newer.num_rows, pa.decimal128(1, 0)))
    pk.write_arrow(newer)
    expected = {r["id"]: r for r in data.to_pylist()}
    expected.update({r["id"]: r for r in newer.to_pylist()})
    assert pk.scan().to_arrow().sort_by("id").to_pylist() == [expected[i] for i in sorted(expected)]


def test_old_fixed_len_layout_still_reads_and_merges(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = catalog.create_table("db.t", ddl(), primary_keys=["id"], options={"bucket": "1"})
    with monkeypatch.context() as m:  # what versions before Java's layout wrote
        m.setattr(data_files, "PARQUET_LAYOUT", {})
        t.write_arrow(arrow_rows(list(range(12))))
    newer = arrow_rows(list(range(6, 18)))
    t.write_arrow(newer)
    old_file, new_file = parquet_files(t)
    assert physical(old_file)["d9"][0] == "FIXED_LEN_BYTE_ARRAY"
    assert physical(new_file)["d9"][0] == "INT32"
    expected = {r["id"]: r for r in arrow_rows(list(range(12))).to_pylist()}
    expected.update({r["id"]: r for r in newer.to_pylist()})
    assert t.scan().to_arrow().sort_by("id").to_pylist() == [expected[i] for i in sorted(expected)]

    # the manifest statistics do not depend on the layout: same rows, same min/max/null counts
    old_meta = files_of_snapshot(t, 1)
    with monkeypatch.context() as m:
        m.setattr(data_files, "PARQUET_LAYOUT", {})
        t.write_arrow(newer)
    legacy_meta = files_of_snapshot(t, 3)
    [new_meta] = files_of_snapshot(t, 2)
    [legacy] = legacy_meta
    assert (new_meta.value_stats, new_meta.key_stats) == (legacy.value_stats, legacy.key_stats)
    assert old_meta and old_meta[0].value_stats != new_meta.value_stats  # different rows: a real comparison


def test_manifest_stats_hold_the_decimal_extremes(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", ddl(with_array=False))
    t.write_arrow(arrow_rows(list(range(12)), with_array=False))
    [meta] = files_of_snapshot(t, 1)
    assert meta.value_stats_cols is None  # every column has statistics: one stats field per column
    types = [
        AtomicType("INT", nullable=False),
        *(AtomicType("DECIMAL", precision=p, scale=s) for p, s in COLUMNS.values()),
    ]
    lo = deserialize_row(meta.value_stats.min_values, types)
    hi = deserialize_row(meta.value_stats.max_values, types)
    for i, (name, (p, s)) in enumerate(COLUMNS.items(), start=1):
        biggest = largest(p, s)
        assert (lo[i], hi[i]) == (biggest.copy_negate(), biggest), name
        assert meta.value_stats.null_counts[i] == 2, name


@pytest.mark.parametrize("legacy", [False, True])
def test_row_group_statistics_of_both_layouts_skip(tmp_path, monkeypatch: pytest.MonkeyPatch, legacy: bool) -> None:
    """Row-group skipping on decimal columns works for INT32/INT64 files too (pyarrow < 23 cannot convert
    their statistics itself) and for the old FIXED_LEN_BYTE_ARRAY files."""
    t = Catalog(str(tmp_path / "wh")).create_table("db.t", ddl())
    if legacy:
        monkeypatch.setattr(data_files, "PARQUET_LAYOUT", {})
    t.write_arrow(arrow_rows(list(range(12))))
    [path] = parquet_files(t)
    f = pq.ParquetFile(path)
    for name, (p, s) in COLUMNS.items():
        biggest = largest(p, s)
        metrics = ReadMetrics()
        assert select_row_groups(f, [Leaf(name, ">", biggest)], metrics) == [], name
        assert metrics.row_groups_skipped == 1
        assert select_row_groups(f, [Leaf(name, "=", biggest.copy_negate())]) == [0], name
