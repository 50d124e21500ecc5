"""The orchestrator: ``run_evals`` fans scorers out over a dataset and records the results."""

from __future__ import annotations

from evalkit.run._api import run_evals, run_evals_sync
from evalkit.run._experiment import ExperimentResult, ExperimentStatus
from evalkit.run._outcome import ErrorInfo, ItemResult, ScorerOutcome
from evalkit.run._summary import RunSummary, ScorerSummary
from evalkit.run._thresholds import ScorerVerdict, Threshold, Verdict

__all__ = [
    "ErrorInfo",
    "ExperimentResult",
    "ExperimentStatus",
    "ItemResult",
    "RunSummary",
    "ScorerOutcome",
    "ScorerSummary",
    "ScorerVerdict",
    "Threshold",
    "Verdict",
    "run_evals",
    "run_evals_sync",
]
