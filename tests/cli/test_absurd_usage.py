"""`evalkit run` against a judge reporting absurd usage counts (issue 30 item 1): every result
is stored, the counts are NULL with a note, and the exit code is the gates' as usual."""

from __future__ import annotations

import functools
from pathlib import Path

import anyio.to_thread
import duckdb

from evalkit.testing import FakeOpenAIServer, Rule
from tests.cli.conftest import Cli, write_dataset
from tests.conftest import KEY_ENV


def experiment(base_url: str) -> str:
    return f"""
[experiment]
name = "absurd-usage"
dataset = "data.parquet"
store = "evalkit.duckdb"

[judge]
model = "fake-judge"
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number." }}
"""


async def test_a_run_with_absurd_usage_counts_stores_every_result_and_exits_0(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=30)
    rules = [
        Rule("What is 7 + 7?", usage={"completion_tokens": 1e20}),
        Rule("What is 13 + 13?", usage={"completion_tokens": 10**20}),
        Rule("What is 21 + 21?", usage={"completion_tokens_details": {"reasoning_tokens": 1e20}}),
    ]
    async with FakeOpenAIServer(rules) as server:
        (tmp_path / "x.toml").write_text(experiment(server.base_url), encoding="utf-8")
        run = functools.partial(cli, "run", "x.toml", "--no-progress", env_extra={KEY_ENV: "k"})
        done = await anyio.to_thread.run_sync(run)
    assert done.code == 0, done.stderr
    assert "Traceback" not in done.stderr
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT status, succeeded_count FROM experiments").fetchall() == [
            ("completed", 30)
        ]
        assert con.execute("SELECT count(*) FROM scores").fetchall() == [(30,)]
        odd = con.execute(
            "SELECT item_id, output_tokens, reasoning_tokens FROM judge_executions"
            " WHERE (attempts->'$[0].usage.notes') IS NOT NULL ORDER BY item_id"
        ).fetchall()
    assert [(item, output, reasoning) for item, output, reasoning in odd[:2]] == [
        ("q007", None, 0),
        ("q013", None, 0),
    ]
    item, output, reasoning = odd[2]
    assert (item, reasoning) == ("q021", None)
    assert output is not None  # only the absurd count is dropped
    assert len(odd) == 3
