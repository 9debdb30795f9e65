"""``write.merge-schema`` through Spark: a batch write with new columns, a widened one and a missing one; the error
without the option; a streaming sink whose stream has columns the table lacks."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from tests.sparkutil import load, save, sorted_rows


def test_batch_write_adds_widens_and_fills(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("db.t", "id int, n int, v string")
    t.write_arrow(pa.table({"id": pa.array([1], pa.int32()), "n": pa.array([10], pa.int32()), "v": ["a"]}))
    df = spark.sql("SELECT 2 AS id, CAST(5000000000 AS BIGINT) AS n, named_struct('x', 1) AS extra")
    with pytest.raises(Exception, match="write.merge-schema"):
        save(df, t.uri)
    assert t.schema.id == 0  # nothing changed
    save(df, t.uri, **{"write.merge-schema": "true", "write.merge-schema.type-widening": "true"})
    schema = t.schema
    assert schema.field_names == ["id", "n", "v", "extra"] and str(schema.field("n").type) == "BIGINT"
    assert "write.merge-schema" not in schema.options  # a write option, not stored with the table
    assert sorted_rows(load(spark, t.uri)) == [(1, 10, "a", None), (2, 5000000000, None, (1,))]


def test_widening_is_refused_without_its_switch(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("db.t", "id int, n int")
    df = spark.sql("SELECT 1 AS id, CAST(5000000000 AS BIGINT) AS n")
    with pytest.raises(Exception, match="store assignment"):  # BIGINT is not written into INT by Spark's rules
        save(df, t.uri, **{"write.merge-schema": "true"})
    assert str(t.schema.field("n").type) == "INT"


def test_streaming_sink_takes_the_streams_columns(spark: Any, catalog: Catalog, tmp_path: Any) -> None:
    src = catalog.create_table("db.src", "id bigint, v string")
    src.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    sink = catalog.create_table("db.sink", "id bigint")

    def run() -> None:
        q = (
            spark.readStream.format("paimon")
            .load(src.uri)
            .selectExpr("id", "v", "id * 2 AS doubled")
            .writeStream.format("paimon")
            .option("write.merge-schema", "true")
            .option("checkpointLocation", str(tmp_path / "ck"))
            .trigger(availableNow=True)
            .start(sink.uri)
        )
        q.awaitTermination()
        assert q.exception() is None

    run()
    assert sink.schema.field_names == ["id", "v", "doubled"]
    src.write_arrow(pa.table({"id": [3], "v": ["c"]}))
    run()  # restarted from its checkpoint: the next micro-batch, the schema already merged
    assert sink.schema.id == 1
    assert sorted_rows(load(spark, sink.uri)) == [(1, "a", 2), (2, "b", 4), (3, "c", 6)]
