"""``faithfulness`` and ``hallucination``: the output's claims checked against a context.

After Mastra's scorers of the same names: the judge extracts the output's claims (preprocess)
and checks each against the context (analyze); the score is the share of supported claims
(faithfulness, higher is better) or of hallucinated ones (hallucination, lower is better),
computed in code, and the judge explains it. The context comes from the ``context`` parameter
or the row (see `row_context`). Bump a scorer's registry
``version`` whenever one of its prompts below changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template
from typing import Literal

from pydantic import BaseModel, Field

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._claims import claims_scorer
from evalkit.scorers._common import as_text
from evalkit.scorers._judged import (
    EmptyExtraction,
    OnePerItem,
    PerRun,
    YesNo,
    YesNoUnsure,
    check_scale,
    fixed_context,
    numbered,
    row_context,
    show,
    verdict_lines,
    verdicts_of,
)
from evalkit.scorers._registry import prebuilt

Kind = Literal["faithfulness", "hallucination"]

INSTRUCTIONS: dict[Kind, str] = {
    "faithfulness": """\
You check whether the claims an AI assistant makes are supported by a given context. You use \
only the context, never your own knowledge: a claim the context does not mention cannot be \
verified, however true it may be. Speculative claims ("may", "might", "possibly") cannot be \
verified either. Follow the output format you are asked for exactly.""",
    "hallucination": """\
You detect hallucinations: claims of an AI assistant that contradict a given context or assert \
what the context does not support. You use only the context, never your own knowledge. Less \
precise dates, reasonable approximations and omitted details are not hallucinations; \
subjective claims ("pioneering", "made history") and speculation about facts absent from the \
context are. Follow the output format you are asked for exactly.""",
}

EXTRACT = Template("""\
List every claim the text below makes.

- A claim is any statement asserting information, factual or speculative ("might", "could").
- Split compound sentences into single claims; keep numbers, dates, quantities and the \
entities each claim is about, so that each claim can be checked on its own.
- Leave out questions and commands.
- An empty text makes no claims.

Example text: "The Model S was launched in 2012 and has a range of 405 miles. It might get \
updates next year."
Example JSON: {"claims": ["The Model S was launched in 2012.", "The Model S has a range of \
405 miles.", "The Model S might get updates next year."]}

<text>
$output
</text>

Answer with JSON: {"claims": [...]}""")

ANALYZE: dict[Kind, Template] = {
    "faithfulness": Template("""\
Check each numbered claim below against the context, and only the context.

- "yes": the context states or directly implies it.
- "no": the context contradicts it.
- "unsure": the context does not mention it, or the claim is speculative.

<context>
$context
</context>

<claims count="$count">
$claims
</claims>

Give exactly one verdict per claim, in the same order ($count in all).
Answer with JSON: {"verdicts": [{"claim": "...", "reason": "...", "verdict": \
"yes" | "no" | "unsure"}]}"""),
    "hallucination": Template("""\
Decide, for each numbered claim below, whether it is a hallucination with respect to the \
context, and only the context.

- "yes" (hallucinated): the claim contradicts the context, or asserts something the context \
does not support, including subjective judgements and speculation about facts not in it.
- "no" (supported): the context supports it, allowing less precise dates, reasonable \
approximations, paraphrase and speculation about facts that are in the context.

<context>
$context
</context>

<claims count="$count">
$claims
</claims>

Give exactly one verdict per claim, in the same order ($count in all).
Answer with JSON: {"verdicts": [{"claim": "...", "reason": "...", "verdict": "yes" | "no"}]}"""),
}

REASON: dict[Kind, Template] = {
    "faithfulness": Template("""\
Explain a faithfulness score of $score, on a scale from 0 to $scale (every claim supported by \
the context), to the developer of the assistant. The score is the share of the output's claims \
that the context supports.
$body"""),
    "hallucination": Template("""\
Explain a hallucination score of $score, on a scale from 0 (no hallucination) to $scale (every \
claim hallucinated), to the developer of the assistant. The score is the share of the output's \
claims that contradict the context or are not supported by it.
$body"""),
}

REASON_BODY = Template("""\

<context>
$context
</context>

<input>
$input
</input>

<output>
$output
</output>

<verdicts>
$verdicts
</verdicts>

Write two or three sentences of plain text starting with "The score is $score because". Name \
the claims that decide the score; use the given score, do not recompute it; rely on the \
context only.""")

NO_CLAIMS: dict[Kind, str] = {
    "faithfulness": "The score is 0 because the output makes no claims to check.",
    "hallucination": "The score is 0 because the output makes no claims that could be "
    "hallucinated.",
}


class FaithfulnessVerdict(BaseModel):
    """Whether the context supports one claim."""

    claim: str = Field(description="The claim checked.")
    reason: str = Field(description="Where the context supports or contradicts it, or not.")
    verdict: YesNoUnsure = Field(description='"yes" supported, "no" contradicted, "unsure".')


class FaithfulnessVerdicts(OnePerItem):
    """One verdict per claim, in order."""

    verdicts: list[FaithfulnessVerdict]


class HallucinationVerdict(BaseModel):
    """Whether one claim is hallucinated."""

    claim: str = Field(description="The claim checked.")
    reason: str = Field(description="What the context does or does not support.")
    verdict: YesNo = Field(description='"yes" hallucinated, "no" supported.')


class HallucinationVerdicts(OnePerItem):
    """One verdict per claim, in order."""

    verdicts: list[HallucinationVerdict]


_SCHEMAS: dict[Kind, type[OnePerItem]] = {
    "faithfulness": FaithfulnessVerdicts,
    "hallucination": HallucinationVerdicts,
}


def _build(
    kind: Kind,
    scorer: Scorer,
    context: Sequence[str] | None,
    context_key: str,
    scale: float,
    explain: bool,
    empty_extraction: EmptyExtraction,
) -> Scorer:
    check_scale(kind, scale)
    fixed = fixed_context(kind, context)
    pieces = PerRun(lambda run: row_context(run, kind, fixed=fixed, key=context_key))
    output = PerRun(lambda run: as_text(run.output))

    def reason_prompt(run: ScorerRun, results: StepResults, score: float) -> str:
        body = REASON_BODY.substitute(
            context=numbered(pieces(run)),
            input=as_text(run.input),
            output=output(run),
            verdicts=verdict_lines(verdicts_of(results), text="claim"),
            score=show(score),
        )
        return REASON[kind].substitute(score=show(score), scale=show(scale), body=body)

    return claims_scorer(
        scorer,
        text=output,
        whose="output",
        pieces=pieces,
        instructions=INSTRUCTIONS[kind],
        extract=lambda text: EXTRACT.substitute(output=text),
        analyze=ANALYZE[kind],
        verdicts=_SCHEMAS[kind],
        reason=reason_prompt,
        no_claims=NO_CLAIMS[kind],
        scale=scale,
        explain=explain,
        empty_extraction=empty_extraction,
    )


@prebuilt(
    "faithfulness",
    title="Faithfulness",
    kind="llm",
    inputs=("output", "request_context"),
    inputs_note="the context: `context`, else the row's `context_key` (request context or input)",
    version=2,
)
def faithfulness(
    scorer: Scorer,
    *,
    context: Sequence[str] | None = None,
    context_key: str = "context",
    scale: float = 1.0,
    explain: bool = True,
    empty_extraction: EmptyExtraction = "fail",
) -> Scorer:
    """The share of the output's claims that the context supports (LLM-judged).

    Range 0 to ``scale``, higher is better. After Mastra's faithfulness scorer: the judge
    extracts the output's claims, then checks each against the context only: ``yes``
    (supported), ``no`` (contradicted) or ``unsure`` (not mentioned, or speculative). Score =
    yes / claims * scale, rounded to two decimals; a reply without exactly one verdict per
    claim is asked once more, then fails the run. An empty output scores 0 without a judge
    call, as in Mastra; a non-empty output in which the judge finds no claim is asked once
    more, then fails the run (``empty_extraction="score"`` scores it 0). The context is
    ``context``, else the row's ``context_key`` entry of the request context, else of the
    input when the input is a mapping: a string, or a list of passages. A row without one
    fails with ``ScorerInputError``. Non-string outputs are judged as JSON text.

    Args:
        context: Passages every row is checked against; None reads each row's.
        context_key: The key holding a row's context, in its request context or input.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
        empty_extraction: When the judge finds no claim in a non-empty output twice:
            ``"fail"`` the run, or ``"score"`` it 0.
    """
    return _build("faithfulness", scorer, context, context_key, scale, explain, empty_extraction)


@prebuilt(
    "hallucination",
    title="Hallucination",
    kind="llm",
    inputs=("output", "request_context"),
    inputs_note="the context: `context`, else the row's `context_key` (request context or input)",
    version=2,
    higher_is_better=False,
)
def hallucination(
    scorer: Scorer,
    *,
    context: Sequence[str] | None = None,
    context_key: str = "context",
    scale: float = 1.0,
    explain: bool = True,
    empty_extraction: EmptyExtraction = "fail",
) -> Scorer:
    """The share of the output's claims that contradict or go beyond the context (LLM-judged).

    Range 0 to ``scale``, **lower is better**. After Mastra's hallucination scorer: the judge
    extracts the output's claims, then marks each ``yes`` (hallucinated: contradicts the
    context or is not supported by it) or ``no``. Score = yes / claims * scale, rounded to
    two decimals (one verdict per claim, as for ``faithfulness``). An empty output scores 0
    without a judge call; a non-empty output in which the judge finds no claim is asked once
    more, then fails the run (``empty_extraction="score"`` scores it 0). The context is read
    as for
    ``faithfulness``; a row without one fails with ``ScorerInputError``. Non-string outputs
    are judged as JSON text.

    Args:
        context: Passages every row is checked against; None reads each row's.
        context_key: The key holding a row's context, in its request context or input.
        scale: Multiplies the score (the range becomes 0 to ``scale``).
        explain: Ask the judge to explain the score (one more call); False leaves no reason.
        empty_extraction: When the judge finds no claim in a non-empty output twice:
            ``"fail"`` the run, or ``"score"`` it 0.
    """
    return _build("hallucination", scorer, context, context_key, scale, explain, empty_extraction)
