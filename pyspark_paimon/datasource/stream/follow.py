"""Following a table without Spark: a plain-Python iterator over its changes (``t.follow(...)``).

A :class:`Follower` is a Spark stream without Spark: the same options and start positions (a snapshot, a tag, a
timestamp, a named consumer, or the latest state), the same planner (:class:`~pyspark_paimon.planner.stream_scan.
StreamPlanner`: the full state first where the start asks for it, then each snapshot's delta, or its changelog
files where a changelog producer writes them, rewrites as diffs) and the same split reader
(:func:`~pyspark_paimon.datasource.stream.stream_jobs.read_stream_split`), so it returns exactly the rows a
``readStream`` with ``read.changelog`` returns, each with its row kind (``+I``, ``-U``, ``+U``, ``-D``) in a
leading ``rowkind`` column.

:meth:`Follower.poll` returns at most ``max_rows`` rows (one split is read at a time; rows of a split that do not
fit wait for the next poll) and a :attr:`Changes.position`: a small JSON string that names exactly where the
poll ended, within a snapshot if need be. Progress is kept two ways:

* a **consumer** (``consumer=``, Paimon's ``consumer/consumer-<id>``: expiration keeps the snapshots it still
  needs) records the first snapshot not fully delivered, and only when asked (:meth:`Follower.commit`); a follower
  started again with the same consumer resumes there, so rows of a snapshot half-delivered when the process died
  are delivered again: at-least-once;
* the **position**, stored by the caller in the same transaction as what it did with the rows, resumes exactly
  after them (``t.follow(position=...)``): exactly-once.

A snapshot the follower must read that has expired is an error (never a silent skip).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence, TypeVar

import pyarrow as pa

from pyspark_paimon.datasource.read.read import coalesce_batches
from pyspark_paimon.datasource.stream.stream_jobs import StreamReadJob, read_stream_split
from pyspark_paimon.errors import OptionError, SnapshotNotFoundError
from pyspark_paimon.metadata.schema.options import CONSUMER_MODE
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.planner.micro_batch import Admission
from pyspark_paimon.planner.stream_offset import StreamOffset, StreamSplit

_T = TypeVar("_T")

#: Options a follower always sets: row kinds shown, and a consumer that is at-least-once (a poll may end inside
#: a snapshot; the consumer then records that snapshot, which is delivered again after a restart).
_FOLLOW_OPTIONS = {"read.changelog": "true", CONSUMER_MODE.key: "at-least-once"}


@dataclass(frozen=True)
class Changes:
    """What one :meth:`Follower.poll` returned."""

    data: pa.Table
    """The rows, each with its kind in the leading ``rowkind`` column (``+I``, ``-U``, ``+U``, ``-D``)."""
    position: str
    """Where this poll ended (JSON): store it with what you did with the rows, and resume exactly after them with
    ``t.follow(position=...)``."""

    @property
    def num_rows(self) -> int:
        """How many rows this poll returned."""
        return self.data.num_rows


class Follower:
    """An iterator over a table's changes (see the module docstring); made by ``Table.follow``."""

    def __init__(
        self,
        store: FileStore,
        options: Mapping[str, str],
        *,
        max_rows: int = 10_000,
        columns: Sequence[str] | None = None,
        position: str | None = None,
        interval: float = 1.0,
        name: str | None = None,
    ):
        if max_rows <= 0:
            raise OptionError(f"max_rows must be a positive number of rows per poll, got {max_rows}.")
        self._name = name or store.table_path
        self._job = StreamReadJob(store, {**options, **_FOLLOW_OPTIONS}, columns)
        self._context = self._job.context()
        self._interval = interval
        self.max_rows = max_rows
        """The most rows a poll returns."""
        self.consumer = self._job.opts.consumer_id
        """The consumer whose progress :meth:`commit` records (None: none)."""
        if position is not None:
            self._offset, self._skip = _parse_position(position)
        else:
            self._offset, self._skip = self._guard(self._job.initial_offset, None), 0
        self._split: StreamSplit | None = None  # the split being delivered, and its rows not delivered yet
        self._end: StreamOffset | None = None
        self._rows: pa.Table | None = None

    def __repr__(self) -> str:
        return f"Follower({self._name!r}, position={self.position})"

    @property
    def position(self) -> str:
        """Where the last poll ended (the same as its :attr:`Changes.position`)."""
        return json.dumps({"offset": self._offset.to_dict(), "skip": self._skip}, separators=(",", ":"))

    def _guard(self, call: Callable[[], _T], snapshot: int | None) -> _T:
        """Run a planner call; an expired snapshot becomes an error that says how to follow on."""
        try:
            return call()
        except SnapshotNotFoundError as e:
            earliest = self._job.store.snapshots.earliest_id()
            where = f"snapshot {snapshot}" if snapshot is not None else "its start"
            raise SnapshotNotFoundError(
                f"Cannot follow {self._name}: the changes it must read next ({where}) have expired (earliest snapshot "
                f"now: {earliest}), and going on would silently skip them. Follow again from the latest state "
                "(t.follow()) or a tag (t.follow(tag=...)), and give a long-running follower a consumer "
                f"(consumer='<name>'): expiration keeps the snapshots a consumer still needs. ({e})"
            ) from e

    def _next_split(self) -> bool:
        """Load the next split after the delivered position; False when there is none yet."""
        splits, end = self._guard(
            lambda: self._job.next_batch(self._offset, Admission(max_files=1)), self._offset.snapshot
        )
        if not splits:
            self._offset = end  # snapshots with nothing to read (compactions, empty commits) are passed
            return False
        split = splits[0]
        batches = [b for b in read_stream_split(self._context, split) if b.num_rows]
        schema = self._context.output_schema()
        rows = pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()
        self._split, self._end, self._rows = split, end, rows.slice(self._skip)
        return True

    def poll(self) -> Changes:
        """The changes available now, at most ``max_rows`` rows (none when the table has nothing new)."""
        parts: list[pa.Table] = []
        taken = 0
        while taken < self.max_rows:
            if self._rows is None and not self._next_split():
                break
            assert self._rows is not None and self._end is not None
            part = self._rows.slice(0, self.max_rows - taken)
            parts.append(part)
            taken += part.num_rows
            self._rows = self._rows.slice(part.num_rows)
            if self._rows.num_rows == 0:  # the split is delivered: the position moves past it
                self._offset, self._skip = self._end, 0
                self._split = self._end = self._rows = None
            else:
                self._skip += part.num_rows
        schema = self._context.output_schema()
        data = pa.concat_tables(parts) if parts else schema.empty_table()
        if data.num_rows:
            data = pa.Table.from_batches(list(coalesce_batches(data.to_batches(), self._context.read.batch_size)))
        return Changes(data, self.position)

    def next_snapshot(self) -> int | None:
        """The first snapshot not fully delivered (what :meth:`commit` records); None while the start's full state
        is being read."""
        if self._split is not None:  # a split is half delivered: its snapshot is not done
            return self._split.snapshot_id if self._split.phase == "delta" else None
        if self._offset.phase == "delta" and self._offset.index >= 0:
            # the position is after a split of its snapshot: the snapshot is done when no split of it is left
            splits, end = self._guard(
                lambda: self._job.next_batch(self._offset, Admission(max_files=1)), self._offset.snapshot
            )
            if splits:
                return splits[0].snapshot_id if splits[0].phase == "delta" else None
            return self._job.planner.consumer_next_snapshot(end)
        return self._job.planner.consumer_next_snapshot(self._offset)

    def commit(self) -> int | None:
        """Advance the consumer to what the polls so far delivered (its ``nextSnapshot``: the first snapshot not
        fully delivered) and return it; None (nothing recorded) while the start's full state is being read.
        Needs ``consumer=``."""
        if not self.consumer:
            raise OptionError(
                f"The follower of {self._name} has no consumer: follow with consumer='<name>' to record progress, or "
                "store Changes.position yourself."
            )
        nxt = self.next_snapshot()
        if nxt is not None:
            ConsumerManager(self._job.store).record(self.consumer, nxt)
        return nxt

    def __iter__(self) -> Iterator[Changes]:
        """Poll for ever: yields every non-empty :meth:`poll`, sleeping ``interval`` seconds while there is
        nothing new. Break out of the loop to stop."""
        while True:
            changes = self.poll()
            if changes.num_rows:
                yield changes
            else:
                time.sleep(self._interval)


def _parse_position(position: str) -> tuple[StreamOffset, int]:
    try:
        value = json.loads(position)
        skip = int(value["skip"])
        if skip < 0:
            raise ValueError(skip)
        return StreamOffset.from_dict(value["offset"]), skip
    except (ValueError, KeyError, TypeError) as e:
        raise OptionError(
            f"Cannot resume from position {position!r}: it is not a Changes.position of a follower ({e})."
        ) from None
