"""Making a branch so that it is stopped safely at every step: the claim, the finish, the clean-up of one that
stopped half way, and what a branch directory is (complete, half made, absent). Kept apart from the branch
manager because creation, ``replace_main``'s saved copy and orphan removal all judge half-made branches by the
same rules.

**The steps.** A branch is several files (``branch.json``, schemas, a snapshot, a tag) and no store writes them
at once, so one of them must say when the rest is there. ``branch.json`` (:mod:`~pyspark_paimon.metadata.refs.
lineage`) does: it is created first, exclusively, with ``"pending": true`` and a fresh ``creationId`` (:meth:`
BranchMaker.claim`, which claims the name), then the caller writes the branch's files, then ``branch.json`` is
rewritten without ``pending`` (:meth:`BranchMaker.finish`): from then on the branch exists. Our listings, ``exists``
and every operation that looks a branch up by name see only complete branches (:meth:`BranchMaker.state`), so a
create stopped anywhere (an error, a kill) leaves nothing a reader lists. Paimon and pypaimon list ``branch-*``
directories and never read ``branch.json``; they may list a half-made branch until it is completed or removed.

* **Its own lost answers.** The ``creationId`` makes the claim's content unique, so a create whose answer was lost
  is recognised as this call's (:func:`~pyspark_paimon.metadata.io.own_create.create_own`); a finish whose answer
  was lost is recognised by reading the file back.
* **A failed create removes what it made** (:meth:`BranchMaker.abandon`), and only while ``branch.json`` is still
  pending with its own ``creationId``: then every file in the directory is certainly its own (nobody else writes
  into a branch that does not exist). Anything else is left, and the error is raised either way.
* **A half-made branch left by a kill.** A later create of the same name finds it pending and decides by the
  record, not by guessing whether the creator still runs:

  - the *same* create (same source, fork snapshot, schemas, retention; :meth:`BranchLineage.same_request`)
    completes it, whether its first creator is dead or alive: both write the same bytes to the same paths, so
    any interleaving ends in the same complete branch. It re-claims the record with its own ``creationId``
    first, so a first creator that fails later no longer takes the directory for its own and cannot remove it;
  - a *different* create replaces it only once the record is older than :data:`PENDING_TIMEOUT_MS` (a create
    copies a handful of small files and takes seconds; a claim an hour old belongs to a process that died),
    and otherwise refuses, naming the record's age: two different creates of one name are a conflict a caller
    must see, never something settled by whoever writes last.
* **Orphan removal** (:meth:`BranchMaker.remove_abandoned`, called by ``remove_orphan_files``) removes half-made
  branches whose claim is older than its cutoff, and directories holding neither ``branch.json`` nor a schema
  (the directory a create made before it failed to claim the name), like the temp files of killed writers. A
  pending branch somebody has committed to (it has a snapshot the create did not copy) is kept.

**The saved copy of ``replace_main(keep_previous_as=)``** names the branch that replaces its source and that
branch's head B (``replacedBy``), and stays pending until the switch (``BranchManager.replace_main`` finishes it
right after). Whether it is needed does not depend on that last write: it is needed, and counts as complete, as
soon as the switch happened (:meth:`BranchMaker.copy_needed`: the source holds B at B's id, and not its old head
above it, which a rewinding publish deletes at its switch), because from then on it is the old state's only
record. A publish undone around a racing commit removes B again, so its copy is not needed. When in doubt (no uuid
to compare, or B's id expired from the source), the copy is kept, and ``remove_orphan_files`` finishes a needed
copy left pending. A copy of a replace stopped before its switch is half made like any other, completed by the
same call run again or removed by orphan removal.

Branches made before these steps existed have a ``branch.json`` without ``creationId``; such a record without a
``schema/`` directory is a half-made branch of the old create (the bug this module fixes) and is treated as one.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Literal

from pyspark_paimon.errors import BranchError, PaimonError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.io.own_create import create_own, read_or_none
from pyspark_paimon.metadata.refs.lineage import LINEAGE_FILE, BranchLineage
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager, branch_dirs, branch_path
from pyspark_paimon.metadata.timeutil import local_datetime, now_millis

log = logging.getLogger(__name__)

#: How old a half-made branch's claim must be before a *different* create of the same name replaces it.
PENDING_TIMEOUT_MS = 3600 * 1000

StateKind = Literal["complete", "pending", "absent"]


@dataclass(frozen=True)
class DirState:
    """What the directory of branch ``name`` holds: a ``complete`` branch, a ``pending`` (half-made) one, or
    ``absent`` (no directory, or one holding neither ``branch.json`` nor a schema). ``lineage``: its record."""

    kind: StateKind
    lineage: BranchLineage | None = None


class BranchMaker:
    """The steps of making a branch of one table (module docstring)."""

    def __init__(self, fileio: FileIO, table_path: str):
        self.fileio = fileio
        self.table_path = table_path

    def _root(self, name: str) -> str:
        return branch_path(self.table_path, name)

    def _record_path(self, name: str) -> str:
        return f"{self._root(name)}/{LINEAGE_FILE}"

    def _read(self, name: str) -> tuple[bytes | None, BranchLineage | None]:
        data = read_or_none(self.fileio, self._record_path(name))
        if data is None:
            return None, None
        try:
            return data, BranchLineage.from_json(data.decode("utf-8"))
        except (ValueError, TypeError, AttributeError) as e:
            log.warning("ignoring unreadable lineage file of branch '%s' in %s: %s", name, self.table_path, e)
            return data, None

    # -- what a directory holds ----------------------------------------------------------------------
    def state(self, name: str) -> DirState:
        """Whether branch ``name`` is complete, half made or absent (module docstring)."""
        data, lin = self._read(name)
        if data is None:  # no record: a branch of Paimon or pypaimon has schemas; anything else is debris
            return DirState("complete" if self.fileio.exists(f"{self._root(name)}/schema") else "absent")
        if lin is None:  # unreadable: nothing to judge by, so it is kept as the branch it claims to be
            return DirState("complete")
        if lin.creation_id is None and not lin.pending:  # made before these steps: complete once it had schemas
            has_schema = self.fileio.exists(f"{self._root(name)}/schema")
            return DirState("complete" if has_schema else "pending", lin)
        if not lin.pending or (lin.replaced_by is not None and self.copy_needed(lin)):
            return DirState("complete", lin)
        return DirState("pending", lin)

    def copy_needed(self, lin: BranchLineage) -> bool:
        """Whether a ``replace_main`` copy is its source's only record of the old state: the switch happened (the
        source holds the replacing head B at its id, and no longer its old head above B) or that cannot be told
        (no uuids, or B's id expired from the source)."""
        by = lin.replaced_by
        if by is None:
            return False
        snapshots = SnapshotManager(self.fileio, self.table_path, lin.source_branch)
        ids = snapshots.list_ids()
        if by.snapshot_id not in ids:
            return bool(ids) and ids[0] > by.snapshot_id  # expired: cannot tell, keep
        at_b = snapshots.snapshot(by.snapshot_id)
        if by.snapshot_uuid is None or at_b.uuid is None:
            return True
        if at_b.uuid != by.snapshot_uuid:
            return False
        old = lin.source_snapshot_id
        if old is not None and old > by.snapshot_id and old in ids:  # rewinding, and the old head is still there
            return snapshots.snapshot(old).uuid != lin.source_snapshot_uuid
        return True

    # -- the steps ------------------------------------------------------------------------------------
    def claim(self, name: str, wanted: BranchLineage, state: DirState) -> BranchLineage:
        """Claim ``name`` for the branch ``wanted`` describes (``state``: the directory as the caller found it,
        not complete). Returns the pending record written, with this call's ``creationId``; refuses a half-made
        branch of a different create that may still be running, and a claim another creator won meanwhile."""
        mine = replace(wanted, creation_id=uuid.uuid4().hex, pending=True)
        data = mine.to_json().encode("utf-8")
        current = state.lineage
        if state.kind == "pending" and current is not None:
            if current.same_request(wanted):
                # The same create: take the record over (its files are the same), so its first creator's
                # clean-up, should it fail later, no longer takes the directory for its own.
                self.fileio.write_bytes(self._record_path(name), data)
                return mine
            age = now_millis() - current.created_at_millis
            if age < PENDING_TIMEOUT_MS:
                since = local_datetime(current.created_at_millis).strftime("%Y-%m-%d %H:%M:%S")
                raise BranchError(
                    f"Branch '{name}' of {self.table_path} is being created by another call (since {since} local, "
                    f"from {_origin(current)}), which has not finished. Wait for it; if it was stopped, run that same "
                    f"create again to complete it, or delete the half-made branch (t.branches.delete('{name}')); "
                    f"after {PENDING_TIMEOUT_MS // 60000} minutes a different create replaces it. Nothing was "
                    "created."
                )
            log.warning("replacing half-made branch '%s' of %s (claimed %d ms ago)", name, self.table_path, age)
            self.fileio.delete_dir(self._root(name))
        elif state.kind == "pending":  # an unreadable half-made record cannot be the same create
            raise BranchError(
                f"Branch '{name}' of {self.table_path} has an unreadable branch.json and no schema: it is a "
                f"half-made branch. Delete it (t.branches.delete('{name}')) and create it again. Nothing was created."
            )
        if create_own(self.fileio, self._record_path(name), data):
            return mine
        raise BranchError(
            f"Branch '{name}' was created concurrently in {self.table_path} by another call. Nothing was created "
            "by this one; use that branch, or pick another name."
        )

    def finish(self, name: str, mine: BranchLineage) -> BranchLineage:
        """The last step: rewrite the record without ``pending`` (a lost answer is recognised by reading the
        file back). Returns the record as written."""
        done = replace(mine, pending=False)
        data = done.to_json().encode("utf-8")
        try:
            self.fileio.write_bytes(self._record_path(name), data)
        except (OSError, PaimonError):
            try:
                landed = read_or_none(self.fileio, self._record_path(name)) == data
            except (OSError, PaimonError):
                landed = False
            if not landed:
                raise
        return done

    def abandon(self, name: str, mine: BranchLineage) -> None:
        """After a failed create: remove the directory if it is still this call's half-made branch (pending,
        with its ``creationId``; a ``replace_main`` copy only while not needed). Never raises: the caller is
        raising the error that stopped it, and what is left is removed by a retry or ``remove_orphan_files``."""
        try:
            _, current = self._read(name)
            if current is None or not current.pending or current.creation_id != mine.creation_id:
                return
            if current.replaced_by is not None and self.copy_needed(current):
                return
            self.fileio.delete_dir(self._root(name))
        except (OSError, PaimonError) as e:
            log.warning(
                "could not remove the half-made branch '%s' of %s (%s); a retry of the same create completes it, "
                "remove_orphan_files removes it",
                name,
                self.table_path,
                e,
            )

    # -- orphan removal -------------------------------------------------------------------------------
    def abandoned(self, cutoff_ms: int, *, dry_run: bool = False) -> list[str]:
        """Half-made branches claimed before ``cutoff_ms`` that nobody committed to, and branch directories
        older than it holding neither a record nor a schema (module docstring, "Orphan removal"). Unless
        ``dry_run``, a needed ``replace_main`` copy still marked pending is finished on the way."""
        out = []
        for name, mtime in branch_dirs(self.fileio, self.table_path).items():
            state = self.state(name)
            lin = state.lineage
            if state.kind == "complete" and lin is not None and lin.pending and not dry_run:
                self.finish(name, lin)
            elif state.kind == "absent":
                if mtime < cutoff_ms:
                    out.append(name)
            elif state.kind == "pending" and lin is not None and lin.created_at_millis < cutoff_ms:
                own = SnapshotManager(self.fileio, self.table_path, name).list_ids()
                if lin.replaced_by is not None or set(own) <= {lin.source_snapshot_id}:
                    out.append(name)
                else:
                    log.warning(
                        "half-made branch '%s' of %s has commits (snapshots %s) and is kept; delete it with "
                        "t.branches.delete('%s') if they are not needed",
                        name,
                        self.table_path,
                        own,
                        name,
                    )
        return out

    def remove(self, name: str) -> None:
        """Delete the directory of a half-made or abandoned branch (:meth:`abandoned`)."""
        self.fileio.delete_dir(self._root(name))


def _origin(lin: BranchLineage) -> str:
    if lin.replaced_by is not None:
        return f"replace_main of '{lin.source_branch}' by '{lin.replaced_by.branch}'"
    if lin.source_tag is not None:
        return f"tag '{lin.source_tag}' of '{lin.source_branch}'"
    if lin.source_snapshot_id is not None:
        return f"snapshot {lin.source_snapshot_id} of '{lin.source_branch}'"
    return f"'{lin.source_branch}' (empty)"


__all__ = ["PENDING_TIMEOUT_MS", "BranchMaker", "DirState"]
