"""Agreement of scorers with human labels: is the LLM judge a judge people would agree with?

`agreement` compares a judge's scores with human labels of the same items: accuracy and
Cohen's kappa (quadratic-weighted too for ordinal labels), or Pearson, Spearman and the mean
absolute error for continuous ones, each with a percentile bootstrap interval.
`inter_rater_alpha` measures how far the people agree with each other (Krippendorff's
alpha): a judge cannot be expected to agree with people better than they agree among
themselves. `disagreements` picks the pairs worth reading first. `stability`
measures a judge against itself over repeated executions (`JudgeStability`), and
`noise_share` how much of a regression interval its noise explains.

A run's labels (`LabelSpec`, ``labels=``), its agreement gates (``min_agreement=``) and
the measuring of a stored run's scorers (`ScorerAgreement`, `measure_stored`,
`agreement_from_store`) build on these. Names are imported on first use (``evalkit._lazy``),
so ``import evalkit.agreement`` does not load the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.agreement._arguments import LabelKind as LabelKind
    from evalkit.agreement._labels import LabelSpec as LabelSpec
    from evalkit.agreement._measure import CONSENSUS as CONSENSUS
    from evalkit.agreement._measure import RATERS as RATERS
    from evalkit.agreement._measure import Disagreement as Disagreement
    from evalkit.agreement._measure import ScorerAgreement as ScorerAgreement
    from evalkit.agreement._record import PairedInterval as PairedInterval
    from evalkit.agreement._record import agreement_from_store as agreement_from_store
    from evalkit.agreement._record import measure_stored as measure_stored
    from evalkit.agreement._record import noise_shares as noise_shares
    from evalkit.agreement._stability import REPEATS as REPEATS
    from evalkit.agreement._stability import JudgeStability as JudgeStability
    from evalkit.agreement._stability import noise_share as noise_share
    from evalkit.agreement._stats import Agreement as Agreement
    from evalkit.agreement._stats import Estimate as Estimate
    from evalkit.agreement._stats import agreement as agreement
    from evalkit.agreement._table import StoredAgreement as StoredAgreement
    from evalkit.agreement._table import read_agreement as read_agreement

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
