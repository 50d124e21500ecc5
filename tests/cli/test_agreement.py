"""``evalkit run`` with human labels: the agreement table, ``--json`` and the agreement gate,
end to end on a real Parquet dataset and store."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from tests.cli.conftest import Cli

ROWS = 60


def _folder(tmp_path: Path, *, bound: float | int) -> Path:
    # exact_match is right on 40 rows (i % 3); a person marks 4 of them (q001, q002, q004, q005)
    # "bad" as well as the 20 others.
    pd.DataFrame(
        {
            "id": [f"q{i:03d}" for i in range(ROWS)],
            "input": [f"What is {i} + {i}?" for i in range(ROWS)],
            "groundTruth": [str(2 * i) if i % 3 else "x" for i in range(ROWS)],
            "output": [str(2 * i) for i in range(ROWS)],
            "human": ["good" if (i % 3 and i >= 6) else "bad" for i in range(ROWS)],
        }
    ).to_parquet(tmp_path / "data.parquet")
    (tmp_path / "labelled.toml").write_text(
        f"""
[experiment]
name = "labelled"
dataset = "data.parquet"
store = "evalkit.duckdb"
labels = {{ exact = {{ columns = "human", levels = ["bad", "good"] }} }}

[[scorers]]
use = "exact_match"
id = "exact"
min_agreement = {{ kappa = {bound} }}
""",
        encoding="utf-8",
    )
    return tmp_path


def test_an_agreement_gate_fails_the_run_and_says_why(cli: Cli, tmp_path: Path) -> None:
    folder = _folder(tmp_path, bound=0.9)
    done = cli("run", "labelled.toml", "--no-progress", cwd=folder)
    assert done.code == 1, done.stderr
    assert "agreement with human labels:" in done.stdout
    assert "kappa" in done.stdout
    assert ">= 0.9 FAILED" in done.stdout
    assert "below min_agreement 0.9" in done.stdout + done.stderr
    with duckdb.connect(str(folder / "evalkit.duckdb"), read_only=True) as con:
        [(kappa,)] = con.execute(
            "SELECT value FROM scorer_agreement WHERE metric = 'kappa'"
            " AND compared_with = 'consensus'"
        ).fetchall()
    assert kappa < 0.9


@pytest.mark.parametrize("bound", [0.5, 0])
def test_an_agreement_gate_that_holds_passes_and_json_carries_the_figures(
    cli: Cli, tmp_path: Path, bound: float
) -> None:
    folder = _folder(tmp_path, bound=bound)
    done = cli("run", "labelled.toml", "--no-progress", "--json", cwd=folder)
    assert done.code == 0, done.stderr
    found = json.loads(done.stdout)["agreement"]["exact"]
    assert found["kind"] == "binary"
    assert found["consensus"]["n"] == ROWS
    # Rows: the person's label (bad, good); columns: the scorer's (0, 1).
    assert found["consensus"]["metrics"]["accuracy"]["value"] == pytest.approx(56 / 60)
    assert found["consensus"]["confusion"] == [[20, 4], [0, 36]]
    assert {d["item_id"] for d in found["disagreements"]} == {"q001", "q002", "q004", "q005"}


def test_labels_in_an_experiment_file_are_checked_with_the_file(cli: Cli, tmp_path: Path) -> None:
    folder = _folder(tmp_path, bound=0.5)
    text = (folder / "labelled.toml").read_text(encoding="utf-8")
    (folder / "labelled.toml").write_text(
        text.replace('levels = ["bad", "good"]', 'levels = ["bad"]')
    )
    done = cli("run", "labelled.toml", "--no-progress", cwd=folder)
    assert done.code == 2
    assert "labelled.toml" in done.stderr
    assert "levels must be a list of at least two label values" in done.stderr
