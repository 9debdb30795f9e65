"""The README's main job, ``python -m pyspark_paimon.demo``, runs end to end and leaves a correct table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.demo import main


@pytest.mark.spark
def test_demo_runs_and_leaves_the_tables_it_describes(spark: Any, tmp_path: Path, capsys: Any) -> None:
    warehouse = tmp_path / "demo-warehouse"
    assert main([str(warehouse)], spark=spark) == 0
    out = capsys.readouterr().out
    assert "snapshot 3: OVERWRITE total rows 4 (delta +0)" in out
    cat = Catalog(str(warehouse))
    orders = cat.get_table("default.orders")
    final = sorted(orders.scan().to_arrow().select(["dt", "id"]).to_pylist(), key=lambda r: (r["dt"], r["id"]))
    assert final == [{"dt": "2025-08-10", "id": 1}, {"dt": "2025-08-10", "id": 2}, {"dt": "2025-08-11", "id": 4}]
    assert [t.name for t in orders.tags.list()] == ["after-upsert"]
    fix = orders.on_branch("fix").scan().to_arrow().to_pylist()
    assert {(r["id"], str(r["amount"])) for r in fix} == {(1, "11.00"), (2, "99.99"), (3, "30.25")}
    assert cat.get_table("default.events").scan().to_arrow().num_rows == 1000
