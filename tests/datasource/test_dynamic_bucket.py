"""Dynamic bucket mode (``bucket = -1`` primary-key tables): Java's key-to-bucket rule, the HASH index files a
commit rewrites, overwrites, the checks only the driver can make, and a Spark write."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.write.dynamic_bucket import hash_index_update
from pyspark_paimon.errors import ConflictingKeysError, OptionError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.hash_index import PartitionIndex, read_hash_file, write_hash_file
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.rows.bucket import hash_rows
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.types.model import AtomicType
from tests.sparkutil import save

INT = AtomicType("INT", nullable=False)
STR = AtomicType("VARCHAR", nullable=False, length=2147483647)
SCHEMA = "p string not null, k int not null, v string"


def _table(catalog: Catalog, name: str = "db.dyn", target: int = 3, **options: str) -> Table:
    return catalog.create_table(
        name,
        SCHEMA,
        partition_keys=["p"],
        primary_keys=["p", "k"],
        options={"dynamic-bucket.target-row-num": str(target), **options},
    )


def _rows(p: str, keys: list[int], v: str) -> pa.Table:
    return pa.table({"p": [p] * len(keys), "k": pa.array(keys, pa.int32()), "v": [v] * len(keys)})


def _read(t: Table) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"]) for r in t.scan().to_arrow().to_pylist())


def _index(t: Table) -> dict[tuple[str, int], list[int]]:
    """(partition value, bucket) -> sorted hashes of its HASH index file in the latest snapshot."""
    store = t.store
    snap = store.snapshots.latest()
    assert snap is not None and snap.index_manifest
    out = {}
    for e in read_index_manifest(store.fileio, store.manifests.path(snap.index_manifest)):
        assert e.index_type == "HASH"
        hashes = read_hash_file(store.fileio, FileIO.join(store.table_path, "index", e.file_name))
        assert e.row_count == len(hashes) and e.file_size == 4 * len(hashes)
        key = (deserialize_row(e.partition, [STR])[0], e.bucket)
        assert key not in out, "one HASH file per partition and bucket"
        out[key] = sorted(hashes.tolist())
    return out


def _buckets(t: Table) -> dict[tuple[str, int], int]:
    """(p, k) -> the bucket of the live file holding it."""
    store = t.store
    out = {}
    for e in store.live_entries(store.snapshots.latest()):
        path = f"{store.table_path}/p={deserialize_row(e.partition, [STR])[0]}/bucket-{e.bucket}"
        for row in pq.ParquetFile(f"{path}/{e.file.file_name}").read(columns=["p", "k"]).to_pylist():
            out.setdefault((row["p"], row["k"]), set()).add(e.bucket)
    assert all(len(b) == 1 for b in out.values()), f"a key in two buckets: {out}"
    return {key: next(iter(b)) for key, b in out.items()}


def _hash(keys: list[int]) -> list[int]:
    return hash_rows([pa.array(keys, pa.int32())], [INT]).tolist()


# ------------------------------------------------------------------------------------------------ the rule
def test_partition_index_follows_javas_rule() -> None:
    index = PartitionIndex(target_row_num=2)
    h = np.array([10, 20, 10, 30, 40, 50], np.int32)
    # new keys fill bucket 0, then new buckets 1 and 2; a repeated hash keeps its bucket
    assert index.assign(h).tolist() == [0, 0, 0, 1, 1, 2]
    assert index.counts == {0: 2, 1: 2, 2: 1}
    # known hashes keep their bucket, the next new one fills the non-full bucket 2
    assert index.assign(np.array([40, 60, 20], np.int32)).tolist() == [1, 2, 0]
    capped = PartitionIndex(target_row_num=1, max_buckets=2)
    got = capped.assign(np.array([1, 2, 3, 4], np.int32))
    assert got[:2].tolist() == [0, 1] and set(got[2:].tolist()) <= {0, 1}
    assert capped.assign(np.array([3, 4], np.int32)).tolist() == got[2:].tolist()  # and they stay there


def test_partition_index_assigns_in_order_of_first_appearance() -> None:
    """Repeated hashes, negative ones and several calls: the vectorised assignment gives what a key-by-key loop
    over Java's rule gives (a known hash keeps its bucket; a new one goes to the first bucket with room), and
    marks exactly the positions whose hash the call added."""
    rng = np.random.default_rng(7)
    index = PartitionIndex(target_row_num=5)
    seen: dict[int, int] = {}
    counts: dict[int, int] = {}
    for size in (40, 1, 60, 0, 25):
        h = rng.integers(-30, 30, size).astype(np.int32)
        expected, added = [], []
        for x in h.tolist():
            if x not in seen:
                seen[x] = next((b for b in sorted(counts) if counts[b] < 5), len(counts))
                counts[seen[x]] = counts.get(seen[x], 0) + 1
                added.append(x)
            expected.append(seen[x])
        got, is_new = index.assign_marking_new(h)
        assert got.tolist() == expected
        assert sorted(set(h[is_new].tolist())) == sorted(added)
    known, buckets = index.lookup(np.array(sorted(seen), np.int32))
    assert known.all() and buckets.tolist() == [seen[x] for x in sorted(seen)]
    assert index.known_hashes().tolist() == sorted(seen)


def test_loaded_index_searches_each_bucket_without_merging(tmp_path: Any) -> None:
    """Index files in Java's hash-set order (unsorted) and of very different sizes: the per-bucket search from
    either side finds every hash's bucket, new hashes after several batches included."""
    rng = np.random.default_rng(11)
    hashes = rng.choice(np.arange(-5000, 5000, dtype=np.int32), 3000, replace=False)
    sizes = {0: 2000, 1: 10, 3: 990}  # runs longer and shorter than the queries
    fileio = FileIO()
    files, owner, at = {}, {}, 0
    for bucket, size in sizes.items():
        part = hashes[at : at + size]
        at += size
        name, _ = write_hash_file(fileio, str(tmp_path), part)  # unsorted, as Java's writer leaves them
        files[bucket] = str(tmp_path / name)
        owner.update({int(h): bucket for h in part})
    index = PartitionIndex.load(fileio, files, target_row_num=2000, max_buckets=-1)
    for size in (500, 40, 2500):
        queries = rng.integers(-6000, 6000, size).astype(np.int32)
        before = set(owner)
        got, is_new = index.assign_marking_new(queries)
        for h, b, fresh in zip(queries.tolist(), got.tolist(), is_new.tolist()):
            assert owner.setdefault(h, b) == b and fresh == (h not in before)
    assert index.known_hashes().tolist() == sorted(owner)


def test_too_many_buckets_names_the_option() -> None:
    index = PartitionIndex(target_row_num=1, where="t")
    with pytest.raises(OptionError, match="dynamic-bucket.target-row-num"):
        index.assign(np.arange(40000, dtype=np.int32))


# ------------------------------------------------------------------------------------------------ writes
def test_commits_keep_keys_in_their_buckets_and_index_them(catalog: Catalog) -> None:
    t = _table(catalog)
    t.write_arrow(pa.concat_tables([_rows("a", [1, 2, 3, 4, 5], "x"), _rows("b", [1, 2], "x")]))
    first = _buckets(t)
    assert sorted({b for (p, _), b in first.items() if p == "a"}) == [0, 1]  # 3 keys per bucket
    t.write_arrow(pa.concat_tables([_rows("a", [1, 5, 6, 7], "y"), _rows("b", [2, 3], "y")]))
    second = _buckets(t)
    assert all(second[k] == b for k, b in first.items()), "updated keys stay in their bucket"
    assert second[("a", 6)] == 1 and second[("a", 7)] == 2  # bucket 1 had room for one more
    assert _read(t) == sorted(
        [("a", k, "y" if k in (1, 5, 6, 7) else "x") for k in range(1, 8)]
        + [("b", 1, "x"), ("b", 2, "y"), ("b", 3, "y")]
    )
    index = _index(t)
    for (p, b), hashes in index.items():
        keys = [k for (pp, k), bb in second.items() if pp == p and bb == b]
        assert hashes == sorted(_hash(keys))
    assert set(index) == {(p, b) for (p, _), b in second.items()}
    # a write that adds no new key to a bucket leaves its index file alone
    before = {e.file_name for e in _entries(t)}
    t.write_arrow(_rows("a", [1], "z"))
    assert {e.file_name for e in _entries(t)} == before


def _entries(t: Table) -> list[Any]:
    store = t.store
    snap = store.snapshots.latest()
    assert snap is not None and snap.index_manifest
    return read_index_manifest(store.fileio, store.manifests.path(snap.index_manifest))


def test_overwrite_starts_the_partitions_afresh(catalog: Catalog) -> None:
    t = _table(catalog, target=2)
    t.write_arrow(pa.concat_tables([_rows("a", [1, 2, 3, 4], "x"), _rows("b", [1], "x")]))
    t.write_arrow(_rows("a", [4, 9], "o"), mode="overwrite", dynamic_partition_overwrite=True)
    assert _read(t) == [("a", 4, "o"), ("a", 9, "o"), ("b", 1, "x")]
    index = _index(t)
    assert index[("a", 0)] == sorted(_hash([4, 9])) and ("a", 1) not in index
    assert index[("b", 0)] == _hash([1])
    t.write_arrow(_rows("b", [5], "w"), mode="overwrite")
    assert _read(t) == [("b", 5, "w")] and set(_index(t)) == {("b", 0)}


def test_one_hash_in_two_buckets_is_refused(catalog: Catalog) -> None:
    t = _table(catalog)
    t.write_arrow(_rows("a", [1], "x"))
    part = t.store.live_entries(t.store.snapshots.latest())[0].partition
    h = np.array(_hash([7]), ">i4").tobytes()
    # two tasks put new key 7 in different buckets
    two = [CommitMessage(part, 0, -1, (), key_hashes=h), CommitMessage(part, 3, -1, (), key_hashes=h)]
    with pytest.raises(ConflictingKeysError, match="buckets 0 and 3"):
        hash_index_update(t.store, t.schema, two, None)
    # a concurrent commit indexed key 1 in bucket 0 since this job started: moving it to bucket 2 is refused
    update = hash_index_update(
        t.store, t.schema, [CommitMessage(part, 2, -1, (), key_hashes=np.array(_hash([1]), ">i4").tobytes())], None
    )
    with pytest.raises(ConflictingKeysError, match="repartition"):
        update(t.store.snapshots.latest())


@pytest.mark.spark
def test_spark_write_by_partition(spark: Any, catalog: Catalog, warehouse: str) -> None:
    t = _table(catalog, "db.sdyn", target=4)
    df = spark.createDataFrame([("a", k, "s") for k in range(10)] + [("b", 1, "s")], "p string, k int, v string")
    save(df.repartition(2, "p"), "db.sdyn", warehouse=warehouse)
    t.write_arrow(_rows("a", [0, 9, 10], "w"))  # our in-process writer continues Spark's index
    expected = sorted([("a", k, "w" if k in (0, 9, 10) else "s") for k in range(11)] + [("b", 1, "s")])
    assert _read(t) == expected
    buckets = _buckets(t)
    assert sorted({b for (p, _), b in buckets.items() if p == "a"}) == [0, 1, 2]
    assert sum(len(h) for h in _index(t).values()) == 12


def test_expiration_keeps_the_live_index_and_streams_continue_it(catalog: Catalog) -> None:
    t = _table(catalog, target=2)
    job = prepare_write(t.store)
    for batch, keys in enumerate(([1, 2, 3], [3, 4])):  # micro-batches: each task continues the committed index
        writer = job.refreshed_writer(f"task-{batch}")
        writer.write(_rows("a", keys, f"m{batch}"))
        job.commit(writer.prepare_commit(), commit_identifier=batch)
    assert _read(t) == [("a", 1, "m0"), ("a", 2, "m0"), ("a", 3, "m1"), ("a", 4, "m1")]
    assert _index(t) == {("a", 0): sorted(_hash([1, 2])), ("a", 1): sorted(_hash([3, 4]))}
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    t.maintenance.remove_orphan_files(older_than=int(time.time() * 1000) + 60_000)
    live = {e.file_name for e in _entries(t)}
    assert sorted(os.listdir(os.path.join(t.store.table_path, "index"))) == sorted(live)
    t.write_arrow(_rows("a", [4, 5], "z"))
    assert _buckets(t)[("a", 4)] == 1 and _buckets(t)[("a", 5)] == 2


def test_an_upsert_of_known_keys_carries_no_hashes_and_rewrites_no_index(tmp_path) -> None:
    """Only the hashes a write adds reach the commit: re-writing known keys leaves every HASH file as it was."""
    t = Catalog(str(tmp_path)).create_table(
        "db.t", pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"], options={"bucket": "-1"}
    )
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}))
    index_before = t.latest_snapshot().index_manifest
    t.write_arrow(pa.table({"k": [2, 3], "v": ["B", "C"]}))
    assert t.latest_snapshot().index_manifest == index_before  # nothing new to index
    t.write_arrow(pa.table({"k": [3, 4], "v": ["c3", "d"]}))
    assert t.latest_snapshot().index_manifest != index_before  # key 4 is new
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": "a"},
        {"k": 2, "v": "B"},
        {"k": 3, "v": "c3"},
        {"k": 4, "v": "d"},
    ]
