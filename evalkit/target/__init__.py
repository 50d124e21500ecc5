"""Targets: what produces the output that scorers judge.

``None`` uses the dataset's ``output`` column (`DatasetOutput`); a Python callable
becomes a [`FunctionTarget`][evalkit.FunctionTarget]; anything implementing the
[`Target`][evalkit.Target] protocol (an async ``__call__(item)`` and ``describe()``) is used as is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.target._dataset_output import DatasetOutput as DatasetOutput
    from evalkit.target._function import FunctionTarget as FunctionTarget
    from evalkit.target._openai import OpenAITarget as OpenAITarget
    from evalkit.target._protocol import Target as Target
    from evalkit.target._resolve import TargetLike as TargetLike

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
