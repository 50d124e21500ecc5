"""B2 and B4 — run_evals end to end: a Parquet dataset through three function scorers into DuckDB.

Two modes, each measured in a fresh subprocess so its peak RSS is its own:

- ``store``: 100,000 items x 3 function scorers from a Parquet file to a DuckDB store, every
  result kept in memory. Targets: >= 20,000 scorer runs/s and peak RSS <= 1.5 GB.
- ``stream``: a 1,000,000-row dataset streamed with ``keep_results=False`` (summaries only),
  still writing every row to the store. Target: peak RSS <= 600 MB (flat memory).

Run: ``python -m tests.benchmarks.bench_run [--mode store|stream|both] [--rows N]
[--no-store]`` (``--no-store`` keeps results in memory only, to separate DuckDB's share).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_RUNS_PER_S = 20_000
TARGET_RSS_MB = {"store": 1536, "stream": 600}
DEFAULT_ROWS = {"store": 100_000, "stream": 1_000_000}

_WORDS = [
    "machine",
    "learning",
    "model",
    "data",
    "training",
    "answer",
    "question",
    "system",
    "user",
    "context",
    "result",
    "value",
    "network",
    "language",
    "token",
    "vector",
    "search",
    "index",
    "score",
    "quality",
    "metric",
    "report",
]


def write_dataset(path: Path, rows: int) -> None:
    """A QA-shaped Parquet file written in chunks (so generating it stays small too)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [("input", pa.string()), ("groundTruth", pa.string()), ("output", pa.string())]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, 50_000):
            stop = min(start + 50_000, rows)
            inputs, truths, outputs = [], [], []
            for i in range(start, stop):
                words = [_WORDS[(i * 7 + k) % len(_WORDS)] for k in range(8)]
                truth = " ".join(words[:4])
                inputs.append(f"Question {i}: what is the {' '.join(words)}?")
                truths.append(truth)
                outputs.append(truth if i % 4 else f"The answer is {' '.join(words[2:7])}.")
            writer.write_table(
                pa.table({"input": inputs, "groundTruth": truths, "output": outputs}, schema=schema)
            )


def build_scorers() -> list[Any]:
    from evalkit import create_scorer

    exact = create_scorer("Exact Match").generate_score(
        lambda run: 1.0 if run.output == run.ground_truth else 0.0
    )
    contains = (
        create_scorer("Contains")
        .generate_score(lambda run: 1.0 if run.ground_truth in run.output else 0.0)
        .generate_reason(lambda score: "found" if score else "missing")
    )
    quality = (
        create_scorer("Quality")
        .preprocess(lambda run: {"word_count": len(run.output.split())})
        .analyze(lambda results: {"long": results.preprocess_step_result["word_count"] > 3})
        .generate_score(lambda results: 1.0 if results.analyze_step_result["long"] else 0.0)
        .generate_reason(lambda score: f"score {score}")
    )
    return [exact, contains, quality]


def _rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(mode: str, dataset: Path, store: Path | None) -> dict[str, Any]:
    """Run one mode in this process and return its figures."""
    import anyio

    from evalkit import run_evals
    from evalkit.store import connection

    scorers = build_scorers()
    keep = mode == "store"
    samples: list[float] = []

    def sample(result: Any) -> None:
        if result.item.index % 100_000 == 99_999:
            samples.append(round(_current_rss_mb()))

    start = time.perf_counter()
    result = anyio.run(
        lambda: run_evals(
            str(dataset),
            scorers,
            store=str(store) if store else None,
            progress=False,
            concurrency=8,
            keep_results=keep,
            on_item_complete=None if keep else sample,
        )
    )
    elapsed = time.perf_counter() - start
    stored = None
    if store is not None:
        with connection(store, read_only=True) as con:
            stored = con.execute("SELECT count(*) FROM scores").fetchone()
    runs = result.summary.processed * len(scorers)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "mode": mode,
        "items": result.summary.processed,
        "scorer_runs": runs,
        "seconds": elapsed,
        "runs_per_s": runs / elapsed,
        "peak_rss_mb": _rss_mb(),
        "rss_samples_mb": samples,
        "status": result.status,
        "stored_scores": stored[0] if stored else None,
        "kept_items": len(result.items),
    }


def report(figures: dict[str, Any]) -> str:
    mode = figures["mode"]
    rss_target = TARGET_RSS_MB[mode]
    count = figures["stored_scores"]
    stored = "no store" if count is None else f"{count:,} rows in scores"
    lines = [
        f"{'B2' if mode == 'store' else 'B4'} run_evals [{mode}]: "
        f"{figures['items']:,} items x 3 scorers = "
        f"{figures['scorer_runs']:,} scorer runs in {figures['seconds']:.2f} s = "
        f"{figures['runs_per_s']:,.0f} runs/s "
        f"({figures['runs_per_s'] / TARGET_RUNS_PER_S:.2f}x the {TARGET_RUNS_PER_S:,} target; "
        f"process CPU {figures['cpu_s']:.1f} s)",
        f"    peak RSS {figures['peak_rss_mb']:,.0f} MB "
        f"({figures['peak_rss_mb'] / rss_target:.2f}x the {rss_target:,} MB ceiling; lower is "
        f"better), status {figures['status']}, {stored}, "
        f"{figures['kept_items']:,} items kept in memory",
    ]
    if figures["rss_samples_mb"]:
        lines.append(f"    RSS every 100,000 items (MB): {figures['rss_samples_mb']}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["store", "stream", "both"], default="both")
    parser.add_argument("--rows", type=int, default=None, help="override the row count")
    parser.add_argument("--no-store", action="store_true", help="keep results in memory only")
    parser.add_argument(
        "--child", nargs=3, metavar=("MODE", "DATASET", "STORE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        mode, dataset, store = args.child
        print(json.dumps(measure(mode, Path(dataset), Path(store) if store != "-" else None)))
        return
    modes = ["store", "stream"] if args.mode == "both" else [args.mode]
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-") as tmp:
        for mode in modes:
            rows = args.rows or DEFAULT_ROWS[mode]
            dataset = Path(tmp) / f"{mode}-{rows}.parquet"
            store = "-" if args.no_store else str(Path(tmp) / f"{mode}.duckdb")
            write_dataset(dataset, rows)
            child = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tests.benchmarks.bench_run",
                    "--child",
                    mode,
                    str(dataset),
                    store,
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if child.returncode != 0:
                sys.exit(f"{mode} benchmark failed:\n{child.stderr}")
            print(report(json.loads(child.stdout.strip().splitlines()[-1])), flush=True)


if __name__ == "__main__":
    main()
