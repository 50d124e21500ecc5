"""The viewer reads while a run writes: DuckDB allows one writer or readers at a time, so the
viewer opens the store for each request only, and a run's flushes wait out a page's read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from tests.cli.conftest import run_cli
from tests.view.conftest import start_viewer, stop

# With EVALKIT_TEST_GATE set, the second half of the items waits for a "release" file: the
# run stays under way (its first half stored, two items in flight) until the test has seen
# what it checks, however slow the machine, instead of lasting a fixed 160 x 50 ms.
SLOW_TARGET = """
import os, pathlib, time

HERE = pathlib.Path(__file__).parent


def answer(input, request_context=None):
    if os.environ.get("EVALKIT_TEST_GATE") and int(input[1:]) >= ROWS // 2:
        deadline = time.monotonic() + 120
        while not (HERE / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return input.upper()
"""
ROWS = 40


def _file(folder: Path) -> None:
    (folder / "slow.py").write_text(f"ROWS = {ROWS}\n{SLOW_TARGET}", encoding="utf-8")
    (folder / "live.toml").write_text(
        """
[experiment]
name = "live"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 2

[target]
type = "python"
callable = "slow:answer"

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.status, response.read()


@pytest.mark.long(seconds=15)
def test_pages_are_served_while_a_run_writes_the_store(tmp_path: Path) -> None:
    rows = ROWS
    pd.DataFrame(
        {"id": [f"r{i}" for i in range(rows)], "input": [f"q{i}" for i in range(rows)],
         "groundTruth": [f"Q{i}" for i in range(rows)]}
    ).to_parquet(tmp_path / "data.parquet")  # fmt: skip
    _file(tmp_path)
    first = run_cli("run", "live.toml", "--no-progress", cwd=tmp_path)
    assert first.code == 0, first.stderr

    viewer, url = start_viewer(tmp_path / "evalkit.duckdb")
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "evalkit", "run", "live.toml", "--no-progress", "--json"],
            cwd=tmp_path,
            env={**os.environ, "EVALKIT_TEST_GATE": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: set[str] = set()
        pages = 0
        deadline = time.monotonic() + 120  # far above what a loaded machine needs
        while run.poll() is None:
            status, body = _get(url + "api/")
            assert status == 200
            data = json.loads(body)
            seen |= {r["status"] for r in data["runs"]}
            for listed in data["runs"]:
                status, _ = _get(f"{url}experiments/{listed['id']}")
                assert status == 200
            pages += 1 + len(data["runs"])
            # Let the second half go once the pages have read the run as running; the run then
            # scores and stores the rest while they go on reading.
            if pages >= 5 and "running" in seen:
                (tmp_path / "release").touch()
            assert time.monotonic() < deadline, (pages, seen)
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        new = json.loads(out)["experiment_id"]
        status, body = _get(f"{url}api/experiments/{new}")
        done = json.loads(body)
        assert done["run"]["status"] == "completed"
        assert done["scorers"][0]["n"] == rows
    finally:
        stop(viewer)
    assert pages >= 5  # the viewer really read the store during the run
    assert "running" in seen  # ... and saw the new run while it was being written
