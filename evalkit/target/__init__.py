"""Targets: what produces the output that scorers judge.

``None`` uses the dataset's ``output`` column (`DatasetOutput`); a Python callable
becomes a [`FunctionTarget`][evalkit.FunctionTarget]; anything implementing the
[`Target`][evalkit.Target] protocol (an async ``__call__(item)`` and ``describe()``) is used as is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.target._dataset_output import DatasetOutput
    from evalkit.target._function import FunctionTarget
    from evalkit.target._openai import OpenAITarget
    from evalkit.target._protocol import Target
    from evalkit.target._resolve import TargetLike, as_target

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.target._function": ("FunctionTarget",),
        "evalkit.target._openai": ("OpenAITarget",),
        "evalkit.target._protocol": ("Target",),
        "evalkit.target._resolve": (
            "TargetLike",
            "as_target",
        ),
        "evalkit.target._dataset_output": ("DatasetOutput",),
    },
)

__all__ = [
    "DatasetOutput",
    "FunctionTarget",
    "OpenAITarget",
    "Target",
    "TargetLike",
    "as_target",
]
