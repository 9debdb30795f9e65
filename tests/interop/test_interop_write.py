"""We write, they read: tables written by pyspark-paimon (through `Table.write_arrow` and through Spark)
must read in pypaimon AND pypaimon-rust as exactly the rows we wrote (and as we read them ourselves).

Also the mixed histories: pypaimon and rust append commits to a table we wrote, and we append to a table
pypaimon wrote; every writer must continue the bucket's sequence numbers (Java's `MergeTreeWriter`) so that the newest
write wins on overlapping keys whichever implementation reads.

Oracle work is two processes: one that reads all our tables and appends to the mixed ones, and one that
reads the mixed tables after our final append.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Iterable

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.metadata.types.ddl import parse_ddl
from pyspark_paimon.metadata.types.json_codec import parse_type
from tests.interop.helpers import (
    OracleBatch,
    assert_oracles_agree,
    assert_same_table,
    canonical_rows,
    ours_arrow,
    ours_spark,
    table_uri,
)
from tests.interop.helpers import (
    sorted_rows as _sorted,
)

try:
    from tests import oracle
except ImportError:  # pragma: no cover
    import oracle  # type: ignore[no-redef]

# The module fixture writes two tables through Spark, so every test here needs the SparkSession.
pytestmark = [pytest.mark.interop, pytest.mark.spark]

RK = "_row_kind"
UTC = dt.timezone.utc


def _upsert(state: dict[tuple, dict[str, Any]], rows: Iterable[dict[str, Any]], key: tuple[str, ...]) -> None:
    for row in rows:
        state[tuple(row[k] for k in key)] = dict(row)


# ------------------------------------------------------------------------------------ what we write


def _pk_commit(ids: Iterable[int], tag: str) -> list[dict[str, Any]]:
    return [
        {"id": i, "dt": f"d{i % 3}", "name": f"{tag}-{i}", "amount": Decimal(i) / 4 if i % 5 else None} for i in ids
    ]


PK_COMMITS = [
    _pk_commit(range(40), "c1"),
    # the same keys again, twice within one commit (folded in the write buffer: the later one wins)
    _pk_commit(range(0, 40, 2), "c2a") + _pk_commit(range(0, 40, 4), "c2b"),
    _pk_commit(list(range(0, 40, 3)) + list(range(40, 46)), "c3"),
]

ROWKIND_COMMITS = [
    [{"k": k, "v": f"v{k}", RK: "+I"} for k in range(10)],
    [
        {"k": 1, "v": "v1", RK: "-U"},
        {"k": 1, "v": "ONE", RK: "+U"},
        {"k": 2, "v": None, RK: "-D"},
        {"k": 3, "v": "THREE", RK: "+U"},
        {"k": 4, "v": "x", RK: "+I"},
        {"k": 4, "v": None, RK: "-D"},
    ],
    [{"k": 99, "v": None, RK: "-D"}, {"k": 2, "v": "two-again", RK: "+I"}, {"k": 5, "v": None, RK: "-D"}],
]
ROWKIND_EXPECTED = _sorted(
    [{"k": k, "v": f"v{k}", RK: "+I"} for k in (0, 6, 7, 8, 9)]
    + [{"k": 1, "v": "ONE", RK: "+U"}, {"k": 2, "v": "two-again", RK: "+I"}, {"k": 3, "v": "THREE", RK: "+U"}]
)

RICH_DDL = (
    "id int not null, b boolean, ti tinyint, si smallint, bi bigint, f float, d double, "
    "dec_small decimal(9,3), dec_mid decimal(18,4), dec_big decimal(38,10), day date, "
    "ltz timestamp, s string, vc varchar(20), raw binary, arr array<int>, nested_arr array<array<string>>, "
    "m map<string,bigint>, r struct<x:int,y:string,z:array<double>>"
)


def _rich_columns() -> list[tuple]:
    columns = list(parse_ddl(RICH_DDL))
    # TIMESTAMP(3) / TIMESTAMP(6) without zone have no Spark DDL spelling: give Paimon types directly.
    return columns + [("ts3", parse_type("TIMESTAMP(3)")), ("ts6", parse_type("TIMESTAMP(6)"))]


RICH_ROWS = [
    {
        "id": 1,
        "b": True,
        "ti": -128,
        "si": 32767,
        "bi": -(2**63),
        "f": 1.5,
        "d": -2.25,
        "dec_small": Decimal("123456.789"),
        "dec_mid": Decimal("-99999999999999.9999"),
        "dec_big": Decimal("1234567890123456789012345678.0123456789"),
        "day": dt.date(2024, 2, 29),
        "ltz": dt.datetime(2024, 6, 1, 12, 0, 0, 123456, tzinfo=UTC),
        "s": "héllo wörld ✓",
        "vc": "varchar",
        "raw": b"\x00\xff\x10",
        "arr": [1, None, 3],
        "nested_arr": [["a"], [], None, ["b", None]],
        "m": [("k1", 1), ("k2", None)],
        "r": {"x": 7, "y": "why", "z": [0.5, None]},
        "ts3": dt.datetime(2024, 2, 29, 23, 59, 59, 999000),
        "ts6": dt.datetime(1969, 12, 31, 23, 59, 59, 1),
    },
    {
        "id": 2,
        "b": False,
        "ti": 127,
        "si": -32768,
        "bi": 2**63 - 1,
        "f": -0.0,
        "d": 1e300,
        "dec_small": Decimal("-0.001"),
        "dec_mid": Decimal("0.0000"),
        "dec_big": Decimal("-0.0000000001"),
        "day": dt.date(1970, 1, 1),
        "ltz": dt.datetime(1970, 1, 1, tzinfo=UTC),
        "s": "",
        "vc": "",
        "raw": b"",
        "arr": [],
        "nested_arr": [],
        "m": [],
        "r": {"x": None, "y": None, "z": None},
        "ts3": dt.datetime(1900, 1, 1),
        "ts6": dt.datetime(2262, 4, 11, 23, 47, 16, 854775),
    },
    {
        "id": 3,
        **{
            k: None
            for k in (
                "b",
                "ti",
                "si",
                "bi",
                "f",
                "d",
                "dec_small",
                "dec_mid",
                "dec_big",
                "day",
                "ltz",
                "s",
                "vc",
                "raw",
                "arr",
                "nested_arr",
                "m",
                "r",
                "ts3",
                "ts6",
            )
        },
    },
]

RICH_PK_DDL = "k_day date not null, k_dec decimal(10,2) not null, k_s string not null, v string, m map<int,string>"


def _rich_pk_rows(tag: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "k_day": dt.date(2024, 1, 1 + i % 5),
            "k_dec": Decimal(f"{i % 7}.{i % 100:02d}"),
            "k_s": f"key-{i}",
            "k_ts": dt.datetime(2024, 3, 1, 10, 0, i % 3, (i % 1000) * 1000),
            "v": f"{tag}{i}",
            "m": [(i, tag)],
        }
        for i in range(n)
    ]


# DECIMAL at the boundaries of Java's Parquet layout (INT32 for p <= 9, INT64 for p <= 18, FIXED_LEN_BYTE_ARRAY
# above), with the extremes of both signs; the key is an INT64 decimal.
DECIMAL_TYPES = {"d1": (1, 0), "d9": (9, 2), "d10": (10, 0), "d18": (18, 4), "d19": (19, 0), "d38": (38, 10)}
DECIMALS_DDL = "k decimal(18,4) not null, " + ", ".join(f"{n} decimal({p},{s})" for n, (p, s) in DECIMAL_TYPES.items())


def _nines(p: int, s: int, negative: bool = False) -> Decimal:
    """The largest (or smallest) DECIMAL(p, s), from text: Decimal arithmetic would round at 28 digits."""
    return Decimal(("-" if negative else "") + "9" * (p - s) + ("." + "9" * s if s else ""))


def _decimal_rows(keys: Iterable[int], tag: int) -> list[dict[str, Any]]:
    rows = []
    for k in keys:
        extreme = _nines(18, 4) - k  # distinct keys next to both ends of DECIMAL(18, 4)
        row: dict[str, Any] = {"k": Decimal(k).scaleb(-4) - 5 if k % 2 else (-extreme if k % 4 else extreme)}
        for i, (name, (p, s)) in enumerate(DECIMAL_TYPES.items()):
            choice = (k + i + tag) % 5
            row[name] = [_nines(p, s), _nines(p, s, negative=True), Decimal(-tag - 1).scaleb(-s), Decimal(0), None][
                choice
            ]
        rows.append(row)
    return rows


def _arrow(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


class Ours:
    """Our writes of the module's tables, and the rows every reader must return for each."""

    def __init__(self, warehouse: str) -> None:
        self.warehouse = warehouse
        self.catalog = Catalog(warehouse)
        self.expected: dict[str, list[dict[str, Any]]] = {}

    def create(self, identifier: str, schema: Any, **kwargs: Any) -> Any:
        return self.catalog.create_table(identifier, schema, **kwargs)

    def write(self, table: Any, rows: list[dict[str, Any]], **kwargs: Any) -> None:
        table.write_arrow(_arrow(rows, table.schema.arrow_schema()), **kwargs)


def _write_all(ours: Ours, spark: Any) -> None:  # noqa: PLR0915 - one scenario per block, in order
    exp = ours.expected

    # append, bucket -1, unpartitioned; snapshot 1 is read back by time travel
    t = ours.create("db.append_unaware", "id bigint, name string, score double")
    c1 = [{"id": i, "name": f"n{i}", "score": i * 0.5} for i in range(10)]
    c2 = [{"id": i, "name": f"m{i}", "score": None} for i in range(5, 15)] + [{"id": None, "name": None, "score": None}]
    ours.write(t, c1)
    ours.write(t, c2)
    exp["append_unaware"], exp["append_unaware@1"] = _sorted(c1 + c2), _sorted(c1)

    # append, fixed buckets with a bucket key, partitioned by an INT
    t = ours.create(
        "db.append_fixed", "id int, p int, v string", partition_keys=["p"], options={"bucket": 3, "bucket-key": "id"}
    )
    rows = [{"id": i, "p": i % 4, "v": f"e{i}"} for i in range(30)] + [{"id": None, "p": 1, "v": "null-key"}]
    ours.write(t, rows)
    exp["append_fixed"] = _sorted(rows)

    # PK, partitioned by STRING, 3 buckets, three commits over the same keys
    t = ours.create(
        "db.pk",
        "id bigint not null, dt string not null, name string, amount decimal(10,2)",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": 3},
    )
    state: dict[tuple, dict[str, Any]] = {}
    for i, commit in enumerate(PK_COMMITS):
        ours.write(t, commit)
        _upsert(state, commit, ("dt", "id"))
        if i == 0:
            exp["pk@1"] = _sorted(state.values())
    exp["pk"] = _sorted(state.values())

    # PK with -U/+U/-D through rowkind.field
    t = ours.create(
        "db.rowkind",
        f"k int not null, v string, {RK} string",
        primary_keys=["k"],
        options={"bucket": 2, "rowkind.field": RK},
    )
    for commit in ROWKIND_COMMITS:
        ours.write(t, commit)
    exp["rowkind"] = ROWKIND_EXPECTED

    # PK partitioned by DATE and INT
    t = ours.create(
        "db.part_date",
        "d date not null, h int not null, id int not null, v string",
        partition_keys=["d", "h"],
        primary_keys=["d", "h", "id"],
        options={"bucket": 2},
    )
    rows = [{"d": dt.date(2024, 1, 1 + i % 3), "h": i % 2, "id": i, "v": f"x{i}"} for i in range(20)]
    ours.write(t, rows)
    upd = [{"d": dt.date(2024, 1, 1 + i % 3), "h": i % 2, "id": i, "v": f"y{i}"} for i in range(0, 20, 5)]
    ours.write(t, upd)
    state = {}
    _upsert(state, rows + upd, ("d", "h", "id"))
    exp["part_date"] = _sorted(state.values())

    # static partition overwrite (append table) and dynamic partition overwrite (PK table)
    t = ours.create("db.overwrite_static", "p string, id int, v string", partition_keys=["p"])
    base = [{"p": p, "id": i, "v": f"{p}{i}"} for p in "abc" for i in range(3)]
    ours.write(t, base)
    new_b = [{"p": "b", "id": 10, "v": "b-new"}]
    ours.write(t, new_b, mode="overwrite", overwrite_partition={"p": "b"})
    exp["overwrite_static"] = _sorted([r for r in base if r["p"] != "b"] + new_b)
    exp["overwrite_static@1"] = _sorted(base)

    t = ours.create(
        "db.overwrite_dynamic",
        "p string not null, id int not null, v string",
        partition_keys=["p"],
        primary_keys=["p", "id"],
        options={"bucket": 2},
    )
    ours.write(t, base)
    new = [{"p": "b", "id": 1, "v": "b1-new"}, {"p": "d", "id": 0, "v": "d0"}]
    ours.write(t, new, mode="overwrite", dynamic_partition_overwrite=True)
    exp["overwrite_dynamic"] = _sorted([r for r in base if r["p"] != "b"] + new)

    # schema evolution between our commits: add, rename, drop
    t = ours.create(
        "db.evolved", "id int not null, name string, score double, cnt int", primary_keys=["id"], options={"bucket": 2}
    )
    ours.write(t, [{"id": 1, "name": "a", "score": 1.0, "cnt": 10}, {"id": 2, "name": "b", "score": 2.0, "cnt": 20}])
    t.update_schema().add_column("note", "string").commit()
    t.update_schema().rename_column("name", "label").commit()
    t.update_schema().drop_column("score").commit()
    ours.write(
        t, [{"id": 2, "label": "b2", "cnt": 7, "note": "new"}, {"id": 3, "label": "c", "cnt": None, "note": "three"}]
    )
    exp["evolved"] = _sorted(
        [
            {"id": 1, "label": "a", "cnt": 10, "note": None},
            {"id": 2, "label": "b2", "cnt": 7, "note": "new"},
            {"id": 3, "label": "c", "cnt": None, "note": "three"},
        ]
    )
    exp["evolved@1"] = _sorted(
        [{"id": 1, "name": "a", "score": 1.0, "cnt": 10}, {"id": 2, "name": "b", "score": 2.0, "cnt": 20}]
    )

    t = ours.create("db.evolved_append", "id int, name string, score double")
    ours.write(t, [{"id": 1, "name": "a", "score": 1.0}])
    t.update_schema().drop_column("name").commit()
    t.update_schema().add_column(
        "name", "string"
    ).commit()  # same name, new field id: old files must NOT show their old 'name'
    t.update_schema().rename_column("score", "points").commit()
    ours.write(t, [{"id": 2, "points": 2.0, "name": "new-name"}])
    exp["evolved_append"] = _sorted(
        [{"id": 1, "points": 1.0, "name": None}, {"id": 2, "points": 2.0, "name": "new-name"}]
    )

    # rich types: append, and a PK with a composite key of DATE / DECIMAL / STRING / TIMESTAMP(3)
    t = ours.create("db.rich", _rich_columns())
    ours.write(t, RICH_ROWS)
    exp["rich"] = _sorted(RICH_ROWS)
    t = ours.create(
        "db.rich_pk",
        list(parse_ddl(RICH_PK_DDL)) + [("k_ts", parse_type("TIMESTAMP(3) NOT NULL"))],
        partition_keys=["k_day"],
        primary_keys=["k_day", "k_dec", "k_s", "k_ts"],
        options={"bucket": 3},
    )
    ours.write(t, _rich_pk_rows("a", 30))
    ours.write(t, _rich_pk_rows("b", 12))
    state = {}
    _upsert(state, _rich_pk_rows("a", 30) + _rich_pk_rows("b", 12), ("k_day", "k_dec", "k_s", "k_ts"))
    exp["rich_pk"] = _sorted({k: v[k] for k in ("k_day", "k_dec", "k_s", "v", "m", "k_ts")} for v in state.values())

    t = ours.create("db.decimals", DECIMALS_DDL, primary_keys=["k"], options={"bucket": 2})
    state = {}
    for tag, keys in enumerate([range(0, 12), range(6, 18)]):  # overlapping keys: the second write wins
        rows = _decimal_rows(keys, tag)
        ours.write(t, rows)
        _upsert(state, rows, ("k",))
    exp["decimals"] = _sorted(state.values())

    # merge engines and sequence.field; duplicate keys inside one commit are folded by OUR writer, the
    # commits are merged by THEIR readers
    t = ours.create(
        "db.partial",
        "k int not null, a string, b int, c double",
        primary_keys=["k"],
        options={"bucket": 2, "merge-engine": "partial-update"},
    )
    ours.write(t, [{"k": 1, "a": "x", "b": None, "c": None}, {"k": 2, "a": None, "b": 5, "c": None}])
    ours.write(
        t,
        [
            {"k": 1, "a": None, "b": 10, "c": None},
            {"k": 1, "a": None, "b": None, "c": 1.5},
            {"k": 3, "a": "c", "b": None, "c": None},
        ],
    )
    ours.write(t, [{"k": 2, "a": "b", "b": None, "c": 2.5}])
    exp["partial"] = _sorted(
        [
            {"k": 1, "a": "x", "b": 10, "c": 1.5},
            {"k": 2, "a": "b", "b": 5, "c": 2.5},
            {"k": 3, "a": "c", "b": None, "c": None},
        ]
    )
    t = ours.create(
        "db.agg",
        "k int not null, total bigint, hi int, lo int, last string, dsum double",
        primary_keys=["k"],
        options={
            "bucket": 2,
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.hi.aggregate-function": "max",
            "fields.lo.aggregate-function": "min",
            "fields.last.aggregate-function": "last_non_null_value",
            "fields.dsum.aggregate-function": "sum",
        },
    )
    ours.write(
        t,
        [
            {"k": 1, "total": 1, "hi": 5, "lo": 5, "last": "a", "dsum": None},
            {"k": 1, "total": 2, "hi": 3, "lo": 3, "last": None, "dsum": 0.5},
        ],
    )
    ours.write(
        t,
        [
            {"k": 1, "total": 10, "hi": 1, "lo": 1, "last": "b", "dsum": None},
            {"k": 2, "total": None, "hi": None, "lo": 7, "last": None, "dsum": None},
        ],
    )
    exp["agg"] = _sorted(
        [
            {"k": 1, "total": 13, "hi": 5, "lo": 1, "last": "b", "dsum": 0.5},
            {"k": 2, "total": None, "hi": None, "lo": 7, "last": None, "dsum": None},
        ]
    )
    t = ours.create(
        "db.seq_field",
        "k int not null, v string, seq bigint",
        primary_keys=["k"],
        options={"bucket": 1, "sequence.field": "seq"},
    )
    ours.write(
        t,
        [
            {"k": 1, "v": "a", "seq": 10},
            {"k": 2, "v": "b", "seq": 10},
            {"k": 3, "v": "x", "seq": 7},
            {"k": 3, "v": "y", "seq": 3},
        ],
    )
    ours.write(t, [{"k": 1, "v": "older", "seq": 5}, {"k": 2, "v": "newer", "seq": 20}])
    exp["seq_field"] = _sorted(
        [{"k": 1, "v": "a", "seq": 10}, {"k": 2, "v": "newer", "seq": 20}, {"k": 3, "v": "x", "seq": 7}]
    )

    # several flushes and rolled files per bucket inside ONE commit (tiny write buffer and target file size),
    # with keys repeated across flushes: later flushes must carry higher sequence numbers
    t = ours.create(
        "db.many_files",
        "k int not null, v string, pad string",
        primary_keys=["k"],
        options={"bucket": 2, "write-buffer-size": "4 kb", "target-file-size": "2 kb"},
    )
    batches = [[{"k": k, "v": f"round{r}-{k}", "pad": "x" * 50} for k in range(r * 40, r * 40 + 200)] for r in range(5)]
    table_schema = t.schema.arrow_schema()
    t.write_arrow(pa.concat_tables([_arrow(b, table_schema) for b in batches]))
    state = {}
    for b in batches:
        _upsert(state, b, ("k",))
    exp["many_files"] = _sorted(state.values())

    # string keys whose UTF-8 byte order differs from UTF-16 order (Paimon compares UTF-8 bytes)
    t = ours.create("db.utf8_keys", "k string not null, v int", primary_keys=["k"], options={"bucket": 1})
    keys = ["a", "B", "é", "z", "ä", "日本", "\uffff", "😀", "", "a\x00", "ab", "Ω", "\U0010ffff"]
    state = {}
    for r in range(3):
        rows = [{"k": k, "v": r * 100 + i} for i, k in enumerate(keys) if (i + r) % 3 != 0 or r == 0]
        ours.write(t, rows)
        _upsert(state, rows, ("k",))
    exp["utf8_keys"] = _sorted(state.values())

    # more than `manifest.merge-min-count` commits, so our commit merges manifests
    t = ours.create(
        "db.many_commits",
        "k int not null, v int",
        primary_keys=["k"],
        options={"bucket": 2, "manifest.merge-min-count": "3", "manifest.target-file-size": "1 kb"},
    )
    state = {}
    for c in range(8):
        rows = [{"k": k, "v": c} for k in range(c, c + 5)]
        ours.write(t, rows)
        _upsert(state, rows, ("k",))
    exp["many_commits"] = _sorted(state.values())

    # precision/length variants (TIMESTAMP(9) and LTZ(3) have no Spark DDL spelling)
    t = ours.create(
        "db.types2",
        [
            ("id", parse_type("INT")),
            ("ts0", parse_type("TIMESTAMP(0)")),
            ("ts9", parse_type("TIMESTAMP(9)")),
            ("ltz3", parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE")),
            ("c", parse_type("CHAR(5)")),
            ("bin4", parse_type("BINARY(4)")),
            ("d38", parse_type("DECIMAL(38, 0)")),
            ("d1", parse_type("DECIMAL(1, 0)")),
        ],
    )
    rows = [
        {
            "id": 1,
            "ts0": dt.datetime(2024, 1, 1, 12, 0, 1),
            "ts9": dt.datetime(1960, 1, 1, 0, 0, 0, 123456),
            "ltz3": dt.datetime(2024, 1, 1, 12, 0, 0, 123000, tzinfo=UTC),
            "c": "abcde",
            "bin4": b"\x01\x02\x03\x04",
            "d38": Decimal("12345678901234567890123456789012345678"),
            "d1": Decimal(-9),
        },
        {"id": 2, "ts0": None, "ts9": None, "ltz3": None, "c": None, "bin4": None, "d38": None, "d1": None},
    ]
    ours.write(t, rows)
    exp["types2"] = _sorted(rows)

    # NULL partition values -> __DEFAULT_PARTITION__
    t = ours.create("db.null_part", "p string, q int, v int", partition_keys=["p", "q"])
    rows = [
        {"p": None, "q": None, "v": 1},
        {"p": "x", "q": None, "v": 2},
        {"p": None, "q": 5, "v": 3},
        {"p": "x", "q": 5, "v": 4},
        {"p": "", "q": 6, "v": 5},
    ]
    ours.write(t, rows)
    # '' shares the __DEFAULT_PARTITION__ directory with NULL, but the BinaryRow keeps '' (readers return '')
    exp["null_part"] = _sorted(rows)

    # written through Spark: a PK table created by the write (keys/options from write options), twice
    uri = table_uri(ours.warehouse, "db.spark_pk")
    df1 = spark.createDataFrame(
        [(i, f"p{i % 2}", f"s{i}", float(i)) for i in range(12)], "id bigint, p string, v string, x double"
    )
    (
        df1.write.format("paimon")
        .mode("append")
        .option("primary-key", "p,id")
        .option("partition", "p")
        .option("bucket", "2")
        .save(uri)
    )
    df2 = spark.createDataFrame(
        [(i, f"p{i % 2}", f"t{i}", None) for i in range(6, 16)], "id bigint, p string, v string, x double"
    )
    # several Spark tasks write the same buckets in one commit
    df2.repartition(3).write.format("paimon").mode("append").save(uri)
    state = {}
    _upsert(state, [{"id": i, "p": f"p{i % 2}", "v": f"s{i}", "x": float(i)} for i in range(12)], ("p", "id"))
    _upsert(state, [{"id": i, "p": f"p{i % 2}", "v": f"t{i}", "x": None} for i in range(6, 16)], ("p", "id"))
    exp["spark_pk@2"] = _sorted(state.values())
    # a dynamic partition overwrite through Spark replaces p0 only
    df3 = spark.createDataFrame([(100, "p0", "over", 1.0)], "id bigint, p string, v string, x double")
    df3.write.format("paimon").mode("overwrite").option("partitionOverwriteMode", "dynamic").save(uri)
    exp["spark_pk"] = _sorted(
        [r for r in state.values() if r["p"] == "p1"] + [{"id": 100, "p": "p0", "v": "over", "x": 1.0}]
    )

    # Spark rich-ish append (Spark's own timestamp/decimal/array/map/struct values), then a Spark overwrite
    uri = table_uri(ours.warehouse, "db.spark_append")
    ddl = (
        "id int, ts timestamp, ntz timestamp_ntz, dec decimal(20,5), arr array<string>, "
        "m map<string,int>, st struct<a:int,b:string>, day date"
    )
    spark_rows = [
        (
            1,
            dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
            dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
            Decimal("123456789012345.12345"),
            ["a", None],
            {"k": 1},
            (1, "one"),
            dt.date(2024, 1, 2),
        ),
        (2, None, None, None, None, None, None, None),
    ]
    spark.createDataFrame(spark_rows, ddl).write.format("paimon").mode("append").save(uri)
    exp["spark_append"] = _sorted(
        [
            {
                "id": 1,
                "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
                "ntz": dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
                "dec": Decimal("123456789012345.12345"),
                "arr": ["a", None],
                "m": [("k", 1)],
                "st": {"a": 1, "b": "one"},
                "day": dt.date(2024, 1, 2),
            },
            {"id": 2, "ts": None, "ntz": None, "dec": None, "arr": None, "m": None, "st": None, "day": None},
        ]
    )

    # mixed history, phase 1: we write; the oracles then append (pypaimon, then rust)
    t = ours.create(
        "db.mixed_ours_first", "k int not null, v string, src string", primary_keys=["k"], options={"bucket": 2}
    )
    ours.write(t, [{"k": k, "v": f"ours1-{k}", "src": "ours"} for k in range(20)])
    t = ours.create("db.mixed_append", "id int, v string", options={"bucket": 2, "bucket-key": "id"})
    ours.write(t, [{"id": i, "v": "ours"} for i in range(5)])


MIXED_PYPAIMON = [[k, f"pypaimon-{k}", "pypaimon"] for k in range(10, 30)]
MIXED_RUST = [[k, f"rust-{k}", "rust"] for k in range(25, 35)]
MIXED_OURS2 = [{"k": k, "v": f"ours2-{k}", "src": "ours"} for k in (0, 1, 12, 27, 33, 40)]

THEIRS_FIRST_SPEC = oracle.table_spec(
    [["id", "BIGINT", False], ["p", "STRING", False], ["v", "STRING"]],
    partition_keys=["p"],
    primary_keys=["p", "id"],
    options={"bucket": 3},
)
THEIRS_PYPAIMON = [[i, f"p{i % 2}", f"pypaimon-{i}"] for i in range(20)]
THEIRS_RUST = [[i, f"p{i % 2}", f"rust-{i}"] for i in range(10, 25)]
THEIRS_BRANCH = [{"id": i, "p": f"p{i % 2}", "v": f"branch-{i}"} for i in (1, 2, 50)]
THEIRS_OURS = [{"id": i, "p": f"p{i % 2}", "v": f"ours-{i}"} for i in (0, 11, 19, 24, 30)]


def _mixed_expected(*layers: list[dict[str, Any]], key: tuple[str, ...]) -> list[dict[str, Any]]:
    state: dict[tuple, dict[str, Any]] = {}
    for layer in layers:
        _upsert(state, layer, key)
    return _sorted(state.values())


READS: dict[str, tuple[str, dict[str, Any]]] = {
    "append_unaware": ("db.append_unaware", {}),
    "append_unaware@1": ("db.append_unaware", {"scan.snapshot-id": 1}),
    "append_fixed": ("db.append_fixed", {}),
    "pk": ("db.pk", {}),
    "pk@1": ("db.pk", {"scan.snapshot-id": 1}),
    "rowkind": ("db.rowkind", {}),
    "part_date": ("db.part_date", {}),
    "overwrite_static": ("db.overwrite_static", {}),
    "overwrite_static@1": ("db.overwrite_static", {"scan.snapshot-id": 1}),
    "overwrite_dynamic": ("db.overwrite_dynamic", {}),
    "evolved": ("db.evolved", {}),
    "evolved@1": ("db.evolved", {"scan.snapshot-id": 1}),
    "evolved_append": ("db.evolved_append", {}),
    "rich": ("db.rich", {}),
    "rich_pk": ("db.rich_pk", {}),
    "decimals": ("db.decimals", {}),
    "null_part": ("db.null_part", {}),
    "partial": ("db.partial", {}),
    "agg": ("db.agg", {}),
    "seq_field": ("db.seq_field", {}),
    "many_files": ("db.many_files", {}),
    "utf8_keys": ("db.utf8_keys", {}),
    "many_commits": ("db.many_commits", {}),
    "types2": ("db.types2", {}),
    "spark_pk": ("db.spark_pk", {}),
    "spark_pk@2": ("db.spark_pk", {"scan.snapshot-id": 2}),
    "spark_append": ("db.spark_append", {}),
}


@pytest.fixture(scope="module")
def world(spark: Any, module_warehouse: str) -> dict[str, Any]:
    ours = Ours(module_warehouse)
    _write_all(ours, spark)

    first = OracleBatch(module_warehouse)
    for key, (identifier, options) in READS.items():
        first.read(key, identifier, options)
    # they append to our tables...
    first.write("db.mixed_ours_first", [MIXED_PYPAIMON])
    first.write("db.mixed_ours_first", [MIXED_RUST], impl="rust")
    first.write("db.mixed_append", [[[i, "pypaimon"] for i in range(3, 8)]])
    first.write("db.mixed_append", [[[i, "rust"] for i in range(6, 9)]], impl="rust")
    first.read("mixed_append", "db.mixed_append")
    # ...and create one for us to append to
    first.write("db.mixed_theirs_first", [THEIRS_PYPAIMON], create=THEIRS_FIRST_SPEC)
    first.write("db.mixed_theirs_first", [THEIRS_RUST], impl="rust")
    # ...and a branch of it (from a tag of snapshot 1) for us to write to
    first.tag("db.mixed_theirs_first", "t1", snapshot_id=1)
    first.branch("db.mixed_theirs_first", "dev", from_tag="t1")
    first.run()

    # phase 2: we append to both mixed tables (ours after theirs, and theirs after ours)
    cat = Catalog(module_warehouse)
    ours.write(cat.get_table("db.mixed_ours_first"), MIXED_OURS2)
    ours.write(cat.get_table("db.mixed_theirs_first"), THEIRS_OURS)
    ours.write(cat.get_table("db.mixed_theirs_first$branch_dev"), THEIRS_BRANCH)
    second = OracleBatch(module_warehouse)
    second.read("mixed_ours_first", "db.mixed_ours_first")
    second.read("mixed_ours_first@3", "db.mixed_ours_first", {"scan.snapshot-id": 3})
    second.read("mixed_theirs_first", "db.mixed_theirs_first")
    second.read("mixed_theirs_first$branch_dev", "db.mixed_theirs_first$branch_dev")
    second.run()

    exp = ours.expected
    mixed_cols = ("k", "v", "src")
    layers = [
        [{"k": k, "v": f"ours1-{k}", "src": "ours"} for k in range(20)],
        [dict(zip(mixed_cols, r)) for r in MIXED_PYPAIMON],
        [dict(zip(mixed_cols, r)) for r in MIXED_RUST],
    ]
    exp["mixed_ours_first@3"] = _mixed_expected(*layers, key=("k",))
    exp["mixed_ours_first"] = _mixed_expected(*layers, MIXED_OURS2, key=("k",))
    exp["mixed_append"] = _sorted(
        [{"id": i, "v": "ours"} for i in range(5)]
        + [{"id": i, "v": "pypaimon"} for i in range(3, 8)]
        + [{"id": i, "v": "rust"} for i in range(6, 9)]
    )
    cols = ("id", "p", "v")
    exp["mixed_theirs_first"] = _mixed_expected(
        [dict(zip(cols, r)) for r in THEIRS_PYPAIMON],
        [dict(zip(cols, r)) for r in THEIRS_RUST],
        THEIRS_OURS,
        key=("p", "id"),
    )
    exp["mixed_theirs_first$branch_dev"] = _mixed_expected(
        [dict(zip(cols, r)) for r in THEIRS_PYPAIMON], THEIRS_BRANCH, key=("p", "id")
    )
    tables = {**first.tables, **second.tables}
    return {"expected": exp, "tables": tables, "warehouse": module_warehouse}


ALL_KEYS = [
    *READS,
    "mixed_append",
    "mixed_ours_first",
    "mixed_ours_first@3",
    "mixed_theirs_first",
    "mixed_theirs_first$branch_dev",
]


def _identifier_and_options(key: str) -> tuple[str, dict[str, Any]]:
    if key in READS:
        return READS[key]
    if key.endswith("@3"):
        return f"db.{key[:-2]}", {"scan.snapshot-id": 3}
    return f"db.{key}", {}


@pytest.mark.parametrize("key", ALL_KEYS)
def test_they_read_what_we_wrote(world: dict[str, Any], key: str) -> None:
    tables = world["tables"][key]
    theirs = assert_oracles_agree(tables, key)
    assert canonical_rows(theirs) == world["expected"][key]
    identifier, options = _identifier_and_options(key)
    # ...and we read our own table the same way they do (same column names and logical types)
    assert_same_table(ours_arrow(table_uri(world["warehouse"], identifier), options), theirs, key)


@pytest.mark.parametrize("key", ["pk", "mixed_ours_first", "mixed_theirs_first", "spark_append", "rowkind"])
def test_spark_reads_the_mixed_tables(spark: Any, world: dict[str, Any], key: str) -> None:
    identifier, options = _identifier_and_options(key)
    ours = ours_spark(spark, table_uri(world["warehouse"], identifier), options)
    assert canonical_rows(ours) == world["expected"][key]


@pytest.mark.parametrize("identifier", ["db.mixed_ours_first", "db.mixed_theirs_first"])
def test_sequence_numbers_continue_across_writers(world: dict[str, Any], identifier: str) -> None:
    """Each writer (us, pypaimon, rust, in some order) starts a bucket at the previous max + 1 (Java's
    `MergeTreeWriter`)."""
    from pyspark_paimon import Table

    table = Table.open(table_uri(world["warehouse"], identifier))
    store = table.store
    by_bucket: dict[tuple[bytes, int], list[tuple[int, int, int]]] = {}
    for snapshot in table.snapshots():
        delta = store.manifests.read_entries(store.manifests.read_list(snapshot.delta_manifest_list))
        for e in delta:
            by_bucket.setdefault((e.partition, e.bucket), []).append(
                (snapshot.id, e.file.min_sequence_number, e.file.max_sequence_number)
            )
    assert len(table.snapshots()) == (4 if identifier == "db.mixed_ours_first" else 3)
    for key, files in by_bucket.items():
        files.sort()
        assert files[0][1] == 0, key
        for (_, _, prev_max), (snap, lo, hi) in zip(files, files[1:]):
            assert lo == prev_max + 1, f"bucket {key}: snapshot {snap} starts at {lo} after {prev_max}"
            assert hi >= lo
    assert any(len({f[0] for f in files}) >= 3 for files in by_bucket.values())
