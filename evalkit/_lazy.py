"""Lazy re-exports for the packages' ``__init__`` modules (PEP 562 ``__getattr__``).

``import evalkit`` used to import every subpackage, and with them ``openai`` (~0.5 s), pandas
(~0.3 s) and the rest: about 1.4 s before anything ran. A package built with `exports`
imports a name's module the first time the name is read, so ``evalkit scorers`` starts fast
and a worker process of a sharded run (which imports ``evalkit.run._executors``) loads only
what running a shard needs; a judge-less shard never imports ``openai``. Why, and what it
saves: docs/pages/design/workers-start-light.md.

A package declares each exported name once, as an import under ``if TYPE_CHECKING:`` in
the redundant-alias form that marks a re-export for type checkers (``from m import Name as
Name``); `declared_exports` reads those imports from the package's source at import time and
derives the lazy map and ``__all__`` from them, so mypy, IDEs and the runtime see the same names
(docs/pages/design/one-declaration-per-export.md). `exports` takes a map written out: the
scorers' families table, which their lookup by name also reads, and the store's ``_internal``
module.
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

import _ast  # `ast` itself costs 1.4 ms to import; compile() and the node classes are here
import contextlib
import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    namespace: dict[str, Any], modules: Mapping[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of a package re-exporting ``modules``.

    The name-to-module map is also stored in the package as ``_LAZY_EXPORTS`` (for tests).

    Args:
        namespace: The package's ``globals()``; a name is stored there once imported, so
            later reads are plain attribute reads.
        modules: For each module, the names the package re-exports from it.
    """
    package = namespace["__name__"]
    where = {name: module for module, names in modules.items() for name in names}
    namespace["_LAZY_EXPORTS"] = where

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__


def declared_exports(
    namespace: dict[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of a package whose exports are its
    ``from MODULE import NAME as NAME`` imports under a top-level ``if TYPE_CHECKING:``.

    An import there without the ``as NAME`` alias is for annotations only, not an export (a type
    checker does not re-export it either).

    Args:
        namespace: The package's ``globals()`` (its source, ``__file__``, is read through its
            ``__loader__``).

    Raises:
        ImportError: The package's source cannot be read, or a declared import is relative.
    """
    package = namespace["__name__"]
    modules = _declared(package, namespace["__file__"], namespace["__loader__"])
    getattr_, dir_ = exports(namespace, modules)
    return getattr_, dir_, sorted(name for names in modules.values() for name in names)


def _declared(package: str, path: str, loader: Any) -> dict[str, tuple[str, ...]]:
    """For each module, the names the source at ``path`` imports from it as ``NAME as NAME``
    under ``if TYPE_CHECKING:``."""
    # The loader's source: a package imported from a zip has no file, and a bundler that keeps
    # sources (PyInstaller's "pyz+py") may name a compiled file as __file__.
    source: str | bytes | None = None
    with contextlib.suppress(AttributeError, ImportError, OSError):  # pytest's loader has none
        source = loader.get_source(package)
    if source is None and path.endswith(".py"):
        with contextlib.suppress(OSError):
            source = loader.get_data(path)
    if source is None:
        raise ImportError(
            f"{package}: cannot read its exports from {path}: no source; evalkit needs its .py"
            " files installed (an install or bundle with compiled modules only cannot import it)"
        )
    tree = compile(source, path, "exec", _ast.PyCF_ONLY_AST)
    found: dict[str, list[str]] = {}
    for block in tree.body if isinstance(tree, _ast.Module) else ():
        if not isinstance(block, _ast.If) or getattr(block.test, "id", None) != "TYPE_CHECKING":
            continue
        for node in block.body:
            if not isinstance(node, _ast.ImportFrom):
                continue
            if node.level or node.module is None:
                raise ImportError(f"{path}:{node.lineno}: write the export's import absolute")
            names = [alias.name for alias in node.names if alias.asname == alias.name]
            if names:
                found.setdefault(node.module, []).extend(names)
    return {module: tuple(names) for module, names in found.items()}


def with_old_names(
    package: str, getattr_: Callable[[str], Any], old: Mapping[str, str]
) -> Callable[[str], Any]:
    """``getattr_`` that also finds each old name of ``package`` in ``old`` (old name → the new
    one's full dotted path) with a ``DeprecationWarning``, for code written before a move."""

    def __getattr__(name: str) -> Any:
        new = old.get(name)
        if new is None:
            return getattr_(name)
        import warnings

        # A name that is no longer exported lives on in a private module: not a place to send
        # users to.
        private = any(part.startswith("_") for part in new.split("."))
        moved = "is no longer exported and will be removed" if private else f"is now {new}"
        warnings.warn(f"{package}.{name} {moved}", DeprecationWarning, stacklevel=2)
        module, _, attribute = new.rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    return __getattr__
