"""Snapshots (metadata/snapshots/snapshot.py, Java's `Snapshot`, `SnapshotManager`): JSON form, hint files, lookups and
error messages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pyspark_paimon.errors import BranchNotFoundError, CorruptMetadataError, SnapshotNotFoundError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.snapshots.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    SNAPSHOT_FIELD_KEYS,
    Snapshot,
    SnapshotManager,
    branch_path,
    require_branch_exists,
)

PYPAIMON_SNAPSHOTS = Path(__file__).parent / "fixtures" / "pypaimon" / "pk_snapshots"

# Java's serialization order of the fields every Paimon version writes (Snapshot.java's JSON creator order).
# Java's serialization order (Snapshot.java creator order).
JAVA_CORE_ORDER = [
    "version",
    "uuid",
    "id",
    "schemaId",
    "baseManifestList",
    "baseManifestListSize",
    "deltaManifestList",
    "deltaManifestListSize",
    "changelogManifestList",
    "changelogManifestListSize",
    "indexManifest",
    "commitUser",
    "writerVersion",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
    "totalRecordCount",
    "deltaRecordCount",
    "changelogRecordCount",
    "watermark",
    "statistics",
    "properties",
    "nextRowId",
    "operation",
]


def ordered_keys(text: str) -> list[str]:
    return list(json.loads(text, object_pairs_hook=lambda pairs: dict(pairs)).keys())


def make_snapshot(sid: int, **changes: object) -> Snapshot:
    base = Snapshot(
        id=sid,
        schema_id=0,
        base_manifest_list=f"manifest-list-b-{sid}",
        delta_manifest_list=f"manifest-list-d-{sid}",
        commit_user="user-1",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind="APPEND",
        time_millis=1000 * sid,
        total_record_count=10 * sid,
        delta_record_count=10,
        base_manifest_list_size=100,
        delta_manifest_list_size=200,
        next_row_id=0,
        uuid=f"uuid-{sid}",
        writer_version="test",
    )
    return base.with_changes(**changes) if changes else base


def full_snapshot() -> Snapshot:
    return Snapshot(
        id=7,
        schema_id=2,
        base_manifest_list="manifest-list-a-0",
        delta_manifest_list="manifest-list-a-1",
        commit_user="u",
        commit_identifier=42,
        commit_kind="COMPACT",
        time_millis=1795256648745,
        total_record_count=5,
        delta_record_count=-2,
        version=3,
        base_manifest_list_size=1338,
        delta_manifest_list_size=1339,
        changelog_manifest_list="manifest-list-a-changelog",
        changelog_manifest_list_size=1348,
        index_manifest="index-manifest-x-0",
        changelog_record_count=2,
        watermark=-9223372036854775808,
        statistics="stats-1",
        properties={"k": "v", "a": "b"},
        next_row_id=17,
        operation="WRITE",
        uuid="4786-uuid",
        writer_version="pyspark-paimon-0.1.0",
    )


@pytest.fixture
def table(tmp_path: Path) -> tuple[FileIO, str]:
    return FileIO.for_uri(str(tmp_path / "db.db" / "t"))


@pytest.fixture
def manager(table: tuple[FileIO, str]) -> SnapshotManager:
    return SnapshotManager(*table)


def put_snapshots(
    manager: SnapshotManager,
    ids: list[int],
    latest_hint: str | bytes | None = None,
    earliest_hint: str | bytes | None = None,
) -> None:
    """Write snapshot files directly (no hint), then the hints exactly as given."""
    for sid in ids:
        manager.fileio.write_bytes(manager.snapshot_path(sid), make_snapshot(sid).to_json().encode())
    for name, hint in (("LATEST", latest_hint), ("EARLIEST", earliest_hint)):
        if hint is not None:
            manager.fileio.write_bytes(
                f"{manager.snapshot_dir}/{name}", hint if isinstance(hint, bytes) else hint.encode()
            )


# --------------------------------------------------------------------------------------------- JSON form
def test_json_round_trip_of_every_field() -> None:
    s = full_snapshot()
    text = s.to_json()
    back = Snapshot.from_json(text)
    assert back == s
    assert back.to_json() == text, "serialization is deterministic"
    keys = ordered_keys(text)
    assert set(keys) == SNAPSHOT_FIELD_KEYS, "every known field is written when set"


def test_json_uses_java_key_order_and_pretty_printer() -> None:
    text = full_snapshot().to_json()
    keys = ordered_keys(text)
    core = [k for k in keys if k in JAVA_CORE_ORDER]
    assert core == JAVA_CORE_ORDER
    # Jackson's default pretty printer: two-space indent and " : " between key and value.
    assert text.startswith('{\n  "version" : 3,\n  "uuid" : ')
    assert '"commitIdentifier" : 42' in text


def test_json_omits_unset_optional_fields() -> None:
    s = Snapshot(
        id=1,
        schema_id=0,
        base_manifest_list="b",
        delta_manifest_list="d",
        commit_user="u",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind="APPEND",
        time_millis=5,
        total_record_count=0,
        delta_record_count=0,
        properties={},
    )
    d = json.loads(s.to_json())
    assert list(d) == [
        "version",
        "id",
        "schemaId",
        "baseManifestList",
        "deltaManifestList",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "totalRecordCount",
        "deltaRecordCount",
    ]
    assert d["commitIdentifier"] == 9223372036854775807, "Long.MAX_VALUE survives as an exact integer"
    assert "properties" not in d, "Java writes null for empty properties, i.e. omits them"


def test_unknown_keys_are_kept_in_extra_and_written_back() -> None:
    original = json.loads(make_snapshot(3).to_json())
    original["totalFileSize"] = 12345
    original["futureThing"] = {"nested": [1, 2, {"x": None}]}
    text = json.dumps(original, indent=2)
    s = Snapshot.from_json(text, "snapshot-3")
    assert s.extra == {"totalFileSize": 12345, "futureThing": {"nested": [1, 2, {"x": None}]}}
    assert s.total_record_count == 30 and s.uuid == "uuid-3"
    again = json.loads(s.to_json())
    assert again == original, "copying a snapshot (tags, branches) loses nothing"
    assert ordered_keys(s.to_json())[-2:] == ["totalFileSize", "futureThing"]
    # extra does not take part in equality: it is not state our code acts on
    assert s == make_snapshot(3)


def test_java_test_json_with_nulls_parses() -> None:
    """Java's own SnapshotTest input: null manifest lists and user, unknown key."""
    text = """{
      "version" : 3, "id" : 5, "schemaId" : 0, "baseManifestList" : null, "deltaManifestList" : null,
      "changelogManifestList" : null, "commitUser" : null, "commitIdentifier" : 0, "commitKind" : "APPEND",
      "timeMillis" : 1234, "totalRecordCount" : null, "deltaRecordCount" : null, "unknownKey" : 22222 }"""
    s = Snapshot.from_json(text)
    assert (s.id, s.commit_kind, s.time_millis, s.uuid) == (5, "APPEND", 1234, None)
    assert s.extra == {"unknownKey": 22222}


def test_parse_pypaimon_snapshots() -> None:
    expected = {1: ("APPEND", 10, 10), 2: ("APPEND", 16, 6), 3: ("OVERWRITE", 11, -5)}
    for sid, (kind, total, delta) in expected.items():
        path = PYPAIMON_SNAPSHOTS / f"snapshot-{sid}"
        raw = json.loads(path.read_text())
        s = Snapshot.from_json(path.read_text(), str(path))
        assert (s.id, s.commit_kind, s.total_record_count, s.delta_record_count) == (sid, kind, total, delta)
        assert s.version == 3 and s.schema_id == 0
        assert s.commit_identifier == BATCH_COMMIT_IDENTIFIER
        assert s.writer_version.startswith("python-2.1.0")
        assert s.uuid == raw["uuid"] and s.base_manifest_list == raw["baseManifestList"]
        assert s.base_manifest_list_size == raw["baseManifestListSize"]
        assert s.next_row_id is None, "pypaimon writes nextRowId only with row tracking"
        assert s.extra == {}
        assert json.loads(s.to_json()) == raw, "re-serializing keeps every key and value"


def test_pypaimon_snapshot_directory(tmp_path: Path) -> None:
    table = tmp_path / "t"
    shutil.copytree(PYPAIMON_SNAPSHOTS, table / "snapshot")
    m = SnapshotManager(*FileIO.for_uri(str(table)))
    assert m.list_ids() == [1, 2, 3]
    assert m.latest_id() == 3
    assert m.earliest_id() == 1, "pypaimon never writes EARLIEST; listing finds it"
    assert [s.id for s in m.snapshots()] == [1, 2, 3]
    assert m.latest().commit_kind == "OVERWRITE"


# --------------------------------------------------------------------------------------------- hints
def test_empty_table(manager: SnapshotManager) -> None:
    assert manager.list_ids() == []
    assert manager.latest_id() is None and manager.earliest_id() is None and manager.latest() is None
    assert list(manager.snapshots()) == []


def test_valid_latest_hint_is_trusted_without_listing(table: tuple[FileIO, str]) -> None:
    class CountingFileIO(FileIO):
        listings = 0

        def list_status(self, directory: str):  # type: ignore[override]
            CountingFileIO.listings += 1
            return super().list_status(directory)

    fio, path = table
    m = SnapshotManager(CountingFileIO(fio.protocol), path)
    put_snapshots(m, [1, 2, 3], latest_hint="3", earliest_hint="1")
    CountingFileIO.listings = 0
    assert m.latest_id() == 3 and m.earliest_id() == 1
    assert CountingFileIO.listings == 0, "a valid hint saves listing the snapshot directory"


@pytest.mark.parametrize(
    "hint, expected",
    [
        (None, 4),  # hint missing
        ("4", 4),  # valid
        ("3", 4),  # stale: snapshot-4 exists
        ("1", 4),  # stale by several
        ("9", 4),  # ahead of the files (snapshot-9 does not exist)
        ("", 4),
        ("abc", 4),
        ("-1", 4),
        (b"\xff\xfe", 4),  # unreadable
        ("4\n", 4),  # trailing newline tolerated
    ],
)
def test_latest_hint_fallbacks(manager: SnapshotManager, hint: str | bytes | None, expected: int) -> None:
    put_snapshots(manager, [2, 3, 4], latest_hint=hint)
    assert manager.latest_id() == expected
    assert manager.latest().id == expected


def test_latest_hint_pointing_at_deleted_snapshot(manager: SnapshotManager) -> None:
    put_snapshots(manager, [1, 2, 3], latest_hint="3")
    manager.fileio.delete(manager.snapshot_path(3))  # e.g. a rollback removed it and crashed before the hint
    assert manager.latest_id() == 2


def test_latest_hint_on_dir_without_snapshots(manager: SnapshotManager) -> None:
    put_snapshots(manager, [], latest_hint="5")
    assert manager.latest_id() is None


@pytest.mark.parametrize(
    "hint, expected",
    [
        (None, 3),
        ("3", 3),
        ("4", 3),  # missing; valid; stale (snapshot-3 is still there)
        ("1", 3),
        ("2", 3),  # point at expired snapshots
        ("junk", 3),
        (b"\x80", 3),
    ],
)
def test_earliest_hint_fallbacks(manager: SnapshotManager, hint: str | bytes | None, expected: int) -> None:
    put_snapshots(manager, [3, 4, 5], earliest_hint=hint)
    assert manager.earliest_id() == expected


def test_listing_ignores_other_files(manager: SnapshotManager) -> None:
    put_snapshots(manager, [1, 10, 2], latest_hint="10", earliest_hint="1")
    fio = manager.fileio
    for name in ("snapshot-abc", "snapshot-", ".snapshot-11.1234.tmp", "snapshot-12.tmp", "other"):
        fio.write_bytes(f"{manager.snapshot_dir}/{name}", b"{}")
    assert manager.list_ids() == [1, 2, 10], "ids sort numerically, not as strings"
    fio.delete(f"{manager.snapshot_dir}/LATEST")
    assert manager.latest_id() == 10


# --------------------------------------------------------------------------------------------- writing
def test_try_commit_creates_once_and_moves_latest(manager: SnapshotManager) -> None:
    assert manager.try_commit(make_snapshot(1)) is True
    assert manager.fileio.read_bytes(f"{manager.snapshot_dir}/LATEST") == b"1", "decimal id, no newline"
    assert manager.try_commit(make_snapshot(2)) is True
    assert manager.fileio.read_text(f"{manager.snapshot_dir}/LATEST") == "2"
    loser = make_snapshot(2, commit_user="someone-else")
    assert manager.try_commit(loser) is False
    assert manager.snapshot(2).commit_user == "user-1", "the existing snapshot is never overwritten"
    assert manager.latest_id() == 2 and manager.list_ids() == [1, 2]
    assert sorted(manager.fileio.list_names(manager.snapshot_dir)) == ["LATEST", "snapshot-1", "snapshot-2"]


def test_earliest_hint_written(manager: SnapshotManager) -> None:
    put_snapshots(manager, [4, 5])
    manager.commit_earliest_hint(4)
    assert manager.fileio.read_text(f"{manager.snapshot_dir}/EARLIEST") == "4"
    assert manager.earliest_id() == 4


def test_on_memory_file_system() -> None:
    fio, path = FileIO.for_uri("memory://snapshot-test/t")
    try:
        m = SnapshotManager(fio, path)
        assert m.try_commit(make_snapshot(1)) and m.try_commit(make_snapshot(2))
        assert not m.try_commit(make_snapshot(2))
        assert m.latest_id() == 2 and m.earliest_id() == 1 and m.snapshot(1) == make_snapshot(1)
    finally:
        fio.delete_dir(path)


def test_time_lookups(manager: SnapshotManager) -> None:
    put_snapshots(manager, [1, 2, 3])  # timeMillis 1000, 2000, 3000
    assert manager.earlier_or_equal_time_millis(999) is None
    assert manager.earlier_or_equal_time_millis(2000).id == 2
    assert manager.earlier_or_equal_time_millis(2999).id == 2
    assert manager.earlier_or_equal_time_millis(10**13).id == 3
    assert manager.later_or_equal_time_millis(0).id == 1
    assert manager.later_or_equal_time_millis(2001).id == 3
    assert manager.later_or_equal_time_millis(3001) is None


# --------------------------------------------------------------------------------------------- errors
def test_snapshot_not_found_lists_range(manager: SnapshotManager) -> None:
    put_snapshots(manager, [3, 4, 5, 6])
    with pytest.raises(SnapshotNotFoundError) as info:
        manager.snapshot(2)
    msg = str(info.value)
    assert "Snapshot 2" in msg and "snapshots 3..6" in msg and "'main'" in msg and manager.table_path in msg
    with pytest.raises(SnapshotNotFoundError, match="snapshots 3..6"):
        manager.snapshot(7)


def test_snapshot_not_found_on_empty_table(manager: SnapshotManager) -> None:
    with pytest.raises(SnapshotNotFoundError, match="no snapshots"):
        manager.snapshot(1)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{\n  "version" : 3,\n  "id" : 1,\n  "schemaId" : 0,\n  "baseManif',  # truncated mid-write
        b"[1, 2]",
        b"42",
        b"\xff\xfe\x00garbage",  # not even UTF-8
        b'{"version": 3, "id": 1, "schemaId": 0}',  # required keys missing
    ],
)
def test_corrupt_snapshot_names_the_file(manager: SnapshotManager, content: bytes) -> None:
    put_snapshots(manager, [1])
    manager.fileio.write_bytes(manager.snapshot_path(2), content)
    with pytest.raises(CorruptMetadataError) as info:
        manager.snapshot(2)
    assert manager.snapshot_path(2) in str(info.value)
    assert manager.snapshot(1).id == 1


def test_truncated_real_snapshot(manager: SnapshotManager) -> None:
    text = (PYPAIMON_SNAPSHOTS / "snapshot-2").read_bytes()
    for cut in range(0, len(text) - 2, 7):
        manager.fileio.write_bytes(manager.snapshot_path(2), text[:cut])
        with pytest.raises(CorruptMetadataError, match="snapshot-2"):
            manager.snapshot(2)


def test_missing_required_key_is_named() -> None:
    d = json.loads(make_snapshot(1).to_json())
    del d["commitKind"]
    with pytest.raises(CorruptMetadataError, match=r"/x/snapshot-1.*commitKind"):
        Snapshot.from_dict(d, "/x/snapshot-1")


# --------------------------------------------------------------------------------------------- branches
def test_branch_paths(table: tuple[FileIO, str]) -> None:
    fio, path = table
    assert branch_path(path, "main") == path and branch_path(path, "") == path
    assert branch_path(path, "b1") == f"{path}/branch/branch-b1"
    assert SnapshotManager(fio, path, None).snapshot_dir == f"{path}/snapshot"  # type: ignore[arg-type]
    m = SnapshotManager(fio, path, "b1")
    assert m.branch == "b1" and m.snapshot_dir == f"{path}/branch/branch-b1/snapshot"
    assert m.try_commit(make_snapshot(1))
    assert SnapshotManager(fio, path).latest_id() is None, "branches keep their own snapshots"


def test_require_branch_exists(table: tuple[FileIO, str]) -> None:
    fio, path = table
    require_branch_exists(fio, path, "main")
    with pytest.raises(BranchNotFoundError, match="'dev'"):
        require_branch_exists(fio, path, "dev")
    fio.mkdirs(f"{path}/branch/branch-dev/schema")
    require_branch_exists(fio, path, "dev")


def test_repr_names_the_snapshot_not_its_manifests() -> None:
    """``t.latest_snapshot()``, ``t.snapshots()`` and anything holding a snapshot print one readable line each."""
    text = repr([make_snapshot(7)])
    assert text.startswith("[Snapshot(id=7, schema_id=0, commit_kind=") and "time_millis=" in text
    assert "manifest" not in text and "commit_user" not in text and len(text) < 160
