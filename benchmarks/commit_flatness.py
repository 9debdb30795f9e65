"""Per-commit time of a streaming-like writer over a long history: N small ``Table.write_arrow`` commits to a
primary-key table with automatic expiration (``snapshot.num-retained.max`` small) and compaction on, a tag every
K commits. Each commit's wall time includes its post-commit maintenance. Runs twice side by side: with the
per-root reachability cache (:data:`ROOT_REFS_CACHE`) and with it disabled (what every commit paid before).

    PYTHONPATH=. python benchmarks/commit_flatness.py [N] [K]

Not run by CI (no timings in tests)."""

from __future__ import annotations

import sys
import tempfile
import time

import pyarrow as pa

from pyspark_paimon import Catalog
from pyspark_paimon.metadata.maintenance.reachability import ROOT_REFS_CACHE

REPORT_AT = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100, 200, 300, 500)


def run(n: int, k: int, cached: bool) -> dict[int, float]:
    ROOT_REFS_CACHE.clear()
    ROOT_REFS_CACHE.max_entries = 256 if cached else 0
    with tempfile.TemporaryDirectory() as d:
        t = Catalog(d).create_table(
            "db.t",
            pa.schema([("id", pa.int64()), ("v", pa.string())]),
            primary_keys=["id"],
            options={"bucket": "1", "snapshot.num-retained.min": "2", "snapshot.num-retained.max": "5"},
        )
        out: dict[int, float] = {}
        window: list[float] = []
        for i in range(1, n + 1):
            batch = pa.table({"id": pa.array([i % 50, i], pa.int64()), "v": [f"a{i}", f"b{i}"]})
            start = time.perf_counter()
            t.write_arrow(batch)
            window.append((time.perf_counter() - start) * 1000)
            if i % k == 0:
                t.tags.create(f"t{i}")
            if i in REPORT_AT:
                # commits 1-10 alone; later points: the median of the 10 commits ending there (less noise)
                out[i] = window[-1] if i <= 10 else sorted(window[-10:])[5]
    ROOT_REFS_CACHE.max_entries = 256
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    before = run(n, k, cached=False)
    after = run(n, k, cached=True)
    print("| commit | before (ms) | after (ms) |\n|---:|---:|---:|")
    for i in sorted(before):
        print(f"| {i} | {before[i]:.0f} | {after[i]:.0f} |")


if __name__ == "__main__":
    main()
