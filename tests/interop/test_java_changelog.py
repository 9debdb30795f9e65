"""Changelog producers against Java Paimon 1.0: the same inputs written by us and by Java into twin tables give
the same changelog (Java's streaming read of both, row kinds included, and the snapshots' changelog counts)."""

from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from tests.oracle.java_oracle import JavaOracle

COLUMNS = [["id", "BIGINT", False], ["v", "STRING"], ["_rk", "STRING"]]
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("_rk", pa.string())])
FROM_FIRST = {"scan.mode": "from-snapshot", "scan.snapshot-id": "1"}


@pytest.fixture(scope="module")
def java(oracle_python: str) -> Iterator[JavaOracle]:
    with JavaOracle() as oracle:
        yield oracle


def _twins(java: JavaOracle, warehouse: str, options: dict[str, str]) -> Table:
    """Our table db.t and Java's db.j with the same schema and options (``_rk`` holds each row's kind)."""
    opts = {"bucket": "1", "rowkind.field": "_rk", **options}
    java.create(warehouse, "db.j", COLUMNS, primary_keys=["id"], options=opts)
    return Catalog(warehouse).create_table("db.t", SCHEMA, primary_keys=["id"], options=opts)


def _write_both(
    java: JavaOracle, warehouse: str, ours: Table, rows: Sequence[tuple[Any, ...]], schema: pa.Schema = SCHEMA
) -> None:
    """One commit of the same `rows` (tuples in `schema`'s column order) into our db.t and Java's db.j. Java
    writes row kinds natively, so a ``_rk`` column (the twins' ``rowkind.field``) also goes to it as the kinds."""
    ours.write_arrow(pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema))
    kinds = [r[schema.names.index("_rk")] for r in rows] if "_rk" in schema.names else None
    java.write(warehouse, "db.j", [list(r) for r in rows], kinds=kinds)


def _changelog(java: JavaOracle, warehouse: str, identifier: str) -> list[tuple[Any, ...]]:
    read = java.stream(warehouse, identifier, FROM_FIRST)
    return [(k, r["id"], r["v"]) for k, r in zip(read.kinds, read.rows)]


def _our_stream(warehouse: str, identifier: str) -> list[tuple[Any, ...]]:
    """Our stream of the table (read.changelog), from its first snapshot: the same rows as Java's."""
    table = Catalog(warehouse).get_table(identifier)
    job = StreamReadJob(table.store, {"path": table.store.table_path, "read.changelog": "true", **FROM_FIRST})
    splits, _ = job.next_batch(job.initial_offset())
    ctx = job.context()
    return [tuple(r.values())[:3] for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]


def _changelog_counts(table_dir: str) -> list[tuple[str, Any]]:
    from pathlib import Path

    out = []
    for path in sorted(Path(table_dir, "snapshot").glob("snapshot-*"), key=lambda p: int(p.name.split("-")[1])):
        snap = json.loads(path.read_text())
        # Java 1.0 writes 0 where later versions (and we) leave the count out: no changelog.
        out.append((snap["commitKind"], snap.get("changelogRecordCount") or 0))
    return out


INPUT_ROWS = [
    [(1, "a", "+I"), (2, "b", "+I"), (1, "c", "+U")],
    [(2, "b", "-D"), (1, "c", "-U"), (3, "x", "+I")],
]


def test_input_producer_changelog_equals_javas(java: JavaOracle, warehouse: str) -> None:
    ours = _twins(java, warehouse, {"changelog-producer": "input"})
    for rows in INPUT_ROWS:
        _write_both(java, warehouse, ours, rows)
    expected = _changelog(java, warehouse, "db.j")
    assert expected == [
        ("+I", 1, "a"),
        ("+U", 1, "c"),
        ("+I", 2, "b"),
        ("-U", 1, "c"),
        ("-D", 2, "b"),
        ("+I", 3, "x"),
    ]
    assert _changelog(java, warehouse, "db.t") == expected
    assert _our_stream(warehouse, "db.j") == _our_stream(warehouse, "db.t") == expected
    assert (
        _changelog_counts(f"{warehouse}/db.db/t")
        == _changelog_counts(f"{warehouse}/db.db/j")
        == [
            ("APPEND", 3),
            ("APPEND", 3),
        ]
    )
    names = [p.split("/")[-1] for p in ours.store.fileio.list_names(f"{ours.store.table_path}/bucket-0")]
    assert sum(n.startswith("changelog-") and n.endswith(".parquet") for n in names) == 2


FULL_ROWS = [
    [(1, "a", "+I"), (2, "b", "+I"), (3, "c", "+I")],
    [(1, "a2", "+U"), (2, "b", "-D"), (4, "d", "+I"), (3, "c", "+I"), (5, "e", "+I"), (5, "e", "-D")],
]


@pytest.mark.parametrize("dedup", [False, True])
def test_full_compaction_changelog_equals_javas(java: JavaOracle, warehouse: str, dedup: bool) -> None:
    options = {"changelog-producer": "full-compaction"}
    if dedup:
        options["changelog-producer.row-deduplicate"] = "true"
    ours = _twins(java, warehouse, options)
    for rows in FULL_ROWS:
        _write_both(java, warehouse, ours, rows)
        ours.maintenance.compact(full=True)
        java.compact(warehouse, "db.j")
    expected = _changelog(java, warehouse, "db.j")
    updated_3 = [] if dedup else [("-U", 3, "c"), ("+U", 3, "c")]
    assert expected == [
        ("+I", 1, "a"),
        ("+I", 2, "b"),
        ("+I", 3, "c"),
        ("-U", 1, "a"),
        ("+U", 1, "a2"),
        ("-D", 2, "b"),
        *updated_3,
        ("+I", 4, "d"),
    ]
    assert _changelog(java, warehouse, "db.t") == expected
    assert _our_stream(warehouse, "db.j") == _our_stream(warehouse, "db.t") == expected
    assert _changelog_counts(f"{warehouse}/db.db/t") == _changelog_counts(f"{warehouse}/db.db/j")


def test_full_compaction_changelog_of_an_aggregation_table_equals_javas(java: JavaOracle, warehouse: str) -> None:
    """The changelog carries merged rows (the sum), not the written increments."""
    opts = {
        "bucket": "1",
        "changelog-producer": "full-compaction",
        "merge-engine": "aggregation",
        "fields.n.aggregate-function": "sum",
    }
    java.create(warehouse, "db.j", [["id", "BIGINT", False], ["n", "BIGINT"]], primary_keys=["id"], options=opts)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int64())])
    ours = Catalog(warehouse).create_table("db.t", schema, primary_keys=["id"], options=opts)
    for rows in ([(1, 5), (2, 1)], [(1, 3), (3, 7)]):
        _write_both(java, warehouse, ours, rows, schema)
        ours.maintenance.compact(full=True)
        java.compact(warehouse, "db.j")
    expected = java.stream(warehouse, "db.j", FROM_FIRST)
    changes = [(k, r["id"], r["n"]) for k, r in zip(expected.kinds, expected.rows)]
    assert changes == [("+I", 1, 5), ("+I", 2, 1), ("-U", 1, 5), ("+U", 1, 8), ("+I", 3, 7)]
    read = java.stream(warehouse, "db.t", FROM_FIRST)
    assert [(k, r["id"], r["n"]) for k, r in zip(read.kinds, read.rows)] == changes


LOOKUP_COLUMNS = [["id", "BIGINT", False], ["v", "STRING"], ["n", "BIGINT"]]
LOOKUP_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), ("n", pa.int64())])
LOOKUP_ROWS = [  # a big first file, so later compactions stop below it and look keys up in it
    [(1, "a", 1), (2, "b", 2), *((i, "z" * 40, i) for i in range(10, 400))],
    [(1, None, 5), (3, "c", 3)],
    [(1, "a3", None), (2, "b", 2), (4, "d", 4)],
]
LOOKUP_CASES = {
    "deduplicate": {},
    "deduplicate-dv": {"deletion-vectors.enabled": "true"},
    "row-deduplicate": {"changelog-producer.row-deduplicate": "true"},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation-dv": {
        "merge-engine": "aggregation",
        "fields.n.aggregate-function": "sum",
        "deletion-vectors.enabled": "true",
    },
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
    "partial-update-sequence-field": {"merge-engine": "partial-update", "sequence.field": "n"},
}

_DEDUP = [
    ("+I", 1, "a", 1),
    ("+I", 2, "b", 2),
    ("-U", 1, "a", 1),
    ("+U", 1, None, 5),
    ("+I", 3, "c", 3),
    ("-U", 1, None, 5),
    ("+U", 1, "a3", None),
    ("-U", 2, "b", 2),
    ("+U", 2, "b", 2),
    ("+I", 4, "d", 4),
]
_AGG = [
    ("+I", 1, "a", 1),
    ("+I", 2, "b", 2),
    ("-U", 1, "a", 1),
    ("+U", 1, "a", 6),
    ("+I", 3, "c", 3),
    ("-U", 1, "a", 6),
    ("+U", 1, "a3", 6),
    ("-U", 2, "b", 2),
    ("+U", 2, "b", 4),
    ("+I", 4, "d", 4),
]
#: What Java 1.0 produced (the keys below 10), asserted so that a change on either side shows.
LOOKUP_CHANGES = {
    "deduplicate": _DEDUP,
    "deduplicate-dv": _DEDUP,
    "row-deduplicate": [c for c in _DEDUP if c[1] != 2 or c[0] == "+I"],
    "partial-update": [
        ("+I", 1, "a", 1),
        ("+I", 2, "b", 2),
        ("-U", 1, "a", 1),
        ("+U", 1, "a", 5),
        ("+I", 3, "c", 3),
        ("-U", 1, "a", 5),
        ("+U", 1, "a3", 5),
        ("-U", 2, "b", 2),
        ("+U", 2, "b", 2),
        ("+I", 4, "d", 4),
    ],
    "aggregation": _AGG,
    "aggregation-dv": _AGG,
    "first-row": [("+I", 1, "a", 1), ("+I", 2, "b", 2), ("+I", 3, "c", 3), ("+I", 4, "d", 4)],
    # A NULL sequence field orders first: the third write's row for key 1 loses to the stored one.
    "partial-update-sequence-field": [
        ("+I", 1, "a", 1),
        ("+I", 2, "b", 2),
        ("-U", 1, "a", 1),
        ("+U", 1, "a", 5),
        ("+I", 3, "c", 3),
        ("-U", 1, "a", 5),
        ("+U", 1, "a", 5),
        ("-U", 2, "b", 2),
        ("+U", 2, "b", 2),
        ("+I", 4, "d", 4),
    ],
}


@pytest.mark.parametrize("case", sorted(LOOKUP_CASES))
def test_lookup_changelog_equals_javas(java: JavaOracle, warehouse: str, case: str) -> None:
    """Each write's lookup compaction (ours after the commit, Java's before it) produces the same changelog:
    before-images looked up in the higher levels, merged after-images, per merge engine."""
    opts = {"bucket": "1", "changelog-producer": "lookup", **LOOKUP_CASES[case]}
    java.create(warehouse, "db.j", LOOKUP_COLUMNS, primary_keys=["id"], options=opts)
    ours = Catalog(warehouse).create_table("db.t", LOOKUP_SCHEMA, primary_keys=["id"], options=opts)
    for rows in LOOKUP_ROWS:
        _write_both(java, warehouse, ours, rows, LOOKUP_SCHEMA)
        state = sorted(java.read(warehouse, "db.j").rows, key=lambda r: r["id"])
        assert sorted(ours.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == state  # one merged state
    expected = java.stream(warehouse, "db.j", FROM_FIRST)
    changes = [(k, r["id"], r["v"], r["n"]) for k, r in zip(expected.kinds, expected.rows)]
    read = java.stream(warehouse, "db.t", FROM_FIRST)
    assert [(k, r["id"], r["v"], r["n"]) for k, r in zip(read.kinds, read.rows)] == changes
    assert sorted(java.read(warehouse, "db.t").rows, key=lambda r: r["id"]) == state
    assert [c for c in changes if c[1] < 10] == LOOKUP_CHANGES[case]


DECOUPLED = {
    "bucket": "1",
    "changelog-producer": "lookup",
    "snapshot.num-retained.min": "1",
    "snapshot.num-retained.max": "2",
    "snapshot.time-retained": "1 ms",
    "changelog.num-retained.max": "50",
    "changelog.time-retained": "1 d",
}


def test_decoupled_changelog_is_javas(java: JavaOracle, warehouse: str) -> None:
    """With a changelog retention longer than the snapshots', our expiration keeps the expired snapshots'
    changelog as Java's does (changelog/changelog-N): Java streams it from the first snapshot, and our
    maintenance copes with Java's long-lived changelog (whose data manifest lists Java deleted)."""
    java.create(warehouse, "db.j", LOOKUP_COLUMNS, primary_keys=["id"], options=DECOUPLED)
    ours = Catalog(warehouse).create_table("db.t", LOOKUP_SCHEMA, primary_keys=["id"], options=DECOUPLED)
    for rows in LOOKUP_ROWS[1:]:
        _write_both(java, warehouse, ours, rows, LOOKUP_SCHEMA)
    for name in ("t", "j"):
        assert any(
            n.startswith("changelog-") for n in ours.store.fileio.list_names(f"{warehouse}/db.db/{name}/changelog")
        )
    expected = java.stream(warehouse, "db.j", FROM_FIRST)
    changes = [(k, r["id"], r["v"], r["n"]) for k, r in zip(expected.kinds, expected.rows)]
    assert changes[:2] == [("+I", 1, None, 5), ("+I", 3, "c", 3)]
    read = java.stream(warehouse, "db.t", FROM_FIRST)
    assert [(k, r["id"], r["v"], r["n"]) for k, r in zip(read.kinds, read.rows)] == changes
    theirs = Catalog(warehouse).get_table("db.j")
    assert _our_stream_rows(warehouse, "db.j") == _our_stream_rows(warehouse, "db.t")
    theirs.write_arrow(pa.Table.from_pylist([{"id": 9, "v": "z", "n": 9}], schema=LOOKUP_SCHEMA))
    theirs.maintenance.remove_orphan_files(older_than=2**50)
    assert sorted(r["id"] for r in theirs.scan().to_arrow().to_pylist()) == [1, 2, 3, 4, 9]


def _our_stream_rows(warehouse: str, identifier: str) -> list[tuple[Any, ...]]:
    table = Catalog(warehouse).get_table(identifier)
    job = StreamReadJob(table.store, {"path": table.store.table_path, "read.changelog": "true", **FROM_FIRST})
    splits, _ = job.next_batch(job.initial_offset())
    ctx = job.context()
    return [tuple(r.values()) for s in splits for b in read_stream_split(ctx, s) for r in b.to_pylist()]


def test_force_lookup_is_javas(java: JavaOracle, warehouse: str) -> None:
    """``force-lookup`` without a changelog producer: Java and we compact level 0 up after every write (no level-0
    file stays), merging each key with its newest older record; the tables read the same in Java and no
    changelog is produced."""
    opts = {"bucket": "1", "force-lookup": "true", **LOOKUP_CASES["aggregation"]}
    java.create(warehouse, "db.j", LOOKUP_COLUMNS, primary_keys=["id"], options=opts)
    ours = Catalog(warehouse).create_table("db.t", LOOKUP_SCHEMA, primary_keys=["id"], options=opts)
    for rows in LOOKUP_ROWS:
        _write_both(java, warehouse, ours, rows, LOOKUP_SCHEMA)
    state = sorted(java.read(warehouse, "db.j").rows, key=lambda r: r["id"])
    assert [(r["id"], r["v"], r["n"]) for r in state[:4]] == [(1, "a3", 6), (2, "b", 4), (3, "c", 3), (4, "d", 4)]
    assert sorted(ours.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == state
    assert sorted(java.read(warehouse, "db.t").rows, key=lambda r: r["id"]) == state
    for name in ("t", "j"):
        assert 0 not in [f["level"] for f in java.files(warehouse, f"db.{name}")], name
    assert _changelog_counts(f"{warehouse}/db.db/t") == [("APPEND", 0), ("COMPACT", 0)] * len(LOOKUP_ROWS)
