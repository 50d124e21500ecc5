"""B1 — scorer overhead: a four-step function scorer run 100,000 times in one event loop.

Run: ``python -m tests.benchmarks.bench_scorer [--runs N]``. Target: ≥ 50,000 runs/s on the
2-core CI machine.
"""

from __future__ import annotations

import argparse
import time

import anyio

from evalkit import Scorer, create_scorer

TARGET_RUNS_PER_S = 50_000


def build_scorer() -> Scorer:
    return (
        create_scorer("Bench Quality")
        .preprocess(lambda run: {"word_count": len(run.output.split())})
        .analyze(lambda results: {"long": results.preprocess_step_result["word_count"] > 3})
        .generate_score(lambda results: 1.0 if results.analyze_step_result["long"] else 0.0)
        .generate_reason(lambda score: f"score {score}")
    )


async def measure(runs: int) -> tuple[float, float]:
    """Wall and process CPU seconds for ``runs`` runs (CPU is unaffected by other processes)."""
    scorer = build_scorer()
    output = "Machine learning is a subset of artificial intelligence"
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(runs):
        await scorer.run(input="What is ML?", output=output, ground_truth="ML is AI")
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000)
    args = parser.parse_args()
    elapsed, cpu = anyio.run(measure, args.runs)
    rate = args.runs / elapsed
    print(
        f"B1 scorer overhead: {args.runs:,} runs in {elapsed:.2f} s = {rate:,.0f} runs/s "
        f"({rate / TARGET_RUNS_PER_S:.2f}x the {TARGET_RUNS_PER_S:,} target, "
        f"{elapsed / args.runs * 1e6:.1f} µs/run; CPU {cpu / args.runs * 1e6:.1f} µs/run)"
    )


if __name__ == "__main__":
    main()
