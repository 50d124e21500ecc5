"""Which module defines each prebuilt scorer, so the registry imports a family only when one
of its scorers is first asked for.

Importing every family to build three code scorers cost a run about a tenth of a second, most
of it the LLM-judged families and their pydantic reply models (issue 31 item 6). A family
module registers its scorers as it is imported (`prebuilt`); registering a listed name from
another module is refused, and tests/scorers/test_registry.py checks that this map and the
names the families register agree.
"""

from __future__ import annotations

#: The family modules (under ``evalkit.scorers``) and the scorers each defines.
FAMILIES: dict[str, tuple[str, ...]] = {
    "_alignment": ("prompt_alignment",),
    "_answer_similarity": ("answer_similarity",),
    "_context": ("context_precision", "context_relevance"),
    "_faithfulness": ("faithfulness", "hallucination"),
    "_json_scorers": ("json_match", "json_valid"),
    "_metrics": ("bleu", "chrf", "rouge_l"),
    "_numeric": ("numeric_match",),
    "_overlap": ("keyword_coverage", "token_f1"),
    "_recall": ("context_recall",),
    "_relevancy": ("answer_relevancy",),
    "_rubric": ("llm_rubric", "rubric"),
    "_safety": ("bias", "toxicity"),
    "_similarity": ("content_similarity", "string_similarity", "textual_difference"),
    "_summarization": ("summarization",),
    "_text": ("contains", "exact_match", "regex_match"),
    "_tone": ("tone_consistency",),
    "_tool_selection": ("tool_call_accuracy_llm",),
    "_tools": ("tool_call_accuracy",),
}

#: The module of each prebuilt scorer, by registry name.
FAMILY_OF: dict[str, str] = {
    name: f"evalkit.scorers.{module}" for module, names in FAMILIES.items() for name in names
}
