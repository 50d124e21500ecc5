"""``summarization``: whether a summary is faithful to its source and covers it (LLM-judged).

After Mastra's summarization scorer: the judge checks each claim of the summary against the
source and draws closed questions from the source (preprocess), then answers those questions
from the summary alone, never seeing the source (analyze); the score, the lower of alignment
and coverage, is computed in code and the judge explains it. Bump the registry ``version``
whenever a prompt below changes.
"""

from __future__ import annotations

from string import Template
from typing import Any, Literal

from pydantic import BaseModel, Field

from evalkit._ceilings import MAX_QUESTIONS, check_allowed
from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text
from evalkit.scorers._judged import (
    EmptyExtraction,
    Extraction,
    JudgeStep,
    Listed,
    check_scale,
    finish,
    is_blank,
    numbered,
    round_score,
    row_context,
    show,
)
from evalkit.scorers._registry import prebuilt

INSTRUCTIONS = """\
You evaluate summaries. A good summary states only what its source states (alignment) and \
keeps the source's important information (coverage). You rely on the texts you are given, \
never on your own knowledge. Follow the output format you are asked for exactly."""

JUDGE_SOURCE = Template("""\
Two tasks on the source text and its summary below.

1. alignment: split the summary into its claims and decide for each whether the source \
supports it (supported: true) or contradicts it or says nothing of it (supported: false).
2. questions: write up to $max_questions closed questions (answerable with yes, no or a short \
fact) about the source's most important information, each answerable from the source alone.

<source>
$source
</source>

<summary>
$summary
</summary>

Answer with JSON: {"alignment": [{"claim": "...", "reason": "...", "supported": true}], \
"questions": ["..."]}""")

COVERAGE = Template("""\
Using only the summary below, decide for each numbered question whether the summary answers \
it (answered: true) or not (answered: false). Do not use any other knowledge: if the summary \
does not say, the question is not answered.

<summary>
$summary
</summary>

<questions count="$count">
$questions
</questions>

Give exactly one answer per question, in the same order ($count in all).
Answer with JSON: {"coverage": [{"question": "...", "reason": "...", "answered": true}]}""")

REASON = Template("""\
Explain a summarization score of $score, on a scale from 0 to $scale, to the developer of the \
summariser. The score is the lower of alignment ($alignment: the share of the summary's \
claims the source supports) and coverage ($coverage: the share of the source's key questions \
the summary answers).

<unsupported_claims>
$unsupported
</unsupported_claims>

<unanswered_questions>
$unanswered
</unanswered_questions>

Write two or three sentences of plain text starting with "The score is $score because". Say \
which of the two limited the score; use the given score, do not recompute it.""")

EMPTY_SUMMARY = "The score is 0 because the summary is empty."
NOT_SCORABLE = (
    "The score is 0 because the judge found no claims in the summary or no questions to ask "
    "of the source."
)


class Alignment(BaseModel):
    """Whether the source supports one claim of the summary."""

    claim: str
    reason: str
    supported: bool


class SourceJudgement(BaseModel):
    """The summary's claims checked against the source, and questions drawn from it."""

    alignment: list[Alignment]
    questions: list[str] = Field(description="Closed questions about the source's key facts.")


class Answered(BaseModel):
    """Whether the summary answers one question."""

    question: str
    reason: str
    answered: bool


class Coverage(BaseModel):
    """One answer per question, in order."""

    coverage: list[Answered]


def axes(
    pre: dict[str, Any], coverage: list[dict[str, Any]], max_questions: int
) -> tuple[float, float, bool]:
    """Alignment, coverage, and whether both could be measured.

    Coverage counts against the questions asked, not the answers returned, so a judge that
    skips questions cannot raise it; answers beyond those questions are ignored.
    """
    alignment = pre["alignment"]
    asked = min(len(pre["questions"]), max_questions)
    supported = sum(1 for claim in alignment if claim["supported"])
    answered = sum(1 for answer in coverage[:asked] if answer["answered"])
    aligned = min(1.0, supported / len(alignment)) if alignment else 0.0
    covered = min(1.0, answered / asked) if asked else 0.0
    return aligned, covered, bool(alignment) and asked > 0


@prebuilt(
    "summarization",
    title="Summarization",
    kind="llm",
    inputs=("input", "output"),
    inputs_note="the source is the input, or the row's `context_key` with source='context'",
    version=2,
)
def summarization(
    scorer: Scorer,
    *,
    source: Literal["input", "context"] = "input",
    context_key: str = "context",
    max_questions: int = 10,
    scale: float = 1.0,
    explain: bool = True,
    empty_extraction: EmptyExtraction = "fail",
) -> Scorer:
    """How faithful the output, a summary, is to its source and how much of it it covers.

    Range 0 to ``scale``, higher is better. After Mastra's summarization scorer: the judge
    checks each claim of the summary against the source (alignment = supported / claims) and
    writes up to ``max_questions`` closed questions on the source's key facts, then answers
    them from the summary alone, without the source (coverage = answered / questions). Score
    = min(alignment, coverage) * scale, rounded to two decimals, so a summary cannot pass by
    being faithful but empty, or thorough but wrong: 3 of 4 claims supported and 2 of 5
    questions answered give 0.4. An empty summary scores 0 without judge calls; a judgement
    with no claims of a non-empty summary, or no questions, is asked once more, then fails the
    run (``empty_extraction="score"`` scores it 0). The source is the input, or the row's
    ``context_key`` entry (request context, or mapping input) with ``source="context"``; an
    empty or missing one fails with ``ScorerInputError``. Non-string values are judged as
    JSON text.

    Args:
        source: Where the summarised text is: the ``"input"``, or the row's ``"context"``.
        context_key: The key holding the source when ``source="context"``.
        max_questions: Most coverage questions drawn from the source (1 to 1,000).
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
        empty_extraction: When the judge finds no claim in a non-empty summary, or no
            question in the source, twice: ``"fail"`` the run, or ``"score"`` it 0.
    """
    check_scale("summarization", scale)
    check_allowed("scorer 'summarization', parameter 'max_questions'", max_questions,
                  MAX_QUESTIONS)  # fmt: skip

    def source_text(run: ScorerRun) -> str:
        if source == "context":
            return "\n\n".join(row_context(run, "summarization", fixed=None, key=context_key))
        text = as_text(run.input)
        if is_blank(text):
            raise ScorerInputError(
                "summarization", "input", "empty: there is no source to summarise"
            )
        return text

    def questions(results: StepResults) -> list[str]:
        return list(results.preprocess_step_result["questions"])[:max_questions]

    def coverage(results: StepResults) -> list[dict[str, Any]]:
        return list(results.analyze_step_result["coverage"])

    def skip_judgement(run: ScorerRun) -> dict[str, Any] | None:
        source_text(run)  # a row without a source fails before any judge call
        return {"alignment": [], "questions": []} if is_blank(as_text(run.output)) else None

    def score(results: StepResults) -> float:
        aligned, covered, scorable = axes(
            results.preprocess_step_result, coverage(results), max_questions
        )
        return round_score(min(aligned, covered) * scale) if scorable else 0.0

    def reason_prompt(results: StepResults, score: float) -> str:
        pre = results.preprocess_step_result
        aligned, covered, _ = axes(pre, coverage(results), max_questions)
        asked = len(questions(results))
        return REASON.substitute(
            score=show(score),
            scale=show(scale),
            alignment=show(round_score(aligned)),
            coverage=show(round_score(covered)),
            unsupported=numbered([c["claim"] for c in pre["alignment"] if not c["supported"]]),
            unanswered=numbered(
                [a["question"] for a in coverage(results)[:asked] if not a["answered"]]
            ),
        )

    def skip_reason(run: ScorerRun, results: StepResults) -> str | None:
        if is_blank(as_text(run.output)):
            return EMPTY_SUMMARY
        _, _, scorable = axes(results.preprocess_step_result, coverage(results), max_questions)
        return None if scorable else NOT_SCORABLE

    judge_source = JudgeStep(
        "Check the summary's claims against the source and draw questions from it",
        lambda run: JUDGE_SOURCE.substitute(
            max_questions=max_questions, source=source_text(run), summary=as_text(run.output)
        ),
        instructions=INSTRUCTIONS,
        output_schema=SourceJudgement,
        skip=skip_judgement,
        extraction=Extraction(
            (
                Listed("alignment", lambda run: as_text(run.output), "summary"),
                Listed("questions", source_text, "source"),
            ),
            empty_extraction,
        ),
    )
    judge_coverage = JudgeStep(
        "Answer the questions from the summary alone",
        lambda run, results: COVERAGE.substitute(
            summary=as_text(run.output),
            count=len(questions(results)),
            questions=numbered(questions(results)),
        ),
        instructions=INSTRUCTIONS,
        output_schema=Coverage,
        skip=lambda results: {"coverage": []} if not questions(results) else None,
    )
    reason = JudgeStep(
        "Explain the score", reason_prompt, instructions=INSTRUCTIONS, skip=skip_reason
    )
    return finish(
        scorer.preprocess(judge_source).analyze(judge_coverage), score, reason, explain=explain
    )
