"""The fault harness's session fixture: one :class:`~tests.faults.harness.Harness` (its baselines and trials are
shared by the safety and the error tests), and, when ``PAIMON_FAULT_REPORT`` names a file, every trial written
there as JSON lines at the end (``tests/faults/report.py`` summarises it for docs/testing.md)."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Iterator

import pytest

from tests.faults.harness import Harness


@pytest.fixture(scope="session")
def fault_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    harness = Harness(str(tmp_path_factory.mktemp("faults")))
    yield harness
    target = os.environ.get("PAIMON_FAULT_REPORT")
    if target:
        with open(target, "w", encoding="utf-8") as out:
            for trial in harness.all_trials():
                record = dataclasses.asdict(trial)
                record["fault"] = dataclasses.asdict(trial.fault) if trial.fault else None
                out.write(json.dumps(record) + "\n")
