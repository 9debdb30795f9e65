"""The docs say what exists: module paths and dotted names in README.md, DEVELOPERS.md and docs/ resolve, the
generated option reference covers the option registry, and README stays the front door.

The strict site build itself (``mkdocs build --strict``: links, anchors, mkdocstrings identifiers) runs in
``./dev test`` and ``./dev docs``; these checks are the part that needs no mkdocs.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import errors
from pyspark_paimon.metadata.schema import options
from pyspark_paimon.planner import read_options

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pyspark_paimon"
DOCS = ROOT / "docs"
DOC_FILES = [ROOT / "README.md", ROOT / "DEVELOPERS.md", *sorted(DOCS.rglob("*.md"))]

_PATH = re.compile(
    r"(?<![\w/.])(?:pyspark_paimon/)?((?:metadata|planner|datasource)(?:/\w+)*/\w+\.py|pyspark_paimon/\w+\.py)"
)
_DOTTED = re.compile(r"(?<![\w/.])(pyspark_paimon(?:\.\w+)+)")
# File names that look dotted: the package zipped to ship it to a cluster (docs/deploying.md).
_FILE_NAMES = {"pyspark_paimon.zip"}
_LAYER_DOTTED = re.compile(r"`((?:metadata|planner|datasource)(?:\.\w+)+)")


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("options_page", DOCS / "hooks" / "options_page.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_exists(name: str) -> bool:
    rel = Path(*name.split("."))
    return (ROOT / rel).with_suffix(".py").is_file() or (ROOT / rel / "__init__.py").is_file()


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of ours, or a module followed by attributes it has."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module_name = ".".join(parts[:cut])
        if _module_exists(module_name):
            obj: object = importlib.import_module(module_name)
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
    return False


def _mentions() -> list[tuple[str, str, str]]:
    """(file, kind, text) of every module path and dotted name the docs mention."""
    found = []
    for doc in DOC_FILES:
        text = doc.read_text()
        name = str(doc.relative_to(ROOT))
        found += [(name, "path", m) for m in _PATH.findall(text)]
        found += [(name, "dotted", m) for m in _DOTTED.findall(text) if m not in _FILE_NAMES]
        found += [(name, "dotted", "pyspark_paimon." + m) for m in _LAYER_DOTTED.findall(text)]
    return found


def test_docs_mention_only_modules_and_names_that_exist() -> None:
    missing = []
    for doc, kind, text in _mentions():
        if kind == "path":
            rel = text if text.startswith("pyspark_paimon/") else f"pyspark_paimon/{text}"
            if not (ROOT / rel).is_file():
                missing.append(f"{doc}: {text}")
        elif not _resolves(text):
            missing.append(f"{doc}: {text}")
    assert not missing, "the docs name modules or attributes that do not exist:\n" + "\n".join(sorted(set(missing)))


def test_api_pages_name_existing_objects() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    for page in sorted((DOCS / "reference" / "api").glob("*.md")):
        rel = str(page.relative_to(DOCS))
        identifiers = re.findall(r"^::: (\S+)", page.read_text(), re.M)
        assert identifiers, rel
        assert all(_resolves(i) for i in identifiers), rel
        assert rel in config, f"{rel} is not in the mkdocs.yml nav"


def _identifiers() -> list[str]:
    """Every object the API reference renders (``::: dotted.name`` lines of docs/reference/api/*.md)."""
    pages = sorted((DOCS / "reference" / "api").glob("*.md"))
    return [i for page in pages for i in re.findall(r"^::: (\S+)", page.read_text(), re.M)]


def _module_tree(module: ModuleType) -> ast.Module:
    return ast.parse(Path(inspect.getfile(module)).read_text())


def _is_docstring(stmt: ast.stmt | None) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _assigned(stmt: ast.stmt, self_only: bool) -> list[str]:
    """The public names an assignment binds: ``x = ...`` / ``x: T = ...``, or ``self.x = ...`` in ``__init__``."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    if self_only:
        names = [e.attr for e in flat if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)]
        names = [n for e, n in zip([e for e in flat if isinstance(e, ast.Attribute)], names) if e.value.id == "self"]
    else:
        names = [e.id for e in flat if isinstance(e, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def _body_gaps(prefix: str, body: list[ast.stmt], self_only: bool = False) -> list[str]:
    """Public attributes in ``body`` without the docstring that follows an attribute (what mkdocstrings shows)."""
    gaps = []
    for i, stmt in enumerate(body):
        following = body[i + 1] if i + 1 < len(body) else None
        gaps += [f"{prefix}.{n}" for n in _assigned(stmt, self_only) if not _is_docstring(following)]
    return gaps


def _class_gaps(qual: str, node: ast.ClassDef) -> list[str]:
    """The class and every member mkdocstrings renders for it (public methods and properties, class and instance
    attributes, nested classes; ``__init__`` is merged into the class) that has no docstring."""
    gaps = [] if ast.get_docstring(node) else [qual]
    gaps += _body_gaps(qual, node.body)
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            setter = any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in stmt.decorator_list)
            if stmt.name == "__init__":
                gaps += _body_gaps(qual, stmt.body, self_only=True)
            elif not stmt.name.startswith("_") and not setter and not ast.get_docstring(stmt):
                gaps.append(f"{qual}.{stmt.name}")
        elif isinstance(stmt, ast.ClassDef) and not stmt.name.startswith("_"):
            gaps += _class_gaps(f"{qual}.{stmt.name}", stmt)
    return gaps


def _member_gaps(module: ModuleType, name: str) -> list[str]:
    """Gaps of ``module.name``, looked up where it is defined (a re-exported name renders its origin's docs)."""
    tree = _module_tree(module)
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return _class_gaps(f"{module.__name__}.{name}", stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            return [] if ast.get_docstring(stmt) else [f"{module.__name__}.{name}"]
        if isinstance(stmt, ast.ImportFrom) and stmt.module and any(a.name == name for a in stmt.names):
            return _member_gaps(importlib.import_module(stmt.module), name)
    gaps = _body_gaps(module.__name__, tree.body)
    return [g for g in gaps if g == f"{module.__name__}.{name}"] or (
        [] if any(name in _assigned(s, False) for s in tree.body) else [f"{module.__name__}.{name}: not found"]
    )


def _undocumented(identifier: str) -> list[str]:
    parts = identifier.split(".")
    for cut in range(len(parts), 0, -1):
        if _module_exists(".".join(parts[:cut])):
            module = importlib.import_module(".".join(parts[:cut]))
            break
    rest = parts[cut:]
    if not rest:  # a module page renders what the module exports
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        gaps = [] if module.__doc__ else [module.__name__]
        return gaps + [g for n in names for g in _member_gaps(module, n)]
    assert len(rest) == 1, identifier
    return _member_gaps(module, rest[0])


def test_every_rendered_api_member_has_a_docstring() -> None:
    """mkdocstrings renders a member without a docstring as a bare name; every one the API reference renders
    (classes, methods, properties, class and instance attributes, a module page's exports) says what it is."""
    identifiers = _identifiers()
    assert "pyspark_paimon.table.Table" in identifiers and "pyspark_paimon.api_types" in identifiers
    gaps = sorted({g for i in identifiers for g in _undocumented(i)})
    assert not gaps, "members the API reference renders without a docstring:\n" + "\n".join(gaps)


def test_the_docstring_check_sees_what_mkdocstrings_renders() -> None:
    """The check above must fail on each kind of member it claims to cover."""
    source = '''
class C:
    """Documented."""

    field: int = 0
    plain = 1
    """Documented attribute."""

    def __init__(self) -> None:
        self.public = 1
        self._private = 2

    def method(self) -> None:
        pass

    @property
    def prop(self) -> int:
        return 1

    def _hidden(self) -> None:
        pass
'''
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    assert sorted(_class_gaps("C", node)) == ["C.field", "C.method", "C.prop", "C.public"]


# API names written in prose, docstrings and error messages: ``Table.x`` / ``Catalog.x`` / ``Scan.x`` / ... and
# ``t.<namespace>.x`` / ``t.x(`` (``t`` is how the docs and messages name a Table; a bare ``t.x`` without a call
# is too often another ``t``, a type or a row, to count).
_API_NAME = re.compile(r"(?<![\w.*/])(Table|Catalog|Scan|UpdateSchema|MergeBuilder|t)\.(\w+)(?:\.(\w+))?(\()?")
_NAMESPACES = ("tags", "branches", "maintenance", "chain", "inspect")
# The page with the old -> new table for 0.1 users: the first cell of each of its table rows names removed API.
UPGRADING = DOCS / "upgrading.md"


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal of a module: docstrings, messages, f-string parts."""
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def _doc_texts() -> list[tuple[str, str]]:
    """(where, text) of every doc page, without the removed names of the upgrading table."""
    out = []
    for doc in [ROOT / "README.md", ROOT / "DEVELOPERS.md", *sorted(DOCS.rglob("*.md"))]:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            if doc == UPGRADING and line.startswith("|"):
                line = "|".join(line.split("|")[2:])  # the new names only
            out.append((f"{doc.relative_to(ROOT)}:{n}", line))
    return out


def _missing_api_names(texts: list[tuple[str, str]], api: dict[str, object]) -> list[str]:
    missing = []
    for where, text in texts:
        for owner, name, sub, call in _API_NAME.findall(text):
            obj = api[owner]
            if owner == "t" and name in _NAMESPACES:
                owner, obj, name = f"t.{name}", getattr(obj, name), sub
            elif owner == "t" and not (call and not sub):
                continue
            if name and not hasattr(obj, name):
                missing.append(f"{where}: {owner}.{name}")
    return sorted(set(missing))


@pytest.fixture
def api(catalog: Any) -> dict[str, object]:
    """A live instance of each API class, so instance attributes (``t.store``) count as existing."""
    t = catalog.create_table("db.names", "id bigint, v string", primary_keys=["id"], options={"bucket": "1"})
    return {
        "Table": t,
        "t": t,
        "Catalog": catalog,
        "Scan": t.scan(),
        "UpdateSchema": t.update_schema(),
        "MergeBuilder": t.merge(pa.table({"id": [1], "v": ["a"]}), on="id"),
    }


def test_package_strings_name_only_api_that_exists(api: dict[str, object]) -> None:
    """A fix-it hint naming a removed method (``Table.remove_options``) sends the user nowhere."""
    texts = [
        (f"{path.relative_to(ROOT)}:{line}", text)
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, text in _string_literals(path)
    ]
    missing = _missing_api_names(texts, api)
    assert not missing, "string literals name API that does not exist:\n" + "\n".join(missing)


def test_doc_pages_name_only_api_that_exists(api: dict[str, object]) -> None:
    missing = _missing_api_names(_doc_texts(), api)
    assert not missing, "doc pages name API that does not exist:\n" + "\n".join(missing)


def test_the_api_name_check_catches_removed_names(api: dict[str, object]) -> None:
    texts = [
        ("a", "use Table.remove_options"),
        ("b", "see t.branches.drop('x')"),
        ("c", "t.create_chain_tag(...)"),
        ("d", "Catalog.get_table, t.tags.delete, t.scan, Table.open, t.store, pa.Table.from_pylist, t.inspect.files"),
    ]
    assert _missing_api_names(texts, api) == ["a: Table.remove_options", "b: t.branches.drop", "c: t.create_chain_tag"]


def test_option_reference_covers_the_registry() -> None:
    page = _hook().render()
    for key, rule in options.KEYS.items():
        assert f"`{key}`" in page, f"{key} ({rule.kind}) is missing from the option reference"
    for suffix in options.FIELD_KEY_RULES:
        assert f"`{suffix}`" in page
    for key in {*read_options.READ_KEYS, *read_options.STREAM_KEYS}:
        assert f"`{key}`" in page, f"read option {key} is missing from the option reference"


def test_every_read_key_has_a_meaning_and_no_meaning_is_stale() -> None:
    hook = _hook()
    assert set(hook.READ_MEANINGS) == set(hook.read_key_aliases())


def test_errors_page_names_every_error() -> None:
    page = (DOCS / "errors.md").read_text()
    classes = [n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, errors.PaimonError)]
    assert classes
    assert [n for n in classes if f"`{n}`" not in page] == []


def test_the_site_and_readme_open_with_the_same_promise() -> None:
    """docs/index.md and README say the same about what proves compatibility (they once named different
    implementations)."""

    def opening(path: Path) -> str:
        return " ".join(path.read_text().split("\n\n")[1].split())

    assert opening(ROOT / "README.md") == opening(DOCS / "index.md")
    assert "Java Paimon itself" in opening(DOCS / "index.md")


@pytest.mark.parametrize("command", ["./dev demo", "./dev test", "./dev test --min-deps"])
def test_readme_is_the_front_door(command: str) -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 350
    assert command in readme
