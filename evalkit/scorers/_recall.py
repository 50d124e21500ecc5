"""``context_recall``: how much of the expected answer the retrieved context covers.

After Mastra's context recall scorer (itself after RAGAS): the judge extracts the claims of
the ground truth (preprocess) and checks whether each can be attributed to the context
(analyze); the score is the attributed share, computed in code, and the judge explains it.
Bump the registry ``version`` whenever a prompt below changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

from pydantic import BaseModel, Field

from evalkit.scorer import Scorer
from evalkit.scorers._claims import claims_scorer
from evalkit.scorers._common import as_text, ground_truth
from evalkit.scorers._judged import (
    EmptyExtraction,
    OnePerItem,
    PerRun,
    YesNo,
    check_scale,
    fixed_context,
    row_context,
    show,
    verdict_lines,
    verdicts_of,
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


class Attributions(OnePerItem):
    """One verdict per claim, in order."""

    verdicts: list[Attribution]


@prebuilt(
    "context_recall",
    title="Context Recall",
    kind="llm",
    inputs=("ground_truth", "request_context"),
    inputs_note="the context: `context`, else the row's `context_key` (request context or input)",
    version=2,
)
def context_recall(
    scorer: Scorer,
    *,
    context: Sequence[str] | None = None,
    context_key: str = "context",
    scale: float = 1.0,
    explain: bool = True,
    empty_extraction: EmptyExtraction = "fail",
) -> Scorer:
    """The share of the ground truth's claims that the context supports (LLM-judged).

    Range 0 to ``scale``, higher is better. After Mastra's context recall scorer: the judge
    extracts the claims of the ground truth, then marks each ``yes`` (attributable to the
    context) or ``no``. Score = yes / claims * scale, rounded to two decimals; a reply without
    exactly one verdict per claim is asked once more, then fails the run. An empty ground truth
    has no claims and scores 0, without judge calls; a non-empty one in which the judge finds
    no claim is asked once more, then fails the run (``empty_extraction="score"`` scores it
    0). A missing ground truth, or a row without
    context, fails with ``ScorerInputError``. The context is read as for ``faithfulness``;
    non-string ground truths are JSON text.

    Args:
        context: Passages used for every row; None reads each row's.
        context_key: The key holding a row's context, in its request context or input.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
        empty_extraction: When the judge finds no claim in a non-empty ground truth twice:
            ``"fail"`` the run, or ``"score"`` it 0.
    """
    check_scale("context_recall", scale)
    fixed = fixed_context("context_recall", context)
    pieces = PerRun(lambda run: row_context(run, "context_recall", fixed=fixed, key=context_key))
    reference = PerRun(lambda run: as_text(ground_truth(run, "context_recall")))
    return claims_scorer(
        scorer,
        text=reference,
        whose="ground truth",
        pieces=pieces,
        instructions=INSTRUCTIONS,
        extract=lambda text: EXTRACT.substitute(ground_truth=text),
        analyze=ANALYZE,
        verdicts=Attributions,
        reason=lambda run, results, score: REASON.substitute(
            score=show(score),
            scale=show(scale),
            ground_truth=reference(run),
            verdicts=verdict_lines(verdicts_of(results), text="claim"),
        ),
        no_claims=NO_CLAIMS,
        scale=scale,
        explain=explain,
        empty_extraction=empty_extraction,
    )
