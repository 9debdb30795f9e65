"""Tables we evolved, read by pypaimon and pypaimon-rust: every ALTER kind (type changes by widening and by explicit
cast, a TIMESTAMP precision cut, nullability, comments, moves, renames, adds, drops) and a ``write.merge-schema``
write, each on files of the older schemas. Both oracles must read what we read (docs/compatibility.md)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from tests.interop.helpers import OracleBatch, canonical_rows, schema_shape, table_uri

pytestmark = pytest.mark.interop

T = dt.datetime
OLD = [
    {"id": 1, "a": 1, "d": Decimal("1.10"), "dd": Decimal("0.10"), "s": "12", "ts": T(2024, 1, 1, 12, 0, 0, 123456),
     "r": {"x": 1, "y": "a"}, "n": 10, "gone": 9},
    {"id": 2, "a": None, "d": None, "dd": None, "s": None, "ts": None, "r": None, "n": 20, "gone": None},
]  # fmt: skip


def _evolve(t: Table) -> None:
    with t.update_schema() as u:
        u.update_column_type("a", "bigint")
        u.update_column_type("d", "decimal(12,2)")
        u.update_column_type("dd", "double")
        u.update_column_type("s", "int")
        u.update_column_type("ts", "timestamp_ntz(3)")
        u.update_column_type(("r", "x"), "bigint")
        u.update_column_nullability("n", True)
        u.update_column_comment("s", "was text")
        u.update_column_position("n", first=True)
        u.rename_column("d", "amount")
        u.drop_column("gone")
        u.add_column("note", "string", after="id")


@pytest.fixture(scope="module")
def batch(module_warehouse: str, oracle_python: str) -> Iterator[OracleBatch]:
    catalog = Catalog(module_warehouse)
    ddl = (
        "id int not null, a int, d decimal(10,2), dd decimal(10,2), s string, ts timestamp_ntz, "
        "r struct<x: int, y: string>, n int not null, gone int"
    )
    for name, primary in (("pk", True), ("log", False)):
        t = catalog.create_table(
            f"db.{name}", ddl, primary_keys=["id"] if primary else [], options={"bucket": "1" if primary else "-1"}
        )
        t.write_arrow(pa.Table.from_pylist(OLD, schema=t.schema.arrow_schema()))
        _evolve(t)
        new = {"n": None, "id": 3, "note": "x", "a": 2**40, "amount": Decimal("99.99"), "dd": 0.5, "s": 7,
               "ts": None, "r": {"x": 2**40, "y": "b"}}  # fmt: skip
        t.write_arrow(pa.Table.from_pylist([new], schema=t.schema.arrow_schema()))
        # a write that brings a column of its own: one more schema, the data committed against it
        t.write_arrow(pa.table({"id": pa.array([4], pa.int32()), "n": pa.array([4], pa.int32()), "extra": [1.5]}),
                      merge_schema=True)  # fmt: skip
    b = OracleBatch(module_warehouse)
    for name in ("pk", "log"):
        b.read(name, f"db.{name}")
    yield b.run()


@pytest.mark.parametrize("name", ["pk", "log"])
def test_oracles_read_our_evolved_tables(batch: OracleBatch, module_warehouse: str, name: str) -> None:
    ours = Table.open(table_uri(module_warehouse, f"db.{name}")).scan().to_arrow()
    assert ours.column_names == ["n", "id", "note", "a", "amount", "dd", "s", "ts", "r", "extra"]
    assert ours.num_rows == 4
    for impl, theirs in batch.tables[name].items():
        assert schema_shape(theirs.schema) == schema_shape(ours.schema), impl
        assert canonical_rows(theirs) == canonical_rows(ours), impl


def test_the_old_rows_read_converted(module_warehouse: str) -> None:
    rows = sorted(Table.open(table_uri(module_warehouse, "db.pk")).scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows[0] == {
        "n": 10, "id": 1, "note": None, "a": 1, "amount": Decimal("1.10"), "dd": 0.1, "s": 12,
        "ts": T(2024, 1, 1, 12, 0, 0, 123000), "r": {"x": 1, "y": "a"}, "extra": None,
    }  # fmt: skip
    assert rows[3]["extra"] == 1.5 and rows[3]["note"] is None
    row: dict[str, Any] = rows[1]
    assert row["s"] is None and row["n"] == 20
