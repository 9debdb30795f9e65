"""Automatic tag creation on commit (``tag.automatic-creation``): process-time, batch, watermark, periods,
formatters, delay, completion, ``tag.num-retained-max`` and ``tag.default-time-retained``."""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path

import pytest
from maint_helpers import STRING, FakeTable

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.refs import auto_tag
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots import commit
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit


class Clock:
    def __init__(self) -> None:
        self.now = dt.datetime(2025, 8, 10, 10, 0)

    def __call__(self) -> int:
        return int(self.now.timestamp() * 1000)  # naive = local time, like the commit time Paimon tags by


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(commit, "now_millis", c)
    return c


def make(tmp_path: Path, **options: str) -> FakeTable:
    return FakeTable(tmp_path / "t", options={k.replace("_", "-").replace("--", "."): v for k, v in options.items()})


def tagmap(table: FakeTable, branch: str = "main") -> dict[str, int]:
    return {t.name: t.snapshot_id for t in table.tags(branch).list_tags()}


def commit_at(table: FakeTable, clock: Clock, when: dt.datetime, branch: str = "main") -> int:
    clock.now = when
    return table.append(branch=branch)[0].id


def opts(**kw: str) -> dict[str, str]:
    return {f"tag.{k.replace('_', '-')}": v for k, v in kw.items()}


def test_process_time_daily(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(tmp_path / "t", options=opts(automatic_creation="process-time"))
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    assert tagmap(table) == {"2025-08-09": 1}  # first commit tags the previous period, as Java does
    commit_at(table, clock, dt.datetime(2025, 8, 10, 23, 59))
    assert tagmap(table) == {"2025-08-09": 1}
    commit_at(table, clock, dt.datetime(2025, 8, 11, 0, 30))
    assert tagmap(table) == {"2025-08-09": 1, "2025-08-10": 3}
    commit_at(table, clock, dt.datetime(2025, 8, 11, 5, 0))
    commit_at(table, clock, dt.datetime(2025, 8, 13, 1, 0))  # no commit on the 12th: no completion by default
    assert tagmap(table) == {"2025-08-09": 1, "2025-08-10": 3, "2025-08-12": 5}
    assert all(t.time_retained_ms is None for t in table.tags().list_tags())


def test_process_time_with_delay_hourly_and_formatters(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(
        tmp_path / "t",
        options=opts(automatic_creation="process-time", creation_period="hourly", creation_delay="10 min"),
    )
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 5))
    assert tagmap(table) == {"2025-08-10 09": 1}
    commit_at(table, clock, dt.datetime(2025, 8, 10, 11, 5))  # 11:05 - 10 min < 11:00
    assert tagmap(table) == {"2025-08-10 09": 1}
    commit_at(table, clock, dt.datetime(2025, 8, 10, 11, 10))
    assert tagmap(table) == {"2025-08-10 09": 1, "2025-08-10 10": 3}


@pytest.mark.parametrize(
    "period, formatter, expected",
    [
        ("daily", "without_dashes", "20250809"),
        ("daily", "without_dashes_and_spaces", "20250809"),
        ("hourly", "without_dashes", "20250810 09"),
        ("hourly", "without_dashes_and_spaces", "2025081009"),
        ("two-hours", "with_dashes", "2025-08-10 08"),
    ],
)
def test_period_formatters(tmp_path: Path, clock: Clock, period: str, formatter: str, expected: str) -> None:
    table = FakeTable(
        tmp_path / "t",
        options=opts(automatic_creation="process-time", creation_period=period, period_formatter=formatter),
    )
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 30))
    assert tagmap(table) == {expected: 1}  # auto tags may be numeric: the formatter chose the name


def test_num_retained_max_and_default_time_retained(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(
        tmp_path / "t",
        options=opts(automatic_creation="process-time", num_retained_max="2", default_time_retained="3 d"),
    )
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    table.tags().create("manual", table.snapshots().latest())  # never counted, never deleted
    for day in (11, 12, 13):
        commit_at(table, clock, dt.datetime(2025, 8, day, 1, 0))
    assert tagmap(table) == {"manual": 1, "2025-08-11": 3, "2025-08-12": 4}
    for t in table.tags().list_tags():
        if t.name != "manual":
            assert t.time_retained_ms == 3 * 86_400_000 and t.create_time is not None


def test_automatic_completion_fills_skipped_periods(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(
        tmp_path / "t", options={**opts(automatic_creation="process-time"), "tag.automatic-completion": "true"}
    )
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    commit_at(table, clock, dt.datetime(2025, 8, 14, 1, 0))
    commit_at(table, clock, dt.datetime(2025, 8, 14, 2, 0))
    assert tagmap(table) == {"2025-08-09": 1, "2025-08-10": 2, "2025-08-11": 3}


def test_snapshots_committed_without_the_hook_are_caught_up(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(tmp_path / "t")
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    commit_at(table, clock, dt.datetime(2025, 8, 11, 0, 30))
    SchemaManager(table.store.fileio, table.store.table_path).set_options(opts(automatic_creation="process-time"))
    commit_at(table, clock, dt.datetime(2025, 8, 11, 5, 0))
    assert tagmap(table) == {"2025-08-09": 1, "2025-08-10": 2}


def test_batch_mode_tags_the_day_like_java_and_moves_it(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(tmp_path / "t", options=opts(automatic_creation="batch", num_retained_max="2"))
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    assert tagmap(table) == {"batch-write-2025-08-10": 1}
    # A tag the user made by hand is never counted against tag.num-retained-max (Java would delete it).
    table.tags("main").create("manual", table.store.snapshots.snapshot(1))
    commit_at(table, clock, dt.datetime(2025, 8, 10, 18, 0))
    assert tagmap(table) == {"manual": 1, "batch-write-2025-08-10": 2}
    commit_at(table, clock, dt.datetime(2025, 8, 11, 9, 0))
    commit_at(table, clock, dt.datetime(2025, 8, 12, 9, 0))
    assert tagmap(table) == {"manual": 1, "batch-write-2025-08-11": 3, "batch-write-2025-08-12": 4}


def test_batch_customized_name(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(
        tmp_path / "t", options={**opts(automatic_creation="batch"), "tag.batch.customized-name": "nightly"}
    )
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    commit_at(table, clock, dt.datetime(2025, 8, 11, 10, 0))
    assert tagmap(table) == {"nightly": 2}


def test_auto_tags_go_to_the_committing_branch(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(tmp_path / "t", options=opts(automatic_creation="batch"))
    commit_at(table, clock, dt.datetime(2025, 8, 10, 10, 0))
    table.branch_from_tag("b", "batch-write-2025-08-10")
    commit_at(table, clock, dt.datetime(2025, 8, 11, 10, 0), branch="b")
    assert tagmap(table) == {"batch-write-2025-08-10": 1}
    assert tagmap(table, "b") == {"batch-write-2025-08-10": 1, "batch-write-2025-08-11": 2}


def test_watermark_mode(tmp_path: Path, clock: Clock) -> None:
    table = FakeTable(tmp_path / "t", options=opts(automatic_creation="watermark"))
    c = FileStoreCommit(table.store)
    wm = int(dt.datetime(2025, 8, 10, 10, 0, tzinfo=dt.timezone.utc).timestamp() * 1000)
    _, meta = table.new_file()
    c.commit([CommitMessage(serialize_row(["a"], [STRING]), 0, -1, (meta,))], watermark=wm)
    assert tagmap(table) == {"2025-08-09": 1}
    _, meta = table.new_file()
    c.commit([CommitMessage(serialize_row(["a"], [STRING]), 0, -1, (meta,))])  # watermark carried forward
    assert tagmap(table) == {"2025-08-09": 1}


def test_invalid_options_fail_the_commit_before_writing(tmp_path: Path, clock: Clock) -> None:
    for bad in (
        opts(automatic_creation="sometimes"),
        opts(automatic_creation="process-time", creation_period="weekly"),
        opts(automatic_creation="batch", period_formatter="fancy"),
        opts(automatic_creation="process-time", creation_delay="2 d"),
    ):
        table = FakeTable(tmp_path / str(abs(hash(str(bad)))), options=bad)
        with pytest.raises(OptionError):
            table.append()
        assert table.snapshots().list_ids() == []
        assert not Path(f"{table.store.table_path}/manifest").exists() or not list(
            Path(f"{table.store.table_path}/manifest").iterdir()
        )


def test_a_failing_auto_tag_does_not_fail_the_landed_commit(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    table = FakeTable(tmp_path / "t", options=opts(automatic_creation="batch"))

    def boom(*args: object) -> list[str]:
        raise OSError("disk full")

    monkeypatch.setattr(auto_tag, "on_commit", boom)
    with caplog.at_level(logging.WARNING):
        snap, _ = table.append()
    assert snap.id == 1 and table.snapshots().list_ids() == [1]
    assert "automatic tag failed" in caplog.text and "disk full" in caplog.text


def test_period_handler_parsing() -> None:
    daily = auto_tag.PeriodHandler.from_options({})
    assert daily.tag_to_time("2025-08-10") == dt.datetime(2025, 8, 10)
    assert daily.tag_to_time("2025-08-10 07") == dt.datetime(2025, 8, 10)  # Java's daily parser drops the hour
    assert daily.tag_to_time("2025-13-40") is None and not daily.is_auto_tag("v1")
    assert daily.normalize_to_previous(dt.datetime(2025, 8, 10, 0, 0)) == dt.datetime(2025, 8, 9)
    hourly = auto_tag.PeriodHandler.from_options({"tag.creation-period": "hourly"})
    assert hourly.time_to_tag(dt.datetime(2025, 8, 10, 7)) == "2025-08-10 07"
    custom = auto_tag.PeriodHandler.from_options({"tag.creation-period-duration": "15 min"})
    assert custom.normalize_to_previous(dt.datetime(2025, 8, 10, 7, 20)) == dt.datetime(2025, 8, 10, 7, 0)
    assert custom.time_to_tag(dt.datetime(2025, 8, 10, 7, 0)) == "202508100700"
