"""Two processes upserting one key set of one bucket (issue 34, "Done when"): each commit writes every key with its
own value; every acknowledged commit must hold its values at its own snapshot (the later commit wins, whenever each
was prepared), and the final values are those of the commit with the highest snapshot id. A writer that the other
one's commits starve past ``commit.max-retries`` gets a ``CommitConflictError`` (``safe_to_retry``: nothing was
committed) and writes again, as docs/dml.md tells users to.

``PAIMON_TWO_WRITERS_COMMITS`` (default 300) commits per process; the writers sleep a seeded 0-2 ms between
commits so each run interleaves differently but reproducibly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pyspark_paimon import Catalog

COMMITS = int(os.environ.get("PAIMON_TWO_WRITERS_COMMITS", "300"))
KEYS = 10

_WRITER = """
import json, random, sys, time
import pyarrow as pa
from pyspark_paimon import Table
from pyspark_paimon.errors import PaimonError

uri, name, commits, seed, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(seed)
t = Table.open(uri)
with open(out, "w") as log:
    for i in range(commits):
        value = f"{name}-{i}"
        data = pa.table({"id": pa.array(range(%d), pa.int64()), "v": [value] * %d})
        for attempt in range(5):  # a writer starved by the other one's commits gets a conflict: retry, as documented
            try:
                result = t.write_arrow(data)
                break
            except PaimonError as e:
                if not e.safe_to_retry or attempt == 4:
                    raise
        log.write(json.dumps({"value": value, "snapshot": result.snapshot_id}) + "\\n")
        log.flush()
        time.sleep(rng.random() * 0.002)
""" % (KEYS, KEYS)


def test_two_processes_upserting_one_bucket_each_hold_their_values_at_their_own_snapshot(
    catalog: Catalog, tmp_path: Path
) -> None:
    t = catalog.create_table("db.race", "id bigint not null, v string", primary_keys=["id"], options={"bucket": "1"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])}
    logs = [tmp_path / f"{name}.jsonl" for name in ("a", "b")]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, t.store.table_path, name, str(COMMITS), str(seed), str(log)], env=env
        )
        for name, seed, log in (("a", 1, logs[0]), ("b", 2, logs[1]))
    ]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]

    acknowledged = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    assert len(acknowledged) == 2 * COMMITS
    snapshots = [a["snapshot"] for a in acknowledged]
    assert len(set(snapshots)) == len(snapshots)  # one snapshot per commit
    wrong = []
    for a in acknowledged:
        values = set(t.scan(snapshot_id=a["snapshot"]).to_arrow().column("v").to_pylist())
        if values != {a["value"]}:
            wrong.append((a["snapshot"], a["value"], sorted(values)))
    assert wrong == [], f"{len(wrong)} of {len(acknowledged)} commits shadowed at their own snapshot: {wrong[:5]}"
    last = max(acknowledged, key=lambda a: a["snapshot"])
    final = t.scan().to_arrow()
    assert final.num_rows == KEYS and set(final.column("v").to_pylist()) == {last["value"]}
    assert t.latest_snapshot().id >= last["snapshot"]
