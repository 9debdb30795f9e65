"""Incremental diff reads (Java's ``IncrementalDiffStartingScanner`` / ``IncrementalDiffSplitRead``): between two
tags by default, and with ``incremental-between-scan-mode = diff`` between any two versions. The Java lane checks
the same reads against Java itself (tests/interop/test_java.py)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import OptionError, SnapshotNotFoundError


def _pk(catalog: Catalog, name: str = "pk", **options: str) -> Table:
    return catalog.create_table(
        f"db.{name}", "id BIGINT, v STRING, n BIGINT", primary_keys=["id"], options={"bucket": "2", **options}
    )


def _w(t: Table, rows: dict[int, tuple[str, int]]) -> None:
    t.write_arrow(
        pa.table(
            {"id": list(rows), "v": [r[0] for r in rows.values()], "n": [r[1] for r in rows.values()]},
            schema=t.schema.arrow_schema(),
        )
    )


def _read(t: Table, **options: str) -> dict[int, Any]:
    rows = t.scan(read_options=options).to_arrow().to_pylist()
    return {r["id"]: (r["v"], r["n"]) for r in rows}


@pytest.fixture
def history(catalog: Catalog) -> Table:
    """t1: keys 0-5. Then: 1 changed, 2 and 3 rewritten unchanged, 9 new, 4 deleted, a full compaction, 5 changed.
    t2 is the end."""
    t = _pk(catalog)
    _w(t, {i: (f"a{i}", i) for i in range(6)})
    t.tags.create("t1")
    _w(t, {1: ("b1", 1), 2: ("a2", 2)})
    _w(t, {3: ("a3", 3), 9: ("new", 9)})
    t.delete("id = 4")
    t.maintenance.compact(full=True)
    _w(t, {5: ("b5", 50)})
    t.tags.create("t2")
    return t


CHANGED = {1: ("b1", 1), 5: ("b5", 50), 9: ("new", 9)}


def test_two_tags_are_diffed_unless_told_to_read_the_snapshots_between(history: Table) -> None:
    assert _read(history, **{"incremental-between": "t1,t2"}) == CHANGED
    # Java's 'incremental-between-tag-to-snapshot' = true: the changed files of the snapshots in between, so the
    # unchanged rewrites of 2 and 3 are rows too (and the deleted key is not).
    delta = {**CHANGED, 2: ("a2", 2), 3: ("a3", 3)}
    assert _read(history, **{"incremental-between": "t1,t2", "incremental-between-tag-to-snapshot": "true"}) == delta
    history.update_schema().set_options({"incremental-between-tag-to-snapshot": "true"}).commit()
    assert _read(history, **{"incremental-between": "t1,t2"}) == delta
    assert _read(history, **{"incremental-between": "t1,t2", "incremental-between-tag-to-snapshot": "false"}) == CHANGED
    with pytest.raises(OptionError, match="'incremental-between-tag-to-snapshot' must be 'true' or 'false'"):
        _read(history, **{"incremental-between": "t1,t2", "incremental-between-tag-to-snapshot": "yes"})


def test_diff_mode_between_snapshot_ids_and_instants(history: Table) -> None:
    t1, t2 = history.tags.get("t1").snapshot_id, history.tags.get("t2").snapshot_id
    assert _read(history, **{"incremental-between": f"{t1},{t2}", "incremental-between-scan-mode": "diff"}) == CHANGED
    # From before the first snapshot: every row of the end version is new.
    everything = _read(history)
    assert _read(history, **{"incremental-between": f"0,{t2}", "incremental-between-scan-mode": "diff"}) == everything
    first = history.store.snapshots.snapshot(1).time_millis
    last = history.store.snapshots.snapshot(t2).time_millis
    window = f"{first - 60_000},{last}"
    assert _read(history, **{"incremental-between-timestamp": window, "incremental-between-scan-mode": "diff"}) == (
        everything
    )
    assert _read(history, **{"incremental-between": f"{t2},{t2}", "incremental-between-scan-mode": "diff"}) == {}


def test_a_diff_between_tags_needs_no_snapshot_in_between(history: Table) -> None:
    """Tags outlive the snapshots between them: the diff compares the two tags' files, while the delta read of
    the snapshots in between names the expired one."""
    history.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    assert _read(history, **{"incremental-between": "t1,t2"}) == CHANGED
    with pytest.raises(SnapshotNotFoundError, match="has expired"):
        _read(history, **{"incremental-between": "t1,t2", "incremental-between-tag-to-snapshot": "true"})


def test_diff_projects_and_filters_after_comparing(history: Table) -> None:
    got = history.scan(read_options={"incremental-between": "t1,t2", "filter": "n < 10"}, columns=["id"]).to_arrow()
    assert got.column_names == ["id"] and sorted(got.column("id").to_pylist()) == [1, 9]


def test_diff_of_a_deletion_vector_table(catalog: Catalog) -> None:
    t = _pk(catalog, "dv", **{"deletion-vectors.enabled": "true"})
    _w(t, {i: (f"a{i}", i) for i in range(6)})
    t.tags.create("t1")
    _w(t, {1: ("b1", 1), 2: ("a2", 2)})
    t.delete("id = 4")
    _w(t, {9: ("new", 9)})
    t.tags.create("t2")
    # As Java: a deletion vector is no file change, so each side compares only the files it alone holds; the
    # unchanged rewrite of 2 sits in a new file whose older version the start side keeps in a shared file, so it
    # is a row (the Java lane checks this against Java). The deleted key 4 is not.
    assert _read(t, **{"incremental-between": "t1,t2"}) == {1: ("b1", 1), 2: ("a2", 2), 9: ("new", 9)}


def test_append_tables_return_the_rows_of_files_only_the_end_holds(catalog: Catalog) -> None:
    """As Java: an append table's diff is the rows of the end version's files the start version lacks, so the rows
    a copy-on-write delete rewrites count as new (Java's ``RawFileSplitRead`` ignores the start side's files; use
    ``Table.diff`` to see row changes)."""
    t = catalog.create_table("db.app", "id BIGINT, v STRING", options={"bucket": "1", "bucket-key": "id"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=t.schema.arrow_schema()))
    t.tags.create("t1")
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=t.schema.arrow_schema()))
    t.tags.create("t2")
    rows = t.scan(read_options={"incremental-between": "t1,t2"}).to_arrow()
    assert rows.column("id").to_pylist() == [3]
    t.delete("id = 2")  # rewrites the file of 1 and 2 without 2
    t.tags.create("t3")
    got = sorted(t.scan(read_options={"incremental-between": "t1,t3"}).to_arrow().column("id").to_pylist())
    assert got == [1, 3]


def test_spark_reads_the_diff_in_its_executors(history: Table, spark: Any) -> None:
    """The same diff through the Spark source: each bucket's two sides compared in a Spark task."""
    df = (
        spark.read.format("paimon")
        .option("incremental-between", "t1,t2")
        .load(history.store.table_path)
        .where("n < 10")
        .select("id", "v")
    )
    assert sorted(tuple(r) for r in df.collect()) == [(1, "b1"), (9, "new")]
