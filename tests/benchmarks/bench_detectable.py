"""ST3 — the detectable drop against simulated power (issue 34, item 6).

Run: ``python -m tests.benchmarks.bench_detectable [--reps R] [--seed S]``.

For 0/1 scores with a share ``s`` of pairs changing, and for continuous scores whose paired
differences spread with standard deviation ``sd``, at n = 10, 30, 100, 300 and 1,000: the
detectable drop ``D`` the comparison reports (80% power at 95%, from the true ``s`` or ``sd``),
then ``R`` simulated pairs of runs with a true drop of ``D`` judged by ``compare_experiments``
(``max_drop = 0``): the share called ``regressed`` is the power actually reached (target 0.80;
its standard error is about 0.02 at R = 400), and the median ``detectable_drop`` the simulated
runs report (from their own observed figures) beside ``D``. Design:
docs/pages/design/detectable-drop.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evalkit import compare_experiments
from evalkit.compare._power import detectable_drop

SIZES = (10, 30, 100, 300, 1000)
#: One run's scores: ``{scorer_id: {item_id: score}}``.
Runs = dict[str, dict[str, float]]


def _binary(n: int, share: float, drop: float, rng: np.random.Generator) -> tuple[Runs, Runs]:
    moves = rng.choice(3, size=n, p=[(share + drop) / 2, (share - drop) / 2, 1 - share])
    base = np.where(moves == 0, 1.0, np.where(moves == 1, 0.0, rng.uniform(size=n) < 0.7))
    cand = np.where(moves == 2, base, 1.0 - base)
    ids = [f"i{i}" for i in range(n)]
    return ({"s": dict(zip(ids, base.tolist(), strict=True))},
            {"s": dict(zip(ids, cand.tolist(), strict=True))})  # fmt: skip


def _continuous(n: int, sd: float, drop: float, rng: np.random.Generator) -> tuple[Runs, Runs]:
    base = rng.normal(5.0, 1.0, size=n)
    cand = base + rng.normal(-drop, sd, size=n)
    ids = [f"i{i}" for i in range(n)]
    return ({"s": dict(zip(ids, base.tolist(), strict=True))},
            {"s": dict(zip(ids, cand.tolist(), strict=True))})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"ST3 detectable drop (80% power, 95%): {args.reps} simulated pairs of runs a cell")
    print(f"{'scores':<22} {'n':>5} {'D':>7} {'power at D':>10} {'median reported':>15}")
    cases = [("binary s=0.10", True, 0.10), ("binary s=0.30", True, 0.30)]
    cases += [("continuous sd=0.20", False, 0.20)]
    for label, binary, spread in cases:
        for n in SIZES:
            drop = detectable_drop(n, binary=binary, changed_share=spread if binary else 0.0,
                                   sd=0.0 if binary else spread, confidence=0.95)  # fmt: skip
            if drop is None:
                print(f"{label:<22} {n:>5} {'-':>7} {'(too few items)':>10}")
                continue
            called, reported = 0, []
            for _ in range(args.reps):
                make = _binary if binary else _continuous
                if binary and drop > spread:  # a drop moves at least its share of pairs
                    pair = make(n, drop, drop, rng)
                else:
                    pair = make(n, spread, drop, rng)
                c = compare_experiments(*pair, resamples=2000, seed=int(rng.integers(1 << 31)))
                called += c["s"].verdict == "regressed"
                if c["s"].detectable_drop is not None:
                    reported.append(c["s"].detectable_drop)
            median = f"{np.median(reported):.3f}" if reported else "-"
            print(f"{label:<22} {n:>5} {drop:>7.3f} {called / args.reps:>10.2f} {median:>15}")
    print(f"ST3 done in {time.perf_counter() - started:.0f} s (seed {args.seed})")


if __name__ == "__main__":
    main()
