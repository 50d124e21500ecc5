"""The extract-then-judge pipeline of ``faithfulness``, ``hallucination``, ``context_recall``
and ``answer_relevancy``: one implementation, the scorers giving only their prompts, schemas
and score.

The judge lists the entries of a text (claims, statements: preprocess), gives one verdict per
entry (analyze, checked to answer every entry sent), the score is computed from the verdicts
in code (generate_score) and the judge explains it (generate_reason). A blank text has no
entries and no entries need no further call; a non-blank text the judge finds no entry in is
asked once more (``_extraction.py``). The prompts, the verdict schema and the reason stay in
each scorer's module, versioned there. Why ``bias``, ``summarization`` and
``answer_similarity`` build their steps themselves:
docs/pages/design/one-implementation-each.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._judged import (
    EmptyExtraction,
    Extraction,
    JudgeStep,
    Listed,
    OnePerItem,
    finish,
    is_blank,
    verdicts_of,
)


def extract_then_judge(
    scorer: Scorer,
    *,
    field: str,
    found: type[BaseModel],
    text: Callable[[ScorerRun], str],
    whose: str,
    extract_step: str,
    extract: Callable[[str], str],
    judge_step: str,
    judge: Callable[[ScorerRun, list[str]], str],
    verdicts: type[OnePerItem],
    instructions: str,
    score: Callable[[list[dict[str, Any]]], float],
    reason: Callable[[ScorerRun, StepResults, float], str],
    nothing: str,
    explain: bool,
    empty_extraction: EmptyExtraction,
    before: Callable[[ScorerRun], object] | None = None,
) -> Scorer:
    """Add the extract-then-judge steps to ``scorer``.

    Args:
        scorer: The prebuilt base scorer.
        field: The list the extraction answers (``"claims"``, ``"statements"``).
        found: The extraction's reply schema, with that one list.
        text: The text whose entries are listed (the output, the ground truth).
        whose: Names that text in messages (``"output"``).
        extract_step: The extraction step's description.
        extract: The extraction prompt for a text.
        judge_step: The verdict step's description.
        judge: The verdict prompt from the run and the listed entries.
        verdicts: The verdict reply schema, one entry per listed entry.
        instructions: The system message of every judge step.
        score: The score from the verdicts.
        reason: The reason prompt from the run, its results and the score.
        nothing: The reason when there are no entries (no judge call).
        explain: Whether to add the reason step.
        empty_extraction: What a non-empty text without entries does, asked twice.
        before: Called with the run before extraction (a row without context fails there,
            before any judge call).
    """

    def entries(results: StepResults) -> list[str]:
        return list(results.preprocess_step_result[field])

    def skip_extract(run: ScorerRun) -> dict[str, Any] | None:
        if before is not None:
            before(run)
        return {field: []} if is_blank(text(run)) else None

    extract_entries = JudgeStep(
        extract_step,
        lambda run: extract(text(run)),
        instructions=instructions,
        output_schema=found,
        skip=skip_extract,
        extraction=Extraction((Listed(field, text, whose),), empty_extraction),
    )
    judge_each = JudgeStep(
        judge_step,
        lambda run, results: judge(run, entries(results)),
        instructions=instructions,
        output_schema=verdicts,
        skip=lambda results: {"verdicts": []} if not entries(results) else None,
        items=lambda results: len(entries(results)),
    )
    explain_score = JudgeStep(
        "Explain the score",
        lambda run, results, score: reason(run, results, score),
        instructions=instructions,
        skip=lambda results: nothing if not entries(results) else None,
    )
    return finish(
        scorer.preprocess(extract_entries).analyze(judge_each),
        lambda results: score(verdicts_of(results)),
        explain_score,
        explain=explain,
    )
