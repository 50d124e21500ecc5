"""``evalkit run`` with a judge that cannot be used: stop before scoring, or say why it failed."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_CLI_PREFLIGHT_KEY"


def write_judged(folder: Path, base_url: str) -> None:
    write_dataset(folder / "data.parquet", rows=40)
    (folder / "judged.toml").write_text(
        f"""
[experiment]
name = "judged"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 8

[judge]
model = "gpt-4o-mini"
base_url = "{base_url}"
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


def test_a_judge_at_a_closed_port_exits_2_before_scoring(
    cli: Cli, tmp_path: Path, closed_url: str
) -> None:
    write_judged(tmp_path, closed_url)
    done = cli("run", "judged.toml", "--no-progress", env_extra={KEY_ENV: "k"})
    assert done.code == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        f"judge 'gpt-4o-mini' at {closed_url}: cannot connect (connection refused); "
        "check the judge's base_url"
    ) in done.stderr
    assert done.stdout == ""  # no table, nothing scored
    assert not (tmp_path / "evalkit.duckdb").exists()


def test_a_missing_key_variable_exits_2_naming_it(
    cli: Cli, tmp_path: Path, closed_url: str
) -> None:
    write_judged(tmp_path, closed_url)
    done = cli("run", "judged.toml", "--no-progress")
    assert done.code == 2
    assert f"judge 'gpt-4o-mini': {KEY_ENV} is not set" in done.stderr
    assert not (tmp_path / "evalkit.duckdb").exists()


def test_without_preflight_the_run_ends_with_its_failure_groups(
    cli: Cli, tmp_path: Path, closed_url: str
) -> None:
    write_judged(tmp_path, closed_url)
    done = cli(
        "run", "judged.toml", "--no-progress", "--no-preflight", "--no-cache",
        env_extra={KEY_ENV: "k"},
    )  # fmt: skip
    assert done.code != 2, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("failure groups:")
    assert lines[start + 1] == "  rubric: 40 failed"
    groups = lines[start + 2 : lines.index(next(x for x in lines if x.startswith("reports:")))]
    assert sum(int(line.split()[0]) for line in groups) == 40
    # The endpoint stays readable in the pattern: it says which server failed.
    assert all(f"JudgeError at analyze: judge '…' at {closed_url}:" in x for x in groups)
    assert any("circuit open: endpoint unreachable" in x for x in groups)
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scorer_errors").fetchone() == (40,)

    as_json = cli(
        "run", "judged.toml", "--no-progress", "--no-preflight", "--no-cache", "--json",
        env_extra={KEY_ENV: "k"},
    )  # fmt: skip
    groups_json = json.loads(as_json.stdout)["failure_groups"]
    assert {g["scorer_id"] for g in groups_json} == {"rubric"}
    assert sum(g["count"] for g in groups_json) == 40
    assert all(g["error_type"] == "JudgeError" for g in groups_json)
    assert {"pattern", "example_item_id", "example_message", "failed_step"} <= set(groups_json[0])
