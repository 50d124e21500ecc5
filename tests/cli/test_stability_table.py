"""The console table of judge stability: figures, the UNSTABLE flag and what it says of a
regression."""

from __future__ import annotations

import numpy as np

from evalkit.agreement._stability import stability
from evalkit.cli._agreement import stability_table


def test_an_unstable_judge_is_flagged_and_its_regression_doubted() -> None:
    flipping = stability("rubric", np.array([[0.0, 1.0] * 10, [1.0, 0.0] * 10]))
    steady = stability("tone", np.array([[0.0, 0.5, 1.0] * 5] * 3))
    text = stability_table({"rubric": flipping, "tone": steady}, {"rubric": 0.8, "tone": None},
                           regressed=["rubric", "tone"])  # fmt: skip
    rubric = next(line for line in text.splitlines() if line.startswith("rubric "))
    tone = next(line for line in text.splitlines() if line.startswith("tone "))
    assert "UNSTABLE" in rubric
    assert "80%" in rubric  # the noise share
    assert "UNSTABLE" not in tone
    assert "rubric: judge unstable" in text
    assert "rubric: its regression above comes from an unstable judge" in text
    assert "tone: its regression" not in text  # a steady judge's regression stands


def test_a_stable_judge_without_regression_has_no_note() -> None:
    steady = stability("tone", np.array([[0.0, 0.5, 1.0] * 5] * 3))
    text = stability_table({"tone": steady}, {})
    assert text.count("\n") == 3  # title, header, rule, one row
