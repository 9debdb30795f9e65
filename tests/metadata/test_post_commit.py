"""The maintenance after every commit (``post_commit``): consumer expiration, snapshot expiration behind a cheap
gate, ``write-only``, postpone-bucket tables, and errors that never undo the commit."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

import pytest
from maint_helpers import FakeTable

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.maintenance import post_commit
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager


def _consumer(table: FakeTable, name: str, next_snapshot: int, age_seconds: float = 0) -> None:
    directory = f"{table.path}/consumer"
    os.makedirs(directory, exist_ok=True)
    path = f"{directory}/consumer-{name}"
    Path(path).write_text(json.dumps({"nextSnapshot": next_snapshot}))
    if age_seconds:
        then = time.time() - age_seconds
        os.utime(path, (then, then))


def test_abandoned_consumers_expire_before_snapshots(tmp_path: Path) -> None:
    options = {"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1", "consumer.expiration-time": "1 h"}
    table = FakeTable(tmp_path / "t", options=options)
    table.append()
    _consumer(table, "abandoned", 1, age_seconds=2 * 3600)  # would pin snapshot 1
    _consumer(table, "live", 2)
    table.append()
    assert ConsumerManager(table.store).consumers() == {"live": 2}
    assert table.snapshots().list_ids() == [2]  # the abandoned consumer no longer pins 1
    table.append()
    assert table.snapshots().list_ids() == [2, 3]  # the live one pins 2


def test_consumers_never_expire_without_the_option(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    table.append()
    _consumer(table, "old", 1, age_seconds=30 * 86400)
    table.append()
    assert ConsumerManager(table.store).consumers() == {"old": 1}
    assert table.snapshots().list_ids() == [1, 2]


class _Counting:
    """Counts the FileIO calls made while active (every class-level entry point a read or a listing uses)."""

    NAMES = ("read_bytes", "read_text", "exists", "list_status", "write_bytes", "delete")

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in self.NAMES:
            original = getattr(FileIO, name)

            def counted(io: FileIO, *a: Any, _name: str = name, _orig: Any = original, **kw: Any) -> Any:
                self.calls.append(_name)
                return _orig(io, *a, **kw)

            monkeypatch.setattr(FileIO, name, counted)


def test_nothing_to_expire_costs_a_few_small_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Java's defaults (10 retained, 1 h): after 12 quick commits nothing is due. The gate decides from the
    EARLIEST hint and one snapshot, never listing a directory nor calling expire_snapshots."""
    table = FakeTable(tmp_path / "t")
    for _ in range(12):
        last = table.append()[0]
    schema = table.store.schemas.latest()
    assert schema is not None

    def walk(*a: object, **kw: object) -> None:
        raise AssertionError("expire_snapshots ran although nothing was due")

    monkeypatch.setattr(post_commit, "expire_snapshots", walk)
    counting = _Counting(monkeypatch)
    result = post_commit.maintain(table.store, last, schema)
    assert result.expired is None and result.skipped is None
    assert "list_status" not in counting.calls and "delete" not in counting.calls
    assert len(counting.calls) <= 5, counting.calls


def test_due_expiration_runs_and_reports(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={"snapshot.num-retained.max": "2", "snapshot.num-retained.min": "1"})
    table.append()
    table.append()
    snap = table.append()[0]  # its commit expired snapshot 1
    assert table.snapshots().list_ids() == [2, 3]
    schema = table.store.schemas.latest()
    assert schema is not None
    assert post_commit.maintain(table.store, snap, schema).expired is None  # nothing due any more
    assert post_commit.expiration_due(table.store, 4, schema.core_options, 0)  # one more commit: due by count


def test_write_only_and_postpone_bucket_skip_expiration(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    table.append()
    table.append()
    schema = table.store.schemas.latest()
    assert schema is not None
    only = dataclasses.replace(schema, options={**schema.options, "write-only": "true"})
    assert post_commit.maintain(table.store, table.store.snapshots.latest(), only).skipped == "write-only"
    postpone = dataclasses.replace(schema, primary_keys=["id", "dt"], options={**schema.options, "bucket": "-2"})
    assert post_commit.maintain(table.store, table.store.snapshots.latest(), postpone).skipped == "postpone bucket"


def test_a_failing_maintenance_never_undoes_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    table = FakeTable(tmp_path / "t", options={"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    table.append()

    def broken(*a: object, **kw: object) -> None:
        raise CorruptMetadataError("tag-x of branch 'main' is corrupt")

    monkeypatch.setattr(post_commit, "expire_snapshots", broken)
    with caplog.at_level(logging.WARNING, logger=post_commit.__name__):
        snap, _ = table.append()
    assert snap.id == 2 and table.snapshots().list_ids() == [1, 2]
    assert "Snapshot 2" in caplog.text and "tag-x" in caplog.text and "The commit stands" in caplog.text


def test_tags_past_their_retention_expire_after_a_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Java's ``TagTimeExpire`` after a commit: a tag whose retention has passed goes with the files only it kept;
    a tag without retention stays. The look at the tags happens at most once a minute per process and branch."""
    table = FakeTable(tmp_path / "t", options={"snapshot.num-retained.max": "1", "snapshot.num-retained.min": "1"})
    first, files = table.append()
    tags = TagManager(table.store)
    tags.create("short", first, time_retained_ms=60 * 60 * 1000)
    tags.create("forever", first)
    second, _ = table.append()
    assert table.snapshots().list_ids() == [2]  # snapshot 1 expired; the tags keep its files
    schema = table.store.schemas.latest()
    assert schema is not None
    hour = 3600 * 1000
    assert post_commit.maintain(table.store, second, schema, now=second.time_millis + 30 * 60 * 1000).expired_tags == []
    counting = _Counting(monkeypatch)
    later = second.time_millis + 2 * hour
    soon = post_commit.maintain(table.store, second, schema, now=second.time_millis + 30 * 60 * 1000 + 1000)
    assert soon.expired_tags == [] and "list_status" not in counting.calls  # checked a second ago: no look
    assert post_commit.maintain(table.store, second, schema, now=later).expired_tags == ["short"]
    assert tags.list_names() == ["forever"]
    assert all(os.path.exists(table.file_path(name)) for name in files)  # "forever" still reaches them


def test_tag_expiration_can_be_turned_off(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={"tag.time-expire-enabled": "false"})
    first, _ = table.append()
    TagManager(table.store).create("short", first, time_retained_ms=1)
    schema = table.store.schemas.latest()
    assert schema is not None
    assert post_commit.maintain(table.store, first, schema, now=first.time_millis + 10**9).expired_tags == []
    assert TagManager(table.store).list_names() == ["short"]


def test_write_only_creates_no_automatic_tags(tmp_path: Path) -> None:
    """Java gives a ``write-only`` commit no tag manager: neither automatic tags nor tag expiration."""
    auto = {"tag.automatic-creation": "batch"}
    table = FakeTable(tmp_path / "t", options={**auto, "write-only": "true"})
    table.append()
    assert TagManager(table.store).list_names() == []
    other = FakeTable(tmp_path / "u", options=auto)
    other.append()
    assert len(TagManager(other.store).list_names()) == 1
