"""Partition expiration after a commit (``partition.expiration-time``): values-time and update-time strategies,
the check interval, ``partition.expiration-max-num`` / ``-batch-size``, ``write-only``, and partition values
that are not times."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from pathlib import Path

import pytest
from maint_helpers import STRING, FakeTable

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.java_date import partition_timestamp
from pyspark_paimon.metadata.maintenance import partition_expire
from pyspark_paimon.metadata.rows.binary_row import deserialize_row

EXPIRE_2D = {"partition.expiration-time": "2 d", "partition.timestamp-formatter": "yyyyMMdd"}


def _day(days_ago: int) -> str:
    return (dt.date.today() - dt.timedelta(days=days_ago)).strftime("%Y%m%d")


def _live_partitions(table: FakeTable) -> set[str]:
    latest = table.store.snapshots.latest()
    return {deserialize_row(e.partition, [STRING])[0] for e in table.store.live_entries(latest)}


def test_old_partitions_are_dropped_by_one_overwrite_commit(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options=EXPIRE_2D)
    old = [table.new_file(_day(5)), table.new_file(_day(3))]
    new = [table.new_file(_day(1)), table.new_file(_day(0))]
    written = table.commit(old + new)
    assert written.id == 1
    latest = table.store.snapshots.latest()
    assert latest is not None and latest.id == 2 and latest.commit_kind == "OVERWRITE"
    assert _live_partitions(table) == {_day(1), _day(0)}
    # A drop is a commit: snapshot 1 still reaches the old files, so they stay on disk.
    assert all(os.path.exists(f"{table.bucket_dir(d)}/{m.file_name}") for d, m in old + new)


def test_snapshot_expiration_after_the_drop_deletes_the_files(tmp_path: Path) -> None:
    options = {**EXPIRE_2D, "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
    table = FakeTable(tmp_path / "t", options=options)
    old = [table.new_file(_day(5)), table.new_file(_day(3))]
    new = [table.new_file(_day(0))]
    table.commit(old + new)
    # Partition expiration, then snapshot expiration in the same maintenance (Java's order): only the drop is left.
    assert table.snapshots().list_ids() == [2]
    assert not any(os.path.exists(f"{table.bucket_dir(d)}/{m.file_name}") for d, m in old)
    assert all(os.path.exists(f"{table.bucket_dir(d)}/{m.file_name}") for d, m in new)
    assert _live_partitions(table) == {_day(0)}


def test_write_only_skips_partition_expiration(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={**EXPIRE_2D, "write-only": "true"})
    table.commit([table.new_file(_day(5)), table.new_file(_day(0))])
    assert table.snapshots().list_ids() == [1]
    assert _live_partitions(table) == {_day(5), _day(0)}


def test_check_interval_per_process_and_table(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options=EXPIRE_2D)  # default interval: 1 h
    table.commit([table.new_file(_day(0))])  # the first commit of this process checks (nothing to drop)
    table.commit([table.new_file(_day(7))])  # within the hour: no check
    assert _live_partitions(table) == {_day(7), _day(0)}
    every = FakeTable(tmp_path / "u", options={**EXPIRE_2D, "partition.expiration-check-interval": "0 s"})
    every.commit([every.new_file(_day(0))])
    every.commit([every.new_file(_day(7))])
    assert _live_partitions(every) == {_day(0)}


def test_max_num_and_batch_size(tmp_path: Path) -> None:
    options = {**EXPIRE_2D, "partition.expiration-max-num": "2", "partition.expiration-batch-size": "1"}
    table = FakeTable(tmp_path / "t", options=options)
    table.commit([table.new_file(_day(d)) for d in (9, 8, 7, 0)])
    # The two smallest values go, one OVERWRITE commit each; the third waits for the next check.
    assert table.snapshots().list_ids() == [1, 2, 3]
    assert _live_partitions(table) == {_day(7), _day(0)}


def test_values_that_are_not_times_never_expire(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table = FakeTable(tmp_path / "t", options=EXPIRE_2D)
    table.commit([table.new_file("not-a-day"), table.new_file(_day(5))])
    assert _live_partitions(table) == {"not-a-day"}
    assert "not-a-day" in caplog.text and "partition.expiration-strategy" in caplog.text


def test_update_time_strategy_uses_the_newest_file(tmp_path: Path) -> None:
    options = {"partition.expiration-time": "2 d", "partition.expiration-strategy": "update-time"}
    table = FakeTable(tmp_path / "t", options=options)

    def created(part: str, days_ago: int) -> tuple[str, object]:
        d, meta = table.new_file(part)
        local = dt.datetime.now() - dt.timedelta(days=days_ago)  # stored as local wall-clock read as UTC
        millis = (local - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
        return d, dataclasses.replace(meta, creation_time_millis=millis)

    table.commit([created("a", 5), created("b", 5), created("b", 0), created("c", 0)])  # type: ignore[list-item]
    assert _live_partitions(table) == {"b", "c"}


def test_a_formatter_we_cannot_read_fails_the_check_but_not_the_commit(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={**EXPIRE_2D, "partition.timestamp-formatter": "yyyy-MMM-dd"})
    table.commit([table.new_file("2020-Jan-01")])
    assert _live_partitions(table) == {"2020-Jan-01"}
    schema = table.store.schemas.latest()
    assert schema is not None
    with pytest.raises(ChainTableError, match="text month"):
        partition_expire.expired_partitions(table.store, schema, 0)


def test_partition_timestamp_follows_javas_extractor() -> None:
    assert partition_timestamp(["dt"], ["2025-08-11"], None, None) == dt.datetime(2025, 8, 11)
    assert partition_timestamp(["dt"], ["2025-8-1 7:05:09.5"], None, None) == dt.datetime(2025, 8, 1, 7, 5, 9, 500000)
    assert partition_timestamp(["dt", "hh"], ["20250811", "09"], "$dt $hh:00:00", "yyyyMMdd HH:mm:ss") == dt.datetime(
        2025, 8, 11, 9
    )
    assert partition_timestamp(["dt", "dt1"], ["x", "20250811"], "$dt1", "yyyyMMdd") == dt.datetime(2025, 8, 11)
    with pytest.raises(ValueError):
        partition_timestamp(["dt"], [None], None, None)
    with pytest.raises(ValueError):
        partition_timestamp(["dt"], ["20250811"], None, None)
