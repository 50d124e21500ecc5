"""L-S — judge throughput against a real ``llama-server`` with 4 slots: evalkit against the
official ``openai`` client sending exactly the requests evalkit sends, in one run.

Needs what ``tests/compat/install.sh`` installs (``EVALKIT_COMPAT_PREFIX``): llama.cpp's
``llama-server`` and the Gemma 3 270M GGUF model. The server is started with ``--parallel 4``
(4 slots of 2,048 tokens). The scorer is ``llm_rubric`` over the first N items of
``datasets/qa_v1.parquet``, judge ``max_concurrency=4``, temperature 0, no store, no cache.

1. Capture (untimed, also evalkit's warm-up): one evalkit run against the real server through
   a recording pass-through (``_llama_traffic.RecordingProxy``), which keeps every chat body
   evalkit sent, in order: first attempts, and the re-asks of replies that failed
   ``llm_rubric``'s checks (the tiny model's), with the completion tokens of each reply.
2. Warm-up (untimed): one client round replaying those bodies (warms the slots' prompt caches;
   the first round of all used to take twice as long as the next ones).
3. Timed rounds in the order evalkit, client, client, evalkit (so a drift of the machine's load
   weighs on both alike):

   - evalkit: ``run_evals`` of the scorer straight to the server (item concurrency 8, the
     judge's limiter 4), timed from the call to its return (reading the dataset and the
     preflight ``GET /models`` included);
   - client: ``AsyncOpenAI.chat.completions.create`` with each captured body, 4 in flight (an
     anyio ``CapacityLimiter``), one client for the round; the next request is always the
     earliest, in the order evalkit sent them, that may go: a re-ask may go once the reply to
     its item's previous attempt is in, as evalkit (or any client doing this work) must, and
     while it waits the requests after it go (no slot left idle behind it).

Both sides count a request the same way: one HTTP request that got a reply (evalkit: each
attempt with a reply in the judge records; the client: each body answered), and the server's
log must agree (its tasks and generated tokens are printed beside). Throughput is requests a
second and completion tokens a second (the server's work is generating them).

What explains the figure is printed with it. At temperature 0 a round should repeat the
capture, but it does not: the same bodies replayed twice in the same order got different
replies (likely llama.cpp's batched decoding, whose sums depend on what else is in the batch),
so replies differ from round to round on both sides alike (8 to 17 of 32 items' token counts),
and now and then the tiny model repeats itself up to ``MAX_TOKENS`` (a reply *cut* at 256
tokens, which evalkit then re-asks): a round with four of them took twice as long as one with
none. Each round prints its requests, completion tokens, replies cut, and items differing from
the capture. How busy each side kept the server: the requests in flight on average (evalkit:
the attempts' ``request_ms`` from its records; the client: its own timing of each request),
this process's CPU time, and, from the server's log, the share of the round its slots were
busy, the time a slot waited between a reply and its next request, and the prompt and generated
tokens it processed (with the time a generated token took in its slot, which the machine's load
lengthens, and so does decoding more slots together). A client-side overhead of evalkit would
show as fewer requests in flight and longer waits; different work as different tokens and cut
replies. With 4 rounds each of 32 items the ratio still moves from run to run with the number
of cut replies in the rounds and the machine's load (docs/pages/benchmarks.md); more
``--rounds`` narrow it.

Run: ``python -m tests.benchmarks.bench_llama_server [--items N] [--rounds R]``.
Target: evalkit's requests/s ≥ 0.95 of the client's.
"""

from __future__ import annotations

import argparse
import heapq
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import openai

from evalkit import Judge, get_scorer, run_evals
from tests.benchmarks._llama_traffic import (
    RecordingProxy,
    Sent,
    SlotUse,
    depends_on,
    item_tokens,
    slot_use,
)
from tests.compat._servers import KEY_ENV, SLOTS, Installed, RunningServer, running_server

DATASET = Path(__file__).resolve().parents[2] / "datasets" / "qa_v1.parquet"
RUBRIC = "The answer is correct and directly answers the question."
TARGET_RATIO = 0.95
MAX_TOKENS = 256
TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True)
class Round:
    who: str
    seconds: float
    requests: int  # replies received
    completion_tokens: int
    failed: int  # items (evalkit) or requests (client) that failed
    in_flight_s: float  # the requests' times added up, from sending to the reply read
    items: dict[str, tuple[int, ...]]  # completion tokens of each item's attempts
    server: SlotUse = field(default_factory=SlotUse)
    cpu_s: float = 0.0  # this process's CPU time in the round (evalkit's, or the client's)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    @property
    def tokens_rate(self) -> float:
        return self.completion_tokens / self.seconds

    @property
    def cut(self) -> int:
        """Replies that stopped at the token cap (the tiny model repeating itself)."""
        return sum(t >= MAX_TOKENS for tokens in self.items.values() for t in tokens)


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


async def evalkit_run(model: str, base_url: str, items: int) -> Round:
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
    failed = 0
    in_flight_s = 0.0
    by_item: dict[str, tuple[int, ...]] = {}
    for outcome in result.results_for(scorer.id):
        failed += outcome.status != "success"
        for record in (outcome.result.judge if outcome.result else {}).values():
            for execution in record.executions:
                replied = [a for a in execution.attempts if a.status != "failed"]
                by_item[execution.prompt] = tuple(
                    (a.usage.output_tokens or 0) if a.usage else 0 for a in replied
                )
                in_flight_s += sum(a.request_ms or 0.0 for a in execution.attempts) / 1000
    requests = sum(len(tokens) for tokens in by_item.values())
    tokens = sum(sum(tokens) for tokens in by_item.values())
    return Round("evalkit", seconds, requests, tokens, failed, in_flight_s, by_item)


async def client_run(server: RunningServer, sent: list[Sent]) -> Round:
    """Replay ``sent``, 4 in flight: the next request is always the earliest (in the order
    evalkit sent them) that may go, and a re-ask may go once its item's previous reply is in;
    a re-ask still waiting never holds back the requests after it."""
    bodies = [s.body for s in sent]
    ready = [i for i, parent in enumerate(depends_on(bodies)) if parent is None]
    children: dict[int, list[int]] = {}
    for index, parent in enumerate(depends_on(bodies)):
        if parent is not None:
            children.setdefault(parent, []).append(index)
    heapq.heapify(ready)
    more = anyio.Event()
    replies = [0] * len(bodies)
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key=server.api_key, timeout=TIMEOUT_S)
    limiter = anyio.CapacityLimiter(SLOTS)
    failed = 0
    in_flight_s = 0.0

    async def one(index: int, permit: object) -> None:
        nonlocal failed, in_flight_s
        fields = dict(bodies[index])
        sent_at = time.perf_counter()
        try:
            reply = await client.chat.completions.create(
                model=fields.pop("model"), messages=fields.pop("messages"), extra_body=fields
            )
        except openai.APIError:
            failed += 1
        else:
            replies[index] = reply.usage.completion_tokens if reply.usage else 0
        finally:
            in_flight_s += time.perf_counter() - sent_at
            for child in children.get(index, []):
                heapq.heappush(ready, child)
                more.set()
            limiter.release_on_behalf_of(permit)

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in bodies:
            permit = object()
            await limiter.acquire_on_behalf_of(permit)
            while not ready:
                more = anyio.Event()
                await more.wait()
            group.start_soon(one, heapq.heappop(ready), permit)
    seconds = time.perf_counter() - start
    await client.close()
    replayed = [Sent(s.body, tokens, 200) for s, tokens in zip(sent, replies, strict=True)]
    return Round(
        "client",
        seconds,
        len(bodies) - failed,
        sum(replies),
        failed,
        in_flight_s,
        item_tokens(replayed),
    )


def with_server_log(done: Round, server: RunningServer, offset: int) -> Round:
    with server.log.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    return replace(done, server=slot_use(text, SLOTS))


def differing(done: Round, captured: dict[str, tuple[int, ...]]) -> int:
    """Items whose attempts (count or completion tokens) differ from the capture's."""
    return sum(done.items.get(prompt) != tokens for prompt, tokens in captured.items())


async def measure(items: int, rounds: int) -> tuple[list[Sent], list[Round]]:
    installed = Installed.find()
    with (
        tempfile.TemporaryDirectory(prefix="evalkit-bench-llama-") as folder,
        running_server("llama-server", installed, Path(folder)) as server,
    ):
        os.environ[KEY_ENV] = server.api_key
        async with RecordingProxy(server.base_url.removesuffix("/v1")) as proxy:
            await evalkit_run(server.model, proxy.base_url, items)
        sent = proxy.sent
        captured = item_tokens(sent)
        print(
            f"  capture (evalkit through the pass-through): {len(sent)} requests for "
            f"{len(captured)} items ({sum(len(t) > 1 for t in captured.values())} re-asked), "
            f"{sum(s.completion_tokens for s in sent)} completion tokens, "
            f"{sum(s.completion_tokens >= MAX_TOKENS for s in sent)} cut at {MAX_TOKENS}, "
            f"{sum(s.status != 200 for s in sent)} non-200 replies",
            flush=True,
        )
        warm = await client_run(server, sent)
        print(
            f"  warm-up client: {warm.requests} requests, {warm.completion_tokens} completion "
            f"tokens, {warm.cut} cut at {MAX_TOKENS}, {differing(warm, captured)} items with other "
            "token counts than captured",
            flush=True,
        )
        done: list[Round] = []
        for index in range(2 * rounds):
            offset = server.log.stat().st_size
            cpu = time.process_time()
            if index % 4 in (0, 3):  # evalkit, client, client, evalkit, ...
                last = await evalkit_run(server.model, server.base_url, items)
            else:
                last = await client_run(server, sent)
            last = replace(last, cpu_s=time.process_time() - cpu)
            await anyio.sleep(0.2)  # the server's last log lines
            done.append(last := with_server_log(last, server, offset))
            print(
                f"  round {index + 1} {last.who:7}: {last.requests} requests in "
                f"{last.seconds:.1f} s = {last.rate:.2f} requests/s, {last.completion_tokens} "
                f"completion tokens = {last.tokens_rate:.1f}/s, {last.cut} cut at {MAX_TOKENS}, "
                f"{differing(last, captured)} items differ from the capture, {last.failed} "
                f"failed; in flight {last.in_flight_s / last.seconds:.2f} of {SLOTS} on average, "
                f"{last.cpu_s:.2f} CPU s"
                f"\n      {last.server.describe(SLOTS, last.seconds)}",
                flush=True,
            )
        return sent, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of each (default 4)")
    args = parser.parse_args()
    load = os.getloadavg()
    sent, done = anyio.run(measure, args.items, args.rounds)
    after = os.getloadavg()
    ours = [r for r in done if r.who == "evalkit"]
    theirs = [r for r in done if r.who == "client"]

    def total(rounds: list[Round]) -> tuple[float, float]:
        seconds = sum(r.seconds for r in rounds)
        requests = sum(r.requests for r in rounds)
        return requests / seconds, sum(r.completion_tokens for r in rounds) / seconds

    def each(rounds: list[Round]) -> str:
        per_round = ", ".join(f"{r.requests}/{r.completion_tokens}/{r.cut}" for r in rounds)
        seconds = sum(r.seconds for r in rounds)
        in_flight = sum(r.in_flight_s for r in rounds) / seconds
        busy = sum(r.server.busy_s for r in rounds) / (SLOTS * seconds)
        tasks = sum(r.server.tasks for r in rounds)
        generated = sum(r.server.generated_tokens for r in rounds)
        return (
            f"rounds {', '.join(f'{r.seconds:.1f}' for r in rounds)} s, requests/completion "
            f"tokens/cut at {MAX_TOKENS} {per_round} (server log: {tasks} tasks, {generated} "
            f"tokens), {in_flight:.2f} requests in flight on average, slots busy {busy:.1%}, "
            f"{sum(r.cpu_s for r in rounds):.2f} CPU s"
        )

    rate, tokens_rate = total(ours)
    client_rate, client_tokens_rate = total(theirs)
    print(
        f"L-S llama-server judge throughput ({SLOTS} slots, {args.items} llm_rubric items, "
        f"{args.rounds} rounds each, ABBA, the client replaying the {len(sent)} requests evalkit "
        f"sent in the capture): evalkit {rate:.2f} requests/s, {tokens_rate:.1f} completion "
        f"tokens/s; official client {client_rate:.2f} requests/s, {client_tokens_rate:.1f} "
        f"tokens/s; ratio {rate / client_rate:.3f} (target ≥ {TARGET_RATIO}); tokens/s ratio "
        f"{tokens_rate / client_tokens_rate:.3f}; evalkit {each(ours)}; client {each(theirs)}; "
        f"failed evalkit {sum(r.failed for r in ours)}, client {sum(r.failed for r in theirs)}; "
        f"load average before {load[0]:.2f}, after {after[0]:.2f}"
    )


if __name__ == "__main__":
    main()
