"""The connector on a Spark standalone cluster: a driver in its own process, executors in processes of their
own on two workers, the package shipped with ``addPyFile`` (the workers cannot import it otherwise), the table on
S3 reached through ``fs.*`` options only. Writes, a primary-key merge, time travel and reads all run in executors,
so nothing may depend on state in the driver's process."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.deploy.components import Cluster, S3Server, base_env, executor_logs, run_script, zip_package

DRIVER = textwrap.dedent("""
    import json, os, sys
    from pyspark.sql import SparkSession
    from pyspark_paimon import register

    master, package, endpoint, key, secret, bucket = sys.argv[1:7]
    spark = (SparkSession.builder.master(master).appName("pyspark-paimon-cluster-test")
             .config("spark.executor.cores", "1").config("spark.cores.max", "2")
             .config("spark.executor.memory", "512m").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
             .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s")
             .getOrCreate())
    try:
        spark.sparkContext.addPyFile(package)      # what --py-files does for spark-submit
        register(spark)
        fs = {"fs.endpoint_url": endpoint, "fs.key": key, "fs.secret": secret}
        path = f"s3://{bucket}/wh/db.db/t"
        first = spark.createDataFrame([(i, f"v{i}") for i in range(6)], "id long, v string").repartition(2)
        (first.write.format("paimon").mode("append").options(**fs).option("primary-key", "id")
            .option("bucket", "2").save(path))
        second = spark.createDataFrame([(1, "one"), (4, "four"), (7, "seven")], "id long, v string").repartition(2)
        second.write.format("paimon").mode("append").options(**fs).save(path)
        def rows(df):
            return sorted(list(r) for r in df.collect())
        print("LATEST=" + json.dumps(rows(spark.read.format("paimon").options(**fs).load(path))))
        print("FIRST=" + json.dumps(rows(spark.read.format("paimon").options(**fs).option("scan.snapshot-id", "1")
                                         .load(path))))
        def probe(_):
            import pyspark_paimon
            yield os.getpid(), pyspark_paimon.__file__
        print("TASKS=" + json.dumps(spark.sparkContext.parallelize(range(4), 4).mapPartitions(probe).collect()))
        print("EXECUTORS=" + json.dumps(spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1))
        print("DRIVER_PID=" + json.dumps(os.getpid()))
    finally:
        spark.stop()
""")


def test_write_merge_and_read_on_a_standalone_cluster(
    cluster: Cluster, s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    package = zip_package(tmp_path / "pyspark_paimon.zip")
    opts = s3.storage_options()
    out = run_script(
        DRIVER,
        [cluster.master_url, str(package), opts["endpoint_url"], opts["key"], opts["secret"], bucket],
        base_env(),
        tmp_path,
        logs=lambda: executor_logs(cluster),
    )
    assert out["LATEST"] == [[0, "v0"], [1, "one"], [2, "v2"], [3, "v3"], [4, "four"], [5, "v5"], [7, "seven"]]
    assert out["FIRST"] == [[i, f"v{i}"] for i in range(6)]
    assert out["EXECUTORS"] == 2
    pids = {pid for pid, _ in out["TASKS"]}
    assert out["DRIVER_PID"] not in pids and len(pids) >= 2, out["TASKS"]
    assert all(f.endswith("pyspark_paimon.zip/pyspark_paimon/__init__.py") for _, f in out["TASKS"]), (
        f"executors must import the shipped package, not an installed one: {out['TASKS']}"
    )
