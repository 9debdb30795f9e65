"""The tier's own contract: a component that cannot start fails the test with its command and log (never a skip,
never a hang), and a driver script that fails or stalls reports its output and the components' logs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.deploy.components import _spawn, _stop, _wait_until, base_env, run_script


def test_a_component_that_dies_while_starting_fails_with_its_log(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    proc = _spawn([sys.executable, "-c", "print('cannot bind 127.0.0.1:1'); raise SystemExit(3)"], log, base_env())
    try:
        with pytest.raises(AssertionError, match=r"(?s)The thing exited with code 3 while starting.*cannot bind"):
            _wait_until(lambda: False, [proc], "The thing", log)
    finally:
        _stop([proc])


def test_a_driver_that_outlives_its_timeout_fails_with_its_output_and_the_logs(tmp_path: Path) -> None:
    """A stalled driver script reports where it got to and what the components logged, not a bare timeout."""
    log = tmp_path / "server.log"
    log.write_text("server: waiting for resources\n")
    script = "import time\nprint('STEP=\"connected\"', flush=True)\ntime.sleep(60)\n"
    with pytest.raises(
        AssertionError, match=r"(?s)did not finish within 2 s.*STEP=\"connected\".*waiting for resources"
    ):
        run_script(script, [], base_env(), tmp_path, timeout=2, logs=lambda: [log])
