from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from tests.cli.conftest import Cli, write_dataset

FLAKY = """
from pathlib import Path

from evalkit import create_scorer


def _score(run):
    failing = Path("failing.txt").read_text().split()
    if run.ground_truth in failing:
        raise RuntimeError("flaky failure")
    return 1.0


scorer = create_scorer("Flaky", id="flaky").generate_score(_score)
"""

TOML = """
[experiment]
name = "nightly"
dataset = "data.parquet"
store = "evalkit.duckdb"

[[scorers]]
use = "exact_match"
id = "exact"

[[scorers]]
use = "flaky:scorer"
"""


def setup(folder: Path, failing: str) -> None:
    write_dataset(folder / "data.parquet", rows=30)
    (folder / "flaky.py").write_text(FLAKY, encoding="utf-8")
    (folder / "nightly.toml").write_text(TOML, encoding="utf-8")
    (folder / "failing.txt").write_text(failing, encoding="utf-8")


def query(folder: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_retry_errors_reruns_only_failed_pairs_in_the_same_experiment(
    cli: Cli, tmp_path: Path
) -> None:
    setup(tmp_path, "0 2 4")
    first = cli("run", "nightly.toml", "--no-progress", "--json")
    assert first.code == 1, first.stderr  # 3 of 30 flaky pairs failed: above 5%
    run = json.loads(first.stdout)
    assert run["status"] == "completed_with_errors"

    nothing = cli("run", "nightly.toml", "--no-progress", "--resume")
    assert nothing.code == 2
    assert "no run named 'nightly' to resume" in nothing.stderr

    (tmp_path / "failing.txt").write_text("2", encoding="utf-8")
    again = cli("run", "nightly.toml", "--no-progress", "--json", "--resume", "--retry-errors")
    assert again.code == 0, again.stderr  # judged over both passes: 1 of 30 failed
    resumed = json.loads(again.stdout)
    assert [s["n"] for s in resumed["scorers"]] == [30, 29]
    assert resumed["experiment_id"] == run["experiment_id"]
    assert resumed["status"] == "completed_with_errors"
    assert query(tmp_path, "SELECT item_id, scorer_id FROM scorer_errors") == [("q001", "flaky")]
    assert query(tmp_path, "SELECT scorer_id, count(*) FROM scores GROUP BY 1 ORDER BY 1") == [
        ("exact", 30),
        ("flaky", 29),
    ]
    assert query(tmp_path, "SELECT count(*), max(failed_count) FROM experiments") == [(1, 1)]

    (tmp_path / "failing.txt").write_text("", encoding="utf-8")
    by_id = cli(
        "run", "nightly.toml", "--no-progress", "--json", "--resume", run["experiment_id"][:6],
        "--retry-errors",
    )  # fmt: skip
    assert by_id.code == 0, by_id.stderr
    assert json.loads(by_id.stdout)["status"] == "completed"
    assert query(tmp_path, "SELECT count(*) FROM scorer_errors") == [(0,)]
    assert query(tmp_path, "SELECT status, succeeded_count FROM experiments") == [("completed", 30)]


def test_changed_setup_is_refused_unless_forced(cli: Cli, tmp_path: Path) -> None:
    setup(tmp_path, "2 6")
    first = cli("run", "nightly.toml", "--no-progress", "--json")
    assert first.code == 1, first.stderr  # 2 of 30 flaky pairs failed: above 5%
    experiment_id = json.loads(first.stdout)["experiment_id"]
    (tmp_path / "nightly.toml").write_text(TOML + '\n[[scorers]]\nuse = "token_f1"\n')

    refused = cli("run", "nightly.toml", "--no-progress", "--resume", "--retry-errors")
    assert refused.code == 2
    assert "refusing to resume" in refused.stderr
    assert "scorer 'token_f1' added" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert query(tmp_path, "SELECT count(*) FROM scores WHERE scorer_id = 'token_f1'") == [(0,)]

    forced = cli(
        "run", "nightly.toml", "--no-progress", "--json", "--resume", "--retry-errors", "--force"
    )
    assert forced.code == 1, forced.stderr
    assert json.loads(forced.stdout)["experiment_id"] == experiment_id
    # Every evaluated item lacks a token_f1 score, so each such pair runs; the flaky pairs
    # fail again and replace their older failures; scored pairs are not run twice.
    assert query(tmp_path, "SELECT scorer_id, count(*) FROM scores GROUP BY 1 ORDER BY 1") == [
        ("exact", 30),
        ("flaky", 28),
        ("token_f1", 30),
    ]
    assert query(tmp_path, "SELECT item_id, scorer_id FROM scorer_errors ORDER BY 1") == [
        ("q001", "flaky"),
        ("q003", "flaky"),
    ]


def test_retry_errors_and_force_need_resume(cli: Cli, tmp_path: Path) -> None:
    setup(tmp_path, "")
    done = cli("run", "nightly.toml", "--no-progress", "--force")
    assert done.code == 2
    assert "only apply with --resume" in done.stderr
    assert not (tmp_path / "evalkit.duckdb").exists()
