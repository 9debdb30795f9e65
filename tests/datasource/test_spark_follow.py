"""``t.follow`` delivers exactly the rows the Spark stream (``read.changelog``) delivers on the same table: appends,
upserts and deletes of a primary-key table, and the changelog of a table with a changelog producer."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def batch(ids: list[int], values: list[str]) -> pa.Table:
    return pa.table({"id": ids, "v": values}, schema=SCHEMA)


def spark_stream_rows(spark, t: Table, tmp_path: Path, options: dict[str, str]) -> list[tuple]:  # type: ignore[no-untyped-def]
    reader = spark.readStream.format("paimon").option("read.changelog", "true")
    for k, v in options.items():
        reader = reader.option(k, v)
    out = tmp_path / "out"
    q = (
        reader.load(t.uri)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return sorted(tuple(r) for r in spark.read.parquet(str(out)).collect())


def follower_rows(t: Table, options: dict[str, str]) -> list[tuple]:
    f = t.follow(read_options=options, max_rows=3)
    got: list[tuple] = []
    while (changes := f.poll()).num_rows:
        assert changes.num_rows <= 3
        got += [tuple(r.values()) for r in changes.data.to_pylist()]
    return sorted(got)


def appends(catalog: Catalog) -> Table:
    t = catalog.create_table("db.appends", SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    t.write_arrow(batch([1, 2, 3], ["a", "b", "c"]))
    t.write_arrow(batch([4, 5], ["d", "e"]))
    t.write_arrow(batch([1], ["again"]))
    return t


def upserts(catalog: Catalog) -> Table:
    t = catalog.create_table("db.upserts", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(batch([1, 2, 3], ["a", "b", "c"]))
    t.write_arrow(batch([2, 4], ["B", "d"]))
    t.delete("id = 3")
    t.maintenance.compact(full=True)  # a COMPACT snapshot contributes nothing to either
    t.write_arrow(batch([1], ["A"]))
    return t


def changelog(catalog: Catalog) -> Table:
    t = catalog.create_table(
        "db.changelog", SCHEMA, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "lookup"}
    )
    t.write_arrow(batch([1, 2], ["a", "b"]))
    t.write_arrow(batch([1, 3], ["A", "c"]))
    t.delete("id = 2")
    return t


@pytest.mark.parametrize("make", [appends, upserts, changelog], ids=["appends", "upserts+deletes", "lookup-changelog"])
@pytest.mark.parametrize("start", [{"scan.snapshot-id": "1"}, {}], ids=["from-snapshot-1", "latest-full"])
def test_follow_delivers_the_spark_streams_rows(spark, catalog, tmp_path, make, start) -> None:  # type: ignore[no-untyped-def]
    t = make(catalog)
    want = spark_stream_rows(spark, t, tmp_path, start)
    assert want, "the stream read something"
    assert follower_rows(t, start) == want
