"""LLM judges: the models prompt steps ask, and the records of every call."""

from __future__ import annotations

from evalkit.judge._records import (
    JudgeCost,
    JudgeErrorInfo,
    JudgeExecution,
    JudgeUsage,
    StepJudgeRecord,
)

__all__ = ["JudgeCost", "JudgeErrorInfo", "JudgeExecution", "JudgeUsage", "StepJudgeRecord"]
