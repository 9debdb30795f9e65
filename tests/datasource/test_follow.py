"""``t.follow``: a table's changes without Spark: starts, row kinds, at most N rows per poll, exact positions,
consumers advanced only when asked, and resuming after a process is killed at an injected point (its consumer:
at-least-once; its stored position: exactly-once). That it returns exactly the Spark stream's rows is
tests/datasource/test_spark_follow.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def rows(data: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in data.to_pylist()]


def batch(ids: list[int], values: list[str]) -> pa.Table:
    return pa.table({"id": ids, "v": values}, schema=SCHEMA)


@pytest.fixture
def appends(catalog: Catalog) -> Table:
    t = catalog.create_table("db.log", SCHEMA, options={"bucket": "1", "bucket-key": "id"})
    t.write_arrow(batch([1, 2], ["a", "b"]))
    t.write_arrow(batch([3, 4, 5, 6, 7], ["c", "d", "e", "f", "g"]))
    return t


def drain(follower) -> list[tuple]:  # type: ignore[no-untyped-def]
    out: list[tuple] = []
    while True:
        changes = follower.poll()
        if not changes.num_rows:
            return out
        out += rows(changes.data)


def test_follows_from_a_snapshot_with_row_kinds_and_at_most_n_rows_per_poll(appends: Table) -> None:
    f = appends.follow(snapshot_id=1, max_rows=3)
    sizes, got = [], []
    while (changes := f.poll()).num_rows:
        sizes.append(changes.num_rows)
        got += rows(changes.data)
    assert sizes == [3, 3, 1]
    assert got == [("+I", i, v) for i, v in zip(range(1, 8), "abcdefg")]
    assert f.poll().num_rows == 0 and f.poll().data.column_names == ["rowkind", "id", "v"]
    appends.write_arrow(batch([8], ["h"]))
    assert rows(f.poll().data) == [("+I", 8, "h")]


def test_starts_as_a_stream_does(appends: Table) -> None:
    assert drain(appends.follow()) == [("+I", i, v) for i, v in zip(range(1, 8), "abcdefg")]  # latest state
    assert [r[1] for r in drain(appends.follow(snapshot_id=2))] == [3, 4, 5, 6, 7]
    appends.tags.create("one", snapshot_id=1)
    assert [r[1] for r in drain(appends.follow(tag="one"))] == [1, 2, 3, 4, 5, 6, 7]
    assert [r[1] for r in drain(appends.follow(timestamp=appends.snapshot(2).time_millis))] == [3, 4, 5, 6, 7]
    assert drain(appends.follow(read_options={"scan.mode": "latest"})) == []
    assert drain(appends.follow(snapshot_id=1, columns=["v"], filter="id > 5")) == [("+I", "f"), ("+I", "g")]


def test_upserts_and_deletes_arrive_with_their_kinds(catalog: Catalog) -> None:
    t = catalog.create_table(
        "db.pk", SCHEMA, primary_keys=["id"], options={"bucket": "1", "changelog-producer": "lookup"}
    )
    t.write_arrow(batch([1, 2], ["a", "b"]))
    t.write_arrow(batch([1], ["A"]))
    t.delete("id = 2")
    assert sorted(drain(t.follow(snapshot_id=1))) == sorted(
        [("+I", 1, "a"), ("+I", 2, "b"), ("-U", 1, "a"), ("+U", 1, "A"), ("-D", 2, "b")]
    )


def test_a_position_resumes_exactly_after_the_rows_delivered(appends: Table) -> None:
    f = appends.follow(snapshot_id=1, max_rows=4)
    head = f.poll()  # ends inside snapshot 2
    assert [r[1] for r in rows(head.data)] == [1, 2, 3, 4] and head.position == f.position
    assert [r[1] for r in drain(appends.follow(position=head.position, max_rows=2))] == [5, 6, 7]
    drain(f)
    end = f.position
    assert drain(appends.follow(position=end)) == []
    appends.write_arrow(batch([8], ["h"]))
    assert drain(appends.follow(position=end)) == [("+I", 8, "h")]
    with pytest.raises(OptionError, match="Changes.position"):
        appends.follow(position="not json")


def test_a_consumer_advances_only_when_asked(appends: Table) -> None:
    f = appends.follow(snapshot_id=1, consumer="svc", max_rows=3)
    f.poll()
    consumers = ConsumerManager(appends.store)
    assert consumers.next_snapshot("svc") is None, "polling alone records nothing"
    assert f.commit() == 2  # snapshot 1 delivered, snapshot 2 half: the consumer records 2 (at-least-once)
    assert consumers.next_snapshot("svc") == 2
    drain(f)
    assert f.commit() == 3 and consumers.next_snapshot("svc") == 3
    appends.write_arrow(batch([8], ["h"]))
    assert drain(appends.follow(consumer="svc")) == [("+I", 8, "h")]  # a new follower resumes there
    with pytest.raises(OptionError, match="no consumer"):
        appends.follow().commit()
    full = appends.follow(consumer="fresh", max_rows=3)  # the latest state first: no snapshot to record yet
    full.poll()
    assert full.commit() is None and consumers.next_snapshot("fresh") is None


def test_an_expired_start_is_a_clear_error(appends: Table) -> None:
    appends.write_arrow(batch([8], ["h"]))
    appends.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    with pytest.raises(SnapshotNotFoundError, match="have expired .*consumer="):
        appends.follow(snapshot_id=1)
    stale = appends.follow(
        position=json.dumps({"offset": {"snapshotId": 2, "index": -1, "phase": "delta", "consumed": None}, "skip": 0})
    )
    with pytest.raises(SnapshotNotFoundError, match="snapshot 2"):
        stale.poll()


# -- kill and resume ------------------------------------------------------------------------------------------
FOLLOWER = textwrap.dedent(
    """
    import json, os, sys
    from pyspark_paimon import Table

    table, out, mode, kill_at, max_rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    t = Table.open(table)
    if mode == "consumer":
        f = t.follow(consumer="job", snapshot_id=1, max_rows=max_rows)
    else:  # exactly-once: the position is stored with the rows, in one atomic file write
        state = out + ".position"
        f = t.follow(position=open(state).read(), max_rows=max_rows) if os.path.exists(state) else t.follow(
            snapshot_id=1, max_rows=max_rows)
    polls = 0
    while (changes := f.poll()).num_rows:
        polls += 1
        lines = "".join(json.dumps(r) + "\\n" for r in changes.data.to_pylist())
        if mode == "consumer":
            with open(out, "a") as sink:
                sink.write(lines)
            if polls == kill_at:
                os._exit(17)  # the rows are out, the consumer was not advanced
            f.commit()
        else:
            if polls == kill_at:
                os._exit(17)  # killed before the rows and their position were stored
            with open(out, "a") as sink:
                sink.write(lines)
            with open(state + ".tmp", "w") as s:
                s.write(changes.position)
            os.replace(state + ".tmp", state)
    """
)


def run_follower(script: Path, table: Table, out: Path, mode: str, kill_at: int, max_rows: int) -> int:
    """Run the follower process; its exit status (17: killed at poll ``kill_at``). A failure shows its stderr."""
    args = [sys.executable, str(script), table.uri, str(out), mode, str(kill_at), str(max_rows)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode in (0, 17), proc.stderr
    return proc.returncode


def delivered(out: Path) -> list[tuple]:
    return [(r["rowkind"], r["id"], r["v"]) for r in map(json.loads, out.read_text().splitlines())]


@pytest.mark.parametrize(("max_rows", "kill_at"), [(100, 1), (2, 2), (2, 4)])
def test_resumes_from_its_consumer_after_a_kill(appends: Table, tmp_path: Path, max_rows: int, kill_at: int) -> None:
    appends.write_arrow(batch([8, 9], ["h", "i"]))
    want = drain(appends.follow(snapshot_id=1))
    script = tmp_path / "follow.py"
    script.write_text(FOLLOWER)
    out = tmp_path / "out.jsonl"
    assert run_follower(script, appends, out, "consumer", kill_at=kill_at, max_rows=max_rows) == 17
    before = delivered(out)
    restart_at = ConsumerManager(appends.store).next_snapshot("job")
    assert run_follower(script, appends, out, "consumer", kill_at=0, max_rows=max_rows) == 0
    after = delivered(out)[len(before) :]
    assert before == want[: len(before)], "what was delivered before the kill is the stream's start"
    # the restart delivers from the first row of the consumer's snapshot to the end: at-least-once
    first_of_snapshot = {None: 0, 1: 0, 2: 2, 3: 7}[restart_at]
    assert after == want[first_of_snapshot:]


def test_a_stored_position_resumes_exactly_once_after_a_kill(appends: Table, tmp_path: Path) -> None:
    appends.write_arrow(batch([8, 9], ["h", "i"]))
    want = drain(appends.follow(snapshot_id=1))
    script = tmp_path / "follow.py"
    script.write_text(FOLLOWER)
    out = tmp_path / "out.jsonl"
    assert run_follower(script, appends, out, "position", kill_at=3, max_rows=2) == 17
    assert run_follower(script, appends, out, "position", kill_at=0, max_rows=2) == 0
    assert delivered(out) == want
