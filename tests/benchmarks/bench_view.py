"""B-view — ``evalkit view`` over a large store: server time of each page.

The store holds 1,000,000 score rows: two runs of the same name, each of ``--items`` items
(125,000; 250,000 item rows in all) x 4 scorers, the issue's store. ``--items 250000`` doubles
it. It is built in DuckDB from ``range()`` with the store's real schema (the write path is
B6's subject, not this one's): the candidate run drops one item in ten on each scorer, and
every item carries a ``category`` in its metadata. The candidate also has a scorer error on
one item in a hundred (1,250 ``scorer_errors`` rows beside the scores, which stay 1,000,000:
they are there for the run page's *failed* filter and failure group). Pages are requested
over real HTTP from the viewer's aiohttp application, one after another; each figure is the
median of ``--repeat`` requests of the server's own time (its ``Server-Timing`` header: the
store read, the page rendered), with the first request of each page (for the first page,
the store just opened) and the CPU time the process spent on a request, in all its threads:
other load on the machine barely changes it, and on an idle machine the server time is at
most about it (two cores, DuckDB's threads running side by side).

Run: ``python -m tests.benchmarks.bench_view [--items N] [--repeat R]``. Target: every page
≤ 300 ms on the 2-core CI machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from aiohttp.test_utils import TestClient, TestServer

from evalkit.store import migrate
from evalkit.store._connect import open_connection
from evalkit.view import create_app

TARGET_MS = 300.0
SCORERS = ("exact", "contains", "token-f1", "similarity")
CATEGORIES = ("billing", "account", "shipping", "orders", "returns")


def build(path: Path, items: int) -> tuple[str, str]:
    """Two runs, ``base`` and ``cand``, of ``items`` items each; returns their ids."""
    con = open_connection(path)
    try:
        migrate(con, where=str(path))
        for position, scorer in enumerate(SCORERS):
            for eid in ("base", "cand"):
                con.execute(
                    "INSERT INTO experiment_scorers (experiment_id, scorer_id, scorer_name,"
                    " position) VALUES (?, ?, ?, ?)",
                    [eid, scorer, scorer, position],
                )
        for offset, eid in enumerate(("base", "cand")):
            con.execute(
                "INSERT INTO experiments (id, name, dataset, status, total_items,"
                " succeeded_count, failed_count, started_at, completed_at) VALUES"
                " (?, 'nightly', 'bench.parquet', 'completed', ?, ?, 0,"
                " now()::TIMESTAMP + to_minutes(?), now()::TIMESTAMP + to_minutes(?))",
                [eid, items, items, offset, offset + 1],
            )
            wrong = "i % 10 = 3" if eid == "cand" else "false"
            con.execute(
                f"""
                INSERT INTO experiment_items (experiment_id, item_id, item_index, run_id,
                    status, source, input, ground_truth, metadata, output, scorers_succeeded,
                    scorers_failed, completed_at)
                SELECT ?, 'q' || lpad(i::VARCHAR, 7, '0'), i, ? || '-' || i, 'success',
                    'dataset', to_json('Question ' || i || ': what is ' || i || ' + ' || i || '?'),
                    to_json((2 * i)::VARCHAR),
                    json_object('category', (?::VARCHAR[])[1 + i % 5]),
                    to_json(CASE WHEN {wrong} THEN 'The answer is ' || (2 * i + 1)
                                 ELSE 'The answer is ' || (2 * i) END),
                    4, 0, now()::TIMESTAMP
                FROM range(?) t(i)
                """,
                [eid, eid, list(CATEGORIES), items],
            )
            con.execute(
                f"""
                INSERT INTO scores (experiment_id, run_id, scorer_id, scorer_name, item_id,
                    score, reason, source, created_at)
                SELECT ?, ? || '-' || i, s, s, 'q' || lpad(i::VARCHAR, 7, '0'),
                    CASE WHEN {wrong} THEN 0.0 ELSE 1.0 END, 'reason ' || i, 'dataset',
                    now()::TIMESTAMP
                FROM range(?) t(i), unnest(?::VARCHAR[]) u(s)
                """,
                [eid, eid, items, list(SCORERS)],
            )
        con.execute(
            """
            INSERT INTO scorer_errors (experiment_id, run_id, scorer_id, scorer_name, item_id,
                failed_step, error_name, error_message, created_at)
            SELECT 'cand', 'cand-' || i, 'similarity', 'similarity',
                'q' || lpad(i::VARCHAR, 7, '0'), 'analyze', 'JudgeError',
                'judge timed out after ' || (30 + i % 7) || ' s (request ' || i || ')',
                now()::TIMESTAMP
            FROM range(?) t(i) WHERE i % 100 = 7
            """,
            [items],
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return "base", "cand"


async def measure(
    path: Path, pages: dict[str, str], repeat: int
) -> dict[str, tuple[float, float, float]]:
    """Per page, the median server time, the first request's, and the median CPU time of the
    process over a request (all threads: DuckDB's, the server's and the client's), in ms."""
    client = TestClient(TestServer(create_app(path)))
    await client.start_server()
    out = {}
    try:
        for label, url in pages.items():
            server, wall, cpu = [], [], []
            for _ in range(repeat):
                started, used = time.perf_counter(), time.process_time()
                response = await client.get(url)
                await response.read()
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - used) * 1000)
                assert response.status == 200, (url, response.status, await response.text())
                server.append(float(response.headers["Server-Timing"].split("dur=")[1]))
            out[label] = (statistics.median(server), server[0], statistics.median(cpu))
    finally:
        await client.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=125_000, help="items per run")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "view.duckdb"
        started = time.perf_counter()
        base, cand = build(path, args.items)
        rows = 2 * args.items * len(SCORERS)
        print(f"store: {rows:,} score rows, 2 runs x {args.items:,} items x {len(SCORERS)}"
              f" scorers, built in {time.perf_counter() - started:.1f} s")  # fmt: skip
        compare = f"/compare?baseline={base}&candidate={cand}"
        run = f"/experiments/{cand}"
        group = '["similarity","JudgeError","analyze","judge timed out after <n> s (request <n>)"]'
        pages = {
            "runs list": "/",
            "one run (its item table's first page)": run,
            "one run, items: text search": run + "?q=answer+is+1234",
            "one run, items: exact <= 0.5": run + "?scorer=exact&max=0.5",
            "one run, items: failed only": run + "?failed=1",
            "one run, items: slice category=billing": run + "?slice=category%3Dbilling",
            "one run, items: a failure group's": run + "?" + urlencode({"group": group}),
            "one run, items: token-f1 highest first": run + "?sort=-score%3Atoken-f1",
            "one run, items: page 2000 (of 2500)": run + "?page=2000",
            "one run, items: by token-f1, page 2000": run + "?sort=score%3Atoken-f1&page=2000",
            "compare, changed pairs, largest drop first": compare,
            "compare, page 200": compare + "&page=200",
            "compare, one scorer, every pair, dataset order": compare
            + "&scorer=token-f1&changed=0&sort=item",
            "compare, text search": compare + "&q=answer+is+1234",
            "compare, slice category=billing": compare + "&slice=category%3Dbilling",
            "one item with its baseline": f"/experiments/{cand}/item?id=q0123453&baseline={base}",
        }
        results = asyncio.run(measure(path, pages, args.repeat))
    worst = max(server for server, _, _ in results.values())
    worst_cpu = max(cpu for _, _, cpu in results.values())
    for label, (server, cold, cpu) in results.items():
        print(f"  {label:<48} {server:6.1f} ms server (first {cold:6.1f} ms), {cpu:6.1f} ms CPU")
    print(
        f"B-view: slowest page {worst:.0f} ms server time over {rows:,} score rows"
        f" ({worst / TARGET_MS:.2f}x the {TARGET_MS:.0f} ms budget); slowest in CPU time"
        f" {worst_cpu:.0f} ms; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
