"""Commit order for one key: the later commit wins. Which sequence numbers a bucket's new level-0 files must exceed
at commit time, so that a commit outranks every earlier commit of the same key.

Why: a writer numbers its rows from the bucket's highest sequence number *when it is prepared* (as Java's
`MergeTreeWriter` does), and a merge orders the versions of a key by sequence number. Two writers prepared on one
snapshot therefore number their rows alike, and the one committed second may lose the merge to the one committed
first: an acknowledged write silently shadowed at its own snapshot. Java accepts this race (its writers are usually
one long-lived job per table); we do not, because several Python processes, Spark jobs, streams and DML commonly
write one table at once.

The rule: every new level-0 file a commit adds to a bucket must hold sequence numbers above every file that
landed in that bucket after the writer's snapshot (``CommitMessage.sequenced_after``). Files live at that snapshot
are below the writer's numbers already (it continued them), so only the delta manifests of the snapshots since
are read: nothing when no commit came between, a few small manifests when some did. A commit whose new files are
not above gets them re-sequenced before it lands (the caller's ``resequence``, which rewrites them: they are new
and no snapshot references them yet). Compactions add no new sequence numbers and are skipped. When a snapshot of
the range has expired, the live files of the latest snapshot decide instead (the same bound, read the slow way).
"""

from __future__ import annotations

from typing import Mapping

from pyspark_paimon.errors import SnapshotNotFoundError
from pyspark_paimon.metadata.manifests.manifest import KIND_ADD
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore

__all__ = ["SequenceCeilings"]

Bucket = tuple[bytes, int]


class SequenceCeilings:
    """The highest sequence number committed to buckets after given snapshots, for one commit and its retries
    (each snapshot's delta is read once, however many attempts the commit makes)."""

    def __init__(self, store: FileStore) -> None:
        self._store = store
        self._deltas: dict[int, dict[Bucket, int]] = {}

    def since(self, latest: Snapshot, after: Mapping[Bucket, int]) -> dict[Bucket, int]:
        """Per bucket of ``after`` (bucket -> snapshot id), the highest ``_MAX_SEQUENCE_NUMBER`` of a file added to
        it by a snapshot after that id up to ``latest`` (buckets no such file reached are left out)."""
        wanted = {b: s for b, s in after.items() if s < latest.id}
        if not wanted:
            return {}
        out: dict[Bucket, int] = {}
        for sid in range(min(wanted.values()) + 1, latest.id + 1):
            try:
                delta = self._delta(sid)
            except SnapshotNotFoundError:  # expired meanwhile: every live file bounds it
                return self._live(latest, wanted)
            for bucket, top in delta.items():
                first = wanted.get(bucket)
                if first is not None and sid > first and top > out.get(bucket, top - 1):
                    out[bucket] = top
        return out

    def _delta(self, sid: int) -> dict[Bucket, int]:
        found = self._deltas.get(sid)
        if found is not None:
            return found
        store = self._store
        snapshot = store.snapshots.snapshot(sid)
        tops: dict[Bucket, int] = {}
        if snapshot.commit_kind != "COMPACT":  # a compaction keeps its inputs' numbers
            manifests = store.planning_manifests
            for e in manifests.read_entries(manifests.read_list(snapshot.delta_manifest_list)):
                if e.kind == KIND_ADD:
                    key = (e.partition, e.bucket)
                    tops[key] = max(tops.get(key, e.file.max_sequence_number), e.file.max_sequence_number)
        self._deltas[sid] = tops
        return tops

    def _live(self, latest: Snapshot, wanted: Mapping[Bucket, int]) -> dict[Bucket, int]:
        out: dict[Bucket, int] = {}
        for e in self._store.live_entries(latest, cached=True):
            key = (e.partition, e.bucket)
            if key in wanted:
                out[key] = max(out.get(key, e.file.max_sequence_number), e.file.max_sequence_number)
        return out
