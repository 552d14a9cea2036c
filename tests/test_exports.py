"""``deepcontext.__all__`` is complete and every name in it resolves: the names the docs show
imported from ``deepcontext`` (or written ``deepcontext.Name``), the result types and the whole
error tree."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import deepcontext
import deepcontext.errors
import deepcontext.types

ROOT = Path(__file__).resolve().parents[1]
#: the README and the docs site's pages
README = "\n".join(p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))])


def readme_names() -> set[str]:
    """Names the README imports from the package or uses as ``deepcontext.Name``."""
    names: set[str] = set()
    single = r"\w+(?: as \w+)?(?:, \w+(?: as \w+)?)*"
    for m in re.finditer(rf"from deepcontext import (\([^)]*\)|{single})", README):
        for part in m.group(1).strip("()").replace("\n", ",").split(","):
            name = part.split("#")[0].split(" as ")[0].strip()
            if name:
                names.add(name)
    names |= set(re.findall(r"\bdeepcontext\.([A-Z]\w*)", README))
    return names


def test_the_readme_names_are_found() -> None:
    # the reader of the README sees these; a regex that found none would check nothing
    assert {"DeepContext", "SyncDeepContext", "ValidationError", "DeepContextError"} <= readme_names()


def test_every_name_the_readme_documents_is_exported() -> None:
    assert readme_names() - set(deepcontext.__all__) == set()


@pytest.mark.parametrize("module", [deepcontext.types, deepcontext.errors])
def test_the_result_types_and_the_error_tree_are_exported(module: object) -> None:
    public = set(module.__all__)
    assert public - set(deepcontext.__all__) == set()


@pytest.mark.parametrize("name", deepcontext.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    value = getattr(deepcontext, name)
    assert value is not None
    if name != "__version__":
        # the object of its home module, not a copy
        home = importlib.import_module(deepcontext._EXPORTS[name])
        assert value is getattr(home, name)
    assert name in dir(deepcontext)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        deepcontext.Nope  # noqa: B018 (the attribute access is the test)


def test_type_checkers_see_the_same_names() -> None:
    """The ``if TYPE_CHECKING:`` imports of ``__init__`` name exactly the lazy exports."""
    tree = ast.parse((ROOT / "src" / "deepcontext" / "__init__.py").read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    seen.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    assert seen == deepcontext._EXPORTS


def test_every_module_all_resolves() -> None:
    # `from deepcontext.x import *` and the names a module promises: each must exist there
    missing = []
    for info in pkgutil.walk_packages(deepcontext.__path__, "deepcontext."):
        if info.name.endswith("__main__"):
            continue  # runs the command line
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue  # an optional extra that is not installed
        missing += [f"{info.name}.{n}" for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert missing == []
