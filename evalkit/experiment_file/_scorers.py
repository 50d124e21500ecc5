"""``[[scorers]]``: one table a scorer, with its pass mark ([`Threshold`][evalkit.Threshold])."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from evalkit.compare import Direction
from evalkit.experiment_file._judge import JudgeOverride
from evalkit.experiment_file._table import (
    REFERENCE,
    Share,
    StepTimeout,
    Table,
    Text,
    describe,
    problem,
)

_SCORER_NAME = re.compile(r"[A-Za-z][\w-]*")


class ThresholdEntry(Table):
    """A scorer's pass mark: ``threshold = 0.8`` is ``{ min = 0.8 }``; ``{ max = 0.1 }`` marks a
    lower-is-better scorer.

    Attributes:
        min: The score must be at least this.
        max: The score must be at most this.
    """

    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _bounds(self) -> ThresholdEntry:
        if self.min is None and self.max is None:
            raise problem("expected min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise problem(f"min ({self.min}) is greater than max ({self.max})")
        return self

    def for_run(self) -> float | dict[str, float]:
        """The form ``run_evals(thresholds=...)`` takes: a number for a plain minimum."""
        if self.max is None and self.min is not None:
            return self.min
        return {k: v for k, v in (("min", self.min), ("max", self.max)) if v is not None}


class ScorerEntry(Table):
    """One ``[[scorers]]`` table.

    Attributes:
        use: A prebuilt scorer's name (``"exact_match"``) or ``"module:attribute"``.
        id: Records the scores under this id instead of the scorer's own.
        threshold: The pass mark, if any.
        max_error_rate: The share of this scorer's pairs (0 to 1) that may end without a
            score before it fails the run; None means ``[experiment] max_error_rate``.
        params: Keyword arguments for a prebuilt scorer's factory.
        judge: Fields replacing the default judge's for this scorer.
        step_timeout: Seconds one sync step of this scorer may run before that item's pair
            fails, above 0 and at most 86,400; None keeps the scorer's own (60 s unless it sets
            one).
        min_agreement: Agreement gates against the scorer's human labels (``[experiment]
            labels``), ``{ kappa = 0.6 }``: see ``run_evals(min_agreement=)``.
    """

    use: str
    id: Text | None = None
    threshold: ThresholdEntry | None = None
    max_error_rate: Share | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    judge: JudgeOverride | None = None
    step_timeout: StepTimeout | None = None
    min_agreement: dict[str, float] | None = None

    @field_validator("use")
    @classmethod
    def _use(cls, value: str) -> str:
        if not (REFERENCE.fullmatch(value) or _SCORER_NAME.fullmatch(value)):
            raise problem(
                "expected a prebuilt scorer's name such as 'exact_match' or 'module:attribute', "
                f"got {value!r}"
            )
        return value

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        # Checked here, not only by the scorer built from it, so the error points at the
        # id's own line (the scorer's check could only name the entry).
        if value is not None and not value.strip():
            raise problem(f"expected a non-blank id, got {value!r}")
        return value

    @field_validator("threshold", mode="before")
    @classmethod
    def _number_is_a_minimum(cls, value: Any) -> Any:
        if value is None or isinstance(value, ThresholdEntry):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value):
                raise problem(f"expected a finite number, got {value}")
            return {"min": value}
        if not isinstance(value, dict):
            raise problem(
                "expected a number or a table such as { min = 0.8 } or { max = 0.1 }, "
                f"got {describe(value)}"
            )
        return value

    @property
    def is_reference(self) -> bool:
        """True when ``use`` is ``"module:attribute"`` rather than a prebuilt name."""
        return ":" in self.use

    @property
    def direction(self) -> Direction:
        """``"lower"`` when the threshold has only a ``max``, else ``"higher"``."""
        if self.threshold is not None and self.threshold.min is None:
            return "lower"
        return "higher"
