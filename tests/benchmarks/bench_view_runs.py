"""B-view-runs — the viewer's runs page over a store of many runs: server time of each page.

The store holds ``--runs`` runs (20,000, the issue's store had 20,006) of ``--names`` run
names (20: a thousand nights each), each of 10 items x 2 scorers (400,000 score rows), built
in DuckDB from ``range()`` with the store's real schema (the write path is B6's subject). One
night in seven failed its verdict and one in eleven was never judged; every other night
stored its baseline (the previous night of its name), the rest leave it to the viewer to
choose the run ``latest`` would, and one night in thirteen has no dataset fingerprint (so
whether it pairs is counted from its items). Pages are requested over real HTTP from the
viewer's aiohttp application, one after another; each figure is the median of ``--repeat``
requests of the server's own time (its ``Server-Timing`` header), with the first request's
and the median CPU time of the process over a request (all threads), and the page's size. A
run's own page and an item page are measured too: they read the runs they show, not every run.

Run: ``python -m tests.benchmarks.bench_view_runs [--runs N] [--names N] [--repeat R]``.
Target: every runs page ≤ 300 ms at 20,000 runs on the 2-core CI machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from aiohttp.test_utils import TestClient, TestServer

from evalkit.store import migrate
from evalkit.store._connect import open_connection
from evalkit.view import create_app

TARGET_MS = 300.0
ITEMS = 10
SCORERS = ("exact", "token-f1")


def build(path: Path, runs: int, names: int) -> None:
    """``runs`` runs of ``names`` names, oldest first ``r0000000``, one minute apart."""
    con = open_connection(path)
    try:
        migrate(con, where=str(path))
        con.execute(
            """
            INSERT INTO experiments (id, name, dataset, dataset_fingerprint, status,
                total_items, succeeded_count, failed_count, started_at, completed_at, partial,
                verdict, baseline_id, baseline_reason)
            SELECT 'r' || lpad(i::VARCHAR, 7, '0'), 'nightly-' || (i % ?), 'qa.parquet',
                CASE WHEN i % 13 = 0 THEN NULL ELSE 'fp-' || (i % ?) END,
                CASE WHEN i % 17 = 4 THEN 'failed' WHEN i % 5 = 2 THEN 'completed_with_errors'
                     ELSE 'completed' END,
                ?, ?, 0, TIMESTAMP '2026-01-01' + to_minutes(i),
                TIMESTAMP '2026-01-01' + to_minutes(i) + INTERVAL 30 SECOND, false,
                CASE WHEN i % 7 = 3 THEN 'failed' WHEN i % 11 = 5 THEN NULL ELSE 'passed' END,
                CASE WHEN i % 2 = 0 AND i >= ? THEN 'r' || lpad((i - ?)::VARCHAR, 7, '0') END,
                CASE WHEN i % 2 = 0 AND i >= ? THEN 'previous night' END
            FROM range(?) t(i)
            """,
            [names, names, ITEMS, ITEMS, names, names, names, runs],
        )
        for position, scorer in enumerate(SCORERS):
            con.execute(
                "INSERT INTO experiment_scorers (experiment_id, scorer_id, scorer_name,"
                " position) SELECT id, ?, ?, ? FROM experiments",
                [scorer, scorer, position],
            )
        con.execute(
            """
            INSERT INTO experiment_items (experiment_id, item_id, item_index, run_id, status,
                source, input, ground_truth, metadata, output, scorers_succeeded,
                scorers_failed, completed_at)
            SELECT e.id, 'q' || j, j, e.id || '-' || j, 'success', 'dataset',
                to_json('Question ' || j), to_json('a'), NULL, to_json('a'), 2, 0,
                e.completed_at
            FROM experiments e, range(?) t(j)
            """,
            [ITEMS],
        )
        con.execute(
            """
            INSERT INTO scores (experiment_id, run_id, scorer_id, scorer_name, item_id, score,
                reason, source, created_at)
            SELECT i.experiment_id, i.run_id, s, s, i.item_id,
                CASE WHEN hash(i.run_id || s) % 4 = 0 THEN 0.0 ELSE 1.0 END, NULL,
                'dataset', i.completed_at
            FROM experiment_items i, unnest(?::VARCHAR[]) u(s)
            """,
            [list(SCORERS)],
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()


async def measure(
    path: Path, pages: dict[str, str], repeat: int
) -> dict[str, tuple[float, float, float, int]]:
    """Per page, the median server time, the first request's, the median CPU time of the
    process over a request (ms) and the page's size in bytes."""
    client = TestClient(TestServer(create_app(path)))
    await client.start_server()
    out = {}
    try:
        for label, url in pages.items():
            server, cpu = [], []
            size = 0
            for _ in range(repeat):
                used = time.process_time()
                response = await client.get(url)
                body = await response.read()
                cpu.append((time.process_time() - used) * 1000)
                assert response.status == 200, (url, response.status, body[:2000])
                server.append(float(response.headers["Server-Timing"].split("dur=")[1]))
                size = len(body)
            out[label] = (statistics.median(server), server[0], statistics.median(cpu), size)
    finally:
        await client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20_000)
    parser.add_argument("--names", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.duckdb"
        started = time.perf_counter()
        build(path, args.runs, args.names)
        print(
            f"store: {args.runs:,} runs of {args.names} names, {ITEMS} items x {len(SCORERS)}"
            f" scorers each ({args.runs * ITEMS * len(SCORERS):,} score rows), built in"
            f" {time.perf_counter() - started:.1f} s"
        )
        middle = max(args.runs // 100, 1)
        pages = {
            "runs list (first page)": "/",
            "runs list as JSON": "/api/",
            f"page {middle}": f"/?page={middle}",
            "past the last page": "/?page=9223372036854775807",
            "failed nights only": "/?failed=1",
            "one name (nightly-3)": "/?name=nightly-3",
            "status completed, failed nights, page 5": "/?status=completed&failed=1&page=5",
            "one run (its page)": f"/experiments/r{middle:07d}",
            "one item with its baseline": f"/experiments/r{middle:07d}/item?id=q1"
            f"&baseline=r{middle - 20:07d}",
        }
        results = asyncio.run(measure(path, pages, args.repeat))
    worst = max(server for server, _, _, _ in results.values())
    worst_cpu = max(cpu for _, _, cpu, _ in results.values())
    for label, (server, cold, cpu, size) in results.items():
        print(
            f"  {label:<40} {server:7.1f} ms server (first {cold:7.1f} ms),"
            f" {cpu:7.1f} ms CPU, {size / 1000:,.0f} kB"
        )
    print(
        f"B-view-runs: slowest runs page {worst:.0f} ms server time over {args.runs:,} runs"
        f" ({worst / TARGET_MS:.2f}x the {TARGET_MS:.0f} ms budget); slowest in CPU time"
        f" {worst_cpu:.0f} ms; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
