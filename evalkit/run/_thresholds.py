"""Per-scorer gates and the pass/fail verdict they give.

``{"exact": 0.8}`` means the mean of ``exact``'s successful scores must be at least 0.8;
``{"toxicity": {"max": 0.1}}`` means at most 0.1 (a lower-is-better scorer); both bounds may
be given. Every scorer, with a threshold or not, also fails when more than its
``max_error_rate`` of its pairs (default 5%) ended without a score, and when it has no
successful score at all ("no data"): failures count against the verdict, never for it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from evalkit._numbers import decimal
from evalkit._scorer_ids import unknown_id
from evalkit.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Threshold:
    """Bounds on a scorer's mean: ``min`` (higher is better) and/or ``max`` (lower is better)."""

    min: float | None = None
    max: float | None = None

    def passes(self, value: float | None) -> bool:
        """Whether ``value`` lies within the bounds (None never does)."""
        if value is None or not math.isfinite(value):
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


#: The share of a scorer's pairs allowed to end without a score before the run fails: a judge
#: outage (every pair failed) must never pass a nightly gate.
DEFAULT_MAX_ERROR_RATE = 0.05


@dataclass(frozen=True, slots=True)
class ScorerVerdict:
    """Whether one scorer passed its gates: coverage, error rate and threshold.

    Attributes:
        scorer_id: The scorer.
        threshold: Its bounds on the mean, or None.
        mean: The mean of its successful scores, or None without any.
        passed: True when no gate failed.
        scored: Pairs (item, scorer) with a successful score.
        failed: Pairs whose scorer ran and failed.
        not_run: Pairs the scorer never ran on: the item's target failed, or the run stopped
            before the item.
        max_error_rate: The largest share of pairs without a score that passes.
        reasons: Why it failed, one sentence per failed gate (empty when it passed).
    """

    scorer_id: str
    threshold: Threshold | None
    mean: float | None
    passed: bool
    scored: int = 0
    failed: int = 0
    not_run: int = 0
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    reasons: tuple[str, ...] = ()

    @property
    def pairs(self) -> int:
        """Every pair of this scorer in the run: scored, failed or not run."""
        return self.scored + self.failed + self.not_run

    @property
    def error_rate(self) -> float | None:
        """The share of pairs without a score (failed or not run); None without pairs."""
        return (self.failed + self.not_run) / self.pairs if self.pairs else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """Pass/fail per scorer and overall (every scorer passed).

    Attributes:
        passed: True when every scorer passed its gates.
        scorers: The verdict of every scorer of the run, by scorer id, in scorer order.
    """

    passed: bool
    scorers: Mapping[str, ScorerVerdict]

    @property
    def failed(self) -> list[str]:
        """Ids of the scorers that failed a gate."""
        return [sid for sid, v in self.scorers.items() if not v.passed]


def _bound(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{where} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{where} must be finite, got {value!r}")
    return number


def parse_threshold(scorer_id: str, spec: Any) -> Threshold:
    """``0.8``, ``{"min": 0.8}``, ``{"max": 0.1}`` or a [`Threshold`][evalkit.Threshold] →
    Threshold."""
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
            raise unknown_id("thresholds", scorer_id, list(scorer_ids))
        parsed[scorer_id] = parse_threshold(scorer_id, spec)
    return parsed


def parse_error_rates(
    max_error_rate: float | Mapping[str, float] | None, scorer_ids: Collection[str]
) -> dict[str, float]:
    """Each scorer's error-rate bound: one number for every scorer, or a mapping by scorer id
    (scorers left out keep `DEFAULT_MAX_ERROR_RATE`)."""
    rates = dict.fromkeys(scorer_ids, DEFAULT_MAX_ERROR_RATE)
    if max_error_rate is None:
        return rates
    if isinstance(max_error_rate, Mapping):
        for scorer_id, value in max_error_rate.items():
            if scorer_id not in rates:
                raise unknown_id("max_error_rate", scorer_id, list(scorer_ids))
            rates[scorer_id] = _rate(value, f"max_error_rate[{scorer_id!r}]")
        return rates
    rate = _rate(max_error_rate, "max_error_rate")
    return dict.fromkeys(scorer_ids, rate)


def _rate(value: Any, where: str) -> float:
    rate = _bound(value, where)
    if not 0.0 <= rate <= 1.0:
        raise ConfigError(f"{where} must be between 0 and 1 (a share of pairs), got {value!r}")
    return rate


def _percent(share: float) -> str:
    return f"{share * 100:.1f}%".replace(".0%", "%")


def scorer_verdict(
    scorer_id: str,
    *,
    threshold: Threshold | None,
    mean: float | None,
    scored: int,
    failed: int,
    not_run: int,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
    more: tuple[str, ...] = (),
) -> ScorerVerdict:
    """One scorer judged on its gates, each failed gate giving one sentence of ``reasons``
    (``more``: the reasons of gates judged elsewhere, such as the agreement gates).

    A scorer without a single successful score fails ("no data"), whatever its other gates.
    """
    reasons: list[str] = []
    pairs = scored + failed + not_run
    if scored == 0:
        reasons.append(f"no data: none of its {pairs} pairs was scored")
    missing = failed + not_run
    if pairs and missing / pairs > max_error_rate:
        reasons.append(
            f"error rate {_percent(missing / pairs)} above max_error_rate "
            f"{_percent(max_error_rate)} ({failed} failed, {not_run} not run of {pairs} pairs)"
        )
    if scored and mean is not None and not math.isfinite(mean):
        # NaN compares false with every bound: it must never pass a gate by default.
        reasons.append(f"mean {mean} is not a finite number: the scores cannot be summarised")
    elif threshold is not None and scored and not threshold.passes(mean):
        shown = "-" if mean is None else decimal(mean)
        reasons.append(f"mean {shown} misses the threshold {threshold}")
    reasons.extend(more)
    return ScorerVerdict(
        scorer_id, threshold, mean, not reasons, scored, failed, not_run, max_error_rate,
        tuple(reasons),
    )  # fmt: skip


def overall(verdicts: Mapping[str, ScorerVerdict]) -> Verdict:
    """The run's verdict: passed when every scorer passed."""
    return Verdict(all(v.passed for v in verdicts.values()), dict(verdicts))
