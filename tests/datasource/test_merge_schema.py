"""``write.merge-schema`` without Spark: ``Table.write_arrow(merge_schema=True)`` and the table option; Paimon's merge
rules (new columns and ROW members, widening only when asked, explicit casts only when asked, keys never); the
schema committed before the data; two writers racing a schema change."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import ChainTableError, SchemaError, SchemaMismatchError
from pyspark_paimon.metadata.schema.schema_merge import SchemaMerge
from pyspark_paimon.metadata.schema.table_schema import SchemaManager


def _rows(t: Table) -> list[dict[str, Any]]:
    return sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def t(catalog: Catalog) -> Table:
    table = catalog.create_table("db.t", "id int not null, v string, r struct<a: int>", primary_keys=["id"],
                                 options={"bucket": "1"})  # fmt: skip
    table.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"], "r": [{"a": 1}]}))
    return table


def test_new_columns_and_members_land_in_one_commit_with_the_data(t: Table) -> None:
    data = pa.table(
        {
            "id": pa.array([2], pa.int32()),
            "extra": pa.array([1.5]),
            "r": pa.array([{"a": 2, "b": "x"}], pa.struct([("a", pa.int32()), ("b", pa.string())])),
        }
    )
    result = t.write_arrow(data, merge_schema=True)
    schema = t.schema
    assert result.snapshot_id is not None
    assert t.snapshot(result.snapshot_id).schema_id == schema.id == 1  # the data commits against the new schema
    assert schema.field_names == ["id", "v", "r", "extra"]
    # ids as Java's SchemaMergingUtils gives them: existing columns' new members first, then new columns
    assert [(f.id, f.name) for f in schema.field("r").type.fields] == [(3, "a"), (4, "b")]  # type: ignore[attr-defined]
    assert schema.field("extra").id == 5 and schema.highest_field_id == 5
    assert _rows(t) == [
        {"id": 1, "v": "a", "r": {"a": 1, "b": None}, "extra": None},
        {"id": 2, "v": None, "r": {"a": 2, "b": "x"}, "extra": 1.5},  # 'v' was missing: NULL
    ]
    again = t.write_arrow(data, merge_schema=True)
    assert again.snapshot_id is not None and t.snapshot(again.snapshot_id).schema_id == 1  # nothing new: no change


def test_types_are_kept_unless_widening_is_on(t: Table) -> None:
    wide = pa.table({"id": pa.array([2], pa.int64()), "v": ["b"]})
    t.write_arrow(wide, merge_schema=True)  # BIGINT data whose values fit: cast into the INT column
    assert str(t.schema.field("id").type) == "INT NOT NULL"
    with pytest.raises(SchemaMismatchError, match="partition, primary or bucket key"):
        with t.update_schema() as u:
            u.set_options({"write.merge-schema.type-widening": "true"})
        t.write_arrow(wide, merge_schema=True)
    plain = t.store.table_path + "_append"
    other = Table.open(Catalog(plain.rsplit("/", 2)[0]).create_table("db.a", "id int, d decimal(10,2)").uri)
    other.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "d": pa.array([1], pa.decimal128(10, 2))}))
    with other.update_schema() as u:
        u.set_options({"write.merge-schema": "true", "write.merge-schema.type-widening": "true"})
    other.write_arrow(pa.table({"id": pa.array([2**40]), "d": pa.array([5], pa.decimal128(14, 2))}))
    assert [str(f.type) for f in other.schema.fields] == ["BIGINT", "DECIMAL(14, 2)"]
    assert sorted(r["id"] for r in other.scan().to_arrow().to_pylist()) == [1, 2**40]
    with pytest.raises(SchemaMismatchError, match="another scale"):
        other.write_arrow(pa.table({"d": pa.array([5], pa.decimal128(14, 3))}))
    with pytest.raises(SchemaMismatchError, match="without 'write.merge-schema.explicit-cast'"):
        other.write_arrow(pa.table({"id": pa.array([1], pa.int32())}))  # BIGINT -> INT is explicit
    with other.update_schema() as u:
        u.set_options({"write.merge-schema.explicit-cast": "true"})
    with pytest.raises(SchemaError, match="stored value does not fit"):  # 2**40 is stored
        other.write_arrow(pa.table({"id": pa.array([1], pa.int32())}))
    assert str(other.schema.field("id").type) == "BIGINT"


def test_without_the_option_a_new_column_is_refused(t: Table) -> None:
    with pytest.raises(SchemaMismatchError, match="merge_schema=True"):
        t.write_arrow(pa.table({"id": pa.array([2], pa.int32()), "v": ["b"], "r": [None], "new": [1]}))
    assert SchemaMerge.of({}, {}) is None
    assert SchemaMerge.of({"write.merge-schema": "true"}, {}) == SchemaMerge(False, False)
    assert SchemaMerge.of({}, {"write.merge-schema": "true", "write.merge-schema.explicit-cast": "true"}) == (
        SchemaMerge(False, False)  # explicit casts only with widening, as Paimon's option says
    )


def test_racing_writers_merge_or_fail_clearly(t: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer commits the next schema between this writer's read of the latest schema and its commit."""
    original = SchemaManager.commit
    racing: list[Any] = []

    def commit(self: SchemaManager, schema: Any) -> bool:
        if racing:  # the other writer wins schema-N first
            change = racing.pop()
            with t.update_schema() as u:
                change(u)
        return original(self, schema)

    monkeypatch.setattr(SchemaManager, "commit", commit)
    racing.append(lambda u: u.add_column("b", "string"))
    t.write_arrow(pa.table({"id": pa.array([2], pa.int32()), "c": [7]}), merge_schema=True)
    assert t.schema.field_names == ["id", "v", "r", "b", "c"] and t.schema.id == 2  # retried on the winner's schema
    racing.append(lambda u: u.add_column("d", "bigint"))
    t.write_arrow(pa.table({"id": pa.array([3], pa.int32()), "d": [8]}), merge_schema=True)
    assert t.schema.field_names == ["id", "v", "r", "b", "c", "d"] and t.schema.id == 3  # the same column: agreed
    racing.append(lambda u: u.add_column("e", "string"))
    with pytest.raises(SchemaMismatchError, match="'e'"):  # the winner made it STRING: numbers are not written into it
        t.write_arrow(pa.table({"id": pa.array([4], pa.int32()), "e": [9]}), merge_schema=True)
    assert sorted(r["id"] for r in _rows(t)) == [1, 2, 3]


def test_chain_tables_evolve_through_update_schema(catalog: Catalog) -> None:
    from tests.planner.test_chain import make  # noqa: PLC0415 - the chain tests' table

    t = make(catalog)
    data = pa.table({"t1": [1], "t2": [1], "t3": ["x"], "dt": ["20240101"], "x": [1]})
    with pytest.raises(ChainTableError, match="update_schema"):
        t.on_branch("snapshot").write_arrow(data, merge_schema=True)
