"""Sharded runs — a CPU-heavy function scorer over 200,000 rows: ``process`` and ``ray``
executors against ``local`` (one process). Target: each >= 1.6x local on 2 cores.

The dataset is one Parquet file of 20 row groups (20 shards); every run writes its rows to a
DuckDB store. Two Ray figures: ``ray`` starts (and stops) its own local cluster inside the timed
call, as ``evalkit run --executor ray`` on a laptop does; ``ray-up`` runs on a cluster that is
already up (``ray.init`` made before the timer, as a user with a Ray cluster has one), which
measures the executor rather than Ray's boot. The process pool's start (spawning and importing
its workers) is always inside the timed call.

Run: ``python -m tests.benchmarks.bench_shards [--rows N] [--workers N] [--executors ...]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TARGET_SPEEDUP = 1.6


def heavy(run: Any) -> float:
    """A pure-Python score costing some tens of microseconds: character bigram overlap,
    recomputed a few times as an embedding or BLEU scorer would spend its CPU."""
    a, b = str(run.output), str(run.ground_truth)
    score = 0.0
    for shift in range(6):
        left = {a[i : i + 2] + str(shift) for i in range(len(a) - 1)}
        right = {b[i : i + 2] + str(shift) for i in range(len(b) - 1)}
        score += len(left & right) / max(1, len(left | right))
    return score / 6


def write_dataset(path: Path, rows: int) -> None:
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while"]
    outputs = [" ".join(words[(i + k) % len(words)] for k in range(12)) for i in range(rows)]
    truths = [" ".join(words[(i * 7 + k) % len(words)] for k in range(12)) for i in range(rows)]
    table = pa.table(
        {"input": [f"q{i}" for i in range(rows)], "output": outputs, "groundTruth": truths}
    )
    pq.write_table(table, path, row_group_size=max(1, rows // 20))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--executors",
        nargs="+",
        default=["local", "process", "ray", "ray-up"],
        choices=["local", "process", "ray", "ray-up"],
    )
    args = parser.parse_args()

    from evalkit import create_scorer, run_evals_sync

    scorer = create_scorer("Heavy", id="heavy").generate_score(heavy)
    with tempfile.TemporaryDirectory(prefix="ekb") as folder:
        data = Path(folder) / "data.parquet"
        write_dataset(data, args.rows)
        print(f"{args.rows:,} rows, 20 row groups, {os.cpu_count()} CPUs, workers={args.workers}")
        seconds: dict[str, float] = {}
        means: dict[str, float | None] = {}
        for executor in args.executors:
            options: dict[str, Any] = {}
            if executor != "local":
                options = {"executor": executor.removesuffix("-up"), "workers": args.workers}
            if executor == "ray-up":
                from evalkit.run._executors import start_local_ray

                start_local_ray(args.workers)
            load = os.getloadavg()[0]
            start = time.perf_counter()
            result = run_evals_sync(
                str(data), [scorer], store=Path(folder) / f"{executor}.duckdb",
                progress=False, keep_results=False, **options,
            )  # fmt: skip
            seconds[executor] = time.perf_counter() - start
            if executor == "ray-up":
                import ray

                ray.shutdown()
            means[executor] = result.summary.scorers["heavy"].mean
            assert result.summary.processed == args.rows, result.summary
            print(
                f"{executor:>8}: {seconds[executor]:6.2f} s  "
                f"{args.rows / seconds[executor]:9,.0f} rows/s  mean={means[executor]:.6f}"
                f"  (load before: {load:.1f})"
            )
        if "local" in seconds:
            for executor, took in seconds.items():
                if executor == "local":
                    continue
                speedup = seconds["local"] / took
                verdict = "ok" if speedup >= TARGET_SPEEDUP else "BELOW TARGET"
                print(
                    f"{executor:>8}: {speedup:.2f}x local (target >= {TARGET_SPEEDUP}x, "
                    f"{speedup / TARGET_SPEEDUP:.2f} of target) {verdict}"
                )


if __name__ == "__main__":
    main()
