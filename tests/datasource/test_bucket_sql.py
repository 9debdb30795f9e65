"""``bucket_sql``: Paimon's bucket computed by Spark SQL must equal ``bucket_ids`` (Java's bucket) for every value: each
supported type alone and combined, NULLs, edge values (0, -1, the extremes), strings and binaries of 0 to 20 bytes
(inline and in the variable part, multi-byte UTF-8), under Spark's default ANSI mode and without it."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from pyspark_paimon.datasource.write.bucket_sql import SQL_BUCKET_TYPES, bucket_stages
from pyspark_paimon.metadata.rows.bucket import bucket_ids
from pyspark_paimon.metadata.types.model import AtomicType, DataField

ROWS = 4000
_EDGES = {
    "BIGINT": [0, 1, -1, 2**63 - 1, -(2**63), 2**31, -(2**31) - 1, 2**32 - 1],
    "INT": [0, 1, -1, 2**31 - 1, -(2**31)],
    "SMALLINT": [0, 1, -1, 2**15 - 1, -(2**15)],
    "TINYINT": [0, 1, -1, 127, -128],
}
_ARROW = {
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "VARCHAR": pa.string(),
    "VARBINARY": pa.binary(),
}
_SPARK = {"VARCHAR": "string", "VARBINARY": "binary"}


def _values(root: str, rng: random.Random, nullable: bool) -> list[Any]:
    out: list[Any] = []
    for i in range(ROWS):
        if nullable and i % 11 == 0:
            out.append(None)
        elif root in _EDGES:
            bits = {"BIGINT": 64, "INT": 32, "SMALLINT": 16, "TINYINT": 8}[root]
            edge = i % 4 == 0
            out.append(rng.choice(_EDGES[root]) if edge else rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
        elif root == "BOOLEAN":
            out.append(rng.random() < 0.5)
        elif root == "DATE":
            out.append(rng.randint(-800_000, 2_900_000))
        else:
            text = "".join(rng.choice("ab\u00e9\u20ac\U0001f600") for _ in range(rng.randint(0, 20)))
            out.append(text if root == "VARCHAR" else text.encode("utf-8"))
    return out


def _check(spark: Any, roots: list[str], nullable: bool, buckets: int, seed: int) -> None:
    rng = random.Random(seed)
    fields = [DataField(i, f"c{i}", AtomicType(r, nullable=nullable)) for i, r in enumerate(roots)]
    columns = [pa.array(_values(r, rng, nullable), _ARROW[r]) for r in roots]
    table = pa.table({f.name: c for f, c in zip(fields, columns)}).append_column("pos", pa.array(range(ROWS)))
    frame = spark.createDataFrame(table)
    stages = bucket_stages(fields, buckets, "b")
    assert stages is not None
    for stage in stages:
        frame = frame.selectExpr("*", *stage)
    got = np.array(frame.orderBy("pos").select("b").toArrow().column("b").to_numpy())
    want = bucket_ids(columns, [f.type for f in fields], buckets)
    wrong = np.flatnonzero(got != want)
    assert not len(wrong), f"{roots} (nullable={nullable}) differ at rows {wrong[:5]}: {table.slice(int(wrong[0]), 1)}"


@pytest.mark.spark
@pytest.mark.parametrize("ansi", ["true", "false"])
def test_every_type_alone_and_combined_equals_bucket_ids(spark: Any, ansi: str) -> None:
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        roots = sorted(_ARROW)
        for i, root in enumerate(roots):
            for nullable in (False, True):
                _check(spark, [root], nullable, 1 + i % 7 * 3, seed=i)
        _check(spark, ["BIGINT", "INT"], True, 4, seed=100)
        _check(spark, ["VARCHAR", "BIGINT", "VARBINARY"], True, 5, seed=101)
        _check(spark, ["VARCHAR", "VARCHAR"], False, 16, seed=102)
        _check(spark, ["TINYINT", "SMALLINT", "BOOLEAN", "DATE"], True, 3, seed=103)
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)


def test_other_types_are_left_to_the_udf() -> None:
    assert {"BIGINT", "VARCHAR", "DATE"} <= SQL_BUCKET_TYPES
    for root in ("DOUBLE", "FLOAT", "DECIMAL", "TIMESTAMP"):
        fields = [DataField(0, "id", AtomicType("BIGINT")), DataField(1, "x", AtomicType(root))]
        assert bucket_stages(fields, 4, "b") is None
