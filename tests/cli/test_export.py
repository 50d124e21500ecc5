"""``evalkit export``: one stored run's items, scores and failures as Parquet, CSV or JSON Lines,
one row per item and scorer, text as text."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.cli.conftest import Cli, run_cli

TRICKY = 'He said "hi", then\nleft; 50% of é'

APP = """
def answer(question):
    if question == "crash":
        raise ValueError("target down")
    if question == "nested":
        return {"answer": "4", "steps": [1, 2]}
    return question.upper() if question.startswith("He") else question
"""

FLAKY = """
from evalkit import create_scorer


def _score(run):
    if run.input == "q2":
        raise RuntimeError("flaky failure")
    return 0.25


scorer = create_scorer("Flaky", id="flaky").generate_score(_score).generate_reason(
    lambda score: f"scored {score}"
)
"""

TOML = """
[experiment]
name = "nightly"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 1
max_error_rate = 1.0

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"
id = "exact"

[[scorers]]
use = "flaky:scorer"
"""

INPUTS = ["q0", TRICKY, "q2", "crash", "nested"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export")
    pd.DataFrame(
        {
            "id": [f"i{n}" for n in range(len(INPUTS))],
            "input": INPUTS,
            "groundTruth": ["q0", TRICKY.upper(), "q2", "x", "4"],
        }
    ).to_parquet(folder / "data.parquet")
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "flaky.py").write_text(FLAKY, encoding="utf-8")
    (folder / "nightly.toml").write_text(TOML, encoding="utf-8")
    done = run_cli("run", "nightly.toml", "--no-progress", cwd=folder)
    assert done.code == 0, done.stderr
    return folder


def _stored(folder: Path) -> tuple[str, dict[tuple[str, str], float]]:
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        (run_id,) = con.execute("SELECT id FROM experiments").fetchone() or ("",)
        scores = con.execute("SELECT item_id, scorer_id, score FROM scores").fetchall()
    return run_id, {(item, scorer): score for item, scorer, score in scores}


def _check_rows(rows: list[dict[str, Any]], folder: Path) -> None:
    """The rows of the run: one per item and scorer, one for the item whose target failed."""
    run_id, scores = _stored(folder)
    assert [(r["item_id"], r["scorer_id"]) for r in rows] == [
        ("i0", "exact"),
        ("i0", "flaky"),
        ("i1", "exact"),
        ("i1", "flaky"),
        ("i2", "exact"),
        ("i2", "flaky"),
        ("i3", None),
        ("i4", "exact"),
        ("i4", "flaky"),
    ]
    assert {r["experiment_id"] for r in rows} == {run_id}
    by_pair = {(r["item_id"], r["scorer_id"]): r for r in rows}
    for pair, score in scores.items():
        assert float(by_pair[pair]["score"]) == score
        assert by_pair[pair]["status"] == "success"
    assert len(scores) == 7  # every stored score is exported
    failed = by_pair[("i2", "flaky")]
    assert failed["status"] == "failed"
    assert failed["score"] in (None, "")
    assert failed["failed_step"] == "generate_score"
    assert "flaky failure" in failed["error_message"]
    assert by_pair[("i0", "flaky")]["reason"] == "scored 0.25"
    crashed = by_pair[("i3", None)]
    assert crashed["item_status"] == "failed"
    assert "target down" in crashed["target_error"]
    # Text is the text itself, not JSON text of it.
    tricky = by_pair[("i1", "exact")]
    assert tricky["input"] == TRICKY
    assert tricky["output"] == TRICKY.upper()
    assert tricky["ground_truth"] == TRICKY.upper()


def test_export_parquet_has_a_row_per_item_and_scorer_with_text_as_text(
    cli: Cli, folder: Path
) -> None:
    done = cli("export", "nightly", "--format", "parquet", "--output", "out.parquet", cwd=folder)
    assert done.code == 0, done.stderr
    assert "9 rows" in done.stdout
    assert "out.parquet" in done.stdout
    table = pq.read_table(folder / "out.parquet")
    rows = table.to_pylist()
    _check_rows(rows, folder)
    assert str(table.schema.field("score").type) == "double"
    assert str(table.schema.field("input").type) == "string"
    nested = next(r for r in rows if r["item_id"] == "i4")
    assert json.loads(nested["output"]) == {"answer": "4", "steps": [1, 2]}
    failed = next(r for r in rows if r["status"] == "failed" and r["scorer_id"] == "flaky")
    assert failed["completed_steps"] == []


def test_export_csv_is_the_same_rows_as_text(cli: Cli, folder: Path) -> None:
    done = cli("export", "latest", "--format", "csv", "--output", "out.csv", cwd=folder)
    assert done.code == 0, done.stderr
    with (folder / "out.csv").open(encoding="utf-8", newline="") as handle:
        rows: list[dict[str, Any]] = list(csv.DictReader(handle))
    for row in rows:
        row["scorer_id"] = row["scorer_id"] or None
    _check_rows(rows, folder)
    nested = next(r for r in rows if r["item_id"] == "i4")
    assert json.loads(nested["output"]) == {"answer": "4", "steps": [1, 2]}


def test_export_jsonl_keeps_nested_values_nested(cli: Cli, folder: Path) -> None:
    run_id, _ = _stored(folder)
    done = cli("export", run_id[:6], "--format", "jsonl", "--output", "out.jsonl", cwd=folder)
    assert done.code == 0, done.stderr
    lines = (folder / "out.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    _check_rows(rows, folder)
    nested = next(r for r in rows if r["item_id"] == "i4")
    assert nested["output"] == {"answer": "4", "steps": [1, 2]}
    failed = next(r for r in rows if r["status"] == "failed" and r["scorer_id"] == "flaky")
    assert failed["completed_steps"] == []


def test_export_writes_to_the_runs_id_by_default(cli: Cli, folder: Path) -> None:
    run_id, _ = _stored(folder)
    done = cli("export", "nightly", cwd=folder)
    assert done.code == 0, done.stderr
    assert len(pq.read_table(folder / f"{run_id}.parquet")) == 9
    done = cli("export", "nightly", "--format", "jsonl", cwd=folder)
    assert done.code == 0, done.stderr
    assert len((folder / f"{run_id}.jsonl").read_text(encoding="utf-8").splitlines()) == 9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no experiment has the id 'nope'"),
        (["nightly", "--output", "missing/out.parquet"], "missing/out.parquet"),
        (["nightly", "--format", "xlsx"], "invalid choice: 'xlsx'"),
        (["nightly", "--store", "absent.duckdb"], "absent.duckdb"),
    ],
)
def test_export_bad_input_is_one_clear_error(
    cli: Cli, folder: Path, args: list[str], message: str
) -> None:
    done = cli("export", *args, cwd=folder)
    assert done.code == 2, done.stdout
    assert message in done.stderr
    assert "Traceback" not in done.stderr
