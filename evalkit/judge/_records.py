"""Records of judge calls: what one prompt step asked, got and spent (SPEC §1 table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from evalkit._json import to_jsonable

ExecutionStatus = Literal["success", "failed"]


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """Token usage of a judge execution, normalised across providers and summed over attempts."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
        )

    def to_dict(self) -> dict[str, int]:
        """The usage as a plain dict."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


@dataclass(frozen=True, slots=True)
class JudgeCost:
    """A cost the provider reported itself (never an estimate)."""

    amount: float
    unit: str
    source: str


@dataclass(frozen=True, slots=True)
class JudgeErrorInfo:
    """Why a judge execution failed: ``{name, message, code}``."""

    name: str
    message: str
    code: str | None = None


@dataclass(frozen=True, slots=True)
class JudgeExecution:
    """One execution of a prompt step against a judge model.

    ``status`` says whether the step's logic ran to the end, not whether the answer was good.
    A success always has ``output`` and ``usage``. A failure has ``error`` and only what was
    received: ``output`` only if it was validated before a later failure, and ``raw_output``
    is never parsed into ``output``.
    """

    status: ExecutionStatus
    prompt: str
    judge_model_id: str
    judge_provider: str | None
    attempt_count: int
    model_call_count: int
    duration_ms: float
    output: Any = None
    usage: JudgeUsage | None = None
    raw_output: str | None = None
    finish_reason: str | None = None
    error: JudgeErrorInfo | None = None
    cost: JudgeCost | None = None
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict holding only the fields this execution has."""
        out: dict[str, Any] = {
            "status": self.status,
            "prompt": self.prompt,
            "judge_model_id": self.judge_model_id,
            "judge_provider": self.judge_provider,
            "attempt_count": self.attempt_count,
            "model_call_count": self.model_call_count,
            "duration_ms": self.duration_ms,
        }
        if self.status == "success" or self.output is not None:
            out["output"] = to_jsonable(self.output)
        if self.usage is not None:
            out["usage"] = self.usage.to_dict()
        if self.status == "failed":
            out["raw_output"] = self.raw_output
            out["finish_reason"] = self.finish_reason
        if self.error is not None:
            out["error"] = {
                "name": self.error.name,
                "message": self.error.message,
                "code": self.error.code,
            }
        if self.cost is not None:
            out["cost"] = {
                "amount": self.cost.amount,
                "unit": self.cost.unit,
                "source": self.cost.source,
            }
        if self.cached:
            out["cached"] = True
        return out


@dataclass(frozen=True, slots=True)
class StepJudgeRecord:
    """The judge executions of one prompt step, in order (``result.judge[step].executions``)."""

    executions: tuple[JudgeExecution, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{"executions": [...]}``."""
        return {"executions": [e.to_dict() for e in self.executions]}
