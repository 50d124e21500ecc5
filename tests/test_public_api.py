from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

import evalkit
from tests.typecheck import mypy_output

LAZY_PACKAGES = [
    "evalkit",
    "evalkit.dataset",
    "evalkit.judge",
    "evalkit.report",
    "evalkit.run",
    "evalkit.scorer",
    "evalkit.store",
    "evalkit.target",
]


def test_all_is_sorted_and_unique() -> None:
    assert vars(evalkit)["__all__"] == sorted(set(vars(evalkit)["__all__"]))


def test_every_exported_name_exists_and_is_documented() -> None:
    for name in vars(evalkit)["__all__"]:
        obj = getattr(evalkit, name)
        assert obj.__doc__, f"evalkit.{name} has no docstring"


def test_public_classes_and_functions_are_all_exported() -> None:
    for name in vars(evalkit)["__all__"]:  # the package imports its names lazily: load them all
        getattr(evalkit, name)
    public = {
        name
        for name, obj in vars(evalkit).items()
        if not name.startswith("_")
        and getattr(obj, "__module__", "").startswith("evalkit")
        and callable(obj)
    }
    assert public == set(vars(evalkit)["__all__"])


def test_every_error_is_an_evalkit_error() -> None:
    for name in vars(evalkit)["__all__"]:
        obj = getattr(evalkit, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert issubclass(obj, evalkit.EvalkitError)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_lazy_exports_match_all_and_resolve(name: str) -> None:
    package: ModuleType = importlib.import_module(name)
    lazy = package._LAZY_EXPORTS
    assert set(lazy) == set(package.__all__)
    for export in package.__all__:
        value = getattr(package, export)
        module = importlib.import_module(lazy[export])
        assert value is getattr(module, export)
        assert export in dir(package)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        package.nope  # noqa: B018


def test_a_shard_worker_imports_neither_openai_nor_pandas() -> None:
    """What a process or Ray worker imports to run a judge-less shard (its start-up cost)."""
    code = (
        "import sys, evalkit.run._executors, evalkit.scorer._scorer; "
        "print(sorted(m for m in ('openai', 'pandas', 'aiohttp') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_old_comparison_verdict_name_still_imports_with_a_warning() -> None:
    import evalkit.compare

    with pytest.warns(DeprecationWarning, match="renamed ComparisonVerdict"):
        old = evalkit.compare.Verdict  # type: ignore[attr-defined]  # deprecated, unexported
    # This one first: after the next, mypy takes old for the Literal alias, unlike any class.
    assert evalkit.Verdict is not old  # the run's gate verdict is another thing
    assert old is evalkit.compare.ComparisonVerdict


def _lazy_modules() -> list[str]:
    """Every evalkit module that re-exports lazily from a map written out (``_exports``: the
    scorers' families table, an _internal module) rather than from its declared imports."""
    root = Path(evalkit.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if re.search(r"\b_exports\(", path.read_text(encoding="utf-8")) and path.name != "_lazy.py":
            parts = path.relative_to(root.parent).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@pytest.mark.parametrize("name", _lazy_modules())
def test_type_checking_imports_match_the_lazy_map(name: str) -> None:
    """Where the runtime's map is written out, the imports for type checkers under
    ``if TYPE_CHECKING:`` must name the same module for each name."""
    module = importlib.import_module(name)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    for_checkers = {
        alias.asname or alias.name: node.module
        for block in tree.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for node in ast.walk(block)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert for_checkers == module._LAZY_EXPORTS


def test_lazy_modules_are_found() -> None:
    assert "evalkit.scorers" in _lazy_modules()
    assert "evalkit.store" not in _lazy_modules()  # it declares its exports


DECLARED = {
    "_impl.py": "def shout(): return 'hi'\nclass Shape: pass\n",
    "_other.py": "VALUE = 3\n",
    "__init__.py": (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from evalkit._lazy import declared_exports\n"
        "if TYPE_CHECKING:\n"
        "    from collections.abc import Callable\n"  # for annotations only: not exported
        "    from declared_pkg._impl import Shape as Shape, shout as shout\n"
        "    from declared_pkg._other import VALUE as VALUE\n"
        "__getattr__, __dir__, __all__ = declared_exports(globals())\n"
    ),
}


@pytest.mark.parametrize("packed", [False, True], ids=["folder", "zip"])
def test_a_package_declares_each_export_once_under_type_checking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packed: bool
) -> None:
    """``declared_exports`` takes a package's exports from its ``NAME as NAME`` imports under
    ``if TYPE_CHECKING:``: the one place they are written (issue 32, item 4,
    docs/pages/design/one-declaration-per-export.md); also from a zip (zipimport), where the
    source is no file."""
    if packed:
        root = tmp_path / "packages.zip"
        with zipfile.ZipFile(root, "w") as archive:
            for name, text in DECLARED.items():
                archive.writestr(f"declared_pkg/{name}", text)
    else:
        root = tmp_path
        (tmp_path / "declared_pkg").mkdir()
        for name, text in DECLARED.items():
            (tmp_path / "declared_pkg" / name).write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    module = importlib.import_module("declared_pkg")
    try:
        assert module.__all__ == ["Shape", "VALUE", "shout"]
        assert "declared_pkg._impl" not in sys.modules  # nothing imported before it is read
        assert module.shout() == "hi"
        assert module.VALUE == 3
        assert module._LAZY_EXPORTS == {
            "Shape": "declared_pkg._impl",
            "shout": "declared_pkg._impl",
            "VALUE": "declared_pkg._other",
        }
        assert {"Shape", "VALUE", "shout"} <= set(dir(module))
        with pytest.raises(AttributeError, match="has no attribute 'Callable'"):
            module.Callable  # noqa: B018
    finally:
        for name in [m for m in sys.modules if m.partition(".")[0] == "declared_pkg"]:
            del sys.modules[name]
        importlib.invalidate_caches()


def test_a_relative_export_import_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "relative_pkg"
    package.mkdir()
    (package / "_impl.py").write_text("VALUE = 3\n")
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from evalkit._lazy import declared_exports\n"
        "if TYPE_CHECKING:\n"
        "    from ._impl import VALUE as VALUE\n"
        "__getattr__, __dir__, __all__ = declared_exports(globals())\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"__init__.py:4: write the export's import absolute"):
        importlib.import_module("relative_pkg")
    sys.modules.pop("relative_pkg", None)


def test_a_package_installed_without_its_sources_is_refused_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exports are read from the source: an install or bundle of compiled modules only
    (PyInstaller's default) cannot import evalkit, and says why rather than exporting
    nothing."""
    import compileall

    package = tmp_path / "compiled_pkg"
    package.mkdir()
    for name, text in DECLARED.items():
        (package / name).write_text(text.replace("declared_pkg", "compiled_pkg"), "utf-8")
    assert compileall.compile_dir(package, quiet=1, legacy=True)  # .pyc beside each module
    for source in package.glob("*.py"):
        source.unlink()
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with pytest.raises(ImportError, match=r"compiled_pkg: .*needs its \.py files"):
            importlib.import_module("compiled_pkg")
    finally:
        sys.modules.pop("compiled_pkg", None)
        importlib.invalidate_caches()


STAR_IMPORTS = """
import evalkit.report
from evalkit import *
from evalkit.report import *
from evalkit.store import *

reveal_type(run_evals)
reveal_type(FailureGroup)
reveal_type(read_item_scores)
evalkit.report.nope
"""


@pytest.mark.long(seconds=12)
def test_a_type_checker_sees_the_exports_of_a_star_import(tmp_path: Path) -> None:
    """The exports' one declaration is for type checkers too: ``from evalkit import *``
    gives mypy every exported name, and a name no package exports is an error (the runtime's
    ``__getattr__`` is hidden from it)."""
    output = mypy_output(tmp_path, STAR_IMPORTS)
    errors = [line for line in output if ": error:" in line]
    assert len(errors) == 1, output
    assert errors[0].split(":")[1] == "10"
    assert 'has no attribute "nope"' in errors[0]
    revealed = [line for line in output if "Revealed type" in line]
    assert len(revealed) == 3, output
    assert all('Revealed type is "Any"' not in line for line in revealed), output
    assert "FailureGroup" in revealed[1], output
