"""One row of a dataset, as the rest of the pipeline sees it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Item:
    """One dataset row: what the application was asked, what was expected, what it answered.

    Attributes:
        id: The row's ``id`` column, or a stable hash of its input, ground truth and request
            context when the dataset has no ``id`` column.
        input: The ``input`` cell (text, or a Python value for nested and JSON cells).
        ground_truth: The ``groundTruth``/``ground_truth`` cell, or None.
        output: The ``output`` cell, or None when the dataset has no output column.
        request_context: The ``requestContext``/``request_context`` cell, or None.
        metadata: The ``metadata`` cell, or None.
        index: The row's 0-based position in the dataset.
        extra: The row's other columns by name, or None when there are none.
    """

    id: str
    input: Any
    ground_truth: Any = None
    output: Any = None
    request_context: Any = None
    metadata: Any = None
    index: int = 0
    extra: Mapping[str, Any] | None = None
