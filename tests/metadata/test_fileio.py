"""FileIO (metadata/io/fileio.py): URI handling, create-if-absent, atomic replace, listing and pickling.

Everything runs against real file systems: the local disk under ``tmp_path`` and fsspec's ``memory://``.
The create-if-absent race runs in separate *processes*, because the commit protocol's safety is exactly
that two writers on one file system can never both create ``snapshot-N``.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import threading
import uuid
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from pyspark_paimon.datasource.jobs import prepare_write
from pyspark_paimon.errors import CommitError
from pyspark_paimon.metadata.io import fileio as fileio_module
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.store import FileStore


@pytest.fixture
def mem_root() -> str:
    """A fresh directory in the (process-global) memory file system, removed afterwards."""
    root = f"/fileio-test-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.fixture(params=["local", "memory"])
def fio_root(request: pytest.FixtureRequest, tmp_path: Path, mem_root: str) -> tuple[FileIO, str]:
    """The same tests on local disk and on memory://."""
    if request.param == "local":
        return FileIO.for_uri(str(tmp_path / "root"))
    return FileIO.for_uri(f"memory:/{mem_root}")


def temp_leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.rglob("*") if p.name.endswith(".tmp") or p.name.startswith("."))


# --------------------------------------------------------------------------------------------- URIs
def test_for_uri_local_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fio, path = FileIO.for_uri(str(tmp_path / "wh" / "t"))
    assert fio.protocol == "file" and path == str(tmp_path / "wh" / "t") and fio.is_local

    fio, path = FileIO.for_uri(str(tmp_path / "wh" / "t") + "/")
    assert path == str(tmp_path / "wh" / "t"), "a trailing slash is dropped"

    monkeypatch.chdir(tmp_path)
    fio, path = FileIO.for_uri("rel/t")
    assert path == str(tmp_path / "rel" / "t"), "relative paths become absolute (executors have another cwd)"

    monkeypatch.setenv("HOME", str(tmp_path))
    _, path = FileIO.for_uri("~/wh")
    assert path == str(tmp_path / "wh")


@pytest.mark.parametrize("uri_form", ["file://{p}", "file:{p}", "FILE://{p}"])
def test_for_uri_file_scheme(tmp_path: Path, uri_form: str) -> None:
    target = str(tmp_path / "wh")
    fio, path = FileIO.for_uri(uri_form.format(p=target))
    assert fio.protocol == "file" and fio.is_local
    assert path == target
    assert fio.uri(path) == target  # local files are addressed by their plain path


@pytest.mark.parametrize("uri", ["memory://wh/t", "memory:///wh/t", "memory://wh/t/"])
def test_for_uri_memory(uri: str) -> None:
    fio, path = FileIO.for_uri(uri)
    assert fio.protocol == "memory" and not fio.is_local
    assert path == "/wh/t"
    assert fio.uri(path) == "memory:///wh/t"
    again, again_path = FileIO.for_uri(fio.uri(path))
    assert (again.protocol, again_path) == ("memory", path), "uri() round-trips through for_uri()"


def test_for_uri_keeps_storage_options() -> None:
    fio, _ = FileIO.for_uri("memory://x", {"some": "option"})
    assert fio.storage_options == {"some": "option"}


def test_join() -> None:
    assert FileIO.join("/a/", "b", "/c/", "", "d") == "/a/b/c/d"
    assert FileIO.join("/a") == "/a"


# --------------------------------------------------------------------------------------------- basic I/O
def test_read_write_exists_size_delete(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    path = f"{root}/deep/er/f.bin"
    assert not fio.exists(path)
    with pytest.raises(FileNotFoundError):
        fio.read_bytes(path)
    fio.write_bytes(path, b"hello")  # creates parent directories
    assert fio.exists(path) and fio.size(path) == 5
    assert fio.read_bytes(path) == b"hello" and fio.read_text(path) == "hello"
    assert fio.delete(path) is True
    assert fio.delete(path) is False, "deleting a missing file reports False instead of raising"
    assert not fio.exists(path)


def test_mkdirs_rename_delete_dir(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    fio.mkdirs(f"{root}/d1/d2")
    fio.mkdirs(f"{root}/d1/d2")  # idempotent
    fio.write_bytes(f"{root}/d1/d2/a", b"a")
    fio.rename(f"{root}/d1/d2/a", f"{root}/other/b")
    assert not fio.exists(f"{root}/d1/d2/a") and fio.read_bytes(f"{root}/other/b") == b"a"
    fio.delete_dir(f"{root}/other")
    assert not fio.exists(f"{root}/other/b")
    fio.delete_dir(f"{root}/never-existed")  # no error


def test_open_input_is_readable_by_pyarrow(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", None]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    fio.write_bytes(f"{root}/f.parquet", sink.getvalue().to_pybytes())
    with fio.open_input(f"{root}/f.parquet") as f:
        assert pq.read_table(f).equals(table)


# --------------------------------------------------------------------------------------------- listing
def test_list_missing_directory_is_empty(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    assert fio.list_status(f"{root}/missing") == []
    assert fio.list_names(f"{root}/missing") == []


def test_list_status(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    fio.write_bytes(f"{root}/dir/a", b"12345")
    fio.write_bytes(f"{root}/dir/b", b"")
    fio.write_bytes(f"{root}/dir/sub/c", b"c")
    statuses = {s.name: s for s in fio.list_status(f"{root}/dir")}
    assert sorted(statuses) == ["a", "b", "sub"]
    assert sorted(fio.list_names(f"{root}/dir")) == ["a", "b", "sub"]
    assert statuses["a"].size == 5 and not statuses["a"].is_dir
    assert statuses["a"].path == f"{root}/dir/a", "paths are in the file system's own notation"
    assert statuses["b"].size == 0
    assert statuses["sub"].is_dir
    assert statuses["a"].mtime_millis > 1_000_000_000_000, "mtime is epoch milliseconds"
    # the listed path can be fed back into the other calls
    assert fio.read_bytes(statuses["a"].path) == b"12345"


# --------------------------------------------------------------------------------------------- try_create
def test_try_create_creates_only_if_absent(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    path = f"{root}/snapshot/snapshot-1"
    assert fio.try_create(path, b"first") is True  # parent directory created on demand
    assert fio.read_bytes(path) == b"first"
    assert fio.try_create(path, b"second") is False
    assert fio.read_bytes(path) == b"first", "a losing create never overwrites"
    fio.write_bytes(f"{root}/snapshot/other", b"x")
    assert fio.try_create(f"{root}/snapshot/other", b"y") is False
    assert fio.read_bytes(f"{root}/snapshot/other") == b"x"
    assert sorted(fio.list_names(f"{root}/snapshot")) == ["other", "snapshot-1"], "no temp files left behind"


def test_try_create_local_leaves_no_temp_files(tmp_path: Path) -> None:
    fio, root = FileIO.for_uri(str(tmp_path / "t"))
    for i in range(5):
        assert fio.try_create(f"{root}/snapshot/snapshot-{i}", b"x")
        assert not fio.try_create(f"{root}/snapshot/snapshot-{i}", b"y")
    assert temp_leftovers(tmp_path) == []
    assert sorted(os.listdir(tmp_path / "t" / "snapshot")) == [f"snapshot-{i}" for i in range(5)]


def test_try_create_local_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    fio, root = FileIO.for_uri(str(tmp_path / "t"))
    with pytest.raises(TypeError):
        fio.try_create(f"{root}/snapshot/snapshot-1", "not bytes")  # type: ignore[arg-type]
    assert not (tmp_path / "t" / "snapshot" / "snapshot-1").exists()
    assert temp_leftovers(tmp_path) == []


def test_write_bytes_local_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    fio, root = FileIO.for_uri(str(tmp_path / "t"))
    fio.write_bytes(f"{root}/snapshot/LATEST", b"1")
    with pytest.raises(TypeError):
        fio.write_bytes(f"{root}/snapshot/LATEST", "2")  # type: ignore[arg-type]
    assert (tmp_path / "t" / "snapshot" / "LATEST").read_bytes() == b"1"
    assert temp_leftovers(tmp_path) == []


def test_try_create_threads_race(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    for round_ in range(5):
        path = f"{root}/snapshot/snapshot-{round_}"
        barrier = threading.Barrier(8)
        results: dict[int, bool] = {}

        def create(
            i: int, barrier: threading.Barrier = barrier, results: dict[int, bool] = results, path: str = path
        ) -> None:
            barrier.wait()
            results[i] = fio.try_create(path, f"thread-{i}".encode())

        threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for i, won in results.items() if won]
        assert len(winners) == 1, results
        assert fio.read_bytes(path) == f"thread-{winners[0]}".encode()
    assert sorted(fio.list_names(f"{root}/snapshot")) == [f"snapshot-{i}" for i in range(5)]


def test_try_create_processes_race(tmp_path: Path) -> None:
    """8 processes create the same files at the same moment: exactly one wins each, nothing is overwritten."""
    # fork: the children need nothing but os calls, and spawning 8 interpreters would cost seconds.
    ctx = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    rounds, n = 3, 8
    paths = [str(tmp_path / "t" / "snapshot" / f"snapshot-{r}") for r in range(rounds)]
    results = ctx.Queue()
    barriers = [ctx.Barrier(n) for _ in range(rounds)]
    procs = []
    for i in range(n):
        p = ctx.Process(target=_race_many, args=(paths, i, barriers, results))
        p.start()
        procs.append(p)
    got = [results.get(timeout=60) for _ in range(n * rounds)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    for r, path in enumerate(paths):
        winners = [i for (rr, i, won) in got if rr == r and won]
        assert len(winners) == 1, got
        assert Path(path).read_bytes() == f"process-{winners[0]}".encode()
    assert temp_leftovers(tmp_path) == []
    assert sorted(os.listdir(tmp_path / "t" / "snapshot")) == [f"snapshot-{r}" for r in range(rounds)]


def _race_many(paths: list[str], index: int, barriers: list, results: "multiprocessing.Queue") -> None:
    for r, path in enumerate(paths):
        fio, fs_path = FileIO.for_uri(path)
        barriers[r].wait()
        results.put((r, index, fio.try_create(fs_path, f"process-{index}".encode())))


# A file system without exclusive create: the generic (object store) branch must refuse, not fake atomicity.
class _NoExclusiveCreateFS(MemoryFileSystem):
    protocol = ("noxcreate",)

    def _open(self, path, mode="rb", **kwargs):  # type: ignore[override]
        if "x" in mode:
            raise NotImplementedError("no exclusive create here")
        return super()._open(path, mode, **kwargs)


class _ExclusiveCreateFS(MemoryFileSystem):
    """Like an object store with conditional writes (mode 'xb'); not the memory:// special case.

    Mode 'x' is implemented here because MemoryFileSystem has it only from fsspec 2024.12 on (older ones
    return None from ``open``), and this test is about our commit path, not fsspec's memory store."""

    protocol = ("xcreate",)

    def _open(self, path, mode="rb", **kwargs):  # type: ignore[override]
        if "x" in mode:
            if self.exists(path):
                raise FileExistsError(path)
            mode = mode.replace("x", "w")
        return super()._open(path, mode, **kwargs)


fsspec.register_implementation("noxcreate", _NoExclusiveCreateFS, clobber=True)
fsspec.register_implementation("xcreate", _ExclusiveCreateFS, clobber=True)


def test_try_create_on_store_with_conditional_writes(mem_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(fileio_module.EXCLUSIVE_CREATE, "xcreate", ("fsspec", "0"))  # trusted like s3fs>=2025.7
    fio, root = FileIO.for_uri(f"xcreate:/{mem_root}")
    assert fio.protocol == "xcreate" and not fio.is_local
    assert fio.try_create(f"{root}/snapshot/snapshot-1", b"a") is True
    assert fio.try_create(f"{root}/snapshot/snapshot-1", b"b") is False
    assert fio.read_bytes(f"{root}/snapshot/snapshot-1") == b"a"


def test_try_create_refuses_store_without_atomic_create(mem_root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fio, root = FileIO.for_uri(f"noxcreate:/{mem_root}")
    with pytest.raises(CommitError, match="'noxcreate' is not known to create files exclusively"):
        fio.try_create(f"{root}/snapshot/snapshot-1", b"a")
    # A trusted driver that still cannot create exclusively is refused too, without writing.
    monkeypatch.setitem(fileio_module.EXCLUSIVE_CREATE, "noxcreate", ("fsspec", "0"))
    with pytest.raises(CommitError, match="noxcreate.*atomic create-if-absent"):
        fio.try_create(f"{root}/snapshot/snapshot-1", b"a")
    assert not fio.exists(f"{root}/snapshot/snapshot-1")


class _SilentlyOverwritingFS(MemoryFileSystem):
    """What many drivers do with mode 'xb': accept it and overwrite an existing file."""

    protocol = ("xoverwrite",)

    def _open(self, path, mode="rb", **kwargs):  # type: ignore[override]
        return super()._open(path, mode.replace("x", "w"), **kwargs)


fsspec.register_implementation("xoverwrite", _SilentlyOverwritingFS, clobber=True)


def test_untrusted_store_never_lets_two_writers_win(mem_root: str) -> None:
    """Two commits of snapshot 1 on a store that overwrites on 'xb' would both succeed; we refuse to commit
    there at all, before any data file is written."""
    fio, root = FileIO.for_uri(f"xoverwrite:/{mem_root}")
    with pytest.raises(CommitError, match="'xoverwrite' is not known to create files exclusively"):
        fio.try_create(f"{root}/snapshot/snapshot-1", b"first")
    assert not fio.exists(f"{root}/snapshot/snapshot-1")
    with pytest.raises(CommitError, match="not known to create files exclusively"):
        prepare_write(FileStore(FileIO("xoverwrite"), f"{mem_root}/t"))


def test_object_store_drivers_need_the_release_that_creates_exclusively(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"s3fs": "2025.3.0", "gcsfs": "2024.12.0"}
    monkeypatch.setattr(fileio_module, "installed_version", versions.get)
    with pytest.raises(CommitError, match=r"s3fs >= 2025.7.0 .*installed: 2025.3.0.*pip install 's3fs>=2025.7.0'"):
        FileIO("s3").require_exclusive_create()
    with pytest.raises(CommitError, match=r"needs adlfs >= 2024.12.0 .*installed: none"):
        FileIO("abfs").require_exclusive_create()
    FileIO("gs").require_exclusive_create()
    versions["s3fs"] = "2025.9.0"
    FileIO("s3a").require_exclusive_create()
    FileIO("file").require_exclusive_create()
    FileIO("memory").require_exclusive_create()


# --------------------------------------------------------------------------------------------- write_bytes
def test_write_bytes_replaces(fio_root: tuple[FileIO, str]) -> None:
    fio, root = fio_root
    path = f"{root}/snapshot/LATEST"
    fio.write_bytes(path, b"1")
    fio.write_bytes(path, b"22")
    assert fio.read_bytes(path) == b"22"
    assert fio.list_names(f"{root}/snapshot") == ["LATEST"], "no temp files left behind"


def test_write_bytes_local_replaces_atomically(tmp_path: Path) -> None:
    """The file is swapped by rename: an open reader keeps the complete old content, and concurrent readers
    only ever see one complete version, never a truncated or mixed one."""
    fio, root = FileIO.for_uri(str(tmp_path / "t"))
    path = f"{root}/hint"
    old, new = b"o" * 300_000, b"n" * 200_000
    fio.write_bytes(path, old)
    inode = os.stat(path).st_ino
    with open(path, "rb") as reader:
        fio.write_bytes(path, new)
        assert reader.read() == old
    assert os.stat(path).st_ino != inode, "replaced by a new file, not rewritten in place"
    assert Path(path).read_bytes() == new

    versions = [bytes([65 + i]) * (100_000 + 7919 * i) for i in range(10)]
    seen: set[bytes] = set()
    stop = threading.Event()

    def read_loop() -> None:
        while not stop.is_set():
            seen.add(Path(path).read_bytes())

    reader_thread = threading.Thread(target=read_loop)
    reader_thread.start()
    try:
        for _ in range(5):
            for v in versions:
                fio.write_bytes(path, v)
    finally:
        stop.set()
        reader_thread.join()
    assert seen <= set(versions) | {new}, "a reader saw a partially written file"
    assert temp_leftovers(tmp_path) == []


# --------------------------------------------------------------------------------------------- pickling
def test_pickle_round_trip_local(tmp_path: Path) -> None:
    fio, root = FileIO.for_uri(str(tmp_path / "t"), {"auto_mkdir": True})
    fio.write_bytes(f"{root}/a", b"x")
    assert fio._fs is not None  # the file system was built by the write
    state = fio.__getstate__()
    assert "_fs" not in state, "the live file system object is never shipped to executors"
    clone = pickle.loads(pickle.dumps(fio))
    assert clone._fs is None, "rebuilt lazily on first use"
    assert (clone.protocol, clone.storage_options) == ("file", {"auto_mkdir": True})
    assert clone.read_bytes(f"{root}/a") == b"x"
    assert clone.is_local


def test_pickle_round_trip_memory(mem_root: str) -> None:
    fio, root = FileIO.for_uri(f"memory:/{mem_root}")
    fio.write_bytes(f"{root}/a", b"y")
    clone = pickle.loads(pickle.dumps(fio))
    assert clone.protocol == "memory" and clone.read_bytes(f"{root}/a") == b"y"
    assert clone.try_create(f"{root}/a", b"z") is False
