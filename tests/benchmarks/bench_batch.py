"""J1 — judge calls in batch mode: the client's cost per call, all in flight in one batch.

The server runs in its own process (``python -m evalkit.testing.server``), answering batches at
once (no batch delay, no latency). 20,000 runs of a scorer whose generate_score is a
PromptStep, all in flight (an anyio task group bounded by a CapacityLimiter of 20,000, as an
orchestrator in batch mode runs), with a cold judge cache active (so every request is also
recorded in the batch journal and every reply written to the cache). The judge gathers them
into one batch (``batch_flush_after=0.5``, ``batch_poll_interval=0.1``).

What is measured is the client: CPU per call (building requests, the JSONL file, reading the
output file, resolving callers, validation, records, cache and journal writes), against the
0.9 ms/call of an online call (B3). Wall time is reported but is mostly the server's.

Run: ``python -m tests.benchmarks.bench_batch [--runs N]``.
Target: client CPU ≤ 0.45 ms per call (half of an online call), one batch.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from pathlib import Path

import anyio

from evalkit import Judge, JudgeCache, PromptStep, Scorer, create_scorer, use_judge_cache
from evalkit.testing import server_process
from tests.benchmarks.bench_judge import KEY_ENV, server_stats
from tests.benchmarks.bench_rate_limit import run_items

TARGET_CPU_MS = 0.45


def build_scorer(base_url: str) -> Scorer:
    judge = Judge(
        "bench-model",
        "You grade answers from 0 to 1.",
        base_url=base_url,
        api_key_env=KEY_ENV,
        mode="batch",
        batch_flush_after=0.5,
        batch_poll_interval=0.1,
    )
    return create_scorer("Bench Batch", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Question: {run.input}\nAnswer: {run.output}\nScore it.")
    )


async def fan_out(scorer: Scorer, runs: int) -> None:
    """All ``runs`` scorer runs in flight at once, so they land in one batch."""
    failures = await run_items(scorer, runs, runs)
    if failures:
        raise RuntimeError(f"{failures} of {runs} scorer runs failed")


async def measure(base_url: str, runs: int, cache_path: Path) -> tuple[float, float, float]:
    """Wall-clock and client CPU seconds of ``runs`` runs, and the seconds after the batch
    ended that were spent closing the cache (writing its entries)."""
    scorer = build_scorer(base_url)
    await fan_out(scorer, 100)  # warm up: connections, imports
    server_stats(base_url, reset=True)
    cache = JudgeCache(cache_path)
    cpu = time.process_time()
    start = time.perf_counter()
    async with use_judge_cache(cache):
        await fan_out(scorer, runs)
        ran = time.perf_counter()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    return elapsed, cpu, time.perf_counter() - ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20_000)
    args = parser.parse_args()
    os.environ.setdefault(KEY_ENV, "bench-key")
    load = os.getloadavg()
    stack = contextlib.ExitStack()
    base_url = stack.enter_context(server_process())
    folder = tempfile.TemporaryDirectory(prefix="evalkit-bench-")
    try:
        elapsed, cpu, closing = anyio.run(
            measure, base_url, args.runs, Path(folder.name) / "evalkit-cache.duckdb"
        )
        stats = server_stats(base_url)
    finally:
        stack.close()
        folder.cleanup()
    per_call = cpu / stats["batch_requests"] * 1000
    print(
        f"J1 batch mode: {args.runs:,} one-call scorer runs in flight, "
        f"{stats['batch_requests']:,} requests in {stats['batches']} batch(es) "
        f"(online requests: {stats['requests']}), {elapsed:.2f} s wall "
        f"({args.runs / elapsed:,.0f} runs/s, {closing * 1000:.0f} ms of it closing the "
        f"cache); client CPU {per_call:.3f} ms/call = {per_call / TARGET_CPU_MS:.2f} of the "
        f"target {TARGET_CPU_MS} ms (an online call: 0.9 ms); load average before {load[0]:.2f}"
    )


if __name__ == "__main__":
    main()
