"""Object-store behaviour of FileIO and the snapshot hints, without a server: a memory file system that answers
like a busy remote store (transient errors, a hint replaced while read, a lost answer to a create). The same
paths against a real S3 server are in tests/deploy/test_s3_tables.py and test_s3_concurrency.py."""

from __future__ import annotations

import errno
import logging
import pickle
import uuid
from typing import Iterator

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.table_ref import resolve_table_ref
from pyspark_paimon.errors import OptionError, PaimonError
from pyspark_paimon.metadata.io import fileio as fileio_module
from pyspark_paimon.metadata.io.fileio import FileIO, is_transient, storage_options_from_strings
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager
from tests.metadata.test_snapshot import make_snapshot, put_snapshots


class _FlakyFS(MemoryFileSystem):
    """Memory storage that fails the next ``failures[op]`` calls of an operation with a transient error
    (what s3fs raises for throttling or a conditional write in conflict), optionally after doing it."""

    protocol = ("flaky",)
    failures: dict[str, int] = {}
    land_failed_create = False  # the create that fails still writes its file (its answer was lost)

    def _fail(self, op: str) -> None:
        if _FlakyFS.failures.get(op, 0) > 0:
            _FlakyFS.failures[op] -= 1
            raise OSError(errno.EBUSY, f"transient failure of {op}")

    def cat_file(self, path, start=None, end=None, **kwargs):  # type: ignore[override]
        self._fail("cat")
        return super().cat_file(path, start, end, **kwargs)

    def ls(self, path, detail=True, **kwargs):  # type: ignore[override]
        self._fail("ls")
        return super().ls(path, detail, **kwargs)

    def exists(self, path, **kwargs):  # type: ignore[override]
        self._fail("exists")
        return super().exists(path, **kwargs)

    def _open(self, path, mode="rb", **kwargs):  # type: ignore[override]
        if "x" not in mode:
            return super()._open(path, mode, **kwargs)
        if super().exists(path):
            raise FileExistsError(path)
        if not _FlakyFS.land_failed_create:
            self._fail("create")
        f = super()._open(path, mode.replace("x", "w"), **kwargs)
        if _FlakyFS.land_failed_create:
            close = f.close

            def close_then_fail() -> None:  # the file has landed (memory files land on open); the answer is lost
                close()
                self._fail("create")

            f.close = close_then_fail
        return f


fsspec.register_implementation("flaky", _FlakyFS, clobber=True)


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh root on the flaky store, trusted to create exclusively, with no back-off between retries."""
    monkeypatch.setitem(fileio_module.EXCLUSIVE_CREATE, "flaky", ("fsspec", "0"))
    monkeypatch.setattr(fileio_module, "_FIRST_BACKOFF_SECONDS", 0.0)
    monkeypatch.setattr(_FlakyFS, "failures", {})
    monkeypatch.setattr(_FlakyFS, "land_failed_create", False)
    root = f"/flaky-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_transient_errors_are_retried(flaky: str) -> None:
    fio, root = FileIO.for_uri(f"flaky://{flaky}")
    fio.write_bytes(f"{root}/f", b"data")
    _FlakyFS.failures.update(cat=2, ls=2, exists=2)
    assert fio.read_bytes(f"{root}/f") == b"data"
    assert fio.list_names(root) == ["f"]
    assert fio.exists(f"{root}/f")
    assert _FlakyFS.failures == {"cat": 0, "ls": 0, "exists": 0}


def test_persistent_errors_are_raised_after_the_retries(flaky: str) -> None:
    fio, root = FileIO.for_uri(f"flaky://{flaky}")
    fio.write_bytes(f"{root}/f", b"data")
    _FlakyFS.failures["cat"] = fileio_module.TRANSIENT_ATTEMPTS
    with pytest.raises(PaimonError, match=r"Cannot read flaky://.*/f: .*transient failure of cat"):
        fio.read_bytes(f"{root}/f")
    with pytest.raises(FileNotFoundError):  # a fact about the file, not retried
        fio.read_bytes(f"{root}/missing")


def test_what_counts_as_transient() -> None:
    assert is_transient(OSError(errno.EBUSY, "SlowDown")) and is_transient(OSError(errno.EIO, "503"))
    for fact in (FileNotFoundError(), FileExistsError(), PermissionError(), IsADirectoryError(), ValueError()):
        assert not is_transient(fact)


def test_remote_file_systems_do_not_cache_listings(flaky: str) -> None:
    """s3fs, gcsfs and adlfs answer ls/exists/info from a per-process listing cache; another process's commit
    would stay invisible. Their file systems are built with the cache off (a caller's choice is kept)."""
    assert FileIO("flaky").fs.dircache.use_listings_cache is False
    assert FileIO("flaky", {"use_listings_cache": True}).fs.dircache.use_listings_cache is True
    assert "use_listings_cache" not in FileIO("flaky").storage_options  # not pickled as if the user gave it


@pytest.mark.parametrize(
    "error",
    [PaimonError("Cannot read LATEST: Etag no longer exists"), OSError(errno.EBUSY, "busy"), FileNotFoundError()],
)
def test_any_failure_to_read_a_hint_falls_back_to_listing(flaky: str, error: Exception) -> None:
    class HintFailsFileIO(FileIO):
        def read_bytes(self, path: str) -> bytes:
            if path.endswith(("/LATEST", "/EARLIEST")):
                raise error
            return super().read_bytes(path)

    writer = SnapshotManager(FileIO("flaky"), f"{flaky}/t")
    put_snapshots(writer, [3, 4, 5], latest_hint="4", earliest_hint="3")
    reader = SnapshotManager(HintFailsFileIO("flaky"), f"{flaky}/t")
    assert reader.latest_id() == 5 and reader.earliest_id() == 3 and reader.latest().id == 5


def test_a_failed_hint_write_does_not_fail_a_landed_commit(flaky: str, caplog: pytest.LogCaptureFixture) -> None:
    class HintWriteFailsFileIO(FileIO):
        def write_bytes(self, path: str, data: bytes) -> None:
            raise OSError(errno.EIO, "hint write failed")

    m = SnapshotManager(HintWriteFailsFileIO("flaky"), f"{flaky}/t")
    with caplog.at_level(logging.WARNING):
        assert m.try_commit(make_snapshot(1)) is True
    assert m.latest_id() == 1 and "writing the LATEST hint failed" in caplog.text


def test_a_create_whose_answer_was_lost_commits_once(flaky: str) -> None:
    """The first conditional write lands but answers with a transient error; its retry finds the file and says
    "not created". The commit must recognise the snapshot as its own: one snapshot, no duplicate rows."""
    cat = Catalog(f"flaky://{flaky}/wh")
    t = cat.create_table("db.t", "id bigint, v string")
    _FlakyFS.land_failed_create, _FlakyFS.failures["create"] = True, 1
    t.write_arrow(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    assert _FlakyFS.failures["create"] == 0, "the create failed once"
    t = cat.get_table("db.t")
    assert [s.id for s in t.snapshots()] == [1]
    assert sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_storage_options_from_strings() -> None:
    got = storage_options_from_strings(
        {
            "anon": "False",
            "requester_pays": "true",
            "key": "k",
            "client_kwargs": '{"region_name": "eu-west-1"}',
            "endpoint_url": "http://h",
        }
    )
    assert got == {
        "anon": False,
        "requester_pays": True,
        "key": "k",
        "client_kwargs": {"region_name": "eu-west-1"},
        "endpoint_url": "http://h",
    }
    with pytest.raises(OptionError, match="Storage option 'config_kwargs' looks like a JSON object"):
        storage_options_from_strings({"config_kwargs": "{not json"})


def test_fs_options_travel_to_executors_inside_the_pickled_fileio() -> None:
    ref = resolve_table_ref(
        {
            "path": "s3://bucket/wh/db.db/t",
            "fs.endpoint_url": "http://127.0.0.1:9",
            "fs.anon": "false",
            "fs.client_kwargs": '{"region_name": "us-east-1"}',
        }
    )
    shipped = pickle.loads(pickle.dumps(ref))
    assert shipped.fileio.protocol == "s3" and shipped.path == "bucket/wh/db.db/t"
    assert shipped.fileio.storage_options == {
        "endpoint_url": "http://127.0.0.1:9",
        "anon": False,
        "client_kwargs": {"region_name": "us-east-1"},
    }
