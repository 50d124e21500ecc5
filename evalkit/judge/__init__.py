"""LLM judges: the models prompt steps ask, the shared clients, and the records of every call."""

from __future__ import annotations

from evalkit.judge._clients import (
    aclose_shared_clients,
    openai_client_for,
    shared_limiter,
    shared_openai_client,
)
from evalkit.judge._judge import Judge
from evalkit.judge._records import (
    JudgeCost,
    JudgeErrorInfo,
    JudgeExecution,
    JudgeUsage,
    StepJudgeRecord,
)
from evalkit.judge._usage import normalize_usage, reported_cost

__all__ = [
    "Judge",
    "JudgeCost",
    "JudgeErrorInfo",
    "JudgeExecution",
    "JudgeUsage",
    "StepJudgeRecord",
    "aclose_shared_clients",
    "normalize_usage",
    "openai_client_for",
    "reported_cost",
    "shared_limiter",
    "shared_openai_client",
]
