"""The labelled sample ``datasets/judge_agreement.parquet`` and its judge's scripted replies."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow.parquet as pq
import pytest

from evalkit.agreement import agreement
from evalkit.agreement._stats import inter_rater_alpha
from evalkit.scorers._rubric import LLM_RUBRIC_ANALYZE, RubricGrade
from evalkit.testing import load_rules
from tests.sample_data.build_judge_agreement import LEVELS, NOISY_SHARE, RUBRIC, build

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "datasets" / "judge_agreement.parquet"
REPLIES = ROOT / "datasets" / "judge_agreement_replies.json"
VALUE = {level: index / 2 for index, level in enumerate(LEVELS)}  # bad 0, ok 0.5, good 1


@pytest.fixture(scope="module")
def items() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(DATASET).to_pylist()
    return rows


@pytest.fixture(scope="module")
def replies() -> list[dict[str, Any]]:
    return list(json.loads(REPLIES.read_text(encoding="utf-8")))


def _prompt(item: dict[str, Any]) -> str:
    """The text the judge gets for ``item`` (what a rule's ``match`` searches)."""
    reference = f"\n<reference_answer>\n{item['groundTruth']}\n</reference_answer>\n"
    grade = LLM_RUBRIC_ANALYZE.substitute(
        rubric=RUBRIC, input=item["input"], reference=reference, output=item["output"]
    )
    return f"instructions\n{grade}"


def test_the_committed_files_are_what_the_builder_makes(
    items: list[dict[str, Any]], replies: list[dict[str, Any]]
) -> None:
    table, rules = build()
    assert pq.read_table(DATASET).equals(table)
    assert replies == rules


def test_at_least_200_items_with_two_label_columns_on_one_label_set(
    items: list[dict[str, Any]],
) -> None:
    assert len(items) >= 200
    assert len({item["id"] for item in items}) == len(items)
    assert {"input", "groundTruth", "output", "human_a", "human_b"} <= set(items[0])
    assert {item["human_a"] for item in items} == set(LEVELS)
    assert {item["human_b"] for item in items} == {*LEVELS, None}


def test_the_two_people_disagree_on_some_items_but_agree_on_most(
    items: list[dict[str, Any]],
) -> None:
    rated = [item for item in items if item["human_b"] is not None]
    differ = [item for item in rated if item["human_a"] != item["human_b"]]
    assert 0.1 * len(rated) <= len(differ) <= 0.4 * len(rated)
    assert any({item["human_a"], item["human_b"]} == {"bad", "good"} for item in differ)
    assert 0 < len(items) - len(rated) <= 10  # B left a few unrated: missing labels
    ratings = [[VALUE[i["human_a"]] for i in items],
               [VALUE[i["human_b"]] if i["human_b"] else np.nan for i in items]]  # fmt: skip
    alpha = inter_rater_alpha(ratings, kind="ordinal", levels=(0.0, 0.5, 1.0), resamples=10)
    assert 0.6 < alpha.value < 0.85


def test_every_item_gets_its_own_valid_judge_reply(
    items: list[dict[str, Any]], replies: list[dict[str, Any]]
) -> None:
    rules = load_rules(REPLIES)
    for item in items:
        text = _prompt(item)
        mine = [r for r, raw in zip(rules, replies, strict=True) if raw["match"] in text]
        assert mine, item["id"]
        # Only this item's rules match its prompt: the first is its scripted reply.
        assert all(rule.match == mine[0].match for rule in mine), item["id"]
        assert mine[-1].probability == 1.0  # the last one always answers
    for raw in replies:
        RubricGrade.model_validate(raw["reply"])  # llm_rubric's schema: score in 0-1


def _scores(items: list[dict[str, Any]], replies: list[dict[str, Any]], draw: int) -> np.ndarray:
    """The judge's score of each item when each noisy item gets its ``draw``-th reply."""
    by_match: dict[str, list[float]] = defaultdict(list)
    for raw in replies:
        by_match[raw["match"]].append(raw["reply"]["score"])
    found = [by_match[f"<task>\n{item['input']}\n</task>"] for item in items]
    return np.array([scores[min(draw, len(scores) - 1)] for scores in found])


def test_a_share_of_the_replies_is_drawn_between_two_levels(
    items: list[dict[str, Any]], replies: list[dict[str, Any]]
) -> None:
    first, second = _scores(items, replies, 0), _scores(items, replies, 1)
    noisy = first != second
    assert noisy.mean() == pytest.approx(NOISY_SHARE, abs=0.01)
    assert 0.1 <= noisy.mean() <= 0.15
    # The two scores of a noisy item snap to different levels: the judge's labels differ.
    levels = np.array([0.0, 0.5, 1.0])

    def snap(s: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        nearest: npt.NDArray[np.intp] = np.abs(s[:, None] - levels).argmin(axis=1)
        return nearest

    assert (snap(first)[noisy] != snap(second)[noisy]).all()


@pytest.mark.parametrize("draw", [0, 1])
def test_the_judge_agrees_moderately_and_passes_the_sample_gate_whatever_the_draws(
    items: list[dict[str, Any]], replies: list[dict[str, Any]], draw: int
) -> None:
    a = np.array([VALUE[i["human_a"]] for i in items])
    b = np.array([VALUE[i["human_b"]] if i["human_b"] else np.nan for i in items])
    consensus = np.fmin(a, b)  # the lower median of two labels; A's alone when B has none
    found = agreement(
        _scores(items, replies, draw), consensus, kind="ordinal", levels=(0, 0.5, 1), resamples=10
    )
    # experiments/judge-agreement.toml gates weighted_kappa at 0.5.
    assert 0.55 < found.metrics["weighted_kappa"].value < 0.75
    assert 0.3 < found.metrics["kappa"].value < 0.6
    contains = np.array([float(i["groundTruth"] in i["output"]) for i in items])
    by_string = agreement(contains, consensus, kind="ordinal", levels=(0, 0.5, 1), resamples=10)
    # The string check misses the reworded answers the judge gets right.
    assert by_string.metrics["weighted_kappa"].value < found.metrics["weighted_kappa"].value
