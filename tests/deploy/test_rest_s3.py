"""A REST catalog whose tables live on S3 (moto's server) and whose only storage credentials are the ones it vends:
the Python API and Spark (its executors are separate Python processes) read and write by identifier with them,
so the vended credentials reached every process that touched a file."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
import s3fs

from pyspark_paimon import Catalog
from tests.deploy.components import S3_KEY, S3_SECRET, S3Server
from tests.rest_catalog_server import RestCatalogServer, ServerConfig


def test_spark_reads_and_writes_s3_tables_with_vended_credentials(  # type: ignore[no-untyped-def]
    spark, s3: S3Server, bucket: str, tmp_path: Path
) -> None:
    assert not any(k in os.environ for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"))
    assert not (Path.home() / ".aws").exists(), "no ambient credentials: only the vended ones can work"
    with pytest.raises(Exception):  # noqa: B017 - botocore's NoCredentialsError, whatever s3fs wraps it in
        s3fs.S3FileSystem(endpoint_url=s3.endpoint, skip_instance_cache=True).ls(bucket)
    vend = ServerConfig(
        vend=lambda n: {"fs.s3.accessKeyId": S3_KEY, "fs.s3.accessKeySecret": S3_SECRET}, token_ttl_ms=600_000
    )
    server = RestCatalogServer(f"s3://{bucket}/wh", vend, storage_options=s3.storage_options()).start()
    try:
        options = {"metastore": "rest", "uri": server.uri, "token.provider": "bear", "token": vend.bearer}
        cat = Catalog("warehouse", options=options, storage_options={"endpoint_url": s3.endpoint})
        t = cat.create_table("db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "2"})
        assert t.uri.startswith(f"s3://{bucket}/wh/db.db/t")
        t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}))
        spark_options = cat.spark_options()
        assert not any(k in spark_options for k in ("fs.key", "fs.secret")), "no credentials but the vended ones"
        spark.createDataFrame([(2, "B"), (3, "c")], "id long, v string").write.format("paimon").options(
            **spark_options
        ).mode("append").save("db.t")
        got = sorted(tuple(r) for r in spark.read.format("paimon").options(**spark_options).load("db.t").collect())
        assert got == [(1, "a"), (2, "B"), (3, "c")]
        assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
        assert server.state.token_requests["db.t"] >= 1
        assert [c["snapshot"] for c in server.state.commits] == [1, 2]
    finally:
        server.stop()
