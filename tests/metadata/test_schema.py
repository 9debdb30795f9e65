"""Schema files (Java's `TableSchema`, `SchemaManager`): parsing Java/pypaimon output, writing Java's form, validation
and evolution."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pytest

from pyspark_paimon.errors import (
    CommitError,
    CorruptMetadataError,
    OptionError,
    SchemaError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedTypeError,
)
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.io.jackson import to_jackson_json
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema, validate_table_schema
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.json_codec import type_to_json
from pyspark_paimon.metadata.types.model import (
    ArrayType,
    AtomicType,
    DataField,
    RowType,
    string_type,
)
from tests.oracle import require_oracle_python

FIXTURES = Path(__file__).parent / "fixtures" / "pypaimon"

SPEC_EXAMPLE = """
{"version":3,"id":0,"fields":[{"id":0,"name":"date","type":"STRING NOT NULL"},
 {"id":1,"name":"t1","type":"STRING NOT NULL"},{"id":2,"name":"t2","type":"STRING"},
 {"id":3,"name":"v","type":"BIGINT"}],"highestFieldId":3,"partitionKeys":["date"],
 "primaryKeys":["date","t1"],"options":{"bucket":"2"},"comment":"my table","timeMillis":1795256526256}
"""


@pytest.fixture
def fileio() -> FileIO:
    return FileIO()


@pytest.fixture
def table_path(tmp_path: Path) -> str:
    return str(tmp_path / "db.db" / "t")


@pytest.fixture
def manager(fileio: FileIO, table_path: str) -> SchemaManager:
    return SchemaManager(fileio, table_path)


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------
def test_spec_example() -> None:
    s = TableSchema.from_json(SPEC_EXAMPLE, "schema-0")
    assert s.version == 3 and s.id == 0 and s.highest_field_id == 3
    assert s.field_names == ["date", "t1", "t2", "v"]
    assert s.partition_keys == ["date"] and s.primary_keys == ["date", "t1"]
    assert s.options == {"bucket": "2"} and s.comment == "my table" and s.time_millis == 1795256526256
    assert s.trimmed_primary_keys == ["t1"] and s.bucket_keys == ["t1"] and s.num_buckets == 2
    assert s.is_primary_key_table
    assert [f.name for f in s.partition_fields] == ["date"]
    assert s.field("t1").type == string_type(False)
    assert s.field_by_id(3).name == "v"
    assert s.arrow_schema() == pa.schema(
        [
            pa.field("date", pa.string(), False),
            pa.field("t1", pa.string(), False),
            ("t2", pa.string()),
            ("v", pa.int64()),
        ]
    )
    assert s.logical_row_type.field_names == s.field_names
    # to_json -> from_json is the identity, and the dict is what was read
    assert TableSchema.from_json(s.to_json()) == s
    assert json.loads(s.to_json()) == json.loads(SPEC_EXAMPLE)


def test_java_key_order_and_pretty_print() -> None:
    s = TableSchema(
        id=1,
        fields=[DataField(0, "k", AtomicType("INT", False)), DataField(1, "a", ArrayType(string_type()), 'c"1\n')],
        highest_field_id=1,
        primary_keys=["k"],
        options={"bucket": "1"},
        time_millis=5,
    )
    expected = textwrap.dedent("""\
        {
          "version" : 3,
          "id" : 1,
          "fields" : [ {
            "id" : 0,
            "name" : "k",
            "type" : "INT NOT NULL"
          }, {
            "id" : 1,
            "name" : "a",
            "type" : {
              "type" : "ARRAY",
              "element" : "STRING"
            },
            "description" : "c\\"1\\n"
          } ],
          "highestFieldId" : 1,
          "partitionKeys" : [ ],
          "primaryKeys" : [ "k" ],
          "options" : {
            "bucket" : "1"
          },
          "timeMillis" : 5
        }""")
    assert s.to_json() == expected
    assert list(json.loads(s.to_json())) == [
        "version",
        "id",
        "fields",
        "highestFieldId",
        "partitionKeys",
        "primaryKeys",
        "options",
        "timeMillis",
    ]
    s.comment = "hello"
    keys = list(json.loads(s.to_json()))
    assert keys[-2:] == ["comment", "timeMillis"]


def test_jackson_json_details() -> None:
    assert to_jackson_json({}) == "{ }"
    assert to_jackson_json([]) == "[ ]"
    assert to_jackson_json({"a": [1, 2], "b": None, "c": True, "d": "\u0001é"}) == (
        '{\n  "a" : [ 1, 2 ],\n  "b" : null,\n  "c" : true,\n  "d" : "\\u0001é"\n}'
    )


def test_lenient_parsing_of_old_and_foreign_files() -> None:
    v1 = TableSchema.from_json(
        '{"id": 2, "fields": [{"id": 0, "name": "a", "type": "INT"}], '
        '"highestFieldId": 0, "partitionKeys": [], "primaryKeys": [], "options": {}}'
    )
    assert v1.version == 1 and v1.time_millis == 0 and v1.comment is None
    assert v1.options == {"bucket": "1", "file.format": "orc"} and v1.num_buckets == 1
    assert v1.options_with_defaults() == {"bucket": "1", "file.format": "orc"}
    v2 = TableSchema.from_json(
        '{"version": 2, "id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], '
        '"highestFieldId": 0, "partitionKeys": [], "primaryKeys": [], '
        '"options": {"bucket": "4", "bucket-key": "a"}, "comment": null}'
    )
    assert v2.options == {"bucket": "4", "bucket-key": "a", "file.format": "orc"} and v2.comment is None
    v3 = TableSchema.from_json(
        '{"version": 3, "id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0, "options": {}}'
    )
    assert v3.options == {} and v3.num_buckets == -1 and v3.partition_keys == [] and v3.primary_keys == []
    # a v1 schema evolved by us keeps its meaning: the implied bucket is written out explicitly
    assert json.loads(v1.copy(version=3).to_json())["options"]["bucket"] == "1"
    # missing highestFieldId / id are recovered
    s = TableSchema.from_json(
        b'{"version": 3, "fields": [{"id": 0, "name": "a", "type": "INT"}, {"id": 7, "name": "b", "type": "INT"}]}',
        "/x/schema/schema-5",
    )
    assert s.id == 5 and s.highest_field_id == 7


@pytest.mark.parametrize(
    "text,needle",
    [
        ('{"version": 3, "id": 0, "fields": [{"id": 0, "name": "a", "ty', "not valid JSON"),
        ("", "not valid JSON"),
        ("[]", "not a JSON object"),
        ('{"version": 3, "id": 0}', "'fields'"),
        ('{"version": "3", "id": 0, "fields": []}', "'version'"),
        ('{"version": 3, "id": 0, "fields": [], "primaryKeys": "a"}', "primaryKeys"),
        ('{"version": 3, "id": 0, "fields": [{"id": 0, "name": "a", "type": "DECIMAL(50, 1)"}]}', "'a'"),
        ('{"version": 3, "id": 0, "fields": [], "options": []}', "options"),
    ],
)
def test_corrupt_files_name_the_file(text: str, needle: str) -> None:
    with pytest.raises(CorruptMetadataError, match=needle) as e:
        TableSchema.from_json(text, "/w/t/schema/schema-0")
    assert "/w/t/schema/schema-0" in str(e.value) and "restore" in str(e.value)


def test_missing_id_without_file_name() -> None:
    with pytest.raises(CorruptMetadataError, match="'id'"):
        TableSchema.from_json('{"version": 3, "fields": []}', "somewhere")


def test_unknown_type_in_file() -> None:
    with pytest.raises(UnsupportedTypeError, match="schema-3.*'z'.*WEIRD"):
        TableSchema.from_json(
            '{"version": 3, "id": 3, "fields": [{"id": 0, "name": "z", "type": "WEIRD"}]}', "t/schema/schema-3"
        )


def test_truncated_file_through_manager(fileio: FileIO, manager: SchemaManager) -> None:
    manager.create_table([("a", AtomicType("INT"))])
    path = manager.schema_path(1)
    Path(path).write_text('{"version" : 3, "id" : 1, "fie')
    with pytest.raises(CorruptMetadataError, match="schema-1"):
        manager.latest()


# ---------------------------------------------------------------------------------------------
# pypaimon-written files (generated by fixtures/pypaimon/gen_fixtures.py with pypaimon 2.1.0)
# ---------------------------------------------------------------------------------------------
def test_pypaimon_all_types(fileio: FileIO) -> None:
    m = SchemaManager(fileio, str(FIXTURES / "all_types"))
    assert m.list_ids() == [0]
    s = m.latest()
    assert s is not None and s.comment == "many types" and s.highest_field_id == 26
    types = {f.name: type_to_json(f.type) for f in s.fields}
    assert types["id"] == "BIGINT NOT NULL"
    assert types["fbin"] == "BINARY(7)" and types["bin"] == "BYTES"
    assert types["dec"] == "DECIMAL(10, 2)" and types["ts_ns"] == "TIMESTAMP(9)"
    assert types["ltz"] == "TIMESTAMP(6) WITH LOCAL TIME ZONE"  # written as TIMESTAMP_LTZ(6) by pypaimon
    assert types["m"] == {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}
    r = s.field("r")
    assert r.id == 19 and isinstance(r.type, RowType)
    assert [(f.name, f.id) for f in r.type.fields] == [("a", 20), ("b", 21), ("inner", 23)]
    la = s.field("la").type
    assert isinstance(la, ArrayType) and la.element.fields[0].id == 25
    assert s.partition_keys == ["dt"] and s.primary_keys == ["dt", "id"] and s.trimmed_primary_keys == ["id"]
    assert s.num_buckets == 2 and s.bucket_keys == ["id"]
    arrow = s.arrow_schema()
    assert arrow.field("ltz").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("ts_ns").type == pa.timestamp("us")
    validate_table_schema(s)
    # re-serialised in Java's spelling, it still parses to the same schema
    assert TableSchema.from_json(s.to_json()) == s
    assert "TIMESTAMP_LTZ" not in s.to_json() and '"nullable"' not in s.to_json()


def test_pypaimon_evolution_history(fileio: FileIO) -> None:
    m = SchemaManager(fileio, str(FIXTURES / "evo"))
    assert m.list_ids() == [0, 1, 2, 3, 4]
    s0, s1, s2, s3, s4 = (m.schema(i) for i in range(5))
    assert m.latest() is s4 and m.schema(4) is s4  # cached
    assert s0.field_names == ["k", "a", "v"] and s0.highest_field_id == 2
    assert s1.field("extra").id == 3 and s1.field("extra").description == "added col"
    assert s2.field("a2").id == 1  # rename keeps the id
    assert s3.field_names == ["k", "a2", "extra"] and s3.highest_field_id == 3  # drop keeps highestFieldId
    assert s4.options == {"bucket": "1", "snapshot.num-retained.max": "5"}
    assert all(s.comment is None for s in (s0, s1, s2, s3, s4))
    assert [s.highest_field_id for s in (s0, s1, s2, s3, s4)] == [2, 3, 3, 3, 3]


def test_pypaimon_append_table(fileio: FileIO) -> None:
    s = SchemaManager(fileio, str(FIXTURES / "append")).latest()
    assert s is not None and s.options == {} and s.num_buckets == -1 and not s.is_primary_key_table
    assert s.bucket_keys == [] and s.comment is None
    assert '"comment"' not in s.to_json()


def test_we_can_evolve_a_pypaimon_table(fileio: FileIO, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "evo", tmp_path / "evo")
    m = SchemaManager(fileio, str(tmp_path / "evo"))
    s = m.add_column("more", AtomicType("BIGINT"))
    assert s.id == 5 and s.field("more").id == 4 and s.highest_field_id == 4
    assert json.loads(Path(m.schema_path(5)).read_text())["fields"][-1] == {"id": 4, "name": "more", "type": "BIGINT"}


# ---------------------------------------------------------------------------------------------
# Accessors
# ---------------------------------------------------------------------------------------------
def _schema(**kw: object) -> TableSchema:
    cols = parse_ddl(kw.pop("ddl", "dt string, k int not null, k2 string not null, v bigint"))  # type: ignore[arg-type]
    from pyspark_paimon.metadata.types.model import assign_field_ids

    fields, highest = assign_field_ids(cols)
    return TableSchema(fields=fields, highest_field_id=highest, **kw)  # type: ignore[arg-type]


def test_accessors() -> None:
    s = _schema(partition_keys=["dt"], primary_keys=["dt", "k", "k2"], options={"bucket": "3", "bucket-key": "k2"})
    assert s.trimmed_primary_keys == ["k", "k2"] and s.bucket_keys == ["k2"] and s.num_buckets == 3
    assert [f.name for f in s.bucket_key_fields] == ["k2"]
    assert [f.name for f in s.trimmed_primary_key_fields] == ["k", "k2"]
    assert [f.name for f in s.primary_key_fields] == ["dt", "k", "k2"]
    s2 = _schema(options={"bucket-key": " k , v "})
    assert s2.bucket_keys == ["k", "v"] and s2.num_buckets == -1 and s2.trimmed_primary_keys == []
    with pytest.raises(SchemaError, match="'nope'.*dt, k, k2, v"):
        s.field("nope")
    with pytest.raises(SchemaError, match="42"):
        s.field_by_id(42)
    with pytest.raises(OptionError, match="bucket"):
        _ = _schema(options={"bucket": "x"}).num_buckets


# ---------------------------------------------------------------------------------------------
# Creating tables and validation
# ---------------------------------------------------------------------------------------------
def test_create_table(manager: SchemaManager, table_path: str) -> None:
    cols = parse_ddl("dt string, id bigint, r struct<a:int, b:string> comment 'row', v double")
    s = manager.create_table(cols, ["dt"], ["dt", "id"], {"bucket": 2, "changelog-producer.x": True}, "my table")
    assert os.path.isfile(os.path.join(table_path, "schema", "schema-0"))
    assert s.id == 0 and s.version == 3 and s.time_millis > 0
    assert [(f.name, f.id) for f in s.fields] == [("dt", 0), ("id", 1), ("r", 2), ("v", 5)]
    assert s.highest_field_id == 5 and s.field("r").description == "row"
    assert s.field("dt").type == string_type(False) and s.field("id").type == AtomicType("BIGINT", False)
    assert s.field("v").type.nullable
    assert s.options == {"bucket": "2", "changelog-producer.x": "true"}
    on_disk = json.loads(Path(table_path, "schema", "schema-0").read_text())
    assert on_disk["comment"] == "my table" and on_disk["options"]["bucket"] == "2"
    fresh = SchemaManager(manager.fileio, table_path)
    assert fresh.latest() == s
    with pytest.raises(TableAlreadyExistsError, match=table_path):
        manager.create_table(cols)


def test_create_table_with_datafields(manager: SchemaManager) -> None:
    fields = [DataField(0, "a", AtomicType("INT")), DataField(5, "b", RowType((DataField(7, "c", AtomicType("INT")),)))]
    s = manager.create_table(fields)
    assert s.highest_field_id == 7 and s.field("b").id == 5
    assert "comment" not in json.loads(Path(manager.schema_path(0)).read_text())


def _create(manager: SchemaManager, ddl: str, **kw: object) -> TableSchema:
    return manager.create_table(parse_ddl(ddl), **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "ddl,kw,exc,needle",
    [
        ("a int", dict(primary_keys=["b"]), SchemaError, "'b'.*a"),
        ("a int, b int", dict(partition_keys=["x"]), SchemaError, "'x'"),
        ("a int, m map<string,int>", dict(partition_keys=["m"]), SchemaError, "MAP"),
        ("a int, m array<int>", dict(primary_keys=["m"]), SchemaError, "ARRAY"),
        ("a int, r struct<x:int>", dict(primary_keys=["a", "r"]), SchemaError, "ROW"),
        ("a int, b int", dict(primary_keys=["a", "a"]), SchemaError, "twice"),
        ("a int, b int", dict(partition_keys=["a"], primary_keys=["a"]), SchemaError, "same as the partition"),
        (
            "a int, b int, c int",
            dict(partition_keys=["a"], primary_keys=["b"], options={"bucket": "2"}),
            SchemaError,
            "bucket = -1",
        ),
        ("a int, b int", dict(partition_keys=["a", "b"]), SchemaError, "all of its columns"),
        ("a int, b int", dict(primary_keys=["a"], options={"bucket": "0"}), OptionError, "'bucket' = 0"),
        ("a int, b int", dict(options={"bucket": "-2"}), OptionError, "primary key"),
        ("a int, b int", dict(options={"bucket": "4"}), OptionError, "needs the option 'bucket-key'"),
        ("a int, b int", dict(options={"bucket-key": "a"}), OptionError, "'bucket' = -1"),
        ("a int, b int", dict(options={"bucket": "2", "bucket-key": "c"}), SchemaError, "'c'"),
        (
            "a int, b int, c int",
            dict(partition_keys=["a"], options={"bucket": "2", "bucket-key": "a"}),
            OptionError,
            "partition keys",
        ),
        (
            "a int, b int, c int",
            dict(primary_keys=["a"], options={"bucket": "2", "bucket-key": "b"}),
            OptionError,
            "subset of the primary key",
        ),
        ("a int, b map<string,int>", dict(options={"bucket": "2", "bucket-key": "b"}), SchemaError, "MAP"),
        ("_SEQUENCE_NUMBER bigint", dict(), SchemaError, "reserved"),
        ("a int, _KEY_a int", dict(primary_keys=["a"]), SchemaError, "reserved"),
        ("a int", dict(options={"x": None}), OptionError, "'x'"),
    ],
)
def test_create_validation(manager: SchemaManager, ddl: str, kw: dict, exc: type, needle: str) -> None:
    with pytest.raises(exc, match=needle):
        _create(manager, ddl, **kw)
    assert manager.list_ids() == []


def test_create_validation_accepts_valid_layouts(fileio: FileIO, tmp_path: Path) -> None:
    ok = [
        ("a int, b int", dict(options={"bucket": "4", "bucket-key": "a,b"})),
        ("a int, b int", dict()),
        ("a int, b int, c int", dict(partition_keys=["a"], primary_keys=["b"])),  # cross-partition, dynamic
        ("a int, b int, c int", dict(partition_keys=["a"], primary_keys=["a", "b"], options={"bucket": "-2"})),
        ("a int, b int, c int", dict(primary_keys=["a", "b"], options={"bucket": "3", "bucket-key": "b"})),
        ("a int, _KEY_x int", dict()),
    ]
    for i, (ddl, kw) in enumerate(ok):
        _create(SchemaManager(fileio, str(tmp_path / f"t{i}")), ddl, **kw)


def test_create_rejects_mixed_field_kinds(manager: SchemaManager) -> None:
    with pytest.raises(SchemaError, match="mix"):
        manager.create_table([DataField(0, "a", AtomicType("INT")), ("b", AtomicType("INT"))])


# ---------------------------------------------------------------------------------------------
# Evolution
# ---------------------------------------------------------------------------------------------
def test_evolution_sequence(manager: SchemaManager, table_path: str) -> None:
    _create(
        manager, "dt string, k int, v string", partition_keys=["dt"], primary_keys=["dt", "k"], options={"bucket": "2"}
    )
    s1 = manager.add_column("extra", AtomicType("INT"), "added col")
    assert s1.id == 1 and s1.field("extra").id == 3 and s1.highest_field_id == 3
    assert s1.field_names == ["dt", "k", "v", "extra"]
    assert json.loads(Path(table_path, "schema", "schema-1").read_text())["fields"][-1] == {
        "id": 3,
        "name": "extra",
        "type": "INT",
        "description": "added col",
    }
    s2 = manager.add_column(
        "r", RowType((DataField(-1, "x", AtomicType("INT")), DataField(-1, "y", string_type()))), after="k"
    )
    assert s2.field_names == ["dt", "k", "r", "v", "extra"]
    assert s2.field("r").id == 4 and [f.id for f in s2.field("r").type.fields] == [5, 6] and s2.highest_field_id == 6
    s3 = manager.add_column("first_col", string_type(), first=True)
    assert s3.field_names[0] == "first_col" and s3.field("first_col").id == 7
    s4 = manager.rename_column("v", "v2")
    assert s4.field("v2").id == 2 and not s4.has_field("v")
    s5 = manager.drop_column("r")
    assert not s5.has_field("r") and s5.highest_field_id == 7
    s6 = manager.add_column("after_drop", AtomicType("BIGINT"))
    assert s6.field("after_drop").id == 8  # dropped ids are never reused
    s7 = manager.set_options({"snapshot.num-retained.max": 5, "bucket": 4})
    assert s7.options == {"bucket": "4", "snapshot.num-retained.max": "5"}
    s8 = manager.remove_options(["snapshot.num-retained.max", "absent"])
    assert s8.options == {"bucket": "4"}
    assert manager.list_ids() == list(range(9))
    highest = [manager.schema(i).highest_field_id for i in range(9)]
    assert highest == sorted(highest)
    # each file is a full, self-contained schema with the right id
    for i in range(9):
        on_disk = TableSchema.from_json(Path(manager.schema_path(i)).read_text(), manager.schema_path(i))
        assert on_disk.id == i and on_disk == manager.schema(i)
    # no-op changes write nothing
    assert manager.remove_options(["absent"]).id == 8
    assert manager.set_options({"bucket": "4"}).id == 8
    assert manager.rename_column("k", "k").id == 8
    assert manager.update_comment("hello").comment == "hello"


def test_evolution_refusals(manager: SchemaManager) -> None:
    _create(
        manager,
        "dt string, k int, b int, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options={"bucket": "2"},
    )
    cases = [
        (lambda: manager.add_column("v", AtomicType("INT")), SchemaError, "already has"),
        (lambda: manager.add_column("nn", AtomicType("INT", False)), SchemaError, "NOT NULL"),
        (lambda: manager.add_column("x", AtomicType("INT"), after="nope"), SchemaError, "'nope'"),
        (lambda: manager.add_column("_SEQUENCE_NUMBER", AtomicType("INT")), SchemaError, "reserved"),
        (lambda: manager.drop_column("dt"), SchemaError, "partition key"),
        (lambda: manager.drop_column("k"), SchemaError, "primary key"),
        (lambda: manager.drop_column("nope"), SchemaError, "'nope'"),
        (lambda: manager.rename_column("k", "k9"), SchemaError, "primary key"),
        (lambda: manager.rename_column("dt", "day"), SchemaError, "partition key"),
        (lambda: manager.rename_column("v", "b"), SchemaError, "already exists"),
        (lambda: manager.rename_column("nope", "x"), SchemaError, "'nope'"),
        (lambda: manager.set_options({"merge-engine": "partial-update"}), OptionError, "merge-engine"),
        (lambda: manager.set_options({"bucket": "-1"}), OptionError, "bucket"),
        (lambda: manager.set_options({"bucket": "0"}), OptionError, "bucket"),
        (lambda: manager.remove_options(["bucket"]), OptionError, "bucket"),
        (lambda: manager.set_options({"bucket-key": "v"}), OptionError, "bucket-key"),
    ]
    for op, exc, needle in cases:
        with pytest.raises(exc, match=needle):
            op()
    assert manager.list_ids() == [0]


def test_drop_refusals_append(manager: SchemaManager) -> None:
    _create(manager, "a int, b int", options={"bucket": "2", "bucket-key": "a"})
    with pytest.raises(SchemaError, match="bucket-key"):
        manager.drop_column("a")
    manager.drop_column("b")
    with pytest.raises(SchemaError):
        manager.drop_column("a")


def test_only_column_cannot_be_dropped(manager: SchemaManager) -> None:
    _create(manager, "a int")
    with pytest.raises(SchemaError, match="only column"):
        manager.drop_column("a")


def test_evolving_a_missing_table(manager: SchemaManager) -> None:
    assert manager.latest() is None and manager.list_ids() == []
    with pytest.raises(TableNotFoundError):
        manager.add_column("x", AtomicType("INT"))


def test_missing_schema_id(manager: SchemaManager) -> None:
    _create(manager, "a int")
    with pytest.raises(SchemaError, match="Schema 7 does not exist.*existing: 0"):
        manager.schema(7)


def test_branch_paths(fileio: FileIO, table_path: str) -> None:
    m = SchemaManager(fileio, table_path, branch="dev")
    assert m.schema_dir == f"{table_path}/branch/branch-dev/schema"
    _create(m, "a int")
    assert os.path.isfile(f"{table_path}/branch/branch-dev/schema/schema-0")
    assert SchemaManager(fileio, table_path).latest() is None
    assert SchemaManager(fileio, table_path + "/").schema_dir == f"{table_path}/schema"


def test_temp_and_foreign_files_are_ignored(manager: SchemaManager, table_path: str) -> None:
    _create(manager, "a int")
    Path(table_path, "schema", ".schema-1.abc.tmp").write_text("{")
    Path(table_path, "schema", "schema-x").write_text("{")
    assert manager.list_ids() == [0]


class _RacingFileIO(FileIO):
    """A FileIO on which another writer commits schema-<n> just before our first attempt."""

    def __init__(self, competitor: Callable[[], object]) -> None:
        super().__init__()
        self.competitor = competitor
        self.raced = False

    def try_create(self, path: str, data: bytes) -> bool:
        if not self.raced and path.rsplit("/", 1)[-1] != "schema-0":
            self.raced = True
            self.competitor()
        return super().try_create(path, data)


def test_concurrent_writer_is_retried(table_path: str) -> None:
    other = SchemaManager(FileIO(), table_path)
    _create(other, "k int, v string", primary_keys=["k"], options={"bucket": "1"})
    racing = _RacingFileIO(lambda: other.add_column("theirs", AtomicType("INT")))
    mine = SchemaManager(racing, table_path)
    s = mine.add_column("mine", AtomicType("BIGINT"))
    assert racing.raced
    assert s.id == 2 and s.field_names == ["k", "v", "theirs", "mine"]
    assert s.field("theirs").id == 2 and s.field("mine").id == 3 and s.highest_field_id == 3


def test_commit_returns_false_when_taken(manager: SchemaManager) -> None:
    s = _create(manager, "a int")
    assert manager.commit(replace(s, comment="another writer's")) is False
    assert manager.commit(s) is True  # exactly its own content: its create landed (own_create.py)


def test_persistent_conflict_gives_up(table_path: str) -> None:
    class AlwaysLose(FileIO):
        def try_create(self, path: str, data: bytes) -> bool:
            return path.endswith("schema-0") and super().try_create(path, data)

    m = SchemaManager(AlwaysLose(), table_path)
    _create(m, "a int")
    with pytest.raises(CommitError, match="attempts"):
        m.add_column("b", AtomicType("INT"))


# ---------------------------------------------------------------------------------------------
# Interop: pypaimon reads what we write
# ---------------------------------------------------------------------------------------------
@pytest.mark.interop
def test_pypaimon_reads_our_schema(tmp_path: Path) -> None:
    py = require_oracle_python()
    wh = tmp_path / "wh"
    m = SchemaManager(FileIO(), str(wh / "default.db" / "t"))
    _create(
        m,
        "dt string, id bigint, price decimal(10,2), ts timestamp, ts2 timestamp_ntz(3), "
        "m map<string,int>, s struct<x:int, y:string>, tags array<string>",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    m.add_column("extra", AtomicType("INT"), "added")
    m.rename_column("price", "price2")
    m.drop_column("tags")
    os.makedirs(wh / "default.db", exist_ok=True)
    script = textwrap.dedent(f"""
        import json
        from pypaimon import CatalogFactory
        c = CatalogFactory.create({{'warehouse': {str(wh)!r}}})
        t = c.get_table('default.t')
        s = t.table_schema
        print(json.dumps({{'names': [f.name for f in s.fields], 'ids': [f.id for f in s.fields],
                          'pk': s.primary_keys, 'pt': s.partition_keys, 'hi': s.highest_field_id}}))
    """)
    out = subprocess.run([py, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["names"] == ["dt", "id", "price2", "ts", "ts2", "m", "s", "extra"]
    assert got["ids"] == [0, 1, 2, 3, 4, 5, 6, 10]
    assert got["pk"] == ["dt", "id"] and got["pt"] == ["dt"] and got["hi"] == 10
