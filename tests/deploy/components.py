"""Real components for the deploy tier, each started by the tests on 127.0.0.1 and always stopped by them.

* :func:`moto_s3` — an S3-compatible server (moto's, in its own process) and a client to make buckets.
* :func:`spark_standalone` — a Spark standalone cluster from pyspark's own distribution: one master and two
  workers, each a separate JVM, whose executors run in processes of their own.
* :func:`connect_server` — a Spark Connect server started on its own with ``spark-submit``.

A component that cannot start makes the test fail (never skip) with the command, the reason and the tail of its
log. Ports are picked free; logs go to files under the test's temporary directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pyspark

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_TIMEOUT_S = 120
#: Credentials of the fake S3 (moto accepts any); tests pass them as storage options or via the environment.
S3_KEY, S3_SECRET, S3_REGION = "deploy-test-key", "deploy-test-secret", "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_until(ready: Callable[[], bool], procs: list[subprocess.Popen], what: str, log: Path) -> None:
    """Poll ``ready()`` (an event-driven wait is not available for a foreign process) until it holds, failing at
    once if a process died and after :data:`START_TIMEOUT_S` otherwise."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise AssertionError(
                    f"{what} exited with code {p.returncode} while starting ({' '.join(p.args)}). "
                    f"Log {log}:\n{_tail(log)}"
                )
        with contextlib.suppress(OSError, ValueError):
            if ready():
                return
        time.sleep(0.25)
    raise AssertionError(f"{what} did not become ready within {START_TIMEOUT_S} s. Log {log}:\n{_tail(log)}")


def _stop(procs: list[subprocess.Popen]) -> None:
    """Stop each process group we started: SIGTERM, then SIGKILL if it lingers."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


def _spawn(cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115 - the child owns it; closed when the process is reaped
    try:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent, start_new_session=True
        )  # its own group, so teardown stops its children too
    finally:
        out.close()


def python_path(include_checkout: bool = True) -> str:
    """PYTHONPATH for processes we start: this checkout first (unless the package is to be shipped), then what
    the test run already had (the installed dependencies may live there)."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    return os.pathsep.join(([str(ROOT)] if include_checkout else []) + parts)


def base_env(include_checkout: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_", "AWS_"))}
    env.update(
        {
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYTHONPATH": python_path(include_checkout),
        }
    )
    return env


# -------------------------------------------------------------------------------------------- S3 (moto)
@dataclass(frozen=True)
class S3Server:
    endpoint: str

    def storage_options(self) -> dict[str, Any]:
        """What ``Catalog(...)`` / ``Table.open(...)`` take to reach this server."""
        return {"endpoint_url": self.endpoint, "key": S3_KEY, "secret": S3_SECRET}

    def spark_options(self) -> dict[str, str]:
        """The same as ``fs.*`` read/write options."""
        return {f"fs.{k}": v for k, v in self.storage_options().items()}

    def env(self) -> dict[str, str]:
        """The same as environment credentials (botocore reads them in every process)."""
        return {
            "AWS_ACCESS_KEY_ID": S3_KEY,
            "AWS_SECRET_ACCESS_KEY": S3_SECRET,
            "AWS_DEFAULT_REGION": S3_REGION,
            "AWS_ENDPOINT_URL": self.endpoint,
        }

    def create_bucket(self, name: str) -> str:
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 200, resp.status
        return name


@contextlib.contextmanager
def moto_s3(workdir: Path) -> Iterator[S3Server]:
    try:
        import moto.server  # noqa: F401 - only to fail with the fix below
        import s3fs  # noqa: F401
    except ImportError as e:
        raise AssertionError(
            f"The deploy tier needs moto[server] and s3fs ({e}): pip install -e '.[deploy-test]' (./dev setup does it)."
        ) from e
    workdir.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), workdir / "moto.log"
    proc = _spawn([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], log, base_env())
    server = S3Server(f"http://127.0.0.1:{port}")
    try:
        _wait_until(
            lambda: urllib.request.urlopen(f"{server.endpoint}/moto-api/", timeout=2).status == 200,
            [proc],
            "The moto S3 server",
            log,
        )
        yield server
    finally:
        _stop([proc])


# ------------------------------------------------------------------------------------ Spark standalone
@dataclass(frozen=True)
class Cluster:
    master_url: str
    ui_url: str
    workdir: Path

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as resp:
            return dict(json.load(resp))


@contextlib.contextmanager
def spark_standalone(workdir: Path, env: dict[str, str], workers: int = 2) -> Iterator[Cluster]:
    """A master and ``workers`` workers (2 cores, 2 GB each: slots, not reservations), stopped on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port, ui = free_port(), free_port()
    log = workdir / "master.log"
    procs = [
        _spawn(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui),
            ],
            log,
            env,
        )
    ]
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}", workdir)
    try:
        _wait_until(lambda: cluster.status().get("status") == "ALIVE", procs, "The Spark master", log)
        for i in range(workers):
            wdir = workdir / f"worker-{i}"
            wdir.mkdir(exist_ok=True)
            procs.append(
                _spawn(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--webui-port",
                        str(free_port()),
                        "--cores",
                        "2",
                        "--memory",
                        "2g",
                        "--work-dir",
                        str(wdir),
                        cluster.master_url,
                    ],
                    workdir / f"worker-{i}.log",
                    env,
                )
            )
        _wait_until(
            lambda: cluster.status().get("aliveworkers") == workers,
            procs,
            "The Spark workers",
            workdir / "worker-0.log",
        )
        yield cluster
    finally:
        _stop(procs[::-1])


# ---------------------------------------------------------------------------------------- Spark Connect
@contextlib.contextmanager
def connect_server(workdir: Path, env: dict[str, str], master: str, conf: dict[str, str]) -> Iterator[str]:
    """A Spark Connect server in its own process (``spark-submit`` of SparkConnectServer, as
    ``sbin/start-connect-server.sh`` does, but in the foreground so the test owns it); yields ``sc://`` URL."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, log = free_port(), workdir / "connect.log"
    cmd = [
        str(SPARK_HOME / "bin" / "spark-submit"),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--name",
        "pyspark-paimon-connect-test",
        "--master",
        master,
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.ui.enabled=false",
    ]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    proc = _spawn(cmd + ["spark-internal"], log, env)
    try:
        _wait_until(lambda: _accepts(port), [proc], "The Spark Connect server", log)
        yield f"sc://127.0.0.1:{port}"
    finally:
        _stop([proc])


def _accepts(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        return True


def run_script(
    script: str,
    args: list[str],
    env: dict[str, str],
    workdir: Path,
    timeout: int = 600,
    logs: Callable[[], Sequence[Path]] = tuple,
) -> dict[str, Any]:
    """Run ``script`` with this interpreter; its ``KEY=<json>`` lines become the result. When it exits non-zero
    or outlives ``timeout`` it fails with its output and the tails of the files ``logs()`` lists then (the
    components it talked to): a deploy failure on a CI machine must explain itself from the report alone."""
    path = workdir / "driver.py"
    path.write_text(script)
    try:
        proc = subprocess.run(
            [sys.executable, str(path), *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"{path} did not finish within {timeout} s.\n{_report(exc.stdout, exc.stderr, logs())}"
        ) from None
    if proc.returncode != 0:
        raise AssertionError(f"{path} failed (exit {proc.returncode}).\n{_report(proc.stdout, proc.stderr, logs())}")
    out = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.isupper():
            out[key] = json.loads(value)
    return out


def _text(out: str | bytes | None) -> str:
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def _report(stdout: str | bytes | None, stderr: str | bytes | None, logs: Sequence[Path]) -> str:
    parts = [f"stdout:\n{_text(stdout)[-2000:]}", f"stderr:\n{_text(stderr)[-4000:]}"]
    parts += [f"Log {log}:\n{_tail(log, 30)}" for log in logs]
    return "\n".join(parts)


def executor_logs(cluster: Cluster) -> list[Path]:
    """The stderr of every executor the cluster's workers started (``<work-dir>/<app>/<id>/stderr``)."""
    return sorted(cluster.workdir.glob("worker-*/app-*/*/stderr"))


def zip_package(dest: Path) -> Path:
    """pyspark_paimon of this checkout as a zip: what ``--py-files`` / ``addPyFile`` / ``addArtifacts`` ship."""
    with zipfile.ZipFile(dest, "w") as zf:
        for f in sorted((ROOT / "pyspark_paimon").rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                zf.write(f, f.relative_to(ROOT).as_posix())
    return dest
