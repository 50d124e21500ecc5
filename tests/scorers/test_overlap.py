from __future__ import annotations

import collections
import re
import string
from typing import Any

import pytest

from evalkit import ConfigError
from evalkit.scorers import keyword_coverage, token_f1
from evalkit.scorers._overlap import extract_keywords, squad_tokens
from tests.scorers._helpers import input_error, score


# The official SQuAD v2.0 evaluation script's functions, verbatim apart from formatting: the
# oracle token_f1 is checked against.
def _official_normalize_answer(s: str) -> str:
    def remove_articles(text: str) -> str:
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _official_compute_f1(a_gold: str, a_pred: str) -> float:
    gold_toks = _official_normalize_answer(a_gold).split() if a_gold else []
    pred_toks = _official_normalize_answer(a_pred).split() if a_pred else []
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


SQUAD_PAIRS = [
    ("the Eiffel Tower", "Eiffel Tower"),
    ("in Paris, France", "Paris"),
    ("Denver Broncos", "Denver Broncos won the game"),
    ("the the the", "the"),
    ("Saint-Denis (Paris)", "Saint Denis"),
    ("1,000 people", "1000 people"),
    ("an apple a day", "one apple per day keeps"),
    ("", "something"),
    ("", ""),
    ("Théâtre du Châtelet", "théâtre châtelet"),
]


@pytest.mark.parametrize(("prediction", "gold"), SQUAD_PAIRS)
async def test_token_f1_agrees_with_the_official_squad_script(prediction: str, gold: str) -> None:
    result = await score(token_f1(), prediction, gold)
    assert result.score == pytest.approx(_official_compute_f1(gold, prediction), abs=1e-12)


@pytest.mark.parametrize(
    ("output", "truth", "expected"),
    [
        ("the Eiffel Tower", "Eiffel Tower", 1.0),
        ("in Paris, France", "Paris", 0.5),  # P = 1/3, R = 1
        ("a b c d", "a b", 0.5),  # "a" is an article: [b, c, d] vs [b]
        ("cat dog", "cat bird fish", 0.4),  # P = 1/2, R = 1/3, F1 = 2/5
        ("the", "", 1.0),  # both empty after normalisation
        ("Paris", "", 0.0),
        ("in Paris, France", ["Lyon", "Paris"], 0.5),
        ({"city": "Paris"}, "city Paris", 1.0),
    ],
)
async def test_token_f1_hand_worked(output: Any, truth: Any, expected: float) -> None:
    result = await score(token_f1(), output, truth)
    assert result.score == pytest.approx(expected)


def test_squad_tokens() -> None:
    assert squad_tokens("The Cat's  hat, an Apple!") == ["cats", "hat", "apple"]


async def test_token_f1_reason_and_analysis() -> None:
    result = await score(token_f1(), "in Paris, France", ["Lyon", "Paris"])
    assert result.preprocess_step_result == {
        "precision": pytest.approx(1 / 3),
        "recall": 1.0,
        "f1": 0.5,
        "common_tokens": 1,
        "output_tokens": 3,
        "reference_tokens": 1,
        "reference": 1,
        "references": 2,
    }
    assert result.reason == (
        "F1 0.500: 1 shared tokens; precision 0.333 of 3 output tokens, recall 1.000 of 1 "
        "reference tokens (best of 2 references: #2)."
    )
    empty = await score(token_f1(), "", "Paris")
    assert empty.reason == "F1 0.000: after normalisation one side is empty."


async def test_token_f1_fails_without_ground_truth() -> None:
    await input_error(token_f1(), "Paris", None)


def test_extract_keywords() -> None:
    text = "The Eiffel Tower, built in 1889, is the tallest tower in Paris: a symbol of Paris."
    assert extract_keywords(text) == ["eiffel", "tower", "built", "tallest", "paris", "symbol"]
    assert extract_keywords("Été à Paris", fold=False) == ["Été", "Paris"]


@pytest.mark.parametrize(
    ("output", "truth", "params", "expected"),
    [
        ("Paris has a tower", "The Eiffel Tower is in Paris", {}, 2 / 3),
        ("EIFFEL TOWER, PARIS", "The Eiffel Tower is in Paris", {}, 1.0),
        ("EIFFEL TOWER, PARIS", "The Eiffel Tower is in Paris", {"ignore_case": False}, 0.0),
        ("", "The Eiffel Tower is in Paris", {}, 0.0),
        ("anything", "the of and it", {}, 1.0),
        ("anything", "", {}, 1.0),
        ("Paris", "Paris 2024 a", {}, 1.0),
        ("machine learning rocks", None, {"keywords": ["machine learning"]}, 1.0),
        ("learning machine", None, {"keywords": ["machine learning"]}, 0.0),
        ("machine-learning", None, {"keywords": ["Machine Learning"]}, 1.0),
        ("a b c", None, {"keywords": ["a", "b", "c", "d"]}, 0.75),
        ({"tags": ["paris"]}, "Paris tags", {}, 1.0),
    ],
)
async def test_keyword_coverage(
    output: Any, truth: Any, params: dict[str, Any], expected: float
) -> None:
    result = await score(keyword_coverage(**params), output, truth)
    assert result.score == pytest.approx(expected)


async def test_keyword_coverage_from_the_input() -> None:
    scorer = keyword_coverage(source="input")
    result = await score(scorer, "Rust borrows memory", None, input="Explain Rust memory safety")
    assert result.score == pytest.approx(2 / 4)
    assert result.preprocess_step_result == {
        "matched": ["rust", "memory"],
        "missing": ["explain", "safety"],
        "reference": 0,
        "references": 1,
    }
    assert result.reason == "2 of 4 keywords found; missing: 'explain', 'safety'."
    error = await input_error(scorer, "x", "gt", input=None)
    assert (error.field, error.problem) == ("input", "missing (this row has no input)")


@pytest.mark.parametrize(
    ("output", "expected", "best"),
    [
        ("The Louvre museum", 1.0, 1),
        ("Eiffel Tower", 2 / 3, 0),
        ("A tower, a museum", 0.5, 1),  # 1/3 of the first, 1/2 of the second
        ("nothing here", 0.0, 0),  # ties keep the first
    ],
)
async def test_keyword_coverage_keeps_the_best_of_alternative_references(
    output: str, expected: float, best: int
) -> None:
    truths = ["The Eiffel Tower in Paris", "The Louvre museum"]
    result = await score(keyword_coverage(), output, truths)
    assert result.score == pytest.approx(expected)
    pre = result.preprocess_step_result
    assert (pre["reference"], pre["references"]) == (best, 2)
    assert set(pre["matched"]) | set(pre["missing"]) == set(extract_keywords(truths[best]))
    assert result.reason is not None
    assert result.reason.endswith(f" (best of 2 references: #{best + 1}).")


async def test_keyword_coverage_reasons() -> None:
    nothing = await score(keyword_coverage(), "x", "the of")
    assert nothing.reason == "No keywords to cover in the reference; nothing expected is missing."
    many = await score(keyword_coverage(keywords=[f"k{i}" for i in range(10)]), "k0")
    assert many.reason == (
        "1 of 10 keywords found; missing: 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8' "
        "and 1 more."
    )


async def test_keyword_coverage_fails_without_ground_truth() -> None:
    error = await input_error(keyword_coverage(), "x", None)
    assert error.field == "ground_truth"


@pytest.mark.parametrize("keywords", [[], ["!!"], [""]])
def test_keyword_coverage_rejects_empty_keywords(keywords: list[str]) -> None:
    with pytest.raises(ConfigError, match="parameter 'keywords': give non-empty keywords"):
        keyword_coverage(keywords=keywords)
