"""VARIANT through Spark: ``parse_json`` values written by our sink (plain and shredded), read back by our source as
Spark's ``VariantType``, and the same values through ``t.scan()``; Spark's ``to_json`` and ours agree."""

from __future__ import annotations

import json
from typing import Any

from pyspark_paimon import Catalog
from pyspark_paimon.variant import variant_json
from tests.sparkutil import load, save

TEXTS = [
    '{"user": {"id": 1001}, "price": 1.50, "tags": ["a", null, 3]}',
    '{"user": {"id": 1002}, "price": 2e3}',
    "[1, 2.25, -129, 70000, 9223372036854775807, true]",
    '"' + "y" * 80 + '"',
    "null",
]


def _source(spark: Any) -> Any:
    rows = ", ".join(f"({i}L, parse_json({json.dumps(text)}))" for i, text in enumerate(TEXTS))
    return spark.sql(f"SELECT * FROM VALUES {rows}, (99L, CAST(NULL AS VARIANT)) AS t(id, v)")


def test_spark_writes_and_reads_variants(spark: Any, catalog: Catalog, warehouse: str) -> None:
    shredding = {"type": "ROW", "fields": [{"name": "v", "type": {"type": "ROW", "fields": [
        {"name": "price", "type": "DECIMAL(10, 2)"}, {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}}
    ]}}]}  # fmt: skip
    plain = catalog.create_table("db.plain", "id bigint, v variant")
    shredded = catalog.create_table(
        "db.shredded", "id bigint, v variant", options={"variant.shreddingSchema": json.dumps(shredding)}
    )
    expected = {
        r["id"]: r["j"] for r in _source(spark).selectExpr("id", "to_json(v) AS j").collect()
    }  # Spark's own spelling of the values it made
    assert expected[99] is None and expected[4] == "null"
    for table in (plain, shredded):
        save(_source(spark), table.uri)
        df = load(spark, table.uri)
        assert df.schema["v"].dataType.typeName() == "variant"
        back = {r["id"]: r["j"] for r in df.selectExpr("id", "to_json(v) AS j").collect()}
        assert back == expected
        got = df.selectExpr("id", "variant_get(v, '$.user.id', 'int') AS uid", "variant_get(v, '$[5]', 'boolean') AS b")
        by_id = {r["id"]: (r["uid"], r["b"]) for r in got.collect()}
        assert by_id[0] == (1001, None) and by_id[2] == (None, True)
        arrow = table.scan().to_arrow().sort_by("id")
        assert dict(zip(arrow.column("id").to_pylist(), variant_json(arrow.column("v")))) == expected


def test_the_filter_option_agrees_with_sparks_variant_get(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("db.f", "id bigint, v variant")
    save(_source(spark), t.uri)
    for condition in (
        "variant_get(v, '$.user.id', 'int') >= 1001",
        "try_variant_get(v, '$.price', 'double') > 1.0",
        "variant_get(v, '$[5]', 'boolean') = true",
        "try_variant_get(v, '$.tags[0]', 'string') = 'a'",
        "variant_get(v, '$', 'string') = '" + "y" * 80 + "'",
    ):
        ours = sorted(r["id"] for r in load(spark, t.uri, filter=condition).collect())
        sparks = sorted(r["id"] for r in load(spark, t.uri).where(condition).collect())
        assert ours == sparks and ours, condition
