"""Datasets of the chain-table and scan benchmarks (test_bench_chain.py, test_bench_scan.py).

Kept out of conftest.py: the fixtures live in the test modules (module-scoped) and call the builders
below. Everything is generated column-wise with numpy/pyarrow.

Chain dataset (``PAIMON_BENCH_CHAIN_ROWS``, default 500,000; ``PAIMON_BENCH_CHAIN_DAYS``, default 7):

* columns ``id bigint not null, v string, d double, seq bigint, date string``; primary key ``(date, id)``,
  partition ``date``, 4 buckets on ``id``, ``sequence.field = seq``.
* day 0 (``20250101``): the anchor, N rows, written to the *snapshot* branch.
* days 1..D: each a delta of 1% of the keys (random, distinct within the day) written to the *delta* branch
  (``v = 'v<day>_<id>'``, ``d = id * 0.5 + day``, ``seq = day``).
* the traditional layout: a full copy of every day (N rows each) as one Parquet file per day under
  ``full/date=<day>/`` (what a daily-full table would store), plus each day's changes under
  ``changes/date=<day>/`` (what the traditional merge job reads), all zstd like the table's files.
* ``bench.full_day``: a plain PK table (same keys, 4 buckets) holding only day D's full copy in one commit.
* ``bench.chain_v2``: the same chain written with the opt-in ``parquet.writer.version = v2`` (DELTA encodings;
  measured for storage only).
* ``sizes["limit"]``: the arithmetic limit of a chain, one full copy (day D) plus the D days of changes, both
  as pyarrow writes them (zstd Parquet); ``breakdown``: :func:`chain_breakdown` of ``bench.chain_t``.

Scan datasets (``PAIMON_BENCH_SCAN_ROWS``, default 1,000,000; ``PAIMON_BENCH_SCAN_PARTITIONS``, default 365):

* ``bench.pk16``: PK table on ``id``, 16 buckets, one commit of N rows (id, s, d).
* ``bench.parts365``: append table partitioned by ``dt`` (365 days of 2024), 1,000 rows per partition
  written in one commit (365 files).
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

CHAIN_ROWS = int(os.environ.get("PAIMON_BENCH_CHAIN_ROWS", "500000").replace("_", ""))
CHAIN_DAYS = int(os.environ.get("PAIMON_BENCH_CHAIN_DAYS", "7"))
CHAIN_FRACTION = 0.01
CHAIN_BUCKETS = 4
SCAN_ROWS = int(os.environ.get("PAIMON_BENCH_SCAN_ROWS", "1000000").replace("_", ""))
SCAN_PARTITIONS = int(os.environ.get("PAIMON_BENCH_SCAN_PARTITIONS", "365"))
ROWS_PER_PARTITION = 1000
SEED = 20250101

CHAIN_SCHEMA = "id bigint not null, v string, d double, seq bigint, date string"


def day_name(day: int) -> str:
    return (_dt.date(2025, 1, 1) + _dt.timedelta(days=day)).strftime("%Y%m%d")


def du(path: str | Path) -> int:
    """Bytes of every regular file under ``path`` (apparent size, metadata included)."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def chain_breakdown(table_path: str, anchor_day: str) -> dict[str, int]:
    """Where the bytes of a chain table go: data files of the anchor and of the deltas, and per branch
    (``main``, ``snapshot``, ``delta``) its snapshot, schema, tag and branch files plus the manifest lists and
    manifests its snapshots reference (all branches share the table's ``manifest/`` directory; a file two
    branches reference counts for the first of snapshot, delta, main). Sums to ``du(table_path)``."""
    import json

    import fastavro

    import pyspark_paimon.metadata.io.avro  # noqa: F401  (registers the zstd Avro codec with fastavro)

    root = Path(table_path)
    out = {"anchor_data": 0, "delta_data": 0}
    for part in root.glob("*=*"):
        key = "anchor_data" if part.name.endswith("=" + anchor_day) else "delta_data"
        out[key] += du(part)
    manifest_dir = root / "manifest"
    claimed: set[str] = set()
    for branch in ("snapshot", "delta", "main"):
        broot = root if branch == "main" else root / "branch" / f"branch-{branch}"
        own = sum(du(broot / d) for d in ("snapshot", "schema", "tag")) + sum(
            f.stat().st_size for f in broot.glob("*.json")
        )
        lists: set[str] = set()
        for snap in (broot / "snapshot").glob("snapshot-*"):
            meta = json.loads(snap.read_text())
            lists.update(
                meta[k]
                for k in ("baseManifestList", "deltaManifestList", "changelogManifestList", "indexManifest")
                if meta.get(k)
            )
        manifests: set[str] = set()
        for name in lists:
            with open(manifest_dir / name, "rb") as f:
                manifests.update(r["_FILE_NAME"] for r in fastavro.reader(f) if "_FILE_NAME" in r)
        mine = (lists | manifests) - claimed
        claimed |= mine
        out[f"{branch}_snapshots_schemas"] = own
        out[f"{branch}_manifest_lists"] = sum((manifest_dir / n).stat().st_size for n in mine & lists)
        out[f"{branch}_manifests"] = sum((manifest_dir / n).stat().st_size for n in mine - lists)
    out["unreferenced_manifests"] = sum(f.stat().st_size for f in manifest_dir.iterdir() if f.name not in claimed)
    return out


def chain_rows(ids: np.ndarray, day: int, d: np.ndarray | None = None, seq: np.ndarray | None = None) -> pa.Table:
    id_arr = pa.array(ids, pa.int64())
    v = pc.binary_join_element_wise(f"v{day}_", pc.cast(id_arr, pa.string()), "")
    d_arr = pa.array(ids * 0.5 + day if d is None else d, pa.float64())
    seq_arr = pa.array(np.full(len(ids), day, np.int64) if seq is None else seq, pa.int64())
    return pa.table(
        {"id": id_arr, "v": v, "d": d_arr, "seq": seq_arr, "date": pa.array([day_name(day)] * len(ids), pa.string())}
    )


@dataclass
class ChainData:
    root: Path
    warehouse: str
    rows: int
    days: int
    chain_path: str
    compacted_path: str  # a copy of the chain table, for compact_chain (the original stays uncompacted)
    full_day_path: str  # plain PK table with day D's full copy
    full_dirs: dict[str, str]  # day -> directory of its full-copy Parquet file
    change_dirs: dict[str, str]  # day -> directory of its changes Parquet file
    expected: dict[str, tuple[int, float, int]] = field(default_factory=dict)  # day -> (count, sum d, sum seq)
    sizes: dict[str, int] = field(default_factory=dict)
    breakdown: dict[str, int] = field(default_factory=dict)  # chain_breakdown of the chain table
    filter_expected: int = 0  # rows of day D with d > threshold (value-column filter)
    filter_threshold: float = 0.0

    @property
    def last_day(self) -> str:
        return day_name(self.days)


def build_chain(root: Path, n: int = CHAIN_ROWS, days: int = CHAIN_DAYS) -> ChainData:
    from pyspark_paimon import Catalog

    warehouse = str(root / "warehouse")
    cat = Catalog(warehouse)
    opts = {
        "bucket": str(CHAIN_BUCKETS),
        "bucket-key": "id",
        "sequence.field": "seq",
        "partition.timestamp-pattern": "$date",
        "partition.timestamp-formatter": "yyyyMMdd",
    }
    t = cat.create_chain_table(
        "bench.chain_t", CHAIN_SCHEMA, partition_keys=["date"], primary_keys=["date", "id"], options=opts
    )
    # The same chain written with the opt-in Parquet v2 encodings (storage only; Java 1.0.0 cannot read it)
    t2 = cat.create_chain_table(
        "bench.chain_v2",
        CHAIN_SCHEMA,
        partition_keys=["date"],
        primary_keys=["date", "id"],
        options={**opts, "parquet.writer.version": "v2"},
    )
    snap, delta = t.on_branch("snapshot"), t.on_branch("delta")
    snap2, delta2 = t2.on_branch("snapshot"), t2.on_branch("delta")

    ids = np.arange(n, dtype=np.int64)
    d_state = ids * 0.5
    seq_state = np.zeros(n, np.int64)
    last_day = np.zeros(n, np.int64)
    full_dirs, change_dirs = {}, {}
    rng = np.random.default_rng(SEED)

    def v_state() -> pa.Array:
        id_arr = pa.array(ids, pa.int64())
        prefix = pc.binary_join_element_wise("v", pc.cast(pa.array(last_day), pa.string()), "_")
        return pc.binary_join_element_wise(prefix, pc.cast(id_arr, pa.string()), "")

    def write_full(day: int) -> None:
        tbl = pa.table({"id": ids, "v": v_state(), "d": d_state, "seq": seq_state})
        out = root / "full" / f"date={day_name(day)}"
        out.mkdir(parents=True)
        pq.write_table(tbl, str(out / "part-0.parquet"), compression="zstd")
        full_dirs[day_name(day)] = str(out)

    expected = {}
    anchor = chain_rows(ids, 0)
    snap.write_arrow(anchor, mode="overwrite", dynamic_partition_overwrite=True)
    snap2.write_arrow(anchor, mode="overwrite", dynamic_partition_overwrite=True)
    write_full(0)
    expected[day_name(0)] = (n, float(d_state.sum()), int(seq_state.sum()))
    k = max(1, int(n * CHAIN_FRACTION))
    for day in range(1, days + 1):
        keys = np.sort(rng.choice(n, k, replace=False)).astype(np.int64)
        changes = chain_rows(keys, day)
        delta.write_arrow(changes, mode="overwrite", dynamic_partition_overwrite=True)
        delta2.write_arrow(changes, mode="overwrite", dynamic_partition_overwrite=True)
        out = root / "changes" / f"date={day_name(day)}"
        out.mkdir(parents=True)
        pq.write_table(changes.drop_columns(["date"]), str(out / "part-0.parquet"), compression="zstd")
        change_dirs[day_name(day)] = str(out)
        d_state[keys] = keys * 0.5 + day
        seq_state[keys] = day
        last_day[keys] = day
        write_full(day)
        expected[day_name(day)] = (n, float(d_state.sum()), int(seq_state.sum()))

    threshold = float(n * 0.5 * 0.99)  # ~1% of the rows of any day
    filter_expected = int((d_state > threshold).sum())

    # Branches share the table directory's data files (branch/ holds only their metadata): du of the table
    # directory is the whole chain table.
    sizes = {
        "chain_table": du(t.store.table_path),
        "full_copies": du(root / "full"),
        "changes_parquet": du(root / "changes"),
        "full_copy_one_day": du(full_dirs[day_name(days)]),
        "full_copy_anchor_day": du(full_dirs[day_name(0)]),
    }
    # The arithmetic limit of a chain: one full copy plus the D days of changes, as pyarrow writes them
    sizes["limit"] = sizes["full_copy_one_day"] + sizes["changes_parquet"]
    breakdown = chain_breakdown(t.store.table_path, day_name(0))
    sizes["chain_table_writer_v2"] = du(t2.store.table_path)

    full = cat.create_table(
        "bench.full_day",
        "id bigint not null, v string, d double, seq bigint",
        primary_keys=["id"],
        options={"bucket": str(CHAIN_BUCKETS)},
    )
    full.write_arrow(pq.read_table(full_dirs[day_name(days)]).select(["id", "v", "d", "seq"]))
    sizes["full_day_pk_table"] = du(full.store.table_path)

    compacted = str(Path(warehouse) / "bench.db" / "chain_compacted")
    shutil.copytree(t.store.table_path, compacted)
    return ChainData(
        root=root,
        warehouse=warehouse,
        rows=n,
        days=days,
        chain_path=t.store.table_path,
        compacted_path=compacted,
        full_day_path=full.store.table_path,
        full_dirs=full_dirs,
        change_dirs=change_dirs,
        expected=expected,
        sizes=sizes,
        breakdown=breakdown,
        filter_expected=filter_expected,
        filter_threshold=threshold,
    )


@dataclass
class ScanData:
    warehouse: str
    rows: int
    pk16_path: str
    parts_identifier: str
    parts_path: str
    partitions: int
    parts_rows: int
    day: str


def build_scan(root: Path, n: int = SCAN_ROWS, partitions: int = SCAN_PARTITIONS) -> ScanData:
    from conftest import make_rows

    from pyspark_paimon import Catalog

    warehouse = str(root / "warehouse")
    cat = Catalog(warehouse)
    pk = cat.create_table(
        "bench.pk16", "id bigint not null, s string, d double", primary_keys=["id"], options={"bucket": "16"}
    )
    pk.write_arrow(make_rows(np.arange(n, dtype=np.int64)))

    parts = cat.create_table("bench.parts365", "id bigint, s string, d double, dt string", partition_keys=["dt"])
    total = partitions * ROWS_PER_PARTITION
    rows = make_rows(np.arange(total, dtype=np.int64))
    days = [(_dt.date(2024, 1, 1) + _dt.timedelta(days=i)).isoformat() for i in range(partitions)]
    dt = pa.array(np.repeat(np.array(days, dtype=object), ROWS_PER_PARTITION), pa.string())
    parts.write_arrow(rows.append_column("dt", dt))
    return ScanData(
        warehouse=warehouse,
        rows=n,
        pk16_path=pk.store.table_path,
        parts_identifier="bench.parts365",
        parts_path=parts.store.table_path,
        partitions=partitions,
        parts_rows=total,
        day=days[partitions // 2],
    )


_CACHE: dict[str, Any] = {}


def _cached(key: str, build: Any) -> Any:
    """Build a dataset once per process (both benchmark modules share it); removed at exit."""
    if key not in _CACHE:
        import atexit
        import tempfile

        root = Path(tempfile.mkdtemp(prefix=f"paimon-bench-{key}-"))
        atexit.register(shutil.rmtree, root, True)
        _CACHE[key] = build(root)
    return _CACHE[key]


def get_chain() -> ChainData:
    return _cached("chain", build_chain)


def get_scan() -> ScanData:
    return _cached("scan", build_scan)
