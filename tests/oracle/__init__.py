"""Interop oracles for the tests: pypaimon and pypaimon-rust, driven in their own venv.

pypaimon pins pyarrow < 20 while pyspark-paimon uses the newest pyarrow, so the oracles cannot be imported
here. Instead each call runs `oracle.py` (next to this file) with the oracle venv's python in a subprocess;
commands and small results travel as JSON, tables as Arrow IPC files (stable across pyarrow versions).
This module therefore imports nothing from pypaimon and is safe to import from the main venv.

The oracle venv is found through ``PAIMON_ORACLE_PYTHON`` or at ``<repo>/.venv-oracle/bin/python``.
Interop tests must *fail* (not skip) when it is missing: CI installs it, so a missing oracle is a broken
setup, not an optional feature. Call `require_oracle_python()` (or let `run` do it) to get that failure
with the setup command in the message.

See `oracle.py`'s docstring for the command protocol (type strings, JSON encodings of values, row kinds).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence, TypedDict, Union

import pyarrow as pa

__all__ = [
    "ORACLE_SCRIPT",
    "REQUIREMENTS",
    "SETUP_COMMAND",
    "OracleError",
    "OracleUnavailableError",
    "CreateSpec",
    "CommitSpec",
    "Commit",
    "oracle_python",
    "require_oracle_python",
    "run",
    "run_batch",
    "versions",
    "table_spec",
    "pypaimon_write",
    "read",
    "read_with",
    "pypaimon_read",
    "rust_read",
    "inspect",
    "pypaimon_catalog",
    "pypaimon_create_tag",
    "pypaimon_create_branch",
    "add_column",
    "rename_column",
    "drop_column",
    "update_column_type",
    "set_option",
    "remove_option",
]

ORACLE_SCRIPT = Path(__file__).with_name("oracle.py")
REQUIREMENTS = Path(__file__).with_name("requirements.txt")
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ORACLE_PYTHON = REPO_ROOT / ".venv-oracle" / "bin" / "python"
SETUP_COMMAND = "python3 -m venv .venv-oracle && .venv-oracle/bin/pip install -r tests/oracle/requirements.txt"
DEFAULT_TIMEOUT_S = 300.0

Impl = Literal["pypaimon", "rust"]
#: A warehouse directory (a filesystem catalog), or catalog options naming a JDBC or REST catalog
#: (``{"metastore": "jdbc", "uri": "jdbc:sqlite:...", "warehouse": ...}``), which pypaimon-rust cannot open.
PathLike = Union[str, "os.PathLike[str]", Mapping[str, str]]


class OracleUnavailableError(RuntimeError):
    """The oracle venv is missing; the message says how to create it."""


class OracleError(RuntimeError):
    """An oracle command failed; carries the oracle's error, traceback and stderr."""

    def __init__(self, cmd: Mapping[str, Any], error: str, stderr: str) -> None:
        super().__init__(f"oracle command {cmd.get('cmd')!r} failed: {error}\n--- oracle stderr ---\n{stderr}")
        self.cmd = dict(cmd)
        self.error = error
        self.stderr = stderr


class CreateSpec(TypedDict, total=False):
    """How to create a missing table. ``columns``: ``[name, paimon type, nullable?]`` (type e.g.
    ``"DECIMAL(10, 2)"``, ``"ARRAY<INT>"``, ``"ROW<x INT, y STRING>"``)."""

    columns: list[list[Any]]
    partition_keys: list[str]
    primary_keys: list[str]
    options: dict[str, str]
    comment: str


class CommitSpec(TypedDict, total=False):
    """One commit: ``rows`` (JSON objects or positional lists) or ``table`` (a pyarrow Table); optional
    ``kinds`` ("+I"/"-U"/"+U"/"-D" per row; needs the ``rowkind.field`` table option) and ``overwrite``
    (True, or a static partition dict)."""

    rows: list[Any]
    table: pa.Table
    kinds: list[str]
    overwrite: Union[bool, dict[str, Any]]


Commit = Union[Sequence[Any], pa.Table, CommitSpec]


# ---------------------------------------------------------------------------------------- venv + runner


def oracle_python() -> str | None:
    """The oracle venv's python: ``$PAIMON_ORACLE_PYTHON`` if set, else ``<repo>/.venv-oracle/bin/python``;
    None when the chosen path does not exist."""
    configured = os.environ.get("PAIMON_ORACLE_PYTHON")
    candidate = Path(configured) if configured else DEFAULT_ORACLE_PYTHON
    return str(candidate) if candidate.exists() else None


def require_oracle_python() -> str:
    """Like `oracle_python` but raises `OracleUnavailableError` naming the fix; tests turn it into a failure."""
    python = oracle_python()
    if python is None:
        configured = os.environ.get("PAIMON_ORACLE_PYTHON")
        where = (
            f"PAIMON_ORACLE_PYTHON={configured} does not exist"
            if configured
            else f"{DEFAULT_ORACLE_PYTHON} does not exist and PAIMON_ORACLE_PYTHON is not set"
        )
        raise OracleUnavailableError(
            f"The interop oracle venv (pypaimon + pypaimon-rust) is missing: {where}. "
            f"Create it from the repo root with:\n    {SETUP_COMMAND}\n"
            "or point PAIMON_ORACLE_PYTHON at a python that has the packages in tests/oracle/requirements.txt."
        )
    return python


def _oracle_env() -> dict[str, str]:
    """The subprocess environment, minus anything that would leak the main venv's packages into it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def run(cmd: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """Execute one oracle command and return its JSON result; raises `OracleError` with stderr on failure."""
    python = require_oracle_python()
    proc = subprocess.run(
        [python, str(ORACLE_SCRIPT)],
        input=json.dumps(cmd),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_oracle_env(),
        check=False,
    )
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        result = None
    if proc.returncode != 0 or not isinstance(result, dict) or "error" in result:
        error = result.get("error") if isinstance(result, dict) else f"exit code {proc.returncode}"
        raise OracleError(cmd, str(error), proc.stderr)
    return result


def run_batch(cmds: Sequence[Mapping[str, Any]], *, timeout: float = DEFAULT_TIMEOUT_S) -> list[dict[str, Any]]:
    """Execute several commands in one oracle process (pypaimon's import costs ~1 s per process)."""
    return list(run({"cmd": "batch", "commands": [dict(c) for c in cmds]}, timeout=timeout)["results"])


def versions() -> dict[str, str]:
    """Versions of pypaimon, pypaimon-rust, pyarrow and python inside the oracle venv."""
    return run({"cmd": "versions"})


# ---------------------------------------------------------------------------------------------- helpers


def table_spec(
    columns: Sequence[Sequence[Any]],
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: Mapping[str, Any] | None = None,
    comment: str | None = None,
) -> CreateSpec:
    """Build a `CreateSpec`; option values are stringified because Paimon options are strings."""
    spec: CreateSpec = {
        "columns": [list(c) for c in columns],
        "partition_keys": list(partition_keys),
        "primary_keys": list(primary_keys),
        "options": {k: str(v) for k, v in (options or {}).items()},
    }
    if comment is not None:
        spec["comment"] = comment
    return spec


def _warehouse(warehouse: PathLike) -> Any:
    """A warehouse as the oracle takes it: a directory path, or a dict of catalog options."""
    if isinstance(warehouse, Mapping):
        return {str(k): str(v) for k, v in warehouse.items()}
    return os.fspath(warehouse)


def _write_ipc(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _read_ipc(path: Path) -> pa.Table:
    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all()


def _commit_json(commit: Commit, scratch: Path, index: int) -> dict[str, Any]:
    """Turn one `Commit` into its JSON form, spilling Arrow tables to IPC files in `scratch`."""
    if isinstance(commit, pa.Table):
        commit = {"table": commit}
    elif not isinstance(commit, Mapping):
        commit = {"rows": list(commit)}
    out = {k: v for k, v in commit.items() if k != "table"}
    if "table" in commit:
        path = scratch / f"commit-{index}.arrow"
        _write_ipc(commit["table"], path)
        out["ipc"] = str(path)
    return out


# --------------------------------------------------------------------------------------------- commands


def pypaimon_write(
    warehouse: PathLike,
    identifier: str,
    commits: Sequence[Commit],
    *,
    create: CreateSpec | None = None,
    impl: Impl = "pypaimon",
) -> dict[str, Any]:
    """Create `identifier` from `create` if missing (always via pypaimon), then make one snapshot per
    commit with `impl`'s writer. Returns ``{"created": bool, "snapshot_ids": [...]}``."""
    with tempfile.TemporaryDirectory(prefix="paimon-oracle-") as scratch:
        cmd: dict[str, Any] = {
            "cmd": "write",
            "impl": impl,
            "warehouse": _warehouse(warehouse),
            "identifier": identifier,
            "commits": [_commit_json(c, Path(scratch), i) for i, c in enumerate(commits)],
        }
        if create is not None:
            cmd["create"] = create
        return run(cmd)


def read_with(
    impls: Sequence[Impl],
    warehouse: PathLike,
    identifier: str,
    options: Mapping[str, Any] | None = None,
    *,
    sort: bool = True,
) -> dict[Impl, pa.Table]:
    """Read a whole table (``db.t`` or ``db.t$branch_b``) with each of `impls`, in one oracle process.

    `options` are dynamic read options (``scan.snapshot-id``, ``scan.tag-name``, ...). Rows are sorted by
    every non-nested column unless `sort` is False, and field metadata is dropped, so the results of the
    two oracles compare with ``equals``."""
    with tempfile.TemporaryDirectory(prefix="paimon-oracle-") as scratch:
        outputs = {impl: Path(scratch) / f"{impl}.arrow" for impl in impls}
        run(
            {
                "cmd": "batch",
                "commands": [
                    {
                        "cmd": "read",
                        "impl": impl,
                        "warehouse": _warehouse(warehouse),
                        "identifier": identifier,
                        "options": {k: str(v) for k, v in (options or {}).items()},
                        "output": str(output),
                        "sort": sort,
                    }
                    for impl, output in outputs.items()
                ],
            }
        )
        return {impl: _read_ipc(output) for impl, output in outputs.items()}


def read(
    impl: Impl, warehouse: PathLike, identifier: str, options: Mapping[str, Any] | None = None, *, sort: bool = True
) -> pa.Table:
    """`read_with` a single implementation."""
    return read_with([impl], warehouse, identifier, options, sort=sort)[impl]


def pypaimon_read(
    warehouse: PathLike, identifier: str, options: Mapping[str, Any] | None = None, *, sort: bool = True
) -> pa.Table:
    """`read` through pypaimon (pure-Python paths forced)."""
    return read("pypaimon", warehouse, identifier, options, sort=sort)


def rust_read(
    warehouse: PathLike, identifier: str, options: Mapping[str, Any] | None = None, *, sort: bool = True
) -> pa.Table:
    """`read` through pypaimon-rust. For an empty result the rust reader yields no schema, so the empty
    table's schema then comes from pypaimon."""
    return read("rust", warehouse, identifier, options, sort=sort)


def inspect(impl: Impl, warehouse: PathLike, identifier: str) -> dict[str, Any]:
    """Snapshots, tags, branches (pypaimon only) and the latest schema as `impl` sees them."""
    return run({"cmd": "inspect", "impl": impl, "warehouse": _warehouse(warehouse), "identifier": identifier})


def pypaimon_catalog(warehouse: PathLike, ops: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Run catalog operations (``{"op": "create_database", "name": ...}``...; see ``oracle.cmd_catalog``) through
    one pypaimon catalog; their results, in order."""
    return list(run({"cmd": "catalog", "warehouse": _warehouse(warehouse), "ops": [dict(o) for o in ops]})["results"])


def pypaimon_create_tag(warehouse: PathLike, identifier: str, name: str, snapshot_id: int | None = None) -> int:
    """Tag `snapshot_id` (default: latest) with pypaimon; returns the tagged snapshot id."""
    cmd: dict[str, Any] = {"cmd": "tag", "warehouse": _warehouse(warehouse), "identifier": identifier, "name": name}
    if snapshot_id is not None:
        cmd["snapshot_id"] = snapshot_id
    return int(run(cmd)["snapshot_id"])


def pypaimon_create_branch(warehouse: PathLike, identifier: str, name: str, from_tag: str | None = None) -> list[str]:
    """Create branch `name` from `from_tag` (or an empty branch: schema only); returns all branches."""
    cmd: dict[str, Any] = {"cmd": "branch", "warehouse": _warehouse(warehouse), "identifier": identifier, "name": name}
    if from_tag is not None:
        cmd["from_tag"] = from_tag
    return list(run(cmd)["branches"])


def add_column(
    name: str, type_: str, *, comment: str | None = None, first: bool = False, after: str | None = None
) -> dict[str, Any]:
    change: dict[str, Any] = {"op": "add_column", "name": name, "type": type_}
    if comment is not None:
        change["comment"] = comment
    if first:
        change["first"] = True
    if after is not None:
        change["after"] = after
    return change


def rename_column(name: str, new_name: str) -> dict[str, Any]:
    return {"op": "rename_column", "name": name, "new_name": new_name}


def drop_column(name: str) -> dict[str, Any]:
    return {"op": "drop_column", "name": name}


def update_column_type(name: str, type_: str) -> dict[str, Any]:
    return {"op": "update_column_type", "name": name, "type": type_}


def set_option(key: str, value: Any) -> dict[str, Any]:
    return {"op": "set_option", "key": key, "value": str(value)}


def remove_option(key: str) -> dict[str, Any]:
    return {"op": "remove_option", "key": key}
