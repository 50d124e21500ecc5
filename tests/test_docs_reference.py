"""The API reference reads as a page: links rather than Sphinx roles, signatures formatted, code
blocks as wide as the page.

The strict build (.ci/run) resolves every cross-reference and fails on a Sphinx role left in a
rendered page (docs/hooks.py); these tests hold the same rules without building the site: one
docstring style for the whole package (docs/pages/development.md#docstrings), the formatter in
the docs extra, the experiment-file page's annotated TOML within the page's code width.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

from tests.docs_hooks import load_hooks

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
# A Sphinx role as written in a docstring: :class:`~evalkit.dataset.Source`, :func:`x`.
SPHINX_ROLE = re.compile(
    r":(?:py:)?(?:any|attr|class|const|data|doc|exc|func|meth|mod|obj|ref|term):`[^`]*`"
)
# Characters of code that fit a code block of the site at its narrowest desktop layout (both
# sidebars shown, the content column at its fixed 688 px in Chromium: 80.2 characters of
# Material's code font); a longer line scrolls sideways, hiding the end of its comment.
CODE_WIDTH = 80


def _docstrings(tree: ast.Module) -> list[ast.Constant]:
    """Every string statement: the docstrings of modules, classes, functions and attributes."""
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]


def test_no_docstring_names_an_object_with_a_sphinx_role() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {role}"
        for path in sorted((ROOT / "evalkit").rglob("*.py"))
        for node in _docstrings(ast.parse(path.read_text(encoding="utf-8")))
        for role in SPHINX_ROLE.findall(str(node.value))
    ]
    assert found == [], (
        "Sphinx roles render as text in the API reference: write [`Name`][evalkit.path.Name]"
        " for a documented object, `Name` otherwise\n" + "\n".join(found)
    )


def test_the_build_hook_finds_a_sphinx_role_shown_as_text() -> None:
    raw_sphinx_roles = load_hooks().raw_sphinx_roles
    page = (
        "<p>A :class:<code>~evalkit.dataset.Source</code> or a"
        ' <a class="autorefs autorefs-internal" href="#evalkit.Dataset"><code>Dataset</code></a>'
        " (see :func:<code>open_source</code>).</p>"
        "<pre><code>:meth:<code>in a code block</code></code></pre><p><code>:attr:`x`</code></p>"
    )
    assert raw_sphinx_roles(page) == [
        ":class:<code>~evalkit.dataset.Source</code>",
        ":func:<code>open_source</code>",
    ]
    assert raw_sphinx_roles('<p>See <a href="#x"><code>Source</code></a>.</p>') == []


def test_the_docs_extra_installs_a_signature_formatter() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {
        re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0].lower()
        for requirement in project["optional-dependencies"]["docs"]
    }
    assert names & {"ruff", "black"}, "mkdocstrings formats signatures only with Ruff or Black"


def test_the_experiment_file_pages_toml_fits_the_page() -> None:
    page = (DOCS / "pages" / "reference" / "experiment-file.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```toml\n(.*?)^```$", page, flags=re.MULTILINE | re.DOTALL)
    assert blocks, "the page's annotated TOML block"
    wide = [line for block in blocks for line in block.splitlines() if len(line) > CODE_WIDTH]
    assert wide == [], f"lines wider than {CODE_WIDTH} characters scroll sideways: {wide}"


REFERENCE = DOCS / "pages" / "reference"
#: The public packages: evalkit and every package of it without an underscore in its path.
PUBLIC_PACKAGES = sorted(
    ".".join(path.parent.relative_to(ROOT).parts)
    for path in (ROOT / "evalkit").rglob("__init__.py")
    if not any(part.startswith("_") for part in path.parent.relative_to(ROOT).parts)
)


def _resolve(path: str) -> object:
    """The object a ``::: evalkit.pkg.Name`` line of the reference documents."""
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError:
        module, _, name = path.rpartition(".")
        return getattr(importlib.import_module(module), name)


@functools.cache
def _documented() -> set[tuple[str, int]]:
    """(name, object id) of everything the reference documents; a documented module (the
    errors page) documents each public name defined in it, and the prebuilt scorers page each
    registered scorer's factory (docs/hooks.py writes a section for each, from the registry)."""
    found: set[tuple[str, int]] = set()
    for page in sorted(REFERENCE.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for kind in re.findall(r"<!-- evalkit:scorers (\w+) -->", text):
            import evalkit.scorers

            found.update(
                (info.name, id(getattr(evalkit.scorers, info.name)))
                for info in evalkit.scorers.list_scorers(kind=kind)
                if hasattr(evalkit.scorers, info.name)
            )
        for path in re.findall(r"^::: (\S+)", text, re.MULTILINE):
            target = _resolve(path)
            if isinstance(target, ModuleType):
                found.update(
                    (name, id(value))
                    for name, value in vars(target).items()
                    if not name.startswith("_")
                    and getattr(value, "__module__", None) == target.__name__
                )
            else:
                found.add((path.rpartition(".")[2], id(target)))
    return found


def test_the_reference_check_sees_a_module_and_a_name() -> None:
    import evalkit.errors

    assert _resolve("evalkit.errors") is evalkit.errors
    assert _resolve("evalkit.store.recover") is importlib.import_module("evalkit.store").recover
    documented = _documented()
    assert ("ConfigError", id(evalkit.errors.ConfigError)) in documented  # via its module
    assert ("migrate", id(_resolve("evalkit.store.migrate"))) in documented


@pytest.mark.parametrize("package", PUBLIC_PACKAGES)
def test_the_reference_documents_every_exported_name(package: str) -> None:
    """A package's exported names are what users call, so each is in the API reference
    (under any of the paths it is exported by: `evalkit.Dataset` documents
    `evalkit.dataset.Dataset`); docs/pages/design/public-and-internal-names.md."""
    module = importlib.import_module(package)
    documented = _documented()
    missing = {
        name for name in module.__all__ if (name, id(getattr(module, name))) not in documented
    }
    assert missing == set(), (
        f"{package} exports names docs/pages/reference/ does not document: document them,"
        " or stop exporting what only evalkit's own packages use"
    )


def test_the_development_page_reports_the_largest_modules() -> None:
    """The size report that replaced the 400-line cap: generated at each build, so current."""
    assert "<!-- evalkit:module-sizes -->" in (DOCS / "pages" / "development.md").read_text()
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "evalkit").rglob("*.py")
    }
    largest = min(sizes, key=lambda path: (-sizes[path], path))
    table = load_hooks().render("module-sizes").splitlines()
    assert table[0].startswith(f"{len(sizes)} modules, {sum(sizes.values()):,} lines")
    rows = [line for line in table if line.startswith("| `")]
    assert len(rows) == 15
    assert rows[0] == f"| `{largest}` | {sizes[largest]:,} |"
