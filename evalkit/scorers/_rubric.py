"""``rubric`` and ``llm_rubric``: the output graded against criteria you write (LLM-judged).

``rubric`` follows Mastra's rubric scorer: a checklist of criteria, each judged satisfied or
not, and a pass (1) only when every required criterion holds; the reason is written in code
from the verdicts. ``llm_rubric`` is the quickest custom judge: one rubric string, one judge
call answering a score from 0 to 1 with its reasoning (as promptfoo's ``llm-rubric``). Bump a
scorer's registry ``version`` whenever one of its prompts below changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from string import Template
from typing import Any

from pydantic import BaseModel, Field

from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, is_missing, param_error
from evalkit.scorers._judged import (
    JudgeStep,
    Unit,
    check_scale,
    is_blank,
    pieces,
    round_score,
    row_value,
)
from evalkit.scorers._registry import prebuilt

RUBRIC_INSTRUCTIONS = """\
You are an exacting grader. You judge whether an AI assistant's output satisfies each \
criterion of a rubric, strictly and independently: one criterion's verdict must not influence \
another's. A criterion is satisfied only when the output clearly and fully meets it; when in \
doubt, it is not. Judge from the evidence in the output (the task is context); do not reward \
effort, intent or partial progress. Follow the output format you are asked for exactly."""

RUBRIC_ANALYZE = Template("""\
Grade the output against each numbered criterion of the rubric below.

<task>
$input
</task>

<rubric>
$criteria
</rubric>

<output>
$output
</output>

Give one verdict per criterion, with its number (1 to $count), in order; keep the reasoning \
short and specific: say what is present or missing.
Answer with JSON: {"criteria": [{"number": 1, "reasoning": "...", "satisfied": true}], \
"overall_assessment": "..."}""")

LLM_RUBRIC_INSTRUCTIONS = """\
You grade the outputs of an AI assistant against a rubric written by its developers. You \
apply the rubric as written, strictly, to the output; the task and the reference answer, when \
given, are context. Follow the output format you are asked for exactly."""

LLM_RUBRIC_ANALYZE = Template("""\
Grade the output below against the rubric.

<rubric>
$rubric
</rubric>

<task>
$input
</task>
$reference
<output>
$output
</output>

Give a score from 0.0 (the output does not meet the rubric at all) to 1.0 (it fully meets \
it), and a short reasoning citing the output.
Answer with JSON: {"reasoning": "...", "score": 0.0}""")

_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
_OPTIONAL = re.compile(r"^\(optional\)\s*", re.IGNORECASE)


def parse_criteria(value: Any, *, where: str) -> list[dict[str, Any]]:
    """The criteria in ``value`` as ``[{"criterion": text, "required": bool}]``.

    A string is a checklist: one criterion per non-empty line, list markers (``-``, ``*``,
    ``1.``) stripped, ``(optional)`` at the start marking an optional one. A list holds
    strings (required criteria) or tables ``{description = "...", required = false}``
    (``criterion`` is accepted for ``description``).

    Raises:
        ValueError: An item is neither, naming ``where``.
    """
    if isinstance(value, str):
        found: list[dict[str, Any]] = []
        for line in value.splitlines():
            text = _MARKER.sub("", line).strip()
            if text:
                optional = _OPTIONAL.match(text)
                found.append(
                    {"criterion": _OPTIONAL.sub("", text).strip(), "required": not optional}
                )
        return [item for item in found if item["criterion"]]
    if isinstance(value, Mapping) or not isinstance(value, Sequence):
        raise ValueError(f"{where}: expected a string or a list of criteria, got {value!r}")
    criteria: list[dict[str, Any]] = []
    for item in value:
        if isinstance(item, str):
            if not is_blank(item):
                criteria.append({"criterion": item.strip(), "required": True})
            continue
        table = item if isinstance(item, Mapping) else {}
        described = table.get("description", table.get("criterion"))
        required = table.get("required", True)
        if not isinstance(described, str) or is_blank(described) or not isinstance(required, bool):
            raise ValueError(
                f"{where}: each criterion is a string or a table "
                f'{{description = "...", required = true}}, got {item!r}'
            )
        criteria.append({"criterion": described.strip(), "required": required})
    return criteria


class CriterionVerdict(BaseModel):
    """Whether the output satisfies one criterion."""

    number: int = Field(description="The criterion's number, from 1.")
    reasoning: str
    satisfied: bool


class RubricVerdicts(BaseModel):
    """One verdict per criterion and a short overall assessment."""

    criteria: list[CriterionVerdict]
    overall_assessment: str


def satisfied(criteria: list[dict[str, Any]], verdicts: list[dict[str, Any]]) -> list[bool]:
    """Whether each criterion holds; a criterion the judge skipped does not."""
    met = [False] * len(criteria)
    for verdict in verdicts:
        if 1 <= verdict["number"] <= len(met):
            met[verdict["number"] - 1] = bool(verdict["satisfied"])
    return met


def gating(criteria: list[dict[str, Any]]) -> list[int]:
    """The indexes of the criteria that decide the score: the required ones, else all."""
    required = [i for i, item in enumerate(criteria) if item["required"]]
    return required or list(range(len(criteria)))


def _tag(item: dict[str, Any]) -> str:
    return "required" if item["required"] else "optional"


def rubric_reason(
    criteria: list[dict[str, Any]], verdicts: list[dict[str, Any]], overall: str, *, passed: bool
) -> str:
    """The reason of a rubric run: the verdict, then each criterion with the judge's reasoning."""
    met = satisfied(criteria, verdicts)
    reasons = {verdict["number"]: verdict["reasoning"] for verdict in verdicts}
    deciding = gating(criteria)
    unmet = sum(1 for i in deciding if not met[i])
    header = (
        "Rubric satisfied: every required criterion is met."
        if passed
        else f"Rubric not satisfied: {unmet} of {len(deciding)} required criteria unmet."
    )
    lines = [
        f"{number}. [{'met' if met[number - 1] else 'unmet'}] [{_tag(item)}] "
        f"{item['criterion']}: {reasons.get(number, 'not judged')}"
        for number, item in enumerate(criteria, 1)
    ]
    return "\n".join([header, *lines, *([overall.strip()] if overall.strip() else [])])


@prebuilt(
    "rubric",
    title="Rubric",
    kind="llm",
    inputs=("input", "output"),
    inputs_note="the criteria: `criteria`, else the row's `criteria_key` (request context, input)",
    version=1,
)
def rubric(
    scorer: Scorer,
    *,
    criteria: str | Sequence[str | Mapping[str, Any]] | None = None,
    criteria_key: str = "rubric",
    scale: float = 1.0,
) -> Scorer:
    """1 when the output satisfies every required criterion of a rubric, else 0 (LLM-judged).

    Range 0 or ``scale``, higher is better. After Mastra's rubric scorer: the judge decides,
    strictly and one by one, whether the output satisfies each criterion; the score is
    ``scale`` when every required criterion holds (every criterion, when none is marked
    required) and 0 otherwise; optional criteria are judged and reported but do not gate. A
    criterion the judge leaves out counts as unmet. The reason, written in code, lists each
    criterion with its verdict and the judge's reasoning. The criteria are ``criteria``, else
    the row's ``criteria_key`` entry (request context, or mapping input): a checklist string
    (one per line, ``(optional)`` to mark one optional) or a list of strings or tables
    ``{description, required}``. A row without criteria fails with ``ScorerInputError``
    (Mastra passes it). An empty output is still judged.

    Args:
        criteria: The rubric of every row; None reads each row's.
        criteria_key: The key holding a row's rubric, in its request context or input.
        scale: The score when the rubric is satisfied.
    """
    check_scale("rubric", scale)
    fixed = None
    if criteria is not None:
        try:
            fixed = parse_criteria(criteria, where="criteria")
        except ValueError as exc:
            raise param_error("rubric", "criteria", str(exc)) from None
        if not fixed:
            raise param_error("rubric", "criteria", "holds no criterion")

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        if fixed is not None:
            return {"criteria": fixed}
        value = row_value(run, criteria_key)
        if value is None:
            raise ScorerInputError(
                "rubric",
                "request_context",
                f"no {criteria_key!r} key in the request context or the input (pass "
                "criteria=... or add the rubric to the rows)",
            )
        try:
            found = parse_criteria(value, where=criteria_key)
        except ValueError as exc:
            raise ScorerInputError("rubric", "request_context", str(exc)) from None
        if not found:
            raise ScorerInputError("rubric", "request_context", f"{criteria_key!r} is empty")
        return {"criteria": found}

    def listed(results: StepResults) -> list[dict[str, Any]]:
        return list(results.preprocess_step_result["criteria"])

    def verdicts(results: StepResults) -> list[dict[str, Any]]:
        return list(results.analyze_step_result["criteria"])

    def score(results: StepResults) -> float:
        met = satisfied(listed(results), verdicts(results))
        return round_score(scale) if all(met[i] for i in gating(listed(results))) else 0.0

    def reason(score: float, results: StepResults) -> str:
        overall = results.analyze_step_result["overall_assessment"]
        return rubric_reason(listed(results), verdicts(results), overall, passed=score > 0)

    judge = JudgeStep(
        "Judge the output against each criterion",
        lambda run, results: RUBRIC_ANALYZE.substitute(
            input=as_text(run.input) or "(no task given)",
            output=as_text(run.output) or "(empty output)",
            count=len(listed(results)),
            criteria="\n".join(
                f"{number}. [{_tag(item)}] {item['criterion']}"
                for number, item in enumerate(listed(results), 1)
            ),
        ),
        instructions=RUBRIC_INSTRUCTIONS,
        output_schema=RubricVerdicts,
    )
    return (
        scorer.preprocess(preprocess).analyze(judge).generate_score(score).generate_reason(reason)
    )


class RubricGrade(BaseModel):
    """The judge's grade of the output against the rubric."""

    reasoning: str = Field(description="Why this score, citing the output.")
    score: Unit = Field(description="From 0.0 to 1.0.")


@prebuilt(
    "llm_rubric",
    title="LLM Rubric",
    kind="llm",
    inputs=("input", "output"),
    inputs_note="the rubric: `rubric`, else the row's `rubric_key`; ground_truth shown if present",
    version=1,
)
def llm_rubric(
    scorer: Scorer, *, rubric: str | None = None, rubric_key: str = "rubric", scale: float = 1.0
) -> Scorer:
    """A score from 0 to 1 for how well the output meets a rubric you write (one judge call).

    Range 0 to ``scale``, higher is better. The quickest custom judge, as promptfoo's
    ``llm-rubric``: ``params = { rubric = "..." }`` in an experiment file is the whole scorer.
    In one call the judge reads the rubric, the input, the ground truth when the row has one
    and the output, and answers a score from 0 to 1 with its reasoning, which becomes the
    reason (no second call). Score = the judge's score * scale, rounded to two decimals; a
    score outside 0 to 1 is a format failure of the judge (asked once more, then the run
    fails). The rubric is ``rubric``, else the row's ``rubric_key`` entry (request context, or
    mapping input); a row without one fails with ``ScorerInputError``.

    Args:
        rubric: What a good output does, in plain words; None reads each row's.
        rubric_key: The key holding a row's rubric, in its request context or input.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
    """
    check_scale("llm_rubric", scale)
    if rubric is not None and is_blank(rubric):
        raise param_error("llm_rubric", "rubric", "is empty; give None to read each row's")

    def rubric_text(run: ScorerRun) -> str:
        if rubric is not None:
            return rubric.strip()
        value = row_value(run, rubric_key)
        text = "\n".join(pieces(value)) if value is not None else ""
        if is_blank(text):
            raise ScorerInputError(
                "llm_rubric",
                "request_context",
                f"no {rubric_key!r} in the request context or the input (pass rubric=... or "
                "add it to the rows)",
            )
        return text

    def prompt(run: ScorerRun) -> str:
        reference = ""
        if not is_missing(run.ground_truth):
            reference = f"\n<reference_answer>\n{as_text(run.ground_truth)}\n</reference_answer>\n"
        return LLM_RUBRIC_ANALYZE.substitute(
            rubric=rubric_text(run),
            input=as_text(run.input) or "(no task given)",
            reference=reference,
            output=as_text(run.output) or "(empty output)",
        )

    grade = JudgeStep(
        "Grade the output against the rubric",
        prompt,
        instructions=LLM_RUBRIC_INSTRUCTIONS,
        output_schema=RubricGrade,
    )
    return (
        scorer.analyze(grade)
        .generate_score(lambda results: round_score(results.analyze_step_result["score"] * scale))
        .generate_reason(lambda results: results.analyze_step_result["reasoning"])
    )
