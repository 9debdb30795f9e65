"""Summarise a fault sweep: ``PAIMON_FAULT_REPORT=sweep.jsonl ./dev test tests/faults -m faults``, then
``python -m tests.faults.report sweep.jsonl`` prints, per operation and mode, the trials and each finding's
count (the table in docs/testing.md), and the distinct findings with one example fault each."""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from typing import Any

#: Finding categories: (column, prefix of the harness's finding text).
CATEGORIES = (
    ("ack lost", "returned normally but the table is"),
    ("half", "the table is neither before nor after"),
    ("unreadable", "table unreadable after the fault"),
    ("missing", "missing referenced files"),
    ("stray", "stray snapshots after the fault"),
    ("retry", "the retry failed"),
    ("retry state", "after the retry the table is"),
    ("next write", "a write after the retry is not seen"),
    ("removed live", "orphan removal deleted referenced files"),
    ("leftovers", "leftovers orphan removal cannot remove"),
    ("check", "check failed"),
    ("raw", "not a PaimonError"),
    ("silent", "raised after taking effect"),
    ("false", "says it took effect, but the table is unchanged"),
)


def category(finding: str) -> str:
    for name, prefix in CATEGORIES:
        if finding.startswith(prefix):
            return name
    return "other"


def load(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def table(trials: list[dict[str, Any]]) -> str:
    """A Markdown table: per operation and mode, trials and the number of trials with each finding."""
    rows: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for t in trials:
        if t["fault"] is None:
            continue
        key = (t["op"], t["fault"]["mode"])
        rows[key]["trials"] += 1
        for name in {category(f) for f in t["unsafe"] + t["unclear"]}:
            rows[key][name] += 1
    columns = ["trials"] + [name for name, _ in CATEGORIES]
    used = [c for c in columns if any(r[c] for r in rows.values())]
    out = ["| operation | mode | " + " | ".join(used) + " |", "|---|---|" + "---:|" * len(used)]
    total: Counter[str] = Counter()
    for (op, mode), counts in sorted(rows.items()):
        total.update(counts)
        out.append(f"| {op} | {mode} | " + " | ".join(str(counts[c] or "") for c in used) + " |")
    out.append("| **total** | | " + " | ".join(str(total[c]) for c in used) + " |")
    return "\n".join(out)


def errors(trials: list[dict[str, Any]]) -> str:
    """A Markdown table: per operation, the errors the faults caused, how many were raw (not a PaimonError), and
    what their messages say about the effect, against what the table shows."""
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for t in trials:
        if t["fault"] is None or t["error_type"] is None:
            continue
        counts = rows[t["op"]]
        counts["errors"] += 1
        counts["raw"] += any(f.startswith("not a PaimonError") for f in t["unclear"])
        took_effect = t["state"] in ("after", "partial")
        counts["took effect"] += took_effect
        counts[f"says {t['says']}"] += 1
        counts["took effect, says so"] += took_effect and t["says"] in ("applied", "unknown")
    columns = ["errors", "raw", "took effect", "took effect, says so"] + [
        f"says {s}" for s in ("applied", "unknown", "not applied", "nothing")
    ]
    out = ["| operation | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    total: Counter[str] = Counter()
    for op, counts in sorted(rows.items()):
        total.update(counts)
        out.append(f"| {op} | " + " | ".join(str(counts[c]) for c in columns) + " |")
    out.append("| **total** | " + " | ".join(str(total[c]) for c in columns) + " |")
    return "\n".join(out)


def distinct(trials: list[dict[str, Any]]) -> str:
    """Each distinct finding per operation and mode, with its count and the faults that caused it."""
    seen: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for t in trials:
        f = t["fault"]
        where = f"{f['kind']} #{f['k']}" if f else "no fault"
        for finding in t["unsafe"]:
            seen[(t["op"], f["mode"] if f else "-", _generic(finding))].append(where)
    lines = []
    for (op, mode, finding), where in sorted(seen.items()):
        lines.append(
            f"{op} [{mode}] x{len(where)} ({', '.join(where[:8])}{', ...' if len(where) > 8 else ''}): {finding}"
        )
    return "\n".join(lines)


def _generic(finding: str) -> str:
    """A finding without trial paths and names, so equal findings group."""
    text = finding
    for marker in ("/trial-", "/setup-"):
        while marker in text:
            start = text.index(marker)
            end = text.find("/", start + 1)
            text = text[:start] + "/<trial>" + (text[end:] if end > 0 else "")
    return text[:300]


def main(argv: list[str]) -> int:
    trials = load(argv[1])
    print(table(trials))
    print()
    print(errors(trials))
    print()
    print(distinct(trials))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
