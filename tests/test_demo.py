"""The README's main job, ``python -m pyspark_paimon.demo``, runs end to end, prints the workflow it shows
(the chain day read, the publish under a live writer) and leaves the tables it describes."""

from __future__ import annotations

from decimal import Decimal
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

    # The correction: reviewed on the branch, published while the job kept committing.
    assert "  +U  dt=2025-08-11 id=3 amount=30.25" in out
    assert "published: 2 corrected row(s) landed on main in snapshot" in out
    assert "a three-way merge from the fork point fix." in out
    # The chain table: the day read resolved its anchor and merged the deltas; compaction made it a full day.
    assert "resolved: source chain, anchor 20250810, deltas ['20250811', '20250812']" in out
    assert "|20250812|bob    |250.00 |" in out and "|20250812|dave   |50.00  |" in out
    assert "resolved now: source snapshot, anchor None, deltas []" in out
    assert "same rows: alice 100.00, bob 250.00, carol 280.00, dave 50.00, erin 10.00" in out

    cat = Catalog(str(warehouse))
    orders = cat.get_table("default.orders")
    assert [t.name for t in orders.tags.list()] == ["2025-08-10", "2025-08-11"]
    snaps = orders.snapshots()
    assert snaps[-1].commit_kind == "OVERWRITE"  # the dynamic overwrite of 2025-08-12
    before = orders.scan(snapshot_id=snaps[-2].id).to_arrow().to_pylist()
    amounts = {(r["dt"], r["id"]): r["amount"] for r in before}
    assert amounts[("2025-08-11", 3)] == Decimal("30.25") and amounts[("2025-08-11", 4)] == Decimal("12.50")
    job = sorted(i for (d, i) in amounts if d == "2025-08-12")
    assert len(job) >= 3 and job == list(range(100, 100 + len(job)))  # every commit of the job kept
    final = sorted((r["dt"], r["id"]) for r in orders.scan(columns=["dt", "id"]).to_arrow().to_pylist())
    assert final == [("2025-08-10", 1), ("2025-08-10", 2), ("2025-08-11", 3), ("2025-08-11", 4), ("2025-08-12", 200)]
    balances = cat.get_table("default.balances")
    assert balances.chain.explain("dt=20250812")[0]["source"] == "snapshot"
    assert cat.get_table("default.events").scan().to_arrow().num_rows == 1000
