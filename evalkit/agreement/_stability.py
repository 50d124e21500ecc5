"""Judge stability: how far an LLM judge agrees with itself over K executions of each pair
(``run_evals(repeats=K)``), and how much of a regression interval its noise accounts for.

The executions of a pair are treated as K raters of it: Krippendorff's alpha across them is
the judge's self-agreement (1 when every pair got the same score each time). A judge below
`STABLE_ALPHA` (Krippendorff's own lowest bound for tentative conclusions) is flagged:
its scores, and so its regressions, are mostly noise.

The noise of one execution's score is the mean, over pairs, of the variance of the pair's
executions. The paired difference of two runs' means has a variance of (noise of both runs +
everything else) / n, so ``noise / (n * se**2)`` is the share of the regression interval's
variance that judge noise explains (the standard error read back from the interval's width).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import numpy.typing as npt

from evalkit.agreement._arguments import LabelKind, snap
from evalkit.agreement._labels import LabelSpec
from evalkit.agreement._measure import resolve_kind
from evalkit.agreement._stats import Estimate, inter_rater_alpha
from evalkit.errors import ConfigError

FloatArray = npt.NDArray[np.float64]

#: Self-agreement below this flags a judge as unstable (Krippendorff: alpha >= 0.667 is the
#: lowest for tentative conclusions, 0.8 for reliable ones).
STABLE_ALPHA = 0.667

#: Distinct scores up to which an unlabelled scorer's scale is taken as ordered levels.
_MAX_LEVELS = 11

REPEATS = "repeats"
"""What ``scorer_agreement.compared_with`` says for a judge compared with itself."""


@dataclass(frozen=True, slots=True)
class JudgeStability:
    """One LLM-judged scorer's agreement with itself across the repeats of its pairs.

    Attributes:
        scorer_id: The scorer.
        repeats: Executions per pair (K).
        kind: How the scores were compared (the labels' kind, or inferred from the scores).
        pairs: Pairs with at least two scored executions (the others cannot disagree).
        alpha: Krippendorff's alpha across the executions, with a bootstrap interval over
            the pairs; NaN when undefined (every score the same).
        mean_spread: The mean over pairs of the standard deviation of their executions.
        unstable_share: The share of pairs whose scored executions are not all equal.
        noise_variance: The mean over pairs of the variance of their executions: the
            variance judge noise adds to one execution's score.
        failed: Executions that failed (no score), over every pair.
        fresh_share: The share of the pairs whose execution 0 asked the judge rather than
            the judge cache (a cached score repeats an earlier run's, noise and all).
    """

    scorer_id: str
    repeats: int
    kind: LabelKind
    pairs: int
    alpha: Estimate
    mean_spread: float
    unstable_share: float
    noise_variance: float
    failed: int = 0
    fresh_share: float = 1.0

    @property
    def flagged(self) -> bool:
        """Whether the judge disagrees with itself too much for its regressions to be
        believed: alpha below `STABLE_ALPHA`, or undefined while pairs differ."""
        if math.isnan(self.alpha.value):
            return self.unstable_share > 0
        return self.alpha.value < STABLE_ALPHA

    def note(self) -> str | None:
        """The sentence flagging this judge (or saying it could not be measured), or None."""
        failed = f"; {self.failed} executions failed" if self.failed else ""
        if self.pairs == 0:
            return f"not measured: no pair has two scored executions{failed}"
        if not self.flagged:
            return f"{self.failed} executions failed (left out)" if self.failed else None
        value = self.alpha.value
        if math.isnan(value):
            alpha = "undefined self-agreement alpha (too few distinct scores)"
        else:
            alpha = f"self-agreement alpha {value:.3f}, below {STABLE_ALPHA},"
        return (
            f"judge unstable: {alpha} across {self.repeats} executions "
            f"({self.unstable_share:.0%} of {self.pairs} pairs changed score{failed}): its "
            "regressions are not to be believed"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``flagged`` and its ``note``."""
        return {
            "scorer_id": self.scorer_id, "repeats": self.repeats, "kind": self.kind,
            "pairs": self.pairs, "alpha": self.alpha.to_dict(),
            "mean_spread": _json(self.mean_spread), "unstable_share": _json(self.unstable_share),
            "noise_variance": _json(self.noise_variance), "failed": self.failed,
            "fresh_share": _json(self.fresh_share),
            "flagged": self.flagged, "note": self.note(),
        }  # fmt: skip


def _json(value: float) -> float | None:
    return None if math.isnan(value) else value


def stability(
    scorer_id: str,
    executions: npt.ArrayLike,
    *,
    labels: LabelSpec | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> JudgeStability:
    """The self-agreement of one scorer's judge.

    Args:
        scorer_id: The scorer.
        executions: Executions x pairs: each execution's score of each pair (NaN where it
            failed).
        labels: The scorer's labels, whose kind and levels then say how scores compare (the
            scores snapped to the nearest level, as `agreement` does); None infers them
            from the scores (two values: binary; up to 11: ordered levels;
            one or more than 11: continuous, one value giving an undefined alpha).
        confidence: The alpha interval's coverage.
        seed: Seeds its bootstrap.
    """
    r = np.asarray(executions, dtype=np.float64)
    repeats = r.shape[0]
    present = ~np.isnan(r)
    failed = int(r.size - present.sum())
    kept = r[:, present.sum(axis=0) >= 2]
    pairs = kept.shape[1]
    if pairs == 0:
        nan = math.nan
        return JudgeStability(scorer_id, repeats, "continuous", 0, Estimate(nan, nan, nan),
                              nan, nan, nan, failed)  # fmt: skip
    kind, levels = _kind(kept, labels)
    rated = kept
    if levels is not None:
        grid = np.asarray(levels, dtype=np.float64)
        snapped = grid[snap(np.nan_to_num(kept), grid)]
        rated = np.where(np.isnan(kept), math.nan, snapped)
    alpha = inter_rater_alpha(rated, kind=kind, levels=levels, confidence=confidence, seed=seed)
    variance = np.nanvar(kept, axis=0, ddof=1)
    spread = float(np.sqrt(variance).mean())
    changed = float((np.nanmax(kept, axis=0) != np.nanmin(kept, axis=0)).mean())
    return JudgeStability(scorer_id, repeats, kind, pairs, alpha, spread, changed,
                          float(variance.mean()), failed)  # fmt: skip


def _kind(
    scores: FloatArray, labels: LabelSpec | None
) -> tuple[LabelKind, tuple[float, ...] | None]:
    present = scores[~np.isnan(scores)]
    if labels is not None:
        return resolve_kind(labels, present)
    seen = np.unique(present)
    if seen.size == 2:
        return "binary", tuple(float(v) for v in seen)
    if 2 < seen.size <= _MAX_LEVELS:
        return "ordinal", tuple(float(v) for v in seen)
    return "continuous", None


def noise_share(
    candidate_noise: float,
    baseline_noise: float | None,
    *,
    fresh_share: float = 1.0,
    n_paired: int,
    ci_low: float | None,
    ci_high: float | None,
    confidence: float,
) -> float | None:
    """The share (0 to 1) of a regression interval's variance that judge noise explains.

    ``candidate_noise`` and ``baseline_noise`` are the two runs' `JudgeStability.
    noise_variance`; a baseline that was not repeated (None) is taken to be as noisy as the
    candidate (the same judge asked twice). Only a pair the candidate's judge answered afresh
    carries noise in the difference: a score from the judge cache is the earlier run's own, so
    the noise is scaled by ``fresh_share`` (`JudgeStability.fresh_share`).
    ``ci_low``/``ci_high`` are the paired difference's interval at ``confidence`` over
    ``n_paired`` pairs. None when the interval says nothing (fewer than 2 pairs, no width) or
    the noise is unknown; at most 1 (more would say the noise is not independent across
    pairs, or the interval too narrow, and is shown as all of it).

    Raises:
        ConfigError: ``confidence`` not between 0 and 1 (exclusive).
    """
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    if ci_low is None or ci_high is None or n_paired < 2 or ci_high <= ci_low:
        return None
    noise = candidate_noise + (candidate_noise if baseline_noise is None else baseline_noise)
    noise *= fresh_share
    if math.isnan(noise):
        return None
    # The standard library's normal quantile (Wichura's AS241, accurate to about 1e-16).
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    se = (ci_high - ci_low) / (2 * z)
    return min(1.0, noise / n_paired / (se * se))


def stability_of(
    executions: Mapping[str, FloatArray],
    labels: Mapping[str, LabelSpec],
    *,
    fresh: Mapping[str, float] | None = None,
    confidence: float = 0.95,
) -> dict[str, JudgeStability]:
    """`stability` of every repeated scorer (``executions`` by scorer id), with the
    share of its pairs judged afresh (``fresh``; all of them when not given)."""
    found = {}
    for scorer_id, r in executions.items():
        s = stability(scorer_id, r, labels=labels.get(scorer_id), confidence=confidence)
        share = (fresh or {}).get(scorer_id)
        found[scorer_id] = s if share is None else dataclasses.replace(s, fresh_share=share)
    return found
