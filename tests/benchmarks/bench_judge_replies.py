"""J-cap — judge replies of 10 MB: the memory a run holds while its judge calls read them.

The issue's case (issue 30 item 11): 12 judge calls at once (``run_evals``, concurrency 12, one
LLM-judged scorer, no judge cache, a DuckDB store in a temporary folder), each answered with a
body of 10 MB; before the reply cap the run's peak RSS grew by hundreds of MB (2.4 GB in the
issue's run). Each case runs the client in a process of its own, after a first run of 12 small
replies (so what a run loads is loaded), and reports how much the peak RSS rose over the
second run (``/proc/self/clear_refs`` resets the peak):

- ``content-length``: the shipped test server in its own process (``--rules``: a 10 MB reply)
  sends each reply with its ``Content-Length``: a capped client reads the first bytes only.
- ``chunked``: the server (in the client's process: it sends the body in 64 KiB parts as it
  makes it, ``Fault.huge_body``) sends it without a length: the client reads up to the cap.
- ``small``: the same run answered with small replies, the floor of the figures.

Run: ``python -m tests.benchmarks.bench_judge_replies [--size BYTES] [--calls N] [--modes
small,content-length]`` (``chunked`` needs ``Fault.huge_body``, which came with the cap). Target: a
run's peak RSS rises by less than ``calls`` x 2 x ``max_reply_bytes`` (4 MiB by default) over
the small replies' run, whatever the replies' size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from evalkit import Judge, PromptStep, create_scorer, run_evals
from evalkit.testing import FakeOpenAIServer, Fault, Rule, server_process

MiB = 1024 * 1024
_ROOT = str(Path(__file__).resolve().parents[2])


def _rss(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


async def _client(url: str, answer: str, calls: int) -> dict[str, Any]:
    judge = Judge("m", base_url=url, api_key_env="EVALKIT_BENCH_KEY", max_retries=0, cache=False)
    scorer = create_scorer("Quality", judge=judge).generate_score(
        PromptStep("score", lambda run: f"Rate the answer: {run.output}")
    )
    small = [{"id": f"q{i}", "input": "q", "output": "small"} for i in range(calls)]
    await run_evals(small, [scorer], concurrency=calls, progress=False)
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")  # the peak RSS from here on
    before = _rss("VmRSS:")
    started = time.perf_counter()
    rows = [{"id": f"q{i}", "input": "q", "output": answer} for i in range(calls)]
    result = await run_evals(rows, [scorer], concurrency=calls, progress=False)
    codes = sorted(
        {
            str((o.error.data or {}).get("cause", {}).get("code")) if o.error else "ok"
            for item in result.items
            for o in item.outcomes
        }
    )
    return {
        "rose": _rss("VmHWM:") - before,
        "seconds": time.perf_counter() - started,
        "codes": codes,
    }


async def _chunked(size: int, calls: int) -> dict[str, Any]:
    async with FakeOpenAIServer() as server:
        server.add_rule(Rule("small", reply={"score": 1}))
        server.add_rule(Rule(fault=Fault.huge_body(size)))
        return await _client(server.base_url, "a", calls)


def client_main(mode: str, url: str, size: int, calls: int) -> None:
    if mode == "chunked":
        found = asyncio.run(_chunked(size, calls))
    else:
        found = asyncio.run(_client(url, "small" if mode == "small" else "a", calls))
    print(json.dumps(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000_000, help="bytes of each reply")
    parser.add_argument("--calls", type=int, default=12, help="judge calls at once")
    parser.add_argument(
        "--modes", default="small,content-length,chunked", help="the cases, comma-separated"
    )
    parser.add_argument("--client", nargs=2, metavar=("MODE", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        client_main(args.client[0], args.client[1], args.size, args.calls)
        return
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        rules = Path(folder) / "rules.json"
        huge = {"reply": "a" * args.size}
        rules.write_text(json.dumps([{"match": "small", "reply": {"score": 1}}, huge]), "utf-8")
        with server_process("--rules", str(rules)) as url:
            for mode in ["small", *[m for m in args.modes.split(",") if m != "small"]]:
                done = subprocess.run(
                    [sys.executable, "-m", "tests.benchmarks.bench_judge_replies",
                     "--size", str(args.size), "--calls", str(args.calls),
                     "--client", mode, url],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "EVALKIT_BENCH_KEY": "k", "PYTHONPATH": _ROOT},
                    cwd=folder,  # whatever a run leaves (a judge cache) stays in the folder
                    check=False,
                )  # fmt: skip
                if done.returncode:
                    raise SystemExit(f"{mode}: {done.stderr[-3000:]}")
                results[mode] = json.loads(done.stdout.splitlines()[-1])
    floor = results["small"]["rose"]
    for mode, found in results.items():
        print(
            f"  {mode:<15} peak RSS rose {found['rose'] / MiB:7.1f} MiB"
            f" in {found['seconds']:5.2f} s; outcomes {found['codes']}"
        )
    worst = max(f["rose"] for f in results.values()) - floor
    print(
        f"J-cap: {args.calls} replies of {args.size / 1e6:.0f} MB at once raise the run's peak"
        f" RSS by at most {worst / MiB:.0f} MiB over small replies ({floor / MiB:.0f} MiB);"
        f" load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
