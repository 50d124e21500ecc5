"""Comparing two experiments: paired statistics and a regression verdict per scorer.

:func:`compare_experiments` pairs the items of a baseline and a candidate experiment by id and,
per scorer, judges the mean difference with a paired bootstrap confidence interval and a paired
sign-flip test. The two statistics are public too, for use on any paired differences.
"""

from __future__ import annotations

from evalkit.compare._compare import (
    Comparison,
    Direction,
    ScorerComparison,
    Verdict,
    compare_experiments,
)
from evalkit.compare._inputs import ScoreTable
from evalkit.compare._stats import SeedLike, paired_bootstrap_ci, sign_flip_test

__all__ = [
    "Comparison",
    "Direction",
    "ScoreTable",
    "ScorerComparison",
    "SeedLike",
    "Verdict",
    "compare_experiments",
    "paired_bootstrap_ci",
    "sign_flip_test",
]
