"""Word-overlap scorers: ``token_f1`` (SQuAD) and ``keyword_coverage``."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import (
    against,
    as_text,
    best_of,
    clip,
    ground_truth,
    is_missing,
    param_error,
    references,
)
from evalkit.scorers._registry import prebuilt
from evalkit.scorers._stopwords import ENGLISH_STOP_WORDS

_PUNCTUATION = str.maketrans(dict.fromkeys(string.punctuation))
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WORD = re.compile(r"[^\W_]+")


def squad_tokens(text: str) -> list[str]:
    """SQuAD answer normalisation, then whitespace tokens.

    Lowercase, drop ASCII punctuation, drop the articles a/an/the, split on whitespace, exactly
    as the official SQuAD v1.1/v2.0 evaluation script does.
    """
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split()


def squad_f1(prediction: list[str], gold: list[str]) -> tuple[float, float, float, int]:
    """Precision, recall, F1 and common-token count of two token lists (SQuAD rules)."""
    if not prediction or not gold:
        same = float(prediction == gold)
        return same, same, same, 0
    common = sum((Counter(prediction) & Counter(gold)).values())
    if common == 0:
        return 0.0, 0.0, 0.0, 0
    precision = common / len(prediction)
    recall = common / len(gold)
    return precision, recall, 2 * precision * recall / (precision + recall), common


@prebuilt("token_f1", title="Token F1", inputs=("output", "ground_truth"), version=1)
def token_f1(scorer: Scorer) -> Scorer:
    """Word-overlap F1 between the output and the ground truth, with SQuAD normalisation.

    Range 0 to 1, higher is better. Both texts are lowercased, stripped of ASCII punctuation and
    of the articles a/an/the, and split on whitespace; F1 is the harmonic mean of the precision
    and recall of the shared tokens (counted with multiplicity), as in the SQuAD evaluation
    script. With a list of reference answers the best F1 is kept. When either side has no
    tokens, the score is 1 if both have none, else 0. A missing ground truth fails the run.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        refs = references(ground_truth(run, "token_f1"), "token_f1")
        output = squad_tokens(as_text(run.output))
        scored = [(squad_f1(output, gold), len(gold)) for gold in map(squad_tokens, refs)]
        index, _ = best_of([f1 for (_, _, f1, _), _ in scored])
        (precision, recall, f1, common), reference_tokens = scored[index]
        return {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "common_tokens": common,
            "output_tokens": len(output),
            "reference_tokens": reference_tokens,
            "reference": index,
            "references": len(refs),
        }

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        which = against(pre["references"], pre["reference"])
        if not pre["output_tokens"] or not pre["reference_tokens"]:
            empty = "both are" if score else "one side is"
            return f"F1 {score:.3f}: after normalisation {empty} empty{which}."
        return (
            f"F1 {score:.3f}: {pre['common_tokens']} shared tokens; precision "
            f"{pre['precision']:.3f} of {pre['output_tokens']} output tokens, recall "
            f"{pre['recall']:.3f} of "
            f"{pre['reference_tokens']} reference tokens{which}."
        )

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: results.preprocess_step_result["f1"])
        .generate_reason(reason)
    )


def _words(text: str, fold: bool) -> list[str]:
    return _WORD.findall(text.casefold() if fold else text)


def extract_keywords(text: str, *, fold: bool = True) -> list[str]:
    """Keywords of a text: its distinct words, minus stop words, numbers and single letters."""
    seen: dict[str, None] = {}
    for word in _words(text, fold):
        if len(word) > 1 and not word.isdigit() and word.casefold() not in ENGLISH_STOP_WORDS:
            seen.setdefault(word)
    return list(seen)


def _contains_phrase(words: list[str], vocabulary: set[str], phrase: tuple[str, ...]) -> bool:
    if len(phrase) == 1:
        return phrase[0] in vocabulary
    width = len(phrase)
    return any(tuple(words[i : i + width]) == phrase for i in range(len(words) - width + 1))


@prebuilt(
    "keyword_coverage",
    title="Keyword Coverage",
    inputs=("output", "ground_truth"),
    inputs_note="ground_truth by default; input with source='input'; neither with `keywords`",
    version=2,
)
def keyword_coverage(
    scorer: Scorer,
    *,
    keywords: Sequence[str] | None = None,
    source: Literal["ground_truth", "input"] = "ground_truth",
    ignore_case: bool = True,
) -> Scorer:
    """The fraction of expected keywords that occur in the output.

    Range 0 to 1, higher is better. The keywords are ``keywords`` when given (a keyword may be a
    phrase of several words, matched as consecutive words), else those extracted from the
    ground truth (or the input, with ``source="input"``): its distinct words without English
    stop words, numbers and single letters. Words are runs of Unicode letters and digits.
    With a list of reference answers, each is scored on its own keywords and the best kept
    (version 1 merged them into one keyword set). When there is no keyword to cover (an
    empty or all-stop-word reference) the score is 1, as nothing expected is missing. A
    missing reference fails the run.

    Args:
        keywords: The keywords (or phrases) to look for; when None they are extracted from
            the reference text.
        source: Where keywords are extracted from: ``"ground_truth"`` or ``"input"``.
        ignore_case: Match case-insensitively (Unicode case folding).
    """
    # Given keywords are split into words once; each is matched as a phrase of those words.
    fixed: dict[str, tuple[str, ...]] | None = None
    if keywords is not None:
        fixed = {keyword: tuple(_words(keyword, ignore_case)) for keyword in keywords}
        if not fixed or not all(fixed.values()):
            raise param_error(
                "keyword_coverage", "keywords", "give non-empty keywords, or leave it unset"
            )

    def keyword_sets(run: ScorerRun) -> list[dict[str, tuple[str, ...]]]:
        """One ``{keyword: phrase}`` set per reference (alternative answers are scored apart)."""
        if fixed is not None:
            return [fixed]
        value = ground_truth(run, "keyword_coverage") if source == "ground_truth" else run.input
        if is_missing(value):
            raise ScorerInputError("keyword_coverage", "input", "missing (this row has no input)")
        return [
            {name: (name,) for name in extract_keywords(ref, fold=ignore_case)}
            for ref in references(value, "keyword_coverage", source)
        ]

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        words = _words(as_text(run.output), ignore_case)
        vocabulary = set(words)
        found = []
        for keywords in keyword_sets(run):
            hits = {n: _contains_phrase(words, vocabulary, p) for n, p in keywords.items()}
            found.append(
                {
                    "matched": [n for n, hit in hits.items() if hit],
                    "missing": [n for n, hit in hits.items() if not hit],
                }
            )
        index, _ = best_of([_coverage(f["matched"], f["missing"]) for f in found])
        return {**found[index], "reference": index, "references": len(found)}

    def score(results: StepResults) -> float:
        pre = results.preprocess_step_result
        return _coverage(pre["matched"], pre["missing"])

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        matched, missing = pre["matched"], pre["missing"]
        which = against(pre["references"], pre["reference"])
        total = len(matched) + len(missing)
        if not total:
            return f"No keywords to cover in the reference; nothing expected is missing{which}."
        text = f"{len(matched)} of {total} keywords found"
        if missing:
            text += "; missing: " + ", ".join(clip(m, 30) for m in missing[:8])
            text += f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        return text + which + "."

    return scorer.preprocess(preprocess).generate_score(score).generate_reason(reason)


def _coverage(matched: list[str], missing: list[str]) -> float:
    total = len(matched) + len(missing)
    return len(matched) / total if total else 1.0
