"""``context_recall``: how much of the expected answer the retrieved context covers.

After Mastra's context recall scorer (itself after RAGAS): the judge extracts the claims of
the ground truth (preprocess) and checks whether each can be attributed to the context
(analyze); the score is the attributed share, computed in code, and the judge explains it.
Bump the registry ``version`` whenever a prompt below changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template
from typing import Any

from pydantic import BaseModel, Field

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, ground_truth
from evalkit.scorers._judged import (
    Claims,
    JudgeStep,
    YesNo,
    check_scale,
    count,
    finish,
    fixed_context,
    is_blank,
    numbered,
    round_score,
    row_context,
    show,
    verdict_lines,
)
from evalkit.scorers._registry import prebuilt

INSTRUCTIONS = """\
You evaluate retrieval: whether the facts of a reference answer can be found in the context \
that was retrieved to answer the question. You use only the context, never your own \
knowledge. Follow the output format you are asked for exactly."""

EXTRACT = Template("""\
List the claims the reference answer below makes.

- A claim is one atomic statement of fact; split compound sentences.
- Keep numbers, dates, names and the entity each claim is about, so that each claim can be \
checked on its own.
- An empty reference makes no claims.

<reference>
$ground_truth
</reference>

Answer with JSON: {"claims": [...]}""")

ANALYZE = Template("""\
Decide, for each numbered claim below, whether it can be attributed to the context.

- "yes": the context states it, or it follows directly from what the context states.
- "no": the context does not contain it (even if it is true).

<context>
$context
</context>

<claims count="$count">
$claims
</claims>

Give exactly one verdict per claim, in the same order ($count in all).
Answer with JSON: {"verdicts": [{"claim": "...", "reason": "...", "verdict": "yes" | "no"}]}""")

REASON = Template("""\
Explain a context recall score of $score, on a scale from 0 to $scale (every claim of the \
reference answer found in the context), to the developer of a retrieval system. The score is \
the share of the reference answer's claims that the context supports.

<reference>
$ground_truth
</reference>

<verdicts>
$verdicts
</verdicts>

Write two or three sentences of plain text starting with "The score is $score because". Name \
what the context is missing, if anything; use the given score, do not recompute it.""")

NO_CLAIMS = "The score is 0 because the ground truth makes no claims to look for."


class Attribution(BaseModel):
    """Whether one claim of the reference can be found in the context."""

    claim: str = Field(description="The claim checked.")
    reason: str = Field(description="Where the context states it, or that it does not.")
    verdict: YesNo = Field(description='"yes" attributable, "no" not in the context.')


class Attributions(BaseModel):
    """One verdict per claim, in order."""

    verdicts: list[Attribution]


@prebuilt(
    "context_recall",
    title="Context Recall",
    kind="llm",
    inputs=("ground_truth", "request_context"),
    inputs_note="the context: `context`, else the row's `context_key` (request context or input)",
    version=1,
)
def context_recall(
    scorer: Scorer,
    *,
    context: Sequence[str] | None = None,
    context_key: str = "context",
    scale: float = 1.0,
    explain: bool = True,
) -> Scorer:
    """The share of the ground truth's claims that the context supports (LLM-judged).

    Range 0 to ``scale``, higher is better. After Mastra's context recall scorer: the judge
    extracts the claims of the ground truth, then marks each ``yes`` (attributable to the
    context) or ``no``. Score = yes / claims * scale (at most ``scale``), rounded to two
    decimals. An empty ground truth has no claims and scores 0, without judge calls. A
    missing ground truth, or a row without context, fails with ``ScorerInputError``. The
    context is read as for ``faithfulness``; non-string ground truths are JSON text.

    Args:
        context: Passages used for every row; None reads each row's.
        context_key: The key holding a row's context, in its request context or input.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
    """
    check_scale("context_recall", scale)
    fixed = fixed_context("context_recall", context)

    def pieces(run: ScorerRun) -> list[str]:
        return row_context(run, "context_recall", fixed=fixed, key=context_key)

    def reference(run: ScorerRun) -> str:
        return as_text(ground_truth(run, "context_recall"))

    def claims(results: StepResults) -> list[str]:
        return list(results.preprocess_step_result["claims"])

    def verdicts(results: StepResults) -> list[dict[str, Any]]:
        return list(results.analyze_step_result["verdicts"])

    def skip_extract(run: ScorerRun) -> dict[str, Any] | None:
        pieces(run)  # a row without context fails before any judge call
        return {"claims": []} if is_blank(reference(run)) else None

    def score(results: StepResults) -> float:
        total = len(claims(results))
        if not total:
            return 0.0
        return round_score(min(1.0, count(verdicts(results), "yes") / total) * scale)

    extract = JudgeStep(
        "Extract the ground truth's claims",
        lambda run: EXTRACT.substitute(ground_truth=reference(run)),
        instructions=INSTRUCTIONS,
        output_schema=Claims,
        skip=skip_extract,
    )
    attribute = JudgeStep(
        "Check whether the context supports each claim",
        lambda run, results: ANALYZE.substitute(
            context=numbered(pieces(run)),
            count=len(claims(results)),
            claims=numbered(claims(results)),
        ),
        instructions=INSTRUCTIONS,
        output_schema=Attributions,
        skip=lambda results: {"verdicts": []} if not claims(results) else None,
    )
    reason = JudgeStep(
        "Explain the score",
        lambda run, results, score: REASON.substitute(
            score=show(score),
            scale=show(scale),
            ground_truth=reference(run),
            verdicts=verdict_lines(verdicts(results), text="claim"),
        ),
        instructions=INSTRUCTIONS,
        skip=lambda results: NO_CLAIMS if not claims(results) else None,
    )
    return finish(scorer.preprocess(extract).analyze(attribute), score, reason, explain=explain)
