"""B-compare — regression judgement: 10,000 paired items, 10,000 resamples, one scorer.

Run: ``python -m tests.benchmarks.bench_compare [--items N] [--resamples R]``. Target: well
under 1 s on the 2-core CI machine for continuous scores (the slow, item-wise path); binary
scores take the grouped path and are also reported.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalkit import compare_experiments

TARGET_SECONDS = 1.0


def runs(items: int, *, binary: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    ids = [f"q{i:06d}" for i in range(items)]
    if binary:
        before = (rng.uniform(size=items) < 0.8).astype(float)
        after = np.where(rng.uniform(size=items) < 0.03, 0.0, before)
    else:
        before = rng.uniform(size=items)
        after = np.clip(before + rng.normal(-0.01, 0.1, items), 0.0, 1.0)

    def make(s: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"item_id": ids, "scorer_id": "s", "score": s, "status": "success"})

    return make(before), make(after)


def measure(items: int, resamples: int, *, binary: bool) -> float:
    baseline, candidate = runs(items, binary=binary)
    compare_experiments(baseline, candidate, resamples=10)  # warm-up: imports, allocations
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        compare_experiments(baseline, candidate, resamples=resamples)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    for label, binary in (("continuous scores", False), ("binary scores", True)):
        elapsed = measure(args.items, args.resamples, binary=binary)
        print(
            f"B-compare {label}: {args.items:,} pairs x {args.resamples:,} resamples "
            f"(bootstrap CI + sign-flip test) in {elapsed:.3f} s, best of 3 "
            f"({elapsed / TARGET_SECONDS:.2f}x the {TARGET_SECONDS:.0f} s budget)"
        )


if __name__ == "__main__":
    main()
