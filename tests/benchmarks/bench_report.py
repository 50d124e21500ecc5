"""B-report — the reports of a 100,000-item run compared with its baseline.

Run: ``python -m tests.benchmarks.bench_report [--items N]``. Two runs of N items (three
code scorers, ten categories declared as slices) go into a store; then what ``evalkit run``
does after the run is timed: the regressed pairs read from the store, the report model, and the
HTML, Markdown and JUnit files written, with the per-slice comparison (its statistics reuse
the scores read for the gate's whole-run comparison, as in ``evalkit run``). Target: at most
5 s for all of it, and an HTML file under 5 MB (item lists are capped; ``evalkit diff``/``evalkit
view`` list the rest). The parts are printed apart too, and the gate's whole-run comparison,
which is not the report's.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import run_evals_sync
from evalkit.compare import compare_experiments, stored_slices
from evalkit.experiment_file._judge_run import explain_from_store
from evalkit.report import build_report, write_reports
from evalkit.scorers import get_scorer
from evalkit.store import read_item_scores

TARGET_SECONDS = 5.0
TARGET_BYTES = 5_000_000


def dataset(items: int, version: int) -> pd.DataFrame:
    rng = np.random.default_rng(version)
    cats = [f"cat{i % 10}" for i in range(items)]
    truth = [f"answer {i}" for i in range(items)]
    out = [t if rng.uniform() < 0.8 else "something else entirely" for t in truth]
    if version == 2:  # cat3 loses a third of its answers
        out = [o if c != "cat3" or rng.uniform() < 0.66 else "I don't know" for o, c in
               zip(out, cats, strict=True)]  # fmt: skip
    return pd.DataFrame({
        "id": [f"q{i:07d}" for i in range(items)], "input": [f"question {i}" for i in range(items)],
        "groundTruth": truth, "output": out, "metadata": [{"category": c} for c in cats],
    })  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--profile", action="store_true", help="print the report's hot spots")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "evalkit.duckdb"
        scorers = [get_scorer("exact_match", id="exact"), get_scorer("contains", id="contains"),
                   get_scorer("token_f1", id="token_f1")]  # fmt: skip
        runs = []
        for version in (1, 2):
            started = time.perf_counter()
            runs.append(run_evals_sync(dataset(args.items, version), scorers, store=store,
                                       experiment=f"v{version}", progress=False,
                                       slices=["category"]))  # fmt: skip
            print(f"  run v{version}: {time.perf_counter() - started:.1f} s")
        base, cand = runs
        started = time.perf_counter()
        scores = (read_item_scores(store, base.experiment_id),
                  read_item_scores(store, cand.experiment_id))  # fmt: skip
        comparison = compare_experiments(*scores, max_drop=0.02)
        compared = time.perf_counter() - started
        profile = cProfile.Profile() if args.profile else None
        if profile is not None:
            profile.enable()
        started, cpu = time.perf_counter(), time.process_time()
        # As `evalkit run` does: the scores read for the gate's comparison are reused.
        slices = stored_slices(store, base.experiment_id, cand.experiment_id, cand.slices,
                               directions={}, max_drop=0.02, confidence=0.95, resamples=10_000,
                               overall=comparison, scores=scores)  # fmt: skip
        sliced, sliced_cpu = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        explain = explain_from_store(store, base.experiment_id, cand.experiment_id,
                                     slices=list(cand.slices))  # fmt: skip
        report = build_report(cand, comparison=comparison, baseline="v1", slices=slices,
                              **explain)  # fmt: skip
        paths = write_reports(report, Path(tmp) / "reports")
        elapsed, elapsed_cpu = time.perf_counter() - started, time.process_time() - cpu
        if profile is not None:
            profile.disable()
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        size = paths["html"].stat().st_size
        total = sliced + elapsed
        print(f"  whole-run comparison (the gate's, not the report's): {compared:.2f} s")
        print(f"  per-slice comparison (10 slices x 3 scorers, 10,000 resamples): {sliced:.2f} s"
              f" ({sliced_cpu:.2f} s CPU)")  # fmt: skip
        print(f"  regressed pairs, report model and three files: {elapsed:.2f} s"
              f" ({elapsed_cpu:.2f} s CPU)")  # fmt: skip
        print(f"  regressed slices: {report.regressed_slices}")
        print(
            f"B-report {args.items:,}-item run: per-slice comparison, regressed pairs, report model"
            f" and three files in {total:.2f} s ({sliced_cpu + elapsed_cpu:.2f} s CPU;"
            f" {total / TARGET_SECONDS:.2f}x the {TARGET_SECONDS:.0f} s budget),"
            f" HTML {size / 1e6:.2f} MB ({size / TARGET_BYTES:.2f}x the 5 MB budget);"
            f" load average {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
