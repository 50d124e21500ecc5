"""Scripting the judge server per step, and checking the judge calls a run recorded."""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from typing import Any

import pytest

from evalkit import ScorerInputError, ScorerRunError, ScorerRunResult
from evalkit.scorer import Scorer
from evalkit.testing import FakeOpenAIServer, Rule


def opening(template: Template | str) -> str:
    """The literal start of a prompt template: what a rule matches that step's requests by."""
    text = template.template if isinstance(template, Template) else template
    return text.splitlines()[0].split("$")[0]


def script(server: FakeOpenAIServer, replies: Mapping[Template | str, Any]) -> None:
    """Answer the requests of each prompt template (matched by its first line) with a reply."""
    for template, reply in replies.items():
        server.add_rule(Rule(opening(template), reply=reply))


def verdicts(*values: str, key: str = "verdict", **fields: Any) -> dict[str, Any]:
    """``{"verdicts": [...]}`` with one verdict per value (text fields filled in)."""
    return {"verdicts": [{**fields, key: value, "reason": f"because {value}"} for value in values]}


def assert_judged(
    result: ScorerRunResult, steps: Mapping[str, int], *, model: str = "fake-judge"
) -> None:
    """The run asked the judge exactly ``steps`` (step → executions), each a first-try success."""
    assert {step: len(record.executions) for step, record in result.judge.items()} == steps
    for record in result.judge.values():
        for execution in record.executions:
            assert execution.status == "success"
            assert execution.attempt_count == 1
            assert execution.judge_model_id == model
            assert execution.usage is not None
            assert (execution.usage.total_tokens or 0) > 0


def system_messages(server: FakeOpenAIServer) -> set[str]:
    """The distinct system messages the server received."""
    return {
        message["content"]
        for body in server.requests
        for message in body["messages"]
        if message["role"] == "system"
    }


def user_prompts(server: FakeOpenAIServer) -> list[str]:
    """The user message of each request, in arrival order."""
    return [
        message["content"]
        for body in server.requests
        for message in body["messages"]
        if message["role"] == "user"
    ]


async def refused(scorer: Scorer, *, step: str = "preprocess", **row: Any) -> ScorerInputError:
    """Run ``scorer`` on a row it must refuse before any judge call; return the cause."""
    row.setdefault("input", "question")
    row.setdefault("output", "answer")
    with pytest.raises(ScorerRunError) as caught:
        await scorer.run(**row)
    assert caught.value.failed_step == step
    assert caught.value.result is None or not caught.value.result.judge.get(step)
    cause = caught.value.__cause__
    assert isinstance(cause, ScorerInputError), cause
    return cause
