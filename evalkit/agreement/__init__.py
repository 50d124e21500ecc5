"""Agreement of scorers with human labels: is the LLM judge a judge people would agree with?

`agreement` compares a judge's scores with human labels of the same items: accuracy and
Cohen's kappa (quadratic-weighted too for ordinal labels), or Pearson, Spearman and the mean
absolute error for continuous ones, each with a percentile bootstrap interval.
`inter_rater_alpha` measures how far the people agree with each other (Krippendorff's
alpha): a judge cannot be expected to agree with people better than they agree among
themselves. `disagreements` picks the pairs worth reading first. `stability`
measures a judge against itself over repeated executions (`JudgeStability`), and
`noise_share` how much of a regression interval its noise explains.

The labels of a run (`LabelSpec`, `parse_labels`), its agreement gates
(`parse_min_agreement`) and the measuring of a run's scorers (`ScorerAgreement`,
`measure_stored`) build on these. Names are imported on first use (``evalkit._lazy``),
so ``import evalkit.agreement`` does not load the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.agreement._arguments import LabelKind
    from evalkit.agreement._gate import agreement_reasons, parse_min_agreement
    from evalkit.agreement._labels import (
        LabelSpec,
        check_label_columns,
        config_of,
        parse_labels,
        with_label_columns,
    )
    from evalkit.agreement._measure import (
        CONSENSUS,
        RATERS,
        Disagreement,
        ScorerAgreement,
        resolve_kind,
    )
    from evalkit.agreement._merged import measure_merged
    from evalkit.agreement._record import (
        measure_labels,
        measure_stability,
        measure_stability_stored,
        measure_stored,
    )
    from evalkit.agreement._stability import REPEATS, JudgeStability, noise_share
    from evalkit.agreement._stats import Agreement, Estimate, agreement

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.agreement._arguments": ("LabelKind",),
        "evalkit.agreement._labels": (
            "LabelSpec",
            "check_label_columns",
            "config_of",
            "parse_labels",
            "with_label_columns",
        ),
        "evalkit.agreement._measure": (
            "CONSENSUS",
            "Disagreement",
            "RATERS",
            "ScorerAgreement",
            "resolve_kind",
        ),
        "evalkit.agreement._record": (
            "measure_labels",
            "measure_stability",
            "measure_stability_stored",
            "measure_stored",
        ),
        "evalkit.agreement._stats": (
            "Agreement",
            "Estimate",
            "agreement",
        ),
        "evalkit.agreement._gate": (
            "agreement_reasons",
            "parse_min_agreement",
        ),
        "evalkit.agreement._merged": ("measure_merged",),
        "evalkit.agreement._stability": (
            "JudgeStability",
            "REPEATS",
            "noise_share",
        ),
    },
)

__all__ = [
    "CONSENSUS",
    "RATERS",
    "REPEATS",
    "Agreement",
    "Disagreement",
    "Estimate",
    "JudgeStability",
    "LabelKind",
    "LabelSpec",
    "ScorerAgreement",
    "agreement",
    "agreement_reasons",
    "check_label_columns",
    "config_of",
    "measure_labels",
    "measure_merged",
    "measure_stability",
    "measure_stability_stored",
    "measure_stored",
    "noise_share",
    "parse_labels",
    "parse_min_agreement",
    "resolve_kind",
    "with_label_columns",
]
