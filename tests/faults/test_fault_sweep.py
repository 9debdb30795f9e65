"""The full fault sweep (``-m faults``; deselected otherwise): every call of each kind fails, in each mode, for
every operation. Same checks as the CI sample (``test_fault_sample.py``); its counts are in docs/testing.md."""

from __future__ import annotations

import pytest

from tests.faults.cases import error_cases, safety_cases
from tests.faults.harness import Harness, assert_clear, assert_safe
from tests.faults.known import SWEEP_UNCLEAR, SWEEP_UNSAFE
from tests.faults.operations import BY_NAME
from tests.faults.store import MODES


@pytest.mark.parametrize("op_name, mode", safety_cases(SWEEP_UNSAFE, pytest.mark.faults))
def test_every_fault_loses_nothing_and_leaves_nothing(fault_harness: Harness, op_name: str, mode: str) -> None:
    op = BY_NAME[op_name]
    assert_safe([fault_harness.baseline(op).clean, *fault_harness.trials(op, [mode], sample=False)])


@pytest.mark.parametrize("op_name", error_cases(SWEEP_UNCLEAR, pytest.mark.faults))
def test_every_fault_raises_a_paimon_error_saying_what_happened(fault_harness: Harness, op_name: str) -> None:
    op = BY_NAME[op_name]
    assert_clear([t for mode in MODES for t in fault_harness.trials(op, [mode], sample=False)])
