"""ST1 — statistics honest at every sample size: interval coverage and width, and the
regression gate's false-alarm rate and power, at n = 10, 30, 100 and 300 (issue 34).

Run: ``python -m tests.benchmarks.bench_coverage [--reps R] [--gate-reps G] [--seed S]``.

Simulated with a seed, for three kinds of scores: **binary** (0/1), **bounded** continuous
(between 0 and 1, near-symmetric) and **skewed** (between 0 and 1, most near 0):

- *Scorer interval*: the 95% interval of one run's mean (``scorer_summary``, the reports),
  today's (Wilson with Student's multiplier between 0 and 1) beside the Student t interval it
  replaced. Coverage is the share of ``R`` simulated runs whose interval holds the true mean.
- *Paired interval*: the interval of the mean change between two runs over the same items
  (``evalkit compare``, the regression gate), today's (Tango for 0/1, the wider of t and the
  studentized bootstrap otherwise) beside the percentile bootstrap it replaced.
- *Gate*: ``compare_experiments`` with ``max_drop = 0``: the share of ``G`` A/A pairs (no true
  change) called ``regressed`` (nominal at most 2.5%: one side of a 95% two-sided test), and
  the share of pairs with a true drop of 0.05 called ``regressed`` (power).

Target: every coverage at least 0.93 (the issue's bar). A coverage estimated from R runs has a
standard error of about sqrt(0.95 * 0.05 / R) (0.005 at R = 2,000).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from evalkit import compare_experiments
from evalkit._intervals import mean_interval95
from evalkit._tdist import t975
from evalkit.compare import paired_bootstrap_ci, paired_interval

SIZES = (10, 30, 100, 300)
TARGET_COVERAGE = 0.93
Array = npt.NDArray[np.float64]
# One kind of scores: draws (rng, runs, n) -> (runs, n) scores, and their true mean.
Single = tuple[Callable[[np.random.Generator, int, int], Array], float]
# One kind of paired scores: draws (rng, n) -> (baseline, candidate), and the true mean change.
Paired = tuple[Callable[[np.random.Generator, int], tuple[Array, Array]], float]


def _sigmoid(x: Array) -> Array:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=np.float64)


SINGLE: dict[str, Single] = {
    "binary p=0.80": (lambda rng, r, n: (rng.random((r, n)) < 0.8).astype(float), 0.8),
    "binary p=0.95": (lambda rng, r, n: (rng.random((r, n)) < 0.95).astype(float), 0.95),
    "bounded Beta(5,1)": (lambda rng, r, n: rng.beta(5.0, 1.0, (r, n)), 5.0 / 6.0),
    "skewed Beta(0.5,3)": (lambda rng, r, n: rng.beta(0.5, 3.0, (r, n)), 0.5 / 3.5),
}


def _binary_pairs(p_down: float, p_up: float) -> Paired:
    def draw(rng: np.random.Generator, n: int) -> tuple[Array, Array]:
        u = rng.random(n)
        before = (rng.random(n) < 0.7).astype(float)
        # Of the items right before, p_down / 0.7 go wrong; of the wrong, p_up / 0.3 go right.
        after = np.where(before == 1.0, (u >= p_down / 0.7).astype(float),
                         (u < p_up / 0.3).astype(float))  # fmt: skip
        return before, after

    return draw, p_up - p_down


def _bounded_pairs(shift: float) -> Paired:
    def draw(rng: np.random.Generator, n: int) -> tuple[Array, Array]:
        item = rng.normal(0.5, 1.0, n)
        return _sigmoid(item + rng.normal(0, 0.5, n)), _sigmoid(
            item + shift + rng.normal(0, 0.5, n)
        )

    # The true mean change, by a large simulation (fixed seed, 2 million items).
    big = np.random.default_rng(12345)
    before, after = draw(big, 2_000_000)
    return draw, float((after - before).mean())


def _skewed_pairs(drop: float) -> Paired:
    def draw(rng: np.random.Generator, n: int) -> tuple[Array, Array]:
        before = rng.beta(0.5, 3.0, n)
        after = np.clip(before + rng.beta(0.5, 3.0, n) * 0.5 - 0.5 / 3.5 * 0.5 - drop, 0.0, 1.0)
        return before, after

    big = np.random.default_rng(12345)
    before, after = draw(big, 2_000_000)
    return draw, float((after - before).mean())


def _cell(new_hit: int, new_width: float, old_hit: int, old_width: float, reps: int) -> str:
    """``coverage/width | coverage/width``: today's interval, then the one it replaced."""
    return (
        f"{new_hit / reps:.3f}/{new_width / reps:.3f} | {old_hit / reps:.3f}/{old_width / reps:.3f}"
    )


def _skewed_scores(drop: float) -> Paired:
    """Skewed scores (most near 0) that two runs share per item, the candidate's lowered by
    ``drop``: with no drop the two runs are exchangeable, a true A/A."""

    def draw(rng: np.random.Generator, n: int) -> tuple[Array, Array]:
        item = rng.beta(0.5, 3.0, n)
        before = np.clip(item + rng.normal(0.0, 0.05, n), 0.0, 1.0)
        return before, np.clip(item - drop + rng.normal(0.0, 0.05, n), 0.0, 1.0)

    big = np.random.default_rng(12345)
    before, after = draw(big, 2_000_000)
    return draw, float((after - before).mean())


def scorer_intervals(rng: np.random.Generator, reps: int) -> None:
    print("ST1 scorer interval (95%): coverage / mean width, today's | Student t before")
    print(f"  {'scores':20s} " + " ".join(f"{'n=' + str(n):>24s}" for n in SIZES))
    worst = 1.0
    for name, (draw, truth) in SINGLE.items():
        cells = []
        for n in SIZES:
            x = draw(rng, reps, n)
            means, sds = x.mean(axis=1), x.std(axis=1, ddof=1)
            lows, highs = x.min(axis=1), x.max(axis=1)
            new_hit = old_hit = 0
            new_width = old_width = 0.0
            for m, s, lo, hi in zip(means, sds, lows, highs, strict=True):
                interval = mean_interval95(n, float(m), float(s), float(lo), float(hi))
                assert interval is not None
                new_hit += interval[0] <= truth <= interval[1]
                new_width += interval[1] - interval[0]
                half = s / math.sqrt(n) * t975(n - 1)
                old_hit += m - half <= truth <= m + half
                old_width += 2 * half
            worst = min(worst, new_hit / reps)
            cells.append(_cell(new_hit, new_width, old_hit, old_width, reps))
        print(f"  {name:20s} " + " ".join(f"{c:>24s}" for c in cells))
    print(f"ST1a scorer interval: lowest coverage {worst:.3f} (target >= {TARGET_COVERAGE})")


def paired_intervals(rng: np.random.Generator, reps: int, resamples: int) -> None:
    kinds: dict[str, tuple[Paired, bool]] = {
        "binary -0.05": (_binary_pairs(0.10, 0.05), True),
        "binary 0 (A/A)": (_binary_pairs(0.08, 0.08), True),
        "bounded -0.04": (_bounded_pairs(-0.2), False),
        "skewed -0.02": (_skewed_pairs(0.02), False),
    }
    print("ST1 paired interval (95%): coverage / mean width, today's | percentile bootstrap before")
    print(f"  {'change':20s} " + " ".join(f"{'n=' + str(n):>24s}" for n in SIZES))
    worst = 1.0
    for name, ((draw, truth), binary) in kinds.items():
        cells = []
        for n in SIZES:
            new_hit = old_hit = 0
            new_width = old_width = 0.0
            for rep in range(reps):
                before, after = draw(rng, n)
                d = after - before
                low, high = paired_interval(d, binary=binary, resamples=resamples, seed=rep)
                new_hit += low <= truth <= high
                new_width += high - low
                low, high = paired_bootstrap_ci(d, resamples=resamples, seed=rep)
                old_hit += low <= truth <= high
                old_width += high - low
            worst = min(worst, new_hit / reps)
            cells.append(_cell(new_hit, new_width, old_hit, old_width, reps))
        print(f"  {name:20s} " + " ".join(f"{c:>24s}" for c in cells))
    print(f"ST1b paired interval: lowest coverage {worst:.3f} (target >= {TARGET_COVERAGE})")


def gate(rng: np.random.Generator, reps: int, resamples: int) -> None:
    kinds: dict[str, tuple[Paired, Paired]] = {
        "binary": (_binary_pairs(0.08, 0.08), _binary_pairs(0.10, 0.05)),
        "bounded": (_bounded_pairs(0.0), _bounded_pairs(-0.25)),
        "skewed": (_skewed_scores(0.0), _skewed_scores(0.02)),
    }
    print("ST1 gate (max_drop 0): A/A share called regressed (nominal <= 0.025) / power")
    print(f"  {'scores':20s} " + " ".join(f"{'n=' + str(n):>16s}" for n in SIZES))
    for name, ((same, _), (dropped, change)) in kinds.items():
        cells = []
        for n in SIZES:
            false = hits = 0
            for rep in range(reps):
                for draw, counter in ((same, "false"), (dropped, "hits")):
                    before, after = draw(rng, n)
                    ids = [str(i) for i in range(n)]
                    result = compare_experiments(
                        {"s": dict(zip(ids, before.tolist(), strict=True))},
                        {"s": dict(zip(ids, after.tolist(), strict=True))},
                        resamples=resamples,
                        seed=rep,
                    )["s"]
                    if result.verdict == "regressed":
                        if counter == "false":
                            false += 1
                        else:
                            hits += 1
            cells.append(f"{false / reps:.3f} / {hits / reps:.2f}")
        print(f"  {name + f' ({change:+.3f})':20s} " + " ".join(f"{c:>16s}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=2_000, help="simulated runs per cell")
    parser.add_argument("--gate-reps", type=int, default=400, help="compared pairs per cell")
    parser.add_argument("--resamples", type=int, default=2_000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    scorer_intervals(rng, args.reps)
    paired_intervals(rng, max(1, args.reps // 2), args.resamples)
    gate(rng, args.gate_reps, args.resamples)
    print(f"ST1 done in {time.perf_counter() - started:.0f} s (seed {args.seed})")


if __name__ == "__main__":
    main()
