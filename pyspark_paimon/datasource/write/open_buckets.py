"""The buckets one writer has open and the commit messages that describe their new files.

A :class:`TableWriter` writes into many (partition, bucket) pairs, and compaction and changelog output into
(partition, bucket, level) triples. Each gets one :class:`BucketState` on first use: its directory and file-name
UUID, the next sequence number, and the files written since the last commit message. Keeping them in one place
means :meth:`OpenBuckets.messages` describes every file exactly once and an abort forgets every file at once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from pyspark_paimon.datasource.write import postpone
from pyspark_paimon.metadata.manifests.hash_index import sorted_unique
from pyspark_paimon.metadata.manifests.manifest import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta
from pyspark_paimon.metadata.schema.options import POSTPONE_BUCKET
from pyspark_paimon.metadata.snapshots.commit import CommitMessage

__all__ = ["BucketState", "OpenBuckets"]


@dataclass
class BucketState:
    """Per (partition, bucket): file naming, the sequence counter and the files written so far."""

    partition: bytes
    bucket: int
    total_buckets: int
    directory: str
    uuid: str
    next_sequence: int
    file_counter: int = 0
    dir_created: bool = False
    files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    # Compaction writes its outputs at the unit's output level, marked as compaction output.
    level: int = 0
    file_source: int = FILE_SOURCE_APPEND
    # Dynamic bucket mode: the key hashes written to the bucket since the last commit message.
    key_hashes: list[np.ndarray] = field(default_factory=list)


class OpenBuckets:
    """The :class:`BucketState` of every bucket a writer touched, in the order it first touched them.

    ``directory(partition values, bucket directory name)`` places a bucket (the file writer's layout);
    ``sequence_bases`` are the driver's next sequence number per (partition, bucket) (missing: 0), read at snapshot
    ``sequenced_after`` (what the new files' messages say, so their commit can order them after later commits).
    """

    def __init__(
        self,
        directory: Callable[[tuple, str], str],
        sequence_bases: dict[tuple[bytes, int], int],
        sequenced_after: int | None = None,
    ) -> None:
        self._directory = directory
        self._sequence_bases = sequence_bases
        self._sequenced_after = sequenced_after
        self._written: dict[tuple[bytes, int], BucketState] = {}
        self._compacted: dict[tuple[bytes, int, int], BucketState] = {}
        self._changelog: dict[tuple[bytes, int, int], BucketState] = {}

    def for_write(self, part: bytes, values: tuple, bucket: int, total: int) -> BucketState:
        """The bucket new rows go to: level 0, sequence numbers continuing the bucket's."""
        key = (part, bucket)
        state = self._written.get(key)
        if state is None:
            bucket_dir = postpone.POSTPONE_DIRECTORY if bucket == POSTPONE_BUCKET else f"bucket-{bucket}"
            state = BucketState(
                part,
                bucket,
                total,
                self._directory(values, bucket_dir),
                str(uuid.uuid4()),
                int(self._sequence_bases.get(key, 0)),
            )
            self._written[key] = state
        return state

    def for_level(
        self,
        changelog: bool,
        partition: bytes,
        partition_values: tuple,
        bucket: int,
        total_buckets: int,
        level: int,
        first_sequence: int = 0,
    ) -> BucketState:
        """The bucket a compaction writes its outputs (``changelog``: its changelog files) of ``level`` to."""
        states = self._changelog if changelog else self._compacted
        key = (partition, bucket, level)
        state = states.get(key)
        if state is None:
            state = BucketState(
                partition,
                bucket,
                total_buckets,
                self._directory(partition_values, f"bucket-{bucket}"),
                str(uuid.uuid4()),
                first_sequence,
                level=level,
                file_source=FILE_SOURCE_COMPACT,
            )
            states[key] = state
        return state

    def _all(self) -> Iterator[BucketState]:
        yield from self._written.values()
        yield from self._compacted.values()
        yield from self._changelog.values()

    def messages(self, writer: str) -> list[CommitMessage]:
        """One message per bucket with files written since the last call (``writer`` names the task)."""
        messages = []
        for state in list(self._all()):
            # New rows are ordered by their commit; compaction outputs keep their inputs' sequence numbers.
            sequenced_after = self._sequenced_after if state.file_source == FILE_SOURCE_APPEND else None
            if state.files or state.changelog_files:
                hashes = b""
                if state.key_hashes:
                    hashes = sorted_unique(np.concatenate(state.key_hashes)).astype(">i4").tobytes()
                messages.append(
                    CommitMessage(
                        state.partition,
                        state.bucket,
                        state.total_buckets,
                        tuple(state.files),
                        writer=writer,
                        key_hashes=hashes,
                        changelog_files=tuple(state.changelog_files),
                        sequenced_after=sequenced_after,
                    )
                )
                state.files = []
                state.key_hashes = []
                state.changelog_files = []
        return messages

    def forget_files(self) -> None:
        """Drop every file not yet described (the write is aborted; its files are deleted)."""
        for state in self._all():
            state.files = []
            state.changelog_files = []
