"""VARIANT across implementations: pypaimon writes VARIANT tables (plain and shredded) that we read exactly, through
``t.scan()`` and Spark's ``variant_get``; we write plain and shredded ones that pypaimon and pypaimon-rust read.

The values are built by each writer's own encoder (pypaimon's ``GenericVariant.from_python`` on the oracle side,
``pyspark_paimon.variant.variant_array`` on ours) and compared decoded: a shredded column is rebuilt by each reader,
whose bytes may differ (key dictionaries are rebuilt) while the values may not. Plain values are compared as bytes.
All oracle work runs in one batch; the Spark checks share the session of the run.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.variant import variant_array, variant_json, variant_values
from tests.interop.helpers import OracleBatch, assert_same_table, table_uri

pytestmark = pytest.mark.interop

SHREDDING = json.dumps(
    {
        "type": "ROW",
        "fields": [
            {
                "name": "payload",
                "type": {
                    "type": "ROW",
                    "fields": [
                        {"name": "age", "type": "INT"},
                        {"name": "city", "type": "STRING"},
                        {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}},
                    ],
                },
            }
        ],
    }
)

#: Values for plain columns (both writers): nested objects, arrays, long strings, every integer width, doubles,
#: VARIANT null (``_VNULL``) and SQL NULL (None).
_VNULL = object()
PLAIN_VALUES: list[Any] = [
    {"user": {"id": 1001, "name": "ann"}, "city": "Hangzhou", "active": True, "score": 9.5},
    {"user": {"id": 1002}, "tags": ["a", "b", 3], "big": 2**40, "neg": -129, "mid": 70000},
    [1, "two", None, {"k": [True, False]}],
    "x" * 100,
    42,
    {},
    _VNULL,
    None,
]
#: Values pypaimon's shredding writer takes (it fails on a value of another type than the shredded one).
PYPAIMON_SHREDDED: list[Any] = [
    {"age": 30, "city": "Hangzhou", "extra": [1, {"q": True}]},
    {"age": 31},
    {"city": "Beijing", "tags": ["a", "b"], "z": {"q": 1}},
    7,
    "text",
    None,
]
#: Values only a complete shredding writer handles: mismatched types stay in 'value', NULL fields, arrays of mixed.
OUR_SHREDDED: list[Any] = [
    *PYPAIMON_SHREDDED,
    {"age": "thirty", "city": None},
    {"age": 2**40, "tags": ["a", 2, None]},
    {"age": 1.5, "other": "o"},
    [{"age": 1}],
]


def _python(v: Any) -> Any:
    return None if v is _VNULL else v


def _oracle_rows(values: list[Any]) -> list[list[Any]]:
    return [[i, None if v is None else {"variant": _python(v)}] for i, v in enumerate(values)]


def _our_data(values: list[Any]) -> pa.Table:
    encoded = variant_array([None if v is None else json.dumps(_python(v)) for v in values], json=True)
    return pa.table({"id": pa.array(range(len(values)), pa.int64()), "payload": encoded})


def _expected(values: list[Any]) -> list[tuple[int, Any]]:
    return [(i, _python(v)) for i, v in enumerate(values)]


def _payload_layout(table: Table) -> list[str]:
    """The members of the ``payload`` group in the table's (single) data file."""
    (entry,) = table.store.live_entries(table.latest_snapshot())
    path = f"{table.store.table_path}/bucket-{entry.bucket}/{entry.file.file_name}"
    layout = pq.ParquetFile(path).schema_arrow.field("payload").type
    return [layout.field(i).name for i in range(layout.num_fields)]


def _decoded(table: pa.Table) -> list[tuple[int, Any]]:
    return sorted(zip(table.column("id").to_pylist(), variant_values(table.column("payload"))), key=lambda r: r[0])


COLUMNS = [["id", "BIGINT"], ["payload", "VARIANT"]]


@pytest.fixture(scope="module")
def batch(module_warehouse: str, oracle_python: str) -> Iterator[OracleBatch]:
    catalog = Catalog(module_warehouse)
    catalog.create_database("db", ignore_if_exists=True)
    plain = catalog.create_table("db.ours_plain", "id bigint, payload variant")
    plain.write_arrow(_our_data(PLAIN_VALUES[:4]))
    plain.write_arrow(_our_data(PLAIN_VALUES).slice(4))
    shredded = catalog.create_table(
        "db.ours_shredded", "id bigint, payload variant", options={"variant.shreddingSchema": SHREDDING}
    )
    shredded.write_arrow(_our_data(OUR_SHREDDED))

    b = OracleBatch(module_warehouse)
    b.write("db.pp_plain", [{"rows": _oracle_rows(PLAIN_VALUES)}], create={"columns": COLUMNS})
    b.write(
        "db.pp_shredded",
        [{"rows": _oracle_rows(PYPAIMON_SHREDDED)}],
        create={"columns": COLUMNS, "options": {"variant.shreddingSchema": SHREDDING}},
    )
    pk_rows = _oracle_rows(PLAIN_VALUES[:3])
    b.write(
        "db.pp_pk",
        [{"rows": pk_rows}, {"rows": [[1, {"variant": {"replaced": [1, 2]}}]]}],
        create={
            "columns": [["id", "BIGINT", False], ["payload", "VARIANT"]],
            "primary_keys": ["id"],
            "options": {"bucket": "1"},
        },
    )
    for name in ("pp_plain", "pp_shredded", "pp_pk", "ours_plain", "ours_shredded"):
        b.read(name, f"db.{name}")
    yield b.run()


def test_we_read_pypaimons_plain_variants_byte_for_byte(batch: OracleBatch, module_warehouse: str) -> None:
    ours = Table.open(table_uri(module_warehouse, "db.pp_plain")).scan().to_arrow()
    assert _decoded(ours) == _expected(PLAIN_VALUES)
    for impl, theirs in batch.tables["pp_plain"].items():
        assert_same_table(ours, theirs, f"pp_plain vs {impl}")  # the same value and metadata bytes


def test_we_read_pypaimons_shredded_variants(batch: OracleBatch, module_warehouse: str) -> None:
    table = Table.open(table_uri(module_warehouse, "db.pp_shredded"))
    assert _payload_layout(table) == ["metadata", "value", "typed_value"]
    ours = table.scan().to_arrow()
    assert _decoded(ours) == _expected(PYPAIMON_SHREDDED)
    for impl, theirs in batch.tables["pp_shredded"].items():
        assert _decoded(theirs) == _decoded(ours), impl


def test_we_read_pypaimons_primary_key_variants(batch: OracleBatch, module_warehouse: str) -> None:
    ours = Table.open(table_uri(module_warehouse, "db.pp_pk")).scan().to_arrow()
    expected = _expected(PLAIN_VALUES[:3])
    expected[1] = (1, {"replaced": [1, 2]})
    assert _decoded(ours) == expected
    for impl, theirs in batch.tables["pp_pk"].items():
        assert_same_table(ours, theirs, f"pp_pk vs {impl}")


def test_oracles_read_our_plain_variants_byte_for_byte(batch: OracleBatch, module_warehouse: str) -> None:
    ours = Table.open(table_uri(module_warehouse, "db.ours_plain")).scan().to_arrow()
    assert _decoded(ours) == _expected(PLAIN_VALUES)
    for impl, theirs in batch.tables["ours_plain"].items():
        assert_same_table(theirs, ours, f"ours_plain read by {impl}")


def test_oracles_read_our_shredded_variants(batch: OracleBatch, module_warehouse: str) -> None:
    table = Table.open(table_uri(module_warehouse, "db.ours_shredded"))
    assert _payload_layout(table) == ["metadata", "value", "typed_value"]
    assert _decoded(table.scan().to_arrow()) == _expected(OUR_SHREDDED)
    for impl, theirs in batch.tables["ours_shredded"].items():
        assert _decoded(theirs) == _expected(OUR_SHREDDED), impl


def test_spark_variant_get_on_pypaimons_tables(spark: Any, batch: OracleBatch, module_warehouse: str) -> None:
    """Spark's own variant functions over what our source hands it: the values pypaimon wrote."""
    for name, values in (("pp_plain", PLAIN_VALUES), ("pp_shredded", PYPAIMON_SHREDDED)):
        df = spark.read.format("paimon").load(table_uri(module_warehouse, f"db.{name}"))
        got = df.selectExpr(
            "id",
            "variant_get(payload, '$.user.id', 'bigint') AS uid",
            "try_variant_get(payload, '$.age', 'int') AS age",
            "variant_get(payload, '$.city', 'string') AS city",
            "to_json(payload) AS j",
        ).toArrow()
        rows = sorted(got.to_pylist(), key=lambda r: r["id"])
        arrow = Table.open(table_uri(module_warehouse, f"db.{name}")).scan().to_arrow().sort_by("id")
        texts = variant_json(arrow.column("payload"))
        for row, value, text in zip(rows, values, texts):
            v = _python(value)
            obj = v if isinstance(v, dict) else {}
            assert row["uid"] == (obj.get("user") or {}).get("id"), row
            assert row["age"] == obj.get("age"), row
            assert row["city"] == obj.get("city"), row
            assert row["j"] == text, row  # our to_json spells values as Spark does
