"""A CI-shaped end to end: the nights of an LLM-judged nightly regression, as CI runs them.

Each night is a real ``evalkit run`` against the shipped test server in its own
process, on one store kept between nights, exactly as the README's GitHub Actions job does.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit.testing import server_process
from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_NIGHTLY_KEY"
ITEMS = 120
RUNNING_ITEMS = (
    "SELECT count(*) FROM experiment_items i JOIN experiments x ON x.id = i.experiment_id"
    " WHERE x.status = 'running'"
)


def _experiment(folder: Path, base_url: str) -> None:
    (folder / "nightly.toml").write_text(
        f"""
[experiment]
name = "nightly"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 4

[judge]
model = "fake-judge"
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
max_concurrency = 4

[[scorers]]
use = "llm_rubric"
id = "correct"
params = {{ rubric = "The answer is a single number.", scale = 1.0 }}

[[scorers]]
use = "exact_match"

[regression]
baseline = "latest"
""",
        encoding="utf-8",
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


#: The item whose judge call hangs on the night that is interrupted.
STUCK = "What is 100 + 100?"


@pytest.fixture
def stuck_judge(tmp_path: Path) -> Iterator[str]:
    """The shipped server, answering the ``STUCK`` item once and then never (a hang), until
    ``POST /_evalkit/reset``: the interrupted night can store every other item but not end, so
    the test interrupts it half way whatever the machine's load."""
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps([{"match": STUCK, "times": 1}, {"match": STUCK, "fault": "hang"}]),
        encoding="utf-8",
    )
    with server_process("--rules", str(rules)) as url:
        yield url


def _query(store: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def _judge_stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/_evalkit/stats") as reply:
        stats: dict[str, int] = json.load(reply)
    return stats


def _stored_while_stuck(store: Path, child: subprocess.Popen[str], judge: str) -> int:
    """The items the running night has stored once every judge call but the stuck one is
    answered and its results are written; fails if the night ends or two minutes pass.

    The store is read once a second: a reader holds the file while it reads, and a writer
    finds it locked meanwhile (it retries), so polling it hard under load starves the run.
    """
    requests = _judge_stats(judge)["requests"]
    deadline = time.monotonic() + 120
    stored = 0
    while stored < ITEMS - 1 and time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        time.sleep(1.0)
        stats = _judge_stats(judge)
        if stats["requests"] - requests < ITEMS or stats["in_flight"] != 1:
            continue  # not every call is answered yet: the store is left to the run
        try:
            stored = _query(store, RUNNING_ITEMS)[0][0]
        except duckdb.Error:
            continue  # the run is writing
    return stored


def _night(cli: Cli, *args: str) -> tuple[int, dict[str, Any], str]:
    done = cli("run", "nightly.toml", "--no-progress", "--json", *args,
               env_extra={KEY_ENV: "test-key"})  # fmt: skip
    return done.code, json.loads(done.stdout) if done.stdout else {}, done.stderr


def test_a_night_whose_judge_endpoint_is_down_fails_with_the_reason(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=40)
    _experiment(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1")
    env = {KEY_ENV: "test-key"}
    down = cli("run", "nightly.toml", "--no-progress", "--no-cache", env_extra=env)
    assert down.code == 2
    assert "cannot connect (connection refused)" in down.stderr
    assert "Traceback" not in down.stderr

    # Without the preflight the run goes on, fails every judged pair fast, and says so.
    unchecked = cli("run", "nightly.toml", "--no-progress", "--no-cache", "--no-preflight",
                    env_extra=env)  # fmt: skip
    assert unchecked.code == 1
    verdict = next(line for line in unchecked.stdout.splitlines() if line.startswith("FAILED"))
    assert verdict.startswith("FAILED: correct failed: no data: none of its 40 pairs")
    assert "failure groups:" in unchecked.stdout
    assert "unreachable" in unchecked.stdout


@pytest.mark.long(seconds=18)
def test_the_nights_of_a_judged_nightly_regression(
    cli: Cli, tmp_path: Path, stuck_judge: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=ITEMS)
    _experiment(tmp_path, stuck_judge)
    store = tmp_path / "evalkit.duckdb"

    # A trial with --limit is stored as partial: never anyone's baseline.
    code, trial, _ = _night(cli, "--limit", "5")
    assert code == 0, trial["verdict"]
    # The first full night has no baseline: one line says so, and it passes on its gates.
    code, first, _ = _night(cli)
    assert code == 0, first["verdict"]
    assert first["baseline"] is None
    assert first["baseline_note"].startswith("no baseline: no earlier complete, full run")

    # The next night is interrupted (SIGINT, as CI cancels a job) while its last judge call
    # hangs, every other item stored; without the judge cache, which would answer at once ...
    child = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "run", "nightly.toml", "--no-progress", "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, KEY_ENV: "test-key"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _stored_while_stuck(store, child, stuck_judge) == ITEMS - 1
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, err
    [(status, done)] = _query(
        store, "SELECT status, succeeded_count + failed_count FROM experiments"
        " WHERE started_at = (SELECT max(started_at) FROM experiments)",
    )  # fmt: skip
    assert (status, done) == ("cancelled", ITEMS - 1)

    # ... and --resume finishes it, judged against the first full night, not the trial.
    reset = stuck_judge.removesuffix("/v1") + "/_evalkit/reset"
    urllib.request.urlopen(urllib.request.Request(reset, method="POST")).close()
    code, resumed, err = _night(cli, "--resume", "--no-cache")
    assert code == 0, (resumed.get("verdict"), err)
    assert resumed["status"] == "completed"
    assert resumed["baseline"] == first["experiment_id"]
    assert [s["n"] for s in resumed["scorers"]] == [ITEMS, ITEMS]
    scored = _query(
        store,
        "SELECT scorer_id, count(*) FROM scores WHERE experiment_id = ? GROUP BY 1 ORDER BY 1",
        [resumed["experiment_id"]],
    )
    assert scored == [("correct", ITEMS), ("exact_match", ITEMS)]
