"""Publishing one branch over another (``fast_forward``, ``replace_main``): the file operations in reader-safe
order, a journal of every change made to the target, and the undo around a commit that lands meanwhile.
:class:`~pyspark_paimon.metadata.refs.branches.BranchManager` decides *what* to publish (which snapshots the
target keeps, which tags and schemas go, whether anything would be lost); :class:`Publish` writes it. Kept
apart because this is the one part of branch handling that races concurrent readers and writers.

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

**Commits racing a publish** (:class:`Publish`). A commit on the target is the create-if-absent of
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
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable, NoReturn, Protocol

from pyspark_paimon.errors import BranchPublishRaceError, CorruptMetadataError, SnapshotNotFoundError
from pyspark_paimon.metadata.effects import took_effect
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.io.own_create import create_own, read_or_none
from pyspark_paimon.metadata.manifests.manifest import ManifestFileMeta, ManifestStore
from pyspark_paimon.metadata.refs.lineage import snapshot_identity
from pyspark_paimon.metadata.refs.tags import TAG_PREFIX
from pyspark_paimon.metadata.schema.table_schema import SCHEMA_PREFIX
from pyspark_paimon.metadata.snapshots.snapshot import (
    BATCH_COMMIT_IDENTIFIER,
    EARLIEST,
    Snapshot,
    SnapshotManager,
)
from pyspark_paimon.metadata.timeutil import local_datetime

# Commit user and snapshot property of the snapshot a publish writes at the target's old head + 1 when the branch
# starts higher up (:meth:`Publish._filler`): it carries the old content and no change of its own.
PUBLISH_FILLER_USER = "pyspark-paimon-publish-filler"
FILLER_PROPERTY = "pyspark-paimon.filler-for-branch"


@dataclass
class PublishResult:
    """What :meth:`BranchManager.fast_forward` / :meth:`BranchManager.replace_main` changed on the target."""

    branch: str
    """The branch published."""
    target: str
    """The branch published into."""
    previous_latest_id: int | None
    """The target's latest snapshot before."""
    latest_id: int | None
    """The target's latest snapshot after: the published head."""
    created_snapshots: list[int] = field(default_factory=list)
    """Snapshot ids the target did not have, copied from the branch."""
    replaced_snapshots: list[int] = field(default_factory=list)
    """Snapshot ids whose content was replaced by the branch's."""
    deleted_snapshots: list[int] = field(default_factory=list)
    """Snapshot ids of the target deleted."""
    copied_tags: list[str] = field(default_factory=list)
    """Tags copied from the branch."""
    deleted_tags: list[str] = field(default_factory=list)
    """Tags of the target deleted."""
    copied_schemas: list[int] = field(default_factory=list)
    """Schema ids copied from the branch."""
    deleted_schemas: list[int] = field(default_factory=list)
    """Schema ids of the target deleted."""
    discarded: list[str] = field(default_factory=list)  # what force/replace threw away (empty when safe)
    """What ``force`` / ``replace_main`` threw away, described (empty when the publish was safe)."""
    # fast_forward(force=True): the target's commits that are gone, the tags removed or moved with them, the net
    # record count those commits had added (sum of their delta record counts), and the tags kept because they
    # carry a retention (their tag files keep the discarded content readable until they expire).
    discarded_snapshots: list[int] = field(default_factory=list)
    """``force=True``: the target's commits that are gone."""
    discarded_tags: list[str] = field(default_factory=list)
    """``force=True``: the tags removed or moved with them."""
    discarded_records: int = 0
    """``force=True``: the net record count those commits had added."""
    kept_tags: list[str] = field(default_factory=list)
    """``force=True``: tags kept because they carry a retention (they keep the discarded content readable)."""
    kept_previous_as: str | None = None
    """``replace_main(keep_previous_as=)``: the branch holding the previous state."""
    # Ids of the fillers that stay: the target's old head + 1 up to below the branch's earliest snapshot, when
    # the branch starts higher up (module docstring).
    filler_snapshots: list[int] = field(default_factory=list)
    """Ids of no-change snapshots written between the target's old head and the branch's earliest snapshot, when
    the branch starts higher up (so a commit prepared on the old head cannot land under the new one)."""


def describe_snapshot(s: Snapshot) -> str:
    """A snapshot as error messages name it: id, kind, commit time and the rows it added."""
    delta = f", {s.delta_record_count:+d} rows" if s.delta_record_count is not None else ""
    when = local_datetime(s.time_millis).strftime("%Y-%m-%d %H:%M:%S")
    return f"snapshot {s.id} ({s.commit_kind} at {when} local, {s.time_millis} epoch ms{delta})"


class BranchFiles(Protocol):
    """What a publish reads through the table's branch manager
    (:class:`~pyspark_paimon.metadata.refs.branches.BranchManager`, which imports this module)."""

    fileio: FileIO
    table_path: str

    def dirs(self, name: str) -> tuple[str, str, str]: ...

    def schema_ids(self, branch: str) -> list[int]: ...

    def same_schema(self, a: str, b: str, sid: int) -> bool: ...

    def read_snapshot_bytes(self, snapshots: SnapshotManager, sid: int) -> bytes: ...


class Publish:
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
        mgr: BranchFiles,
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
        self._on_switch: Callable[[], None] | None = None
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
        """Create-if-absent that recognises its own lost answer (:func:`create_own`; every file a publish creates
        is unique: a filler carries its own uuid, a copy the branch snapshot's)."""
        return create_own(self.fio, path, data)

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
            same = data is not None and snapshot_identity(
                Snapshot.from_json(data.decode("utf-8"), path)
            ) == snapshot_identity(self.t_snaps[sid])
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
    def run(
        self,
        keep_snaps: set[int],
        drop_tags: Iterable[str],
        drop_schemas: Iterable[int],
        *,
        on_switch: Callable[[], None] | None = None,
    ) -> PublishResult:
        """Publish (module docstring); ``on_switch`` runs right after the switch (``replace_main`` finishes the
        copy of the previous target there)."""
        self._on_switch = on_switch
        h, b, snaps, t_snaps = self.h, self.b, self.snaps, self.t_snaps
        result = PublishResult(self.branch, self.target, h, b)
        differing = sorted(
            sid for sid in snaps if sid in t_snaps and snapshot_identity(t_snaps[sid]) != snapshot_identity(snaps[sid])
        )
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
        self._switched(b)
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
            # (still H, now missing) or listing finds B. The hint is left on H until the check below: pointing at
            # B, it would keep hint followers on B even after a commit prepared on the old head landed on H+1,
            # and a stop in between would show B to them while listing found H.
            self._remove(h, f"switching '{self.target}' to the branch (deleting old head {h})")
        # After the switch a commit lands either on the published head (ids B+1 .. H, free now: it goes on with
        # the branch, nothing to undo) or on H+1 (prepared on the old head: the publish is undone around it). An
        # id above H is on the published line only once that line has filled every id up to H; otherwise it
        # was prepared on the old head, and the commits made on the published head meanwhile are reported too.
        landed = set(self.t_mgr.list_ids()) - self.expected
        on_published = set(range(b + 1, h + 1)) <= landed
        if on_published or not any(sid > h for sid in landed):
            self.expected |= landed
        self._check(f"after switching '{self.target}' to the branch")
        self._switched(b)
        for sid in doomed:
            if sid < b:
                self._remove(sid, f"deleting snapshot {sid}")

    def _switched(self, b: int) -> None:
        self.switched = True
        took_effect(f"'{self.target}' switched to branch '{self.branch}' (snapshot {b})")
        if self._on_switch is not None:
            self._on_switch()

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
        return read_or_none(self.fio, path)

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
        stranded: list[int] = []
        for sid, data in sorted(self.removed.items()):
            if self.fio.try_create(self._path(sid), data):
                self.expected.add(sid)
            else:
                stranded.append(sid)
                outcome.append(
                    f"snapshot {sid} could not be restored: {self._describe_landed(sid)} was committed there on the "
                    f"published branch head and is not in the latest snapshot (read it with scan.snapshot-id and "
                    f"write its rows again)"
                )
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
                if on_top or stranded
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
            undone=not on_top and not stranded,
        )

    def _describe_landed(self, sid: int) -> str:
        try:
            s = self.t_mgr.snapshot(sid)
        except (SnapshotNotFoundError, CorruptMetadataError):
            return f"snapshot {sid}"
        return f"{describe_snapshot(s)} by commit user '{s.commit_user}'"


__all__ = ["FILLER_PROPERTY", "PUBLISH_FILLER_USER", "BranchFiles", "Publish", "PublishResult", "describe_snapshot"]
