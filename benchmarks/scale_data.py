"""The big-metadata table of the scale benchmarks (test_bench_scale.py): many partitions, buckets and commits.

Shape (``PAIMON_BENCH_META_PARTITIONS`` default 1,000, ``PAIMON_BENCH_META_BUCKETS`` default 16,
``PAIMON_BENCH_META_COMMITS`` default 500, ``PAIMON_BENCH_META_ROWS`` rows per partition, default 320):

* ``bench.meta_t``: ``dt string, id bigint not null, s string, d double``, primary key ``(dt, id)``, partitioned
  by ``dt`` (one day per partition), ``bucket = 16`` on ``id``. Default options, i.e. *not* write-only: the
  writer's own compaction runs when a bucket reaches ``num-sorted-run.compaction-trigger`` (5) sorted runs,
  as it would for a table only this connector writes.
* The table grows like a daily ingest with late updates: commit ``c`` inserts the next ``P / C`` new days
  (every key of the day, ``s = 'v0_<id>'``) and upserts a random quarter of the keys of ``U`` (default 2)
  days written earlier (``s = 'v<c>_<id>'``, ``d = id * 0.5 + c``). After ``C`` commits every day exists;
  each commit writes into every bucket of the days it touches, so the table has one level-0 file per
  (day, bucket, commit touching the day) until compaction folds them.
* ids are global (day ``p`` holds ``p * R .. p * R + R - 1``), so a sum over ids checks which rows came back.

Built in process with ``Table.write_arrow`` (one call per commit), once, into a directory under the system
temp dir named after the shape (``paimon-bench-meta-<P>x<B>x<C>x<R>``) and reused by later sessions; a marker
file written last tells a finished build from an interrupted one. ``PAIMON_BENCH_META_DIR`` picks another
directory. Building at the default shape takes a few minutes on a quiet 2-core machine.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

META_PARTITIONS = int(os.environ.get("PAIMON_BENCH_META_PARTITIONS", "1000"))
META_BUCKETS = int(os.environ.get("PAIMON_BENCH_META_BUCKETS", "16"))
META_COMMITS = int(os.environ.get("PAIMON_BENCH_META_COMMITS", "500"))
META_ROWS = int(os.environ.get("PAIMON_BENCH_META_ROWS", "320"))  # rows (keys) per partition
UPDATED_DAYS = 2  # earlier days each commit upserts
UPDATE_FRACTION = 0.25  # of the keys of an upserted day
SEED = 20261124
IDENTIFIER = "bench.meta_t"
SCHEMA = "dt string, id bigint not null, s string, d double"
DONE = "BUILD_DONE.json"


@dataclass
class MetaTable:
    warehouse: str
    identifier: str
    path: str
    partitions: int
    buckets: int
    commits: int
    rows: int  # live rows
    sum_id: int
    sum_d: float
    max_len_s: int
    one_day: str  # the day the one-partition benchmarks read
    one_day_rows: int
    one_day_sum_d: float
    build_s: float
    files: int  # live data files
    manifests: int  # manifest files the latest snapshot lists
    snapshot_id: int
    # median seconds of one write_arrow (data files + commit + the writer's compaction) over the first and the
    # last 10% of the build's commits: how a commit's cost grows with the table
    write_s_first: float = 0.0
    write_s_last: float = 0.0


def day_name(p: int) -> str:
    return (_dt.date(2020, 1, 1) + _dt.timedelta(days=p)).isoformat()


def _rows(p: int, keys: np.ndarray, version: int, rows_per_day: int) -> pa.Table:
    ids = pa.array(keys + p * rows_per_day, pa.int64())
    s = pc.binary_join_element_wise(f"v{version}_", pc.cast(ids, pa.string()), "")
    d = pc.add(pc.multiply(pc.cast(ids, pa.float64()), 0.5), float(version))
    return pa.table({"dt": pa.array([day_name(p)] * len(keys), pa.string()), "id": ids, "s": s, "d": d})


def build_meta(
    root: Path,
    partitions: int = META_PARTITIONS,
    buckets: int = META_BUCKETS,
    commits: int = META_COMMITS,
    rows_per_day: int = META_ROWS,
    profile: str | None = None,
) -> MetaTable:
    """Write the table under ``root`` (``profile``: write cProfile stats of the build to that file)."""
    from pyspark_paimon import Catalog

    if commits > partitions:
        raise ValueError(f"{commits} commits cannot each insert a new day into {partitions} partitions")
    warehouse = str(root / "warehouse")
    table = Catalog(warehouse).create_table(
        IDENTIFIER,
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": str(buckets), "bucket-key": "id"},
    )
    rng = np.random.default_rng(SEED)
    version = np.zeros((partitions, rows_per_day), np.int64)  # the commit that last wrote each key
    bounds = [(c * partitions) // commits for c in range(commits + 1)]
    keys_all = np.arange(rows_per_day, dtype=np.int64)
    n_update = max(1, int(rows_per_day * UPDATE_FRACTION))
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    write_s: list[float] = []
    start = time.perf_counter()
    for c in range(commits):
        parts = [_rows(p, keys_all, 0, rows_per_day) for p in range(bounds[c], bounds[c + 1])]
        if bounds[c] > 0:
            for p in rng.choice(bounds[c], min(UPDATED_DAYS, bounds[c]), replace=False):
                keys = np.sort(rng.choice(rows_per_day, n_update, replace=False)).astype(np.int64)
                parts.append(_rows(int(p), keys, c + 1, rows_per_day))
                version[p, keys] = c + 1
        t0 = time.perf_counter()
        table.write_arrow(pa.concat_tables(parts))
        write_s.append(time.perf_counter() - t0)
    build_s = time.perf_counter() - start
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)  # type: ignore[arg-type]

    ids = np.arange(partitions * rows_per_day, dtype=np.int64).reshape(partitions, rows_per_day)
    d = ids * 0.5 + version
    lens = np.char.str_len(np.char.add(np.char.add("v", version.astype(str)), np.char.add("_", ids.astype(str))))
    one = partitions // 2
    tenth = max(1, commits // 10)
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    return MetaTable(
        warehouse=warehouse,
        identifier=IDENTIFIER,
        path=table.store.table_path,
        partitions=partitions,
        buckets=buckets,
        commits=commits,
        rows=int(ids.size),
        sum_id=int(ids.sum()),
        sum_d=float(d.sum()),
        max_len_s=int(lens.max()),
        one_day=day_name(one),
        one_day_rows=rows_per_day,
        one_day_sum_d=float(d[one].sum()),
        build_s=build_s,
        files=len(table.store.live_entries(snapshot)),
        manifests=len(table.store.data_manifests(snapshot)),
        snapshot_id=snapshot.id,
        write_s_first=statistics.median(write_s[:tenth]),
        write_s_last=statistics.median(write_s[-tenth:]),
    )


def get_meta() -> MetaTable:
    """The table at the configured shape, built once and reused (see the module docstring)."""
    shape = f"{META_PARTITIONS}x{META_BUCKETS}x{META_COMMITS}x{META_ROWS}"
    root = Path(os.environ.get("PAIMON_BENCH_META_DIR") or Path(tempfile.gettempdir()) / f"paimon-bench-meta-{shape}")
    done = root / DONE
    if done.exists():
        return MetaTable(**json.loads(done.read_text()))
    if root.exists():
        shutil.rmtree(root)  # an interrupted build
    root.mkdir(parents=True)
    meta = build_meta(root)
    done.write_text(json.dumps(asdict(meta)))
    return meta
