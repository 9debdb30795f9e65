"""Branches (Java's `BranchManager.branchPath`, `FileSystemBranchManager`): create, list, rename, drop, fast-forward and
replace-main.

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

**Fast-forward** (:meth:`BranchManager.fast_forward`) produces Paimon's on-disk result (Java's
`FileSystemBranchManager`): the target's snapshots with id >= E (the branch's earliest snapshot) and schemas >=
E.schemaId are replaced by the branch's, its tags on those snapshots are replaced by the branch's tags, ``LATEST``
points at the branch head. Unlike Paimon it is **safe by default**: it refuses (:class:`BranchConflictError`, listing
what would be lost) when the target holds anything the branch does not contain: a snapshot or tag from the fork point on
whose identity (``uuid``, else the whole snapshot) is not in the branch's history, a schema added after the fork,
a tag name the branch points elsewhere, or a target head older than the fork point (rolled back since).
``force=True`` discards those, as Paimon always does. Tags of the target that point at snapshots the branch
also contains are kept (Paimon deletes them; they remain valid, so keeping them loses nothing).

**What a concurrent reader of the target sees.** Nothing is ever half-copied from a reader's point of view:
the switch from the old head H to the branch head B is a single file operation, and every other step happens
where no reader of the latest snapshot looks. Snapshot ids are reused (the branch's snapshot k replaces the
target's snapshot k), so the order matters:

* B > H: every id ``H+1 .. B-1`` is first claimed, lowest first, with a *filler* (a snapshot holding the
  target's old content and no change of its own, commit user ``pyspark-paimon-publish-filler``); creating
  ``snapshot-<B>`` (create-if-absent) right above the last one is the switch, for readers that follow
  ``LATEST`` (ours, Paimon's, pypaimon's: the hint is trusted while ``snapshot-<hint+1>`` is absent) and for
  readers that list alike. After the switch the fillers of ids the branch has are overwritten with the branch's
  snapshots (their manifest lists deleted); fillers of ids below the branch's first snapshot (the target was
  rolled back, or is empty) stay, so no free id is left under the published head. Only after the switch are
  the target's own snapshots <= H that differ from the branch's overwritten (``force`` only).
* B <= H (``force``/replace only): everything below H is rewritten or deleted first while H stays the head,
  then H is deleted (the switch: readers following the hint, still H, or listing find B) and ``LATEST`` moves
  to B.
* :meth:`SnapshotManager.latest` re-checks after reading a snapshot that it is still the head and retries
  otherwise, so a reader that resolved H just before the switch never returns a snapshot overwritten after
  it; a reader that already planned on H keeps working because manifests and data files are shared and
  nothing here deletes them.

**Commits racing a publish** (:class:`_Publish`). A commit on the target is the create-if-absent of
``snapshot-<head+1>``, so a commit prepared on the old head H can only ever land on H+1. The publish keeps a
journal of every change it makes to the target and lists the target's snapshot ids before each step:

* it never overwrites or deletes a snapshot file without first re-reading it and finding the very commit it
  planned for (so an acknowledged commit is never removed), and it only moves ``LATEST`` up to H (a hint
  below a newer commit would send readers to listing, where the branch's not yet published snapshots show);
* a commit that landed before the switch (B > H: it took the switch's id and the create fails; B <= H: it
  appeared on H+1, checked before every step and right after the switch) makes the publish undo its
  journal around it and raise :class:`BranchPublishRaceError` naming the commit: the target is then as it was
  plus that commit. ``force`` only discards what the target held when the call looked: a commit that lands
  after planning stops the publish before anything changes;
* before the switch (B > H) the target holds nothing but its old content: a racing writer builds on the last
  filler, takes the next id before the publish does and stops it (the fillers under its commit stay: they are
  its history); no branch snapshot ever sits above a free id, where a writer filling the ids below would later
  find it and build on the branch's unpublished head;
* after the switch (B > H), a commit prepared on any state the target showed collides with a claimed id and its
  writer retries on the new head;
* a create whose answer was lost (an object store's retry finds the file taken, or the call fails after the
  file was written) is recognised as the publish's own by its content, never taken for a race.

**Stopped anywhere** (an error, a kill): before the switch only fillers were added (the old content); after it
the target's head is the branch head and only the history below it may still hold fillers or the target's old
snapshots. Either way readers and writers continue from a complete head, and running the same call again
completes the publish (fillers are never counted as commits the branch lacks).

Remaining limits, stated honestly: new schema files become visible just before the switch, so if the branch
evolved the schema a concurrent reader may for a moment see the *old* rows with the branch's new columns (as
NULL), and schema files copied by a publish that is then undone stay (a concurrent writer may already use
them; a schema file changes no data); with ``force``, schema files the two sides both changed are rewritten in
place, which a reader planning at that instant can observe. For B <= H, a writer that read the old head
before the switch and commits after the publish returned lands on H+1, above the published head: its commit
(the old content plus its rows) becomes the head and nothing is lost, but the publish must be run again. A
writer that only lists (no ``LATEST``), or a racing writer that makes two commits between two steps of the
publish, can commit on the branch's copied snapshots before a failed switch; that leaves two lines of
history, the publish cannot be undone and its error names the commits (the files of all of them stay). A
publish B > H writes two small manifest lists per id it claims (each filler has its own: expiration deletes
an expired snapshot's lists), deleted again for the ids the branch has.

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
import uuid
from dataclasses import dataclass, field, replace
from typing import Iterable, NoReturn

from pyspark_paimon.errors import (
    BranchConflictError,
    BranchError,
    BranchNotFoundError,
    BranchPublishRaceError,
    CorruptMetadataError,
    SnapshotNotFoundError,
)
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.identifier import validate_branch_name
from pyspark_paimon.metadata.manifests.manifest import ManifestFileMeta, ManifestStore
from pyspark_paimon.metadata.refs.tags import (
    AT_OR_BEFORE,
    TAG_PREFIX,
    TagManager,
    check_timestamp_rule,
    find_snapshot,
    snapshot_as_of,
    tag_from_json,
)
from pyspark_paimon.metadata.schema.options import (
    SCAN_FALLBACK_BRANCH,
    SCAN_FALLBACK_DELTA_BRANCH,
    SCAN_FALLBACK_SNAPSHOT_BRANCH,
)
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    EARLIEST,
    MAIN_BRANCH,
    SNAPSHOT_PREFIX,
    Snapshot,
    SnapshotManager,
    branch_dirs,
    branch_path,
    now_millis,
)
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import duration_millis, local_datetime, to_millis

log = logging.getLogger(__name__)

LINEAGE_FILE = "branch.json"
SCHEMA_PREFIX = "schema-"
LINEAGE_VERSION = 1
# Commit user and snapshot property of the snapshot a publish writes at the target's old head + 1 when the branch
# starts higher up (:meth:`_Publish._filler`): it carries the old content and no change of its own.
PUBLISH_FILLER_USER = "pyspark-paimon-publish-filler"
FILLER_PROPERTY = "pyspark-paimon.filler-for-branch"
# Options that name another branch a read depends on; dropping or renaming that branch breaks the read.
_BRANCH_OPTIONS = (SCAN_FALLBACK_BRANCH, SCAN_FALLBACK_SNAPSHOT_BRANCH, SCAN_FALLBACK_DELTA_BRANCH)


# ------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class LineageVia:
    """The history a branch inherited through a source branch that was dropped (``expire_branches``), so the
    ancestry check of :meth:`BranchManager.fast_forward` keeps working: the identities of the dropped
    branch's snapshots and tags below this branch's fork, and where the dropped branch itself came from."""

    source_branch: str  # '' when the dropped branch had no lineage itself (the walk stops there)
    source_snapshot_id: int | None  # None: the dropped branch was created empty
    source_snapshot_uuid: str | None
    history: tuple[tuple, ...] = ()  # snapshot identities (see ``_identity``)

    def to_dict(self) -> dict:
        return {
            "sourceBranch": self.source_branch,
            "sourceSnapshotId": self.source_snapshot_id,
            "sourceSnapshotUuid": self.source_snapshot_uuid,
            "history": [list(h) for h in self.history],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "LineageVia":
        return cls(
            str(d.get("sourceBranch") or ""),
            _opt_int(d.get("sourceSnapshotId")),
            d.get("sourceSnapshotUuid"),
            tuple(tuple(h) for h in d.get("history") or ()),
        )


@dataclass(frozen=True)
class BranchLineage:
    """Where a branch came from (``branch.json``). ``source_snapshot_id`` is None for an empty branch.
    ``time_retained_millis``: the branch's retention (``expire_branches`` drops it once
    ``created_at_millis + time_retained_millis`` has passed); None keeps it forever."""

    source_branch: str
    source_tag: str | None
    source_snapshot_id: int | None
    source_snapshot_uuid: str | None
    source_schema_id: int | None
    created_at_millis: int
    created_by: str = "pyspark-paimon"
    time_retained_millis: int | None = None
    via: LineageVia | None = None

    def to_json(self) -> str:
        d: dict = {
            "version": LINEAGE_VERSION,
            "sourceBranch": self.source_branch,
            "sourceTag": self.source_tag,
            "sourceSnapshotId": self.source_snapshot_id,
            "sourceSnapshotUuid": self.source_snapshot_uuid,
            "sourceSchemaId": self.source_schema_id,
            "createdAtMillis": self.created_at_millis,
            "createdBy": self.created_by,
        }
        if self.time_retained_millis is not None:
            d["timeRetainedMillis"] = self.time_retained_millis
        if self.via is not None:
            d["via"] = self.via.to_dict()
        return json.dumps(d, indent=2)

    @classmethod
    def from_json(cls, text: str) -> "BranchLineage":
        d = json.loads(text)
        via = d.get("via")
        return cls(
            str(d.get("sourceBranch") or MAIN_BRANCH),
            d.get("sourceTag"),
            _opt_int(d.get("sourceSnapshotId")),
            d.get("sourceSnapshotUuid"),
            _opt_int(d.get("sourceSchemaId")),
            int(d.get("createdAtMillis") or 0),
            str(d.get("createdBy") or ""),
            _opt_int(d.get("timeRetainedMillis")),
            LineageVia.from_dict(via) if isinstance(via, dict) else None,
        )

    @property
    def expire_at_millis(self) -> int | None:
        if self.time_retained_millis is None:
            return None
        return self.created_at_millis + self.time_retained_millis

    def with_source_branch(self, name: str) -> "BranchLineage":
        return replace(self, source_branch=name)


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
    time_retained_millis: int | None = None  # retention given at creation (None: kept until dropped)

    @property
    def expire_time_millis(self) -> int | None:
        """When ``expire_branches`` may drop the branch (epoch ms), or None without a retention."""
        if self.time_retained_millis is None:
            return None
        return self.create_time_millis + self.time_retained_millis


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
    # fast_forward(force=True): the target's commits that are gone, the tags removed or moved with them, the net
    # record count those commits had added (sum of their delta record counts), and the tags kept because they
    # carry a retention (their tag files keep the discarded content readable until they expire).
    discarded_snapshots: list[int] = field(default_factory=list)
    discarded_tags: list[str] = field(default_factory=list)
    discarded_records: int = 0
    kept_tags: list[str] = field(default_factory=list)
    kept_previous_as: str | None = None
    # Ids of the fillers that stay: the target's old head + 1 up to below the branch's earliest snapshot, when
    # the branch starts higher up (module docstring).
    filler_snapshots: list[int] = field(default_factory=list)


# ------------------------------------------------------------------------------------------- helpers
def _identity(s: Snapshot) -> tuple:
    """Same commit? The uuid when the snapshot has one, else the whole snapshot."""
    if s.uuid:
        return ("uuid", s.id, s.uuid)
    return ("json", s.id, json.dumps(s.to_dict(), sort_keys=True))


def _describe(s: Snapshot) -> str:
    delta = f", {s.delta_record_count:+d} rows" if s.delta_record_count is not None else ""
    when = local_datetime(s.time_millis).strftime("%Y-%m-%d %H:%M:%S")
    return f"snapshot {s.id} ({s.commit_kind} at {when} local, {s.time_millis} epoch ms{delta})"


def _trimmed_snapshot_json(tag_text: str, source: str) -> bytes:
    """A tag file's content as a plain snapshot (the tag keys removed)."""
    return tag_from_json("x", tag_text, source).snapshot.to_json().encode("utf-8")


# ------------------------------------------------------------------------------------------- manager
class BranchManager:
    """The branches of one table."""

    def __init__(self, store: FileStore):
        """Branches are a property of the table: ``store``'s own branch does not matter here."""
        self.fileio = store.fileio
        self.table_path = store.table_path.rstrip("/") or "/"

    # -- paths and lookups -------------------------------------------------------------------------
    def branch_dir(self, name: str) -> str:
        return branch_path(self.table_path, name)

    def dirs(self, name: str) -> tuple[str, str, str]:
        """The ``schema/``, ``snapshot/`` and ``tag/`` directories of branch ``name``."""
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
            tag, snapshot_id = self._inferred_origin(name)
            return BranchInfo(name, created, None, tag, snapshot_id, latest_snapshot_id=latest)
        return BranchInfo(
            name,
            created,
            lin.source_branch,
            lin.source_tag,
            lin.source_snapshot_id,
            latest,
            True,
            lin.time_retained_millis,
        )

    def _inferred_origin(self, name: str) -> tuple[str | None, int | None]:
        """Tag and snapshot a branch without lineage (made by Paimon or pypaimon) was created from, inferred as
        Paimon's ``$branches`` did while it had these columns: the branch's earliest snapshot, and the tag on it
        when that tag is the branch's oldest (creating from a tag copies exactly that tag)."""
        earliest = SnapshotManager(self.fileio, self.table_path, name).earliest_id()
        try:
            tags = TagManager(FileStore(self.fileio, self.table_path, name)).list_tags()
        except CorruptMetadataError:
            return None, earliest
        if tags and tags[0].snapshot.id == earliest:
            on_first = [t.name for t in tags if t.snapshot.id == earliest]
            if len(on_first) == 1:
                return on_first[0], earliest
        return None, earliest

    def list_branches(self) -> list[BranchInfo]:
        """Every branch but ``main``, by name (what ``$branches`` shows)."""
        return [self._info(name, mtime) for name, mtime in branch_dirs(self.fileio, self.table_path).items()]

    def _require(self, name: str) -> None:
        if not self.exists(name):
            raise BranchNotFoundError(
                f"Branch '{name}' does not exist in {self.table_path}. Existing branches: {self.names() or 'none'}."
            )

    def schema_ids(self, branch: str) -> list[int]:
        """The ids of ``branch``'s schema files, ascending."""
        ids = []
        for n in self.fileio.list_names(self.dirs(branch)[0]):
            if n.startswith(SCHEMA_PREFIX) and n[len(SCHEMA_PREFIX) :].isdigit():
                ids.append(int(n[len(SCHEMA_PREFIX) :]))
        return sorted(ids)

    def _schema_bytes(self, branch: str, sid: int) -> bytes:
        return self.fileio.read_bytes(f"{self.dirs(branch)[0]}/{SCHEMA_PREFIX}{sid}")

    # -- create ------------------------------------------------------------------------------------
    def create(
        self,
        name: str,
        source_branch: str = MAIN_BRANCH,
        *,
        tag: str | None = None,
        snapshot_id: int | None = None,
        from_latest: bool = False,
        from_timestamp: object = None,
        timestamp_rule: str = AT_OR_BEFORE,
        time_retained: object = None,
        ignore_if_exists: bool = False,
    ) -> BranchInfo:
        """Create branch ``name`` from ``source_branch``'s tag, snapshot id, latest snapshot, the snapshot
        ``from_timestamp`` selects by ``timestamp_rule`` (default: the last committed at or before it, i.e. the
        table as a read at that instant sees it), or empty. ``time_retained`` (``'7 d'``, timedelta, ms) is
        stored in the lineage file; ``expire_branches`` drops the branch once it has passed."""
        validate_branch_name(name)
        source_branch = source_branch or MAIN_BRANCH
        given = [x for x in (tag, snapshot_id, from_latest or None, from_timestamp) if x is not None]
        if len(given) > 1:
            raise BranchError(
                "Give at most one of tag=, snapshot_id=, from_timestamp= and from_latest=True (none "
                "creates an empty branch holding only the current schema)."
            )
        check_timestamp_rule(timestamp_rule)
        retained = duration_millis(time_retained, "time_retained") if time_retained is not None else None
        if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int)):
            raise BranchError(f"snapshot_id must be an int, got {snapshot_id!r}.")
        self._require(source_branch)
        if name == source_branch:
            raise BranchError(f"Cannot create branch '{name}' from itself.")
        if self.exists(name):
            if ignore_if_exists:
                return self.info(name)
            raise BranchError(
                f"Branch '{name}' already exists in {self.table_path}; drop it first, pick another "
                "name, or pass ignore_if_exists=True."
            )
        src_schema_dir, src_snapshot_dir, src_tag_dir = self.dirs(source_branch)
        schema_ids = self.schema_ids(source_branch)
        if not schema_ids:
            raise BranchError(f"Branch '{source_branch}' of {self.table_path} has no schema; it is not a table.")

        # What to copy: (snapshot id, snapshot bytes) and (tag name, tag bytes), resolved before writing.
        snap_copy: tuple[int, bytes] | None = None
        tag_copy: tuple[str, bytes] | None = None
        source: Snapshot | None = None
        last_schema = schema_ids[-1]
        snapshots = SnapshotManager(self.fileio, self.table_path, source_branch)
        tags = TagManager(FileStore(self.fileio, self.table_path, source_branch))
        if from_timestamp is not None:
            snapshot_id = snapshot_as_of(
                snapshots, tags, to_millis(from_timestamp, "from_timestamp"), timestamp_rule
            ).id
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
                data = self.read_snapshot_bytes(snapshots, snapshot_id)
            else:  # expired, preserved by a tag of the source branch
                data = source.to_json().encode("utf-8")
            snap_copy = (snapshot_id, data)
            last_schema = source.schema_id
        elif from_latest:
            source = snapshots.latest()
            if source is not None:
                snap_copy = (source.id, self.read_snapshot_bytes(snapshots, source.id))
        copy_schemas = [sid for sid in schema_ids if sid <= last_schema]
        missing = sorted(set(range(last_schema + 1)) - set(copy_schemas))
        if missing:
            raise BranchError(
                f"Cannot create branch '{name}': schema files {missing} of branch '{source_branch}' are missing, but "
                f"the source snapshot needs schemas 0..{last_schema}. Restore them first."
            )

        root = self.branch_dir(name)
        lineage = BranchLineage(
            source_branch,
            tag,
            source.id if source else None,
            source.uuid if source else None,
            last_schema,
            now_millis(),
            time_retained_millis=retained,
        )
        # The lineage file is created first and atomically: it claims the name against a concurrent creator.
        if not self.fileio.try_create(f"{root}/{LINEAGE_FILE}", lineage.to_json().encode("utf-8")):
            if ignore_if_exists:
                return self.info(name)
            raise BranchError(f"Branch '{name}' was created concurrently in {self.table_path}.")
        try:
            dst_schema_dir, dst_snapshot_dir, dst_tag_dir = self.dirs(name)
            if tag_copy is not None:
                self.fileio.write_bytes(f"{dst_tag_dir}/{TAG_PREFIX}{tag_copy[0]}", tag_copy[1])
            if snap_copy is not None:
                self.fileio.write_bytes(f"{dst_snapshot_dir}/{SNAPSHOT_PREFIX}{snap_copy[0]}", snap_copy[1])
            # Schemas last: the branch "exists" for readers once schema/ has files, and then it is complete.
            for sid in copy_schemas:
                self.fileio.write_bytes(
                    f"{dst_schema_dir}/{SCHEMA_PREFIX}{sid}",
                    self.fileio.read_bytes(f"{src_schema_dir}/{SCHEMA_PREFIX}{sid}"),
                )
        except BaseException:
            try:
                self.fileio.delete_dir(root)
            except Exception:  # noqa: BLE001 - best effort; the original error matters more
                log.warning("could not remove the partly created branch directory %s", root)
            raise
        return self.info(name)

    def read_snapshot_bytes(self, snapshots: SnapshotManager, sid: int) -> bytes:
        """The raw bytes of snapshot ``sid`` (copied as is, so nothing a newer Paimon wrote is lost)."""
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

    def dependents(self, name: str) -> list[str]:
        """Why branch ``name`` cannot be dropped: the branches whose options read from it (empty = none)."""
        return self._dependents(name)

    def drop(self, name: str, *, ignore_if_not_exists: bool = False) -> bool:
        """Delete the branch directory (metadata only; data files are left to orphan-file removal). Branches
        created from it keep their lineage (:meth:`detach_children`)."""
        validate_branch_name(name)
        if not self.exists(name):
            if ignore_if_not_exists:
                return False
            self._require(name)
        deps = self._dependents(name)
        if deps:
            raise BranchError(
                f"Cannot drop branch '{name}': {'; '.join(deps)}. Remove or change that option first "
                "(Table.remove_options / set_options on that branch)."
            )
        self.detach_children(name)
        self.fileio.delete_dir(self.branch_dir(name))
        return True

    def detach_children(self, name: str) -> list[str]:
        """Before branch ``name`` is dropped: give each branch created from it the history it inherits through
        ``name`` (:class:`LineageVia`), so their lineage survives the drop. Returns the branches updated."""
        lin = self.lineage(name)
        children = [
            (b, c)
            for b in self.names()
            if b != name
            for c in [self.lineage(b)]
            if c is not None and c.source_branch == name
        ]
        if not children:
            return []
        snaps, tags = self._content(name)
        updated = []
        for child, clin in children:
            fork, uuid_ = clin.source_snapshot_id, clin.source_snapshot_uuid
            if fork is None:
                continue  # an empty branch inherits nothing
            at_fork = [s for s in [snaps.get(fork)] if s is not None] + [s for s, _ in tags.values() if s.id == fork]
            if not uuid_ or not any(s.uuid == uuid_ for s in at_fork):
                continue  # the dropped branch moved on since the fork: nothing of its history is the child's
            history = {_identity(s) for s in list(snaps.values()) + [t for t, _ in tags.values()] if s.id < fork}
            if lin is not None and lin.source_snapshot_id is not None and lin.source_snapshot_uuid:
                history.add(("uuid", lin.source_snapshot_id, lin.source_snapshot_uuid))  # its own fork, if expired
            if lin is None:  # made without lineage: its own history is all we know
                via = LineageVia("", None, None, tuple(sorted(history, key=str)))
            elif lin.via is not None and not self.exists(lin.source_branch):
                history |= {h for h in lin.via.history if int(h[1]) < (lin.source_snapshot_id or 0)}
                via = LineageVia(
                    lin.via.source_branch,
                    lin.via.source_snapshot_id,
                    lin.via.source_snapshot_uuid,
                    tuple(sorted(history, key=str)),
                )
            else:
                via = LineageVia(
                    lin.source_branch, lin.source_snapshot_id, lin.source_snapshot_uuid, tuple(sorted(history, key=str))
                )
            self.fileio.write_bytes(
                f"{self.branch_dir(child)}/{LINEAGE_FILE}", replace(clin, via=via).to_json().encode("utf-8")
            )
            updated.append(child)
        return updated

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
                self.fileio.write_bytes(
                    f"{self.branch_dir(b)}/{LINEAGE_FILE}", lin.with_source_branch(new).to_json().encode("utf-8")
                )
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
        tag_dir = self.dirs(branch)[2]
        for n in self.fileio.list_names(tag_dir):
            if not n.startswith(TAG_PREFIX):
                continue
            path = f"{tag_dir}/{n}"
            try:
                data = self.fileio.read_bytes(path)
            except FileNotFoundError:
                continue
            tags[n[len(TAG_PREFIX) :]] = (
                tag_from_json(n[len(TAG_PREFIX) :], data.decode("utf-8"), path).snapshot,
                data,
            )
        return snaps, tags

    def _known(
        self, branch: str, target: str, snaps: dict[int, Snapshot], tags: dict[str, tuple[Snapshot, bytes]]
    ) -> tuple[dict[int, set[tuple]], int | None]:
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
            fork_uuid = lin.source_snapshot_uuid
            if fork_uuid:
                known.setdefault(fork, set()).add(("uuid", fork, fork_uuid))
            src = lin.source_branch
            if lin.via is not None and not self.exists(src):
                # The source was dropped (expire_branches): continue with the history it recorded for us.
                for ident in lin.via.history:
                    known.setdefault(int(ident[1]), set()).add(ident)
                if not lin.via.source_branch:
                    break  # the dropped branch had no lineage: nothing is known further back
                if lin.via.source_snapshot_id is None:
                    fork = 1
                    break
                fork, fork_uuid, src = lin.via.source_snapshot_id, lin.via.source_snapshot_uuid, lin.via.source_branch
                if fork_uuid:
                    known.setdefault(fork, set()).add(("uuid", fork, fork_uuid))
            if src == target or src in seen or not self.exists(src):
                break
            src_snaps, src_tags = self._content(src)
            at_fork = [s for s in [src_snaps.get(fork)] if s is not None] + [
                s for s, _ in src_tags.values() if s.id == fork
            ]
            if not fork_uuid or not any(s.uuid == fork_uuid for s in at_fork):
                break  # the source branch changed since the fork: its older history is not ours
            for s in list(src_snaps.values()) + [t for t, _ in src_tags.values()]:
                if s.id < fork:
                    known.setdefault(s.id, set()).add(_identity(s))
            cur = src
            seen.add(src)
        return known, fork

    def _conflicts(
        self,
        branch: str,
        target: str,
        snaps: dict[int, Snapshot],
        tags: dict[str, tuple[Snapshot, bytes]],
        t_snaps: dict[int, Snapshot],
        t_tags: dict[str, tuple[Snapshot, bytes]],
        earliest: Snapshot,
    ) -> list[str]:
        """What fast-forwarding ``branch`` into ``target`` would lose (empty = safe)."""
        known, fork = self._known(branch, target, snaps, tags)
        lo = earliest.id if fork is None else min(fork, earliest.id)
        problems = []
        for sid in sorted(t_snaps):
            s = t_snaps[sid]
            if sid >= lo and _identity(s) not in known.get(sid, set()) and s.commit_user != PUBLISH_FILLER_USER:
                problems.append(f"{_describe(s)} is not in branch '{branch}'")
        if t_snaps:
            head = t_snaps[max(t_snaps)]
            if head.id < lo and _identity(head) not in known.get(head.id, set()):
                problems.append(
                    f"the latest {_describe(head)} of '{target}' is older than the fork point (snapshot {lo}): "
                    f"'{target}' was rolled back or rewritten after branch '{branch}' was created"
                )
        for name, (s, _) in sorted(t_tags.items()):
            if name in tags and _identity(tags[name][0]) != _identity(s):
                problems.append(
                    f"tag '{name}' (snapshot {s.id}) would be moved to branch '{branch}''s snapshot {tags[name][0].id}"
                )
            elif s.id >= lo and _identity(s) not in known.get(s.id, set()):
                problems.append(f"tag '{name}' (snapshot {s.id}) is on a commit that is not in branch '{branch}'")
        b_schema_ids = set(self.schema_ids(branch))
        for sid in self.schema_ids(target):
            if sid < earliest.schema_id:
                continue
            if sid not in b_schema_ids:
                problems.append(f"schema {sid} of '{target}' was added after the fork and is not in branch '{branch}'")
            elif not self.same_schema(target, branch, sid):
                problems.append(f"schema {sid} differs between '{target}' and branch '{branch}'")
        return problems

    def same_schema(self, a: str, b: str, sid: int) -> bool:
        """Whether branches ``a`` and ``b`` hold the same schema ``sid`` (as JSON, not bytes)."""
        try:
            return json.loads(self._schema_bytes(a, sid)) == json.loads(self._schema_bytes(b, sid))
        except (FileNotFoundError, ValueError):
            return False

    # -- publish -----------------------------------------------------------------------------------
    def fast_forward(
        self, branch: str, target: str = MAIN_BRANCH, *, force: bool = False, keep_retained_tags: bool = True
    ) -> PublishResult:
        """Make ``target`` (main by default) continue with ``branch``'s commits (see the module docstring).
        With ``force``, tags of discarded commits that carry a retention (``time_retained``) are kept unless
        ``keep_retained_tags=False``: someone asked for them to live that long."""
        validate_branch_name(branch)
        self._require(branch)
        self._require(target)
        if branch == target:
            raise BranchError(f"Cannot fast-forward branch '{branch}' into itself.")
        snaps, tags = self._content(branch)
        if not snaps:
            raise BranchError(
                f"Branch '{branch}' of {self.table_path} has no snapshot; there is nothing to "
                "fast-forward. Write to the branch first."
            )
        earliest = snaps[min(snaps)]
        t_snaps, t_tags = self._content(target)
        problems = self._conflicts(branch, target, snaps, tags, t_snaps, t_tags, earliest)
        if problems and not force:
            raise BranchConflictError(
                f"Refusing to fast-forward '{target}' of {self.table_path} to branch '{branch}': '{target}' holds "
                f"changes the branch does not contain, which Paimon's fast-forward would silently discard: "
                f"{'; '.join(problems)}. Re-apply them on the branch and retry, or pass force=True to discard "
                "them (replace_main(..., keep_previous_as=...) keeps a copy of the old state)."
            )
        e = earliest.id
        keep_snaps = {sid for sid in t_snaps if sid < e}
        drop_tags = [
            n
            for n, (s, _) in t_tags.items()
            if n not in tags and s.id >= e and not (s.id in snaps and _identity(snaps[s.id]) == _identity(s))
        ]
        kept_tags = sorted(n for n in drop_tags if keep_retained_tags and self._retained(n, t_tags[n][1]))
        drop_tags = [n for n in drop_tags if n not in kept_tags]
        b_schemas = self.schema_ids(branch)
        drop_schemas = [sid for sid in self.schema_ids(target) if sid >= earliest.schema_id and sid not in b_schemas]
        known, fork = self._known(branch, target, snaps, tags)
        lo = e if fork is None else min(fork, e)
        lost = sorted(
            sid
            for sid, snap in t_snaps.items()
            if sid >= lo and _identity(snap) not in known.get(sid, set()) and snap.commit_user != PUBLISH_FILLER_USER
        )
        moved = [n for n, (s, _) in t_tags.items() if n in tags and _identity(tags[n][0]) != _identity(s)]
        result = self._publish(branch, target, snaps, tags, t_snaps, t_tags, keep_snaps, drop_tags, drop_schemas)
        result.discarded = problems
        result.discarded_snapshots = lost
        result.discarded_records = sum(t_snaps[sid].delta_record_count or 0 for sid in lost)
        result.discarded_tags = sorted({*(n for n in drop_tags if n in result.deleted_tags), *moved})
        result.kept_tags = kept_tags
        return result

    def _retained(self, name: str, data: bytes) -> bool:
        try:
            return tag_from_json(name, data.decode("utf-8"), name).time_retained_ms is not None
        except (ValueError, KeyError, TypeError):
            return False

    def replace_main(
        self, branch: str, target: str = MAIN_BRANCH, *, keep_previous_as: str | None = None
    ) -> PublishResult:
        """Make ``target``'s snapshots, schemas and tags exact copies of ``branch``'s; the previous target is
        first copied to branch ``keep_previous_as`` (if given) or discarded."""
        validate_branch_name(branch)
        self._require(branch)
        self._require(target)
        if branch == target:
            raise BranchError(f"Cannot replace branch '{target}' with itself.")
        snaps, tags = self._content(branch)
        if not snaps:
            raise BranchError(
                f"Branch '{branch}' of {self.table_path} has no snapshot; write to it before making it '{target}'."
            )
        t_snaps, t_tags = self._content(target)
        if keep_previous_as is not None:
            validate_branch_name(keep_previous_as)
            if self.exists(keep_previous_as):
                raise BranchError(
                    f"Cannot keep the previous '{target}' as branch '{keep_previous_as}': that branch "
                    "already exists. Pick another name."
                )
            self._save_copy(target, keep_previous_as, t_snaps)
        known = {(_identity(s)) for s in snaps.values()}
        discarded = [
            f"{_describe(s)} of '{target}'"
            for s in t_snaps.values()
            if _identity(s) not in known and s.commit_user != PUBLISH_FILLER_USER
        ]
        drop_tags = [n for n in t_tags if n not in tags]
        b_schemas = set(self.schema_ids(branch))
        drop_schemas = [sid for sid in self.schema_ids(target) if sid not in b_schemas]
        try:
            result = self._publish(branch, target, snaps, tags, t_snaps, t_tags, set(), drop_tags, drop_schemas)
        except BranchPublishRaceError as e:
            if keep_previous_as is not None and e.undone:
                # The target is as before (plus the racing commit): the copy made for this call is stale.
                self.fileio.delete_dir(self.branch_dir(keep_previous_as))
            raise
        result.discarded = discarded + [f"tag '{n}'" for n in drop_tags]
        result.kept_previous_as = keep_previous_as
        return result

    def _save_copy(self, source: str, name: str, snaps: dict[int, Snapshot]) -> None:
        """Copy every snapshot, schema and tag file of ``source`` into a new branch ``name``."""
        head = snaps[max(snaps)] if snaps else None
        schema_ids = self.schema_ids(source)
        lineage = BranchLineage(
            source,
            None,
            head.id if head else None,
            head.uuid if head else None,
            schema_ids[-1] if schema_ids else None,
            now_millis(),
        )
        root = self.branch_dir(name)
        if not self.fileio.try_create(f"{root}/{LINEAGE_FILE}", lineage.to_json().encode("utf-8")):
            raise BranchError(f"Branch '{name}' was created concurrently in {self.table_path}.")
        try:
            for src_dir, dst_dir, prefix in zip(
                self.dirs(source), self.dirs(name), (SCHEMA_PREFIX, SNAPSHOT_PREFIX, TAG_PREFIX)
            ):
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

    def _publish(
        self,
        branch: str,
        target: str,
        snaps: dict[int, Snapshot],
        tags: dict[str, tuple[Snapshot, bytes]],
        t_snaps: dict[int, Snapshot],
        t_tags: dict[str, tuple[Snapshot, bytes]],
        keep_snaps: set[int],
        drop_tags: Iterable[str],
        drop_schemas: Iterable[int],
    ) -> PublishResult:
        """Write ``branch``'s snapshots/schemas/tags over ``target`` in reader-safe order (see :class:`_Publish`).

        ``keep_snaps``: target snapshot ids (below the branch's earliest) that stay; every other target
        snapshot not in ``snaps`` is deleted.
        """
        result = _Publish(self, branch, target, snaps, tags, t_snaps, t_tags).run(keep_snaps, drop_tags, drop_schemas)
        if target == MAIN_BRANCH:  # main's history changed: so does what Iceberg readers see
            main = FileStore(self.fileio, self.table_path, MAIN_BRANCH)
            iceberg_sync.resync_quietly(main, TagManager(main).snapshot_ids)
        return result


# ------------------------------------------------------------------------------------------- publishing
class _Publish:
    """One publish of ``branch`` over ``target``: the ordered steps, a journal of every change made to the
    target, and the checks that catch a commit landing on the target meanwhile (module docstring, "Commits
    racing a publish").

    Before the switch every step is undoable: a detected commit makes :meth:`_abort` put back what the
    journal recorded (never touching the commit) and raise :class:`BranchPublishRaceError`. After the switch
    commits land on the published head and are fine; a planned file that changed meanwhile is left alone and
    reported.
    """

    def __init__(
        self,
        mgr: BranchManager,
        branch: str,
        target: str,
        snaps: dict[int, Snapshot],
        tags: dict[str, tuple[Snapshot, bytes]],
        t_snaps: dict[int, Snapshot],
        t_tags: dict[str, tuple[Snapshot, bytes]],
    ):
        self.mgr, self.fio = mgr, mgr.fileio
        self.branch, self.target = branch, target
        self.snaps, self.tags, self.t_snaps, self.t_tags = snaps, tags, t_snaps, t_tags
        self.b_mgr = SnapshotManager(self.fio, mgr.table_path, branch)
        self.t_mgr = SnapshotManager(self.fio, mgr.table_path, target)
        self.t_schema_dir, _, self.t_tag_dir = mgr.dirs(target)
        self.b_schema_dir = mgr.dirs(branch)[0]
        self.h = max(t_snaps) if t_snaps else None
        self.b = max(snaps)
        self.forward = self.h is None or self.b > self.h
        # The target's snapshot ids as this publish expects them right now (the plan plus our own changes).
        self.expected: set[int] = set(t_snaps)
        self.switched = False
        self.notes: list[str] = []  # after the switch: planned changes skipped because the file changed
        # The journal (what _abort undoes).
        self.created: dict[int, bytes] = {}
        self.replaced: dict[int, bytes] = {}  # id -> the target's bytes before
        self.removed: dict[int, bytes] = {}
        self.created_schemas: list[int] = []
        self.replaced_schemas: dict[int, bytes] = {}
        self.filler_lists: dict[int, list[str]] = {}  # the manifest lists written for each filler
        self.fillers: set[int] = set()  # created snapshots that are fillers (old content, no change)
        self._filler_base: list[ManifestFileMeta] | None = None  # the old head's manifests, read once

    # -- the journal's primitives ------------------------------------------------------------------
    def _path(self, sid: int) -> str:
        return self.t_mgr.snapshot_path(sid)

    def _branch_bytes(self, sid: int) -> bytes:
        return self.mgr.read_snapshot_bytes(self.b_mgr, sid)

    def _check(self, step: str) -> None:
        """Stop (undoing everything) if a snapshot id appeared on the target that this publish did not plan or
        create. Commits only ever add ids, so this one listing sees any commit that landed. Before the switch,
        ids above the branch head are commits made on the branch's not yet published snapshots (by a writer
        that lists): they go on with the published head, so they stop nothing."""
        intruders = sorted(set(self.t_mgr.list_ids()) - self.expected)
        if self.forward and not self.switched:
            intruders = [i for i in intruders if i <= self.b]
        if intruders:
            self._abort(step, intruders)

    def _try_create(self, path: str, data: bytes) -> bool:
        """Create-if-absent that recognises its own lost answer: a create that raised, or reported the file as
        taken, created it if the file now holds exactly ``data`` (every file a publish creates is unique: a
        filler carries its own uuid, a copy the branch snapshot's). A create that raised and left no file
        re-raises: nothing was created there."""
        try:
            if self.fio.try_create(path, data):
                return True
        except OSError:
            if self._read_or_none(path) == data:
                return True
            raise
        return self._read_or_none(path) == data

    def _create(self, sid: int, data: bytes, step: str, *, filler: bool = False) -> None:
        if not self._try_create(self._path(sid), data):
            self._abort(step, [sid])
        self.created[sid] = data
        self.expected.add(sid)
        if filler:
            self.fillers.add(sid)

    def _planned_bytes(self, sid: int, step: str) -> bytes | None:
        """The target's snapshot ``sid`` as it is now, if it is still the commit the plan saw. Before the
        switch a difference stops the publish; after it the file is left alone and reported."""
        path = self._path(sid)
        data = self._read_or_none(path)
        try:
            same = data is not None and _identity(Snapshot.from_json(data.decode("utf-8"), path)) == _identity(
                self.t_snaps[sid]
            )
        except (CorruptMetadataError, UnicodeDecodeError):
            same = False
        if same and data is not None:
            return data
        if not self.switched:
            self._abort(step, [sid])
        self.notes.append(f"snapshot {sid} of '{self.target}' changed while publishing and was left as it is")
        return None

    def _replace(self, sid: int, data: bytes, step: str) -> bool:
        old = self._planned_bytes(sid, step)
        if old is None:
            return False
        self.fio.write_bytes(self._path(sid), data)
        self.replaced.setdefault(sid, old)
        return True

    def _remove(self, sid: int, step: str) -> bool:
        old = self._planned_bytes(sid, step)
        if old is None:
            return False
        self.fio.delete(self._path(sid))
        self.removed[sid] = old
        self.expected.discard(sid)
        return True

    def _filler(self, sid: int, head: Snapshot | None, earliest: Snapshot) -> bytes:
        """A snapshot at ``sid`` that holds the target's old head's content (nothing, for an empty target) and
        no change of its own: it fills the free ids between the old head and the branch's earliest snapshot,
        so that a commit prepared on the old head cannot land there, under the published head."""
        store = ManifestStore(self.fio, self.mgr.table_path)
        if self._filler_base is None:
            self._filler_base = (
                store.read_list(head.base_manifest_list) + store.read_list(head.delta_manifest_list) if head else []
            )
        # Each filler has manifest lists of its own: expiration deletes an expired snapshot's lists, which must
        # never be another snapshot's.
        base_name, base_size = store.write_list(self._filler_base)
        delta_name, delta_size = store.write_list([])
        self.filler_lists[sid] = [store.path(base_name), store.path(delta_name)]
        filler = Snapshot(
            id=sid,
            schema_id=head.schema_id if head else earliest.schema_id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            index_manifest=head.index_manifest if head else None,
            commit_user=PUBLISH_FILLER_USER,
            commit_identifier=BATCH_COMMIT_IDENTIFIER,
            commit_kind="APPEND",
            time_millis=head.time_millis if head else earliest.time_millis,
            total_record_count=(head.total_record_count or 0) if head else 0,
            delta_record_count=0,
            watermark=head.watermark if head else None,
            next_row_id=head.next_row_id if head else None,
            properties={FILLER_PROPERTY: self.branch},
            uuid=str(uuid.uuid4()),
        )
        return filler.to_json().encode("utf-8")

    # -- the publish -------------------------------------------------------------------------------
    def run(self, keep_snaps: set[int], drop_tags: Iterable[str], drop_schemas: Iterable[int]) -> PublishResult:
        h, b, snaps, t_snaps = self.h, self.b, self.snaps, self.t_snaps
        result = PublishResult(self.branch, self.target, h, b)
        differing = sorted(sid for sid in snaps if sid in t_snaps and _identity(t_snaps[sid]) != _identity(snaps[sid]))
        doomed = sorted(sid for sid in t_snaps if sid not in snaps and sid not in keep_snaps)
        new_ids = sorted(sid for sid in snaps if sid not in t_snaps)

        # 0. The target is still what the plan saw, and hint-following readers keep seeing H until the switch.
        #    The hint is only ever moved *up* to H: a stale hint below a newer commit would send readers and
        #    writers to listing, which shows the branch's snapshots before the switch.
        self._check("before publishing")
        hint = self.t_mgr.latest_hint()
        if h is not None and (hint is None or hint < h):
            self.t_mgr.commit_latest_hint(h)
            self._check("after pinning the LATEST hint")

        # 1. Schemas the target lacks (create-if-absent; a concurrent ALTER on the target wins and stops us).
        t_schema_ids = set(self.mgr.schema_ids(self.target))
        rewrite_schemas: list[int] = []
        for sid in self.mgr.schema_ids(self.branch):
            if sid in t_schema_ids:
                if not self.mgr.same_schema(self.target, self.branch, sid):
                    rewrite_schemas.append(sid)
                continue
            data = self.fio.read_bytes(f"{self.b_schema_dir}/{SCHEMA_PREFIX}{sid}")
            if not self.fio.try_create(f"{self.t_schema_dir}/{SCHEMA_PREFIX}{sid}", data):
                self._abort(f"creating schema {sid}", [], schema_race=sid)
            self.created_schemas.append(sid)

        # 2. Snapshots, with the switch H -> B as one file operation.
        if self.forward:
            self._forward(new_ids, differing, doomed, rewrite_schemas, result)
        else:
            self._rewind(new_ids, differing, doomed, rewrite_schemas, result)
        result.replaced_snapshots = differing
        result.deleted_snapshots = [sid for sid in doomed if sid in self.removed]
        remaining = self.t_mgr.list_ids()
        if remaining:
            self.t_mgr.commit_latest_hint(remaining[-1])
            if self.fio.exists(f"{self.t_mgr.snapshot_dir}/{EARLIEST}") or any(
                sid < min(snaps) for sid in self.removed
            ):
                self.t_mgr.commit_earliest_hint(remaining[0])

        # 3. Tags: the branch's, then the target's that no longer belong (each only if unchanged since planned).
        for name, (_, data) in sorted(self.tags.items()):
            if self._put_tag(name, data):
                result.copied_tags.append(name)
        for name in sorted(drop_tags):
            if self._drop_tag(name):
                result.deleted_tags.append(name)

        # 4. Schemas only the old target had, unless a commit made since the switch uses one.
        used = self._schemas_used_above(b)
        for sid in sorted(drop_schemas, reverse=True):
            if sid in used:
                self.notes.append(f"schema {sid} of '{self.target}' was kept: a commit made meanwhile uses it")
            elif self.fio.delete(f"{self.t_schema_dir}/{SCHEMA_PREFIX}{sid}"):
                result.deleted_schemas.append(sid)
        result.copied_schemas = sorted(self.created_schemas + rewrite_schemas)
        result.latest_id = self.t_mgr.latest_id()
        if self.notes:
            raise BranchPublishRaceError(
                f"Branch '{self.branch}' was published into '{self.target}' of {self.mgr.table_path} (latest snapshot "
                f"{result.latest_id}), but another operation changed '{self.target}' at the same time: "
                f"{'; '.join(self.notes)}. Check those items; stop other writers and maintenance while publishing.",
                undone=False,
            )
        return result

    def _rewrite_schemas(self, sids: list[int]) -> None:
        for sid in sids:
            path = f"{self.t_schema_dir}/{SCHEMA_PREFIX}{sid}"
            self.replaced_schemas.setdefault(sid, self.fio.read_bytes(path))
            self.fio.write_bytes(path, self.fio.read_bytes(f"{self.b_schema_dir}/{SCHEMA_PREFIX}{sid}"))

    def _forward(
        self,
        new_ids: list[int],
        differing: list[int],
        doomed: list[int],
        rewrite_schemas: list[int],
        result: PublishResult,
    ) -> None:
        """B > H: every id ``H+1 .. B-1`` is first claimed, lowest first, with a *filler* (the old head's
        content, no change of its own); creating ``B`` right above the last one is the switch; then the fillers
        of ids the branch has become the branch's snapshots. Fillers of ids the branch does not have (it starts
        above ``H+1``) stay.

        This order is what makes the publish safe when it is stopped anywhere (an error, a kill) or raced:

        * before the switch the target holds nothing but the old content, so a reader or a writer (following
          ``LATEST`` or listing, ours, Java's or pypaimon's) can take only the old state for the head, and a
          publish that stops there leaves harmless no-change snapshots that a re-run completes;
        * the ids below ``B`` are taken in order, so no copy ever sits above a free id: a racing writer always
          builds on the old content, takes the next id before this publish does and stops it (:meth:`_abort`);
        * ``B`` is one complete snapshot, so the switch is one create for every kind of reader;
        * a commit prepared on any state the target showed before the switch can land only on an id that is
          taken by then, and its writer retries on the published head.
        """
        h, b = self.h, self.b
        first = (h or 0) + 1
        old_head = self.t_snaps[h] if h is not None else None
        earliest = self.snaps[min(self.snaps)]
        self._rewrite_schemas(rewrite_schemas)
        self._check("before claiming the ids below the branch head")
        for sid in range(first, b):
            self._create(
                sid, self._filler(sid, old_head, earliest), f"claiming snapshot {sid} with the old content", filler=True
            )
        self._create(b, self._branch_bytes(b), f"switching '{self.target}' to the branch (snapshot {b})")
        self.switched = True
        # After the switch the claimed ids are history below the head: the branch's snapshots replace the fillers
        # (nobody can have built on a filler since: each has its successor), whose manifest lists are then nobody's.
        for sid in range(first, b):
            if sid in self.snaps:
                self.fio.write_bytes(self._path(sid), self._branch_bytes(sid))
                self.fillers.discard(sid)
                for path in self.filler_lists.pop(sid, []):
                    self.fio.delete(path)
        result.filler_snapshots = sorted(self.fillers)
        result.created_snapshots = sorted(sid for sid in self.created if sid in self.snaps)
        # After the switch: ids <= H are history below the head, where commits cannot land (H+1 exists).
        for sid in new_ids:
            if sid < first and self._try_create(self._path(sid), self._branch_bytes(sid)):
                self.expected.add(sid)
                result.created_snapshots.append(sid)
        for sid in differing:
            self._replace(sid, self._branch_bytes(sid), f"rewriting snapshot {sid}")
        for sid in doomed:
            self._remove(sid, f"deleting snapshot {sid}")

    def _rewind(
        self,
        new_ids: list[int],
        differing: list[int],
        doomed: list[int],
        rewrite_schemas: list[int],
        result: PublishResult,
    ) -> None:
        """B <= H (force / replace): everything below H is rewritten or deleted while H stays the head, then
        ``LATEST`` moves to B and H is deleted: the switch. A commit on the old head lands on ``H+1``; every
        step checks for it first, and the check after the switch undoes the publish around it."""
        h, b = self.h, self.b
        assert h is not None
        for sid in new_ids:  # below H: not the head
            self._create(sid, self._branch_bytes(sid), f"copying snapshot {sid}")
        result.created_snapshots = list(new_ids)
        for sid in differing:
            if sid != b:
                self._check(f"before rewriting snapshot {sid}")
                self._replace(sid, self._branch_bytes(sid), f"rewriting snapshot {sid}")
        for sid in sorted((s for s in doomed if b < s < h), reverse=True):
            self._check(f"before deleting snapshot {sid}")
            self._remove(sid, f"deleting snapshot {sid}")
        self._check("before rewriting schemas")
        self._rewrite_schemas(rewrite_schemas)
        if b in differing:
            self._check(f"before rewriting snapshot {b}")
            self._replace(b, self._branch_bytes(b), f"rewriting snapshot {b}")
        self._check("before the switch")
        if h != b:
            # Deleting H is the switch: every id between B and H is gone by now, so a reader following the hint
            # (still H) or listing finds B. The hint moves only after it: moved first, a stop in between would
            # show B to hint followers while listing still found H, and writers on B would later run into H.
            self._remove(h, f"switching '{self.target}' to the branch (deleting old head {h})")
        self.t_mgr.commit_latest_hint(b)
        # After the switch a commit lands either on the published head (an id B+1 .. H, free now: it goes on
        # with the branch, nothing to undo) or on H+1 (prepared on the old head: the publish is undone around it).
        landed = set(self.t_mgr.list_ids()) - self.expected
        self.expected |= {sid for sid in landed if b < sid <= h}
        self._check(f"after switching '{self.target}' to the branch")
        self.switched = True
        for sid in doomed:
            if sid < b:
                self._remove(sid, f"deleting snapshot {sid}")

    # -- tags and schemas after the switch -----------------------------------------------------------
    def _put_tag(self, name: str, data: bytes) -> bool:
        path = f"{self.t_tag_dir}/{TAG_PREFIX}{name}"
        current = self.t_tags.get(name)
        if current is None:
            if self.fio.try_create(path, data):
                return True
            self.notes.append(f"tag '{name}' was created on '{self.target}' meanwhile and was left as it is")
            return False
        if current[1] == data:
            return False
        if self._read_or_none(path) != current[1]:
            self.notes.append(f"tag '{name}' of '{self.target}' changed meanwhile and was left as it is")
            return False
        self.fio.write_bytes(path, data)
        return True

    def _drop_tag(self, name: str) -> bool:
        path = f"{self.t_tag_dir}/{TAG_PREFIX}{name}"
        current = self._read_or_none(path)
        if current is None:
            return False
        if current != self.t_tags[name][1]:
            self.notes.append(f"tag '{name}' of '{self.target}' changed meanwhile and was kept")
            return False
        return self.fio.delete(path)

    def _read_or_none(self, path: str) -> bytes | None:
        try:
            return self.fio.read_bytes(path)
        except FileNotFoundError:
            return None

    def _schemas_used_above(self, sid: int) -> set[int]:
        """Schema ids of the target's snapshots above ``sid`` that this publish did not write."""
        used = set()
        for other in self.t_mgr.list_ids():
            if other > sid and other not in self.created:
                try:
                    used.add(self.t_mgr.snapshot(other).schema_id)
                except SnapshotNotFoundError:
                    continue
        return used

    # -- undo ----------------------------------------------------------------------------------------
    def _abort(self, step: str, ids: list[int], schema_race: int | None = None) -> NoReturn:
        """A commit landed on the target (``ids``) before the switch: undo every change in the journal, never
        touching a snapshot this publish did not write, and raise an error saying exactly what happened."""
        # First, and fast: take the copied branch snapshots away again, lowest first. While a commit sits right
        # below them they are what readers following its hint see (hint+1 exists), so every moment counts.
        copied = sorted(sid for sid in self.created if sid not in self.fillers and (self.h is None or sid > self.h))

        def on_top_of(ids: list[int]) -> list[int]:
            return [sid for sid in self.t_mgr.list_ids() if sid not in self.expected and sid > ids[-1]] if ids else []

        on_top = on_top_of(copied)
        if not on_top:
            for sid in copied:
                self.fio.delete(self._path(sid))
            on_top = on_top_of(copied)  # a writer may have read the branch's head just before: look again
            if on_top:  # put them back: the history under that commit must not have a hole
                for sid in copied:
                    self.fio.try_create(self._path(sid), self.created[sid])
            else:
                for sid in copied:
                    self.expected.discard(sid)
        kept_fillers = []
        for sid in sorted(self.fillers):
            # A filler holds the old content; one a commit was made on top of stays (the commit's history).
            if on_top or on_top_of([sid]):
                kept_fillers.append(sid)
            else:
                self.fio.delete(self._path(sid))
                self.expected.discard(sid)
        for sid, paths in self.filler_lists.items():
            if sid not in kept_fillers:  # the filler is gone, or was never created: its lists are nobody's
                for path in paths:
                    self.fio.delete(path)
        for sid in sorted(self.created):
            if sid not in copied and sid not in self.fillers:  # below H (B <= H): not the head, nobody built on it
                self.fio.delete(self._path(sid))
                self.expected.discard(sid)
        landed = [self._describe_landed(sid) for sid in ids]
        foreign = [sid for sid in self.t_mgr.list_ids() if sid not in self.expected]
        used = set()
        for sid in foreign:
            try:
                used.add(self.t_mgr.snapshot(sid).schema_id)
            except (SnapshotNotFoundError, CorruptMetadataError):
                continue
        outcome: list[str] = []
        if on_top:
            # A writer committed on top of the branch's copied snapshots (it listed, or followed the hint of the
            # racing commit): they stay, so the target now continues from the branch, and the commit(s) made on
            # the old head stay in its history without being in its latest snapshot.
            outcome.append(
                f"snapshot(s) {on_top} were committed on top of the branch's snapshots already copied, so "
                f"'{self.target}' now continues from branch '{self.branch}' (latest snapshot {max(on_top)}); "
                f"the commit(s) above, made on the old head, are kept in its history but their rows are not in "
                f"the latest snapshot: read them with scan.snapshot-id and write them again"
            )
        elif kept_fillers:
            outcome.append(
                f"snapshot(s) {kept_fillers} stay: they hold the old content unchanged (commit user "
                f"'{PUBLISH_FILLER_USER}') and the racing commit was made on top of them"
            )
        for sid, data in sorted(self.removed.items()):
            if self.fio.try_create(self._path(sid), data):
                self.expected.add(sid)
            else:
                outcome.append(f"snapshot {sid} could not be restored (its id was taken meanwhile)")
        for sid, data in sorted(self.replaced.items()):
            self.fio.write_bytes(self._path(sid), data)
        for sid, data in sorted(self.replaced_schemas.items()):
            if sid in used:
                outcome.append(f"schema {sid} keeps the branch's version, which a concurrent commit uses")
            else:
                self.fio.write_bytes(f"{self.t_schema_dir}/{SCHEMA_PREFIX}{sid}", data)
        if self.created_schemas:
            # A writer may already have picked a new schema up as the target's latest; deleting it could make
            # that writer's commit unreadable, so it stays (a schema file alone changes no data).
            outcome.append(
                f"schema file(s) {self.created_schemas} copied from the branch stay on "
                f"'{self.target}' because a concurrent writer may already use them"
            )
        remaining = self.t_mgr.list_ids()
        if remaining:
            self.t_mgr.commit_latest_hint(remaining[-1])
        head = remaining[-1] if remaining else None
        if schema_race is not None:
            what = f"schema {schema_race} was added to '{self.target}' concurrently"
        else:
            what = f"{'; '.join(landed)} landed on '{self.target}'" if landed else f"'{self.target}' changed"
        if self.created or self.removed or self.replaced or self.replaced_schemas or self.created_schemas:
            status = (
                "The publish could not be undone"
                if on_top
                else (f"The publish was undone; '{self.target}' keeps every commit (latest snapshot {head})")
            )
        else:
            status = f"Nothing was published; '{self.target}' keeps every commit (latest snapshot {head})"
        raise BranchPublishRaceError(
            f"While branch '{self.branch}' was being published into '{self.target}' of {self.mgr.table_path} "
            f"({step}), {what}. {status}"
            + (f"; {'; '.join(outcome)}" if outcome else "")
            + f". Stop writers to '{self.target}' (or wait for them) and run the publish again; it re-checks what "
            f"'{self.target}' holds (a commit on the old head is then reported, or discarded only with force=True).",
            undone=not on_top,
        )

    def _describe_landed(self, sid: int) -> str:
        try:
            s = self.t_mgr.snapshot(sid)
        except (SnapshotNotFoundError, CorruptMetadataError):
            return f"snapshot {sid}"
        return f"{_describe(s)} by commit user '{s.commit_user}'"


__all__ = ["BranchManager", "BranchInfo", "BranchLineage", "PublishResult", "LINEAGE_FILE"]
