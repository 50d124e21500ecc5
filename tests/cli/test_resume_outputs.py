from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb

from tests.cli.conftest import Cli, write_dataset

APP = """
from pathlib import Path


def answer(question):
    # A different answer on every call: the call number, counted in calls.txt.
    log = Path("calls.txt")
    calls = log.read_text().splitlines() if log.exists() else []
    with log.open("a") as out:
        out.write(question + "\\n")
    return {"answer": question, "call": calls.count(question) + 1}
"""

FLAKY = """
from pathlib import Path

from evalkit import create_scorer


def _score(run):
    if run.ground_truth in Path("failing.txt").read_text().split():
        raise RuntimeError("flaky failure")
    return 1.0


scorer = create_scorer("Flaky", id="flaky").generate_score(_score)
"""

TOML = """
[experiment]
name = "nightly"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 1
max_error_rate = 1.0  # the failed pairs are on purpose: the test is about resuming

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "token_f1"

[[scorers]]
use = "flaky:scorer"
"""


def items(folder: Path) -> dict[str, Any]:
    """Per item, its stored output; asserts each score row holds its item's output."""
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        mismatched = con.execute(
            "SELECT s.item_id, s.scorer_id FROM scores s JOIN experiment_items i"
            " USING (experiment_id, item_id) WHERE s.output IS DISTINCT FROM i.output"
        ).fetchall()
        rows = con.execute("SELECT item_id, output FROM experiment_items").fetchall()
    assert mismatched == []
    return {item: json.loads(output) for item, output in rows}


def calls(folder: Path) -> int:
    return len((folder / "calls.txt").read_text().splitlines())


def test_resume_scores_on_stored_outputs_and_regenerate_asks_the_target_again(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=10)
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    (tmp_path / "flaky.py").write_text(FLAKY, encoding="utf-8")
    (tmp_path / "nightly.toml").write_text(TOML, encoding="utf-8")
    (tmp_path / "failing.txt").write_text("0 4", encoding="utf-8")  # items q000 and q002
    first = cli("run", "nightly.toml", "--no-progress", "--json")
    assert first.code == 0, first.stderr
    assert json.loads(first.stdout)["status"] == "completed_with_errors"
    assert calls(tmp_path) == 10

    (tmp_path / "failing.txt").write_text("0", encoding="utf-8")
    retried = cli("run", "nightly.toml", "--no-progress", "--resume", "--retry-errors")
    assert retried.code == 0, retried.stderr
    assert calls(tmp_path) == 10
    assert {out["call"] for out in items(tmp_path).values()} == {1}

    alone = cli("run", "nightly.toml", "--no-progress", "--regenerate")
    assert alone.code == 2
    assert "only apply with --resume" in alone.stderr

    (tmp_path / "failing.txt").write_text("", encoding="utf-8")
    again = cli(
        "run", "nightly.toml", "--no-progress", "--json", "--resume", "--retry-errors",
        "--regenerate",
    )  # fmt: skip
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "completed"
    assert calls(tmp_path) == 11
    outputs = items(tmp_path)
    assert outputs["q000"] == {"answer": "What is 0 + 0?", "call": 2}
    assert all(out["call"] == 1 for item, out in outputs.items() if item != "q000")
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM scores WHERE item_id = 'q000'").fetchall() == [
            (2,)
        ]
