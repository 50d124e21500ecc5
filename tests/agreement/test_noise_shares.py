"""`noise_shares`: per repeated and compared scorer, the share of its regression interval its
judge's noise explains, with the baseline's own noise read from the store."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from evalkit import create_scorer, run_evals_sync
from evalkit.agreement import noise_shares
from evalkit.agreement._record import stability_rows
from evalkit.agreement._stability import JudgeStability, noise_share, stability
from evalkit.agreement._table import write_agreement


@dataclass(frozen=True)
class Interval:
    scorer_id: str
    n_paired: int
    ci_low: float | None
    ci_high: float | None
    confidence: float = 0.95


def _noisy(scorer_id: str) -> JudgeStability:
    r = np.array([[0.0, 1.0, 0.5, 1.0, 0.0, 0.5], [0.5, 1.0, 0.5, 0.5, 0.0, 1.0]])
    return replace(stability(scorer_id, r), fresh_share=0.5)


def test_each_repeated_and_compared_scorer_gets_its_share() -> None:
    judge = _noisy("judge")
    comparison = [Interval("judge", 40, -0.2, 0.1), Interval("exact", 40, -0.2, 0.1)]
    shares = noise_shares({"judge": judge}, comparison)
    expected = noise_share(judge.noise_variance, None, fresh_share=0.5, n_paired=40,
                           ci_low=-0.2, ci_high=0.1, confidence=0.95)  # fmt: skip
    assert expected is not None
    assert 0 < expected < 1
    assert shares == {"judge": pytest.approx(expected)}  # the code scorer was not repeated
    assert noise_shares({"judge": judge}, None) == {}
    assert noise_shares({"judge": judge}, [Interval("judge", 1, -0.2, 0.1)]) == {"judge": None}


def test_a_repeated_baselines_own_noise_is_read_from_the_store(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    scorer = create_scorer("Judge", id="judge").generate_score(lambda run: 1.0)
    baseline = run_evals_sync([{"input": "a", "output": "b"}], [scorer], store=store,
                              progress=False)  # fmt: skip
    quiet = replace(_noisy("judge"), noise_variance=0.001)
    write_agreement(store, baseline.experiment_id, stability_rows({"judge": quiet}), repeats=True)
    judge = _noisy("judge")
    comparison = [Interval("judge", 40, -0.2, 0.1)]
    shares = noise_shares({"judge": judge}, comparison, store=store,
                          baseline_id=baseline.experiment_id)  # fmt: skip
    expected = noise_share(judge.noise_variance, 0.001, fresh_share=0.5, n_paired=40,
                           ci_low=-0.2, ci_high=0.1, confidence=0.95)  # fmt: skip
    assert shares == {"judge": pytest.approx(expected)}
    # Not the share a baseline without repeats gives (as noisy as the run).
    assert shares != noise_shares({"judge": judge}, comparison)


def test_half_of_the_baseline_is_refused() -> None:
    """A store without the baseline's id (or the reverse) would silently take the baseline's
    judge noise to be the run's."""
    judge = _noisy("judge")
    comparison = [Interval("judge", 40, -0.2, 0.1)]
    with pytest.raises(TypeError, match="both store and baseline_id"):
        noise_shares({"judge": judge}, comparison, store="evalkit.duckdb")
    with pytest.raises(TypeError, match="both store and baseline_id"):
        noise_shares({"judge": judge}, comparison, baseline_id="abc123")
