"""``context_precision`` and ``context_relevance``: how good the retrieved context pieces are.

After Mastra's scorers of the same names. A function preprocess step reads the context pieces
(so the stored ``preprocess_step_result`` shows what was judged); the judge rates each piece
(analyze); the score is computed in code and the judge explains it. ``context_recall`` lives
in `evalkit.scorers._recall`. Bump a scorer's registry ``version`` whenever one of its
prompts below changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, Field

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, ground_truth
from evalkit.scorers._judged import (
    JudgeStep,
    OnePerItem,
    YesNo,
    check_scale,
    check_weight,
    finish,
    fixed_context,
    is_blank,
    lowercase,
    numbered,
    round_score,
    row_context,
    show,
)
from evalkit.scorers._registry import prebuilt

PRECISION_INSTRUCTIONS = """\
You evaluate retrieval for question answering: whether each retrieved context piece is \
useful for arriving at a given answer to a question. Judge usefulness for that answer, not \
general interest in the topic. Follow the output format you are asked for exactly."""

PRECISION_ANALYZE = Template("""\
Decide, for each numbered context piece below, whether it was useful for arriving at the \
answer to the question.

- "yes": the piece contains information that the answer uses or that directly supports it.
- "no": the piece does not help to reach this answer (off-topic, or on the topic but about \
something else).

<question>
$input
</question>

<answer>
$reference
</answer>

<context count="$count">
$context
</context>

Give one verdict per piece, with its number as context_index (1 to $count).
Answer with JSON: {"verdicts": [{"context_index": 1, "reason": "...", "verdict": "yes" | "no"}]}""")

PRECISION_REASON = Template("""\
Explain a context precision score of $score, on a scale from 0 to $scale, to the developer of \
a retrieval system. The score is the mean average precision of the context pieces judged \
useful: it is high when the useful pieces come first.

<question>
$input
</question>

<verdicts>
$verdicts
</verdicts>

Write two or three sentences of plain text starting with "The score is $score because". Say \
which pieces were useful and where they were ranked; use the given score, do not recompute it.""")

RELEVANCE_INSTRUCTIONS = """\
You evaluate the context given to an AI assistant: how relevant each context piece is to the \
user's query, whether the assistant's response used it, and what context was missing to \
answer well. Follow the output format you are asked for exactly."""

RELEVANCE_ANALYZE = Template("""\
Rate each numbered context piece below for the query, and note whether the response used it.

relevance_level:
- "high": directly needed to answer the query.
- "medium": helpful background for the answer.
- "low": on the topic but of little use for this query.
- "none": unrelated to the query.

was_used: true when the response draws on the piece's information.

Then list in missing_context any information the query needed that no piece provided (an \
empty list when nothing was missing).

<query>
$input
</query>

<response>
$output
</response>

<context count="$count">
$context
</context>

Give one evaluation per piece, with its number as context_index (1 to $count).
Answer with JSON: {"evaluations": [{"context_index": 1, "reasoning": "...", "relevance_level": \
"high" | "medium" | "low" | "none", "was_used": true}], "missing_context": ["..."], \
"overall_assessment": "..."}""")

RELEVANCE_REASON = Template("""\
Explain a context relevance score of $score, on a scale from 0 to $scale, to the developer of \
the assistant. The score is the mean relevance of the context pieces (high 1, medium 0.7, low \
0.3, none 0), minus $unused for each highly relevant piece the response did not use and \
$missing for each missing piece of information (at most $max_missing in all).

<query>
$input
</query>

<evaluations>
$evaluations
</evaluations>

<missing_context>
$missing_context
</missing_context>

Write two or three sentences of plain text starting with "The score is $score because". Use \
the given score, do not recompute it.""")

EMPTY_ANSWER = "The score is 0 because the answer is empty: no context piece can be useful for it."

_LEVELS = {"high": 1.0, "medium": 0.7, "low": 0.3, "none": 0.0}


class PrecisionVerdict(BaseModel):
    """Whether one context piece was useful for the answer."""

    context_index: int = Field(description="The piece's number, from 1.")
    reason: str = Field(description="Why it was or was not useful.")
    verdict: YesNo = Field(description='"yes" useful, "no" not useful.')


class PrecisionVerdicts(OnePerItem):
    """One verdict per context piece."""

    numbered_by: ClassVar[str | None] = "context_index"

    verdicts: list[PrecisionVerdict]


class Evaluation(BaseModel):
    """How relevant one context piece is, and whether it was used."""

    context_index: int = Field(description="The piece's number, from 1.")
    reasoning: str = Field(description="Why this level, and how the response used it.")
    relevance_level: Annotated[Literal["high", "medium", "low", "none"], BeforeValidator(lowercase)]
    was_used: bool = Field(description="Whether the response draws on this piece.")


class Evaluations(OnePerItem):
    """The evaluation of each context piece and what context was missing."""

    per_item: ClassVar[str] = "evaluations"
    numbered_by: ClassVar[str | None] = "context_index"

    evaluations: list[Evaluation]
    missing_context: list[str] = Field(description="Information needed but not provided.")
    overall_assessment: str


def _read_context(scorer: str, fixed: tuple[str, ...] | None, key: str) -> tuple[Any, Any]:
    """The preprocess function reading the pieces, and the accessor of its result."""

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        return {"context": row_context(run, scorer, fixed=fixed, key=key)}

    def pieces(results: StepResults) -> list[str]:
        return list(results.preprocess_step_result["context"])

    return preprocess, pieces


def average_precision(relevant: Sequence[bool]) -> float:
    """Mean of precision@k over the ranks k of the relevant items; 0 when there is none."""
    hits = 0
    total = 0.0
    for rank, is_relevant in enumerate(relevant, start=1):
        if is_relevant:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


@prebuilt(
    "context_precision",
    title="Context Precision",
    kind="llm",
    inputs=("input", "output", "request_context"),
    inputs_note="ground_truth instead of output with reference='ground_truth'; the context: "
    "`context`, else the row's `context_key` (request context or input)",
    version=1,
)
def context_precision(
    scorer: Scorer,
    *,
    context: Sequence[str] | None = None,
    context_key: str = "context",
    reference: Literal["output", "ground_truth"] = "output",
    scale: float = 1.0,
    explain: bool = True,
) -> Scorer:
    """Whether the context pieces useful for the answer are ranked first (LLM-judged, MAP).

    Range 0 to ``scale``, higher is better. After Mastra's context precision scorer: the judge
    marks each context piece ``yes`` (useful for arriving at the answer to the input) or ``no``;
    the score is the mean average precision over the pieces in their given order: the mean, over
    the useful pieces, of the share of useful pieces up to and including each one. Useful pieces
    at ranks 1 and 3 of 4 give (1/1 + 2/3) / 2 = 0.83. No useful piece scores 0; an empty answer
    scores 0 without a judge call. The judge must answer every piece once, by number
    (``context_index`` 1 to n); another reply is asked once more, then fails the run. The answer
    is the output (as in Mastra) or the ground truth (``reference="ground_truth"``, as in
    RAGAS). The context is read as for ``faithfulness``; a row without one fails with
    ``ScorerInputError``.

    Args:
        context: Passages, in retrieval order, used for every row; None reads each row's.
        context_key: The key holding a row's context, in its request context or input.
        reference: The answer the pieces should be useful for: ``"output"`` or
            ``"ground_truth"``.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
    """
    check_scale("context_precision", scale)
    read, pieces = _read_context(
        "context_precision", fixed_context("context_precision", context), context_key
    )

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        if reference == "ground_truth":
            ground_truth(run, "context_precision")
        return dict(read(run))

    def answer(run: ScorerRun) -> str:
        return as_text(run.ground_truth if reference == "ground_truth" else run.output)

    def relevance(results: StepResults) -> list[bool]:
        # One verdict per piece, numbered 1..n (PrecisionVerdicts checks it); an empty answer
        # has none, and then no piece is useful.
        relevant = [False] * len(pieces(results))
        for verdict in results.analyze_step_result["verdicts"]:
            relevant[verdict["context_index"] - 1] = verdict["verdict"] == "yes"
        return relevant

    judge = JudgeStep(
        "Judge whether each context piece was useful for the answer",
        lambda run, results: PRECISION_ANALYZE.substitute(
            input=as_text(run.input),
            reference=answer(run),
            count=len(pieces(results)),
            context=numbered(pieces(results)),
        ),
        instructions=PRECISION_INSTRUCTIONS,
        output_schema=PrecisionVerdicts,
        # No piece can be useful for an empty answer.
        skip=lambda run: {"verdicts": []} if is_blank(answer(run)) else None,
        items=lambda results: len(pieces(results)),
    )
    reason = JudgeStep(
        "Explain the score",
        lambda run, results, score: PRECISION_REASON.substitute(
            score=show(score),
            scale=show(scale),
            input=as_text(run.input),
            verdicts=numbered(
                [
                    f"piece {v['context_index']}: [{v['verdict']}] {v['reason']}"
                    for v in results.analyze_step_result["verdicts"]
                ]
            ),
        ),
        instructions=PRECISION_INSTRUCTIONS,
        skip=lambda run: EMPTY_ANSWER if is_blank(answer(run)) else None,
    )
    return finish(
        scorer.preprocess(preprocess).analyze(judge),
        lambda results: round_score(average_precision(relevance(results)) * scale),
        reason,
        explain=explain,
    )


@prebuilt(
    "context_relevance",
    title="Context Relevance",
    kind="llm",
    inputs=("input", "output", "request_context"),
    inputs_note="the context: `context`, else the row's `context_key` (request context or input)",
    version=1,
)
def context_relevance(
    scorer: Scorer,
    *,
    context: Sequence[str] | None = None,
    context_key: str = "context",
    unused_high_relevance_penalty: float = 0.1,
    missing_context_penalty: float = 0.15,
    max_missing_context_penalty: float = 0.5,
    scale: float = 1.0,
    explain: bool = True,
) -> Scorer:
    """How relevant and well used the context pieces were for the response (LLM-judged).

    Range 0 to ``scale``, higher is better. After Mastra's context relevance scorer: the judge
    rates each context piece ``high`` (1), ``medium`` (0.7), ``low`` (0.3) or ``none`` (0) for
    the input, says whether the output used it, and lists missing context. Score = max(0, mean
    level - unused_high_relevance_penalty * unused high pieces - min(missing_context_penalty *
    missing items, max_missing_context_penalty)) * scale, rounded to two decimals: levels high,
    high, low with one high piece unused and one missing item give (2.3 / 3) - 0.1 - 0.15 =
    0.52. The judge must rate every piece once, by number; another reply is asked once more,
    then fails the run (Mastra averages over the pieces the judge chose to rate). The context is
    read as for ``faithfulness``; a row without one fails with ``ScorerInputError``.

    Args:
        context: Passages used for every row; None reads each row's.
        context_key: The key holding a row's context, in its request context or input.
        unused_high_relevance_penalty: Subtracted per highly relevant piece left unused.
        missing_context_penalty: Subtracted per missing piece of information.
        max_missing_context_penalty: Cap on the total missing-context penalty.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
    """
    name = "context_relevance"
    check_scale(name, scale)
    check_weight(name, "unused_high_relevance_penalty", unused_high_relevance_penalty)
    check_weight(name, "missing_context_penalty", missing_context_penalty)
    check_weight(name, "max_missing_context_penalty", max_missing_context_penalty)
    read, pieces = _read_context(name, fixed_context(name, context), context_key)

    def score(results: StepResults) -> float:
        analysis = results.analyze_step_result
        evaluations = analysis["evaluations"]
        missing = len(analysis["missing_context"])
        # One evaluation per piece (Evaluations checks it), and a row has at least one piece.
        base = sum(_LEVELS[e["relevance_level"]] for e in evaluations) / len(evaluations)
        unused = sum(1 for e in evaluations if e["relevance_level"] == "high" and not e["was_used"])
        penalty = unused * unused_high_relevance_penalty + min(
            missing * missing_context_penalty, max_missing_context_penalty
        )
        return round_score(max(0.0, base - penalty) * scale)

    judge = JudgeStep(
        "Rate each context piece's relevance and use",
        lambda run, results: RELEVANCE_ANALYZE.substitute(
            input=as_text(run.input),
            output=as_text(run.output),
            count=len(pieces(results)),
            context=numbered(pieces(results)),
        ),
        instructions=RELEVANCE_INSTRUCTIONS,
        output_schema=Evaluations,
        items=lambda results: len(pieces(results)),
    )

    def reason_prompt(run: ScorerRun, results: StepResults, score: float) -> str:
        analysis = results.analyze_step_result
        lines = [
            f"piece {e['context_index']}: {e['relevance_level']}, "
            f"{'used' if e['was_used'] else 'not used'}: {e['reasoning']}"
            for e in analysis["evaluations"]
        ]
        return RELEVANCE_REASON.substitute(
            score=show(score),
            scale=show(scale),
            unused=show(unused_high_relevance_penalty),
            missing=show(missing_context_penalty),
            max_missing=show(max_missing_context_penalty),
            input=as_text(run.input),
            evaluations=numbered(lines),
            missing_context=numbered(analysis["missing_context"]),
        )

    reason = JudgeStep("Explain the score", reason_prompt, instructions=RELEVANCE_INSTRUCTIONS)
    return finish(scorer.preprocess(read).analyze(judge), score, reason, explain=explain)
