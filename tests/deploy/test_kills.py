"""The kill tier of the fault harness (issue 33): each operation below runs in a child process that exits at the
k-th call of one kind (create, write, rename, delete, list, read, mkdir) before the call runs, like ``kill -9``
there (``tests/faults/kills.py``); this process then checks the table as the fault sweep does
(``tests/faults/harness.py``: the model, every referenced file, no stray head, a retry and a following write,
nothing left that ``remove_orphan_files`` cannot remove).

CI kills at the first, middle and last call of each kind; every call is killed under the ``faults`` marker
(``-m faults``). Counts are in docs/testing.md ("Fault harness")."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.faults.harness import Harness, Trial, assert_safe, selected_faults
from tests.faults.operations import BY_NAME
from tests.faults.store import KILL

# Compaction (a merge-tree minor and full one, deletion vectors, postpone-bucket moves, unaware-bucket append,
# chain tables), expiration (snapshots, tags), branch merge and publish, fast-forward (head 3 and 2 ahead),
# replace_main, and branch creation.
KILLED_OPERATIONS = (
    "compact_minor",
    "compact_full",
    "compact_deletion_vectors",
    "compact_postpone",
    "compact_append",
    "compact_chain",
    "expire_snapshots",
    "expire_tags",
    "branch_merge",
    "branch_publish",
    "fast_forward",
    "fast_forward_near",
    "replace_main",
    "branch_create",
)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield Harness(str(tmp_path_factory.mktemp("kills")))


def kill_trials(harness: Harness, op_name: str, *, sample: bool) -> list[Trial]:
    op = BY_NAME[op_name]
    base = harness.baseline(op)
    faults = selected_faults(base.counts, [KILL], sample=sample)
    return [base.clean, *(harness.kill_trial(op, f.k, f.kind) for f in faults)]


@pytest.mark.parametrize("op_name", KILLED_OPERATIONS)
def test_a_kill_at_a_sampled_call_loses_nothing_and_leaves_nothing(harness: Harness, op_name: str) -> None:
    assert_safe(kill_trials(harness, op_name, sample=True))


@pytest.mark.faults
@pytest.mark.parametrize("op_name", KILLED_OPERATIONS)
def test_a_kill_at_every_call_loses_nothing_and_leaves_nothing(harness: Harness, op_name: str) -> None:
    assert_safe(kill_trials(harness, op_name, sample=False))
