"""A run SIGKILLed at random moments, resumed each time, ends equal to a clean run."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit.store import latest_resumable, list_experiments

ITEMS = 1000

SCRIPT = """
import sys
import zlib

import anyio

from evalkit import create_scorer, run_evals


def length(run):
    return float(len(run.output) % 7)


async def slow(run):
    await anyio.sleep(0.004)
    if SLOWED is not None and int(run.input.split()[1]) >= SLOWED:
        # A second an item from SLOWED on, four at a time: the run's last 80 items or more
        # take 20 s or more, however fast the machine, so the test kills it before its end;
        # items still end, so the run keeps flushing what it scored before them.
        await anyio.sleep(1.0)
    return (zlib.crc32(run.input.encode()) % 1000) / 1000


SCORERS = [
    create_scorer("Length", id="length").generate_score(length),
    create_scorer("Slow", id="slow").generate_score(slow),
]


SLOWED = int(sys.argv[4]) if len(sys.argv) > 4 else None


async def main() -> None:
    data, store = sys.argv[1], sys.argv[2]
    resume = sys.argv[3] or None if len(sys.argv) > 3 else None
    await run_evals(
        data, SCORERS, store=store, experiment="kill", progress=False, concurrency=4,
        flush_interval=0.05, keep_results=False, resume=resume,
    )


anyio.run(main)
"""


def stored_scores(store: Path) -> list[tuple[str, str, float]]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT item_id, scorer_id, score FROM scores ORDER BY ALL").fetchall()
    return [(str(i), str(s), float(v)) for i, s, v in rows]


def stored_items(store: Path) -> int:
    listed = list_experiments(store)
    return int(listed["succeeded_count"][0].as_py()) if listed.num_rows else 0


@pytest.mark.long(seconds=15)
def test_sigkill_at_random_points_then_resume_equals_a_clean_run(tmp_path: Path) -> None:
    data = tmp_path / "data.parquet"
    pq.write_table(
        pa.Table.from_pylist(
            [{"id": f"i{n}", "input": f"question {n}", "output": "x" * n} for n in range(ITEMS)]
        ),
        data,
    )
    script = tmp_path / "run.py"
    script.write_text(SCRIPT, encoding="utf-8")
    clean, killed = tmp_path / "clean.duckdb", tmp_path / "killed.duckdb"
    # Budgets far above what a loaded machine needs: a whole run takes a few seconds.
    subprocess.run([sys.executable, str(script), str(data), str(clean)], check=True, timeout=600)

    rng = random.Random(8)
    partial: list[int] = []
    for low, high in ((0.05, 0.3), (0.35, 0.6), (0.65, 0.9)):
        # Kill once a random share of the items is stored, plus a random few ms, so the
        # signal lands at any point of a flush or of the scoring between two flushes.
        target = int(ITEMS * rng.uniform(low, high))
        resume = ""
        if killed.exists() and len(list_experiments(killed)):
            resume = latest_resumable(killed, name="kill")
        slowed = str(target + 20)  # at most 919: 80 items or more go slowly
        proc = subprocess.Popen(
            [sys.executable, str(script), str(data), str(killed), resume, slowed]
        )
        # A look at the store every 0.25 s, not back to back: the run's flushes need the file
        # between two looks. A run slowed past the deadline is killed where it is.
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if killed.exists() and stored_items(killed) >= target:
                break
            time.sleep(0.25)
        time.sleep(rng.uniform(0, 0.05))
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # The store opens, and the dead run reads as interrupted.
        assert list_experiments(killed)["status"].to_pylist() == ["interrupted"]
        partial.append(len(stored_scores(killed)))
    # Killed mid-way each time, and each pass added pairs.
    assert all(0 < n < 2 * ITEMS for n in partial), partial
    assert partial == sorted(partial), partial

    final = [sys.executable, str(script), str(data), str(killed)]
    subprocess.run([*final, latest_resumable(killed, name="kill")], check=True, timeout=600)

    experiments = list_experiments(killed).to_pylist()
    assert [e["status"] for e in experiments] == ["completed"]
    assert experiments[0]["succeeded_count"] == ITEMS
    assert stored_scores(killed) == stored_scores(clean)
    assert len(stored_scores(killed)) == 2 * ITEMS, partial
    with duckdb.connect(str(killed), read_only=True) as con:
        items = con.execute("SELECT count(*), count(DISTINCT item_id) FROM experiment_items")
        assert items.fetchone() == (ITEMS, ITEMS)
        errors = con.execute("SELECT count(*) FROM scorer_errors").fetchone()
        assert errors == (0,)
