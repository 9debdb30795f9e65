"""``data-file.path-directory`` across implementations: data files live below that directory of the table,
whoever writes them, and every implementation reads every other's files there.

Both oracles support the option (pypaimon 2.1.0 through its path factory, pypaimon-rust 0.4.0 too). pypaimon
creates and writes one table, pypaimon-rust appends to it, we append last; we create and write another and
both oracles read it. One oracle process per phase.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from tests.interop.helpers import OracleBatch, assert_oracles_agree, canonical_rows, ours_arrow, table_uri

try:
    from tests import oracle
except ImportError:  # pragma: no cover
    import oracle  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

OPTIONS = {"bucket": 2, "data-file.path-directory": "data/dir"}
SPEC = oracle.table_spec(
    [["id", "BIGINT", False], ["p", "STRING", False], ["v", "STRING"]],
    partition_keys=["p"],
    primary_keys=["p", "id"],
    options=OPTIONS,
)
PYPAIMON_ROWS = [[i, f"p{i % 2}", f"pypaimon-{i}"] for i in range(10)]
RUST_ROWS = [[i, f"p{i % 2}", f"rust-{i}"] for i in range(5, 12)]
OUR_ROWS = [{"id": i, "p": f"p{i % 2}", "v": f"ours-{i}"} for i in (0, 11, 20)]


def _expected(*layers: list[Any]) -> list[dict[str, Any]]:
    state: dict[tuple[Any, Any], dict[str, Any]] = {}
    for layer in layers:
        for row in layer:
            r = row if isinstance(row, dict) else dict(zip(("id", "p", "v"), row))
            state[(r["p"], r["id"])] = dict(r)
    return canonical_rows(pa.Table.from_pylist(list(state.values())))


def _data_files(table_dir: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), table_dir)
        for d, _, fs in os.walk(table_dir)
        for f in fs
        if f.endswith(".parquet")
    )


@pytest.fixture(scope="module")
def world(module_warehouse: str) -> dict[str, Any]:
    first = OracleBatch(module_warehouse)
    first.write("db.theirs", [PYPAIMON_ROWS], create=SPEC)
    first.write("db.theirs", [RUST_ROWS], impl="rust")
    first.read("theirs", "db.theirs")
    # ...and a table of ours, created and written by us before the oracles read it
    cat = Catalog(module_warehouse)
    ours = cat.create_table(
        "db.ours",
        "id bigint not null, p string not null, v string",
        partition_keys=["p"],
        primary_keys=["p", "id"],
        options={k: str(v) for k, v in OPTIONS.items()},
    )
    ours.write_arrow(pa.Table.from_pylist(OUR_ROWS, schema=ours.schema.arrow_schema()))
    first.read("ours", "db.ours")
    first.run()
    theirs_files = _data_files(table_uri(module_warehouse, "db.theirs"))
    # we append to their table last; pypaimon and rust read it once more
    theirs = cat.get_table("db.theirs")
    theirs.write_arrow(pa.Table.from_pylist(OUR_ROWS, schema=theirs.schema.arrow_schema()))
    second = OracleBatch(module_warehouse)
    second.read("theirs+ours", "db.theirs")
    second.run()
    return {"warehouse": module_warehouse, "tables": {**first.tables, **second.tables}, "theirs_files": theirs_files}


def test_their_files_are_below_the_directory(world: dict[str, Any]) -> None:
    files = world["theirs_files"]
    assert files and all(f.startswith("data/dir/p=") and "/bucket-" in f for f in files), files


def test_we_read_what_they_wrote(world: dict[str, Any]) -> None:
    theirs = assert_oracles_agree(world["tables"]["theirs"], "theirs")
    assert canonical_rows(theirs) == _expected(PYPAIMON_ROWS, RUST_ROWS)


def test_they_read_what_we_wrote(world: dict[str, Any]) -> None:
    theirs = assert_oracles_agree(world["tables"]["ours"], "ours")
    assert canonical_rows(theirs) == _expected(OUR_ROWS)
    files = _data_files(table_uri(world["warehouse"], "db.ours"))
    assert files and all(f.startswith("data/dir/p=") for f in files), files


def test_everyone_reads_the_mixed_table(world: dict[str, Any]) -> None:
    expected = _expected(PYPAIMON_ROWS, RUST_ROWS, OUR_ROWS)
    assert canonical_rows(assert_oracles_agree(world["tables"]["theirs+ours"], "theirs+ours")) == expected
    assert canonical_rows(ours_arrow(table_uri(world["warehouse"], "db.theirs"))) == expected
    assert all(f.startswith("data/dir/") for f in _data_files(table_uri(world["warehouse"], "db.theirs")))
    assert Path(table_uri(world["warehouse"], "db.theirs"), "data", "dir").is_dir()
