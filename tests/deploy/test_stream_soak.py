"""Soak test of a long-running stream (issue 22): a sink that keeps committing, killed with SIGKILL five times at
seeded random moments, while a reader stream follows it, with the table maintaining itself.

The sink (:mod:`tests.deploy.soak_sink`, a subprocess) commits 300 micro-batches of 5 rows each into a fixed-bucket
append table whose commits expire snapshots and compact small files; it tags every 100th batch. After the third
kill, while the sink is down, a branch is created, receives a correction, and main is fast-forwarded to it; the
restarted sink continues on the new main. A reader stream (the engine's ``StreamReadJob`` with a ``consumer-id``,
as Spark's planning worker drives it) follows from the first snapshot the whole time.

Checked: every row arrives exactly once, in the table and in the reader's output (a row written twice after a
replay, or a batch lost across a kill, shows up as a count other than one); the snapshot and manifest files stay
bounded. Each commit's wall time is written to ``<tmp>/soak-timings.csv`` (and to ``$PAIMON_SOAK_TIMINGS`` when set)
for benchmarks/README.md; no timing is asserted. About two minutes on a quiet 2-core machine.
"""

from __future__ import annotations

import collections
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager

ROOT = Path(__file__).resolve().parents[2]
BATCHES, ROWS, TAG_EVERY, KILLS, SEED = 300, 5, 100, 5, 22
FIX_IDS = [-1, -2, -3]  # the correction committed on a branch and fast-forwarded into main
OPTIONS = {
    "bucket": "2",
    "bucket-key": "id",
    "compaction.min.file-num": "3",  # a bucket's small files are compacted every few commits
    "snapshot.num-retained.min": "5",
    "snapshot.num-retained.max": "10",
    "snapshot.time-retained": "1 ms",
}


class Follower:
    """A reader stream: plans micro-batches as Spark's planning worker does and counts every id it reads."""

    def __init__(self, table: Table):
        # The consumer exists before the first commit, so expiration never outruns the reader's first poll.
        ConsumerManager(table.store).record("soak-reader", 1)
        options = {"consumer-id": "soak-reader"}
        self.job = StreamReadJob(table.store, {"path": table.store.table_path, **options})
        self.job.columns = ("id", "batch")
        self.pos = self.job.initial_offset()
        self.seen: collections.Counter[int] = collections.Counter()

    def poll(self) -> None:
        splits, end = self.job.next_batch(self.pos)
        if end == self.pos:
            return
        ctx = self.job.context()
        for split in self.job.splits_between(self.pos, end):
            for batch in read_stream_split(ctx, split):
                self.seen.update(batch.column("id").to_pylist())
        self.job.commit(end)  # the consumer's progress: expiration keeps what the stream still needs
        self.pos = end


def _sink(table_path: str, checkpoint: Path, timings: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "tests.deploy.soak_sink", table_path, str(checkpoint)]
    cmd += ["--batches", str(BATCHES), "--rows", str(ROWS), "--tag-every", str(TAG_EVERY), "--timings", str(timings)]
    with log.open("ab") as err:  # a file, not a pipe: a full pipe would block the sink
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=err, stderr=err)


def _committed(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([p for p in commits.iterdir() if p.name.isdigit()]) if commits.exists() else 0


def _fast_forward_a_correction(table: Table) -> None:
    table.branches.create("fix")
    table.on_branch("fix").write_arrow(
        pa.table(
            {"id": FIX_IDS, "batch": [-1] * len(FIX_IDS)},
            schema=pa.schema([("id", pa.int64(), False), ("batch", pa.int64(), False)]),
        )
    )
    table.branches.fast_forward("fix")


def test_a_killed_sink_and_a_following_stream_lose_and_repeat_nothing(tmp_path: Path) -> None:
    table = Catalog(str(tmp_path / "wh")).create_table(
        "db.soak", "id bigint not null, batch bigint not null", options=OPTIONS
    )
    path = table.store.table_path
    checkpoint, timings, log = tmp_path / "checkpoint", tmp_path / "soak-timings.csv", tmp_path / "sink.log"
    rng = random.Random(SEED)
    kill_at = sorted(rng.sample(range(20, BATCHES - 20), KILLS))
    follower = Follower(table)
    deadline = time.monotonic() + 900  # a hang fails the test instead of the CI job
    kills = 0
    sink = _sink(path, checkpoint, timings, log)
    try:
        while True:
            assert time.monotonic() < deadline, f"soak did not finish: {_committed(checkpoint)} batches committed"
            follower.poll()
            done = _committed(checkpoint)
            if kills < KILLS and done >= kill_at[kills]:
                time.sleep(rng.uniform(0.0, 0.3))  # land anywhere in a batch: writing, committing, compacting...
                sink.send_signal(signal.SIGKILL)
                sink.wait()
                kills += 1
                if kills == 3:
                    _fast_forward_a_correction(Table.open(path))
                sink = _sink(path, checkpoint, timings, log)
                continue
            if sink.poll() is not None:
                assert sink.returncode == 0, f"the sink failed:\n{log.read_text()[-5000:]}"
                if done == BATCHES:
                    break
            time.sleep(0.05)
        for _ in range(3):  # catch up with the last commits
            follower.poll()
    finally:
        if sink.poll() is None:
            sink.send_signal(signal.SIGKILL)
            sink.wait()

    expected = collections.Counter([*range(BATCHES * ROWS), *FIX_IDS])
    table = Table.open(path)
    in_table = collections.Counter(table.scan().to_arrow().column("id").to_pylist())
    assert in_table == expected, _diff(in_table, expected)
    assert follower.seen == expected, _diff(follower.seen, expected)
    # Bounded metadata: expiration kept only the retained snapshots (the consumer keeps up, so it pins nothing
    # older), and the manifest directory holds what the retained snapshots, the tags and the branch reference: at
    # most a base list of 'manifest.merge-min-count' (30) manifests plus a few more per root, against at least
    # three new files per commit (two lists and a manifest) had nothing been deleted.
    table_dir = Path(path)
    snapshots = [p for p in (table_dir / "snapshot").iterdir() if p.name.startswith("snapshot-")]
    roots = len(snapshots) + len(table.tags.list()) + len(list((table_dir / "branch").glob("*/snapshot/snapshot-*")))
    manifests = list((table_dir / "manifest").iterdir())
    assert len(snapshots) <= int(OPTIONS["snapshot.num-retained.max"]), sorted(p.name for p in snapshots)
    assert len(manifests) <= roots * (30 + 3), (len(manifests), roots)
    assert len(manifests) < table.store.snapshots.latest_id(), "manifests grow with the commits"
    report = os.environ.get("PAIMON_SOAK_TIMINGS")
    if report:
        shutil.copy(timings, report)


def _diff(got: collections.Counter[int], expected: collections.Counter[int]) -> str:
    missing = sorted((expected - got).elements())[:10]
    extra = sorted((got - expected).elements())[:10]
    return f"missing ids {missing}, repeated or unexpected ids {extra}"
