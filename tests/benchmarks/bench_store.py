"""B6 — the score store: 1,000,000 score rows written, then a ``scorer_summary`` query.

Rows go through the real write path: finished items (``ItemResult`` values, 4 scorers each)
are buffered by ``RowBuffer`` and written by ``StoreWriter`` in transactions of 25,000 items'
rows, as a run does; building the items is not timed. Besides the wall-clock rate it prints the
CPU seconds those writes took per million rows, which other load on the machine barely changes.
The query reads the per-scorer summary
(n, mean, stddev, 95% CI, min/median/max, pass rate, error rate) of that experiment.

Run: ``python -m tests.benchmarks.bench_store [--rows N]``. Targets: ≥ 200,000 rows/s written,
query ≤ 500 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

from evalkit.dataset import Item
from evalkit.run import ItemResult, ScorerOutcome
from evalkit.run._rows import RowBuffer
from evalkit.scorer import ScorerRunResult
from evalkit.store import connection
from evalkit.store._writer import ExperimentRecord, ScorerRecord, StoreWriter

TARGET_ROWS_PER_S = 200_000
TARGET_QUERY_MS = 500.0
SCORERS = ("exact", "contains", "token-f1", "similarity")
ITEMS_PER_WRITE = 25_000


def make_items(start: int, count: int) -> list[ItemResult]:
    items = []
    now_us = int(time.time() * 1e6)
    for n in range(start, start + count):
        item = Item(f"q{n}", f"What is {n} + {n}?", str(2 * n), index=n)
        run_id = f"bench-{n}"
        outcomes = []
        for k, scorer_id in enumerate(SCORERS):
            score = ((n * 7 + k * 13) % 100) / 100
            result = ScorerRunResult(
                run_id, score, f"score {score}", item.input, str(2 * n), item.ground_truth, None
            )
            outcomes.append(
                ScorerOutcome.success(item.id, scorer_id, result, ("generate_score",), 0.01)
            )
        items.append(
            ItemResult(
                item, run_id, "success", str(2 * n), "dataset", None, tuple(outcomes), 0.0, 0.1,
                now_us,
            )
        )  # fmt: skip
    return items


def timed_writes(
    writer: StoreWriter, experiment: str, total_items: int, names: dict[str, str]
) -> tuple[float, float]:
    """Write ``total_items`` synthetic items in ``ITEMS_PER_WRITE`` flushes; building the items
    is not timed. Returns the wall and CPU seconds of ``RowBuffer`` + ``StoreWriter.write``."""
    written = cpu = 0.0
    for start in range(0, total_items, ITEMS_PER_WRITE):
        batch = make_items(start, min(ITEMS_PER_WRITE, total_items - start))
        began, began_cpu = time.perf_counter(), time.process_time()
        buffer = RowBuffer(experiment, names)
        for item in batch:
            buffer.add(item)
        writer.write(buffer)
        written += time.perf_counter() - began
        cpu += time.process_time() - began_cpu
    return written, cpu


def measure(rows: int, folder: Path) -> dict[str, float]:
    store = folder / "bench.duckdb"
    writer = StoreWriter(store)
    experiment = "bench-store"
    writer.begin(
        ExperimentRecord(
            experiment, "bench", None, "synthetic", {}, None, rows // len(SCORERS),
            dt.datetime.now(dt.UTC), "bench",
        ),
        [ScorerRecord(s, s, "", i, threshold_min=0.5) for i, s in enumerate(SCORERS)],
    )  # fmt: skip
    names = {s: s for s in SCORERS}
    total_items = rows // len(SCORERS)
    written, cpu = timed_writes(writer, experiment, total_items, names)
    writer.finish(
        status="completed", completed_at=dt.datetime.now(dt.UTC), dataset_fingerprint=None
    )
    with connection(store, read_only=True) as con:
        count = con.execute("SELECT count(*) FROM scores").fetchone()
        began = time.perf_counter()
        summary = con.execute(
            "SELECT * FROM scorer_summary WHERE experiment_id = ?", [experiment]
        ).fetchall()
        query_ms = (time.perf_counter() - began) * 1000
    assert count is not None
    assert count[0] == total_items * len(SCORERS)
    assert len(summary) == len(SCORERS)
    return {
        "rows": float(count[0]),
        "write_s": written,
        "rows_per_s": count[0] / written,
        "cpu_s_per_million": cpu * 1e6 / count[0],
        "query_ms": query_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = measure(args.rows, Path(folder))
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"B6 store: {figures['rows']:,.0f} score rows written in {figures['write_s']:.2f} s = "
        f"{figures['rows_per_s']:,.0f} rows/s ({figures['rows_per_s'] / TARGET_ROWS_PER_S:.2f}x "
        f"the {TARGET_ROWS_PER_S:,} target; {figures['cpu_s_per_million']:.2f} CPU s per million"
        f" rows); scorer_summary query {figures['query_ms']:.0f} ms "
        f"({figures['query_ms'] / TARGET_QUERY_MS:.2f}x the {TARGET_QUERY_MS:.0f} ms budget)"
    )


if __name__ == "__main__":
    main()
