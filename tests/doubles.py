"""Real test doubles shared by the run and store tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit import JudgeCost, JudgeError, JudgeErrorInfo, JudgeExecution, JudgeUsage, ScorerRun
from evalkit.scorer import RunTrace


@dataclass
class ScriptedJudgeStep:
    """A prompt-step double implementing the public :class:`~evalkit.scorer.Step` protocol.

    Like a real prompt step it writes its prompt and a :class:`JudgeExecution` into the run's
    trace, then returns ``reply`` or, when ``fails(run)`` is true, records a failed execution
    and raises :class:`JudgeError`.
    """

    reply: Any
    model: str = "gpt-4o-mini"
    provider: str = "openai"
    usage: JudgeUsage = field(
        default_factory=lambda: JudgeUsage(
            input_tokens=1000, output_tokens=200, total_tokens=1200, cached_input_tokens=400
        )
    )
    cost: JudgeCost | None = None
    duration_ms: float = 10.0
    fails: Callable[[ScorerRun], bool] = lambda run: False
    duration: Callable[[ScorerRun], float] | None = None
    timing: Callable[[ScorerRun], tuple[float, float]] | None = None  # (queue_ms, request_ms)

    def judge_for(self, default: Any) -> None:
        return None  # it asks no real judge: nothing for a preflight to check

    def bind(self, kind: str, owner: Any) -> Callable[..., Any]:
        async def step(run: ScorerRun, results: Any, score: Any, trace: RunTrace) -> Any:
            prompt = f"{kind} for {owner.name}: {run.input}"
            duration_ms = self.duration(run) if self.duration else self.duration_ms
            trace.prompts[kind] = prompt  # type: ignore[index]
            if self.fails(run):
                trace.record(
                    kind,  # type: ignore[arg-type]
                    JudgeExecution(
                        status="failed",
                        prompt=prompt,
                        judge_model_id=self.model,
                        judge_provider=self.provider,
                        attempt_count=1,
                        model_call_count=0,
                        duration_ms=duration_ms,
                        raw_output="<html>502</html>",
                        finish_reason=None,
                        error=JudgeErrorInfo("JudgeError", "HTTP 502 from judge", "502"),
                    ),
                )
                raise JudgeError("HTTP 502 from judge", code="502")
            trace.record(
                kind,  # type: ignore[arg-type]
                JudgeExecution(
                    status="success",
                    prompt=prompt,
                    judge_model_id=self.model,
                    judge_provider=self.provider,
                    attempt_count=1,
                    model_call_count=1,
                    duration_ms=duration_ms,
                    output=self.reply,
                    usage=self.usage,
                    cost=self.cost,
                    queue_ms=self.timing(run)[0] if self.timing else None,
                    request_ms=self.timing(run)[1] if self.timing else None,
                ),
            )
            return self.reply

        return step


#: The libraries issue 31 took out of the base install: the tests' oracles only.
STATISTICS_LIBRARIES = ("sklearn", "scipy", "krippendorff")


def without_modules(folder: Path, *names: str) -> dict[str, str]:
    """An environment whose Python processes cannot import ``names``, as on an install without
    them: a package of each name that raises ``ModuleNotFoundError``, in ``folder``, first on
    ``PYTHONPATH`` (ahead of site-packages, inherited by child processes)."""
    for name in names:
        (folder / name).mkdir(parents=True, exist_ok=True)
        (folder / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError({f'No module named {name!r} (absent in this test)'!r},"
            f" name={name!r})\n",
            encoding="utf-8",
        )
    path = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}
