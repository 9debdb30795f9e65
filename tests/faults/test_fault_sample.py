"""The CI sample of the fault sweep: for every operation, the first, middle and last call of each kind fails,
in each mode (``tests/faults/harness.py`` says what a trial checks). The full sweep is ``test_fault_sweep.py``."""

from __future__ import annotations

import pytest

from tests.faults.cases import error_cases, safety_cases
from tests.faults.harness import Harness, assert_clear, assert_safe
from tests.faults.known import SAMPLE_UNCLEAR, SAMPLE_UNSAFE
from tests.faults.operations import BY_NAME
from tests.faults.store import MODES


@pytest.mark.parametrize("op_name, mode", safety_cases(SAMPLE_UNSAFE))
def test_a_fault_loses_nothing_and_leaves_nothing(fault_harness: Harness, op_name: str, mode: str) -> None:
    op = BY_NAME[op_name]
    assert_safe([fault_harness.baseline(op).clean, *fault_harness.trials(op, [mode], sample=True)])


@pytest.mark.parametrize("op_name", error_cases(SAMPLE_UNCLEAR))
def test_a_fault_raises_a_paimon_error_saying_what_happened(fault_harness: Harness, op_name: str) -> None:
    op = BY_NAME[op_name]
    assert_clear([t for mode in MODES for t in fault_harness.trials(op, [mode], sample=True)])
