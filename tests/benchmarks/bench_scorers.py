"""L1 — prebuilt code scorers: cost of one run of each on a typical question-answering row.

Run: ``python -m tests.benchmarks.bench_scorers [--runs N]``. Each scorer is built once (as a
run would) and run N times in one event loop on a ~45-word answer against a ~20-word ground
truth (JSON and tool-call scorers get JSON outputs of similar size). Targets on the 2-core CI
machine: ≤ 200 µs per run (≥ 5,000 runs/s) for the matching, overlap, JSON and tool scorers;
≤ 1 ms for the library-bound ones (bleu, chrf, rouge_l, textual_difference, tone_consistency:
sacrebleu's chrF alone is ~300 µs on this row), so even those score 100,000 rows in minutes.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import anyio

from evalkit.scorers import get_scorer, list_scorers

TARGET_US_PER_RUN = 200.0
LIBRARY_BOUND_TARGET_US = 1_000.0
LIBRARY_BOUND = {"bleu", "chrf", "rouge_l", "textual_difference", "tone_consistency"}

ANSWER = (
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris. It is 330 metres "
    "tall, was the tallest man-made structure in the world for 41 years, and remains one of "
    "the most visited monuments, with about 7 million visitors a year."
)
TRUTH = "The Eiffel Tower, finished in 1889 in Paris, is 330 metres tall."
DOCUMENT = {"answer": {"city": "Paris", "height_m": 330, "year": 1889}, "sources": [1, 2, 3]}
TOOL_OUTPUT = {
    "role": "assistant",
    "tool_calls": [
        {"type": "function", "function": {"name": name, "arguments": "{}"}}
        for name in ("search", "fetch", "summarise")
    ],
}

# Rows and parameters for the scorers whose default row above would not exercise them.
SPECIAL: dict[str, tuple[dict[str, Any], Any, Any]] = {
    "numeric_match": ({}, ANSWER, "330"),
    "json_valid": ({}, json.dumps(DOCUMENT), None),
    "json_match": ({"path": "$.answer", "mode": "subset"}, json.dumps(DOCUMENT), {"city": "Paris"}),
    "regex_match": ({"pattern": r"\b1[0-9]{3}\b"}, ANSWER, None),
    "tool_call_accuracy": ({"expected_tool_order": ["search", "summarise"]}, TOOL_OUTPUT, None),
}


async def measure(name: str, runs: int) -> float:
    params, output, truth = SPECIAL.get(name, ({}, ANSWER, TRUTH))
    scorer = get_scorer(name, **params)
    await scorer.run(input="Tell me about the Eiffel Tower.", output=output, ground_truth=truth)
    start = time.perf_counter()
    for _ in range(runs):
        await scorer.run(input="Tell me about the Eiffel Tower.", output=output, ground_truth=truth)
    return (time.perf_counter() - start) / runs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5_000)
    args = parser.parse_args()
    worst_ratio, worst_name = float("inf"), ""
    for info in list_scorers(kind="code"):
        micros = anyio.run(measure, info.name, args.runs)
        target = LIBRARY_BOUND_TARGET_US if info.name in LIBRARY_BOUND else TARGET_US_PER_RUN
        ratio = target / micros
        if ratio < worst_ratio:
            worst_ratio, worst_name = ratio, info.name
        print(
            f"L1 {info.name:<20} {micros:8.1f} µs/run  {1e6 / micros:10,.0f} runs/s  "
            f"({ratio:5.2f}x the {target:,.0f} µs target)"
        )
    print(f"L1 tightest: {worst_name} at {worst_ratio:.2f}x its target")


if __name__ == "__main__":
    main()
