"""Running a prebuilt scorer on one row, and unwrapping the error a bad row gives."""

from __future__ import annotations

from typing import Any

import pytest

from evalkit import ScorerInputError, ScorerRunError, ScorerRunResult
from evalkit.scorer import Scorer


async def score(
    scorer: Scorer, output: Any, ground_truth: Any = None, *, input: Any = "question"
) -> ScorerRunResult:
    """Run ``scorer`` on one row and return the result."""
    return await scorer.run(input=input, output=output, ground_truth=ground_truth)


async def input_error(
    scorer: Scorer, output: Any, ground_truth: Any = None, *, input: Any = "question"
) -> ScorerInputError:
    """Run ``scorer`` on a row it must refuse; return the :class:`ScorerInputError` cause."""
    with pytest.raises(ScorerRunError) as caught:
        await scorer.run(input=input, output=output, ground_truth=ground_truth)
    assert caught.value.failed_step == "preprocess"
    assert caught.value.result is None
    cause = caught.value.__cause__
    assert isinstance(cause, ScorerInputError), cause
    return cause
