"""Reading splits: schema evolution, append streaming, PK section merge, residual-after-merge (Java's
`SchemaEvolutionUtil`, `MergeFileSplitRead`)."""

from __future__ import annotations

import datetime as dt
import pickle
import tempfile
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.datasource.merge.merge import MergeError
from pyspark_paimon.datasource.read import file_read
from pyspark_paimon.datasource.read.merged_read import key_sections
from pyspark_paimon.datasource.read.read import coalesce_batches, read_split
from pyspark_paimon.datasource.read.read_context import ReadContext, referenced_columns
from pyspark_paimon.errors import CorruptMetadataError, DataFileError, SchemaError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.arrow import to_arrow_schema
from pyspark_paimon.metadata.types.model import AtomicType, DataField, RowType, string_type
from pyspark_paimon.planner.split import DataSplit

I, UB, UA, D = 0, 1, 2, 3
INT = AtomicType("INT")
INT_NN = AtomicType("INT", nullable=False)
BIGINT = AtomicType("BIGINT")
STRING = string_type()


def make_schema(
    fields: list[DataField],
    pk: Sequence[str] = (),
    partition: Sequence[str] = (),
    options: dict[str, str] | None = None,
    schema_id: int = 0,
) -> TableSchema:
    return TableSchema(
        id=schema_id,
        fields=list(fields),
        highest_field_id=max(f.id for f in fields),
        partition_keys=list(partition),
        primary_keys=list(pk),
        options=dict(options or {}),
    )


_counter = [0]


def write_file(
    directory: Path,
    schema: TableSchema,
    rows: list[dict[str, Any]],
    level: int = 0,
    fmt: str = "parquet",
    arrow_types: dict[str, pa.DataType] | None = None,
    field_ids: bool = False,
) -> DataFileMeta:
    """A data file in Paimon layout: PK tables get ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` then
    the table columns, sorted by key; append tables get the table columns only."""
    _counter[0] += 1
    name = f"data-{_counter[0]:04d}-0.{fmt}"
    arrow_types = arrow_types or {}
    keys = schema.trimmed_primary_keys
    if schema.primary_keys:
        rows = sorted(rows, key=lambda r: tuple(r[k] for k in keys))
    cols: list[pa.Array] = []
    fields: list[pa.Field] = []

    def meta(fid: int) -> dict | None:
        return {b"PARQUET:field_id": str(fid).encode()} if field_ids else None

    if schema.primary_keys:
        for k in keys:
            f = schema.field(k)
            t = arrow_types.get(k) or to_arrow_schema([f]).field(0).type
            cols.append(pa.array([r[k] for r in rows], t))
            fields.append(pa.field(f"_KEY_{k}", t, False, metadata=meta(1073741823 + f.id)))
        cols.append(pa.array([r["_seq"] for r in rows], pa.int64()))
        fields.append(pa.field("_SEQUENCE_NUMBER", pa.int64(), False, metadata=meta(2147483646)))
        cols.append(pa.array([r.get("_kind", I) for r in rows], pa.int8()))
        fields.append(pa.field("_VALUE_KIND", pa.int8(), False, metadata=meta(2147483645)))
    for f in schema.fields:
        t = arrow_types.get(f.name) or to_arrow_schema([f]).field(0).type
        cols.append(pa.array([r.get(f.name) for r in rows], t))
        fields.append(pa.field(f.name, t, f.type.nullable, metadata=meta(f.id)))
    table = pa.Table.from_arrays(cols, schema=pa.schema(fields))
    path = directory / name
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        orc.write_table(table, str(path))
    key_types = [schema.field(k).type for k in keys]
    min_key = max_key = serialize_row([], [])
    seqs = [r["_seq"] for r in rows] if schema.primary_keys else [0]
    if schema.primary_keys and rows:
        min_key = serialize_row([rows[0][k] for k in keys], key_types)
        max_key = serialize_row([rows[-1][k] for k in keys], key_types)
    return DataFileMeta(
        file_name=name,
        file_size=path.stat().st_size,
        row_count=len(rows),
        min_key=min_key,
        max_key=max_key,
        min_sequence_number=min(seqs),
        max_sequence_number=max(seqs),
        schema_id=schema.id,
        level=level,
        delete_row_count=sum(1 for r in rows if r.get("_kind", I) in (UB, D)),
    )


def split_of(directory: Path, files: Sequence[DataFileMeta], raw: bool = False, **kw: Any) -> DataSplit:
    return DataSplit(
        partition=serialize_row([], []),
        partition_values=(),
        bucket=0,
        total_buckets=1,
        files=tuple(files),
        bucket_path=str(directory),
        raw_convertible=raw,
        **kw,
    )


def context(
    directory: Path, schema: TableSchema, schemas: dict[int, TableSchema] | None = None, **kw: Any
) -> ReadContext:
    return ReadContext(
        fileio=FileIO(),
        table_path=str(directory),
        schema=schema,
        schemas={"main": schemas or {schema.id: schema}},
        branch="main",
        options=dict(schema.options),
        **kw,
    )


def read(ctx: ReadContext, split: DataSplit, **kw: Any) -> list[dict]:
    batches = list(read_split(ctx, split, **kw))
    expected = ctx.output_schema()
    for b in batches:
        assert b.schema == expected
        assert b.num_rows > 0
    return pa.Table.from_batches(batches, schema=expected).to_pylist()


PK_FIELDS = [DataField(0, "id", INT_NN), DataField(1, "v", BIGINT), DataField(2, "s", STRING)]


def pk_schema(options: dict[str, str] | None = None, **kw: Any) -> TableSchema:
    return make_schema(PK_FIELDS, pk=["id"], options={"bucket": "1", **(options or {})}, **kw)


def r(id_: int, seq: int, kind: int = I, v: Any = None, s: Any = None, **extra: Any) -> dict[str, Any]:
    return {"id": id_, "_seq": seq, "_kind": kind, "v": v, "s": s, **extra}


# ------------------------------------------------------------------------------------------------ append
def test_append_streams_with_projection_residual_and_exact_schema(tmp_path: Path) -> None:
    schema = make_schema([DataField(0, "a", INT), DataField(1, "b", STRING), DataField(2, "c", INT_NN)])
    f1 = write_file(tmp_path, schema, [{"a": i, "b": f"x{i}", "c": i * 10} for i in range(5)])
    f2 = write_file(tmp_path, schema, [{"a": i, "b": None, "c": i} for i in range(5, 8)])
    ctx = context(tmp_path, schema, read_fields=("c", "b"), residual=pc.field("a") >= 3, batch_size=2)
    batches = list(read_split(ctx, split_of(tmp_path, [f1, f2])))
    assert all(b.num_rows <= 2 for b in batches)
    assert batches[0].schema == pa.schema([pa.field("c", pa.int32(), False), pa.field("b", pa.string())])
    rows = pa.Table.from_batches(batches).to_pylist()
    assert rows == [
        {"c": 30, "b": "x3"},
        {"c": 40, "b": "x4"},
        {"c": 5, "b": None},
        {"c": 6, "b": None},
        {"c": 7, "b": None},
    ]


def test_append_empty_projection_counts_rows(tmp_path: Path) -> None:
    schema = make_schema([DataField(0, "a", INT)])
    f1 = write_file(tmp_path, schema, [{"a": i} for i in range(7)])
    batches = list(read_split(context(tmp_path, schema, read_fields=()), split_of(tmp_path, [f1])))
    assert sum(b.num_rows for b in batches) == 7
    assert all(b.num_columns == 0 for b in batches)


def test_append_schema_evolution_rename_add_and_widen(tmp_path: Path) -> None:
    s0 = make_schema([DataField(0, "k", INT), DataField(1, "a", STRING), DataField(2, "n", INT)])
    s1 = make_schema([DataField(1, "a2", STRING), DataField(2, "n", BIGINT), DataField(3, "c", INT)], schema_id=1)
    f0 = write_file(tmp_path, s0, [{"k": 1, "a": "x", "n": 7}])
    f1 = write_file(tmp_path, s1, [{"a2": "y", "n": 2**40, "c": 3}])
    ctx = context(tmp_path, s1, {0: s0, 1: s1})
    assert read(ctx, split_of(tmp_path, [f0, f1])) == [{"a2": "x", "n": 7, "c": None}, {"a2": "y", "n": 2**40, "c": 3}]
    assert ctx.output_schema().field("n").type == pa.int64()


def test_a_changed_type_the_old_values_do_not_fit_names_the_column_and_file(tmp_path: Path) -> None:
    s0 = make_schema([DataField(0, "k", INT), DataField(1, "n", STRING)])
    s1 = make_schema([DataField(0, "k", INT), DataField(1, "n", INT)], schema_id=1)
    f0 = write_file(tmp_path, s0, [{"k": 1, "n": "seven"}])
    with pytest.raises(SchemaError, match=r"Column 'n' of data file 'data-.*' holds string values .* read type INT"):
        read(context(tmp_path, s1, {0: s0, 1: s1}), split_of(tmp_path, [f0]))


def test_timestamp_and_int96_like_units_are_cast_to_microseconds(tmp_path: Path) -> None:
    schema = make_schema(
        [
            DataField(0, "t3", AtomicType("TIMESTAMP", precision=3)),
            DataField(1, "t9", AtomicType("TIMESTAMP_LTZ", precision=9)),
        ]
    )
    ts = dt.datetime(2025, 8, 10, 1, 2, 3, 456000)
    f = write_file(
        tmp_path,
        schema,
        [{"t3": ts, "t9": ts.replace(tzinfo=dt.timezone.utc)}],
        arrow_types={"t3": pa.timestamp("ms"), "t9": pa.timestamp("ns", tz="UTC")},
    )
    ctx = context(tmp_path, schema)
    batches = list(read_split(ctx, split_of(tmp_path, [f])))
    assert batches[0].schema.field("t3").type == pa.timestamp("us")
    assert batches[0].schema.field("t9").type == pa.timestamp("us", tz="UTC")
    assert batches[0].column("t3").to_pylist() == [ts]


def test_nested_row_evolution_by_field_id(tmp_path: Path) -> None:
    r0 = RowType((DataField(2, "x", INT), DataField(3, "y", STRING)))
    r1 = RowType((DataField(3, "y2", STRING), DataField(2, "x", BIGINT), DataField(5, "z", INT)))
    s0 = make_schema([DataField(0, "k", INT), DataField(1, "r", r0)])
    s1 = make_schema([DataField(0, "k", INT), DataField(1, "r", r1)], schema_id=1)
    f0 = write_file(tmp_path, s0, [{"k": 1, "r": {"x": 5, "y": "a"}}, {"k": 2, "r": None}])
    rows = read(context(tmp_path, s1, {0: s0, 1: s1}), split_of(tmp_path, [f0]))
    assert rows == [{"k": 1, "r": {"y2": "a", "x": 5, "z": None}}, {"k": 2, "r": None}]


def test_orc_files_are_read(tmp_path: Path) -> None:
    schema = make_schema([DataField(0, "a", INT), DataField(1, "b", STRING)], options={"file.format": "orc"})
    f = write_file(tmp_path, schema, [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], fmt="orc")
    assert read(context(tmp_path, schema), split_of(tmp_path, [f])) == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


# ------------------------------------------------------------------------------------------------ PK tables
def test_pk_deduplicate_across_overlapping_files_and_single_file_sections(tmp_path: Path) -> None:
    schema = pk_schema()
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1), r(2, 1, v=2), r(3, 2, v=3)])
    f2 = write_file(tmp_path, schema, [r(2, 3, UA, v=20), r(3, 4, D, v=3)])
    f3 = write_file(tmp_path, schema, [r(10, 5, v=100), r(11, 6, D)])  # own section; its -D row is dropped
    rows = read(context(tmp_path, schema), split_of(tmp_path, [f3, f2, f1]))
    assert [(x["id"], x["v"]) for x in rows] == [(1, 1), (2, 20), (10, 100)]


def test_pk_residual_applies_after_merge(tmp_path: Path) -> None:
    schema = pk_schema()
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1), r(2, 1, v=1)])
    f2 = write_file(tmp_path, schema, [r(1, 2, UA, v=2)])
    ctx = context(tmp_path, schema, residual=pc.field("v") == 1, read_fields=("s",))
    rows = read(ctx, split_of(tmp_path, [f1, f2]))
    assert rows == [{"s": None}]  # only key 2; key 1's old v=1 must not resurface
    ctx = context(tmp_path, schema, residual=pc.field("v") == 1, read_fields=("id",))
    assert read(ctx, split_of(tmp_path, [f1, f2])) == [{"id": 2}]


def test_pk_sequence_field_across_files(tmp_path: Path) -> None:
    fields = [DataField(0, "id", INT_NN), DataField(1, "seq", BIGINT), DataField(2, "v", STRING)]
    schema = make_schema(fields, pk=["id"], options={"bucket": "1", "sequence.field": "seq"})
    f1 = write_file(
        tmp_path, schema, [{"id": 1, "_seq": 0, "seq": 10, "v": "a"}, {"id": 2, "_seq": 1, "seq": None, "v": "n"}]
    )
    f2 = write_file(
        tmp_path,
        schema,
        [{"id": 1, "_seq": 2, "_kind": UA, "seq": 5, "v": "b"}, {"id": 2, "_seq": 3, "_kind": UA, "seq": 1, "v": "m"}],
    )
    ctx = context(tmp_path, schema, read_fields=("v",))
    assert read(ctx, split_of(tmp_path, [f1, f2])) == [{"v": "a"}, {"v": "m"}]
    f3 = write_file(tmp_path, schema, [{"id": 1, "_seq": 4, "_kind": D, "seq": 20, "v": "a"}])
    assert read(ctx, split_of(tmp_path, [f1, f2, f3])) == [{"v": "m"}]


def test_pk_partial_update_and_delete_options(tmp_path: Path) -> None:
    schema = pk_schema({"merge-engine": "partial-update"})
    f1 = write_file(tmp_path, schema, [r(1, 0, s="x"), r(2, 1, v=5, s="y")])
    f2 = write_file(tmp_path, schema, [r(1, 1, v=5), r(2, 2, D)])
    with pytest.raises(MergeError, match="remove-record-on-delete"):
        read(context(tmp_path, schema), split_of(tmp_path, [f1, f2]))
    s2 = pk_schema({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    assert read(context(tmp_path, s2), split_of(tmp_path, [f1, f2])) == [{"id": 1, "v": 5, "s": "x"}]
    s3 = pk_schema({"merge-engine": "partial-update", "ignore-delete": "true"})
    assert read(context(tmp_path, s3), split_of(tmp_path, [f1, f2])) == [
        {"id": 1, "v": 5, "s": "x"},
        {"id": 2, "v": 5, "s": "y"},
    ]


def test_pk_partial_update_delete_seeds_later_records(tmp_path: Path) -> None:
    # Java PartialUpdateMergeFunction (remove-record-on-delete): after a -D the row holds the DELETE's values
    # (initRow) and a later +I overwrites only its non-NULL fields. A key seen once is not merged at all.
    schema = pk_schema({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1, s="x"), r(2, 1, v=2, s="p")])
    f2 = write_file(tmp_path, schema, [r(1, 2, D, v=9), r(3, 3, D, v=3)])
    f3 = write_file(tmp_path, schema, [r(1, 4, s="y"), r(2, 5, UA, v=None, s="q")])
    assert read(context(tmp_path, schema), split_of(tmp_path, [f1, f2, f3])) == [
        {"id": 1, "v": 9, "s": "y"},
        {"id": 2, "v": 2, "s": "q"},
    ]


def test_pk_aggregation_sum_with_retraction(tmp_path: Path) -> None:
    schema = pk_schema({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1, s="x"), r(2, 1, v=10)])
    f2 = write_file(tmp_path, schema, [r(1, 2, v=5), r(2, 3, UB, v=4)])
    rows = read(context(tmp_path, schema), split_of(tmp_path, [f1, f2]))
    assert rows == [{"id": 1, "v": 6, "s": "x"}, {"id": 2, "v": 6, "s": None}]


def test_pk_aggregation_remove_record_on_delete(tmp_path: Path) -> None:
    # Java AggregateMergeFunction with aggregation.remove-record-on-delete: a -D removes the key; without the
    # option it is a retraction. Key 3 is re-inserted after its DELETE: folding goes on from the DELETE's values.
    options = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"}
    schema = pk_schema({**options, "aggregation.remove-record-on-delete": "true"})
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1, s="x"), r(2, 1, v=10), r(3, 2, v=7)])
    f2 = write_file(tmp_path, schema, [r(1, 3, D, v=1), r(2, 4, v=5), r(3, 5, D, v=7)])
    f3 = write_file(tmp_path, schema, [r(3, 6, v=2, s="y")])
    assert read(context(tmp_path, schema), split_of(tmp_path, [f1, f2, f3])) == [
        {"id": 2, "v": 15, "s": None},
        {"id": 3, "v": 9, "s": "y"},
    ]
    plain = pk_schema(options)
    assert read(context(tmp_path, plain), split_of(tmp_path, [f1, f2])) == [
        {"id": 1, "v": 0, "s": "x"},
        {"id": 2, "v": 15, "s": None},
        {"id": 3, "v": 0, "s": None},
    ]


def test_pk_first_row_merges_all_levels(tmp_path: Path) -> None:
    schema = pk_schema({"merge-engine": "first-row"})
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1), r(2, 1, v=2)])
    f2 = write_file(tmp_path, schema, [r(1, 2, v=10), r(3, 3, v=30)])
    rows = read(context(tmp_path, schema), split_of(tmp_path, [f2, f1]))
    assert [(x["id"], x["v"]) for x in rows] == [(1, 1), (2, 2), (3, 30)]


def test_pk_schema_evolution_with_merge(tmp_path: Path) -> None:
    s0 = make_schema([DataField(0, "id", INT_NN), DataField(1, "a", STRING)], pk=["id"])
    s1 = make_schema(
        [DataField(0, "id", INT_NN), DataField(1, "a2", STRING), DataField(2, "c", INT)], pk=["id"], schema_id=1
    )
    f0 = write_file(tmp_path, s0, [{"id": 1, "_seq": 0, "a": "x"}, {"id": 2, "_seq": 1, "a": "y"}])
    f1 = write_file(tmp_path, s1, [{"id": 2, "_seq": 2, "_kind": UA, "a2": "y2", "c": 7}])
    ctx = context(tmp_path, s1, {0: s0, 1: s1})
    assert read(ctx, split_of(tmp_path, [f0, f1])) == [{"id": 1, "a2": "x", "c": None}, {"id": 2, "a2": "y2", "c": 7}]
    # A single old file (no merge) evolves the same way.
    assert read(ctx, split_of(tmp_path, [f0])) == [{"id": 1, "a2": "x", "c": None}, {"id": 2, "a2": "y", "c": None}]


def test_pk_java_layout_with_field_ids_and_raw_convertible(tmp_path: Path) -> None:
    schema = pk_schema()
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1), r(2, 1, v=2)], level=5, field_ids=True)
    f2 = write_file(tmp_path, schema, [r(3, 2, v=3)], level=5, field_ids=True)
    ctx = context(tmp_path, schema, read_fields=("v", "id"), batch_size=1)
    batches = list(read_split(ctx, split_of(tmp_path, [f1, f2], raw=True)))
    assert [b.num_rows for b in batches] == [1, 1, 1]
    assert pa.Table.from_batches(batches).to_pylist() == [{"v": 1, "id": 1}, {"v": 2, "id": 2}, {"v": 3, "id": 3}]


def test_pk_partitioned_table_and_partition_override(tmp_path: Path) -> None:
    fields = [
        DataField(0, "dt", string_type(False)),
        DataField(1, "id", INT_NN),
        DataField(2, "seq", BIGINT),
        DataField(3, "v", STRING),
    ]
    schema = make_schema(fields, pk=["dt", "id"], partition=["dt"], options={"bucket": "1", "sequence.field": "seq"})
    # Chain-style: an anchor partition and a delta partition merged on the trimmed key (id only).
    anchor = write_file(
        tmp_path,
        schema,
        [
            {"dt": "0810", "id": 1, "_seq": 7, "seq": 2, "v": "a"},
            {"dt": "0810", "id": 2, "_seq": 8, "seq": 1, "v": "b"},
        ],
    )
    delta = write_file(
        tmp_path,
        schema,
        [
            {"dt": "0811", "id": 2, "_seq": 0, "_kind": UA, "seq": 2, "v": "b2"},
            {"dt": "0811", "id": 3, "_seq": 1, "seq": 1, "v": "c"},
        ],
    )
    split = split_of(tmp_path, [anchor, delta])
    ctx = context(tmp_path, schema, read_fields=("dt", "id", "v"))
    assert read(ctx, split) == [
        {"dt": "0810", "id": 1, "v": "a"},
        {"dt": "0811", "id": 2, "v": "b2"},
        {"dt": "0811", "id": 3, "v": "c"},
    ]
    ctx = context(tmp_path, schema, read_fields=("dt", "v"), residual=pc.field("dt") == "0811")
    assert read(ctx, split, partition_override={"dt": "0811"}) == [
        {"dt": "0811", "v": "a"},
        {"dt": "0811", "v": "b2"},
        {"dt": "0811", "v": "c"},
    ]


def test_files_of_other_branches_use_their_schema_and_path(tmp_path: Path) -> None:
    main_dir, delta_dir = tmp_path / "main", tmp_path / "delta"
    main_dir.mkdir()
    delta_dir.mkdir()
    s_main = make_schema([DataField(0, "id", INT_NN), DataField(1, "v", STRING)], pk=["id"], schema_id=1)
    s_delta = make_schema([DataField(0, "id", INT_NN), DataField(1, "old_v", STRING)], pk=["id"], schema_id=1)
    f_main = write_file(main_dir, s_main, [{"id": 1, "_seq": 0, "v": "m"}])
    f_delta = write_file(delta_dir, s_delta, [{"id": 1, "_seq": 5, "old_v": "d"}])
    split = split_of(
        main_dir,
        [f_main, f_delta],
        file_branches={f_delta.file_name: "delta"},
        file_bucket_paths={f_delta.file_name: str(delta_dir)},
    )
    ctx = ReadContext(FileIO(), str(tmp_path), s_main, {"main": {1: s_main}, "delta": {1: s_delta}}, "main", {})
    assert read(ctx, split) == [{"id": 1, "v": "d"}]
    ctx = ReadContext(FileIO(), str(tmp_path), s_main, {"main": {1: s_main}}, "main", {})
    with pytest.raises(CorruptMetadataError, match="branch 'delta'"):
        read(ctx, split)


def test_read_context_is_picklable(tmp_path: Path) -> None:
    schema = pk_schema()
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1)])
    ctx = context(tmp_path, schema, read_fields=("v",), residual=pc.field("v") > 0)
    ctx2 = pickle.loads(pickle.dumps(ctx))
    assert read(ctx2, pickle.loads(pickle.dumps(split_of(tmp_path, [f1])))) == [{"v": 1}]


def test_unknown_columns_are_refused(tmp_path: Path) -> None:
    schema = pk_schema()
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1)])
    with pytest.raises(SchemaError, match="nope"):
        read(context(tmp_path, schema, read_fields=("nope",)), split_of(tmp_path, [f1]))
    with pytest.raises(SchemaError):
        read(context(tmp_path, schema, residual=pc.field("nope") == 1), split_of(tmp_path, [f1]))


def test_referenced_columns() -> None:
    schema = pa.schema(
        [("a", pa.int32()), ("b", pa.string()), ("ab", pa.int64()), ("st", pa.struct([("x", pa.int32())]))]
    )
    expr = (pc.field("ab") > 1) & pc.field("st", "x").is_valid()
    assert referenced_columns(expr, schema) == ("ab", "st")
    assert referenced_columns(pc.scalar(True), schema) == ()


# ------------------------------------------------------------------------------------------------ sections
def _meta(lo: int, hi: int, name: str) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=1,
        row_count=1,
        min_key=serialize_row([lo], [INT_NN]),
        max_key=serialize_row([hi], [INT_NN]),
    )


def test_key_sections_union_overlapping_ranges() -> None:
    files = [
        _meta(20, 30, "c"),
        _meta(1, 5, "a"),
        _meta(5, 8, "b"),
        _meta(31, 40, "d"),
        _meta(9, 9, "e"),
        _meta(25, 35, "f"),
    ]
    sections = key_sections(files, lambda f: [INT_NN])
    assert [[f.file_name for f in s] for s in sections] == [["a", "b"], ["e"], ["c", "f", "d"]]


def test_key_sections_string_keys_compare_like_java() -> None:
    st_ = string_type(False)
    files = [
        DataFileMeta("x", 1, 1, serialize_row(["b"], [st_]), serialize_row(["c"], [st_])),
        DataFileMeta("y", 1, 1, serialize_row(["aa"], [st_]), serialize_row(["ab"], [st_])),
    ]
    assert [[f.file_name for f in s] for s in key_sections(files, lambda f: [st_])] == [["y"], ["x"]]


# ------------------------------------------------------------------------------------------------ property
ops_strategy = st.lists(
    st.lists(st.tuples(st.integers(0, 6), st.sampled_from([I, UA, D]), st.integers(-3, 3)), min_size=1, max_size=8),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(ops_strategy, st.booleans())
def test_property_pk_read_matches_model(commits: list[list[tuple[int, int, int]]], filtered: bool) -> None:
    """Each commit is a write buffer folded per key (one row per key, -D kept) into a level-0 file."""
    schema = pk_schema()
    model: dict[int, int] = {}
    seq = 0
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        files = []
        for commit in commits:
            buffer: dict[int, dict] = {}
            for k, kind, v in commit:
                buffer[k] = r(k, seq, kind, v=v)
                seq += 1
                if kind == D:
                    model.pop(k, None)
                else:
                    model[k] = v
            files.append(write_file(directory, schema, list(buffer.values())))
        residual = (pc.field("v") >= 0) if filtered else None
        rows = read(context(directory, schema, residual=residual), split_of(directory, files[::-1]))
    expected = {k: v for k, v in model.items() if not filtered or v >= 0}
    # A read promises no row order (the keys only the oldest, biggest file holds may come unsorted).
    assert sorted((x["id"], x["v"]) for x in rows) == sorted(expected.items())


def test_table_options_come_from_the_schema_unless_overridden(tmp_path: Path) -> None:
    schema = pk_schema({"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    f1 = write_file(tmp_path, schema, [r(1, 0, v=1)])
    f2 = write_file(tmp_path, schema, [r(1, 1, v=2)])
    split = split_of(tmp_path, [f1, f2])
    ctx = ReadContext(FileIO(), str(tmp_path), schema, {}, "main", {}, ("v",))
    assert read(ctx, split) == [{"v": 3}]
    ctx = ReadContext(FileIO(), str(tmp_path), schema, {}, "main", {"fields.v.aggregate-function": "max"}, ("v",))
    assert read(ctx, split) == [{"v": 2}]


@pytest.mark.parametrize("whole_file_bytes", [1 << 20, 0], ids=["read_whole", "streamed"])
def test_damaged_data_files_name_the_file_and_the_way_out(
    catalog: Any, whole_file_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing or truncated data file fails with a DataFileError naming the file and how to recover, not a
    bare FileNotFoundError / ArrowInvalid from inside pyarrow; windowed merges and raw reads alike, whether the
    file is small enough to be read whole first or is read through its handle."""
    monkeypatch.setattr(file_read, "_WHOLE_FILE_BYTES", whole_file_bytes)
    for pk in (False, True):
        t = catalog.create_table(
            f"db.damaged_{int(pk)}",
            "id bigint, v string",
            primary_keys=["id"] if pk else [],
            options={"bucket": "1"} if pk else {},
        )
        t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
        t.write_arrow(pa.table({"id": [2, 3], "v": ["b2", "c"]}))
        first, second = sorted(Path(t.store.table_path).rglob("*.parquet"), key=lambda p: p.stat().st_mtime_ns)
        second.write_bytes(second.read_bytes()[:40])  # truncated
        with pytest.raises(DataFileError, match=rf"Data file \S*{second.name} cannot be read.*rollback_to"):
            t.scan().to_arrow()
        first.unlink()
        with pytest.raises(DataFileError, match=rf"Data file \S*{first.name} is missing.*rollback_to"):
            t.scan().to_arrow()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=30), st.integers(1, 50))
def test_coalesced_batches_keep_every_row_and_join_small_runs(sizes: list[int], batch_size: int) -> None:
    start = [0]

    def batch(n: int) -> pa.RecordBatch:
        start[0] += n
        return pa.record_batch(
            {
                "id": pa.array(range(start[0] - n, start[0]), pa.int64()),
                "s": pa.array([str(i) for i in range(n)], pa.string()),
            }
        )

    batches = [batch(n) for n in sizes]
    out = list(coalesce_batches(batches, batch_size))
    assert [v for b in out for v in b.column("id").to_pylist()] == list(range(sum(sizes)))  # every row, in order
    assert all(b.schema.equals(batches[0].schema) for b in out)
    small = max(1, batch_size // 4)
    # Between two batches that passed through, small ones are joined: at most one joined batch falls short.
    runs: list[list[int]] = [[]]
    for b in out:
        if any(b is x for x in batches) and b.num_rows >= small:
            runs.append([])
        else:
            runs[-1].append(b.num_rows)
    assert all(sum(n < batch_size for n in run) <= 1 for run in runs)
