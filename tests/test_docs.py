"""The docs say what exists: module paths and dotted names in README.md, DEVELOPERS.md and docs/ resolve, the
generated option reference covers the option registry, and README stays the front door.

The strict site build itself (``mkdocs build --strict``: links, anchors, mkdocstrings identifiers) runs in
``./dev test`` and ``./dev docs``; these checks are the part that needs no mkdocs.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from pathlib import Path
from types import ModuleType

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


@pytest.mark.parametrize("command", ["./dev demo", "./dev test", "./dev test --min-deps"])
def test_readme_is_the_front_door(command: str) -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 350
    assert command in readme
