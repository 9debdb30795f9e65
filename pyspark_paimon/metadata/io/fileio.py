"""File access for tables on local disk or any fsspec file system.

One small class so the rest of the code never touches fsspec directly. It is pickled to Spark's Python
workers, so it holds only the URI and the storage options and rebuilds the file system lazily.

The one operation that matters for safety is :meth:`FileIO.try_create`: Paimon's commit protocol relies on
*create-if-absent* of ``snapshot-N``. On a local file system we write a temporary file and hard-link it to
the target (``link`` fails atomically when the target exists, across processes), so a reader never sees a
half-written snapshot and two writers can never both win. Object stores get the same guarantee only where
the fsspec driver really creates exclusively (``mode="xb"`` as a conditional write). Many drivers accept
``"xb"`` and silently overwrite (webhdfs, several third-party stores, and s3fs before 2025.7 for small files,
which is exactly what a snapshot file is), so two writers could both "win" snapshot N and one commit would be
lost. We therefore allow only drivers known to create exclusively, from the version that does it
(:data:`EXCLUSIVE_CREATE`), and refuse every other store before anything is written.

Object stores add three hazards that a local disk does not have, each handled here so that no caller needs to know:

* **Stale listings.** fsspec drivers cache directory listings per process (s3fs, gcsfs, adlfs), and answer
  ``exists``/``info`` from that cache too, so a process that listed ``snapshot/`` would not see another process's
  commit. The object stores of :data:`EXCLUSIVE_CREATE` are therefore built with ``use_listings_cache=False``
  (unless the caller sets it; other drivers may not accept the argument), and on every remote store each listing
  and ``exists`` first drops the cached entries of its path.
* **Files replaced while read.** ``open(path, "rb")`` on s3fs pins the object's ETag from a first request and
  fails (``Etag ... no longer exists``) if the file is replaced before the read, which is what happens to the
  ``LATEST`` hint under concurrent commits. :meth:`FileIO.read_bytes` reads a whole small file with one GET
  (``cat_file``), which is atomic.
* **Transient errors** (throttling, a conditional write that conflicts with one in flight, a dropped
  connection): reads and the exclusive create retry them a few times with back-off (:data:`TRANSIENT_ATTEMPTS`).
  A retried create that finds the file present reports "not created", and the commit then checks whether the
  snapshot it finds is its own, so a create whose answer was lost is never committed twice.

Every failed call (after its retries) raises :class:`~pyspark_paimon.errors.StorageError`, a ``PaimonError`` that
is also an ``OSError`` and names the call and the path; ``FileNotFoundError`` and ``FileExistsError`` stay what they
are, because callers act on them. The operation the error interrupts adds what it had already done
(:mod:`pyspark_paimon.metadata.effects`).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Mapping, Protocol, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem

from pyspark_paimon.errors import CommitError, OptionError, StorageError
from pyspark_paimon.metadata.effects import in_operation

_MEMORY_LOCK = threading.Lock()
_T = TypeVar("_T")
#: How often a remote read or exclusive create is tried before a transient error is raised, and the first
#: back-off (doubled per attempt: 0.1 s, 0.2 s, 0.4 s...).
TRANSIENT_ATTEMPTS = 5
_FIRST_BACKOFF_SECONDS = 0.1
# The calls that only read: one failing outside an operation changed nothing.
_READS = frozenset({"read", "check", "get the size of", "list"})
#: Object stores without directories: creating a file's parent "directory" is a request that does nothing.
_FLAT_PROTOCOLS = ("s3", "s3a", "gs", "gcs")
#: Protocols whose file system lives on this machine: no listing cache to bypass, no transient errors to retry.
_LOCAL_PROTOCOLS = ("file", "local", "memory")
# ``.<target name>.<uuid>.tmp`` in the target's directory: what write_bytes and try_create write before moving the
# file into place, and exactly Java's ``Path.createTempPath()``. A writer killed in between leaves it behind.
_TEMP_FILE = re.compile(r"^\..+\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\.tmp$")


def is_temp_file(name: str) -> bool:
    """Whether a base name is a temp file of an atomic write (ours or Java Paimon's), never a table file."""
    return _TEMP_FILE.match(name) is not None


#: Remote protocols whose fsspec driver implements ``open(path, "xb")`` as a real conditional create, and the
#: first driver release that does (s3fs 2024.12 added it but ignored it for small files until 2025.7; gcsfs
#: and adlfs added it in 2024.12). ``file`` (hard link) and ``memory`` (a process-wide lock) are handled
#: separately.
EXCLUSIVE_CREATE: dict[str, tuple[str, str]] = {
    "s3": ("s3fs", "2025.7.0"),
    "s3a": ("s3fs", "2025.7.0"),
    "gs": ("gcsfs", "2024.12.0"),
    "gcs": ("gcsfs", "2024.12.0"),
    "abfs": ("adlfs", "2024.12.0"),
    "abfss": ("adlfs", "2024.12.0"),
    "az": ("adlfs", "2024.12.0"),
}


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version)[:3])


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def is_transient(error: BaseException) -> bool:
    """Whether an I/O error may go away when the same request is repeated: any ``OSError`` except the ones that
    state a fact about the file (absent, present, forbidden, a directory). s3fs maps throttling, 409 conflicts of
    conditional writes and 5xx answers to plain ``OSError``s."""
    return isinstance(error, OSError) and not isinstance(
        error, (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)
    )


def storage_options_from_strings(options: Mapping[str, str]) -> dict[str, Any]:
    """fsspec keyword arguments from string values (Spark's ``fs.<key>`` options, the CLI's ``--fs key=value``):
    ``true``/``false`` become booleans (fsspec flags such as s3fs's ``anon`` treat any non-empty string as
    true) and a JSON object becomes a dict (``client_kwargs``, ``config_kwargs``); anything else stays a string."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        text = value.strip()
        if text.lower() in ("true", "false"):
            out[key] = text.lower() == "true"
        elif text.startswith("{"):
            try:
                out[key] = json.loads(text)
            except json.JSONDecodeError as e:
                raise OptionError(
                    f"Storage option '{key}' looks like a JSON object but does not parse ({e}): "
                    f'{value!r}. Give valid JSON, e.g. \'{{"region_name": "eu-west-1"}}\'.'
                ) from e
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class FileStatus:
    name: str
    path: str
    size: int
    mtime_millis: int
    is_dir: bool


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _split_protocol(uri: str) -> tuple[str, str]:
    if "://" in uri:
        protocol, rest = uri.split("://", 1)
        return protocol.lower(), rest
    if uri.startswith("file:"):
        return "file", uri[len("file:") :]
    return "file", uri


class Credentials(Protocol):
    """Storage credentials that expire (a REST catalog's vended data credentials,
    :mod:`pyspark_paimon.metadata.catalog.vended_credentials`): fsspec arguments merged over the storage options,
    fetched again when :meth:`stale`. Picklable, so they travel to executors with the FileIO."""

    def storage_options(self) -> dict[str, Any]: ...

    def stale(self) -> bool: ...


def storage_error(what: str, uri: str, cause: OSError) -> StorageError:
    """The :class:`StorageError` of the failed call ``what`` (``'read'``, ``'write'``...) on ``uri``. A read outside
    any operation (opening a table, planning or reading a scan, a task reading its inputs) changed nothing, and
    says so; inside one, the operation says what it had done when the error leaves it (metadata/effects.py)."""
    error = StorageError(f"Cannot {what} {uri}: {cause}")
    if what in _READS and not in_operation():
        error.outcome, error.safe_to_retry = "not applied", True
        error.args = (f"{error.args[0]} Nothing was changed (a failed read): run it again.",)
    return error


class FileIO:
    """Picklable facade over an fsspec file system, rooted at nothing in particular.

    Paths handed to it are full paths in the file system's own notation (a local absolute path, or the
    part after ``scheme://`` for remote stores); :meth:`for_uri` turns a URI into one and :meth:`uri` turns one back.
    ``credentials`` (expiring keys) are merged over ``storage_options``; the file system is rebuilt with fresh
    ones before they expire.
    """

    def __init__(
        self,
        protocol: str = "file",
        storage_options: dict[str, Any] | None = None,
        credentials: Credentials | None = None,
    ):
        self.protocol = protocol
        self.storage_options = dict(storage_options or {})
        self.credentials = credentials
        self._fs: fsspec.AbstractFileSystem | None = None

    def __repr__(self) -> str:  # never the storage options: they may hold keys
        return f"FileIO({self.protocol!r})"

    @classmethod
    def for_uri(
        cls, uri: str, storage_options: dict[str, Any] | None = None, credentials: Credentials | None = None
    ) -> tuple["FileIO", str]:
        """Return the FileIO for ``uri`` and the uri's path within that file system."""
        protocol, rest = _split_protocol(uri)
        if protocol == "file":
            rest = os.path.abspath(os.path.expanduser(rest))
        elif protocol == "memory":
            rest = "/" + rest.lstrip("/")
        return cls(protocol, storage_options, credentials), rest.rstrip("/") or "/"

    def __getstate__(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "storage_options": self.storage_options, "credentials": self.credentials}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.protocol = state["protocol"]
        self.storage_options = state["storage_options"]
        self.credentials = state.get("credentials")
        self._fs = None

    def current_storage_options(self) -> dict[str, Any]:
        """The fsspec arguments in force: the storage options with the current credentials merged over them."""
        options = dict(self.storage_options)
        if self.credentials is not None:
            options.update(self.credentials.storage_options())
        return options

    @property
    def fs(self) -> fsspec.AbstractFileSystem:
        if self._fs is not None and self.credentials is not None and self.credentials.stale():
            self._fs = None  # fresh credentials before the old ones expire
        if self._fs is None:
            options = self.current_storage_options()
            if self.protocol in EXCLUSIVE_CREATE:  # the object stores, whose drivers cache listings: see above
                options.setdefault("use_listings_cache", False)
            self._fs = fsspec.filesystem(self.protocol, **options)
        return self._fs

    @property
    def is_remote(self) -> bool:
        return self.protocol not in _LOCAL_PROTOCOLS

    def _uncached(self, path: str) -> None:
        """Drop what the driver cached about ``path`` (and its parents), so the next call asks the store."""
        if self.is_remote:
            self.fs.invalidate_cache(path)

    def _parents_for(self, path: str) -> None:
        """Make the parent directory of a file about to be written, where the store has directories."""
        if self.protocol not in _FLAT_PROTOCOLS:
            self.mkdirs(path.rsplit("/", 1)[0])

    def _cat_whole(self, path: str) -> bytes:
        """One GET of the whole file. s3fs's ``cat_file`` first asks for the size (a HEAD) to read big files in
        parallel chunks; metadata files are small, so read them serially in one request where it can."""
        cat = self.fs.cat_file
        serial = "max_concurrency" in inspect.signature(getattr(self.fs, "_cat_file", cat)).parameters
        return bytes(cat(path, max_concurrency=1) if serial else cat(path))

    def _retrying(self, what: str, call: Callable[[], _T]) -> _T:
        """``call()``, repeated with back-off while a remote store answers with a transient error."""
        for attempt in range(TRANSIENT_ATTEMPTS):
            try:
                return call()
            except OSError as e:
                if not self.is_remote or not is_transient(e) or attempt == TRANSIENT_ATTEMPTS - 1:
                    raise
                time.sleep(_FIRST_BACKOFF_SECONDS * 2**attempt)
        raise AssertionError(f"unreachable: {what}")  # pragma: no cover - the loop returns or raises

    def _call(self, what: str, path: str, call: Callable[[], _T], *, retry: bool = True) -> _T:
        """``call()`` on ``path`` (retried on a remote store's transient errors unless ``retry`` is False); a failure
        raises :class:`StorageError` naming ``what`` and the path, except the two errors that state a fact about
        the file (absent, present), which callers act on."""
        try:
            return self._retrying(what, call) if retry else call()
        except (FileNotFoundError, FileExistsError, StorageError):
            raise
        except OSError as e:
            raise storage_error(what, self.uri(path), e) from e

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def uri(self, path: str) -> str:
        """The URI of ``path`` (what a user or another engine would pass to open it)."""
        if self.protocol == "file":
            return path
        return f"{self.protocol}://{path.lstrip('/') if self.protocol != 'memory' else path}"

    @staticmethod
    def join(*parts: str) -> str:
        out = parts[0].rstrip("/")
        for p in parts[1:]:
            if p:
                out = out + "/" + p.strip("/")
        return out

    # -- reads ---------------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        """The whole file. Remote stores read it with one request (atomic even while the file is replaced) and
        retry transient errors."""
        if not self.is_remote:

            def read_local() -> bytes:
                with self.fs.open(path, "rb") as f:
                    return bytes(f.read())

            return self._call("read", path, read_local)
        return self._call("read", path, lambda: self._cat_whole(path))

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def open_input(self, path: str) -> BinaryIO:
        return self.fs.open(path, "rb")

    def exists(self, path: str) -> bool:
        self._uncached(path)
        return bool(self._call("check", path, lambda: self.fs.exists(path)))

    def size(self, path: str) -> int:
        return int(self._call("get the size of", path, lambda: self.fs.size(path)))

    def list_status(self, directory: str) -> list[FileStatus]:
        """Entries directly under ``directory``; empty when it does not exist."""
        self._uncached(directory)  # the commit protocol decides on listings: never answer from a cache
        try:
            infos = self._call("list", directory, lambda: self.fs.ls(directory, detail=True))
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for info in infos:
            path = info["name"].rstrip("/")
            if self.protocol == "memory" and not path.startswith("/"):
                path = "/" + path
            name = path.rsplit("/", 1)[-1]
            mtime = info.get("mtime") or info.get("LastModified") or info.get("created") or 0
            if hasattr(mtime, "timestamp"):
                mtime = mtime.timestamp()
            out.append(
                FileStatus(
                    name, path, int(info.get("size") or 0), int(float(mtime) * 1000), info.get("type") == "directory"
                )
            )
        return out

    def list_names(self, directory: str) -> list[str]:
        return [s.name for s in self.list_status(directory)]

    # -- writes --------------------------------------------------------------------------------
    def mkdirs(self, directory: str) -> None:
        self._call("create the directory", directory, lambda: self.fs.makedirs(directory, exist_ok=True))

    def write_stream(self, path: str, write: Callable[[BinaryIO], None]) -> None:
        """Create the new file ``path`` with what ``write(out)`` writes (a data file: its name is new, so nothing
        reads it before it is referenced). A remote store's transient error writes it again from the start (one
        whole-object PUT either way)."""

        def attempt() -> None:
            with self.fs.open(path, "wb") as out:
                write(out)

        self._call("write", path, attempt)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a file. Local files are replaced atomically via rename."""
        parent = path.rsplit("/", 1)[0]
        if self.is_local:

            def replace_local() -> None:
                os.makedirs(parent, exist_ok=True)
                tmp = self._temp_path(path)
                try:
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.replace(tmp, path)
                except BaseException:
                    _unlink_quietly(tmp)  # a failed write must not leave a hidden temp file behind
                    raise

            self._call("write", path, replace_local)
            return
        self._parents_for(path)

        def write() -> None:
            with self.fs.open(path, "wb") as f:
                f.write(data)

        self._call("write", path, write)  # a whole-object PUT: repeating it is harmless

    def require_exclusive_create(self) -> None:
        """Raise :class:`CommitError` unless this store can create a file exclusively (see the module
        docstring). Writers call it before any task runs, so an unsafe store fails before writing data."""
        if self.protocol in ("file", "local", "memory"):
            return
        known = EXCLUSIVE_CREATE.get(self.protocol)
        if known is None:
            raise CommitError(
                f"The file system '{self.protocol}' is not known to create files exclusively (fsspec drivers often "
                "accept mode 'xb' and silently overwrite), so two writers could both commit the same snapshot and "
                "one commit would be lost. pyspark-paimon commits only to local/shared file systems, S3 (s3fs), "
                "GCS (gcsfs) and Azure (adlfs). Write to one of those; reading works on any file system."
            )
        distribution, minimum = known
        have = installed_version(distribution)
        if have is None or _version_tuple(have) < _version_tuple(minimum):
            raise CommitError(
                f"Committing to '{self.protocol}://' needs {distribution} >= {minimum} (its exclusive create is what "
                f"makes a commit atomic; installed: {have or 'none'}). Run: pip install '{distribution}>={minimum}'."
            )

    def try_create(self, path: str, data: bytes) -> bool:
        """Atomically create ``path`` with ``data`` unless it exists. True if we created it.

        Readers never see partial content, and of several concurrent callers exactly one wins.
        """
        parent = path.rsplit("/", 1)[0]
        if self.is_local:

            def create_local() -> bool:
                os.makedirs(parent, exist_ok=True)
                tmp = self._temp_path(path)
                try:
                    with open(tmp, "wb") as f:
                        f.write(data)
                        f.flush()
                        os.fsync(f.fileno())
                    os.link(tmp, path)
                    return True
                except FileExistsError:
                    return False
                finally:
                    _unlink_quietly(tmp)

            return self._call("create", path, create_local)
        if self.protocol == "memory":
            with _MEMORY_LOCK:
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
                return True
        self.require_exclusive_create()

        def create() -> None:
            with self.fs.open(path, "xb") as f:
                f.write(data)

        try:
            self._parents_for(path)
            # A retry after a transient error may find the file created by our own lost attempt and report False;
            # the commit then recognises the snapshot as its own (see the module docstring).
            self._call("create", path, create)
            return True
        except FileExistsError:
            return False
        except (NotImplementedError, ValueError, TypeError) as e:
            raise CommitError(
                f"The file system '{self.protocol}' offers no atomic create-if-absent (needed to commit "
                f"{path} safely). Use a store with conditional writes (e.g. S3 with s3fs >= 2025.7.0) or a "
                "local/shared file system."
            ) from e

    def _temp_path(self, path: str) -> str:
        parent, name = path.rsplit("/", 1)
        return f"{parent}/.{name}.{uuid.uuid4()}.tmp"

    def delete(self, path: str) -> bool:
        """Delete a file; False when it was not there (a retried delete whose first answer was lost too)."""
        try:
            self._call("delete", path, lambda: self.fs.rm_file(path))
            return True
        except FileNotFoundError:
            return False

    def delete_dir(self, directory: str) -> None:
        if self.exists(directory):
            self._call("delete the directory", directory, lambda: self.fs.rm(directory, recursive=True))

    def rename(self, src: str, dst: str) -> None:
        if self.is_local:

            def rename_local() -> None:
                os.makedirs(dst.rsplit("/", 1)[0], exist_ok=True)
                os.rename(src, dst)

            self._call("rename", src, rename_local)
        else:
            self._call("rename", src, lambda: self.fs.mv(src, dst, recursive=True), retry=False)
