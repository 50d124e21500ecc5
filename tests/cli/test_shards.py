"""``evalkit run --executor/--shard`` and ``evalkit merge`` through the real command line."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import anyio.to_thread
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from evalkit.testing import FakeOpenAIServer, Fault, Rule

from .conftest import Cli, Completed, write_experiment


def write_grouped(path: Path, rows: int = 60) -> None:
    table = pa.table(
        {
            "id": [f"q{i:03d}" for i in range(rows)],
            "input": [f"What is {i} + {i}?" for i in range(rows)],
            "groundTruth": [str(2 * i) for i in range(rows)],
            "output": [str(2 * i + 1) if i < 6 else str(2 * i) for i in range(rows)],
        }
    )
    pq.write_table(table, path, row_group_size=15)


def scores(store: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            "SELECT scorer_id, item_id, score FROM scores ORDER BY scorer_id, item_id"
        ).fetchall()


def test_shard_jobs_merge_into_the_full_run(cli: Cli, tmp_path: Path) -> None:
    write_grouped(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    full = cli("run", "nightly.toml", "--no-progress", "--store", "full.duckdb")
    assert full.code == 0, full.stderr
    for i in range(2):
        done = cli("run", "nightly.toml", "--no-progress", "--shard", f"{i}/2",
                   "--store", f"part{i}.duckdb")  # fmt: skip
        assert done.code == 0, done.stderr
    merged = cli("merge", "part0.duckdb", "part1.duckdb", "--store", "merged.duckdb")
    assert merged.code == 0, merged.stderr
    assert "merged into merged.duckdb" in merged.stdout
    assert scores(tmp_path / "merged.duckdb") == scores(tmp_path / "full.duckdb")
    assert len(scores(tmp_path / "full.duckdb")) == 120


def test_process_executor_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    write_grouped(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress", "--executor", "process", "--workers", "2")
    assert done.code == 0, done.stderr
    assert "0.900" in next(line for line in done.stdout.splitlines() if line.startswith("exact"))
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM shards_done").fetchall() == [(4,)]


def crash_after(store: Path, shards: int, rows_per_shard: int = 15) -> None:
    """Make the run in ``store`` look killed after its first ``shards`` shards were recorded."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # its pid is now a dead writer's
    with duckdb.connect(str(store)) as con:
        con.execute("DELETE FROM shards_done WHERE shard_index >= ?", [shards])
        for name in ("scores", "scorer_errors", "experiment_items"):
            con.execute(
                f"DELETE FROM {name} WHERE CAST(split_part(run_id, '-', 2) AS INT) >= ?",
                [shards * rows_per_shard],
            )
        con.execute("UPDATE experiments SET status = 'running', writer_pid = ?", [child.pid])


def test_resume_with_the_process_executor_skips_finished_shards(cli: Cli, tmp_path: Path) -> None:
    write_grouped(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    full = cli("run", "nightly.toml", "--no-progress", "--store", "full.duckdb")
    assert full.code == 0, full.stderr
    sharded = ("--executor", "process", "--workers", "2")
    first = cli("run", "nightly.toml", "--no-progress", "--json", *sharded)
    assert first.code == 0, first.stderr
    run = json.loads(first.stdout)
    store = tmp_path / "evalkit.duckdb"
    crash_after(store, 2)

    plain = cli("run", "nightly.toml", "--no-progress", "--resume")
    assert plain.code == 2
    assert "was run sharded" in plain.stderr
    assert f"--resume {run['experiment_id']} --executor process" in plain.stderr
    retry = cli("run", "nightly.toml", "--no-progress", "--resume", "--retry-errors", *sharded)
    assert retry.code == 2
    assert "no failed pair in a finished shard: nothing to retry" in retry.stderr

    again = cli("run", "nightly.toml", "--no-progress", "--json", "--resume", *sharded)
    assert again.code == 0, again.stderr
    resumed = json.loads(again.stdout)
    assert resumed["experiment_id"] == run["experiment_id"]
    assert resumed["status"] == "completed"
    assert scores(store) == scores(tmp_path / "full.duckdb")  # no shard ran twice
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM shards_done").fetchall() == [(4,)]
        assert con.execute("SELECT count(*) FROM experiments").fetchall() == [(1,)]


def test_a_shard_job_resumes_its_own_slice(cli: Cli, tmp_path: Path) -> None:
    write_grouped(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    first = cli("run", "nightly.toml", "--no-progress", "--json", "--shard", "1/2")
    assert first.code == 0, first.stderr
    crash_after(tmp_path / "evalkit.duckdb", 1)  # slice 1/2 is shards 1 and 3; 3 is lost
    other = cli("run", "nightly.toml", "--no-progress", "--resume", "--shard", "0/2")
    assert other.code == 2
    assert "ran slice 1/2: resume it with shard='1/2' (--shard 1/2)" in other.stderr
    again = cli("run", "nightly.toml", "--no-progress", "--json", "--resume", "--shard", "1/2")
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["experiment_id"] == json.loads(first.stdout)["experiment_id"]
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        done = con.execute("SELECT list(shard_index ORDER BY shard_index) FROM shards_done")
        assert done.fetchall() == [([1, 3],)]
        assert con.execute("SELECT count(*) FROM experiment_items").fetchall() == [(30,)]


JUDGED = """
[experiment]
name = "judged"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 4

[judge]
model = "fake-judge"
base_url = "{base_url}"
api_key_env = "EVALKIT_SHARDS_KEY"
max_retries = 0

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number." }}

[[scorers]]
use = "exact_match"
"""


async def test_retry_errors_reruns_a_sharded_runs_failed_judge_calls(
    cli: Cli, tmp_path: Path
) -> None:
    write_grouped(tmp_path / "data.parquet")
    # The judge is down for the first night's calls about questions 10-19 (shards 0 and 1).
    down = Rule(match=re.compile(r"What is 1\d \+"), fault=Fault.http(503, "down"), times=10)
    async with FakeOpenAIServer([down]) as server:
        (tmp_path / "judged.toml").write_text(JUDGED.format(base_url=server.base_url))

        async def run(*args: str) -> Completed:
            call = functools.partial(
                cli, "run", "judged.toml", "--no-progress", "--json", "--executor", "process",
                "--workers", "2", *args, env_extra={"EVALKIT_SHARDS_KEY": "k"},
            )  # fmt: skip
            return await anyio.to_thread.run_sync(call)

        first = await run()
        assert first.code == 1, first.stderr  # the judge's failures fail the night
        assert json.loads(first.stdout)["status"] == "completed_with_errors"
        judged = server.stats.requests
        assert judged == 60
        again = await run("--resume", "--retry-errors")
        assert again.code == 0, again.stderr
        retried = json.loads(again.stdout)
        assert retried["experiment_id"] == json.loads(first.stdout)["experiment_id"]
        assert retried["status"] == "completed"
        # Only the ten failed pairs asked the judge again; the rest stayed as scored.
        assert server.stats.requests - judged == 10
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scorer_errors").fetchall() == [(0,)]
        assert con.execute(
            "SELECT count(*), count(DISTINCT item_id) FROM scores WHERE scorer_id = 'rubric'"
        ).fetchall() == [(60, 60)]
        assert con.execute("SELECT count(*) FROM shards_done").fetchall() == [(4,)]
