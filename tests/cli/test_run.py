from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.cli.conftest import Cli, write_dataset, write_experiment


def test_run_writes_the_store_and_reports_and_exits_0(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=6)
    write_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress")
    assert done.code == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    exact = next(line for line in lines if line.startswith("exact"))
    assert "0.900" in exact
    assert exact.rstrip().endswith("passed")
    assert "PASSED" in done.stdout
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        counts = con.execute(
            "SELECT scorer_id, count(*), avg(score) FROM scores GROUP BY 1 ORDER BY 1"
        ).fetchall()
    assert counts == [("exact", 60, 0.9), ("token_f1", 60, 0.9)]
    reports = sorted(p.suffix for p in (tmp_path / "reports").iterdir())
    assert reports == [".html", ".md", ".xml"]


def test_threshold_failure_exits_1(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=40)
    write_experiment(tmp_path, threshold=0.5)
    done = cli("run", "nightly.toml", "--no-progress")
    assert done.code == 1
    exact = next(line for line in done.stdout.splitlines() if line.startswith("exact"))
    assert exact.rstrip().endswith("failed")
    assert "FAILED" in done.stdout


def test_regression_against_latest_exits_1_and_names_the_scorer(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    first = cli("run", "nightly.toml", "--no-progress")
    assert first.code == 0, first.stderr
    assert "no baseline: no earlier complete, full run of 'nightly'" in first.stdout

    unchanged = cli("run", "nightly.toml", "--no-progress", "--json")
    assert unchanged.code == 0, unchanged.stderr
    summary = json.loads(unchanged.stdout)
    assert summary["passed"] is True
    assert summary["baseline"] is not None
    assert {s["verdict"] for s in summary["scorers"]} == {"passed"}

    write_dataset(tmp_path / "data.parquet", wrong=20)
    regressed = cli("run", "nightly.toml", "--no-progress", "--baseline", "latest")
    assert regressed.code == 1
    exact = next(line for line in regressed.stdout.splitlines() if line.startswith("exact"))
    assert exact.rstrip().endswith("regressed")
    assert "-0.333" in exact


def test_limit_and_concurrency_options(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress", "--limit", "7", "--concurrency", "2")
    assert done.code == 0, done.stderr
    with duckdb.connect(str(tmp_path / "evalkit.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM experiment_items").fetchone() == (7,)


def test_html_report_escapes_hostile_output(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", hostile=True)
    write_experiment(tmp_path)
    done = cli("run", "nightly.toml", "--no-progress", "--report-dir", "out")
    assert done.code == 0, done.stderr
    page = next((tmp_path / "out").glob("*.html")).read_text(encoding="utf-8")
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
