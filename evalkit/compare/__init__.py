"""Comparing two experiments: paired statistics and a regression verdict per scorer.

[`compare_experiments`][evalkit.compare_experiments] pairs the items of a baseline and a candidate
experiment by id and, per scorer, judges the mean difference with a paired confidence interval
([`paired_interval`][evalkit.compare.paired_interval]) and a paired sign-flip test. The
statistics are public too, for use on any paired differences. `diff_items` lists the paired
items of two stored runs whose score changed, filtered and paginated in the store;
`compare_slices` judges each slice (a metadata key's value) with a Holm correction over the
slices, and `stored_slices` does so for two stored runs.
[`baseline_candidates`][evalkit.compare.baseline_candidates] and
[`choose_baseline`][evalkit.compare.choose_baseline] pick the run a candidate is judged against
(``"latest"``: the newest passing run, or the pinned one) and say why; `find_experiment`
finds the run a user's reference (an id, a name, a prefix) designates, `baseline_for` the
baseline one designates for a candidate, and `pin_run` pins one;
[`read_paired_scores`][evalkit.compare.read_paired_scores] reads two stored runs for
`compare_experiments`, pairing a prebuilt scorer's old stored id with its new one, and
`scorer_directions` which way each of its scorers is better; `declared_slices` gives the slice
keys a stored run declared.
`compare_judges` compares the
LLM judges of two stored runs that differ in judge model or prompt version: the two judges'
agreement with each other and, side by side, each one's with the human labels.
"""

from __future__ import annotations

from evalkit.compare._baseline import (
    LATEST,
    LATEST_COMPLETE,
    Baseline,
    baseline_candidates,
    choose_baseline,
)
from evalkit.compare._compare import (
    Comparison,
    ComparisonVerdict,
    Direction,
    ScorerComparison,
    compare_experiments,
)
from evalkit.compare._diff import DiffOrder, ItemDiff, diff_items
from evalkit.compare._judges import JudgeAgreement, JudgeComparison, JudgeSide, compare_judges
from evalkit.compare._refs import baseline_for, find_experiment, pin_run
from evalkit.compare._scorer_pairs import read_paired_scores, scorer_directions
from evalkit.compare._slices import (
    SliceComparison,
    changes_by_slice,
    declared_slices,
    stored_slices,
)
from evalkit.compare._stats import paired_bootstrap_ci, paired_interval, sign_flip_test

__all__ = [
    "LATEST",
    "LATEST_COMPLETE",
    "Baseline",
    "Comparison",
    "ComparisonVerdict",
    "DiffOrder",
    "Direction",
    "ItemDiff",
    "JudgeAgreement",
    "JudgeComparison",
    "JudgeSide",
    "ScorerComparison",
    "SliceComparison",
    "baseline_candidates",
    "baseline_for",
    "changes_by_slice",
    "choose_baseline",
    "compare_experiments",
    "compare_judges",
    "declared_slices",
    "diff_items",
    "find_experiment",
    "paired_bootstrap_ci",
    "paired_interval",
    "pin_run",
    "read_paired_scores",
    "scorer_directions",
    "sign_flip_test",
    "stored_slices",
]


def __getattr__(name: str) -> object:
    # ``Verdict`` was this package's name for ComparisonVerdict; ``evalkit.Verdict`` is the
    # run's gate verdict, a different thing. Kept one release for code that imported it.
    if name == "Verdict":
        import warnings

        warnings.warn(
            "evalkit.compare.Verdict is renamed ComparisonVerdict",
            DeprecationWarning,
            stacklevel=2,
        )
        return ComparisonVerdict
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
