"""Known findings of the fault harness (issue 33): the cases whose trials fail a check today, with what goes
wrong, so their tests are strict xfails that flip once the product is fixed. ``SAMPLE_*`` hold the CI sample's
(first, middle and last call of each kind), ``SWEEP_*`` the full sweep's (every call; a superset).

``*_UNSAFE``: (operation, mode) -> the safety finding; ``*_UNCLEAR``: operation -> the error-reporting finding
(its trials in every mode together). Measured on the sweep of docs/testing.md ("Fault harness")."""

from __future__ import annotations

SAMPLE_UNSAFE: dict[tuple[str, str], str] = {}

SWEEP_UNSAFE: dict[tuple[str, str], str] = {
    **SAMPLE_UNSAFE,
}

_UNCLEAR: dict[str, str] = {
    "branch_create": "a failed listing of the new branch after it was made is not said to come after the branch took "
    "effect",
    "schema_change": "a lost-answer create of the schema file is reported as 'already has a column'",
    "tag_create": "a lost-answer create of the tag file is reported as 'already exists'",
}

SAMPLE_UNCLEAR: dict[str, str] = dict(_UNCLEAR)
SWEEP_UNCLEAR: dict[str, str] = dict(SAMPLE_UNCLEAR)
