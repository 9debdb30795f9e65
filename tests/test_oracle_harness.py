"""Self-tests of the interop oracle harness (tests/oracle): pypaimon writes, pypaimon and pypaimon-rust read.

These pin down what the oracles agree on before any pyspark-paimon test relies on them: append and
primary-key tables over several commits (updates and -U/+U/-D row kinds), time travel, tags, branches and
schema evolution. A missing oracle venv makes these tests FAIL with the setup command: CI installs it.

Every table is written, tagged, branched, evolved, inspected and read in ONE oracle process (the module
fixture `harness`, an `OracleBatch`; each case in its own database of one warehouse), because each oracle
process costs about a second of pypaimon import. The tests then check the recorded results. The harness's
own failure modes (a missing venv, an oracle error's message) still run through the unbatched entry points
they are about.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pyarrow as pa
import pytest

from tests.interop.helpers import OracleBatch

try:
    from tests import oracle
except ImportError:  # plain `pytest` puts tests/ (not the repo root) on sys.path
    import oracle  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

ROW_KIND = "_row_kind"


class Harness:
    """The module's one `OracleBatch` plus names for the commands whose results the tests check."""

    def __init__(self, warehouse: Path) -> None:
        self.warehouse = warehouse
        self.batch = OracleBatch(warehouse)
        self._named: dict[str, int] = {}

    def name(self, key: str, index: int) -> None:
        """Remember command `index` (as returned by `OracleBatch.write` & co.) under `key`."""
        self._named[key] = index

    def result(self, key: str) -> dict[str, Any]:
        return self.batch.results[self._named[key]]

    def read(self, key: str) -> dict[str, pa.Table]:
        return self.batch.tables[key]


def assert_oracles_read(
    tables: Mapping[str, pa.Table],
    expected: Sequence[Mapping[str, Any]],
    drop: Sequence[str] = (ROW_KIND,),
) -> pa.Table:
    """Both oracles' reads of one table: they must agree with each other (values and Arrow types) and
    `expected`."""
    by_pypaimon, by_rust = tables["pypaimon"], tables["rust"]
    by_pypaimon = by_pypaimon.drop_columns([c for c in drop if c in by_pypaimon.column_names])
    by_rust = by_rust.drop_columns([c for c in drop if c in by_rust.column_names])
    assert [(f.name, f.type) for f in by_rust.schema] == [(f.name, f.type) for f in by_pypaimon.schema]
    assert by_rust.to_pylist() == by_pypaimon.to_pylist()
    assert by_pypaimon.to_pylist() == list(expected)
    return by_pypaimon


def _db(group: str, case: str) -> str:
    """One database per case, so the cases share the warehouse but no table."""
    return f"{group}_{case.replace('-', '_')}"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    """Build every table of the module and run all oracle commands in one oracle process."""
    h = Harness(tmp_path_factory.mktemp("harness"))
    for case, options in APPEND_CASES.items():
        _build_append(h, case, options)
    for case, bucket in PK_CASES.items():
        _build_pk(h, case, bucket)
    _build_upserts(h)
    for case, (engine_options, _) in MERGE_ENGINE_CASES.items():
        _build_merge_engine(h, case, engine_options)
    _build_tags_branches_evolution(h)
    _build_rust_writer(h)
    for case, engine_options in LEVEL0_CASES.items():
        _build_level0(h, case, engine_options)
    h.batch.run()
    yield h


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
APPEND_CASES: dict[str, dict[str, Any]] = {"unaware": {}, "fixed-bucket": {"bucket": 3, "bucket-key": "id"}}


def _build_append(h: Harness, case: str, options: dict[str, Any]) -> None:
    identifier = f"{_db('append', case)}.events"
    spec = oracle.table_spec(APPEND_COLUMNS, partition_keys=["dt"], options=options)
    written = h.batch.write(
        identifier,
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
    h.name(f"append-{case}", written)
    h.batch.read(f"append-{case}", identifier)
    h.batch.read(f"append-{case}@1", identifier, {"scan.snapshot-id": 1})


@pytest.mark.parametrize("case", list(APPEND_CASES))
def test_append_table_three_commits(harness: Harness, case: str) -> None:
    assert harness.result(f"append-{case}") == {"created": True, "snapshot_ids": [1, 2, 3]}

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
    table = assert_oracles_read(harness.read(f"append-{case}"), expected)
    assert table.schema.field("amount").type == pa.decimal128(10, 2)
    assert table.schema.field("ts").type == pa.timestamp("us")
    assert_oracles_read(harness.read(f"append-{case}@1"), [expected[0], expected[2]])


# ------------------------------------------------------------------------------- primary-key tables

PK_COLUMNS = [
    ["id", "BIGINT", False],
    ["dt", "STRING", False],
    ["name", "STRING"],
    ["amount", "DECIMAL(10, 2)"],
    ["updated", "TIMESTAMP(3) WITH LOCAL TIME ZONE"],
]
PK_CASES = {"fixed-bucket": 2, "dynamic-bucket": -1}


def _pk_row(id_: int, dt_: str, name: str, amount: str | None) -> dict[str, Any]:
    return {"id": id_, "dt": dt_, "name": name, "amount": Decimal(amount) if amount else None, "updated": None}


def _build_pk(h: Harness, case: str, bucket: int) -> None:
    identifier = f"{_db('pk', case)}.orders"
    spec = oracle.table_spec(
        PK_COLUMNS,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": bucket, "rowkind.field": ROW_KIND},
    )
    written = h.batch.write(
        identifier,
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
    h.name(f"pk-{case}", written)
    h.batch.read(f"pk-{case}", identifier)
    h.batch.read(f"pk-{case}@1", identifier, {"scan.snapshot-id": 1})
    h.batch.read(f"pk-{case}@2", identifier, {"scan.snapshot-id": 2})
    h.batch.read(f"pk-{case}-by-rust", identifier, impls=("rust",))


@pytest.mark.parametrize("case", list(PK_CASES))
def test_pk_table_update_and_delete(harness: Harness, case: str) -> None:
    assert harness.result(f"pk-{case}")["snapshot_ids"] == [1, 2, 3]

    four = {
        **_pk_row(4, "b", "four", None),
        "updated": dt.datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=dt.timezone.utc),
    }
    latest = assert_oracles_read(
        harness.read(f"pk-{case}"),
        [_pk_row(1, "a", "ONE", "1.50"), _pk_row(3, "b", "THREE", "3.50"), four, _pk_row(5, "a", "five", "5.00")],
    )
    assert latest.schema.field("updated").type == pa.timestamp("ms", tz="UTC")
    assert_oracles_read(
        harness.read(f"pk-{case}@1"),
        [_pk_row(1, "a", "one", "1.00"), _pk_row(2, "a", "two", None), _pk_row(3, "b", "three", "3.00"), four],
    )
    assert_oracles_read(
        harness.read(f"pk-{case}@2"),
        [_pk_row(1, "a", "ONE", "1.50"), _pk_row(2, "a", "two", None), _pk_row(3, "b", "THREE", "3.50"), four],
    )
    # The row-kind column is an ordinary column: it keeps the kind of the surviving row.
    kinds = harness.read(f"pk-{case}-by-rust")["rust"].column(ROW_KIND).to_pylist()
    assert kinds == ["+U", "+I", "+I", "+I"]


UPSERTS = "kv.kv"


def _build_upserts(h: Harness) -> None:
    spec = oracle.table_spec([["k", "INT", False], ["v", "STRING"]], primary_keys=["k"], options={"bucket": 1})
    h.batch.write(UPSERTS, [[[1, "a"], [2, "b"]], [[1, "a2"]], [[2, "b2"], [3, "c"]]], create=spec)
    h.batch.read("upserts", UPSERTS)


def test_pk_table_without_rowkind_field_upserts(harness: Harness) -> None:
    assert_oracles_read(harness.read("upserts"), [{"k": 1, "v": "a2"}, {"k": 2, "v": "b2"}, {"k": 3, "v": "c"}])
    # A failing command ends a batch, so the refused write runs on its own (it commits nothing).
    with pytest.raises(oracle.OracleError, match="rowkind.field"):
        oracle.pypaimon_write(harness.warehouse, UPSERTS, [{"rows": [[1]], "kinds": ["-D"]}])


MERGE_ENGINE_CASES: dict[str, tuple[dict[str, str], dict[str, int]]] = {
    "partial-update": ({"merge-engine": "partial-update"}, {"k": 1, "a": 2, "b": 5}),
    "aggregation": (
        {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "max"},
        {"k": 1, "a": 3, "b": 20},
    ),
}


def _build_merge_engine(h: Harness, case: str, engine_options: dict[str, str]) -> None:
    identifier = f"{_db('merge', case)}.m"
    spec = oracle.table_spec(
        [["k", "INT", False], ["a", "INT"], ["b", "INT"]], primary_keys=["k"], options={"bucket": 1, **engine_options}
    )
    h.batch.write(identifier, [[[1, 1, None]], [[1, 2, 20]], [[1, None, 5]]], create=spec)
    h.batch.read(f"merge-{case}", identifier)


@pytest.mark.parametrize("case", list(MERGE_ENGINE_CASES))
def test_pk_merge_engines(harness: Harness, case: str) -> None:
    _, expected = MERGE_ENGINE_CASES[case]
    assert_oracles_read(harness.read(f"merge-{case}"), [expected])


# ------------------------------------------------------------------ tags, branches, schema evolution

EVOLVED = "evolve.t"


def _build_tags_branches_evolution(h: Harness) -> None:
    spec = oracle.table_spec(
        [["id", "INT", False], ["name", "STRING"], ["score", "DOUBLE"], ["cnt", "INT"]],
        primary_keys=["id"],
        options={"bucket": 1, "rowkind.field": ROW_KIND},
    )
    h.batch.write(EVOLVED, [[[1, "a", 1.0, 10], [2, "b", 2.0, 20]]], create=spec)
    h.name("evolve-tag", h.batch.tag(EVOLVED, "v1"))
    h.batch.write(EVOLVED, [{"rows": [[2, "b"]], "kinds": ["-D"]}])
    h.name("evolve-branch-dev", h.batch.branch(EVOLVED, "dev", from_tag="v1"))
    h.name("evolve-branch-empty", h.batch.branch(EVOLVED, "empty"))
    h.batch.write(f"{EVOLVED}$branch_dev", [[[3, "c", 3.0, 30]]])
    evolved = h.batch.evolve(
        EVOLVED,
        [
            oracle.add_column("note", "STRING"),
            oracle.rename_column("name", "label"),
            oracle.drop_column("score"),
            oracle.update_column_type("cnt", "BIGINT"),
            oracle.set_option("snapshot.num-retained.min", 5),
        ],
    )
    h.name("evolve-schema", evolved)
    h.batch.write(EVOLVED, [{"rows": [{"id": 4, "label": "d", "cnt": 2**40, "note": "new"}]}])
    h.batch.read("evolve-latest", EVOLVED)
    h.batch.read("evolve-tag-v1", EVOLVED, {"scan.tag-name": "v1"})
    h.batch.read("evolve@1", EVOLVED, {"scan.snapshot-id": 1})
    h.batch.read("evolve-dev", f"{EVOLVED}$branch_dev")
    h.batch.read("evolve-empty-by-rust", f"{EVOLVED}$branch_empty", impls=("rust",))
    for impl in ("pypaimon", "rust"):
        h.name(f"evolve-inspect-{impl}", h.batch.inspect(EVOLVED, impl))


def test_tags_branches_and_schema_evolution(harness: Harness) -> None:
    assert int(harness.result("evolve-tag")["snapshot_id"]) == 1
    assert harness.result("evolve-branch-dev")["branches"] == ["dev"]
    assert harness.result("evolve-branch-empty")["branches"] == ["dev", "empty"]
    assert int(harness.result("evolve-schema")["schema_id"]) == 1

    latest = assert_oracles_read(
        harness.read("evolve-latest"),
        [{"id": 1, "label": "a", "cnt": 10, "note": None}, {"id": 4, "label": "d", "cnt": 2**40, "note": "new"}],
    )
    assert latest.schema.field("cnt").type == pa.int64()  # old INT files are widened on read
    # Time travel reads with the schema of the snapshot (the old column names).
    v1 = [{"id": 1, "name": "a", "score": 1.0, "cnt": 10}, {"id": 2, "name": "b", "score": 2.0, "cnt": 20}]
    assert_oracles_read(harness.read("evolve-tag-v1"), v1)
    assert_oracles_read(harness.read("evolve@1"), v1)
    assert_oracles_read(harness.read("evolve-dev"), [*v1, {"id": 3, "name": "c", "score": 3.0, "cnt": 30}])
    empty = harness.read("evolve-empty-by-rust")["rust"]
    assert empty.num_rows == 0 and empty.column_names == ["id", "name", "score", "cnt", ROW_KIND]

    for impl in ("pypaimon", "rust"):
        info = harness.result(f"evolve-inspect-{impl}")
        assert [s["id"] for s in info["snapshots"]] == [1, 2, 3]
        assert info["tags"] == {"v1": 1}
        assert [f[1] for f in info["schema"]["fields"]] == ["id", "label", "cnt", ROW_KIND, "note"]
    assert harness.result("evolve-inspect-pypaimon")["branches"] == ["dev", "empty"]


# -------------------------------------------------------------------------- rust as a second writer

RUST_WRITTEN = "rust.r"


def _build_rust_writer(h: Harness) -> None:
    spec = oracle.table_spec(
        [["id", "BIGINT", False], ["p", "STRING", False], ["v", "STRING"]],
        partition_keys=["p"],
        primary_keys=["p", "id"],
        options={"bucket": 2, "rowkind.field": ROW_KIND},
    )
    written = h.batch.write(
        RUST_WRITTEN,
        [
            [[1, "x", "a"], [2, "x", "b"], [3, "y", "c"]],
            {"rows": [[2, "x"], [3, "y", "c2"]], "kinds": ["-D", "+U"]},
        ],
        create=spec,
        impl="rust",
    )
    h.name("rust-write", written)
    h.batch.read("rust-written", RUST_WRITTEN)
    # pypaimon and rust commits interleave on one table.
    h.batch.write(RUST_WRITTEN, [{"rows": [[1, "x", "a2"]], "overwrite": {"p": "x"}}])
    h.batch.read("rust-then-pypaimon", RUST_WRITTEN)


def test_rust_writes_pypaimon_reads(harness: Harness) -> None:
    assert harness.result("rust-write") == {"created": True, "snapshot_ids": [1, 2]}
    assert_oracles_read(harness.read("rust-written"), [{"id": 1, "p": "x", "v": "a"}, {"id": 3, "p": "y", "v": "c2"}])
    assert_oracles_read(
        harness.read("rust-then-pypaimon"), [{"id": 1, "p": "x", "v": "a2"}, {"id": 3, "p": "y", "v": "c2"}]
    )


LEVEL0_CASES: dict[str, dict[str, str]] = {
    "first-row": {"merge-engine": "first-row"},
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
}


def _build_level0(h: Harness, case: str, engine_options: dict[str, str]) -> None:
    identifier = f"{_db('level0', case)}.l0"
    spec = oracle.table_spec(
        [["k", "INT", False], ["v", "STRING"]], primary_keys=["k"], options={"bucket": 1, **engine_options}
    )
    h.batch.write(identifier, [[[1, "a"], [2, "b"]], [[1, "a2"]]], create=spec)
    h.batch.read(f"level0-{case}", identifier)
    if "deletion-vectors.enabled" in engine_options:  # opt-in merge-on-read sees level 0
        h.batch.read(f"level0-{case}-merge-on-read", identifier, {"deletion-vectors.merge-on-read": "true"})


@pytest.mark.parametrize("case", list(LEVEL0_CASES))
def test_pypaimon_leaves_level0_files_that_batch_reads_skip(harness: Harness, case: str) -> None:
    """pypaimon never compacts, and batch reads of first-row / deletion-vector tables skip level-0 files, so
    such tables written by pypaimon read empty in both oracles (as in Java) until something compacts them."""
    assert_oracles_read(harness.read(f"level0-{case}"), [])
    if "deletion-vectors.enabled" in LEVEL0_CASES[case]:
        assert_oracles_read(harness.read(f"level0-{case}-merge-on-read"), [{"k": 1, "v": "a2"}, {"k": 2, "v": "b"}])
