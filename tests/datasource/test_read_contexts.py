"""One way to build a read context: every path that reads a table's data files describes each file by the schema
it was written with, from every schema of its branch.

Each test writes data files, then adds a column (so those files are of an older schema than the one the path
reads with), then reads them through one path that builds a :class:`ReadContext`: a plain read, a compaction,
a postpone-bucket compaction, the key-conflict checks of a write, a cross-partition upsert, a stream and a diff.
A context that knew only the latest schema would raise ``CorruptMetadataError`` on those files.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pyarrow as pa
import pytest

import pyspark_paimon
from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.datasource.read.read_context import ReadContext
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.datasource.write.cross_partition import check_one_home_per_key
from pyspark_paimon.datasource.write.key_conflicts import check_one_version_per_key
from pyspark_paimon.errors import ConflictingKeysError
from pyspark_paimon.metadata.rows.binary_row import deserialize_row

SCHEMA = "p string not null, k int not null, v string"


def _table(catalog: Catalog, name: str, primary_keys: list[str], **options: str) -> Table:
    return catalog.create_table(name, SCHEMA, partition_keys=["p"], primary_keys=primary_keys, options=options)


def _rows(*rows: tuple[str, int, str]) -> pa.Table:
    return pa.table(
        {
            "p": [r[0] for r in rows],
            "k": pa.array([r[1] for r in rows], pa.int32()),
            "v": pa.array([r[2] for r in rows], pa.string()),
        }
    )


def _with_w(data: pa.Table, *w: int | None) -> pa.Table:
    """``data`` with the added column ``w`` (writes after the change must give every column)."""
    return data.append_column("w", pa.array(list(w), pa.int32()))


def _add_column(t: Table) -> None:
    """A column added after the files were written: they are now of an older schema than the table's."""
    with t.update_schema() as u:
        u.add_column("w", "int")
    assert t.store.schema().id == 1


def _read(t: Table) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"], r["w"]) for r in t.scan().to_arrow().to_pylist())


def _schema_ids(t: Table) -> set[int]:
    store = t.store
    return {e.file.schema_id for e in store.live_entries(store.snapshots.latest())}


def test_the_builder_knows_every_schema_of_the_branch(catalog: Catalog) -> None:
    t = _table(catalog, "db.builder", ["p", "k"], bucket="1")
    t.write_arrow(_rows(("a", 1, "x")))
    _add_column(t)
    ctx = ReadContext.for_store(t.store)
    assert ctx.schema.id == 1 and ctx.branch == "main"
    assert sorted(ctx.schemas["main"]) == [0, 1]
    overlay = ReadContext.for_store(t.store, t.store.schemas.schema(0), options={"merge-engine": "first-row"})
    assert overlay.schema.id == 0 and sorted(overlay.schemas["main"]) == [0, 1]
    assert overlay.core_options().merge_engine == "first-row" and overlay.merge_options()["bucket"] == "1"


def test_a_plain_read(catalog: Catalog) -> None:
    t = _table(catalog, "db.plain", ["p", "k"], bucket="1")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "y")))
    _add_column(t)
    t.write_arrow(_with_w(_rows(("a", 3, "z")), 7))
    assert _schema_ids(t) == {0, 1}
    assert _read(t) == [("a", 1, "x", None), ("a", 2, "y", None), ("a", 3, "z", 7)]


def test_a_compaction(catalog: Catalog) -> None:
    t = _table(catalog, "db.compact", ["p", "k"], bucket="1")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "y")))
    t.write_arrow(_rows(("a", 2, "y2")))
    _add_column(t)
    assert t.maintenance.compact(full=True)
    assert _schema_ids(t) == {1}  # the old files were read and rewritten under the new schema
    assert _read(t) == [("a", 1, "x", None), ("a", 2, "y2", None)]


def test_a_postpone_bucket_compaction(catalog: Catalog) -> None:
    t = _table(catalog, "db.postpone", ["p", "k"], bucket="-2", **{"postpone.batch-write-fixed-bucket": "false"})
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "y")))
    _add_column(t)
    assert _read(t) == []  # still in the postpone bucket
    assert t.maintenance.compact()
    store = t.store
    assert {e.bucket for e in store.live_entries(store.snapshots.latest())} == {0}
    assert _read(t) == [("a", 1, "x", None), ("a", 2, "y", None)]


def test_the_key_conflict_check_of_a_write(catalog: Catalog) -> None:
    t = _table(catalog, "db.conflicts", ["p", "k"], bucket="1")
    job = prepare_write(t.store)
    one, two = job.new_writer("task-1"), job.new_writer("task-2")
    one.write(_rows(("a", 1, "x")))
    two.write(_rows(("a", 1, "y")))
    messages = one.prepare_commit() + two.prepare_commit()
    _add_column(t)
    # The check reads the tasks' files (of schema 0) with the table's schema now: it must find the conflict.
    with pytest.raises(ConflictingKeysError, match=r"1 primary key.*k=1"):
        check_one_version_per_key(t.store, t.store.schema(), messages)


def test_a_cross_partition_upsert_and_its_one_home_check(catalog: Catalog) -> None:
    t = _table(catalog, "db.xp", ["k"])
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "y")))
    _add_column(t)
    # The key index is bootstrapped from the files of schema 0: key 1 moves to partition b.
    t.write_arrow(_with_w(_rows(("b", 1, "x2")), None))
    assert _read(t) == [("a", 2, "y", None), ("b", 1, "x2", None)]

    t2 = _table(catalog, "db.xp_home", ["k"])
    job = prepare_write(t2.store)
    one, two = job.new_writer("task-1"), job.new_writer("task-2")
    one.write(_rows(("b", 7, "y")))
    two.write(_rows(("c", 7, "z")))
    messages = one.prepare_commit() + two.prepare_commit()
    _add_column(t2)
    types = [t2.store.schema().field("p").type]
    assert {deserialize_row(m.partition, types)[0] for m in messages} == {"b", "c"}
    with pytest.raises(ConflictingKeysError, match=r"1 primary key.*k=7"):
        check_one_home_per_key(t2.store, t2.store.schema(), messages)


def test_a_stream(catalog: Catalog) -> None:
    t = _table(catalog, "db.stream", ["p", "k"], bucket="1")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "y")))
    _add_column(t)
    job = StreamReadJob(t.store, {"path": t.store.table_path})
    start = job.initial_offset()
    splits, end = job.next_batch(start, None, None)
    assert end != start
    ctx = job.context()
    rows = [r for s in splits for batch in read_stream_split(ctx, s) for r in batch.to_pylist()]
    assert sorted((r["p"], r["k"], r["v"], r["w"]) for r in rows) == [("a", 1, "x", None), ("a", 2, "y", None)]


def test_a_diff(catalog: Catalog) -> None:
    t = _table(catalog, "db.diff", ["p", "k"], bucket="1")
    t.write_arrow(_rows(("a", 1, "x"), ("a", 2, "y")))
    _add_column(t)
    t.write_arrow(_with_w(_rows(("a", 1, "x")), 5))
    got = sorted((r["rowkind"], r["k"], r["v"], r["w"]) for r in t.diff(1, 2).to_pylist())
    assert got == [("+U", 1, "x", 5), ("-U", 1, "x", None)]


def test_no_module_builds_a_read_context_by_hand() -> None:
    """Only :class:`ReadContext`'s own module calls its constructor; everything else goes through
    ``ReadContext.for_plan`` (a planned read) or ``ReadContext.for_store`` (a store's own files)."""
    root = Path(pyspark_paimon.__file__).parent
    home = Path(inspect.getfile(ReadContext)).resolve()
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.resolve() == home:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ReadContext":
                offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []
