"""The package boundaries: each package is used through its public names, and nothing cycles.

Read from the source with ``ast``, so an import inside a function or under ``TYPE_CHECKING``
counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import evalkit

ROOT = Path(evalkit.__file__).parent
DOCS_HOOKS = ROOT.parent / "docs" / "hooks.py"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
PACKAGES = sorted(name for name, path in SOURCES.items() if path.name == "__init__.py")


def _package_of(module: str) -> str:
    """The top-level package a module belongs to (``evalkit`` for ``evalkit/errors.py``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in PACKAGES else "evalkit"


def _private_part(module: str) -> str | None:
    """The package part of ``module`` before its first ``_private`` segment, if any."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and i > 0:
            return ".".join(parts[:i])
    return None


def _imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)


def _write(folder: Path, code: str) -> Path:
    path = folder / "x.py"
    path.write_text(code, encoding="utf-8")
    return path


def _crossings(module: str, path: Path) -> list[str]:
    own = _package_of(module)
    found = []
    for line, target in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if not target.startswith("evalkit."):
            continue
        owner = _private_part(target)
        # A private module of the root package (evalkit._json) is shared by every package.
        if owner is None or owner == "evalkit" or _within(owner, own):
            continue
        found.append(f"{path.name}:{line}: {target}")
    return sorted(found)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_crossing_check_sees_what_it_must(tmp_path: Path) -> None:
    code = (
        "from evalkit.store._writer import StoreWriter\n"
        "def f():\n    from evalkit.dataset._item import Item\n"
        "import evalkit.judge._ask\nfrom evalkit._json import dumps\nfrom evalkit.store import x\n"
    )
    assert sorted(target for _, target in _imports(ast.parse(code))) == [
        "evalkit._json",
        "evalkit.dataset._item",
        "evalkit.judge._ask",
        "evalkit.store",
        "evalkit.store._writer",
    ]
    assert _crossings("evalkit.run._x", _write(tmp_path, code)) == [
        "x.py:1: evalkit.store._writer",
        "x.py:3: evalkit.dataset._item",
        "x.py:4: evalkit.judge._ask",
    ]
    assert _private_part("evalkit.judge.policy._call") == "evalkit.judge.policy"
    assert _private_part("evalkit._json") == "evalkit"
    assert _private_part("evalkit.store") is None
    assert _package_of("evalkit.judge.policy._call") == "evalkit.judge"
    assert _package_of("evalkit.errors") == "evalkit"
    assert _crossings(
        "evalkit.scorers._x", _write(tmp_path, "from evalkit.scorer._a import b")
    ) == ["x.py:1: evalkit.scorer._a"]


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_no_module_imports_another_packages_private_module(module: str) -> None:
    assert _crossings(module, SOURCES[module]) == []


def test_the_docs_hooks_use_public_names_only() -> None:
    assert _crossings("docs.hooks", DOCS_HOOKS) == []


def test_lazy_export_maps_point_into_their_own_package_or_at_public_names() -> None:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for module in set(getattr(package, "_LAZY_EXPORTS", {}).values()):
            owner = _private_part(module)
            assert owner is None or _within(owner, name), f"{name} re-exports from {module}"


def _load_all(package: ModuleType) -> None:
    for export in package.__all__:  # the lazy packages import their names on first read
        getattr(package, export)


def _defines(package: ModuleType) -> set[str]:
    """The public evalkit classes, functions and constants a package's namespace holds."""
    names = set()
    for name, value in vars(package).items():
        if name.startswith("_") or inspect.ismodule(value) or name in {"annotations"}:
            continue
        home = getattr(value, "__module__", None)
        if (inspect.isclass(value) or inspect.isfunction(value)) and not (home or "").startswith(
            "evalkit"
        ):
            continue  # e.g. TYPE_CHECKING helpers imported from typing
        if name == "TYPE_CHECKING":
            continue
        names.add(name)
    return names


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_exports_exactly_its_all(name: str) -> None:
    package = importlib.import_module(name)
    exported = package.__all__
    assert len(exported) == len(set(exported)), f"{name}.__all__ repeats a name"
    lazy = getattr(package, "_LAZY_EXPORTS", None)
    if lazy is not None:
        assert set(lazy) == set(exported)
    _load_all(package)
    missing = [export for export in exported if not hasattr(package, export)]
    assert missing == []
    unlisted = _defines(package) - set(exported) - {"__version__"}
    assert unlisted == set(), f"{name} holds public names missing from __all__"
    for export in exported:
        value = getattr(package, export)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{export} has no docstring"


def _graph() -> dict[str, set[str]]:
    """Module-level imports between evalkit modules (not under TYPE_CHECKING, not in functions).

    ``from evalkit.pkg import Name`` of a lazy package imports the module that defines Name
    right away, so the edge goes there.
    """
    graph: dict[str, set[str]] = {}
    for module, path in SOURCES.items():
        edges = graph.setdefault(module, set())
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in SOURCES)
            elif isinstance(node, ast.ImportFrom) and node.module in SOURCES and not node.level:
                target = node.module
                lazy = getattr(importlib.import_module(target), "_LAZY_EXPORTS", {})
                for alias in node.names:
                    submodule = f"{target}.{alias.name}"
                    edges.add(submodule if submodule in SOURCES else lazy.get(alias.name, target))
        edges.discard(module)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_level_import_cycle() -> None:
    assert _cycles(_graph()) == []


MAX_MODULE_LINES = 400


def test_no_module_is_over_400_lines() -> None:
    """A module that outgrows this is split by responsibility (see docs/pages/development.md)."""
    long = {
        name: lines
        for name, path in SOURCES.items()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
