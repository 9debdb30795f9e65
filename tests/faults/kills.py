"""The kill tier's child processes: one operation of ``tests/faults/operations.py`` runs in a process of its own on
the ``faulty://`` store armed to exit at the k-th call of one kind (``store.KILL``), and the parent
(:meth:`~tests.faults.harness.Harness.kill_trial`) checks what the dead process left.

Why a process: a kill is the one stop no ``except`` or ``finally`` sees, so the clean-up paths an error takes
cannot hide a state only a kill leaves (a half-made branch, a publish's claimed ids, a pending merge record).
The children are forked from a *forkserver* that has imported the engine once (:data:`PRELOAD`): a fresh
interpreter per trial costs more than a second, a fork of the test process itself is unsafe (its threads, e.g.
pyarrow's pools, may hold locks the child would need), and the forkserver is single-threaded.
"""

from __future__ import annotations

import multiprocessing
import os
import sys

import pytest

from tests.faults import store

#: What a child's exit says: it died at the fault, or the k-th call never came (it finished, or it raised).
KILLED = "killed"
FINISHED = "finished"
_RAISED_EXIT = 3
#: Imported once by the forkserver, so each child starts with the engine loaded.
PRELOAD = ["tests.faults.kills", "tests.faults.operations", "pyspark_paimon.table", "pyspark_paimon.catalog"]
#: A child that runs longer is hung (a clean run of any operation takes well under a second).
TIMEOUT_S = 120

_CONTEXT: multiprocessing.context.BaseContext | None = None


def _context() -> multiprocessing.context.BaseContext:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        _CONTEXT = ctx
    return _CONTEXT


def _child(op_name: str, table_uri: str, fault: store.Fault, staging_dir: str) -> None:
    """Run the operation with the kill armed; exits 0 when it returned, :data:`_RAISED_EXIT` when it raised (the
    store exits with ``store.KILLED_EXIT`` at the fault itself)."""
    from pyspark_paimon import Catalog  # noqa: PLC0415 - preloaded by the forkserver
    from tests.faults.harness import TABLE  # noqa: PLC0415
    from tests.faults.operations import BY_NAME  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as mp, store.faulty_store(mp, staging_dir), store.armed(fault):
        try:
            BY_NAME[op_name].run(Catalog(table_uri).get_table(TABLE))
        except Exception as e:  # noqa: BLE001 - reported by the exit status; the parent checks the table
            print(f"{op_name} [{fault}] raised {type(e).__name__}: {e}", file=sys.stderr)
            os._exit(_RAISED_EXIT)
    os._exit(0)


def run_killed(op_name: str, root: str, fault: store.Fault, staging_dir: str) -> str:
    """Run ``op_name`` on the trial directory ``root`` in a child process armed with ``fault`` (a ``store.KILL``
    fault); returns :data:`KILLED`, :data:`FINISHED`, or a description of any other end of the child."""
    child = _context().Process(  # type: ignore[attr-defined]
        target=_child, args=(op_name, store.uri_of(f"{root}/wh"), fault, staging_dir), daemon=True
    )
    child.start()
    child.join(TIMEOUT_S)
    if child.is_alive():
        child.kill()
        child.join()
        return f"hung for {TIMEOUT_S} s and was killed"
    if child.exitcode == store.KILLED_EXIT:
        return KILLED
    if child.exitcode == 0:
        return FINISHED
    if child.exitcode == _RAISED_EXIT:
        return "raised (its error is on stderr) instead of dying at the fault"
    return f"exited with status {child.exitcode}"


__all__ = ["FINISHED", "KILLED", "PRELOAD", "run_killed"]
