"""Self-tests of the interop oracle harness (tests/oracle): pypaimon writes, pypaimon and pypaimon-rust read.

These pin down what the oracles agree on before any pyspark-paimon test relies on them: append and
primary-key tables over several commits (updates and -U/+U/-D row kinds), time travel, tags, branches and
schema evolution. A missing oracle venv makes these tests FAIL with the setup command: CI installs it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pytest

try:
    from tests import oracle
except ImportError:  # plain `pytest` puts tests/ (not the repo root) on sys.path
    import oracle  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

ROW_KIND = "_row_kind"


def assert_oracles_read(
    warehouse: Path,
    identifier: str,
    expected: Sequence[Mapping[str, Any]],
    options: Mapping[str, Any] | None = None,
    drop: Sequence[str] = (ROW_KIND,),
) -> pa.Table:
    """Read with both oracles; they must agree with each other (values and Arrow types) and `expected`."""
    results = oracle.read_with(["pypaimon", "rust"], warehouse, identifier, options)
    by_pypaimon, by_rust = results["pypaimon"], results["rust"]
    by_pypaimon = by_pypaimon.drop_columns([c for c in drop if c in by_pypaimon.column_names])
    by_rust = by_rust.drop_columns([c for c in drop if c in by_rust.column_names])
    assert [(f.name, f.type) for f in by_rust.schema] == [(f.name, f.type) for f in by_pypaimon.schema]
    assert by_rust.to_pylist() == by_pypaimon.to_pylist()
    assert by_pypaimon.to_pylist() == list(expected)
    return by_pypaimon


# ------------------------------------------------------------------------------------------ the venv


def test_oracle_venv_is_installed_with_pinned_versions() -> None:
    pins = dict(
        line.split("==") for line in oracle.REQUIREMENTS.read_text().splitlines() if line and not line.startswith("#")
    )
    found = oracle.versions()
    assert found["pypaimon"] == pins["pypaimon"]
    assert found["pypaimon_rust"] == pins["pypaimon-rust"]
    assert found["pyarrow"] == pins["pyarrow"]


def test_missing_oracle_venv_fails_with_setup_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAIMON_ORACLE_PYTHON", str(tmp_path / "no-such-python"))
    assert oracle.oracle_python() is None
    with pytest.raises(oracle.OracleUnavailableError, match="pip install -r tests/oracle/requirements.txt"):
        oracle.versions()


def test_oracle_errors_carry_the_oracle_message(tmp_path: Path) -> None:
    with pytest.raises(oracle.OracleError, match="does not exist and the command has no 'create' spec"):
        oracle.pypaimon_write(tmp_path, "db.missing", [[{"id": 1}]])


# ------------------------------------------------------------------------------------ append tables

APPEND_COLUMNS = [
    ["id", "BIGINT"],
    ["dt", "STRING"],
    ["amount", "DECIMAL(10, 2)"],
    ["ts", "TIMESTAMP(6)"],
    ["day", "DATE"],
    ["tags", "ARRAY<STRING>"],
    ["attrs", "MAP<STRING, INT>"],
    ["point", "ROW<x INT, y DOUBLE>"],
    ["raw", "BYTES"],
]


@pytest.mark.parametrize("options", [{}, {"bucket": 3, "bucket-key": "id"}], ids=["unaware", "fixed-bucket"])
def test_append_table_three_commits(tmp_path: Path, options: dict[str, Any]) -> None:
    spec = oracle.table_spec(APPEND_COLUMNS, partition_keys=["dt"], options=options)
    result = oracle.pypaimon_write(
        tmp_path,
        "db.events",
        [
            [
                {
                    "id": 1,
                    "dt": "2024-01-01",
                    "amount": "10.50",
                    "ts": "2024-01-01 08:00:00.123456",
                    "day": "2024-01-01",
                    "tags": ["a", None],
                    "attrs": {"k": 1},
                    "point": {"x": 1, "y": 2.5},
                    "raw": "00ff",
                },
                {"id": 2, "dt": "2024-01-02"},
            ],
            # Positional rows and an Arrow table (spilled to IPC, cast to the table's types by the oracle).
            [[3, "2024-01-01", "-1.25", None, "2024-02-29"]],
            pa.table({"id": pa.array([4, 1], pa.int32()), "dt": ["2024-01-02", "2024-01-01"]}),
        ],
        create=spec,
    )
    assert result == {"created": True, "snapshot_ids": [1, 2, 3]}

    empty = {"amount": None, "ts": None, "day": None, "tags": None, "attrs": None, "point": None, "raw": None}
    expected = [
        {
            "id": 1,
            "dt": "2024-01-01",
            "amount": Decimal("10.50"),
            "ts": dt.datetime(2024, 1, 1, 8, 0, 0, 123456),
            "day": dt.date(2024, 1, 1),
            "tags": ["a", None],
            "attrs": [("k", 1)],
            "point": {"x": 1, "y": 2.5},
            "raw": b"\x00\xff",
        },
        {**empty, "id": 1, "dt": "2024-01-01"},
        {**empty, "id": 2, "dt": "2024-01-02"},
        {**empty, "id": 3, "dt": "2024-01-01", "amount": Decimal("-1.25"), "day": dt.date(2024, 2, 29)},
        {**empty, "id": 4, "dt": "2024-01-02"},
    ]
    table = assert_oracles_read(tmp_path, "db.events", expected)
    assert table.schema.field("amount").type == pa.decimal128(10, 2)
    assert table.schema.field("ts").type == pa.timestamp("us")
    assert_oracles_read(tmp_path, "db.events", [expected[0], expected[2]], options={"scan.snapshot-id": 1})


# ------------------------------------------------------------------------------- primary-key tables

PK_COLUMNS = [
    ["id", "BIGINT", False],
    ["dt", "STRING", False],
    ["name", "STRING"],
    ["amount", "DECIMAL(10, 2)"],
    ["updated", "TIMESTAMP(3) WITH LOCAL TIME ZONE"],
]


def _pk_row(id_: int, dt_: str, name: str, amount: str | None) -> dict[str, Any]:
    return {"id": id_, "dt": dt_, "name": name, "amount": Decimal(amount) if amount else None, "updated": None}


@pytest.mark.parametrize("bucket", [2, -1], ids=["fixed-bucket", "dynamic-bucket"])
def test_pk_table_update_and_delete(tmp_path: Path, bucket: int) -> None:
    spec = oracle.table_spec(
        PK_COLUMNS,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": bucket, "rowkind.field": ROW_KIND},
    )
    result = oracle.pypaimon_write(
        tmp_path,
        "db.orders",
        [
            [
                {"id": 1, "dt": "a", "name": "one", "amount": "1.00"},
                {"id": 2, "dt": "a", "name": "two"},
                {"id": 3, "dt": "b", "name": "three", "amount": "3.00"},
                {"id": 4, "dt": "b", "name": "four", "updated": "2024-05-01T12:00:00.250Z"},
            ],
            # update: explicit -U/+U pair for id 1, a plain upsert (+I) for id 3
            {
                "rows": [[1, "a", "one", "1.00"], [1, "a", "ONE", "1.50"], [3, "b", "THREE", "3.50"]],
                "kinds": ["-U", "+U", "+I"],
            },
            # delete id 2 (-D needs only the key), insert id 5
            {"rows": [[2, "a"], [5, "a", "five", "5.00"]], "kinds": ["-D", "+I"]},
        ],
        create=spec,
    )
    assert result["snapshot_ids"] == [1, 2, 3]

    four = {
        **_pk_row(4, "b", "four", None),
        "updated": dt.datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=dt.timezone.utc),
    }
    latest = assert_oracles_read(
        tmp_path,
        "db.orders",
        [_pk_row(1, "a", "ONE", "1.50"), _pk_row(3, "b", "THREE", "3.50"), four, _pk_row(5, "a", "five", "5.00")],
    )
    assert latest.schema.field("updated").type == pa.timestamp("ms", tz="UTC")
    assert_oracles_read(
        tmp_path,
        "db.orders",
        [_pk_row(1, "a", "one", "1.00"), _pk_row(2, "a", "two", None), _pk_row(3, "b", "three", "3.00"), four],
        options={"scan.snapshot-id": 1},
    )
    assert_oracles_read(
        tmp_path,
        "db.orders",
        [_pk_row(1, "a", "ONE", "1.50"), _pk_row(2, "a", "two", None), _pk_row(3, "b", "THREE", "3.50"), four],
        options={"scan.snapshot-id": 2},
    )
    # The row-kind column is an ordinary column: it keeps the kind of the surviving row.
    kinds = oracle.rust_read(tmp_path, "db.orders").column(ROW_KIND).to_pylist()
    assert kinds == ["+U", "+I", "+I", "+I"]


def test_pk_table_without_rowkind_field_upserts(tmp_path: Path) -> None:
    spec = oracle.table_spec([["k", "INT", False], ["v", "STRING"]], primary_keys=["k"], options={"bucket": 1})
    oracle.pypaimon_write(tmp_path, "db.kv", [[[1, "a"], [2, "b"]], [[1, "a2"]], [[2, "b2"], [3, "c"]]], create=spec)
    assert_oracles_read(tmp_path, "db.kv", [{"k": 1, "v": "a2"}, {"k": 2, "v": "b2"}, {"k": 3, "v": "c"}])
    with pytest.raises(oracle.OracleError, match="rowkind.field"):
        oracle.pypaimon_write(tmp_path, "db.kv", [{"rows": [[1]], "kinds": ["-D"]}])


@pytest.mark.parametrize(
    "engine_options, expected",
    [
        ({"merge-engine": "partial-update"}, {"k": 1, "a": 2, "b": 5}),
        (
            {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "max"},
            {"k": 1, "a": 3, "b": 20},
        ),
    ],
    ids=["partial-update", "aggregation"],
)
def test_pk_merge_engines(tmp_path: Path, engine_options: dict[str, str], expected: dict[str, int]) -> None:
    spec = oracle.table_spec(
        [["k", "INT", False], ["a", "INT"], ["b", "INT"]], primary_keys=["k"], options={"bucket": 1, **engine_options}
    )
    oracle.pypaimon_write(tmp_path, "db.m", [[[1, 1, None]], [[1, 2, 20]], [[1, None, 5]]], create=spec)
    assert_oracles_read(tmp_path, "db.m", [expected])


# ------------------------------------------------------------------ tags, branches, schema evolution


def test_tags_branches_and_schema_evolution(tmp_path: Path) -> None:
    spec = oracle.table_spec(
        [["id", "INT", False], ["name", "STRING"], ["score", "DOUBLE"], ["cnt", "INT"]],
        primary_keys=["id"],
        options={"bucket": 1, "rowkind.field": ROW_KIND},
    )
    oracle.pypaimon_write(tmp_path, "db.t", [[[1, "a", 1.0, 10], [2, "b", 2.0, 20]]], create=spec)
    assert oracle.pypaimon_create_tag(tmp_path, "db.t", "v1") == 1
    oracle.pypaimon_write(tmp_path, "db.t", [{"rows": [[2, "b"]], "kinds": ["-D"]}])
    assert oracle.pypaimon_create_branch(tmp_path, "db.t", "dev", from_tag="v1") == ["dev"]
    assert oracle.pypaimon_create_branch(tmp_path, "db.t", "empty") == ["dev", "empty"]
    oracle.pypaimon_write(tmp_path, "db.t$branch_dev", [[[3, "c", 3.0, 30]]])

    schema_id = oracle.pypaimon_evolve(
        tmp_path,
        "db.t",
        [
            oracle.add_column("note", "STRING"),
            oracle.rename_column("name", "label"),
            oracle.drop_column("score"),
            oracle.update_column_type("cnt", "BIGINT"),
            oracle.set_option("snapshot.num-retained.min", 5),
        ],
    )
    assert schema_id == 1
    oracle.pypaimon_write(tmp_path, "db.t", [{"rows": [{"id": 4, "label": "d", "cnt": 2**40, "note": "new"}]}])

    latest = assert_oracles_read(
        tmp_path,
        "db.t",
        [{"id": 1, "label": "a", "cnt": 10, "note": None}, {"id": 4, "label": "d", "cnt": 2**40, "note": "new"}],
    )
    assert latest.schema.field("cnt").type == pa.int64()  # old INT files are widened on read
    # Time travel reads with the schema of the snapshot (the old column names).
    v1 = [{"id": 1, "name": "a", "score": 1.0, "cnt": 10}, {"id": 2, "name": "b", "score": 2.0, "cnt": 20}]
    assert_oracles_read(tmp_path, "db.t", v1, options={"scan.tag-name": "v1"})
    assert_oracles_read(tmp_path, "db.t", v1, options={"scan.snapshot-id": 1})
    assert_oracles_read(tmp_path, "db.t$branch_dev", [*v1, {"id": 3, "name": "c", "score": 3.0, "cnt": 30}])
    empty = oracle.rust_read(tmp_path, "db.t$branch_empty")
    assert empty.num_rows == 0 and empty.column_names == ["id", "name", "score", "cnt", ROW_KIND]

    for impl in ("pypaimon", "rust"):
        info = oracle.inspect(impl, tmp_path, "db.t")
        assert [s["id"] for s in info["snapshots"]] == [1, 2, 3]
        assert info["tags"] == {"v1": 1}
        assert [f[1] for f in info["schema"]["fields"]] == ["id", "label", "cnt", ROW_KIND, "note"]
    assert oracle.inspect("pypaimon", tmp_path, "db.t")["branches"] == ["dev", "empty"]


# -------------------------------------------------------------------------- rust as a second writer


def test_rust_writes_pypaimon_reads(tmp_path: Path) -> None:
    spec = oracle.table_spec(
        [["id", "BIGINT", False], ["p", "STRING", False], ["v", "STRING"]],
        partition_keys=["p"],
        primary_keys=["p", "id"],
        options={"bucket": 2, "rowkind.field": ROW_KIND},
    )
    result = oracle.rust_write(
        tmp_path,
        "db.r",
        [
            [[1, "x", "a"], [2, "x", "b"], [3, "y", "c"]],
            {"rows": [[2, "x"], [3, "y", "c2"]], "kinds": ["-D", "+U"]},
        ],
        create=spec,
    )
    assert result == {"created": True, "snapshot_ids": [1, 2]}
    assert_oracles_read(tmp_path, "db.r", [{"id": 1, "p": "x", "v": "a"}, {"id": 3, "p": "y", "v": "c2"}])
    # pypaimon and rust commits interleave on one table.
    oracle.pypaimon_write(tmp_path, "db.r", [{"rows": [[1, "x", "a2"]], "overwrite": {"p": "x"}}])
    assert_oracles_read(tmp_path, "db.r", [{"id": 1, "p": "x", "v": "a2"}, {"id": 3, "p": "y", "v": "c2"}])


@pytest.mark.parametrize(
    "engine_options",
    [{"merge-engine": "first-row"}, {"deletion-vectors.enabled": "true"}],
    ids=["first-row", "deletion-vectors"],
)
def test_pypaimon_leaves_level0_files_that_batch_reads_skip(tmp_path: Path, engine_options: dict[str, str]) -> None:
    """pypaimon never compacts, and batch reads of first-row / deletion-vector tables skip level-0 files, so
    such tables written by pypaimon read empty in both oracles (as in Java) until something compacts them."""
    spec = oracle.table_spec(
        [["k", "INT", False], ["v", "STRING"]], primary_keys=["k"], options={"bucket": 1, **engine_options}
    )
    oracle.pypaimon_write(tmp_path, "db.l0", [[[1, "a"], [2, "b"]], [[1, "a2"]]], create=spec)
    assert_oracles_read(tmp_path, "db.l0", [])
    if "deletion-vectors.enabled" in engine_options:  # opt-in merge-on-read sees level 0
        assert_oracles_read(
            tmp_path,
            "db.l0",
            [{"k": 1, "v": "a2"}, {"k": 2, "v": "b"}],
            options={"deletion-vectors.merge-on-read": "true"},
        )
