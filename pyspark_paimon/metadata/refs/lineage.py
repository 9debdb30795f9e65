"""Branch lineage: the ``branch.json`` record of where a branch came from, the records a branch is reported as
(:class:`BranchInfo`), and the snapshot identity every ancestry check compares. Kept apart from the branch
manager because expiration, ``$branches`` and branch merges read these records without managing branches.

**Lineage file.** Paimon records nowhere where a branch came from, which is why its ``fast_forward`` cannot
tell whether main moved on after the fork and why its ``merge_branch`` refuses most tables ("without
persisted branch lineage metadata, we cannot reliably infer a fork point"). We write
``branch/branch-<b>/branch.json``::

    {"version": 1, "sourceBranch": "main", "sourceTag": "t1", "sourceSnapshotId": 42,
     "sourceSnapshotUuid": "…", "sourceSchemaId": 3, "createdAtMillis": 1754800000000,
     "createdBy": "pyspark-paimon"}

Paimon lists ``branch-*`` directories and reads only their ``schema/``, ``snapshot/`` and ``tag/``
subdirectories, so the extra file is invisible to it (and it moves with a rename and disappears with a drop,
Paimon's or ours); readers of ours ignore keys they do not know.

**A branch being made.** The file is also how a branch is made safely (``BranchManager.create``): it is created
first, exclusively, with ``"pending": true`` and a ``creationId`` (a uuid, so the creator recognises its own file
after a lost answer), which claims the name; the branch's files follow; rewriting the file without ``pending``
is the last step and makes the branch exist. A branch whose file still says ``pending`` is half made: not listed,
completed by a retry of the same create, removed by ``remove_orphan_files``. The copy of the previous target that
``replace_main(keep_previous_as=)`` saves also names the branch that replaced it and that branch's head
(``replacedBy``) and stays pending until the switch: it is needed from the moment the switch happened (the steps
and their rules: :mod:`~pyspark_paimon.metadata.refs.branch_making`).

Branches made by Paimon or pypaimon have no lineage; the branch manager works without it and falls back to the
branch's earliest snapshot as the fork point.

:func:`snapshot_identity` says whether two snapshot files are the same commit (the uuid, else the whole
snapshot); :class:`LineageVia` stores such identities for the history a branch inherited through a dropped
source branch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot

LINEAGE_FILE = "branch.json"
LINEAGE_VERSION = 1


@dataclass(frozen=True)
class LineageVia:
    """The history a branch inherited through a source branch that was dropped (``expire_branches``), so the
    ancestry check of :meth:`BranchManager.fast_forward` keeps working: the identities of the dropped
    branch's snapshots and tags below this branch's fork, and where the dropped branch itself came from."""

    source_branch: str  # '' when the dropped branch had no lineage itself (the walk stops there)
    source_snapshot_id: int | None  # None: the dropped branch was created empty
    source_snapshot_uuid: str | None
    history: tuple[tuple, ...] = ()  # snapshot identities (see ``snapshot_identity``)

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
class ReplacedBy:
    """On the copy ``replace_main(keep_previous_as=)`` saves: the branch that replaced the copied source and that
    branch's head, whose arrival in the source is the switch (``branch_making.py``)."""

    branch: str
    snapshot_id: int
    snapshot_uuid: str | None

    def to_dict(self) -> dict:
        return {"branch": self.branch, "snapshotId": self.snapshot_id, "snapshotUuid": self.snapshot_uuid}

    @classmethod
    def from_dict(cls, d: dict) -> "ReplacedBy":
        return cls(str(d.get("branch") or ""), int(d.get("snapshotId") or 0), d.get("snapshotUuid"))


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
    creation_id: str | None = None  # a uuid per create: the creator's own file, after a lost answer
    pending: bool = False  # the branch is being made (module docstring)
    replaced_by: ReplacedBy | None = None  # replace_main(keep_previous_as=): what replaced the source

    def same_request(self, other: "BranchLineage") -> bool:
        """Whether ``other`` makes the same branch as this record (same source, fork, schemas, retention, kind):
        completing one with the other's files gives the branch either would have made."""
        return (
            self.source_branch,
            self.source_tag,
            self.source_snapshot_id,
            self.source_snapshot_uuid,
            self.source_schema_id,
            self.time_retained_millis,
            self.replaced_by,
        ) == (
            other.source_branch,
            other.source_tag,
            other.source_snapshot_id,
            other.source_snapshot_uuid,
            other.source_schema_id,
            other.time_retained_millis,
            other.replaced_by,
        )

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
        if self.creation_id is not None:
            d["creationId"] = self.creation_id
        if self.replaced_by is not None:
            d["replacedBy"] = self.replaced_by.to_dict()
        if self.pending:
            d["pending"] = True
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
            d.get("creationId"),
            d.get("pending") is True,
            ReplacedBy.from_dict(d["replacedBy"]) if isinstance(d.get("replacedBy"), dict) else None,
        )

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
    """The branch's name."""
    create_time_millis: int
    """When the branch was created (epoch ms)."""
    source_branch: str | None = None
    """The branch it was created from."""
    source_tag: str | None = None
    """The tag it was created from, if any."""
    source_snapshot_id: int | None = None
    """The snapshot it was created from (None: an empty branch)."""
    latest_snapshot_id: int | None = None
    """Its latest snapshot (None: no commit yet)."""
    has_lineage: bool = False
    """Whether the branch has our lineage file (``branch.json``); branches made by other engines have none."""
    time_retained_millis: int | None = None  # retention given at creation (None: kept until deleted)
    """How long the branch is kept after its creation (ms); None: until deleted."""

    @property
    def expire_time_millis(self) -> int | None:
        """When ``t.branches.expire`` may delete the branch (epoch ms), or None without a retention."""
        if self.time_retained_millis is None:
            return None
        return self.create_time_millis + self.time_retained_millis


def snapshot_identity(s: Snapshot) -> tuple:
    """Same commit? The uuid when the snapshot has one, else the whole snapshot."""
    if s.uuid:
        return ("uuid", s.id, s.uuid)
    return ("json", s.id, json.dumps(s.to_dict(), sort_keys=True))


__all__ = [
    "LINEAGE_FILE",
    "LINEAGE_VERSION",
    "BranchInfo",
    "BranchLineage",
    "LineageVia",
    "ReplacedBy",
    "snapshot_identity",
]
