"""L-S — judge throughput against a real ``llama-server`` with 4 slots: evalkit against the
official ``openai`` client sending the same requests at the same concurrency, in one run.

Needs what ``tests/compat/install.sh`` installs (``EVALKIT_COMPAT_PREFIX``): llama.cpp's
``llama-server`` and the Gemma 3 270M GGUF model. The server is started with ``--parallel 4``
(4 slots of 2,048 tokens). First the requests are captured: a run of ``llm_rubric`` over the
first N items of ``datasets/qa_v1.parquet`` against the shipped test server records the request
bodies evalkit sends. Then rounds alternate in the order evalkit, client, client, evalkit (so
a drift of the machine's load weighs on both alike):

- evalkit: ``run_evals`` of that ``llm_rubric`` scorer over the N items, judge
  ``max_concurrency=4``, no store, no judge cache;
- client: ``AsyncOpenAI.chat.completions.create`` with each captured body, 4 at a time
  (an anyio ``CapacityLimiter``), one client for the round.

Throughput is judge requests a second and completion tokens a second (the server's work is
generating them; a round with longer replies takes longer, so both are printed).

Run: ``python -m tests.benchmarks.bench_llama_server [--items N] [--rounds R]``.
Target: evalkit's requests/s ≥ 0.95 of the client's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import openai

from evalkit import Judge, get_scorer, run_evals
from evalkit.testing import FakeOpenAIServer
from tests.compat._servers import KEY_ENV, SLOTS, Installed, running_server

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "qa_v1.parquet"
RUBRIC = "The answer is correct and directly answers the question."
TARGET_RATIO = 0.95
MAX_TOKENS = 256
TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class Round:
    who: str
    seconds: float
    requests: int
    completion_tokens: int
    failed: int

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def tokens_rate(self) -> float:
        return self.completion_tokens / self.seconds


def make_judge(model: str, base_url: str) -> Judge:
    return Judge(
        model,
        base_url=base_url,
        api_key_env=KEY_ENV,
        max_concurrency=SLOTS,
        max_tokens=MAX_TOKENS,
        timeout=TIMEOUT_S,
        temperature=0.0,
    )


async def evalkit_round(model: str, base_url: str, items: int) -> Round:
    scorer = get_scorer("llm_rubric", judge=make_judge(model, base_url), rubric=RUBRIC)
    start = time.perf_counter()
    result = await run_evals(
        str(DATASET),
        [scorer],
        limit=items,
        concurrency=2 * SLOTS,
        store=None,
        cache=False,
        progress=False,
        max_error_rate=1.0,
    )
    seconds = time.perf_counter() - start
    requests = tokens = failed = 0
    for outcome in result.results_for(scorer.id):
        failed += outcome.status != "success"
        for record in (outcome.result.judge if outcome.result else {}).values():
            for execution in record.executions:
                requests += execution.model_call_count
                tokens += execution.usage.output_tokens if execution.usage else 0
    return Round("evalkit", seconds, requests, tokens, failed)


async def client_round(base_url: str, api_key: str, bodies: list[dict[str, Any]]) -> Round:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=TIMEOUT_S)
    limiter = anyio.CapacityLimiter(SLOTS)
    tokens = failed = 0

    async def one(body: dict[str, Any]) -> None:
        nonlocal tokens, failed
        async with limiter:
            fields = dict(body)
            try:
                reply = await client.chat.completions.create(
                    model=fields.pop("model"), messages=fields.pop("messages"), extra_body=fields
                )
            except openai.APIError:
                failed += 1
                return
            tokens += reply.usage.completion_tokens if reply.usage else 0

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for body in bodies:
            group.start_soon(one, body)
    seconds = time.perf_counter() - start
    await client.close()
    return Round("client", seconds, len(bodies), tokens, failed)


async def capture(model: str, items: int) -> list[dict[str, Any]]:
    """The request bodies a run of the scorer sends (first attempts; the test server's
    replies are valid, so there is no fallback)."""
    async with FakeOpenAIServer(api_key="bench-key") as fake:
        os.environ[KEY_ENV] = "bench-key"
        scorer = get_scorer("llm_rubric", judge=make_judge(model, fake.base_url), rubric=RUBRIC)
        await run_evals(
            str(DATASET), [scorer], limit=items, store=None, cache=False, progress=False
        )
        bodies = fake.requests
    if len(bodies) != items:
        raise RuntimeError(f"captured {len(bodies)} requests for {items} items")
    return bodies


async def measure(items: int, rounds: int) -> list[Round]:
    installed = Installed.find()
    with (
        tempfile.TemporaryDirectory(prefix="evalkit-bench-llama-") as folder,
        running_server("llama-server", installed, Path(folder)) as server,
    ):
        bodies = await capture(server.model, items)
        os.environ[KEY_ENV] = server.api_key
        # Warm up with a whole round, not timed: the first round of all found the slots'
        # prompt caches cold and took twice as long as the next ones (measured).
        await client_round(server.base_url, server.api_key, bodies)
        done: list[Round] = []
        for index in range(2 * rounds):
            evalkit_first = index % 4 in (0, 3)  # evalkit, client, client, evalkit, ...
            if evalkit_first:
                done.append(await evalkit_round(server.model, server.base_url, items))
            else:
                done.append(await client_round(server.base_url, server.api_key, bodies))
            last = done[-1]
            print(
                f"  round {index + 1} {last.who:7}: {last.requests} requests in "
                f"{last.seconds:.1f} s = {last.rate:.2f} requests/s, "
                f"{last.tokens_rate:.1f} completion tokens/s, {last.failed} failed",
                flush=True,
            )
        return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each (default 2)")
    args = parser.parse_args()
    load = os.getloadavg()
    done = anyio.run(measure, args.items, args.rounds)
    ours = [r for r in done if r.who == "evalkit"]
    theirs = [r for r in done if r.who == "client"]

    def total(rounds: list[Round]) -> tuple[float, float]:
        seconds = sum(r.seconds for r in rounds)
        return sum(r.requests for r in rounds) / seconds, sum(
            r.completion_tokens for r in rounds
        ) / seconds

    rate, tokens_rate = total(ours)
    client_rate, client_tokens_rate = total(theirs)
    ratio = rate / client_rate
    print(
        f"L-S llama-server judge throughput ({SLOTS} slots, {args.items} llm_rubric items, "
        f"{args.rounds} rounds each, ABBA): evalkit {rate:.2f} requests/s, "
        f"{tokens_rate:.1f} completion tokens/s; official client {client_rate:.2f} requests/s, "
        f"{client_tokens_rate:.1f} tokens/s; ratio {ratio:.3f} (target ≥ {TARGET_RATIO}); "
        f"tokens/s ratio {tokens_rate / client_tokens_rate:.3f}; median round evalkit "
        f"{statistics.median(r.seconds for r in ours):.1f} s, client "
        f"{statistics.median(r.seconds for r in theirs):.1f} s; failed items evalkit "
        f"{sum(r.failed for r in ours)}, client {sum(r.failed for r in theirs)}; load average "
        f"before {load[0]:.2f}"
    )


if __name__ == "__main__":
    main()
