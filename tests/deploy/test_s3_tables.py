"""Tables on a real S3 endpoint (moto's server on 127.0.0.1, through s3fs): writes, reads, tags, time travel,
branches, expiration, chain tables, and a process that listed a table while another process commits."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.metadata.io.fileio import FileIO
from tests.deploy.components import S3Server, base_env


def rows(t: Table, options: dict[str, str] | None = None) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan(read_options=options).to_arrow().to_pylist())


def batch(ids: list[int], values: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": values})


def test_primary_key_table_tags_time_travel_branches_expiration(s3: S3Server, bucket: str) -> None:
    cat = Catalog(f"s3://{bucket}/wh", storage_options=s3.storage_options())
    t = cat.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(batch([1, 2, 3], ["a", "b", "c"]))
    t.tags.create("t1")
    t.write_arrow(batch([2, 4], ["B", "d"]))
    assert rows(t) == [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
    assert rows(t, {"scan.tag-name": "t1"}) == rows(t, {"scan.snapshot-id": "1"}) == [(1, "a"), (2, "b"), (3, "c")]
    assert [tag.name for tag in t.tags.list()] == ["t1"]

    t.branches.create("fix", tag="t1")
    fix = t.on_branch("fix")
    fix.write_arrow(batch([3], ["C"]))
    assert rows(fix) == [(1, "a"), (2, "b"), (3, "C")]
    assert rows(t) == [(1, "a"), (2, "B"), (3, "c"), (4, "d")], "main is untouched by the branch"

    t.write_arrow(batch([5], ["e"]))
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    assert [s.id for s in t.snapshots()] == [3]
    assert rows(t) == [(1, "a"), (2, "B"), (3, "c"), (4, "d"), (5, "e")]
    assert rows(t, {"scan.tag-name": "t1"}) == [(1, "a"), (2, "b"), (3, "c")], "the tag kept its files"
    assert rows(fix) == [(1, "a"), (2, "b"), (3, "C")], "the branch kept its files"

    t.branches.fast_forward("fix", force=True)
    assert rows(cat.get_table("db.t")) == [(1, "a"), (2, "b"), (3, "C")]
    # The same table through Table.open with the storage options, as another program would open it.
    assert rows(Table.open(f"s3://{bucket}/wh/db.db/t", storage_options=s3.storage_options())) == [
        (1, "a"),
        (2, "b"),
        (3, "C"),
    ]


def test_chain_table(s3: S3Server, bucket: str) -> None:
    cat = Catalog(f"s3://{bucket}/wh", storage_options=s3.storage_options())
    t = cat.create_chain_table(
        "db.c",
        "k string, seq string, v string, date string",
        partition_keys=["date"],
        primary_keys=["date", "k"],
        options={
            "bucket": "1",
            "sequence.field": "seq",
            "partition.timestamp-pattern": "$date",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
    )
    day = pa.schema([("k", pa.string()), ("seq", pa.string()), ("v", pa.string()), ("date", pa.string())])
    full = pa.Table.from_pylist(
        [{"k": "a", "seq": "1", "v": "a0", "date": "20250810"}, {"k": "b", "seq": "1", "v": "b0", "date": "20250810"}],
        day,
    )
    delta = pa.Table.from_pylist(
        [{"k": "b", "seq": "2", "v": "b1", "date": "20250811"}, {"k": "c", "seq": "2", "v": "c1", "date": "20250811"}],
        day,
    )
    t.on_branch("snapshot").write_arrow(full)
    t.on_branch("delta").write_arrow(delta)
    got = sorted(
        tuple(r.values()) for r in cat.get_table("db.c").scan().to_arrow().to_pylist() if r["date"] == "20250811"
    )
    assert got == [("a", "1", "a0", "20250811"), ("b", "2", "b1", "20250811"), ("c", "2", "c1", "20250811")]


WRITER = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from pyspark_paimon import Table
    endpoint, key, secret, uri, first = sys.argv[1:6]
    t = Table.open(uri, storage_options={"endpoint_url": endpoint, "key": key, "secret": secret})
    t.write_arrow(pa.table({"id": pa.array([int(first), int(first) + 1], pa.int64()), "v": ["x", "y"]}))
""")


def test_a_process_that_listed_the_table_keeps_working_across_other_processes_commits(
    s3: S3Server, bucket: str
) -> None:
    """s3fs caches listings per process; before the fix this process kept seeing its first listing and neither
    read the other process's commit nor could commit itself (its snapshot id was taken, forever)."""
    uri = f"s3://{bucket}/wh/db.db/t"
    cat = Catalog(f"s3://{bucket}/wh", storage_options=s3.storage_options())
    t = cat.create_table("db.t", "id bigint, v string")
    t.write_arrow(batch([1], ["a"]))
    assert [s.id for s in t.snapshots()] == [1] and rows(t) == [(1, "a")]  # listed, hint read, files read
    opts = s3.storage_options()
    for first in (10, 20):
        subprocess.run(
            [sys.executable, "-c", WRITER, opts["endpoint_url"], opts["key"], opts["secret"], uri, str(first)],
            check=True,
            env=base_env(),
            timeout=120,
        )
        assert t.latest_snapshot().id == first // 10 + 1
    assert [s.id for s in t.snapshots()] == [1, 2, 3]
    assert rows(t) == [(1, "a"), (10, "x"), (11, "y"), (20, "x"), (21, "y")]
    t.write_arrow(batch([2], ["b"]))
    assert [s.id for s in t.snapshots()] == [1, 2, 3, 4] and len(rows(t)) == 6


def test_environment_credentials(s3: S3Server, bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No storage options at all: botocore's credential chain (here the environment) and AWS_ENDPOINT_URL."""
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    t = Catalog(f"s3://{bucket}/wh").create_table("db.t", "id bigint, v string")
    t.write_arrow(batch([1], ["a"]))
    assert rows(Table.open(f"s3://{bucket}/wh/db.db/t")) == [(1, "a")]


def test_exclusive_create_is_a_conditional_write(s3: S3Server, bucket: str) -> None:
    """Two FileIOs (as two processes would have) create the same snapshot file: S3 answers the second
    If-None-Match PUT with 412, so exactly one wins and the file keeps the winner's bytes."""
    first, path = FileIO.for_uri(f"s3://{bucket}/t/snapshot/snapshot-1", s3.storage_options())
    second = pickle.loads(pickle.dumps(first))  # a pickled copy, as an executor gets it
    assert second.storage_options == s3.storage_options()
    assert first.try_create(path, b"first") is True
    assert second.try_create(path, b"second") is False
    assert second.read_bytes(path) == b"first"
