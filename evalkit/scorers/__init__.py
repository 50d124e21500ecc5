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
    from evalkit.scorers._alignment import prompt_alignment as prompt_alignment
    from evalkit.scorers._answer_similarity import answer_similarity as answer_similarity
    from evalkit.scorers._context import context_precision as context_precision
    from evalkit.scorers._context import context_relevance as context_relevance
    from evalkit.scorers._faithfulness import faithfulness as faithfulness
    from evalkit.scorers._faithfulness import hallucination as hallucination
    from evalkit.scorers._json_scorers import json_match as json_match
    from evalkit.scorers._json_scorers import json_valid as json_valid
    from evalkit.scorers._lookup import get_scorer as get_scorer
    from evalkit.scorers._lookup import list_scorers as list_scorers
    from evalkit.scorers._lookup import scorer_info as scorer_info
    from evalkit.scorers._metrics import bleu as bleu
    from evalkit.scorers._metrics import chrf as chrf
    from evalkit.scorers._metrics import rouge_l as rouge_l
    from evalkit.scorers._numeric import numeric_match as numeric_match
    from evalkit.scorers._overlap import keyword_coverage as keyword_coverage
    from evalkit.scorers._overlap import token_f1 as token_f1
    from evalkit.scorers._recall import context_recall as context_recall
    from evalkit.scorers._registry import ScorerFactory as ScorerFactory
    from evalkit.scorers._registry import ScorerInfo as ScorerInfo
    from evalkit.scorers._registry import ScorerKind as ScorerKind
    from evalkit.scorers._registry import ScorerParam as ScorerParam
    from evalkit.scorers._relevancy import answer_relevancy as answer_relevancy
    from evalkit.scorers._rubric import llm_rubric as llm_rubric
    from evalkit.scorers._rubric import rubric as rubric
    from evalkit.scorers._safety import bias as bias
    from evalkit.scorers._safety import toxicity as toxicity
    from evalkit.scorers._similarity import content_similarity as content_similarity
    from evalkit.scorers._similarity import string_similarity as string_similarity
    from evalkit.scorers._similarity import textual_difference as textual_difference
    from evalkit.scorers._summarization import summarization as summarization
    from evalkit.scorers._text import contains as contains
    from evalkit.scorers._text import exact_match as exact_match
    from evalkit.scorers._text import regex_match as regex_match
    from evalkit.scorers._tone import tone_consistency as tone_consistency
    from evalkit.scorers._tool_selection import tool_call_accuracy_llm as tool_call_accuracy_llm
    from evalkit.scorers._tools import tool_call_accuracy as tool_call_accuracy

# Lazy: a family module is imported (and its scorers registered) when one of its factories
# is read or one of its scorers is built by name; each factory is named after its scorer.
# The families' table is the runtime's list (the lookup by name uses it too); the imports
# above, for type checkers, are checked against it by tests/test_public_api.py
# (docs/pages/design/one-declaration-per-export.md).
_MODULES = {
    "evalkit.scorers._lookup": ("get_scorer", "list_scorers", "scorer_info"),
    "evalkit.scorers._registry": ("ScorerFactory", "ScorerInfo", "ScorerKind", "ScorerParam"),
    **{f"evalkit.scorers.{module}": names for module, names in _FAMILIES.items()},
}
__getattr__, __dir__ = _exports(globals(), _MODULES)
__all__ = sorted(name for names in _MODULES.values() for name in names)
