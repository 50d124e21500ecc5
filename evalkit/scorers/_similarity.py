"""Character-level similarity scorers: ``string_similarity``, ``content_similarity`` and
``textual_difference``. Each compares the output with every reference and keeps the best."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

from rapidfuzz.distance import Indel, JaroWinkler, Levenshtein

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import against, as_text, best_of, ground_truth, references
from evalkit.scorers._registry import prebuilt

_WHITESPACE = re.compile(r"\s+")


def _best_similarity(
    name: str, similarity: Callable[[str, str], float], prepare: Callable[[str], str]
) -> Callable[[ScorerRun], dict[str, Any]]:
    """A preprocess step scoring the output against each reference and keeping the best."""

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        refs = references(ground_truth(run, name), name)
        output = prepare(as_text(run.output))
        index, best = best_of([similarity(output, prepare(ref)) for ref in refs])
        return {"similarity": best, "reference": index, "references": len(refs)}

    return preprocess


def _reason(what: str) -> Callable[[float, StepResults], str]:
    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        return f"{what} {score:.3f}{against(pre['references'], pre['reference'])}."

    return reason


def _similarity_score(results: StepResults) -> float:
    return float(results.preprocess_step_result["similarity"])


_ALGORITHMS: dict[str, tuple[Callable[..., float], str]] = {
    "levenshtein": (Levenshtein.normalized_similarity, "Normalised Levenshtein similarity"),
    "jaro_winkler": (JaroWinkler.similarity, "Jaro-Winkler similarity"),
    "indel": (Indel.normalized_similarity, "Normalised Indel similarity"),
}


@prebuilt(
    "string_similarity", title="String Similarity", inputs=("output", "ground_truth"), version=1
)
def string_similarity(
    scorer: Scorer,
    *,
    algorithm: Literal["levenshtein", "jaro_winkler", "indel"] = "levenshtein",
    ignore_case: bool = False,
) -> Scorer:
    """Edit-distance similarity of the output to the ground truth (rapidfuzz).

    Range 0 to 1, higher is better (1 = identical). ``levenshtein`` is
    ``1 - distance / max(len(a), len(b))``; ``indel`` counts only insertions and deletions
    (``1 - distance / (len(a) + len(b))``); ``jaro_winkler`` favours a shared prefix and suits
    short strings such as names. Two empty texts score 1, one empty text 0. Non-string values
    are compared as canonical JSON text; with a list of references the best is kept. A missing
    ground truth fails the run.

    Args:
        algorithm: ``"levenshtein"``, ``"jaro_winkler"`` or ``"indel"``.
        ignore_case: Compare case-insensitively (Unicode case folding).
    """
    similarity, label = _ALGORITHMS[algorithm]
    prepare: Callable[[str], str] = str.casefold if ignore_case else str
    return (
        scorer.preprocess(_best_similarity("string_similarity", similarity, prepare))
        .generate_score(_similarity_score)
        .generate_reason(_reason(label))
    )


def dice_bigrams(first: str, second: str) -> float:
    """Sørensen-Dice coefficient of the character bigrams of two texts, whitespace removed.

    The algorithm of the ``string-similarity`` package's ``compareTwoStrings`` (which Mastra's
    content-similarity scorer uses): identical texts score 1, texts shorter than two
    characters 0, else ``2 * shared bigrams / (bigrams(a) + bigrams(b))`` with multiplicity.
    """
    first = _WHITESPACE.sub("", first)
    second = _WHITESPACE.sub("", second)
    if first == second:
        return 1.0
    if len(first) < 2 or len(second) < 2:
        return 0.0
    pairs_first = Counter(first[i : i + 2] for i in range(len(first) - 1))
    pairs_second = Counter(second[i : i + 2] for i in range(len(second) - 1))
    shared = sum((pairs_first & pairs_second).values())
    return 2.0 * shared / (len(first) + len(second) - 2)


@prebuilt(
    "content_similarity", title="Content Similarity", inputs=("output", "ground_truth"), version=1
)
def content_similarity(scorer: Scorer, *, ignore_case: bool = True) -> Scorer:
    """Dice coefficient of the character bigrams of the output and the ground truth.

    Range 0 to 1, higher is better. Whitespace is removed before the bigrams are taken, so it is
    robust to reflowed text and small spelling changes (``"healed"`` vs ``"sealed"`` = 0.8).
    Identical texts (two empty ones included) score 1; a text shorter than two characters
    against a different one scores 0. With a list of references the best is kept. A missing
    ground truth fails the run.

    Args:
        ignore_case: Compare case-insensitively (Unicode case folding); on by default.
    """
    prepare: Callable[[str], str] = str.casefold if ignore_case else str
    return (
        scorer.preprocess(_best_similarity("content_similarity", dice_bigrams, prepare))
        .generate_score(_similarity_score)
        .generate_reason(_reason("Bigram Dice similarity"))
    )


@prebuilt(
    "textual_difference", title="Textual Difference", inputs=("output", "ground_truth"), version=1
)
def textual_difference(scorer: Scorer, *, ignore_case: bool = False) -> Scorer:
    """How little the output differs from the ground truth: difflib's similarity ratio.

    Range 0 to 1, higher is better (1 = no difference). The score is
    ``difflib.SequenceMatcher(None, output, ground_truth, autojunk=False).ratio()``, i.e.
    ``2 * matched characters / total characters``; the "popular character" heuristic is off
    because it distorts texts over 200 characters. The analysis counts the edit operations.
    Two empty texts score 1. With a list of references the best is kept. A missing ground truth
    fails the run.

    Args:
        ignore_case: Compare case-insensitively (Unicode case folding).
    """
    prepare: Callable[[str], str] = str.casefold if ignore_case else str

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        refs = references(ground_truth(run, "textual_difference"), "textual_difference")
        output = prepare(as_text(run.output))
        matchers = [
            difflib.SequenceMatcher(None, output, prepare(ref), autojunk=False) for ref in refs
        ]
        index, best = best_of([matcher.ratio() for matcher in matchers])
        changes = Counter(tag for tag, *_ in matchers[index].get_opcodes() if tag != "equal")
        return {
            "similarity": best,
            "changes": dict(sorted(changes.items())),
            "reference": index,
            "references": len(refs),
        }

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        changes = pre["changes"]
        edits = ", ".join(f"{count} {tag}" for tag, count in changes.items()) or "no edits"
        which = against(pre["references"], pre["reference"])
        return f"Similarity ratio {score:.3f} ({edits}){which}."

    return scorer.preprocess(preprocess).generate_score(_similarity_score).generate_reason(reason)
