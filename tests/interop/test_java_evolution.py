"""Evolved tables read by Java Paimon 1.0 (the Java lane): a Spark write with an extra column and an INT -> BIGINT
widening (``write.merge-schema`` with type widening), then our ALTERs (type changes, nullability, comment, moves,
rename), each followed by more rows. Java must read every version exactly as we do: the files written under each
schema, mapped by field id and converted to the latest types."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Iterator

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from tests.interop.helpers import canonical_rows, sorted_rows, table_uri
from tests.oracle.java_oracle import JavaOracle

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _agree(warehouse: str, identifier: str, java: JavaOracle, expected: list[dict[str, Any]]) -> None:
    ours = Table.open(table_uri(warehouse, identifier)).scan().to_arrow()
    by_java = java.read(warehouse, identifier)
    assert ours.column_names == by_java.names
    assert canonical_rows(ours) == sorted_rows(by_java.rows) == sorted_rows(expected)


@pytest.mark.parametrize("primary", [True, False], ids=["pk", "append"])
def test_java_reads_a_table_evolved_by_spark_merge_schema_and_alter(
    spark: Any, java: JavaOracle, warehouse: str, primary: bool
) -> None:
    ident = "db.evolved"
    t = Catalog(warehouse).create_table(
        ident,
        "id int not null, v string, price decimal(10, 2), ts timestamp_ntz, small int",
        primary_keys=["id"] if primary else [],
        options={"bucket": "1" if primary else "-1"},
    )
    first = [
        {"id": 1, "v": "a", "price": Decimal("1.10"), "ts": dt.datetime(2024, 1, 1, 12, 0, 0, 123456), "small": 7},
        {"id": 2, "v": None, "price": None, "ts": None, "small": None},
    ]
    t.write_arrow(pa.Table.from_pylist(first, schema=t.schema.arrow_schema()))

    # One Spark write with an extra column, an INT -> BIGINT widening and a larger DECIMAL precision.
    df = spark.sql(
        "SELECT 3 AS id, 'c' AS v, CAST(2.5 AS DECIMAL(12, 2)) AS price, TIMESTAMP_NTZ '2024-02-01 00:00:00' AS ts, "
        "CAST(5000000000 AS BIGINT) AS small, 0.5D AS extra"
    )
    df.write.format("paimon").mode("append").option("write.merge-schema", "true").option(
        "write.merge-schema.type-widening", "true"
    ).save(t.uri)
    schema = t.schema
    assert schema.id == 1 and schema.field_names == ["id", "v", "price", "ts", "small", "extra"]
    assert [str(schema.field(n).type) for n in ("price", "small", "extra")] == ["DECIMAL(12, 2)", "BIGINT", "DOUBLE"]
    assert t.latest_snapshot().schema_id == 1  # type: ignore[union-attr] - the data committed against it
    second = {"id": 3, "v": "c", "price": Decimal("2.50"), "ts": dt.datetime(2024, 2, 1), "small": 5000000000}
    expected = [{**r, "extra": None} for r in first] + [{**second, "extra": 0.5}]
    _agree(warehouse, ident, java, expected)

    # Our ALTERs: an explicit cast, a precision cut, a comment, moves, a rename; then rows of the new schema.
    with t.update_schema() as u:
        u.update_column_type("extra", "float")
        u.update_column_type("ts", "timestamp_ntz(3)")
        u.update_column_comment("v", "a value")
        u.update_column_position("small", first=True)
        u.update_column_position("extra", after="id")
        u.rename_column("v", "label")
    cut = {dt.datetime(2024, 1, 1, 12, 0, 0, 123456): dt.datetime(2024, 1, 1, 12, 0, 0, 123000)}
    expected = [
        {**{k: r[k] for k in r if k != "v"}, "label": r["v"], "ts": cut.get(r["ts"], r["ts"])} for r in expected
    ]
    last = {"small": 1, "id": 5, "extra": 1.25, "label": "e", "price": Decimal("3.00"), "ts": None}
    t.write_arrow(pa.Table.from_pylist([last], schema=t.schema.arrow_schema()))
    expected.append(last)
    assert t.schema.field_names == ["small", "id", "extra", "label", "price", "ts"]
    _agree(warehouse, ident, java, expected)
