"""Progress of long maintenance operations: a plain callback, no Spark, no terminal handling.

Maintenance functions (compaction, snapshot and branch expiry, orphan removal) take ``progress=``: a
callable ``progress(step, done, total)`` they call once per unit of work (a bucket compacted, a file deleted),
with ``done`` counting up to ``total``. The CLI passes a terminal reporter; library callers pass their own or
nothing (None: no calls at all)."""

from __future__ import annotations

from typing import Callable

Progress = Callable[[str, int, int], None]


def report(progress: Progress | None, step: str, done: int, total: int) -> None:
    """Call ``progress`` if there is one."""
    if progress is not None:
        progress(step, done, total)


__all__ = ["Progress", "report"]
