"""Time pypaimon and pypaimon-rust reading or writing a table, inside the oracle venv.

Runs with the oracle venv's python (pypaimon pins pyarrow < 20, so it cannot share the main venv); the
benchmark suite calls it in a subprocess. The script times only the library work, in process, with
``time.perf_counter``, and prints one JSON object as the last line of stdout::

    python oracle_bench.py read  --impl pypaimon|rust --warehouse WH --table db.t [--reads N]
    python oracle_bench.py write --impl pypaimon|rust --warehouse WH --table db.t --ipc data.arrow

``read`` times N full reads (catalog + table load, scan planning and reading every split into one Arrow
table), each in a fresh catalog; the first read of a process pays one-off costs (lazy imports, the rust
runtime), later ones are "warm". ``write`` times one write-and-commit of the Arrow IPC file's rows into
the existing table ``--table`` (created beforehand by the benchmark, so every writer gets the same table
definition). Reading the IPC file and casting it to the table's Arrow schema happen before the clock
starts.

Result: ``{"impl", "op", "import_s", "times_s": [...], "rows", "checks": {...}}`` where ``import_s`` is
the library import time and ``checks`` are values computed after timing (row count, sum(id), sum(d),
max length of s) so the benchmark can verify that every reader returned the same table. pypaimon runs its
pure-Python paths (its defaults; the native options are pinned off, as in ``tests/oracle/oracle.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any, Iterator

t_import = time.perf_counter()
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

PYPAIMON_PURE_PYTHON = {
    "read.native.enabled": "false",
    "scan.native-plan.enabled": "false",
    "write.native.enabled": "false",
    "commit.native.enabled": "false",
}


def _import(impl: str) -> float:
    """Import the library; returns the seconds it took (included in the subprocess wall time only)."""
    if impl == "pypaimon":
        import pypaimon  # noqa: F401
    else:
        import pypaimon_rust.datafusion  # noqa: F401
    return time.perf_counter() - t_import


def _pypaimon_table(warehouse: str, identifier: str) -> Any:
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse}).get_table(identifier).copy(PYPAIMON_PURE_PYTHON)


def _rust_table(warehouse: str, identifier: str) -> Any:
    from pypaimon_rust.datafusion import PaimonCatalog

    return PaimonCatalog({"warehouse": warehouse}).get_table(identifier)


def read_once(impl: str, warehouse: str, identifier: str) -> pa.Table:
    if impl == "pypaimon":
        table = _pypaimon_table(warehouse, identifier)
        builder = table.new_read_builder()
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())
    table = _rust_table(warehouse, identifier)
    builder = table.new_read_builder()
    batches = list(builder.new_read().read_arrow(builder.new_scan().plan().splits()))
    return pa.Table.from_batches(batches)


def checks(data: pa.Table) -> dict[str, Any]:
    return {
        "rows": data.num_rows,
        "sum_id": pc.sum(data.column("id")).as_py(),
        "sum_d": pc.sum(data.column("d")).as_py(),
        "max_len_s": pc.max(pc.utf8_length(data.column("s"))).as_py(),
    }


def cmd_read(args: argparse.Namespace) -> dict[str, Any]:
    times, data = [], None
    for _ in range(args.reads):
        data = None  # free the previous result before the next read
        start = time.perf_counter()
        data = read_once(args.impl, args.warehouse, args.table)
        times.append(time.perf_counter() - start)
    assert data is not None
    return {"times_s": times, "rows": data.num_rows, "checks": checks(data)}


def cmd_write(args: argparse.Namespace) -> dict[str, Any]:
    with pa.memory_map(args.ipc) as source:
        data = pa.ipc.open_file(source).read_all()
    if args.impl == "pypaimon":
        from pypaimon.schema.data_types import PyarrowFieldParser

        table = _pypaimon_table(args.warehouse, args.table)
        data = data.cast(PyarrowFieldParser.from_paimon_schema(table.table_schema.fields))
        start = time.perf_counter()
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(data)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()
    else:
        table = _rust_table(args.warehouse, args.table)
        batches = data.combine_chunks().to_batches()
        start = time.perf_counter()
        builder = table.new_batch_write_builder()
        writer, committer = builder.new_write(), builder.new_commit()
        try:
            for batch in batches:
                writer.write_arrow(batch)
            committer.commit(writer.prepare_commit())
        finally:
            writer.close()
            committer.close()
    return {"times_s": [time.perf_counter() - start], "rows": data.num_rows, "checks": {"rows": data.num_rows}}


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Libraries may print (also from native code); stdout carries only our JSON line."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("op", choices=["read", "write"])
    parser.add_argument("--impl", choices=["pypaimon", "rust"], required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--table", required=True, help="db.table")
    parser.add_argument("--reads", type=int, default=1)
    parser.add_argument("--ipc", help="Arrow IPC file with the rows to write")
    args = parser.parse_args(argv)
    if args.op == "write" and not args.ipc:
        parser.error("write needs --ipc")
    with _stdout_to_stderr():
        import_s = _import(args.impl)
        result = cmd_read(args) if args.op == "read" else cmd_write(args)
    print(json.dumps({"impl": args.impl, "op": args.op, "import_s": import_s, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
