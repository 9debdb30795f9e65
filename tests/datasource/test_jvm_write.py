"""``Table.write_spark``: data files written by Spark's own Parquet writer, described from their footers and committed
here. The table it makes must equal the Python writer's for the same input (rows, files per partition and bucket,
row counts, sequence ranges, levels, schema ids and statistics, byte for byte; only names and sizes differ), read
the same in pypaimon, and leave nothing behind when it fails before its commit."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.errors import CommitError, ConflictingKeysError, OptionError, SchemaMismatchError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.table import Table
from tests import oracle
from tests.sparkutil import sorted_rows

COLUMNS = (
    "id bigint not null, t tinyint, v string, d decimal(10,2), big decimal(30,4), f double, day date, "
    "ts timestamp_ntz, ok boolean, raw binary, dt string"
)
ROWS_SQL = """
select id, cast(id % 7 as tinyint) t,
       if(id % 5 = 0, null, concat('value-that-is-longer-than-sixteen-', cast(id as string))) v,
       cast(id / 4 as decimal(10,2)) d, cast(id * 1000.125 as decimal(30,4)) big,
       if(id = 7, double('NaN'), id / 3.0D) f, date_add(date'2024-01-01', cast(id as int)) day,
       timestamp_ntz'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) ts, id % 2 = 0 ok,
       cast(cast(id as string) as binary) raw, concat('p', cast(id % 3 as string)) dt
from range({start}, {end})
"""


def frame(spark: Any, start: int, end: int) -> Any:
    return spark.sql(ROWS_SQL.format(start=start, end=end)).coalesce(1)


def files_of(t: Table) -> list[tuple]:
    """Every live file as what must be equal across the two write paths (names and sizes left out)."""
    types = [f.type for f in t.schema.partition_fields]
    out = []
    for e in t.store.live_entries(t.latest_snapshot()):
        f = e.file
        out.append(
            (
                deserialize_row(e.partition, types),
                e.bucket,
                e.total_buckets,
                f.row_count,
                f.min_sequence_number,
                f.max_sequence_number,
                f.level,
                f.schema_id,
                f.value_stats,
                f.value_stats_cols,
                f.key_stats,
                f.min_key,
                f.max_key,
                f.delete_row_count,
                f.file_source,
                f.file_name.startswith("data-") and f.file_name.endswith(".parquet"),
            )
        )
    return sorted(out, key=repr)


def every_file(root: str) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if p.is_file())


@pytest.mark.interop
def test_jvm_write_equals_the_python_writer(spark: Any, catalog: Catalog, warehouse: str, oracle_python: str) -> None:
    options = {"fields.big.stats-mode": "full", "fields.raw.stats-mode": "counts"}
    ours = catalog.create_table("db.jvm", COLUMNS, partition_keys=["dt"], options=options)
    python = catalog.create_table("db.py", COLUMNS, partition_keys=["dt"], options=options)
    for start, end in ((0, 40), (40, 55)):
        result = ours.write_spark(frame(spark, start, end))
        assert result.path == "jvm" and result.snapshot_id is not None and result.rows_written == end - start
        frame(spark, start, end).write.format("paimon").mode("append").save(python.uri)
    assert files_of(ours) == files_of(python)
    # repr: the NaN of row 7 is not equal to itself
    assert repr(sorted_rows(ours.scan().to_spark(spark))) == repr(sorted_rows(python.scan().to_spark(spark)))
    mine = ours.scan().to_arrow().sort_by("id")
    assert repr(mine.to_pylist()) == repr(python.scan().to_arrow().sort_by("id").to_pylist())
    assert mine.schema == python.schema.arrow_schema()
    # the second write continued each bucket's sequence numbers
    seqs = sorted((f[0], f[4], f[5]) for f in files_of(ours))
    assert seqs[1][1] == seqs[0][2] + 1
    theirs = oracle.pypaimon_read(warehouse, "db.jvm", sort=False).sort_by("id")
    assert repr(theirs.to_pylist()) == repr(mine.to_pylist())


def test_overwrite_and_result(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("db.o", "id bigint, v string")
    t.write_spark(spark.range(10).selectExpr("id", "cast(id as string) v"))
    result = t.write_spark(spark.range(3).selectExpr("id", "'x' v"), mode="overwrite")
    assert result.path == "jvm" and result.files_added >= 1
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    # types the table's store assignment allows are cast by Spark (INT into BIGINT)
    t.write_spark(spark.range(5, 6).selectExpr("cast(id as int) id", "'y' v"))
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 5]
    assert not [p for p in os.listdir(t.store.table_path) if p.startswith("_jvm-write-")]


def test_fixed_bucket_append_table_equals_the_python_writer(spark: Any, catalog: Catalog) -> None:
    ddl = "id bigint, k string, v double, dt string"
    options = {"bucket": "3", "bucket-key": "k,id"}
    ours = catalog.create_table("db.fb", ddl, partition_keys=["dt"], options=options)
    python = catalog.create_table("db.fp", ddl, partition_keys=["dt"], options=options)
    sql = ["id", "concat('k', cast(id % 11 as string)) k", "id * 0.5D v", "concat('d', cast(id % 2 as string)) dt"]
    for start in (0, 100):
        df = spark.range(start, start + 100).selectExpr(*sql).coalesce(1)
        assert ours.write_spark(df).buckets == 6
        df.write.format("paimon").mode("append").save(python.uri)
    assert files_of(ours) == files_of(python)
    assert {f[1] for f in files_of(ours)} == {0, 1, 2} and {f[2] for f in files_of(ours)} == {3}


@pytest.mark.interop
def test_fixed_bucket_primary_key_table_equals_the_python_writer(
    spark: Any, catalog: Catalog, warehouse: str, oracle_python: str
) -> None:
    ddl = "dt string not null, id bigint not null, v string, n int"
    options = {"bucket": "4"}
    ours = catalog.create_table("db.kb", ddl, partition_keys=["dt"], primary_keys=["dt", "id"], options=options)
    python = catalog.create_table("db.kp", ddl, partition_keys=["dt"], primary_keys=["dt", "id"], options=options)
    sql = ["concat('d', cast(id % 2 as string)) dt", "id", "concat('v{w}-', cast(id as string)) v", "cast(id as int) n"]
    for w, (start, end) in enumerate(((0, 200), (150, 260))):  # the second write updates keys 150..199
        df = spark.range(start, end).selectExpr(*(e.format(w=w) for e in sql)).coalesce(1)
        result = ours.write_spark(df.orderBy("v"))  # any input order: the files come out sorted by key
        assert result.path == "jvm" and result.rows_written == end - start
        df.write.format("paimon").mode("append").save(python.uri)
    assert files_of(ours) == files_of(python)
    mine = ours.scan().to_arrow().sort_by("id")
    assert mine.to_pylist() == python.scan().to_arrow().sort_by("id").to_pylist()
    assert mine.num_rows == 260 and mine.column("v")[175].as_py() == "v1-175"
    assert oracle.pypaimon_read(warehouse, "db.kb", sort=False).sort_by("id").to_pylist() == mine.to_pylist()
    before = every_file(ours.store.table_path)
    twice = (
        spark.range(3)
        .selectExpr(*(e.format(w=2) for e in sql))
        .union(spark.range(1, 2).selectExpr(*(e.format(w=3) for e in sql)))
    )
    with pytest.raises(ConflictingKeysError, match="written twice"):  # Spark's job failed: the same error
        ours.write_spark(twice)
    assert every_file(ours.store.table_path) == before and ours.latest_snapshot().id == 2


def test_null_partitions_and_empty_writes_as_the_python_path(spark: Any, catalog: Catalog) -> None:
    ours = catalog.create_table("db.n", "id bigint, day date", partition_keys=["day"])
    python = catalog.create_table("db.m", "id bigint, day date", partition_keys=["day"])
    df = spark.range(6).selectExpr("id", "if(id % 3 = 0, null, date_add(date'2025-01-01', cast(id % 2 as int))) day")
    ours.write_spark(df.coalesce(1))
    df.coalesce(1).write.format("paimon").mode("append").save(python.uri)
    assert files_of(ours) == files_of(python)
    assert [f[0] for f in files_of(ours)].count((None,)) == 1
    empty = ours.write_spark(df.limit(0))
    assert not empty and empty.path == "jvm" and empty.files_added == 0
    assert ours.latest_snapshot().id == 1


def test_refusals_name_the_python_path(spark: Any, catalog: Catalog) -> None:
    pk = catalog.create_table("db.pk", "id bigint not null, v string", primary_keys=["id"])  # dynamic bucket
    indexed = catalog.create_table("db.idx", "id bigint, v string", options={"file-index.bloom-filter.columns": "id"})
    df = spark.range(3).selectExpr("id", "'a' v")
    for t in (pk, indexed):
        with pytest.raises(OptionError, match=r"format\('paimon'\)"):
            t.write_spark(df, engine="jvm")
        assert t.latest_snapshot() is None
    plain = catalog.create_table("db.plain", "id bigint, v string")
    with pytest.raises(SchemaMismatchError, match="missing"):
        plain.write_spark(spark.range(3))
    with pytest.raises(SchemaMismatchError, match="Cast it"):
        plain.write_spark(spark.range(3).selectExpr("id", "id v"))  # numbers into a string column


def test_a_failure_before_the_commit_leaves_nothing(spark: Any, catalog: Catalog, monkeypatch: Any) -> None:
    t = catalog.create_table("db.abort", "id bigint, dt string", partition_keys=["dt"])
    before = every_file(t.store.table_path)
    df = spark.range(20).selectExpr("id", "concat('d', cast(id % 2 as string)) dt")

    def failing_commit(self: Any, *args: Any, **kwargs: Any) -> None:
        raise CommitError("injected: the commit failed before any snapshot was written")

    monkeypatch.setattr("pyspark_paimon.datasource.jobs.WriteJob._commit", failing_commit)
    with pytest.raises(CommitError, match="injected"):
        t.write_spark(df)
    assert t.latest_snapshot() is None
    assert every_file(t.store.table_path) == before
    monkeypatch.undo()

    calls = []
    real = FileIO.rename

    def failing_rename(self: FileIO, src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) > 1:  # after one file was moved into its bucket
            raise OSError("injected: a move failed")
        real(self, src, dst)

    monkeypatch.setattr(FileIO, "rename", failing_rename)
    with pytest.raises(OSError, match="injected"):
        t.write_spark(df.repartition(2))
    assert len(calls) > 1
    assert t.latest_snapshot() is None
    assert every_file(t.store.table_path) == before


def test_unpartitioned_primary_key_table_one_spark_partition_per_bucket(spark: Any, catalog: Catalog) -> None:
    """No partition columns: each bucket is one Spark partition, numbered without a window; equal to the Python
    writer's table, sequence numbers continued by a second write, a key given twice refused by the file check."""
    ddl = "id bigint not null, v string"
    ours = catalog.create_table("db.u1", ddl, primary_keys=["id"], options={"bucket": "5"})
    python = catalog.create_table("db.u2", ddl, primary_keys=["id"], options={"bucket": "5"})
    for w, (start, end) in enumerate(((0, 300), (200, 450))):
        df = spark.range(start, end, 1, 3).selectExpr("id", f"concat('v{w}-', cast(id as string)) v")
        assert ours.write_spark(df.orderBy("v")).rows_written == end - start
        df.coalesce(1).write.format("paimon").mode("append").save(python.uri)
    assert files_of(ours) == files_of(python)
    assert {f[1] for f in files_of(ours)} == set(range(5)) and len(files_of(ours)) == 10
    rows = ours.scan().to_arrow().sort_by("id")
    assert rows.num_rows == 450 and rows.column("v")[250].as_py() == "v1-250"
    before = every_file(ours.store.table_path)
    with pytest.raises(ConflictingKeysError, match="written twice"):
        ours.write_spark(spark.range(4).union(spark.range(2, 3)).selectExpr("id", "'x' v"))
    assert every_file(ours.store.table_path) == before and ours.latest_snapshot().id == 2


def test_two_nan_keys_are_a_key_given_twice(spark: Any, catalog: Catalog) -> None:
    t = catalog.create_table("db.nan", "k double not null, v string", primary_keys=["k"], options={"bucket": "2"})
    first = t.write_spark(spark.range(3).selectExpr("id * 1.5D k", "'a' v"))
    assert first.rows_written == 3  # a DOUBLE key: the bucket comes from the Arrow UDF
    with pytest.raises(ConflictingKeysError, match="written twice"):
        t.write_spark(spark.range(2).selectExpr("double('NaN') k", "cast(id as string) v"))
    assert t.latest_snapshot().id == 1


@pytest.mark.interop
@pytest.mark.parametrize(
    ("partitioned", "options"),
    [(False, {"bucket": "3"}), (True, {"bucket": "4", "bucket-key": "k"})],
    ids=["unpartitioned", "partitioned-bucket-key"],
)
def test_multi_column_primary_key_equals_the_python_writer(
    spark: Any, catalog: Catalog, warehouse: str, oracle_python: str, partitioned: bool, options: dict
) -> None:
    """A key of several columns (a string, an int and a double): buckets of every bucket-key column, files sorted by
    the full key, min/max keys from the first and last key rows, a duplicate found over the full key only."""
    ddl = "dt string not null, k string not null, n int not null, x double not null, v string"
    parts = ["dt"] if partitioned else []
    pk = ["dt", "k", "n", "x"] if partitioned else ["k", "n", "x"]
    name = "p" if partitioned else "u"
    ours = catalog.create_table(f"db.mk{name}", ddl, partition_keys=parts, primary_keys=pk, options=options)
    python = catalog.create_table(f"db.mp{name}", ddl, partition_keys=parts, primary_keys=pk, options=options)
    sql = [
        "concat('d', cast(id % 2 as string)) dt",
        "concat('key-', cast(id % 13 as string)) k",  # k repeats: n tells the keys apart
        "cast((1000 - id) div 13 as int) n",  # falls as id rises: an input order that is not the key order
        "(id % 5) * 0.5D x",
        "concat('v{w}-', cast(id as string)) v",
    ]
    for w, (start, end) in enumerate(((0, 300), (250, 420))):  # the second write updates keys 250..299
        df = spark.range(start, end, 1, 3).selectExpr(*(e.format(w=w) for e in sql))
        result = ours.write_spark(df.orderBy("v"))
        assert result.path == "jvm" and result.rows_written == end - start
        df.coalesce(1).write.format("paimon").mode("append").save(python.uri)
    assert files_of(ours) == files_of(python)
    assert len({f[1] for f in files_of(ours)}) == int(options["bucket"])
    for path in Path(ours.store.table_path).rglob("data-*.parquet"):  # each file sorted by the full key
        keys = pq.read_table(path, columns=["_KEY_k", "_KEY_n", "_KEY_x"])
        assert keys.num_rows and keys == keys.sort_by([(c, "ascending") for c in keys.column_names]), path
    mine = ours.scan().to_arrow().sort_by([("n", "ascending"), ("k", "ascending"), ("x", "ascending")])
    theirs = python.scan().to_arrow().sort_by([("n", "ascending"), ("k", "ascending"), ("x", "ascending")])
    assert mine.num_rows == 420 and mine.to_pylist() == theirs.to_pylist()
    assert {r["v"] for r in mine.to_pylist() if r["v"].endswith("-260")} == {"v1-260"}
    read = oracle.pypaimon_read(warehouse, f"db.mk{name}", sort=False)
    keys = [("n", "ascending"), ("k", "ascending"), ("x", "ascending")]
    assert read.sort_by(keys).to_pylist() == mine.to_pylist()
    before = every_file(ours.store.table_path)
    twice = spark.range(400, 404).union(spark.range(402, 403)).selectExpr(*(e.format(w=3) for e in sql))
    with pytest.raises(ConflictingKeysError, match="written twice"):
        ours.write_spark(twice)
    assert every_file(ours.store.table_path) == before and ours.latest_snapshot().id == 2


def test_engine_chooses_the_path(spark: Any, catalog: Catalog) -> None:
    """engine='auto' takes the JVM path where it writes the table and else the Python path (saying why), 'python'
    always the Python path, 'jvm' refuses; the Python path's result describes the snapshot it committed."""
    ddl = "id bigint not null, v string, dt string"
    rows = spark.range(30).selectExpr("id", "cast(id as string) v", "concat('d', cast(id % 3 as string)) dt")
    plain = catalog.create_table("db.e1", ddl, partition_keys=["dt"])
    jvm = plain.write_spark(rows)
    assert jvm.path == "jvm" and jvm.fallback is None and jvm.rows_written == 30
    python = plain.write_spark(rows, engine="python")
    assert python.path == "python" and python.fallback is None
    assert python.snapshot_id == plain.latest_snapshot().id == 2
    assert (python.rows_written, python.partitions, python.buckets) == (jvm.rows_written, jvm.partitions, 3)
    assert python.files_added >= 3 and plain.scan().to_arrow().num_rows == 60

    # a dynamic-bucket primary-key table: 'jvm' refuses it, 'auto' writes it on the Python path
    keyed = catalog.create_table("db.e2", ddl, partition_keys=["dt"], primary_keys=["dt", "id"])
    with pytest.raises(OptionError, match="'bucket' = '-1'"):
        keyed.write_spark(rows, engine="jvm")
    assert keyed.latest_snapshot() is None
    auto = keyed.write_spark(rows)
    assert auto.path == "python" and "'bucket' = '-1'" in (auto.fallback or "") and auto.rows_written == 30
    assert auto.snapshot_id == 1 and auto.partitions == 3
    # the same overwrite semantics as the JVM path: a plain overwrite replaces the whole table (not the session's
    # partitionOverwriteMode), dynamic only the partitions written, overwrite_partition the one named
    replaced = keyed.write_spark(rows.where("dt = 'd1'").selectExpr("id", "'x' v", "dt"), mode="overwrite")
    assert replaced.path == "python" and replaced.rows_written == 10
    assert sorted({r["dt"] for r in keyed.scan().to_arrow().to_pylist()}) == ["d1"]
    keyed.write_spark(rows)
    keyed.write_spark(
        rows.where("dt = 'd2'").selectExpr("id", "'y' v", "dt"), dynamic_partition_overwrite=True, mode="overwrite"
    )
    keyed.write_spark(
        rows.where("dt = 'd0'").selectExpr("id", "'z' v", "dt"), mode="overwrite", overwrite_partition={"dt": "d0"}
    )
    left = {(r["dt"], r["v"] if r["v"] in ("y", "z") else "n") for r in keyed.scan().to_arrow().to_pylist()}
    assert left == {("d0", "z"), ("d1", "n"), ("d2", "y")} and keyed.scan().to_arrow().num_rows == 30
    with pytest.raises(OptionError, match="engine must be one of"):
        keyed.write_spark(rows, engine="spark")
