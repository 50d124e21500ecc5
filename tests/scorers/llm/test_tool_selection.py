from __future__ import annotations

from typing import Any

import pytest

from evalkit import ConfigError, Judge
from evalkit.scorers import tool_call_accuracy_llm
from evalkit.scorers._tool_selection import ANALYZE, INSTRUCTIONS, REASON, tool_catalogue
from evalkit.testing import FakeOpenAIServer
from tests.scorers.llm._helpers import assert_judged, refused, script, system_messages, user_prompts

CALLS = {
    "role": "assistant",
    "tool_calls": [
        {"type": "function", "function": {"name": "search_web", "arguments": "{}"}},
        {"type": "function", "function": {"name": "send_email", "arguments": "{}"}},
    ],
}
OPENAI_TOOLS = [
    {"type": "function", "function": {"name": "search_web", "description": "Searches the web."}},
    {"type": "function", "function": {"name": "send_email", "description": "Sends an email."}},
]


def evaluations(*appropriate: bool, missing: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "evaluations": [
            {"tool_called": f"tool{i}", "reasoning": "r", "was_appropriate": ok}
            for i, ok in enumerate(appropriate)
        ],
        "missing_tools": list(missing),
    }


async def test_the_share_of_appropriate_calls(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {ANALYZE: evaluations(True, False), REASON: "Email was not asked for."})
    scorer = tool_call_accuracy_llm(judge=llm_judge)
    result = await scorer.run(
        input="Find the weather in Paris",
        output=CALLS,
        request_context={"tools": OPENAI_TOOLS},
    )
    assert (result.score, result.reason) == (0.5, "Email was not asked for.")
    assert_judged(result, {"analyze": 1, "generate_reason": 1})
    assert result.preprocess_step_result == {
        "tools_called": ["search_web", "send_email"],
        "available_tools": {"search_web": "Searches the web.", "send_email": "Sends an email."},
    }
    analyze, reason = user_prompts(llm_server)
    assert "<tools_called>\n1. search_web\n2. send_email\n</tools_called>" in analyze
    assert "1. search_web: Searches the web.\n2. send_email: Sends an email." in analyze
    assert "tool1: not appropriate (r)" in reason
    assert system_messages(llm_server) == {INSTRUCTIONS}


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        (evaluations(), 1.0),  # no call, and none was needed
        (evaluations(missing=("search_web",)), 0.0),  # no call, but one was needed
    ],
)
async def test_formula(
    llm_server: FakeOpenAIServer, llm_judge: Judge, reply: dict[str, Any], score: float
) -> None:
    script(llm_server, {ANALYZE: reply})
    scorer = tool_call_accuracy_llm(judge=llm_judge, explain=False)
    result = await scorer.run(input="Weather?", output="Which city?")
    assert result.score == score
    assert "<tools_called>\n(none)\n</tools_called>" in user_prompts(llm_server)[0]
    assert "(not given: judge from the request alone)" in user_prompts(llm_server)[0]


async def test_the_tools_param_beats_the_row(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    script(llm_server, {ANALYZE: evaluations(True)})
    scorer = tool_call_accuracy_llm(
        judge=llm_judge, available_tools={"lookup": "Looks up."}, explain=False, scale=3
    )
    result = await scorer.run(
        input="q", output='["lookup"]', request_context={"tools": OPENAI_TOOLS}
    )
    assert result.score == 3.0
    assert result.preprocess_step_result["available_tools"] == {"lookup": "Looks up."}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": "Does A.", "b": None}, {"a": "Does A.", "b": ""}),
        (OPENAI_TOOLS, {"search_web": "Searches the web.", "send_email": "Sends an email."}),
        ([{"name": "a", "description": "A."}, "b", 3], {"a": "A.", "b": ""}),
        ("only_one", {"only_one": ""}),
    ],
)
def test_tool_catalogue(value: Any, expected: dict[str, str]) -> None:
    assert tool_catalogue(value) == expected


async def test_an_empty_input_fails_before_any_call(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    cause = await refused(tool_call_accuracy_llm(judge=llm_judge), input="", output=CALLS)
    assert cause.field == "input"
    assert llm_server.stats.requests == 0


def test_empty_available_tools_are_refused() -> None:
    with pytest.raises(ConfigError, match="parameter 'available_tools': is empty"):
        tool_call_accuracy_llm(available_tools={})


async def test_the_share_is_over_every_call_sent(
    llm_server: FakeOpenAIServer, llm_judge: Judge
) -> None:
    calls = [{"type": "function", "function": {"name": n, "arguments": "{}"}} for n in "abcd"]
    script(llm_server, {ANALYZE: evaluations(True, True, True, False)})
    scorer = tool_call_accuracy_llm(judge=llm_judge, explain=False)
    result = await scorer.run(input="Weather?", output={"tool_calls": calls})
    assert result.score == 0.75
    assert "<tools_called>\n1. a\n2. b\n3. c\n4. d\n</tools_called>" in user_prompts(llm_server)[0]
