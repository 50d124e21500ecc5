"""evalkit: a batch evaluation runner for LLM applications.

The pipeline reads as the package does: dataset → target → scorer (+ judge) → run → store →
report/compare, with the CLI on top. Everything a user needs is importable from here.
"""

from __future__ import annotations

from evalkit.compare import Comparison, ScorerComparison, compare_experiments
from evalkit.errors import (
    ConfigError,
    DatasetError,
    EvalkitError,
    ExperimentFileError,
    ExperimentFileIssue,
    InvalidScoreError,
    JudgeError,
    ScorerInputError,
    ScorerRunError,
    StoreError,
    TargetError,
)
from evalkit.experiment_file import ExperimentFile, load_experiment_file
from evalkit.judge import (
    Judge,
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
from evalkit.scorer import (
    PromptStep,
    Scorer,
    ScorerRun,
    ScorerRunResult,
    StepResults,
    create_scorer,
)
from evalkit.scorers import ScorerInfo, ScorerParam, get_scorer, list_scorers, scorer_info

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "ConfigError",
    "DatasetError",
    "EvalkitError",
    "ExperimentFile",
    "ExperimentFileError",
    "ExperimentFileIssue",
    "InvalidScoreError",
    "Judge",
    "JudgeCache",
    "JudgeCacheStats",
    "JudgeCost",
    "JudgeError",
    "JudgeErrorInfo",
    "JudgeExecution",
    "JudgeUsage",
    "PromptStep",
    "RateLimiterStats",
    "Scorer",
    "ScorerComparison",
    "ScorerInfo",
    "ScorerInputError",
    "ScorerParam",
    "ScorerRun",
    "ScorerRunError",
    "ScorerRunResult",
    "StepJudgeRecord",
    "StepResults",
    "StoreError",
    "TargetError",
    "compare_experiments",
    "create_scorer",
    "get_scorer",
    "list_scorers",
    "load_experiment_file",
    "scorer_info",
    "use_judge_cache",
]
