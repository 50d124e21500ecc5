"""evalkit: a batch evaluation runner for LLM applications.

The pipeline reads as the package does: dataset → target → scorer (+ judge) → run → store →
report/compare, with the CLI on top. Everything a user needs is importable from here.
"""

from __future__ import annotations

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
from evalkit.judge import (
    Judge,
    JudgeCost,
    JudgeErrorInfo,
    JudgeExecution,
    JudgeUsage,
    StepJudgeRecord,
)
from evalkit.scorer import (
    PromptStep,
    Scorer,
    ScorerRun,
    ScorerRunResult,
    StepResults,
    create_scorer,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "DatasetError",
    "EvalkitError",
    "InvalidScoreError",
    "Judge",
    "JudgeCost",
    "JudgeError",
    "JudgeErrorInfo",
    "JudgeExecution",
    "JudgeUsage",
    "PromptStep",
    "Scorer",
    "ScorerRun",
    "ScorerRunError",
    "ScorerRunResult",
    "StepJudgeRecord",
    "StepResults",
    "StoreError",
    "TargetError",
    "create_scorer",
]
