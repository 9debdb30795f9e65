"""Branches (§1.1, §9.2): create, list, rename, drop, fast-forward and replace-main.

**Layout.** A branch keeps only its own metadata under ``<table>/branch/branch-<b>/`` (``schema/``,
``snapshot/``, ``tag/``); data files and manifests are shared with every other branch and always live in the
table root, so creating a branch copies a few small JSON files and nothing else. Writes to a branch continue
its snapshot ids from the fork snapshot (the branch holds a copy of it), exactly as Paimon does.

**Creation**, in the shapes Paimon writes (so Paimon, pypaimon and rust read our branches and we read theirs):

* from a tag: the tag file, the tagged snapshot (or, if that snapshot expired, the tag's content trimmed to
  snapshot fields: Paimon's fix #8748, still missing in pypaimon) and schemas ``0..tag.schemaId``;
* from a snapshot id (Paimon only allows tags, but the result has the same shape): that snapshot (or the
  copy a tag preserved) and schemas ``0..schemaId``;
* from the latest snapshot: that snapshot and *all* schemas (the branch starts as the table is now, including
  a column added since the last commit);
* empty: all schemas, no snapshot (the first commit on the branch is snapshot 1).

No ``LATEST`` hint is written at creation (Paimon writes none); snapshot lookups fall back to listing.

**Lineage file.** Paimon records nowhere where a branch came from, which is why its ``fast_forward`` cannot
tell whether main moved on after the fork and why its ``merge_branch`` refuses most tables ("without
persisted branch lineage metadata, we cannot reliably infer a fork point"). We write
``branch/branch-<b>/branch.json``::

    {"version": 1, "sourceBranch": "main", "sourceTag": "t1", "sourceSnapshotId": 42,
     "sourceSnapshotUuid": "…", "sourceSchemaId": 3, "createdAtMillis": 1754800000000,
     "createdBy": "pyspark-paimon"}

Paimon lists ``branch-*`` directories and reads only their ``schema/``, ``snapshot/`` and ``tag/``
subdirectories, so the extra file is invisible to it (and it moves with a rename and disappears with a drop,
Paimon's or ours). Branches made by Paimon or pypaimon have no lineage; everything here works without it and
falls back to the branch's earliest snapshot as the fork point.

**Fast-forward** (:meth:`BranchManager.fast_forward`) produces Paimon's on-disk result (§9.2): the target's
snapshots with id >= E (the branch's earliest snapshot) and schemas >= E.schemaId are replaced by the
branch's, its tags on those snapshots are replaced by the branch's tags, ``LATEST`` points at the branch head.
Unlike Paimon it is **safe by default**: it refuses (:class:`BranchConflictError`, listing what would be lost)
when the target holds anything the branch does not contain: a snapshot or tag from the fork point on whose
identity (``uuid``, else the whole snapshot) is not in the branch's history, a schema added after the fork,
a tag name the branch points elsewhere, or a target head older than the fork point (rolled back since).
``force=True`` discards those, as Paimon always does. Tags of the target that point at snapshots the branch
also contains are kept (Paimon deletes them; they remain valid, so keeping them loses nothing).

**What a concurrent reader of the target sees.** Nothing is ever half-copied from a reader's point of view:
the switch from the old head H to the branch head B is a single file operation, and every other step happens
where no reader of the latest snapshot looks. Snapshot ids are reused (the branch's snapshot k replaces the
target's snapshot k), so the order matters:

* B > H: first the branch's snapshots above H are created, highest first, *without* H+1; readers that follow
  ``LATEST`` (ours, Paimon's, pypaimon's: the hint is trusted while ``snapshot-<hint+1>`` is absent) still see
  H; readers that only list see B, which is complete. Creating ``snapshot-<H+1>`` (create-if-absent, so a
  concurrent commit to the target is detected rather than overwritten) is the switch. Only then are the
  target's own snapshots <= H that differ from the branch's overwritten (``force`` only).
* B <= H (``force``/replace only): everything below H is rewritten or deleted first while H stays the head,
  then ``LATEST`` moves to B and H is deleted: the switch.
* :meth:`SnapshotManager.latest` re-checks after reading a snapshot that it is still the head and retries
  otherwise, so a reader that resolved H just before the switch never returns a snapshot overwritten after
  it; a reader that already planned on H keeps working because manifests and data files are shared and
  nothing here deletes them.

Remaining limits, stated honestly: new schema files become visible just before the switch, so if the branch
evolved the schema a concurrent reader may for a moment see the *old* rows with the branch's new columns (as
NULL); with ``force``, schema files the two sides both changed are rewritten in place, which a reader
planning at that instant can observe; a commit to the target racing the fast-forward is detected (and the
fast-forward undone) only when it lands on ``H+1``, so stop writers to the target while publishing (Java's
fast-forward is not safe against them either). If the process dies midway, re-run the same call: the
branch's files are still there and the operation completes (main may show the new head with part of the
older history missing until then; do not write to it before re-running).

**Replace main** (:meth:`BranchManager.replace_main`) makes the target's snapshot, schema and tag directories
exact copies of the branch's (same publishing order), optionally after saving the previous target as a new
branch (a full copy of its snapshots, schemas and tags, so nothing the old main referenced becomes
unreachable).

**Drop** deletes the branch directory only; its data files are left to ``remove_orphan_files``, which (like
expiration) treats every snapshot and tag of every branch as live (``reachability.py``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Iterable

from pyspark_paimon.errors import (
    BranchConflictError,
    BranchError,
    BranchNotFoundError,
    SnapshotNotFoundError,
)
from pyspark_paimon.metadata.fileio import FileIO
from pyspark_paimon.metadata.identifier import validate_branch_name
from pyspark_paimon.metadata.options import (
    SCAN_FALLBACK_BRANCH,
    SCAN_FALLBACK_DELTA_BRANCH,
    SCAN_FALLBACK_SNAPSHOT_BRANCH,
)
from pyspark_paimon.metadata.schema import SchemaManager
from pyspark_paimon.metadata.snapshot import (
    EARLIEST,
    MAIN_BRANCH,
    SNAPSHOT_PREFIX,
    Snapshot,
    SnapshotManager,
    branch_dirs,
    branch_path,
    now_millis,
)
from pyspark_paimon.metadata.tags import TAG_PREFIX, TagManager, find_snapshot, tag_from_json

log = logging.getLogger(__name__)

LINEAGE_FILE = "branch.json"
SCHEMA_PREFIX = "schema-"
LINEAGE_VERSION = 1
# Options that name another branch a read depends on; dropping or renaming that branch breaks the read.
_BRANCH_OPTIONS = (SCAN_FALLBACK_BRANCH, SCAN_FALLBACK_SNAPSHOT_BRANCH, SCAN_FALLBACK_DELTA_BRANCH)


# ------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class BranchLineage:
    """Where a branch came from (``branch.json``). ``source_snapshot_id`` is None for an empty branch."""

    source_branch: str
    source_tag: str | None
    source_snapshot_id: int | None
    source_snapshot_uuid: str | None
    source_schema_id: int | None
    created_at_millis: int
    created_by: str = "pyspark-paimon"

    def to_json(self) -> str:
        return json.dumps({
            "version": LINEAGE_VERSION,
            "sourceBranch": self.source_branch,
            "sourceTag": self.source_tag,
            "sourceSnapshotId": self.source_snapshot_id,
            "sourceSnapshotUuid": self.source_snapshot_uuid,
            "sourceSchemaId": self.source_schema_id,
            "createdAtMillis": self.created_at_millis,
            "createdBy": self.created_by,
        }, indent=2)

    @classmethod
    def from_json(cls, text: str) -> "BranchLineage":
        d = json.loads(text)
        return cls(str(d.get("sourceBranch") or MAIN_BRANCH), d.get("sourceTag"),
                   _opt_int(d.get("sourceSnapshotId")), d.get("sourceSnapshotUuid"),
                   _opt_int(d.get("sourceSchemaId")), int(d.get("createdAtMillis") or 0),
                   str(d.get("createdBy") or ""))

    def with_source_branch(self, name: str) -> "BranchLineage":
        return BranchLineage(name, self.source_tag, self.source_snapshot_id, self.source_snapshot_uuid,
                             self.source_schema_id, self.created_at_millis, self.created_by)


def _opt_int(v: object) -> int | None:
    return None if v is None else int(v)  # type: ignore[call-overload]


@dataclass(frozen=True)
class BranchInfo:
    """One branch, as ``BranchManager.list_branches`` and the ``$branches`` system table report it.

    ``create_time_millis`` comes from the lineage file, or (for branches made by Paimon/pypaimon, which have
    none) from the branch directory's modification time, as Java's ``$branches`` does. The ``source_*``
    fields are None without lineage.
    """

    name: str
    create_time_millis: int
    source_branch: str | None = None
    source_tag: str | None = None
    source_snapshot_id: int | None = None
    latest_snapshot_id: int | None = None
    has_lineage: bool = False


@dataclass
class PublishResult:
    """What :meth:`BranchManager.fast_forward` / :meth:`BranchManager.replace_main` changed on the target."""

    branch: str
    target: str
    previous_latest_id: int | None
    latest_id: int | None
    created_snapshots: list[int] = field(default_factory=list)
    replaced_snapshots: list[int] = field(default_factory=list)
    deleted_snapshots: list[int] = field(default_factory=list)
    copied_tags: list[str] = field(default_factory=list)
    deleted_tags: list[str] = field(default_factory=list)
    copied_schemas: list[int] = field(default_factory=list)
    deleted_schemas: list[int] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)  # what force/replace threw away (empty when safe)
    kept_previous_as: str | None = None


# ------------------------------------------------------------------------------------------- helpers
def _identity(s: Snapshot) -> tuple:
    """Same commit? The uuid when the snapshot has one, else the whole snapshot."""
    if s.uuid:
        return ("uuid", s.id, s.uuid)
    return ("json", s.id, json.dumps(s.to_dict(), sort_keys=True))


def _describe(s: Snapshot) -> str:
    delta = f", {s.delta_record_count:+d} rows" if s.delta_record_count is not None else ""
    return f"snapshot {s.id} ({s.commit_kind} at {s.time_millis}{delta})"


def _trimmed_snapshot_json(tag_text: str, source: str) -> bytes:
    """A tag file's content as a plain snapshot (the tag keys removed)."""
    return tag_from_json("x", tag_text, source).snapshot.to_json().encode("utf-8")


# ------------------------------------------------------------------------------------------- manager
class BranchManager:
    """The branches of one table."""

    def __init__(self, fileio: FileIO, table_path: str):
        self.fileio = fileio
        self.table_path = table_path.rstrip("/") or "/"

    # -- paths and lookups -------------------------------------------------------------------------
    def branch_dir(self, name: str) -> str:
        return branch_path(self.table_path, name)

    def _dirs(self, name: str) -> tuple[str, str, str]:
        root = self.branch_dir(name)
        return f"{root}/schema", f"{root}/snapshot", f"{root}/tag"

    def exists(self, name: str) -> bool:
        if name == MAIN_BRANCH:
            return True
        return self.fileio.exists(self.branch_dir(name))

    def names(self) -> list[str]:
        """Names of the ``branch/branch-*`` directories (``main`` excluded)."""
        return list(branch_dirs(self.fileio, self.table_path))

    def lineage(self, name: str) -> BranchLineage | None:
        if name == MAIN_BRANCH:
            return None
        try:
            text = self.fileio.read_text(f"{self.branch_dir(name)}/{LINEAGE_FILE}")
        except FileNotFoundError:
            return None
        try:
            return BranchLineage.from_json(text)
        except (ValueError, TypeError, AttributeError) as e:
            log.warning("ignoring unreadable lineage file of branch '%s' in %s: %s", name, self.table_path, e)
            return None

    def info(self, name: str) -> BranchInfo:
        self._require(name)
        return self._info(name, None)

    def _info(self, name: str, mtime: int | None) -> BranchInfo:
        lin = self.lineage(name)
        if lin is not None and lin.created_at_millis:
            created = lin.created_at_millis
        elif mtime is not None:
            created = mtime
        else:
            created = branch_dirs(self.fileio, self.table_path).get(name, 0)
        latest = SnapshotManager(self.fileio, self.table_path, name).latest_id()
        if lin is None:
            return BranchInfo(name, created, latest_snapshot_id=latest)
        return BranchInfo(name, created, lin.source_branch, lin.source_tag, lin.source_snapshot_id, latest, True)

    def list_branches(self) -> list[BranchInfo]:
        """Every branch but ``main``, by name (what ``$branches`` shows)."""
        return [self._info(name, mtime) for name, mtime in branch_dirs(self.fileio, self.table_path).items()]

    def _require(self, name: str) -> None:
        if not self.exists(name):
            raise BranchNotFoundError(
                f"Branch '{name}' does not exist in {self.table_path}. Existing branches: "
                f"{self.names() or 'none'}.")

    def _schema_ids(self, branch: str) -> list[int]:
        ids = []
        for n in self.fileio.list_names(self._dirs(branch)[0]):
            if n.startswith(SCHEMA_PREFIX) and n[len(SCHEMA_PREFIX):].isdigit():
                ids.append(int(n[len(SCHEMA_PREFIX):]))
        return sorted(ids)

    def _schema_bytes(self, branch: str, sid: int) -> bytes:
        return self.fileio.read_bytes(f"{self._dirs(branch)[0]}/{SCHEMA_PREFIX}{sid}")

    # -- create ------------------------------------------------------------------------------------
    def create(self, name: str, source_branch: str = MAIN_BRANCH, *, tag: str | None = None,
               snapshot_id: int | None = None, from_latest: bool = False,
               ignore_if_exists: bool = False) -> BranchInfo:
        """Create branch ``name`` from ``source_branch``'s tag, snapshot id, latest snapshot, or empty."""
        validate_branch_name(name)
        source_branch = source_branch or MAIN_BRANCH
        given = [x for x in (tag, snapshot_id, from_latest or None) if x is not None]
        if len(given) > 1:
            raise BranchError("Give at most one of tag=, snapshot_id= and from_latest=True (none creates an empty "
                              "branch holding only the current schema).")
        if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int)):
            raise BranchError(f"snapshot_id must be an int, got {snapshot_id!r}.")
        self._require(source_branch)
        if name == source_branch:
            raise BranchError(f"Cannot create branch '{name}' from itself.")
        if self.exists(name):
            if ignore_if_exists:
                return self.info(name)
            raise BranchError(f"Branch '{name}' already exists in {self.table_path}; drop it first, pick another "
                              "name, or pass ignore_if_exists=True.")
        src_schema_dir, src_snapshot_dir, src_tag_dir = self._dirs(source_branch)
        schema_ids = self._schema_ids(source_branch)
        if not schema_ids:
            raise BranchError(f"Branch '{source_branch}' of {self.table_path} has no schema; it is not a table.")

        # What to copy: (snapshot id, snapshot bytes) and (tag name, tag bytes), resolved before writing.
        snap_copy: tuple[int, bytes] | None = None
        tag_copy: tuple[str, bytes] | None = None
        source: Snapshot | None = None
        last_schema = schema_ids[-1]
        snapshots = SnapshotManager(self.fileio, self.table_path, source_branch)
        tags = TagManager(self.fileio, self.table_path, source_branch)
        if tag is not None:
            tag_path = tags.tag_path(tag)
            tag_text = tags.read_bytes(tag).decode("utf-8")
            source = tag_from_json(tag, tag_text, tag_path).snapshot
            tag_copy = (tag, tag_text.encode("utf-8"))
            snap_copy = (source.id, self._snapshot_or_tag_bytes(snapshots, source.id, tag_text, tag_path))
            last_schema = source.schema_id
        elif snapshot_id is not None:
            source = find_snapshot(snapshots, tags, snapshot_id)
            if snapshots.exists(snapshot_id):
                data = self._read_snapshot_bytes(snapshots, snapshot_id)
            else:  # expired, preserved by a tag of the source branch
                data = source.to_json().encode("utf-8")
            snap_copy = (snapshot_id, data)
            last_schema = source.schema_id
        elif from_latest:
            source = snapshots.latest()
            if source is not None:
                snap_copy = (source.id, self._read_snapshot_bytes(snapshots, source.id))
        copy_schemas = [sid for sid in schema_ids if sid <= last_schema]
        missing = sorted(set(range(last_schema + 1)) - set(copy_schemas))
        if missing:
            raise BranchError(
                f"Cannot create branch '{name}': schema files {missing} of branch '{source_branch}' are missing, but "
                f"the source snapshot needs schemas 0..{last_schema}. Restore them first.")

        root = self.branch_dir(name)
        lineage = BranchLineage(source_branch, tag, source.id if source else None,
                                source.uuid if source else None, last_schema, now_millis())
        # The lineage file is created first and atomically: it claims the name against a concurrent creator.
        if not self.fileio.try_create(f"{root}/{LINEAGE_FILE}", lineage.to_json().encode("utf-8")):
            if ignore_if_exists:
                return self.info(name)
            raise BranchError(f"Branch '{name}' was created concurrently in {self.table_path}.")
        try:
            dst_schema_dir, dst_snapshot_dir, dst_tag_dir = self._dirs(name)
            if tag_copy is not None:
                self.fileio.write_bytes(f"{dst_tag_dir}/{TAG_PREFIX}{tag_copy[0]}", tag_copy[1])
            if snap_copy is not None:
                self.fileio.write_bytes(f"{dst_snapshot_dir}/{SNAPSHOT_PREFIX}{snap_copy[0]}", snap_copy[1])
            # Schemas last: the branch "exists" for readers once schema/ has files, and then it is complete.
            for sid in copy_schemas:
                self.fileio.write_bytes(f"{dst_schema_dir}/{SCHEMA_PREFIX}{sid}",
                                        self.fileio.read_bytes(f"{src_schema_dir}/{SCHEMA_PREFIX}{sid}"))
        except BaseException:
            try:
                self.fileio.delete_dir(root)
            except Exception:  # noqa: BLE001 - best effort; the original error matters more
                log.warning("could not remove the partly created branch directory %s", root)
            raise
        return self.info(name)

    def _read_snapshot_bytes(self, snapshots: SnapshotManager, sid: int) -> bytes:
        try:
            return self.fileio.read_bytes(snapshots.snapshot_path(sid))
        except FileNotFoundError:
            return snapshots.snapshot(sid).to_json().encode("utf-8")  # raises SnapshotNotFoundError

    def _snapshot_or_tag_bytes(self, snapshots: SnapshotManager, sid: int, tag_text: str, tag_path: str) -> bytes:
        """The tagged snapshot's file, or, if it expired (or the id now holds another commit), the tag's
        content trimmed to snapshot fields (Paimon #8748)."""
        path = snapshots.snapshot_path(sid)
        try:
            data = self.fileio.read_bytes(path)
        except FileNotFoundError:
            return _trimmed_snapshot_json(tag_text, tag_path)
        tagged = tag_from_json("x", tag_text, tag_path).snapshot
        if _identity(Snapshot.from_json(data.decode("utf-8"), path)) != _identity(tagged):
            return _trimmed_snapshot_json(tag_text, tag_path)
        return data

    # -- drop / rename -----------------------------------------------------------------------------
    def _dependents(self, name: str) -> list[str]:
        """'<branch>: <option>' for every branch whose latest schema reads from branch ``name``."""
        out = []
        for b in [MAIN_BRANCH, *self.names()]:
            if b == name:
                continue
            try:
                schema = SchemaManager(self.fileio, self.table_path, b).latest()
            except Exception:  # noqa: BLE001 - an unreadable branch cannot depend on anything we can see
                continue
            if schema is None:
                continue
            options = schema.core_options
            for option in _BRANCH_OPTIONS:
                if options.get(option) == name:
                    out.append(f"branch '{b}' has '{option.key}' = '{name}'")
        return out

    def drop(self, name: str, *, ignore_if_not_exists: bool = False) -> bool:
        """Delete the branch directory (metadata only; data files are left to orphan-file removal)."""
        validate_branch_name(name)
        if not self.exists(name):
            if ignore_if_not_exists:
                return False
            self._require(name)
        deps = self._dependents(name)
        if deps:
            raise BranchError(f"Cannot drop branch '{name}': {'; '.join(deps)}. Remove or change that option first "
                              "(Table.remove_options / set_options on that branch).")
        self.fileio.delete_dir(self.branch_dir(name))
        return True

    def rename(self, old: str, new: str) -> BranchInfo:
        """Rename a branch directory; lineage files naming ``old`` as their source follow the rename."""
        validate_branch_name(old)
        validate_branch_name(new)
        self._require(old)
        if self.exists(new):
            raise BranchError(f"Cannot rename branch '{old}' to '{new}': branch '{new}' already exists.")
        deps = self._dependents(old)
        if deps:
            raise BranchError(f"Cannot rename branch '{old}': {'; '.join(deps)}. Change that option first.")
        self.fileio.rename(self.branch_dir(old), self.branch_dir(new))
        for b in self.names():
            lin = self.lineage(b)
            if lin is not None and lin.source_branch == old:
                self.fileio.write_bytes(f"{self.branch_dir(b)}/{LINEAGE_FILE}",
                                        lin.with_source_branch(new).to_json().encode("utf-8"))
        return self.info(new)

    # -- ancestry ----------------------------------------------------------------------------------
    def _content(self, branch: str) -> tuple[dict[int, Snapshot], dict[str, tuple[Snapshot, bytes]]]:
        """Snapshots by id and tags by name (with their raw bytes) of a branch."""
        snapshots = SnapshotManager(self.fileio, self.table_path, branch)
        snaps: dict[int, Snapshot] = {}
        for sid in snapshots.list_ids():
            try:
                snaps[sid] = snapshots.snapshot(sid)
            except SnapshotNotFoundError:
                continue
        tags: dict[str, tuple[Snapshot, bytes]] = {}
        tag_dir = self._dirs(branch)[2]
        for n in self.fileio.list_names(tag_dir):
            if not n.startswith(TAG_PREFIX):
                continue
            path = f"{tag_dir}/{n}"
            try:
                data = self.fileio.read_bytes(path)
            except FileNotFoundError:
                continue
            tags[n[len(TAG_PREFIX):]] = (tag_from_json(n[len(TAG_PREFIX):], data.decode("utf-8"), path).snapshot,
                                         data)
        return snaps, tags

    def _known(self, branch: str, target: str, snaps: dict[int, Snapshot],
               tags: dict[str, tuple[Snapshot, bytes]]) -> tuple[dict[int, set[tuple]], int | None]:
        """Identities of every snapshot in ``branch``'s history, by id, and the fork id from ``target``.

        The history is the branch's own snapshots and tags, plus, following lineage files, the snapshot it was
        forked from and the history of its source branches below the fork (each link checked: the source
        must still hold the very snapshot the branch was forked from). The fork id is None when unknown
        (no lineage), 1 for an empty branch (its ids start at 1).
        """
        known: dict[int, set[tuple]] = {}
        for s in snaps.values():
            known.setdefault(s.id, set()).add(_identity(s))
        for s, _ in tags.values():
            known.setdefault(s.id, set()).add(_identity(s))
        fork: int | None = None
        cur, seen = branch, {branch}
        while True:
            lin = self.lineage(cur)
            if lin is None:
                break
            if lin.source_snapshot_id is None:
                fork = 1
                break
            fork = lin.source_snapshot_id
            if lin.source_snapshot_uuid:
                known.setdefault(fork, set()).add(("uuid", fork, lin.source_snapshot_uuid))
            src = lin.source_branch
            if src == target or src in seen or not self.exists(src):
                break
            src_snaps, src_tags = self._content(src)
            at_fork = [s for s in [src_snaps.get(fork)] if s is not None] + [
                s for s, _ in src_tags.values() if s.id == fork]
            if not lin.source_snapshot_uuid or not any(s.uuid == lin.source_snapshot_uuid for s in at_fork):
                break  # the source branch changed since the fork: its older history is not ours
            for s in list(src_snaps.values()) + [t for t, _ in src_tags.values()]:
                if s.id < fork:
                    known.setdefault(s.id, set()).add(_identity(s))
            cur = src
            seen.add(src)
        return known, fork

    def _conflicts(self, branch: str, target: str, snaps: dict[int, Snapshot],
                   tags: dict[str, tuple[Snapshot, bytes]], t_snaps: dict[int, Snapshot],
                   t_tags: dict[str, tuple[Snapshot, bytes]], earliest: Snapshot) -> list[str]:
        """What fast-forwarding ``branch`` into ``target`` would lose (empty = safe)."""
        known, fork = self._known(branch, target, snaps, tags)
        lo = earliest.id if fork is None else min(fork, earliest.id)
        problems = []
        for sid in sorted(t_snaps):
            s = t_snaps[sid]
            if sid >= lo and _identity(s) not in known.get(sid, set()):
                problems.append(f"{_describe(s)} is not in branch '{branch}'")
        if t_snaps:
            head = t_snaps[max(t_snaps)]
            if head.id < lo and _identity(head) not in known.get(head.id, set()):
                problems.append(
                    f"the latest {_describe(head)} of '{target}' is older than the fork point (snapshot {lo}): "
                    f"'{target}' was rolled back or rewritten after branch '{branch}' was created")
        for name, (s, _) in sorted(t_tags.items()):
            if name in tags and _identity(tags[name][0]) != _identity(s):
                problems.append(f"tag '{name}' (snapshot {s.id}) would be moved to branch '{branch}''s "
                                f"snapshot {tags[name][0].id}")
            elif s.id >= lo and _identity(s) not in known.get(s.id, set()):
                problems.append(f"tag '{name}' (snapshot {s.id}) is on a commit that is not in branch '{branch}'")
        b_schema_ids = set(self._schema_ids(branch))
        for sid in self._schema_ids(target):
            if sid < earliest.schema_id:
                continue
            if sid not in b_schema_ids:
                problems.append(f"schema {sid} of '{target}' was added after the fork and is not in branch '{branch}'")
            elif not self._same_schema(target, branch, sid):
                problems.append(f"schema {sid} differs between '{target}' and branch '{branch}'")
        return problems

    def _same_schema(self, a: str, b: str, sid: int) -> bool:
        try:
            return json.loads(self._schema_bytes(a, sid)) == json.loads(self._schema_bytes(b, sid))
        except (FileNotFoundError, ValueError):
            return False

    # -- publish -----------------------------------------------------------------------------------
    def fast_forward(self, branch: str, target: str = MAIN_BRANCH, *, force: bool = False) -> PublishResult:
        """Make ``target`` (main by default) continue with ``branch``'s commits (see the module docstring)."""
        validate_branch_name(branch)
        self._require(branch)
        self._require(target)
        if branch == target:
            raise BranchError(f"Cannot fast-forward branch '{branch}' into itself.")
        snaps, tags = self._content(branch)
        if not snaps:
            raise BranchError(f"Branch '{branch}' of {self.table_path} has no snapshot; there is nothing to "
                              "fast-forward. Write to the branch first.")
        earliest = snaps[min(snaps)]
        t_snaps, t_tags = self._content(target)
        problems = self._conflicts(branch, target, snaps, tags, t_snaps, t_tags, earliest)
        if problems and not force:
            raise BranchConflictError(
                f"Refusing to fast-forward '{target}' of {self.table_path} to branch '{branch}': '{target}' holds "
                f"changes the branch does not contain, which Paimon's fast-forward would silently discard: "
                f"{'; '.join(problems)}. Re-apply them on the branch and retry, or pass force=True to discard "
                "them (replace_main(..., keep_previous_as=...) keeps a copy of the old state).")
        e = earliest.id
        keep_snaps = {sid for sid in t_snaps if sid < e}
        drop_tags = [n for n, (s, _) in t_tags.items()
                     if n not in tags and s.id >= e and not (s.id in snaps and _identity(snaps[s.id]) == _identity(s))]
        b_schemas = self._schema_ids(branch)
        drop_schemas = [sid for sid in self._schema_ids(target) if sid >= earliest.schema_id and sid not in b_schemas]
        result = self._publish(branch, target, snaps, tags, t_snaps, t_tags, keep_snaps, drop_tags, drop_schemas)
        result.discarded = problems
        return result

    def replace_main(self, branch: str, target: str = MAIN_BRANCH, *,
                     keep_previous_as: str | None = None) -> PublishResult:
        """Make ``target``'s snapshots, schemas and tags exact copies of ``branch``'s; the previous target is
        first copied to branch ``keep_previous_as`` (if given) or discarded."""
        validate_branch_name(branch)
        self._require(branch)
        self._require(target)
        if branch == target:
            raise BranchError(f"Cannot replace branch '{target}' with itself.")
        snaps, tags = self._content(branch)
        if not snaps:
            raise BranchError(f"Branch '{branch}' of {self.table_path} has no snapshot; write to it before making it "
                              f"'{target}'.")
        t_snaps, t_tags = self._content(target)
        if keep_previous_as is not None:
            validate_branch_name(keep_previous_as)
            if self.exists(keep_previous_as):
                raise BranchError(f"Cannot keep the previous '{target}' as branch '{keep_previous_as}': that branch "
                                  "already exists. Pick another name.")
            self._save_copy(target, keep_previous_as, t_snaps)
        known = {(_identity(s)) for s in snaps.values()}
        discarded = [f"{_describe(s)} of '{target}'" for s in t_snaps.values() if _identity(s) not in known]
        drop_tags = [n for n in t_tags if n not in tags]
        b_schemas = set(self._schema_ids(branch))
        drop_schemas = [sid for sid in self._schema_ids(target) if sid not in b_schemas]
        result = self._publish(branch, target, snaps, tags, t_snaps, t_tags, set(), drop_tags, drop_schemas)
        result.discarded = discarded + [f"tag '{n}'" for n in drop_tags]
        result.kept_previous_as = keep_previous_as
        return result

    def _save_copy(self, source: str, name: str, snaps: dict[int, Snapshot]) -> None:
        """Copy every snapshot, schema and tag file of ``source`` into a new branch ``name``."""
        head = snaps[max(snaps)] if snaps else None
        schema_ids = self._schema_ids(source)
        lineage = BranchLineage(source, None, head.id if head else None, head.uuid if head else None,
                                schema_ids[-1] if schema_ids else None, now_millis())
        root = self.branch_dir(name)
        if not self.fileio.try_create(f"{root}/{LINEAGE_FILE}", lineage.to_json().encode("utf-8")):
            raise BranchError(f"Branch '{name}' was created concurrently in {self.table_path}.")
        try:
            for src_dir, dst_dir, prefix in zip(self._dirs(source), self._dirs(name),
                                                (SCHEMA_PREFIX, SNAPSHOT_PREFIX, TAG_PREFIX)):
                for n in self.fileio.list_names(src_dir):
                    if n.startswith(prefix):
                        try:
                            data = self.fileio.read_bytes(f"{src_dir}/{n}")
                        except FileNotFoundError:
                            continue
                        self.fileio.write_bytes(f"{dst_dir}/{n}", data)
        except BaseException:
            self.fileio.delete_dir(root)
            raise

    def _publish(self, branch: str, target: str, snaps: dict[int, Snapshot], tags: dict[str, tuple[Snapshot, bytes]],
                 t_snaps: dict[int, Snapshot], t_tags: dict[str, tuple[Snapshot, bytes]], keep_snaps: set[int],
                 drop_tags: Iterable[str], drop_schemas: Iterable[int]) -> PublishResult:
        """Write ``branch``'s snapshots/schemas/tags over ``target`` in reader-safe order (module docstring).

        ``keep_snaps``: target snapshot ids (below the branch's earliest) that stay; every other target
        snapshot not in ``snaps`` is deleted.
        """
        fio = self.fileio
        b_snap_mgr = SnapshotManager(fio, self.table_path, branch)
        t_mgr = SnapshotManager(fio, self.table_path, target)
        t_schema_dir, _, t_tag_dir = self._dirs(target)
        b_schema_dir = self._dirs(branch)[0]
        h = max(t_snaps) if t_snaps else None
        b = max(snaps)
        result = PublishResult(branch, target, h, b)

        def branch_bytes(sid: int) -> bytes:
            return self._read_snapshot_bytes(b_snap_mgr, sid)

        # Target snapshots the branch's replace (same id, other commit), and ones that must go.
        differing = sorted(sid for sid in snaps if sid in t_snaps and _identity(t_snaps[sid]) != _identity(snaps[sid]))
        doomed = sorted(sid for sid in t_snaps if sid not in snaps and sid not in keep_snaps)
        new_ids = sorted(sid for sid in snaps if sid not in t_snaps)

        # 0. Pin the LATEST hint on the current head so hint-following readers keep seeing it until the switch.
        if h is not None and t_mgr.latest_hint() != h:
            t_mgr.commit_latest_hint(h)

        # 1. Schemas the target lacks (create-if-absent; a concurrent ALTER on the target wins and aborts us).
        t_schema_ids = set(self._schema_ids(target))
        created_schemas: list[int] = []
        rewrite_schemas: list[int] = []
        for sid in self._schema_ids(branch):
            data = fio.read_bytes(f"{b_schema_dir}/{SCHEMA_PREFIX}{sid}")
            if sid not in t_schema_ids:
                if not fio.try_create(f"{t_schema_dir}/{SCHEMA_PREFIX}{sid}", data):
                    for c in created_schemas:
                        fio.delete(f"{t_schema_dir}/{SCHEMA_PREFIX}{c}")
                    raise BranchError(f"Schema {sid} was added to '{target}' concurrently; nothing was published. "
                                      "Retry once the schema change is done.")
                created_schemas.append(sid)
            elif not self._same_schema(target, branch, sid):
                rewrite_schemas.append(sid)

        def rewrite_changed_schemas() -> None:
            for sid in rewrite_schemas:
                fio.write_bytes(f"{t_schema_dir}/{SCHEMA_PREFIX}{sid}",
                                fio.read_bytes(f"{b_schema_dir}/{SCHEMA_PREFIX}{sid}"))

        # 2. Snapshots, with the switch H -> B as one file operation.
        if h is None or b > h:
            above = [sid for sid in new_ids if h is None or sid > h]
            created: list[int] = []
            rewrite_changed_schemas()
            for sid in sorted(above, reverse=True):  # lowest last: creating H+1 is the switch
                if not fio.try_create(t_mgr.snapshot_path(sid), branch_bytes(sid)):
                    for c in created:
                        fio.delete(t_mgr.snapshot_path(c))
                    raise BranchError(
                        f"A commit to '{target}' (snapshot {sid}) raced the publish of branch '{branch}'; the "
                        f"publish was undone and '{target}' keeps that commit. Stop writers to '{target}' and retry.")
                created.append(sid)
            t_mgr.commit_latest_hint(b)  # the switch for hint readers when the branch does not continue at H+1
            result.created_snapshots = sorted(created)
            for sid in sorted(new_ids):  # below H (gaps in the target's history)
                if sid not in created and fio.try_create(t_mgr.snapshot_path(sid), branch_bytes(sid)):
                    result.created_snapshots.append(sid)
            for sid in differing:  # all <= H < H+1, which exists now: no reader takes them for the head
                fio.write_bytes(t_mgr.snapshot_path(sid), branch_bytes(sid))
            for sid in doomed:  # all <= H (ids in the target above H were created from the branch)
                fio.delete(t_mgr.snapshot_path(sid))
        else:
            for sid in new_ids:  # below H: not the head
                fio.try_create(t_mgr.snapshot_path(sid), branch_bytes(sid))
            result.created_snapshots = list(new_ids)
            for sid in differing:
                if sid != b:
                    fio.write_bytes(t_mgr.snapshot_path(sid), branch_bytes(sid))
            for sid in sorted((s for s in doomed if b < s < h), reverse=True):
                fio.delete(t_mgr.snapshot_path(sid))
            rewrite_changed_schemas()
            if b in differing:
                fio.write_bytes(t_mgr.snapshot_path(b), branch_bytes(b))
            t_mgr.commit_latest_hint(b)
            if h != b:
                fio.delete(t_mgr.snapshot_path(h))  # the switch (for readers that list)
                if t_mgr.exists(h + 1):
                    raise BranchError(
                        f"A commit to '{target}' (snapshot {h + 1}) landed on the old head while branch '{branch}' was "
                        f"being published; '{target}' now has it on top of the branch's history. Inspect "
                        f"'{target}' (it may need a rollback) and stop writers before publishing.")
            for sid in doomed:
                if sid < b:
                    fio.delete(t_mgr.snapshot_path(sid))
        result.replaced_snapshots = differing
        result.deleted_snapshots = doomed
        t_mgr.commit_latest_hint(b)
        remaining = t_mgr.list_ids()
        if remaining and (fio.exists(f"{t_mgr.snapshot_dir}/{EARLIEST}") or any(sid < min(snaps) for sid in doomed)):
            t_mgr.commit_earliest_hint(remaining[0])

        # 3. Tags: the branch's, then the target's that no longer belong.
        for name, (_, data) in sorted(tags.items()):
            current = t_tags.get(name)
            if current is None or current[1] != data:
                fio.write_bytes(f"{t_tag_dir}/{TAG_PREFIX}{name}", data)
                result.copied_tags.append(name)
        for name in sorted(drop_tags):
            if fio.delete(f"{t_tag_dir}/{TAG_PREFIX}{name}"):
                result.deleted_tags.append(name)

        # 4. Schemas only the old target had.
        for sid in sorted(drop_schemas, reverse=True):
            if fio.delete(f"{t_schema_dir}/{SCHEMA_PREFIX}{sid}"):
                result.deleted_schemas.append(sid)
        result.copied_schemas = sorted(created_schemas + rewrite_schemas)
        result.latest_id = t_mgr.latest_id()
        return result


__all__ = ["BranchManager", "BranchInfo", "BranchLineage", "PublishResult", "LINEAGE_FILE"]
