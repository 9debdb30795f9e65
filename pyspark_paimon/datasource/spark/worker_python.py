"""Which Python interpreter runs Spark's Python workers for this package, and what a wrong one is told.

Spark runs every step of a Python data source (create, plan, read, write, commit) in a worker process started
with the interpreter the registered source carries: the driver's ``PYSPARK_PYTHON``, by default ``python3`` on
PATH, *not* the interpreter the driver itself runs. A driver started with a virtualenv's python (no activated
venv, no ``PYSPARK_PYTHON``) therefore gets workers without pyarrow, and the first write fails with a bare
``ModuleNotFoundError`` deep in an executor. Two remedies, both here:

* :func:`use_driver_python` (called by ``register``): on a classic session whose workers run on this machine
  (a ``local`` master) and whose interpreter nobody chose, the workers run the driver's own interpreter.
* :func:`refuse_unfit_worker` (run when a worker imports the package): elsewhere (clusters, Spark Connect
  servers), the first failure names the interpreter, what it lacks and exactly what to set.

No pyspark import: the package's ``__init__`` runs the worker check on every import.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import warnings
from typing import Any

from pyspark_paimon.errors import WorkerPythonError

log = logging.getLogger(__name__)

# The import names of the runtime dependencies (pyproject.toml's `dependencies` but pyspark, which Spark ships to
# its workers itself); tests/datasource/test_worker_python.py holds the two lists together.
RUNTIME_MODULES = ("pyarrow", "fastavro", "fsspec", "numpy", "sqlglot")

# pyspark's worker modules import this one first; no driver-side module of pyspark does.
_WORKER_MARKER = "pyspark.worker_util"
# The worker behind Spark's auto-registration: it imports every top-level `pyspark_*` module and asks it for
# `DefaultSource`, so a failure there aborts the registration of every other Python source too.
_LOOKUP_WORKER = "pyspark.sql.worker.lookup_data_sources"

PYTHON_ENV = "PYSPARK_PYTHON"
PYTHON_CONF = "spark.pyspark.python"
_SPARK_DEFAULT_PYTHON = "python3"  # what pyspark's SparkContext uses when PYSPARK_PYTHON is unset


def missing_modules() -> list[str]:
    """The runtime dependencies this interpreter cannot import (found without importing them)."""
    return [name for name in RUNTIME_MODULES if importlib.util.find_spec(name) is None]


def unfit_message(missing: list[str]) -> str:
    """Why this worker's interpreter cannot run the package, and what to set instead."""
    return (
        f"Spark ran this Python worker with {sys.executable}, which lacks {', '.join(missing)}: Spark starts its "
        f"Python workers with {PYTHON_ENV} (default: `python3` on PATH), not with the Python the driver runs. Set "
        f"{PYTHON_ENV} (before the SparkSession starts) or the conf {PYTHON_CONF} (spark-submit, cluster "
        "configuration) to a Python that has pyspark-paimon installed, on the driver and on every worker node; for "
        f"Spark Connect, on the server. With a local master and {PYTHON_ENV} unset, register(spark) makes the "
        "workers use the driver's Python."
    )


def _in_worker(module: str) -> bool:
    if module in sys.modules:  # a worker forked by pyspark's daemon imports its worker module by name
        return True
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)  # `python -m <worker module>` when the daemon is off
    return spec is not None and spec.name == module


def refuse_unfit_worker() -> bool:
    """In a Spark Python worker lacking a runtime dependency, raise :class:`WorkerPythonError` naming it.

    Spark's auto-registration worker is the exception: it only asks which sources exist, and failing there would
    stop every Python source from registering (and print a JVM stack trace even when ``register(spark)`` already
    fixed the interpreter). There the message is a warning and the return value is True: the package then
    offers no ``DefaultSource``. Everywhere else (the driver, a fit worker) this returns False; outside Spark's
    workers it costs two dictionary lookups.
    """
    if not _in_worker(_WORKER_MARKER):
        return False
    missing = missing_modules()
    if not missing:
        return False
    if _in_worker(_LOOKUP_WORKER):
        warnings.warn(
            f"pyspark-paimon: Spark's auto-registration skipped the 'paimon' format. {unfit_message(missing)}",
            RuntimeWarning,
            stacklevel=1,
        )
        return True
    raise WorkerPythonError(f"pyspark-paimon cannot run in this Spark Python worker. {unfit_message(missing)}")


def use_driver_python(spark: Any) -> bool:
    """Make Spark's Python workers run this driver's interpreter where that is safe; True when it changed it.

    Safe means: a classic session (Spark Connect workers run on the server, whose interpreter the client cannot
    name), a ``local`` master (every worker runs on this machine, where ``sys.executable`` exists), and no
    interpreter chosen by the user (``PYSPARK_PYTHON`` unset, no ``spark.pyspark.python`` conf, pyspark's
    default still in place). Spark copies the interpreter into each Python function when it is registered, so
    this runs before ``register`` registers the source; UDFs defined afterwards run it too, as they must to see
    the same packages as the driver.
    """
    sc = getattr(spark, "sparkContext", None)  # a Connect session has none
    if sc is None or not sys.executable or not str(sc.master).startswith("local"):
        return False
    if os.environ.get(PYTHON_ENV) or sc.getConf().get(PYTHON_CONF) or sc.pythonExec != _SPARK_DEFAULT_PYTHON:
        return False
    sc.pythonExec = sys.executable
    log.info("Spark's Python workers run %s (the driver's interpreter; %s was unset)", sys.executable, PYTHON_ENV)
    return True
