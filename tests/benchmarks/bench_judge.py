"""B3 — judge throughput, and B5 — the same run again with a warm judge cache.

The server runs in its own process (``python -m evalkit.testing.server``) so client and server
each get a core. B3: 2,000 runs of a scorer whose generate_score is a PromptStep, 50 ms server
latency, judge ``max_concurrency=64``, fanned out through an anyio task group bounded by a
CapacityLimiter, with a judge cache active as a run has one (cold: every call is a miss and
is written). The ideal is 64 / 0.05 s = 1,280 judge calls/s. B5: the same 2,000 runs with a
fresh ``JudgeCache`` on the file B3 wrote (so every reply comes from disk), timed from opening
the cache to closing it; it must make no judge call and be ≥ 10x faster than B3.

Run: ``python -m tests.benchmarks.bench_judge [--runs N] [--no-cache] [--profile]``.
Targets: B3 ≥ 0.8 of ideal; B5 0 calls and ≥ 10x B3.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import anyio

from evalkit import Judge, JudgeCache, PromptStep, Scorer, create_scorer, use_judge_cache
from evalkit.testing import server_process

LATENCY_S = 0.05
MAX_CONCURRENCY = 64
IDEAL_CALLS_PER_S = MAX_CONCURRENCY / LATENCY_S
TARGET_RATIO = 0.8
TARGET_SPEEDUP = 10.0
KEY_ENV = "EVALKIT_BENCH_KEY"


def server_stats(base_url: str, *, reset: bool = False) -> dict[str, Any]:
    root = base_url.removesuffix("/v1")
    request = urllib.request.Request(
        f"{root}/_evalkit/{'reset' if reset else 'stats'}", method="POST" if reset else "GET"
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        result: dict[str, Any] = json.load(response)
        return result


def build_scorer(base_url: str) -> Scorer:
    judge = Judge(
        "bench-model",
        "You grade answers from 0 to 1.",
        base_url=base_url,
        api_key_env=KEY_ENV,
        max_concurrency=MAX_CONCURRENCY,
    )
    return create_scorer("Bench Judge", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Question: {run.input}\nAnswer: {run.output}\nScore it.")
    )


async def fan_out(scorer: Scorer, runs: int, in_flight: int) -> float:
    limiter = anyio.CapacityLimiter(in_flight)
    failures = 0

    async def one(index: int, token: object) -> None:
        nonlocal failures
        try:
            await scorer.run(input=f"What is {index}?", output=f"It is {index}.")
        except Exception:
            failures += 1
        finally:
            limiter.release_on_behalf_of(token)

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(runs):
            token = object()
            await limiter.acquire_on_behalf_of(token)
            group.start_soon(one, index, token)
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{failures} of {runs} scorer runs failed")
    return elapsed


async def measure(
    base_url: str, runs: int, cache_path: Path | None
) -> tuple[float, float, float, float]:
    """B3: wall-clock and client CPU seconds of ``runs`` scorer runs (with the cache open, its
    entries all written by the end), and the seconds taken to open and to close the cache."""
    scorer = build_scorer(base_url)
    await fan_out(scorer, 200, 2 * MAX_CONCURRENCY)  # warm up: connections, imports
    server_stats(base_url, reset=True)
    cache = JudgeCache(cache_path) if cache_path is not None else None
    opening = closing = 0.0
    if cache is not None:
        start = time.perf_counter()
        await cache.aopen()
        opening = time.perf_counter() - start
    cpu = time.process_time()
    start = time.perf_counter()
    async with use_judge_cache(cache):  # already open: writes what is pending on the way out
        await fan_out(scorer, runs, 2 * MAX_CONCURRENCY)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    if cache is not None:
        start = time.perf_counter()
        await cache.aclose()
        closing = time.perf_counter() - start
    return elapsed, cpu, opening, closing


async def measure_warm(base_url: str, runs: int, cache_path: Path) -> tuple[float, int, int]:
    """B5: seconds of the same runs with a fresh cache object on B3's file (open to close),
    and the cache's hits and misses."""
    scorer = build_scorer(base_url)
    cache = JudgeCache(cache_path)
    start = time.perf_counter()
    async with use_judge_cache(cache):
        await fan_out(scorer, runs, 2 * MAX_CONCURRENCY)
    return time.perf_counter() - start, cache.hits, cache.misses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--no-cache", action="store_true", help="B3 without a cache (no B5)")
    parser.add_argument("--profile", action="store_true", help="profile B3 with pyinstrument")
    args = parser.parse_args()
    os.environ.setdefault(KEY_ENV, "bench-key")
    load = os.getloadavg()
    stack = contextlib.ExitStack()
    base_url = stack.enter_context(server_process("--latency", str(LATENCY_S)))
    folder = tempfile.TemporaryDirectory(prefix="evalkit-bench-")
    cache_path = None if args.no_cache else Path(folder.name) / "evalkit-cache.duckdb"
    try:
        if args.profile:
            from pyinstrument import Profiler

            with Profiler(async_mode="disabled") as profiler:
                figures = anyio.run(measure, base_url, args.runs, cache_path)
            profiler.print(show_all=False)
        else:
            figures = anyio.run(measure, base_url, args.runs, cache_path)
        elapsed, cpu, opening, closing = figures
        stats = server_stats(base_url)
        warm = None
        if cache_path is not None:
            warm = anyio.run(measure_warm, base_url, args.runs, cache_path)
            warm_calls = server_stats(base_url)["requests"] - stats["requests"]
    finally:
        stack.close()
        folder.cleanup()
    rate = stats["requests"] / elapsed
    cached = "no judge cache"
    if cache_path is not None:
        cached = (
            f"a cold judge cache, opened in {opening * 1000:.0f} ms and closed in "
            f"{closing * 1000:.0f} ms"
        )
    print(
        f"B3 judge throughput ({cached}): {args.runs:,} one-call scorer runs, "
        f"{stats['requests']:,} judge calls in {elapsed:.2f} s = {rate:,.0f} calls/s = "
        f"{rate / IDEAL_CALLS_PER_S:.2f} of the ideal {IDEAL_CALLS_PER_S:,.0f} (target "
        f"{TARGET_RATIO}); server max in flight {stats['max_in_flight']} (limit "
        f"{MAX_CONCURRENCY}); client CPU {cpu / stats['requests'] * 1000:.2f} ms/call; "
        f"load average before {load[0]:.2f}"
    )
    if warm is not None:
        seconds, hits, misses = warm
        speedup = elapsed / seconds
        print(
            f"B5 cached rerun: {args.runs:,} scorer runs in {seconds:.3f} s "
            f"({args.runs / seconds:,.0f} runs/s) with {warm_calls} judge calls made "
            f"(target 0), {hits:,} cache hits, {misses} misses; {speedup:.1f}x faster than "
            f"B3 (target {TARGET_SPEEDUP:g}x)"
        )


if __name__ == "__main__":
    main()
