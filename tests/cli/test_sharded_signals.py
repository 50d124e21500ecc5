"""Ctrl-C and SIGKILL during a sharded ``evalkit run --executor process``, and a burst of
Ctrl-C during any run: real subprocesses, the shipped test server judging slowly.

Every wait is bounded (to fail instead of hanging); nothing here times the run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evalkit.testing import server_process

from .conftest import start_cli, wait_for

KEY_ENV = "EVALKIT_SIGNALS_TEST_KEY"
SHARDS, ROWS_PER_SHARD = 12, 3
SHARDED = ("--executor", "process", "--workers", "2")


@pytest.fixture(scope="module")
def slow_judge() -> Iterator[str]:
    with server_process("--latency", "0.5") as url:
        yield url


@pytest.fixture(scope="module")
def stuck_judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The slow judge, never answering about the last row: the run cannot score every item
    before the Ctrl-C however slow the machine (a Ctrl-C after that finishes the run)."""
    rules = tmp_path_factory.mktemp("stuck") / "rules.json"
    last = SHARDS * ROWS_PER_SHARD - 1
    rules.write_text(json.dumps([{"match": f"What is {last} + {last}?", "fault": "hang"}]))
    with server_process("--latency", "0.5", "--rules", str(rules)) as url:
        yield url


def write_run(folder: Path, url: str) -> None:
    rows = SHARDS * ROWS_PER_SHARD
    table = pa.table(
        {
            "id": [f"q{i:03d}" for i in range(rows)],
            "input": [f"What is {i} + {i}?" for i in range(rows)],
            "groundTruth": [str(2 * i) for i in range(rows)],
            "output": [str(2 * i) for i in range(rows)],
        }
    )
    pq.write_table(table, folder / "data.parquet", row_group_size=ROWS_PER_SHARD)
    (folder / "slow.toml").write_text(
        f"""
[experiment]
name = "slow"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 1

[judge]
model = "fake-judge"
base_url = "{url}"
api_key_env = "{KEY_ENV}"

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number." }}

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )


def start(folder: Path, *options: str) -> subprocess.Popen[str]:
    return start_cli(
        "run", "slow.toml", "--no-progress", *options, cwd=folder, env_extra={KEY_ENV: "test-key"}
    )


def query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql).fetchall()


def shards_done(store: Path) -> int:
    return int(query(store, "SELECT count(*) FROM shards_done")[0][0])


def finish(child: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail("the run did not stop within 30 s of Ctrl-C")
    return child.returncode, err


def workers_in(folder: Path) -> list[int]:
    """Live processes working in ``folder`` (the run's workers inherit its cwd)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(os.readlink(entry / "cwd")) == folder:
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def assert_cancelled_keeping_finished_shards(store: Path, at_least: int) -> None:
    assert query(store, "SELECT status FROM experiments") == [("cancelled",)]
    done = shards_done(store)
    assert at_least <= done < SHARDS
    # Every row of a recorded shard is kept, and nothing of the others.
    assert query(store, "SELECT count(*) FROM scores") == [(done * ROWS_PER_SHARD * 2,)]


@pytest.mark.parametrize("to_group", [False, True], ids=["driver", "process-group"])
def test_ctrl_c_stops_a_sharded_run_and_keeps_its_finished_shards(
    tmp_path: Path, slow_judge: str, to_group: bool
) -> None:
    write_run(tmp_path, slow_judge)
    store = tmp_path / "evalkit.duckdb"
    child = start(tmp_path, *SHARDED)
    wait_for(lambda: shards_done(store) >= 1, "finished shard", child)
    if to_group:
        os.killpg(child.pid, signal.SIGINT)  # Ctrl-C in a terminal
    else:
        child.send_signal(signal.SIGINT)
    code, err = finish(child)
    assert code == 130, err
    assert_cancelled_keeping_finished_shards(store, at_least=1)
    wait_for(lambda: not workers_in(tmp_path), "exit of the workers")


def test_workers_exit_when_their_driver_is_killed(tmp_path: Path, slow_judge: str) -> None:
    write_run(tmp_path, slow_judge)
    store = tmp_path / "evalkit.duckdb"
    child = start(tmp_path, *SHARDED)
    wait_for(lambda: shards_done(store) >= 1, "finished shard", child)
    assert len(workers_in(tmp_path)) >= 3  # the driver, its workers (and the resource tracker)
    child.send_signal(signal.SIGKILL)
    child.communicate(timeout=30)
    try:
        wait_for(lambda: not workers_in(tmp_path), "exit of the orphaned workers")
    finally:
        for pid in workers_in(tmp_path):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.long(seconds=11)
@pytest.mark.parametrize("options", [(), SHARDED], ids=["local", "sharded"])
def test_a_burst_of_ctrl_c_still_ends_cancelled_with_exit_130(
    tmp_path: Path, stuck_judge: str, options: tuple[str, ...]
) -> None:
    write_run(tmp_path, stuck_judge)
    store = tmp_path / "evalkit.duckdb"
    child = start(tmp_path, *options)
    if options:
        wait_for(lambda: shards_done(store) >= 1, "finished shard", child)
    else:
        wait_for(
            lambda: query(store, "SELECT count(*) FROM scores")[0][0] > 0, "stored score", child
        )
    # Ctrl-C every 10-30 ms until the run has exited: the burst covers the whole of its
    # shutdown, however long a loaded machine makes it, so one run meets every moment of it.
    deadline = time.monotonic() + 30
    burst = 0
    while child.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError):  # the group ended meanwhile
            os.killpg(child.pid, signal.SIGINT)
        time.sleep(0.01 + 0.02 * (burst % 2))
        burst += 1
    code, err = finish(child)
    assert code == 130, err
    assert burst >= 2, "the run ended at the first Ctrl-C: no burst"
    assert query(store, "SELECT status FROM experiments") == [("cancelled",)], err
