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


def invocation(name: str, state: str | None = "result") -> dict[str, Any]:
    """A Mastra tool invocation, as Mastra's own tests build it (createToolInvocation)."""
    found = {"toolCallId": f"call-{name}", "toolName": name, "args": {}, "result": {"ok": True}}
    return found if state is None else {**found, "state": state}


def mastra_message(*calls: dict[str, Any], where: str) -> dict[str, Any]:
    """A Mastra stored message (MastraDBMessage, content format 2) holding ``calls``."""
    content: dict[str, Any] = {"format": 2, "parts": [{"type": "text", "text": "Checking."}]}
    if where in ("parts", "both"):
        content["parts"] += [{"type": "tool-invocation", "toolInvocation": c} for c in calls]
    if where in ("invocations", "both"):
        content["toolInvocations"] = list(calls)
    return {"id": "msg-1", "role": "assistant", "content": content, "createdAt": "2025-01-01"}


SEARCH, FETCH = invocation("search"), invocation("fetch")
MASTRA_SHAPES = {
    "top-level toolInvocations": MASTRA,
    "content.toolInvocations": [mastra_message(SEARCH, FETCH, where="invocations")],
    "content.parts tool-invocation": [mastra_message(SEARCH, FETCH, where="parts")],
    # Mastra writes each call in both places: read once, as Mastra's extractToolCalls does.
    "content.toolInvocations and parts": [mastra_message(SEARCH, FETCH, where="both")],
    "one message per call": [
        mastra_message(SEARCH, where="parts"),
        mastra_message(FETCH, where="invocations"),
    ],
    "UI message parts": {
        "role": "assistant",
        "parts": [{"type": "tool-invocation", "toolInvocation": c} for c in (SEARCH, FETCH)],
    },
    "states call and result": [
        mastra_message(invocation("search", "call"), invocation("fetch"), where="invocations")
    ],
    "no state": [mastra_message(invocation("search", None), FETCH, where="parts")],
    "partial-call ignored": [
        mastra_message(
            invocation("search"),
            invocation("delete", "partial-call"),
            invocation("fetch", "call"),
            where="both",
        )
    ],
    "OpenAI tool message": [
        {"role": "user", "content": "find it"},
        {"role": "tool", "tool_call_id": "call_1", "name": "search", "content": "result"},
        {"role": "assistant", "tool_calls": [openai_call("fetch")]},
        {"role": "tool", "tool_call_id": "call_fetch", "name": "fetch", "content": "page"},
    ],
    "AI SDK tool-call and tool-result parts": [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "args": {}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "toolName": "search", "result": 1},
                {"type": "tool-result", "toolCallId": "c2", "toolName": "fetch", "result": 2},
            ],
        },
    ],
}


@pytest.mark.parametrize("shape", list(MASTRA_SHAPES))
def test_tool_call_names_reads_mastra_and_chat_message_shapes(shape: str) -> None:
    assert tool_call_names(MASTRA_SHAPES[shape]) == ["search", "fetch"]
    assert tool_call_names(json.dumps(MASTRA_SHAPES[shape])) == ["search", "fetch"]


@pytest.mark.parametrize("where", ["invocations", "parts", "both"])
async def test_tool_call_accuracy_scores_a_mastra_agent_output(where: str) -> None:
    output = [
        {"id": "u", "role": "user", "content": {"format": 2, "parts": []}, "createdAt": "x"},
        mastra_message(SEARCH, invocation("fetch", "call"), where=where),
    ]
    strict = tool_call_accuracy(expected_tool_order=["search", "fetch"], strict=True)
    assert (await score(strict, output)).score == 1.0
    assert (await score(tool_call_accuracy(expected_tool="fetch"), output)).score == 1.0


@pytest.mark.parametrize(
    "output",
    [
        {"role": "assistant", "toolInvocations": [invocation("delete", "partial-call")]},
        [mastra_message(invocation("delete", "partial-call"), where="both")],
    ],
)
async def test_a_partial_call_is_not_a_call(output: Any) -> None:
    assert tool_call_names(output) == []
    result = await score(tool_call_accuracy(expected_tool="delete"), output)
    assert result.score == 0.0


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
