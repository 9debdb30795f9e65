"""Where a stream is and what it reads next: a :class:`StreamOffset` (the snapshot a stream is in, how many of
that snapshot's splits it has consumed (``index``), which kind of scan that snapshot gets (``phase``), and the
identity of the last snapshot it consumed completely, :class:`Consumed`) and a :class:`StreamSplit`, one unit of
a phase. Offsets are plain JSON that Spark checkpoints, so one large commit can span several micro-batches and
:meth:`~pyspark_paimon.planner.stream_scan.StreamPlanner.splits_between` turns the same (start, end) pair into
the same splits every time, which is what lets Spark replay a batch. The phases are described in
:mod:`pyspark_paimon.planner.stream_scan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.planner.split import DataSplit

__all__ = ["Phase", "PHASES", "Consumed", "StreamOffset", "StreamSplit"]

Phase = Literal["full", "delta", "diff", "chain"]
PHASES = ("full", "delta", "diff", "chain")


@dataclass(frozen=True)
class Consumed:
    """The identity of the last snapshot a stream consumed completely: its id and manifest lists. The lists are
    unique per commit, so a snapshot that was replaced under the same id (fast-forward, replace, rollback) is
    recognised, and they still describe the consumed state when the snapshot file itself is gone."""

    snapshot_id: int
    base_manifest_list: str
    delta_manifest_list: str
    # Its index manifest (deletion vectors), so a diff from this state reads its files as it did. None: none, or
    # an offset written before it was recorded.
    index_manifest: str | None = None

    @classmethod
    def of(cls, snapshot: Snapshot) -> "Consumed":
        return cls(snapshot.id, snapshot.base_manifest_list, snapshot.delta_manifest_list, snapshot.index_manifest)

    def to_list(self) -> list[Any]:
        out: list[Any] = [self.snapshot_id, self.base_manifest_list, self.delta_manifest_list]
        return out + [self.index_manifest] if self.index_manifest else out

    @classmethod
    def from_list(cls, c: Sequence[Any]) -> "Consumed":
        return cls(int(c[0]), str(c[1]), str(c[2]), str(c[3]) if len(c) > 3 and c[3] else None)

    def matches(self, snapshot: Snapshot) -> bool:
        return (snapshot.base_manifest_list, snapshot.delta_manifest_list) == (
            self.base_manifest_list,
            self.delta_manifest_list,
        )


@dataclass(frozen=True)
class StreamOffset:
    """A stream position: splits ``0..index`` of snapshot ``snapshot``'s ``phase`` scan are consumed, on top of
    the state ``consumed`` (for a ``diff``, the state the diff starts from). A ``chain`` phase (the start of a
    chain table's stream) is at the delta branch's snapshot ``snapshot`` (0: none) and the snapshot branch's
    snapshot ``pinned`` (None: none), the two versions its start was pinned to."""

    snapshot: int
    index: int = -1
    phase: Phase = "delta"
    consumed: Consumed | None = None
    pinned: int | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.consumed
        out: dict[str, Any] = {
            "snapshotId": self.snapshot,
            "index": self.index,
            "phase": self.phase,
            "consumed": None if c is None else c.to_list(),
        }
        if self.phase == "chain":
            out["chainSnapshotId"] = self.pinned
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StreamOffset":
        try:
            c = d.get("consumed")
            consumed = None if c is None else Consumed.from_list(c)
            phase = str(d["phase"])
            if phase not in PHASES:
                raise ValueError(phase)
            pinned = d.get("chainSnapshotId")
            return cls(
                int(d["snapshotId"]),
                int(d["index"]),
                phase,  # type: ignore[arg-type]
                consumed,
                None if pinned is None else int(pinned),
            )
        except (KeyError, TypeError, ValueError, IndexError):
            raise OptionError(
                f"Cannot read the streaming offset {dict(d)} (not written by this version of pyspark-paimon). Start "
                "the query with a new checkpoint location."
            ) from None

    def after(self, snapshot: Snapshot) -> "StreamOffset":
        """The position after every split of ``snapshot``: the next snapshot's delta, on top of this one."""
        return StreamOffset(snapshot.id + 1, -1, "delta", Consumed.of(snapshot))


@dataclass(frozen=True)
class StreamSplit:
    """One unit of a stream: see :mod:`pyspark_paimon.planner.stream_scan` for what each phase reads. ``after``
    is read merged in a ``full`` or ``diff`` split and raw (one file, row kinds kept) in a ``delta`` split;
    ``before`` is the other side of a ``diff``."""

    snapshot_id: int
    index: int
    phase: Phase
    after: DataSplit | None
    before: DataSplit | None = None

    @property
    def splits(self) -> tuple[DataSplit, ...]:
        return tuple(s for s in (self.before, self.after) if s is not None)

    @property
    def file_count(self) -> int:
        return sum(len(s.files) for s in self.splits)

    @property
    def size_bytes(self) -> int:
        return sum(s.size_bytes for s in self.splits)

    @property
    def row_count(self) -> int:
        return sum(s.row_count for s in self.splits)
