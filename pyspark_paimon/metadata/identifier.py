"""Paimon table identifiers: ``db.t``, ``db.t$branch_b``, ``db.t$snapshots``, ``db.t$branch_b$tags`` (Java's
`Identifier`).

The same suffixes work on a path (``/wh/db.db/t$branch_b``), so a Spark ``load(path)`` can address branches
and system tables exactly as Paimon's identifiers do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pyspark_paimon.errors import BranchError, PaimonError

BRANCH_PREFIX = "branch_"
SYSTEM_TABLES = (
    "snapshots",
    "schemas",
    "options",
    "audit_log",
    "binlog",
    "ro",
    "row_tracking",
    "files",
    "tags",
    "branches",
    "consumers",
    "manifests",
    "aggregation_fields",
    "partitions",
    "buckets",
    "statistics",
    "table_indexes",
    "file_key_ranges",
)
_NAME = re.compile(r"^[^\s./$][^/$]*$")


@dataclass(frozen=True)
class Suffix:
    branch: str | None = None
    system_table: str | None = None


def split_suffix(text: str) -> tuple[str, Suffix]:
    """Split ``name$branch_b$tags`` into ``name`` and its branch / system-table suffix."""
    parts = text.split("$")
    base, rest = parts[0], parts[1:]
    branch = system = None
    if len(rest) > 2:
        raise PaimonError(f"Cannot parse '{text}': at most one branch and one system table may follow '$'.")
    for i, part in enumerate(rest):
        low = part.lower()
        if low.startswith(BRANCH_PREFIX) and i == 0:
            branch = part[len(BRANCH_PREFIX) :]
            validate_branch_name(branch, allow_main=True)
        elif low in SYSTEM_TABLES and system is None and (i == len(rest) - 1):
            system = low
        else:
            raise PaimonError(
                f"Unknown table suffix '${part}' in '{text}'. Use '$branch_<name>' and/or one of the system "
                f"tables: {', '.join('$' + s for s in SYSTEM_TABLES)}."
            )
    return base, Suffix(branch, system)


def parse_identifier(identifier: str) -> tuple[str, str, Suffix]:
    """``db.t$suffix`` to (database, table, suffix)."""
    base, suffix = split_suffix(identifier)
    if base.count(".") != 1:
        raise PaimonError(
            f"Table identifier '{identifier}' must be 'database.table' (optionally followed by $branch_<b> or a "
            "system table such as $snapshots)."
        )
    db, table = base.split(".")
    for what, name in (("database", db), ("table", table)):
        if not name or not _NAME.match(name):
            raise PaimonError(f"Invalid {what} name '{name}' in '{identifier}'.")
    return db, table, suffix


def validate_branch_name(name: str, allow_main: bool = False) -> None:
    """Paimon's rules (not blank, not ``main``, not purely numeric) plus no ``.``, ``$`` or ``/``."""
    if name is None or not name.strip():
        raise BranchError("Branch name must not be blank.")
    if name == "main" and not allow_main:
        raise BranchError("'main' is the default branch and cannot be created, renamed or dropped.")
    if name.isdigit():
        raise BranchError(f"Branch name '{name}' is purely numeric; it would be ambiguous with snapshot ids.")
    for ch in (".", "$", "/"):
        if ch in name:
            raise BranchError(f"Branch name '{name}' must not contain '{ch}'.")
