"""The orchestrator: ``run_evals`` fans scorers out over a dataset and records the results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.run._api import run_evals as run_evals
    from evalkit.run._api import run_evals_sync as run_evals_sync
    from evalkit.run._experiment import ExperimentResult as ExperimentResult
    from evalkit.run._interrupt import RunInterrupted as RunInterrupted
    from evalkit.run._options import RunOptions as RunOptions
    from evalkit.run._outcome import ErrorInfo as ErrorInfo
    from evalkit.run._outcome import ItemResult as ItemResult
    from evalkit.run._outcome import Repeat as Repeat
    from evalkit.run._outcome import ScorerOutcome as ScorerOutcome
    from evalkit.run._summary import RunSummary as RunSummary
    from evalkit.run._summary import ScorerSummary as ScorerSummary
    from evalkit.run._thresholds import ScorerVerdict as ScorerVerdict
    from evalkit.run._thresholds import Threshold as Threshold
    from evalkit.run._thresholds import Verdict as Verdict
    from evalkit.run._verdict_record import VerdictNotKeptWarning as VerdictNotKeptWarning
    from evalkit.run._verdict_record import merge_shard_stores as merge_shard_stores

# Type checkers read the imports above (a star import sees them too); the runtime derives
# the lazy map and __all__ from them.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = _declared_exports(globals())
