"""Reference-based text-generation metrics: ``bleu`` and ``chrf`` (sacrebleu) and ``rouge_l``
(rouge-score). They need the ``nlp`` extra: ``pip install 'evalkit-runner[nlp]'``; the libraries are
imported when such a scorer is built, so evalkit itself imports without them."""

from __future__ import annotations

import re
from typing import Any, Literal

from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import against, as_text, best_of, ground_truth, param_error, references
from evalkit.scorers._registry import prebuilt

_UNICODE_WORD = re.compile(r"[^\W_]+")


def _inputs(run: ScorerRun, name: str) -> tuple[str, tuple[str, ...]]:
    return as_text(run.output), references(ground_truth(run, name), name)


def _both_empty(output: str, refs: tuple[str, ...]) -> bool:
    # The libraries score an empty output against an empty reference as 0; an empty answer
    # that was expected to be empty is a perfect answer, so it scores 1 here.
    return not output.strip() and any(not ref.strip() for ref in refs)


@prebuilt(
    "bleu",
    title="BLEU",
    inputs=("output", "ground_truth"),
    version=1,
    extra="nlp",
    modules=("sacrebleu",),
)
def bleu(
    scorer: Scorer,
    *,
    tokenize: Literal["13a", "intl", "zh", "char", "none"] = "13a",
    lowercase: bool = False,
    smooth_method: Literal["exp", "floor", "add-k", "none"] = "exp",
) -> Scorer:
    """Sentence-level BLEU of the output against the ground truth (sacrebleu), scaled to 0-1.

    Range 0 to 1, higher is better: sacrebleu's ``sentence_score`` (effective n-gram order, so
    short sentences are not zeroed) divided by 100. A list of strings as ground truth gives
    several references, used together as BLEU does. An empty output against a non-empty
    reference scores 0; an empty output where an empty answer is expected scores 1. A missing
    ground truth fails the run. Needs ``pip install 'evalkit-runner[nlp]'``.

    Args:
        tokenize: sacrebleu tokenizer: ``"13a"`` (the WMT default), ``"intl"`` (Unicode
            punctuation), ``"zh"`` (Chinese), ``"char"`` (characters) or ``"none"``.
        lowercase: Compare case-insensitively.
        smooth_method: Smoothing for n-gram orders without matches: ``"exp"`` (the sacrebleu
            sentence default), ``"floor"``, ``"add-k"`` or ``"none"``.
    """
    from sacrebleu.metrics.bleu import BLEU

    metric = BLEU(
        tokenize=tokenize, lowercase=lowercase, smooth_method=smooth_method, effective_order=True
    )

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, refs = _inputs(run, "bleu")
        if _both_empty(output, refs):
            return {
                "bleu": 1.0,
                "precisions": [100.0] * 4,
                "brevity_penalty": 1.0,
                "references": len(refs),
            }
        result = metric.sentence_score(output, list(refs))
        return {
            "bleu": result.score / 100.0,
            "precisions": [round(p, 4) for p in result.precisions],
            "brevity_penalty": result.bp,
            "references": len(refs),
        }

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        precisions = "/".join(f"{p:.1f}" for p in pre["precisions"])
        refs = f" against {pre['references']} references" if pre["references"] > 1 else ""
        return (
            f"BLEU {score:.3f}{refs}: 1-4-gram precisions {precisions} %, "
            f"brevity penalty {pre['brevity_penalty']:.3f}."
        )

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: results.preprocess_step_result["bleu"])
        .generate_reason(reason)
    )


@prebuilt(
    "chrf",
    title="chrF",
    inputs=("output", "ground_truth"),
    version=1,
    extra="nlp",
    modules=("sacrebleu",),
)
def chrf(
    scorer: Scorer,
    *,
    char_order: int = 6,
    word_order: int = 0,
    beta: int = 2,
    lowercase: bool = False,
) -> Scorer:
    """Sentence-level chrF (character n-gram F-score) of the output (sacrebleu), scaled to 0-1.

    Range 0 to 1, higher is better: sacrebleu's chrF ``sentence_score`` divided by 100; with
    ``word_order=2`` it is chrF++. Robust to morphology and tokenisation, so suited to
    non-English text. A list of strings as ground truth gives several references (the best
    counts). Empty-text rules as for ``bleu``. A missing ground truth fails the run. Needs
    ``pip install 'evalkit-runner[nlp]'``.

    Args:
        char_order: Longest character n-gram (1 to 10; 6 is standard).
        word_order: Longest word n-gram added (0 = chrF, 2 = chrF++).
        beta: Weight of recall over precision in the F-score (2 is standard).
        lowercase: Compare case-insensitively.
    """
    from sacrebleu.metrics.chrf import CHRF

    for name, value, low, high in (
        ("char_order", char_order, 1, 10),
        ("word_order", word_order, 0, 10),
        ("beta", beta, 1, 10),
    ):
        if not low <= value <= high:
            raise param_error("chrf", name, f"must be between {low} and {high}, got {value}")
    metric = CHRF(char_order=char_order, word_order=word_order, beta=beta, lowercase=lowercase)

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, refs = _inputs(run, "chrf")
        value = (
            1.0
            if _both_empty(output, refs)
            else metric.sentence_score(output, list(refs)).score / 100.0
        )
        return {"chrf": value, "references": len(refs)}

    def reason(score: float, results: StepResults) -> str:
        refs = results.preprocess_step_result["references"]
        plus = "+" * word_order
        against_refs = f" against {refs} references" if refs > 1 else ""
        return f"chrF{beta}{plus} {score:.3f}{against_refs} (character {char_order}-grams)."

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: results.preprocess_step_result["chrf"])
        .generate_reason(reason)
    )


class _UnicodeTokenizer:
    """rouge-score's default tokenizer, but keeping non-ASCII letters.

    The default drops every character outside ``[a-z0-9]``, so accented or non-Latin words
    vanish (French "été" becomes "t"). On ASCII text both give the same tokens.
    """

    def __init__(self, use_stemmer: bool) -> None:
        from nltk.stem import porter

        self._stemmer = porter.PorterStemmer() if use_stemmer else None

    def tokenize(self, text: str) -> list[str]:
        tokens: list[str] = _UNICODE_WORD.findall(text.lower())
        if self._stemmer is not None:
            stem = self._stemmer.stem
            tokens = [stem(token) if len(token) > 3 else token for token in tokens]
        return tokens


@prebuilt(
    "rouge_l",
    title="ROUGE-L",
    inputs=("output", "ground_truth"),
    version=1,
    extra="nlp",
    modules=("rouge_score", "nltk"),
)
def rouge_l(
    scorer: Scorer,
    *,
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure",
    use_stemmer: bool = False,
    tokenizer: Literal["unicode", "ascii"] = "unicode",
) -> Scorer:
    """ROUGE-L: longest-common-subsequence overlap of the output and the ground truth.

    Range 0 to 1, higher is better. Computed by Google's ``rouge-score`` (``rougeL``); precision
    is relative to the output's tokens, recall to the reference's. With a list of references
    the best by the chosen measure is kept. Empty-text rules as for ``bleu``. A missing ground
    truth fails the run. Needs ``pip install 'evalkit-runner[nlp]'``.

    Args:
        measure: Which figure is the score: ``"fmeasure"``, ``"precision"`` or ``"recall"``.
        use_stemmer: Apply the Porter stemmer to words longer than three letters (English).
        tokenizer: ``"unicode"`` keeps words in any script; ``"ascii"`` is rouge-score's own
            tokenizer, which keeps only ``[a-z0-9]`` (identical on ASCII text).
    """
    from rouge_score import rouge_scorer, tokenizers

    chosen = (
        _UnicodeTokenizer(use_stemmer)
        if tokenizer == "unicode"
        else tokenizers.DefaultTokenizer(use_stemmer)
    )
    metric = rouge_scorer.RougeScorer(["rougeL"], tokenizer=chosen)

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, refs = _inputs(run, "rouge_l")
        if _both_empty(output, refs):
            return {
                "precision": 1.0,
                "recall": 1.0,
                "fmeasure": 1.0,
                "reference": 0,
                "references": len(refs),
            }
        scores = [metric.score(ref, output)["rougeL"] for ref in refs]
        index, _ = best_of([getattr(s, measure) for s in scores])
        best = scores[index]
        return {
            "precision": best.precision,
            "recall": best.recall,
            "fmeasure": best.fmeasure,
            "reference": index,
            "references": len(refs),
        }

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        which = against(pre["references"], pre["reference"])
        return (
            f"ROUGE-L {measure} {score:.3f} (precision {pre['precision']:.3f}, recall "
            f"{pre['recall']:.3f}, F {pre['fmeasure']:.3f}){which}."
        )

    return (
        scorer.preprocess(preprocess)
        .generate_score(lambda results: results.preprocess_step_result[measure])
        .generate_reason(reason)
    )
