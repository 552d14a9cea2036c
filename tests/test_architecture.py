"""The package's import graph: no cycle between modules, no layer importing a layer above it.

Imports are read with :mod:`ast` from every module of ``src/deepcontext`` (module-level and inside
functions; ``from pkg import submodule`` is an edge to the submodule; imports under
``if TYPE_CHECKING:`` are annotations only and do not count).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "deepcontext"

#: top-level packages / modules by layer; a module may import its own layer and the ones below
LAYERS: dict[str, int] = {
    "errors": 0,
    "types": 0,
    "clock": 0,
    "text": 0,
    "ids": 0,
    "settings": 1,
    "settings_types": 1,
    "llm": 2,
    "embed": 2,
    "store": 2,
    "language": 3,  # word lists, dates, standing facts: shared by extraction and retrieval
    "extract": 4,
    "query": 4,
    "retrieve": 4,
    "services": 5,
    "dialogue": 6,
    "context": 6,
    "lifecycle": 6,
    "core": 7,
    "core_memories": 7,  # DeepContext's mixins
    "core_features": 7,
    "sync": 7,
    "deepcontext": 7,  # the package's lazy re-exports of the facade
    "cli": 8,
    "server": 8,
    "chat": 8,
    "compat": 8,
    "demo": 8,
    "__main__": 8,
}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _owner(name: str) -> str | None:
    """The module of ``name`` (an attribute of a module is an edge to that module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, source: str | None = None) -> set[str]:
    """The package's modules that ``module`` (or ``source`` read as that module) imports at run time."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            add(node)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            for stmt in node.orelse:  # only the ``else:`` of TYPE_CHECKING runs
                visit(stmt)
        else:
            for child in ast.iter_child_nodes(node):
                visit(child)

    def add(node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "deepcontext" and (owner := _owner(alias.name)):
                    found.add(owner)
            return
        if node.level:
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] != "deepcontext":
            return
        for alias in node.names:
            owner = f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else _owner(target)
            if owner:
                found.add(owner)

    visit(ast.parse(path.read_text(encoding="utf-8") if source is None else source, filename=str(path)))
    found.discard(module)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def _layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else parts[0]
    assert top in LAYERS, f"{module}: add its package {top!r} to LAYERS"
    return LAYERS[top]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_walker_sees_every_kind_of_import() -> None:
    # module level, inside a function, ``from pkg import submodule``, TYPE_CHECKING left out
    assert "deepcontext.store.migrations" in GRAPH["deepcontext.store.sql"]
    assert "deepcontext.services.validation" in GRAPH["deepcontext.dialogue.sqlstore"]
    assert "deepcontext.dialogue.turnmap" in GRAPH["deepcontext.dialogue.sqlstore"]
    assert "deepcontext.dialogue" not in GRAPH["deepcontext.dialogue.sqlstore"]
    assert "deepcontext.store.sql" not in GRAPH["deepcontext.store.sql_add"]


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle() -> None:
    cycles = _cycles(GRAPH)
    described = [" <-> ".join(c) for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(described)


def test_no_layer_imports_upward() -> None:
    upward = sorted(
        f"{m} ({_layer(m)}) imports {t} ({_layer(t)})" for m, targets in GRAPH.items() for t in targets if _layer(t) > _layer(m)
    )
    assert not upward, "upward imports:\n" + "\n".join(upward)


#: sibling packages of one layer that must not import each other
SIBLINGS_APART = [("retrieve", "extract"), ("extract", "retrieve")]


@pytest.mark.parametrize(("importer", "imported"), SIBLINGS_APART)
def test_retrieval_and_extraction_share_only_the_language_layer(importer: str, imported: str) -> None:
    found = sorted(
        f"{m} imports {t}"
        for m, targets in GRAPH.items()
        if m.split(".")[1:2] == [importer]
        for t in targets
        if t.split(".")[1:2] == [imported]
    )
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("language", "extract"),
        ("language", "retrieve"),
        ("store", "server"),
        ("store", "cli"),
        ("store", "core"),
        *[(lo, hi) for lo in ("store", "embed", "llm") for hi in ("services", "retrieve", "context", "dialogue", "lifecycle")],
    ],
)
def test_layer_order(low: str, high: str) -> None:
    assert LAYERS[low] < LAYERS[high]


# --- the store's one door ------------------------------------------------------------------------------

#: what code outside ``store/`` may import of the store: the package and its interface
STORE_DOOR = {"deepcontext.store", "deepcontext.store.interface"}


def _imports_sqlalchemy(source: str) -> bool:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        if any(n == "sqlalchemy" or n.startswith("sqlalchemy.") for n in names):
            return True
    return False


def _through_other_doors(module: str, source: str | None = None) -> list[str]:
    """What ``module`` (outside store/; or ``source`` read as it) imports of the store besides its
    door, and SQLAlchemy."""
    targets = GRAPH[module] if source is None else imports_of(module, source)
    found = sorted(t for t in targets if t.startswith("deepcontext.store") and t not in STORE_DOOR)
    text = MODULES[module].read_text(encoding="utf-8") if source is None else source
    return found + (["sqlalchemy"] if _imports_sqlalchemy(text) else [])


OUTSIDE_STORE = [m for m in MODULES if not (m == "deepcontext.store" or m.startswith("deepcontext.store."))]


def test_only_the_store_speaks_sql() -> None:
    found = {m: doors for m in OUTSIDE_STORE if (doors := _through_other_doors(m))}
    assert not found, "outside store/, import only deepcontext.store or deepcontext.store.interface:\n" + "\n".join(
        f"{m}: {', '.join(d)}" for m, d in sorted(found.items())
    )


# --- the benchmark harness lives apart ------------------------------------------------------------

#: the engine's modules that may import the harness (``deepcontext_bench``, beside the package): the
#: ``deepcontext bench`` commands, which load it when run
HARNESS_USERS = re.compile(r"deepcontext\.cli\.bench(_\w+)?$")


def _imports_harness(source: str) -> bool:
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        if any(n.split(".")[0] == "deepcontext_bench" for n in names):
            return True
    return False


def test_only_the_bench_commands_import_the_harness() -> None:
    found = sorted(m for m, path in MODULES.items() if _imports_harness(path.read_text(encoding="utf-8")))
    assert found and all(HARNESS_USERS.match(m) for m in found), found
    assert _imports_harness("def f():\n    from deepcontext_bench.report import markdown_table\n")
    assert not _imports_harness("from deepcontext.store import Store\n")


def test_the_door_check_sees_sql_and_store_internals() -> None:
    module = "deepcontext.services.updates"
    assert _through_other_doors(module) == []  # it imports through deepcontext.store
    assert _through_other_doors(module, "from sqlalchemy.sql import select\n") == ["sqlalchemy"]
    assert _through_other_doors(module, "def f():\n    from deepcontext.store.sql import SQLStore\n") == ["deepcontext.store.sql"]
    assert _through_other_doors(module, "from deepcontext.store import lifecycle\n") == ["deepcontext.store.lifecycle"]
    assert _through_other_doors(module, "import deepcontext.store.schema\n") == ["deepcontext.store.schema"]
    assert _through_other_doors(module, "from deepcontext.store import Store, open_store\n") == []


def _status_writes(source: str) -> int:
    """Statements setting a memory's status: ``status=MemoryStatus.X.value`` as a keyword or a
    ``"status"`` key (comparisons and filters do not count)."""
    tree = ast.parse(source)
    found = 0
    for node in ast.walk(tree):
        pairs: list[tuple[str | None, ast.expr]] = []
        if isinstance(node, ast.Call):
            pairs += [(k.arg, k.value) for k in node.keywords]
        if isinstance(node, ast.Dict):
            pairs += [(k.value if isinstance(k, ast.Constant) else None, v) for k, v in zip(node.keys, node.values, strict=True)]
        found += sum(1 for key, value in pairs if key == "status" and "MemoryStatus." in ast.unparse(value))
    return found


#: the memory writer's modules: :class:`MemoryWriter` and its base of row changes
WRITER_MODULES = ["store/sql_row_changes.py", "store/sql_writes.py"]


def _modules_with(count: Callable[[str], int]) -> dict[str, int]:
    """The package's modules (paths under it) where ``count`` finds something, with its count."""
    return {f.relative_to(PACKAGE).as_posix(): n for f in PACKAGE.rglob("*.py") if (n := count(f.read_text(encoding="utf-8")))}


def test_one_writer_changes_a_memorys_status() -> None:
    """A memory's status changes in one place, which writes the status, the times, the revision and
    the history entry together: :class:`MemoryWriter` (``store/sql_writes.py`` and its base in
    ``store/sql_row_changes.py``: new rows, delete, supersede, merge, decay, restore)."""
    writers = _modules_with(_status_writes)
    assert sorted(writers) == WRITER_MODULES, writers


def test_the_status_check_sees_both_spellings() -> None:
    assert _status_writes("update(t).values(status=MemoryStatus.DELETED.value)") == 1
    assert _status_writes('rows = [{"status": MemoryStatus.MERGED.value}]') == 1
    assert _status_writes("select(t).where(t.c.status == MemoryStatus.DELETED.value)") == 0


def _memory_row_statements(source: str) -> int:
    """``insert``, ``update`` and ``delete`` statements on the memories table (``mt`` or
    ``....memories``), the way the store spells them."""
    found = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("insert", "update", "delete"):
            target = ast.unparse(node.args[0]) if node.args else ""
            found += target == "mt" or target.endswith(".memories")
    return found


def test_one_writer_writes_memory_rows() -> None:
    """Every insert, update and delete of memory rows is a method of :class:`MemoryWriter`."""
    writers = _modules_with(_memory_row_statements)
    assert sorted(writers) == WRITER_MODULES, writers


def test_the_row_check_sees_the_store_spellings() -> None:
    assert _memory_row_statements("conn.execute(update(mt).where(mt.c.id == 1).values(x=1))") == 1
    assert _memory_row_statements("conn.execute(delete(store.t.memories).where(x))") == 1
    assert _memory_row_statements("conn.execute(insert(t.memory_history), rows)") == 0


#: a SQL store and the backends built on it; every other module of store/ named sql_*, sqlite_* or
#: postgres_* is one of their repositories
OWNING_STORES = {"deepcontext.store.sql", "deepcontext.store.sqlite", "deepcontext.store.postgres"}
REPOSITORIES = sorted(
    m for m in MODULES if m.startswith(("deepcontext.store.sql_", "deepcontext.store.sqlite_", "deepcontext.store.postgres_"))
)


def _every_import(module: str) -> set[str]:
    """The package modules ``module`` names in any import, for type checking only too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_no_repository_imports_the_store_that_owns_it() -> None:
    assert len(REPOSITORIES) >= 15  # the check sees them
    found = {m: sorted(_every_import(m) & OWNING_STORES) for m in REPOSITORIES}
    assert not {m: s for m, s in found.items() if s}, (
        "a repository takes its store as a narrow protocol (deepcontext.store.repository), never the store class"
    )
    assert _every_import("deepcontext.store.sqlite") & OWNING_STORES == {"deepcontext.store.sql"}  # the walker sees imports
