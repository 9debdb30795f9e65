"""What the running operation has already changed, so that an error it raises can say whether it took effect.

An operation (one call of the Python API, one commit of a Spark sink) changes a table in steps, and only some
steps are visible to anyone else: a snapshot committed, a tag or schema created, a branch published, a snapshot
or data file expired. Files written before such a step are leftovers nothing references, which
``remove_orphan_files`` removes. So when a storage call fails, whether the operation took effect is exactly
whether one of those steps had happened, and only the operation can know. The steps record themselves here with
:func:`took_effect`; :func:`operation` wraps a call and gives every error leaving it an ``outcome``
(``errors.Outcome``) and ``safe_to_retry``, and a message that says the same:

* no step had happened: ``'not applied'``; a storage error says that nothing was changed;
* a step had happened: ``'applied'`` (running the call again would do it twice), or ``'partial'`` for an
  idempotent operation (expiration, orphan removal, a publish: running it again finishes it);
* an error that already knows (a commit conflict: ``'not applied'``; a lost commit answer: ``'unknown'``) keeps
  its own outcome.

Nested operations (a write's automatic compaction, a publish's commit) belong to the outermost one. The record is
a context variable, so threads started inside an operation record nothing: every step that takes effect runs in
the operation's own thread (compaction threads only write files; the commit is the caller's).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, TypeVar

from pyspark_paimon.errors import PaimonError, StorageError

_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass
class Effects:
    """The steps of one running operation that took effect, in order."""

    what: str
    """The operation, as its errors name it."""
    idempotent: bool
    """Running it again finishes it rather than doing it twice (maintenance, publishing)."""
    steps: list[str] = field(default_factory=list)
    """What took effect so far (e.g. "snapshot 5 of branch 'main' committed")."""
    pending: str | None = None
    """A step whose storage call was under way when the operation failed: it may or may not have taken effect
    (a delete whose answer was lost did)."""


_CURRENT: ContextVar[Effects | None] = ContextVar("pyspark_paimon_effects", default=None)


def in_operation() -> bool:
    """Whether an operation is running in this thread (its errors are described when they leave it)."""
    return _CURRENT.get() is not None


def took_effect(step: str) -> None:
    """Record that ``step`` of the running operation is visible to others now (no-op outside an operation)."""
    current = _CURRENT.get()
    if current is not None:
        current.steps.append(step)


@contextmanager
def taking_effect(step: str) -> Iterator[None]:
    """Run the storage call that would make ``step`` take effect (the caller records it with :func:`took_effect`
    once it knows it did): if the call fails, whether it took effect is unknown (its answer may have been lost
    after the store did it), and the error says so."""
    current = _CURRENT.get()
    if current is None:
        yield
        return
    current.pending = step
    yield
    current.pending = None


@contextmanager
def operation(what: str, *, idempotent: bool = False) -> Iterator[Effects]:
    """Run the body as the operation ``what``; an error leaving it says whether it took effect (module
    docstring). A raw ``OSError`` from a storage call FileIO does not make (a data file written by pyarrow, say)
    becomes a :class:`StorageError`."""
    outer = _CURRENT.get()
    if outer is not None:  # nested: the outermost operation describes the error
        yield outer
        return
    effects = Effects(what, idempotent)
    token = _CURRENT.set(effects)
    try:
        yield effects
    except PaimonError as error:
        describe(error, effects)
        raise
    except OSError as error:
        storage = StorageError(f"{what} failed: {error}")
        describe(storage, effects)
        raise storage from error
    finally:
        _CURRENT.reset(token)


def records_effects(what: str, *, idempotent: bool = False) -> Callable[[_F], _F]:
    """Decorate a method of the API as one :func:`operation` named ``what`` on the table it acts on (the method's
    ``self``, or its ``_table``)."""

    def decorate(method: _F) -> _F:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            with operation(f"{what} on {_subject(self)}", idempotent=idempotent):
                return method(self, *args, **kwargs)

        return call  # type: ignore[return-value]

    return decorate


def _subject(obj: Any) -> str:
    """The table an API object acts on, as errors name it: a namespace's ``_table`` (its repr names the table, its
    branch and path), or the ``store`` (or a job's store) of an engine object."""
    table = getattr(obj, "_table", None)
    if table is not None:
        return repr(table)
    store = (
        getattr(obj, "store", None) or getattr(obj, "_store", None) or getattr(getattr(obj, "job", None), "store", None)
    )
    if store is not None and hasattr(store, "table_path"):
        return f"{store.table_path} (branch '{store.branch}')"
    return repr(obj)


def describe(error: PaimonError, effects: Effects) -> None:
    """Give ``error`` the outcome ``effects`` imply, and say it in the message. An outcome the error was raised
    with (an instance attribute: a publish that says whether it was undone) or an unknown one (a lost commit
    answer) stands; a class's default (a conflict changed nothing) gives way to steps the operation had taken
    before it."""
    if error.outcome == "unknown" or "outcome" in vars(error):
        return
    if effects.steps:
        error.outcome, error.safe_to_retry = ("partial", True) if effects.idempotent else ("applied", False)
    elif effects.pending is not None:
        error.outcome, error.safe_to_retry = "unknown", effects.idempotent
    elif error.outcome is None:
        error.outcome = "not applied"
        error.safe_to_retry = True if isinstance(error, StorageError) else None
    note = _note(error, effects)
    if note and error.args and isinstance(error.args[0], str) and note not in error.args[0]:
        error.args = (f"{error.args[0].rstrip()} {note}", *error.args[1:])


def _note(error: PaimonError, effects: Effects) -> str:
    if not effects.steps:
        done = ""
    else:
        more = len(effects.steps) - 1
        done = effects.steps[-1] + (f" and {more} step(s) before it" if more else "")
    if effects.pending is not None:
        unsure = f"{effects.pending} may or may not have taken effect (the store's answer was lost)"
        if error.outcome == "partial":
            return f"The operation took effect in part ({done}; then {unsure}); run it again to finish it."
        if error.outcome == "applied":
            return f"The operation took effect before the error ({done}; then {unsure}): do not run it again."
        return f"{unsure[0].upper()}{unsure[1:]}; check before running it again" + (
            "." if effects.idempotent else " (running it again after it took effect would do it twice)."
        )
    if error.outcome == "applied" and effects.steps:
        return f"The operation took effect before the error ({done}): do not run it again, it would be done twice."
    if error.outcome == "partial" and effects.steps:
        return f"The operation took effect in part ({done}); run it again to finish it."
    if error.outcome == "not applied" and isinstance(error, StorageError):
        return (
            "Nothing was changed: run it again (files it wrote before the error are referenced by nothing; "
            "remove_orphan_files deletes them)."
        )
    return ""


__all__ = ["Effects", "describe", "in_operation", "operation", "records_effects", "taking_effect", "took_effect"]
