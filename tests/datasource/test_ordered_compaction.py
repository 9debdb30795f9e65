"""Ordered compaction (sort compaction with order_strategy / order_by), incremental clustering and clustering
writes (datasource/compact/ordered_compact.py, datasource/write/clustering.py): the curves themselves, the files
a range filter then skips, the rows unchanged, Java's refusals."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.datasource.compact.compact import compact
from pyspark_paimon.datasource.write.clustering import RowOrder, auto_strategy, row_order
from pyspark_paimon.errors import CompactionError, OptionError
from pyspark_paimon.metadata.manifests.index_manifest import read_index_manifest
from pyspark_paimon.metadata.rows.binary_row import deserialize_row
from pyspark_paimon.metadata.schema.table_schema import TableSchema
from pyspark_paimon.table import Table

FILES = 40
ROWS_PER_FILE = 500
FILTER = "x < 250 AND y < 250"


def _grid_schema(names: str = "x bigint, y bigint") -> TableSchema:
    import tempfile

    return Catalog(tempfile.mkdtemp()).create_table("db.g", names).schema


def _walk(table: pa.Table, order: RowOrder) -> list[tuple[Any, ...]]:
    idx = row_order(table, order)
    return [tuple(table.column(c)[int(i)].as_py() for c in order.columns) for i in idx]


# ------------------------------------------------------------------------------------------------ the curves
def test_hilbert_walks_the_grid_one_step_at_a_time() -> None:
    """Every consecutive pair of cells of a Hilbert walk over an 8x8 grid are neighbours, and every cell is
    visited once: the defining property of the curve (a z-order jumps)."""
    cells = list(itertools.product(range(8), range(8)))
    grid = pa.table({"x": [c[0] for c in cells], "y": [c[1] for c in cells]})
    walk = _walk(grid, RowOrder("hilbert", ("x", "y")))
    assert sorted(walk) == sorted(cells)
    assert all(abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for a, b in zip(walk, walk[1:]))
    zwalk = _walk(grid, RowOrder("zorder", ("x", "y")))
    assert any(abs(a[0] - b[0]) + abs(a[1] - b[1]) > 1 for a, b in zip(zwalk, zwalk[1:]))


def test_zorder_interleaves_bits_first_column_first() -> None:
    cells = list(itertools.product(range(4), range(4)))
    grid = pa.table({"x": [c[0] for c in cells], "y": [c[1] for c in cells]})
    walk = _walk(grid, RowOrder("zorder", ("x", "y")))

    def z(x: int, y: int) -> int:
        return sum(((x >> b) & 1) << (2 * b + 1) | ((y >> b) & 1) << (2 * b) for b in range(2))

    assert walk == sorted(cells, key=lambda c: z(*c))


@pytest.mark.parametrize(
    "values",
    [
        pa.array([5, -3, None, 0, -(2**62), 2**62, 7], pa.int64()),
        pa.array([1.5, -2.25, 0.0, None, -1e300, 1e300, -0.5], pa.float64()),
        pa.array(["b", "a", None, "ab", "abcdefghij", "abcdefghia"], pa.string()),  # NULL and "" share a key
        pa.array([3, 1, None, 2], pa.int8()),
    ],
)
def test_single_column_zorder_is_the_value_order_with_null_first(values: pa.Array) -> None:
    """With one column a z-order is that column's order (strings by their first 8 bytes: equal prefixes keep
    their input order), NULL first."""
    data = pa.table({"v": values, "i": pa.array(range(len(values)))})
    walk = [data.column("v")[int(i)].as_py() for i in row_order(data, RowOrder("zorder", ("v",)))]
    present = [v for v in values.to_pylist() if v is not None]
    expected = [None] * values.null_count + sorted(
        present, key=(lambda s: s.encode()[:8]) if pa.types.is_string(values.type) else None
    )
    assert walk == expected


def test_longer_string_contribution_orders_past_eight_bytes() -> None:
    data = pa.table({"s": ["abcdefghij", "abcdefghia"]})
    assert _walk(data, RowOrder("zorder", ("s",), var_bytes=8)) == [("abcdefghij",), ("abcdefghia",)]
    assert _walk(data, RowOrder("zorder", ("s",), var_bytes=10)) == [("abcdefghia",), ("abcdefghij",)]


def test_order_sorts_lexicographically_nulls_first() -> None:
    data = pa.table({"x": [3, None, 1, 1], "y": ["b", "z", None, "a"]})
    assert _walk(data, RowOrder("order", ("x", "y"))) == [(None, "z"), (1, None), (1, "a"), (3, "b")]


def test_constant_and_all_null_columns_keep_input_order() -> None:
    data = pa.table({"c": [4, 4, 4], "n": pa.array([None, None, None], pa.int64())})
    for strategy in ("zorder", "hilbert"):
        assert list(row_order(data, RowOrder(strategy, ("c", "n")))) == [0, 1, 2]


def test_auto_strategy_follows_the_number_of_columns() -> None:
    assert [auto_strategy("auto", n) for n in (1, 2, 4, 5, 9)] == ["order", "zorder", "zorder", "hilbert", "hilbert"]
    assert auto_strategy("Hilbert", 1) == "hilbert"


def test_row_order_refuses_bad_orders() -> None:
    schema = _grid_schema()
    with pytest.raises(OptionError, match="not one of"):
        RowOrder.of("spiral", ["x"], schema)
    with pytest.raises(OptionError, match="not columns"):
        RowOrder.of("zorder", ["x", "nope"], schema)
    with pytest.raises(OptionError, match="at least one column"):
        RowOrder.of("zorder", [], schema)


# ------------------------------------------------------------------------------------------------ sort compaction
def _uniform_table(tmp_path: Any, name: str = "t", **options: str) -> Table:
    """An unaware-bucket append table of FILES files with x, y uniform in [0, 1000)."""
    t = Catalog(str(tmp_path)).create_table(
        f"db.{name}",
        "id bigint, x bigint, y bigint, s string",
        options={"bucket": "-1", "target-file-size": "12kb", **options},
    )
    rng = np.random.default_rng(37)
    for i in range(FILES):
        n = ROWS_PER_FILE
        t.write_arrow(
            pa.table(
                {
                    "id": np.arange(i * n, (i + 1) * n),
                    "x": rng.integers(0, 1000, n),
                    "y": rng.integers(0, 1000, n),
                    "s": [f"s{v}" for v in rng.integers(0, 1000, n)],
                }
            )
        )
    return t


def _selected(t: Table, where: str = FILTER) -> tuple[int, int]:
    counters = t.scan(filter=where).explain().counters
    return counters.files_selected, counters.files_total


@pytest.mark.parametrize("strategy", ["zorder", "hilbert"])
def test_curve_compaction_makes_a_two_column_range_filter_skip_files(tmp_path: Any, strategy: str) -> None:
    """Issue 37's target on a small table: before, ``x < 250 AND y < 250`` reads every file; after a z-order
    (or Hilbert) compaction on (x, y) at most a quarter of them; the rows are the same, in one COMPACT snapshot."""
    t = _uniform_table(tmp_path)
    selected, total = _selected(t)
    assert selected == total >= FILES
    before = t.scan().to_arrow().sort_by("id")
    result = compact(t.store, order_strategy=strategy, order_by="x,y")
    assert result.snapshot_id is not None and t.snapshot(result.snapshot_id).commit_kind == "COMPACT"
    assert result.rows_before == result.rows_after == FILES * ROWS_PER_FILE
    selected, total = _selected(t)
    assert total >= FILES // 2, "the outputs roll at target-file-size"
    assert selected <= total // 4, f"{strategy}: {selected} of {total} files read"
    assert t.scan().to_arrow().sort_by("id").equals(before)
    expected = before.filter(pc.and_(pc.less(before["x"], 250), pc.less(before["y"], 250)))
    assert t.scan(filter=FILTER).to_arrow().sort_by("id").equals(expected)


def test_plain_order_skips_on_the_first_column_only(tmp_path: Any) -> None:
    t = _uniform_table(tmp_path)
    compact(t.store, order_strategy="order", order_by=["x", "y"])
    on_x, total = _selected(t, "x < 250")
    on_y, _ = _selected(t, "y < 250")
    assert on_x <= total // 3 and on_y == total


def test_files_are_sorted_by_the_curve_and_compacted_outputs(tmp_path: Any) -> None:
    t = _uniform_table(tmp_path)
    compact(t.store, order_strategy="order", order_by="x")
    entries = sorted(t.store.live_entries(t.latest_snapshot()), key=lambda e: e.file.min_sequence_number)
    assert {e.file.level for e in entries} == {0}
    previous_max = -1
    for e in entries:
        path = f"{t.store.bucket_path(t.schema, (), 0)}/{e.file.file_name}"
        xs = pq.read_table(path, columns=["x"]).column("x").to_pylist()
        assert xs == sorted(xs) and xs[0] >= previous_max
        previous_max = xs[-1]


def test_sort_compaction_takes_partitions_and_options(tmp_path: Any) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.p", "dt string, x bigint, y bigint", partition_keys=["dt"], options={"bucket": "-1"}
    )
    rng = np.random.default_rng(3)
    for dt in ("a", "b"):
        for _ in range(4):
            t.write_arrow(
                pa.table({"dt": [dt] * 300, "x": rng.integers(0, 1000, 300), "y": rng.integers(0, 1000, 300)})
            )
    before = {e.file.file_name for e in t.store.live_entries(t.latest_snapshot())}
    result = compact(t.store, "dt=a", order_strategy="zorder", order_by="x,y", options={"target-file-size": "2kb"})
    after = t.store.live_entries(t.latest_snapshot())
    types = [f.type for f in t.schema.partition_fields]
    kept_b = [e for e in after if deserialize_row(e.partition, types) == ("b",)]
    assert {e.file.file_name for e in kept_b} <= before and len(kept_b) == 4
    new_a = [e for e in after if deserialize_row(e.partition, types) == ("a",)]
    assert result.files_before == 4 and len(new_a) == result.files_after > 4  # rolled at the overlaid 2kb
    assert t.scan().to_arrow().num_rows == 2400


def test_sort_compaction_of_a_deletion_vector_table_drops_deleted_rows_and_vectors(tmp_path: Any) -> None:
    t = _uniform_table(tmp_path, "dv", **{"deletion-vectors.enabled": "true"})
    t.delete("id < 1000")
    assert t.latest_snapshot().index_manifest is not None
    before = t.scan().to_arrow().sort_by("id")
    assert before.num_rows == FILES * ROWS_PER_FILE - 1000
    compact(t.store, order_strategy="zorder", order_by="x,y")
    assert t.scan().to_arrow().sort_by("id").equals(before)
    index = t.latest_snapshot().index_manifest
    assert index is None or read_index_manifest(t.store.fileio, t.store.manifests.path(index)) == []
    selected, total = _selected(t)
    assert selected <= total // 4


@pytest.mark.parametrize(
    ("options", "kwargs", "error", "match"),
    [
        (
            {"bucket": "2", "bucket-key": "id"},
            {"order_strategy": "zorder", "order_by": "x,y"},
            CompactionError,
            "unaware",
        ),
        ({}, {"order_strategy": "zorder", "order_by": "dt"}, OptionError, "partition"),
        ({}, {"order_strategy": "zorder", "order_by": "x,nope"}, OptionError, "not columns"),
        ({}, {"order_strategy": "none", "order_by": "x"}, OptionError, "none"),
        ({}, {"order_strategy": "zorder"}, OptionError, "at least one column"),
        (
            {"clustering.incremental": "true", "clustering.columns": "x"},
            {"order_strategy": "order", "order_by": "x"},
            CompactionError,
            "incremental",
        ),
    ],
)
def test_java_refusals(tmp_path: Any, options: dict[str, str], kwargs: dict[str, Any], error: type, match: str) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.r", "dt string, id bigint, x bigint, y bigint", partition_keys=["dt"], options={"bucket": "-1", **options}
    )
    t.write_arrow(pa.table({"dt": ["a"], "id": [1], "x": [1], "y": [2]}))
    with pytest.raises(error, match=match):
        compact(t.store, **kwargs)


def test_primary_key_tables_are_refused_before_anything_commits(tmp_path: Any) -> None:
    t = Catalog(str(tmp_path)).create_table("db.k", "k bigint, x bigint", primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": [1], "x": [2]}))
    latest = t.latest_snapshot().id
    with pytest.raises(CompactionError, match="primary-key"):
        compact(t.store, order_strategy="zorder", order_by="x")
    assert t.latest_snapshot().id == latest


# ------------------------------------------------------------------------------------ incremental clustering
def _clustered_table(tmp_path: Any, files: int, **options: str) -> Table:
    t = Catalog(str(tmp_path)).create_table(
        "db.c",
        "id bigint, x bigint, y bigint",
        options={"bucket": "-1", "clustering.incremental": "true", "clustering.columns": "x,y", **options},
    )
    rng = np.random.default_rng(11)
    for i in range(files):
        t.write_arrow(
            pa.table(
                {
                    "id": np.arange(i * 200, (i + 1) * 200),
                    "x": rng.integers(0, 1000, 200),
                    "y": rng.integers(0, 1000, 200),
                }
            )
        )
    return t


def _levels(t: Table) -> list[int]:
    return sorted(e.file.level for e in t.store.live_entries(t.latest_snapshot()))


def test_incremental_clustering_picks_runs_by_the_universal_rules(tmp_path: Any) -> None:
    """Four level-0 runs stay (fewer than num-sorted-run.compaction-trigger = 5, below which Java's universal
    rules pick nothing); five trigger a clustering of all of them into the max level (num-levels = trigger + 1 = 6,
    and size amplification takes every run), ordered by the table's curve."""
    t = _clustered_table(tmp_path, 4)
    assert not compact(t.store)
    t.write_arrow(pa.table({"id": [10_000], "x": [1], "y": [2]}))
    before = t.scan().to_arrow().sort_by("id")
    result = compact(t.store)
    assert result and t.snapshot(result.snapshot_id).commit_kind == "COMPACT"
    assert set(_levels(t)) == {5}
    assert t.scan().to_arrow().sort_by("id").equals(before)


def test_full_clustering_goes_to_the_max_level_once_and_again_after_new_columns(tmp_path: Any) -> None:
    t = _clustered_table(tmp_path, 2)
    assert compact(t.store, full=True)
    assert set(_levels(t)) == {5}
    assert not compact(t.store, full=True), "one max-level run clustered by the same columns: nothing to do"
    t.update_schema().set_options({"clustering.columns": "y"}).commit()
    assert compact(t.store, full=True), "new clustering columns: re-clustered"
    path = t.store.bucket_path(t.schema, (), 0)
    for e in t.store.live_entries(t.latest_snapshot()):
        ys = pq.read_table(f"{path}/{e.file.file_name}", columns=["y"]).column("y").to_pylist()
        assert ys == sorted(ys)  # one column: 'auto' is a plain order


def test_incremental_clustering_refusals(tmp_path: Any) -> None:
    t = Catalog(str(tmp_path)).create_table(
        "db.n", "id bigint, x bigint", options={"bucket": "-1", "clustering.incremental": "true"}
    )
    t.write_arrow(pa.table({"id": [1], "x": [1]}))
    with pytest.raises(CompactionError, match="clustering.columns"):
        compact(t.store)
    k = Catalog(str(tmp_path)).create_table(
        "db.k",
        "id bigint, x bigint",
        primary_keys=["id"],
        options={"bucket": "1", "clustering.incremental": "true", "clustering.columns": "x"},
    )
    k.write_arrow(pa.table({"id": [1], "x": [1]}))
    with pytest.raises(CompactionError, match="unaware"):
        compact(k.store)


# ------------------------------------------------------------------------------------------------ clustering writes
def test_clustering_columns_sort_each_write(tmp_path: Any) -> None:
    """``clustering.columns`` without incremental clustering: Java's Spark writer sorts the rows by the columns'
    curve before writing an unaware-bucket append table; a written file then holds x in order (one column:
    'auto' is a plain order)."""
    t = Catalog(str(tmp_path)).create_table(
        "db.w", "id bigint, x bigint", options={"bucket": "-1", "clustering.columns": "x"}
    )
    rng = np.random.default_rng(5)
    t.write_arrow(pa.table({"id": np.arange(1000), "x": rng.integers(0, 10_000, 1000)}))
    (entry,) = t.store.live_entries(t.latest_snapshot())
    xs = pq.read_table(f"{t.store.bucket_path(t.schema, (), 0)}/{entry.file.file_name}").column("x").to_pylist()
    assert xs == sorted(xs)
    plain = Catalog(str(tmp_path)).create_table("db.u", "id bigint, x bigint", options={"bucket": "-1"})
    plain.write_arrow(pa.table({"id": np.arange(1000), "x": rng.integers(0, 10_000, 1000)}))
    (entry,) = plain.store.live_entries(plain.latest_snapshot())
    xs = pq.read_table(f"{plain.store.bucket_path(plain.schema, (), 0)}/{entry.file.file_name}").column("x").to_pylist()
    assert xs != sorted(xs)


def test_paimons_default_strategy_is_minor_for_incremental_clustering(tmp_path: Any) -> None:
    """``full=None`` (the CLI without --compact_strategy) is Paimon's procedure default: full, but minor for a
    clustered table, whose two level-0 runs then stay (below the trigger)."""
    t = _clustered_table(tmp_path, 2)
    assert not compact(t.store, full=None) and _levels(t) == [0, 0]
    k = Catalog(str(tmp_path)).create_table(
        "db.k", "id bigint, v bigint", primary_keys=["id"], options={"bucket": "1", "write-only": "true"}
    )
    k.write_arrow(pa.table({"id": [1], "v": [1]}))
    k.write_arrow(pa.table({"id": [1], "v": [2]}))
    assert compact(k.store, full=None) and _levels(k) == [5]
