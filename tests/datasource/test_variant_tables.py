"""VARIANT tables through the Python API (no Spark): written and read back plain and shredded, merged by key,
compacted, with files of both layouts mixed, in Java's Parquet layout, and bad input refused naming the column."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
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
