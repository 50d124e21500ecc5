"""Targets: what produces the output that scorers judge.

``None`` uses the dataset's ``output`` column (:class:`DatasetOutput`); a Python callable
becomes a :class:`FunctionTarget`; anything implementing the :class:`Target` protocol (an async
``__call__(item)`` and ``describe()``) is used as is.
"""

from __future__ import annotations

from evalkit.target._dataset_output import DatasetOutput
from evalkit.target._function import FunctionTarget
from evalkit.target._openai import OpenAITarget
from evalkit.target._protocol import Target
from evalkit.target._resolve import as_target

__all__ = ["DatasetOutput", "FunctionTarget", "OpenAITarget", "Target", "as_target"]
