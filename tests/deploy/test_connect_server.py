"""The connector through a Spark Connect server started on its own (``spark-submit`` of SparkConnectServer, on
the standalone cluster). The server cannot import pyspark_paimon: the client ships it with ``addArtifacts``,
registers the source, and writes, merges and reads a table on S3 through ``fs.*`` options."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.deploy.components import (
    Cluster,
    S3Server,
    base_env,
    connect_server,
    executor_logs,
    run_script,
    zip_package,
)

CLIENT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf
    from pyspark_paimon import register

    url, package, endpoint, key, secret, bucket = sys.argv[1:7]
    spark = SparkSession.builder.remote(url).getOrCreate()
    print('STEP="connected"', flush=True)   # the last STEP a timed-out run printed says where it stalled
    assert type(spark).__module__.startswith("pyspark.sql.connect"), type(spark)
    spark.addArtifacts(package, pyfile=True)   # the server and its executors import the package from here
    register(spark)
    print('STEP="registered"', flush=True)
    fs = {"fs.endpoint_url": endpoint, "fs.key": key, "fs.secret": secret}
    path = f"s3://{bucket}/wh/db.db/t"
    (spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").write.format("paimon").mode("append")
        .options(**fs).option("primary-key", "id").option("bucket", "1").save(path))
    (spark.createDataFrame([(2, "B"), (3, "c")], "id long, v string").write.format("paimon").mode("append")
        .options(**fs).save(path))
    print('STEP="written"', flush=True)
    def rows(df):
        return sorted(list(r) for r in df.collect())
    print("LATEST=" + json.dumps(rows(spark.read.format("paimon").options(**fs).load(path))))
    print("FIRST=" + json.dumps(rows(spark.read.format("paimon").options(**fs).option("scan.snapshot-id", "1")
                                     .load(path))))

    @udf("string")
    def package_file(_):
        import pyspark_paimon
        return pyspark_paimon.__file__
    print("PACKAGE=" + json.dumps(spark.range(1).select(package_file("id")).first()[0]))
""")


def test_client_against_a_separately_started_connect_server(
    cluster: Cluster, s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    package = zip_package(tmp_path / "pyspark_paimon.zip")
    conf = {
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.executor.memory": "512m",
        "spark.sql.shuffle.partitions": "2",
        "spark.pyspark.python": base_env()["PYSPARK_PYTHON"],
    }
    server = tmp_path / "server"
    with connect_server(server, base_env(include_checkout=False), cluster.master_url, conf) as url:
        opts = s3.storage_options()
        out = run_script(
            CLIENT,
            [url, str(package), opts["endpoint_url"], opts["key"], opts["secret"], bucket],
            base_env(),
            tmp_path,
            logs=lambda: [server / "connect.log", *executor_logs(cluster)],
        )
    assert out["LATEST"] == [[1, "a"], [2, "B"], [3, "c"]]
    assert out["FIRST"] == [[1, "a"], [2, "b"]]
    assert out["PACKAGE"].endswith("pyspark_paimon.zip/pyspark_paimon/__init__.py"), (
        f"the server must run the package the client shipped, not an installed one: {out['PACKAGE']}"
    )
