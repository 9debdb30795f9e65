"""System tables read through Spark: Paimon's column lists (names and order) and the values of tiny tables."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon.datasource.spark.reader import spark_arrow_schema, spark_schema
from pyspark_paimon.datasource.system_tables import java_duration, read_system_table
from pyspark_paimon.datasource.table_ref import resolve_table_ref
from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.table import Table

# Java's system tables (table/system/*Table.java), in order.
PAIMON_COLUMNS = {
    "snapshots": [
        "snapshot_id",
        "schema_id",
        "commit_user",
        "commit_identifier",
        "commit_kind",
        "commit_time",
        "base_manifest_list",
        "delta_manifest_list",
        "changelog_manifest_list",
        "total_record_count",
        "delta_record_count",
        "changelog_record_count",
        "watermark",
        "next_row_id",
        "operation",
        "writer_version",
    ],
    "tags": ["tag_name", "snapshot_id", "schema_id", "commit_time", "record_count", "create_time", "time_retained"],
    "branches": ["branch_name", "created_from_tag", "created_from_snapshot", "create_time"],
    "schemas": ["schema_id", "fields", "partition_keys", "primary_keys", "options", "comment", "update_time"],
    "options": ["key", "value"],
    "files": [
        "partition",
        "bucket",
        "file_path",
        "file_format",
        "schema_id",
        "level",
        "record_count",
        "file_size_in_bytes",
        "min_key",
        "max_key",
        "null_value_counts",
        "min_value_stats",
        "max_value_stats",
        "min_sequence_number",
        "max_sequence_number",
        "creation_time",
        "deleteRowCount",
        "file_source",
        "first_row_id",
        "write_cols",
    ],
    "manifests": [
        "file_name",
        "file_size",
        "num_added_files",
        "num_deleted_files",
        "schema_id",
        "min_partition_stats",
        "max_partition_stats",
        "min_row_id",
        "max_row_id",
    ],
    "partitions": [
        "partition",
        "record_count",
        "file_size_in_bytes",
        "file_count",
        "last_update_time",
        "created_at",
        "created_by",
        "updated_by",
        "options",
        "total_buckets",
        "done",
        "deleted_record_count",
    ],
}


def load(spark: Any, path: str, system: str, **options: str) -> Any:
    reader = spark.read.format("paimon")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(f"{path}${system}")


def rows(df: Any) -> list[dict[str, Any]]:
    return [r.asDict() for r in df.collect()]


def local_ms(millis: int) -> _dt.datetime:
    """What Paimon shows for an epoch-ms instant in a TIMESTAMP(3) column: the local wall clock, in ms."""
    return _dt.datetime.fromtimestamp(millis // 1000).replace(microsecond=(millis % 1000) * 1000)


@pytest.fixture
def pk_table(catalog: Any) -> Table:
    """Partitioned PK table, 2 buckets: snapshot 1 (3 rows), 2 (2 rows, one update), 3 (1 row); tags."""
    t = catalog.create_table(
        "db.pk",
        "id bigint, v string, dt string",
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2"},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["x", "x", "y"]}))
    t.write_arrow(pa.table({"id": [1, 4], "v": ["a2", "d"], "dt": ["x", "y"]}))
    t.write_arrow(pa.table({"id": [5], "v": ["e"], "dt": ["z"]}))
    return t


def test_columns_are_paimons_and_batches_match_sparks_arrow_schema(spark: Any, pk_table: Table) -> None:
    pk_table.tags.create("t1", snapshot_id=1)
    BranchManager(pk_table.store).create("b1", tag="t1")
    for name, columns in PAIMON_COLUMNS.items():
        df = load(spark, pk_table.store.table_path, name)
        assert df.columns == columns, name
        assert df.count() > 0, name
        ref = resolve_table_ref({"path": f"{pk_table.store.table_path}${name}"})
        target = spark_arrow_schema(spark_schema(ref))
        batches = read_system_table(ref.store(), name).to_batches()
        assert batches, name
        for batch in batches:
            assert batch.schema.equals(target), (name, batch.schema, target)


def test_snapshots(spark: Any, pk_table: Table) -> None:
    pk_table.write_arrow(
        pa.table({"id": [9], "v": ["z"], "dt": ["x"]}), mode="overwrite", overwrite_partition={"dt": "x"}
    )
    got = rows(load(spark, pk_table.store.table_path, "snapshots").orderBy("snapshot_id"))
    snaps = pk_table.snapshots()
    assert [r["snapshot_id"] for r in got] == [1, 2, 3, 4]
    assert [r["commit_kind"] for r in got] == ["APPEND", "APPEND", "APPEND", "OVERWRITE"]
    assert [r["total_record_count"] for r in got] == [3, 5, 6, 4]
    assert [r["delta_record_count"] for r in got] == [3, 2, 1, -2]
    assert [r["schema_id"] for r in got] == [0, 0, 0, 0]
    for r, s in zip(got, snaps):
        assert r["commit_time"] == local_ms(s.time_millis)
        assert r["commit_user"] == s.commit_user
        assert r["commit_identifier"] == 2**63 - 1
        assert r["base_manifest_list"] == s.base_manifest_list
        assert r["delta_manifest_list"] == s.delta_manifest_list
        assert r["changelog_manifest_list"] is None
        assert r["writer_version"] == s.writer_version
    # A filter and a projection work like on any DataFrame.
    latest = (
        load(spark, pk_table.store.table_path, "snapshots").where("commit_kind = 'OVERWRITE'").select("snapshot_id")
    )
    assert [r.snapshot_id for r in latest.collect()] == [4]


def test_schemas_and_options(spark: Any, pk_table: Table) -> None:
    pk_table.update_schema().add_column("w", "int").commit()
    pk_table.update_schema().set_options({"snapshot.num-retained.min": "5"}).commit()
    got = rows(load(spark, pk_table.store.table_path, "schemas").orderBy("schema_id"))
    assert [r["schema_id"] for r in got] == [0, 1, 2]
    fields0 = json.loads(got[0]["fields"])
    assert [f["name"] for f in fields0] == ["id", "v", "dt"]
    assert fields0[0] == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    assert [f["name"] for f in json.loads(got[1]["fields"])] == ["id", "v", "dt", "w"]
    assert json.loads(got[0]["partition_keys"]) == ["dt"]
    assert json.loads(got[0]["primary_keys"]) == ["id", "dt"]
    assert json.loads(got[0]["options"]) == {"bucket": "2"}
    assert json.loads(got[2]["options"]) == {"bucket": "2", "snapshot.num-retained.min": "5"}
    assert got[0]["comment"] is None
    for r, sid in zip(got, [0, 1, 2]):
        assert r["update_time"] == local_ms(pk_table.store.schemas.schema(sid).time_millis)
    options = {r["key"]: r["value"] for r in rows(load(spark, pk_table.store.table_path, "options"))}
    assert options == {"bucket": "2", "snapshot.num-retained.min": "5"}


def test_tags_with_retention(spark: Any, pk_table: Table) -> None:
    pk_table.tags.create("b_daily", snapshot_id=2, time_retained="1 d")
    pk_table.tags.create("a_plain", snapshot_id=1)
    pk_table.tags.create("c_short", time_retained="90 min")
    got = rows(load(spark, pk_table.store.table_path, "tags"))
    assert [r["tag_name"] for r in got] == ["a_plain", "b_daily", "c_short"]
    assert [r["snapshot_id"] for r in got] == [1, 2, 3]
    assert [r["record_count"] for r in got] == [3, 5, 6]
    assert [r["schema_id"] for r in got] == [0, 0, 0]
    assert [r["time_retained"] for r in got] == [None, "PT24H", "PT1H30M"]
    assert got[0]["create_time"] is not None  # no tagCreateTime in the file: its modification time
    tags = {t.name: t for t in pk_table.tags.list()}
    for r in got:
        assert r["commit_time"] == local_ms(tags[r["tag_name"]].snapshot.time_millis)
        if r["tag_name"] != "a_plain":
            assert r["create_time"] == tags[r["tag_name"]].create_time


def test_java_duration_spelling() -> None:
    assert java_duration(86_400_000) == "PT24H"
    assert java_duration(5_000) == "PT5S"
    assert java_duration(1_500) == "PT1.5S"
    assert java_duration(0) == "PT0S"
    assert java_duration(3_723_000) == "PT1H2M3S"


def test_files_and_partitions(spark: Any, pk_table: Table) -> None:
    files = rows(load(spark, pk_table.store.table_path, "files"))
    live = pk_table.store.live_entries(pk_table.latest_snapshot())
    assert len(files) == len(live) == 5
    assert sorted(r["partition"] for r in files) == ["{x}", "{x}", "{y}", "{y}", "{z}"]
    assert sum(r["record_count"] for r in files) == 6
    assert {r["file_format"] for r in files} == {"parquet"}
    assert {r["file_source"] for r in files} == {"APPEND"}
    assert {r["level"] for r in files} == {0}
    by_name = {e.file.file_name: e for e in live}
    for r in files:
        name = r["file_path"].rsplit("/", 1)[-1]
        e = by_name[name]
        assert (
            r["file_path"].startswith(f"{pk_table.store.table_path}/dt=") and f"/bucket-{e.bucket}/" in r["file_path"]
        )
        assert r["bucket"] == e.bucket
        assert r["file_size_in_bytes"] == e.file.file_size
        assert r["schema_id"] == 0
        assert r["min_sequence_number"] == e.file.min_sequence_number
        assert r["creation_time"] is not None
        assert r["write_cols"] is None
    # The file with the update of key 1 (second commit): keys and stats in Java's spelling.
    second = [r for r in files if r["min_key"] == "[1]" and r["max_key"] == "[1]"]
    assert len(second) == 1
    assert second[0]["max_key"] == "[1]"
    assert second[0]["null_value_counts"] == "{dt=0, id=0, v=0}"
    assert second[0]["min_value_stats"] == "{dt=x, id=1, v=a2}"
    assert second[0]["max_value_stats"] == "{dt=x, id=1, v=a2}"

    parts = rows(load(spark, pk_table.store.table_path, "partitions"))
    assert [r["partition"] for r in parts] == ["dt=x", "dt=y", "dt=z"]
    assert [r["record_count"] for r in parts] == [3, 2, 1]
    assert [r["file_count"] for r in parts] == [2, 2, 1]
    assert [r["total_buckets"] for r in parts] == [2, 2, 2]
    assert [r["done"] for r in parts] == [False, False, False]
    assert [r["deleted_record_count"] for r in parts] == [0, 0, 0]
    sizes = {}
    for r in files:
        sizes[r["partition"]] = sizes.get(r["partition"], 0) + r["file_size_in_bytes"]
    assert [r["file_size_in_bytes"] for r in parts] == [sizes["{x}"], sizes["{y}"], sizes["{z}"]]
    assert all(r["last_update_time"] is not None and r["created_at"] is None for r in parts)


def test_files_of_append_table_and_evolved_stats(spark: Any, catalog: Any) -> None:
    t = catalog.create_table("db.log", "id int, msg string")
    t.write_arrow(pa.table({"id": pa.array([3, 1], pa.int32()), "msg": ["c", None]}))
    t.update_schema().add_column("extra", "bigint").commit()
    t.write_arrow(pa.table({"id": pa.array([7], pa.int32()), "msg": ["q"], "extra": [5]}))
    files = rows(load(spark, t.store.table_path, "files").orderBy("min_sequence_number", "schema_id"))
    assert [r["schema_id"] for r in files] == [0, 1]
    assert [r["partition"] for r in files] == ["{}", "{}"]
    assert [r["min_key"] for r in files] == [None, None]
    # The first file predates 'extra': evolved to the current schema, all NULL there.
    assert files[0]["null_value_counts"] == "{extra=2, id=0, msg=1}"
    assert files[0]["min_value_stats"] == "{extra=null, id=1, msg=c}"
    assert files[0]["max_value_stats"] == "{extra=null, id=3, msg=c}"
    assert files[1]["min_value_stats"] == "{extra=5, id=7, msg=q}"
    parts = rows(load(spark, t.store.table_path, "partitions"))
    assert [(r["partition"], r["record_count"], r["file_count"]) for r in parts] == [("", 3, 2)]


def test_files_manifests_partitions_time_travel(spark: Any, pk_table: Table) -> None:
    pk_table.tags.create("first", snapshot_id=1)
    assert load(spark, pk_table.store.table_path, "files").count() == 5
    assert load(spark, pk_table.store.table_path, "files", **{"scan.snapshot-id": "1"}).count() == 2
    assert load(spark, pk_table.store.table_path, "files", **{"scan.tag-name": "first"}).count() == 2
    parts = rows(load(spark, pk_table.store.table_path, "partitions", **{"scan.snapshot-id": "2"}))
    assert [(r["partition"], r["record_count"]) for r in parts] == [("dt=x", 3), ("dt=y", 2)]
    assert load(spark, pk_table.store.table_path, "manifests", **{"scan.snapshot-id": "1"}).count() == 1


def test_manifests(spark: Any, pk_table: Table) -> None:
    got = rows(load(spark, pk_table.store.table_path, "manifests"))
    metas = pk_table.store.data_manifests(pk_table.latest_snapshot())
    assert [r["file_name"] for r in got] == [m.file_name for m in metas]
    assert sum(r["num_added_files"] for r in got) == 5
    assert sum(r["num_deleted_files"] for r in got) == 0
    assert [r["file_size"] for r in got] == [m.file_size for m in metas]
    assert [(r["min_partition_stats"], r["max_partition_stats"]) for r in got] == [
        ("{x}", "{y}"),
        ("{x}", "{y}"),
        ("{z}", "{z}"),
    ]
    assert {r["schema_id"] for r in got} == {0}


def test_time_travel_and_incremental_options_are_refused_where_meaningless(spark: Any, pk_table: Table) -> None:
    with pytest.raises(Exception, match="Time-travel options do not apply to system table"):
        load(spark, pk_table.store.table_path, "snapshots", **{"scan.snapshot-id": "1"}).collect()
    with pytest.raises(Exception, match="Incremental read options do not apply"):
        load(spark, pk_table.store.table_path, "files", **{"incremental-between": "1,2"}).collect()


def test_system_tables_on_a_branch(spark: Any, pk_table: Table) -> None:
    pk_table.tags.create("t1", snapshot_id=1)
    BranchManager(pk_table.store).create("b", tag="t1")
    branch = pk_table.on_branch("b")
    branch.write_arrow(pa.table({"id": [7], "v": ["g"], "dt": ["w"]}))
    branch.tags.create("bt", time_retained="2 h")
    pk_table.tags.create("main_only", snapshot_id=3)

    tags = rows(load(spark, pk_table.store.table_path + "$branch_b", "tags"))
    assert [(r["tag_name"], r["snapshot_id"], r["time_retained"]) for r in tags] == [("bt", 2, "PT2H"), ("t1", 1, None)]
    main_tags = rows(load(spark, pk_table.store.table_path, "tags"))
    assert [r["tag_name"] for r in main_tags] == ["main_only", "t1"]

    snaps = rows(load(spark, pk_table.store.table_path + "$branch_b", "snapshots").orderBy("snapshot_id"))
    assert [(r["snapshot_id"], r["total_record_count"]) for r in snaps] == [(1, 3), (2, 4)]
    files = rows(load(spark, pk_table.store.table_path + "$branch_b", "files"))
    assert sorted(r["partition"] for r in files) == ["{w}", "{x}", "{y}"]
    # The `branch` option addresses the same branch as the path suffix.
    via_option = load(spark, pk_table.store.table_path, "partitions", branch="b")
    assert [r.partition for r in via_option.collect()] == ["dt=w", "dt=x", "dt=y"]

    pk_table.branches.create("from_snap", snapshot_id=2)
    branches = rows(load(spark, pk_table.store.table_path, "branches"))
    assert [(r["branch_name"], r["created_from_tag"], r["created_from_snapshot"]) for r in branches] == [
        ("b", "t1", 1),
        ("from_snap", None, 2),
    ]
    assert branches[0]["create_time"] is not None
    # $branches describes the table: the same rows when addressed on a branch.
    assert [r.branch_name for r in load(spark, pk_table.store.table_path + "$branch_b", "branches").collect()] == [
        "b",
        "from_snap",
    ]


def test_branches_without_lineage_infer_their_origin_as_paimon_did(pk_table: Table) -> None:
    """Branches Paimon or pypaimon made have no branch.json: the origin comes from the branch's tags and
    earliest snapshot (the rule of Java's $branches while it had these columns)."""
    pk_table.tags.create("t1", snapshot_id=2)
    pk_table.branches.create("tagged", tag="t1")
    pk_table.branches.create("empty", empty=True)
    for name in ("tagged", "empty"):
        pk_table.store.fileio.delete(f"{pk_table.store.table_path}/branch/branch-{name}/branch.json")
    got = pk_table.inspect.branches().to_pylist()
    assert [(r["branch_name"], r["created_from_tag"], r["created_from_snapshot"]) for r in got] == [
        ("empty", None, None),
        ("tagged", "t1", 2),
    ]


def test_missing_table_or_branch_is_a_clear_error(spark: Any, pk_table: Table, warehouse: str) -> None:
    with pytest.raises(Exception, match="No Paimon table"):
        load(spark, f"{warehouse}/db.db/nope", "snapshots").collect()
    with pytest.raises(Exception, match="does not exist"):
        load(spark, pk_table.store.table_path + "$branch_nope", "snapshots").collect()


def test_inspect_reads_system_tables_as_arrow_without_spark(pk_table: Table) -> None:
    """``t.inspect`` is the Python face of ``t$name``: same builder, same Arrow schema, same options."""
    for name in PAIMON_COLUMNS:
        got = getattr(pk_table.inspect, name)()
        assert got.column_names == PAIMON_COLUMNS[name], name
        assert got.equals(read_system_table(pk_table.store, name)), name
    assert pk_table.inspect.snapshots().column("snapshot_id").to_pylist() == [1, 2, 3]
    pk_table.tags.create("t1", snapshot_id=1)
    at_tag = pk_table.inspect.files(tag="t1").column("record_count").to_pylist()
    latest = pk_table.inspect.files().column("record_count").to_pylist()
    assert sum(at_tag) == 3 and sum(latest) == 6  # snapshot 1's files vs all three commits' files
    with pytest.raises(PaimonError, match=r"Unknown system table '\$nope'"):
        read_system_table(pk_table.store, "nope")
    with pytest.raises(PaimonError, match="Time-travel options do not apply to system table \\$tags"):
        read_system_table(pk_table.store, "tags", {"scan.snapshot-id": "1"})


# Paimon master's columns of the newer system tables (table/system/*Table.java).
NEWER_COLUMNS = {
    "buckets": ["partition", "bucket", "record_count", "file_size_in_bytes", "file_count", "last_update_time"],
    "consumers": ["consumer_id", "next_snapshot_id"],
    "statistics": ["snapshot_id", "schema_id", "mergedRecordCount", "mergedRecordSize", "colstat"],
    "aggregation_fields": ["field_name", "field_type", "function", "function_options", "comment"],
    "table_indexes": [
        "partition",
        "bucket",
        "index_type",
        "file_name",
        "file_size",
        "row_count",
        "dv_ranges",
        "row_range_start",
        "row_range_end",
        "index_field_id",
        "index_field_name",
    ],
    "file_key_ranges": [
        "partition",
        "bucket",
        "file_path",
        "file_format",
        "schema_id",
        "level",
        "record_count",
        "file_size_in_bytes",
        "min_key",
        "max_key",
        "first_row_id",
    ],
}


def test_newer_tables_and_data_views_through_spark(spark: Any, catalog: Any) -> None:
    """The newer metadata tables and the data views ($audit_log, $binlog, $ro) through Spark: master's columns,
    batches of exactly Spark's Arrow schema, the rows t.inspect returns."""
    t = catalog.create_table(
        "db.dv",
        "id bigint, v string, dt string",
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "dt": ["x", "x", "x", "y"]}))
    t.update({"v": "'b2'"}, "id = 2")
    t.delete("id = 3")
    ConsumerManager(t.store).record("c1", 2)
    path = t.store.table_path
    for name, columns in NEWER_COLUMNS.items():
        df = load(spark, path, name)
        assert df.columns == columns, name
        ref = resolve_table_ref({"path": f"{path}${name}"})
        target = spark_arrow_schema(spark_schema(ref))
        for batch in read_system_table(ref.store(), name).to_batches():
            assert batch.schema.equals(target), (name, batch.schema, target)
        if name != "statistics":
            assert df.count() > 0, name
    audit = sorted(rows(load(spark, path, "audit_log")), key=lambda r: r["id"])
    assert [(r["rowkind"], r["id"], r["v"]) for r in audit] == [("+I", 1, "a"), ("+U", 2, "b2"), ("+I", 4, "d")]
    binlog = sorted(rows(load(spark, path, "binlog", filter="id = 2")), key=lambda r: r["id"])
    assert binlog == [{"rowkind": "+U", "id": [2], "v": ["b2"], "dt": ["x"]}]
    assert sorted(r["id"] for r in rows(load(spark, path, "ro"))) == [1, 2, 4]
    assert sorted(r["id"] for r in t.inspect.ro().to_pylist()) == [1, 2, 4]
    with pytest.raises(Exception, match="read-only"):
        spark.createDataFrame([(1,)], "id long").write.format("paimon").mode("append").save(f"{path}$audit_log")
