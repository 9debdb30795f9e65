"""Shared fixtures: one local SparkSession for the whole test run, fresh warehouses per test."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests by what they need, so ``-m "not spark and not interop and not deploy"`` is the fast lane: every
    test that uses the SparkSession is ``spark``, every test that drives the oracles is ``interop``, every test
    under ``tests/deploy`` (real S3 server, Spark cluster, Connect server) is ``deploy``.

    The full fault sweep (``faults``, tests/faults) runs only when asked for by a ``-m`` expression naming it
    (``-m faults``): every other run, ``./dev test`` and CI included, deselects it (its CI sample is ordinary)."""
    if "faults" not in (config.option.markexpr or ""):
        deselected = [item for item in items if item.get_closest_marker("faults") is not None]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if item.get_closest_marker("faults") is None]
    for item in items:
        names = getattr(item, "fixturenames", ())
        if Path(str(item.fspath)).resolve().parent == ROOT / "tests" / "deploy":
            item.add_marker(pytest.mark.deploy)
        if "spark" in names:
            item.add_marker(pytest.mark.spark)
        if "oracle_python" in names:
            item.add_marker(pytest.mark.interop)


@pytest.fixture(scope="session")
def spark() -> Iterator["SparkSession"]:  # noqa: F821
    """A 2-core local session with the ``paimon`` source registered (pushdown as ``register`` decides).

    Executors must import pyspark_paimon from this checkout, so the workers use this interpreter.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from pyspark_paimon import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("pyspark-paimon-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture
def catalog(warehouse: str) -> "Catalog":  # noqa: F821
    from pyspark_paimon import Catalog

    return Catalog(warehouse)


@pytest.fixture(scope="session")
def oracle_python() -> str:
    """The oracle venv's python (pypaimon, pypaimon-rust). Interop tests fail, never skip, without it."""
    from tests.oracle import require_oracle_python

    return require_oracle_python()


@pytest.fixture
def rest_server(tmp_path: Path) -> Iterator["RestCatalogServer"]:  # noqa: F821
    """The in-suite REST catalog server (tests/rest_catalog_server.py) on 127.0.0.1, over a fresh warehouse."""
    from tests.rest_catalog_server import RestCatalogServer

    server = RestCatalogServer(str(tmp_path / "rest-warehouse")).start()
    yield server
    server.stop()


@pytest.fixture
def rest_options(rest_server: "RestCatalogServer") -> dict[str, str]:  # noqa: F821
    """Catalog options of a client of ``rest_server`` (warehouse ``warehouse``, bearer token)."""
    return {
        "metastore": "rest",
        "uri": rest_server.uri,
        "token.provider": "bear",
        "token": rest_server.config.bearer,
    }
