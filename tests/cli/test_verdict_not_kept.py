"""A verdict the store cannot take loses nothing: the run was stored and judged, so its
reports are written and its verdict printed, and ``evalkit run`` says the store lacks it and
exits non-zero (2, or 1 when a gate failed).

The store is held read-only by another process once the runs are stored: reads (the baseline,
the comparison) go on, the verdict's write meets the lock until ``lock_timeout``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit import create_scorer, run_evals
from evalkit.cli._main import build_parser
from evalkit.cli._run import report_run
from evalkit.errors import StoreError
from evalkit.experiment_file import judge_run
from evalkit.run import ExperimentResult, ItemResult
from tests.cli.conftest import Cli, write_dataset
from tests.store.conftest import held_by_another_process, hold_gate_rows

ROWS = [{"id": f"r{i}", "input": f"q{i}", "output": "x", "groundTruth": "x"} for i in range(30)]


async def night(store: Path, score: float) -> ExperimentResult:
    scorer = create_scorer("Const", id="const").generate_score(lambda run: score)
    return await run_evals(ROWS, [scorer], store=store, experiment="n", progress=False)


def stored(store: Path, experiment_id: str) -> tuple[Any, ...]:
    with duckdb.connect(str(store), read_only=True) as con:
        found = con.execute(
            "SELECT verdict, baseline_id FROM experiments WHERE id = ?", [experiment_id]
        ).fetchall()
    return tuple(found[0])


async def test_judge_run_returns_the_verdict_the_store_could_not_take(tmp_path: Path) -> None:
    store = tmp_path / "evalkit.duckdb"
    good = await night(store, 1.0)
    bad = await night(store, 0.0)
    with held_by_another_process(store, read_only=True):
        judged = judge_run(bad, baseline="latest", lock_timeout=0.2)
    # Judged in full against the good night: regressed, the report built.
    assert not judged.passed
    assert judged.baseline is not None
    assert judged.baseline["id"] == good.experiment_id
    assert {row.scorer_id: row.verdict for row in judged.report.scorers} == {"const": "regressed"}
    assert isinstance(judged.verdict_error, StoreError)
    assert str(store) in str(judged.verdict_error)
    # The store kept run_evals' own verdict (its gates passed), without the regression gate.
    assert stored(store, bad.experiment_id) == ("passed", None)


def _run_args(*extra: str) -> Any:
    return build_parser().parse_args(["run", "nightly.toml", *extra])


@pytest.mark.parametrize("as_json", [False, True])
async def test_evalkit_run_writes_the_reports_prints_the_verdict_and_says_it_was_not_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    store = tmp_path / "evalkit.duckdb"
    await night(store, 1.0)
    bad = await night(store, 0.0)
    with held_by_another_process(store, read_only=True):
        judged = judge_run(bad, baseline="latest", lock_timeout=0.2)
    reports = tmp_path / "reports"
    args = _run_args("--report-dir", str(reports), *(["--json"] if as_json else []))
    code = report_run(args, judged, reports)
    out, err = capsys.readouterr()
    assert code == 1  # the gate failed: that exit code stays
    assert sorted(p.suffix for p in reports.iterdir()) == [".html", ".md", ".xml"]
    if as_json:
        printed = json.loads(out)
        assert printed["passed"] is False
        assert str(store) in printed["verdict_error"]
        assert printed["reports"] is not None
    else:
        assert "FAILED" in out
        assert "reports: " in out
    assert (
        f"cannot keep the verdict of 'n' ({bad.experiment_id}), failed, in the store {store}" in err
    )
    assert "run the experiment again once the store is writable" in err


async def test_a_passing_run_whose_verdict_was_not_kept_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "evalkit.duckdb"
    good = await night(store, 1.0)
    with held_by_another_process(store):
        judged = judge_run(good, lock_timeout=0.2)
    assert judged.passed
    assert judged.verdict_error is not None
    reports = tmp_path / "reports"
    code = report_run(_run_args("--report-dir", str(reports)), judged, reports)
    out, err = capsys.readouterr()
    assert code == 2
    assert "PASSED" in out
    assert len(list(reports.iterdir())) == 3
    assert f"({good.experiment_id}), passed, in the store {store}" in err


@pytest.mark.parametrize("score", [1.0, 0.0])
async def test_the_pytest_plugin_fails_a_run_whose_verdict_was_not_kept(
    tmp_path: Path, score: float
) -> None:
    from evalkit.pytest_plugin import EvalOutcome

    store = tmp_path / "evalkit.duckdb"
    await night(store, 1.0)
    run = await night(store, score)
    with held_by_another_process(store, read_only=True):
        outcome = EvalOutcome(judge_run(run, baseline="latest", lock_timeout=0.2))
    assert outcome.passed is (score == 1.0)
    with pytest.raises(pytest.fail.Exception) as failed:
        outcome.check()
    assert f"the verdict of 'n' ({run.experiment_id}) could not be kept in {store}" in str(
        failed.value
    )


def test_the_plugin_fails_a_run_whose_verdict_neither_write_could_keep(tmp_path: Path) -> None:
    from evalkit.pytest_plugin._outcome import run_python

    store = tmp_path / "evalkit.duckdb"
    held: list[duckdb.DuckDBPyConnection] = []

    def hold_the_gate_rows(result: ItemResult) -> None:
        if result.item.id == ROWS[-1]["id"]:
            held.append(hold_gate_rows(store, "const"))

    scorer = create_scorer("Const", id="const").generate_score(lambda run: 1.0)
    try:
        # No VerdictNotKeptWarning escapes (filterwarnings = error would raise it here).
        outcome = run_python(
            ROWS, [scorer], store=store, experiment="n", concurrency=1, flush_interval=3600,
            lock_timeout=0.2, on_item_complete=hold_the_gate_rows,
        )  # fmt: skip
    finally:
        for con in held:
            con.rollback()
            con.close()
    assert held
    assert outcome.passed
    assert len(outcome.result.items) == len(ROWS)
    with pytest.raises(pytest.fail.Exception) as failed:
        outcome.check()
    run_id = outcome.result.experiment_id
    assert f"the verdict of 'n' ({run_id}) could not be kept in {store}" in str(failed.value)
    assert stored(store, run_id) == (None, None)


#: The connections the experiment file's target opened (it runs in this process).
HELD: list[duckdb.DuckDBPyConnection] = []

APP = """
from pathlib import Path

from tests.cli.test_verdict_not_kept import HELD
from tests.store.conftest import hold_gate_rows


def answer(input):
    if input == "What is 19 + 19?":  # the last row, with concurrency 1
        HELD.append(hold_gate_rows(Path("evalkit.duckdb"), "exact_match"))
    return str(2 * int(input.split()[2]))
"""

EXPERIMENT = """
[experiment]
name = "held"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 1

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"
"""


def test_evalkit_run_says_once_that_the_verdict_was_not_kept(tmp_path: Path, cli: Cli) -> None:
    write_dataset(tmp_path / "data.parquet", rows=20)
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    (tmp_path / "held.toml").write_text(EXPERIMENT, encoding="utf-8")
    try:
        done = cli("run", "held.toml", "--no-progress", "--lock-timeout", "0.2",
                   "--report-dir", "reports")  # fmt: skip
    finally:
        while HELD:
            con = HELD.pop()
            con.rollback()
            con.close()
    assert done.code == 2, done.stderr
    assert "PASSED" in done.stdout
    assert len(list((tmp_path / "reports").iterdir())) == 3
    # One message, evalkit run's: not run_evals' warning as well.
    assert done.stderr.count("evalkit: ") == 1, done.stderr
    assert done.stderr.startswith("evalkit: error: cannot keep the verdict of 'held'")
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute(
            "SELECT status, succeeded_count, verdict FROM experiments"
        ).fetchall() == [("completed", 20, None)]
