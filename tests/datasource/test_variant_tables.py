"""VARIANT tables through the Python API (no Spark): written and read back plain and shredded, merged by key,
compacted, with files of both layouts mixed, in Java's Parquet layout, and bad input refused naming the column."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import OptionError, SchemaError, VariantError
from pyspark_paimon.variant import variant_array, variant_json, variant_values

SHREDDING = json.dumps(
    {
        "type": "ROW",
        "fields": [
            {
                "name": "v",
                "type": {"type": "ROW", "fields": [{"name": "n", "type": "BIGINT"}, {"name": "s", "type": "STRING"}]},
            }
        ],
    }
)
VALUES: list[Any] = [
    {"n": 1, "s": "one", "extra": [1, 2]},
    {"n": "two"},
    [1, {"n": 3}],
    "plain text",
    None,
]


def _data(ids: list[int], values: list[Any]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": variant_array(values)})


def _read(t: Table) -> list[tuple[int, Any]]:
    out = t.scan().to_arrow().sort_by("id")
    return list(zip(out.column("id").to_pylist(), variant_values(out.column("v"))))


def _files(t: Table) -> list[str]:
    return [
        f"{t.store.table_path}/bucket-{e.bucket}/{e.file.file_name}" for e in t.store.live_entries(t.latest_snapshot())
    ]


def test_plain_variants_are_written_in_javas_layout(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", "id bigint, v variant")
    t.write_arrow(_data([0, 1, 2, 3, 4], VALUES))
    assert _read(t) == list(enumerate(VALUES))
    assert t.scan().to_arrow().schema.field("v").type == t.schema.arrow_schema().field("v").type  # Spark's form
    (path,) = _files(t)
    group = pq.ParquetFile(path).schema.column(1)  # the 'value' leaf of the 'v' group
    assert group.path == "v.value" and group.max_definition_level == 1  # required inside an optional group
    layout = pq.ParquetFile(path).schema_arrow.field("v").type
    assert [(f.name, f.nullable, f.metadata) for f in layout] == [
        ("value", False, {b"PARQUET:field_id": b"0"}),
        ("metadata", False, {b"PARQUET:field_id": b"1"}),
    ]


def test_shredded_and_plain_files_read_alike(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", "id bigint, v variant")
    t.write_arrow(_data([0, 1], VALUES[:2]))
    with t.update_schema() as u:
        u.set_options({"variant.shreddingSchema": SHREDDING})
    t.write_arrow(_data([2, 3, 4, 5], [*VALUES[2:], {"n": 5, "s": "five"}]))
    layouts = sorted(tuple(pq.ParquetFile(p).schema_arrow.field("v").type.names) for p in _files(t))
    assert layouts == [("metadata", "value", "typed_value"), ("value", "metadata")]
    assert _read(t) == [*enumerate(VALUES), (5, {"n": 5, "s": "five"})]
    assert variant_json(t.scan(filter="id = 0").to_arrow().column("v")) == ['{"extra":[1,2],"n":1,"s":"one"}']


def test_primary_key_variants_merge_and_compact_shredded(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.pk",
        "id bigint not null, v variant",
        primary_keys=["id"],
        options={"bucket": "1", "variant.shreddingSchema": SHREDDING},
    )
    t.write_arrow(_data([0, 1, 2], VALUES[:3]))
    t.write_arrow(_data([1, 3], [{"n": 10, "s": "ten"}, None]))
    expected = [(0, VALUES[0]), (1, {"n": 10, "s": "ten"}), (2, VALUES[2]), (3, None)]
    assert _read(t) == expected
    t.maintenance.compact(full=True)
    (path,) = _files(t)
    assert pq.ParquetFile(path).schema_arrow.field("v").type.names == ["metadata", "value", "typed_value"]
    assert _read(t) == expected


def test_variant_cannot_be_a_key_or_a_bad_value(catalog: Catalog) -> None:
    with pytest.raises(SchemaError, match="VARIANT"):
        catalog.create_table("db.k", "v variant not null, x int", primary_keys=["v"])
    with pytest.raises(OptionError, match="not a VARIANT column"):
        catalog.create_table("db.bad", "id bigint, w variant", options={"variant.shreddingSchema": SHREDDING})
    t = catalog.create_table("db.t", "id bigint, v variant")
    broken = pa.StructArray.from_arrays(
        [pa.array([None], pa.binary()), pa.array([b"\x01\x00\x00"])], names=["value", "metadata"]
    )
    with pytest.raises(VariantError, match="column 'v'"):
        t.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": broken}))


def test_filter_on_variant_paths(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.f", "id bigint not null, dt string not null, v variant", partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "1"},
    )  # fmt: skip
    values = [{"user": {"id": 1001}, "n": 1}, {"user": {"id": 1002}}, {"tags": ["a", "b"]}, "text", None]
    t.write_arrow(pa.table({"id": list(range(5)), "dt": ["a", "a", "b", "b", "a"], "v": variant_array(values)}))
    t.write_arrow(pa.table({"id": [1], "dt": ["a"], "v": variant_array([{"user": {"id": 7}}])}))  # merged over

    def ids(text: str, **kw: Any) -> list[int]:
        return sorted(t.scan(filter=text, **kw).to_arrow().column("id").to_pylist())

    assert ids("variant_get(v, '$.user.id', 'bigint') > 1000") == [0]
    assert ids("variant_get(v, '$.user.id', 'int') IN (7, 1001) AND dt = 'a'") == [0, 1]
    assert ids("try_variant_get(v, '$.tags[1]', 'string') = 'b' OR id = 4") == [2, 4]
    assert ids("variant_get(v, '$.user.id', 'bigint') IS NULL") == [2, 3, 4]
    assert ids("NOT (variant_get(v, '$', 'string') <=> 'text')") == [0, 1, 2, 4]
    only = t.scan(filter="variant_get(v, '$.n', 'int') = 1", columns=["id"]).to_arrow()
    assert only.column_names == ["id"] and only.column("id").to_pylist() == [0]
    stream = StreamReadJob(t.store, {"path": t.store.table_path, "filter": "variant_get(v, '$.user.id', 'int') < 1002"})
    splits, _ = stream.next_batch(stream.initial_offset(), None, None)
    rows = [r for s in splits for b in read_stream_split(stream.context(), s) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == [0, 1]  # a stream's filter too
    with pytest.raises(VariantError, match="is not a BIGINT"):
        ids("variant_get(v, '$.user', 'bigint') = 1")
    with pytest.raises(OptionError, match="takes a VARIANT column"):
        ids("variant_get(v, 5, 'int') = 1")
    with pytest.raises(OptionError, match="reads a VARIANT column"):
        ids("variant_get(dt, '$', 'int') = 1")
