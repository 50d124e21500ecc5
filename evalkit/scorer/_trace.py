"""What prompt steps leave behind during one run: prompts sent and judge executions."""

from __future__ import annotations

from evalkit.judge import JudgeExecution, StepJudgeRecord
from evalkit.scorer._result import StepName


class RunTrace:
    """Mutable per-run record that prompt steps write into, even when they fail."""

    __slots__ = ("executions", "prompts")

    def __init__(self) -> None:
        self.prompts: dict[StepName, str] = {}
        self.executions: dict[StepName, list[JudgeExecution]] = {}

    def record(self, step: StepName, execution: JudgeExecution) -> None:
        """Append a judge execution for ``step``."""
        self.executions.setdefault(step, []).append(execution)

    def judge(self) -> dict[str, StepJudgeRecord]:
        """The ``judge`` field of a result: executions per step, in order."""
        return {step: StepJudgeRecord(tuple(ex)) for step, ex in self.executions.items()}
