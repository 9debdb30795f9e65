"""How the ``pyspark-paimon`` command line prints: results as rows (an aligned table or JSON lines), a no-op as
one sentence, instants and durations as Paimon's procedures show them, and progress on a terminal.

Kept apart from :mod:`pyspark_paimon.cli` (the procedures and their arguments) so that a procedure returns rows
and says whether it changed anything, and one place decides what the user sees.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, TextIO

from pyspark_paimon.metadata.timeutil import local_datetime

TEXT_LINE = "_line"  # a row holding only this key is printed as a bare line of text (history --graph, no-ops)
Row = dict[str, Any]


def time_text(millis: int | None) -> str | None:
    """Epoch ms as local time, to the millisecond (as Paimon's procedures print instants)."""
    return None if millis is None else local_datetime(millis).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def datetime_text(value: Any) -> str | None:
    """A datetime as :func:`time_text` prints an instant."""
    return None if value is None else value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def duration_text(millis: int | None) -> str | None:
    """A length of time in the largest whole unit (``'7 d'``, ``'12 h'``), else in ms."""
    if millis is None:
        return None
    seconds = millis // 1000
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{millis} ms"


class TerminalProgress:
    """Progress of a long procedure on a terminal: one line on ``stream`` rewritten in place (``\\r``),
    ended with a newline when a step completes. Only used when ``stream`` is a TTY (see :func:`progress_for`),
    so piped or captured output never holds it."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def __call__(self, step: str, done: int, total: int) -> None:
        self.stream.write(f"\r{step}: {done}/{total}")
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()


def progress_for(stream: TextIO) -> TerminalProgress | None:
    """A reporter on ``stream`` when it is a terminal, else None (no progress output)."""
    isatty = getattr(stream, "isatty", None)
    return TerminalProgress(stream) if isatty is not None and isatty() else None


def or_nothing(a: argparse.Namespace, rows: list[Row], nothing: str | None) -> list[Row]:
    """``rows``; but when the procedure changed nothing (``nothing`` says what and why), text output prints that
    sentence instead of a row of blanks. JSON keeps the row, whose fields say it to a program."""
    if nothing is None or getattr(a, "json", False):
        return rows
    return [{TEXT_LINE: nothing}]


def print_rows(rows: list[Row], as_json: bool) -> None:
    """Rows as JSON lines, or as an aligned table; rows of only :data:`TEXT_LINE` as bare lines."""
    if as_json:
        for row in rows:
            print(json.dumps(row, default=str))
        return
    if not rows:
        print("(none)")
        return
    if all(list(row) == [TEXT_LINE] for row in rows):
        for row in rows:
            print(row[TEXT_LINE])
        return
    columns = list(dict.fromkeys(k for row in rows for k in row))
    cells = [[("" if row.get(c) is None else str(row.get(c))) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


__all__ = [
    "TEXT_LINE",
    "Row",
    "TerminalProgress",
    "datetime_text",
    "duration_text",
    "or_nothing",
    "print_rows",
    "progress_for",
    "time_text",
]
