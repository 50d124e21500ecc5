"""D1 and D2 — dataset sources: CSV and JSON Lines read speed, and a streaming run over a CSV.

- ``read`` (D1): 1,000,000 rows of short QA text (``id``, ``input``, ``groundTruth``,
  ``output``, ``category``) as CSV and as JSON Lines. Timed twice per format: the source alone
  (``Source.batches``: DuckDB parsing, Arrow to Python), and the whole dataset (items with ids
  and the fingerprint, what a run reads). Target: the source reads >= 200,000 rows/s.
- ``stream`` (D2): B4's streaming run (``keep_results=False``, three function scorers, every
  row stored in DuckDB) over the same rows as a 1,000,000-row CSV. Target: peak RSS <= 600 MB,
  like the Parquet run.

Each measurement runs in a fresh subprocess so its peak RSS is its own.

Run: ``python -m tests.benchmarks.bench_sources [--mode read|stream|both] [--rows N]``.
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

TARGET_ROWS_PER_S = 200_000
TARGET_RSS_MB = 600
DEFAULT_ROWS = 1_000_000


def write_files(folder: Path, rows: int) -> dict[str, Path]:
    """The QA rows as CSV and JSON Lines, written by DuckDB (quick, and small in memory)."""
    import duckdb

    words = "['machine','learning','model','data','training','answer','question','system']"
    table = f"""
        select 'item-' || i as id,
               'Question ' || i || ': what is the ' || {words}[i % 8 + 1] || ' '
                 || {words}[(i * 7) % 8 + 1] || ' of the ' || {words}[(i * 3) % 8 + 1] || '?'
                 as input,
               {words}[(i * 7) % 8 + 1] || ' ' || {words}[(i * 5) % 8 + 1] as groundTruth,
               case when i % 4 = 0 then 'The answer is ' || {words}[i % 8 + 1] || '.'
                    else {words}[(i * 7) % 8 + 1] || ' ' || {words}[(i * 5) % 8 + 1] end
                 as output,
               ['geo', 'math', 'code'][i % 3 + 1] as category
        from range({rows}) t(i)
    """
    paths = {"csv": folder / "qa.csv", "jsonl": folder / "qa.jsonl"}
    with duckdb.connect() as con:
        con.execute(f"copy ({table}) to '{paths['csv']}' (header, delimiter ',')")
        con.execute(f"copy ({table}) to '{paths['jsonl']}' (format json)")
    return paths


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_read(path: Path, what: str) -> dict[str, Any]:
    """Read every row of ``path`` once: the source alone, or as dataset items."""
    from evalkit.dataset import load_dataset, open_source
    from evalkit.dataset._dataset import DEFAULT_BATCH_SIZE

    start = time.perf_counter()
    source = open_source(path)
    rows = 0
    if what == "source":
        for _, _, count in source.batches(source.column_names(), DEFAULT_BATCH_SIZE):
            rows += count
    else:
        reader = load_dataset(source).batches()
        for batch in reader:
            rows += len(batch)
        assert reader.fingerprint is not None
    elapsed = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "format": path.suffix.lstrip("."),
        "what": what,
        "rows": rows,
        "seconds": elapsed,
        "rows_per_s": rows / elapsed,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": _rss_mb(),
    }


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"benchmark child failed:\n{done.stderr[-4000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def report_read(figures: dict[str, Any]) -> str:
    rate = figures["rows_per_s"]
    label = "source" if figures["what"] == "source" else "dataset items (ids + fingerprint)"
    headline = "D1" if figures["what"] == "source" else "  "
    return (
        f"{headline} {figures['format']} {label}: {figures['rows']:,} rows in "
        f"{figures['seconds']:.2f} s = {rate:,.0f} rows/s "
        f"({rate / TARGET_ROWS_PER_S:.2f}x the {TARGET_ROWS_PER_S:,} target; process CPU "
        f"{figures['cpu_s']:.1f} s, peak RSS {figures['peak_rss_mb']:,.0f} MB)"
    )


def report_stream(figures: dict[str, Any]) -> str:
    peak = figures["peak_rss_mb"]
    return (
        f"D2 run_evals [stream] over CSV: {figures['items']:,} items x 3 scorers in "
        f"{figures['seconds']:.2f} s = {figures['runs_per_s']:,.0f} runs/s; peak RSS "
        f"{peak:,.0f} MB ({peak / TARGET_RSS_MB:.2f}x the {TARGET_RSS_MB} MB ceiling; lower is "
        f"better), status {figures['status']}, {figures['stored_scores']:,} rows in scores\n"
        f"    RSS every 100,000 items (MB): {figures['rss_samples_mb']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["read", "stream", "both"], default="both")
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--child", nargs=2, metavar=("PATH", "WHAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_read(Path(args.child[0]), args.child[1])))
        return
    with tempfile.TemporaryDirectory(prefix="evalkit-bench-") as tmp:
        paths = write_files(Path(tmp), args.rows)
        print(f"   load average before: {os.getloadavg()[0]:.1f}", flush=True)
        if args.mode in ("read", "both"):
            for path in paths.values():
                for what in ("source", "items"):
                    figures = _child(["tests.benchmarks.bench_sources", "--child", str(path), what])
                    print(report_read(figures), flush=True)
        if args.mode in ("stream", "both"):
            store = Path(tmp) / "stream.duckdb"
            figures = _child(
                ["tests.benchmarks.bench_run", "--child", "stream", str(paths["csv"]), str(store)]
            )
            print(report_stream(figures), flush=True)


if __name__ == "__main__":
    main()
