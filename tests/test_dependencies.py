"""pyproject.toml declares what evalkit imports: every third-party module that a module of
``evalkit/`` imports comes from a distribution named in ``[project] dependencies``, or, for
the optional features, in the extra that provides it; and every module imports in an install
without the extras. ``.ci/run``'s lowest-direct step (``tests/smoke.txt``) runs the import test
and the floors check below against the lowest releases that pyproject.toml allows.

Issue 31: the judge imported ``httpx2`` (openai 3's transport) while pyproject.toml allowed
openai 1.80, which uses ``httpx``; ``aiohttp`` and ``markupsafe`` were imported and not
declared. Each worked only because something else happened to install it."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import pkgutil
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import evalkit
from evalkit.scorers import list_scorers

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evalkit"

#: Third-party modules that only an optional feature imports (inside the function that needs
#: it, so the base install imports every module), and the extra that installs each.
OPTIONAL = {
    "datasets": "hf",
    "nltk": "nlp",
    "ray": "ray",
    "rouge_score": "nlp",
    "sacrebleu": "nlp",
    "vaderSentiment": "nlp",
}
#: Modules that one part of evalkit imports without declaring them, and why that is right.
UNDECLARED = {
    # The pytest plugin is loaded by pytest itself (the pytest11 entry point), never by a run.
    ("evalkit/pytest_plugin/", "pytest"),
    # The judge verifies certificates with certifi's bundle when it is installed (httpx2
    # installs it) and with the system's otherwise, as the official client does.
    ("evalkit/judge/transport/_http.py", "certifi"),
}


def _name(requirement: str) -> str:
    """The normalized distribution name of a PEP 508 requirement (``openai[aiohttp]>=3.0``)."""
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert name, requirement
    return _normalize(name.group())


def _normalize(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(r) for r in project["dependencies"]}
    extras = {
        extra: {_name(r) for r in requirements}
        for extra, requirements in project["optional-dependencies"].items()
    }
    return base, extras


class _Imports(ast.NodeVisitor):
    """The top-level names of the modules a source file imports, wherever the import is (in a
    function, under ``try``: an optional import still needs its extra declared)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Import(self, node: ast.Import) -> None:
        self.found.update(alias.name.partition(".")[0] for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.found.add(node.module.partition(".")[0])

    def visit_Call(self, node: ast.Call) -> None:
        # importlib.import_module("datasets"): an import by name is still an import.
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called == "import_module" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                self.found.add(first.value.partition(".")[0])
        self.generic_visit(node)


def _third_party_imports() -> Iterator[tuple[str, str]]:
    """(file, top-level module) for each third-party import of each module of evalkit."""
    for path in sorted(PACKAGE.rglob("*.py")):
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for module in sorted(visitor.found):
            if module not in sys.stdlib_module_names and module not in {"evalkit", "__future__"}:
                yield path.relative_to(ROOT).as_posix(), module


def test_every_import_is_declared() -> None:
    base, extras = _declared()
    installed = importlib.metadata.packages_distributions()
    problems = []
    for file, module in _third_party_imports():
        if any(file.startswith(part) and module == name for part, name in UNDECLARED):
            continue
        distributions = {_normalize(d) for d in installed.get(module, [])}
        if not distributions:
            problems.append(f"{file} imports {module}, which no installed distribution provides")
            continue
        extra = OPTIONAL.get(module)
        allowed = extras.get(extra, set()) if extra else base
        where_declared = f"the {extra!r} extra" if extra else "[project] dependencies"
        if not distributions & allowed:
            problems.append(
                f"{file} imports {module} (from {', '.join(sorted(distributions))}),"
                f" not declared in {where_declared} of pyproject.toml"
            )
    assert not problems, "\n".join(problems)


def test_the_walk_finds_the_imports_it_checks() -> None:
    """The check above sees imports of every kind: plain, from, guarded, by name."""
    found = set(_third_party_imports())
    assert ("evalkit/judge/policy/_call.py", "httpx2") in found
    assert ("evalkit/report/_charts.py", "markupsafe") in found
    assert ("evalkit/dataset/_hf.py", "datasets") in found  # importlib.import_module("datasets")
    assert ("evalkit/run/_executors.py", "cloudpickle") in found  # under try/except ImportError


def test_optional_scorers_name_their_extra() -> None:
    """A prebuilt scorer that needs an extra names one whose distributions provide its modules
    (the error a user without it sees says ``pip install 'evalkit-runner[<extra>]'``)."""
    _, extras = _declared()
    installed = importlib.metadata.packages_distributions()
    needing = [info for info in list_scorers() if info.modules]
    assert needing, "the nlp scorers declare the modules they need"
    for info in needing:
        assert info.extra in extras, info.name
        for module in info.modules:
            provided_by = {_normalize(d) for d in installed.get(module.partition(".")[0], [])}
            assert provided_by & extras[info.extra], (info.name, module, info.extra)


def _evalkit_modules() -> list[str]:
    names = [evalkit.__name__]
    for module in pkgutil.walk_packages(evalkit.__path__, prefix="evalkit."):
        # `python -m` entry points run their command when imported.
        if not module.name.endswith(".__main__"):
            names.append(module.name)
    return names


@pytest.mark.parametrize("module", _evalkit_modules())
def test_every_module_imports(module: str) -> None:
    """In an install without extras too: an extra's import stays inside the code that needs it."""
    importlib.import_module(module)


@pytest.mark.skipif(
    os.environ.get("EVALKIT_LOWEST_DIRECT") != "1",
    reason="checks the lowest-direct install that .ci/run makes (EVALKIT_LOWEST_DIRECT=1)",
)
def test_the_lowest_install_holds_the_declared_floors() -> None:
    """Each direct dependency is installed at its floor: a floor that cannot be installed with
    the others (openai 3 needs anyio 4.10, so anyio>=4.4 said too little) is found here. A
    floor of 2022.1 is held by the first 2022.1.x release."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    above = []
    for line in project["dependencies"]:
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        floors = [Version(s.version) for s in requirement.specifier if s.operator in {">=", "=="}]
        assert floors, f"{line}: every dependency has a floor"
        (floor,) = floors
        installed = Version(importlib.metadata.version(requirement.name))
        if installed.release[: len(floor.release)] != floor.release:
            above.append(f"{requirement.name} {installed} (floor {floor})")
    assert not above, "installed above the declared floor: " + ", ".join(above)
