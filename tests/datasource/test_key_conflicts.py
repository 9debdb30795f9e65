"""No silent winner: versions of one primary key written by different tasks of one write must agree."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.jobs import prepare_read, prepare_write
from pyspark_paimon.errors import ConflictingKeysError
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.read_options import ReadOptions


def _store(catalog: Catalog, options: dict[str, str] | None = None, pk: bool = True) -> FileStore:
    t = catalog.create_table(
        "db.t",
        "id bigint, v string, n int, tags array<string>",
        primary_keys=["id"] if pk else [],
        options={"bucket": "2", **(options or {})},
    )
    return FileStore(t.store.fileio, t.store.table_path)


def _write(store: FileStore, *parts: dict[str, list[Any]]) -> Any:
    """One job whose writer task ``i`` writes ``parts[i]``, committed once (as a Spark write of several tasks)."""
    job = prepare_write(store)
    messages = []
    for i, part in enumerate(parts):
        writer = job.new_writer(f"{i}-0")
        n = len(part["id"])
        writer.write(
            pa.table(
                {
                    "id": pa.array(part["id"], pa.int64()),
                    "v": pa.array(part.get("v", ["x"] * n), pa.string()),
                    "n": pa.array(part.get("n", [0] * n), pa.int32()),
                    "tags": pa.array(part.get("tags", [["t"]] * n), pa.list_(pa.string())),
                }
            )
        )
        messages.extend(writer.prepare_commit())
    return job.commit(messages)


def _rows(store: FileStore) -> list[tuple]:
    t = prepare_read(store, ReadOptions.from_options({}), (), None).to_arrow()
    return sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


def test_two_tasks_writing_one_key_differently_fail_before_the_commit(catalog: Catalog) -> None:
    store = _store(catalog)
    _write(store, {"id": [1, 2], "v": ["a", "b"]})
    with pytest.raises(ConflictingKeysError) as err:
        _write(store, {"id": [1, 3], "v": ["new-1", "c"]}, {"id": [1, 4], "v": ["other-1", "d"]})
    message = str(err.value)
    assert "1 primary key(s)" in message and "id=1" in message and "tasks 0-0, 1-0" in message
    assert "sequence.field" in message and "repartition" in message and "nothing was committed" in message
    assert [s.id for s in store.snapshots.snapshots()] == [1]
    assert _rows(store) == [(1, "a"), (2, "b")]


def test_identical_duplicates_and_distinct_keys_pass(catalog: Catalog) -> None:
    store = _store(catalog)
    assert _write(store, {"id": [1, 2], "v": ["a", "b"]}, {"id": [1, 3], "v": ["a", "c"]}) is not None
    assert _write(store, {"id": [10, 11]}, {"id": [12, 13]}) is not None
    assert _rows(store) == [(1, "a"), (2, "b"), (3, "c"), (10, "x"), (11, "x"), (12, "x"), (13, "x")]


def test_versions_within_one_task_are_ordered_and_pass(catalog: Catalog) -> None:
    store = _store(catalog)
    _write(store, {"id": [1, 1, 1], "v": ["a", "b", "c"]})
    assert _rows(store) == [(1, "c")]


def test_only_the_last_version_of_each_task_counts(catalog: Catalog) -> None:
    """Task 0 ends on 'z' like task 1: whichever task wins, key 1 reads 'z'."""
    store = _store(catalog)
    _write(store, {"id": [1, 1], "v": ["a", "z"]}, {"id": [1], "v": ["z"]})
    assert _rows(store) == [(1, "z")]


def test_nested_columns_and_retractions_are_compared(catalog: Catalog) -> None:
    store = _store(catalog, {"rowkind.field": "v"})
    with pytest.raises(ConflictingKeysError, match="id=5"):
        _write(store, {"id": [5], "v": ["+I"], "tags": [["a"]]}, {"id": [5], "v": ["+I"], "tags": [["b"]]})
    with pytest.raises(ConflictingKeysError, match="id=6"):
        _write(store, {"id": [6], "v": ["+I"]}, {"id": [6], "v": ["-D"]})
    assert _write(store, {"id": [7], "v": ["+I"], "tags": [["a"]]}, {"id": [7], "v": ["+I"], "tags": [["a"]]})


def test_first_row_compares_each_tasks_first_version(catalog: Catalog) -> None:
    store = _store(catalog, {"merge-engine": "first-row"})
    assert _write(store, {"id": [1, 1], "v": ["a", "later"]}, {"id": [1], "v": ["a"]})
    with pytest.raises(ConflictingKeysError):
        _write(store, {"id": [2], "v": ["a"]}, {"id": [2], "v": ["b"]})


@pytest.mark.parametrize(
    "options",
    [
        {"sequence.field": "n"},
        {"merge-engine": "aggregation", "fields.v.aggregate-function": "last_non_null_value"},
        {"merge-engine": "partial-update"},
    ],
)
def test_tables_that_order_versions_or_merge_them_are_not_checked(catalog: Catalog, options: dict[str, str]) -> None:
    store = _store(catalog, options)
    assert _write(store, {"id": [1], "v": ["a"], "n": [1]}, {"id": [1], "v": ["b"], "n": [2]}) is not None


def test_append_tables_are_not_checked(catalog: Catalog) -> None:
    store = _store(catalog, {"bucket": "-1"}, pk=False)
    assert _write(store, {"id": [1], "v": ["a"]}, {"id": [1], "v": ["b"]}) is not None


def test_a_spark_write_with_two_versions_of_a_key_in_two_tasks_fails(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("db.s", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})

    def two_tasks(rows: list[tuple]) -> Any:
        # parallelize splits the list evenly: rows[:2] in task 0, rows[2:] in task 1.
        return spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), "id bigint, v string")

    df = two_tasks([(1, "a"), (2, "b"), (1, "z"), (3, "c")])
    assert df.rdd.glom().map(len).collect() == [2, 2]
    with pytest.raises(Exception, match=r"different values.*id=1.*sequence\.field"):
        df.write.format("paimon").mode("append").save(t.uri)
    assert t.latest_snapshot() is None
    same = two_tasks([(1, "a"), (2, "b"), (1, "a"), (3, "c")])
    same.write.format("paimon").mode("append").save(t.uri)
    back = spark.read.format("paimon").load(t.uri)
    assert sorted(map(tuple, back.collect())) == [(1, "a"), (2, "b"), (3, "c")]
