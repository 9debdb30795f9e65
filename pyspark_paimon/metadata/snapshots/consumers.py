"""Consumers (``consumer/consumer-<id>``): the progress a streaming reader has recorded on one branch.

A consumer file holds ``{"nextSnapshot": N}``: the first snapshot the reader has not fully consumed. Snapshot
expiration keeps snapshot N and everything newer (:func:`pyspark_paimon.metadata.maintenance.expire`), so a stream that
falls behind never finds its next snapshot deleted, and a new stream started with the same consumer id
continues where the last one stopped. The layout and JSON are Paimon's (``ConsumerManager``), so Java readers
and expiration honour our consumers and we honour theirs.
"""

from __future__ import annotations

import json
import re

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.store import FileStore

CONSUMER_PREFIX = "consumer-"
_VALID_ID = re.compile(r"[A-Za-z0-9_.\-]+")


def check_consumer_id(consumer_id: str) -> str:
    """A consumer id becomes part of a file name: keep it to letters, digits, ``_``, ``-`` and ``.``."""
    if not _VALID_ID.fullmatch(consumer_id) or consumer_id in (".", ".."):
        raise OptionError(
            f"Option 'consumer-id' = '{consumer_id}' is not a valid consumer id: use letters, digits, '_', '-' and "
            "'.' only (it names the file consumer/consumer-<id>)."
        )
    return consumer_id


class ConsumerManager:
    """Read and write the consumers of one branch."""

    def __init__(self, store: FileStore):
        self.fileio = store.fileio
        self.directory = f"{store.branch_root}/consumer"

    def path(self, consumer_id: str) -> str:
        return f"{self.directory}/{CONSUMER_PREFIX}{check_consumer_id(consumer_id)}"

    def next_snapshot(self, consumer_id: str) -> int | None:
        """The consumer's ``nextSnapshot``, or None when it has none (never committed, or unreadable)."""
        try:
            value = json.loads(self.fileio.read_text(self.path(consumer_id))).get("nextSnapshot")
        except (FileNotFoundError, ValueError, AttributeError):
            return None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Record that every snapshot below ``next_snapshot`` has been consumed (a whole-file replace)."""
        self.fileio.write_bytes(self.path(consumer_id), json.dumps({"nextSnapshot": int(next_snapshot)}).encode())

    def consumers(self) -> dict[str, int]:
        """Every consumer of the branch with its ``nextSnapshot`` (unreadable files are skipped)."""
        out: dict[str, int] = {}
        for name in self.fileio.list_names(self.directory):
            if not name.startswith(CONSUMER_PREFIX):
                continue
            cid = name[len(CONSUMER_PREFIX) :]
            if not _VALID_ID.fullmatch(cid):
                continue
            value = self.next_snapshot(cid)
            if value is not None:
                out[cid] = value
        return out

    def expire(self, before_millis: int) -> list[str]:
        """Delete the consumers whose file was last written before ``before_millis`` (epoch ms) and return their
        ids. This is Java's ``ConsumerManager.expire`` rule (``consumer.expiration-time``): a stream records its
        progress by rewriting its file, so an old modification time means an abandoned stream, which would
        otherwise pin its ``nextSnapshot`` against expiration forever."""
        expired = []
        for status in self.fileio.list_status(self.directory):
            if status.is_dir or not status.name.startswith(CONSUMER_PREFIX):
                continue
            if status.mtime_millis < before_millis:
                self.fileio.delete(status.path)
                expired.append(status.name[len(CONSUMER_PREFIX) :])
        return expired

    def delete(self, consumer_id: str) -> bool:
        """Delete one consumer (Paimon's ``reset_consumer`` without a snapshot); False when it did not exist."""
        path = self.path(consumer_id)
        if not self.fileio.exists(path):
            return False
        self.fileio.delete(path)
        return True

    def clear(self, including: str | None = None, excluding: str | None = None) -> list[str]:
        """Delete the consumers whose id matches the regular expression ``including`` (whole id; default every
        one) and not ``excluding`` (Paimon's ``clear_consumers``); returns the ids deleted, sorted."""
        try:
            keep_in = re.compile(including if including and including.strip() else ".*")
            leave = re.compile(excluding) if excluding and excluding.strip() else None
        except re.error as exc:
            raise OptionError(f"clear_consumers: {exc.pattern!r} is not a regular expression ({exc}).") from None
        cleared = []
        for cid in sorted(self.consumers()):
            if keep_in.fullmatch(cid) and not (leave is not None and leave.fullmatch(cid)):
                self.fileio.delete(self.path(cid))
                cleared.append(cid)
        return cleared

    def min_next_snapshot(self) -> int | None:
        """The smallest ``nextSnapshot`` of the branch's consumers: that snapshot is still going to be read."""
        values = self.consumers().values()
        return min(values) if values else None
