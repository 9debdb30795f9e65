"""They write, we read: tables written by pypaimon (and pypaimon-rust) must read through our Spark source
and through `t.scan().to_arrow()` exactly as the oracles themselves read them.

All tables are built, tagged, branched, evolved and read by the oracles in ONE oracle process (the
module fixture); each test then reads one table (or one version of it) our two ways and compares it to
both oracles' reads, which must also agree with each other. A few hand-written expectations keep the
comparisons from being vacuous (an empty table equals an empty table).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Table
from pyspark_paimon.planner.predicate import Leaf
from tests.engine_read import read_arrow as engine_read_arrow
from tests.interop.helpers import (
    OracleBatch,
    assert_oracles_agree,
    assert_same_table,
    ours_arrow,
    ours_spark,
    rows_of,
    table_uri,
)
from tests.interop.helpers import (
    sorted_rows as _sorted,
)

try:
    from tests import oracle
except ImportError:  # pragma: no cover
    import oracle  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

RK = "_row_kind"


@dataclass(frozen=True)
class Case:
    """One read to compare: the oracles read `identifier` (``db.t`` or ``db.t$branch_b``) with `options`;
    we read `our_identifier` (default: the same) with `our_options` (default: `options`), through
    `t.scan().to_arrow()` and, for `SPARK_CASES`, through Spark. `impls`: the oracles that can read it."""

    identifier: str
    options: dict[str, Any] = field(default_factory=dict)
    our_identifier: str | None = None
    our_options: dict[str, Any] | None = None
    impls: tuple[str, ...] = ("pypaimon", "rust")


# ------------------------------------------------------------------------------------------- the tables


def _pk_commits() -> list[oracle.Commit]:
    """4 commits on a partitioned PK table: inserts, -U/+U updates, -D deletes + inserts, plain upserts."""
    first = [[i, "2024-01-0%d" % (1 + i % 3), f"name{i}", str(Decimal(i) / 4)] for i in range(24)]
    return [
        {"rows": first},
        {
            "rows": [
                [1, "2024-01-02", "name1", "0.25"],
                [1, "2024-01-02", "ONE", "1.11"],
                [5, "2024-01-03", "name5", "1.25"],
                [5, "2024-01-03", "FIVE", None],
                [30, "2024-01-01", "new30", "30.00"],
            ],
            "kinds": ["-U", "+U", "-U", "+U", "+I"],
        },
        {
            "rows": [[2, "2024-01-03"], [3, "2024-01-01"], [30, "2024-01-01"], [31, "2024-01-02", "new31", "31.00"]],
            "kinds": ["-D", "-D", "-D", "+I"],
        },
        {"rows": [[4, "2024-01-02", "four-upserted", "4.40"], [6, "2024-01-01", "six-upserted", None]]},
    ]


def _overlap_commits() -> list[oracle.Commit]:
    """Every commit rewrites (a subset of) the same keys, so all level-0 files of a bucket overlap."""
    return [
        {"rows": [[k, f"v1-{k}", k] for k in range(40)]},
        {"rows": [[k, f"v2-{k}", k * 10] for k in range(0, 40, 2)]},
        {"rows": [[k, f"v3-{k}", None] for k in range(0, 40, 3)]},
        {"rows": [[k, f"v4-{k}", -k] for k in range(35, 45)]},
    ]


RICH_COLUMNS = [
    ["id", "INT", False],
    ["b", "BOOLEAN"],
    ["ti", "TINYINT"],
    ["si", "SMALLINT"],
    ["bi", "BIGINT"],
    ["f", "FLOAT"],
    ["d", "DOUBLE"],
    ["dec_small", "DECIMAL(9, 3)"],
    ["dec_mid", "DECIMAL(18, 4)"],
    ["dec_big", "DECIMAL(38, 10)"],
    ["day", "DATE"],
    ["ts3", "TIMESTAMP(3)"],
    ["ts6", "TIMESTAMP(6)"],
    ["ltz", "TIMESTAMP(6) WITH LOCAL TIME ZONE"],
    ["s", "STRING"],
    ["vc", "VARCHAR(20)"],
    ["raw", "BYTES"],
    ["arr", "ARRAY<INT>"],
    ["nested_arr", "ARRAY<ARRAY<STRING>>"],
    ["m", "MAP<STRING, BIGINT>"],
    ["r", "ROW<x INT, y STRING, z ARRAY<DOUBLE>>"],
]

RICH_ROWS = [
    {
        "id": 1,
        "b": True,
        "ti": -128,
        "si": 32767,
        "bi": -(2**63),
        "f": 1.5,
        "d": -2.25,
        "dec_small": "123456.789",
        "dec_mid": "-99999999999999.9999",
        "dec_big": "1234567890123456789012345678.0123456789",
        "day": "2024-02-29",
        "ts3": "2024-02-29 23:59:59.999",
        "ts6": "1969-12-31 23:59:59.000001",
        "ltz": "2024-06-01 12:00:00.123456",
        "s": "héllo wörld ✓",
        "vc": "varchar",
        "raw": "00ff10",
        "arr": [1, None, 3],
        "nested_arr": [["a"], [], None, ["b", None]],
        "m": {"k1": 1, "k2": None},
        "r": {"x": 7, "y": "why", "z": [0.5, None]},
    },
    {
        "id": 2,
        "b": False,
        "ti": 127,
        "si": -32768,
        "bi": 2**63 - 1,
        "f": -0.0,
        "d": 1e300,
        "dec_small": "-0.001",
        "dec_mid": "0.0000",
        "dec_big": "-0.0000000001",
        "day": "1970-01-01",
        "ts3": "1900-01-01 00:00:00.000",
        "ts6": "2262-04-11 23:47:16.854775",
        "ltz": "1970-01-01 00:00:00",
        "s": "",
        "vc": "",
        "raw": "",
        "arr": [],
        "nested_arr": [],
        "m": {},
        "r": {"x": None, "y": None, "z": None},
    },
    {"id": 3},  # every nullable column NULL
]

TYPES2_COLUMNS = [
    ["id", "INT"],
    ["ts0", "TIMESTAMP(0)"],
    ["ts9", "TIMESTAMP(9)"],
    ["ltz3", "TIMESTAMP(3) WITH LOCAL TIME ZONE"],
    ["ltz9", "TIMESTAMP(9) WITH LOCAL TIME ZONE"],
    ["c", "CHAR(5)"],
    ["bin4", "BINARY(4)"],
    ["vb", "VARBINARY(10)"],
    ["d38", "DECIMAL(38, 0)"],
    ["d1", "DECIMAL(1, 0)"],
    ["f", "DOUBLE"],
]


def _types2_table() -> pa.Table:
    utc = dt.timezone.utc
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int32()),
            "ts0": pa.array([dt.datetime(2024, 1, 1, 12, 0, 1), None, None], pa.timestamp("s")),
            "ts9": pa.array(
                [dt.datetime(2024, 1, 1, 12, 0, 0, 123456), dt.datetime(1960, 1, 1), None], pa.timestamp("ns")
            ),
            "ltz3": pa.array(
                [dt.datetime(2024, 1, 1, 12, 0, 0, 123000, tzinfo=utc), None, None], pa.timestamp("ms", "UTC")
            ),
            "ltz9": pa.array([dt.datetime(1960, 6, 1, 0, 0, 0, 1, tzinfo=utc), None, None], pa.timestamp("ns", "UTC")),
            "c": pa.array(["abcde", "ab", None]),
            "bin4": pa.array([b"\x01\x02\x03\x04", b"\x00" * 4, None], pa.binary()),
            "vb": pa.array([b"\xff", b"", None], pa.binary()),
            "d38": pa.array(
                [Decimal("12345678901234567890123456789012345678"), Decimal(-1), None], pa.decimal128(38, 0)
            ),
            "d1": pa.array([Decimal(9), Decimal(-9), None], pa.decimal128(1, 0)),
            "f": pa.array([float("inf"), float("-inf"), None], pa.float64()),
        }
    )


RICH_PK_COLUMNS = [
    ["k_day", "DATE", False],
    ["k_dec", "DECIMAL(10, 2)", False],
    ["k_s", "STRING", False],
    ["k_ts", "TIMESTAMP(3)", False],
    ["v", "STRING"],
    ["m", "MAP<INT, STRING>"],
]


def _rich_pk_rows(tag: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "k_day": f"2024-01-{1 + i % 5:02d}",
            "k_dec": f"{i % 7}.{i % 100:02d}",
            "k_s": f"key-{i % 11}",
            "k_ts": f"2024-03-01 10:00:0{i % 3}.{i % 1000:03d}",
            "v": f"{tag}{i}",
            "m": [[i, tag]],
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def theirs(module_warehouse: str) -> OracleBatch:
    """Write every table with the oracles, then read every case with both oracles: one oracle process."""
    b = OracleBatch(module_warehouse)

    # 1. append, unpartitioned, bucket -1 (unaware), 3 commits
    b.write(
        "db.append_unaware",
        [
            {"rows": [[i, f"n{i}", i * 0.5] for i in range(10)]},
            {"rows": [[i, f"m{i}", None] for i in range(5, 15)]},
            {"rows": [[None, None, None]]},
        ],
        create=oracle.table_spec([["id", "BIGINT"], ["name", "STRING"], ["score", "DOUBLE"]]),
    )

    # 2. append, partitioned, fixed buckets with an explicit bucket key
    b.write(
        "db.append_fixed",
        [
            {"rows": [[i, f"2024-0{1 + i % 2}", f"e{i}"] for i in range(30)]},
            {"rows": [[i, "2024-03", f"f{i}"] for i in range(10)] + [[None, "2024-01", "null-key"]]},
        ],
        create=oracle.table_spec(
            [["id", "INT"], ["dt", "STRING"], ["v", "STRING"]],
            partition_keys=["dt"],
            options={"bucket": 4, "bucket-key": "id"},
        ),
    )

    # 3. PK, partitioned, 3 buckets, 4 commits with -U/+U and -D via rowkind.field; a tag and a branch
    b.write(
        "db.pk",
        _pk_commits(),
        create=oracle.table_spec(
            [["id", "BIGINT", False], ["dt", "STRING", False], ["name", "STRING"], ["amount", "DECIMAL(10, 2)"]],
            partition_keys=["dt"],
            primary_keys=["dt", "id"],
            options={"bucket": 3, "rowkind.field": RK},
        ),
    )
    b.tag("db.pk", "t2", snapshot_id=2)
    b.branch("db.pk", "b", from_tag="t2")
    b.write(
        "db.pk$branch_b",
        [{"rows": [[1, "2024-01-02"], [100, "2024-01-09", "branch-only", "1.00"]], "kinds": ["-D", "+I"]}],
    )

    # 4. PK where every commit rewrites the same keys (overlapping level-0 files in every bucket)
    b.write(
        "db.pk_overlap",
        _overlap_commits(),
        create=oracle.table_spec(
            [["k", "INT", False], ["v", "STRING"], ["n", "BIGINT"]], primary_keys=["k"], options={"bucket": 2}
        ),
    )

    # 5. merge engines
    b.write(
        "db.partial",
        [
            {"rows": [[1, "a", None, None], [2, "b", 20, None]]},
            {"rows": [[1, None, 10, None], [2, None, None, 2.5]]},
            {"rows": [[1, "a2", None, 1.0], [3, None, None, None]]},
        ],
        create=oracle.table_spec(
            [["k", "INT", False], ["s", "STRING"], ["i", "INT"], ["d", "DOUBLE"]],
            primary_keys=["k"],
            options={"bucket": 2, "merge-engine": "partial-update"},
        ),
    )
    b.write(
        "db.agg",
        [
            {"rows": [[1, 1, 10, 5, "x", 1.5], [2, 7, None, None, "y", None]]},
            {"rows": [[1, 2, 3, 9, None, 2.5], [2, None, 4, 1, "z", None]]},
            {"rows": [[1, None, 30, 0, "w", None], [3, 100, 100, 100, None, 0.0]]},
        ],
        create=oracle.table_spec(
            [
                ["k", "INT", False],
                ["total", "BIGINT"],
                ["hi", "INT"],
                ["lo", "INT"],
                ["last", "STRING"],
                ["dsum", "DOUBLE"],
            ],
            primary_keys=["k"],
            options={
                "bucket": 1,
                "merge-engine": "aggregation",
                "fields.total.aggregate-function": "sum",
                "fields.hi.aggregate-function": "max",
                "fields.lo.aggregate-function": "min",
                "fields.last.aggregate-function": "last_non_null_value",
                "fields.dsum.aggregate-function": "sum",
            },
        ),
    )

    # 6. schema evolution between commits: add, rename, drop, widen
    b.write(
        "db.evolved",
        [{"rows": [[1, "a", 1.0, 10], [2, "b", 2.0, 20]]}],
        create=oracle.table_spec(
            [["id", "INT", False], ["name", "STRING"], ["score", "DOUBLE"], ["cnt", "INT"]],
            primary_keys=["id"],
            options={"bucket": 2},
        ),
    )
    b.evolve(
        "db.evolved",
        [
            oracle.add_column("note", "STRING"),
            oracle.rename_column("name", "label"),
            oracle.drop_column("score"),
            oracle.update_column_type("cnt", "BIGINT"),
        ],
    )
    b.write(
        "db.evolved",
        [
            {
                "rows": [
                    {"id": 2, "label": "b2", "cnt": 2**40, "note": "new"},
                    {"id": 3, "label": "c", "cnt": None, "note": "three"},
                ]
            }
        ],
    )
    b.write(
        "db.evolved_append",
        [{"rows": [[1, "a", 1.0], [2, None, 2.0]]}],
        create=oracle.table_spec([["id", "INT"], ["name", "STRING"], ["score", "DOUBLE"]]),
    )
    b.evolve(
        "db.evolved_append",
        [
            oracle.add_column("first_col", "STRING", first=True),
            oracle.rename_column("score", "points"),
            oracle.drop_column("name"),
        ],
    )
    b.write("db.evolved_append", [{"rows": [{"first_col": "f", "id": 3, "points": 3.0}]}])

    # 7. rich types, append and PK with a composite key of non-trivial types
    b.write("db.rich", [{"rows": RICH_ROWS[:2]}, {"rows": RICH_ROWS[2:]}], create=oracle.table_spec(RICH_COLUMNS))
    b.write(
        "db.rich_pk",
        [{"rows": _rich_pk_rows("a", 30)}, {"rows": _rich_pk_rows("b", 12)}],
        create=oracle.table_spec(
            RICH_PK_COLUMNS,
            partition_keys=["k_day"],
            primary_keys=["k_day", "k_dec", "k_s", "k_ts"],
            options={"bucket": 3},
        ),
    )

    # 8. written by pypaimon-rust
    b.write(
        "db.rust_pk",
        [
            {"rows": [[i, "p%d" % (i % 2), f"r{i}"] for i in range(12)]},
            {"rows": [[2, "p0"], [3, "p1", "r3-updated"], [4, "p0", "r4-updated"]], "kinds": ["-D", "+U", "+I"]},
            {"rows": [[3, "p1", "r3-again"], [20, "p0", "r20"]]},
        ],
        impl="rust",
        create=oracle.table_spec(
            [["id", "BIGINT", False], ["p", "STRING", False], ["v", "STRING"]],
            partition_keys=["p"],
            primary_keys=["p", "id"],
            options={"bucket": 2, "rowkind.field": RK},
        ),
    )
    b.write(
        "db.rust_append",
        [
            {"rows": [[i, f"a{i}", str(Decimal(i) / 8), "2024-05-0%d" % (1 + i % 3)] for i in range(9)]},
            {"rows": [[None, None, None, "2024-05-01"]]},
        ],
        impl="rust",
        create=oracle.table_spec(
            [["id", "INT"], ["s", "STRING"], ["dec", "DECIMAL(12, 3)"], ["day", "DATE"]], partition_keys=["day"]
        ),
    )

    b.write(
        "db.rust_partial",
        [
            {"rows": [[1, "a", None, None], [2, "b", 20, None]]},
            {"rows": [[1, None, 10, None], [2, None, None, 2.5]]},
            {"rows": [[1, "a2", None, 1.0], [3, None, None, None]]},
        ],
        impl="rust",
        create=oracle.table_spec(
            [["k", "INT", False], ["s", "STRING"], ["i", "INT"], ["d", "DOUBLE"]],
            primary_keys=["k"],
            options={"bucket": 2, "merge-engine": "partial-update"},
        ),
    )
    b.write(
        "db.rust_append_fixed",
        [
            {"rows": [[i, f"2024-0{1 + i % 2}", f"e{i}"] for i in range(20)]},
        ],
        impl="rust",
        create=oracle.table_spec(
            [["id", "INT"], ["dt", "STRING"], ["v", "STRING"]],
            partition_keys=["dt"],
            options={"bucket": 4, "bucket-key": "id"},
        ),
    )

    # 9. other file formats / codecs, a dynamic-bucket PK table, sequence.field, overwrites, NULL partitions
    b.write(
        "db.orc_pk",
        _overlap_commits(),
        create=oracle.table_spec(
            [["k", "INT", False], ["v", "STRING"], ["n", "BIGINT"]],
            primary_keys=["k"],
            options={"bucket": 2, "file.format": "orc"},
        ),
    )
    b.write(
        "db.orc_append",
        [{"rows": RICH_ROWS[:2]}, {"rows": RICH_ROWS[2:]}],
        create=oracle.table_spec(RICH_COLUMNS, options={"file.format": "orc"}),
    )
    b.write(
        "db.snappy",
        [{"rows": [[i, f"s{i}"] for i in range(10)]}, {"rows": [[3, "three"]]}],
        create=oracle.table_spec(
            [["k", "INT", False], ["v", "STRING"]],
            primary_keys=["k"],
            options={"bucket": 2, "file.compression": "snappy"},
        ),
    )
    b.write(
        "db.pk_dynamic",
        _overlap_commits(),
        create=oracle.table_spec(
            [["k", "INT", False], ["v", "STRING"], ["n", "BIGINT"]], primary_keys=["k"], options={"bucket": -1}
        ),
    )
    b.write(
        "db.seq_field",
        [
            {"rows": [[1, "a", 10], [2, "b", 10]]},
            {"rows": [[1, "a-older", 5], [2, "b-newer", 20]]},  # a lower sequence.field value loses
            {"rows": [[1, "a-same", 10]]},  # equal: the later _SEQUENCE_NUMBER wins
        ],
        create=oracle.table_spec(
            [["k", "INT", False], ["v", "STRING"], ["seq", "BIGINT"]],
            primary_keys=["k"],
            options={"bucket": 1, "sequence.field": "seq"},
        ),
    )
    b.write(
        "db.overwritten",
        [
            {"rows": [[i, f"p{i % 3}", f"v{i}"] for i in range(12)]},
            {"rows": [[100, "p1", "only-p1"]], "overwrite": {"p": "p1"}},
            {"rows": [[1, "p1", "p1-upsert"]]},
        ],
        create=oracle.table_spec(
            [["id", "INT", False], ["p", "STRING", False], ["v", "STRING"]],
            partition_keys=["p"],
            primary_keys=["p", "id"],
            options={"bucket": 2},
        ),
    )
    b.write(
        "db.overwritten_all",
        [
            {"rows": [[i, f"p{i % 3}"] for i in range(6)]},
            {"rows": [[7, "p9"]], "overwrite": True},
        ],
        create=oracle.table_spec([["id", "INT"], ["p", "STRING"]], partition_keys=["p"]),
    )
    b.write(
        "db.null_part",
        [{"rows": [[None, None, 1], ["x", None, 2], [None, 5, 3], ["x", 5, 4], ["", 6, 5]]}],
        create=oracle.table_spec([["p", "STRING"], ["q", "INT"], ["v", "INT"]], partition_keys=["p", "q"]),
    )

    # 10. more atomic types (precision/length variants); values at microsecond precision, which Spark keeps
    b.write("db.types2", [_types2_table()], create=oracle.table_spec(TYPES2_COLUMNS))

    for key, case in CASES.items():
        b.read(key, case.identifier, case.options, impls=case.impls)
    return b.run()


CASES: dict[str, Case] = {
    "append_unaware": Case("db.append_unaware"),
    "append_unaware@1": Case("db.append_unaware", {"scan.snapshot-id": 1}),
    "append_fixed": Case("db.append_fixed"),
    "pk": Case("db.pk"),
    "pk@1": Case("db.pk", {"scan.snapshot-id": 1}),
    "pk@3": Case("db.pk", {"scan.snapshot-id": 3}),
    "pk@tag": Case("db.pk", {"scan.tag-name": "t2"}),
    "pk$branch_suffix": Case("db.pk$branch_b"),
    "pk$branch_option": Case("db.pk$branch_b", our_identifier="db.pk", our_options={"branch": "b"}),
    "pk_overlap": Case("db.pk_overlap"),
    "pk_overlap@2": Case("db.pk_overlap", {"scan.snapshot-id": 2}),
    "partial": Case("db.partial"),
    "agg": Case("db.agg"),
    "evolved": Case("db.evolved"),
    "evolved@1": Case("db.evolved", {"scan.snapshot-id": 1}),
    "evolved_append": Case("db.evolved_append"),
    "rich": Case("db.rich"),
    "rich_pk": Case("db.rich_pk"),
    "rust_pk": Case("db.rust_pk"),
    "rust_pk@2": Case("db.rust_pk", {"scan.snapshot-id": 2}),
    "rust_append": Case("db.rust_append"),
    "rust_partial": Case("db.rust_partial"),
    "rust_append_fixed": Case("db.rust_append_fixed"),
    "orc_pk": Case("db.orc_pk"),
    # pypaimon-rust's ORC reader overflows on the pre-1970 TIMESTAMP(6) value (orc-rust DecodeTimestamp)
    "orc_append": Case("db.orc_append", impls=("pypaimon",)),
    "snappy": Case("db.snappy"),
    "pk_dynamic": Case("db.pk_dynamic"),
    "seq_field": Case("db.seq_field"),
    "overwritten": Case("db.overwritten"),
    "overwritten@1": Case("db.overwritten", {"scan.snapshot-id": 1}),
    "overwritten@2": Case("db.overwritten", {"scan.snapshot-id": 2}),
    "overwritten_all": Case("db.overwritten_all"),
    "null_part": Case("db.null_part"),
    "types2": Case("db.types2"),
}

# Reads that also go through Spark (each Spark job costs ~1 s; the rest go through t.scan().to_arrow() only,
# which runs the same executor-side code without Spark's plumbing).
SPARK_CASES = [
    "append_unaware",
    "append_fixed",
    "pk",
    "pk@1",
    "pk@tag",
    "pk$branch_suffix",
    "pk$branch_option",
    "pk_overlap",
    "partial",
    "agg",
    "evolved",
    "evolved@1",
    "rich",
    "rich_pk",
    "rust_pk",
    "orc_pk",
    "pk_dynamic",
    "overwritten@2",
    "null_part",
]


def _ours(spark: Any, warehouse: str, case: Case, via: str) -> pa.Table:
    uri = table_uri(warehouse, case.our_identifier or case.identifier)
    options = case.options if case.our_options is None else case.our_options
    return ours_spark(spark, uri, options) if via == "spark" else ours_arrow(uri, options)


@pytest.mark.parametrize("key", list(CASES))
def test_we_read_what_they_wrote_arrow(theirs: OracleBatch, module_warehouse: str, key: str) -> None:
    expected = assert_oracles_agree(theirs.tables[key], key)
    assert_same_table(_ours(None, module_warehouse, CASES[key], "arrow"), expected, key)


@pytest.mark.spark
@pytest.mark.parametrize("key", SPARK_CASES)
def test_we_read_what_they_wrote_spark(spark: Any, theirs: OracleBatch, module_warehouse: str, key: str) -> None:
    expected = theirs.tables[key]["pypaimon"]
    assert_same_table(_ours(spark, module_warehouse, CASES[key], "spark"), expected, key)


# ----------------------------------------------------------------- expectations that pin the scenarios


def test_expected_contents(theirs: OracleBatch) -> None:
    """Hand-checked facts, so that "ours == theirs" cannot pass on two equally wrong (or empty) reads."""
    t = {k: rows_of(v["pypaimon"]) for k, v in theirs.tables.items()}
    assert len(t["append_unaware"]) == 21 and len(t["append_unaware@1"]) == 10
    assert len(t["append_fixed"]) == 41

    pk = {(r["dt"], r["id"]): r for r in t["pk"]}
    assert len(pk) == 24 - 2 + 1  # 24 inserted, ids 2 and 3 deleted, 31 added (30 added then deleted)
    assert pk[("2024-01-02", 1)]["name"] == "ONE" and pk[("2024-01-02", 1)][RK] == "+U"
    assert pk[("2024-01-03", 5)]["amount"] is None
    assert pk[("2024-01-02", 4)]["name"] == "four-upserted"
    assert ("2024-01-01", 30) not in pk and ("2024-01-03", 2) not in pk
    assert len(t["pk@1"]) == 24 and len(t["pk@tag"]) == 25 and len(t["pk@3"]) == 23
    branch = {(r["dt"], r["id"]) for r in t["pk$branch_suffix"]}
    assert ("2024-01-09", 100) in branch and ("2024-01-02", 1) not in branch and len(branch) == 25

    overlap = {r["k"]: r for r in t["pk_overlap"]}
    assert len(overlap) == 45
    assert overlap[0] == {"k": 0, "v": "v3-0", "n": None}
    assert overlap[2] == {"k": 2, "v": "v2-2", "n": 20}
    assert overlap[1] == {"k": 1, "v": "v1-1", "n": 1}
    assert overlap[36] == {"k": 36, "v": "v4-36", "n": -36}

    assert t["partial"] == _sorted(
        [
            {"k": 1, "s": "a2", "i": 10, "d": 1.0},
            {"k": 2, "s": "b", "i": 20, "d": 2.5},
            {"k": 3, "s": None, "i": None, "d": None},
        ]
    )
    assert t["agg"] == _sorted(
        [
            {"k": 1, "total": 3, "hi": 30, "lo": 0, "last": "w", "dsum": 4.0},
            {"k": 2, "total": 7, "hi": 4, "lo": 1, "last": "z", "dsum": None},
            {"k": 3, "total": 100, "hi": 100, "lo": 100, "last": None, "dsum": 0.0},
        ]
    )

    assert t["evolved"] == _sorted(
        [
            {"id": 1, "label": "a", "cnt": 10, "note": None},
            {"id": 2, "label": "b2", "cnt": 2**40, "note": "new"},
            {"id": 3, "label": "c", "cnt": None, "note": "three"},
        ]
    )
    assert t["evolved@1"] == _sorted(
        [{"id": 1, "name": "a", "score": 1.0, "cnt": 10}, {"id": 2, "name": "b", "score": 2.0, "cnt": 20}]
    )
    assert t["evolved_append"] == _sorted(
        [
            {"first_col": None, "id": 1, "points": 1.0},
            {"first_col": None, "id": 2, "points": 2.0},
            {"first_col": "f", "id": 3, "points": 3.0},
        ]
    )

    rich = {r["id"]: r for r in t["rich"]}
    assert rich[1]["dec_big"] == Decimal("1234567890123456789012345678.0123456789")
    assert rich[1]["ts6"] == dt.datetime(1969, 12, 31, 23, 59, 59, 1)
    assert rich[1]["ltz"] == dt.datetime(2024, 6, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    assert rich[1]["m"] == [("k1", 1), ("k2", None)] and rich[1]["raw"] == b"\x00\xff\x10"
    assert all(v is None for k, v in rich[3].items() if k != "id")
    assert len(t["rich_pk"]) == 30

    rust = {(r["p"], r["id"]): r for r in t["rust_pk"]}
    assert ("p0", 2) not in rust and rust[("p1", 3)]["v"] == "r3-again" and rust[("p0", 4)]["v"] == "r4-updated"
    assert len(rust) == 12 - 1 + 1
    assert len(t["rust_append"]) == 10
    assert t["rust_partial"] == t["partial"] and len(t["rust_append_fixed"]) == 20

    assert t["orc_pk"] == t["pk_overlap"] == t["pk_dynamic"]
    assert len(t["orc_append"]) == 3 and len(t["snappy"]) == 10
    assert t["seq_field"] == [{"k": 1, "v": "a-same", "seq": 10}, {"k": 2, "v": "b-newer", "seq": 20}]
    over = {(r["p"], r["id"]): r["v"] for r in t["overwritten"]}
    assert {k for k in over if k[0] == "p1"} == {("p1", 100), ("p1", 1)} and len(over) == 8 + 2
    assert over[("p1", 1)] == "p1-upsert"
    assert len(t["overwritten@1"]) == 12 and len(t["overwritten@2"]) == 9
    # overwrite with no static partition on a partitioned table replaces only the partitions it writes
    # ('dynamic-partition-overwrite' defaults to true)
    assert len(t["overwritten_all"]) == 7 and {"id": 7, "p": "p9"} in t["overwritten_all"]
    assert len(t["null_part"]) == 5


# ------------------------------------------------------------- projection and filters on their tables


def _where(rows: list[dict[str, Any]], leaf: Leaf) -> list[dict[str, Any]]:
    ops = {
        "=": lambda a, b: a is not None and a == b,
        ">": lambda a, b: a is not None and a > b,
        ">=": lambda a, b: a is not None and a >= b,
        "is_null": lambda a, _: a is None,
    }
    return [r for r in rows if ops[leaf.op](r[leaf.column], leaf.value)]


FILTER_CASES = {
    # a filter on a value column must apply to the MERGED row, not to stale versions in older files
    "pk_overlap": (["v"], Leaf("n", ">=", 10)),
    "pk": (["name", RK], Leaf("amount", ">", Decimal("2"))),
    # partition filter, and projection without the key on rust's files (which carry no _KEY_ columns)
    "rust_pk": (["v"], Leaf("p", "=", "p1")),
    "evolved": (["label", "note"], Leaf("cnt", ">", 5)),
    "partial": (["i"], Leaf("s", "=", "b")),
    "null_part": (["v"], Leaf("p", "is_null")),
    "agg": (["total"], Leaf("hi", ">=", 30)),
}


@pytest.mark.parametrize("key", list(FILTER_CASES))
def test_projection_and_filter_on_their_tables(theirs: OracleBatch, module_warehouse: str, key: str) -> None:
    columns, leaf = FILTER_CASES[key]
    rows = _where(theirs.tables[key]["pypaimon"].to_pylist(), leaf)
    expected = _sorted({c: r[c] for c in columns} for r in rows)
    assert expected, key  # the filter keeps something
    ours = engine_read_arrow(
        Table.open(table_uri(module_warehouse, CASES[key].identifier)), predicate=[leaf], columns=columns
    )
    assert ours.column_names == columns
    assert rows_of(ours) == expected


@pytest.mark.spark
def test_spark_projection_and_filter_on_their_table(spark: Any, theirs: OracleBatch, module_warehouse: str) -> None:
    rows = _where(theirs.tables["pk_overlap"]["pypaimon"].to_pylist(), Leaf("n", ">=", 10))
    df = spark.read.format("paimon").load(table_uri(module_warehouse, "db.pk_overlap"))
    ours = df.where("n >= 10").select("v").toArrow()
    assert rows_of(ours) == _sorted({"v": r["v"]} for r in rows)
