"""Every ALTER kind, read back through every read path on files written before it.

Two tables (primary key, one bucket: merged reads; append: one file per split, some read by Spark's own Parquet
reader through ``to_spark``) get three rows under schema 0, then ONE schema change of every kind: widening (INT to
BIGINT, DECIMAL precision, a ROW member), explicit casts (STRING to INT, DECIMAL to DOUBLE), TIMESTAMP precision cut,
TIMESTAMP to DATE, NOT NULL dropped and added, a comment, two moves, a rename, an add and a drop; then rows under the
new schema. Each path must return the old rows converted as Java converts them: ``t.scan()`` (with a filter and a
projection on changed columns), Spark's reader, ``to_spark``, a stream from the first snapshot, and ``t.diff``.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import SchemaError
from pyspark_paimon.planner.stream_offset import StreamOffset

OLD_DDL = (
    "id int not null, a int, d decimal(10,2), dd decimal(10,2), s string, ts timestamp_ntz, td timestamp_ntz, "
    "r struct<x: int, y: string>, n int not null, k int, c string, m int, old_name string, gone int"
)
T = dt.datetime
OLD_ROWS: list[dict[str, Any]] = [
    {"id": 1, "a": 1, "d": Decimal("1.10"), "dd": Decimal("0.10"), "s": "12", "ts": T(2024, 1, 1, 12, 0, 0, 123456),
     "td": T(2024, 1, 1, 23, 59, 59), "r": {"x": 1, "y": "a"}, "n": 10, "k": 100, "c": "c1", "m": 7,
     "old_name": "o1", "gone": 9},
    {"id": 2, "a": 2**31 - 1, "d": Decimal("-5.00"), "dd": None, "s": None, "ts": None, "td": T(1969, 12, 31, 23),
     "r": None, "n": 20, "k": 200, "c": None, "m": 8, "old_name": None, "gone": None},
    {"id": 3, "a": -3, "d": Decimal("0.01"), "dd": Decimal("2.55"), "s": "-7", "ts": T(2024, 6, 30, 0, 0, 0, 999999),
     "td": T(2024, 6, 30), "r": {"x": -1, "y": None}, "n": 30, "k": 300, "c": "c3", "m": 9, "old_name": "o3",
     "gone": 1},
]  # fmt: skip
NEW_ORDER = ["m", "id", "c", "a", "d", "dd", "s", "ts", "td", "r", "n", "k", "new_name", "extra"]
# The old rows as every read must return them after the change (Java's conversions).
OLD_CONVERTED: list[dict[str, Any]] = [
    {"m": 7, "id": 1, "c": "c1", "a": 1, "d": Decimal("1.10"), "dd": 0.1, "s": 12,
     "ts": T(2024, 1, 1, 12, 0, 0, 123000), "td": dt.date(2024, 1, 1), "r": {"x": 1, "y": "a"}, "n": 10, "k": 100,
     "new_name": "o1", "extra": None},
    {"m": 8, "id": 2, "c": None, "a": 2**31 - 1, "d": Decimal("-5.00"), "dd": None, "s": None, "ts": None,
     "td": dt.date(1969, 12, 31), "r": None, "n": 20, "k": 200, "new_name": None, "extra": None},
    {"m": 9, "id": 3, "c": "c3", "a": -3, "d": Decimal("0.01"), "dd": 2.55, "s": -7,
     "ts": T(2024, 6, 30, 0, 0, 0, 999000), "td": dt.date(2024, 6, 30), "r": {"x": -1, "y": None}, "n": 30,
     "k": 300, "new_name": "o3", "extra": None},
]  # fmt: skip
NEW_ROWS: list[dict[str, Any]] = [
    {"m": 1, "id": 2, "c": "new", "a": 2**40, "d": Decimal("1234567890.12"), "dd": 1e300, "s": 5,
     "ts": T(2025, 1, 1, 0, 0, 0, 1000), "td": dt.date(2025, 1, 1), "r": {"x": 2**40, "y": "b"}, "n": None, "k": 1,
     "new_name": "n2", "extra": "e2"},
    {"m": 2, "id": 4, "c": None, "a": None, "d": None, "dd": None, "s": None, "ts": None, "td": None, "r": None,
     "n": None, "k": 4, "new_name": None, "extra": "e4"},
]  # fmt: skip


def _alter(t: Table) -> None:
    with t.update_schema() as u:
        u.update_column_type("a", "bigint")
        u.update_column_type("d", "decimal(12,2)")
        u.update_column_type("dd", "double")
        u.update_column_type("s", "int")
        u.update_column_type("ts", "timestamp_ntz(3)")
        u.update_column_type("td", "date")
        u.update_column_type(("r", "x"), "bigint")
        u.update_column_nullability("n", True)
        u.update_column_nullability("k", False)
        u.update_column_comment("c", "a note")
        u.update_column_position("m", first=True)
        u.update_column_position("c", after="id")
        u.rename_column("old_name", "new_name")
        u.add_column("extra", "string")
        u.drop_column("gone")


def _table(catalog: Catalog, name: str, primary: bool) -> Table:
    t = catalog.create_table(
        f"db.{name}",
        OLD_DDL,
        primary_keys=["id"] if primary else [],
        options={"bucket": "1" if primary else "-1", "alter-column-null-to-not-null.disabled": "false"},
    )
    t.write_arrow(pa.Table.from_pylist(OLD_ROWS, schema=t.schema.arrow_schema()))
    _alter(t)
    t.write_arrow(pa.Table.from_pylist(NEW_ROWS, schema=t.schema.arrow_schema()))
    return t


def _expected(primary: bool) -> list[dict[str, Any]]:
    rows = [r for r in OLD_CONVERTED if not primary or r["id"] != 2] + NEW_ROWS
    return _sorted(rows)


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["id"], r["m"]))


@pytest.fixture(params=["pk", "append"])
def table(request: pytest.FixtureRequest, catalog: Catalog) -> Iterator[tuple[Table, bool]]:
    primary = request.param == "pk"
    yield _table(catalog, request.param, primary), primary


def test_schema_after_every_kind_of_change(table: tuple[Table, bool]) -> None:
    t, _ = table
    schema = t.schema
    assert schema.field_names == NEW_ORDER
    assert [str(schema.field(n).type) for n in ("a", "dd", "s", "ts", "td", "n", "k")] == [
        "BIGINT", "DOUBLE", "INT", "TIMESTAMP(3)", "DATE", "INT", "INT NOT NULL",
    ]  # fmt: skip
    assert str(schema.field("r").type) == "ROW<`x` BIGINT, `y` STRING>"
    assert schema.field("c").description == "a note"
    assert schema.field("new_name").id == 14 and schema.highest_field_id == 16  # ids kept (r's members: 8, 9)


def test_scan_converts_old_files(table: tuple[Table, bool]) -> None:
    t, primary = table
    out = t.scan().to_arrow()
    assert out.schema == t.schema.arrow_schema()
    assert _sorted(out.to_pylist()) == _expected(primary)


def test_filter_and_projection_on_changed_columns(table: tuple[Table, bool]) -> None:
    t, primary = table
    out = t.scan(filter="s = -7 OR a = 1 OR td = DATE '1969-12-31'", columns=["id", "s", "td"]).to_arrow()
    expected = [{"id": r["id"], "s": r["s"], "td": r["td"]} for r in OLD_CONVERTED]
    if primary:
        expected = [r for r in expected if r["id"] != 2]
    assert sorted(out.to_pylist(), key=lambda r: r["id"]) == expected


def test_stream_from_the_first_snapshot(table: tuple[Table, bool]) -> None:
    t, _ = table
    job = StreamReadJob(t.store, {"path": t.store.table_path, "scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    ctx = job.context()
    start = job.initial_offset()
    splits, _ = job.next_batch(start, None, None)
    rows = [r for s in splits for batch in read_stream_split(ctx, s) for r in batch.to_pylist()]
    names = set(NEW_ORDER)
    got = _sorted([{k: v for k, v in r.items() if k in names} for r in rows])
    assert got == _sorted(OLD_CONVERTED + NEW_ROWS)  # each commit's files as stored, the old ones converted
    assert isinstance(start, StreamOffset)


def test_diff_reads_old_files_in_the_new_schema(table: tuple[Table, bool]) -> None:
    t, primary = table
    diff = t.diff(1, 2).to_pylist()
    if primary:
        assert [(r["rowkind"], r["id"]) for r in diff] == [("-U", 2), ("+U", 2), ("+I", 4)]
        assert {k: v for k, v in diff[0].items() if k != "rowkind"} == OLD_CONVERTED[1]
    else:
        assert sorted((r["rowkind"], r["id"]) for r in diff) == [("+I", 2), ("+I", 4)]


def test_spark_reads_convert_old_files(spark: Any, table: tuple[Table, bool]) -> None:
    t, primary = table
    via_source = spark.read.format("paimon").load(t.uri).toArrow()
    assert _sorted(via_source.to_pylist()) == _expected(primary)
    scan = t.scan()
    via_to_spark = scan.to_spark(spark).toArrow()
    assert _sorted(via_to_spark.to_pylist()) == _expected(primary)
    if not primary:  # some files were read by Spark's own reader: those whose columns only widened
        readers = scan.explain().readers
        assert readers is not None and readers.jvm_files == 1
        assert list(readers.python_reasons) == ["column 'dd' changed type"]


def test_refused_changes_name_the_reason(catalog: Catalog) -> None:
    t = _table(catalog, "t", primary=True)
    cases = [
        (lambda u: u.update_column_type("id", "bigint"), "primary key"),
        (lambda u: u.update_column_type("dd", "string"), "the way Java does"),
        (lambda u: u.update_column_type("ts", "timestamp"), "session time zone"),
        (lambda u: u.update_column_type("a", "binary"), "Paimon allows no such cast"),
        (lambda u: u.update_column_type("a", "int"), "does not fit"),  # 2**40 is stored
        (lambda u: u.update_column_nullability("n", False), "NULL value"),
        (lambda u: u.update_column_position("c", after="c"), "itself"),
        (lambda u: u.update_column_type(("a", "x"), "int"), "not a ROW"),
    ]
    for change, why in cases:
        with pytest.raises(SchemaError, match=why):
            with t.update_schema() as u:
                change(u)
    assert t.schema.id == 1  # nothing was committed
    with t.update_schema() as u:
        u.set_options({"disable-explicit-type-casting": "true"})
    with pytest.raises(SchemaError, match="explicit casts are disabled"):
        with t.update_schema() as u:
            u.update_column_type("s", "string")
