"""Windowed (bounded-memory) merge of large key-overlap sections must equal the whole-section merge."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.datasource.read.merged_read import read_merged
from pyspark_paimon.datasource.read.read import read_split
from pyspark_paimon.datasource.read.read_context import ReadContext, ReadMetrics
from pyspark_paimon.datasource.write.data_files import ROW_GROUP_ROWS
from pyspark_paimon.errors import PaimonError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.metadata.types.arrow import to_arrow_schema
from pyspark_paimon.metadata.types.model import AtomicType, DataField, string_type
from pyspark_paimon.planner.split import DataSplit

I, UB, UA, D = 0, 1, 2, 3
WHOLE = 1 << 40  # never windowed
TINY = 1  # every section windowed, about one row group per window


def make_schema(key_type: Any, composite: bool, options: dict[str, str]) -> TableSchema:
    fields = [
        DataField(0, "k", key_type),
        DataField(1, "k2", AtomicType("INT", nullable=False)),
        DataField(2, "v", AtomicType("BIGINT")),
        DataField(3, "s", string_type()),
        DataField(4, "ts", AtomicType("INT")),
    ]
    pk = ["k", "k2"] if composite else ["k"]
    return TableSchema(
        id=0, fields=fields, highest_field_id=4, partition_keys=[], primary_keys=pk, options={"bucket": "1", **options}
    )


_counter = [0]


def write_file(directory: Path, schema: TableSchema, rows: list[dict[str, Any]], row_group_size: int) -> DataFileMeta:
    """A data file in Paimon layout (``_KEY_*``, system columns, table columns), sorted by key, written with
    small row groups."""
    _counter[0] += 1
    name = f"data-{_counter[0]:05d}-0.parquet"
    keys = schema.trimmed_primary_keys
    rows = sorted(rows, key=lambda r: tuple(r[k] for k in keys))
    cols: list[pa.Array] = []
    fields: list[pa.Field] = []
    for k in keys:
        t = to_arrow_schema([schema.field(k)]).field(0).type
        cols.append(pa.array([r[k] for r in rows], t))
        fields.append(pa.field(f"_KEY_{k}", t, False))
    cols.append(pa.array([r["_seq"] for r in rows], pa.int64()))
    fields.append(pa.field("_SEQUENCE_NUMBER", pa.int64(), False))
    cols.append(pa.array([r["_kind"] for r in rows], pa.int8()))
    fields.append(pa.field("_VALUE_KIND", pa.int8(), False))
    for f in schema.fields:
        t = to_arrow_schema([f]).field(0).type
        cols.append(pa.array([r.get(f.name) for r in rows], t))
        fields.append(pa.field(f.name, t, f.type.nullable))
    path = directory / name
    pq.write_table(pa.Table.from_arrays(cols, schema=pa.schema(fields)), path, row_group_size=row_group_size)
    key_types = [schema.field(k).type for k in keys]
    seqs = [r["_seq"] for r in rows]
    return DataFileMeta(
        file_name=name,
        file_size=path.stat().st_size,
        row_count=len(rows),
        min_key=serialize_row([rows[0][k] for k in keys], key_types),
        max_key=serialize_row([rows[-1][k] for k in keys], key_types),
        min_sequence_number=min(seqs),
        max_sequence_number=max(seqs),
        schema_id=0,
        level=0,
        delete_row_count=sum(1 for r in rows if r["_kind"] in (UB, D)),
    )


def read(
    directory: Path,
    schema: TableSchema,
    files: Sequence[DataFileMeta],
    window: int,
    ranks: dict[str, int] | None = None,
    metrics: ReadMetrics | None = None,
) -> pa.Table:
    ctx = ReadContext(
        fileio=FileIO(),
        table_path=str(directory),
        schema=schema,
        schemas={"main": {0: schema}},
        options=dict(schema.options),
        batch_size=7,
        merge_window_bytes=window,
    )
    split = DataSplit(
        partition=serialize_row([], []),
        partition_values=(),
        bucket=0,
        total_buckets=1,
        files=tuple(files),
        bucket_path=str(directory),
        raw_convertible=False,
        file_ranks=dict(ranks or {}),
    )
    batches = list(read_split(ctx, split, metrics=metrics))
    return pa.Table.from_batches(batches, schema=ctx.output_schema())


ENGINES = [
    {},
    {"sequence.field": "ts"},
    {"sequence.field": "ts", "sequence.field.sort-order": "descending"},
    {"merge-engine": "partial-update"},  # refuses deletes: both paths must raise the same error
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"merge-engine": "partial-update", "ignore-delete": "true"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    {"merge-engine": "first-row"},
]

row_strategy = st.tuples(
    st.integers(0, 30),
    st.integers(0, 2),
    st.sampled_from([I, I, UA, D, UB]),
    st.one_of(st.none(), st.integers(-5, 5)),
    st.one_of(st.none(), st.integers(0, 3)),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(row_strategy, min_size=1, max_size=40), min_size=2, max_size=5),
    st.sampled_from(ENGINES),
    st.booleans(),
    st.booleans(),
    st.integers(1, 6),
    st.booleans(),
)
def test_windowed_merge_equals_whole_section(
    commits: list[list[tuple]],
    options: dict[str, str],
    string_key: bool,
    composite: bool,
    row_group_size: int,
    chain: bool,
) -> None:
    if options.get("merge-engine") == "first-row":  # first-row tables hold insertions only
        commits = [[(k, k2, I, v, ts) for k, k2, _, v, ts in c] for c in commits]
    key_type = string_type(nullable=False) if string_key else AtomicType("INT", nullable=False)
    schema = make_schema(key_type, composite, options)
    seq = 0
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        files = []
        for commit in commits:
            # Every file spans keys 0..31, so all files form one key-overlap section.
            commit = [(0, 0, I, None, None), *commit, (31, 0, I, None, None)]
            buffer: dict[tuple, dict] = {}
            for k, k2, kind, v, ts in commit:
                key = (f"key{k:02d}" if string_key else k, k2 if composite else 0)
                buffer[key] = {"k": key[0], "k2": key[1], "_seq": seq, "_kind": kind, "v": v, "s": f"s{seq}", "ts": ts}
                seq += 1
            files.append(write_file(directory, schema, list(buffer.values()), row_group_size))
        # Force one section (level-0 files usually all overlap anyway).
        ranks = {f.file_name: i // 2 for i, f in enumerate(files)} if chain else None
        whole = outcome(directory, schema, files[::-1], WHOLE, ranks)
        metrics = ReadMetrics()
        windowed = outcome(directory, schema, files[::-1], TINY, ranks, metrics)
    assert windowed == whole
    if row_group_size == 1 and isinstance(whole, list):
        assert metrics.windowed_sections == 1  # the windowed path really ran


def outcome(
    directory: Path,
    schema: TableSchema,
    files: Sequence[DataFileMeta],
    window: int,
    ranks: dict[str, int] | None,
    metrics: ReadMetrics | None = None,
) -> Any:
    try:
        # A read promises no row order: compare by key.
        return sorted(
            read(directory, schema, files, window, ranks, metrics).to_pylist(), key=lambda r: (r["k"], r["k2"])
        )
    except PaimonError as exc:
        return type(exc)


def test_windowed_merge_bounds_rows_materialised(tmp_path: Path) -> None:
    """Four fully overlapping level-0 files of 2,000 keys each: the windowed merge never holds more than a
    small fraction of the section's rows at once, and returns what the whole-section merge returns."""
    schema = make_schema(AtomicType("INT", nullable=False), False, {"merge-engine": "deduplicate"})
    files = []
    seq = 0
    for n in range(4):
        rows = []
        for k in range(2000):
            rows.append(
                {
                    "k": k,
                    "k2": 0,
                    "_seq": seq,
                    "_kind": D if (k + n) % 97 == 0 else I,
                    "v": k * 10 + n,
                    "s": "x" * 20,
                    "ts": None,
                }
            )
            seq += 1
        files.append(write_file(tmp_path, schema, rows, row_group_size=100))
    total_rows = sum(f.row_count for f in files)
    section_bytes = sum(f.file_size for f in files)

    metrics = ReadMetrics()
    whole = read(tmp_path, schema, files, WHOLE, metrics=metrics)
    assert metrics.max_merge_rows == total_rows and metrics.windowed_sections == 0

    metrics = ReadMetrics()
    windowed = read(tmp_path, schema, files, section_bytes // 20, metrics=metrics)
    assert metrics.windowed_sections == 1
    assert 0 < metrics.max_merge_rows <= total_rows // 5
    assert windowed.to_pylist() == whole.to_pylist()


def test_missing_statistics_fall_back_to_whole_section(tmp_path: Path) -> None:
    schema = make_schema(AtomicType("INT", nullable=False), False, {})
    files = []
    for n in range(2):
        rows = [{"k": k, "k2": 0, "_seq": n * 100 + k, "_kind": I, "v": n, "s": None, "ts": None} for k in range(50)]
        meta = write_file(tmp_path, schema, rows, row_group_size=10)
        path = tmp_path / meta.file_name
        pq.write_table(pq.read_table(path, partitioning=None), path, row_group_size=10, write_statistics=False)
        files.append(replace(meta, file_size=path.stat().st_size))
    metrics = ReadMetrics()
    out = read(tmp_path, schema, files, TINY, metrics=metrics)
    assert metrics.windowed_sections == 0 and metrics.max_merge_rows == 100
    assert [(r["k"], r["v"]) for r in out.to_pylist()] == [(k, 1) for k in range(50)]


def test_writer_row_groups_are_bounded() -> None:
    assert ROW_GROUP_ROWS == 131072


def merged_in_key_order(
    directory: Path, schema: TableSchema, files: Sequence[DataFileMeta], ranks: dict[str, int] | None
) -> Any:
    """The whole-section merge in key order (what compaction reads), projected to the read's columns."""
    ctx = ReadContext(
        fileio=FileIO(),
        table_path=str(directory),
        schema=schema,
        schemas={"main": {0: schema}},
        options=dict(schema.options),
        batch_size=7,
        merge_window_bytes=WHOLE,
    )
    split = DataSplit(
        partition=serialize_row([], []),
        partition_values=(),
        bucket=0,
        total_buckets=1,
        files=tuple(files),
        bucket_path=str(directory),
        raw_convertible=False,
        file_ranks=dict(ranks or {}),
    )
    try:
        tables = list(read_merged(ctx, split, drop_retracts=True))
    except PaimonError as exc:
        return type(exc)
    return pa.concat_tables(tables).select(ctx.output_schema().names).to_pylist()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(row_strategy, min_size=1, max_size=12),
    st.lists(row_strategy, min_size=1, max_size=12),
    st.sampled_from(ENGINES),
    st.booleans(),
    st.booleans(),
    st.sampled_from([I, UA, D]),
)
def test_big_base_with_small_overlays_equals_key_ordered_merge(
    first: list[tuple], second: list[tuple], options: dict[str, str], string_key: bool, chain: bool, base_kind: int
) -> None:
    """A big sorted run with a few small newer ones (a chain anchor and its deltas): the read passes the keys only
    the big file holds through unsorted and merges the rest; row for row it must equal the key-ordered merge."""
    if options.get("merge-engine") == "first-row":
        first = [(k, k2, I, v, ts) for k, k2, _, v, ts in first]
        second = [(k, k2, I, v, ts) for k, k2, _, v, ts in second]
        base_kind = I
    key_type = string_type(nullable=False) if string_key else AtomicType("INT", nullable=False)
    schema = make_schema(key_type, False, options)
    key = (lambda k: f"key{k:03d}") if string_key else (lambda k: k)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        base = [
            {
                "k": key(k),
                "k2": 0,
                "_seq": k,
                "_kind": base_kind if k % 7 == 0 else I,
                "v": k,
                "s": f"b{k}",
                "ts": k % 4,
            }
            for k in range(120)
        ]
        files = [write_file(directory, schema, base, 1000)]
        seq = 1000
        for commit in (first, second):
            buffer: dict[Any, dict] = {}
            for k, _, kind, v, ts in commit:
                buffer[key(k * 4)] = {
                    "k": key(k * 4),
                    "k2": 0,
                    "_seq": seq,
                    "_kind": kind,
                    "v": v,
                    "s": f"s{seq}",
                    "ts": ts,
                }
                seq += 1
            files.append(write_file(directory, schema, list(buffer.values()), 1000))
        ranks = {f.file_name: i for i, f in enumerate(files)} if chain else None
        expected = merged_in_key_order(directory, schema, files, ranks)
        metrics = ReadMetrics()
        actual = outcome(directory, schema, files, WHOLE, ranks, metrics)
    if isinstance(expected, list):
        assert isinstance(actual, list)
        assert actual == expected
        assert metrics.max_merge_rows < 120  # only the touched keys were sorted and merged
    else:
        assert actual == expected
