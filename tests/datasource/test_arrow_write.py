"""The executor-side writer: layout, routing, sequence numbers, merging and DataFileMeta (Java's `FileStorePathFactory`,
`DefaultBucketFunction`, `KeyValueFileWriterFactory`, `CoreOptions`)."""

from __future__ import annotations

import datetime as dt
import os
import pickle
import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon.datasource.merge.merge import MergeError
from pyspark_paimon.datasource.write.data_files import KEY_FIELD_ID_START, SEQUENCE_NUMBER_ID, VALUE_KIND_ID
from pyspark_paimon.datasource.write.write import TableWriter, write_batches
from pyspark_paimon.datasource.write.write_context import WriteContext
from pyspark_paimon.errors import SchemaMismatchError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import EMPTY_ROW, deserialize_row, serialize_row
from pyspark_paimon.metadata.rows.bucket import bucket_ids
from pyspark_paimon.metadata.schema.table_schema import SchemaManager, TableSchema
from pyspark_paimon.metadata.snapshots.commit import CommitMessage
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.model import AtomicType

NAME_RE = re.compile(r"^data-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-(\d+)\.parquet$")
INT = AtomicType("INT")
BIGINT = AtomicType("BIGINT")
STRING = AtomicType("VARCHAR", length=2147483647)


# ------------------------------------------------------------------------------------------------ helpers
def make_ctx(tmp_path, ddl: str, partition_keys=(), primary_keys=(), options=None, **ctx_kw) -> WriteContext:
    fileio = FileIO()
    path = str(tmp_path / "t")
    schema = SchemaManager(fileio, path).create_table(parse_ddl(ddl), partition_keys, primary_keys, options or {})
    return WriteContext(fileio, path, schema, dict(schema.options), commit_user="test-user", **ctx_kw)


def write(ctx: WriteContext, *batches: pa.Table | pa.RecordBatch) -> list[CommitMessage]:
    writer = TableWriter(ctx, "task-0")
    for b in batches:
        writer.write(b)
    return writer.prepare_commit()


def data_files(ctx: WriteContext) -> dict[str, str]:
    """file name -> path relative to the table directory."""
    out = {}
    for root, _, files in os.walk(ctx.table_path):
        for f in files:
            if f.endswith(".parquet"):
                out[f] = os.path.relpath(os.path.join(root, f), ctx.table_path)
    return out


def read(ctx: WriteContext, meta: DataFileMeta) -> pa.Table:
    # partitioning=None: older pyarrow infers hive partitions from the `dt=...` directories of a file path
    # and then clashes with the file's own `dt` column.
    return pq.read_table(os.path.join(ctx.table_path, data_files(ctx)[meta.file_name]), partitioning=None)


def all_files(messages: list[CommitMessage]) -> list[DataFileMeta]:
    return [f for m in messages for f in m.new_files]


def field_ids(path: str) -> dict[str, int]:
    schema = pq.read_schema(path)
    return {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in schema}


def local_now_as_utc_millis() -> int:
    d = dt.datetime.now() - dt.datetime(1970, 1, 1)
    return (d.days * 86400 + d.seconds) * 1000 + d.microseconds // 1000


# ------------------------------------------------------------------------------------------------ append tables
def test_append_unpartitioned_unaware_bucket(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "id bigint, name string, score double")
    b1 = pa.table({"id": [3, 1], "name": ["c", "a"], "score": [0.5, None]})
    b2 = pa.record_batch({"id": [2], "name": ["b" * 40], "score": [9.0]})
    before = local_now_as_utc_millis()
    messages = write(ctx, b1, b2)
    after = local_now_as_utc_millis()

    assert len(messages) == 1
    m = messages[0]
    assert (m.partition, m.bucket, m.total_buckets) == (EMPTY_ROW, 0, -1)
    (meta,) = m.new_files
    assert NAME_RE.match(meta.file_name) and NAME_RE.match(meta.file_name).group(1) == "0"
    rel = data_files(ctx)[meta.file_name]
    assert rel == f"bucket-0/{meta.file_name}"
    path = os.path.join(ctx.table_path, rel)
    assert meta.file_size == os.path.getsize(path)
    table = pq.read_table(path, partitioning=None)
    assert table.column_names == ["id", "name", "score"]
    assert table.to_pydict() == {"id": [3, 1, 2], "name": ["c", "a", "b" * 40], "score": [0.5, None, 9.0]}
    assert field_ids(path) == {"id": 0, "name": 1, "score": 2}
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"

    assert meta.row_count == 3
    assert (meta.min_key, meta.max_key) == (EMPTY_ROW, EMPTY_ROW)
    assert meta.key_stats.null_counts == ()
    assert (meta.min_sequence_number, meta.max_sequence_number) == (0, 2)
    assert (meta.level, meta.file_source, meta.schema_id, meta.extra_files) == (0, 0, 0, ())
    assert meta.delete_row_count == 0
    assert before <= meta.creation_time_millis <= after
    assert meta.value_stats_cols is None
    types = [BIGINT, STRING, AtomicType("DOUBLE")]
    assert deserialize_row(meta.value_stats.min_values, types) == (1, "a", 0.5)
    assert deserialize_row(meta.value_stats.max_values, types) == (3, "c", 9.0)  # 'bbbb…' < 'c'
    assert meta.value_stats.null_counts == (0, 0, 1)


def test_append_string_stats_are_truncated(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "s string")
    (meta,) = all_files(write(ctx, pa.table({"s": ["z" * 30, "a" * 30]})))
    assert deserialize_row(meta.value_stats.min_values, [STRING]) == ("a" * 16,)
    assert deserialize_row(meta.value_stats.max_values, [STRING]) == ("z" * 15 + "{",)
    ctx_full = make_ctx(tmp_path / "full", "s string", options={"metadata.stats-mode": "full"})
    (meta,) = all_files(write(ctx_full, pa.table({"s": ["z" * 30, "a" * 30]})))
    assert deserialize_row(meta.value_stats.max_values, [STRING]) == ("z" * 30,)
    ctx_none = make_ctx(tmp_path / "none", "s string", options={"metadata.stats-mode": "none"})
    (meta,) = all_files(write(ctx_none, pa.table({"s": ["x"]})))
    assert meta.value_stats_cols == () and meta.value_stats.null_counts == ()
    assert meta.value_stats.min_values == EMPTY_ROW


def test_append_partitioned_escaping_and_default_partition(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "dt string, hr int, v bigint", partition_keys=["dt", "hr"])
    data = pa.table({"dt": ["a/b=c d%", None, "a/b=c d%", "", "x"], "hr": [7, 1, 7, 2, None], "v": [1, 2, 3, 4, 5]})
    messages = write(ctx, data)
    types = [STRING, INT]
    by_part = {deserialize_row(m.partition, types): m for m in messages}
    assert set(by_part) == {("a/b=c d%", 7), (None, 1), ("", 2), ("x", None)}
    files = data_files(ctx)
    expected_dirs = {
        ("a/b=c d%", 7): "dt=a%2Fb%3Dc d%25/hr=7",
        (None, 1): "dt=__DEFAULT_PARTITION__/hr=1",
        ("", 2): "dt=__DEFAULT_PARTITION__/hr=2",
        ("x", None): "dt=x/hr=__DEFAULT_PARTITION__",
    }
    for values, m in by_part.items():
        assert m.partition == serialize_row(list(values), types)
        assert (m.bucket, m.total_buckets) == (0, -1)
        (meta,) = m.new_files
        assert files[meta.file_name] == f"{expected_dirs[values]}/bucket-0/{meta.file_name}"
    t = read(ctx, by_part[("a/b=c d%", 7)].new_files[0])
    assert t.to_pydict() == {"dt": ["a/b=c d%"] * 2, "hr": [7, 7], "v": [1, 3]}  # arrival order kept
    null_file = files[by_part[(None, 1)].new_files[0].file_name]
    assert [f.name for f in pq.read_schema(os.path.join(ctx.table_path, null_file))] == ["dt", "hr", "v"]


def test_append_fixed_bucket_routing_matches_bucket_ids(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "k string, v int", options={"bucket": "3", "bucket-key": "k"})
    keys = [str(i) for i in range(40)]
    messages = write(ctx, pa.table({"k": keys, "v": list(range(40))}))
    expected = bucket_ids([pa.array(keys)], [STRING], 3)
    files = data_files(ctx)
    seen = 0
    for m in messages:
        assert m.total_buckets == 3
        for meta in m.new_files:
            assert files[meta.file_name] == f"bucket-{m.bucket}/{meta.file_name}"
            t = read(ctx, meta)
            for v in t.column("v").to_pylist():
                assert expected[v] == m.bucket
            seen += t.num_rows
    assert seen == 40 and len(messages) == len(set(expected.tolist()))


def test_existing_partition_keeps_its_bucket_count(tmp_path) -> None:
    base = make_ctx(
        tmp_path,
        "p int, k int not null, v string",
        partition_keys=["p"],
        primary_keys=["p", "k"],
        options={"bucket": "2"},
    )
    old_part = serialize_row([1], [INT])
    ctx = WriteContext(base.fileio, base.table_path, base.schema, base.options, partition_buckets={old_part: 5})
    keys = list(range(30))
    messages = write(ctx, pa.table({"p": [1] * 30 + [2] * 30, "k": keys * 2, "v": ["x"] * 60}))
    b5 = bucket_ids([pa.array(keys, pa.int32())], [INT], 5)
    b2 = bucket_ids([pa.array(keys, pa.int32())], [INT], 2)
    for m in messages:
        p = deserialize_row(m.partition, [INT])[0]
        assert m.total_buckets == (5 if p == 1 else 2)
        expected = b5 if p == 1 else b2
        for meta in m.new_files:
            assert all(expected[k] == m.bucket for k in read(ctx, meta).column("k").to_pylist())
    assert {m.bucket for m in messages if m.total_buckets == 5} == set(b5.tolist())


# ------------------------------------------------------------------------------------------------ PK tables
def test_pk_layout_sorting_folding_and_meta(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path, "k int not null, name string, amount decimal(10,2)", primary_keys=["k"], options={"bucket": "4"}
    )
    ctx = WriteContext(
        ctx.fileio,
        ctx.table_path,
        ctx.schema,
        ctx.options,
        sequence_bases={(EMPTY_ROW, b): 100 * (b + 1) for b in range(4)},
    )
    keys = [9, 3, 7, 3, 1, 12, 7, 5, 3]
    names = [f"n{i}" for i in range(len(keys))]
    amounts = [Decimal(i) for i in range(len(keys))]
    messages = write(
        ctx,
        pa.table({"k": pa.array(keys, pa.int32()), "name": names, "amount": pa.array(amounts, pa.decimal128(10, 2))}),
    )
    expected_bucket = bucket_ids([pa.array(keys, pa.int32())], [INT], 4)
    files = data_files(ctx)
    total = 0
    for m in messages:
        assert m.total_buckets == 4
        (meta,) = m.new_files
        path = os.path.join(ctx.table_path, files[meta.file_name])
        assert files[meta.file_name] == f"bucket-{m.bucket}/{meta.file_name}"
        assert meta.file_size == os.path.getsize(path)
        t = pq.read_table(path, partitioning=None)
        assert t.column_names == ["_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND", "k", "name", "amount"]
        assert field_ids(path) == {
            "_KEY_k": KEY_FIELD_ID_START + 0,
            "_SEQUENCE_NUMBER": SEQUENCE_NUMBER_ID,
            "_VALUE_KIND": VALUE_KIND_ID,
            "k": 0,
            "name": 1,
            "amount": 2,
        }
        schema = pq.read_schema(path)
        assert not schema.field("_KEY_k").nullable and not schema.field("_SEQUENCE_NUMBER").nullable
        assert schema.field("_VALUE_KIND").type == pa.int8() and not schema.field("_VALUE_KIND").nullable
        rows = t.to_pylist()
        ks = [r["k"] for r in rows]
        assert ks == sorted(set(ks))  # sorted, one row per key
        assert [r["_KEY_k"] for r in rows] == ks
        bucket_rows = [i for i, k in enumerate(keys) if expected_bucket[i] == m.bucket]
        base = 100 * (m.bucket + 1)
        for r in rows:
            last = max(i for i in bucket_rows if keys[i] == r["k"])  # newest arrival wins
            assert r["name"] == names[last]
            assert r["_SEQUENCE_NUMBER"] == base + bucket_rows.index(last)
            assert r["_VALUE_KIND"] == 0
        assert deserialize_row(meta.min_key, [INT]) == (ks[0],)
        assert deserialize_row(meta.max_key, [INT]) == (ks[-1],)
        assert deserialize_row(meta.key_stats.min_values, [INT]) == (ks[0],)
        assert deserialize_row(meta.key_stats.max_values, [INT]) == (ks[-1],)
        assert meta.key_stats.null_counts == (0,)
        seqs = [r["_SEQUENCE_NUMBER"] for r in rows]
        assert (meta.min_sequence_number, meta.max_sequence_number) == (min(seqs), max(seqs))
        assert meta.row_count == len(rows) and meta.delete_row_count == 0
        vtypes = [INT, STRING, AtomicType("DECIMAL", precision=10, scale=2)]
        assert deserialize_row(meta.value_stats.min_values, vtypes)[0] == ks[0]
        assert deserialize_row(meta.value_stats.max_values, vtypes)[2] == max(r["amount"] for r in rows)
        assert meta.value_stats_cols is None
        total += len(rows)
    assert total == len(set(keys))
    assert {m.bucket for m in messages} == set(expected_bucket.tolist())


def test_pk_partitioned_sequence_bases_per_partition_and_bucket(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path,
        "dt string not null, k bigint not null, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options={"bucket": "1"},
    )
    pa_ = serialize_row(["a"], [STRING])
    ctx = WriteContext(ctx.fileio, ctx.table_path, ctx.schema, ctx.options, sequence_bases={(pa_, 0): 5})
    messages = write(ctx, pa.table({"dt": ["a", "b", "a"], "k": [2, 1, 1], "v": ["x", "y", "z"]}))
    by_part = {deserialize_row(m.partition, [STRING])[0]: m for m in messages}
    ta = read(ctx, by_part["a"].new_files[0])
    assert ta.column_names[:3] == ["_KEY_k", "_SEQUENCE_NUMBER", "_VALUE_KIND"]  # partition key is trimmed
    assert ta.column("k").to_pylist() == [1, 2] and ta.column("_SEQUENCE_NUMBER").to_pylist() == [6, 5]
    tb = read(ctx, by_part["b"].new_files[0])
    assert tb.column("_SEQUENCE_NUMBER").to_pylist() == [0]
    assert data_files(ctx)[by_part["a"].new_files[0].file_name].startswith("dt=a/bucket-0/")


def test_rowkind_field_updates_and_deletes(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path,
        "k int not null, v string, op string",
        primary_keys=["k"],
        options={"bucket": "1", "rowkind.field": "op"},
    )
    data = pa.table(
        {
            "k": pa.array([1, 2, 3, 1, 1, 4], pa.int32()),
            "v": ["a", "b", "c", "a", "a2", "d"],
            "op": ["+I", "+I", "+I", "-U", "+U", "-D"],
        }
    )
    (m,) = write(ctx, data)
    (meta,) = m.new_files
    t = read(ctx, meta)
    assert t.column("k").to_pylist() == [1, 2, 3, 4]
    assert t.column("_VALUE_KIND").to_pylist() == [2, 0, 0, 3]
    assert t.column("v").to_pylist() == ["a2", "b", "c", "d"]
    assert t.column("op").to_pylist() == ["+U", "+I", "+I", "-D"]
    assert meta.delete_row_count == 1  # the folded -U is gone, the -D stays to shadow older files

    # a lone -U in its own write is kept as a retraction too
    (m2,) = write(ctx, pa.table({"k": pa.array([7], pa.int32()), "v": ["x"], "op": ["-U"]}))
    assert m2.new_files[0].delete_row_count == 1 and read(ctx, m2.new_files[0]).column("_VALUE_KIND").to_pylist() == [1]

    with pytest.raises(SchemaMismatchError, match=r"'\*U'.*\+I"):
        write(ctx, pa.table({"k": pa.array([1], pa.int32()), "v": ["a"], "op": ["*U"]}))
    with pytest.raises(SchemaMismatchError, match="None"):
        write(ctx, pa.table({"k": pa.array([1], pa.int32()), "v": ["a"], "op": pa.array([None], pa.string())}))


def test_ignore_delete_drops_retractions(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path,
        "k int not null, v string, op string",
        primary_keys=["k"],
        options={"bucket": "1", "rowkind.field": "op", "ignore-delete": "true"},
    )
    (m,) = write(ctx, pa.table({"k": pa.array([1, 1, 2], pa.int32()), "v": ["a", "a", "b"], "op": ["+I", "-D", "-D"]}))
    t = read(ctx, m.new_files[0])
    assert t.column("k").to_pylist() == [1] and t.column("_VALUE_KIND").to_pylist() == [0]
    assert m.new_files[0].delete_row_count == 0


def test_sequence_field_decides_the_winner(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path,
        "k int not null, seq bigint, v string",
        primary_keys=["k"],
        options={"bucket": "1", "sequence.field": "seq"},
    )
    data = pa.table({"k": pa.array([1, 1, 2, 2], pa.int32()), "seq": [10, 5, 1, 3], "v": ["new", "old", "b1", "b3"]})
    (m,) = write(ctx, data)
    t = read(ctx, m.new_files[0])
    assert t.column("v").to_pylist() == ["new", "b3"]
    assert t.column("_SEQUENCE_NUMBER").to_pylist() == [0, 3]
    assert (m.new_files[0].min_sequence_number, m.new_files[0].max_sequence_number) == (0, 3)


def test_partial_update_engine_folds_with_merge_module(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path,
        "k int not null, a string, b int",
        primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "partial-update"},
    )
    data = pa.table({"k": pa.array([1, 1], pa.int32()), "a": ["x", None], "b": pa.array([None, 5], pa.int32())})
    (m,) = write(ctx, data)
    assert read(ctx, m.new_files[0]).select(["k", "a", "b"]).to_pylist() == [{"k": 1, "a": "x", "b": 5}]


def test_aggregation_fold_keeps_the_winners_sequence_field(tmp_path) -> None:
    # The write buffer folds duplicate keys with the read-side engine: the sequence.field column is never
    # aggregated (Java AggregateMergeFunction.getAggFuncName), it takes the winner's value.
    ctx = make_ctx(
        tmp_path,
        "k int not null, seq bigint, v bigint",
        primary_keys=["k"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "sequence.field": "seq",
            "fields.default-aggregate-function": "sum",
        },
    )
    data = pa.table({"k": pa.array([1, 1, 2], pa.int32()), "seq": [10, 5, 3], "v": [1, 2, 4]})
    (m,) = write(ctx, data)
    assert read(ctx, m.new_files[0]).select(["k", "seq", "v"]).to_pylist() == [
        {"k": 1, "seq": 10, "v": 3},
        {"k": 2, "seq": 3, "v": 4},
    ]


def test_aggregation_fold_overflow_raises_like_java(tmp_path) -> None:
    # Folding duplicate keys of one write uses Java's exact arithmetic too (FieldSumAgg: Math.addExact).
    ctx = make_ctx(
        tmp_path,
        "k int not null, v bigint",
        primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    )
    data = pa.table({"k": pa.array([1, 1, 2], pa.int32()), "v": [2**63 - 1, 1, 4]})
    with pytest.raises(MergeError, match=r"'sum' of column 'v'.*key \(k=1\)"):
        write(ctx, data)


def test_aggregation_remove_record_on_delete_fold_writes_the_delete(tmp_path) -> None:
    # The folded DELETE carries the DELETE record's own values (Java initRow), so it shadows older files and
    # keeps NOT NULL columns filled.
    ctx = make_ctx(
        tmp_path,
        "k int not null, v bigint not null, op string",
        primary_keys=["k"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "aggregation.remove-record-on-delete": "true",
            "rowkind.field": "op",
        },
    )
    data = pa.table(
        {"k": pa.array([1, 1, 2, 2, 2], pa.int32()), "v": [5, 5, 1, 4, 2], "op": ["+I", "-D", "+I", "-D", "+I"]}
    )
    (m,) = write(ctx, data)
    assert read(ctx, m.new_files[0]).select(["k", "v", "op", "_VALUE_KIND"]).to_pylist() == [
        {"k": 1, "v": 5, "op": "-D", "_VALUE_KIND": 3},
        {"k": 2, "v": 6, "op": "+I", "_VALUE_KIND": 0},
    ]


def test_partial_update_remove_record_on_delete_fold(tmp_path) -> None:
    # The fold follows Java's PartialUpdateMergeFunction: a folded DELETE carries the DELETE's own values (NOT NULL
    # columns stay filled), and records after a DELETE overwrite its values field by field.
    ctx = make_ctx(
        tmp_path,
        "k int not null, a string, b int not null, op string",
        primary_keys=["k"],
        options={
            "bucket": "1",
            "merge-engine": "partial-update",
            "rowkind.field": "op",
            "partial-update.remove-record-on-delete": "true",
        },
    )
    data = pa.table(
        {
            "k": pa.array([1, 1, 2, 2, 2], pa.int32()),
            "a": ["x", "x", "p", "d", None],
            "b": pa.array([1, 1, 2, 3, 5], pa.int32()),
            "op": ["+I", "-D", "+I", "-D", "+I"],
        }
    )
    (m,) = write(ctx, data)
    assert read(ctx, m.new_files[0]).select(["k", "a", "b", "_VALUE_KIND"]).to_pylist() == [
        {"k": 1, "a": "x", "b": 1, "_VALUE_KIND": 3},
        {"k": 2, "a": "d", "b": 5, "_VALUE_KIND": 0},
    ]


def test_flushes_roll_files_and_continue_sequence(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path, "k bigint not null, v string", primary_keys=["k"], options={"bucket": "1", "write-buffer-size": "1 b"}
    )
    writer = TableWriter(ctx, "t")
    writer.write(pa.table({"k": [5, 1, 2], "v": ["a", "b", "c"]}))
    writer.write(pa.table({"k": [1, 9], "v": ["d", "e"]}))
    (m,) = writer.prepare_commit()
    assert len(m.new_files) == 2
    counters = [NAME_RE.match(f.file_name).group(1) for f in m.new_files]
    assert counters == ["0", "1"]
    assert m.new_files[0].file_name.rsplit("-", 1)[0] == m.new_files[1].file_name.rsplit("-", 1)[0]
    assert [(f.min_sequence_number, f.max_sequence_number) for f in m.new_files] == [(0, 2), (3, 4)]
    assert read(ctx, m.new_files[1]).column("k").to_pylist() == [1, 9]
    assert writer.prepare_commit() == []  # nothing new since the last call


def test_target_file_size_rolls_sorted_runs(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path, "k bigint not null, v string", primary_keys=["k"], options={"bucket": "1", "target-file-size": "2 kb"}
    )
    rng = np.random.default_rng(7)
    keys = rng.permutation(2000)
    (m,) = write(ctx, pa.table({"k": pa.array(keys, pa.int64()), "v": [f"value-{k}" for k in keys]}))
    assert len(m.new_files) > 3
    previous_max = -1
    total = 0
    for meta in m.new_files:
        ks = read(ctx, meta).column("k").to_pylist()
        assert ks == sorted(ks) and ks[0] > previous_max
        assert deserialize_row(meta.min_key, [BIGINT]) == (ks[0],)
        assert deserialize_row(meta.max_key, [BIGINT]) == (ks[-1],)
        previous_max = ks[-1]
        total += len(ks)
    assert total == 2000


def test_append_rolls_by_target_size(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "v bigint", options={"target-file-size": "1 kb"})
    (m,) = write(ctx, pa.table({"v": pa.array(np.arange(1000), pa.int64())}))
    assert len(m.new_files) > 1
    assert sum(f.row_count for f in m.new_files) == 1000
    ranges = [(f.min_sequence_number, f.max_sequence_number) for f in m.new_files]
    assert ranges[0][0] == 0 and ranges[-1][1] == 999
    assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(len(ranges) - 1))


# ------------------------------------------------------------------------------------------------ types & errors
def test_schema_mismatch_errors(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "id int not null, name string")
    with pytest.raises(SchemaMismatchError, match=r"'name' STRING"):
        write(ctx, pa.table({"id": pa.array([1], pa.int32())}))
    with pytest.raises(SchemaMismatchError, match=r"\['extra'\]"):
        write(ctx, pa.table({"id": pa.array([1], pa.int32()), "name": ["a"], "extra": [1]}))
    with pytest.raises(SchemaMismatchError, match=r"Column 'id'.*INT NOT NULL"):
        write(ctx, pa.table({"id": ["abc"], "name": ["a"]}))
    with pytest.raises(SchemaMismatchError, match=r"Column 'id'.*int32"):
        write(ctx, pa.table({"id": pa.array([2**40], pa.int64()), "name": ["a"]}))
    with pytest.raises(SchemaMismatchError, match=r"Column 'id' is NOT NULL.*1 NULL"):
        write(ctx, pa.table({"id": pa.array([1, None], pa.int64()), "name": ["a", "b"]}))
    # safe casts, column order and name case do not matter
    (m,) = write(ctx, pa.table({"NAME": ["a"], "id": pa.array([7], pa.int64())}))
    assert read(ctx, m.new_files[0]).to_pydict() == {"id": [7], "name": ["a"]}
    assert write(ctx, pa.table({"id": pa.array([], pa.int32()), "name": pa.array([], pa.string())})) == []


def test_timestamps_from_spark(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "ltz timestamp, ntz timestamp_ntz, ms timestamp_ntz(3)")
    instant = dt.datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    session = pa.array([instant], pa.timestamp("us", tz="America/New_York"))
    wall = dt.datetime(2024, 3, 1, 7, 30, 0, 654321)
    data = pa.table(
        {"ltz": session, "ntz": pa.array([wall], pa.timestamp("us")), "ms": pa.array([wall], pa.timestamp("us"))}
    )
    (m,) = write(ctx, data)
    meta = m.new_files[0]
    path = os.path.join(ctx.table_path, data_files(ctx)[meta.file_name])
    schema = pq.read_schema(path)
    assert schema.field("ltz").type == pa.timestamp("us", tz="UTC")
    assert schema.field("ntz").type == pa.timestamp("us")
    assert schema.field("ms").type == pa.timestamp("ms")
    logical = {c.name: str(c.logical_type) for c in pq.ParquetFile(path).schema}
    assert "isAdjustedToUTC=true" in logical["ltz"] and "timeUnit=microseconds" in logical["ltz"]
    assert "isAdjustedToUTC=false" in logical["ms"] and "timeUnit=milliseconds" in logical["ms"]
    row = pq.read_table(path, partitioning=None).to_pylist()[0]
    assert row["ltz"] == instant and row["ntz"] == wall and row["ms"] == wall.replace(microsecond=654000)
    types = [
        AtomicType("TIMESTAMP_LTZ", precision=6),
        AtomicType("TIMESTAMP", precision=6),
        AtomicType("TIMESTAMP", precision=3),
    ]
    assert deserialize_row(meta.value_stats.max_values, types) == (instant, wall, wall.replace(microsecond=654000))

    # a zoned input into TIMESTAMP_NTZ keeps the wall clock of its zone (Spark's cast semantics)
    ctx2 = make_ctx(tmp_path / "b", "ntz timestamp_ntz")
    (m2,) = write(ctx2, pa.table({"ntz": session}))
    assert read(ctx2, m2.new_files[0]).column("ntz").to_pylist() == [dt.datetime(2024, 3, 1, 7, 0, 0, 123456)]


def test_nested_columns_are_written_with_null_min_max(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "id int, tags array<string>, attrs map<string,int>, s struct<x:int,y:string>")
    data = pa.table(
        {
            "id": pa.array([1, 2], pa.int32()),
            "tags": [["a"], None],
            "attrs": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
            "s": [{"x": 1, "y": "a"}, None],
        }
    )
    (m,) = write(ctx, data)
    meta = m.new_files[0]
    t = read(ctx, meta)
    assert t.column("tags").to_pylist() == [["a"], None] and t.column("s").to_pylist()[0] == {"x": 1, "y": "a"}
    assert meta.value_stats_cols is None and meta.value_stats.null_counts == (0, 1, 1, 1)
    assert deserialize_row(meta.value_stats.max_values, [INT, BIGINT, BIGINT, BIGINT]) == (2, None, None, None)


def test_compression_option(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "v int", options={"file.compression": "snappy"})
    (m,) = write(ctx, pa.table({"v": pa.array([1, 2], pa.int32())}))
    path = os.path.join(ctx.table_path, data_files(ctx)[m.new_files[0].file_name])
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "SNAPPY"


def test_postpone_bucket_writers(tmp_path) -> None:
    """bucket = -2: into real buckets by default, raw into bucket-postpone with the fixed-bucket write off
    (tests/datasource/test_postpone_write.py has the rest)."""
    ctx = make_ctx(tmp_path / "p", "k int not null, v string", primary_keys=["k"], options={"bucket": "-2"})
    (m,) = write(ctx, pa.table({"k": pa.array([2, 1], pa.int32()), "v": ["a", "b"]}))
    assert (m.bucket, m.total_buckets) == (0, 1)
    raw = make_ctx(
        tmp_path / "r",
        "k int not null, v string",
        primary_keys=["k"],
        options={"bucket": "-2", "postpone.batch-write-fixed-bucket": "false"},
    )
    (m,) = write(raw, pa.table({"k": pa.array([2, 1], pa.int32()), "v": ["a", "b"]}))
    assert (m.bucket, m.total_buckets, m.new_files[0].max_sequence_number) == (-2, -2, -1)


def test_append_table_rejects_retractions(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "v int, op string", options={"rowkind.field": "op"})
    with pytest.raises(SchemaMismatchError, match="append table"):
        write(ctx, pa.table({"v": pa.array([1], pa.int32()), "op": ["-D"]}))
    (m,) = write(ctx, pa.table({"v": pa.array([1], pa.int32()), "op": ["+I"]}))
    assert read(ctx, m.new_files[0]).column_names == ["v", "op"]


# ------------------------------------------------------------------------------------------------ lifecycle
def test_abort_deletes_every_file(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "p int, v string", partition_keys=["p"], options={"write-buffer-size": "1 b"})
    writer = TableWriter(ctx, "t")
    writer.write(pa.table({"p": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}))
    writer.write(pa.table({"p": pa.array([3], pa.int32()), "v": ["c"]}))
    assert len(data_files(ctx)) == 3
    writer.abort()
    assert data_files(ctx) == {}
    assert writer.prepare_commit() == []


def test_write_batches_aborts_on_error(tmp_path) -> None:
    ctx = make_ctx(tmp_path, "v int not null", options={"write-buffer-size": "1 b"})
    good = pa.record_batch({"v": pa.array([1], pa.int32())})
    bad = pa.record_batch({"v": pa.array([None], pa.int32())})
    with pytest.raises(SchemaMismatchError):
        write_batches(ctx, [good, bad])
    assert data_files(ctx) == {}
    messages = write_batches(ctx, [good, good])
    assert sum(f.row_count for f in all_files(messages)) == 2


def test_context_is_picklable(tmp_path) -> None:
    ctx = make_ctx(
        tmp_path,
        "k int not null, v string",
        primary_keys=["k"],
        options={"bucket": "2"},
        sequence_bases={(EMPTY_ROW, 0): 3},
        partition_buckets={},
    )
    clone = pickle.loads(pickle.dumps(ctx))
    assert isinstance(clone.schema, TableSchema) and clone.sequence_bases == {(EMPTY_ROW, 0): 3}
    messages = write(clone, pa.table({"k": pa.array([1, 2, 3], pa.int32()), "v": ["a", "b", "c"]}))
    assert sum(f.row_count for f in all_files(messages)) == 3
    pickle.dumps(messages)


# ------------------------------------------------------------------ write_arrow / merge take any Arrow stream
_ROWS = {"id": [1, 2, 3, 4], "s": ["a", "b", None, "d"], "amount": [19.99, 1846.6, 0.1, 7.0]}


class _CStreamOnly:
    """A producer that only speaks the Arrow PyCapsule protocol (as nanoarrow or arro3 objects do)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self.table.__arrow_c_stream__(requested_schema)


def _inputs() -> dict[str, object]:
    import duckdb
    import pandas as pd
    import polars as pl

    table = pa.table(_ROWS)
    batches = table.to_batches(max_chunksize=1)
    return {
        "table": table,
        "record_batch": table.combine_chunks().to_batches()[0],
        "reader": pa.RecordBatchReader.from_batches(table.schema, batches),
        "batch_list": batches,
        "batch_generator": (b for b in batches),
        "c_stream": _CStreamOnly(table),
        "polars": pl.DataFrame(_ROWS),  # strings come as string_view
        "pandas": pd.DataFrame(_ROWS),
        "pandas_named_index": pd.DataFrame(_ROWS).set_index("id"),  # the index is the id column
        "duckdb": duckdb.sql(
            "select * from (values (1, 'a', 19.99::double), (2, 'b', 1846.6), (3, null, 0.1), "
            "(4, 'd', 7.0)) as v(id, s, amount)"
        ),
    }


@pytest.mark.parametrize("kind", sorted(_inputs()))
def test_write_arrow_takes_any_arrow_stream(catalog, kind: str) -> None:
    t = catalog.create_table(
        "db.inputs", "id BIGINT, s STRING, amount DECIMAL(10, 2)", primary_keys=["id"], options={"bucket": "2"}
    )
    t.write_arrow(_inputs()[kind])
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [
        {"id": 1, "s": "a", "amount": Decimal("19.99")},
        {"id": 2, "s": "b", "amount": Decimal("1846.60")},
        {"id": 3, "s": None, "amount": Decimal("0.10")},
        {"id": 4, "s": "d", "amount": Decimal("7.00")},
    ]
    source = _inputs()[kind]  # merge sources take the same inputs
    t.merge(source, on="id").when_matched_update({"s": "'m'"}).execute()
    assert t.scan().to_arrow().column("s").to_pylist() == ["m"] * 4


def test_a_stream_is_written_batch_by_batch(catalog) -> None:
    """A stream larger than the write buffer is flushed to data files while it is still being read: the writer
    never holds the whole input."""
    t = catalog.create_table("db.stream", "id BIGINT, v STRING", options={"write-buffer-size": "64 kb"})
    data_dir = t.store.table_path
    files_seen: list[int] = []

    def batches():
        for i in range(40):
            files_seen.append(sum(1 for _, _, names in os.walk(data_dir) for n in names if n.endswith(".parquet")))
            yield pa.record_batch({"id": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64()), "v": ["x" * 20] * 1000})

    t.write_arrow(batches())
    assert t.scan().count() == 40_000 == t.scan().to_arrow().num_rows
    assert files_seen[0] == 0 and files_seen[-1] >= 10  # files were written before the last batch was made


def test_write_arrow_refuses_what_is_not_arrow(catalog) -> None:
    t = catalog.create_table("db.refused", "id BIGINT")
    for data in ([{"id": 1}], {"id": [1]}, 42, [pa.table({"id": [1]})]):
        with pytest.raises(SchemaMismatchError, match="write_arrow takes Arrow data|not all pyarrow RecordBatches"):
            t.write_arrow(data)
    with pytest.raises(SchemaMismatchError, match="merge takes Arrow data"):
        t.merge(42, on="id")
    t.write_arrow([])
    assert t.latest_snapshot() is None  # an empty stream commits nothing
