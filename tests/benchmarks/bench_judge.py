"""B3 — judge throughput: one-call judge scorer runs against the local test server.

The server runs in its own process (``python -m evalkit.testing.server``) so client and server
each get a core. 2,000 runs of a scorer whose generate_score is a PromptStep, 50 ms server
latency, judge ``max_concurrency=64``, fanned out through an anyio task group bounded by a
CapacityLimiter. The ideal is 64 / 0.05 s = 1,280 judge calls/s.

Run: ``python -m tests.benchmarks.bench_judge [--runs N] [--profile]``. Target: ≥ 0.6 of ideal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from typing import Any

import anyio

from evalkit import Judge, PromptStep, Scorer, create_scorer

LATENCY_S = 0.05
MAX_CONCURRENCY = 64
IDEAL_CALLS_PER_S = MAX_CONCURRENCY / LATENCY_S
TARGET_RATIO = 0.6
KEY_ENV = "EVALKIT_BENCH_KEY"


def start_server() -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "evalkit.testing.server", "--port", "0"]
    cmd += ["--latency", str(LATENCY_S)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on " not in line:
        proc.kill()
        raise RuntimeError(f"the test server did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[1].strip()


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


async def measure(base_url: str, runs: int) -> tuple[float, float]:
    """Wall-clock seconds and client CPU seconds of ``runs`` scorer runs."""
    scorer = build_scorer(base_url)
    await fan_out(scorer, 200, 2 * MAX_CONCURRENCY)  # warm up: connections, imports
    server_stats(base_url, reset=True)
    cpu = time.process_time()
    elapsed = await fan_out(scorer, runs, 2 * MAX_CONCURRENCY)
    return elapsed, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--profile", action="store_true", help="profile with pyinstrument")
    args = parser.parse_args()
    os.environ.setdefault(KEY_ENV, "bench-key")
    load = os.getloadavg()
    proc, base_url = start_server()
    try:
        if args.profile:
            from pyinstrument import Profiler

            with Profiler(async_mode="disabled") as profiler:
                elapsed, cpu = anyio.run(measure, base_url, args.runs)
            profiler.print(show_all=False)
        else:
            elapsed, cpu = anyio.run(measure, base_url, args.runs)
        stats = server_stats(base_url)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    rate = stats["requests"] / elapsed
    print(
        f"B3 judge throughput: {args.runs:,} one-call scorer runs, {stats['requests']:,} judge "
        f"calls in {elapsed:.2f} s = {rate:,.0f} calls/s = {rate / IDEAL_CALLS_PER_S:.2f} of the "
        f"ideal {IDEAL_CALLS_PER_S:,.0f} (target {TARGET_RATIO}); server max in flight "
        f"{stats['max_in_flight']} (limit {MAX_CONCURRENCY}); client CPU "
        f"{cpu / stats['requests'] * 1000:.2f} ms/call; load average before {load[0]:.2f}"
    )


if __name__ == "__main__":
    main()
