"""The import contract of the package (DEVELOPERS.md, "Layers"), checked on every run.

Every ``import`` in the package counts, function-level ones included: hiding an import inside a function
hides a cycle or a layer violation from readers, not from Python. The contract:

* no import cycles between modules;
* each layer imports only the layers below it (``LAYERS``);
* the Spark-free part of the package (everything but the Spark adapters in ``datasource/spark/`` and the
  demo) never imports pyspark, checked statically and by importing it with pyspark made unimportable;
* the map (``PACKAGES``): every directory of the package is a known concern, and no two modules share a name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pyspark_paimon"

# Layer of a module (first matching prefix wins) -> the layers it may import.
LAYERS: list[tuple[str, str]] = [
    ("pyspark_paimon.errors", "errors"),
    ("pyspark_paimon.metadata", "metadata"),
    ("pyspark_paimon.planner", "planner"),
    ("pyspark_paimon.datasource.spark", "spark"),
    ("pyspark_paimon.datasource", "engine"),
    ("pyspark_paimon.table", "api"),
    ("pyspark_paimon.catalog", "api"),
    ("pyspark_paimon.cli", "api"),
    ("pyspark_paimon.cli_output", "api"),
    ("pyspark_paimon.cli_args", "api"),
    ("pyspark_paimon.cli_schema", "api"),
    ("pyspark_paimon.table_scan", "api"),
    ("pyspark_paimon.schema_update", "api"),
    ("pyspark_paimon.table_refs", "api"),
    ("pyspark_paimon.table_maintenance", "api"),
    ("pyspark_paimon.table_chain", "api"),
    ("pyspark_paimon.table_inspect", "api"),
    ("pyspark_paimon.jvm_stream", "api"),
    ("pyspark_paimon.variant", "api"),
    ("pyspark_paimon.api_types", "api"),
    ("pyspark_paimon.demo", "app"),
    ("pyspark_paimon", "package"),
]
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "metadata": {"errors", "metadata"},
    "planner": {"errors", "metadata", "planner"},
    "engine": {"errors", "metadata", "planner", "engine"},
    "api": {"errors", "metadata", "planner", "engine", "api"},
    "spark": {"errors", "metadata", "planner", "engine", "spark"},
    "app": {"package"},
    "package": {"errors", "api", "spark"},
}
SPARK_FREE = {"errors", "metadata", "planner", "engine", "api"}


# The map a newcomer reads (DEVELOPERS.md, "Map"): each directory of the package and what it holds. A new
# directory is a decision about the map: add it here and in DEVELOPERS.md.
PACKAGES: dict[str, str] = {
    "": "the Python API (Catalog, Table and its namespaces, Scan), the CLI and the demo",
    "metadata": "the table format, no Spark: FileStore, identifiers, time inputs",
    "metadata/io": "file access (fsspec), Avro containers, Java-style JSON",
    "metadata/types": "Paimon data types and their JSON, Arrow and DDL forms",
    "metadata/schema": "table schemas and the table-option registry",
    "metadata/rows": "BinaryRow, bucket hashing, partition paths",
    "metadata/snapshots": "snapshots, the commit protocol, consumers",
    "metadata/manifests": "manifest lists and files, the index manifest and deletion vectors",
    "metadata/fileindex": "file indexes of data files: the container, bloom-filter and bitmap indexes, their options",
    "metadata/variant": "the VARIANT type's values: the binary encoding, shredding, paths",
    "metadata/refs": "tags, branches, rollback, automatic tags",
    "metadata/maintenance": "expiration, orphan removal, reachability, file deletion",
    "metadata/iceberg": "Iceberg-compatible metadata: layout, schemas, manifests, Puffin mirrors, the sync",
    "metadata/catalog": "catalog metastores: filesystem, JDBC (SQLite) and REST, their commits and vended credentials",
    "planner": "which snapshot, which files, which splits (driver side, no Spark)",
    "planner/chain": "chain tables: definition, versions, the read plan",
    "datasource": "the Spark-free data plane: the driver's read and write jobs, chain operations, system tables",
    "datasource/read": "reading data files and merged sections; which reader serves each split",
    "datasource/merge": "the merge engines, shared by reads, writes and compaction",
    "datasource/write": "the table writer and the write-time rules of each bucket mode",
    "datasource/compact": "compaction: planning, bucket rewrites, deletion-vector lookups, changelog producers",
    "datasource/dml": "delete, update and merge",
    "datasource/stream": "what executors read for each stream split",
    "datasource/versions": "diffs and three-way branch merges",
    "datasource/spark": "the Spark adapters: DataSource, reader, writer, streaming, type mapping",
}


def test_every_directory_is_on_the_map() -> None:
    dirs = {"" if p.parent == PACKAGE else str(p.parent.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")}
    assert dirs == set(PACKAGES)


def test_module_names_are_unique() -> None:
    """A file name says what the module holds, so two modules never share one (``stream.py`` three times
    said nothing)."""
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}


def test_chain_tables_live_in_one_place_per_layer() -> None:
    chain_modules = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*chain*.py"))
    chain_modules += sorted(str(p.relative_to(PACKAGE)) for p in (PACKAGE / "planner" / "chain").glob("*.py"))
    allowed = ("planner/chain/", "datasource/chain.py", "table_chain.py")
    assert chain_modules and all(m.startswith(allowed) for m in chain_modules)


def _layer(module: str) -> str:
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"module {module} belongs to no layer; add it to LAYERS")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """Our modules (and ``pyspark``) imported anywhere in ``path``, with a line number each."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "pyspark":
                found.setdefault("pyspark", node.lineno)
            if node.module.startswith("pyspark_paimon"):
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.setdefault(sub if sub in modules else node.module, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pyspark":
                    found.setdefault("pyspark", node.lineno)
                elif alias.name.startswith("pyspark_paimon"):
                    found.setdefault(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; use absolute imports")
    return found


GRAPH = {name: _imports(path, _modules()) for name, path in _modules().items()}


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# A module holds one job; past this many lines it holds several (issue 31). The option registry is one long table
# by nature and is exempt.
MAX_MODULE_LINES = 1000
LONG_BY_NATURE = {"metadata/schema/options.py", "metadata/schema/option_keys.py"}


def test_no_module_exceeds_the_size_rule() -> None:
    too_long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if str(p.relative_to(PACKAGE)) not in LONG_BY_NATURE
        and (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}, "split these modules along their seams (DEVELOPERS.md, the map)"


def _private_imports(path: Path) -> list[str]:
    """``from pyspark_paimon.x import _name``: a seam crossed through a private name."""
    return [
        f"{path.name}:{node.lineno}: {node.module}.{alias.name}"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pyspark_paimon")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_no_module_imports_a_private_name_of_another() -> None:
    found = [hit for path in PACKAGE.rglob("*.py") for hit in _private_imports(path)]
    assert found == [], "give the name a public spelling in the module that owns it"


def test_the_private_import_check_sees_one(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from pyspark_paimon.planner.predicate import _private_thing\nfrom pyspark_paimon import __version__\n"
    )
    assert _private_imports(probe) == ["probe.py:1: pyspark_paimon.planner.predicate._private_thing"]


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_checks_see_function_level_and_type_checking_imports(tmp_path: Path) -> None:
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 9}, "d": {"a": 1}}
    assert _cycles(graph) == [["a", "b", "c"]]
    source = tmp_path / "probe.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pyspark_paimon.planner import scan\n"
        "def f():\n    from pyspark_paimon.errors import PaimonError\n    import pyspark.sql\n"
    )
    found = _imports(source, {"pyspark_paimon.planner.scan": source, "pyspark_paimon.errors": source})
    assert set(found) == {"pyspark_paimon.planner.scan", "pyspark_paimon.errors", "pyspark"}


def test_subpackage_inits_import_nothing() -> None:
    """Importing any module imports its packages' ``__init__`` first, which the graph does not show: so the
    ``__init__`` of every subpackage stays empty of imports (``datasource/__init__`` must never pull the Spark
    adapters into the Spark-free engine below it)."""
    inits = [p for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE]
    assert inits
    offenders = [
        str(p.relative_to(ROOT))
        for p in inits
        if any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(ast.parse(p.read_text())))
    ]
    assert offenders == []


def test_no_dynamic_imports() -> None:
    """``importlib.import_module`` and ``__import__`` would hide edges from these checks."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "import_module"
                or isinstance(node, ast.Name)
                and node.id == "__import__"
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_layers_import_only_layers_below() -> None:
    assert {_layer(m) for m in GRAPH} <= set(MAY_IMPORT)  # _layer also fails for a module outside every layer
    violations = []
    for module, deps in sorted(GRAPH.items()):
        layer = _layer(module)
        for dep, line in deps.items():
            if dep == "pyspark":
                continue
            if _layer(dep) not in MAY_IMPORT[layer]:
                violations.append(f"{module}:{line} ({layer}) imports {dep} ({_layer(dep)})")
    assert violations == []


def test_spark_free_modules_never_import_pyspark() -> None:
    offenders = [
        f"{m}:{deps['pyspark']}" for m, deps in sorted(GRAPH.items()) if "pyspark" in deps and _layer(m) in SPARK_FREE
    ]
    assert offenders == []


def test_python_api_works_with_pyspark_unimportable(tmp_path: Path) -> None:
    """Import every Spark-free module and use the Python API (write, read, system tables) in a process
    where ``import pyspark`` fails."""
    spark_free = sorted(m for m in GRAPH if _layer(m) in SPARK_FREE)
    script = f"""
import sys, importlib
sys.modules["pyspark"] = None  # any import of pyspark now raises ImportError
for name in {spark_free!r}:
    importlib.import_module(name)
import pyarrow as pa
from pyspark_paimon import Catalog
t = Catalog({str(tmp_path)!r}).create_table("db.t", "id bigint, v string", primary_keys=["id"],
                                           options={{"bucket": "1"}})
t.write_arrow(pa.table({{"id": [1, 2], "v": ["a", "b"]}}))
assert t.scan().to_arrow().num_rows == 2
assert t.inspect.snapshots().column("snapshot_id").to_pylist() == [1]
assert t.inspect.files().num_rows == 1
assert not any(m == "pyspark" or m.startswith("pyspark.") for m in sys.modules if sys.modules[m] is not None)
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_planning_a_stream_loads_neither_pandas_nor_sqlglot(tmp_path: Path) -> None:
    """Spark starts a fresh Python process for every streaming query's source (and every new executor imports
    the package): importing and planning must not pull in pandas (~0.2 s, which any ``pa.array`` call at
    import time would) or sqlglot (~0.08 s, needed only by the ``filter`` option)."""
    import pyarrow as pa

    from pyspark_paimon import Catalog

    table = Catalog(str(tmp_path)).create_table(
        "db.t", "id bigint, v string", primary_keys=["id"], options={"bucket": "2"}
    )
    table.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    script = f"""
import sys
from pyspark_paimon.datasource.spark.source import PaimonDataSource
source = PaimonDataSource({{"path": {table.store.table_path!r}}})
reader = source.streamReader(source.schema())
start = reader.initialOffset()
assert len(reader.partitions(start, reader.latestOffset(start, None))) == 2
print(sorted(m for m in ("pandas", "sqlglot") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_planning_a_selective_batch_read_loads_neither_pandas_nor_sqlglot(tmp_path: Path) -> None:
    """Spark plans every batch read in a Python worker that is often fresh: a read that selects partitions and
    filters values must plan (and pickle its partitions) without pyarrow's first Arrow scalar, which imports pandas
    (0.26 s cold): the residual filter's Arrow expression is built where the rows are read."""
    import pyarrow as pa

    from pyspark_paimon import Catalog

    table = Catalog(str(tmp_path)).create_table("db.t", "id bigint, v string, dt string", partition_keys=["dt"])
    table.write_arrow(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["d1", "d2", "d2"]}))
    script = f"""
import pickle, sys
from pyspark.sql.datasource import EqualTo, GreaterThan
from pyspark_paimon.datasource.spark.source import PaimonPushdownDataSource
source = PaimonPushdownDataSource({{"path": {table.store.table_path!r}}})
reader = source.reader(source.schema())
assert list(reader.pushFilters([EqualTo(("dt",), "d2"), GreaterThan(("id",), 2)])) == []
partitions = reader.partitions()
pickle.dumps(partitions)
print(sorted(m for m in ("pandas", "sqlglot") if m in sys.modules))
# an executor's side: the residual is built when first used and keeps exactly the rows the filters select
batches = [b for p in partitions for b in reader.read(pickle.loads(pickle.dumps(p)))]
print([i for b in batches for i in b.column("id").to_pylist()])
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "[3]"]
