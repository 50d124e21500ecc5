from __future__ import annotations

from typing import Any

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from evalkit import ConfigError
from evalkit.scorers import bleu, chrf, rouge_l
from tests.scorers._helpers import input_error, score

HYPOTHESES = [
    ("the cat sat on the mat", ["the cat lay on the mat"]),
    ("the cat sat on the mat", ["the cat lay on the mat", "a cat sat on the mat"]),
    ("It is a guide to action which ensures that the military always obeys the party.",
     ["It is a guide to action that ensures that the military will forever heed Party commands."]),
    ("hello", ["hello world, how are you today"]),
    ("", ["something expected"]),
    ("Le chat est assis sur le tapis.", ["Le chat était assis sur le tapis."]),
]  # fmt: skip


@pytest.mark.parametrize(("output", "refs"), HYPOTHESES)
async def test_bleu_agrees_with_sacrebleu(output: str, refs: list[str]) -> None:
    truth: Any = refs if len(refs) > 1 else refs[0]
    result = await score(bleu(), output, truth)
    assert result.score == pytest.approx(sacrebleu.sentence_bleu(output, refs).score / 100)


@pytest.mark.parametrize(
    "params", [{"tokenize": "intl"}, {"lowercase": True}, {"smooth_method": "floor"}]
)
async def test_bleu_options_agree_with_sacrebleu(params: dict[str, Any]) -> None:
    output, refs = "The Cat sat on the mat!", ["the cat lay on the mat."]
    result = await score(bleu(**params), output, refs[0])
    expected = sacrebleu.sentence_bleu(output, refs, **params).score / 100
    assert result.score == pytest.approx(expected)


async def test_bleu_hand_worked_and_reason() -> None:
    identical = await score(bleu(), "the cat sat on the mat", "the cat sat on the mat")
    assert identical.score == pytest.approx(1.0)
    assert identical.reason == (
        "BLEU 1.000: 1-4-gram precisions 100.0/100.0/100.0/100.0 %, brevity penalty 1.000."
    )
    # 5/6 unigrams, 3/5 bigrams, 1/4 trigrams, 0/3 4-grams (exp smoothing: 1/(2*3)), BP = 1.
    close = await score(bleu(), "the cat sat on the mat", "the cat lay on the mat")
    expected = (5 / 6 * 3 / 5 * 1 / 4 * (1 / 2) / 3) ** 0.25
    assert close.score == pytest.approx(expected)
    assert close.preprocess_step_result["brevity_penalty"] == 1.0


@pytest.mark.parametrize("scorer", [bleu, chrf, rouge_l])
async def test_empty_texts(scorer: Any) -> None:
    assert (await score(scorer(), "", "")).score == 1.0
    assert (await score(scorer(), None, ["", "x"])).score == 1.0
    assert (await score(scorer(), "", "expected words")).score == 0.0
    assert (await score(scorer(), "some words", "")).score == 0.0
    await input_error(scorer(), "x", None)


@pytest.mark.parametrize(("output", "refs"), HYPOTHESES)
async def test_chrf_agrees_with_sacrebleu(output: str, refs: list[str]) -> None:
    result = await score(chrf(), output, refs)
    assert result.score == pytest.approx(sacrebleu.sentence_chrf(output, refs).score / 100)


async def test_chrf_plus_plus_agrees_with_sacrebleu() -> None:
    output, refs = "the cat sat on the mat", ["the cat lay on the mat"]
    result = await score(chrf(word_order=2), output, refs[0])
    expected = sacrebleu.sentence_chrf(output, refs, word_order=2).score / 100
    assert result.score == pytest.approx(expected)
    assert result.reason == f"chrF2++ {expected:.3f} (character 6-grams)."


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"char_order": 0},
            "scorer 'chrf', parameter 'char_order': must be between 1 and 10, got 0",
        ),
        ({"beta": 1.5}, "scorer 'chrf', parameter 'beta': Input should be a valid integer"),
    ],
)
def test_chrf_rejects_bad_params(params: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        chrf(**params)
    assert str(caught.value).startswith(message)


def test_bleu_rejects_a_tokenizer_that_would_download_a_model() -> None:
    with pytest.raises(ConfigError, match="parameter 'tokenize'"):
        bleu(tokenize="spm")


ASCII_PAIRS = [
    ("the cat sat on the mat", "the cat lay on the mat"),
    ("Police killed the gunman.", "The gunman was shot down by police."),
    ("running runners ran", "the runner runs"),
]


@pytest.mark.parametrize(("output", "truth"), ASCII_PAIRS)
@pytest.mark.parametrize("use_stemmer", [False, True])
@pytest.mark.parametrize("tokenizer", ["unicode", "ascii"])
async def test_rouge_l_agrees_with_rouge_score_on_ascii_text(
    output: str, truth: str, use_stemmer: bool, tokenizer: Any
) -> None:
    library = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=use_stemmer)
    expected = library.score(truth, output)["rougeL"]
    for measure in ("fmeasure", "precision", "recall"):
        scorer = rouge_l(measure=measure, use_stemmer=use_stemmer, tokenizer=tokenizer)
        result = await score(scorer, output, truth)
        assert result.score == pytest.approx(getattr(expected, measure))


async def test_rouge_l_hand_worked() -> None:
    # LCS "the cat on the mat" = 5 of 6 tokens on both sides.
    result = await score(rouge_l(), "the cat sat on the mat", "the cat lay on the mat")
    assert result.score == pytest.approx(5 / 6)
    assert result.reason == "ROUGE-L fmeasure 0.833 (precision 0.833, recall 0.833, F 0.833)."
    # precision 2/2, recall 2/4: the output is a subsequence of the reference.
    short = await score(rouge_l(measure="recall"), "cat mat", "the cat lay mat")
    assert short.score == pytest.approx(0.5)


async def test_rouge_l_keeps_non_ascii_words_with_the_unicode_tokenizer() -> None:
    output, truth = "été à Paris", "été à Lyon"
    unicode_result = await score(rouge_l(), output, truth)
    assert unicode_result.score == pytest.approx(2 / 3)  # été, à shared of 3 tokens each
    ascii_result = await score(rouge_l(tokenizer="ascii"), output, truth)
    library = rouge_scorer.RougeScorer(["rougeL"]).score(truth, output)["rougeL"].fmeasure
    assert ascii_result.score == pytest.approx(library)
    assert ascii_result.score != pytest.approx(unicode_result.score)


async def test_rouge_l_keeps_the_best_reference_by_the_chosen_measure() -> None:
    refs = ["cat", "the cat sat on a mat today"]
    # Precision: 1/2 against "cat", 2/2 against the long one; recall: 1/1 against "cat".
    precision = await score(rouge_l(measure="precision"), "the cat", refs)
    assert precision.score == 1.0
    assert precision.preprocess_step_result["reference"] == 1
    recall = await score(rouge_l(measure="recall"), "the cat", refs)
    assert recall.score == 1.0
    assert recall.reason is not None
    assert recall.reason.endswith("(best of 2 references: #1).")
