"""The benchmark suite: ``python -m tests.benchmarks`` runs B1 to B6, X1, D1, D2, DL1 to DL3,
Q1 and Q2 and prints their figures.

Each benchmark runs in its own subprocess (so peak RSS is its own), one after another so they
do not compete for the two cores; the lines each prints are shown as they come, then the
headline line of every benchmark (the one starting with its id) is repeated as a table.

- B1 scorer overhead (``bench_scorer``), B2/B4 run_evals end to end and streaming
  (``bench_run``), B3/B5 judge throughput and cached rerun (``bench_judge``, which starts the
  shipped test server in its own process), B6 the score store (``bench_store``), X1 hostile
  experiment files (``bench_experiment_file``), D1/D2 dataset sources: CSV and JSON Lines read
  speed, a streaming run over a CSV (``bench_sources``), DL1-DL3 a DuckLake store: writes, 4
  shard jobs at once, ``scorer_summary`` over 10 million rows (``bench_ducklake``, which needs
  the ``ducklake`` extra), Q1/Q2 the quickstart's and ``evalkit --help``'s wall time
  (``bench_start``).

``--quick`` runs each with a tenth of the work, to check that the suite works.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time

SUITE: tuple[tuple[str, list[str], list[str]], ...] = (
    ("tests.benchmarks.bench_scorer", [], ["--runs", "10000"]),
    ("tests.benchmarks.bench_run", [], ["--rows", "10000"]),
    ("tests.benchmarks.bench_judge", [], ["--runs", "300"]),
    ("tests.benchmarks.bench_store", [], ["--rows", "100000"]),
    ("tests.benchmarks.bench_experiment_file", [], ["--size", "100000"]),
    ("tests.benchmarks.bench_sources", [], ["--rows", "100000"]),
    (
        "tests.benchmarks.bench_ducklake",
        [],
        ["--rows", "100000", "--summary-rows", "1000000"],
    ),
    ("tests.benchmarks.bench_start", [], ["--runs", "1"]),
)
_HEADLINE = re.compile(r"^(B[1-6]|X1|D[12]|DL[1-3]|Q[12])\b")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a tenth of the work each")
    args = parser.parse_args()
    headlines: list[str] = []
    failed: list[str] = []
    for module, full, quick in SUITE:
        print(f"== {module}", flush=True)
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", module, *(quick if args.quick else full)],
            capture_output=True,
            text=True,
            check=False,
        )
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr[-2000:] if proc.returncode else "")
        print(f"   ({time.perf_counter() - started:.0f} s)", flush=True)
        if proc.returncode:
            failed.append(module)
        headlines += [line for line in proc.stdout.splitlines() if _HEADLINE.match(line)]
    print("\nSummary")
    for line in sorted(headlines, key=lambda line: line[:2]):
        print(f"  {line}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
