"""Cross-partition upsert (``bucket = -1``, primary key without every partition key): a key lives in one
partition, moves as the merge engine says (Java's `ExistingProcessor`s), new keys fill buckets as Java's
`BucketAssigner` does, no HASH index is written, and tasks that disagree about a key are refused."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.write.cross_partition import bootstrap
from pyspark_paimon.errors import ConflictingKeysError, OptionError
from pyspark_paimon.metadata.rows.binary_row import deserialize_row

SCHEMA = "p string not null, k int not null, v string"


def _table(catalog: Catalog, name: str = "db.xp", **options: str) -> Table:
    return catalog.create_table(name, SCHEMA, partition_keys=["p"], primary_keys=["k"], options=options)


def _rows(*rows: tuple[str, int, str | None]) -> pa.Table:
    return pa.table(
        {
            "p": [r[0] for r in rows],
            "k": pa.array([r[1] for r in rows], pa.int32()),
            "v": pa.array([r[2] for r in rows], pa.string()),
        }
    )


def _read(t: Table) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"]) for r in t.scan().to_arrow().to_pylist())


def _placement(t: Table) -> dict[tuple[str, int], int]:
    """(partition value, bucket) -> rows in files (live entries of the latest snapshot)."""
    out: dict[tuple[str, int], int] = {}
    store = t.store
    for e in store.live_entries(store.snapshots.latest()):
        key = (deserialize_row(e.partition, [t.schema.field("p").type])[0], e.bucket)
        out[key] = out.get(key, 0) + e.file.row_count
    return out


def test_deduplicate_moves_a_key_to_its_newest_partition(catalog: Catalog) -> None:
    t = _table(catalog)
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "x")))
    t.write_arrow(_rows(("b", 1, "y"), ("c", 3, "z"), ("a", 3, "w")))
    assert _read(t) == [("a", 2, "x"), ("a", 3, "w"), ("b", 1, "y")]
    t.write_arrow(_rows(("a", 1, "back")))
    assert _read(t) == [("a", 1, "back"), ("a", 2, "x"), ("a", 3, "w")]
    snap = t.store.snapshots.latest()
    assert snap is not None and snap.index_manifest is None  # Java writes no HASH index in this mode


def test_deduplicate_delete_of_a_moved_key(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpdel")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "x")))

    job = prepare_write(t.store)
    w = job.new_writer("local")
    w.write(_rows(("b", 1, "y")), kinds=pa.array([3], pa.int8()))  # a delete arriving in another partition
    job.commit(w.prepare_commit())
    assert _read(t) == [("a", 2, "x")]


@pytest.mark.parametrize(
    "options",
    [{"merge-engine": "partial-update"}, {"merge-engine": "aggregation"}],
    ids=["partial-update", "aggregation"],
)
def test_merging_engines_keep_the_old_partition(catalog: Catalog, options: dict[str, str]) -> None:
    t = _table(catalog, name="db.xpmerge", **options)
    t.write_arrow(_rows(("a", 1, "x")))
    t.write_arrow(_rows(("b", 1, "y"), ("c", 2, None), ("d", 2, "z")))
    assert _read(t) == [("a", 1, "y"), ("c", 2, "z")]


def test_first_row_skips_the_new_partition(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpfirst", **{"merge-engine": "first-row"})
    t.write_arrow(_rows(("a", 1, "x")))
    t.write_arrow(_rows(("b", 1, "y"), ("c", 2, "z"), ("d", 2, "w")))
    assert _read(t) == [("a", 1, "x"), ("c", 2, "z")]


def test_new_keys_fill_buckets_and_the_index_follows_them(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpfill", **{"dynamic-bucket.target-row-num": "2"})
    t.write_arrow(_rows(*[("a", k, "x") for k in range(5)]))
    assert _placement(t) == {("a", 0): 2, ("a", 1): 2, ("a", 2): 1}
    index = bootstrap(t.store, t.schema, t.store.snapshots.latest())
    assert sorted(zip(index.column("k").to_pylist(), index.column("__xp_index_bucket").to_pylist())) == [
        (0, 0),
        (1, 0),
        (2, 1),
        (3, 1),
        (4, 2),
    ]
    # key 0 leaves bucket 0 of a, so the next new key of a takes its place there
    t.write_arrow(_rows(("b", 0, "y"), ("a", 9, "n")))
    placement = _placement(t)
    assert placement[("a", 0)] == 4 and placement[("b", 0)] == 1  # two rows, the -D of key 0 and key 9
    assert _read(t)[-1] == ("b", 0, "y") and ("a", 9, "n") in _read(t)


def test_overwrites(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpover")
    t.write_arrow(_rows(("a", 1, "x"), ("b", 2, "x")))
    with pytest.raises(OptionError, match=r"db.xpover.*cross-partition.*Overwrite the whole table"):
        t.write_arrow(_rows(("a", 2, "y")), mode="overwrite", overwrite_partition={"p": "a"})
    t.write_arrow(_rows(("c", 2, "y")), mode="overwrite")
    assert _read(t) == [("c", 2, "y")]


def test_sequence_field_is_refused(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpseq", **{"sequence.field": "v"})
    with pytest.raises(OptionError, match=r"db.xpseq.*sequence.field"):
        t.write_arrow(_rows(("a", 1, "x")))


def test_two_tasks_placing_one_key_in_two_partitions_are_refused(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xptasks")
    t.write_arrow(_rows(("a", 1, "x")))
    job = prepare_write(t.store)
    one, two = job.new_writer("task-1"), job.new_writer("task-2")
    one.write(_rows(("b", 7, "y"), ("a", 1, "y")))
    two.write(_rows(("c", 7, "z"), ("a", 2, "z")))
    with pytest.raises(ConflictingKeysError, match=r"1 primary key.*k=7.*repartition"):
        job.commit(one.prepare_commit() + two.prepare_commit())
    # tasks holding different keys commit
    job = prepare_write(t.store)
    one, two = job.new_writer("task-1"), job.new_writer("task-2")
    one.write(_rows(("b", 1, "y")))
    two.write(_rows(("c", 2, "z")))
    job.commit(one.prepare_commit() + two.prepare_commit())
    assert _read(t) == [("b", 1, "y"), ("c", 2, "z")]


@pytest.mark.spark
def test_spark_write_moves_keys(spark: Any, catalog: Catalog, warehouse: str) -> None:
    from tests.sparkutil import save

    t = _table(catalog, name="db.xpspark")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "x")))
    df = spark.createDataFrame([("b", 1, "s"), ("a", 3, "s")], "p string, k int, v string")
    save(df.repartition(2, "k"), "db.xpspark", warehouse=warehouse)
    assert _read(t) == [("a", 2, "x"), ("a", 3, "s"), ("b", 1, "s")]


def test_compaction_keeps_one_row_per_key(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpcompact")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "x")))
    t.write_arrow(_rows(("b", 1, "y")))
    t.maintenance.compact(full=True)
    assert _read(t) == [("a", 2, "x"), ("b", 1, "y")]
    t.write_arrow(_rows(("a", 1, "z")))
    assert _read(t) == [("a", 1, "z"), ("a", 2, "x")]


def test_deletion_vector_table(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpdv", **{"deletion-vectors.enabled": "true"})
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "x")))
    t.write_arrow(_rows(("b", 1, "y")))
    t.write_arrow(_rows(("c", 1, "z"), ("b", 2, "z")))
    assert _read(t) == [("b", 2, "z"), ("c", 1, "z")]


def test_index_ttl_leaves_old_buckets_out_as_java_does(catalog: Catalog) -> None:
    t = _table(catalog, name="db.xpttl", **{"cross-partition-upsert.index-ttl": "1 ms"})
    t.write_arrow(_rows(("a", 1, "x")))
    assert bootstrap(t.store, t.schema, t.store.snapshots.latest()).num_rows == 0
    t.write_arrow(_rows(("b", 1, "y")))  # key 1 is not found: it is written again, as Java's TTL warns
    assert _read(t) == [("a", 1, "x"), ("b", 1, "y")]
    keep = _table(catalog, name="db.xpttl2", **{"cross-partition-upsert.index-ttl": "1 d"})
    keep.write_arrow(_rows(("a", 1, "x")))
    assert bootstrap(keep.store, keep.schema, keep.store.snapshots.latest()).num_rows == 1
