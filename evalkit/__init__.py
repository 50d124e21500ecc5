"""evalkit: a batch evaluation runner for LLM applications.

The pipeline reads as the package does: dataset → target → scorer (+ judge) → run → store →
report/compare, with the CLI on top. Everything a user needs is importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.compare import Comparison, ScorerComparison, compare_experiments
    from evalkit.dataset import Dataset, Item, load_dataset
    from evalkit.errors import (
        BaselineError,
        ConfigError,
        DatasetError,
        EvalkitError,
        ExperimentFileError,
        ExperimentFileIssue,
        InvalidScoreError,
        JudgeError,
        PreflightError,
        PreflightIssue,
        ScorerInputError,
        ScorerRunError,
        StoreError,
        TargetError,
    )
    from evalkit.experiment_file import ExperimentFile, load_experiment_file
    from evalkit.judge import (
        Judge,
        JudgeAttempt,
        JudgeCache,
        JudgeCacheStats,
        JudgeCost,
        JudgeErrorInfo,
        JudgeExecution,
        JudgeUsage,
        RateLimiterStats,
        StepJudgeRecord,
        use_judge_cache,
    )
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
    from evalkit.scorer import (
        PromptStep,
        Scorer,
        ScorerRun,
        ScorerRunResult,
        StepResults,
        StepTimeoutError,
        create_scorer,
    )
    from evalkit.scorers import ScorerInfo, ScorerParam, get_scorer, list_scorers, scorer_info
    from evalkit.store import list_experiments, read_experiment, read_item_scores
    from evalkit.target import FunctionTarget, OpenAITarget, Target

__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.compare": (
            "Comparison",
            "ScorerComparison",
            "compare_experiments",
        ),
        "evalkit.dataset": (
            "Dataset",
            "Item",
            "load_dataset",
        ),
        "evalkit.errors": (
            "BaselineError",
            "ConfigError",
            "DatasetError",
            "EvalkitError",
            "ExperimentFileError",
            "ExperimentFileIssue",
            "InvalidScoreError",
            "JudgeError",
            "PreflightError",
            "PreflightIssue",
            "ScorerInputError",
            "ScorerRunError",
            "StoreError",
            "TargetError",
        ),
        "evalkit.experiment_file": (
            "ExperimentFile",
            "load_experiment_file",
        ),
        "evalkit.judge": (
            "Judge",
            "JudgeCache",
            "JudgeAttempt",
            "JudgeCacheStats",
            "JudgeCost",
            "JudgeErrorInfo",
            "JudgeExecution",
            "JudgeUsage",
            "RateLimiterStats",
            "StepJudgeRecord",
            "use_judge_cache",
        ),
        "evalkit.run": (
            "ErrorInfo",
            "ExperimentResult",
            "ItemResult",
            "RunSummary",
            "ScorerOutcome",
            "ScorerSummary",
            "ScorerVerdict",
            "Threshold",
            "Verdict",
            "run_evals",
            "run_evals_sync",
        ),
        "evalkit.scorer": (
            "PromptStep",
            "Scorer",
            "ScorerRun",
            "ScorerRunResult",
            "StepResults",
            "StepTimeoutError",
            "create_scorer",
        ),
        "evalkit.scorers": (
            "ScorerInfo",
            "ScorerParam",
            "get_scorer",
            "list_scorers",
            "scorer_info",
        ),
        "evalkit.store": (
            "list_experiments",
            "read_experiment",
            "read_item_scores",
        ),
        "evalkit.target": (
            "FunctionTarget",
            "OpenAITarget",
            "Target",
        ),
    },
)

__version__ = "0.1.0"

__all__ = [
    "BaselineError",
    "Comparison",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "ErrorInfo",
    "EvalkitError",
    "ExperimentFile",
    "ExperimentFileError",
    "ExperimentFileIssue",
    "ExperimentResult",
    "FunctionTarget",
    "InvalidScoreError",
    "Item",
    "ItemResult",
    "Judge",
    "JudgeAttempt",
    "JudgeCache",
    "JudgeCacheStats",
    "JudgeCost",
    "JudgeError",
    "JudgeErrorInfo",
    "JudgeExecution",
    "JudgeUsage",
    "OpenAITarget",
    "PreflightError",
    "PreflightIssue",
    "PromptStep",
    "RateLimiterStats",
    "RunSummary",
    "Scorer",
    "ScorerComparison",
    "ScorerInfo",
    "ScorerInputError",
    "ScorerOutcome",
    "ScorerParam",
    "ScorerRun",
    "ScorerRunError",
    "ScorerRunResult",
    "ScorerSummary",
    "ScorerVerdict",
    "StepJudgeRecord",
    "StepResults",
    "StepTimeoutError",
    "StoreError",
    "Target",
    "TargetError",
    "Threshold",
    "Verdict",
    "compare_experiments",
    "create_scorer",
    "get_scorer",
    "list_experiments",
    "list_scorers",
    "load_dataset",
    "load_experiment_file",
    "read_experiment",
    "read_item_scores",
    "run_evals",
    "run_evals_sync",
    "scorer_info",
    "use_judge_cache",
]
