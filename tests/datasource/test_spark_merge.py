"""``t.merge(spark_df, on=...)``: the source is a Spark DataFrame, matching runs in the executors and the driver
commits once; the result equals the same merge from an Arrow source, on a primary-key table, a copy-on-write
append table and a deletion-vector append table."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import DmlError

SOURCE = {"id": [1, 3, 9], "dt": ["a", "b", "c"], "v": [100, 300, 900]}


def _rows(t: Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())


def _make(catalog: Catalog, name: str, pk: bool, **options: Any) -> Table:
    t = catalog.create_table(
        f"db.{name}",
        "id BIGINT, dt STRING, v BIGINT",
        partition_keys=["dt"],
        primary_keys=["id", "dt"] if pk else (),
        options={"bucket": "2", **options} if pk else options,
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [10, 20, 30]}))
    t.write_arrow(pa.table({"id": [4, 5], "dt": ["b", "b"], "v": [40, 50]}))
    return t


def _merge(t: Table, source: Any) -> Any:
    return (
        t.merge(source, on=["id"])
        .when_matched_update({"v": "source.v + target.v"}, "source.id = 1")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("target.v > 45")
        .execute()
    )


@pytest.mark.parametrize(
    "pk, options",
    [(True, {}), (False, {}), (False, {"deletion-vectors.enabled": "true"})],
    ids=["primary-key", "copy-on-write", "deletion-vectors"],
)
def test_a_spark_source_merges_like_an_arrow_one(
    spark: Any, catalog: Catalog, pk: bool, options: dict[str, str]
) -> None:
    name = ("pk" if pk else "ap") + ("_dv" if options else "")
    by_spark, by_arrow = _make(catalog, f"s_{name}", pk, **options), _make(catalog, f"a_{name}", pk, **options)
    before = by_spark.latest_snapshot()
    assert before is not None
    result = _merge(by_spark, spark.createDataFrame(pa.table(SOURCE).to_pandas()))
    expected = _merge(by_arrow, pa.table(SOURCE))
    assert _rows(by_spark) == _rows(by_arrow) == [(1, "a", 110), (2, "a", 20), (4, "b", 40), (9, "c", 900)]
    assert (result.inserted, result.updated, result.deleted) == (expected.inserted, expected.updated, expected.deleted)
    after = by_spark.latest_snapshot()
    assert after is not None and result.snapshot_id == after.id  # one commit from the driver
    assert [s.commit_kind for s in by_spark.store.snapshots.snapshots() if s.id > before.id][0] != "COMPACT"


def test_a_spark_source_with_duplicate_keys_is_refused(spark: Any, catalog: Catalog) -> None:
    t = _make(catalog, "dup", True)
    frame = spark.createDataFrame(pa.table({"id": [1, 1], "dt": ["a", "a"], "v": [1, 2]}).to_pandas())
    with pytest.raises(DmlError, match="more than once"):
        t.merge(frame, on=["id", "dt"]).when_matched_update_all().execute()
    assert t.latest_snapshot().id == 2  # type: ignore[union-attr]


def test_a_spark_merge_reads_only_what_its_source_keys_can_touch(spark: Any, catalog: Catalog) -> None:
    """Without by-source clauses the driver plans only the target files the source's keys can touch: one
    bucket of four on a primary-key table, one file of two (by key statistics) on an append table."""
    pk = catalog.create_table("db.sprune_pk", "id BIGINT, v BIGINT", primary_keys=["id"], options={"bucket": "4"})
    pk.write_arrow(pa.table({"id": list(range(40)), "v": [0] * 40}))
    app = catalog.create_table("db.sprune_app", "id BIGINT, v BIGINT")
    app.write_arrow(pa.table({"id": [1, 2, 3], "v": [0, 0, 0]}))
    app.write_arrow(pa.table({"id": [10, 11, 12], "v": [0, 0, 0]}))
    frame = spark.createDataFrame(pa.table({"id": [7, 11], "v": [70, 110]}).to_pandas())
    result = pk.merge(frame.where("id = 7"), on="id").when_matched_update_all().execute()
    assert (result.updated, result.files_read) == (1, 1)
    result = app.merge(frame, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert (result.updated, result.inserted, result.files_read) == (1, 1, 1)
    assert sorted(tuple(r.values()) for r in app.scan().to_arrow().to_pylist()) == [
        (1, 0),
        (2, 0),
        (3, 0),
        (7, 70),
        (10, 0),
        (11, 110),
        (12, 0),
    ]
    assert dict(zip(*[pk.scan().to_arrow().column(c).to_pylist() for c in ("id", "v")]))[7] == 70


@pytest.mark.parametrize("evolution", [True, False], ids=["data-evolution", "row-tracking"])
def test_a_spark_source_merges_a_row_tracking_table_keeping_ids(spark: Any, catalog: Catalog, evolution: bool) -> None:
    """Data evolution: by _ROW_ID; row tracking alone: copy-on-write keeping the ids (both planned in the driver)."""
    options = {"row-tracking.enabled": "true", "data-evolution.enabled": str(evolution).lower()}
    name = "de" if evolution else "rt"
    by_spark, by_arrow = _make(catalog, f"s_{name}", False, **options), _make(catalog, f"a_{name}", False, **options)

    def merge(t: Table, source: Any) -> Any:
        return (
            t.merge(source, on=["id", "dt"])
            .when_matched_update({"v": "source.v + target.v"})
            .when_not_matched_insert_all()
            .execute()
        )

    result = merge(by_spark, spark.createDataFrame(pa.table(SOURCE).to_pandas()))
    assert result == merge(by_arrow, pa.table(SOURCE))
    assert (result.updated, result.inserted) == (2, 1)
    tracked = {"read.row-tracking-columns": "true"}
    got = sorted(tuple(r.values()) for r in by_spark.refresh().scan(read_options=tracked).to_arrow().to_pylist())
    # Every row keeps its _ROW_ID (partition a's first file holds ids 0-1, b's 2); the new row gets the next one.
    assert [r[:4] for r in got] == [
        (1, "a", 110, 0),
        (2, "a", 20, 1),
        (3, "b", 330, 2),
        (4, "b", 40, 3),
        (5, "b", 50, 4),
        (9, "c", 900, 5),
    ]
