"""Which interpreter Spark's workers run (``register``), and the message a worker without our dependencies gives.

The end-to-end case (a driver on a venv's python, `python3` on PATH without pyarrow) is
``test_spark_registration.test_quickstart_without_pyspark_python``; these pin each rule without Spark.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pyspark_paimon.datasource.spark import worker_python
from pyspark_paimon.datasource.spark.worker_python import refuse_unfit_worker, use_driver_python
from pyspark_paimon.errors import WorkerPythonError

ROOT = Path(__file__).resolve().parents[2]


def test_runtime_modules_are_the_runtime_dependencies() -> None:
    """Every runtime dependency but pyspark (Spark ships it to its workers); each distribution's import name is
    its own name. (tomllib is 3.11+; the package supports 3.10.)"""
    block = re.search(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.S | re.M).group(1)
    names = set(re.findall(r'^\s*"([A-Za-z0-9_.-]+)>=', block, re.M))
    assert "pyarrow" in names and names - {"pyspark"} == set(worker_python.RUNTIME_MODULES)


@dataclass
class FakeConf:
    values: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.values.get(key)


@dataclass
class FakeContext:
    master: str = "local[2]"
    pythonExec: str = "python3"  # noqa: N815 (pyspark's name)
    conf: FakeConf = field(default_factory=FakeConf)

    def getConf(self) -> FakeConf:  # noqa: N802 (pyspark's name)
        return self.conf


@dataclass
class FakeSession:
    sparkContext: FakeContext = field(default_factory=FakeContext)  # noqa: N815 (pyspark's name)


def test_local_master_without_a_chosen_python_runs_the_drivers(monkeypatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark = FakeSession()
    assert use_driver_python(spark) is True
    assert spark.sparkContext.pythonExec == sys.executable


@pytest.mark.parametrize(
    "context, env",
    [
        (FakeContext(master="spark://host:7077"), None),  # workers on other machines
        (FakeContext(master="yarn"), None),
        (FakeContext(conf=FakeConf({"spark.pyspark.python": "/opt/py/bin/python"})), None),  # the user chose
        (FakeContext(pythonExec="/opt/py/bin/python"), None),
        (FakeContext(), "/opt/py/bin/python"),
    ],
)
def test_a_chosen_python_or_remote_workers_are_left_alone(monkeypatch, context: FakeContext, env: str | None) -> None:
    if env is None:
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    else:
        monkeypatch.setenv("PYSPARK_PYTHON", env)
    before = context.pythonExec
    assert use_driver_python(FakeSession(context)) is False
    assert context.pythonExec == before


def test_a_connect_session_is_left_alone(monkeypatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert use_driver_python(object()) is False  # Spark Connect sessions have no sparkContext


def test_the_driver_and_fit_workers_pass(monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "pyspark.worker_util", raising=False)
    monkeypatch.setattr(worker_python, "RUNTIME_MODULES", ("no_such_module_xyz",))
    assert refuse_unfit_worker() is False  # not a Spark worker: nothing checked
    monkeypatch.setitem(sys.modules, "pyspark.worker_util", sys)
    monkeypatch.setattr(worker_python, "RUNTIME_MODULES", ("json",))
    assert refuse_unfit_worker() is False


def test_an_unfit_worker_names_its_interpreter_and_what_to_set(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark.worker_util", sys)
    monkeypatch.delitem(sys.modules, "pyspark.sql.worker.lookup_data_sources", raising=False)
    monkeypatch.setattr(worker_python, "RUNTIME_MODULES", ("json", "no_such_module_xyz"))
    with pytest.raises(WorkerPythonError) as err:
        refuse_unfit_worker()
    message = str(err.value)
    assert f"Spark ran this Python worker with {sys.executable}, which lacks no_such_module_xyz:" in message
    assert "Set PYSPARK_PYTHON" in message and "spark.pyspark.python" in message and "register(spark)" in message
    assert isinstance(err.value, ImportError)


def test_the_auto_registration_worker_only_warns(monkeypatch) -> None:
    """A raise there would stop every Python source from registering and print a JVM stack trace, even when
    ``register(spark)`` already made the real workers fit."""
    monkeypatch.setitem(sys.modules, "pyspark.worker_util", sys)
    monkeypatch.setitem(sys.modules, "pyspark.sql.worker.lookup_data_sources", sys)
    monkeypatch.setattr(worker_python, "RUNTIME_MODULES", ("no_such_module_xyz",))
    with pytest.warns(RuntimeWarning, match="auto-registration skipped the 'paimon' format.*no_such_module_xyz"):
        assert refuse_unfit_worker() is True
