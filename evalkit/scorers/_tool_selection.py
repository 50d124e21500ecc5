"""``tool_call_accuracy_llm``: whether the tools the output called suit the request (LLM-judged).

After Mastra's LLM tool-call accuracy scorer: a function preprocess step reads the tool calls
from the output (the shapes ``tool_call_accuracy`` reads) and the available tools; the judge
decides whether each call was appropriate and which tools were missed (analyze); the score is
computed in code and the judge explains it. Bump the registry ``version`` whenever a prompt
below changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Template
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from evalkit._json import to_jsonable
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, param_error
from evalkit.scorers._judged import (
    JudgeStep,
    OnePerItem,
    check_scale,
    finish,
    is_blank,
    numbered,
    round_score,
    row_value,
    show,
)
from evalkit.scorers._registry import prebuilt
from evalkit.scorers._tools import tool_call_names

INSTRUCTIONS = """\
You evaluate how an AI agent chose its tools. For a user request, you decide whether each \
tool the agent called directly serves what the user explicitly asked for, and whether a tool \
that should have been called was not. A tool that is merely related or generally helpful but \
was not needed for the request is not appropriate. When no tool was called, asking a \
clarifying question about a vague request is appropriate; answering a clear, actionable \
request without the tool it needs is not. Follow the output format you are asked for exactly."""

ANALYZE = Template("""\
Evaluate the agent's tool choices for the user's request.

- If tools were called: evaluate each call, in order: was_appropriate is true only when the \
tool directly addresses the explicit request.
- If no tool was called: give no evaluations, and decide whether that was right: list in \
missing_tools the tools the request clearly needed (an empty list when answering directly or \
asking for clarification was the right choice).
- In both cases, list in missing_tools any available tool the request clearly needed that was \
not called.

<request>
$input
</request>

<response>
$output
</response>

<tools_called>
$called
</tools_called>

<available_tools>
$available
</available_tools>

Answer with JSON: {"evaluations": [{"tool_called": "...", "reasoning": "...", \
"was_appropriate": true}], "missing_tools": ["..."]}""")

REASON = Template("""\
Explain a tool selection score of $score, on a scale from 0 to $scale, to the developer of the \
agent. The score is the share of the agent's tool calls that were appropriate for the request; \
with no call, it is $scale when no tool was needed and 0 otherwise.

<request>
$input
</request>

<evaluations>
$evaluations
</evaluations>

<missing_tools>
$missing
</missing_tools>

Write one or two sentences of plain text starting with "The score is $score because". Use the \
given score, do not recompute it.""")


class ToolEvaluation(BaseModel):
    """Whether one tool call suited the request."""

    tool_called: str = Field(description="The tool's name.")
    reasoning: str
    was_appropriate: bool


class ToolEvaluations(OnePerItem):
    """One evaluation per tool call, and the tools that should have been called."""

    per_item: ClassVar[str] = "evaluations"

    evaluations: list[ToolEvaluation]
    missing_tools: list[str] = Field(description="Tools the request needed but were not called.")


def tool_catalogue(value: Any) -> dict[str, str]:
    """Tool names and descriptions from ``{name: description}``, or a list of tool specs.

    A list may hold OpenAI tool definitions (``{"type": "function", "function": {"name",
    "description"}}``), ``{"name", "description"}`` dicts, or bare names.
    """
    plain = to_jsonable(value)
    if isinstance(plain, Mapping):
        return {str(name): as_text(text) for name, text in plain.items()}
    tools: dict[str, str] = {}
    for item in plain if isinstance(plain, list) else [plain]:
        spec = item.get("function", item) if isinstance(item, dict) else {"name": item}
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            tools[spec["name"]] = as_text(spec.get("description"))
    return tools


def _evaluation_line(evaluation: dict[str, Any]) -> str:
    verdict = "appropriate" if evaluation["was_appropriate"] else "not appropriate"
    return f"{evaluation['tool_called']}: {verdict} ({evaluation['reasoning']})"


@prebuilt(
    "tool_call_accuracy_llm",
    title="Tool Call Accuracy (LLM)",
    kind="llm",
    inputs=("input", "output"),
    inputs_note="the available tools, optional: `available_tools`, else the row's `tools_key`",
    version=2,
)
def tool_call_accuracy_llm(
    scorer: Scorer,
    *,
    available_tools: Mapping[str, str] | None = None,
    tools_key: str = "tools",
    scale: float = 1.0,
    explain: bool = True,
) -> Scorer:
    """The share of the output's tool calls that suit the request in the input (LLM-judged).

    Range 0 to ``scale``, higher is better. After Mastra's LLM tool-call accuracy scorer: the
    tool calls are read from the output in code (every shape ``tool_call_accuracy`` reads),
    then the judge marks each call appropriate or not for the request, and lists tools that
    should have been called. Score = appropriate / calls * scale, rounded to two decimals (a
    reply without exactly one evaluation per call is asked once more, then fails the run);
    with no call, ``scale`` when the judge names no missing tool (not calling was right) and
    0 otherwise. The available tools (name → description) are
    ``available_tools``, else the row's ``tools_key`` entry (request context or mapping
    input; a mapping, OpenAI tool definitions, or names), else the judge decides from the
    request alone. An empty input fails with ``ScorerInputError``.

    Args:
        available_tools: The agent's tools, name → description, for every row.
        tools_key: The key holding a row's tools, in its request context or input.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
    """
    name = "tool_call_accuracy_llm"
    check_scale(name, scale)
    if available_tools is not None and not available_tools:
        raise param_error(name, "available_tools", "is empty; give None to read each row's")
    fixed = dict(available_tools) if available_tools is not None else None

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        if is_blank(as_text(run.input)):
            raise ScorerInputError(name, "input", "empty: there is no request to judge against")
        tools = fixed
        if tools is None:
            found = row_value(run, tools_key)
            tools = tool_catalogue(found) if found is not None else {}
        return {"tools_called": tool_call_names(run.output), "available_tools": tools}

    def analyze_prompt(run: ScorerRun, results: StepResults) -> str:
        pre = results.preprocess_step_result
        available = [
            f"{tool}: {text}" if text else tool for tool, text in pre["available_tools"].items()
        ]
        return ANALYZE.substitute(
            input=as_text(run.input),
            output=as_text(run.output),
            called=numbered(pre["tools_called"]),
            available=numbered(available, empty="(not given: judge from the request alone)"),
        )

    def score(results: StepResults) -> float:
        analysis = results.analyze_step_result
        evaluations = analysis["evaluations"]
        if not evaluations:
            return 0.0 if analysis["missing_tools"] else round_score(scale)
        appropriate = sum(1 for e in evaluations if e["was_appropriate"])
        return round_score(appropriate / len(evaluations) * scale)

    judge = JudgeStep(
        "Judge whether each tool call suits the request",
        analyze_prompt,
        instructions=INSTRUCTIONS,
        output_schema=ToolEvaluations,
        items=lambda results: len(results.preprocess_step_result["tools_called"]),
    )
    reason = JudgeStep(
        "Explain the score",
        lambda run, results, score: REASON.substitute(
            score=show(score),
            scale=show(scale),
            input=as_text(run.input),
            evaluations=numbered(
                [_evaluation_line(e) for e in results.analyze_step_result["evaluations"]]
            ),
            missing=numbered(results.analyze_step_result["missing_tools"]),
        ),
        instructions=INSTRUCTIONS,
    )
    return finish(scorer.preprocess(preprocess).analyze(judge), score, reason, explain=explain)
