"""``evalkit run --repeat K``: each LLM-judged pair judged K times against the shipped test
server, every execution stored, the judge's self-agreement shown and in ``--json``."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from tests.cli.conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_CLI_TEST_KEY"


@pytest.fixture
def folder(tmp_path: Path, judge_process_url: str) -> Path:
    write_dataset(tmp_path / "data.parquet", rows=12)
    (tmp_path / "llm.toml").write_text(
        f"""
[experiment]
name = "llm"
dataset = "data.parquet"
store = "evalkit.duckdb"

[judge]
model = "fake-judge"
base_url = "{judge_process_url}"
api_key_env = "{KEY_ENV}"

[[scorers]]
use = "llm_rubric"
id = "rubric"
params = {{ rubric = "The answer is a single number.", scale = 1.0 }}

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )
    return tmp_path


def test_repeat_3_stores_three_executions_per_pair_and_the_self_agreement(
    cli: Cli, folder: Path
) -> None:
    env = {KEY_ENV: "test-key"}
    done = cli("run", "llm.toml", "--no-progress", "--repeat", "3", cwd=folder, env_extra=env)
    assert done.code == 0, done.stderr
    assert "judge stability across repeated executions:" in done.stdout
    line = next(x for x in done.stdout.splitlines() if x.startswith("rubric") and " 3 " in x)
    assert " 12 " in line  # 3 executions of 12 pairs
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        executions = con.execute(
            "SELECT scorer_id, count(*), count(DISTINCT item_id), count(DISTINCT repeat_index)"
            " FROM score_repeats GROUP BY ALL"
        ).fetchall()
        stability = con.execute("SELECT scorer_id, repeats, pairs FROM judge_stability").fetchall()
        calls = con.execute("SELECT count(*) FROM judge_executions").fetchone()
    assert executions == [("rubric", 36, 12, 3)]  # the code scorer is never repeated
    assert stability == [("rubric", 3.0, 12)]
    assert calls == (36,)

    again = cli("run", "llm.toml", "--no-progress", "--repeat", "2", "--json", cwd=folder,
                env_extra=env)  # fmt: skip
    assert again.code == 0, again.stderr
    found = json.loads(again.stdout)["stability"]
    assert set(found) == {"rubric"}
    assert (found["rubric"]["repeats"], found["rubric"]["pairs"]) == (2, 12)
    assert {"alpha", "mean_spread", "unstable_share", "flagged", "noise_share"} <= set(
        found["rubric"]
    )


def test_without_repeat_no_stability_is_shown(cli: Cli, folder: Path) -> None:
    done = cli("run", "llm.toml", "--no-progress", cwd=folder, env_extra={KEY_ENV: "test-key"})
    assert done.code == 0, done.stderr
    assert "judge stability" not in done.stdout


@pytest.mark.parametrize("value", ["0", "21"])
def test_a_repeat_out_of_range_is_refused_before_the_run(
    cli: Cli, folder: Path, value: str
) -> None:
    done = cli("run", "llm.toml", "--repeat", value, cwd=folder, env_extra={KEY_ENV: "k"})
    assert done.code == 2
    assert f"--repeat must be from 1 to 20, got {value}" in done.stderr
    assert not (folder / "evalkit.duckdb").exists()


def test_repeats_in_the_experiment_file_are_checked_with_the_file(cli: Cli, folder: Path) -> None:
    text = (folder / "llm.toml").read_text(encoding="utf-8")
    (folder / "llm.toml").write_text(
        text.replace('store = "evalkit.duckdb"', 'store = "evalkit.duckdb"\nrepeats = 50'),
        encoding="utf-8",
    )
    done = cli("run", "llm.toml", cwd=folder, env_extra={KEY_ENV: "k"})
    assert done.code == 2
    assert "repeats" in done.stderr
    assert "20" in done.stderr
