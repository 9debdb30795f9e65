"""Spark finds the ``paimon`` format by itself (``pyspark_paimon.DefaultSource``), without ``register()``.

This needs a fresh Python process: the test session's SparkSession already registered the source.
"""

from __future__ import annotations

import json
import os
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
