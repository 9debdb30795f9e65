"""The Java interop lane: Java Paimon itself (the 1.0-SNAPSHOT bundle of paimon-python-ali, see
`tests/oracle/java_oracle.py`) writes, reads, tags, evolves and compacts tables next to us.

1. Java writes, we read (`t.scan().to_arrow()`, and two tables through Spark): append, deduplicate, partial-update,
   aggregation and first-row tables, partitions with several buckets, Java's schema evolution, Java's tags,
   and Java's full compaction (files above level 0, then new level-0 files on top of them).
2. We write, Java reads: append and primary-key tables (partitioned, bucketed, updates and deletes through
   ``rowkind.field``) with the common types; Java's rows must equal ours exactly.
3. We write a primary-key table, Java fully compacts it, and both of us read it back unchanged.
4. Deletion-vector tables written by Java: we read what Java reads (level 0 skipped, positions dropped); we
   append to them (level 0, visible once Java compacts); overwriting them is refused.

Every table is small and every test uses its own warehouse; one JVM serves the whole module.
Known Java <= 1.0 bug we stay clear of: a non-NULL ROW whose fields are all NULL reads back as NULL in Java
(apache/paimon#4785), so no such value is written here.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.metadata.manifests.manifest import MANIFEST_CACHE
from pyspark_paimon.metadata.types.json_codec import parse_type
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.scan import ScanPlanner
from tests.engine_read import read_arrow as engine_read_arrow
from tests.engine_read import read_job as engine_read_job
from tests.interop.helpers import canonical_rows, ours_spark, sorted_rows, table_uri
from tests.oracle import java_oracle
from tests.oracle.java_oracle import JavaOracle, JavaRead
from tests.oracle.oracle import type_json

pytestmark = pytest.mark.interop

UTC = dt.timezone.utc
RK = "_row_kind"


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    """One JVM for the module (compiled on first use; see tests/oracle/java_oracle.py)."""
    with JavaOracle() as oracle:
        yield oracle


# ------------------------------------------------------------------------------------------------ helpers


def _types(columns: Sequence[Sequence[Any]]) -> list[tuple[str, Any]]:
    """Java-style ``[name, type, nullable?]`` columns as our ``(name, DataType)`` tuples."""
    return [(c[0], parse_type(type_json(c[1] + ("" if len(c) < 3 or c[2] else " NOT NULL")))) for c in columns]


def _create_ours(warehouse: str, identifier: str, columns: Sequence[Sequence[Any]], **kwargs: Any) -> Table:
    return Catalog(warehouse).create_table(identifier, _types(columns), **kwargs)


def _write_ours(table: Table, rows: Sequence[dict[str, Any]]) -> None:
    table.write_arrow(pa.Table.from_pylist(list(rows), schema=table.schema.arrow_schema()))


def _ours(warehouse: str, identifier: str, options: dict[str, Any] | None = None) -> pa.Table:
    return (
        Table.open(table_uri(warehouse, identifier))
        .scan(read_options={k: str(v) for k, v in (options or {}).items()})
        .to_arrow()
    )


def _full(rows: Iterable[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """Rows with every column present (absent = NULL), in canonical order."""
    return sorted_rows({n: r.get(n) for n in names} for r in rows)


def assert_agree(ours: pa.Table, by_java: JavaRead, expected: Iterable[dict[str, Any]] | None = None) -> None:
    """Same column names, and the same rows as a multiset in both readers (and as `expected`)."""
    assert ours.column_names == by_java.names
    assert canonical_rows(ours) == sorted_rows(by_java.rows)
    if expected is not None:
        assert sorted_rows(by_java.rows) == _full(expected, by_java.names)


def _upsert(
    state: dict[Any, dict[str, Any]],
    rows: Iterable[dict[str, Any]],
    kinds: Sequence[str] | None = None,
    key: Sequence[str] = ("id",),
) -> None:
    """Apply one commit to the expected state of a deduplicate table (-U rows are ignored, -D deletes)."""
    rows = list(rows)
    for row, kind in zip(rows, kinds or ["+I"] * len(rows)):
        k = tuple(row[c] for c in key)
        if kind == "-D":
            state.pop(k, None)
        elif kind != "-U":
            state[k] = row


# The common types of both directions; DECIMAL(p <= 18) separately: Java (and we) store DECIMAL(10, 2) as INT64
# and DECIMAL(5, 2) as INT32, and Java 1.0 cannot read them as FIXED_LEN_BYTE_ARRAY (what we wrote before).
COMMON = [
    ["id", "INT", False],
    ["big", "BIGINT"],
    ["s", "STRING"],
    ["d", "DOUBLE"],
    ["dec20", "DECIMAL(20, 4)"],
    ["day", "DATE"],
    ["ts", "TIMESTAMP(6)"],
    ["ok", "BOOLEAN"],
    ["raw", "BYTES"],
]
SHORT_DECIMALS = [["dec10", "DECIMAL(10, 2)"], ["dec5", "DECIMAL(5, 2)"]]
EXTRA = [
    ["ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"],
    ["ts3", "TIMESTAMP(3)"],
    ["f", "FLOAT"],
    ["ti", "TINYINT"],
    ["si", "SMALLINT"],
    ["vc", "VARCHAR(10)"],
    ["bin2", "BINARY(2)"],
    ["arr", "ARRAY<STRING>"],
    ["m", "MAP<INT, STRING>"],
    ["r", "ROW<x INT, y DECIMAL(5, 1)>"],
]


def common_row(i: int, tag: str, *, dec10: bool = True, extra: bool = False) -> dict[str, Any]:
    """Deterministic values for row `i`; every 7th row (i % 7 == 3) is NULL in all nullable columns."""
    row: dict[str, Any] = {"id": i}
    if i % 7 != 3:
        row.update(
            {
                "big": (-1) ** i * i * 10**12,
                "s": f"{tag}-{i}-é✓",
                "d": i / 3 - 1.5,
                "dec20": Decimal(f"{i * 98765432109876}.{i * 37 % 10000:04d}") * (-1) ** i,
                "day": dt.date(2024, 2, 29) + dt.timedelta(days=37 * i - 400),
                "ts": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=3601 * i, microseconds=7 * i),
                "ok": i % 2 == 0,
                "raw": bytes([i % 256, 255 - i % 256, 0]),
            }
        )
        if dec10:
            row["dec10"] = Decimal(i * 137 - 500) / 100
            row["dec5"] = Decimal(i * 3 - 20) / 4
        if extra:
            row.update(
                {
                    "ltz": dt.datetime(2000, 1, 1, tzinfo=UTC) + dt.timedelta(days=i, microseconds=i),
                    "ts3": dt.datetime(1990, 6, 1, 12, 0, 0, (i * 1000) % 1_000_000),
                    "f": i + 0.25,
                    "ti": -i,
                    "si": 300 * i,
                    "vc": f"v{i}",
                    "bin2": bytes([i, i]),
                    "arr": [f"a{i}", None] if i % 2 else [],
                    "m": [(i, f"m{i}"), (-i - 1, None)],
                    # Never a non-NULL ROW of only NULLs: Java <= 1.0 reads it as NULL (apache/paimon#4785).
                    "r": {"x": i, "y": None} if i % 2 else {"x": None, "y": Decimal(i) / 10},
                }
            )
    return row


# ============================================================================== 1. Java writes, we read


def test_java_version(java: JavaOracle) -> None:
    found = java.versions()
    assert found["paimon"] == "1.0-SNAPSHOT", found
    assert java.jar.name == "paimon-python-java-bridge.jar"


def test_java_append_table_partitioned_and_bucketed(java: JavaOracle, warehouse: str) -> None:
    t = "db.append"
    columns = [*COMMON, *SHORT_DECIMALS, *EXTRA, ["part", "STRING"]]
    java.create(warehouse, t, columns, partition_keys=["part"], options={"bucket": 2, "bucket-key": "id"})
    c1 = [{**common_row(i, "c1", extra=True), "part": f"p{i % 2}"} for i in range(12)]
    c2 = [{**common_row(i, "c2", extra=True), "part": "p1"} for i in range(5, 9)] + [{"id": 99}]  # part NULL
    java.write(warehouse, t, c1)
    java.write(warehouse, t, c2)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), c1 + c2)
    assert_agree(_ours(warehouse, t, {"scan.snapshot-id": 1}), java.read(warehouse, t, {"scan.snapshot-id": 1}), c1)


def _java_dedup_history(
    java: JavaOracle, warehouse: str, t: str, key: Sequence[str], part: Any = None, dec10: bool = True
) -> dict[Any, dict[str, Any]]:
    """Four commits of inserts, -U/+U updates, -D deletes and plain upserts; returns the expected state."""

    def rows(ids: Iterable[int], tag: str) -> list[dict[str, Any]]:
        return [{**common_row(i, tag, dec10=dec10), **({"part": part(i)} if part else {})} for i in ids]

    state: dict[Any, dict[str, Any]] = {}
    commits = [
        (rows(range(20), "c1"), None),
        (rows([1, 1, 2, 2, 20, 21], "c2"), ["-U", "+U", "-U", "+U", "+I", "+I"]),
        (rows([3, 4, 20, 5], "c3"), ["-D", "-D", "-D", "+U"]),
        (rows(range(6, 10), "c4"), None),
    ]
    for commit, kinds in commits:
        java.write(warehouse, t, commit, kinds=kinds)
        _upsert(state, commit, kinds, key)
    return state


def test_java_pk_deduplicate(java: JavaOracle, warehouse: str, spark: Any) -> None:
    t = "db.dedup"
    java.create(warehouse, t, [*COMMON, *SHORT_DECIMALS], primary_keys=["id"], options={"bucket": 2})
    state = _java_dedup_history(java, warehouse, t, ("id",))
    by_java = java.read(warehouse, t)
    assert set(by_java.kinds) <= {"+I", "+U"}
    assert_agree(_ours(warehouse, t), by_java, state.values())
    assert_agree(ours_spark(spark, table_uri(warehouse, t)), by_java)


def test_java_partitioned_pk_table_with_buckets(java: JavaOracle, warehouse: str, spark: Any) -> None:
    t = "db.parts"
    java.create(
        warehouse,
        t,
        [*COMMON, *SHORT_DECIMALS, ["part", "STRING", False]],
        partition_keys=["part"],
        primary_keys=["part", "id"],
        options={"bucket": 3},
    )
    state = _java_dedup_history(java, warehouse, t, ("part", "id"), part=lambda i: f"2024-01-0{1 + i % 3}")
    assert {f["bucket"] for f in java.files(warehouse, t)} == {0, 1, 2}
    by_java = java.read(warehouse, t)
    assert_agree(_ours(warehouse, t), by_java, state.values())
    assert_agree(ours_spark(spark, table_uri(warehouse, t)), by_java)
    pruned = spark.read.format("paimon").load(table_uri(warehouse, t)).where("part = '2024-01-02'").toArrow()
    assert canonical_rows(pruned) == sorted_rows(r for r in by_java.rows if r["part"] == "2024-01-02")


def test_java_partial_update(java: JavaOracle, warehouse: str) -> None:
    t = "db.partial"
    java.create(
        warehouse,
        t,
        [["k", "INT", False], ["a", "STRING"], ["b", "INT"], ["c", "DECIMAL(20, 4)"]],
        primary_keys=["k"],
        options={"bucket": 1, "merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    )
    java.write(warehouse, t, [{"k": 1, "a": "a1"}, {"k": 2, "b": 20}, {"k": 3, "a": "gone", "b": 3}])
    java.write(warehouse, t, [{"k": 1, "b": 10}, {"k": 2, "a": "a2", "c": Decimal("2.5")}, {"k": 4, "c": Decimal(4)}])
    java.write(warehouse, t, [{"k": 1, "a": "a1-new"}, {"k": 3}], kinds=["+I", "-D"])
    expected = [
        {"k": 1, "a": "a1-new", "b": 10},
        {"k": 2, "a": "a2", "b": 20, "c": Decimal("2.5000")},
        {"k": 4, "c": Decimal("4.0000")},
    ]
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), expected)


def test_java_aggregation(java: JavaOracle, warehouse: str) -> None:
    t = "db.agg"
    java.create(
        warehouse,
        t,
        [["k", "STRING", False], ["total", "BIGINT"], ["amount", "DECIMAL(20, 4)"], ["hi", "INT"], ["last", "STRING"]],
        primary_keys=["k"],
        options={
            "bucket": 2,
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.amount.aggregate-function": "sum",
            "fields.hi.aggregate-function": "max",
        },
    )
    java.write(
        warehouse,
        t,
        [
            {"k": "a", "total": 1, "amount": Decimal("1.5"), "hi": 3, "last": "x"},
            {"k": "b", "total": 10, "hi": 1, "last": "y"},
        ],
    )
    java.write(
        warehouse,
        t,
        [
            {"k": "a", "total": 2, "amount": Decimal("0.25"), "hi": 1, "last": None},
            {"k": "c", "total": -5, "amount": Decimal("-1"), "hi": None, "last": "z"},
        ],
    )
    java.write(warehouse, t, [{"k": "a", "total": 4, "hi": 7, "last": "x2"}, {"k": "b", "total": None, "hi": 0}])
    expected = [
        {"k": "a", "total": 7, "amount": Decimal("1.7500"), "hi": 7, "last": "x2"},
        {"k": "b", "total": 10, "hi": 1, "last": "y"},
        {"k": "c", "total": -5, "amount": Decimal("-1.0000"), "last": "z"},
    ]
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), expected)


def test_java_first_row(java: JavaOracle, warehouse: str) -> None:
    t = "db.first"
    java.create(
        warehouse,
        t,
        [["k", "INT", False], ["v", "STRING"], ["day", "DATE"]],
        primary_keys=["k"],
        options={"bucket": 2, "merge-engine": "first-row"},
    )
    java.write(warehouse, t, [{"k": k, "v": f"first-{k}", "day": dt.date(2024, 1, k)} for k in (1, 2, 3)])
    java.write(warehouse, t, [{"k": k, "v": f"second-{k}"} for k in (2, 3, 4, 5)])
    java.write(warehouse, t, [{"k": k, "v": f"third-{k}"} for k in (1, 5, 6)])
    expected = [{"k": k, "v": f"first-{k}", "day": dt.date(2024, 1, k)} for k in (1, 2, 3)] + [
        {"k": 4, "v": "second-4"},
        {"k": 5, "v": "second-5"},
        {"k": 6, "v": "third-6"},
    ]
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), expected)


def test_java_schema_evolution(java: JavaOracle, warehouse: str) -> None:
    """Java adds and renames columns, and drops a column then adds one of the same name (a new field id):
    old files must not leak the dropped column's values into the new one."""
    t = "db.evolved"
    java.create(
        warehouse, t, [["id", "INT", False], ["a", "STRING"], ["b", "INT"]], primary_keys=["id"], options={"bucket": 1}
    )
    java.write(warehouse, t, [{"id": i, "a": f"a{i}", "b": i} for i in range(4)])
    java.evolve(
        warehouse,
        t,
        [
            {"op": "add_column", "name": "c", "type": "DECIMAL(20, 4)"},
            {"op": "rename_column", "name": "a", "new_name": "name"},
        ],
    )
    java.write(warehouse, t, [{"id": 1, "name": "one", "b": 10, "c": Decimal("1.5")}, {"id": 9, "name": "nine"}])
    java.evolve(warehouse, t, [{"op": "drop_column", "name": "b"}])
    java.evolve(warehouse, t, [{"op": "add_column", "name": "b", "type": "STRING", "first": True}])
    java.write(warehouse, t, [{"id": 2, "name": "two", "b": "new-b"}])
    expected = [
        {"id": 0, "name": "a0"},
        {"id": 1, "name": "one", "c": Decimal("1.5000")},
        {"id": 2, "name": "two", "b": "new-b"},
        {"id": 3, "name": "a3"},
        {"id": 9, "name": "nine"},
    ]
    by_java = java.read(warehouse, t)
    assert by_java.names == ["b", "id", "name", "c"]
    assert_agree(_ours(warehouse, t), by_java, expected)
    # time travel reads a snapshot with the schema it was written with
    first = {"scan.snapshot-id": 1}
    assert_agree(
        _ours(warehouse, t, first), java.read(warehouse, t, first), [{"id": i, "a": f"a{i}", "b": i} for i in range(4)]
    )


def test_java_tags(java: JavaOracle, warehouse: str) -> None:
    t = "db.tagged"
    java.create(warehouse, t, [["id", "INT", False], ["v", "STRING"]], primary_keys=["id"], options={"bucket": 1})
    java.write(warehouse, t, [{"id": i, "v": "v1"} for i in range(3)])
    assert java.tag(warehouse, t, "t1") == 1
    java.write(warehouse, t, [{"id": 1, "v": "v2"}, {"id": 2}], kinds=["+U", "-D"])
    java.write(warehouse, t, [{"id": 7, "v": "v3"}])
    assert java.tag(warehouse, t, "t2", snapshot_id=2) == 2
    assert sorted(tag.name for tag in Table.open(table_uri(warehouse, t)).tags.list()) == ["t1", "t2"]
    expected = {"t1": [{"id": i, "v": "v1"} for i in range(3)], "t2": [{"id": 0, "v": "v1"}, {"id": 1, "v": "v2"}]}
    for tag, rows in expected.items():
        options = {"scan.tag-name": tag}
        assert_agree(_ours(warehouse, t, options), java.read(warehouse, t, options), rows)


def _each_partition_alone(java: JavaOracle, warehouse: str, t: str) -> None:
    """Planning one partition (cold manifest cache) decodes only that partition's entries of Java's manifests:
    the partitions' plans must together hold exactly the files Java plans (Java's DELETEs cancel their ADDs)
    and read exactly Java's rows of each partition."""
    by_java = java.read(warehouse, t)
    table = Table.open(table_uri(warehouse, t))
    planned: list[str] = []
    for part in sorted({r["part"] for r in by_java.rows}):
        want = sorted_rows(r for r in by_java.rows if r["part"] == part)
        MANIFEST_CACHE.clear()
        plan = ScanPlanner(table.store, table.schema).plan(table.latest_snapshot(), [Leaf("part", "=", part)])
        planned += [f.file_name for s in plan.splits for f in s.files]
        MANIFEST_CACHE.clear()
        assert canonical_rows(table.scan(read_options={"scan.partitions": f"part={part}"}).to_arrow()) == want
        MANIFEST_CACHE.clear()
        assert canonical_rows(engine_read_arrow(table, predicate=[Leaf("part", "=", part)])) == want
    assert sorted(planned) == sorted(f["file"] for f in java.files(warehouse, t))


def test_java_full_compaction_then_more_writes(java: JavaOracle, warehouse: str) -> None:
    """Java's full compaction puts every file at the top level (deletes dropped); a later commit adds level-0
    files above them. We must read both states exactly as Java does."""
    t = "db.compacted"
    java.create(
        warehouse,
        t,
        [*COMMON, *SHORT_DECIMALS, ["part", "STRING", False]],
        partition_keys=["part"],
        primary_keys=["part", "id"],
        options={"bucket": 2},
    )
    state = _java_dedup_history(java, warehouse, t, ("part", "id"), part=lambda i: f"p{i % 2}")
    before = java.read(warehouse, t)
    java.compact(warehouse, t)
    levels = {f["level"] for f in java.files(warehouse, t)}
    assert levels == {5}, levels  # num-levels 5 + the level-0 = top level 5
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    _each_partition_alone(java, warehouse, t)  # the compaction's DELETEs cancel older ADDs
    assert sorted_rows(java.read(warehouse, t).rows) == sorted_rows(before.rows)

    more = [{**common_row(i, "c5"), "part": f"p{i % 2}"} for i in (0, 1, 30)]
    gone = [{"id": 10, "part": "p0"}, {"id": 11, "part": "p1"}]
    java.write(warehouse, t, more + gone, kinds=["+I"] * 3 + ["-D"] * 2)
    _upsert(state, more + gone, ["+I"] * 3 + ["-D"] * 2, ("part", "id"))
    assert {f["level"] for f in java.files(warehouse, t)} == {0, 5}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    _each_partition_alone(java, warehouse, t)


# ============================================================================== 2. we write, Java reads


def test_we_write_append_java_reads(java: JavaOracle, warehouse: str) -> None:
    dec10 = True
    t = "db.ours_append"
    columns = [*COMMON, *(SHORT_DECIMALS if dec10 else []), *EXTRA, ["part", "STRING"]]
    table = _create_ours(warehouse, t, columns, partition_keys=["part"], options={"bucket": 2, "bucket-key": "id"})
    commits = [
        [{**common_row(i, "c1", dec10=dec10, extra=True), "part": f"p{i % 3}"} for i in range(15)],
        [{**common_row(i, "c2", dec10=dec10, extra=True), "part": "p1"} for i in range(10, 14)] + [{"id": -1}],
        [{**common_row(i, "c3", dec10=dec10, extra=True), "part": "p9"} for i in range(3)],
    ]
    for commit in commits:
        _write_ours(table, commit)
    by_java = java.read(warehouse, t)
    assert_agree(_ours(warehouse, t), by_java, [r for c in commits for r in c])


def test_we_write_pk_java_reads_then_writes(java: JavaOracle, warehouse: str) -> None:
    """Java reads our partitioned, bucketed PK table (updates and deletes through ``rowkind.field``), then
    writes to it: its rows must land in the buckets we chose and win over ours (sequence numbers)."""
    dec10 = True
    t = "db.ours_pk"
    columns = [*COMMON, *(SHORT_DECIMALS if dec10 else []), ["part", "STRING", False], [RK, "STRING"]]
    table = _create_ours(
        warehouse,
        t,
        columns,
        partition_keys=["part"],
        primary_keys=["part", "id"],
        options={"bucket": 2, "rowkind.field": RK},
    )
    state: dict[Any, dict[str, Any]] = {}

    def rows(ids: Iterable[int], tag: str, kinds: Sequence[str]) -> list[dict[str, Any]]:
        return [{**common_row(i, tag, dec10=dec10), "part": f"p{i % 2}", RK: kind} for i, kind in zip(ids, kinds)]

    commits = [
        rows(range(16), "c1", ["+I"] * 16),
        rows([1, 1, 2, 3, 16], "c2", ["-U", "+U", "+U", "-D", "+I"]),
        rows([2, 4, 5, 17, 16], "c3", ["-D", "+I", "-D", "+I", "+U"]),
    ]
    for commit in commits:
        _write_ours(table, commit)
        _upsert(state, commit, [r[RK] for r in commit], ("part", "id"))
    by_java = java.read(warehouse, t)
    assert_agree(_ours(warehouse, t), by_java, state.values())

    # Java honours rowkind.field too: the row kinds travel in the _row_kind column
    by_java_commit = rows([0, 6, 7, 20], "java", ["+U", "-D", "+U", "+I"])
    java.write(warehouse, t, by_java_commit)
    _upsert(state, by_java_commit, [r[RK] for r in by_java_commit], ("part", "id"))
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())


def test_java_reads_after_our_automatic_expiration(java: JavaOracle, warehouse: str) -> None:
    """Our commits expire snapshots (``snapshot.num-retained.max`` = 2); Java reads the latest state and a tag
    whose snapshot expired, then commits (and expires) on top, and we read its result."""
    t = "db.ours_expired"
    columns = [["id", "INT", False], ["v", "STRING"]]
    options = {"bucket": 1, "snapshot.num-retained.max": 2, "snapshot.num-retained.min": 1}
    table = _create_ours(warehouse, t, columns, primary_keys=["id"], options=options)
    _write_ours(table, [{"id": i, "v": "v1"} for i in range(4)])
    table.tags.create("first")
    for n in range(2, 5):
        _write_ours(table, [{"id": 0, "v": f"v{n}"}, {"id": 10 + n, "v": "new"}])
    ids = table.store.snapshots.list_ids()
    assert len(ids) == 2 and ids[0] > 1  # the tagged snapshot itself expired
    state = [
        {"id": 0, "v": "v4"},
        *({"id": i, "v": "v1"} for i in range(1, 4)),
        *({"id": 10 + n, "v": "new"} for n in (2, 3, 4)),
    ]
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state)
    first = [{"id": i, "v": "v1"} for i in range(4)]
    assert_agree(
        _ours(warehouse, t, {"scan.tag-name": "first"}), java.read(warehouse, t, {"scan.tag-name": "first"}), first
    )
    java.write(warehouse, t, [{"id": 1, "v": "java"}])
    assert [s["id"] for s in java.snapshots(warehouse, t)][-1] == table.store.snapshots.latest_id()
    state[1] = {"id": 1, "v": "java"}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state)


def test_mixed_writers_on_a_java_table(java: JavaOracle, warehouse: str) -> None:
    """Java creates and writes a partitioned, bucketed PK table; we upsert into it; Java writes again. Both
    writers must agree on buckets and sequence numbers, so each key's newest write wins for both readers."""
    t = "db.mixed"
    java.create(
        warehouse,
        t,
        [*COMMON, ["part", "STRING", False]],
        partition_keys=["part"],
        primary_keys=["part", "id"],
        options={"bucket": 3},
    )
    part = "p{}".format
    state = _java_dedup_history(java, warehouse, t, ("part", "id"), part=lambda i: part(i % 2), dec10=False)
    ours_commit = [{**common_row(i, "ours", dec10=False), "part": part(i % 2)} for i in (0, 1, 5, 8, 33)]
    _write_ours(Table.open(table_uri(warehouse, t)), ours_commit)
    _upsert(state, ours_commit, key=("part", "id"))
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    java_commit = [{**common_row(i, "java2", dec10=False), "part": part(i % 2)} for i in (1, 33, 34)]
    java.write(warehouse, t, java_commit + [{"id": 8, "part": "p0"}], kinds=["+U", "+U", "+I", "-D"])
    _upsert(state, java_commit + [{"id": 8, "part": "p0"}], ["+U", "+U", "+I", "-D"], ("part", "id"))
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())


# ==================================================================== 3. we write, Java compacts, we read


def test_we_write_pk_java_compacts(java: JavaOracle, warehouse: str) -> None:
    dec10 = True  # DECIMAL(10, 2) and (5, 2): written as INT64/INT32 as Java writes them, so Java reads them
    t = "db.ours_compacted"
    columns = [*COMMON, *(SHORT_DECIMALS if dec10 else []), [RK, "STRING"]]
    table = _create_ours(warehouse, t, columns, primary_keys=["id"], options={"bucket": 2, "rowkind.field": RK})
    state: dict[Any, dict[str, Any]] = {}
    commits = [
        [{**common_row(i, "c1", dec10=dec10), RK: "+I"} for i in range(20)],
        [{**common_row(i, "c2", dec10=dec10), RK: k} for i, k in ((1, "+U"), (2, "-D"), (25, "+I"))],
        [{**common_row(i, "c3", dec10=dec10), RK: k} for i, k in ((1, "-D"), (3, "+U"), (4, "+I"))],
    ]
    for commit in commits:
        _write_ours(table, commit)
        _upsert(state, commit, [r[RK] for r in commit])
    before = canonical_rows(_ours(warehouse, t))
    assert {f["level"] for f in java.files(warehouse, t)} == {0}

    java.compact(warehouse, t)
    assert {f["level"] for f in java.files(warehouse, t)} == {5}
    assert canonical_rows(_ours(warehouse, t)) == before
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())

    # our next commit must sort above the compacted files (sequence numbers continue past Java's)
    after = [{**common_row(i, "c4", dec10=dec10), RK: k} for i, k in ((3, "+U"), (5, "-D"), (40, "+I"))]
    _write_ours(table, after)
    _upsert(state, after, [r[RK] for r in after])
    assert {f["level"] for f in java.files(warehouse, t)} == {0, 5}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())


# ============================================================= 3b. we compact, Java reads and writes on top


def test_we_compact_java_reads_and_continues(java: JavaOracle, warehouse: str) -> None:
    """Our COMPACT snapshots (universal to an intermediate level keeping a delete, then full to the max level
    dropping deletes) read the same in Java; Java's writer restores our levels (it refuses overlapping runs),
    writes on top and fully compacts our files; both read the same throughout."""
    t = "db.we_compact"
    columns = [*COMMON, *SHORT_DECIMALS, [RK, "STRING"]]
    table = _create_ours(
        warehouse,
        t,
        columns,
        primary_keys=["id"],
        options={"bucket": 1, "rowkind.field": RK, "write-only": "true", "target-file-size": "256 kb"},
    )
    state: dict[Any, dict[str, Any]] = {}

    def write(rows: list[dict[str, Any]]) -> None:
        _write_ours(table, rows)
        _upsert(state, rows, [r[RK] for r in rows])

    # A base much larger than the later commits (ids past 100 carry only the key: common_row's decimals
    # would overflow), so universal compaction leaves it alone.
    write([{**common_row(i, "base"), RK: "+I"} for i in range(90)] + [{"id": i, RK: "+I"} for i in range(100, 60000)])
    assert table.maintenance.compact(full=True)  # the base at level 5
    write([{**common_row(i, "del"), RK: "-D"} for i in (1, 2, 3)])
    for c in range(4):
        write([{**common_row(91 + c, f"c{c}"), RK: "+I"}, {**common_row(10 + c, f"u{c}"), RK: "+U"}])
    assert table.maintenance.compact(full=False)  # universal: the small runs go to level 4, the deletes kept
    assert {f["level"] for f in java.files(warehouse, t)} == {4, 5}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    assert table.maintenance.compact(full=True)
    assert {f["level"] for f in java.files(warehouse, t)} == {5}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())

    java_rows = [{**common_row(7, "java"), RK: "+U"}, {**common_row(98, "java"), RK: "+I"}]
    java.write(warehouse, t, java_rows, kinds=["+U", "+I"])
    _upsert(state, java_rows, ["+U", "+I"])
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    table.update_schema().set_options({"write-only": "false"}).commit()  # Java refuses to compact a write-only table
    java.compact(warehouse, t)
    assert {f["level"] for f in java.files(warehouse, t)} == {5}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())


def test_we_compact_append_java_reads(java: JavaOracle, warehouse: str) -> None:
    t = "db.we_compact_append"
    table = _create_ours(warehouse, t, COMMON, options={"bucket": 2, "bucket-key": "id", "write-only": "true"})
    rows: list[dict[str, Any]] = []
    for c in range(6):
        batch = [common_row(c * 10 + i, f"a{c}") for i in range(5)]
        _write_ours(table, batch)
        rows.extend(batch)
    assert table.maintenance.compact()
    assert {f["level"] for f in java.files(warehouse, t)} == {0}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), rows)


# ============================================================================== 4. deletion vectors


def _java_dv_table(java: JavaOracle, warehouse: str, t: str) -> dict[Any, dict[str, Any]]:
    """A deletion-vector table as Java writes it: two buckets, inserts, then updates and
    deletes. Java's writes compact level 0 at commit, so every file ends above level 0 and the superseded and
    deleted rows are positions in deletion vectors. Returns the expected state."""
    java.create(
        warehouse,
        t,
        [["id", "INT", False], ["v", "STRING"], ["n", "BIGINT"]],
        primary_keys=["id"],
        options={"bucket": 2, "deletion-vectors.enabled": "true"},
    )
    state: dict[Any, dict[str, Any]] = {}
    commits: list[tuple[list[dict[str, Any]], list[str]]] = [
        ([{"id": i, "v": "v1", "n": i} for i in range(300)], ["+I"] * 300),
        ([{"id": i, "v": "v2", "n": 10 * i} for i in range(0, 300, 3)], ["+U"] * 100),
        ([{"id": i} for i in range(0, 300, 7)], ["-D"] * 43),
    ]
    for rows, kinds in commits:
        java.write(warehouse, t, rows, kinds=kinds)
        _upsert(state, rows, kinds)
    java.compact(warehouse, t)  # full compaction: new files at the top level
    rows, kinds = [{"id": i, "v": "v4", "n": -i} for i in range(1, 300, 11)], ["+U"] * 28
    java.write(warehouse, t, rows, kinds=kinds)  # superseded rows in the compacted files become positions
    _upsert(state, rows, kinds)
    return state


def test_java_deletion_vector_table(java: JavaOracle, warehouse: str, spark: Any) -> None:
    """Java writes a deletion-vector table (updates, deletes, full compaction, more updates); we read exactly
    the rows Java reads, through the Python API and Spark, raw (no merge) with the positions dropped, also
    when statistics skip Parquet row groups of files that have deletion vectors."""
    t = "db.dv"
    state = _java_dv_table(java, warehouse, t)
    files = java.files(warehouse, t)
    assert any(f["deletion_file"] for f in files) and all(f["level"] > 0 for f in files), files
    by_java = java.read(warehouse, t)
    assert_agree(_ours(warehouse, t), by_java, state.values())
    assert_agree(ours_spark(spark, table_uri(warehouse, t)), by_java)
    table = Table.open(table_uri(warehouse, t))
    plan = table.scan().explain()
    assert plan.splits.raw_convertible == plan.splits.count == 2
    # Row-group skipping: Java writes one row group per small file, so rewrite each file (same rows, same
    # order, so the same positions) in row groups of 16 rows; then a filter skips groups and the positions
    # after the skipped ones must still line up.
    for e in table.store.live_entries(table.store.snapshots.latest()):
        path = f"{table.store.bucket_path(table.schema, (), e.bucket)}/{e.file.file_name}"
        pq.write_table(pq.read_table(path), path, row_group_size=16)
    pred = [Leaf("n", ">=", 1500)]
    job = engine_read_job(table, predicate=pred)
    got = job.to_arrow()
    assert job.metrics.row_groups_skipped > 0
    assert canonical_rows(got) == _full((r for r in state.values() if (r.get("n") or 0) >= 1500), by_java.names)
    assert canonical_rows(_ours(warehouse, t)) == _full(state.values(), by_java.names)
    # Scan.to_spark: the vectors applied to Spark's own Parquet read (_metadata.row_index anti-joined), also when
    # Spark's pushdown skips row groups before the deleted positions
    assert table.scan().explain().readers.python_splits == 0
    assert canonical_rows(table.scan().to_spark(spark).toArrow()) == _full(state.values(), by_java.names)
    jvm = table.scan("n >= 1500").to_spark(spark).toArrow()
    assert canonical_rows(jvm) == _full((r for r in state.values() if (r.get("n") or 0) >= 1500), by_java.names)


def test_java_deletion_vector_level0_is_invisible_until_compacted(java: JavaOracle, warehouse: str) -> None:
    """Level-0 files Java has not compacted yet (a write-only writer) are skipped by batch reads of a
    deletion-vector table, in Java and here; ``deletion-vectors.merge-on-read`` (newer Java; Java 1.0 ignores
    it) merges them, applying the deletion vectors of the files below; after Java compacts, both see them."""
    t = "db.dv0"
    state = _java_dv_table(java, warehouse, t)
    java.evolve(warehouse, t, [{"op": "set_option", "key": "write-only", "value": "true"}])
    rows = [{"id": i, "v": "v5", "n": 7} for i in range(0, 300, 5)] + [{"id": 1}, {"id": 400, "v": "new"}]
    kinds = ["+U"] * 60 + ["-D", "+I"]
    java.write(warehouse, t, rows, kinds=kinds)
    after = dict(state)
    _upsert(after, rows, kinds)
    table = Table.open(table_uri(warehouse, t))
    assert 0 in {e.file.level for e in table.store.live_entries(table.store.snapshots.latest())}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())

    java.evolve(warehouse, t, [{"op": "set_option", "key": "deletion-vectors.merge-on-read", "value": "true"}])
    assert canonical_rows(_ours(warehouse, t)) == _full(after.values(), ["id", "v", "n"])
    java.evolve(
        warehouse,
        t,
        [
            {"op": "remove_option", "key": "deletion-vectors.merge-on-read"},
            {"op": "remove_option", "key": "write-only"},
        ],
    )
    java.compact(warehouse, t)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), after.values())


def test_we_compact_a_java_deletion_vector_table(java: JavaOracle, warehouse: str) -> None:
    """Java's deletion-vector table with level-0 files on top (a write-only writer): our full compaction reads
    every file with its vectors applied, writes the max level and drops the bucket's vectors from the index
    manifest (copied in Java's own Avro schema); more level-0 files, and our partial compaction moves them up
    with lookups in Java's files. Java reads the same rows throughout, writes, and compacts on top."""
    t = "db.dvc"
    state = _java_dv_table(java, warehouse, t)
    java.evolve(warehouse, t, [{"op": "set_option", "key": "write-only", "value": "true"}])
    rows = [{"id": i, "v": "v5", "n": 7} for i in range(0, 300, 5)] + [{"id": 2}, {"id": 400, "v": "new"}]
    kinds = ["+U"] * 60 + ["-D", "+I"]
    java.write(warehouse, t, rows, kinds=kinds)
    _upsert(state, rows, kinds)
    table = Table.open(table_uri(warehouse, t))
    result = table.maintenance.compact(full=True)
    assert result and result.files_after >= 1
    files = java.files(warehouse, t)
    assert {f["level"] for f in files} == {5} and not any(f["deletion_file"] for f in files), files
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    upd = [{"id": i, "v": "v7", "n": 8} for i in range(3, 300, 17)]
    java.write(warehouse, t, upd, kinds=["+U"] * len(upd))  # write-only: level 0 again
    _upsert(state, upd, ["+U"] * len(upd))
    assert table.maintenance.compact()  # partial: Java's universal pick, every level-0 file going up
    assert 0 not in {f["level"] for f in java.files(warehouse, t)}
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())

    java.evolve(warehouse, t, [{"op": "remove_option", "key": "write-only"}])
    more = [{"id": i, "v": "v6", "n": 1} for i in range(1, 300, 13)]
    java.write(warehouse, t, more, kinds=["+U"] * len(more))
    _upsert(state, more, ["+U"] * len(more))
    java.compact(warehouse, t)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())


def test_java_deletion_vector_table_in_orc(java: JavaOracle, warehouse: str, spark: Any) -> None:
    """ORC data files with deletion vectors: positions count rows across the file's stripes. ``Scan.to_spark``
    leaves ORC files with vectors to the Python source (Spark's ``_metadata.row_index`` is Parquet's)."""
    t = "db.dvorc"
    java.create(
        warehouse,
        t,
        [["id", "INT", False], ["v", "STRING"]],
        primary_keys=["id"],
        options={"bucket": 1, "deletion-vectors.enabled": "true", "file.format": "orc"},
    )
    state: dict[Any, dict[str, Any]] = {}
    for rows, kinds in (
        ([{"id": i, "v": "a"} for i in range(200)], ["+I"] * 200),
        ([{"id": i, "v": "b"} for i in range(0, 200, 3)], ["+U"] * 67),
        ([{"id": i} for i in range(0, 200, 5)], ["-D"] * 40),
    ):
        java.write(warehouse, t, rows, kinds=kinds)
        _upsert(state, rows, kinds)
    assert any(f["deletion_file"] for f in java.files(warehouse, t))
    by_java = java.read(warehouse, t)
    assert_agree(_ours(warehouse, t), by_java, state.values())
    table = Table.open(table_uri(warehouse, t))
    assert table.scan().explain().readers.python_reasons == {"deletion vectors on ORC files": 1}
    assert canonical_rows(table.scan().to_spark(spark).toArrow()) == _full(state.values(), by_java.names)


def test_we_append_to_a_java_deletion_vector_table(java: JavaOracle, warehouse: str) -> None:
    """Our writes to Java's deletion-vector table are compacted at commit as Java's are: visible at once to
    Java and us, our sequence numbers continue past Java's so our updates win, and Java keeps compacting.
    An overwrite drops the overwritten buckets' vectors with their files."""
    t = "db.dvw"
    state = _java_dv_table(java, warehouse, t)
    table = Table.open(table_uri(warehouse, t))
    rows = [{"id": i, "v": "ours", "n": 0} for i in range(2, 300, 4)] + [{"id": 500, "v": "new", "n": 1}]
    _write_ours(table, rows)
    _upsert(state, rows)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    java.compact(warehouse, t)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    table.write_arrow(pa.Table.from_pylist(rows[:5], schema=table.schema.arrow_schema()), mode="overwrite")
    assert not any(f["deletion_file"] for f in java.files(warehouse, t))
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), rows[:5])


def test_our_deletion_vector_table_java_reads_and_continues(java: JavaOracle, warehouse: str, spark: Any) -> None:
    """Three upsert writes (and a delete) into a deletion-vector table we create: each is visible at once to us,
    Spark and Java, as APPEND + COMPACT snapshots like Java's own writes; every file is above level 0 and the
    superseded rows are positions in our vectors, which Java reads. Java then keeps writing and compacting
    our table, and we read Java's files and vectors."""
    t = "db.dv_ours"
    columns = [["id", "INT", False], ["v", "STRING"], ["n", "BIGINT"], [RK, "STRING"]]
    table = _create_ours(
        warehouse,
        t,
        columns,
        primary_keys=["id"],
        options={"bucket": 2, "deletion-vectors.enabled": "true", "rowkind.field": RK},
    )
    state: dict[Any, dict[str, Any]] = {}
    commits = [
        [{"id": i, "v": "a", "n": i, RK: "+I"} for i in range(200)],
        [{"id": i, "v": "b", "n": -i, RK: "+U"} for i in range(0, 200, 3)],
        [{"id": i, "v": None, "n": None, RK: "-D"} for i in range(0, 200, 7)]
        + [{"id": 300, "v": "c", "n": 3, RK: "+I"}],
    ]
    for commit in commits:
        _write_ours(table, commit)
        _upsert(state, commit, [r[RK] for r in commit])
        assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "COMPACT"] * 3
    files = java.files(warehouse, t)
    assert 0 not in {f["level"] for f in files} and any(f["deletion_file"] for f in files), files
    assert_agree(ours_spark(spark, table_uri(warehouse, t)), java.read(warehouse, t))

    more = [{"id": i, "v": "java", "n": 1, RK: "+U"} for i in range(1, 200, 5)]
    java.write(warehouse, t, more, kinds=["+U"] * len(more))
    _upsert(state, more)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    java.compact(warehouse, t)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())
    after = [{"id": i, "v": "again", "n": 2, RK: "+U"} for i in range(2, 200, 9)]
    _write_ours(table, after)
    _upsert(state, after)
    assert_agree(_ours(warehouse, t), java.read(warehouse, t), state.values())


def test_java_reads_our_chain_compacted_day(java: JavaOracle, warehouse: str) -> None:
    """``t.chain.compact`` writes a day into the snapshot branch as one top-level run (a full compaction's
    output, where Java's procedure writes level 0): Java reads that branch exactly as we do, before and after a
    level-0 write over the run."""
    table = Catalog(warehouse).create_chain_table(
        "db.chain",
        "k bigint, s bigint, v string, dt string",
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options={
            "bucket": "2",
            "bucket-key": "k",
            "sequence.field": "s",
            "partition.timestamp-pattern": "$dt",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )

    def put(branch: str, rows: list[tuple[int, int, str, str]]) -> None:
        data = pa.table({n: [r[i] for r in rows] for i, n in enumerate(["k", "s", "v", "dt"])})
        table.on_branch(branch).write_arrow(data.cast(table.schema.arrow_schema()))

    put("snapshot", [(1, 1, "s", "20250810"), (2, 1, "s", "20250810"), (3, 1, "s", "20250810")])
    put("delta", [(2, 2, "d11", "20250811"), (4, 1, "d11", "20250811")])
    put("delta", [(1, 3, "d12", "20250812"), (5, 1, "d12", "20250812")])
    assert table.chain.compact("dt=20250812")
    branch = "db.chain$branch_snapshot"
    top = table.schema.core_options.num_levels - 1  # 5, as Java's full compaction (see above)
    assert {f["level"] for f in java.files(warehouse, branch)} == {0, top}  # day 10 as written, day 12 on top
    ours = table.on_branch("snapshot").scan().to_arrow()
    assert_agree(ours, java.read(warehouse, branch))
    assert {r["k"]: r["v"] for r in ours.to_pylist() if r["dt"] == "20250812"} == {
        1: "d12",
        2: "d11",
        3: "s",
        4: "d11",
        5: "d12",
    }
    put("snapshot", [(2, 9, "fix", "20250812")])  # level 0 over the run, newer by the sequence field
    ours = table.on_branch("snapshot").scan().to_arrow()
    assert_agree(ours, java.read(warehouse, branch))
    assert {r["k"]: r["v"] for r in ours.to_pylist() if r["dt"] == "20250812"}[2] == "fix"


# =========================================================================== the harness itself


def test_missing_java_fails_with_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(java_oracle.JavaUnavailableError, match="openjdk-17-jdk-headless"):
        java_oracle.java_tools()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(java_oracle.JavaUnavailableError, match="java and javac are not on PATH"):
        java_oracle.java_tools()


def test_missing_jar_fails_with_the_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(java_oracle.JAR_ENV, str(tmp_path / "missing.jar"))
    with pytest.raises(java_oracle.JavaUnavailableError, match="tests/oracle/requirements.txt"):
        java_oracle.bridge_jar()


# ================================================================= 5. incremental reads between two tags


def test_incremental_between_tags_diffs_the_tags_as_java_does(java: JavaOracle, warehouse: str) -> None:
    """``incremental-between = 't1,t2'`` of two tags is Java's diff of the tags (not the snapshots between):
    keys new or changed (a row rewritten with the same values is not a change), deleted keys absent, whatever
    compaction ran in between. Java writes one table, we write the other; both readers agree on both."""
    cols = [["id", "INT", False], ["v", "STRING"], ["n", "BIGINT"]]
    java.create(warehouse, "db.jdiff", cols, primary_keys=["id"], options={"bucket": 2})
    java.write(warehouse, "db.jdiff", [{"id": i, "v": f"a{i}", "n": i} for i in range(6)])
    java.tag(warehouse, "db.jdiff", "t1")
    java.write(warehouse, "db.jdiff", [{"id": 1, "v": "b1", "n": 1}, {"id": 2, "v": "a2", "n": 2}])
    java.write(warehouse, "db.jdiff", [{"id": 3, "v": "a3", "n": 3}, {"id": 9, "v": "new", "n": 9}])
    java.write(warehouse, "db.jdiff", [{"id": 4}], kinds=["-D"])
    java.compact(warehouse, "db.jdiff")
    java.write(warehouse, "db.jdiff", [{"id": 5, "v": "b5", "n": 50}])
    java.tag(warehouse, "db.jdiff", "t2")

    t = _create_ours(warehouse, "db.odiff", cols, primary_keys=["id"], options={"bucket": "2"})
    _write_ours(t, [{"id": i, "v": f"a{i}", "n": i} for i in range(6)])
    t.tags.create("t1")
    _write_ours(t, [{"id": 1, "v": "b1", "n": 1}, {"id": 2, "v": "a2", "n": 2}])
    _write_ours(t, [{"id": 3, "v": "a3", "n": 3}, {"id": 9, "v": "new", "n": 9}])
    t.delete("id = 4")
    t.maintenance.compact(full=True)
    _write_ours(t, [{"id": 5, "v": "b5", "n": 50}])
    t.tags.create("t2")

    # A deletion-vector table of ours: Java compares only the files each side alone holds, and a vector is no
    # file change, so the unchanged rewrite of 2 (in a new file; its old version in a shared one) is a row too.
    dv = _create_ours(
        warehouse, "db.dvdiff", cols, primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true"}
    )
    _write_ours(dv, [{"id": i, "v": f"a{i}", "n": i} for i in range(6)])
    dv.tags.create("t1")
    _write_ours(dv, [{"id": 1, "v": "b1", "n": 1}, {"id": 2, "v": "a2", "n": 2}])
    dv.delete("id = 4")
    dv.tags.create("t2")
    opts = {"incremental-between": "t1,t2"}
    rewritten = [{"id": 1, "v": "b1", "n": 1}, {"id": 2, "v": "a2", "n": 2}]
    assert_agree(_ours(warehouse, "db.dvdiff", opts), java.read(warehouse, "db.dvdiff", opts), rewritten)

    # An append table: the rows of the files only t2 holds, so the rows a copy-on-write delete rewrote count too.
    app = _create_ours(warehouse, "db.appdiff", cols)
    _write_ours(app, [{"id": i, "v": f"a{i}", "n": i} for i in range(3)])
    app.tags.create("t1")
    _write_ours(app, [{"id": 7, "v": "a7", "n": 7}])
    app.delete("id = 2")
    app.tags.create("t2")
    kept = [{"id": i, "v": f"a{i}", "n": i} for i in (0, 1, 7)]
    assert_agree(_ours(warehouse, "db.appdiff", opts), java.read(warehouse, "db.appdiff", opts), kept)

    changed = [{"id": 1, "v": "b1", "n": 1}, {"id": 5, "v": "b5", "n": 50}, {"id": 9, "v": "new", "n": 9}]
    for name in ("db.jdiff", "db.odiff"):
        opts = {"incremental-between": "t1,t2"}
        assert_agree(_ours(warehouse, name, opts), java.read(warehouse, name, opts), changed)
        # Snapshot ids with Java's default scan mode read the changed files, here as in Java.
        last = java.snapshots(warehouse, name)[-1]["id"]
        delta = {"incremental-between": f"{last - 1},{last}"}
        assert_agree(_ours(warehouse, name, delta), java.read(warehouse, name, delta), changed[1:2])
