"""Comparing two experiments: paired statistics and a regression verdict per scorer.

[`compare_experiments`][evalkit.compare_experiments] pairs the items of a baseline and a candidate
experiment by id and, per scorer, judges the mean difference with a paired confidence interval
([`paired_interval`][evalkit.compare.paired_interval]) and a paired sign-flip test. The
statistics are public too, for use on any paired differences. `diff_items` lists the paired
items of two stored runs whose score changed, filtered and paginated in the store;
`stored_slices` judges each slice (a metadata key's value) of two stored runs with a Tarone-Holm
correction over the slices.
[`baseline_candidates`][evalkit.compare.baseline_candidates] and
[`choose_baseline`][evalkit.compare.choose_baseline] pick the run a candidate is judged against
(``"latest"``: the newest passing run, or the pinned one) and say why; `find_experiment`
finds the run a user's reference (an id, a name, a prefix) designates, `baseline_for` the
baseline one designates for a candidate, and `pin_run` pins one;
[`read_paired_scores`][evalkit.compare.read_paired_scores] reads two stored runs for
`compare_experiments`, pairing a prebuilt scorer's old stored id with its new one, and
`scorer_directions` which way each of its scorers is better; `declared_slices` gives the slice
keys a stored run declared. [`items_needed`][evalkit.compare.items_needed] says how many paired
items a comparison like one already made needs to detect a given drop, and
[`minimum_detectable_drop`][evalkit.compare.minimum_detectable_drop] the drop it detects at a
given power.
`compare_judges` compares the
LLM judges of two stored runs that differ in judge model or prompt version: the two judges'
agreement with each other and, side by side, each one's with the human labels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.compare._baseline import LATEST as LATEST
    from evalkit.compare._baseline import LATEST_COMPLETE as LATEST_COMPLETE
    from evalkit.compare._baseline import Baseline as Baseline
    from evalkit.compare._baseline import baseline_candidates as baseline_candidates
    from evalkit.compare._baseline import choose_baseline as choose_baseline
    from evalkit.compare._compare import Comparison as Comparison
    from evalkit.compare._compare import ComparisonVerdict as ComparisonVerdict
    from evalkit.compare._compare import Direction as Direction
    from evalkit.compare._compare import ScorerComparison as ScorerComparison
    from evalkit.compare._compare import compare_experiments as compare_experiments
    from evalkit.compare._diff import DiffOrder as DiffOrder
    from evalkit.compare._diff import ItemDiff as ItemDiff
    from evalkit.compare._diff import diff_items as diff_items
    from evalkit.compare._inputs import ScoreTable as ScoreTable
    from evalkit.compare._judges import JudgeAgreement as JudgeAgreement
    from evalkit.compare._judges import JudgeComparison as JudgeComparison
    from evalkit.compare._judges import JudgeSide as JudgeSide
    from evalkit.compare._judges import compare_judges as compare_judges
    from evalkit.compare._planning import items_needed as items_needed
    from evalkit.compare._planning import minimum_detectable_drop as minimum_detectable_drop
    from evalkit.compare._refs import baseline_for as baseline_for
    from evalkit.compare._refs import find_experiment as find_experiment
    from evalkit.compare._refs import pin_run as pin_run
    from evalkit.compare._scorer_pairs import read_paired_scores as read_paired_scores
    from evalkit.compare._scorer_pairs import scorer_directions as scorer_directions
    from evalkit.compare._slices import SliceComparison as SliceComparison
    from evalkit.compare._slices import changes_by_slice as changes_by_slice
    from evalkit.compare._slices import declared_slices as declared_slices
    from evalkit.compare._slices import stored_slices as stored_slices
    from evalkit.compare._stats import paired_bootstrap_ci as paired_bootstrap_ci
    from evalkit.compare._stats import paired_interval as paired_interval
    from evalkit.compare._stats import sign_flip_test as sign_flip_test

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    _getattr, __dir__, __all__ = _declared_exports(globals())

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
            return _getattr("ComparisonVerdict")
        return _getattr(name)
