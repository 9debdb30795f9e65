"""Planning with a partition filter decodes only the kept partitions' manifest entries
(``FileStore.selected_entries``); its splits and counters must be those of the same filter applied to the
fully decoded live files, DELETEs of other manifests and the skipped partitions' counts included."""

from __future__ import annotations

from typing import Any, Callable

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.metadata.manifests.manifest import MANIFEST_CACHE
from pyspark_paimon.planner.explain import explain_plan
from pyspark_paimon.planner.predicate import Leaf, leaves_on
from pyspark_paimon.planner.scan import ScanCounters, ScanPlanner, _manifest_may_match


def batch(days: list[str], keys: range, base: int) -> pa.Table:
    return pa.table({"dt": days, "k": pa.array(keys, pa.int32()), "v": pa.array([base + k for k in keys], pa.int64())})


@pytest.fixture
def table(catalog: Catalog) -> Any:
    t = catalog.create_table(
        "default.sel",
        "dt string, k int, v bigint",
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options={"bucket": "2", "manifest.merge-min-count": "3"},
    )
    for i in range(4):
        t.write_arrow(batch([f"d{k % 3}" for k in range(12)], range(12), i * 100))
    # replaces d1's files: DELETE entries in the newest manifests cancel ADDs of older (merged) ones
    t.write_arrow(batch(["d1"], range(1), 7), mode="overwrite", overwrite_partition={"dt": "d1"})
    t.write_arrow(batch(["d2", "d2"], range(2), 9))
    return t


def partition_is(day: str) -> Callable[[dict], bool]:
    return lambda named: named["dt"] == day


@pytest.mark.parametrize(
    "predicate, partition_filter",
    [
        ([], partition_is("d1")),  # what scan.partitions becomes
        ([Leaf("dt", "=", "d2")], None),
        ([Leaf("dt", "in", ("d0", "d9"))], None),
        ([Leaf("dt", "=", "d1"), Leaf("k", "=", 0)], partition_is("d1")),
    ],
)
def test_filtered_plan_equals_filter_of_full_fold(
    table: Any, predicate: list, partition_filter: Callable[[dict], bool] | None
) -> None:
    store = table.store
    snapshot = store.snapshots.latest()
    schema = store.schema()
    planner = ScanPlanner(store, schema)
    # the manifests planning opens (partition statistics prune the others), fully decoded and folded
    opened = [m for m in store.data_manifests(snapshot) if _manifest_may_match(m, schema, leaves_on(predicate, ["dt"]))]
    full = explain_plan(planner.plan_entries(store.live_entries(snapshot, opened), predicate, partition_filter))

    def check() -> None:
        got = explain_plan(planner.plan(snapshot, predicate, partition_filter))
        assert got.split_list == full.split_list
        assert without_manifests(got.counters) == without_manifests(full.counters)
        assert got.counters.files_skipped_partition > 0

    MANIFEST_CACHE.clear()
    check()  # cold: indexes built, only the kept partitions decoded
    check()  # warm: from the cached indexes
    planner.plan(snapshot)  # a full read completes the cached manifests
    check()  # from the complete lists


def without_manifests(counters: ScanCounters) -> dict:
    return {k: v for k, v in counters.as_dict().items() if not k.startswith("manifests_")}
