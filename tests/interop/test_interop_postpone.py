"""Postpone-bucket tables (``bucket = -2``) across implementations.

The Java lane's Paimon jar predates postpone buckets (it has no postpone mode), so the proof uses pypaimon (which
writes postpone tables into ``bucket-postpone`` as Java does) and pypaimon-rust (a reader): pypaimon writes a
postpone table, we read it (the postpone rows are not visible to batch reads, as in every implementation) and
compact it, and both oracles read what our compaction and our writes (into real buckets, and raw into the
postpone bucket then compacted) left, and skip the rows still waiting in our ``bucket-postpone`` as we do. Two
oracle processes in all."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from tests.interop.helpers import OracleBatch, assert_oracles_agree, assert_same_table, ours_arrow, table_uri
from tests.oracle import table_spec

pytestmark = pytest.mark.interop

COLUMNS = [["p", "STRING", False], ["k", "INT", False], ["v", "STRING", True]]
SCHEMA = "p string not null, k int not null, v string"


def _rows(p: str, keys: list[int], v: str) -> pa.Table:
    return pa.table({"p": [p] * len(keys), "k": pa.array(keys, pa.int32()), "v": [v] * len(keys)})


def _keys(t: pa.Table) -> list[tuple]:
    return sorted((r["p"], r["k"], r["v"]) for r in t.to_pylist())


def test_postpone_tables_between_pypaimon_and_us(tmp_path: Path) -> None:
    wh = str(tmp_path)
    # pypaimon writes a postpone table: its rows wait in bucket-postpone.
    theirs = OracleBatch(wh)
    spec = table_spec(COLUMNS, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "-2"})
    theirs.write(
        "db.by_pypaimon",
        [[["a", 1, "x"], ["a", 2, "x"], ["b", 3, "x"]], [["a", 1, "y"]]],
        create=spec,
    )
    theirs.run()
    t = Catalog(wh).get_table("db.by_pypaimon")
    assert {e.bucket for e in t.store.live_entries(t.latest_snapshot())} == {-2}
    assert ours_arrow(table_uri(wh, "db.by_pypaimon")).num_rows == 0  # batch reads skip bucket-postpone
    assert t.maintenance.compact()  # we move pypaimon's postpone files into real buckets

    # Our own writes: straight into real buckets, and raw into bucket-postpone then compacted.
    fixed = Catalog(wh).create_table(
        "db.fixed", SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "-2"}
    )
    fixed.write_arrow(pa.concat_tables([_rows("a", [1, 2, 3], "x"), _rows("b", [4], "x")]))
    fixed.write_arrow(_rows("a", [2], "y"))
    raw = Catalog(wh).create_table(
        "db.raw",
        SCHEMA,
        partition_keys=["p"],
        primary_keys=["p", "k"],
        options={"bucket": "-2", "postpone.batch-write-fixed-bucket": "false", "postpone.default-bucket-num": "2"},
    )
    raw.write_arrow(_rows("a", [1, 2, 3], "x"))
    raw.write_arrow(_rows("a", [3], "y"))
    assert raw.maintenance.compact()

    # Rows still waiting in our bucket-postpone are invisible to every batch reader.
    pending = Catalog(wh).create_table(
        "db.pending", SCHEMA, partition_keys=["p"], primary_keys=["p", "k"], options={"bucket": "-2"}
    )
    pending.write_arrow(_rows("a", [1], "x"))
    with pending.update_schema() as u:
        u.set_options({"postpone.batch-write-fixed-bucket": "false"})
    pending.write_arrow(_rows("a", [1, 2], "y"))

    readers = OracleBatch(wh)
    names = ["db.by_pypaimon", "db.fixed", "db.raw", "db.pending"]
    for name in names:
        readers.read(name, name)
    readers.run()
    expected = {
        "db.by_pypaimon": [("a", 1, "y"), ("a", 2, "x"), ("b", 3, "x")],
        "db.fixed": [("a", 1, "x"), ("a", 2, "y"), ("a", 3, "x"), ("b", 4, "x")],
        "db.raw": [("a", 1, "x"), ("a", 2, "x"), ("a", 3, "y")],
        "db.pending": [("a", 1, "x")],
    }
    for name in names:
        by_them = assert_oracles_agree(readers.tables[name], name)
        assert _keys(by_them) == expected[name], name
        assert_same_table(ours_arrow(table_uri(wh, name)), by_them, name)
