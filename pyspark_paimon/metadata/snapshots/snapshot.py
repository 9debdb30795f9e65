"""Snapshots (``snapshot/snapshot-N``), their LATEST/EARLIEST hints, and where a branch keeps them.

A snapshot is the unit of atomicity: a commit is visible exactly when its snapshot file exists. Hint files
are advisory (Paimon's own writers do not always keep EARLIEST), so every lookup that trusts a hint checks
it against the files and falls back to listing.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from pyspark_paimon.errors import BranchNotFoundError, CorruptMetadataError, PaimonError, SnapshotNotFoundError
from pyspark_paimon.metadata.io.fileio import FileIO

MAIN_BRANCH = "main"
BATCH_COMMIT_IDENTIFIER = 2**63 - 1
SNAPSHOT_PREFIX = "snapshot-"
LATEST = "LATEST"
EARLIEST = "EARLIEST"
_COMMIT_CLOCK_SLACK_MS = 60_000
_LATEST_ATTEMPTS = 5
log = logging.getLogger(__name__)


BRANCH_DIR = "branch"
BRANCH_DIR_PREFIX = "branch-"


def branch_path(table_path: str, branch: str) -> str:
    """Root of a branch's own metadata: the table root for main, ``branch/branch-<b>`` otherwise."""
    if not branch or branch == MAIN_BRANCH:
        return table_path
    return f"{table_path}/{BRANCH_DIR}/{BRANCH_DIR_PREFIX}{branch}"


def branch_dirs(fileio: FileIO, table_path: str) -> dict[str, int]:
    """Every ``branch/branch-<b>`` directory (``main`` excluded), by branch name, with its modification time
    in epoch ms: the one listing of a table's branches (with or without snapshots)."""
    out = {}
    for status in fileio.list_status(f"{table_path}/{BRANCH_DIR}"):
        if status.is_dir and status.name.startswith(BRANCH_DIR_PREFIX) and len(status.name) > len(BRANCH_DIR_PREFIX):
            out[status.name[len(BRANCH_DIR_PREFIX) :]] = status.mtime_millis
    return dict(sorted(out.items()))


# Java's JSON key for each field, in Java's serialization order (Snapshot.java creator order).
_JSON_KEYS: list[tuple[str, str]] = [
    ("version", "version"),
    ("uuid", "uuid"),
    ("id", "id"),
    ("schema_id", "schemaId"),
    ("base_manifest_list", "baseManifestList"),
    ("base_manifest_list_size", "baseManifestListSize"),
    ("delta_manifest_list", "deltaManifestList"),
    ("delta_manifest_list_size", "deltaManifestListSize"),
    ("changelog_manifest_list", "changelogManifestList"),
    ("changelog_manifest_list_size", "changelogManifestListSize"),
    ("index_manifest", "indexManifest"),
    ("commit_user", "commitUser"),
    ("writer_version", "writerVersion"),
    ("commit_identifier", "commitIdentifier"),
    ("commit_kind", "commitKind"),
    ("time_millis", "timeMillis"),
    ("total_record_count", "totalRecordCount"),
    ("delta_record_count", "deltaRecordCount"),
    ("changelog_record_count", "changelogRecordCount"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("next_row_id", "nextRowId"),
    ("operation", "operation"),
]
_REQUIRED = {
    "id",
    "schemaId",
    "baseManifestList",
    "deltaManifestList",
    "commitUser",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
}


@dataclass(frozen=True)
class Snapshot:
    """One ``snapshot-N`` file (Java's ``Snapshot``). Its repr names the snapshot (id, schema, kind, time, record
    counts), not its manifest lists, so results that hold one (compaction, chain compaction, ...) print readably."""

    id: int
    schema_id: int
    base_manifest_list: str = field(repr=False)
    delta_manifest_list: str = field(repr=False)
    commit_user: str = field(repr=False)
    commit_identifier: int = field(repr=False)
    commit_kind: str
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    version: int = field(default=3, repr=False)
    base_manifest_list_size: int | None = field(default=None, repr=False)
    delta_manifest_list_size: int | None = field(default=None, repr=False)
    changelog_manifest_list: str | None = field(default=None, repr=False)
    changelog_manifest_list_size: int | None = field(default=None, repr=False)
    index_manifest: str | None = field(default=None, repr=False)
    changelog_record_count: int | None = field(default=None, repr=False)
    watermark: int | None = field(default=None, repr=False)
    statistics: str | None = field(default=None, repr=False)
    properties: dict[str, str] | None = field(default=None, repr=False)
    next_row_id: int | None = field(default=None, repr=False)
    operation: str | None = field(default=None, repr=False)
    uuid: str | None = field(default=None, repr=False)
    writer_version: str | None = field(default=None, repr=False)
    # Keys we do not know (a newer Paimon) are kept so that copying a snapshot (tags, branches) loses nothing.
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, key in _JSON_KEYS:
            value = getattr(self, attr)
            if value is None or (attr == "properties" and not value):
                continue
            out[key] = value
        out.update(self.extra)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, separators=(",", " : "))

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "snapshot") -> "Snapshot":
        missing = _REQUIRED - d.keys()
        if missing:
            raise CorruptMetadataError(
                f"{source} is not a Paimon snapshot: missing {sorted(missing)}. Restore the file from a backup "
                "or roll the table back to an earlier snapshot."
            )
        known = {key: attr for attr, key in _JSON_KEYS}
        kwargs: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in d.items():
            if key in known:
                kwargs[known[key]] = value
            else:
                extra[key] = value
        kwargs.setdefault("version", 1)
        return cls(extra=extra, **kwargs)

    @classmethod
    def from_json(cls, text: str, source: str = "snapshot") -> "Snapshot":
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise CorruptMetadataError(
                f"{source} is not valid JSON ({e}); the file is truncated or corrupt. Restore it from a backup "
                "or roll the table back to an earlier snapshot."
            ) from e
        if not isinstance(d, dict):
            raise CorruptMetadataError(f"{source} does not hold a JSON object.")
        return cls.from_dict(d, source)

    def with_changes(self, **changes: Any) -> "Snapshot":
        return replace(self, **changes)


SNAPSHOT_FIELD_KEYS = frozenset(key for _, key in _JSON_KEYS)
SNAPSHOT_REQUIRED_KEYS = frozenset(_REQUIRED)  # what a snapshot (or tag) file must hold


class SnapshotManager:
    """Finds and writes the snapshots of one branch of one table."""

    def __init__(self, fileio: FileIO, table_path: str, branch: str = MAIN_BRANCH):
        self.fileio = fileio
        self.table_path = table_path
        self.branch = branch or MAIN_BRANCH
        self.branch_root = branch_path(table_path, self.branch)
        self.snapshot_dir = f"{self.branch_root}/snapshot"

    def snapshot_path(self, snapshot_id: int) -> str:
        return f"{self.snapshot_dir}/{SNAPSHOT_PREFIX}{snapshot_id}"

    def list_ids(self) -> list[int]:
        ids = []
        for name in self.fileio.list_names(self.snapshot_dir):
            if name.startswith(SNAPSHOT_PREFIX) and name[len(SNAPSHOT_PREFIX) :].isdigit():
                ids.append(int(name[len(SNAPSHOT_PREFIX) :]))
        return sorted(ids)

    def _read_hint(self, name: str) -> int | None:
        try:
            text = self.fileio.read_text(f"{self.snapshot_dir}/{name}").strip()
        except (OSError, PaimonError, UnicodeDecodeError):
            # Missing, unreadable, or replaced by another writer while we read it (object stores): hints are
            # advisory, so any failure to read one means "list the directory instead".
            return None
        return int(text) if text.isascii() and text.isdigit() else None

    def latest_id(self) -> int | None:
        hint = self._read_hint(LATEST)
        if (
            hint is not None
            and self.fileio.exists(self.snapshot_path(hint))
            and not self.fileio.exists(self.snapshot_path(hint + 1))
        ):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self, repair_hint: bool = False) -> int | None:
        """The earliest snapshot id: the ``EARLIEST`` hint when it checks out, else from a listing. With
        ``repair_hint`` a missing or stale hint is rewritten from the listing, so that the next call (the
        maintenance after every commit asks) costs small reads instead of a listing."""
        hint = self._read_hint(EARLIEST)
        if (
            hint is not None
            and self.fileio.exists(self.snapshot_path(hint))
            and not self.fileio.exists(self.snapshot_path(hint - 1))
        ):
            return hint
        ids = self.list_ids()
        if ids and repair_hint:
            self.commit_earliest_hint(ids[0])
        return ids[0] if ids else None

    def exists(self, snapshot_id: int) -> bool:
        return self.fileio.exists(self.snapshot_path(snapshot_id))

    def snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.snapshot_path(snapshot_id)
        try:
            data = self.fileio.read_bytes(path)
        except FileNotFoundError:
            ids = self.list_ids()
            have = f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshots"
            raise SnapshotNotFoundError(
                f"Snapshot {snapshot_id} does not exist on branch '{self.branch}' of {self.table_path} "
                f"(it has {have}); it was never written or has expired. Pick an existing snapshot id, or a tag."
            ) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptMetadataError(
                f"{path} is not UTF-8 text ({e}); the file is corrupt. Restore it from a backup or roll the table "
                "back to an earlier snapshot."
            ) from e
        return Snapshot.from_json(text, path)

    def latest_hint(self) -> int | None:
        """The ``LATEST`` hint as written (unchecked), or None."""
        return self._read_hint(LATEST)

    def latest(self) -> Snapshot | None:
        """The newest snapshot. Snapshot ids can be reused (rollback, branch fast-forward rewrite
        ``snapshot-N``), so after reading the file we check that it is still the newest one and retry
        otherwise; likewise when it vanished between finding its id and reading it. A reader therefore never
        returns a snapshot that was superseded before it read it."""
        for attempt in range(_LATEST_ATTEMPTS):
            last = attempt == _LATEST_ATTEMPTS - 1
            # The hint first, checked by reading its snapshot and looking for the next one: three requests on an
            # object store where latest_id() and then reading would take five.
            hint = self._read_hint(LATEST)
            snap = None
            if hint is not None:
                try:
                    snap = self.snapshot(hint)
                except SnapshotNotFoundError:  # the hint is ahead of the files, or its snapshot was removed
                    snap = None
            if snap is not None and not self.fileio.exists(self.snapshot_path(snap.id + 1)):
                return snap
            ids = self.list_ids()
            if not ids:
                return None
            try:
                snap = self.snapshot(ids[-1])
            except SnapshotNotFoundError:
                if last:
                    raise
                continue
            if not self.fileio.exists(self.snapshot_path(snap.id + 1)) or last:
                return snap
        return None  # pragma: no cover - the loop always returns or raises

    def snapshots(self) -> Iterator[Snapshot]:
        for sid in self.list_ids():
            try:
                yield self.snapshot(sid)
            except SnapshotNotFoundError:  # expired while we listed
                continue

    def commit_of(
        self, commit_user: str, not_before_millis: int | None = None, commit_identifier: int | None = None
    ) -> Snapshot | None:
        """The newest snapshot of this branch committed by ``commit_user``, or None: decides, after a failure,
        whether a job's files became part of the table (keep them, do not retry) or may be deleted.
        ``not_before_millis``: the job cannot have committed before then (when it started), so the search stops
        at older snapshots instead of reading the whole history (a minute of slack covers clock skew between
        writers). ``commit_identifier``: only a snapshot of that commit of the user (a stream commits every
        micro-batch as the same user, with the batch id as the identifier)."""
        floor = None if not_before_millis is None else not_before_millis - _COMMIT_CLOCK_SLACK_MS
        for sid in reversed(self.list_ids()):  # newest first: a job's own commit is usually near the head
            try:
                snap = self.snapshot(sid)
            except SnapshotNotFoundError:  # expired while we listed
                continue
            if snap.commit_user == commit_user and commit_identifier in (None, snap.commit_identifier):
                return snap
            if floor is not None and snap.time_millis < floor:
                return None
        return None

    def try_commit(self, snapshot: Snapshot) -> bool:
        """Create ``snapshot-N`` if absent; on success move the LATEST hint. False if N was taken.

        Once ``snapshot-N`` exists the commit has landed, so failing to write the hint afterwards is logged, not
        raised: readers check the hint against the files anyway, and raising would make the caller report a
        commit whose outcome is unknown although it is known."""
        if not self.fileio.try_create(self.snapshot_path(snapshot.id), snapshot.to_json().encode("utf-8")):
            return False
        try:
            self.commit_latest_hint(snapshot.id)
        except (OSError, PaimonError) as e:
            log.warning(
                "Snapshot %d of %s (branch '%s') was committed, but writing the LATEST hint failed: %s. "
                "Readers find the snapshot by listing; the next commit rewrites the hint.",
                snapshot.id,
                self.table_path,
                self.branch,
                e,
            )
        return True

    def commit_latest_hint(self, snapshot_id: int) -> None:
        self.fileio.write_bytes(f"{self.snapshot_dir}/{LATEST}", str(snapshot_id).encode())

    def commit_earliest_hint(self, snapshot_id: int) -> None:
        self.fileio.write_bytes(f"{self.snapshot_dir}/{EARLIEST}", str(snapshot_id).encode())

    def earlier_or_equal_time_millis(self, ts: int) -> Snapshot | None:
        """The latest snapshot committed at or before ``ts`` (time travel by timestamp)."""
        best = None
        for sid in self.list_ids():
            snap = self.snapshot(sid)
            if snap.time_millis <= ts:
                best = snap
            else:
                break
        return best

    def later_or_equal_time_millis(self, ts: int) -> Snapshot | None:
        """The first snapshot committed at or after ``ts`` (tag creation from a timestamp)."""
        for sid in self.list_ids():
            snap = self.snapshot(sid)
            if snap.time_millis >= ts:
                return snap
        return None


def now_millis() -> int:
    return int(time.time() * 1000)


def require_branch_exists(fileio: FileIO, table_path: str, branch: str) -> None:
    if branch and branch != MAIN_BRANCH and not fileio.exists(f"{branch_path(table_path, branch)}/schema"):
        raise BranchNotFoundError(
            f"Branch '{branch}' does not exist in {table_path}. Create it first (t.branches.create) or "
            "check the name; list branches with t.branches.list()."
        )


__all__ = [
    "Snapshot",
    "SnapshotManager",
    "branch_path",
    "MAIN_BRANCH",
    "BATCH_COMMIT_IDENTIFIER",
    "SNAPSHOT_FIELD_KEYS",
    "now_millis",
]
