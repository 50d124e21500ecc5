"""The documentation site's build hooks (docs/hooks.py), loaded as a module for the tests that
check what they render or refuse."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

HOOKS = Path(__file__).parents[1] / "docs" / "hooks.py"


def load_hooks() -> ModuleType:
    """docs/hooks.py as a module (it is not a package's: mkdocs loads it by path too)."""
    spec = importlib.util.spec_from_file_location("docs_hooks", HOOKS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
