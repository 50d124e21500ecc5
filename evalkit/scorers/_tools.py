"""``tool_call_accuracy``: the tools an output called, against the expected tool or order.

Accepted output shapes (read in order, every tool call kept in call order):

- an OpenAI chat completion (``{"choices": [{"message": ...}]}``, first choice) or an assistant
  message with ``tool_calls`` (``[{"type": "function", "function": {"name": ...}}]``) or a
  legacy ``function_call``;
- an OpenAI Responses output (``{"output": [{"type": "function_call", "name": ...}]}``);
- an Anthropic message (``{"content": [{"type": "tool_use", "name": ...}]}``);
- a Mastra / Vercel AI message: ``toolInvocations`` (``[{"toolName": ..., "state": ...}]``) on
  the message or in its ``content`` (Mastra's stored messages, ``content.format == 2``), or
  else ``parts`` of type ``tool-invocation`` holding a ``toolInvocation``, there too (Mastra
  writes each call in both places; like Mastra, ``toolInvocations`` is read when present, so a
  call counts once); AI SDK ``tool-call`` and ``tool-result`` content parts;
- an OpenAI ``tool`` message (``{"role": "tool", "tool_call_id": ..., "name": ...}``);
- a conversation: a list of messages, or ``{"messages": [...]}``;
- a bare tool call (``{"name": ..., "arguments": ...}`` or ``{"function": {"name": ...}}``) or a
  list of them;
- a list of tool names (``["search", "fetch"]``);
- any of these as JSON text, or as objects with ``model_dump`` (the ``openai`` SDK's types).

Plain text that is not JSON has no tool calls. An invocation counts in state ``call`` or
``result`` (or without a state), never ``partial-call`` (arguments still streaming). A tool
result (a ``tool`` message, a ``tool-result`` part) counts only when no call with its id came
before it, so a call and its result are one call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalkit._json import to_jsonable
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, ground_truth, param_error
from evalkit.scorers._registry import prebuilt

_MESSAGE_LISTS = ("tool_calls", "messages", "output")
#: Content blocks and parts that hold a tool call or result.
_BLOCK_TYPES = frozenset({"tool_use", "tool-call", "tool-result", "tool-invocation"})
#: Invocation states that are calls; ``partial-call`` is one whose arguments still stream.
_CALL_STATES = frozenset({"call", "result"})
_ID_KEYS = ("toolCallId", "call_id", "tool_call_id", "id")


class _Calls:
    """The tool names found so far, and the ids of the calls among them."""

    __slots__ = ("ids", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: set[str] = set()

    def add(self, name: str, found: dict[str, Any], *, result: bool = False) -> None:
        call_id = next((v for k in _ID_KEYS if isinstance(v := found.get(k), str)), None)
        if result and call_id in self.ids:
            return  # the result of a call already counted
        self.names.append(name)
        if call_id is not None:
            self.ids.add(call_id)


def tool_call_names(value: Any) -> list[str]:
    """The names of the tools called in ``value``, in call order (see the module docstring)."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            return []
        if isinstance(value, str):
            return []
    plain = to_jsonable(value)
    if isinstance(plain, list) and all(isinstance(item, str) for item in plain):
        return list(plain)  # a list of tool names; strings deeper down are message text
    calls = _Calls()
    _collect(plain, calls)
    return calls.names


def _collect(value: Any, calls: _Calls) -> None:
    if isinstance(value, list):
        for item in value:
            _collect(item, calls)
        return
    if not isinstance(value, dict):
        return
    if value.get("type") == "tool-invocation":  # a Mastra / Vercel AI message part
        _collect(value.get("toolInvocation"), calls)
        return
    if (name := _call_name(value)) is not None:
        state = value.get("state")
        if state is None or state in _CALL_STATES:
            calls.add(name, value, result=value.get("type") == "tool-result")
        return
    if value.get("role") == "tool" and isinstance(name := value.get("name"), str):
        calls.add(name, value, result=True)
        return
    if isinstance(choices := value.get("choices"), list) and choices:
        first = choices[0]
        _collect(first.get("message", first) if isinstance(first, dict) else None, calls)
        return
    if isinstance(legacy := value.get("function_call"), dict):  # pre-2024 OpenAI messages
        _collect(legacy, calls)
    for key in _MESSAGE_LISTS:
        if isinstance(items := value.get(key), list):
            _collect(items, calls)
    _collect_invocations(value, calls)
    content = value.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") in _BLOCK_TYPES:
                _collect(block, calls)
    elif isinstance(content, dict):  # a Mastra stored message's content (format 2)
        _collect_invocations(content, calls)


def _collect_invocations(holder: dict[str, Any], calls: _Calls) -> None:
    """``holder``'s ``toolInvocations``, else its ``tool-invocation`` parts (Mastra keeps
    each call in both, so reading one counts it once)."""
    invocations = holder.get("toolInvocations")
    if isinstance(invocations, list) and invocations:
        _collect(invocations, calls)
    elif isinstance(parts := holder.get("parts"), list):
        for part in parts:
            if isinstance(part, dict) and part.get("type") == "tool-invocation":
                _collect(part, calls)


_CALL_TYPES = ("function", "function_call", "tool_use", "tool_call")
_CALL_KEYS = frozenset({"name", "arguments", "args", "input", "parameters", "id", "call_id"})


def _call_name(value: dict[str, Any]) -> str | None:
    """The tool name when ``value`` is itself one tool call, else None.

    A dict with a string ``name`` is a call when its ``type`` says so, or when it has no keys
    besides a call's (``arguments``, ``input``, ``id``…), so ``{"name": "Paris", "country":
    "France"}`` in a JSON answer is not mistaken for one.
    """
    function = value.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    if isinstance(value.get("toolName"), str):
        return str(value["toolName"])
    if isinstance(name := value.get("name"), str) and (
        value.get("type") in _CALL_TYPES or value.keys() <= _CALL_KEYS
    ):
        return name
    return None


def in_order(actual: Sequence[str], expected: Sequence[str]) -> bool:
    """Whether ``expected`` is a subsequence of ``actual``: all called, in that relative order.

    Other calls may come before, between and after; a tool expected twice must be called twice.
    """
    calls = iter(actual)
    return all(any(call == tool for call in calls) for tool in expected)


@prebuilt(
    "tool_call_accuracy",
    title="Tool Call Accuracy",
    inputs=("output", "ground_truth"),
    inputs_note="ground_truth unless `expected_tool` or `expected_tool_order` is given",
    version=2,
)
def tool_call_accuracy(
    scorer: Scorer,
    *,
    expected_tool: str | None = None,
    expected_tool_order: Sequence[str] | None = None,
    strict: bool = False,
) -> Scorer:
    """1 when the output called the expected tool (or tools, in order), else 0.

    Range 0 or 1, higher is better. Code-based, after Mastra's tool-call accuracy scorer.
    Expected: ``expected_tool``, or ``expected_tool_order``, or else the ground truth (a tool
    name, a list of names, or tool calls in any accepted shape). One expected tool: it must be
    among the calls (``strict``: it must be the only call). Several: they must be called in
    that relative order, other calls allowed before, between and after (a subsequence;
    ``strict``: exactly that sequence).
    An output with no tool calls scores 0, unless no tool is expected (an empty list), which
    scores 1 exactly when nothing was called. The accepted output shapes (OpenAI
    ``tool_calls`` and ``tool`` messages, Responses, Anthropic ``tool_use``, Mastra and AI SDK
    messages, conversations, lists of names, JSON text) are listed in the module docstring;
    a Mastra invocation in state ``partial-call`` is not a call. A missing ground truth fails
    the run.

    Args:
        expected_tool: The one tool that should be called.
        expected_tool_order: The tools that should be called, in this order.
        strict: One tool: the only call; several: exactly this sequence, nothing else.
    """
    if expected_tool is not None and expected_tool_order is not None:
        raise param_error(
            "tool_call_accuracy", "expected_tool_order", "give it or expected_tool, not both"
        )
    fixed: tuple[str, ...] | None = None
    if expected_tool is not None:
        fixed = (expected_tool,)
    elif expected_tool_order is not None:
        fixed = tuple(expected_tool_order)

    def expected(run: ScorerRun) -> tuple[str, ...]:
        if fixed is not None:
            return fixed
        value = ground_truth(run, "tool_call_accuracy")
        if isinstance(value, str):
            if not value.lstrip().startswith(("{", "[", '"')):
                return (value,)  # a plain tool name
            try:
                value = json.loads(value)
            except ValueError:
                raise ScorerInputError(
                    "tool_call_accuracy", "ground_truth", f"invalid JSON {value[:60]!r}"
                ) from None
            if isinstance(value, str):
                return (value,)
        names = tool_call_names(value)
        if not names and to_jsonable(value) != []:
            raise ScorerInputError(
                "tool_call_accuracy", "ground_truth", f"no tool names in {as_text(value)[:60]!r}"
            )
        return tuple(names)

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        want = expected(run)
        called = tool_call_names(run.output)
        if not want:
            correct = not called
        elif not called:
            correct = False
        elif strict:
            correct = tuple(called) == want
        else:
            correct = in_order(called, want)
        return {"expected": list(want), "called": called, "correct": correct}

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        want, called = pre["expected"], pre["called"]
        shown = ", ".join(called) if called else "no tool"
        if not want:
            return f"No tool call was expected; the output called {shown}."
        if len(want) == 1:
            rule = "as the only call" if strict else "among the calls"
            target = f"{want[0]!r} {rule}"
        else:
            rule = "exactly" if strict else "in this order"
            target = f"{rule}: {' → '.join(want)}"
        verdict = "as expected" if score else "not as expected"
        return f"Expected {target}; the output called {shown} ({verdict})."

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: float(results.preprocess_step_result["correct"]))
        .generate_reason(reason)
    )
