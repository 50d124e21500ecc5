from __future__ import annotations

from pathlib import Path

import duckdb
import httpx2
import pytest

from evalkit.testing import server_process
from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_CLI_TEST_KEY"


@pytest.fixture
def judge_url(judge_process_url: str) -> str:
    """The shipped test server in its own process, as a user would start it (tests/conftest.py)."""
    return judge_process_url


def test_an_llm_scorer_with_params_runs_through_the_cli(
    cli: Cli, tmp_path: Path, judge_url: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=12)
    (tmp_path / "llm.toml").write_text(
        f"""
[experiment]
name = "llm"
dataset = "data.parquet"
store = "evalkit.duckdb"

[judge]
model = "fake-judge"
base_url = "{judge_url}"
api_key_env = "{KEY_ENV}"
max_concurrency = 8

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number.", scale = 1.0 }}

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )
    done = cli("run", "llm.toml", "--no-progress", env_extra={KEY_ENV: "test-key"})
    assert done.code == 0, done.stderr
    assert any(line.startswith("rubric") for line in done.stdout.splitlines())
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        executions = con.execute(
            "SELECT scorer_id, step, status, judge_model_id, count(*) FROM judge_executions"
            " GROUP BY ALL"
        ).fetchall()
        scored = con.execute("SELECT count(*) FROM scores WHERE scorer_id = 'rubric'").fetchone()
        meta = con.execute(
            "SELECT metadata->>'$.prebuilt' FROM experiment_scorers WHERE scorer_id = 'rubric'"
        ).fetchone()
    assert executions == [("rubric", "analyze", "success", "fake-judge", 12)]
    assert scored == (12,)
    assert meta == ("llm_rubric",)


def test_without_preflight_a_missing_judge_key_fails_the_scorer_not_the_run(
    cli: Cli, tmp_path: Path, judge_url: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=3)
    (tmp_path / "llm.toml").write_text(
        f"""
[experiment]
name = "llm"
dataset = "data.parquet"

[judge]
model = "fake-judge"
base_url = "{judge_url}"
api_key_env = "{KEY_ENV}"

[[scorers]]
use = "llm_rubric"
params = {{ rubric = "Numbers only." }}
""",
        encoding="utf-8",
    )
    done = cli("run", "llm.toml", "--no-progress", "--json", "--no-preflight")
    assert "Traceback" not in done.stderr
    assert '"failures": 3' in done.stdout
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        errors = con.execute("SELECT DISTINCT error_message FROM scorer_errors").fetchall()
    assert len(errors) == 1
    assert KEY_ENV in errors[0][0]


def test_a_missing_judge_key_records_a_judge_execution_per_failed_step(
    cli: Cli, tmp_path: Path, judge_url: str
) -> None:
    # Issue 15 item 14e: the store shows which judge failed and why, not only scorer_errors.
    write_dataset(tmp_path / "data.parquet", rows=3)
    (tmp_path / "llm.toml").write_text(
        f"""
[experiment]
name = "llm"
dataset = "data.parquet"

[judge]
model = "fake-judge"
base_url = "{judge_url}"
api_key_env = "{KEY_ENV}"

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "Numbers only." }}
""",
        encoding="utf-8",
    )
    done = cli("run", "llm.toml", "--no-progress", "--json", "--no-preflight")
    assert "Traceback" not in done.stderr
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT item_id, scorer_id, scorer_status, step, status, judge_model_id,"
            " attempt_count, model_call_count, error_name, error_code, error_message"
            " FROM judge_executions ORDER BY item_id"
        ).fetchall()
        failed = con.execute(
            "SELECT item_id, failed_step FROM scorer_errors ORDER BY item_id"
        ).fetchall()
    assert failed == [("q000", "analyze"), ("q001", "analyze"), ("q002", "analyze")]
    assert [r[:10] for r in rows] == [
        # One attempt, ended before its request (SPEC: attempt_count >= 1).
        (item, "rubric", "failed", "analyze", "failed", "fake-judge", 1, 0, "ConfigError",
         "missing_key")
        for item in ("q000", "q001", "q002")
    ]  # fmt: skip
    assert all(KEY_ENV in r[10] and "is not set" in r[10] for r in rows)


def test_structured_output_and_extra_body_from_the_file_reach_the_judge(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=4)
    with server_process("--profile", "llama-cpp-python") as url:
        (tmp_path / "llm.toml").write_text(
            f"""
[experiment]
name = "llm"
dataset = "data.parquet"
store = "evalkit.duckdb"

[judge]
model = "fake-judge"
base_url = "{url}"
api_key_env = "{KEY_ENV}"
max_tokens = 300
structured_output = "prompt"
extra_body = {{ seed = 7, cache_prompt = true }}

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number." }}
""",
            encoding="utf-8",
        )
        done = cli("run", "llm.toml", "--no-progress", env_extra={KEY_ENV: "test-key"})
        assert done.code == 0, done.stderr
        with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
            executions = con.execute(
                "SELECT status, attempt_count, count(*) FROM judge_executions GROUP BY ALL"
            ).fetchall()
        assert executions == [("success", 1, 4)]
        sent = httpx2.get(url.removesuffix("/v1") + "/_evalkit/requests").json()
    assert len(sent) == 4  # the prompt mode at once: no json_schema refused first
    for body in sent:
        assert "response_format" not in body
        assert (body["seed"], body["cache_prompt"]) == (7, True)
        # llama-cpp-python reads max_tokens only: both length fields are sent
        assert (body["max_tokens"], body["max_completion_tokens"]) == (300, 300)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (
            'structured_output = "grammar"',
            "judge.structured_output: expected 'auto', 'json_schema'",
        ),
        ("extra_body = [1, 2]", "judge.extra_body: expected a table"),
    ],
)
def test_a_bad_judge_key_names_the_file_line_and_key(
    cli: Cli, tmp_path: Path, line: str, said: str
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=2)
    (tmp_path / "llm.toml").write_text(
        f"""[experiment]
name = "llm"
dataset = "data.parquet"

[judge]
model = "fake-judge"
{line}

[[scorers]]
use = "llm_rubric"
params = {{ rubric = "ok" }}
""",
        encoding="utf-8",
    )
    done = cli("run", "llm.toml", "--no-progress")
    assert done.code == 2, done.stderr
    assert f"llm.toml:7: {said}" in done.stderr
