"""Spark finds the ``paimon`` format by itself (``pyspark_paimon.DefaultSource``), without ``register()``.

This needs a fresh Python process: the test session's SparkSession already registered the source.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    try:
        df = spark.read.format("paimon").option("warehouse", sys.argv[1]).load("db.t")
        print("ROWS=" + json.dumps(sorted([list(r) for r in df.collect()])))
        print("PUSHDOWN=" + spark.conf.get("spark.sql.python.filterPushdown.enabled"))
    finally:
        spark.stop()
""")


def test_the_install_is_visible_to_auto_registration(tmp_path) -> None:
    """Spark's auto-registration lists modules with ``pkgutil.iter_modules()`` over ``sys.path``: the package must
    be installed as a path entry there (``./dev`` installs it editable; pyproject.toml's ``package-dir`` makes that
    a plain ``.pth`` line), not behind an import hook, which that listing does not see. No PYTHONPATH, and a
    working directory outside the checkout, as a user's process has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = "import pkgutil; print(sum(m.name == 'pyspark_paimon' for m in pkgutil.iter_modules()))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "1", "pyspark_paimon is invisible to pkgutil.iter_modules (or listed twice)"


@pytest.mark.spark
def test_auto_registration_without_register(catalog, warehouse, tmp_path) -> None:
    table = catalog.create_table("db.t", "id bigint, v string")
    table.write_arrow(pa.table({"id": pa.array([2, 1], pa.int64()), "v": ["b", "a"]}))
    script = tmp_path / "auto_register.py"
    script.write_text(SCRIPT)
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    }
    proc = subprocess.run(
        [sys.executable, str(script), warehouse], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    out = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert proc.returncode == 0 and "ROWS" in out, proc.stderr[-3000:]
    assert json.loads(out["ROWS"]) == [[1, "a"], [2, "b"]]
    # Auto-registration uses the plain source, so no pushdown conf is needed or touched.
    assert out["PUSHDOWN"] == "false"


QUICKSTART = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from pyspark_paimon import Catalog, register

    warehouse, bare_python = sys.argv[1], sys.argv[2]
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    try:
        register(spark)
        print("WORKERS=" + spark.sparkContext.pythonExec)
        cat = Catalog(warehouse)
        cat.create_table("default.orders", "dt string, id bigint, amount decimal(10,2)",
                         partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"})
        path = warehouse + "/default.db/orders"
        df = spark.createDataFrame([("2025-08-11", 1, 19.99), ("2025-08-11", 2, 5.0)],
                                   "dt string, id bigint, amount double")
        df.selectExpr("dt", "id", "cast(amount as decimal(10,2)) as amount").write.format("paimon").mode(
            "append").save(path)
        rows = spark.read.format("paimon").load(path).collect()
        print("ROWS=" + json.dumps(sorted([r.id, str(r.amount)] for r in rows)))

        # A cluster whose workers run an interpreter without the dependencies (PYSPARK_PYTHON chosen by the user,
        # so register leaves it alone): the first failure names that interpreter and what to set.
        from pyspark_paimon.datasource.spark.source import PaimonDataSource
        spark.sparkContext.pythonExec = bare_python
        spark.dataSource.register(PaimonDataSource)
        try:
            spark.read.format("paimon").load(path).collect()
            print("UNFIT=read")
        except Exception as exc:
            print("UNFIT=" + json.dumps(str(exc)))
    finally:
        spark.stop()
""")


@pytest.mark.spark
def test_quickstart_without_pyspark_python(tmp_path) -> None:
    """The driver runs the venv's python, nothing is activated and PYSPARK_PYTHON is unset: Spark would start its
    workers with `python3` from PATH, here an interpreter without pyarrow. ``register`` (local master) makes them
    run the driver's interpreter, the auto-registration worker skips the format with our warning instead of a
    JVM stack trace, and a worker that is really unfit fails with our message."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(bare / "bin"), os.environ.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    python3 = shutil.which("python3", path=env["PATH"])
    assert python3 == str(bare / "bin" / "python3")
    probe = subprocess.run([python3, "-c", "import pyarrow"], env=env, capture_output=True, text=True)
    assert "No module named 'pyarrow'" in probe.stderr  # the precondition: `python3` cannot run the package

    script = tmp_path / "quickstart.py"
    script.write_text(QUICKSTART)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "warehouse"), python3],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert proc.returncode == 0 and "ROWS" in out, proc.stderr[-3000:]
    assert out["WORKERS"] == sys.executable
    assert json.loads(out["ROWS"]) == [[1, "19.99"], [2, "5.00"]]
    assert "auto-registration skipped the 'paimon' format" in proc.stderr
    assert "PYTHON_DATA_SOURCE_ERROR] Failed to lookup" not in proc.stderr
    unfit = json.loads(out["UNFIT"])
    assert "WorkerPythonError" in unfit and f"Spark ran this Python worker with {python3}, which lacks pyarrow" in unfit
    assert "Set PYSPARK_PYTHON" in unfit and "spark.pyspark.python" in unfit
