"""Groups 12a-12d: row-level DML and diff (issue 24), side by side with delta-rs (``deltalake``) on the same data.

* **12a delete 1% of a primary-key table**: ``t.delete("id < N/100")`` on a ``bucket = 4`` primary-key table of N
  rows (retractions through the merge engine) vs ``DeltaTable.delete`` on a Delta table of the same rows.
* **12b delete 1% of an append table**: copy-on-write (4 files of N/4 rows; the touched file is rewritten), with
  ``deletion-vectors.enabled`` (vectors, no rewrite), and delta-rs.
* **12c merge a 1% source**: ``t.merge(src, on="id")`` with update-all / insert-all, where the source holds 1% of
  the keys (half existing, half new), on the primary-key table, vs delta-rs's ``merge``.
* **12d diff of two tags 1% apart**: ``t.diff("v1", "v2")`` on a primary-key table whose ``v2`` upserts 1% of the
  keys, vs reading both versions in full (what a diff costs without one); and the same diff where the updated keys
  are the lowest 1% (clustered in key order, so the base files' other row groups are skipped).

Each timed round works on a fresh copy of a filled template (copied untimed). Rows: ``PAIMON_BENCH_DML_ROWS``
(default 2,000,000). delta-rs rows are skipped when ``deltalake`` is not installed (the ``bench`` extra).
Correctness is checked outside the timed code: the rows deleted, the rows after a merge, the diff's row count.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pytest
from conftest import ROUNDS, loadavg, make_rows

from pyspark_paimon import Catalog, Table

DML_ROWS = int(os.environ.get("PAIMON_BENCH_DML_ROWS", "2000000").replace("_", ""))
FRACTION = 0.01
WRITE_ROUNDS = max(1, min(ROUNDS, 3))
SEED = 20261128


@dataclass
class DmlData:
    root: Path
    rows: int
    base: pa.Table
    source: pa.Table  # the merge source: 1% of the keys, half existing (updated), half new
    templates: dict[str, str]  # name -> table path (ours) or Delta table path


def _deltalake() -> Any:
    try:
        import deltalake  # noqa: PLC0415
    except ImportError:
        return None
    return deltalake


@pytest.fixture(scope="module")
def dml_data() -> Iterator[DmlData]:
    root = Path(tempfile.mkdtemp(prefix="paimon-bench-dml-"))
    try:
        n = DML_ROWS
        base = make_rows(np.arange(n, dtype=np.int64))
        rng = np.random.default_rng(SEED)
        k = max(2, int(n * FRACTION))
        existing = np.sort(rng.choice(n, k // 2, replace=False)).astype(np.int64)
        new = np.arange(n, n + k - k // 2, dtype=np.int64)
        source = make_rows(np.concatenate([existing, new]), "m_", 1.0)
        catalog = Catalog(str(root / "templates"))
        templates: dict[str, str] = {}
        pk = catalog.create_table(
            "bench.pk", "id bigint not null, s string, d double", primary_keys=["id"], options={"bucket": "4"}
        )
        pk.write_arrow(base)
        templates["pk"] = pk.store.table_path
        for name, options in (("append", {}), ("append_dv", {"deletion-vectors.enabled": "true"})):
            t = catalog.create_table(f"bench.{name}", "id bigint not null, s string, d double", options=options)
            for part in range(4):
                t.write_arrow(base.slice(part * (n // 4), n // 4 if part < 3 else n - 3 * (n // 4)))
            templates[name] = t.store.table_path
        diff = catalog.create_table(
            "bench.diff", "id bigint not null, s string, d double", primary_keys=["id"], options={"bucket": "4"}
        )
        diff.write_arrow(base)
        diff.tags.create("v1")
        diff.write_arrow(make_rows(existing, "upd_", 2.0))
        diff.tags.create("v2")
        templates["diff"] = diff.store.table_path
        # the same number of updated keys, clustered in key order (the lowest ids): a diff skips row groups
        clustered = catalog.create_table(
            "bench.diff_clustered",
            "id bigint not null, s string, d double",
            primary_keys=["id"],
            options={"bucket": "4"},
        )
        clustered.write_arrow(base)
        clustered.tags.create("v1")
        clustered.write_arrow(make_rows(np.arange(len(existing), dtype=np.int64), "upd_", 2.0))
        clustered.tags.create("v2")
        templates["diff_clustered"] = clustered.store.table_path
        deltalake = _deltalake()
        if deltalake is not None:
            delta_path = str(root / "templates" / "delta")
            deltalake.write_deltalake(delta_path, base.to_batches(max_chunksize=n // 4 or 1))
            templates["delta"] = delta_path
        yield DmlData(root, n, base, source, templates)
    finally:
        shutil.rmtree(root, ignore_errors=True)


_names = itertools.count()


def _copy(data: DmlData, template: str) -> str:
    target = data.root / "rounds" / f"{template}_{next(_names)}"
    shutil.copytree(data.templates[template], target)
    return str(target)


def _run(
    benchmark: Any, data: DmlData, template: str, op: Callable[[str], Any], check: Callable[[str, Any], None]
) -> None:
    results: list[Any] = []

    def setup() -> tuple[tuple, dict]:
        return (_copy(data, template),), {}

    def timed(path: str) -> None:
        results.append((path, op(path)))

    load_before = loadavg()
    benchmark.pedantic(timed, setup=setup, rounds=WRITE_ROUNDS, warmup_rounds=1, iterations=1)
    path, result = results[0]
    check(path, result)
    for p, _ in results:
        shutil.rmtree(p, ignore_errors=True)
    benchmark.extra_info.update(loadavg=[load_before, loadavg()])


# ------------------------------------------------------------------------------------------------ deletes
DELETE_ALTERNATIVES = {
    "12a DML: delete 1% of a primary-key table": [("paimon", "pk"), ("delta-rs", "delta")],
    "12b DML: delete 1% of an append table": [
        ("paimon copy-on-write", "append"),
        ("paimon deletion vectors", "append_dv"),
        ("delta-rs", "delta"),
    ],
}


@pytest.mark.parametrize(
    "group, label, template", [(g, lb, t) for g, alts in DELETE_ALTERNATIVES.items() for lb, t in alts]
)
def test_delete_one_percent(benchmark: Any, dml_data: DmlData, group: str, label: str, template: str) -> None:
    data = dml_data
    cut = max(1, int(data.rows * FRACTION))
    if template == "delta" and "delta" not in data.templates:
        pytest.skip("deltalake is not installed (pip install .[bench])")
    benchmark.group = group

    def op(path: str) -> Any:
        if template == "delta":
            return _deltalake().DeltaTable(path).delete(f"id < {cut}")
        return Table.open(path).delete(f"id < {cut}")

    def check(path: str, result: Any) -> None:
        if template == "delta":
            left = _deltalake().DeltaTable(path).to_pyarrow_table().num_rows
        else:
            assert result.deleted == cut, f"{label}: deleted {result.deleted}, expected {cut}"
            left = Table.open(path).scan().to_arrow().num_rows
        assert left == data.rows - cut, f"{label}: {left} rows left"

    _run(benchmark, data, template, op, check)
    benchmark.extra_info.update(label=label, rows=data.rows, baseline=template in ("pk", "append"))


# ------------------------------------------------------------------------------------------------ merge
@pytest.mark.parametrize("label, template", [("paimon", "pk"), ("delta-rs", "delta")])
def test_merge_one_percent_source(benchmark: Any, dml_data: DmlData, label: str, template: str) -> None:
    data = dml_data
    if template == "delta" and "delta" not in data.templates:
        pytest.skip("deltalake is not installed (pip install .[bench])")
    benchmark.group = "12c DML: merge a 1% source (update matched, insert new) into a primary-key table"

    def op(path: str) -> Any:
        if template == "delta":
            return (
                _deltalake()
                .DeltaTable(path)
                .merge(data.source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
        return (
            Table.open(path)
            .merge(data.source, on="id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    def check(path: str, result: Any) -> None:
        new = data.source.num_rows - data.source.num_rows // 2
        if template == "delta":
            rows = _deltalake().DeltaTable(path).to_pyarrow_table().num_rows
        else:
            assert (result.updated, result.inserted) == (data.source.num_rows // 2, new), result
            rows = Table.open(path).scan().to_arrow().num_rows
        assert rows == data.rows + new, f"{label}: {rows} rows after the merge"

    _run(benchmark, data, template, op, check)
    benchmark.extra_info.update(label=label, rows=data.source.num_rows, baseline=template == "pk")


# ------------------------------------------------------------------------------------------------ diff
@pytest.mark.parametrize("how", ["diff", "read both", "diff, keys clustered"])
def test_diff_of_two_tags(benchmark: Any, dml_data: DmlData, how: str) -> None:
    data = dml_data
    benchmark.group = "12d diff of two tags 1% apart (primary-key table)"
    t = Table.open(data.templates["diff_clustered" if how == "diff, keys clustered" else "diff"])

    def diff() -> int:
        return t.diff("v1", "v2").num_rows

    def read_both() -> int:
        return t.scan(tag="v1").to_arrow().num_rows + t.scan(tag="v2").to_arrow().num_rows

    fn = read_both if how == "read both" else diff
    load_before = loadavg()
    got = benchmark.pedantic(fn, rounds=ROUNDS, warmup_rounds=1, iterations=1)
    changed = data.source.num_rows // 2
    assert got == (2 * data.rows if how == "read both" else 2 * changed), got  # -U/+U per updated key
    labels = {"diff": "Table.diff", "read both": "scan v1 + scan v2", "diff, keys clustered": "Table.diff, clustered"}
    benchmark.extra_info.update(label=labels[how], rows=data.rows, baseline=how == "read both")
    benchmark.extra_info.update(loadavg=[load_before, loadavg()])
