"""Running summaries: the mean and spread of scores anywhere in the float range (issue 30)."""

from __future__ import annotations

import json
import math

import pytest

from evalkit.run._summary import SummaryBuilder


def state(scores: list[float]) -> str:
    """The :meth:`SummaryBuilder.state` of a builder that saw ``scores`` (as a shard would)."""
    builder = SummaryBuilder(["huge"], len(scores))
    builder.merge(
        json.dumps(
            {
                "processed": len(scores),
                "succeeded": len(scores),
                "target_failed": 0,
                "stats": {"huge": [1, 0, scores[0], 0.0, scores[0], scores[0]]},
            }
        )
    )
    for score in scores[1:]:
        builder.merge(
            json.dumps(
                {
                    "processed": 0,
                    "succeeded": 0,
                    "target_failed": 0,
                    "stats": {"huge": [1, 0, score, 0.0, score, score]},
                }
            )
        )
    return builder.state()


@pytest.mark.parametrize("scale", [1e308, 1e200, 0.5])
def test_merged_states_of_huge_scores_keep_their_mean_and_spread(scale: float) -> None:
    # Two shards, one of +scale scores and one of -scale: their merge is the whole run's.
    merged = SummaryBuilder(["huge"], 6)
    merged.merge(state([scale] * 3))
    merged.merge(state([-scale] * 3))
    summary = merged.build().scorers["huge"]
    assert summary.n == 6
    assert summary.mean == pytest.approx(0.0, abs=scale * 1e-15)
    assert summary.stddev == pytest.approx(scale * math.sqrt(1.2), rel=1e-12)
    assert (summary.min, summary.max) == (-scale, scale)


def test_a_state_written_without_the_scale_is_still_read() -> None:
    # States stored by an earlier version (in shards_done) have six fields: m2 unscaled.
    merged = SummaryBuilder(["huge"], 4)
    for mean in (0.25, 0.75):
        merged.merge(
            json.dumps(
                {
                    "processed": 2,
                    "succeeded": 2,
                    "target_failed": 0,
                    "stats": {"huge": [2, 0, mean, 0.125, mean - 0.25, mean + 0.25]},
                }
            )
        )
    summary = merged.build().scorers["huge"]
    # Scores 0, 0.5, 0.5, 1: mean 0.5, sample variance 1/6.
    assert summary.mean == 0.5
    assert summary.stddev == pytest.approx(math.sqrt(1 / 6))
