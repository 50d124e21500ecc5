"""The claims scorers ``faithfulness``, ``hallucination`` and ``context_recall``: the
extract-then-judge pipeline (``_extract_then_judge.py``) on a text's claims, each judged
against the context, scored as the share of ``yes`` verdicts. Only the prompts, the verdict
schema and the reason differ between the scorers, and those stay in their own modules,
versioned there.
"""

from __future__ import annotations

from collections.abc import Callable
from string import Template

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._extract_then_judge import extract_then_judge
from evalkit.scorers._judged import (
    Claims,
    EmptyExtraction,
    OnePerItem,
    numbered,
    share_of_yes,
)


def claims(results: StepResults) -> list[str]:
    """The claims preprocess extracted."""
    return list(results.preprocess_step_result["claims"])


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
    return extract_then_judge(
        scorer,
        field="claims",
        found=Claims,
        text=text,
        whose=whose,
        extract_step=f"Extract the {whose}'s claims",
        extract=extract,
        judge_step="Check each claim against the context",
        judge=lambda run, found: analyze.substitute(
            context=numbered(pieces(run)), count=len(found), claims=numbered(found)
        ),
        verdicts=verdicts,
        instructions=instructions,
        score=lambda given: share_of_yes(given, scale),
        reason=reason,
        nothing=no_claims,
        explain=explain,
        empty_extraction=empty_extraction,
        before=pieces,
    )
