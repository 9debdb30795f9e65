"""Fixtures of the deploy tier: one S3 server for the whole run, a fresh bucket per test."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests.deploy.components import Cluster, S3Server, base_env, moto_s3, spark_standalone


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with moto_s3(Path(tmp_path_factory.mktemp("moto"))) as server:
        yield server


@pytest.fixture
def bucket(s3: S3Server) -> str:
    """A new, empty bucket: tests never see each other's tables."""
    return s3.create_bucket(f"paimon-{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A Spark standalone cluster (master + 2 workers). Its processes see neither this checkout nor any AWS
    settings: the package reaches executors only as shipped by the application, storage settings only as options."""
    with spark_standalone(Path(tmp_path_factory.mktemp("cluster")), base_env(include_checkout=False)) as c:
        yield c
