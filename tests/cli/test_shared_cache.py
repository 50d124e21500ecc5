"""Two LLM-judged runs on one store and one judge cache at once (issue 15, item 5)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from evalkit.testing import server_process
from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_CLI_TEST_KEY"
ROWS = 40


@pytest.fixture
def judge_url() -> Iterator[str]:
    with server_process("--latency", "0.02") as url:
        yield url


def _experiment(folder: Path, name: str, url: str) -> None:
    (folder / f"{name}.toml").write_text(
        f"""
[experiment]
name = "{name}"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 4
max_error_rate = 1.0

[judge]
model = "fake-judge"
base_url = "{url}"
api_key_env = "{KEY_ENV}"
max_concurrency = 4

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number.", scale = 1.0 }}
""",
        encoding="utf-8",
    )


def test_two_llm_judged_runs_on_one_store_both_finish(tmp_path: Path, judge_url: str) -> None:
    write_dataset(tmp_path / "data.parquet", rows=ROWS)
    for name in ("one", "two"):
        _experiment(tmp_path, name, judge_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env[KEY_ENV] = "test-key"
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "evalkit", "run", f"{name}.toml", "--no-progress",
             "--report-dir", f"reports-{name}"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for name in ("one", "two")
    ]  # fmt: skip
    outputs = [run.communicate(timeout=180) for run in runs]
    for run, (_, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
        # The judge cache is shared without a lock error. The store may be found locked by the
        # other run's flush for a moment on a busy machine: that batch is kept and written
        # later (its warning names the store file), and every row is checked below.
        cache_lock_errors = [
            line for line in err.splitlines()
            if "Could not set lock" in line and "evalkit-cache.duckdb" in line
        ]  # fmt: skip
        assert cache_lock_errors == [], err
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT e.name, e.status, count(*) FROM experiments e"
            " JOIN experiment_items i ON i.experiment_id = e.id GROUP BY ALL ORDER BY 1"
        ).fetchall()
    assert rows == [("one", "completed", ROWS), ("two", "completed", ROWS)]


def test_a_run_whose_judge_cache_cannot_open_leaves_no_experiment_row(
    tmp_path: Path, cli: Cli, judge_url: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=4)
    _experiment(tmp_path, "one", judge_url)
    (tmp_path / "evalkit-cache.duckdb").write_text("not a database", encoding="utf-8")
    done = cli("run", "one.toml", "--no-progress", env_extra={KEY_ENV: "test-key"})
    assert done.code == 2, done.stderr
    assert "judge cache" in done.stderr
    assert "Traceback" not in done.stderr
    store = tmp_path / "evalkit.duckdb"
    if store.exists():
        with duckdb.connect(str(store), read_only=True) as con:
            tables = {
                r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            }
            if "experiments" in tables:
                assert con.execute("SELECT count(*) FROM experiments").fetchone() == (0,)
