"""evalkit: a batch evaluation runner for LLM applications.

The pipeline reads as the package does: dataset → target → scorer (+ judge) → run → store →
report/compare, with the CLI on top. Everything a user needs is importable from here.
"""

from __future__ import annotations

from evalkit.dataset import Dataset, Item, load_dataset
from evalkit.errors import (
    ConfigError,
    DatasetError,
    EvalkitError,
    InvalidScoreError,
    JudgeError,
    ScorerRunError,
    StoreError,
    TargetError,
)
from evalkit.judge import JudgeCost, JudgeErrorInfo, JudgeExecution, JudgeUsage, StepJudgeRecord
from evalkit.run import (
    ErrorInfo,
    ExperimentResult,
    ItemResult,
    RunSummary,
    ScorerOutcome,
    ScorerSummary,
    ScorerVerdict,
    Threshold,
    Verdict,
    run_evals,
    run_evals_sync,
)
from evalkit.scorer import Scorer, ScorerRun, ScorerRunResult, StepResults, create_scorer
from evalkit.store import list_experiments, read_experiment, read_item_scores
from evalkit.target import FunctionTarget, Target

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Dataset",
    "DatasetError",
    "ErrorInfo",
    "EvalkitError",
    "ExperimentResult",
    "FunctionTarget",
    "InvalidScoreError",
    "Item",
    "ItemResult",
    "JudgeCost",
    "JudgeError",
    "JudgeErrorInfo",
    "JudgeExecution",
    "JudgeUsage",
    "RunSummary",
    "Scorer",
    "ScorerOutcome",
    "ScorerRun",
    "ScorerRunError",
    "ScorerRunResult",
    "ScorerSummary",
    "ScorerVerdict",
    "StepJudgeRecord",
    "StepResults",
    "StoreError",
    "Target",
    "TargetError",
    "Threshold",
    "Verdict",
    "create_scorer",
    "list_experiments",
    "load_dataset",
    "read_experiment",
    "read_item_scores",
    "run_evals",
    "run_evals_sync",
]
