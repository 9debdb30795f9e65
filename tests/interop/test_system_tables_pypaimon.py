"""The newer system tables against pypaimon 2.1, which has ``$table_indexes``, ``$file_key_ranges``,
``$buckets`` and ``$consumers``: the same columns and rows on tables we wrote (a partitioned deletion-vector
table with vectors in two buckets, consumers of a stream).

pypaimon renders a partition as ``dt=a`` (NULL when unpartitioned) and a bucket's last update time in seconds;
we print Java's renderings (``{a}`` for master's tables, Java 1.0's ``[a]`` for ``$buckets``, milliseconds), so
those two columns are compared as pypaimon's rendering of our values.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.system_tables import read_system_table
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from tests.interop.helpers import schema_shape
from tests.oracle import pypaimon_read

pytestmark = pytest.mark.interop


def _table(tmp_path: Path) -> Table:
    t = Catalog(str(tmp_path)).create_table(
        "db.t",
        "dt string, id int, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "deletion-vectors.enabled": "true"},
    )
    ids = pa.array(range(12), pa.int32())
    t.write_arrow(pa.table({"dt": ["a"] * 6 + ["b"] * 6, "id": ids, "v": [f"v{i}" for i in range(12)]}))
    t.write_arrow(pa.table({"dt": ["a", "a", "b"], "id": pa.array([1, 4, 7], pa.int32()), "v": ["x", "y", "z"]}))
    t.delete("id = 9")
    ConsumerManager(t.store).record("job-2", 2)
    ConsumerManager(t.store).record("job-1", 3)
    return t


def _pypaimon_partition(ours: str | None, prefix: str, suffix: str) -> str | None:
    """pypaimon's ``dt=a`` for our ``{a}`` / ``[a]`` (one partition column here)."""
    assert ours is not None and ours.startswith(prefix) and ours.endswith(suffix)
    return f"dt={ours[len(prefix) : -len(suffix)]}"


@pytest.mark.parametrize(
    ("name", "key", "brackets"),
    [("table_indexes", "file_name", "{}"), ("file_key_ranges", "file_path", "{}"), ("buckets", "bucket", "[]")],
)
def test_rows_match_pypaimon(oracle_python: str, tmp_path: Path, name: str, key: str, brackets: str) -> None:
    t = _table(tmp_path)
    theirs = pypaimon_read(str(tmp_path), f"db.t${name}", sort=False)
    ours = read_system_table(t.store, name)
    assert ours.column_names == theirs.column_names
    assert schema_shape(ours.schema) == schema_shape(theirs.schema)
    mine = ours.to_pylist()
    for row in mine:
        row["partition"] = _pypaimon_partition(row["partition"], brackets[0], brackets[1])
        if name == "buckets":
            row["last_update_time"] = row["last_update_time"].replace(microsecond=0)

    def order(r: dict) -> tuple:
        return r["partition"], r[key]

    expected = sorted(theirs.to_pylist(), key=order)
    if name == "buckets":
        for row in expected:
            row["last_update_time"] = row["last_update_time"].replace(microsecond=0)
    assert sorted(mine, key=order) == expected
    assert mine, "the comparison needs rows"
    if name == "table_indexes":
        assert all(r["dv_ranges"] for r in mine)


def test_consumers_match_pypaimon(oracle_python: str, tmp_path: Path) -> None:
    t = _table(tmp_path)
    theirs = pypaimon_read(str(tmp_path), "db.t$consumers", sort=False)
    ours = read_system_table(t.store, "consumers")
    assert ours.column_names == theirs.column_names
    assert ours.to_pylist() == sorted(theirs.to_pylist(), key=lambda r: r["consumer_id"])
    assert ours.to_pylist() == [
        {"consumer_id": "job-1", "next_snapshot_id": 3},
        {"consumer_id": "job-2", "next_snapshot_id": 2},
    ]
