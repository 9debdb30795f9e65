"""Time pypaimon's scan planning of one equality filter (or of the whole table), inside the oracle venv (a
subprocess of the scan and scale benchmarks). Prints one JSON line: ``{"times_s": [...], "splits": n, "files": n}``;
each time is catalog + table load + ``new_read_builder().with_filter(...).new_scan().plan()``, in process (import
time excluded). Without ``--column`` the whole table is planned.

    python oracle_plan.py --warehouse WH --table db.t --column dt --value 2024-07-01 --reps 3
    python oracle_plan.py --warehouse WH --table db.t --reps 1
"""

from __future__ import annotations

import argparse
import json
import time

PYPAIMON_PURE_PYTHON = {"read.native.enabled": "false", "scan.native-plan.enabled": "false"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--column")
    ap.add_argument("--value")
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    from pypaimon import CatalogFactory

    times, splits, files = [], 0, 0
    for _ in range(a.reps):
        t0 = time.perf_counter()
        table = CatalogFactory.create({"warehouse": a.warehouse}).get_table(a.table)
        try:
            table = table.copy(PYPAIMON_PURE_PYTHON)
        except Exception:  # noqa: BLE001 - older pypaimon without copy(): keep its defaults
            pass
        rb = table.new_read_builder()
        if a.column:
            rb = rb.with_filter(rb.new_predicate_builder().equal(a.column, a.value))
        plan = rb.new_scan().plan()
        got = plan.splits()
        times.append(time.perf_counter() - t0)
        splits = len(got)
        files = sum(len(getattr(s, "files", []) or []) for s in got)
    print(json.dumps({"times_s": times, "splits": splits, "files": files}))


if __name__ == "__main__":
    main()
