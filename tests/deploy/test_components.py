"""The tier's own contract: a component that cannot start fails the test with its command and log (never a skip,
never a hang)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.deploy.components import _spawn, _stop, _wait_until, base_env


def test_a_component_that_dies_while_starting_fails_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    proc = _spawn([sys.executable, "-c", "print('cannot bind 127.0.0.1:1'); raise SystemExit(3)"], log, base_env())
    try:
        with pytest.raises(AssertionError, match=r"(?s)The thing exited with code 3 while starting.*cannot bind"):
            _wait_until(lambda: False, [proc], "The thing", log)
    finally:
        _stop([proc])
