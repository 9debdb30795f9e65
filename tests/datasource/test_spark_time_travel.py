"""Time travel and incremental reads through Spark (the Spark half of tags): every way to name a version.

Commit times and watermarks are set by rewriting the snapshot files of a tiny table, so the timestamps the
tests travel to are exact and no test sleeps.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.table import Table

T0 = int(_dt.datetime(2025, 8, 10, 12, 0, 0).timestamp() * 1000)  # local 2025-08-10 12:00:00
MINUTE = 60_000


def local_text(millis: int) -> str:
    """'yyyy-MM-dd HH:mm:ss' in the local time zone, as ``scan.timestamp`` reads it."""
    return _dt.datetime.fromtimestamp(millis / 1000).strftime("%Y-%m-%d %H:%M:%S")


def set_snapshot(table: Table, snapshot_id: int, **changes: Any) -> None:
    snaps = table.store.snapshots
    snap = snaps.snapshot(snapshot_id).with_changes(**changes)
    table.store.fileio.write_bytes(snaps.snapshot_path(snapshot_id), snap.to_json().encode("utf-8"))


def read(spark: Any, table: Table, **options: str) -> Any:
    reader = spark.read.format("paimon")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(table.store.table_path)


def ids(df: Any) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture
def table(catalog: Any) -> Table:
    """PK table with 3 snapshots one minute apart (T0, T0+1m, T0+2m), watermarks 100/200/300, tag 'v2' on 2.

    snapshot 1: (1,a) (2,b)    snapshot 2: (1,a2) (3,c)    then column w is added    snapshot 3: (4,d,40)
    """
    t = catalog.create_table("db.tt", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    t.write_arrow(pa.table({"id": [1, 3], "v": ["a2", "c"]}))
    t.update_schema().add_column("w", "int").commit()
    t.write_arrow(pa.table({"id": [4], "v": ["d"], "w": pa.array([40], pa.int32())}))
    for sid, wm in ((1, 100), (2, 200), (3, 300)):
        set_snapshot(t, sid, time_millis=T0 + (sid - 1) * MINUTE, watermark=wm)
    t.tags.create("v2", snapshot_id=2)
    return t


SNAP1 = [(1, "a"), (2, "b")]
SNAP2 = [(1, "a2"), (2, "b"), (3, "c")]
SNAP3 = [(1, "a2", None), (2, "b", None), (3, "c", None), (4, "d", 40)]


def test_latest_and_snapshot_id_with_the_older_schema(spark: Any, table: Table) -> None:
    latest = read(spark, table)
    assert latest.columns == ["id", "v", "w"]
    assert ids(latest) == SNAP3
    old = read(spark, table, **{"scan.snapshot-id": "1"})
    assert old.columns == ["id", "v"]  # snapshot 1 was written with schema 0: no 'w'
    assert ids(old) == SNAP1
    assert ids(read(spark, table, **{"scan.snapshot-id": "2"})) == SNAP2


def test_tag_name_and_version(spark: Any, table: Table) -> None:
    assert ids(read(spark, table, **{"scan.tag-name": "v2"})) == SNAP2
    assert ids(read(spark, table, **{"scan.version": "v2"})) == SNAP2
    assert ids(read(spark, table, **{"scan.version": "1"})) == SNAP1
    # A tag wins over a snapshot id of the same spelling (auto tags may be numeric).
    TagManager(table.store).create("1", table.snapshot(3), validate=False)
    assert ids(read(spark, table, **{"scan.version": "1"})) == SNAP3
    assert ids(read(spark, table, **{"scan.snapshot-id": "1"})) == SNAP1


def test_timestamps(spark: Any, table: Table) -> None:
    # The latest snapshot committed at or before the instant.
    assert ids(read(spark, table, **{"scan.timestamp-millis": str(T0 + 90_000)})) == SNAP2
    assert ids(read(spark, table, **{"scan.timestamp-millis": str(T0 + MINUTE)})) == SNAP2
    assert ids(read(spark, table, **{"scan.timestamp-millis": str(T0 + MINUTE - 1)})) == SNAP1
    assert ids(read(spark, table, **{"scan.timestamp": local_text(T0 + 30_000)})) == SNAP1
    assert ids(read(spark, table, **{"scan.timestamp": local_text(T0 + 10 * MINUTE)})) == SNAP3
    with pytest.raises(Exception, match="No snapshot or tag"):
        read(spark, table, **{"scan.timestamp-millis": str(T0 - MINUTE)}).collect()


def test_delta_and_iceberg_style_aliases(spark: Any, table: Table) -> None:
    assert ids(read(spark, table, versionAsOf="1")) == SNAP1
    assert ids(read(spark, table, versionAsOf="v2")) == SNAP2  # a tag name, like VERSION AS OF 'v2'
    assert ids(read(spark, table, timestampAsOf=local_text(T0 + 30_000))) == SNAP1
    assert read(spark, table, versionAsOf="1").columns == ["id", "v"]


def test_watermark(spark: Any, table: Table) -> None:
    # The first snapshot whose watermark is at or after the value.
    assert ids(read(spark, table, **{"scan.watermark": "150"})) == SNAP2
    assert ids(read(spark, table, **{"scan.watermark": "100"})) == SNAP1
    assert ids(read(spark, table, **{"scan.version": "watermark-250"})) == SNAP3
    with pytest.raises(Exception, match="watermark >= 301"):
        read(spark, table, **{"scan.watermark": "301"}).collect()


def test_conflicting_and_bad_options_are_errors(spark: Any, table: Table) -> None:
    with pytest.raises(Exception, match="Conflicting read options"):
        read(spark, table, **{"scan.snapshot-id": "1", "scan.tag-name": "v2"}).collect()
    with pytest.raises(Exception, match="Conflicting read options"):
        read(spark, table, **{"scan.snapshot-id": "1", "incremental-between": "1,2"}).collect()
    with pytest.raises(Exception, match="both set scan.snapshot-id with different values"):
        read(spark, table, **{"scan.snapshot-id": "1", "versionAsOf": "2"}).collect()
    with pytest.raises(Exception, match="Snapshot 9 does not exist"):
        read(spark, table, **{"scan.snapshot-id": "9"}).collect()
    with pytest.raises(Exception, match="Tag 'nope' does not exist"):
        read(spark, table, **{"scan.tag-name": "nope"}).collect()
    with pytest.raises(Exception, match="Unknown|unknown"):
        read(spark, table, **{"scan.snapshot": "1"}).collect()


def test_tag_of_an_expired_snapshot_and_timestamp_fallback_to_tags(spark: Any, table: Table) -> None:
    table.tags.create("first", snapshot_id=1)
    table.store.fileio.delete(table.store.snapshots.snapshot_path(1))  # snapshot 1 expired; its tag keeps the data
    assert ids(read(spark, table, **{"scan.tag-name": "first"})) == SNAP1
    assert read(spark, table, **{"scan.tag-name": "first"}).columns == ["id", "v"]
    # No snapshot is left at or before T0+30s, but the tag of snapshot 1 is: it is the closest version.
    assert ids(read(spark, table, **{"scan.timestamp-millis": str(T0 + 30_000)})) == SNAP1
    assert ids(read(spark, table, **{"scan.timestamp-millis": str(T0 + 90_000)})) == SNAP2
    # The snapshot id still resolves, through the tag that preserved it.
    assert ids(read(spark, table, **{"scan.snapshot-id": "1"})) == SNAP1
    table.tags.delete("first")
    with pytest.raises(Exception, match="Snapshot 1 does not exist"):
        read(spark, table, **{"scan.snapshot-id": "1"}).collect()


# ------------------------------------------------------------------------------------------------------
# Incremental reads
# ------------------------------------------------------------------------------------------------------
def test_incremental_between_snapshot_ids(spark: Any, table: Table) -> None:
    inc = read(spark, table, **{"incremental-between": "1,3"})
    assert inc.columns == ["id", "v", "w"]  # incremental reads use the latest schema
    # Keys changed in snapshots 2 and 3, at their latest version; key 2 was not touched.
    assert ids(inc) == [(1, "a2", None), (3, "c", None), (4, "d", 40)]
    assert ids(read(spark, table, **{"incremental-between": "0,1"})) == [(1, "a", None), (2, "b", None)]
    assert ids(read(spark, table, **{"incremental-between": "2,3"})) == [(4, "d", 40)]
    assert read(spark, table, **{"incremental-between": "3,3"}).count() == 0
    with pytest.raises(Exception, match="snapshot 7 does not exist"):
        read(spark, table, **{"incremental-between": "1,7"}).collect()
    with pytest.raises(Exception, match="start .* is after the end"):
        read(spark, table, **{"incremental-between": "3,1"}).collect()


def test_incremental_between_tags(spark: Any, table: Table) -> None:
    table.tags.create("v1", snapshot_id=1)
    table.tags.create("v3", snapshot_id=3)
    assert ids(read(spark, table, **{"incremental-between": "v1,v3"})) == [
        (1, "a2", None),
        (3, "c", None),
        (4, "d", 40),
    ]
    assert ids(read(spark, table, **{"incremental-between": "v2,v3"})) == [(4, "d", 40)]
    with pytest.raises(Exception, match="neither a tag"):
        read(spark, table, **{"incremental-between": "v1,nope"}).collect()


def test_incremental_between_timestamps(spark: Any, table: Table) -> None:
    # start = latest snapshot <= T0+30s (1), end = latest <= T0+90s (2): the changes of snapshot 2.
    assert ids(read(spark, table, **{"incremental-between-timestamp": f"{T0 + 30_000},{T0 + 90_000}"})) == [
        (1, "a2", None),
        (3, "c", None),
    ]
    # A start before every snapshot includes the first one.
    assert read(spark, table, **{"incremental-between-timestamp": f"{T0 - MINUTE},{T0 + 10 * MINUTE}"}).count() == 4
    # The 'yyyy-MM-dd HH:mm:ss' form is read in the local time zone.
    text = f"{local_text(T0 + 30_000)},{local_text(T0 + 10 * MINUTE)}"
    assert ids(read(spark, table, **{"incremental-between-timestamp": text})) == [
        (1, "a2", None),
        (3, "c", None),
        (4, "d", 40),
    ]
    # Nothing committed by the end instant: nothing to read.
    assert read(spark, table, **{"incremental-between-timestamp": f"{T0 - 2 * MINUTE},{T0 - MINUTE}"}).count() == 0


def test_incremental_drops_keys_deleted_in_the_range(spark: Any, catalog: Any) -> None:
    t = catalog.create_table(
        "db.del", "id bigint, v string, op string", primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"}
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I", "+I", "+I"]}))
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a2", "b"], "op": ["+U", "-D"]}))
    t.write_arrow(pa.table({"id": [5], "v": ["e"], "op": ["+I"]}))
    # Key 2's latest change in (1, 3] is a delete: not a row. Key 3 was not touched.
    assert ids(read(spark, t, **{"incremental-between": "1,3"}).select("id", "v")) == [(1, "a2"), (5, "e")]


def test_incremental_append_table_skips_overwrite_snapshots_and_prunes_partitions(spark: Any, catalog: Any) -> None:
    t = catalog.create_table("db.app", "id bigint, dt string", partition_keys=["dt"])
    t.write_arrow(pa.table({"id": [1, 2], "dt": ["x", "y"]}))  # 1 APPEND
    t.write_arrow(pa.table({"id": [3, 4], "dt": ["x", "y"]}))  # 2 APPEND
    t.write_arrow(pa.table({"id": [9], "dt": ["y"]}), mode="overwrite", overwrite_partition={"dt": "y"})  # 3
    t.write_arrow(pa.table({"id": [5], "dt": ["y"]}))  # 4 APPEND
    assert [s.commit_kind for s in t.snapshots()] == ["APPEND", "APPEND", "OVERWRITE", "APPEND"]
    # Paimon's delta mode: rows ADDed by APPEND commits only (the overwrite's row 9 is not reported).
    assert ids(read(spark, t, **{"incremental-between": "1,4"})) == [(3, "x"), (4, "y"), (5, "y")]
    assert ids(read(spark, t, **{"incremental-between": "1,4"}).where("dt = 'x'")) == [(3, "x")]
    # The Python API plans the same read.
    assert sorted(t.scan(read_options={"incremental-between": "1,4"}).to_arrow().column("id").to_pylist()) == [3, 4, 5]


def test_incremental_range_with_an_expired_snapshot(spark: Any, table: Table) -> None:
    table.store.fileio.delete(table.store.snapshots.snapshot_path(2))
    # Tag v2 preserved the expired snapshot 2 (its delta manifests stay alive with it): still readable.
    assert ids(read(spark, table, **{"incremental-between": "1,3"})) == [(1, "a2", None), (3, "c", None), (4, "d", 40)]
    table.tags.delete("v2")
    with pytest.raises(Exception, match="snapshot 2 of branch 'main' .* has expired"):
        read(spark, table, **{"incremental-between": "1,3"}).collect()


def test_version_as_of_a_branch_tag_or_snapshot(spark: Any, table: Table) -> None:
    """versionAsOf='<branch>.<tag>' / '<branch>.<snapshot id>' (Paimon's branch design) reads that branch, with
    the branch's own schema."""
    table.branches.create("b", tag="v2")
    b = table.on_branch("b")
    b.write_arrow(pa.table({"id": [9], "v": ["z"]}))  # b's snapshot 3: schema 0 of b, no column w
    b.tags.create("bt", snapshot_id=3)
    df = read(spark, table, versionAsOf="b.bt")
    assert df.columns == ["id", "v"]
    assert ids(df) == SNAP2 + [(9, "z")]
    assert ids(read(spark, table, versionAsOf="b.2")) == SNAP2
    assert ids(read(spark, table, versionAsOf="main.1")) == SNAP1
    with pytest.raises(Exception, match="names branch 'main', but the read addresses branch 'b'"):
        read(spark, table, branch="b", versionAsOf="main.1").collect()


def test_a_branch_as_of_an_instant_reads_what_timestamp_as_of_reads(spark: Any, table: Table) -> None:
    """create_branch(from_timestamp=T) keeps the table as a read with timestampAsOf=T sees it (the last snapshot
    at or before T); timestamp_rule='first-at-or-after' picks Paimon's tag rule instead."""
    at = T0 + 90_000  # between snapshots 2 and 3
    table.branches.create("as_of", timestamp=at)
    table.branches.create("after", timestamp=at, timestamp_rule="first-at-or-after")
    expected = ids(read(spark, table, timestampAsOf=local_text(at)))
    assert expected == SNAP2
    assert ids(read(spark, table, branch="as_of")) == expected
    assert ids(read(spark, table, branch="after")) == SNAP3
