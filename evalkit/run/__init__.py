"""The orchestrator: ``run_evals`` fans scorers out over a dataset and records the results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.run._api import run_evals, run_evals_sync
    from evalkit.run._experiment import ExperimentResult
    from evalkit.run._interrupt import RunInterrupted
    from evalkit.run._options import RunOptions
    from evalkit.run._outcome import ErrorInfo, ItemResult, ScorerOutcome
    from evalkit.run._summary import RunSummary, ScorerSummary
    from evalkit.run._thresholds import ScorerVerdict, Threshold, Verdict
    from evalkit.run._verdict_record import (
        VerdictNotKeptWarning,
        merge_shard_stores,
        record_merged_verdict,
        record_run_verdict,
    )

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.run._api": (
            "run_evals",
            "run_evals_sync",
        ),
        "evalkit.run._experiment": ("ExperimentResult",),
        "evalkit.run._interrupt": ("RunInterrupted",),
        "evalkit.run._options": ("RunOptions",),
        "evalkit.run._outcome": (
            "ErrorInfo",
            "ItemResult",
            "ScorerOutcome",
        ),
        "evalkit.run._summary": (
            "RunSummary",
            "ScorerSummary",
        ),
        "evalkit.run._thresholds": (
            "ScorerVerdict",
            "Threshold",
            "Verdict",
        ),
        "evalkit.run._verdict_record": (
            "VerdictNotKeptWarning",
            "merge_shard_stores",
            "record_merged_verdict",
            "record_run_verdict",
        ),
    },
)

__all__ = [
    "ErrorInfo",
    "ExperimentResult",
    "ItemResult",
    "RunInterrupted",
    "RunOptions",
    "RunSummary",
    "ScorerOutcome",
    "ScorerSummary",
    "ScorerVerdict",
    "Threshold",
    "Verdict",
    "VerdictNotKeptWarning",
    "merge_shard_stores",
    "record_merged_verdict",
    "record_run_verdict",
    "run_evals",
    "run_evals_sync",
]
