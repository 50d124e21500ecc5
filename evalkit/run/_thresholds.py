"""Per-scorer thresholds and the pass/fail verdict they give.

``{"exact": 0.8}`` means the mean of ``exact``'s successful scores must be at least 0.8;
``{"toxicity": {"max": 0.1}}`` means at most 0.1 (a lower-is-better scorer); both bounds may
be given. A scorer without a single successful score fails its threshold.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from evalkit.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Threshold:
    """Bounds on a scorer's mean: ``min`` (higher is better) and/or ``max`` (lower is better)."""

    min: float | None = None
    max: float | None = None

    def passes(self, value: float | None) -> bool:
        """Whether ``value`` lies within the bounds (None never does)."""
        if value is None:
            return False
        if self.min is not None and value < self.min:
            return False
        return not (self.max is not None and value > self.max)

    @property
    def lower_is_better(self) -> bool:
        """True when only a ``max`` bound is set."""
        return self.max is not None and self.min is None

    def to_dict(self) -> dict[str, float]:
        """``{"min": …, "max": …}`` with only the bounds that are set."""
        bounds = {"min": self.min, "max": self.max}
        return {k: v for k, v in bounds.items() if v is not None}

    def __str__(self) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min:g}")
        if self.max is not None:
            parts.append(f"<= {self.max:g}")
        return " and ".join(parts)


@dataclass(frozen=True, slots=True)
class ScorerVerdict:
    """Whether one scorer's mean meets its threshold."""

    scorer_id: str
    threshold: Threshold
    mean: float | None
    passed: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    """Pass/fail per scorer with a threshold, and overall (every scorer passed).

    Attributes:
        passed: True when every thresholded scorer passed (also when there are none).
        scorers: The verdict of each scorer that has a threshold, by scorer id.
    """

    passed: bool
    scorers: Mapping[str, ScorerVerdict]

    @property
    def failed(self) -> list[str]:
        """Ids of the scorers that missed their threshold."""
        return [sid for sid, v in self.scorers.items() if not v.passed]


def _bound(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{where} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{where} must be finite, got {value!r}")
    return number


def parse_threshold(scorer_id: str, spec: Any) -> Threshold:
    """``0.8``, ``{"min": 0.8}``, ``{"max": 0.1}`` or a :class:`Threshold` → Threshold."""
    where = f"thresholds[{scorer_id!r}]"
    if isinstance(spec, Threshold):
        return spec
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"min", "max"})
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r}; use 'min' and/or 'max'")
        if not spec:
            raise ConfigError(f"{where}: give 'min' and/or 'max'")
        low = _bound(spec["min"], f"{where}['min']") if "min" in spec else None
        high = _bound(spec["max"], f"{where}['max']") if "max" in spec else None
        if low is not None and high is not None and low > high:
            raise ConfigError(f"{where}: min {low:g} is above max {high:g}")
        return Threshold(low, high)
    return Threshold(min=_bound(spec, where))


def parse_thresholds(
    thresholds: Mapping[str, Any] | None, scorer_ids: Collection[str]
) -> dict[str, Threshold]:
    """Validate a run's thresholds against the ids of its scorers."""
    parsed: dict[str, Threshold] = {}
    for scorer_id, spec in (thresholds or {}).items():
        if scorer_id not in scorer_ids:
            raise ConfigError(
                f"thresholds: no scorer with id {scorer_id!r} (scorers: "
                f"{', '.join(repr(s) for s in scorer_ids)})"
            )
        parsed[scorer_id] = parse_threshold(scorer_id, spec)
    return parsed


def judge(thresholds: Mapping[str, Threshold], means: Mapping[str, float | None]) -> Verdict:
    """The verdict of ``means`` against ``thresholds``."""
    scorers = {
        sid: ScorerVerdict(sid, t, means.get(sid), t.passes(means.get(sid)))
        for sid, t in thresholds.items()
    }
    return Verdict(all(v.passed for v in scorers.values()), scorers)
