"""A public name means one thing: two packages exporting the same name export the same object
(issue 32: ``evalkit.experiment_file.OpenAITarget`` was the ``[target]`` table's schema, not
the ``evalkit.OpenAITarget`` it builds)."""

from __future__ import annotations

import importlib
import pkgutil

import evalkit


def _public_packages() -> list[str]:
    found = ["evalkit"]
    for info in pkgutil.iter_modules(evalkit.__path__):
        if info.ispkg and not info.name.startswith("_"):
            found.append(f"evalkit.{info.name}")
    return found


def test_a_name_exported_twice_is_the_same_object() -> None:
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for package in _public_packages():
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if name in seen and seen[name][1] is not value:
                clashes.append(f"{seen[name][0]}.{name} is not {package}.{name}")
            seen.setdefault(name, (package, value))
    assert clashes == []
