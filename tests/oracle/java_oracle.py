"""Java Paimon as an interop oracle: `java/PaimonOracle.java` driven in a long-lived JVM.

Compatibility with Java Paimon is the product, so the interop tests also compare against the reference
implementation itself. Its classes come from the Paimon bundle jar that ships inside the PyPI package
``paimon-python-ali`` (Paimon 1.0-SNAPSHOT of September 2024, Hadoop shaded), which
``tests/oracle/requirements.txt`` installs into the oracle venv beside pypaimon. This module:

* finds the jar (``$PAIMON_JAVA_BRIDGE_JAR``, else asks the oracle venv's python where the package put it),
* finds ``java`` and ``javac`` (``$JAVA_HOME/bin``, else ``PATH``),
* compiles ``PaimonOracle.java`` against the jar into a cache directory keyed by the source and the jar
  (``$PAIMON_JAVA_ORACLE_CACHE``, else ``<oracle venv>/java-classes``), recompiling only when either changes,
* runs one JVM per `JavaOracle` and exchanges one JSON line per command with it.

Like the pypaimon oracles, a missing piece is a broken setup, not an optional feature: `JavaUnavailableError`
names the fix and the tests fail (never skip) with it.

Commands (methods of `JavaOracle`; every one takes the warehouse directory of a filesystem catalog and an
identifier ``db.t``):

``create(columns, partition_keys, primary_keys, options)``
    columns are ``[name, paimon type string, nullable?]`` (``"DECIMAL(10, 2)"``, ``"TIMESTAMP(6)"``,
    ``"ARRAY<INT>"``, ``"MAP<STRING, INT>"``, ``"ROW<x INT, y STRING>"``).
``write(rows, kinds=None, overwrite=None) -> snapshot id``
    One commit through ``BatchWriteBuilder``; rows are dicts keyed by column (missing = NULL) or lists in
    column order, holding Python values (`encode`); ``kinds`` gives one row kind per row (``+I``, ``-U``,
    ``+U``, ``-D``): Java writes row kinds natively, no ``rowkind.field`` needed.
``read(options=None) -> JavaRead``
    Everything a batch ``ReadBuilder`` scan returns, with dynamic options (``scan.tag-name``, ...).
``compact() -> snapshot id``
    Full compaction (``BatchTableWrite.compact(partition, bucket, true)``) of every bucket, one commit.
``files() -> [{"bucket", "level", "file", "row_count", "deletion_file", "extra_files", "embedded_index"}]``
    The data files of the latest snapshot's read plan (``embedded_index``: hex or None).
``file_index_verdicts(filter) -> {data file: kept?}``
    Java's file-index verdict on each data file (embedded index, else an ``.index`` extra file) for ANDed
    leaves ``{"column", "op": = | != | in | is_null | is_not_null, "values"}``.

Three commands need no table: ``file_index_bytes(type, index, values, options)`` (what Java's index writer makes
of some values, and its bloom-filter hashes), ``file_index_probe(type, index, data, probes)`` (Java's index
reader on given bytes) and ``file_index_container(columns)`` (Java's container of given index blobs).
``evolve(changes)``, ``tag(name, snapshot_id=None)``, ``snapshots()``, ``versions()``.
``stream(options=None) -> JavaRead``
    Java's streaming read (``newStreamScan``) up to the latest snapshot: changelog rows with their kinds.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, Mapping, Sequence

from . import _oracle_env, require_oracle_python

__all__ = [
    "JAVA_SOURCE",
    "JAR_PACKAGE",
    "JavaUnavailableError",
    "JavaOracleError",
    "JavaRead",
    "JavaOracle",
    "java_tools",
    "bridge_jar",
    "compile_oracle",
    "encode",
    "decode",
]

JAVA_SOURCE = Path(__file__).with_name("java") / "PaimonOracle.java"
MAIN_CLASS = "PaimonOracle"
JAR_PACKAGE = "paimon-python-ali"
JAR_ENV = "PAIMON_JAVA_BRIDGE_JAR"
CACHE_ENV = "PAIMON_JAVA_ORACLE_CACHE"
JAVA_FIX = (
    "install a JDK 17 or 21 (Debian/Ubuntu: sudo apt-get install -y openjdk-17-jdk-headless; macOS: "
    "brew install openjdk@17) and put its bin/ on PATH or set JAVA_HOME to it"
)
JAR_FIX = (
    f"install {JAR_PACKAGE} into the oracle venv with ./dev setup (or .venv-oracle/bin/pip install -r "
    f"tests/oracle/requirements.txt), or point {JAR_ENV} at paimon-python-java-bridge.jar"
)
# C1 only and a small heap: the oracle handles test-sized tables on a shared 2-core machine.
JVM_FLAGS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xmx768m",
    "-Duser.timezone=UTC",
    "-Dlog4j2.statusLoggerLevel=OFF",
)
DEFAULT_TIMEOUT_S = 180.0
UTC = dt.timezone.utc


class JavaUnavailableError(RuntimeError):
    """Java, javac or the Paimon jar is missing; the message says how to get it."""


class JavaOracleError(RuntimeError):
    """A Java oracle command failed; carries Java's exception, its stack trace and the JVM's stderr tail."""

    def __init__(self, cmd: Mapping[str, Any], error: str, trace: str = "", stderr: str = "") -> None:
        super().__init__(
            f"Java oracle command {cmd.get('cmd')!r} failed: {error}\n--- Java stack trace ---\n"
            f"{trace}\n--- JVM stderr (tail) ---\n{stderr}"
        )
        self.cmd = dict(cmd)
        self.error = error
        self.trace = trace


# ------------------------------------------------------------------------------------------- discovery


def java_tools() -> tuple[str, str]:
    """``(java, javac)``: from ``$JAVA_HOME/bin`` when JAVA_HOME is set, else from PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        found = [Path(java_home) / "bin" / name for name in ("java", "javac")]
        missing = [str(p) for p in found if not os.access(p, os.X_OK)]
        if missing:
            raise JavaUnavailableError(
                f"The Java interop lane needs java and javac, but {', '.join(missing)} "
                f"(from JAVA_HOME={java_home}) does not exist: {JAVA_FIX}."
            )
        return str(found[0]), str(found[1])
    java, javac = shutil.which("java"), shutil.which("javac")
    if java is None or javac is None:
        missing = [n for n, p in (("java", java), ("javac", javac)) if p is None]
        what = " and ".join(missing) + (" are" if len(missing) > 1 else " is")
        raise JavaUnavailableError(
            f"The Java interop lane needs a JDK, but {what} not on PATH and JAVA_HOME "
            f"is not set (a JRE has no javac): {JAVA_FIX}."
        )
    return java, javac


_LOCATE_JAR = """
import json, sys
from importlib.metadata import PackageNotFoundError, files
try:
    jars = [str(f.locate()) for f in files(sys.argv[1]) or () if f.name.endswith(".jar")]
except PackageNotFoundError:
    jars = []
print(json.dumps({"jars": jars, "prefix": sys.prefix}))
"""


@dataclass(frozen=True)
class _JarLocation:
    jar: Path
    venv: Path | None  # the oracle venv that holds it, where compiled classes are cached


def _locate_jar() -> _JarLocation:
    configured = os.environ.get(JAR_ENV)
    if configured:
        if not Path(configured).is_file():
            raise JavaUnavailableError(f"{JAR_ENV}={configured} does not exist: {JAR_FIX}.")
        return _JarLocation(Path(configured), None)
    python = require_oracle_python()
    proc = subprocess.run(
        [python, "-c", _LOCATE_JAR, JAR_PACKAGE],
        capture_output=True,
        text=True,
        env=_oracle_env(),
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise JavaUnavailableError(f"Could not ask the oracle venv ({python}) for {JAR_PACKAGE}: {proc.stderr}")
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    jars = [Path(j) for j in found["jars"] if Path(j).name == "paimon-python-java-bridge.jar"]
    if not jars or not jars[0].is_file():
        raise JavaUnavailableError(
            f"The Paimon jar of {JAR_PACKAGE} is not installed in the oracle venv ({python}): {JAR_FIX}."
        )
    return _JarLocation(jars[0], Path(found["prefix"]))


def bridge_jar() -> Path:
    """The Paimon bundle jar (``paimon-python-java-bridge.jar``) the Java oracle runs on."""
    return _locate_jar().jar


def _cache_root(location: _JarLocation) -> Path:
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured)
    if location.venv is not None and os.access(location.venv, os.W_OK):
        return location.venv / "java-classes"
    return Path(tempfile.gettempdir()) / f"pyspark-paimon-java-oracle-{os.getuid()}"


def compile_oracle(javac: str, location: _JarLocation) -> Path:
    """Compile `JAVA_SOURCE` against the jar unless a build of this exact source and jar is cached; returns
    the class directory. Concurrent sessions race safely: each builds in its own directory and renames."""
    source = JAVA_SOURCE.read_bytes()
    stat = location.jar.stat()
    key = hashlib.sha1(source + f"\0{location.jar}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    root = _cache_root(location)
    target = root / key
    if (target / f"{MAIN_CLASS}.class").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix="build-", dir=root))
    try:
        proc = subprocess.run(
            [javac, "-nowarn", "-encoding", "UTF-8", "-cp", str(location.jar), "-d", str(build), str(JAVA_SOURCE)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if proc.returncode != 0:
            raise JavaUnavailableError(f"javac failed on {JAVA_SOURCE}:\n{proc.stdout}\n{proc.stderr}")
        try:
            build.rename(target)
        except OSError:
            if not (target / f"{MAIN_CLASS}.class").is_file():
                raise
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return target


# ------------------------------------------------------------------------------------------------ values


def encode(value: Any) -> Any:
    """A Python value as the Java oracle reads it (see the module docstring of PaimonOracle.java)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat(timespec="microseconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    raise TypeError(f"cannot send {type(value).__name__} {value!r} to the Java oracle")


def _timestamp(text: str) -> dt.datetime:
    base, _, fraction = text.partition(".")
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    if nanos % 1000:
        raise ValueError(f"timestamp {text} has sub-microsecond digits; compare it as a string")
    return dt.datetime.fromisoformat(base).replace(microsecond=nanos // 1000)


def decode(value: Any, type_json: Any) -> Any:
    """A value from the Java oracle as ``pyarrow``'s ``to_pylist`` gives it for the same Paimon type
    (``type_json`` is the type as Paimon's schema JSON spells it)."""
    if value is None:
        return None
    if isinstance(type_json, dict):
        kind = type_json["type"].split()[0]
        if kind in ("ARRAY", "MULTISET"):
            return [decode(v, type_json["element"]) for v in value]
        if kind == "MAP":
            return [(decode(k, type_json["key"]), decode(v, type_json["value"])) for k, v in value]
        if kind == "ROW":
            return {f["name"]: decode(value.get(f["name"]), f["type"]) for f in type_json["fields"]}
        raise ValueError(f"unknown nested type {type_json}")
    name = type_json.upper()
    if name.startswith("DECIMAL"):
        return Decimal(value)
    if name.startswith("DATE"):
        return dt.date.fromisoformat(value)
    if name.startswith("TIMESTAMP"):
        stamp = _timestamp(value)
        return stamp.replace(tzinfo=UTC) if "LOCAL TIME ZONE" in name else stamp
    if name.startswith("TIME"):
        return dt.time.fromisoformat(value)
    if name.startswith(("BINARY", "VARBINARY", "BYTES")):
        return bytes.fromhex(value)
    return value


@dataclass(frozen=True)
class JavaRead:
    """What Java Paimon read: column names, their Paimon types (schema JSON), decoded rows and row kinds."""

    names: list[str]
    types: list[Any]
    rows: list[dict[str, Any]]
    kinds: list[str]


# ------------------------------------------------------------------------------------------------ the JVM


class JavaOracle:
    """One JVM running `PaimonOracle`; commands run in order. Use as a context manager or call `close`."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        java, javac = java_tools()
        location = _locate_jar()
        classes = compile_oracle(javac, location)
        self.jar = location.jar
        self.timeout = timeout
        self._log = tempfile.NamedTemporaryFile(prefix="paimon-java-oracle-", suffix=".log", delete=False)
        self._proc = subprocess.Popen(
            [java, *JVM_FLAGS, "-cp", f"{classes}{os.pathsep}{location.jar}", MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self._proc.stdout is not None
        threading.Thread(target=self._pump, args=(self._proc.stdout,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_tail(self, limit: int = 4000) -> str:
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-limit:]

    def call(self, cmd: Mapping[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send one command; return its result or raise `JavaOracleError`."""
        if self._proc.poll() is not None or self._proc.stdin is None:
            raise JavaOracleError(cmd, f"the JVM exited with code {self._proc.returncode}", stderr=self.stderr_tail())
        self._proc.stdin.write(json.dumps(cmd) + "\n")
        self._proc.stdin.flush()
        try:
            line = self._lines.get(timeout=timeout or self.timeout)
        except queue.Empty:
            self.close()
            raise JavaOracleError(
                cmd, f"no answer within {timeout or self.timeout} s (JVM killed)", stderr=self.stderr_tail()
            ) from None
        if line is None:
            raise JavaOracleError(cmd, f"the JVM exited with code {self._proc.wait()}", stderr=self.stderr_tail())
        result = json.loads(line)
        if "error" in result:
            raise JavaOracleError(cmd, result["error"], result.get("trace", ""), self.stderr_tail())
        return result

    def close(self) -> None:
        if self._proc.poll() is None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)

    def __enter__(self) -> "JavaOracle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------- commands

    def versions(self) -> dict[str, str]:
        return self.call({"cmd": "versions"})

    def create(
        self,
        warehouse: str,
        identifier: str,
        columns: Sequence[Sequence[Any]],
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.call(
            {
                "cmd": "create",
                "warehouse": warehouse,
                "identifier": identifier,
                "columns": [list(c) for c in columns],
                "partition_keys": list(partition_keys),
                "primary_keys": list(primary_keys),
                "options": {k: str(v) for k, v in (options or {}).items()},
            }
        )

    def write(
        self,
        warehouse: str,
        identifier: str,
        rows: Sequence[Any],
        *,
        kinds: Sequence[str] | None = None,
        overwrite: bool | Mapping[str, Any] | None = None,
    ) -> int:
        cmd: dict[str, Any] = {
            "cmd": "write",
            "warehouse": warehouse,
            "identifier": identifier,
            "rows": [encode(r) for r in rows],
        }
        if kinds is not None:
            cmd["kinds"] = list(kinds)
        if overwrite:
            cmd["overwrite"] = True if overwrite is True else {k: str(v) for k, v in dict(overwrite).items()}
        return int(self.call(cmd)["snapshot_id"])

    def read(self, warehouse: str, identifier: str, options: Mapping[str, Any] | None = None) -> JavaRead:
        result = self.call(
            {
                "cmd": "read",
                "warehouse": warehouse,
                "identifier": identifier,
                "options": {k: str(v) for k, v in (options or {}).items()},
            }
        )
        names = [f[0] for f in result["fields"]]
        types = [f[1] for f in result["fields"]]
        rows = [{n: decode(v, t) for n, t, v in zip(names, types, row)} for row in result["rows"]]
        return JavaRead(names, types, rows, list(result["kinds"]))

    def compact(self, warehouse: str, identifier: str) -> int:
        return int(self.call({"cmd": "compact", "warehouse": warehouse, "identifier": identifier})["snapshot_id"])

    def files(self, warehouse: str, identifier: str) -> list[dict[str, Any]]:
        return list(self.call({"cmd": "files", "warehouse": warehouse, "identifier": identifier})["files"])

    def evolve(self, warehouse: str, identifier: str, changes: Sequence[Mapping[str, Any]]) -> int:
        """Schema changes in the same shape as `tests.oracle.add_column` & co. build them."""
        return int(
            self.call(
                {
                    "cmd": "evolve",
                    "warehouse": warehouse,
                    "identifier": identifier,
                    "changes": [dict(c) for c in changes],
                }
            )["schema_id"]
        )

    def tag(self, warehouse: str, identifier: str, name: str, snapshot_id: int | None = None) -> int:
        cmd: dict[str, Any] = {"cmd": "tag", "warehouse": warehouse, "identifier": identifier, "name": name}
        if snapshot_id is not None:
            cmd["snapshot_id"] = snapshot_id
        return int(self.call(cmd)["snapshot_id"])

    def snapshots(self, warehouse: str, identifier: str) -> list[dict[str, Any]]:
        return list(self.call({"cmd": "snapshots", "warehouse": warehouse, "identifier": identifier})["snapshots"])

    def write_dynamic(
        self, warehouse: str, identifier: str, rows: Sequence[Any], *, kinds: Sequence[str] | None = None
    ) -> int:
        """One commit into a dynamic-bucket (bucket = -1) primary-key table, buckets assigned by Java's
        ``HashBucketAssigner`` from the table's HASH index (what Flink's and Spark's Paimon sinks do)."""
        cmd: dict[str, Any] = {
            "cmd": "write_dynamic",
            "warehouse": warehouse,
            "identifier": identifier,
            "rows": [encode(r) for r in rows],
        }
        if kinds is not None:
            cmd["kinds"] = list(kinds)
        return int(self.call(cmd)["snapshot_id"])

    def stream(self, warehouse: str, identifier: str, options: Mapping[str, Any] | None = None) -> JavaRead:
        """Java's streaming read (``newStreamScan`` with dynamic ``options``, e.g. ``scan.mode`` =
        ``from-snapshot``) of every snapshot up to the latest: for a table with a changelog producer, the rows
        of its changelog files with their kinds, in commit order."""
        result = self.call(
            {
                "cmd": "stream",
                "warehouse": warehouse,
                "identifier": identifier,
                "options": {k: str(v) for k, v in (options or {}).items()},
            }
        )
        names = [f[0] for f in result["fields"]]
        types = [f[1] for f in result["fields"]]
        rows = [{n: decode(v, t) for n, t, v in zip(names, types, row)} for row in result["rows"]]
        return JavaRead(names, types, rows, list(result["kinds"]))

    def write_cross_partition(
        self, warehouse: str, identifier: str, rows: Sequence[Any], *, kinds: Sequence[str] | None = None
    ) -> int:
        """One commit into a cross-partition upsert table (``bucket = -1``, primary key without every partition
        key), routed by Java's ``IndexBootstrap``, crosspartition ``BucketAssigner`` and the merge engine's
        ``ExistingProcessor`` (what Java's ``GlobalIndexAssigner`` does)."""
        cmd: dict[str, Any] = {
            "cmd": "write_cross_partition",
            "warehouse": warehouse,
            "identifier": identifier,
            "rows": [encode(r) for r in rows],
        }
        if kinds is not None:
            cmd["kinds"] = list(kinds)
        return int(self.call(cmd)["snapshot_id"])

    # ------------------------------------------------------------------------------------ file indexes

    def file_index_bytes(
        self, type_name: str, index: str, values: Sequence[Any], options: Mapping[str, Any] | None = None
    ) -> tuple[bytes, list[int]]:
        """Java's serialized index of ``values`` (one column of Paimon type ``type_name``) and, for a bloom
        filter, the 64-bit hash of each non-null value (signed, as Java's ``long``)."""
        result = self.call(
            {
                "cmd": "file_index_bytes",
                "type": type_name,
                "index": index,
                "values": [encode(v) for v in values],
                "options": {k: str(v) for k, v in (options or {}).items()},
            }
        )
        return bytes.fromhex(result["bytes"]), [int(h) for h in result["hashes"]]

    def file_index_probe(
        self, type_name: str, index: str, data: bytes, probes: Sequence[Mapping[str, Any]]
    ) -> list[bool]:
        """Java's index reader on ``data``: whether each probe (``{"op", "values"}``) keeps the file."""
        result = self.call(
            {
                "cmd": "file_index_probe",
                "type": type_name,
                "index": index,
                "bytes": data.hex(),
                "probes": [{**p, "values": [encode(v) for v in p.get("values", ())]} for p in probes],
            }
        )
        return [bool(r) for r in result["remain"]]

    def file_index_container(self, columns: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
        """Java's index container holding ``columns`` (column -> index type -> blob, None = empty index)."""
        blobs = {c: {t: (None if b is None else b.hex()) for t, b in ts.items()} for c, ts in columns.items()}
        result = self.call({"cmd": "file_index_container", "columns": blobs})
        return bytes.fromhex(result["bytes"])

    def file_index_verdicts(
        self, warehouse: str, identifier: str, filter: Sequence[Mapping[str, Any]]
    ) -> dict[str, bool]:
        """Per data file of the latest snapshot: whether Java's file index keeps it for ``filter``."""
        result = self.call(
            {
                "cmd": "file_index_verdicts",
                "warehouse": warehouse,
                "identifier": identifier,
                "filter": [{**f, "values": [encode(v) for v in f.get("values", ())]} for f in filter],
            }
        )
        return {str(k): bool(v) for k, v in result["files"].items()}


if __name__ == "__main__":  # a quick manual check: python -m tests.oracle.java_oracle
    with JavaOracle() as oracle:
        print(oracle.versions(), file=sys.stdout)
