"""``tone_consistency``: sentiment agreement measured with VADER (the ``nlp`` extra).

VADER (vaderSentiment) is a lexicon- and rule-based English sentiment model whose lexicon ships
inside the package, so scoring needs no download and no network. Its ``compound`` score runs
from -1 (most negative) to +1 (most positive).
"""

from __future__ import annotations

import re
import statistics
from typing import Any, Literal

from evalkit.errors import ScorerInputError
from evalkit.scorer import Scorer, ScorerRun, StepResults
from evalkit.scorers._common import as_text, ground_truth, is_missing
from evalkit.scorers._registry import prebuilt

_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+|$)")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: runs ending in ``.``, ``!`` or ``?`` (or the text's end)."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


@prebuilt(
    "tone_consistency",
    title="Tone Consistency",
    inputs=("output", "ground_truth"),
    inputs_note="ground_truth by default; input with against='input'; output only with 'self'",
    version=1,
    extra="nlp",
    modules=("vaderSentiment",),
)
def tone_consistency(
    scorer: Scorer, *, against: Literal["ground_truth", "input", "self"] = "ground_truth"
) -> Scorer:
    """How consistent the output's sentiment is with a reference, or within itself (VADER).

    Range 0 to 1, higher is better. Against a reference text (the ground truth, or the input):
    ``1 - |compound(output) - compound(reference)| / 2``, so equal sentiment scores 1 and
    opposite extremes 0. With ``against="self"``: ``1 - variance`` of the compound scores of
    the output's sentences (population variance, at most 1), so an even tone scores 1; fewer
    than two sentences score 1. An empty text is neutral (compound 0). Non-string values are
    read as canonical JSON text. English lexicon. A missing reference fails the run. Needs
    ``pip install 'evalkit-runner[nlp]'``.

    Args:
        against: What the output's tone is compared with: ``"ground_truth"``, ``"input"``, or
            ``"self"`` (the stability of its tone across its own sentences).
    """
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    analyzer = SentimentIntensityAnalyzer()

    def compound(text: str) -> float:
        return float(analyzer.polarity_scores(text)["compound"])

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output = as_text(run.output)
        if against == "self":
            tones = [compound(sentence) for sentence in sentences(output)]
            variance = statistics.pvariance(tones) if len(tones) > 1 else 0.0
            return {"sentence_compounds": tones, "variance": variance}
        if against == "ground_truth":
            reference = ground_truth(run, "tone_consistency")
        elif is_missing(reference := run.input):
            raise ScorerInputError("tone_consistency", "input", "missing (this row has no input)")
        return {
            "output_compound": compound(output),
            "reference_compound": compound(as_text(reference)),
        }

    def score(results: StepResults) -> float:
        pre = results.preprocess_step_result
        if against == "self":
            return max(0.0, 1.0 - float(pre["variance"]))
        return 1.0 - abs(float(pre["output_compound"]) - float(pre["reference_compound"])) / 2.0

    def reason(score: float, results: StepResults) -> str:
        pre = results.preprocess_step_result
        if against == "self":
            count = len(pre["sentence_compounds"])
            if count < 2:
                return f"Tone stability {score:.3f}: {count} sentence, nothing to vary."
            return (
                f"Tone stability {score:.3f}: sentiment variance {pre['variance']:.3f} across "
                f"{count} sentences (compound from {min(pre['sentence_compounds']):+.2f} to "
                f"{max(pre['sentence_compounds']):+.2f})."
            )
        reference = against.replace("_", " ")
        return (
            f"Tone consistency {score:.3f}: output sentiment {pre['output_compound']:+.3f} vs "
            f"{reference} {pre['reference_compound']:+.3f} (VADER compound, -1 to +1)."
        )

    return scorer.preprocess(preprocess).generate_score(score).generate_reason(reason)
