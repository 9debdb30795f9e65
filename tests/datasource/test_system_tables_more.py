"""The system tables added for issue 37 as Arrow (``t.inspect``, ``read_system_table``), without Spark: the data
views (``$audit_log``, ``$binlog``, ``$ro``) against plain reads of the same versions, the metadata tables against
the files and options they describe. Their Java 1.0 and pypaimon agreement is in tests/interop/."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.datasource.system_tables import SYSTEM_TABLES, read_system_table, system_table_fields
from pyspark_paimon.errors import CorruptMetadataError, PaimonError
from pyspark_paimon.metadata.identifier import SYSTEM_TABLES as IDENTIFIER_SYSTEM_TABLES
from pyspark_paimon.metadata.identifier import split_suffix
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.types.model import type_to_sql
from pyspark_paimon.table import Table


def _by_id(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: str(r.get("id")))


@pytest.fixture
def pk(tmp_path: Any) -> Table:
    """Deduplicate, partitioned, 2 buckets, write-only: an update (+U) and a delete, a full compaction, then a
    level-0 write on top (so $ro is stale for it)."""
    t = Catalog(str(tmp_path)).create_table(
        "db.pk",
        "id bigint, v string, dt string",
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2", "write-only": "true"},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "dt": ["x", "x", "y", "y"]}))
    t.update({"v": "'b2'"}, "id = 2")
    t.delete("id = 3")
    t.maintenance.compact(full=True)
    t.write_arrow(pa.table({"id": [4, 5], "v": ["d2", "e"], "dt": ["y", "y"]}))
    return t


def test_every_system_table_is_known_to_identifiers() -> None:
    assert set(SYSTEM_TABLES) == set(IDENTIFIER_SYSTEM_TABLES)
    assert split_suffix("t$branch_b$audit_log")[1].system_table == "audit_log"


def test_audit_log_leads_with_the_merged_row_kind(pk: Table) -> None:
    got = pk.inspect.audit_log()
    assert got.column_names == ["rowkind", "id", "v", "dt"]
    plain = _by_id(pk.scan().to_arrow())
    assert [{k: v for k, v in r.items() if k != "rowkind"} for r in _by_id(got)] == plain
    kinds = {r["id"]: r["rowkind"] for r in got.to_pylist()}
    assert kinds == {1: "+I", 2: "+U", 4: "+I", 5: "+I"}
    assert sorted(r["id"] for r in pk.inspect.audit_log("id >= 4").to_pylist()) == [4, 5]
    first = pk.inspect.audit_log(snapshot_id=1)
    assert {r["rowkind"] for r in first.to_pylist()} == {"+I"} and first.num_rows == 4


def test_binlog_wraps_every_column_in_a_one_element_array(pk: Table) -> None:
    binlog = pk.inspect.binlog()
    fields = system_table_fields("binlog", pk.store)
    assert [type_to_sql(f.type) for f in fields] == ["STRING", "ARRAY<BIGINT>", "ARRAY<STRING>", "ARRAY<STRING>"]
    audit = {r["id"]: r for r in pk.inspect.audit_log().to_pylist()}
    for row in binlog.to_pylist():
        (key,) = row["id"]
        expected = audit[key]
        assert row == {"rowkind": expected["rowkind"], **{c: [expected[c]] for c in ("id", "v", "dt")}}


def test_ro_reads_the_top_level_only(pk: Table) -> None:
    ro = _by_id(pk.inspect.ro())
    assert ro == [
        {"id": 1, "v": "a", "dt": "x"},
        {"id": 2, "v": "b2", "dt": "x"},
        {"id": 4, "v": "d", "dt": "y"},  # the newer 'd2' is still at level 0
    ]
    assert _by_id(pk.inspect.ro(filter="dt = 'y'")) == [{"id": 4, "v": "d", "dt": "y"}]


def test_views_of_append_tables(tmp_path: Any) -> None:
    t = Catalog(str(tmp_path)).create_table("db.log", "id bigint, s string")
    t.write_arrow(pa.table({"id": [1, 2], "s": ["a", None]}))
    assert _by_id(t.inspect.ro()) == _by_id(t.scan().to_arrow())
    assert [r["rowkind"] for r in t.inspect.audit_log().to_pylist()] == ["+I", "+I"]
    assert sorted((r["s"] for r in t.inspect.binlog().to_pylist()), key=str) == [["a"], [None]]


def test_buckets_total_the_live_files(pk: Table) -> None:
    files = pk.inspect.files()
    got = pk.inspect.buckets().to_pylist()
    assert [(r["partition"], r["bucket"]) for r in got] == sorted((r["partition"], r["bucket"]) for r in got)
    assert {r["partition"] for r in got} == {"[x]", "[y]"}
    assert sum(r["file_count"] for r in got) == files.num_rows
    assert sum(r["record_count"] for r in got) == sum(files.column("record_count").to_pylist())
    assert sum(r["file_size_in_bytes"] for r in got) == sum(files.column("file_size_in_bytes").to_pylist())
    first = pk.inspect.buckets(snapshot_id=1).to_pylist()
    assert sum(r["file_count"] for r in first) == pk.inspect.files(snapshot_id=1).num_rows == 3


def test_consumers(pk: Table) -> None:
    assert pk.inspect.consumers().num_rows == 0
    ConsumerManager(pk.store).record("zeta", 4)
    ConsumerManager(pk.store).record("alpha", 2)
    assert pk.inspect.consumers().to_pylist() == [
        {"consumer_id": "alpha", "next_snapshot_id": 2},
        {"consumer_id": "zeta", "next_snapshot_id": 4},
    ]


def test_aggregation_fields(tmp_path: Any) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.agg",
        "id bigint not null, total bigint, tags string",
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.total.ignore-retract": "true",
            "fields.tags.aggregate-function": "listagg",
        },
    )
    got = {r["field_name"]: r for r in t.inspect.aggregation_fields().to_pylist()}
    assert got["id"] == {
        "field_name": "id",
        "field_type": "BIGINT NOT NULL",
        "function": "[]",
        "function_options": "[]",
        "comment": None,
    }
    assert got["total"]["function"] == "[sum, true]"
    assert got["total"]["function_options"] == "[fields.total.aggregate-function, fields.total.ignore-retract]"
    assert got["tags"]["function"] == "[listagg]"


def test_statistics_of_the_snapshot_read(pk: Table) -> None:
    assert pk.inspect.statistics().num_rows == 0
    snapshot = pk.latest_snapshot()
    directory = f"{pk.store.table_path}/statistics"
    pk.store.fileio.mkdirs(directory)
    stats = {"snapshotId": snapshot.id, "schemaId": 0, "mergedRecordCount": 4, "colStats": {"id": {"colId": 0}}}
    pk.store.fileio.write_bytes(f"{directory}/stat-1", json.dumps(stats).encode())
    path = pk.store.snapshots.snapshot_path(snapshot.id)
    data = json.loads(pk.store.fileio.read_text(path))
    pk.store.fileio.write_bytes(path, json.dumps({**data, "statistics": "stat-1"}).encode())
    (row,) = pk.inspect.statistics().to_pylist()
    assert row == {
        "snapshot_id": snapshot.id,
        "schema_id": 0,
        "mergedRecordCount": 4,
        "mergedRecordSize": None,
        "colstat": '{\n  "id" : {\n    "colId" : 0\n  }\n}',
    }
    assert pk.inspect.statistics(snapshot_id=1).num_rows == 0
    pk.store.fileio.write_bytes(f"{directory}/stat-1", b"{broken")
    with pytest.raises(CorruptMetadataError, match="stat-1"):
        pk.inspect.statistics()


def test_table_indexes_list_deletion_vectors_and_hash_indexes(tmp_path: Any) -> None:
    cat = Catalog(str(tmp_path))
    dv = cat.create_table(
        "db.dv", "id bigint, v string", primary_keys=["id"], options={"bucket": "1", "deletion-vectors.enabled": "true"}
    )
    dv.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    dv.write_arrow(pa.table({"id": [2], "v": ["b2"]}))
    (row,) = dv.inspect.table_indexes().to_pylist()
    assert row["index_type"] == "DELETION_VECTORS" and row["partition"] == "{}" and row["bucket"] == 0
    (vector,) = row["dv_ranges"]
    data_files = set(dv.inspect.files().column("file_path").to_pylist())
    assert any(p.endswith("/" + vector["f0"]) for p in data_files) and vector["_CARDINALITY"] == 1
    assert dv.inspect.table_indexes(snapshot_id=1).num_rows == 0
    dyn = cat.create_table("db.dyn", "id bigint, v string", primary_keys=["id"], options={"bucket": "-1"})
    dyn.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    (hash_row,) = dyn.inspect.table_indexes().to_pylist()
    assert hash_row["index_type"] == "HASH" and hash_row["row_count"] == 2 and hash_row["dv_ranges"] is None


def test_file_key_ranges_are_the_files_key_columns(pk: Table) -> None:
    ranges = pk.inspect.file_key_ranges()
    files = pk.inspect.files()
    assert ranges.to_pylist() == files.select(ranges.column_names).to_pylist()
    assert ranges.num_rows and all(r["min_key"] for r in ranges.to_pylist())


def test_views_refuse_nothing_but_bad_names(pk: Table) -> None:
    with pytest.raises(PaimonError, match="Unknown system table"):
        read_system_table(pk.store, "nope")
    with pytest.raises(PaimonError, match="table's store"):
        system_table_fields("audit_log")
