from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from evalkit import ConfigError
from evalkit.scorers import tool_call_accuracy
from evalkit.scorers._tools import in_order, tool_call_names
from tests.scorers._helpers import input_error, score


def openai_call(name: str) -> dict[str, Any]:
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": "{}"}}


ASSISTANT = {
    "role": "assistant",
    "content": None,
    "tool_calls": [openai_call("search"), openai_call("fetch")],
}
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": ASSISTANT, "finish_reason": "tool_calls"}],
}
RESPONSES = {
    "output": [
        {"type": "reasoning", "id": "r1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "fetch", "arguments": "{}"},
    ]
}
ANTHROPIC = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "x"}},
        {"type": "tool_use", "id": "t2", "name": "fetch", "input": {}},
    ],
}
MASTRA = {"role": "assistant", "toolInvocations": [{"toolName": "search"}, {"toolName": "fetch"}]}
CONVERSATION = [
    {"role": "user", "content": "find it"},
    {"role": "assistant", "tool_calls": [openai_call("search")]},
    {"role": "tool", "tool_call_id": "call_search", "name": "search", "content": "result"},
    {"role": "assistant", "tool_calls": [openai_call("fetch")]},
    {"role": "assistant", "content": "Done."},
]
LEGACY = [
    {"role": "assistant", "function_call": {"name": "search", "arguments": "{}"}},
    {"role": "assistant", "function_call": {"name": "fetch", "arguments": "{}"}},
]


@pytest.mark.parametrize(
    "output",
    [
        ASSISTANT,
        COMPLETION,
        RESPONSES,
        ANTHROPIC,
        MASTRA,
        CONVERSATION,
        {"messages": CONVERSATION},
        LEGACY,
        [openai_call("search"), openai_call("fetch")],
        [{"name": "search", "arguments": {}}, {"name": "fetch"}],
        ["search", "fetch"],
        json.dumps(COMPLETION),
        json.dumps(["search", "fetch"]),
        ChatCompletionMessage.model_validate(ASSISTANT),
    ],
)
def test_tool_call_names_reads_every_accepted_shape(output: Any) -> None:
    assert tool_call_names(output) == ["search", "fetch"]


@pytest.mark.parametrize(
    "output",
    [
        "I will search for it.",
        "",
        None,
        '"search"',
        {"name": "Paris", "country": "France"},
        {"role": "assistant", "content": "No tools needed."},
        {"messages": ["Hello", "How can I help?"]},
        [{"role": "user", "content": "hi"}, "free text"],
        [],
        42,
    ],
)
def test_tool_call_names_finds_none_in_other_values(output: Any) -> None:
    assert tool_call_names(output) == []


@pytest.mark.parametrize(
    ("actual", "expected", "result"),
    [
        (["a", "b", "c"], ["a", "c"], True),
        (["a", "b", "c"], ["c", "a"], False),
        (["a", "b", "a"], ["a", "b", "a"], True),
        (["a", "b"], ["a", "a"], False),
        (["x", "a", "y", "b", "z"], ["a", "b"], True),
        ([], ["a"], False),
        (["a"], [], True),
    ],
)
def test_in_order(actual: list[str], expected: list[str], result: bool) -> None:
    assert in_order(actual, expected) is result


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        (ASSISTANT, None, {"expected_tool": "fetch"}, 1.0),
        (ASSISTANT, None, {"expected_tool": "delete"}, 0.0),
        (ASSISTANT, None, {"expected_tool": "fetch", "strict": True}, 0.0),
        (["fetch"], None, {"expected_tool": "fetch", "strict": True}, 1.0),
        (ASSISTANT, None, {"expected_tool_order": ["search", "fetch"]}, 1.0),
        (ASSISTANT, None, {"expected_tool_order": ["fetch", "search"]}, 0.0),
        (["search", "log", "fetch"], None, {"expected_tool_order": ["search", "fetch"]}, 1.0),
        (
            ["search", "log", "fetch"],
            None,
            {"expected_tool_order": ["search", "fetch"], "strict": True},
            0.0,
        ),
        (ASSISTANT, None, {"expected_tool_order": ["search", "fetch"], "strict": True}, 1.0),
        ("plain text answer", None, {"expected_tool": "search"}, 0.0),
        ("plain text answer", None, {"expected_tool_order": []}, 1.0),
        (ASSISTANT, None, {"expected_tool_order": []}, 0.0),
        (ASSISTANT, "fetch", {}, 1.0),
        (ASSISTANT, ["search", "fetch"], {}, 1.0),
        (ASSISTANT, ["fetch", "search"], {}, 0.0),
        (ASSISTANT, json.dumps([openai_call("search")]), {}, 1.0),
        (ASSISTANT, '"fetch"', {}, 1.0),
        (ASSISTANT, "[]", {}, 0.0),
        (ASSISTANT, [openai_call("search"), openai_call("fetch")], {}, 1.0),
        ("no tools", [], {}, 1.0),
        (ASSISTANT, "delete", {"expected_tool": "fetch"}, 1.0),  # params win over the row
    ],
)
async def test_tool_call_accuracy(
    output: Any, truth: Any, params: dict[str, Any], expected: float
) -> None:
    result = await score(tool_call_accuracy(**params), output, truth)
    assert result.score == expected


async def test_tool_call_accuracy_reasons() -> None:
    hit = await score(tool_call_accuracy(expected_tool="fetch"), ASSISTANT)
    assert (
        hit.reason
        == "Expected 'fetch' among the calls; the output called search, fetch (as expected)."
    )
    assert hit.preprocess_step_result == {
        "expected": ["fetch"],
        "called": ["search", "fetch"],
        "correct": True,
    }
    strict = await score(tool_call_accuracy(expected_tool="fetch", strict=True), ASSISTANT)
    assert strict.reason == (
        "Expected 'fetch' as the only call; the output called search, fetch (not as expected)."
    )
    order = await score(tool_call_accuracy(expected_tool_order=["fetch", "search"]), "text")
    assert order.reason == (
        "Expected in this order: fetch → search; the output called no tool (not as expected)."
    )
    nothing = await score(tool_call_accuracy(expected_tool_order=[]), ASSISTANT)
    assert nothing.reason == "No tool call was expected; the output called search, fetch."


async def test_tool_call_accuracy_row_errors() -> None:
    missing = await input_error(tool_call_accuracy(), ASSISTANT, None)
    assert missing.field == "ground_truth"
    unreadable = await input_error(tool_call_accuracy(), ASSISTANT, {"city": "Paris"})
    assert unreadable.problem == """no tool names in '{"city": "Paris"}'"""
    broken = await input_error(tool_call_accuracy(), ASSISTANT, "[search")
    assert broken.problem == "invalid JSON '[search'"


def test_tool_call_accuracy_takes_one_kind_of_expectation() -> None:
    with pytest.raises(ConfigError, match="parameter 'expected_tool_order': give it or"):
        tool_call_accuracy(expected_tool="a", expected_tool_order=["a"])
