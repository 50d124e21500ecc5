"""The viewer reads while a run writes: DuckDB allows one writer or readers at a time, so the
viewer opens the store for each request only, and a run's flushes wait out a page's read."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pandas as pd

from tests.cli.conftest import run_cli
from tests.view.conftest import start_viewer, stop

SLOW_TARGET = """
import time

def answer(input, request_context=None):
    time.sleep(0.05)
    return input.upper()
"""


def _file(folder: Path) -> None:
    (folder / "slow.py").write_text(SLOW_TARGET, encoding="utf-8")
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


def test_pages_are_served_while_a_run_writes_the_store(tmp_path: Path) -> None:
    rows = 160  # 2 in flight x 50 ms: about 4 s, two flushes or more
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
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        seen: set[str] = set()
        pages = 0
        while run.poll() is None:
            status, body = _get(url + "api/")
            assert status == 200
            data = json.loads(body)
            seen |= {r["status"] for r in data["runs"]}
            for listed in data["runs"]:
                status, _ = _get(f"{url}experiments/{listed['id']}")
                assert status == 200
            pages += 1 + len(data["runs"])
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
