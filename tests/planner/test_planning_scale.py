"""Planning at scale: 365 partitions x 16 buckets written by ~200 commits plans quickly, prunes by
partition and bucket, and re-plans from the process-wide manifest cache. Data files are synthetic
(planning never opens them). Timings are printed, never asserted."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from pyspark_paimon import Catalog
from pyspark_paimon.metadata.manifests.manifest import MANIFEST_CACHE, DataFileMeta
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.rows.bucket import bucket_of_values
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.predicate import Leaf
from pyspark_paimon.planner.scan import ScanPlanner
from tests.engine_read import explain as engine_explain

PARTITIONS, BUCKETS, COMMITS = 365, 16, 200


def build(catalog: Catalog) -> tuple[Any, list[str]]:
    t = catalog.create_table(
        "default.big",
        "k int, v bigint, dt string",
        partition_keys=["dt"],
        options={"bucket": str(BUCKETS), "bucket-key": "k", "manifest.merge-min-count": "30"},
    )
    days = [(dt.date(2024, 1, 1) + dt.timedelta(days=i)).isoformat() for i in range(PARTITIONS)]
    committer = FileStoreCommit(t.store, t.schema.options)
    part_type = [AtomicType("VARCHAR", length=2147483647)]
    n = 0
    for c in range(COMMITS):
        messages = []
        for p in range(c, PARTITIONS, COMMITS):  # every partition is written by exactly one commit
            part = serialize_row([days[p]], part_type)
            for b in range(BUCKETS):
                n += 1
                f = DataFileMeta(
                    file_name=f"data-{n}.parquet",
                    file_size=1000 + b,
                    row_count=10,
                    schema_id=t.schema.id,
                    value_stats_cols=(),
                )
                messages.append(CommitMessage(part, b, BUCKETS, (f,)))
        committer.commit(messages)
    return t, days


def test_planning_365_partitions_16_buckets_200_commits(catalog: Catalog) -> None:
    t0 = time.perf_counter()
    t, days = build(catalog)
    print(f"\nbuilt {PARTITIONS}x{BUCKETS} over {COMMITS} commits in {time.perf_counter() - t0:.2f}s")
    store = t.store
    snap = store.snapshots.latest()
    assert snap is not None and snap.id == COMMITS
    metas = store.data_manifests(snap)
    assert 1 < len(metas) < 80  # merged, not one manifest per commit

    MANIFEST_CACHE.clear()
    t1 = time.perf_counter()
    full = ScanPlanner(store, t.schema).plan(snap)
    cold = time.perf_counter() - t1
    assert len(full.splits) == PARTITIONS * BUCKETS
    assert full.counters.files_selected == PARTITIONS * BUCKETS

    t1 = time.perf_counter()
    pred = [Leaf("dt", "=", days[100]), Leaf("k", "=", 7)]
    plan = ScanPlanner(store, t.schema).plan(snap, pred)
    warm = time.perf_counter() - t1
    target = bucket_of_values([7], [AtomicType("INT")], BUCKETS)
    assert [(s.partition_values, s.bucket) for s in plan.splits] == [((days[100],), target)]
    c = plan.counters
    assert c.manifests_skipped > 0  # partition stats pruned manifests before opening them
    assert c.partitions_selected == 1 and c.buckets_skipped == BUCKETS - 1
    assert c.files_skipped_bucket == BUCKETS - 1 and c.files_selected == 1
    assert c.files_total == c.files_selected + c.files_skipped_partition + c.files_skipped_bucket

    # a month of partitions through the public explain helper (cache warm: no manifest decoded again)
    misses = MANIFEST_CACHE.misses
    t1 = time.perf_counter()
    ex = engine_explain(t, predicate=[Leaf("dt", ">=", days[31]), Leaf("dt", "<", days[59])])
    month = time.perf_counter() - t1
    assert MANIFEST_CACHE.misses == misses
    assert ex.snapshot_id == COMMITS and ex.splits.partitions == 28
    assert ex.splits.count == 28 * BUCKETS
    print(
        f"plan all (cold cache) {cold * 1000:.0f} ms, one partition+bucket {warm * 1000:.0f} ms, "
        f"one month via explain {month * 1000:.0f} ms"
    )
