"""The package boundaries: each package is used through its public names (or a private module
`SHARED_PRIVATE` declares), and nothing cycles.

Read from the source with ``ast``, so an import inside a function or under ``TYPE_CHECKING``
counts as much as one at the top of a module. Why these rules: docs/pages/design/import-layers.md.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
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


def _imports(tree: ast.AST, module: str = "") -> Iterator[tuple[int, str]]:
    """The modules ``module``'s code imports: ``from a.b import c`` imports ``a.b``, and
    ``a.b.c`` too when that is a module; a relative import is read from ``module``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            if base:
                yield node.lineno, base
            for alias in node.names:
                if f"{base}.{alias.name}" in SOURCES:
                    yield node.lineno, f"{base}.{alias.name}"
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)


def _write(folder: Path, code: str) -> Path:
    path = folder / "x.py"
    path.write_text(code, encoding="utf-8")
    return path


#: The private modules another package may import, each with the packages that may and why:
#: plumbing no user calls (so not exported) that cannot leave its owner and has no home in
#: the root layer; docs/pages/design/public-and-internal-names.md. Checked both ways: an
#: import of another package's private module not listed here fails, and so does an entry
#: no import uses any more. Keep it to real dependencies.
SHARED_PRIVATE: dict[str, set[str]] = {
    # The run writes a run's rows through the store's writers (their locks, staging, recovery
    # and DuckLake retries) and reads back what resuming and judging a run need:
    "evalkit.store._writer": {"evalkit.run"},  # StoreWriter and its records
    "evalkit.store._shard_writer": {"evalkit.run"},  # a shard job's writer
    "evalkit.store._arrow": {"evalkit.run"},  # the Arrow schemas of the rows it builds
    "evalkit.store._lake": {"evalkit.run"},  # prepare_store: a new lake's data path
    "evalkit.store._lake_merge": {"evalkit.run"},  # a lake run's finished slices merged
    "evalkit.store._merge": {"evalkit.run"},  # merge_stores, behind merge_shard_stores
    "evalkit.store._read": {"evalkit.run"},  # read_run_counts: the counts a verdict needs
    "evalkit.store._stored": {"evalkit.run"},  # the resume readers
    "evalkit.store._verdicts": {"evalkit.run"},  # record_verdict, GateRecord
    "evalkit.store._connect": {"evalkit.agreement"},  # retry_busy: its table's writer retries
    "evalkit.store._read_only": {"evalkit.cli"},  # query_failed: evalkit sql's error
    "evalkit.store._pins": {"evalkit.compare"},  # pin_baseline: pin_run checks, then pins
    # A run's labels and agreement gates are checked, kept and measured by the agreement
    # package's own code; the run, the experiment file and compare check them the same way:
    "evalkit.agreement._labels": {"evalkit.compare", "evalkit.experiment_file", "evalkit.run"},
    "evalkit.agreement._gate": {"evalkit.report", "evalkit.run"},  # the gates and reasons
    "evalkit.agreement._record": {"evalkit.run"},  # a run's scorers measured as it runs
    "evalkit.agreement._table": {"evalkit.run"},  # LabeledScores, what measure_labels reads
    "evalkit.agreement._merged": {"evalkit.run"},  # a merged run measured again
    "evalkit.agreement._measure": {"evalkit.compare"},  # resolve_kind, for compare_judges
    # A sharded run's workers: the judge cache read-only and a share of each rate limit.
    "evalkit.judge._cache": {"evalkit.run"},  # WorkerCache, store_entries
    "evalkit.judge.policy._registry": {"evalkit.run"},  # use_rate_share
    # OpenAITarget calls the model as a judge does: the shared client, then one completion
    # under the judge's retries, rate limit and breaker (types no user handles).
    "evalkit.judge.transport._clients": {"evalkit.target"},  # openai_client_for
    "evalkit.judge.policy._call": {"evalkit.target"},  # chat_completion
    "evalkit.scorer._limits": {"evalkit.run"},  # StepWatchdog: the run times its steps
    "evalkit.scorer._steps": {"evalkit.scorers"},  # bind_callable: the prebuilt steps' binding
    # What the command line and the pytest plugin print, and the verdict they record:
    "evalkit.report._text": {"evalkit.cli", "evalkit.pytest_plugin"},  # console_table, …
    "evalkit.report._agreement": {"evalkit.cli"},  # agreement_views: evalkit compare --judges
    "evalkit.run._verdict_record": {"evalkit.experiment_file"},  # record_run_verdict
}


def _crossings(
    module: str, path: Path, shared: Mapping[str, set[str]] = SHARED_PRIVATE
) -> list[str]:
    """The imports in ``module`` of another package's private module that ``shared`` does
    not allow."""
    own = _package_of(module)
    if own == "evalkit":  # a root module (evalkit.errors, the root's init, the docs hooks)
        own = module
    found = []
    for line, target in _imports(ast.parse(path.read_text(encoding="utf-8")), module):
        if not target.startswith("evalkit."):
            continue
        owner = _private_part(target)
        # A private module of the root package (evalkit._json) is shared by every package.
        if owner is None or owner == "evalkit" or (own != "evalkit" and _within(owner, own)):
            continue
        if own in shared.get(target, set()):
            continue
        found.append(f"{path.name}:{line}: {target}")
    return sorted(found)


def _shared_uses() -> dict[str, set[str]]:
    """Each private module another package imports, with the packages that import it."""
    uses: dict[str, set[str]] = {}
    for module, path in SOURCES.items():
        for crossing in _crossings(module, path, shared={}):
            uses.setdefault(crossing.rsplit(": ", 1)[1], set()).add(_package_of(module))
    return uses


def _stale(shared: Mapping[str, set[str]], uses: Mapping[str, set[str]]) -> list[str]:
    """The entries of ``shared`` (as ``module <- package``) that no import uses."""
    return sorted(
        f"{module} <- {package}"
        for module, packages in shared.items()
        for package in packages - uses.get(module, set())
    )


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


#: A package's module lending evalkit's other packages what no user calls: there is none any
#: more; docs/pages/design/public-and-internal-names.md.
SEAM = "_internal"
SEAMS = sorted(name for name in SOURCES if name.rsplit(".", 1)[-1] == SEAM)
#: The internal layer: the root package's private modules (evalkit/_json.py, evalkit/_sql.py),
#: shared by every package (__main__.py aside, the command's entry).
INTERNAL_LAYER = sorted(
    name
    for name in SOURCES
    if name.count(".") == 1
    and name.split(".")[1].startswith("_")
    and "__" not in name
    # The console script's entry: above the CLI it starts, shared by nothing.
    and name != "evalkit._console"
)


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
    assert _crossings("evalkit.run._x", _write(tmp_path, code), shared={}) == [
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
    # A private module imported by name from its package, or relatively (review of 9a462b2).
    code = (
        "from evalkit.store import _writer\nfrom evalkit.store import _writer as w\n"
        "from ..store._writer import StoreWriter\nfrom ..report import _text\n"
    )
    assert _crossings("evalkit.view._x", _write(tmp_path, code), shared={}) == [
        "x.py:1: evalkit.store._writer",
        "x.py:2: evalkit.store._writer",
        "x.py:3: evalkit.store._writer",
        "x.py:4: evalkit.report._text",
    ]
    # A root module (the errors module, the root's init, the docs hooks) is no package's.
    code = "def f():\n    from evalkit.scorer._steps import bind_callable\n"
    for root_module in ("evalkit.errors", "evalkit", "docs.hooks"):
        assert _crossings(root_module, _write(tmp_path, code), shared={}) == [
            "x.py:2: evalkit.scorer._steps"
        ]


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_no_module_imports_another_packages_private_module(module: str) -> None:
    """A package's ``_internal`` module is as private as any other: another package imports
    none; another private module only as `SHARED_PRIVATE` allows."""
    assert _crossings(module, SOURCES[module]) == []


def test_the_shared_private_rule_sees_a_stray_import_and_a_stale_entry(tmp_path: Path) -> None:
    shared = {"evalkit.store._writer": {"evalkit.run", "evalkit.view"}}
    code = "def f():\n    from evalkit.store._writer import StoreWriter\n"
    assert _crossings("evalkit.run._x", _write(tmp_path, code), shared) == []
    assert _crossings("evalkit.compare._x", _write(tmp_path, code), shared) == [
        "x.py:2: evalkit.store._writer"
    ]  # not a package the table lets import it
    uses = {"evalkit.store._writer": {"evalkit.run"}}
    assert _stale(shared, uses) == ["evalkit.store._writer <- evalkit.view"]
    assert _stale(shared, {}) == [
        "evalkit.store._writer <- evalkit.run",
        "evalkit.store._writer <- evalkit.view",
    ]


def test_the_shared_private_table_lists_only_what_is_imported() -> None:
    """Every entry of `SHARED_PRIVATE` is a private module of another package that each
    package it names still imports: an entry no longer used goes."""
    for module, packages in SHARED_PRIVATE.items():
        assert module in SOURCES, f"{module}: no such module"
        owner = _private_part(module)
        assert owner not in (None, "evalkit"), f"{module} is not a package's private module"
        assert not any(_within(owner, package) for package in packages), module
    assert _stale(SHARED_PRIVATE, _shared_uses()) == []


def test_no_package_lends_through_an_internal_module() -> None:
    """Counted over evalkit/ as a reviewer counts them: 99 imports of another package's
    ``_internal`` module before (eight seams), none after."""
    found = [c for module, path in SOURCES.items() for c in _crossings(module, path)]
    assert found == []
    assert SEAMS == [], "a package lends through an _internal module again"


def test_the_docs_hooks_use_public_names_only() -> None:
    assert _crossings("docs.hooks", DOCS_HOOKS) == []
    assert _private_names("docs.hooks", ast.parse(DOCS_HOOKS.read_text(encoding="utf-8"))) == []


def _private_names(module: str, tree: ast.AST) -> list[str]:
    """The ``_underscore`` names ``module`` imports from other modules, as ``LINE: module.name``.

    A module's underscore names are private to it, in its own package too: a name two modules
    share loses its underscore, or the code moves to where it is used. Importing a ``_private``
    module (``from evalkit.judge import _batch_db``) is the package rule's business, not this one.
    """
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (target := _absolute(module, node)).startswith(
            "evalkit"
        ):
            found += [
                f"{node.lineno}: {target}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_")
                and not alias.name.startswith("__")
                and f"{target}.{alias.name}" not in SOURCES
            ]
    return found


def test_the_private_name_check_sees_what_it_must() -> None:
    code = (
        "from evalkit.agreement._arguments import LabelKind, _snap\n"
        "from evalkit.judge import _batch_db\nfrom evalkit._lazy import exports as _exports\n"
        "def f():\n    from ._compare import _EMPTY\n"
    )
    assert _private_names("evalkit.compare._slices", ast.parse(code)) == [
        "1: evalkit.agreement._arguments._snap",
        "5: evalkit.compare._compare._EMPTY",
    ]


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_no_module_imports_another_modules_private_name(module: str) -> None:
    tree = ast.parse(SOURCES[module].read_text(encoding="utf-8"))
    assert _private_names(module, tree) == []


#: The command's entry points, the only modules outside ``evalkit.cli`` that may import it.
CLI_ENTRY_POINTS = {"evalkit.__main__", "evalkit._console"}


def _imports_of_the_cli(module: str, path: Path) -> list[str]:
    """The imports of ``evalkit.cli`` (or a module of it) in ``module``, at any level."""
    if _within(module, "evalkit.cli") or module in CLI_ENTRY_POINTS:
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.name}:{line}: {target}"
        for line, target in _imports(tree, module)
        if _within(target, "evalkit.cli")
    ]


def test_the_cli_check_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    code = "def f():\n    from evalkit.cli import run_experiment_file\n"
    found = _imports_of_the_cli("evalkit.pytest_plugin._outcome", _write(tmp_path, code))
    assert found == ["x.py:2: evalkit.cli"]
    assert _imports_of_the_cli("evalkit.cli._run", _write(tmp_path, code)) == []


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_only_the_entry_points_import_the_cli(module: str) -> None:
    """Library work lives in the library: the pytest plugin and every other package call the
    public functions the CLI calls (``evalkit.experiment_file.run_experiment_file``), never
    the CLI itself."""
    assert _imports_of_the_cli(module, SOURCES[module]) == []


def test_lazy_export_maps_point_into_their_own_package_or_at_public_names() -> None:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for module in set(getattr(package, "_LAZY_EXPORTS", {}).values()):
            owner = _private_part(module)
            assert owner is None or _within(owner, name), f"{name} re-exports from {module}"


def test_the_crossing_check_sees_an_import_of_another_packages_internal_module(
    tmp_path: Path,
) -> None:
    code = (
        "from evalkit.judge._internal import OutputSpec\n"
        "def f():\n    from evalkit.store._internal import connection\n"
        "from evalkit.judge.policy._internal import y\n"
        "from evalkit._internal import z\nfrom evalkit.scorer._internal import w\n"
    )
    assert _crossings("evalkit.scorer._prompt", _write(tmp_path, code)) == [
        "x.py:1: evalkit.judge._internal",
        "x.py:3: evalkit.store._internal",
        "x.py:4: evalkit.judge.policy._internal",
    ]  # the root's private modules are the layer below; the scorer's are its own


def test_the_internal_layer_imports_no_package() -> None:
    """The root's private modules sit below every package: they import only each other and
    evalkit.errors (at any level, functions and TYPE_CHECKING blocks included), so any
    package can use them without a cycle."""
    assert INTERNAL_LAYER, "the root's private modules"
    allowed = {*INTERNAL_LAYER, "evalkit.errors"}
    found = [
        f"{module}:{line}: {target}"
        for module in INTERNAL_LAYER
        for line, target in _imports(ast.parse(SOURCES[module].read_text(encoding="utf-8")), module)
        if target.startswith("evalkit.") and target not in allowed
    ]
    assert found == []


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
        if name.startswith("pytest_") or type(value).__module__ == "_pytest.fixtures":
            continue  # the pytest plugin's hooks and fixtures: pytest finds them by attribute
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


def _lazy_maps() -> dict[str, dict[str, str]]:
    """Each lazy package's map of name -> the module that defines it (``evalkit._lazy.exports``).

    Read from the package itself (``_LAZY_EXPORTS``), the map its ``__getattr__`` uses, rather
    than parsed: a package may build it (``evalkit.scorers`` adds its families). Importing a lazy
    package's ``__init__`` imports nothing else. A package's ``_internal`` module is lazy too.
    """
    return {
        name: dict(getattr(importlib.import_module(name), "_LAZY_EXPORTS", {}))
        for name in [*PACKAGES, *SEAMS]
    }


LAZY = _lazy_maps()


def _home(package: str, name: str) -> str:
    """The module that ``from package import name`` runs: a submodule, the module a lazy map
    names (followed through lazy packages re-exporting lazy packages), or the package."""
    if f"{package}.{name}" in SOURCES:
        return f"{package}.{name}"
    while (module := LAZY.get(package, {}).get(name)) is not None and module != package:
        package = module
    return package


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if module in PACKAGES else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _loads(module: str, target: str) -> list[str]:
    """The packages whose ``__init__`` importing ``target`` runs first and that import their
    modules as they load (not lazily), except ``module``'s own; a lazy package's ``__init__``
    imports only ``evalkit._lazy`` (and leaves of its own) as it loads."""
    parts = target.split(".")
    ancestors = (".".join(parts[:i]) for i in range(1, len(parts)))
    return [p for p in ancestors if p in SOURCES and not LAZY[p] and not _within(module, p)]


def _edges(module: str, tree: ast.AST) -> dict[str, int]:
    """The evalkit modules ``module`` imports, each with the line of its first import: every
    import in the file (in functions and under ``TYPE_CHECKING`` too), the packages it runs on
    the way that import their modules eagerly, and for a lazy package every module its lazy map
    names (reading the name imports it)."""
    found: list[tuple[str, int]] = [(_home(module, name), 0) for name in LAZY.get(module, {})]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names if alias.name in SOURCES]
        elif isinstance(node, ast.ImportFrom) and (target := _absolute(module, node)) in SOURCES:
            found += [(_home(target, alias.name), node.lineno) for alias in node.names]
    found += [(package, line) for target, line in found for package in _loads(module, target)]
    edges: dict[str, int] = {}
    for target, line in found:  # line 0: the lazy map
        edges[target] = min(edges.get(target, line), line)
    edges.pop(module, None)
    return edges


def _graph() -> dict[str, dict[str, int]]:
    """The import graph of evalkit's modules (see `_edges`)."""
    return {
        module: _edges(module, ast.parse(path.read_text(encoding="utf-8")))
        for module, path in SOURCES.items()
    }


def _layer(module: str) -> str:
    """The node of ``module`` in the package graph: its top-level package (``evalkit.judge`` for
    ``evalkit.judge.policy._call``); a module of the root package (``evalkit.errors``) and the
    root's ``__init__`` (``evalkit``, which re-exports from every package) stand alone."""
    return _package_of(module) if module.count(".") > 1 or module in PACKAGES else module


def _collapse(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``graph`` with each module replaced by its `_layer`."""
    layers: dict[str, dict[str, int]] = {}
    for module, edges in graph.items():
        mine = layers.setdefault(_layer(module), {})
        for target in edges:
            if _layer(target) != _layer(module):
                mine[_layer(target)] = 0
    return layers


def _show(
    graph: dict[str, dict[str, int]], cycles: list[list[str]], layer: Callable[[str], str] = str
) -> list[str]:
    """Each cycle as the module imports that make it, ``a:LINE -> b`` (line 0: a lazy map), for
    the failure message; ``layer`` maps a module to its node in the cycles' graph."""
    shown = []
    for cycle in cycles:
        first: dict[tuple[str, str], str] = {}  # one import for each pair of nodes
        for a in sorted(graph):
            for b, line in sorted(graph[a].items()):
                pair = (layer(a), layer(b))
                if pair[0] != pair[1] and set(pair) <= set(cycle):
                    first.setdefault(pair, f"{a}:{line} -> {b}")
        shown.append(", ".join(first[pair] for pair in sorted(first)))
    return shown


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
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


def test_the_graph_sees_every_import_and_the_lazy_maps() -> None:
    code = (
        "from typing import TYPE_CHECKING\n"
        "from evalkit.errors import ConfigError\n"
        "if TYPE_CHECKING:\n    from evalkit.scorer import ScorerRunResult\n"
        "def f():\n    from evalkit import run_evals\n    import evalkit.store._connect\n"
        "    from evalkit.judge import policy\n"
        "from evalkit.scorer import _result\n"
    )
    assert _edges("evalkit.x", ast.parse(code)) == {
        "evalkit.errors": 2,
        "evalkit.scorer._result": 4,
        "evalkit.run._api": 6,
        "evalkit.store._connect": 7,
        "evalkit.judge.policy": 8,
    }
    assert _edges("evalkit.run._x", ast.parse("from . import _api\nfrom ._api import a")) == {
        "evalkit.run._api": 1
    }
    # The pytest plugin is the one package whose init imports as it loads (pytest).
    eager = "from evalkit.pytest_plugin._outcome import EvalOutcome"
    assert _edges("evalkit.run._x", ast.parse(eager)) == {
        "evalkit.pytest_plugin._outcome": 1,
        "evalkit.pytest_plugin": 1,
    }
    assert _edges("evalkit.pytest_plugin._x", ast.parse(eager)) == {
        "evalkit.pytest_plugin._outcome": 1
    }
    for package in (name for name in PACKAGES if LAZY[name]):  # what _loads takes for granted
        loaded = ast.parse(SOURCES[package].read_text(encoding="utf-8")).body
        names = {a.name for n in loaded if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in loaded if isinstance(n, ast.ImportFrom) and n.module}
        assert names <= {"__future__", "typing", "evalkit._lazy", f"{package}._families"}
    store = _edges("evalkit.store", ast.parse(""))
    assert "evalkit.store._read" in store
    assert set(store.values()) == {0}
    assert _layer("evalkit.judge.policy._call") == "evalkit.judge"
    assert _layer("evalkit.judge") == "evalkit.judge"
    assert (_layer("evalkit.errors"), _layer("evalkit")) == ("evalkit.errors", "evalkit")
    graph = {"evalkit": {"evalkit.a._x": 0}, "evalkit.a._x": {"evalkit.errors": 1}}
    graph |= {"evalkit.errors": {}, "evalkit.a": {}}
    assert _cycles(_collapse(graph)) == []
    graph["evalkit.errors"] = {"evalkit.a": 0}  # a lazy map (line 0) closes the cycle
    assert _cycles(_collapse(graph)) == [["evalkit.a", "evalkit.errors"]]
    assert _show(graph, [["evalkit.a", "evalkit.errors"]], _layer) == [
        "evalkit.a._x:1 -> evalkit.errors, evalkit.errors:0 -> evalkit.a"
    ]


def test_no_import_cycle_between_modules() -> None:
    """Counting every import, lazy ones included: a cycle hidden in a function is a cycle."""
    graph = _graph()
    assert _show(graph, _cycles(graph)) == []


def test_no_import_cycle_between_packages() -> None:
    """The packages form layers (dataset, target, scorer and judge, run, store, report and
    compare, cli): no package imports, however indirectly, one that imports it."""
    graph = _graph()
    assert _show(graph, _cycles(_collapse(graph)), _layer) == []
