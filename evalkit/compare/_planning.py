"""Planning from a comparison already made: the drop it detects at a given power, and the
paired items a given drop needs (``evalkit plan``; docs/pages/design/detectable-drop.md)."""

from __future__ import annotations

import math

from evalkit.compare._compare import ScorerComparison
from evalkit.compare._power import POWER, detectable_drop, pairs_needed
from evalkit.errors import ConfigError


def minimum_detectable_drop(comparison: ScorerComparison, *, power: float = POWER) -> float | None:
    """The smallest true change of the mean a comparison like ``comparison`` finds with
    ``power``: its ``detectable_drop`` at another power than 80%.

    Returns:
        The drop in score units, or None (see `ScorerComparison.detectable_drop`).

    Raises:
        ConfigError: A ``power`` out of range.
    """
    _check_power(power)
    n = comparison.n_paired
    if n == 0:
        return None
    return detectable_drop(
        n, binary=comparison.binary, changed_share=(comparison.worse + comparison.better) / n,
        sd=comparison.difference_sd or 0.0, confidence=comparison.confidence, power=power,
    )  # fmt: skip


def _check_power(power: float) -> None:
    if isinstance(power, bool) or not isinstance(power, int | float) or not 0.0 < power < 1.0:
        raise ConfigError(f"power must be between 0 and 1 (exclusive), got {power!r}")


def items_needed(comparison: ScorerComparison, drop: float, *, power: float = POWER) -> int | None:
    """How many paired items a comparison like ``comparison`` needs to detect a true drop of
    ``drop`` (in score units) with ``power``, assuming pairs change as often (0/1 scores) or
    spread as much (other scores) as they did in it: what ``evalkit plan`` prints.

    ```python
    from evalkit import compare_experiments
    from evalkit.compare import items_needed

    before = {"exact": {f"q{i}": float(i % 4 != 0) for i in range(200)}}
    after = {"exact": {f"q{i}": float(i % 4 != 0) if i % 10 else 1.0 - (i % 4 != 0)
                       for i in range(200)}}
    exact = compare_experiments(before, after)["exact"]
    print(exact.detectable_drop, items_needed(exact, 0.02))
    ```

    Args:
        comparison: One scorer's comparison
            ([`compare_experiments`][evalkit.compare_experiments]`(...)[scorer_id]`); its
            ``confidence`` is the test's.
        drop: The true change of the mean to detect, above 0.
        power: The chance of detecting it, between 0 and 1.

    Returns:
        A number of paired items; None when the comparison cannot tell (no paired items, or
        no pair of a score outside 0 to 1 changed, so its spread says nothing).

    Raises:
        ConfigError: A ``drop`` or ``power`` out of range.
    """
    if isinstance(drop, bool) or not isinstance(drop, int | float) or not drop > 0.0:
        raise ConfigError(f"drop must be a number above 0, got {drop!r}")
    if not math.isfinite(drop):
        raise ConfigError(f"drop must be a finite number, got {drop!r}")
    _check_power(power)
    n = comparison.n_paired
    if n == 0:
        return None
    if comparison.binary and drop > 1.0:
        raise ConfigError(f"a drop of {drop:g} is beyond the scale of a 0/1 scorer")
    return pairs_needed(
        float(drop), binary=comparison.binary,
        changed_share=(comparison.worse + comparison.better) / n,
        sd=comparison.difference_sd or 0.0, confidence=comparison.confidence, power=power,
    )  # fmt: skip
