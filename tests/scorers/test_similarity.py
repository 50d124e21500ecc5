from __future__ import annotations

import difflib
from typing import Any

import pytest
from rapidfuzz.distance import Indel, JaroWinkler, Levenshtein

from evalkit.scorers import content_similarity, string_similarity, textual_difference
from evalkit.scorers._similarity import dice_bigrams
from tests.scorers._helpers import input_error, score

PAIRS = [
    ("kitten", "sitting"),
    ("martha", "marhta"),
    ("The capital of France is Paris.", "Paris is the capital of France."),
    ("", "abc"),
    ("", ""),
    ("naïve café", "naive cafe"),
]


@pytest.mark.parametrize(
    ("output", "truth", "algorithm", "expected"),
    [
        ("kitten", "sitting", "levenshtein", 1 - 3 / 7),
        ("martha", "marhta", "jaro_winkler", 0.9611111111111111),
        ("kitten", "sitting", "indel", 1 - 5 / 13),  # 2 deletions + 3 insertions over 13 chars
        ("abc", "abc", "levenshtein", 1.0),
        ("", "", "levenshtein", 1.0),
        ("", "", "jaro_winkler", 1.0),
        ("", "abc", "levenshtein", 0.0),
        ("abc", "", "jaro_winkler", 0.0),
    ],
)
async def test_string_similarity_hand_worked(
    output: str, truth: str, algorithm: Any, expected: float
) -> None:
    result = await score(string_similarity(algorithm=algorithm), output, truth)
    assert result.score == pytest.approx(expected)


@pytest.mark.parametrize(("output", "truth"), PAIRS)
@pytest.mark.parametrize(
    ("algorithm", "library"),
    [
        ("levenshtein", Levenshtein.normalized_similarity),
        ("jaro_winkler", JaroWinkler.similarity),
        ("indel", Indel.normalized_similarity),
    ],
)
async def test_string_similarity_agrees_with_rapidfuzz(
    output: str, truth: str, algorithm: Any, library: Any
) -> None:
    result = await score(string_similarity(algorithm=algorithm), output, truth)
    assert result.score == library(output, truth)


async def test_string_similarity_options_and_references() -> None:
    assert (await score(string_similarity(), "PARIS", "paris")).score == 0.0
    assert (await score(string_similarity(ignore_case=True), "PARIS", "paris")).score == 1.0
    best = await score(string_similarity(), "Paris", ["London", "Pariss", "Paris"])
    assert best.score == 1.0
    assert best.preprocess_step_result == {"similarity": 1.0, "reference": 2, "references": 3}
    assert best.reason == "Normalised Levenshtein similarity 1.000 (best of 3 references: #3)."
    one = await score(string_similarity(algorithm="jaro_winkler"), "martha", "marhta")
    assert one.reason == "Jaro-Winkler similarity 0.961."
    await input_error(string_similarity(), "Paris", None)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("healed", "sealed", 0.8),  # the string-similarity package's own example
        ("night", "nacht", 0.25),  # ni ig gh ht / na ac ch ht: 1 shared of 8
        ("a b c", "abc", 1.0),  # whitespace removed
        ("aaaa", "aa", 2 * 1 / 4),  # multiplicity: "aa" 3 times vs once
        ("a", "b", 0.0),
        ("a", "a", 1.0),
        ("", "", 1.0),
        ("", "ab", 0.0),
    ],
)
def test_dice_bigrams(first: str, second: str, expected: float) -> None:
    assert dice_bigrams(first, second) == pytest.approx(expected)


async def test_content_similarity() -> None:
    assert (await score(content_similarity(), "Healed", "SEALED")).score == pytest.approx(0.8)
    assert (await score(content_similarity(ignore_case=False), "ABC", "abc")).score == 0.0
    multi = await score(content_similarity(), "sealed", ["night", "healed"])
    assert multi.score == pytest.approx(0.8)
    assert multi.reason == "Bigram Dice similarity 0.800 (best of 2 references: #2)."
    assert (await score(content_similarity(), {"a": 1}, '{"a": 1}')).score == 1.0
    await input_error(content_similarity(), "x", None)


LONG_A = "the quick brown fox jumps over the lazy dog " * 8
LONG_B = LONG_A.replace("lazy", "sleepy")


@pytest.mark.parametrize(
    ("output", "truth"),
    [*PAIRS, ("abcd", "bcde"), (LONG_A, LONG_B)],
)
async def test_textual_difference_agrees_with_difflib(output: str, truth: str) -> None:
    result = await score(textual_difference(), output, truth)
    assert result.score == difflib.SequenceMatcher(None, output, truth, autojunk=False).ratio()


async def test_textual_difference_hand_worked() -> None:
    result = await score(textual_difference(), "abcd", "bcde")
    assert result.score == 0.75  # 3 matched characters: 2 * 3 / 8
    assert result.preprocess_step_result == {
        "similarity": 0.75,
        "changes": {"delete": 1, "insert": 1},
        "reference": 0,
        "references": 1,
    }
    assert result.reason == "Similarity ratio 0.750 (1 delete, 1 insert)."
    same = await score(textual_difference(), "", "")
    assert (same.score, same.reason) == (1.0, "Similarity ratio 1.000 (no edits).")
    folded = await score(textual_difference(ignore_case=True), "ABCD", "abcd")
    assert folded.score == 1.0
    await input_error(textual_difference(), "x", None)


async def test_textual_difference_is_not_skewed_by_autojunk() -> None:
    # difflib's default heuristic treats characters frequent in a >200-character text as junk,
    # which would lower this near-identical pair's ratio.
    result = await score(textual_difference(), LONG_A, LONG_B)
    assert result.score is not None
    assert result.score > difflib.SequenceMatcher(None, LONG_A, LONG_B).ratio()
    assert result.score > 0.9
