"""Tags (Java's `Tag`, `TagManager`): file format, create from latest / snapshot / tag / timestamp, rename, replace,
delete, list, expiration, and interop with pypaimon in both directions."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import textwrap
from pathlib import Path

import pytest
from maint_helpers import FakeTable, assert_all_roots_intact, data_files_on_disk

from pyspark_paimon.errors import OptionError, SnapshotNotFoundError, TagError, TagNotFoundError
from pyspark_paimon.metadata.maintenance.expire import expire_snapshots, expire_tags
from pyspark_paimon.metadata.refs import tags as tags_module
from pyspark_paimon.metadata.refs.tags import (
    AT_OR_AFTER,
    Tag,
    TagManager,
    tag_from_json,
    tag_to_json,
    validate_tag_name,
)
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.table import Table
from tests.interop.helpers import OracleBatch


@pytest.fixture
def table(tmp_path: Path) -> FakeTable:
    return FakeTable(tmp_path / "db.db" / "t")


def api(t: FakeTable, branch: str = "main") -> Table:
    return Table(FileStore(t.store.fileio, t.store.table_path, branch))


# ------------------------------------------------------------------------------------------ file format
def test_tag_without_retention_is_an_exact_copy_of_the_snapshot_file(table: FakeTable) -> None:
    snap, _ = table.append()
    tag = api(table).tags.create("2025-08-10")
    assert tag.snapshot == snap and tag.create_time is None and tag.time_retained_ms is None
    text = Path(table.tags().tag_path("2025-08-10")).read_text()
    assert text == Path(table.snapshots().snapshot_path(snap.id)).read_text()
    assert "tagCreateTime" not in text


def test_tag_with_retention_writes_java_create_time_array_and_bare_decimal_duration(table: FakeTable) -> None:
    snap, _ = table.append()
    before = dt.datetime.now().replace(microsecond=0)
    api(table).tags.create("keep", time_retained="7 d")
    text = Path(table.tags().tag_path("keep")).read_text()
    assert re.search(r'\n  "tagTimeRetained" : 604800\.000000000\n}$', text), text
    raw = json.loads(text)
    assert list(raw)[-2:] == ["tagCreateTime", "tagTimeRetained"]
    assert 5 <= len(raw["tagCreateTime"]) <= 7
    assert re.search(r'"tagCreateTime" : \[ \d{4}, \d+, \d+, \d+, \d+(, \d+){0,2} \]', text)
    tag = table.tags().get_tag("keep")
    assert tag.time_retained_ms == 7 * 86_400_000
    assert before <= tag.create_time <= dt.datetime.now()
    assert tag.snapshot == snap
    # Everything before the tag keys is the snapshot, key for key.
    assert {k: v for k, v in raw.items() if not k.startswith("tag")} == json.loads(snap.to_json())


@pytest.mark.parametrize(
    "array, expected",
    [
        ([2026, 11, 21, 10, 23], dt.datetime(2026, 11, 21, 10, 23)),
        ([2026, 11, 21, 10, 23, 45], dt.datetime(2026, 11, 21, 10, 23, 45)),
        ([2026, 11, 21, 10, 23, 45, 752730000], dt.datetime(2026, 11, 21, 10, 23, 45, 752730)),
    ],
)
def test_tag_create_time_arrays_of_5_to_7_elements_round_trip(
    table: FakeTable, array: list[int], expected: dt.datetime
) -> None:
    snap, _ = table.append()
    d = json.loads(snap.to_json())
    d["tagCreateTime"] = array
    d["tagTimeRetained"] = 5.0
    tag = tag_from_json("x", json.dumps(d), "x")
    assert tag.create_time == expected and tag.time_retained_ms == 5000
    again = json.loads(tag_to_json(tag))
    assert again["tagCreateTime"] == array  # Jackson drops zero trailing second/nanos exactly like this
    assert re.search(r'"tagTimeRetained" : 5\.000000000', tag_to_json(tag))


# ------------------------------------------------------------------------------------------ create
def test_create_from_snapshot_id_and_from_tag(table: FakeTable) -> None:
    s1, _ = table.append()
    s2, _ = table.append()
    t = api(table)
    assert t.tags.create("before_fix", snapshot_id=1, time_retained="7 d").snapshot == s1
    assert t.tags.create("copy", tag="before_fix").snapshot == s1
    assert t.tags.create("latest").snapshot == s2
    with pytest.raises(SnapshotNotFoundError, match="Snapshot 9 does not exist"):
        t.tags.create("nope", snapshot_id=9)
    with pytest.raises(TagNotFoundError):
        t.tags.create("nope", tag="missing")
    with pytest.raises(TagError, match="at most one"):
        t.tags.create("nope", snapshot_id=1, tag="copy")


def test_create_from_expired_snapshot_uses_a_tag_that_preserved_it(table: FakeTable) -> None:
    s1, _ = table.append()
    for _ in range(3):
        table.append()
    t = api(table)
    t.tags.create("keeper", snapshot_id=1)
    expire_snapshots(table.store, retain_min=1, older_than=dt.datetime.now() + dt.timedelta(days=1))
    assert not table.snapshots().exists(1)
    assert t.tags.create("again", snapshot_id=1).snapshot == s1


def test_create_from_timestamp_takes_first_snapshot_at_or_after(table: FakeTable) -> None:
    """Paimon's ``create_tag_from_timestamp`` rule, chosen with ``timestamp_rule`` (the default is the table as of
    the instant, tests/metadata/test_branch_refs.py)."""
    snaps = [table.append()[0] for _ in range(3)]
    t = api(table)
    ts = snaps[1].time_millis
    assert t.tags.create("eod", timestamp=ts, timestamp_rule=AT_OR_AFTER).snapshot.id == snaps[1].id
    assert t.tags.create("eod2", timestamp=ts - 100_000, timestamp_rule=AT_OR_AFTER).snapshot.id == snaps[0].id
    as_dt = dt.datetime.fromtimestamp(snaps[2].time_millis / 1000)  # naive = local time
    assert t.tags.create("eod3", timestamp=as_dt, timestamp_rule=AT_OR_AFTER).snapshot.id >= snaps[1].id
    with pytest.raises(SnapshotNotFoundError, match="at or after"):
        t.tags.create("late", timestamp=snaps[2].time_millis + 10_000, timestamp_rule=AT_OR_AFTER)


def test_create_from_timestamp_considers_tags_of_expired_snapshots(table: FakeTable) -> None:
    s1, _ = table.append()
    for _ in range(3):
        table.append()
    api(table).tags.create("old", snapshot_id=1)
    expire_snapshots(table.store, retain_min=1, older_than=dt.datetime.now() + dt.timedelta(days=1))
    assert api(table).tags.create("from_ts", timestamp=s1.time_millis).snapshot == s1


def test_create_on_empty_table_and_duplicate_names(table: FakeTable) -> None:
    t = api(table)
    with pytest.raises(TagError, match="no snapshot"):
        t.tags.create("x")
    table.append()
    t.tags.create("x")
    with pytest.raises(TagError, match="already exists"):
        t.tags.create("x")
    table.append()
    assert t.tags.create("x", ignore_if_exists=True).snapshot.id == 1


@pytest.mark.parametrize("name", ["", "   ", "42", "a/b", " padded"])
def test_invalid_tag_names_are_refused(table: FakeTable, name: str) -> None:
    table.append()
    with pytest.raises(TagError):
        api(table).tags.create(name)
    with pytest.raises(TagError):
        validate_tag_name(name)


def test_default_time_retained_option_applies_to_tags_without_explicit_retention(tmp_path: Path) -> None:
    table = FakeTable(tmp_path / "t", options={"tag.default-time-retained": "2 h"})
    table.append()
    assert api(table).tags.create("d").time_retained_ms == 7_200_000
    assert api(table).tags.create("e", time_retained=dt.timedelta(minutes=1)).time_retained_ms == 60_000


def test_bad_retention_is_an_option_error(table: FakeTable) -> None:
    table.append()
    with pytest.raises(OptionError):
        api(table).tags.create("x", time_retained="soon")


# ------------------------------------------------------------------------------ rename / replace / delete / list
def test_rename_replace_delete_list(table: FakeTable) -> None:
    s1, names1 = table.append()
    s2, _ = table.append()
    t = api(table)
    t.tags.create("a", snapshot_id=1)
    t.tags.create("b", snapshot_id=2)
    t.tags.rename("a", "a2")
    assert [x.name for x in t.tags.list()] == ["a2", "b"]
    with pytest.raises(TagError, match="already exists"):
        t.tags.rename("a2", "b")
    with pytest.raises(TagNotFoundError):
        t.tags.rename("zz", "yy")
    with pytest.raises(TagError):
        t.tags.rename("a2", "123")
    t.tags.replace("a2", snapshot_id=2, time_retained="1 d")
    assert table.tags().get_tag("a2").snapshot == s2 and table.tags().get_tag("a2").time_retained_ms == 86_400_000
    with pytest.raises(TagNotFoundError, match="cannot be replaced"):
        t.tags.replace("new", snapshot_id=1)
    assert t.tags.delete("a2").deleted == ["a2"]
    assert [x.name for x in t.tags.list()] == ["b"]
    with pytest.raises(TagNotFoundError):
        t.tags.delete("a2")
    assert not t.tags.delete("a2", ignore_if_not_exists=True)
    assert set(names1) <= data_files_on_disk(table)  # deleting a tag deletes no data by default


def test_delete_tag_takes_one_name_and_returns_whether_it_existed(table: FakeTable) -> None:
    table.append()
    t = api(table)
    for n in ("x", "y", "z"):
        t.tags.create(n)
    assert t.tags.delete("x").deleted == ["x"] and t.tags.delete("y").deleted == ["y"]
    assert not t.tags.delete("x", ignore_if_not_exists=True)
    assert [x.name for x in t.tags.list()] == ["z"]


def test_tags_are_per_branch(table: FakeTable) -> None:
    table.append()
    api(table).tags.create("t1")
    table.branch_from_tag("b", "t1")
    api(table, "b").tags.create("on_b")
    assert [x.name for x in api(table).tags.list()] == ["t1"]
    assert [x.name for x in api(table, "b").tags.list()] == ["on_b", "t1"]


# ------------------------------------------------------------------------------------------ expiration
def test_expire_tags_by_retention_and_older_than(table: FakeTable) -> None:
    table.append()
    t = api(table)
    t.tags.create("short", time_retained="1 h")
    t.tags.create("long", time_retained="30 d")
    t.tags.create("forever")
    now = dt.datetime.now()
    assert expire_tags(table.store, now=now).deleted == []
    assert expire_tags(table.store, now=now + dt.timedelta(hours=2)).deleted == ["short"]
    assert [x.name for x in t.tags.list()] == ["forever", "long"]
    # older_than expires any tag created before it, even one without retention (file mtime), like Java.
    assert sorted(t.tags.expire(older_than=now + dt.timedelta(seconds=5)).deleted) == ["forever", "long"]
    assert t.tags.list() == []


def test_tag_expired_predicate() -> None:
    created = dt.datetime(2025, 1, 1)
    tag = Tag("x", None, created, 1000)  # type: ignore[arg-type]
    assert not tag.expired(created + dt.timedelta(milliseconds=1000))
    assert tag.expired(created + dt.timedelta(milliseconds=1001))


# ------------------------------------------------------------------------------------------ interop
try:
    from tests import oracle
except ImportError:  # pragma: no cover
    import oracle  # type: ignore[no-redef]


@pytest.mark.interop
def test_pypaimon_reads_tags_we_create(tmp_path: Path, oracle_python: str) -> None:
    wh = tmp_path / "wh"
    spec = oracle.table_spec([["id", "BIGINT"], ["dt", "STRING"]], partition_keys=["dt"])
    oracle.pypaimon_write(
        wh, "db.t", [[{"id": 1, "dt": "a"}], [{"id": 2, "dt": "b"}], [{"id": 3, "dt": "a"}]], create=spec
    )
    t = Table.open(str(wh / "db.db" / "t"))
    t.tags.create("ours_plain", snapshot_id=1)
    t.tags.create("ours_ttl", snapshot_id=2, time_retained="3 d")
    theirs = OracleBatch(wh)  # both reads and the inspection in one oracle process
    theirs.read("plain", "db.t", {"scan.tag-name": "ours_plain"}, impls=("pypaimon",))
    theirs.read("ttl", "db.t", {"scan.tag-name": "ours_ttl"}, impls=("pypaimon",))
    inspected = theirs.inspect("db.t", "pypaimon")
    theirs.run()
    assert theirs.tables["plain"]["pypaimon"].column("id").to_pylist() == [1]
    assert theirs.tables["ttl"]["pypaimon"].column("id").to_pylist() == [1, 2]
    assert theirs.results[inspected]["tags"] == {"ours_plain": 1, "ours_ttl": 2}


@pytest.mark.interop
def test_tags_pypaimon_writes_parse_with_our_tag_manager(tmp_path: Path, oracle_python: str) -> None:
    wh = tmp_path / "wh"
    spec = oracle.table_spec([["id", "BIGINT"], ["dt", "STRING"]], partition_keys=["dt"])
    oracle.pypaimon_write(wh, "db.t", [[{"id": 1, "dt": "a"}], [{"id": 2, "dt": "b"}]], create=spec)
    script = textwrap.dedent(f"""
        from pypaimon import CatalogFactory
        t = CatalogFactory.create({{"warehouse": {str(wh)!r}}}).get_table("db.t")
        t.create_tag("p_ttl", snapshot_id=1, time_retained="1d")
        t.create_tag("p_plain", snapshot_id=2)
    """)
    subprocess.run([oracle_python, "-c", script], check=True, capture_output=True, env=oracle._oracle_env())
    path = str(wh / "db.db" / "t")
    tags = Table.open(path).tags.list()
    assert [(x.name, x.snapshot_id) for x in tags] == [("p_ttl", 1), ("p_plain", 2)]
    ttl = tags[0]
    assert ttl.time_retained_ms == 86_400_000 and ttl.create_time is not None
    assert abs((dt.datetime.now() - ttl.create_time).total_seconds()) < 600
    # A tag without retention carries no create time in its file; listings show the file's modification time.
    plain_file = Path(TagManager(Table.open(path).store).tag_path("p_plain"))
    assert tags[1].time_retained_ms is None
    assert tags[1].create_time is not None
    assert abs(tags[1].create_time.timestamp() - plain_file.stat().st_mtime) < 1
    snaps = TagManager(Table.open(path).store)
    assert snaps.get("p_plain") == Table.open(path).snapshot(2)
    # And our reader reads through them.
    assert Table.open(path).scan(tag="p_ttl").to_arrow().column("id").to_pylist() == [1]


# ------------------------------------------------------------------------------ tags racing expiration
def _expire_all_but_latest(table: FakeTable) -> None:
    expire_snapshots(table.store, retain_min=1, retain_max=1, older_than=dt.datetime.now() + dt.timedelta(days=1))


def _expire_after_resolving(table: FakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """Force the race: a whole expiration runs after ``create_tag``/``replace_tag`` resolved its snapshot and
    before it writes the tag file."""
    real_resolve = tags_module.resolve_source

    def resolve_then_expire(*args: object, **kwargs: object) -> object:
        snapshot = real_resolve(*args, **kwargs)  # type: ignore[arg-type]
        _expire_all_but_latest(table)
        return snapshot

    monkeypatch.setattr(tags_module, "resolve_source", resolve_then_expire)


def test_tag_of_a_snapshot_expired_while_tagging_is_undone(table: FakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paimon's apache/paimon#9220, forced deterministically: ``create_tag`` resolves snapshot 1, then a whole
    expiration runs (it lists the tags before this one exists and deletes snapshot 1's files), then the tag file
    is written. Without the post-write check that tag would point at deleted files."""
    for dt_ in ("a", "b", "c"):
        table.commit([table.new_file(dt_)], overwrite=True)
    first_file = next(iter(table.live_names(table.snapshots().snapshot(1))))
    _expire_after_resolving(table, monkeypatch)
    with pytest.raises(TagError, match="snapshot 1 .* expired while the tag was being written"):
        tags_module.create_tag(table.store, "tag_s1", snapshot_id=1)
    assert not table.tags().exists("tag_s1")
    assert not table.snapshots().exists(1)
    assert first_file not in {p.name for p in Path(table.path).rglob("data-*")}, "the race really deleted its files"
    assert_all_roots_intact(table)


def test_replace_tag_racing_expiration_restores_the_previous_tag(
    table: FakeTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    for dt_ in ("a", "b", "c"):
        table.commit([table.new_file(dt_)], overwrite=True)
    keeper = tags_module.create_tag(table.store, "moving", snapshot_id=3)
    _expire_after_resolving(table, monkeypatch)
    with pytest.raises(TagError, match="expired while"):
        tags_module.replace_tag(table.store, "moving", snapshot_id=1)
    assert table.tags().get_tag("moving") == keeper
    assert_all_roots_intact(table)


def test_tagging_a_retained_snapshot_during_expiration_succeeds(
    table: FakeTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check only undoes tags whose snapshot is gone: an expiration racing the tag of a snapshot it keeps
    changes nothing."""
    for dt_ in ("a", "b", "c"):
        table.commit([table.new_file(dt_)], overwrite=True)
    _expire_after_resolving(table, monkeypatch)
    tag = tags_module.create_tag(table.store, "tag_s3", snapshot_id=3)
    assert tag.snapshot.id == 3 and table.tags().exists("tag_s3")
    assert_all_roots_intact(table)
