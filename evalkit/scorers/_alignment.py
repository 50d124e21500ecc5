"""``prompt_alignment``: how well the output follows the prompt it was given (LLM-judged).

After Mastra's prompt alignment scorer: the judge analyses intent, requirements, completeness
and appropriateness in one step (analyze); the weighted score is computed in code and the
judge explains it. Bump the registry ``version`` whenever a prompt below changes.
"""

from __future__ import annotations

from string import Template
from typing import Any, Literal

from pydantic import BaseModel

from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text
from evalkit.scorers._judged import (
    JudgeStep,
    Unit,
    as_mapping,
    check_scale,
    finish,
    is_blank,
    round_score,
    row_value,
    show,
)
from evalkit.scorers._registry import prebuilt

Mode = Literal["user", "system", "both"]

#: Weights of intent, requirements, completeness and appropriateness (Mastra's).
USER_WEIGHTS = (0.4, 0.3, 0.2, 0.1)
SYSTEM_WEIGHTS = (0.35, 0.35, 0.15, 0.15)
#: In "both" mode: the share of the user-prompt and of the system-prompt alignment.
BOTH_WEIGHTS = (0.7, 0.3)

INSTRUCTIONS = """\
You evaluate how well an AI assistant's response aligns with the prompt it was given: whether \
it addresses the prompt's intent, fulfils its explicit and implicit requirements, is complete, \
and has the format and tone asked for. You judge alignment with the prompt, not general \
quality. Score each dimension from 0.0 (completely misaligned) to 1.0 (perfectly aligned). \
Follow the output format you are asked for exactly."""

DIMENSIONS = """\
1. Intent alignment: identify the prompt's primary intent and whether the response addresses \
it; score 0.0 to 1.0.
2. Requirements fulfilment: list each explicit requirement (tasks, constraints, formats) and \
whether it is fulfilled; overall_score is the share fulfilled, 0.0 to 1.0.
3. Completeness: list the elements the response should have included but did not; score 0.0 \
to 1.0.
4. Response appropriateness: whether the format (list, prose, code...) and the tone match \
what the prompt asks; score 0.0 to 1.0."""

ANALYSIS_JSON = """\
{"intent_alignment": {"primary_intent": "...", "reasoning": "...", "is_addressed": true, \
"score": 0.0}, "requirements_fulfillment": {"requirements": [{"requirement": "...", \
"reasoning": "...", "is_fulfilled": true}], "overall_score": 0.0}, "completeness": \
{"missing_elements": ["..."], "reasoning": "...", "score": 0.0}, "response_appropriateness": \
{"reasoning": "...", "format_alignment": true, "tone_alignment": true, "score": 0.0}, \
"overall_assessment": "..."}"""

ANALYZE: dict[Mode, Template] = {
    "user": Template("""\
Analyse how well the response aligns with the user's prompt.

$dimensions

<user_prompt>
$user
</user_prompt>

<response>
$output
</response>

Answer with JSON: $analysis"""),
    "system": Template("""\
Analyse how well the response complies with the system prompt the assistant was given: its \
behavioural guidelines, constraints, format and tone. The user's message is context only.

$dimensions

<system_prompt>
$system
</system_prompt>

<user_message>
$user
</user_message>

<response>
$output
</response>

Answer with JSON: $analysis"""),
    "both": Template("""\
Analyse the response twice: under "user", how well it aligns with the user's prompt; under \
"system", how well it complies with the system prompt the assistant was given (its \
guidelines, constraints, format and tone).

$dimensions

<system_prompt>
$system
</system_prompt>

<user_prompt>
$user
</user_prompt>

<response>
$output
</response>

Answer with JSON: {"user": $analysis, "system": $analysis}"""),
}

REASON = Template("""\
Explain a prompt alignment score of $score, on a scale from 0 to $scale, to the developer of \
the assistant. $formula

<analysis>
$analysis
</analysis>

Write two or three sentences of plain text starting with "The score is $score because". Name \
the main strengths and the misalignments that cost most; use the given score, do not \
recompute it.""")

EMPTY_OUTPUT = "The score is 0 because the output is empty."

_FORMULAS: dict[Mode, str] = {
    "user": "The score weighs intent 0.4, requirements 0.3, completeness 0.2 and "
    "appropriateness 0.1, against the user's prompt.",
    "system": "The score weighs intent 0.35, requirements 0.35, completeness 0.15 and "
    "appropriateness 0.15, against the system prompt.",
    "both": "The score is 0.7 * the alignment with the user's prompt (weights 0.4, 0.3, 0.2, "
    "0.1) + 0.3 * the compliance with the system prompt (weights 0.35, 0.35, 0.15, 0.15).",
}


class Intent(BaseModel):
    primary_intent: str
    reasoning: str
    is_addressed: bool
    score: Unit


class Requirement(BaseModel):
    requirement: str
    reasoning: str
    is_fulfilled: bool


class Requirements(BaseModel):
    requirements: list[Requirement]
    overall_score: Unit


class Completeness(BaseModel):
    missing_elements: list[str]
    reasoning: str
    score: Unit


class Appropriateness(BaseModel):
    reasoning: str
    format_alignment: bool
    tone_alignment: bool
    score: Unit


class Analysis(BaseModel):
    """The four dimensions of prompt alignment (scores 0 to 1)."""

    intent_alignment: Intent
    requirements_fulfillment: Requirements
    completeness: Completeness
    response_appropriateness: Appropriateness
    overall_assessment: str


class BothAnalyses(BaseModel):
    """Alignment with the user prompt and compliance with the system prompt."""

    user: Analysis
    system: Analysis


def weighted(analysis: dict[str, Any], weights: tuple[float, ...]) -> float:
    """The weighted sum of an analysis' four dimension scores."""
    parts: tuple[float, ...] = (
        analysis["intent_alignment"]["score"],
        analysis["requirements_fulfillment"]["overall_score"],
        analysis["completeness"]["score"],
        analysis["response_appropriateness"]["score"],
    )
    return float(sum(weight * part for weight, part in zip(weights, parts, strict=True)))


def _messages(value: Any) -> list[Any] | None:
    """The chat messages of an input that is a list of messages, or ``{"messages": [...]}``."""
    mapping = as_mapping(value)
    if mapping is not None:
        value = mapping.get("messages")
    if (
        isinstance(value, list)
        and value
        and all(isinstance(m, dict) and "role" in m for m in value)
    ):
        return value
    return None


def _said_by(messages: list[Any], role: str) -> str:
    return "\n\n".join(as_text(m.get("content")) for m in messages if m.get("role") == role)


@prebuilt(
    "prompt_alignment",
    title="Prompt Alignment",
    kind="llm",
    inputs=("input", "output"),
    inputs_note="a system prompt too in 'system'/'both' modes: `system_prompt`, the row's "
    "`system_prompt` key, or system messages in the input",
    version=1,
)
def prompt_alignment(
    scorer: Scorer,
    *,
    evaluation_mode: Mode = "user",
    system_prompt: str | None = None,
    scale: float = 1.0,
    explain: bool = True,
) -> Scorer:
    """How well the output follows the prompt: intent, requirements, completeness, form.

    Range 0 to ``scale``, higher is better. After Mastra's prompt alignment scorer: the judge
    scores intent alignment, requirements fulfilment, completeness and appropriateness from
    0 to 1; the score is their weighted sum * scale, rounded to two decimals, with weights
    0.4/0.3/0.2/0.1 against the user prompt (``"user"``), 0.35/0.35/0.15/0.15 against the
    system prompt (``"system"``), or 0.7 * user + 0.3 * system, each from its own analysis
    (``"both"``; Mastra reuses the user analysis for both). Scores 1, 0.5, 0.8, 1 give
    0.81 in user mode. The user prompt is the input, or the user messages of an input made
    of chat messages; the system prompt is ``system_prompt``, else the row's
    ``system_prompt`` key (request context, or a mapping input), else the input's system
    messages. An empty output scores 0 without a judge call (Mastra refuses it); a missing
    prompt fails with ``ScorerInputError``. Non-string outputs are judged as JSON text.

    Args:
        evaluation_mode: Judge against the ``"user"`` prompt, the ``"system"`` prompt, or
            ``"both"``.
        system_prompt: The system prompt of every row; None reads each row's.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
    """
    check_scale("prompt_alignment", scale)
    if system_prompt is not None and is_blank(system_prompt):
        system_prompt = None

    def prompts(run: ScorerRun) -> dict[str, str]:
        messages = _messages(run.input)
        user = _said_by(messages, "user") if messages else as_text(run.input)
        system = system_prompt
        if system is None:
            found = row_value(run, "system_prompt")
            system = as_text(found) if found is not None else None
        if system is None and messages:
            system = _said_by(messages, "system") or None
        if evaluation_mode != "system" and is_blank(user):
            raise ScorerInputError("prompt_alignment", "input", "no user prompt to align with")
        if evaluation_mode != "user" and (system is None or is_blank(system)):
            raise ScorerInputError(
                "prompt_alignment",
                "request_context",
                f"no system prompt for evaluation_mode={evaluation_mode!r} (pass "
                "system_prompt=..., or give rows a 'system_prompt' or system messages)",
            )
        return {"user": user, "system": system or ""}

    def score(results: StepResults) -> float:
        analysis = results.analyze_step_result
        if not analysis:
            return 0.0
        if evaluation_mode == "user":
            value = weighted(analysis, USER_WEIGHTS)
        elif evaluation_mode == "system":
            value = weighted(analysis, SYSTEM_WEIGHTS)
        else:
            user = weighted(analysis["user"], USER_WEIGHTS)
            system = weighted(analysis["system"], SYSTEM_WEIGHTS)
            value = BOTH_WEIGHTS[0] * user + BOTH_WEIGHTS[1] * system
        return round_score(value * scale)

    judge = JudgeStep(
        "Analyse the output's alignment with the prompt",
        lambda run, results: ANALYZE[evaluation_mode].substitute(
            dimensions=DIMENSIONS,
            analysis=ANALYSIS_JSON,
            output=as_text(run.output),
            **results.preprocess_step_result,
        ),
        instructions=INSTRUCTIONS,
        output_schema=BothAnalyses if evaluation_mode == "both" else Analysis,
        # An empty output aligns with nothing: {} scores 0 without a judge call.
        skip=lambda run: {} if is_blank(as_text(run.output)) else None,
    )
    reason = JudgeStep(
        "Explain the score",
        lambda results, score: REASON.substitute(
            score=show(score),
            scale=show(scale),
            formula=_FORMULAS[evaluation_mode],
            analysis=as_text(results.analyze_step_result),
        ),
        instructions=INSTRUCTIONS,
        skip=lambda results: EMPTY_OUTPUT if not results.analyze_step_result else None,
    )
    return finish(scorer.preprocess(prompts).analyze(judge), score, reason, explain=explain)
