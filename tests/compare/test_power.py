"""The drop a comparison can detect (issue 34, item 6): ``ScorerComparison.detectable_drop``,
its warning, ``items_needed`` and ``minimum_detectable_drop``
(docs/pages/design/detectable-drop.md)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]  # scipy ships no type stubs

from evalkit import compare_experiments
from evalkit.compare import ScorerComparison, items_needed, minimum_detectable_drop
from evalkit.errors import ConfigError


def _binary(n: int, down: int, up: int, *, max_drop: float = 0.0) -> ScorerComparison:
    """``n`` 0/1 pairs of which ``down`` fell and ``up`` rose."""
    before = {
        f"i{i}": 1.0 if i < down else 0.0 if i < down + up else float(i % 2) for i in range(n)
    }
    after = {f"i{i}": 0.0 if i < down else 1.0 if i < down + up else float(i % 2) for i in range(n)}
    return compare_experiments({"s": before}, {"s": after}, max_drop=max_drop)["s"]


def test_a_binary_comparison_states_the_drop_it_detects() -> None:
    # issue 34, item 6: power was invisible; 300 items of which 45 changed.
    c = _binary(300, 25, 20)
    assert c.binary
    assert c.detectable_drop is not None
    assert 0.05 < c.detectable_drop < 0.08
    # Consistent with the items a drop needs: this run's n for its own figure, about four
    # times as many for half of it.
    assert items_needed(c, c.detectable_drop) == 300
    assert 3.5 * 300 < (items_needed(c, c.detectable_drop / 2) or 0) < 4.5 * 300


def test_the_detectable_drop_of_0_1_pairs_reaches_its_power() -> None:
    # The exact McNemar test at the figure's drop, simulated: 80% power (within 3 errors).
    c = _binary(300, 25, 20)
    drop, share = c.detectable_drop, 45 / 300
    assert drop is not None
    rng = np.random.default_rng(6)
    moves = rng.multinomial(300, [(share + drop) / 2, (share - drop) / 2, 1 - share], size=2000)
    found = [stats.binomtest(int(u), int(d + u), 0.5).pvalue < 0.05 and d > u if d + u else False
             for d, u, _ in moves]  # fmt: skip
    assert abs(np.mean(found) - 0.8) < 3 * math.sqrt(0.8 * 0.2 / 2000)


def test_a_continuous_comparison_uses_the_paired_t_figure() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(3.0, 1.0, size=50)
    diff = rng.normal(0.0, 0.4, size=50)
    before = {"s": {f"i{i}": float(v) for i, v in enumerate(base)}}
    after = {"s": {f"i{i}": float(v) for i, v in enumerate(base + diff)}}
    c = compare_experiments(before, after)["s"]
    sd = float(np.std(diff, ddof=1))
    assert c.difference_sd == pytest.approx(sd)
    expected = (stats.t.ppf(0.975, 49) + stats.t.ppf(0.8, 49)) * sd / math.sqrt(50)
    assert c.detectable_drop == pytest.approx(expected, rel=1e-6)
    assert minimum_detectable_drop(c, power=0.9) == pytest.approx(
        (stats.t.ppf(0.975, 49) + stats.t.ppf(0.9, 49)) * sd / math.sqrt(50), rel=1e-6)  # fmt: skip


def test_a_max_drop_below_the_detectable_drop_is_warned_about() -> None:
    c = _binary(300, 25, 20, max_drop=0.02)
    assert c.detectable_drop is not None
    assert c.power_note == (
        f"drops under {c.detectable_drop:.3g} may be missed: this dataset finds them with less"
        " than 80% power at 300 pairs; add items or raise max_drop"
    )
    assert _binary(300, 25, 20, max_drop=0.2).power_note is None
    assert _binary(300, 25, 20).power_note is None  # max_drop 0: no tolerance promised
    assert c.to_dict()["detectable_drop"] == c.detectable_drop


def test_too_few_pairs_detect_no_drop() -> None:
    # Five 0/1 pairs all dropping give an exact p of 0.0625: no drop can be found.
    c = _binary(5, 5, 0, max_drop=0.05)
    assert c.detectable_drop is None
    assert c.power_note == "5 pairs are too few to detect any drop; add items"


def test_unchanged_scores_outside_0_1_say_nothing() -> None:
    same = {"s": {f"i{i}": float(i % 5 + 1) for i in range(40)}}
    c = compare_experiments(same, same)["s"]
    assert c.detectable_drop is None
    assert items_needed(c, 0.5) is None


@pytest.mark.parametrize(("drop", "power"), [(0.0, 0.8), (-1.0, 0.8), (math.inf, 0.8),
                                             (0.1, 1.0), (0.1, 0.0), (2.0, 0.8)])  # fmt: skip
def test_bad_drops_and_powers_are_refused(drop: float, power: float) -> None:
    with pytest.raises(ConfigError):
        items_needed(_binary(100, 5, 5), drop, power=power)


def test_scores_near_the_float_limit_give_finite_figures_or_none() -> None:
    before = {"s": {f"i{i}": 1e308 if i % 2 else -1e308 for i in range(8)}}
    after = {"s": {f"i{i}": -0.5e308 if i % 2 else 0.5e308 for i in range(8)}}
    c = compare_experiments(before, after, max_drop=0.1)["s"]
    for figure in (c.difference_sd, c.detectable_drop):
        assert figure is None or math.isfinite(figure)
    json.dumps(c.to_dict(), allow_nan=False)


@pytest.mark.parametrize("seed", range(12))
def test_the_items_a_comparisons_own_detectable_drop_needs_are_its_items(seed: int) -> None:
    # Review of issue 34's planning: the continuous figure compared two floats computed two
    # ways exactly and answered n + 1 in most cases.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 400))
    base = rng.normal(3.0, 1.0, size=n)
    diff = rng.normal(0.0, float(rng.uniform(0.1, 2.0)), size=n)
    before = {"s": {f"i{i}": float(v) for i, v in enumerate(base)}}
    after = {"s": {f"i{i}": float(v) for i, v in enumerate(base + diff)}}
    c = compare_experiments(before, after)["s"]
    assert c.detectable_drop is not None
    assert items_needed(c, c.detectable_drop) == n


@pytest.mark.parametrize(("confidence", "least"), [(0.95, 6), (0.99, 8), (0.75, 4), (0.5, 3)])
def test_the_fewest_changed_pairs_that_can_pass_the_gate(confidence: float, least: int) -> None:
    # Review of issue 34's planning: at 75% (2 / 0.25 = 8 = 2**3) it said 3, whose p of
    # 2 / 2**3 = 0.25 does not pass a gate that needs p < 0.25.
    from evalkit.compare._power import least_changed

    assert least_changed(confidence) == least
    assert 2.0 / 2**least < 1.0 - confidence <= 2.0 / 2 ** (least - 1)
