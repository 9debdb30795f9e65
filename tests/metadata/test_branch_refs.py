"""Refs "as of" an instant (both timestamp rules), branch retention and ``expire_branches`` (GC-safe, lineage of
surviving branches kept), on small real histories (``maint_helpers.FakeTable``)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from maint_helpers import FakeTable, assert_all_roots_intact, data_files_on_disk

from pyspark_paimon.errors import BranchConflictError, OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.maintenance.expire import expire_branches, expire_snapshots
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.lineage import LINEAGE_FILE
from pyspark_paimon.metadata.refs.tags import AT_OR_AFTER, AT_OR_BEFORE
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot, branch_path
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.table import Table

HOUR_MS = 3600 * 1000


@pytest.fixture
def table(tmp_path: Path) -> FakeTable:
    return FakeTable(tmp_path / "t")


def api(table: FakeTable) -> Table:
    return Table(FileStore(table.store.fileio, table.store.table_path))


def set_time(table: FakeTable, sid: int, millis: int, branch: str = "main") -> Snapshot:
    """Give snapshot ``sid`` a known commit time (commits in a test land within the same millisecond)."""
    snaps = table.snapshots(branch)
    snap = snaps.snapshot(sid).with_changes(time_millis=millis)
    table.store.fileio.write_bytes(snaps.snapshot_path(sid), snap.to_json().encode())
    return snap


@pytest.fixture
def timed(table: FakeTable) -> FakeTable:
    """Snapshots 1, 2, 3 committed at T, T+1 h and T+2 h."""
    for _ in range(3):
        table.append()
    base = table.snapshots().snapshot(1).time_millis - 10 * HOUR_MS
    for sid in (1, 2, 3):
        set_time(table, sid, base + (sid - 1) * HOUR_MS)
    return table


def t0(table: FakeTable) -> int:
    return table.snapshots().snapshot(1).time_millis


# ------------------------------------------------------------------------------------------ "as of" rules
def test_tags_and_branches_as_of_an_instant_follow_the_chosen_rule(timed: FakeTable) -> None:
    t, base = api(timed), t0(timed)
    between = base + HOUR_MS + 1  # after snapshot 2, before snapshot 3
    # Tags and branches alike default to the state at T; Paimon's create_tag_from_timestamp rule is a keyword.
    assert t.tags.create("after", timestamp=between, timestamp_rule=AT_OR_AFTER).snapshot_id == 3
    assert t.tags.create("before", timestamp=between).snapshot_id == 2
    assert t.branches.create("b_before", timestamp=between).source_snapshot_id == 2
    assert t.branches.create("b_after", timestamp=between, timestamp_rule=AT_OR_AFTER).source_snapshot_id == 3
    # An exact commit time selects that snapshot under both rules.
    exact = base + HOUR_MS
    assert t.tags.create("x1", timestamp=exact).snapshot_id == 2
    assert t.tags.create("x2", timestamp=exact, timestamp_rule=AT_OR_BEFORE).snapshot_id == 2
    # A datetime works too (naive = local time), and the branch reads what the snapshot holds.
    b = t.branches.create("b_dt", timestamp=dt.datetime.fromtimestamp(between / 1000))
    assert b.source_snapshot_id == 2
    assert t.on_branch("b_dt").latest_snapshot().total_record_count == 2  # type: ignore[union-attr]


def test_as_of_rules_see_snapshots_only_tags_preserved_and_refuse_empty_ranges(timed: FakeTable) -> None:
    t, base = api(timed), t0(timed)
    t.tags.create("keep1", snapshot_id=1)
    expire_snapshots(FileStore(timed.fileio, timed.path, "main"), retain_min=1, older_than=base + 10 * HOUR_MS)
    assert timed.snapshots().list_ids() == [3]
    # Snapshot 1 expired but tag keep1 preserved it: the state at T is still known.
    assert t.branches.create("old", timestamp=base + 1).source_snapshot_id == 1
    with pytest.raises(SnapshotNotFoundError, match="at or before"):
        t.branches.create("too_early", timestamp=base - 1)
    with pytest.raises(SnapshotNotFoundError, match="at or after"):
        t.tags.create("too_late", timestamp=base + 5 * HOUR_MS, timestamp_rule=AT_OR_AFTER)
    with pytest.raises(OptionError, match="timestamp_rule must be one of"):
        t.tags.create("bad", timestamp=base, timestamp_rule="nearest")
    with pytest.raises(OptionError, match="timestamp_rule must be one of"):
        t.branches.create("bad", timestamp=base, timestamp_rule="latest")


# ------------------------------------------------------------------------------------------ retention
def test_branch_retention_is_stored_with_the_lineage(table: FakeTable) -> None:
    table.append()
    info = api(table).branches.create("tmp", snapshot_id=1, time_retained="2 h")
    assert info.time_retained_millis == 2 * HOUR_MS
    assert info.expire_time_millis == info.create_time_millis + 2 * HOUR_MS
    lineage = json.loads(Path(branch_path(table.store.table_path, "tmp"), LINEAGE_FILE).read_text())
    assert lineage["timeRetainedMillis"] == 2 * HOUR_MS
    assert api(table).branches.create("forever", snapshot_id=1).expire_time_millis is None


def test_expire_branches_drops_expired_branches_and_only_files_nothing_else_reaches(table: FakeTable) -> None:
    _, f1 = table.append()
    t = api(table)
    info = t.branches.create("tmp", snapshot_id=1, time_retained="1 h")
    t.branches.create("kept", snapshot_id=1, time_retained="1 d")
    t.branches.create("no_retention", snapshot_id=1)
    _, fb = table.append(branch="tmp")
    table.commit([table.new_file("a")], overwrite=True)  # main no longer reads f1
    table.append()
    expire_snapshots(
        FileStore(table.store.fileio, table.store.table_path, "main"),
        retain_min=1,
        older_than=dt.datetime.now() + dt.timedelta(1),
    )
    now = info.create_time_millis + 2 * HOUR_MS
    assert expire_branches(table.store, now=info.create_time_millis).deleted == []
    dry = expire_branches(table.store, now=now, dry_run=True)
    assert dry.deleted == ["tmp"] and {Path(p).name for p in dry.deleted_data_files} == set(fb)
    assert set(fb) <= data_files_on_disk(table)
    result = expire_branches(table.store, now=now)
    assert result.deleted == ["tmp"]
    # fb was only on tmp; f1 is still read by branches 'kept' and 'no_retention'.
    assert {Path(p).name for p in result.deleted_data_files} == set(fb)
    assert set(f1) <= data_files_on_disk(table)
    assert [b.name for b in t.branches.list()] == ["kept", "no_retention"]
    assert_all_roots_intact(table)
    # older_than drops every branch created before it, retention or not; then f1 has no reader left.
    result = t.branches.expire(older_than=dt.datetime.now() + dt.timedelta(minutes=1))
    assert result.deleted == ["kept", "no_retention"]
    assert not set(f1) & data_files_on_disk(table)
    assert_all_roots_intact(table)


def test_expire_branches_keeps_a_branch_another_branch_reads_from(table: FakeTable) -> None:
    table.append()
    t = api(table)
    info = t.branches.create("fb", snapshot_id=1, time_retained="1 h")
    t.update_schema().set_options({"scan.fallback-branch": "fb"}).commit()
    result = expire_branches(table.store, now=info.create_time_millis + 2 * HOUR_MS)
    assert result.deleted == []
    assert "scan.fallback-branch" in result.kept["fb"]
    assert [b.name for b in t.branches.list()] == ["fb"]


def test_a_branch_made_from_an_expired_branch_keeps_its_lineage(table: FakeTable) -> None:
    """main s1 -> branch b (retained) commits b2, b3 -> branch c from b's snapshot 3; main commits its own s2.
    Fast-forwarding c into main refuses (main's s2 is not in c's history) before and after b expires, and once
    main is back at s1 it works: c's history reaches main's s1 through b. Without the history b hands on when
    it is dropped, c's ancestry would stop at b's snapshot 3 and that fast-forward would be refused."""
    table.append()
    t = api(table)
    info = t.branches.create("b", snapshot_id=1, time_retained="1 h")
    table.append(branch="b")
    table.append(branch="b")
    t.on_branch("b").branches.create("c", snapshot_id=3)
    table.append()  # main's own snapshot 2
    with pytest.raises(BranchConflictError, match=r"snapshot 2 \(APPEND"):
        t.branches.fast_forward("c")
    result = expire_branches(table.store, now=info.create_time_millis + 2 * HOUR_MS)
    assert result.deleted == ["b"] and result.relinked_branches == ["c"]
    via = BranchManager(table.store).lineage("c").via  # type: ignore[union-attr]
    assert via is not None and via.source_branch == "main" and via.source_snapshot_id == 1
    # $branches still reports where c came from.
    assert [(r["branch_name"], r["created_from_snapshot"]) for r in t.inspect.branches().to_pylist()] == [("c", 3)]
    with pytest.raises(BranchConflictError, match=r"snapshot 2 \(APPEND"):
        t.branches.fast_forward("c")
    assert_all_roots_intact(table)
    # With main's own commit rolled back, c's history contains everything main has: the fast-forward works.
    t.maintenance.rollback_to(snapshot_id=1)
    assert t.branches.fast_forward("c").latest_id == 3


def test_dropping_a_branch_by_hand_keeps_its_childrens_lineage_too(table: FakeTable) -> None:
    table.append()
    t = api(table)
    t.branches.create("b", snapshot_id=1)
    table.append(branch="b")
    t.on_branch("b").branches.create("c", snapshot_id=2)
    t.branches.delete("b")
    via = BranchManager(table.store).lineage("c").via  # type: ignore[union-attr]
    assert via is not None and via.source_branch == "main" and via.source_snapshot_id == 1
    assert [h[1] for h in via.history] == [1]  # b's copy of main's snapshot 1
    assert t.branches.fast_forward("c").latest_id == 2


def test_lineage_survives_dropping_a_chain_of_ancestors_parents_first(table: FakeTable) -> None:
    """main s1 -> a (a2) -> b (b3) -> c (c4); a and b expire in one call: c still descends from main's s1."""
    table.append()
    t = api(table)
    t.branches.create("a", snapshot_id=1)
    table.append(branch="a")
    t.on_branch("a").branches.create("b", snapshot_id=2)
    table.append(branch="b")
    t.on_branch("b").branches.create("c", snapshot_id=3)
    table.append(branch="c")
    created = BranchManager(table.store).info("c").create_time_millis
    result = expire_branches(table.store, older_than=created)  # a and b, not c
    assert result.deleted == ["a", "b"] and result.relinked_branches == ["c"]
    via = BranchManager(table.store).lineage("c").via  # type: ignore[union-attr]
    assert via is not None and (via.source_branch, via.source_snapshot_id) == ("main", 1)
    assert sorted(h[1] for h in via.history) == [1, 2]  # main s1 (a copied it), a2 (b copied it)
    assert t.branches.fast_forward("c").latest_id == 4  # without the inherited history: "main was rolled back"
    assert_all_roots_intact(table)


# ------------------------------------------------------------------------------------------ refs AT a position
def test_refs_at_a_relative_offset_see_the_table_as_it_was(timed: FakeTable) -> None:
    t = api(timed)
    # Snapshots were committed about 10 h, 9 h and 8 h ago: 8.5 h ago the table was at snapshot 2.
    assert t.tags.create("ago", offset="-510 min").snapshot_id == 2
    assert t.branches.create("b_ago", offset=dt.timedelta(hours=-8, minutes=-30)).source_snapshot_id == 2
    assert t.tags.create("now", offset="-1 min").snapshot_id == 3
    assert t.tags.create("first_after", offset="-510 min", timestamp_rule=AT_OR_AFTER).snapshot_id == 3
    with pytest.raises(SnapshotNotFoundError, match=r"before branch 'main'.*first retained snapshot, 1.*shorter"):
        t.branches.create("too_old", offset="-11 h")
    with pytest.raises(OptionError, match="points into the future.*'-1 d'"):
        t.tags.create("future", offset="1 d")
    with pytest.raises(Exception, match="one source"):
        t.tags.create("two", offset="-1 h", snapshot_id=1)
    assert [b.name for b in t.branches.list()] == ["b_ago"]


def test_refs_at_a_consumer_hold_what_the_stream_has_delivered(timed: FakeTable) -> None:
    from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager

    t = api(timed)
    consumers = ConsumerManager(timed.store)
    consumers.record("etl", 3)  # snapshots 1 and 2 consumed
    consumers.record("fresh", 1)
    assert t.tags.create("etl_pos", consumer="etl").snapshot_id == 2
    info = t.branches.create("etl_replay", consumer="etl")
    assert info.source_snapshot_id == 2
    assert t.on_branch("etl_replay").latest_snapshot().total_record_count == 2  # type: ignore[union-attr]
    with pytest.raises(SnapshotNotFoundError, match=r"no consumer 'nope' \(its consumers: etl, fresh\)"):
        t.tags.create("x", consumer="nope")
    with pytest.raises(SnapshotNotFoundError, match="'fresh'.*consumed no snapshot yet"):
        t.branches.create("y", consumer="fresh")
    # A consumer behind expiration: its position is gone and no tag kept it.
    consumers.record("slow", 2)
    timed.fileio.delete(consumers.path("fresh"))  # it would keep snapshot 1 from expiring
    expire_snapshots(FileStore(timed.fileio, timed.path, "main"), retain_min=1, older_than=t0(timed) + 10 * HOUR_MS)
    with pytest.raises(SnapshotNotFoundError, match="'slow'.*snapshot 1, which has expired"):
        t.tags.create("z", consumer="slow")
