"""``python -m pyspark_paimon.demo [warehouse]``: a tour of pyspark-paimon on a local warehouse.

Builds a small warehouse (default ``./demo-warehouse``) and runs the workflow the package is for, printing each
step, so a new user sees it work end to end on their machine: a daily job writes orders through Spark and tags
each day; a bad batch is read back by time travel and corrected on a branch, which is published while the job
keeps committing; a chain table keeps full days in one branch and each day's changes in another, a day is read
by merging its anchor with the deltas after it, and chain compaction turns that day into a full one. Every step
uses only the public API (``Catalog``, ``Table``, the ``paimon`` Spark format).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import threading
import time
from decimal import Decimal

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from pyspark_paimon import Catalog, Table, register

ORDERS_DDL = "dt string, id bigint, customer string, amount decimal(10,2), ts timestamp"
BALANCES_DDL = "account string, balance decimal(12,2), ts timestamp, dt string"


def _step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def _show(df: DataFrame, *order: str) -> None:
    df.orderBy(*order).show(truncate=False)


def _orders_sql(spark: SparkSession, rows: str) -> DataFrame:
    """Orders from SQL VALUES (dt, id, customer, amount, ts), typed as the table is."""
    return spark.sql(f"SELECT * FROM VALUES {rows} AS t(dt, id, customer, amount, ts)").selectExpr(
        "dt", "id", "customer", "CAST(amount AS DECIMAL(10,2)) AS amount", "ts"
    )


def _print_changes(changes: pa.Table) -> None:
    for r in changes.to_pylist():
        print(f"  {r['rowkind']}  dt={r['dt']} id={r['id']} amount={r['amount']}")


class _Job(threading.Thread):
    """The daily job, still writing: one order of 2025-08-12 per commit to main, until stopped."""

    def __init__(self, uri: str):
        super().__init__(name="demo-job", daemon=True)
        self.table = Table.open(uri)
        self.committed: list[int] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        order = 100
        try:
            while not self.stop.is_set():
                self.table.write_arrow(
                    pa.table(
                        {
                            "dt": ["2025-08-12"],
                            "id": pa.array([order], pa.int64()),
                            "customer": ["job"],
                            "amount": pa.array([Decimal("1.00")], pa.decimal128(10, 2)),
                            "ts": pa.array([dt.datetime(2025, 8, 12, 8, 0)], pa.timestamp("us")),
                        }
                    )
                )
                self.committed.append(order)
                order += 1
                self.stop.wait(0.05)
        except BaseException as exc:  # noqa: BLE001 - re-raised by wait_for / finish in the main thread
            self.error = exc

    def wait_for(self, commits: int) -> None:
        while len(self.committed) < commits and self.is_alive():
            time.sleep(0.02)
        if self.error is not None:
            raise self.error

    def finish(self) -> None:
        self.stop.set()
        self.join()
        if self.error is not None:
            raise self.error


def orders_tour(spark: SparkSession, cat: Catalog, warehouse: str) -> Table:
    """A daily job's table: two days written through Spark and tagged, a filtered read, time travel."""
    _step(f"Create a primary-key table default.orders in {warehouse}")
    orders = cat.create_table(
        "default.orders",
        ORDERS_DDL,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},  # no sequence.field: the newest write of a key wins (branch merges need that)
    )
    path = orders.uri
    print(f"table at {path}; columns {[f.name for f in orders.schema.fields]}; primary key {orders.primary_keys}")

    _step("The daily job appends 2025-08-10 with Spark and tags the day")
    _orders_sql(
        spark,
        """('2025-08-10', 1L, 'ann', 10.50BD, TIMESTAMP'2025-08-10 09:00:00'),
           ('2025-08-10', 2L, 'bob', 20.00BD, TIMESTAMP'2025-08-10 10:00:00')""",
    ).write.format("paimon").mode("append").save(path)
    orders.tags.create("2025-08-10")
    _show(spark.read.format("paimon").load(path), "dt", "id")

    _step("2025-08-11: a bad batch (amounts in cents) that also upserts order 2 of 2025-08-10, tagged")
    _orders_sql(
        spark,
        """('2025-08-11', 3L, 'cid', 3025.00BD, TIMESTAMP'2025-08-11 11:00:00'),
           ('2025-08-11', 4L, 'dan', 1250.00BD, TIMESTAMP'2025-08-11 12:00:00'),
           ('2025-08-10', 2L, 'bob', 21.00BD, TIMESTAMP'2025-08-11 13:00:00')""",
    ).write.format("paimon").mode("append").save(path)
    orders.tags.create("2025-08-11")
    _show(spark.read.format("paimon").load(path), "dt", "id")

    _step("Read by identifier with a filter given at load time (prunes partitions and files on every Spark)")
    _show(
        spark.read.format("paimon")
        .option("warehouse", warehouse)
        .option("filter", "dt = '2025-08-11' AND amount > 1000")
        .load("default.orders"),
        "id",
    )

    _step("Time travel: the table as of tag 2025-08-10, and what the batch of 2025-08-11 changed (t.diff)")
    _show(spark.read.format("paimon").option("scan.tag-name", "2025-08-10").load(path), "dt", "id")
    _print_changes(orders.diff("2025-08-10", "2025-08-11"))
    return orders


def correction_tour(spark: SparkSession, orders: Table) -> None:
    """The bad batch corrected on a branch and published into main while the job keeps committing."""
    _step("Correct the bad batch on branch 'fix' while the job keeps writing 2025-08-12 to main")
    job = _Job(orders.uri)
    job.start()
    try:
        orders.branches.create("fix", tag="2025-08-11")  # main as right after the bad batch
        fix = orders.on_branch("fix")
        fix.update({"amount": "amount / 100"}, filter="dt = '2025-08-11' AND amount > 1000")
        print("review on the branch: the rows the correction changed (t.diff('fix.2025-08-11', 'fix'))")
        _print_changes(orders.diff("fix.2025-08-11", "fix"))
        job.wait_for(2)  # main has moved on since the fork
        print(f"meanwhile the job committed orders {job.committed} to main")

        _step("Publish 'fix' into main (t.branches.publish): one commit, and no commit of the job is lost")
        published = orders.branches.publish("fix")
        how = (
            "main had not moved, so it now equals the branch"
            if published.target_unchanged
            else f"a three-way merge from the fork point {published.base}, as main had moved on"
        )
        print(
            f"published: {published.upserted} corrected row(s) landed on main in snapshot {published.snapshot_id} "
            f"({how})"
        )
        job.wait_for(len(job.committed) + 1)  # and it keeps writing after the publish
    finally:
        job.finish()
    print(f"the job committed {len(job.committed)} orders in all; main now:")
    _show(spark.read.format("paimon").load(orders.uri), "dt", "id")


def chain_tour(spark: SparkSession, cat: Catalog) -> None:
    """A chain table: a full day in the snapshot branch, daily changes in the delta branch, a day read that
    merges its anchor with the deltas, and chain compaction."""
    _step("A chain table default.balances: full days in branch 'snapshot', each day's changes in branch 'delta'")
    balances = cat.create_chain_table(
        "default.balances",
        BALANCES_DDL,
        partition_keys=["dt"],
        primary_keys=["dt", "account"],
        options={
            "bucket": "1",
            "sequence.field": "ts",
            "partition.timestamp-pattern": "$dt",
            "partition.timestamp-formatter": "yyyyMMdd",
        },
        snapshot_branch="snapshot",
        delta_branch="delta",
    )

    def day(dt_text: str, items: list[tuple[str, str]]) -> pa.Table:
        when = dt.datetime.strptime(dt_text, "%Y%m%d").replace(hour=9)
        return pa.table(
            {
                "account": [a for a, _ in items],
                "balance": pa.array([Decimal(b) for _, b in items], pa.decimal128(12, 2)),
                "ts": pa.array([when] * len(items), pa.timestamp("us")),
                "dt": [dt_text] * len(items),
            }
        )

    full = day("20250810", [("alice", "100.00"), ("bob", "200.00"), ("carol", "300.00")])
    balances.on_branch("snapshot").write_arrow(full)
    print("snapshot branch, 20250810 (a full day): alice 100.00, bob 200.00, carol 300.00")
    balances.on_branch("delta").write_arrow(day("20250811", [("bob", "250.00"), ("dave", "50.00")]))
    print("delta branch, 20250811: bob 250.00, dave 50.00")
    balances.on_branch("delta").write_arrow(day("20250812", [("carol", "280.00"), ("erin", "10.00")]))
    print("delta branch, 20250812: carol 280.00, erin 10.00")

    _step("Read 20250812 through Spark: its anchor (the full day before it) merged with the deltas after it")
    plan = balances.chain.explain("dt=20250812")[0]
    anchor = plan["anchor"]["dt"] if plan["anchor"] else None
    print(f"resolved: source {plan['source']}, anchor {anchor}, deltas {[d['dt'] for d in plan['deltas']]}")
    day_read = spark.read.format("paimon").option("scan.partitions", "dt=20250812").load(balances.uri)
    _show(day_read.select("dt", "account", "balance"), "account")

    _step("Chain compaction: 20250812 written into the snapshot branch, so reading it merges nothing")
    compacted = balances.chain.compact("dt=20250812")
    print(f"compacted partitions: {[p['dt'] for p in compacted.compacted]}")
    plan = balances.chain.explain("dt=20250812")[0]
    print(f"resolved now: source {plan['source']}, anchor {plan['anchor']}, deltas {plan['deltas']}")
    rows = balances.scan(filter="dt = '20250812'", columns=["account", "balance"]).to_arrow().sort_by("account")
    print("same rows: " + ", ".join(f"{r['account']} {r['balance']}" for r in rows.to_pylist()))


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", nargs="?", default="demo-warehouse")
    parser.add_argument("--keep", action="store_true", help="keep an existing warehouse instead of starting fresh")
    args = parser.parse_args(argv)
    warehouse = os.path.abspath(args.warehouse)
    if os.path.exists(warehouse) and not args.keep:
        shutil.rmtree(warehouse)

    # Before the session starts, so that Spark's own Python workers (auto-registration included) run this
    # interpreter too; register() alone would cover the data source's workers on this local master.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.time()
    own_session = spark is None
    if spark is None:
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("pyspark-paimon-demo")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
    cat = Catalog(warehouse)

    orders = orders_tour(spark, cat, warehouse)
    correction_tour(spark, orders)
    chain_tour(spark, cat)

    _step("Overwrite one partition of orders (dynamic partition overwrite)")
    _orders_sql(spark, "('2025-08-12', 200L, 'eve', 5.00BD, TIMESTAMP'2025-08-12 20:00:00')").write.format(
        "paimon"
    ).mode("overwrite").option("partitionOverwriteMode", "dynamic").save(orders.uri)
    print("2025-08-12 now holds only order 200; the other days are untouched")

    _step("Snapshots of orders")
    for snap in orders.snapshots():
        print(f"snapshot {snap.id}: {snap.commit_kind:9s} total rows {snap.total_record_count}")

    _step("Create a table straight from a DataFrame write (options become table options)")
    events = spark.range(0, 1000).selectExpr("id", "id % 7 AS kind", "CAST(id * 1.5 AS DOUBLE) AS value")
    events.write.format("paimon").mode("append").option("bucket", "-1").save(f"{warehouse}/default.db/events")
    _show(spark.read.format("paimon").load(f"{warehouse}/default.db/events").groupBy("kind").count(), "kind")

    print(f"\nDone in {time.time() - started:.1f} s. Warehouse left at {warehouse}.")
    if own_session:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
