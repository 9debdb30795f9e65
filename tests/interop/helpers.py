"""Helpers for the interop tests (``tests.interop.helpers``): batched oracle calls, table comparison.

Every oracle process costs ~1.2 s (importing pypaimon), so each interop module builds its tables in a
module-scoped fixture and sends *all* of its oracle work (writes, tags, branches, evolutions, reads) as
one or two `OracleBatch` runs. Tests then only compare tables in-process.

Comparisons are by value: our readers return TIMESTAMP(p) as microseconds (Spark's unit) where pypaimon
returns the declared unit, and Spark names list items differently, so Arrow types are compared by their
logical shape (`type_shape`) and rows by their Python values, order-insensitively (`canonical_rows`).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

try:
    from tests import oracle
except ImportError:  # plain `pytest` puts tests/ (not the repo root) on sys.path
    import oracle  # type: ignore[no-redef]

IMPLS = ("pypaimon", "rust")


# --------------------------------------------------------------------------------------- the oracle side


class OracleBatch:
    """Collects oracle commands and runs them in order in one oracle process.

    Reads are registered under a key; after `run()`, ``batch.tables[key][impl]`` holds each result
    (normalised by the oracle: field metadata dropped, rows sorted). ``batch.results`` holds the raw
    JSON results of every command in submission order.
    """

    def __init__(self, warehouse: str | os.PathLike[str] | Mapping[str, str]) -> None:
        # A directory (filesystem catalog), or the catalog options of a JDBC or REST catalog.
        self.warehouse: Any = dict(warehouse) if isinstance(warehouse, Mapping) else os.fspath(warehouse)
        self._scratch = tempfile.TemporaryDirectory(prefix="paimon-interop-")
        self._dir = Path(self._scratch.name)
        self._cmds: list[dict[str, Any]] = []
        self._outputs: dict[str, dict[str, Path]] = {}
        self._spilled = 0
        self.tables: dict[str, dict[str, pa.Table]] = {}
        self.results: list[dict[str, Any]] = []

    def _add(self, cmd: dict[str, Any]) -> int:
        self._cmds.append(cmd)
        return len(self._cmds) - 1

    def write(
        self,
        identifier: str,
        commits: Sequence[oracle.Commit],
        *,
        create: oracle.CreateSpec | None = None,
        impl: str = "pypaimon",
    ) -> int:
        encoded = []
        for commit in commits:
            encoded.append(oracle._commit_json(commit, self._dir, self._spilled))  # noqa: SLF001
            self._spilled += 1
        cmd: dict[str, Any] = {
            "cmd": "write",
            "impl": impl,
            "warehouse": self.warehouse,
            "identifier": identifier,
            "commits": encoded,
        }
        if create is not None:
            cmd["create"] = create
        return self._add(cmd)

    def read(
        self,
        key: str,
        identifier: str,
        options: Mapping[str, Any] | None = None,
        impls: Sequence[str] = IMPLS,
        sort: bool = True,
        projection: Sequence[str] | None = None,
    ) -> None:
        if key in self._outputs:
            raise ValueError(f"read key {key!r} used twice")
        self._outputs[key] = {}
        for impl in impls:
            output = self._dir / f"read-{len(self._cmds)}-{impl}.arrow"
            self._outputs[key][impl] = output
            cmd: dict[str, Any] = {
                "cmd": "read",
                "impl": impl,
                "warehouse": self.warehouse,
                "identifier": identifier,
                "options": {k: str(v) for k, v in (options or {}).items()},
                "output": str(output),
                "sort": sort,
            }
            if projection is not None:
                cmd["projection"] = list(projection)
            self._add(cmd)

    def row_update(self, identifier: str, op: str, **args: Any) -> int:
        """pypaimon's row changes by row id or key (``oracle.cmd_row_update``): ``op`` and its arguments."""
        return self._add({"cmd": "row_update", "warehouse": self.warehouse, "identifier": identifier, "op": op, **args})

    def tag(self, identifier: str, name: str, snapshot_id: int | None = None) -> int:
        cmd: dict[str, Any] = {"cmd": "tag", "warehouse": self.warehouse, "identifier": identifier, "name": name}
        if snapshot_id is not None:
            cmd["snapshot_id"] = snapshot_id
        return self._add(cmd)

    def branch(self, identifier: str, name: str, from_tag: str | None = None) -> int:
        cmd: dict[str, Any] = {"cmd": "branch", "warehouse": self.warehouse, "identifier": identifier, "name": name}
        if from_tag is not None:
            cmd["from_tag"] = from_tag
        return self._add(cmd)

    def evolve(self, identifier: str, changes: Sequence[Mapping[str, Any]]) -> int:
        return self._add(
            {
                "cmd": "evolve",
                "warehouse": self.warehouse,
                "identifier": identifier,
                "changes": [dict(c) for c in changes],
            }
        )

    def catalog(self, ops: Sequence[Mapping[str, Any]]) -> int:
        """Catalog operations through pypaimon's catalog (``oracle.cmd_catalog``); the command's result is
        ``{"results": [...]}``."""
        return self._add({"cmd": "catalog", "warehouse": self.warehouse, "ops": [dict(o) for o in ops]})

    def inspect(self, identifier: str, impl: str) -> int:
        return self._add({"cmd": "inspect", "impl": impl, "warehouse": self.warehouse, "identifier": identifier})

    def run(self) -> "OracleBatch":
        try:
            self.results = oracle.run_batch(self._cmds) if self._cmds else []
            for key, outputs in self._outputs.items():
                self.tables[key] = {impl: _read_ipc(path) for impl, path in outputs.items()}
        finally:
            self._scratch.cleanup()
        return self


def _read_ipc(path: Path) -> pa.Table:
    with pa.OSFile(str(path), "rb") as source:
        return pa.ipc.open_file(source).read_all()


# ------------------------------------------------------------------------------------------ our side


def ours_arrow(table_uri: str, options: Mapping[str, Any] | None = None) -> pa.Table:
    """Read through our Python API (no Spark). ``table_uri`` may carry a ``$branch_<b>`` suffix."""
    from pyspark_paimon import Table

    return Table.open(table_uri).scan(read_options={k: str(v) for k, v in (options or {}).items()}).to_arrow()


def ours_spark(spark: Any, table_uri: str, options: Mapping[str, Any] | None = None) -> pa.Table:
    """Read through our Spark data source."""
    reader = spark.read.format("paimon")
    for k, v in (options or {}).items():
        reader = reader.option(k, str(v))
    return reader.load(table_uri).toArrow()


def table_uri(warehouse: str | os.PathLike[str], identifier: str) -> str:
    """``db.t$branch_b`` -> ``<warehouse>/db.db/t$branch_b`` (the path form our readers take)."""
    db, rest = identifier.split(".", 1)
    return f"{os.fspath(warehouse)}/{db}.db/{rest}"


# ------------------------------------------------------------------------------------------ comparison


def type_shape(t: pa.DataType) -> str:
    """A logical description of an Arrow type that ignores timestamp units, list item names, nullability
    and string/binary offset width: what a Paimon type looks like whichever reader produced it."""
    if pa.types.is_timestamp(t):
        return f"timestamp(tz={'yes' if t.tz else 'no'})"
    if pa.types.is_large_string(t) or pa.types.is_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_large_binary(t) or pa.types.is_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return f"list<{type_shape(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{type_shape(t.key_type)},{type_shape(t.item_type)}>"
    if pa.types.is_struct(t):
        return (
            "struct<" + ",".join(f"{t.field(i).name}:{type_shape(t.field(i).type)}" for i in range(t.num_fields)) + ">"
        )
    return str(t)


def schema_shape(schema: pa.Schema) -> list[tuple[str, str]]:
    return [(f.name, type_shape(f.type)) for f in schema]


def sort_key(v: Any) -> str:
    """A string that orders values the same whichever reader produced them (datetimes by instant or wall
    clock, not by the class of their tzinfo; decimals by text)."""
    if v is None:
        return "~"  # NULLs last
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{sort_key(x)}" for k, x in sorted(v.items())) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(sort_key(x) for x in v) + "]"
    if isinstance(v, dt.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return v.isoformat()
    if isinstance(v, (bool, int, float, Decimal)):
        return f"{type(v).__name__}:{v}"
    return repr(v)


def sorted_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=sort_key)


def canonical_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows as Python dicts, in a deterministic order that does not depend on the reader's row order."""
    return sorted_rows(table.to_pylist())


def assert_same_table(actual: pa.Table, expected: pa.Table, what: str = "") -> None:
    """Same column names and logical types, and the same rows as a multiset."""
    assert schema_shape(actual.schema) == schema_shape(expected.schema), what
    assert canonical_rows(actual) == canonical_rows(expected), what


def assert_oracles_agree(tables: Mapping[str, pa.Table], what: str = "") -> pa.Table:
    """pypaimon and rust must read the same thing; returns pypaimon's table."""
    by_pypaimon = tables["pypaimon"]
    if "rust" in tables:
        assert_same_table(tables["rust"], by_pypaimon, f"rust vs pypaimon: {what}")
    return by_pypaimon


rows_of = canonical_rows
