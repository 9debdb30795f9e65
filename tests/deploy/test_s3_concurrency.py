"""N processes each committing 20 times to one table on S3, while this process keeps reading it.

Every commit must land (losers of a race retry), snapshot ids must run 1..N*20 without a gap or a duplicate,
the rows must be exactly the ones written, and a reader that listed the table early must keep seeing each new
state (s3fs's listing cache and the LATEST hint replaced under it were what broke this)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import time

import pytest

from pyspark_paimon import Catalog
from tests.deploy.components import S3Server, base_env

COMMITS = 20
DEADLINE_S = 600  # CI's budget guard: a hang fails here (and the writers are killed) instead of eating CI

WRITER = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from pyspark_paimon import Table
    endpoint, key, secret, uri, writer, commits = sys.argv[1:7]
    t = Table.open(uri, storage_options={"endpoint_url": endpoint, "key": key, "secret": secret})
    for k in range(int(commits)):
        row = int(writer) * 1000 + k
        t.write_arrow(pa.table({"id": pa.array([row], pa.int64()), "writer": pa.array([int(writer)], pa.int32())}))
""")


# Four writers already race for snapshot ids (losers retry); eight took four times as long on CI's two cores (about
# 4 minutes) and exercise no other code path.
@pytest.mark.parametrize("writers", [4])
def test_concurrent_committing_processes(s3: S3Server, bucket: str, writers: int) -> None:
    cat = Catalog(f"s3://{bucket}/wh", storage_options=s3.storage_options())
    # Losing a race is expected here, often: enough retries that every commit lands, with short back-offs.
    t = cat.create_table(
        "db.t",
        "id bigint, writer int",
        options={"commit.max-retries": "1000", "commit.min-retry-wait": "5 ms", "commit.max-retry-wait": "200 ms"},
    )
    opts = s3.storage_options()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                WRITER,
                opts["endpoint_url"],
                opts["key"],
                opts["secret"],
                f"s3://{bucket}/wh/db.db/t",
                str(w),
                str(COMMITS),
            ],
            env=base_env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    seen: list[int] = []
    try:
        # The reader: listed the table before any commit, and reads the latest state while the writers commit.
        deadline = time.monotonic() + DEADLINE_S
        while any(p.poll() is None for p in procs):
            assert time.monotonic() < deadline, f"{writers} writers did not finish {COMMITS} commits in {DEADLINE_S} s"
            snap = t.latest_snapshot()
            data = t.scan().to_arrow()
            ids = data.column("id").to_pylist()
            assert len(ids) == len(set(ids)), "a read saw a row twice"
            if snap is not None:
                assert len(ids) >= snap.total_record_count, "a read saw less than the snapshot it started from"
            seen.append(len(ids))
            running = [p for p in procs if p.poll() is None]
            if running:  # read every few seconds: each read fetches every data file, and the server is the bottleneck
                with contextlib.suppress(subprocess.TimeoutExpired):
                    running[0].wait(timeout=3)
        errors = [p.stderr.read() for p in procs if p.wait() != 0]
        assert not errors, "writers failed:\n" + "\n".join(e[-2000:] for e in errors)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
    total = writers * COMMITS
    snapshots = t.snapshots()
    assert [s.id for s in snapshots] == list(range(1, total + 1)), "a snapshot id is missing or doubled"
    assert all(s.delta_record_count == 1 and s.commit_kind == "APPEND" for s in snapshots)
    assert t.latest_snapshot().total_record_count == total
    got = sorted(t.scan().to_arrow().column("id").to_pylist())
    assert got == sorted(w * 1000 + k for w in range(writers) for k in range(COMMITS))
    assert seen == sorted(seen) and len(set(seen)) > 1, f"the reader did not follow the commits: {seen}"
