"""Resuming a judged run after its judge moved to another endpoint, and what a refusal lists:
real CLI runs against two of the shipped test servers (``python -m evalkit.testing.server
--port 0``), each on a port of its own, as a judge restarted on another night would be."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit.testing import server_process

from .conftest import Cli, write_dataset

KEY_ENV = "EVALKIT_MOVED_TEST_KEY"
ENV = {KEY_ENV: "test-key"}


@pytest.fixture(scope="module")
def judges() -> Iterator[tuple[str, str]]:
    """A judge endpoint that answers every call with a 500, and one that answers."""
    with (
        server_process("--fault", "500", "--fault-rate", "1.0") as failing,
        server_process() as answering,
    ):
        assert failing != answering
        yield failing, answering


def write_experiment(folder: Path, base_url: str, model: str = "m") -> None:
    (folder / "polite.toml").write_text(
        f"""
[experiment]
name = "polite"
dataset = "data.parquet"
store = "evalkit.duckdb"

[judge]
model = "{model}"
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
max_retries = 0

[[scorers]]
use = "llm_rubric"
id = "polite"
params = {{ rubric = "The answer is polite." }}

[[scorers]]
use = "exact_match"
id = "exact"
""",
        encoding="utf-8",
    )


def completions(base_url: str) -> int:
    root = base_url.rstrip("/").removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/_evalkit/stats", timeout=30) as response:
        stats: dict[str, Any] = json.load(response)
    return int(stats["completions"])


def query(folder: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def first_night(cli: Cli, folder: Path, base_url: str) -> str:
    """A run whose judge failed every call: its judged pairs are left to resume."""
    write_dataset(folder / "data.parquet", rows=6)
    write_experiment(folder, base_url)
    first = cli("run", "polite.toml", "--no-progress", "--json", env_extra=ENV)
    assert first.code == 1, first.stderr
    assert query(folder, "SELECT count(*) FROM scores WHERE scorer_id = 'polite'") == [(0,)]
    experiment_id: str = json.loads(first.stdout)["experiment_id"]
    return experiment_id


def test_a_judge_that_moved_resumes_with_a_one_line_note(
    cli: Cli, tmp_path: Path, judges: tuple[str, str]
) -> None:
    before, after = judges
    experiment_id = first_night(cli, tmp_path, before)
    write_experiment(tmp_path, after)  # the judge restarted on another port
    calls = completions(after)

    resumed = cli("run", "polite.toml", "--no-progress", "--resume", "--retry-errors",
                  env_extra=ENV)  # fmt: skip

    assert resumed.code == 0, resumed.stderr
    note = f"evalkit: judge of scorer 'polite' moved: {before} -> {after}; resuming {experiment_id}"
    assert note in resumed.stderr.splitlines(), resumed.stderr
    assert "RuntimeWarning" not in resumed.stderr  # one line, not Python's warning format
    assert completions(after) - calls == 6  # the moved judge scored the six pairs left
    assert query(tmp_path, "SELECT id, status FROM experiments") == [(experiment_id, "completed")]
    assert query(tmp_path, "SELECT count(*) FROM scores WHERE scorer_id = 'polite'") == [(6,)]


def test_a_refusal_names_only_the_fields_that_differ_and_force(
    cli: Cli, tmp_path: Path, judges: tuple[str, str]
) -> None:
    before, after = judges
    experiment_id = first_night(cli, tmp_path, before)
    # Another model: that changes results. The endpoint moved too, which does not.
    write_experiment(tmp_path, after, model="another-model")

    refused = cli("run", "polite.toml", "--no-progress", "--resume", "--retry-errors",
                  env_extra=ENV)  # fmt: skip

    assert refused.code == 2, refused.stderr
    lines = refused.stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("What differs:"))
    assert experiment_id in lines[start]
    assert lines[start + 1 :] == [
        "  scorer 'polite' judge model: 'm' -> 'another-model'",
        "--force (force=True) resumes it anyway, recording the new configuration",
    ]
    assert query(tmp_path, "SELECT count(*) FROM scores WHERE scorer_id = 'polite'") == [(0,)]

    forced = cli("run", "polite.toml", "--no-progress", "--resume", "--retry-errors", "--force",
                 env_extra=ENV)  # fmt: skip
    assert forced.code == 0, forced.stderr
    assert query(tmp_path, "SELECT count(*) FROM scores WHERE scorer_id = 'polite'") == [(6,)]
