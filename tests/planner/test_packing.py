"""Packing splits into Spark tasks: the default weighs a small file at a Python task's cost of opening it (64 KB),
not Java's 4 MB, so many tiny files share few tasks; explicit options, one task per core and big files pack as
before. Synthetic splits (no data) except where the options must come from a real table or stream."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob
from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.manifests.manifest import DataFileMeta
from pyspark_paimon.metadata.schema.options import SOURCE_SPLIT_OPEN_FILE_COST
from pyspark_paimon.planner.read_options import ReadOptions
from pyspark_paimon.planner.scan import pack_splits, split_open_file_cost, split_packing, split_weight
from pyspark_paimon.planner.split import DataSplit

KB, MB = 1 << 10, 1 << 20
TARGET = 128 * MB
JAVA_OPEN_FILE_COST = 4 * MB


def _split(i: int, *sizes: int) -> DataSplit:
    files = tuple(
        DataFileMeta(file_name=f"data-{i}-{j}.parquet", file_size=size, row_count=1) for j, size in enumerate(sizes)
    )
    return DataSplit(
        partition=b"",
        partition_values=(),
        bucket=i,
        total_buckets=-1,
        files=files,
        bucket_path=f"t/bucket-{i}",
        raw_convertible=True,
    )


def _loads(groups: list[list[DataSplit]], cost: int) -> list[int]:
    return [sum(split_weight(s.size_bytes, len(s.files), cost) for s in g) for g in groups]


def test_default_open_file_cost_is_a_python_tasks_not_javas() -> None:
    assert SOURCE_SPLIT_OPEN_FILE_COST.default_value == 64 * KB
    assert split_open_file_cost({}, {}) == 64 * KB
    assert split_open_file_cost({"source.split.open-file-cost": "4 mb"}, {}) == 4 * MB
    assert split_open_file_cost({"source.split.open-file-cost": "4 mb"}, {"source.split.open-file-cost": "1kb"}) == KB
    assert split_packing({}) == (TARGET, 64 * KB)
    table = {"source.split.target-size": "1 mb", "source.split.open-file-cost": "4 mb"}
    assert split_packing(table) == (MB, 4 * MB)
    assert split_packing(table, 2 * MB, 0) == (2 * MB, 0)  # a read's explicit 0 is a value, not "unset"


def test_many_tiny_files_share_few_balanced_groups() -> None:
    """The big-metadata benchmark's shape: 27,708 files of ~3 KB (here one per split)."""
    splits = [_split(i, 3 * KB) for i in range(27_708)]
    groups = pack_splits(splits, TARGET, min_groups=2)
    assert len(groups) == 14  # ceil(27,708 x 64 KB / 128 MB); Java's 4 MB cost made 866
    assert sorted(s.bucket for g in groups for s in g) == list(range(27_708))
    sizes = [len(g) for g in groups]
    assert max(sizes) - min(sizes) <= 1
    assert len(pack_splits(splits, TARGET, JAVA_OPEN_FILE_COST, min_groups=2)) == 866


def test_a_split_weighs_the_open_cost_of_each_of_its_files() -> None:
    """A merged bucket of many small files is as costly to open as as many one-file splits."""
    many = [_split(i, *([3 * KB] * 100)) for i in range(100)]  # 10,000 files
    assert len(pack_splits(many, TARGET)) == 5  # 10,000 x 64 KB / 128 MB
    assert split_weight(10 * MB, 2, 64 * KB) == 10 * MB and split_weight(0, 0, 64 * KB) == 64 * KB


def test_at_least_one_group_per_core_while_there_are_splits_to_spread() -> None:
    assert len(pack_splits([_split(i, 3 * KB) for i in range(40)], TARGET, min_groups=4)) == 4
    assert len(pack_splits([_split(i, 3 * KB) for i in range(3)], TARGET, min_groups=8)) == 3
    assert len(pack_splits([_split(0, 3 * KB)], TARGET, min_groups=8)) == 1
    assert pack_splits([], TARGET, min_groups=8) == []


@pytest.mark.parametrize("cores", [1, 2, 16])
def test_files_of_4_mb_and_more_pack_exactly_as_with_javas_cost(cores: int) -> None:
    sizes = [4 * MB] * 100 + [9 * MB] * 30 + [100 * MB, 300 * MB, 64 * MB, 1024 * MB, 128 * MB]
    splits = [_split(i, size) for i, size in enumerate(sizes)]
    ours = pack_splits(splits, TARGET, min_groups=cores)
    assert ours == pack_splits(splits, TARGET, JAVA_OPEN_FILE_COST, min_groups=cores)
    assert len(ours) == max(cores, 18)  # ceil(2,286 MB / 128 MB)
    loads = _loads(ours, 64 * KB)
    assert max(loads) - min(loads) <= max(sizes)  # greedy longest-first: balanced within one split


@pytest.mark.parametrize("sizes", [[int(3.4 * MB)] * 4, [280 * KB] * 64])
@pytest.mark.parametrize("cores", [2, 4, 16])
def test_a_2m_row_pk_table_still_gets_one_task_per_core(sizes: list[int], cores: int) -> None:
    """The 2M-row PK table of the scale benchmark: 4 buckets of one ~3.4 MB file, or 64 of one ~280 KB file."""
    splits = [_split(i, size) for i, size in enumerate(sizes)]
    ours = pack_splits(splits, TARGET, min_groups=cores)
    assert len(ours) == len(pack_splits(splits, TARGET, JAVA_OPEN_FILE_COST, min_groups=cores))
    assert len(ours) == min(cores, len(sizes))
    assert max(len(g) for g in ours) - min(len(g) for g in ours) <= 1


def test_explicit_target_size_is_honoured() -> None:
    splits = [_split(i, 3 * KB) for i in range(1_000)]
    assert len(pack_splits(splits, 1 * MB)) == 63  # ceil(1,000 x 64 KB / 1 MB)
    assert len(pack_splits(splits, 1 * MB, JAVA_OPEN_FILE_COST)) == 1_000  # one file per task, as Java


# ------------------------------------------------------------------------------------ options of real reads
def _twelve_files(tmp_path: Path, options: dict[str, str] | None = None, partitions: int = 1):
    table = Catalog(str(tmp_path / "wh")).create_table(
        "db.t", "dt string, id bigint, v string", partition_keys=["dt"], options=options or {}
    )
    for i in range(12):
        table.write_arrow(pa.table({"dt": [f"d{i % partitions}"], "id": [i], "v": ["x"]}))
    return table


@pytest.mark.parametrize(
    "table_options, read_options, groups",
    [
        ({}, {}, 2),  # 12 tiny files: one group per core
        ({}, {"source.split.open-file-cost": "64 mb"}, 6),  # 12 x 64 mb over 128 mb targets
        ({"source.split.open-file-cost": "64 mb"}, {}, 6),  # the table's own value
        ({"source.split.open-file-cost": "4 mb"}, {"source.split.target-size": "8 mb"}, 6),
        ({"source.split.open-file-cost": "64 mb"}, {"source.split.open-file-cost": "64 kb"}, 2),  # the read's wins
        ({}, {"source.split.target-size": "64 kb"}, 12),  # default cost: one tiny file per 64 kb task
        ({}, {"source.split.target-size": "128 kb"}, 6),
    ],
)
def test_batch_read_honours_explicit_options(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    table_options: dict[str, str],
    read_options: dict[str, str],
    groups: int,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    table = _twelve_files(tmp_path, table_options)
    job = prepare_read(table.store, ReadOptions())
    assert len(job.splits) == 12
    assert len(job.groups(ReadOptions.from_options(read_options))) == groups


@pytest.mark.parametrize(
    "options, groups",
    [
        ({}, 2),
        ({"source.split.open-file-cost": "64 mb"}, 6),
        ({"source.split.target-size": "64 kb"}, 12),
    ],
)
def test_stream_batches_pack_like_batch_reads_and_keep_buckets_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str], groups: int
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    table = _twelve_files(tmp_path, partitions=12)
    job = StreamReadJob(
        table.store, {"path": table.store.table_path, "scan.mode": "from-snapshot", "scan.snapshot-id": "1", **options}
    )
    splits, _ = job.next_batch(job.initial_offset())
    assert len(splits) == 12  # one per commit, each in its own partition
    packed = job.task_groups(splits)
    assert len(packed) == groups
    assert sorted(s.snapshot_id for g in packed for s in g) == [s.snapshot_id for s in splits]


def test_stream_keeps_a_buckets_changes_in_one_task_in_commit_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    table = Catalog(str(tmp_path / "wh")).create_table(
        "db.pk", "id bigint not null, v string", primary_keys=["id"], options={"bucket": "1"}
    )
    for i in range(6):
        table.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "v": [f"v{i}"]}))
    job = StreamReadJob(
        table.store,
        {
            "path": table.store.table_path,
            "scan.mode": "from-snapshot",
            "scan.snapshot-id": "1",
            "source.split.target-size": "1 b",
        },
    )
    splits, _ = job.next_batch(job.initial_offset())
    packed = job.task_groups(splits)
    assert len(packed) == 1 and [s.snapshot_id for s in packed[0]] == [s.snapshot_id for s in splits]


def test_stream_open_file_cost_must_parse(tmp_path: Path) -> None:
    table = _twelve_files(tmp_path)
    with pytest.raises(OptionError, match="source.split.open-file-cost"):
        StreamReadJob(table.store, {"path": table.store.table_path, "source.split.open-file-cost": "1 parsec"})
