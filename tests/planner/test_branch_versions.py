"""``versionAsOf`` / ``scan.version`` = ``<branch>.<tag>`` and ``<branch>.<snapshot id>`` (Paimon's branch
design), with Java's precedence (a tag with the literal dotted name wins), through the Python API."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon.datasource.system_tables import read_system_table
from pyspark_paimon.errors import OptionError, TagNotFoundError
from pyspark_paimon.table import Table


@pytest.fixture
def table(catalog: Any) -> Table:
    """main: s1 (1,a), s2 (+3,c); tag t1 on s1. Branch b from t1: s2 (+2,b) tagged 'bt', then column w is
    added on b only and s3 (+4,d,40)."""
    t = catalog.create_table("db.bv", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1], "v": ["a"]}))
    t.tags.create("t1", snapshot_id=1)
    t.branches.create("b", tag="t1")
    b = t.on_branch("b")
    b.write_arrow(pa.table({"id": [2], "v": ["b"]}))
    b.tags.create("bt", snapshot_id=2)
    b.update_schema().add_column("w", "int").commit()
    b.write_arrow(pa.table({"id": [4], "v": ["d"], "w": pa.array([40], pa.int32())}))
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}))
    return t


def rows(t: Table, **options: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan(read_options=options).to_arrow().to_pylist())


def test_branch_tag_and_branch_snapshot_versions(table: Table) -> None:
    assert rows(table, versionAsOf="b.bt") == [(1, "a"), (2, "b")]
    assert rows(table, **{"scan.version": "b.bt"}) == [(1, "a"), (2, "b")]
    assert rows(table, versionAsOf="b.2") == [(1, "a"), (2, "b")]
    # Snapshot 3 of b has b's schema 1 (column w), which main does not have.
    got = table.scan(read_options={"versionAsOf": "b.3"}).to_arrow()
    assert got.column_names == ["id", "v", "w"]
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "w": None},
        {"id": 2, "v": "b", "w": None},
        {"id": 4, "v": "d", "w": 40},
    ]
    # main.<x> names the main branch explicitly; snapshot 2 of main is not snapshot 2 of b.
    assert rows(table, versionAsOf="main.2") == [(1, "a"), (3, "c")]
    assert rows(table, versionAsOf="main.t1") == [(1, "a")]
    # Reading branch b, '<b>.<x>' is the same as '<x>'.
    assert rows(table.on_branch("b"), versionAsOf="b.bt") == [(1, "a"), (2, "b")]
    assert rows(table, branch="b", versionAsOf="b.2") == [(1, "a"), (2, "b")]
    # Planning and system tables follow the branch too.
    assert table.scan(read_options={"versionAsOf": "b.3"}).explain().snapshot_id == 3
    assert read_system_table(table.store, "files", {"scan.version": "b.3"}).num_rows == 3


def test_a_tag_with_the_literal_dotted_name_wins(table: Table) -> None:
    """Java resolves scan.version as a tag first: a tag named 'b.bt' on the branch being read is that tag."""
    table.tags.create("b.bt", snapshot_id=2)
    assert rows(table, versionAsOf="b.bt") == [(1, "a"), (3, "c")]
    table.tags.create("v1.2", snapshot_id=1)
    assert rows(table, versionAsOf="v1.2") == [(1, "a")]
    table.tags.delete("b.bt", clean_files=False)
    assert rows(table, versionAsOf="b.bt") == [(1, "a"), (2, "b")]


def test_branch_versions_that_cannot_be_read_are_clear_errors(table: Table) -> None:
    with pytest.raises(TagNotFoundError, match=r"nor '<branch>.<tag or snapshot id>' of an existing branch"):
        table.scan(read_options={"versionAsOf": "nope.1"}).to_arrow()
    with pytest.raises(TagNotFoundError, match="Version 'nope' is neither a tag nor a snapshot id on branch 'b'"):
        table.scan(read_options={"versionAsOf": "b.nope"}).to_arrow()
    with pytest.raises(OptionError, match="names branch 'main', but the read addresses branch 'b'"):
        table.scan(read_options={"branch": "b", "versionAsOf": "main.1"}).to_arrow()
    with pytest.raises(OptionError, match="names branch 'b', but the read addresses branch 'b2'"):
        table.branches.create("b2")
        table.on_branch("b2").scan(read_options={"versionAsOf": "b.bt"}).to_arrow()
