"""``Scan.to_spark``: merge-free splits through Spark's own Parquet reader, the rest through the ``paimon`` source,
always the rows and the schema ``spark.read.format("paimon")`` gives with the same options."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.table import Table
from tests.sparkutil import sorted_rows

pytestmark = pytest.mark.spark


def same_as_paimon(spark: Any, t: Table, filter: str | None = None, columns: list[str] | None = None, **kw: Any):
    """Assert ``to_spark`` equals ``format('paimon')`` (rows and schema); return the scan's reader report."""
    scan = t.scan(filter, columns, **kw)
    ours = scan.to_spark(spark)
    reader = spark.read.format("paimon")
    for key, value in scan.read_options.items():
        reader = reader.option(key, value)
    theirs = reader.load(t.uri)
    if columns is not None:
        theirs = theirs.select(*columns)
    assert ours.schema == theirs.schema
    assert sorted_rows(ours) == sorted_rows(theirs)
    return scan.explain().readers


def test_append_table_is_read_by_the_jvm(spark, catalog) -> None:
    t = catalog.create_table(
        "db.a",
        "id bigint not null, v string, d decimal(10,2) not null, ts timestamp_ntz, lt timestamp, day date, "
        "tags array<string>, m map<string,int>, s struct<x:int,y:string>, dt string",
        partition_keys=["dt"],
    )
    when = dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    for part in ("p1", "p2"):
        t.write_arrow(
            pa.table(
                {
                    "id": pa.array([1, 2], pa.int64()),
                    "v": ["a", None],
                    "d": pa.array([Decimal("1.25"), Decimal("-3.00")], pa.decimal128(10, 2)),
                    "ts": pa.array([when, None], pa.timestamp("us")),
                    "lt": pa.array([when, None], pa.timestamp("us", tz="UTC")),
                    "day": pa.array([dt.date(2024, 1, 2), None]),
                    "tags": [["x", None], None],
                    "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
                    "s": pa.array([{"x": 1, "y": "q"}, None], pa.struct([("x", pa.int32()), ("y", pa.string())])),
                    "dt": [part, part],
                }
            )
        )
    readers = same_as_paimon(spark, t)
    assert readers.python_splits == 0 and readers.jvm_files == 2
    readers = same_as_paimon(spark, t, "id > 1 and dt = 'p2'", ["v", "id"])
    assert readers.summary == "jvm: 1 files, python: 0 splits"


def pk_table(catalog: Any, name: str, **options: str) -> Table:
    return catalog.create_table(
        name, "k int not null, v string, n bigint", primary_keys=["k"], options={"bucket": "2", **options}
    )


def kv(keys: list[int], v: str) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int32()), "v": [v] * len(keys), "n": pa.array(keys, pa.int64())})


def test_primary_key_tables_compacted_and_not(spark, catalog) -> None:
    t = pk_table(catalog, "db.pk")
    t.write_arrow(kv([1, 2, 3, 4], "a"))
    t.write_arrow(kv([2, 3], "b"))
    readers = same_as_paimon(spark, t)
    assert readers.jvm_files == 0 and readers.python_reasons == {"merge needed": 2}
    t.maintenance.compact(full=True)
    readers = same_as_paimon(spark, t, "v = 'b'", ["k"])
    assert readers.python_splits == 0 and readers.jvm_splits == 2
    t.write_arrow(kv([1], "c"))  # one bucket merges again, the other stays merge-free: both readers at once
    readers = same_as_paimon(spark, t)
    assert readers.jvm_splits == 1 and readers.python_splits == 1
    # time travel to the uncompacted version: the Python source reads that snapshot, not the latest
    same_as_paimon(spark, t, snapshot_id=2)


def test_schema_evolution_by_field_id(spark, catalog) -> None:
    t = catalog.create_table("db.ev", "id int not null, a string, b int, gone string")
    t.write_arrow(
        pa.table({"id": pa.array([1], pa.int32()), "a": ["x"], "b": pa.array([7], pa.int32()), "gone": ["g"]})
    )
    t.update_schema().rename_column("a", "a2").drop_column("gone").add_column("c", "double").commit()
    # widen b to BIGINT (Paimon's ALTER COLUMN TYPE, written as the next schema file)
    latest = t.store.schemas.latest()
    fields = tuple(dataclasses.replace(f, type=AtomicType("BIGINT")) if f.name == "b" else f for f in latest.fields)
    assert t.store.schemas.commit(dataclasses.replace(latest, id=latest.id + 1, fields=fields))
    t.write_arrow(pa.table({"id": pa.array([2], pa.int32()), "a2": ["y"], "b": pa.array([8], pa.int64()), "c": [0.5]}))
    readers = same_as_paimon(spark, t)
    assert readers.python_splits == 0 and readers.jvm_files == 2
    same_as_paimon(spark, t, "b > 7 or a2 = 'x'", ["c", "a2"])


def test_deletion_vector_table(spark, catalog) -> None:
    """Level-0 files of a deletion-vector table are skipped (as Java's batch scans do); compacted files are read
    by the JVM at any level. Files with vectors (Java-written): tests/interop/test_java.py."""
    t = pk_table(catalog, "db.dv", **{"deletion-vectors.enabled": "true"})
    t.write_arrow(kv([1, 2, 3], "a"))
    t.maintenance.compact(full=True)
    t.write_arrow(kv([2], "b"))
    readers = same_as_paimon(spark, t)
    assert readers.python_splits == 0


def test_empty_table(spark, catalog) -> None:
    t = pk_table(catalog, "db.empty")
    assert same_as_paimon(spark, t).summary == "jvm: 0 files, python: 0 splits"


def test_fallback_branch_partitions(spark, catalog) -> None:
    t = catalog.create_table("db.fb", "id int, dt string", partition_keys=["dt"])
    t.branches.create("backfill", empty=True)
    t.on_branch("backfill").write_arrow(pa.table({"id": pa.array([1, 2], pa.int32()), "dt": ["1", "2"]}))
    t.write_arrow(pa.table({"id": pa.array([20], pa.int32()), "dt": ["2"]}))
    readers = same_as_paimon(spark, t, read_options={"scan.fallback-branch": "backfill"})
    assert readers.summary == "jvm: 2 files, python: 0 splits"


def test_chain_partitions(spark, catalog) -> None:
    """A partition the snapshot branch serves whole (compacted) goes to the JVM, relabelled; a partition that
    merges the snapshot with deltas goes to the Python source."""
    t = catalog.create_table(
        "db.chain",
        "k bigint not null, s bigint, v string, dt string not null",
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options={
            "chain-table.enabled": "true",
            "bucket": "1",
            "bucket-key": "k",
            "sequence.field": "s",
            "partition.timestamp-pattern": "$dt",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )
    t.branches.create("snapshot", empty=True)
    t.branches.create("delta", empty=True)
    t.update_schema().set_options(
        {"scan.fallback-snapshot-branch": "snapshot", "scan.fallback-delta-branch": "delta"}
    ).commit()

    def data(keys: list[int], s: int, dt: str) -> pa.Table:
        n = len(keys)
        return pa.table({"k": keys, "s": [s] * n, "v": [f"{dt}-{s}"] * n, "dt": [dt] * n})

    snapshot = t.on_branch("snapshot")
    snapshot.write_arrow(data([1, 2], 1, "20250810"))
    snapshot.maintenance.compact(full=True)
    t.on_branch("delta").write_arrow(data([2, 3], 2, "20250811"))
    readers = same_as_paimon(spark, t)
    assert readers.jvm_splits == 1 and readers.python_splits == 1
    # A chain-compacted day is one top-level run in the snapshot branch: the JVM serves it too.
    assert t.chain.compact("dt=20250811")
    readers = same_as_paimon(spark, t, "dt = '20250811'")
    assert readers.summary == "jvm: 1 files, python: 0 splits"
    assert same_as_paimon(spark, t).python_splits == 0


def test_all_types_match_the_python_source(spark, catalog) -> None:
    """Every type of the Spark round-trip test, nulls included, read by the JVM: same rows, same Spark types."""
    from tests.datasource.test_spark_read_write import ALL_TYPES
    from tests.sparkutil import save

    utc = dt.timezone.utc
    data = [
        (True, 1, 2, 3, 4, 1.5, 2.5, Decimal("12.34"), Decimal("1234567890123456789012345678.0123456789"), "héllo",
         b"\x00\x01", dt.date(2025, 8, 11), dt.datetime(2025, 8, 11, 12, 30, 45, 123456, tzinfo=utc),
         dt.datetime(2025, 8, 11, 1, 2, 3, 4), [1, None, 3], {"a": 1, "b": None}, (7, "y")),
        (False, -128, 32767, -2147483648, 9223372036854775807, -3.25, 1e300, Decimal("-99999999.99"),
         Decimal("-9999999999999999999999999999.9999999999"), "", b"", dt.date(1969, 12, 31),
         dt.datetime(1900, 1, 1, 0, 0, 0, 1, tzinfo=utc), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), [], {},
         (None, None)),
        (None,) * 17,
    ]  # fmt: skip
    t = catalog.create_table("db.types", ALL_TYPES)
    save(spark.createDataFrame(data, ALL_TYPES), t.uri)
    readers = same_as_paimon(spark, t)
    assert readers.python_splits == 0 and readers.jvm_files >= 1
    same_as_paimon(spark, t, "i > 0", ["m", "st", "ts", "d2"])


def test_glob_characters_in_the_table_path(spark, tmp_path) -> None:
    """Spark expands the paths it loads as globs; ours are escaped, so the table under ``w[1]{a,b}*?`` is read,
    not the decoy ``w1ab`` next to it (which that pattern matches)."""
    from pyspark_paimon import Catalog

    for name in ("w1ab", "w[1]{a,b}*?"):
        t = Catalog(str(tmp_path / name)).create_table("db.t", "id int")
        t.write_arrow(pa.table({"id": pa.array([len(name)], pa.int32())}))
    readers = same_as_paimon(spark, t)
    assert readers.jvm_files == 1
    assert [r.id for r in t.scan().to_spark(spark).collect()] == [len("w[1]{a,b}*?")]


def test_local_time_zone_timestamps_under_a_ntz_session(spark, catalog) -> None:
    """``spark.sql.timestampType=TIMESTAMP_NTZ`` makes a bare ``TIMESTAMP`` in DDL mean NTZ; the JVM half spells
    TIMESTAMP_LTZ, so the column stays what format("paimon") gives."""
    t = catalog.create_table("db.ltz", "id int, lt timestamp, nested array<timestamp>")
    when = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone.utc)
    t.write_arrow(
        pa.table(
            {
                "id": pa.array([1], pa.int32()),
                "lt": pa.array([when], pa.timestamp("us", tz="UTC")),
                "nested": pa.array([[when]], pa.list_(pa.timestamp("us", tz="UTC"))),
            }
        )
    )
    spark.conf.set("spark.sql.timestampType", "TIMESTAMP_NTZ")
    try:
        assert same_as_paimon(spark, t).python_splits == 0
    finally:
        spark.conf.unset("spark.sql.timestampType")
