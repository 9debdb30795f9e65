"""Fixtures of the interop tests; the helpers live in ``tests/interop/helpers.py``."""

from __future__ import annotations

from typing import Iterator

import pytest


@pytest.fixture(scope="module")
def module_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("wh")
    yield str(path)
