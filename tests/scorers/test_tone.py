from __future__ import annotations

import statistics

import pytest
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from evalkit.scorers import tone_consistency
from evalkit.scorers._tone import sentences
from tests.scorers._helpers import input_error, score

VADER = SentimentIntensityAnalyzer()


def compound(text: str) -> float:
    return float(VADER.polarity_scores(text)["compound"])


@pytest.mark.parametrize(
    ("output", "truth"),
    [
        ("I love this product, it is wonderful!", "I hate this product, it is awful!"),
        ("Thanks, that works great.", "Thank you, this is very helpful."),
        ("The meeting is at noon.", "I am furious about the delay!"),
    ],
)
async def test_tone_against_the_ground_truth_agrees_with_vader(output: str, truth: str) -> None:
    result = await score(tone_consistency(), output, truth)
    assert result.score == pytest.approx(1 - abs(compound(output) - compound(truth)) / 2)
    assert result.preprocess_step_result == {
        "output_compound": compound(output),
        "reference_compound": compound(truth),
    }


async def test_tone_hand_worked() -> None:
    same = await score(tone_consistency(), "I love it!", "I love it!")
    assert same.score == 1.0
    # Two neutral texts: compound 0 and 0.
    neutral = await score(tone_consistency(), "", "The sky is above.")
    assert neutral.score == 1.0
    opposite = await score(tone_consistency(), "I love it!", "I hate it!")
    assert opposite.score is not None
    assert opposite.score < 0.5
    c_love, c_hate = compound("I love it!"), compound("I hate it!")
    assert opposite.reason == (
        f"Tone consistency {opposite.score:.3f}: output sentiment {c_love:+.3f} vs ground truth "
        f"{c_hate:+.3f} (VADER compound, -1 to +1)."
    )


async def test_tone_against_the_input() -> None:
    scorer = tone_consistency(against="input")
    result = await score(scorer, "Great news!", None, input="Wonderful day!")
    assert result.score == pytest.approx(
        1 - abs(compound("Great news!") - compound("Wonderful day!")) / 2
    )
    assert "vs input" in (result.reason or "")
    error = await input_error(scorer, "x", "gt", input=None)
    assert error.field == "input"


def test_sentences() -> None:
    assert sentences("One. Two!! Three? four") == ["One.", "Two!!", "Three?", "four"]
    assert sentences("") == []


async def test_tone_stability_within_the_output() -> None:
    text = "I love this. I hate that. It is fine."
    result = await score(tone_consistency(against="self"), text)
    tones = [compound(s) for s in ["I love this.", "I hate that.", "It is fine."]]
    assert result.score == pytest.approx(1 - statistics.pvariance(tones))
    assert result.preprocess_step_result == {
        "sentence_compounds": tones,
        "variance": pytest.approx(statistics.pvariance(tones)),
    }
    assert (result.reason or "").startswith(
        f"Tone stability {result.score:.3f}: sentiment variance"
    )
    even = await score(tone_consistency(against="self"), "Great. Great.")
    assert even.score == 1.0
    single = await score(tone_consistency(against="self"), "Just one sentence")
    assert (single.score, single.reason) == (
        1.0,
        "Tone stability 1.000: 1 sentence, nothing to vary.",
    )
    empty = await score(tone_consistency(against="self"), "")
    assert empty.score == 1.0


async def test_tone_needs_the_ground_truth_by_default() -> None:
    error = await input_error(tone_consistency(), "I love it", None)
    assert error.field == "ground_truth"
