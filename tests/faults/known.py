"""Known findings of the fault harness (issue 33): the cases whose trials fail a check today, with what goes
wrong, so their tests are strict xfails that flip once the product is fixed. ``SAMPLE_*`` hold the CI sample's
(first, middle and last call of each kind), ``SWEEP_*`` the full sweep's (every call; a superset).

``*_UNSAFE``: (operation, mode) -> the safety finding; ``*_UNCLEAR``: operation -> the error-reporting finding
(its trials in every mode together). Measured on the sweep of docs/testing.md ("Fault harness")."""

from __future__ import annotations

_HALF_BRANCH = (
    "a fault in the branch's first steps (mkdir of branch/branch-<b>, the create of its branch.json) leaves a "
    "half-made branch: t.branches.list() lists it but it cannot be opened (BranchNotFoundError), a retry says "
    "'already exists', and remove_orphan_files keeps it; a lost-answer create of branch.json is reported as "
    "'created concurrently'"
)
_KEEP_PREVIOUS = (
    "replace_main(keep_previous_as=...): the saved 'previous' branch is made first and kept when the replace "
    "then fails (create of main's snapshot, the listings and reads of the switch), so the table is neither "
    "before nor after and a retry refuses ('that branch already exists'); "
)
SAMPLE_UNSAFE: dict[tuple[str, str], str] = {
    ("branch_create", "fail"): _HALF_BRANCH + " (create #1)",
    ("branch_create", "lost"): _HALF_BRANCH + " (mkdir #1, create #1)",
    ("branch_create", "lost-final"): _HALF_BRANCH + " (mkdir #1, create #1)",
    ("replace_main", "fail"): _KEEP_PREVIOUS + "and " + _HALF_BRANCH + " (create #1, create #2)",
    ("replace_main", "lost"): _HALF_BRANCH + " (mkdir #1, create #1), for the 'previous' branch",
    ("replace_main", "lost-final"): _HALF_BRANCH + " (mkdir #1, create #1), for the 'previous' branch",
}

SWEEP_UNSAFE: dict[tuple[str, str], str] = {
    **SAMPLE_UNSAFE,
    ("replace_main", "fail"): _KEEP_PREVIOUS + "and " + _HALF_BRANCH + " (12 of 60 calls)",
    ("replace_main", "transient"): _KEEP_PREVIOUS + "(mkdir #6: makedirs is not retried)",
    ("replace_main", "lost"): _KEEP_PREVIOUS + "and " + _HALF_BRANCH + " (create #1, mkdir #1, mkdir #6)",
    ("replace_main", "lost-final"): _KEEP_PREVIOUS + "and " + _HALF_BRANCH + " (12 of 60 calls)",
}

_UNCLEAR: dict[str, str] = {
    "branch_create": "a failed listing of the new branch after it was made is not said to come after the branch took "
    "effect",
    "schema_change": "a lost-answer create of the schema file is reported as 'already has a column'",
    "tag_create": "a lost-answer create of the tag file is reported as 'already exists'",
}

SAMPLE_UNCLEAR: dict[str, str] = dict(_UNCLEAR)
SWEEP_UNCLEAR: dict[str, str] = dict(SAMPLE_UNCLEAR)
