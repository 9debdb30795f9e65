"""Test parameters of the fault tests: one case per (operation, mode) for safety, one per operation for the
errors, each a strict xfail when ``known.py`` lists it (``raises=`` keeps a new kind of failure a failure)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.faults.harness import UnclearError, UnsafeTableError
from tests.faults.operations import OPERATIONS
from tests.faults.store import MODES


def safety_cases(known: dict[tuple[str, str], str], *marks: Any) -> list[Any]:
    out = []
    for op in OPERATIONS:
        for mode in MODES:
            reason = known.get((op.name, mode))
            xfail = [pytest.mark.xfail(strict=True, raises=UnsafeTableError, reason=reason)] if reason else []
            out.append(pytest.param(op.name, mode, id=f"{op.name}-{mode}", marks=[*marks, *xfail]))
    return out


def error_cases(known: dict[str, str], *marks: Any) -> list[Any]:
    out = []
    for op in OPERATIONS:
        reason = known.get(op.name)
        xfail = [pytest.mark.xfail(strict=True, raises=UnclearError, reason=reason)] if reason else []
        out.append(pytest.param(op.name, id=op.name, marks=[*marks, *xfail]))
    return out
