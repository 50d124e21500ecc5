from __future__ import annotations

from pathlib import Path

import duckdb

from tests.cli.conftest import Cli, write_dataset

SLOW = """
from evalkit import create_scorer

def _score(run):
    while run.output == "0":  # the first item's step never returns
        pass
    return 1.0

scorer = create_scorer("Slow").generate_score(_score)
"""


def test_a_step_timeout_in_the_experiment_file_fails_the_stuck_pair_only(
    cli: Cli, tmp_path: Path
) -> None:
    write_dataset(tmp_path / "data.parquet", rows=10)
    (tmp_path / "slow.py").write_text(SLOW, encoding="utf-8")
    (tmp_path / "nightly.toml").write_text(
        """
[experiment]
name = "nightly"
dataset = "data.parquet"

[[scorers]]
use = "slow:scorer"
step_timeout = 0.5
max_error_rate = 0.5
""",
        encoding="utf-8",
    )
    done = cli("run", "nightly.toml", "--no-progress")
    assert done.code == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("slow")).split()
    assert row[1:4] == ["9", "1", "0"]  # scored, failed, not run
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        errors = con.execute("SELECT item_id, error->>'$.cause' FROM scorer_errors").fetchall()
    assert errors == [("q000", "StepTimeoutError")]
