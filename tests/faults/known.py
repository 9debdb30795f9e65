"""Known findings of the fault harness (issue 33): the cases whose trials fail a check today, with what goes
wrong, so their tests are strict xfails that flip once the product is fixed. ``SAMPLE_*`` hold the CI sample's
(first, middle and last call of each kind), ``SWEEP_*`` the full sweep's (every call; a superset).

``*_UNSAFE``: (operation, mode) -> the safety finding; ``*_UNCLEAR``: operation -> the error-reporting finding
(its trials in every mode together). Measured on the sweep of docs/testing.md ("Fault harness"); none is known
today: a new finding goes here, with what goes wrong, until it is fixed."""

from __future__ import annotations

SAMPLE_UNSAFE: dict[tuple[str, str], str] = {}

SWEEP_UNSAFE: dict[tuple[str, str], str] = {**SAMPLE_UNSAFE}

SAMPLE_UNCLEAR: dict[str, str] = {}
SWEEP_UNCLEAR: dict[str, str] = dict(SAMPLE_UNCLEAR)
