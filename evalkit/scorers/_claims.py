"""The claims pipeline ``faithfulness``, ``hallucination`` and ``context_recall`` share.

The judge extracts the claims of a text (preprocess), gives one verdict per claim against the
context (analyze, checked to answer every claim sent), the score is the share of ``yes``
verdicts (generate_score, in code) and the judge explains it (generate_reason). A blank text
has no claims and no claims need no further call; a non-blank text the judge finds no claims
in is asked once more (``_extraction.py``). Only the prompts, the verdict schema and
the reason differ between the scorers, and those stay in their own modules, versioned there.
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template
from typing import Any

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._judged import (
    Claims,
    EmptyExtraction,
    Extraction,
    JudgeStep,
    Listed,
    OnePerItem,
    finish,
    is_blank,
    numbered,
    share_of_yes,
)


def claims(results: StepResults) -> list[str]:
    """The claims preprocess extracted."""
    return list(results.preprocess_step_result["claims"])


def claim_verdicts(results: StepResults) -> list[dict[str, Any]]:
    """The verdicts analyze gave, one per claim."""
    return list(results.analyze_step_result["verdicts"])


def claims_scorer(
    scorer: Scorer,
    *,
    text: Callable[[ScorerRun], str],
    whose: str,
    pieces: Callable[[ScorerRun], list[str]],
    instructions: str,
    extract: Callable[[str], str],
    analyze: Template,
    verdicts: type[OnePerItem],
    reason: Callable[[ScorerRun, StepResults, float], str],
    no_claims: str,
    scale: float,
    explain: bool,
    empty_extraction: EmptyExtraction,
) -> Scorer:
    """Add the claims pipeline's steps to ``scorer``.

    Args:
        scorer: The prebuilt base scorer.
        text: The text whose claims are checked (the output, the ground truth).
        whose: Names that text in step descriptions (``"output"``).
        pieces: The run's context passages; called before extraction, so a row without
            context fails before any judge call.
        instructions: The system message of every judge step.
        extract: The extraction prompt for a text.
        analyze: The verdict prompt, with ``$context``, ``$count`` and ``$claims``.
        verdicts: The verdict reply schema, one entry per claim.
        reason: The reason prompt from the run, its results and the score.
        no_claims: The reason when there are no claims (no judge call).
        scale: Multiplies the share of ``yes`` verdicts.
        explain: Whether to add the reason step.
        empty_extraction: What a non-empty text without claims does, asked twice.
    """

    def skip_extract(run: ScorerRun) -> dict[str, Any] | None:
        pieces(run)
        return {"claims": []} if is_blank(text(run)) else None

    extract_step = JudgeStep(
        f"Extract the {whose}'s claims",
        lambda run: extract(text(run)),
        instructions=instructions,
        output_schema=Claims,
        skip=skip_extract,
        extraction=Extraction((Listed("claims", text, whose),), empty_extraction),
    )
    check_step = JudgeStep(
        "Check each claim against the context",
        lambda run, results: analyze.substitute(
            context=numbered(pieces(run)),
            count=len(claims(results)),
            claims=numbered(claims(results)),
        ),
        instructions=instructions,
        output_schema=verdicts,
        skip=lambda results: {"verdicts": []} if not claims(results) else None,
        items=lambda results: len(claims(results)),
    )
    reason_step = JudgeStep(
        "Explain the score",
        lambda run, results, score: reason(run, results, score),
        instructions=instructions,
        skip=lambda results: no_claims if not claims(results) else None,
    )
    return finish(
        scorer.preprocess(extract_step).analyze(check_step),
        lambda results: share_of_yes(claim_verdicts(results), scale),
        reason_step,
        explain=explain,
    )
