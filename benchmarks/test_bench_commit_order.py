"""Groups 16a and 16b: what ordering a commit by commit time costs (issue 34: the later commit of a key wins).

* **16a, a commit no other commit raced.** A writer prepared on a ``bucket = 1`` primary-key table whose bucket
  already holds N files (N = 10 and 100; ``write-only``, so nothing compacts them) commits 1,000 rows, with the
  check (``datasource/write/resequence.py`` on) and without it (the commit before issue 34). Nothing landed
  between the writer's snapshot and its commit, so the check reads nothing: the target is within 1.1x.
* **16b, a commit another writer raced.** The same, but a second writer prepared on the same snapshot committed
  its 1,000 rows to the bucket first: with the check, the first writer's file is rewritten with higher sequence
  numbers before it lands (one delta manifest read, one Parquet file rewritten); without it, it lands as
  prepared (and loses the merge to the earlier commit).

Each timed round commits a writer prepared untimed (its table gains one file per round). Correctness is checked
outside the timed code: with the check the last commit's values are read back.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import ROUNDS, loadavg, make_rows

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource import jobs
from pyspark_paimon.datasource.jobs import WriteJob, prepare_write
from pyspark_paimon.metadata.snapshots.commit import CommitMessage

QUIET_GROUP = "16a commit with vs without the commit-order check (no race)"
RACED_GROUP = "16b commit with vs without the commit-order check (raced: re-sequenced)"
COMMIT_ROWS = 1000
EARLIER_FILES = (10, 100)


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="paimon-bench-order-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _table(root: Path, name: str, files: int) -> Table:
    t = Catalog(str(root)).create_table(
        f"bench.{name}",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options={"bucket": "1", "write-only": "true"},
    )
    for k in range(files):
        t.write_arrow(make_rows(np.arange(k * COMMIT_ROWS, (k + 1) * COMMIT_ROWS, dtype=np.int64)))
    return t


def _prepared(t: Table, marker: float) -> tuple[WriteJob, list[CommitMessage]]:
    job = prepare_write(t.store)
    writer = job.new_writer("bench")
    writer.write(make_rows(np.arange(COMMIT_ROWS, dtype=np.int64), "o_", marker))
    return job, writer.prepare_commit()


def _run(benchmark: Any, root: Path, monkeypatch: pytest.MonkeyPatch, files: int, check: bool, raced: bool) -> None:
    t = _table(root, f"{'raced' if raced else 'quiet'}_{files}_{check}", files)
    if not check:
        monkeypatch.setattr(jobs, "ordered_by_commit", lambda schema: False)
    markers = iter(range(1, 100))

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        marker = float(next(markers))
        mine = _prepared(t, marker)
        if raced:
            other, messages = _prepared(t, -marker)
            other.commit(messages)
        return (mine, marker), {}

    last: list[float] = []

    def commit(prepared: tuple[WriteJob, list[CommitMessage]], marker: float) -> None:
        job, messages = prepared
        job.commit(messages)
        last.append(marker)

    load = loadavg()
    benchmark.pedantic(commit, setup=setup, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    rows = t.scan(filter=f"id < {COMMIT_ROWS}").to_arrow()
    offsets = pc.unique(pc.subtract(rows.column("d"), pc.multiply(pc.cast(rows.column("id"), pa.float64()), 0.5)))
    if check or not raced:  # the last commit holds every key it wrote
        assert rows.num_rows == COMMIT_ROWS and offsets.to_pylist() == [last[-1]], offsets
    benchmark.extra_info.update(
        label=f"{'raced' if raced else 'quiet'} commit, {files} earlier files, check {'on' if check else 'off'}",
        rows=COMMIT_ROWS,
        earlier_files=files,
        baseline=not check,
        loadavg=[load, loadavg()],
    )


@pytest.mark.parametrize("files", EARLIER_FILES)
@pytest.mark.parametrize("check", [True, False], ids=["check", "before"])
def test_quiet_commit(benchmark: Any, root: Path, monkeypatch: pytest.MonkeyPatch, files: int, check: bool) -> None:
    benchmark.group = QUIET_GROUP
    _run(benchmark, root, monkeypatch, files, check, raced=False)


@pytest.mark.parametrize("files", EARLIER_FILES)
@pytest.mark.parametrize("check", [True, False], ids=["check", "before"])
def test_raced_commit(benchmark: Any, root: Path, monkeypatch: pytest.MonkeyPatch, files: int, check: bool) -> None:
    benchmark.group = RACED_GROUP
    _run(benchmark, root, monkeypatch, files, check, raced=True)
