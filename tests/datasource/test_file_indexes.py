"""File indexes end to end, without Spark: writes give each data file Java's index container (in the manifest
or in ``<file>.index`` by ``file-index.in-manifest-threshold``), reads skip the files an index excludes (counted
in explain, results identical to the unpruned read), and ``rewrite_file_index`` indexes existing files."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.cli import main as cli_main
from pyspark_paimon.errors import OptionError, SchemaError
from pyspark_paimon.metadata.fileindex.container import FileIndexContainer
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.scan import ScanCounters
from tests.engine_read import explain as engine_explain
from tests.engine_read import read_arrow as engine_read_arrow

STRINGS = {
    "file-index.bloom-filter.columns": "s,n",
    "file-index.bloom-filter.s.items": "200",
    "file-index.bloom-filter.n.items": "200",
    "file-index.bitmap.columns": "c",
}


def _batch(b: int, n: int = 50) -> pa.Table:
    """Rows of one commit: ``s`` random-looking and unique, ``n`` unique, ``c`` two values per batch or NULL."""
    ids = range(b * 1000, b * 1000 + n)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "s": [f"s{(i * 7919) % 100_003:06d}" for i in ids],
            "n": pa.array([(i * 104_729) % 1_000_003 for i in ids], pa.int64()),
            "c": [None if i % 10 == 9 else f"c{b}-{i % 2}" for i in ids],
            "f": pa.array([0.0 if i % 3 == 0 else -0.0 if i % 3 == 1 else 1.5 for i in ids], pa.float64()),
        }
    )


DDL = "id bigint not null, s string, n bigint, c string, f double"


def _table(catalog: Catalog, options: dict[str, str], name: str = "default.t", batches: int = 5, **kw: Any) -> Table:
    t = catalog.create_table(name, DDL, options=options, **kw)
    for b in range(batches):
        t.write_arrow(_batch(b))
    return t


def _files(t: Table) -> list[Any]:
    return [e.file for e in t.store.live_entries(t.latest_snapshot())]


def _check(t: Table, sql: str) -> ScanCounters:
    """The filtered read equals the read without index pruning; returns the explain counters."""
    got = t.scan(filter=sql).to_arrow()
    plain = t.scan(filter=sql, read_options={"file-index.read.enabled": "false"}).to_arrow()
    assert sorted(got.to_pylist(), key=repr) == sorted(plain.to_pylist(), key=repr), sql
    return t.scan(filter=sql).explain().counters


def _needle(b: int, i: int) -> dict[str, Any]:
    return _batch(b).slice(i, 1).to_pylist()[0]


# ------------------------------------------------------------------------------------------------ writing


def test_small_indexes_go_into_the_manifest_large_ones_into_index_files(catalog: Catalog) -> None:
    small = _table(catalog, {**STRINGS, "file-index.bloom-filter.s.items": "20"}, "default.small", batches=2)
    for f in _files(small):
        assert f.embedded_index is not None and f.extra_files == ()
        container = FileIndexContainer.parse(f.embedded_index, f.file_name)
        assert {c: sorted(t) for c, t in container.slots.items()} == {
            "s": ["bloom-filter"],
            "n": ["bloom-filter"],
            "c": ["bitmap"],
        }
    large = _table(catalog, {**STRINGS, "file-index.in-manifest-threshold": "64 b"}, "default.large", batches=2)
    bucket = f"{large.store.table_path}/bucket-0"
    for f in _files(large):
        assert f.embedded_index is None and f.extra_files == (f.file_name + ".index",)
        data = large.store.fileio.read_bytes(f"{bucket}/{f.extra_files[0]}")
        assert sorted(FileIndexContainer.parse(data, f.file_name).slots) == ["c", "n", "s"]
    assert sorted(os.listdir(bucket)) == sorted(n for f in _files(large) for n in (f.file_name, *f.extra_files))


def test_a_table_without_index_options_writes_no_index(catalog: Catalog) -> None:
    t = _table(catalog, {}, batches=1)
    assert all(f.embedded_index is None and f.extra_files == () for f in _files(t))


def test_index_options_java_refuses_fail_when_the_table_is_made(catalog: Catalog) -> None:
    with pytest.raises(OptionError, match="column 'nope'"):
        catalog.create_table("default.x", DDL, options={"file-index.bloom-filter.columns": "nope"})
    with pytest.raises(OptionError, match="type DECIMAL"):
        catalog.create_table("default.x", "a decimal(10,2)", options={"file-index.bitmap.columns": "a"})
    t = _table(catalog, STRINGS, batches=0)
    with pytest.raises((OptionError, SchemaError), match="'c'"):
        t.update_schema().drop_column("c").commit()  # still indexed: drop it from the options too
    t.update_schema().drop_column("c").set_options({"file-index.bitmap.columns": ""}).commit()


# ------------------------------------------------------------------------------------------------ pruning


@pytest.mark.parametrize("threshold", ["4 kb", "1 b"], ids=["in-manifest", "index-files"])
def test_lookups_open_only_the_files_the_index_keeps(catalog: Catalog, threshold: str) -> None:
    t = _table(catalog, {**STRINGS, "file-index.in-manifest-threshold": threshold})
    needle = _needle(3, 17)
    c = _check(t, f"s = '{needle['s']}'")
    assert c.files_total == 5 and c.files_selected + c.files_skipped_index + c.files_skipped_stats == 5
    assert c.files_selected <= 2 and c.files_skipped_index >= 3
    assert c.index_files_read == (5 - c.files_skipped_stats if threshold == "1 b" else 0)
    assert c.bytes_skipped_index > 0
    assert t.scan(filter=f"s = '{needle['s']}'").to_arrow().column("id").to_pylist() == [needle["id"]]
    assert _check(t, f"n IN ({needle['n']}, {_needle(1, 2)['n']})").files_selected <= 3
    assert _check(t, "c = 'c2-1'").files_selected == 1  # the bitmap holds every value: exact
    assert _check(t, "c = 'nowhere'").files_selected == 0
    assert _check(t, "c IN ('c0-0', 'c4-1')").files_selected == 2
    assert _check(t, "c > 'c3'").files_selected == 2  # bitmaps answer comparisons too
    assert _check(t, "c IS NULL").files_selected == 5
    assert _check(t, "c IS NOT NULL AND c <> 'c1-0' AND c <> 'c1-1'").files_selected == 4
    assert _check(t, f"s <=> '{needle['s']}'").files_skipped_index >= 3
    off = t.scan(filter=f"s = '{needle['s']}'", read_options={"file-index.read.enabled": "false"}).explain()
    assert off.counters.files_skipped_index == 0 and off.counters.index_files_read == 0


def test_what_an_index_cannot_decide_is_never_skipped(catalog: Catalog) -> None:
    t = _table(catalog, {**STRINGS, "file-index.bloom-filter.columns": "s,n,f", "file-index.bloom-filter.f.items": "9"})
    # 0.0 = -0.0 in SQL, but Java hashes them apart: a float literal 0 never prunes (the filter option does not
    # compare floats; Spark's pushed filters do)
    for zero in (0.0, -0.0):
        assert engine_explain(t, predicate=[Leaf("f", "=", zero)]).counters.files_skipped_index == 0
        zeros = sum(1 for b in range(5) for i in range(b * 1000, b * 1000 + 50) if i % 3 != 2)
        assert engine_read_arrow(t, predicate=[Leaf("f", "=", zero)]).num_rows == zeros
    assert engine_explain(t, predicate=[Leaf("f", "=", 0.5)]).counters.files_skipped_index >= 4
    assert _check(t, "s IS NULL").files_skipped_index == 0  # a bloom filter holds no NULLs
    assert _check(t, "s <> 'x'").files_skipped_index == 0
    assert _check(t, "s > 's05'").files_skipped_index == 0  # nor ranges
    # a literal the column cannot hold exactly is never hashed (Spark's pushed filters may carry one)
    assert engine_explain(t, predicate=[Leaf("n", "=", 1.5)]).counters.files_skipped_index == 0


def test_an_unreadable_index_keeps_its_file(catalog: Catalog) -> None:
    t = _table(catalog, {**STRINGS, "file-index.in-manifest-threshold": "1 b"}, batches=3)
    bucket = f"{t.store.table_path}/bucket-0"
    first, second, _ = sorted(_files(t), key=lambda f: f.min_sequence_number)
    t.store.fileio.write_bytes(f"{bucket}/{first.extra_files[0]}", b"not an index")
    t.store.fileio.delete(f"{bucket}/{second.extra_files[0]}")
    c = _check(t, "s = 's050000x'")  # inside every file's min/max range of s
    assert c.files_skipped_stats == 0 and c.files_selected >= 2 and c.files_skipped_index <= 1


def test_renamed_columns_use_their_old_index_and_retyped_ones_none(catalog: Catalog) -> None:
    t = _table(catalog, STRINGS, batches=3)
    needle = _needle(1, 4)
    (
        t.update_schema()
        .rename_column("s", "s2")
        .set_options({"file-index.bloom-filter.columns": "s2,n", "file-index.bloom-filter.s2.items": "200"})
        .remove_options(["file-index.bloom-filter.s.items"])
        .commit()
    )
    c = _check(t, f"s2 = '{needle['s']}'")
    assert c.files_skipped_index >= 1
    assert t.scan(filter=f"s2 = '{needle['s']}'").to_arrow().column("id").to_pylist() == [needle["id"]]


def test_primary_key_files_are_skipped_only_where_each_key_lives_in_one_file(catalog: Catalog) -> None:
    # write-only: no compaction after the writes, so the three files stay at level 0, where keys may overlap
    t = _table(catalog, {**STRINGS, "bucket": "1", "write-only": "true"}, primary_keys=["id"], batches=3)
    needle = _needle(2, 5)
    assert [f.level for f in _files(t)] == [0, 0, 0]
    assert _check(t, "c = 'nowhere'").files_skipped_index == 0
    t.maintenance.compact(full=True)
    assert all(f.extra_files for f in _files(t))  # compaction outputs are indexed too
    assert _check(t, "c = 'nowhere'").files_selected == 0
    assert t.scan(filter=f"s = '{needle['s']}'").to_arrow().column("id").to_pylist() == [needle["id"]]


def test_deletion_vector_tables_prune_their_compacted_files(catalog: Catalog) -> None:
    t = _table(catalog, {**STRINGS, "bucket": "1", "deletion-vectors.enabled": "true"}, primary_keys=["id"], batches=3)
    assert _check(t, "c = 'nowhere'").files_selected == 0
    assert _check(t, "c = 'c1-0'").files_selected >= 1


# ------------------------------------------------------------------------------------------------ rewrite


def test_rewrite_file_index_indexes_existing_files(catalog: Catalog) -> None:
    t = _table(catalog, {}, batches=4)
    needle = _needle(2, 3)
    before = t.latest_snapshot()
    assert _check(t, f"s = '{needle['s']}'").files_skipped_index == 0
    assert not t.maintenance.rewrite_file_index()  # nothing to index: no snapshot
    t.update_schema().set_options({**STRINGS, "file-index.in-manifest-threshold": "1 b"}).commit()
    result = t.maintenance.rewrite_file_index()
    assert result and result.files == 4 and result.index_files == 4 and result.embedded == 0
    snap = t.latest_snapshot()
    assert snap is not None and before is not None and snap.commit_kind == "COMPACT"
    names = {f.file_name for f in _files(t)}
    assert all(f.extra_files == (f.file_name + ".index",) for f in _files(t))
    c = _check(t, f"s = '{needle['s']}'")
    assert c.files_skipped_index >= 2 and c.index_files_read == 4
    assert t.scan(read_options={"scan.snapshot-id": str(before.id)}).to_arrow().num_rows == 200
    # again, embedded this time: the index files go (a later expiration deletes them), the data files stay
    t.update_schema().set_options({"file-index.in-manifest-threshold": "1 mb"}).commit()
    again = t.maintenance.rewrite_file_index()
    assert again.embedded == 4 and {f.file_name for f in _files(t)} == names
    assert all(f.extra_files == () and f.embedded_index is not None for f in _files(t))
    # options gone: the indexes go
    t.update_schema().remove_options(list(STRINGS)).commit()
    assert t.maintenance.rewrite_file_index().files == 4
    assert all(f.embedded_index is None and f.extra_files == () for f in _files(t))
    assert t.scan().to_arrow().num_rows == 200


def test_a_second_index_file_takes_the_next_number(catalog: Catalog) -> None:
    t = _table(catalog, {**STRINGS, "file-index.in-manifest-threshold": "1 b"}, batches=1)
    (f,) = _files(t)
    t.maintenance.rewrite_file_index()
    (g,) = _files(t)
    assert g.extra_files == (f.file_name + "-1.index",)
    t.maintenance.rewrite_file_index()
    (h,) = _files(t)
    assert h.extra_files == (f.file_name + "-2.index",)


def test_rewrite_file_index_of_some_partitions_of_a_primary_key_table(catalog: Catalog) -> None:
    t = catalog.create_table(
        "default.pk", "dt string, " + DDL, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    for b in range(2):
        t.write_arrow(_batch(b).append_column("dt", pa.array([f"d{b}"] * 50)).select(["dt", "id", "s", "n", "c", "f"]))
    t.update_schema().set_options(STRINGS).commit()
    result = t.maintenance.rewrite_file_index(["dt=d1"])
    indexed = [e for e in t.store.live_entries(t.latest_snapshot()) if e.file.embedded_index is not None]
    assert result.files == len(indexed) > 0
    assert {e.partition for e in indexed} == {indexed[0].partition}
    assert t.scan().to_arrow().num_rows == 100
    assert t.scan(filter="c = 'c1-0'").to_arrow().num_rows == 25
    with pytest.raises(OptionError, match="rewrite_file_index partition"):
        t.maintenance.rewrite_file_index(["nope=1"])


def test_the_cli_rewrites_file_indexes(catalog: Catalog, capsys: pytest.CaptureFixture[str]) -> None:
    t = _table(catalog, {}, batches=2)
    t.update_schema().set_options(STRINGS).commit()
    status = cli_main(["rewrite_file_index", "--table", t.store.table_path, "--json"])
    assert status == 0
    assert '"files": 2' in capsys.readouterr().out
    assert all(f.extra_files for f in _files(t))
