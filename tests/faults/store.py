"""A fault-injecting object store for the fault harness: fsspec protocol ``faulty://`` over a local directory.

Why a store of our own: the harness must fail *the k-th call of one kind* wherever the engine makes it, in the
three ways a remote store fails, without touching product code. The engine reaches storage only through
``FileIO`` (``metadata/io/fileio.py``), which wraps an fsspec file system; registering this class under its own
protocol and trusting it to create exclusively (``EXCLUSIVE_CREATE``, patched by :func:`faulty_store`) makes
every table operation run on it exactly as on S3: ``FileIO`` treats it as remote (no listing cache, its
transient-error retries, ``try_create`` through ``open(path, "xb")``).

It behaves like an object store on a local directory, so the checker can read the result with plain ``os``:

* a file appears whole or not at all: writes go to a staging file outside the table and are moved into
  place on ``close`` (``wb``: replace; ``xb``: a hard link, which fails if the target exists: a conditional
  create). Nothing is ever modified in place, so tables can be cloned with hard links;
* parent directories are made on demand (the engine's own ``makedirs`` calls are still counted and failed).

Calls are counted per kind (:data:`KINDS`), only at the outermost call (``exists`` calling ``info`` counts
once). ``list`` covers listings and existence/size checks (S3's LIST and HEAD). The :class:`Fault` armed by
:func:`arm` fails the k-th call of its kind in one of :data:`MODES`:

* ``fail``: the call raises a persistent error and did nothing (the harness turns ``FileIO``'s retries off);
* ``transient``: the call raises once, the way a busy store answers; ``FileIO`` retries where it retries;
* ``lost``: the call succeeds, then raises as if its answer was lost on the way back (a transient error, so
  ``FileIO`` may retry: a retried exclusive create then finds its own file and reports "already exists");
* ``lost-final``: the same, but the error reaches the engine (``FileIO``'s retries off, as when they are
  exhausted): the engine sees a failure of a call that took effect, the case an abort must not get wrong.

The kill tier (``tests/faults/kills.py``) arms a fault of mode :data:`KILL` in a child process: the process exits
at the k-th call, before the call runs (``os._exit``: no ``except``, no ``finally``, no clean-up of any kind), as
a ``kill -9`` there would stop it.
"""

from __future__ import annotations

import errno
import functools
import io
import os
import shutil
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import fsspec
import pytest
from fsspec.spec import AbstractFileSystem

from pyspark_paimon.metadata.io import fileio as fileio_module

PROTOCOL = "faulty"
KINDS = ("create", "write", "rename", "delete", "list", "read", "mkdir")
MODES = ("fail", "transient", "lost", "lost-final")
#: The kill tier's mode (not one of :data:`MODES`: it needs a process of its own to die in).
KILL = "kill"
#: The exit status of a process the store killed.
KILLED_EXIT = 86


@dataclass(frozen=True)
class Fault:
    """Fail the ``k``-th call (1-based) of ``kind`` in ``mode``."""

    kind: str
    k: int
    mode: str

    def __str__(self) -> str:
        return f"{self.mode} {self.kind} #{self.k}"


class InjectedError(OSError):
    """What the store raises for an injected fault: a plain ``OSError`` subclass, as s3fs raises them (the type
    lets the checker tell an injected error reaching the caller from an error of the engine's own)."""


@dataclass
class _State:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    fault: Fault | None = None
    fired: str | None = None  # the path of the call that failed
    log: list[tuple[str, str]] | None = None  # (kind, path) of every counted call, when recording


_STATE = _State()
_LOCK = threading.Lock()
_DEPTH = threading.local()


def arm(fault: Fault | None, *, record: bool = False) -> None:
    """Reset the counters and arm ``fault`` (None: count only)."""
    with _LOCK:
        _STATE.counts = dict.fromkeys(KINDS, 0)
        _STATE.fault = fault
        _STATE.fired = None
        _STATE.log = [] if record else None


def disarm() -> None:
    with _LOCK:
        _STATE.fault = None


def counts() -> dict[str, int]:
    with _LOCK:
        return dict(_STATE.counts)


def fired() -> str | None:
    """The path of the call the armed fault failed, or None if the k-th call never came."""
    with _LOCK:
        return _STATE.fired


def call_log() -> list[tuple[str, str]]:
    with _LOCK:
        return list(_STATE.log or [])


def _count(kind: str, path: str) -> str | None:
    """Count one outermost call; returns the fault's mode when this call is the one to fail."""
    with _LOCK:
        _STATE.counts[kind] += 1
        if _STATE.log is not None:
            _STATE.log.append((kind, path))
        fault = _STATE.fault
        if fault is not None and fault.kind == kind and fault.k == _STATE.counts[kind]:
            _STATE.fired = path
            return fault.mode
        return None


def _error(mode: str, kind: str, path: str) -> InjectedError:
    # Worded as a store words them: nothing here may read as the engine saying whether its operation took effect.
    if mode == "fail":
        return InjectedError(errno.EIO, f"injected I/O error on {kind}", path)
    if mode == "transient":
        return InjectedError(errno.EBUSY, f"injected SlowDown on {kind}", path)
    return InjectedError(errno.ECONNRESET, f"injected connection reset after {kind}", path)


@contextmanager
def _call(kind: str, path: str) -> Iterator[str | None]:
    """Count the call unless it is nested in another counted call; yields the fault mode to act on (``fail`` and
    ``transient`` are raised here, before the call; ``lost`` is for the caller to raise after it)."""
    depth = getattr(_DEPTH, "n", 0)
    mode = _count(kind, path) if depth == 0 else None
    if mode == KILL:
        os._exit(KILLED_EXIT)  # the process dies here, before the call: nothing after it runs
    if mode in ("fail", "transient"):
        raise _error(mode, kind, path)
    _DEPTH.n = depth + 1
    try:
        yield mode
    finally:
        _DEPTH.n = depth


def _lost(mode: str | None, kind: str, path: str) -> None:
    if mode in ("lost", "lost-final"):
        raise _error(mode, kind, path)


class _StagedFile(io.FileIO):
    """A file being uploaded: written to a staging path, moved into place when closed (``publish``)."""

    def __init__(self, staging: str, publish: Callable[[], None]):
        super().__init__(staging, "wb")
        self._publish = publish
        self._done = False

    def close(self) -> None:
        if self.closed:
            return
        super().close()
        if not self._done:
            self._done = True
            self._publish()


class FaultyFileSystem(AbstractFileSystem):
    """``faulty://<absolute local path without its leading slash>``: see the module docstring."""

    protocol = (PROTOCOL,)
    root_marker = ""
    cachable = True
    #: Where uploads are staged (outside every table, on the same device as the tables); set by the harness.
    staging_dir: str | None = None

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        text = str(path)
        if text.startswith(f"{PROTOCOL}://"):
            text = text[len(PROTOCOL) + 3 :]
        return text.strip("/")

    @staticmethod
    def _local(path: str) -> str:
        return "/" + FaultyFileSystem._strip_protocol(path)

    def _staging(self) -> str:
        directory = FaultyFileSystem.staging_dir
        if directory is None:
            raise RuntimeError("FaultyFileSystem.staging_dir is not set (use tests.faults.store.faulty_store)")
        return os.path.join(directory, uuid.uuid4().hex)

    # -- list ----------------------------------------------------------------------------------
    def _entry(self, local: str, st: os.stat_result) -> dict[str, Any]:
        is_dir = os.path.isdir(local)
        return {
            "name": local.lstrip("/"),
            "size": 0 if is_dir else st.st_size,
            "type": "directory" if is_dir else "file",
            "mtime": st.st_mtime,
        }

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        with _call("list", path) as mode:
            local = self._local(path)
            if os.path.isfile(local):
                entries = [self._entry(local, os.stat(local))]
            else:
                entries = []
                for name in sorted(os.listdir(local)):  # FileNotFoundError when absent, as s3fs raises it
                    child = os.path.join(local, name)
                    try:
                        entries.append(self._entry(child, os.stat(child)))
                    except FileNotFoundError:
                        continue  # deleted while listed
            _lost(mode, "list", path)
        return entries if detail else [e["name"] for e in entries]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        with _call("list", path) as mode:
            local = self._local(path)
            entry = self._entry(local, os.stat(local))
            _lost(mode, "list", path)
        return entry

    def exists(self, path: str, **kwargs: Any) -> bool:
        with _call("list", path) as mode:
            found = os.path.exists(self._local(path))
            _lost(mode, "list", path)
        return found

    # -- read ----------------------------------------------------------------------------------
    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        with _call("read", path) as mode:
            with open(self._local(path), "rb") as f:
                data = f.read()
            _lost(mode, "read", path)
        return data[start:end]

    # -- write and create ------------------------------------------------------------------------
    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> Any:
        local = self._local(path)
        if mode == "rb":
            with _call("read", path) as fault:
                f = open(local, "rb")  # noqa: SIM115 - the caller closes it
                if fault in ("lost", "lost-final"):
                    f.close()
                _lost(fault, "read", path)
            return f
        if mode not in ("wb", "xb"):
            raise ValueError(f"{PROTOCOL}:// supports modes rb, wb and xb, not {mode!r}")
        kind = "create" if mode == "xb" else "write"
        with _call(kind, path) as fault:
            if kind == "create" and os.path.exists(local):
                raise FileExistsError(errno.EEXIST, "exists", path)
        staging = self._staging()

        def publish() -> None:
            try:
                os.makedirs(os.path.dirname(local), exist_ok=True)
                if kind == "create":
                    os.link(staging, local)  # the conditional create: fails when the target exists
                else:
                    os.replace(staging, local)
            finally:
                if os.path.exists(staging):
                    os.unlink(staging)
            _lost(fault, kind, path)

        return _StagedFile(staging, publish)

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        with self.open(path, "xb" if mode == "create" else "wb") as f:
            f.write(value)

    # -- directories, delete, rename -------------------------------------------------------------
    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        with _call("mkdir", path) as mode:
            os.makedirs(self._local(path), exist_ok=exist_ok)
            _lost(mode, "mkdir", path)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        with _call("mkdir", path) as mode:
            if create_parents:
                os.makedirs(self._local(path), exist_ok=True)
            else:
                os.mkdir(self._local(path))
            _lost(mode, "mkdir", path)

    def rm_file(self, path: str) -> None:
        with _call("delete", path) as mode:
            os.unlink(self._local(path))
            _lost(mode, "delete", path)

    def rmdir(self, path: str) -> None:
        with _call("delete", path) as mode:
            os.rmdir(self._local(path))
            _lost(mode, "delete", path)

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        for one in [path] if isinstance(path, str) else list(path):
            with _call("delete", one) as mode:
                local = self._local(one)
                if os.path.isdir(local):
                    if not recursive:
                        raise IsADirectoryError(errno.EISDIR, "is a directory", one)
                    shutil.rmtree(local)
                else:
                    os.unlink(local)
                _lost(mode, "delete", one)

    def mv(self, path1: str, path2: str, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        with _call("rename", path1) as mode:
            target = self._local(path2)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.rename(self._local(path1), target)
            _lost(mode, "rename", path1)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        with open(self._local(path1), "rb") as f:
            data = f.read()
        self.pipe_file(path2, data)


fsspec.register_implementation(PROTOCOL, FaultyFileSystem, clobber=True)


def uri_of(local_dir: str) -> str:
    """The ``faulty://`` URI of a local directory."""
    return f"{PROTOCOL}://{os.path.abspath(local_dir).lstrip('/')}"


def local_of(uri_or_path: str) -> str:
    """The local directory of a ``faulty://`` URI or of a path as ``FileIO`` holds it."""
    return FaultyFileSystem._local(uri_or_path)


@contextmanager
def faulty_store(monkeypatch: pytest.MonkeyPatch, staging_dir: str) -> Iterator[None]:
    """Trust ``faulty://`` to create exclusively (as the engine trusts s3fs >= 2025.7), retry without back-off,
    and stage uploads in ``staging_dir``. Nothing is armed: use :func:`arm`."""
    os.makedirs(staging_dir, exist_ok=True)
    monkeypatch.setitem(fileio_module.EXCLUSIVE_CREATE, PROTOCOL, ("fsspec", "0"))
    # Every write asks importlib.metadata for the driver's version (3 ms); thousands of trials ask once.
    monkeypatch.setattr(fileio_module, "installed_version", functools.lru_cache(fileio_module.installed_version))
    monkeypatch.setattr(fileio_module, "_FIRST_BACKOFF_SECONDS", 0.0)
    monkeypatch.setattr(FaultyFileSystem, "staging_dir", staging_dir)
    arm(None)
    try:
        yield
    finally:
        arm(None)


@contextmanager
def armed(fault: Fault | None, *, record: bool = False) -> Iterator[None]:
    """Arm ``fault`` for the block (``fail`` and ``lost-final`` also turn ``FileIO``'s retries off, so the failure
    is final);
    the store is disarmed afterwards, whatever happens."""
    attempts = fileio_module.TRANSIENT_ATTEMPTS
    if fault is not None and fault.mode in ("fail", "lost-final"):
        fileio_module.TRANSIENT_ATTEMPTS = 1
    arm(fault, record=record)
    try:
        yield
    finally:
        disarm()
        fileio_module.TRANSIENT_ATTEMPTS = attempts
