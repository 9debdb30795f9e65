"""The fault harness: run one table operation with one injected fault, then check what the fault left behind.

For each :class:`Operation` (``tests/faults/operations.py``) a :class:`Baseline` is built once: the setup state
(a table directory on the ``faulty://`` store), its view, and a clean run's view and calls per kind. Every trial
runs on a hard-link clone of the setup directory under a fresh path (engine caches are keyed by path, so no
trial sees another's), with one :class:`~tests.faults.store.Fault` armed, and checks:

(a) **the model**: the table's view (rows of every branch, plus what the operation changes: tags, schema, commit
    kinds, snapshot ids...) is the setup's or the clean run's (or a state the operation declares legitimate, as
    maintenance after a landed commit that failed), never anything else; an operation that returned normally
    must be in effect;
(b) **references**: every file any snapshot, tag, branch or changelog references exists (``checker.py``, which
    reads the files itself);
(c) **a retry** of the same operation succeeds, or says it already took effect (``Operation.already``), and
    leaves the clean run's view; then a follow-up write lands and is seen (a stray head would swallow it);
(d) **leftovers**: after ``remove_orphan_files(older_than=now)`` nothing unreferenced is left but table
    metadata, and nothing referenced was removed;
(e) **the error**: a ``PaimonError``, and one that says it took effect when it did (:func:`says`).

(a)-(d) are *safety* findings (:attr:`Trial.unsafe`); (e) are *reporting* findings (:attr:`Trial.unclear`).
"""

from __future__ import annotations

import os
import re
import shutil
import time
import traceback
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Iterator

import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import CommitStateUnknownError, PaimonError
from tests.faults import store
from tests.faults.checker import inspect_table

DATABASE = "db"
TABLE = "db.t"

View = Hashable
ViewFn = Callable[[Table, "Context"], View]


@dataclass(frozen=True)
class Context:
    """What a view may need besides the table: the setup's latest snapshot id per branch, the trial's root."""

    setup_latest: dict[str, int]
    root: str


@dataclass(frozen=True)
class Operation:
    """One table operation under test.

    ``setup(catalog)`` builds table ``db.t`` (and its branches); ``run(table)`` is the operation on it, whose
    effect the retry repeats; ``view(table, ctx)`` is the state the model compares; ``idempotent``: a retry
    after the effect landed is allowed (else the retry runs only when the effect did not land); ``already``: a
    regex of the error a retry may raise when the first attempt took effect; ``partials``: variants of ``run``
    whose end state is also legitimate after a fault (each runs on its own clone); ``classify``: a custom
    comparison for views with legitimate intermediate states (snapshot ids of an interrupted expiration);
    ``follow_up``: a plain write after the retry that must land on the right head (None: none);
    ``quiet_partials``: a partial end state may come without an error (maintenance after a landed commit logs
    its failures by design)."""

    name: str
    setup: Callable[[Catalog], None]
    run: Callable[[Table], Any]
    view: ViewFn
    idempotent: bool = True
    already: str | None = None
    partials: tuple[Callable[[Table], Any], ...] = ()
    classify: Callable[[View, "Baseline"], str | None] | None = None
    follow_up: Callable[[Table], Any] | None = None
    quiet_partials: bool = False
    note: str = ""


@dataclass
class Baseline:
    """An operation's setup directory and the views and call counts of a clean run."""

    op: Operation
    setup_dir: str
    setup_latest: dict[str, int]
    before: View
    after: View
    partial_views: list[View]
    follow_view: View | None
    counts: dict[str, int]
    calls: list[tuple[str, str]]
    clean: "Trial"


@dataclass
class Trial:
    """One run of an operation with one fault, and what the checks found."""

    op: str
    fault: store.Fault | None
    fired: bool = False
    error_type: str | None = None
    error: str | None = None
    state: str | None = None  # before / after / partial / other
    says: str | None = None  # applied / not applied / unknown / nothing: what the error message says
    unsafe: list[str] = field(default_factory=list)
    unclear: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return f"{self.op} [{self.fault or 'no fault'}]"

    def summary(self) -> str:
        parts = [self.label]
        if self.error_type:
            parts.append(f"raised {self.error_type}: {_short(self.error or '')}")
        parts.append(f"state {self.state}")
        parts.extend(self.unsafe)
        parts.extend(self.unclear)
        return "; ".join(parts)


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# What an error message says about the operation's effect. Checked in this order.
_SAYS = (
    (
        "unknown",
        re.compile(
            r"may or may not|may have|might have|cannot be checked|cannot tell|unknown whether|whether it "
            r"(landed|took effect)|is unknown|not known whether",
            re.I,
        ),
    ),
    (
        "applied",
        re.compile(
            r"\blanded\b|took effect|is committed|was committed|has been committed|is in the table|were committed|"
            r"already (committed|applied|published|expired|deleted|moved)|has taken effect",
            re.I,
        ),
    ),
    (
        "not applied",
        re.compile(
            r"nothing (was|is|has been) (committed|written|published|deleted|changed|created|applied)|not committed|"
            r"keeps every|no change|unchanged|was not (committed|applied|created|published)|did not land",
            re.I,
        ),
    ),
)


def says(error: BaseException) -> str:
    """What ``error`` says about whether its operation took effect: 'applied', 'not applied', 'unknown' or
    'nothing'. A :class:`CommitStateUnknownError` says 'unknown' by its type."""
    if isinstance(error, CommitStateUnknownError):
        return "unknown"
    text = str(error)
    for verdict, pattern in _SAYS:
        if pattern.search(text):
            return verdict
    return "nothing"


def selected_faults(counts: dict[str, int], modes: Iterable[str], *, sample: bool) -> list[store.Fault]:
    """Every call of every kind (``sample``: the first, middle and last), in each mode."""
    faults = []
    for mode in modes:
        for kind in store.KINDS:
            n = counts.get(kind, 0)
            ks = sorted({1, (n + 1) // 2, n}) if sample else list(range(1, n + 1))
            faults.extend(store.Fault(kind, k, mode) for k in ks if 1 <= k <= n)
    return faults


class Harness:
    """Runs trials under ``base_dir`` (see the module docstring). One per test session or sweep."""

    def __init__(self, base_dir: str):
        self.base = os.path.abspath(base_dir)
        os.makedirs(self.base, exist_ok=True)
        self._baselines: dict[str, Baseline] = {}
        self._trials: dict[tuple[str, str, bool], list[Trial]] = {}

    @contextmanager
    def _store(self) -> Iterator[None]:
        """The ``faulty://`` store's patches, only while the harness runs (other tests keep FileIO as it is)."""
        with pytest.MonkeyPatch.context() as mp, store.faulty_store(mp, f"{self.base}/.staging"):
            yield

    def all_trials(self) -> list[Trial]:
        """Every trial run so far, the clean ones included."""
        out = [b.clean for b in self._baselines.values()]
        for trials in self._trials.values():
            out.extend(trials)
        return out

    # -- directories and tables ---------------------------------------------------------------------
    def _fresh(self, op: str, what: str) -> str:
        root = f"{self.base}/{op}/{what}-{uuid.uuid4().hex[:8]}"
        os.makedirs(root)
        return root

    def _clone(self, op: str, setup_dir: str) -> str:
        root = f"{self.base}/{op}/trial-{uuid.uuid4().hex[:8]}"
        shutil.copytree(setup_dir, root, copy_function=os.link)
        return root

    @staticmethod
    def faulty_table(root: str, branch: str | None = None) -> Table:
        """The table on the ``faulty://`` store (what operations run on)."""
        table = Catalog(store.uri_of(f"{root}/wh")).get_table(TABLE)
        return table.on_branch(branch) if branch else table

    @staticmethod
    def local_table(root: str) -> Table:
        """The same table through a plain local file system (what the checks read through)."""
        return Catalog(f"{root}/wh").get_table(TABLE)

    @staticmethod
    def table_dir(root: str) -> str:
        return f"{root}/wh/{DATABASE}.db/t"

    # -- baselines ----------------------------------------------------------------------------------
    def baseline(self, op: Operation) -> Baseline:
        """The operation's setup, its clean run, and the clean run's trial (every check without a fault)."""
        if op.name not in self._baselines:
            with self._store():
                base = self._make_baseline(op)
                self._baselines[op.name] = base
                base.clean = self.trial(op, None)
        return self._baselines[op.name]

    def _latest_ids(self, root: str) -> dict[str, int]:
        t = self.local_table(root)
        out = {"main": (t.latest_snapshot().id if t.latest_snapshot() else 0)}
        for b in t.branches.list():
            s = t.on_branch(b.name).latest_snapshot()
            out[b.name] = s.id if s else 0
        return out

    def _make_baseline(self, op: Operation) -> Baseline:
        setup_dir = self._fresh(op.name, "setup")
        with store.armed(None):
            catalog = Catalog(store.uri_of(f"{setup_dir}/wh"))
            catalog.create_database(DATABASE)
            op.setup(catalog)
        latest = self._latest_ids(setup_dir)
        ctx = Context(latest, setup_dir)
        before = op.view(self.local_table(setup_dir), ctx)
        clean_root = self._clone(op.name, setup_dir)
        with store.armed(None, record=True):
            op.run(self.faulty_table(clean_root))
            counts = store.counts()
            calls = store.call_log()
        after = op.view(self.local_table(clean_root), Context(latest, clean_root))
        partial_views = []
        for variant in op.partials:
            root = self._clone(op.name, setup_dir)
            with store.armed(None):
                variant(self.faulty_table(root))
            partial_views.append(op.view(self.local_table(root), Context(latest, root)))
        follow_view = None
        if op.follow_up is not None:
            root = self._clone(op.name, setup_dir)
            with store.armed(None):
                op.run(self.faulty_table(root))
                op.follow_up(self.faulty_table(root))
            follow_view = op.view(self.local_table(root), Context(latest, root))
        if before == after:
            raise AssertionError(f"{op.name}: the clean run does not change the view; the model could not tell")
        return Baseline(
            op, setup_dir, latest, before, after, partial_views, follow_view, counts, calls, Trial(op.name, None)
        )

    def _state(self, op: Operation, view: View, base: Baseline) -> str:
        if op.classify is not None:
            verdict = op.classify(view, base)
            if verdict is not None:
                return verdict
        if view == base.after:
            return "after"
        if view == base.before:
            return "before"
        if view in base.partial_views:
            return "partial"
        return "other"

    def _view(self, op: Operation, root: str, base: Baseline) -> View:
        return op.view(self.local_table(root), Context(base.setup_latest, root))

    # -- trials ---------------------------------------------------------------------------------------
    def trials(self, op: Operation, modes: Iterable[str], *, sample: bool) -> list[Trial]:
        """The trials of ``op`` in ``modes`` (cached: the safety and the error tests share them)."""
        modes = tuple(modes)
        key = (op.name, ",".join(modes), sample)
        if key not in self._trials:
            base = self.baseline(op)
            with self._store():
                self._trials[key] = [self.trial(op, f) for f in selected_faults(base.counts, modes, sample=sample)]
        return self._trials[key]

    def trial(self, op: Operation, fault: store.Fault | None) -> Trial:
        started = time.monotonic()
        base = self.baseline(op)
        trial = Trial(op.name, fault)
        root = self._clone(op.name, base.setup_dir)
        try:
            with self._store():
                self._run_trial(op, base, root, trial)
        except Exception as e:  # noqa: BLE001 - a check itself failed: the table is in a state no check can read
            trial.unsafe.append(f"check failed: {type(e).__name__}: {_short(str(e))} at {_where(e)}")
        finally:
            trial.seconds = time.monotonic() - started
            shutil.rmtree(root, ignore_errors=True)
        return trial

    def _run_trial(self, op: Operation, base: Baseline, root: str, trial: Trial) -> None:
        error: BaseException | None = None
        with store.armed(trial.fault):
            try:
                op.run(self.faulty_table(root))
            except Exception as e:  # noqa: BLE001 - whatever the operation raises is what (e) classifies
                error = e
        trial.fired = store.fired() is not None
        if error is not None:
            trial.error_type = type(error).__name__
            trial.error = str(error)
            trial.says = says(error)
        self._check(op, base, root, trial, error)

    def kill_trial(self, op: Operation, k: int, kind: str) -> Trial:
        """One trial of the kill tier: ``op`` runs in a child process that exits at its ``k``-th call of ``kind``
        (``tests/faults/kills.py``), then checks (a)-(d) run here on what the dead process left."""
        started = time.monotonic()
        base = self.baseline(op)
        fault = store.Fault(kind, k, store.KILL)
        trial = Trial(op.name, fault)
        root = self._clone(op.name, base.setup_dir)
        try:
            from tests.faults import kills  # noqa: PLC0415 - the kill tier only

            outcome = kills.run_killed(op.name, root, fault, f"{self.base}/.staging")
            trial.fired = outcome == kills.KILLED
            if outcome not in (kills.KILLED, kills.FINISHED):
                trial.unsafe.append(f"the child process did not die at the fault: {outcome}")
            with self._store():
                self._check(op, base, root, trial, None, killed=trial.fired)
        except Exception as e:  # noqa: BLE001 - as in trial()
            trial.unsafe.append(f"check failed: {type(e).__name__}: {_short(str(e))} at {_where(e)}")
        finally:
            trial.seconds = time.monotonic() - started
            shutil.rmtree(root, ignore_errors=True)
        return trial

    def _check(
        self,
        op: Operation,
        base: Baseline,
        root: str,
        trial: Trial,
        error: BaseException | None,
        *,
        killed: bool = False,
    ) -> None:
        """Checks (a)-(e) of the module docstring on the table the trial left (``killed``: the process running the
        operation died, so it neither returned nor raised)."""
        # (a) the model
        try:
            trial.state = self._state(op, self._view(op, root, base), base)
        except Exception as e:  # noqa: BLE001 - an unreadable table is a finding, whatever the error
            trial.state = "unreadable"
            trial.unsafe.append(f"table unreadable after the fault: {type(e).__name__}: {_short(str(e))}")
        quiet = op.quiet_partials and trial.state == "partial"
        if killed:  # it neither returned nor raised: any state but a half or lost change is legitimate
            if trial.state == "other":
                trial.unsafe.append("the table is neither before nor after the operation (a half or lost change)")
        elif error is None and trial.state not in ("after", "unreadable") and not quiet:
            trial.unsafe.append(f"returned normally but the table is '{trial.state}', not the operation's result")
        elif trial.state == "other":
            trial.unsafe.append("the table is neither before nor after the operation (a half or lost change)")
        # (b) references
        report = inspect_table(self.table_dir(root))
        if report.missing:
            trial.missing = report.missing
            trial.unsafe.append(f"missing referenced files: {_short('; '.join(report.missing))}")
        gaps = [g for g in report.leftovers if "have gaps" in g]
        if gaps:  # a snapshot past a gap is a head the next plain commit jumps to, whether or not anyone retries
            trial.unsafe.append(f"stray snapshots after the fault: {_short('; '.join(gaps))}")
        # (c) the retry, then a follow-up write
        if trial.state != "after" or op.idempotent:
            with store.armed(None):
                try:
                    op.run(self.faulty_table(root))
                except Exception as e:  # noqa: BLE001 - a failing retry is a finding, whatever the error
                    if not (trial.state == "after" and op.already and re.search(op.already, str(e))):
                        trial.unsafe.append(f"the retry failed: {type(e).__name__}: {_short(str(e))}")
            try:
                state = self._state(op, self._view(op, root, base), base)
            except Exception as e:  # noqa: BLE001 - as above
                state = f"unreadable ({type(e).__name__}: {_short(str(e), 120)})"
            if state != "after":
                trial.unsafe.append(f"after the retry the table is '{state}', not the operation's result")
        if op.follow_up is not None and not trial.unsafe:
            with store.armed(None):
                op.follow_up(self.faulty_table(root))
            if self._view(op, root, base) != base.follow_view:
                trial.unsafe.append("a write after the retry is not seen as written (the head moved elsewhere)")
        # (d) leftovers: orphan removal removes them, and nothing referenced
        cutoff = int(time.time() * 1000) + 1000  # every file the trial wrote is older; nothing is in flight
        with store.armed(None):
            self.faulty_table(root).maintenance.remove_orphan_files(older_than=cutoff)
        cleaned = inspect_table(self.table_dir(root))
        removed_live = sorted(set(cleaned.missing) - set(report.missing))
        if removed_live:
            trial.unsafe.append(f"orphan removal deleted referenced files: {_short('; '.join(removed_live))}")
        if cleaned.leftovers:
            trial.leftovers = cleaned.leftovers
            trial.unsafe.append(f"leftovers orphan removal cannot remove: {_short('; '.join(cleaned.leftovers))}")
        # (e) the error
        if error is not None:
            if not isinstance(error, PaimonError):
                trial.unclear.append(f"not a PaimonError: {type(error).__name__}")
            took_effect = trial.state in ("after", "partial")
            if took_effect and trial.says in ("nothing", "not applied"):
                trial.unclear.append(f"raised after taking effect ({trial.state}) and the message says {trial.says!r}")
            elif trial.state == "before" and trial.says == "applied":
                trial.unclear.append("says it took effect, but the table is unchanged")


class UnsafeTableError(AssertionError):
    """A fault left the table in a state checks (a)-(d) refuse (see the module docstring)."""


class UnclearError(AssertionError):
    """An error a fault caused is not a PaimonError, or does not say that the operation took effect when it did."""


def assert_safe(trials: list[Trial]) -> None:
    """Raise :class:`UnsafeTableError` listing every trial with a safety finding (and every fault that never fired:
    the operation ran differently from its clean run, so the trial tested nothing)."""
    if not trials:
        raise AssertionError("no trials: the operation made no calls")
    bad = [t.summary() for t in trials if t.unsafe]
    idle = [t.label for t in trials if t.fault is not None and not t.fired]
    if idle:
        bad.append(f"faults that never fired: {', '.join(idle)}")
    if bad:
        raise UnsafeTableError(f"{len(bad)} of {len(trials)} trials unsafe:\n" + "\n".join(bad))


def assert_clear(trials: list[Trial]) -> None:
    """Raise :class:`UnclearError` listing every trial whose error does not say what happened."""
    if not trials:
        raise AssertionError("no trials: the operation made no calls")
    bad = [t.summary() for t in trials if t.unclear]
    if bad:
        raise UnclearError(f"{len(bad)} of {len(trials)} trials raised unclear errors:\n" + "\n".join(bad))


def _where(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    return f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else "?"


__all__ = [
    "Baseline",
    "Context",
    "Harness",
    "Operation",
    "Trial",
    "UnclearError",
    "UnsafeTableError",
    "assert_clear",
    "assert_safe",
    "says",
    "selected_faults",
]
