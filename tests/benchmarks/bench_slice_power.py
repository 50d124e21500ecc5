"""ST2 — the slice correction's power and family-wise error on a simulated set of slices
(issue 34, item 5).

Run: ``python -m tests.benchmarks.bench_slice_power [--reps R] [--seed S]``.

A run of 0/1 scores split like the regression demo: 39 tests (slices times scorers), of which 18 saw
no pair change (p = 1), 9 saw a few changes of both signs, 8 are a noisy scorer with many
changes of both signs and 4 slices of 40 items truly dropped (each item moving down with
probability ``p_down``, up with 0.02). Each test is the exact two-sided sign (McNemar) test the
comparison runs on 0/1 scores. Three corrections at a 5% family-wise level:

- **Holm over all**: every test counts in m (the correction before issue 34).
- **Holm over changed**: only tests with at least one changed pair count.
- **Tarone-Holm** (`evalkit.compare._slices.tarone_holm`, what ships): at each step only the
  tests whose smallest possible p-value (``2 / 2**changed``) could reach ``level / K`` count.

Power is the share of the truly dropped slices found; FWER the share of runs with any
unchanged slice rejected (A/A: every slice unchanged, nominal at most 0.05). Design:
docs/pages/design/slice-correction.md.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from evalkit.compare._slices import holm, least_p_value, tarone_holm

LEVEL = 0.05


def exact_p(down: int, up: int) -> float:
    """Two-sided exact binomial (McNemar) p-value of ``down`` against ``up``."""
    k = down + up
    if k == 0:
        return 1.0
    low = min(down, up)
    tail = sum(math.comb(k, j) for j in range(low + 1)) / 2.0**k
    return min(1.0, 2.0 * tail)


def _tests(p_down: float | None) -> list[tuple[int, float, float, bool]]:
    """(n, p_down, p_up, truly dropped) per test."""
    tests = [(40, 0.0, 0.0, False)] * 18 + [(40, 0.02, 0.02, False)] * 9
    tests += [(60, 0.08, 0.08, False)] * 8
    if p_down is None:  # A/A: a fourth group of unchanged but noisy slices
        return tests + [(40, 0.11, 0.11, False)] * 4
    return tests + [(40, p_down, 0.02, True)] * 4


def _rejected(adjusted: list[float]) -> np.ndarray:
    return np.asarray(adjusted) < LEVEL


def simulate(
    p_down: float | None, reps: int, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    tests = _tests(p_down)
    truth = np.array([t[3] for t in tests])
    found = dict.fromkeys(("Holm over all", "Holm over changed", "Tarone-Holm"), 0.0)
    wrong = dict.fromkeys(found, 0)
    for _ in range(reps):
        p, changed = [], []
        for n, down_p, up_p, _ in tests:
            down, up, _same = rng.multinomial(n, [down_p, up_p, 1.0 - down_p - up_p])
            p.append(exact_p(int(down), int(up)))
            changed.append(int(down + up))
        moved = [i for i, c in enumerate(changed) if c]
        over_changed = [1.0] * len(p)
        for i, a in zip(moved, holm([p[i] for i in moved]), strict=True):
            over_changed[i] = a
        least = [least_p_value(c) for c in changed]
        for name, adjusted in (
            ("Holm over all", holm(p)),
            ("Holm over changed", over_changed),
            ("Tarone-Holm", tarone_holm(p, least, level=LEVEL)),
        ):
            rejected = _rejected(adjusted)
            if truth.any():
                found[name] += (rejected & truth).sum() / truth.sum()
            wrong[name] += bool((rejected & ~truth).any())
    return {name: (found[name] / reps, wrong[name] / reps) for name in found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"ST2 slice correction, {args.reps} runs of 39 tests each, level {LEVEL}")
    print(f"{'true drop':<26} {'correction':<18} {'power':>6} {'FWER':>6}")
    cases = [("A/A (none)", None), ("p_down 0.15 (-0.13)", 0.15)]
    cases += [("p_down 0.20 (-0.18)", 0.20), ("p_down 0.25 (-0.23)", 0.25)]
    for label, p_down in cases:
        for name, (power, fwer) in simulate(p_down, args.reps, rng).items():
            shown = "-" if p_down is None else f"{power:.3f}"
            print(f"{label:<26} {name:<18} {shown:>6} {fwer:>6.3f}")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
