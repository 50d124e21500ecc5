from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import Cli, write_dataset, write_experiment


def assert_clean_usage_error(done: object, *needles: str) -> None:
    code, stderr = done.code, done.stderr  # type: ignore[attr-defined]
    assert code == 2, stderr
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in stderr, stderr


def test_toml_syntax_error_names_file_and_line(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[experiment]\nname = "x"\ndataset = \n', encoding="utf-8")
    assert_clean_usage_error(cli("run", "bad.toml"), "bad.toml:3")


def test_unknown_key_names_key_and_line(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path, extra="colour = 'blue'")
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:19", "regression.colour")


def test_unknown_scorer_names_key_and_line(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    path.write_text(path.read_text().replace('"exact_match"', '"exact_mach"'))
    assert_clean_usage_error(
        cli("run", path.name), "nightly.toml:9", "scorers[0].use", "exact_match"
    )


def test_missing_dataset_names_the_key(cli: Cli, tmp_path: Path) -> None:
    path = write_experiment(tmp_path, dataset="nowhere.parquet")
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:4", "experiment.dataset")


def test_bad_scorer_params_name_the_params(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    text = path.read_text().replace('id = "exact"', 'id = "exact"\nparams = { ignore_kase = true }')
    path.write_text(text)
    assert_clean_usage_error(cli("run", path.name), "scorers[0].params", "ignore_kase")


def test_missing_experiment_file(cli: Cli) -> None:
    assert_clean_usage_error(cli("run", "nope.toml"), "nope.toml")


@pytest.mark.parametrize("args", [["run"], ["frobnicate"], ["run", "x.toml", "--limit", "many"]])
def test_usage_errors_exit_2(cli: Cli, args: list[str]) -> None:
    done = cli(*args)
    assert done.code == 2
    assert "usage:" in done.stderr


def test_bare_threshold_on_a_lower_is_better_scorer_is_refused(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    text = path.read_text().replace('use = "token_f1"', 'use = "toxicity"\nthreshold = 0.1')
    path.write_text(text)
    assert_clean_usage_error(cli("run", path.name), "scorers[1].threshold", "max = 0.1")


def test_duplicate_final_scorer_ids_are_refused(cli: Cli, tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet")
    path = write_experiment(tmp_path)
    text = path.read_text().replace('id = "exact"', 'id = "token-f1"')
    path.write_text(text)  # token_f1's own default id is token-f1 too
    assert_clean_usage_error(cli("run", path.name), "nightly.toml:13", "'token-f1'")
