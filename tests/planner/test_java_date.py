"""Partition values to time for chain tables (Java's `SchemaValidation.validateChainTable`): the Java date-format subset
(:class:`JavaDateFormat`) and :class:`PartitionTimeResolver` (pattern + formatter, canonical partitions)."""

from __future__ import annotations

import datetime as dt

import pytest

from pyspark_paimon.errors import ChainTableError
from pyspark_paimon.metadata.java_date import JavaDateFormat, PartitionTimeResolver


def test_java_date_format_round_trips() -> None:
    f = JavaDateFormat("yyyyMMdd HH:mm:ss")
    t = f.parse("20250811 09:00:00")
    assert t == dt.datetime(2025, 8, 11, 9)
    assert f.format(t) == "20250811 09:00:00"
    assert JavaDateFormat("yyyy-MM-dd").parse("2025-08-11") == dt.datetime(2025, 8, 11)
    assert JavaDateFormat("yyyyDDD").format(dt.datetime(2025, 2, 1)) == "2025032"
    assert JavaDateFormat("yyyy'T'MM/dd kk").format(dt.datetime(2025, 1, 2, 0)) == "2025T01/02 24"
    assert JavaDateFormat("yyyy'T'MM/dd kk").parse("2025T01/02 24") == dt.datetime(2025, 1, 2)


@pytest.mark.parametrize(
    "fmt,match",
    [
        ("yyyyMM", "complete date"),
        ("MMdd", "complete date"),
        ("yyyyMMdd HH:mm:ss.SSS", "letter 'S'"),
        ("yyyyMMdd hh", "letter 'h'"),
        ("yyyyMMMdd", "text month"),
        ("yyyyMMdd[HH]", "reserved"),
    ],
)
def test_formatter_validation(fmt: str, match: str) -> None:
    with pytest.raises(ChainTableError, match=match):
        JavaDateFormat(fmt)


def test_partition_time_resolver_hourly_and_canonical() -> None:
    r = PartitionTimeResolver("$dt $hour:00:00", "yyyyMMdd HH:mm:ss", ["dt", "hour"])
    assert r.columns == ["dt", "hour"]
    assert r.to_time({"dt": "20250811", "hour": "09"}) == dt.datetime(2025, 8, 11, 9)
    assert r.render(dt.datetime(2025, 8, 11, 9)) == {"dt": "20250811", "hour": "09"}
    assert r.canonical_time({"dt": "20250811", "hour": "09"}) == dt.datetime(2025, 8, 11, 9)
    assert r.canonical_time({"dt": "20250811", "hour": "9"}) is None  # stepping would render '09'
    assert r.canonical_time({"dt": "2025081x", "hour": "09"}) is None
    # '$dtx' is its own column, not '$dt' followed by 'x'
    assert PartitionTimeResolver("$dtx", "yyyyMMdd", ["dt", "dtx"]).columns == ["dtx"]
