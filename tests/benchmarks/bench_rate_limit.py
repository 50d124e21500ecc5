"""Rate limiter acceptance, full length: rpm 600 for 30 s, and a 429 storm.

1. **Pacing.** A judge with ``rpm=600`` and ``max_concurrency=64`` scores ``rpm/60 * 30 s +
   burst`` items as fast as it may against the local server (50 ms latency, in this process so
   the server's arrival times can be read). Prints the observed rate (the slope of arrivals
   after the allowed burst, and the plain count over the run), and the most requests seen in
   any 1 s, 10 s and 60 s window against the bound ``rate * window + burst``.
   Targets: within 5% of 600/min; no window above its bound.
2. **Storm.** 300 items against a server allowing 50 requests per second and answering 429 with
   ``Retry-After: 1`` beyond that, judge ``max_concurrency=64``. Target: no failed item.

Run: ``python -m tests.benchmarks.bench_rate_limit [--rpm 600] [--seconds 30] [--no-storm]``.
"""

from __future__ import annotations

import argparse
import os
import time

import anyio

from evalkit import Judge, PromptStep, Scorer, create_scorer
from evalkit.judge import RateLimiter, rate_limiter_stats
from evalkit.testing import FakeOpenAIServer, RateLimitPolicy

KEY_ENV = "EVALKIT_BENCH_KEY"
TARGET_DEVIATION = 0.05


def build_scorer(judge: Judge) -> Scorer:
    return create_scorer("Paced", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Question: {run.input}\nAnswer: {run.output}\nScore.")
    )


async def run_items(scorer: Scorer, items: int, in_flight: int) -> int:
    """Run ``items`` scorer runs, ``in_flight`` at a time; return how many failed."""
    limiter = anyio.CapacityLimiter(in_flight)
    failures = 0

    async def one(index: int) -> None:
        nonlocal failures
        async with limiter:
            try:
                await scorer.run(input=f"What is {index}?", output=f"It is {index}.")
            except Exception:
                failures += 1

    async with anyio.create_task_group() as group:
        for index in range(items):
            group.start_soon(one, index)
    return failures


def window_max(times: list[float], width: float) -> int:
    best = end = 0
    for start, at in enumerate(times):
        while end < len(times) and times[end] <= at + width:
            end += 1
        best = max(best, end - start)
    return best


async def pacing(rpm: float, seconds: float) -> None:
    rate = rpm / 60
    async with FakeOpenAIServer(latency=0.05, history=100_000) as server:
        judge = Judge(
            "bench-model",
            "You grade answers.",
            base_url=server.base_url,
            api_key_env=KEY_ENV,
            max_concurrency=64,
            rpm=rpm,
            cache=False,
        )
        burst = RateLimiter(rpm=rpm).burst or 1
        items = int(rate * seconds) + burst
        start = time.monotonic()
        failures = await run_items(build_scorer(judge), items, 128)
        elapsed = time.monotonic() - start
        arrivals = server.arrivals
    slope = (len(arrivals) - burst) / (arrivals[-1] - arrivals[0]) * 60
    plain = len(arrivals) / (arrivals[-1] - arrivals[0] + 1 / rate) * 60
    deviation = slope / rpm - 1
    print(
        f"Rate limit: rpm={rpm:g} for {elapsed:.1f} s, {len(arrivals)} requests, "
        f"{failures} failed; observed {slope:.1f}/min after the burst of {burst} "
        f"({deviation:+.2%}, target within ±{TARGET_DEVIATION:.0%}), {plain:.1f}/min counting "
        f"every request"
    )
    for width in (1.0, 10.0, 60.0):
        most = window_max(arrivals, width)
        bound = rate * width + burst
        verdict = "ok" if most <= bound else "ABOVE BOUND"
        print(f"  most requests in any {width:g} s window: {most} (bound {bound:g}) {verdict}")


async def storm() -> None:
    policy = RateLimitPolicy(requests=50, window=1.0, retry_after=1.0)
    async with FakeOpenAIServer(latency=0.05, rate_limit=policy) as server:
        judge = Judge(
            "storm-model",
            "You grade answers.",
            base_url=server.base_url,
            api_key_env=KEY_ENV,
            max_concurrency=64,
            cache=False,
        )
        start = time.monotonic()
        failures = await run_items(build_scorer(judge), 300, 128)
        elapsed = time.monotonic() - start
        served = server.stats
    (stats,) = rate_limiter_stats()
    print(
        f"429 storm: 300 items against 50 requests/s with Retry-After: 1 in {elapsed:.1f} s: "
        f"{failures} failed (target 0); {served.rate_limited} answered 429, {stats.retries} "
        f"retries, concurrency halved {stats.decreases} times, now {stats.concurrency} of "
        f"{stats.max_concurrency}; {stats.waits} waits totalling {stats.wait_seconds:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--no-storm", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault(KEY_ENV, "bench-key")
    anyio.run(pacing, args.rpm, args.seconds)
    if not args.no_storm:
        anyio.run(storm)


if __name__ == "__main__":
    main()
