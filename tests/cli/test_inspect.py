from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evalkit import compare_experiments, list_scorers
from evalkit.cli._inspect import comparison_table
from tests.cli.conftest import Cli, write_dataset, write_experiment


def _two_runs(cli: Cli, tmp_path: Path) -> list[str]:
    write_dataset(tmp_path / "data.parquet", wrong=0)
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    write_dataset(tmp_path / "data.parquet", wrong=30)
    cli("run", "nightly.toml", "--no-progress")
    listed = cli("experiments", "--json")
    assert listed.code == 0, listed.stderr
    return [row["id"] for row in json.loads(listed.stdout)]


def test_sql_prints_query_results_in_each_format(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=6)
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    query = (
        "SELECT scorer_id, count(*) AS n, round(avg(score), 2) AS mean "
        "FROM scores GROUP BY 1 ORDER BY 1"
    )
    table = cli("sql", query)
    assert table.code == 0, table.stderr
    assert table.stdout.splitlines()[0].split() == ["scorer_id", "n", "mean"]
    assert "exact" in table.stdout
    assert "0.900" in table.stdout
    assert "(2 rows)" in table.stdout
    csv_out = cli("sql", "--format", "csv", query)
    assert csv_out.stdout.splitlines() == ["scorer_id,n,mean", "exact,60,0.9", "token_f1,60,0.9"]
    as_json = json.loads(cli("sql", "--format", "json", query).stdout)
    assert as_json[0] == {"scorer_id": "exact", "n": 60, "mean": 0.9}


def test_sql_is_read_only_unless_write(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    write_experiment(tmp_path)
    assert cli("run", "nightly.toml", "--no-progress").code == 0
    refused = cli("sql", "DELETE FROM scores")
    assert refused.code == 2
    assert "Traceback" not in refused.stderr
    assert cli("sql", "--write", "DELETE FROM scores").code == 0
    assert "0" in cli("sql", "--format", "csv", "SELECT count(*) FROM scores").stdout


def test_sql_on_a_missing_store_is_a_clean_error(cli: Cli) -> None:
    done = cli("sql", "--store", "missing.duckdb", "SELECT 1")
    assert done.code == 2
    assert "missing.duckdb" in done.stderr
    assert "Traceback" not in done.stderr


def test_experiments_show_and_compare(cli: Cli, tmp_path: Path) -> None:
    newest, oldest = _two_runs(cli, tmp_path)
    listing = cli("experiments")
    assert listing.code == 0
    assert newest in listing.stdout
    assert oldest in listing.stdout
    assert "exact=0.500" in listing.stdout
    assert "exact=1.000" in listing.stdout

    shown = cli("show", newest)
    assert shown.code == 0, shown.stderr
    assert "nightly" in shown.stdout
    assert any(line.startswith("exact") and "0.500" in line for line in shown.stdout.splitlines())

    compared = cli("compare", oldest, newest)
    assert compared.code == 1, compared.stderr
    exact = next(line for line in compared.stdout.splitlines() if line.startswith("exact"))
    assert "-0.500" in exact
    assert exact.rstrip().endswith("regressed")
    same = cli("compare", oldest, oldest)
    assert same.code == 0


def test_scorers_lists_prebuilt_names(cli: Cli) -> None:
    done = cli("scorers")
    assert done.code == 0
    names = {line.split()[0] for line in done.stdout.splitlines()[2:]}
    assert names == {info.name for info in list_scorers()}
    assert {"exact_match", "contains", "regex_match", "answer_relevancy", "llm_rubric"} <= names
    listed = json.loads(cli("scorers", "--json").stdout)
    assert {"name", "description", "higher_is_better"} <= set(listed[0])


def test_compare_table_shows_a_sampled_p_value_with_its_monte_carlo_error() -> None:
    rng = np.random.default_rng(4)
    before = rng.uniform(0.0, 1.0, 200)
    after = np.clip(before + rng.normal(-0.02, 0.1, 200), 0.0, 1.0)
    ids = [f"i{k}" for k in range(200)]
    comparison = compare_experiments(
        {"s": dict(zip(ids, before.tolist(), strict=True))},
        {"s": dict(zip(ids, after.tolist(), strict=True))},
        resamples=2_000,
    )
    (line,) = [row for row in comparison_table(comparison).splitlines() if row.startswith("s ")]
    c = comparison["s"]
    assert c.p_value is not None
    assert c.p_value_error is not None
    assert f"{c.p_value:.3g} ± {c.p_value_error:.1g}" in line
    # 0/1 scores: the exact test, printed without an error.
    exact = compare_experiments({"s": {"a": 1.0, "b": 1.0}}, {"s": {"a": 0.0, "b": 1.0}})
    assert "±" not in comparison_table(exact)
