"""``[regression]``: the gate of a run against a baseline run."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from evalkit._ceilings import MAX_RESAMPLES
from evalkit._defaults import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_DROP,
    DEFAULT_MIN_PAIRED,
    DEFAULT_RESAMPLES,
)
from evalkit.experiment_file._table import Share, Table, Text


class RegressionSection(Table):
    """``[regression]``: the gate against a baseline run.

    Attributes:
        baseline: ``"latest"`` (the newest complete, full run of the same name whose
            verdict passed and that pairs with this one, or the pinned run until a run started
            after the pin passes; none on the first night), ``"latest-complete"`` (the newest
            such run whatever its verdict), a run's name (its newest such run) or a run's id.
        max_drop: The drop in mean tolerated before a significant drop fails, in score units.
        confidence: The coverage of the paired interval.
        resamples: Bootstrap and sign-flip resamples.
        min_paired: The share of this run's items a baseline on another dataset must also
            hold (0 to 1) to be compared with; a baseline of the same dataset always pairs.
    """

    baseline: Text = "latest"
    max_drop: Annotated[float, Field(ge=0.0)] = DEFAULT_MAX_DROP
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)] = DEFAULT_CONFIDENCE
    resamples: Annotated[int, Field(ge=1, le=MAX_RESAMPLES)] = DEFAULT_RESAMPLES
    min_paired: Share = DEFAULT_MIN_PAIRED
