"""Regression judgement: pair two experiments' items by id and judge each scorer."""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np

from evalkit._defaults import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_DROP,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from evalkit.compare._inputs import ScorerScores, ScoreTable, scores_by_scorer
from evalkit.compare._power import detectable_drop
from evalkit.compare._stats import (
    check_confidence,
    check_resamples,
    paired_interval,
    sign_flip,
)
from evalkit.errors import ConfigError

Direction: TypeAlias = Literal["higher", "lower"]
"""Which way a scorer's score is better: ``"higher"`` (accuracy) or ``"lower"`` (toxicity)."""

ComparisonVerdict: TypeAlias = Literal["regressed", "improved", "unchanged", "not_comparable"]
"""A scorer's verdict in a comparison; ``"not_comparable"`` when no item was scored in both."""

# Scores reaching 2**400 in magnitude are compared scaled by 2**-600 (see compare_scorer).
_BIG = 2.0**400
_DOWN = 2.0**-600

EMPTY_SCORES = ScorerScores(
    np.empty(0, dtype=np.object_), np.empty(0, dtype=np.float64), np.empty(0, dtype=np.bool_)
)


@dataclass(frozen=True, slots=True)
class ScorerComparison:
    """One scorer's scores in a candidate experiment judged against a baseline.

    Items are paired by id. Differences are ``candidate - baseline``, whatever the scorer's
    direction, so ``difference``, ``ci_low`` and ``ci_high`` read like the two means do;
    [`improvement`][evalkit.ScorerComparison.improvement] gives the change signed by direction
    (positive is better).

    Attributes:
        scorer_id: The scorer.
        direction: Whether a higher or a lower score is better.
        n_paired: Items scored successfully in both experiments; the statistics use only these.
        baseline_mean: Mean baseline score over the paired items (None when ``n_paired`` is 0).
        candidate_mean: Mean candidate score over the paired items.
        difference: ``candidate_mean - baseline_mean``.
        ci_low: Lower end of the paired interval of ``difference``
            ([`paired_interval`][evalkit.compare.paired_interval]: Tango's score interval for
            0/1 scores, otherwise the wider of the t and the studentized bootstrap intervals).
        ci_high: Upper end of that interval.
        p_value: Two-sided paired sign-flip test of "no difference": exact (the binomial
            McNemar test) for 0/1 scores at any n.
        only_in_baseline: Items this scorer ran on in the baseline only.
        only_in_candidate: Items this scorer ran on in the candidate only.
        failed_in_baseline: Items in both experiments whose baseline run failed.
        failed_in_candidate: Items in both experiments whose candidate run failed.
        failed_in_either: Items in both experiments left unpaired because a run failed (an item
            that failed in both counts once here and once in each of the two fields above).
        verdict: ``"regressed"`` when the score got worse by more than ``max_drop``, the
            interval excludes zero on the worse side and ``p_value < 1 - confidence``;
            ``"improved"`` in the mirror case; ``"not_comparable"`` without paired items;
            ``"unchanged"`` otherwise.
        max_drop: The tolerated change the verdict used.
        confidence: The interval's coverage.
        note: Why the verdict is ``"regressed"`` whatever the change, when a figure is not
            a finite number (a difference of ±1e308 scores is beyond the float range): a
            figure that cannot be shown never passes the gate. None otherwise.
        worse: Of the paired items, those whose score moved the worse way (by the direction).
        better: Of the paired items, those whose score moved the better way.
        p_value_error: The Monte Carlo standard error of ``p_value`` when it was sampled
            (more resamples are drawn while it is within three errors of the level); 0.0 when
            it is exact; None without paired items.
        binary: Whether the differences were judged as 0/1 ones (Tango's interval, the exact
            test): 0/1 scores, or scores between 0 and 1 of which no pair changed.
        difference_sd: The standard deviation of the paired differences (None below two
            pairs).
        detectable_drop: The smallest true change of the mean, in score units, that this
            comparison's test finds with 80% power, given ``n_paired`` and how often pairs
            changed (0/1 scores) or how much they spread (others); None when no drop can be
            found at this n, or when no pair of a score outside 0 to 1 changed (the spread
            says nothing). [`items_needed`][evalkit.compare.items_needed] gives the items
            a smaller drop needs.
        power_note: A warning when ``max_drop`` is above 0 but below ``detectable_drop``
            ("drops under 0.041 may be missed: this dataset finds them with less than 80%
            power at 300 pairs; add items or raise max_drop"): drops between the two may
            pass unnoticed (a larger one was found when the comparison regressed). None
            otherwise.
    """

    scorer_id: str
    direction: Direction
    n_paired: int
    baseline_mean: float | None
    candidate_mean: float | None
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    only_in_baseline: int
    only_in_candidate: int
    failed_in_baseline: int
    failed_in_candidate: int
    failed_in_either: int
    verdict: ComparisonVerdict
    max_drop: float
    confidence: float
    note: str | None = None
    worse: int = 0
    better: int = 0
    p_value_error: float | None = None
    binary: bool = False
    difference_sd: float | None = None
    detectable_drop: float | None = None
    power_note: str | None = None

    @property
    def improvement(self) -> float | None:
        """The change in the scorer's better direction: positive is better, negative is worse."""
        if self.difference is None:
            return None
        return self.difference if self.direction == "higher" else -self.difference

    @property
    def regressed(self) -> bool:
        """True when the verdict is ``"regressed"``."""
        return self.verdict == "regressed"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field plus ``improvement``."""
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return {**fields, "improvement": self.improvement}


@dataclass(frozen=True, slots=True)
class Comparison:
    """Every scorer of two experiments judged, with the options used.

    Attributes:
        scorers: One [`ScorerComparison`][evalkit.ScorerComparison] per scorer id found in either
            experiment, sorted by id.
        max_drop: The tolerated change in mean.
        confidence: The intervals' coverage.
        resamples: Bootstrap and sign-flip resamples drawn per scorer.
        seed: The seed the draws were derived from.
    """

    scorers: tuple[ScorerComparison, ...]
    max_drop: float
    confidence: float
    resamples: int
    seed: int

    @property
    def regressed(self) -> tuple[ScorerComparison, ...]:
        """The scorers whose verdict is ``"regressed"``."""
        return tuple(s for s in self.scorers if s.verdict == "regressed")

    @property
    def improved(self) -> tuple[ScorerComparison, ...]:
        """The scorers whose verdict is ``"improved"``."""
        return tuple(s for s in self.scorers if s.verdict == "improved")

    def __getitem__(self, scorer_id: str) -> ScorerComparison:
        for comparison in self.scorers:
            if comparison.scorer_id == scorer_id:
                return comparison
        raise KeyError(scorer_id)

    def __iter__(self) -> Iterator[ScorerComparison]:
        return iter(self.scorers)

    def __len__(self) -> int:
        return len(self.scorers)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the options and one entry per scorer."""
        return {
            "max_drop": self.max_drop,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
            "scorers": [s.to_dict() for s in self.scorers],
        }


# Every figure a comparison shows anywhere (console, JSON, reports, viewer, pytest plugin) comes
# from here, at the defaults of evalkit/_defaults.py (docs/pages/design/one-statistics-module.md).
def compare_experiments(
    baseline: ScoreTable,
    candidate: ScoreTable,
    /,
    *,
    directions: Mapping[str, Direction] | None = None,
    max_drop: float = DEFAULT_MAX_DROP,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    """Judge every scorer of ``candidate`` against ``baseline``, pairing items by id.

    For each scorer id found in either experiment, the items scored successfully in both are
    paired; the mean of ``candidate - baseline`` gets a paired confidence interval
    ([`paired_interval`][evalkit.compare.paired_interval]: Tango's for 0/1 scores, otherwise the
    wider of the t and the studentized bootstrap intervals) and a paired sign-flip test (exact
    for 0/1 scores). A change is significant only when both agree: the interval
    excludes zero and the p-value is below ``1 - confidence``. Items present in one experiment
    only and items whose run failed in either are counted, never silently dropped.

    Args:
        baseline: The reference experiment's per-item scores (see `ScoreTable`).
        candidate: The experiment being judged, in the same shape.
        directions: ``"higher"`` or ``"lower"`` per scorer id; unlisted scorers are
            higher-is-better.
        max_drop: The change in mean, in score units, tolerated before a significant drop is
            a regression (and needed before a significant rise is an improvement).
        confidence: The interval's coverage; ``1 - confidence`` is also the level the
            sign-flip p-value must fall below.
        resamples: Resamples for the interval and for the sign-flip test (at least; more
            are drawn for a sampled p-value within three Monte Carlo errors of the level).
        seed: Seeds the draws. Each scorer's draws derive from the seed and its id, so a
            scorer's result does not depend on which other scorers are compared.

    Returns:
        A [`Comparison`][evalkit.Comparison] with one entry per scorer, sorted by id.

    Raises:
        ConfigError: An invalid option or direction.
        DatasetError: Malformed scores (see `ScoreTable`).
    """
    check_options(directions, max_drop=max_drop, confidence=confidence, resamples=resamples,
                  seed=seed)  # fmt: skip
    directions = dict(directions or {})
    before = scores_by_scorer(baseline, label="baseline")
    after = scores_by_scorer(candidate, label="candidate")
    results = tuple(
        compare_scorer(
            scorer_id,
            before.get(scorer_id, EMPTY_SCORES),
            after.get(scorer_id, EMPTY_SCORES),
            direction=directions.get(scorer_id, "higher"),
            max_drop=float(max_drop),
            confidence=float(confidence),
            resamples=resamples,
            seed=seed,
        )
        for scorer_id in sorted(before.keys() | after.keys())
    )
    return Comparison(
        scorers=results,
        max_drop=float(max_drop),
        confidence=float(confidence),
        resamples=resamples,
        seed=seed,
    )


def check_options(
    directions: Mapping[str, Direction] | None,
    *,
    max_drop: float,
    confidence: float,
    resamples: int,
    seed: int,
) -> None:
    """Raise [`ConfigError`][evalkit.errors.ConfigError] for an option
    [`compare_experiments`][evalkit.compare_experiments] refuses."""
    check_confidence(confidence)
    check_resamples(resamples)
    if isinstance(max_drop, bool) or not isinstance(max_drop, int | float):
        raise ConfigError(f"max_drop must be a number, got {max_drop!r}")
    if not (math.isfinite(max_drop) and max_drop >= 0):
        raise ConfigError(f"max_drop must be a finite number >= 0, got {max_drop!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    for scorer_id, direction in (directions or {}).items():
        if direction not in ("higher", "lower"):
            raise ConfigError(
                f"direction of scorer {scorer_id!r} must be 'higher' or 'lower', got {direction!r}"
            )


def compare_scorer(
    scorer_id: str,
    before: ScorerScores,
    after: ScorerScores,
    *,
    direction: Direction,
    max_drop: float,
    confidence: float,
    resamples: int,
    seed: int,
) -> ScorerComparison:
    common, b_index, a_index = np.intersect1d(
        before.item_ids, after.item_ids, assume_unique=True, return_indices=True
    )
    b_ok = before.ok[b_index]
    a_ok = after.ok[a_index]
    paired = b_ok & a_ok
    b_scores = before.scores[b_index][paired]
    a_scores = after.scores[a_index][paired]
    counts: dict[str, Any] = {
        "only_in_baseline": int(before.item_ids.size - common.size),
        "only_in_candidate": int(after.item_ids.size - common.size),
        "failed_in_baseline": int(np.count_nonzero(~b_ok)),
        "failed_in_candidate": int(np.count_nonzero(~a_ok)),
        "failed_in_either": int(np.count_nonzero(~paired)),
    }
    n = int(b_scores.size)
    if n == 0:
        return ScorerComparison(
            scorer_id=scorer_id,
            direction=direction,
            n_paired=0,
            baseline_mean=None,
            candidate_mean=None,
            difference=None,
            ci_low=None,
            ci_high=None,
            p_value=None,
            verdict="not_comparable",
            max_drop=max_drop,
            confidence=confidence,
            **counts,
        )
    # Scores near the float limit are compared scaled by 2**-600 (exactly: a power of two),
    # so that neither their differences nor their sums overflow; the verdict is judged on the
    # scaled figures (the test and the interval's signs do not depend on the scale) and the
    # figures are scaled back. Everyday scores (below 2**400) are compared as they are.
    scale = 1.0
    if max(float(np.abs(b_scores).max()), float(np.abs(a_scores).max())) >= _BIG:
        scale = _DOWN
        b_scores, a_scores = b_scores * scale, a_scores * scale
    differences = a_scores - b_scores
    fell_by, rose_by = (
        int(np.count_nonzero(differences < 0)),
        int(np.count_nonzero(differences > 0)),
    )
    counts["worse"], counts["better"] = (
        (fell_by, rose_by) if direction == "higher" else (rose_by, fell_by)
    )
    # A stable per-scorer stream: crc32 is fixed across processes, unlike hash()
    # (docs/pages/design/per-scorer-seeds.md).
    streams = np.random.SeedSequence([seed, zlib.crc32(scorer_id.encode())]).spawn(2)
    # 0/1 scores get Tango's interval, which has width even when no pair changed
    # (docs/pages/design/paired-intervals.md). So do scores between 0 and 1 of which no pair
    # changed: each difference lies in [-1, 1], and Tango's interval for no change among n
    # 0/1 pairs bounds how large a mean change n unchanged pairs can hide, where the t and
    # bootstrap intervals of zero spread would be the point 0.
    binary = bool(np.all((b_scores == 0.0) | (b_scores == 1.0))) and bool(
        np.all((a_scores == 0.0) | (a_scores == 1.0))
    )
    unit = scale == 1.0 and bool(
        min(b_scores.min(), a_scores.min()) >= 0.0 and max(b_scores.max(), a_scores.max()) <= 1.0
    )
    if not binary and fell_by == rose_by == 0 and unit:
        binary = True
    ci_low, ci_high = paired_interval(
        differences, binary=binary, confidence=confidence, resamples=resamples, seed=streams[0]
    )
    if unit:
        # Scores between 0 and 1 change by at most 1 either way: a t interval over two or
        # three items would otherwise reach far past it.
        ci_low, ci_high = max(ci_low, -1.0), min(ci_high, 1.0)
    test = sign_flip(differences, resamples=resamples, seed=streams[1], level=1.0 - confidence)
    p_value = test.p_value
    difference = float(differences.mean())
    # The interval must exclude zero on the side the mean moved to, and the test must reject
    # "no difference": with a handful of items an interval can collapse onto the few values
    # seen (one item gives a single point), so the interval alone is not evidence.
    # Design: docs/pages/design/paired-statistics.md.
    rose, fell = ci_low > 0.0, ci_high < 0.0
    worse, better = (fell, rose) if direction == "higher" else (rose, fell)
    significant = p_value < 1.0 - confidence
    change = difference if direction == "higher" else -difference
    verdict: ComparisonVerdict = "unchanged"
    if significant and worse and change < -max_drop * scale:
        verdict = "regressed"
    elif significant and better and change > max_drop * scale:
        verdict = "improved"
    up = 1.0 / scale
    figures = [float(b_scores.mean()) * up, float(a_scores.mean()) * up]
    figures += [difference * up, ci_low * up, ci_high * up]
    note = None
    if not all(math.isfinite(f) for f in figures):
        # A difference of ±1e308 scores can be twice the largest float: it cannot be
        # shown, so it cannot pass a gate either.
        verdict = "regressed"
        note = (
            "the difference or its interval is beyond the float range (about ±1.8e308):"
            " it cannot be judged, so the regression gate fails"
        )
    baseline_mean, candidate_mean, difference, ci_low, ci_high = figures
    spread = float(differences.std(ddof=1)) if n > 1 else 0.0
    # The drop this comparison finds with 80% power (docs/pages/design/detectable-drop.md).
    detectable = detectable_drop(n, binary=binary, changed_share=(fell_by + rose_by) / n,
                                 sd=spread, confidence=confidence)  # fmt: skip
    # Scaled back; beyond the float range (differences of ±1e308 scores) neither is shown.
    sd = _finite(spread * up) if n > 1 else None
    detectable = None if detectable is None else _finite(detectable * up)
    power_note = None
    # Said of a regressed scorer too: this drop was found, smaller ones may not be.
    if max_drop <= 0.0:
        pass
    elif detectable is not None and max_drop < detectable:
        power_note = (
            f"drops under {detectable:.3g} may be missed: this dataset finds them with less"
            f" than 80% power at {n} pairs; add items or raise max_drop"
        )
    elif detectable is None and binary:
        power_note = f"{n} pairs are too few to detect any drop; add items"
    return ScorerComparison(
        scorer_id=scorer_id,
        direction=direction,
        n_paired=n,
        baseline_mean=baseline_mean,
        candidate_mean=candidate_mean,
        difference=difference,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        verdict=verdict,
        max_drop=max_drop,
        confidence=confidence,
        note=note,
        p_value_error=test.error,
        binary=binary,
        difference_sd=sd,
        detectable_drop=detectable,
        power_note=power_note,
        **counts,
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
