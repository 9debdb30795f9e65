"""Group 3: write throughput, N rows into an empty primary-key table with 4 buckets, one commit.

Before every round a fresh table ``id bigint not null, s string, d double`` (primary key ``id``,
``bucket = 4``) is created with our Catalog (untimed), so every writer gets the same table definition; after
the round its snapshot is checked to hold N records and the table is dropped. Alternatives:

* ``spark_paimon``: ``spark.range(N)`` shaped into (id, s, d) in the JVM, then
  ``.write.format("paimon").mode("append").save(path)`` (2 write tasks on local[2]; the rows cross from the
  JVM to the Python workers as Arrow). Generating the rows in the JVM costs little next to the write.
* ``table_write_arrow``: ``Table.write_arrow(<the same rows as a pyarrow Table>)``, in this process.
* ``floor_writer``: the same Spark rows written by benchmarks/floor_source.py's writer (each task writes its
  Arrow batches as one zstd Parquet file, nothing else): the floor any Python sink pays, for comparison.
* ``pypaimon`` / ``pypaimon_rust``: their batch writers in the oracle venv (benchmarks/oracle_bench.py), one
  subprocess per round that reads the rows from an Arrow IPC file (untimed in process) and writes them once;
  the summary compares their in-process write time (``inproc_s``).
"""

from __future__ import annotations

import itertools
import statistics
from typing import Any, Callable

import pyarrow.parquet as pq
import pytest
from conftest import PK_BUCKETS, ROUNDS, Datasets, assert_reads_back, loadavg
from pyspark.sql import SparkSession

GROUP = "3 write PK table (4 buckets, one commit)"
WRITE_ROUNDS = max(1, min(ROUNDS, 3))
# pypaimon's pure-Python writer takes minutes at 2M rows, so it gets a single round.
SUBPROCESS_ROUNDS = {"pypaimon": 1, "rust": WRITE_ROUNDS}
_names = itertools.count()
_read_back: set[str] = set()  # labels whose first round's table was read back in full
pytestmark = pytest.mark.benchmark(group=GROUP)


def _fresh_table(data: Datasets, label: str) -> Any:
    from pyspark_paimon import Catalog

    catalog = Catalog(data.warehouse)
    return catalog.create_table(
        f"bench_w.{label}_{next(_names)}",
        "id bigint not null, s string, d double",
        primary_keys=["id"],
        options={"bucket": str(PK_BUCKETS)},
    )


def _check_and_drop(data: Datasets, table: Any) -> None:
    from pyspark_paimon import Catalog

    snapshot = table.latest_snapshot()
    assert snapshot is not None and snapshot.total_record_count == data.rows, (
        f"{table.identifier}: expected one snapshot of {data.rows} records, got {snapshot}"
    )
    label = table.identifier.split(".")[-1].rsplit("_", 1)[0]
    if label not in _read_back:  # once per writer, outside the timed function: our reader gets the rows back
        _read_back.add(label)
        assert_reads_back(table.scan().to_arrow(), data.write_data, table.identifier)
    Catalog(data.warehouse).drop_table(table.identifier)


def _pedantic(
    benchmark: Any, data: Datasets, label: str, write: Callable[[Any], None], rounds: int, warmup: int
) -> None:
    def setup() -> tuple[tuple, dict]:
        return (_fresh_table(data, label),), {}

    benchmark.pedantic(
        write,
        setup=setup,
        teardown=lambda table: _check_and_drop(data, table),
        rounds=rounds,
        warmup_rounds=warmup,
        iterations=1,
    )


def test_write_spark(benchmark: Any, spark: SparkSession, datasets: Datasets) -> None:
    n = datasets.rows

    def write(table: Any) -> None:
        (
            spark.range(0, n, 1, 2)
            .selectExpr("id", "concat('str_', cast(id as string)) as s", "cast(id as double) * 0.5 as d")
            .write.format("paimon")
            .mode("append")
            .save(table.store.table_path)
        )

    load_before = loadavg()
    _pedantic(benchmark, datasets, "spark", write, WRITE_ROUNDS, 1)
    benchmark.extra_info.update(
        label="spark_paimon", rows=n, spark_tasks=2, baseline=True, loadavg=[load_before, loadavg()]
    )


def test_write_floor(benchmark: Any, spark: SparkSession, datasets: Datasets, tmp_path: Any) -> None:
    from floor_source import FLOOR_FORMAT

    n = datasets.rows
    rounds = itertools.count()

    def write() -> None:
        (
            spark.range(0, n, 1, 2)
            .selectExpr("id", "concat('str_', cast(id as string)) as s", "cast(id as double) * 0.5 as d")
            .write.format(FLOOR_FORMAT)
            .mode("append")
            .save(str(tmp_path / f"floor-{next(rounds)}"))
        )

    load_before = loadavg()
    benchmark.pedantic(write, rounds=WRITE_ROUNDS, warmup_rounds=1, iterations=1)
    written = sum(pq.ParquetFile(p).metadata.num_rows for p in tmp_path.glob("floor-0/*.parquet"))
    assert written == n, f"the floor writer wrote {written} rows, expected {n}"
    benchmark.extra_info.update(
        label="floor_writer (Parquet only)", rows=n, spark_tasks=2, loadavg=[load_before, loadavg()]
    )


def test_write_table_write_arrow(benchmark: Any, datasets: Datasets) -> None:
    load_before = loadavg()
    _pedantic(benchmark, datasets, "arrow", lambda table: table.write_arrow(datasets.write_data), WRITE_ROUNDS, 1)
    benchmark.extra_info.update(
        label="table_write_arrow (no Spark)", rows=datasets.rows, loadavg=[load_before, loadavg()]
    )


@pytest.mark.parametrize("impl", ["pypaimon", "rust"], ids=["pypaimon", "pypaimon_rust"])
def test_write_oracle(benchmark: Any, datasets: Datasets, oracle_bench: Any, impl: str) -> None:
    reports: list[dict[str, Any]] = []

    def write(table: Any) -> None:
        reports.append(
            oracle_bench(
                "write", impl=impl, warehouse=datasets.warehouse, table=table.identifier, ipc=datasets.write_ipc
            )
        )

    load_before = loadavg()
    _pedantic(benchmark, datasets, impl, write, SUBPROCESS_ROUNDS[impl], 0)
    inproc = [r["times_s"][0] for r in reports]
    benchmark.extra_info.update(
        label=("pypaimon" if impl == "pypaimon" else "pypaimon_rust") + " (subprocess)",
        rows=datasets.rows,
        inproc_s=inproc,
        inproc_median_s=statistics.median(inproc),
        import_s=statistics.median(r["import_s"] for r in reports),
        loadavg=[load_before, loadavg()],
    )


def test_bucket_ids_million_strings(benchmark: Any) -> None:
    """Bucket hashing of one million mixed-length string keys (1,000 distinct, repeated), vectorised; the
    result is checked against tests/metadata/test_bucket.py's property (repeats get the same buckets)."""
    import numpy as np
    import pyarrow as pa

    from pyspark_paimon.metadata.rows.bucket import bucket_ids
    from pyspark_paimon.metadata.types.model import AtomicType

    string = AtomicType("VARCHAR", length=2147483647)
    lengths = np.random.default_rng(0).integers(0, 30, size=1000)
    keys = pa.array(["x" * int(k) for k in lengths] * 1000)
    result = benchmark.pedantic(bucket_ids, args=([keys], [string], 16), rounds=ROUNDS, warmup_rounds=1, iterations=1)
    assert len(result) == 1_000_000 and result[:1000].tolist() * 1000 == result.tolist()
    benchmark.extra_info.update(label="bucket_ids (1M strings)", rows=1_000_000)
