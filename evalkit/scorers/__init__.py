"""Prebuilt scorers, by name: ``get_scorer("exact_match", ignore_case=True)``.

Each factory here returns an ordinary [`Scorer`][evalkit.Scorer] built with
[`create_scorer`][evalkit.create_scorer], so it runs, composes and stores like any scorer a user
writes. [`list_scorers`][evalkit.list_scorers] and [`scorer_info`][evalkit.scorer_info] describe
them: what each measures, its range and direction, the inputs it needs, its parameters and its
    definition version. The
reference page docs/pages/reference/scorers.md is generated from them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports
from evalkit.scorers._families import FAMILIES as _FAMILIES

if TYPE_CHECKING:
    from evalkit.scorers._alignment import prompt_alignment
    from evalkit.scorers._answer_similarity import answer_similarity
    from evalkit.scorers._context import context_precision, context_relevance
    from evalkit.scorers._faithfulness import faithfulness, hallucination
    from evalkit.scorers._json_scorers import json_match, json_valid
    from evalkit.scorers._lookup import get_scorer, list_scorers, scorer_info
    from evalkit.scorers._metrics import bleu, chrf, rouge_l
    from evalkit.scorers._numeric import numeric_match
    from evalkit.scorers._overlap import keyword_coverage, token_f1
    from evalkit.scorers._recall import context_recall
    from evalkit.scorers._registry import ScorerFactory, ScorerInfo, ScorerKind, ScorerParam
    from evalkit.scorers._relevancy import answer_relevancy
    from evalkit.scorers._rubric import llm_rubric, rubric
    from evalkit.scorers._safety import bias, toxicity
    from evalkit.scorers._similarity import (
        content_similarity,
        string_similarity,
        textual_difference,
    )
    from evalkit.scorers._summarization import summarization
    from evalkit.scorers._text import contains, exact_match, regex_match
    from evalkit.scorers._tone import tone_consistency
    from evalkit.scorers._tool_selection import tool_call_accuracy_llm
    from evalkit.scorers._tools import tool_call_accuracy

# Lazy: a family module is imported (and its scorers registered) when one of its factories
# is read or one of its scorers is built by name; each factory is named after its scorer.
__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.scorers._lookup": ("get_scorer", "list_scorers", "scorer_info"),
        "evalkit.scorers._registry": ("ScorerFactory", "ScorerInfo", "ScorerKind", "ScorerParam"),
        **{f"evalkit.scorers.{module}": names for module, names in _FAMILIES.items()},
    },
)

__all__ = [
    "ScorerFactory",
    "ScorerInfo",
    "ScorerKind",
    "ScorerParam",
    "answer_relevancy",
    "answer_similarity",
    "bias",
    "bleu",
    "chrf",
    "contains",
    "content_similarity",
    "context_precision",
    "context_recall",
    "context_relevance",
    "exact_match",
    "faithfulness",
    "get_scorer",
    "hallucination",
    "json_match",
    "json_valid",
    "keyword_coverage",
    "list_scorers",
    "llm_rubric",
    "numeric_match",
    "prompt_alignment",
    "regex_match",
    "rouge_l",
    "rubric",
    "scorer_info",
    "string_similarity",
    "summarization",
    "textual_difference",
    "token_f1",
    "tone_consistency",
    "tool_call_accuracy",
    "tool_call_accuracy_llm",
    "toxicity",
]
