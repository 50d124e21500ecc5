"""Lazy re-exports for the packages' ``__init__`` modules (PEP 562 ``__getattr__``).

``import evalkit`` used to import every subpackage, and with them ``openai`` (~0.5 s), pandas
(~0.3 s) and the rest: about 1.4 s before anything ran. A package built with `exports`
imports a name's module the first time the name is read, so ``evalkit scorers`` starts fast
and a worker process of a sharded run (which imports ``evalkit.run._executors``) loads only
what running a shard needs; a judge-less shard never imports ``openai``. Why, and what it
saves: docs/pages/design/workers-start-light.md.

Each ``__init__`` keeps its imports for type checkers under ``if TYPE_CHECKING:``, its literal
``__all__``, and lists the same names by module for the runtime (``tests/test_public_api.py``
checks that the runtime list and ``__all__`` agree and that every name resolves).
Written by hand rather than with a library: docs/pages/design/hand-written-pieces.md.
"""

from __future__ import annotations

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

        warnings.warn(f"{package}.{name} is now {new}", DeprecationWarning, stacklevel=2)
        module, _, attribute = new.rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    return __getattr__
