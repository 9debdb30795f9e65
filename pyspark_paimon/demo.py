"""``python -m pyspark_paimon.demo [warehouse]``: a tour of pyspark-paimon on a local warehouse.

Builds a small warehouse (default ``./demo-warehouse``), writes and reads through Spark, and prints what it
did at each step, so a new user sees the main features work end to end on their machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

from pyspark.sql import SparkSession

from pyspark_paimon import Catalog, register


def _step(title: str) -> None:
    print(f"\n=== {title}", flush=True)


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("warehouse", nargs="?", default="demo-warehouse")
    parser.add_argument("--keep", action="store_true", help="keep an existing warehouse instead of starting fresh")
    args = parser.parse_args(argv)
    warehouse = os.path.abspath(args.warehouse)
    if os.path.exists(warehouse) and not args.keep:
        shutil.rmtree(warehouse)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.time()
    own_session = spark is None
    if spark is None:
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("pyspark-paimon-demo")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
    cat = Catalog(warehouse)

    _step(f"Create a primary-key table default.orders in {warehouse}")
    orders = cat.create_table(
        "default.orders",
        "dt string, id bigint, customer string, amount decimal(10,2), ts timestamp",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "sequence.field": "ts"},
        ignore_if_exists=True,
    )
    path = orders.uri
    print(f"table at {path}; schema: {[f.name for f in orders.schema.fields]}; primary key {orders.primary_keys}")

    _step("Append two days of orders with Spark")
    df = spark.sql("""
        SELECT * FROM VALUES
          ('2025-08-10', 1L, 'ann', 10.50BD, TIMESTAMP'2025-08-10 09:00:00'),
          ('2025-08-10', 2L, 'bob', 20.00BD, TIMESTAMP'2025-08-10 10:00:00'),
          ('2025-08-11', 3L, 'cid', 30.25BD, TIMESTAMP'2025-08-11 11:00:00')
        AS t(dt, id, customer, amount, ts)""").selectExpr(
        "dt", "id", "customer", "CAST(amount AS DECIMAL(10,2)) AS amount", "ts"
    )
    df.write.format("paimon").mode("append").save(path)
    spark.read.format("paimon").load(path).orderBy("dt", "id").show(truncate=False)

    _step("Upsert: a newer version of order 2 replaces the old one (primary key + sequence.field)")
    spark.sql("""SELECT '2025-08-10' AS dt, 2L AS id, 'bob' AS customer, CAST(99.99 AS DECIMAL(10,2)) AS amount,
                 TIMESTAMP'2025-08-10 12:00:00' AS ts""").write.format("paimon").mode("append").save(path)
    spark.read.format("paimon").load(path).orderBy("dt", "id").show(truncate=False)

    _step("Read by identifier with a filter given at load time (prunes partitions and files on every Spark)")
    (
        spark.read.format("paimon")
        .option("warehouse", warehouse)
        .option("filter", "dt = '2025-08-10' AND amount > 50")
        .load("default.orders")
        .show(truncate=False)
    )

    _step("Time travel: the table as of snapshot 1")
    spark.read.format("paimon").option("scan.snapshot-id", "1").load(path).orderBy("dt", "id").show(truncate=False)

    _step("Tag the current version, then read the table as of that tag")
    orders.tags.create("after-upsert")
    print(f"tags: {[t.name for t in orders.tags.list()]}")
    spark.read.format("paimon").option("scan.tag-name", "after-upsert").load(path).orderBy("dt", "id").show()

    _step("Branch from the tag, correct data on the branch, main is untouched")
    orders.branches.create("fix", tag="after-upsert")
    spark.sql("""SELECT '2025-08-10' AS dt, 1L AS id, 'ann' AS customer, CAST(11.00 AS DECIMAL(10,2)) AS amount,
                 TIMESTAMP'2025-08-10 14:00:00' AS ts""").write.format("paimon").mode("append").option(
        "branch", "fix"
    ).save(path)
    print("branch 'fix':")
    spark.read.format("paimon").load(path + "$branch_fix").orderBy("dt", "id").show()
    print("main:")
    spark.read.format("paimon").load(path).orderBy("dt", "id").show()

    _step("Overwrite one partition (dynamic partition overwrite)")
    spark.sql("""SELECT '2025-08-11' AS dt, 4L AS id, 'dan' AS customer, CAST(5.00 AS DECIMAL(10,2)) AS amount,
                 TIMESTAMP'2025-08-11 13:00:00' AS ts""").write.format("paimon").mode("overwrite").option(
        "partitionOverwriteMode", "dynamic"
    ).save(path)
    spark.read.format("paimon").load(path).orderBy("dt", "id").show(truncate=False)

    _step("Snapshots of the table")
    for snap in orders.snapshots():
        print(
            f"snapshot {snap.id}: {snap.commit_kind:9s} total rows {snap.total_record_count} "
            f"(delta {snap.delta_record_count:+d})"
        )

    _step("Create a table straight from a DataFrame write (options become table options)")
    events = spark.range(0, 1000).selectExpr("id", "id % 7 AS kind", "CAST(id * 1.5 AS DOUBLE) AS value")
    events.write.format("paimon").mode("append").option("bucket", "-1").save(f"{warehouse}/default.db/events")
    agg = spark.read.format("paimon").load(f"{warehouse}/default.db/events").groupBy("kind").count().orderBy("kind")
    agg.show()

    print(f"\nDone in {time.time() - started:.1f} s. Warehouse left at {warehouse}.")
    if own_session:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
