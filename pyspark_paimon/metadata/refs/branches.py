"""Branches (Java's `BranchManager.branchPath`, `FileSystemBranchManager`): create, list, rename, fast-forward and
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

**Lineage file** (``branch.json``, :mod:`~pyspark_paimon.metadata.refs.lineage`): where a branch came from,
which Paimon records nowhere; the fork point of the ancestry checks below and of branch merges.

**Fast-forward** (:meth:`BranchManager.fast_forward`) produces Paimon's on-disk result (Java's
`FileSystemBranchManager`): the target's snapshots with id >= E (the branch's earliest snapshot) and schemas >=
E.schemaId are replaced by the branch's, its tags on those snapshots are replaced by the branch's tags, ``LATEST``
points at the branch head. Unlike Paimon it is **safe by default**: it refuses (:class:`BranchConflictError`, listing
what would be lost) when the target holds anything the branch does not contain: a snapshot or tag from the fork point on
whose identity (``uuid``, else the whole snapshot) is not in the branch's history, a schema added after the fork,
a tag name the branch points elsewhere, or a target head older than the fork point (rolled back since).
``force=True`` discards those, as Paimon always does. Tags of the target that point at snapshots the branch
also contains are kept (Paimon deletes them; they remain valid, so keeping them loses nothing).

**Publishing** (:mod:`~pyspark_paimon.metadata.refs.publish`): ``fast_forward`` and ``replace_main`` plan here
what the target keeps and loses, then :class:`~pyspark_paimon.metadata.refs.publish.Publish` writes it in an
order where readers of the latest snapshot see the old or the new head, never a mix, and undoes it around a
commit that lands meanwhile.

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
from dataclasses import replace
from typing import Callable, Iterable

from pyspark_paimon.errors import (
    BranchConflictError,
    BranchError,
    BranchNotFoundError,
    CorruptMetadataError,
    PaimonError,
    SnapshotNotFoundError,
)
from pyspark_paimon.metadata.effects import took_effect
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.identifier import validate_branch_name
from pyspark_paimon.metadata.refs.branch_making import BranchMaker
from pyspark_paimon.metadata.refs.lineage import (
    LINEAGE_FILE,
    BranchInfo,
    BranchLineage,
    LineageVia,
    ReplacedBy,
    snapshot_identity,
)
from pyspark_paimon.metadata.refs.publish import (
    PUBLISH_FILLER_USER,
    Publish,
    PublishResult,
    describe_snapshot,
)
from pyspark_paimon.metadata.refs.tags import (
    AT_OR_BEFORE,
    TAG_PREFIX,
    TagManager,
    TimestampRule,
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
from pyspark_paimon.metadata.schema.table_schema import SCHEMA_PREFIX, SchemaManager
from pyspark_paimon.metadata.snapshots.snapshot import (
    MAIN_BRANCH,
    SNAPSHOT_PREFIX,
    Snapshot,
    SnapshotManager,
    branch_dirs,
    branch_path,
    now_millis,
)
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import duration_millis, to_millis

log = logging.getLogger(__name__)

# Options that name another branch a read depends on; dropping or renaming that branch breaks the read.
_BRANCH_OPTIONS = (SCAN_FALLBACK_BRANCH, SCAN_FALLBACK_SNAPSHOT_BRANCH, SCAN_FALLBACK_DELTA_BRANCH)


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
        self.maker = BranchMaker(self.fileio, self.table_path)

    # -- paths and lookups -------------------------------------------------------------------------
    def branch_dir(self, name: str) -> str:
        return branch_path(self.table_path, name)

    def dirs(self, name: str) -> tuple[str, str, str]:
        """The ``schema/``, ``snapshot/`` and ``tag/`` directories of branch ``name``."""
        root = self.branch_dir(name)
        return f"{root}/schema", f"{root}/snapshot", f"{root}/tag"

    def exists(self, name: str) -> bool:
        """Whether branch ``name`` exists: a complete branch (a half-made one does not, ``branch_making.py``)."""
        if name == MAIN_BRANCH:
            return True
        return self.maker.state(name).kind == "complete"

    def names(self) -> list[str]:
        """Names of the complete branches (``main`` excluded)."""
        return [b.name for b in self.list_branches()]

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
        state = self.maker.state(name) if name != MAIN_BRANCH else None
        if state is None or state.kind != "complete":
            self._require(name)
        return self._info(name, None, state.lineage if state is not None else None)

    def _info(self, name: str, mtime: int | None, lin: BranchLineage | None) -> BranchInfo:
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
        out = []
        for name, mtime in branch_dirs(self.fileio, self.table_path).items():
            state = self.maker.state(name)
            if state.kind == "complete":
                out.append(self._info(name, mtime, state.lineage))
        return out

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
        timestamp_rule: TimestampRule = AT_OR_BEFORE,
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
        state = self.maker.state(name)
        if state.kind == "complete":
            if ignore_if_exists:
                return self._info(name, None, state.lineage)
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

        wanted = BranchLineage(
            source_branch,
            tag,
            source.id if source else None,
            source.uuid if source else None,
            last_schema,
            now_millis(),
            time_retained_millis=retained,
        )
        # The steps of branch_making.py: claim the name (a pending branch.json), write the files, finish.
        mine = self.maker.claim(name, wanted, state)
        try:
            dst_schema_dir, dst_snapshot_dir, dst_tag_dir = self.dirs(name)
            # Schemas first: at every step each file present has what it references (Paimon and pypaimon list
            # branch directories, and may read this one before it is finished).
            for sid in copy_schemas:
                self.fileio.write_bytes(
                    f"{dst_schema_dir}/{SCHEMA_PREFIX}{sid}",
                    self.fileio.read_bytes(f"{src_schema_dir}/{SCHEMA_PREFIX}{sid}"),
                )
            if snap_copy is not None:
                self.fileio.write_bytes(f"{dst_snapshot_dir}/{SNAPSHOT_PREFIX}{snap_copy[0]}", snap_copy[1])
            if tag_copy is not None:
                self.fileio.write_bytes(f"{dst_tag_dir}/{TAG_PREFIX}{tag_copy[0]}", tag_copy[1])
            done = self.maker.finish(name, mine)
        except BaseException:
            self.maker.abandon(name, mine)
            raise
        # Reported from what was written (no read after the branch exists, which could fail after the fact).
        latest = snap_copy[0] if snap_copy is not None else None
        return BranchInfo(
            name,
            done.created_at_millis,
            source_branch,
            tag,
            done.source_snapshot_id,
            latest,
            True,
            retained,
        )

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
        if snapshot_identity(Snapshot.from_json(data.decode("utf-8"), path)) != snapshot_identity(tagged):
            return _trimmed_snapshot_json(tag_text, tag_path)
        return data

    # -- delete / rename ---------------------------------------------------------------------------
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
        """Why branch ``name`` cannot be deleted: the branches whose options read from it (empty = none)."""
        return self._dependents(name)

    def deletable(self, name: str, *, ignore_if_not_exists: bool = False) -> bool:
        """Whether branch ``name`` may be deleted (``expire.delete_branches`` deletes it): True when it exists and
        no other branch's options read from it; False when it does not exist and ``ignore_if_not_exists``;
        otherwise BranchNotFoundError or BranchError naming the option to change."""
        validate_branch_name(name)
        if self.maker.state(name).kind == "absent":  # a half-made branch may be deleted (branch_making.py)
            if ignore_if_not_exists:
                return False
            self._require(name)
        deps = self._dependents(name)
        if deps:
            raise BranchError(
                f"Cannot delete branch '{name}': {'; '.join(deps)}. Remove or change that option first "
                "(t.update_schema().remove_options / set_options, on that branch's table: t.on_branch(...))."
            )
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
            history = {
                snapshot_identity(s) for s in list(snaps.values()) + [t for t, _ in tags.values()] if s.id < fork
            }
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
        if self.maker.state(new).kind != "absent":
            raise BranchError(f"Cannot rename branch '{old}' to '{new}': branch '{new}' already exists.")
        deps = self._dependents(old)
        if deps:
            raise BranchError(f"Cannot rename branch '{old}': {'; '.join(deps)}. Change that option first.")
        self.fileio.rename(self.branch_dir(old), self.branch_dir(new))
        took_effect(f"branch '{old}' renamed to '{new}'")
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
            known.setdefault(s.id, set()).add(snapshot_identity(s))
        for s, _ in tags.values():
            known.setdefault(s.id, set()).add(snapshot_identity(s))
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
                    known.setdefault(s.id, set()).add(snapshot_identity(s))
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
            if sid >= lo and snapshot_identity(s) not in known.get(sid, set()) and s.commit_user != PUBLISH_FILLER_USER:
                problems.append(f"{describe_snapshot(s)} is not in branch '{branch}'")
        if t_snaps:
            head = t_snaps[max(t_snaps)]
            if head.id < lo and snapshot_identity(head) not in known.get(head.id, set()):
                problems.append(
                    f"the latest {describe_snapshot(head)} of '{target}' is older than the fork point (snapshot {lo}): "
                    f"'{target}' was rolled back or rewritten after branch '{branch}' was created"
                )
        for name, (s, _) in sorted(t_tags.items()):
            if name in tags and snapshot_identity(tags[name][0]) != snapshot_identity(s):
                problems.append(
                    f"tag '{name}' (snapshot {s.id}) would be moved to branch '{branch}''s snapshot {tags[name][0].id}"
                )
            elif s.id >= lo and snapshot_identity(s) not in known.get(s.id, set()):
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
            if n not in tags
            and s.id >= e
            and not (s.id in snaps and snapshot_identity(snaps[s.id]) == snapshot_identity(s))
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
            if sid >= lo
            and snapshot_identity(snap) not in known.get(sid, set())
            and snap.commit_user != PUBLISH_FILLER_USER
        )
        moved = [
            n for n, (s, _) in t_tags.items() if n in tags and snapshot_identity(tags[n][0]) != snapshot_identity(s)
        ]
        publish = Publish(self, branch, target, snaps, tags, t_snaps, t_tags)
        result = self._publish(publish, keep_snaps, drop_tags, drop_schemas)
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
        first copied to branch ``keep_previous_as`` (if given) or discarded.

        The copy stays half made (``branch_making.py``) until the switch and is finished right after it: a
        replace that fails or is stopped before its switch leaves no new branch (a failure removes the copy, a
        kill leaves it for the same call run again, which completes it, or for ``remove_orphan_files``); from
        the switch on the copy is the old state's only record and is kept. Running the same call again after
        its switch finishes the publish and keeps that copy."""
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
        copy: BranchLineage | None = None
        if keep_previous_as is not None:
            validate_branch_name(keep_previous_as)
            copy = self._save_copy(target, keep_previous_as, branch, t_snaps, snaps[max(snaps)])
        known = {(snapshot_identity(s)) for s in snaps.values()}
        discarded = [
            f"{describe_snapshot(s)} of '{target}'"
            for s in t_snaps.values()
            if snapshot_identity(s) not in known and s.commit_user != PUBLISH_FILLER_USER
        ]
        drop_tags = [n for n in t_tags if n not in tags]
        b_schemas = set(self.schema_ids(branch))
        drop_schemas = [sid for sid in self.schema_ids(target) if sid not in b_schemas]
        publish = Publish(self, branch, target, snaps, tags, t_snaps, t_tags)
        on_switch = None
        if copy is not None and keep_previous_as is not None:
            name, pending = keep_previous_as, copy

            def on_switch() -> None:
                self._finish_copy(name, pending)

        try:
            result = self._publish(publish, set(), drop_tags, drop_schemas, on_switch)
        except BaseException:
            if copy is not None and keep_previous_as is not None:
                # Removed only while the target still has the head it copied (a failure before the switch, or a
                # publish undone around a racing commit): from the switch on it is the old state's only record.
                self.maker.abandon(keep_previous_as, copy)
            raise
        result.discarded = discarded + [f"tag '{n}'" for n in drop_tags]
        result.kept_previous_as = keep_previous_as
        return result

    def _save_copy(
        self, source: str, name: str, replaced_by: str, snaps: dict[int, Snapshot], new_head: Snapshot
    ) -> BranchLineage | None:
        """Copy every snapshot, schema and tag file of ``source`` into a new, half-made branch ``name`` (finished at
        the switch, :meth:`replace_main`); returns its pending record. Fillers above ``source``'s last commit (a
        publish stopped before its switch) are not part of the previous state and are not copied. Returns None
        when the copy is already there: ``name`` holds ``source``'s previous state saved by this same replace,
        whose switch happened (``source``'s head is ``replaced_by``'s head)."""
        own = {sid: s for sid, s in snaps.items() if sid <= self._settled_id(snaps)}
        head = own[max(own)] if own else None
        schema_ids = self.schema_ids(source)
        wanted = BranchLineage(
            source,
            None,
            head.id if head else None,
            head.uuid if head else None,
            schema_ids[-1] if schema_ids else None,
            now_millis(),
            replaced_by=ReplacedBy(replaced_by, new_head.id, new_head.uuid),
        )
        state = self.maker.state(name)
        if state.kind == "complete":
            lin = state.lineage
            current = snaps[max(snaps)] if snaps else None
            if (
                lin is not None
                and lin.source_branch == source
                and lin.replaced_by is not None
                and lin.replaced_by.branch == replaced_by
                and current is not None
                and snapshot_identity(current) == snapshot_identity(new_head)
            ):
                if lin.pending:  # stopped between the switch and finishing the copy
                    self._finish_copy(name, lin)
                return None
            raise BranchError(
                f"Cannot keep the previous '{source}' as branch '{name}': that branch already exists. Pick another "
                "name. Nothing was changed."
            )
        mine = self.maker.claim(name, wanted, state)
        try:
            for src_dir, dst_dir, prefix in zip(
                self.dirs(source), self.dirs(name), (SCHEMA_PREFIX, SNAPSHOT_PREFIX, TAG_PREFIX)
            ):
                for n in self.fileio.list_names(src_dir):
                    if not n.startswith(prefix):
                        continue
                    if prefix == SNAPSHOT_PREFIX and n[len(prefix) :].isdigit() and int(n[len(prefix) :]) not in own:
                        continue
                    try:
                        data = self.fileio.read_bytes(f"{src_dir}/{n}")
                    except FileNotFoundError:
                        continue
                    self.fileio.write_bytes(f"{dst_dir}/{n}", data)
        except BaseException:
            self.maker.abandon(name, mine)
            raise
        return mine

    @staticmethod
    def _settled_id(snaps: dict[int, Snapshot]) -> int:
        """The id of the last snapshot that is not a publish's filler (0: none): fillers above it are the claims of
        a publish that has not switched yet (``publish.py``), holding the old head's content."""
        real = [sid for sid, s in snaps.items() if s.commit_user != PUBLISH_FILLER_USER]
        return max(real) if real else 0

    def _finish_copy(self, name: str, pending: BranchLineage) -> None:
        """Finish the saved copy after the switch. A failure is logged: from the switch on the copy counts as
        complete anyway (``branch_making.py``), so the replace, which took effect, is not reported as failed."""
        try:
            self.maker.finish(name, pending)
        except (OSError, PaimonError) as e:
            log.warning(
                "branch '%s' of %s holds the previous state, but marking it complete failed (%s); it counts as "
                "complete",
                name,
                self.table_path,
                e,
            )

    def _publish(
        self,
        publish: Publish,
        keep_snaps: set[int],
        drop_tags: Iterable[str],
        drop_schemas: Iterable[int],
        on_switch: Callable[[], None] | None = None,
    ) -> PublishResult:
        """Run ``publish`` (the branch's snapshots/schemas/tags over the target, in reader-safe order: see
        :class:`Publish`); ``on_switch`` runs right after the switch.

        ``keep_snaps``: target snapshot ids (below the branch's earliest) that stay; every other target
        snapshot not in the branch is deleted.
        """
        result = publish.run(keep_snaps, drop_tags, drop_schemas, on_switch=on_switch)
        if publish.target == MAIN_BRANCH:  # main's history changed: so does what Iceberg readers see
            main = FileStore(self.fileio, self.table_path, MAIN_BRANCH)
            iceberg_sync.resync_quietly(main, TagManager(main).snapshot_ids)
        return result


__all__ = ["BranchManager"]
