"""Two ``--resume`` of one run at the same time: exactly one runs (issue 15, item 6)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from tests.cli.conftest import Cli, write_dataset

ROWS = 12

APP = """
import os, pathlib, time

HERE = pathlib.Path(__file__).parent


def answer(input):
    n = int(input.split()[2])
    if os.environ.get("EVALKIT_TEST_FAIL") and n % 3 == 0:
        raise RuntimeError("the target is down")
    if os.environ.get("EVALKIT_TEST_GATE"):
        deadline = time.monotonic() + 90
        while not (HERE / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    return str(2 * n)
"""

EXPERIMENT = """
[experiment]
name = "race"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 4
max_error_rate = 1.0

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"
"""


def _first_run(folder: Path, cli: Cli) -> str:
    write_dataset(folder / "data.parquet", rows=ROWS)
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "race.toml").write_text(EXPERIMENT, encoding="utf-8")
    done = cli("run", "race.toml", "--no-progress", env_extra={"EVALKIT_TEST_FAIL": "1"})
    assert done.code in (0, 1), done.stderr
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        (row,) = con.execute("SELECT id, status FROM experiments").fetchall()
    assert row[1] == "completed_with_errors"
    return str(row[0])


def test_two_simultaneous_resumes_of_one_run_only_one_runs(tmp_path: Path, cli: Cli) -> None:
    experiment_id = _first_run(tmp_path, cli)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["EVALKIT_TEST_GATE"] = "1"  # each resume's target calls wait for "release"
    command = [sys.executable, "-m", "evalkit", "run", "race.toml", "--no-progress"]
    command += ["--resume", experiment_id, "--retry-errors"]
    runs = [
        subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]  # fmt: skip
    try:
        # The refused resume ends on its own, while the other one waits for "release".
        deadline = time.monotonic() + 60
        while all(run.poll() is None for run in runs) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        (tmp_path / "release").touch()
        outputs = [run.communicate(timeout=120) for run in runs]
    codes = sorted(run.returncode for run in runs)
    errors = "\n".join(err for _, err in outputs)
    assert codes == [0, 2], errors
    assert "a live run is never resumed" in errors or "is still running" in errors, errors
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status, succeeded_count FROM experiments").fetchall() == [
            ("completed", ROWS)
        ]
        # One pass over the failed items: each target call was made once, not twice.
        assert con.execute("SELECT count(*) FROM experiment_items").fetchone() == (ROWS,)


CLAIMER = """
import pathlib, sys, time
from evalkit import ConfigError
from evalkit.store._stored import read_for_resume
from evalkit.store._writer import StoreWriter

store, me, other = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
state = read_for_resume(store, "e1").claim_state
me.touch()  # a barrier: both have read the experiment before either claims it
deadline = time.monotonic() + 60
while not other.exists() and time.monotonic() < deadline:
    time.sleep(0.01)
try:
    StoreWriter(store).reopen("e1", total_items=1, expected=state)
except ConfigError as exc:
    print("refused:", exc)
else:
    print("claimed")
"""


def test_of_two_resumes_that_both_read_the_run_as_resumable_one_claims_it(
    tmp_path: Path,
) -> None:
    from evalkit.store._writer import ExperimentRecord, StoreWriter

    store = tmp_path / "evalkit.duckdb"
    record = ExperimentRecord(
        "e1", "n", None, "<rows>", {}, None, 1, dt.datetime.now(dt.UTC), "test"
    )
    first = StoreWriter(store)
    first.begin(record, [])
    first.finish(status="cancelled", completed_at=dt.datetime.now(dt.UTC), dataset_fingerprint=None)
    marks = [tmp_path / "a", tmp_path / "b"]
    claimers = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(store), str(me), str(other)],
            stdout=subprocess.PIPE, text=True,
        )
        for me, other in (marks, marks[::-1])
    ]  # fmt: skip
    said = sorted(c.communicate(timeout=120)[0].strip() for c in claimers)
    assert said[0] == "claimed", said
    assert said[1].startswith("refused:"), said
    assert "a live run is never resumed" in said[1]
