"""Paimon's partition and consumer procedures (datasource/partition_maintenance.py, consumers.py) through
``t.maintenance``: expire_partitions, mark_partition_done, rescale, reset_consumer, clear_consumers."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.errors import CommitConflictError, OptionError, PaimonError
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.table import Table


def _rows(t: Table) -> list[dict[str, Any]]:
    return sorted(t.scan().to_arrow().to_pylist(), key=lambda r: (str(r.get("dt")), r["id"]))


@pytest.fixture
def daily(tmp_path: Any) -> Table:
    t = Catalog(str(tmp_path)).create_table(
        "db.daily",
        "dt string, id bigint, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    for dt in ("2020-01-01", "2020-01-02", "2999-01-01"):
        t.write_arrow(pa.table({"dt": [dt] * 20, "id": list(range(20)), "v": [f"{dt}-{i}" for i in range(20)]}))
    return t


def test_expire_partitions_by_values_and_max(daily: Table) -> None:
    none = daily.maintenance.expire_partitions(expiration_time="1 d", timestamp_formatter="yyyy-MM-dd", max_expires=1)
    assert none.partitions == [{"dt": "2020-01-01"}] and len(none.snapshots) == 1
    assert none.snapshots[0].commit_kind == "OVERWRITE"
    result = daily.maintenance.expire_partitions(expiration_time="1 d", timestamp_formatter="yyyy-MM-dd")
    assert result.partitions == [{"dt": "2020-01-02"}]
    assert {r["dt"] for r in _rows(daily)} == {"2999-01-01"}
    assert not daily.maintenance.expire_partitions(expiration_time="1 d", timestamp_formatter="yyyy-MM-dd")


def test_expire_partitions_takes_the_table_options_and_refuses_without_a_time(daily: Table) -> None:
    with pytest.raises(OptionError, match="expiration_time"):
        daily.maintenance.expire_partitions()
    daily.update_schema().set_options(
        {"partition.expiration-time": "1 d", "partition.timestamp-formatter": "yyyy-MM-dd"}
    ).commit()
    assert len(daily.maintenance.expire_partitions().partitions) == 2
    unpartitioned = Catalog(daily.store.table_path.rsplit("/db.db", 1)[0]).create_table("db.flat", "id bigint")
    with pytest.raises(OptionError, match="no partitions"):
        unpartitioned.maintenance.expire_partitions(expiration_time="1 d")


def test_mark_partition_done_writes_javas_success_file(daily: Table) -> None:
    first = daily.maintenance.mark_partition_done(["dt=2020-01-01", {"dt": "2999-01-01"}])
    assert [p.rsplit("/", 2)[-2:] for p in first.paths] == [
        ["dt=2020-01-01", "_SUCCESS"],
        ["dt=2999-01-01", "_SUCCESS"],
    ]
    text = daily.store.fileio.read_text(first.paths[0])
    body = json.loads(text)
    assert text.startswith('{\n  "creationTime" : ') and body["creationTime"] == body["modificationTime"]
    again = daily.maintenance.mark_partition_done("dt=2020-01-01")
    later = json.loads(daily.store.fileio.read_text(again.paths[0]))
    assert later["creationTime"] == body["creationTime"] and later["modificationTime"] >= body["modificationTime"]
    assert _rows(daily)[0]["dt"] == "2020-01-01"  # the success file is no data file
    with pytest.raises(OptionError, match="partition columns"):
        daily.maintenance.mark_partition_done("id=1")
    daily.update_schema().set_options({"partition.mark-done-action": "success-file,done-partition"}).commit()
    with pytest.raises(OptionError, match="done-partition"):
        daily.maintenance.mark_partition_done("dt=2020-01-01")


def test_rescale_rewrites_partitions_into_new_buckets(daily: Table) -> None:
    daily.delete("id = 3")
    before = _rows(daily)
    result = daily.maintenance.rescale(4, "dt=2020-01-01")
    assert result and result.snapshot.commit_kind == "OVERWRITE"
    assert result.partitions == 1 and result.rows == 19 and result.bucket_num == 4
    assert _rows(daily) == before
    buckets = daily.inspect.buckets().to_pylist()
    assert {r["bucket"] for r in buckets if r["partition"] == "[2020-01-01]"} == {0, 1, 2, 3}
    assert {r["bucket"] for r in buckets if r["partition"] == "[2020-01-02]"} == {0, 1}
    # Later writes to the rescaled partition follow its new bucket count.
    daily.write_arrow(pa.table({"dt": ["2020-01-01"], "id": [3], "v": ["back"]}))
    assert len(_rows(daily)) == len(before) + 1
    totals = {e.total_buckets for e in daily.store.live_entries(daily.latest_snapshot()) if e.bucket >= 0}
    assert totals == {2, 4}


def test_rescale_refusals(daily: Table, tmp_path: Any) -> None:
    log = Catalog(str(tmp_path)).create_table("db.log", "id bigint")
    log.write_arrow(pa.table({"id": [1]}))
    with pytest.raises(OptionError, match="bucket"):
        log.maintenance.rescale(2)
    empty = Catalog(str(tmp_path)).create_table("db.e", "id bigint", primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(OptionError, match="no snapshot"):
        empty.maintenance.rescale(2)


def test_rescale_fails_when_a_commit_lands_meanwhile(daily: Table, monkeypatch: Any) -> None:
    from pyspark_paimon.datasource import partition_maintenance

    real = partition_maintenance.read_planned_split
    landed = []

    def racing(ctx: Any, split: Any) -> Any:
        if not landed:
            landed.append(daily.write_arrow(pa.table({"dt": ["2020-01-01"], "id": [99], "v": ["racer"]})))
        return real(ctx, split)

    monkeypatch.setattr(partition_maintenance, "read_planned_split", racing)
    latest = daily.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="rescale"):
        daily.maintenance.rescale(3)
    assert daily.latest_snapshot().id == latest + 1  # the racer's commit only
    assert {r["v"] for r in _rows(daily)} >= {"racer"}


def test_reset_and_clear_consumers(daily: Table) -> None:
    m = daily.maintenance
    assert m.reset_consumer("job-a", 2) and m.reset_consumer("job-b", 1) and m.reset_consumer("other", 3)
    assert ConsumerManager(daily.store).consumers() == {"job-a": 2, "job-b": 1, "other": 3}
    with pytest.raises(PaimonError, match="Snapshot 99"):
        m.reset_consumer("job-a", 99)
    assert m.reset_consumer("job-a") and not m.reset_consumer("job-a")
    assert m.clear_consumers("job.*", "job-c") == ["job-b"]
    assert m.clear_consumers() == ["other"] and daily.inspect.consumers().num_rows == 0
    with pytest.raises(OptionError, match="regular expression"):
        m.clear_consumers("(")
