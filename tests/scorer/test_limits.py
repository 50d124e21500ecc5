from __future__ import annotations

import math
import time
from typing import Any

import pytest

from evalkit import ConfigError, Judge, create_scorer
from evalkit.scorer._limits import DEFAULT_STEP_TIMEOUT


def test_a_scorer_has_the_documented_default_step_timeout() -> None:
    scorer = create_scorer("Q").generate_score(lambda run: 1.0)
    assert scorer.step_timeout == DEFAULT_STEP_TIMEOUT == 60.0


def test_a_step_timeout_is_kept_by_every_derived_scorer() -> None:
    scorer = create_scorer("Q", step_timeout=2.5).generate_score(lambda run: 1.0)
    assert scorer.with_id("q2").step_timeout == 2.5
    assert scorer.with_judge(Judge(model="m")).step_timeout == 2.5
    assert scorer.generate_reason(lambda score: "r").step_timeout == 2.5
    assert scorer.with_step_timeout(None).step_timeout is None
    assert scorer.with_step_timeout(7).step_timeout == 7.0
    assert scorer.step_timeout == 2.5  # the original is unchanged


@pytest.mark.parametrize("value", [0, -1, math.nan, math.inf * -1, True, "5", [5]])
def test_a_step_timeout_that_is_no_positive_number_is_refused(value: Any) -> None:
    with pytest.raises(ConfigError, match="scorer 'Q': step_timeout must be a number of seconds"):
        create_scorer("Q", step_timeout=value)
    scorer = create_scorer("Q").generate_score(lambda run: 1.0)
    with pytest.raises(ConfigError, match="step_timeout must be a number of seconds above 0"):
        scorer.with_step_timeout(value)


async def test_outside_run_evals_a_slow_step_is_not_stopped() -> None:
    # The limit is enforced by run_evals' watchdog; a direct scorer.run is the caller's own.
    def slow(run: Any) -> float:
        time.sleep(0.3)
        return 1.0

    scorer = create_scorer("Q", step_timeout=0.01).generate_score(slow)
    result = await scorer.run(input="q", output="a")
    assert result.score == 1.0
