"""Running an experiment file from Python: the library function ``evalkit run`` and the pytest
plugin both call, judged on every gate as the command judges it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalkit.errors import BaselineError, ConfigError
from evalkit.experiment_file import JudgedRun, run_experiment_file
from evalkit.store import list_experiments
from tests.cli.conftest import write_dataset, write_experiment


def test_a_file_runs_from_python_and_is_judged_against_its_baseline(tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", rows=20)
    path = write_experiment(tmp_path, name="nightly", threshold=0.5)
    first = run_experiment_file(path)
    assert isinstance(first, JudgedRun)
    assert first.passed
    assert first.report.passed
    assert first.store == str(tmp_path / "evalkit.duckdb")
    assert first.baseline is None  # the first run of its name: nothing to compare with
    assert first.verdict_error is None

    # The file's [regression] baseline = "latest": the second run is judged against the first.
    write_dataset(tmp_path / "data.parquet", rows=20, wrong=10)
    second = run_experiment_file(path, limit=20)
    assert second.baseline is not None
    assert second.baseline["id"] == first.result.experiment_id
    assert not second.passed
    verdicts = {row.scorer_id: row.verdict for row in second.report.scorers}
    assert verdicts["exact"] == "regressed"
    stored = list_experiments(first.store).to_pylist()
    assert {run["id"] for run in stored} == {
        first.result.experiment_id,
        second.result.experiment_id,
    }


def test_a_missing_named_baseline_fails_before_the_run(tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", rows=5)
    path = write_experiment(tmp_path, name="nightly")
    run_experiment_file(path)  # the store exists, with one run of another name
    with pytest.raises(BaselineError):
        run_experiment_file(path, baseline="no-such-run")
    assert len(list_experiments(tmp_path / "evalkit.duckdb")) == 1


def test_the_options_are_checked_before_the_run(tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", rows=5)
    path = write_experiment(tmp_path, name="nightly")
    with pytest.raises(ConfigError, match="--concurrency must be at least 1"):
        run_experiment_file(path, concurrency=0)
    assert not (tmp_path / "evalkit.duckdb").exists()


@pytest.mark.parametrize("name", ["run_experiment_file", "judge_run", "JudgedRun"])
def test_the_old_cli_names_still_work_with_a_warning(name: str) -> None:
    import evalkit.cli
    import evalkit.experiment_file

    with pytest.warns(DeprecationWarning, match=f"evalkit.experiment_file.{name}"):
        moved = getattr(evalkit.cli, name)
    assert moved is getattr(evalkit.experiment_file, name)
    assert name not in vars(evalkit.cli)["__all__"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("OpenAITarget", "OpenAITargetSection"),
        ("PythonTarget", "PythonTargetSection"),
        ("Target", "TargetSection"),
        ("Threshold", "ThresholdEntry"),
    ],
)
def test_the_sections_old_names_still_work_with_a_warning(old: str, new: str) -> None:
    import evalkit.experiment_file

    with pytest.warns(DeprecationWarning, match=f"is now evalkit.experiment_file.{new}"):
        renamed = getattr(evalkit.experiment_file, old)
    assert renamed is getattr(evalkit.experiment_file, new)
    assert old not in vars(evalkit.experiment_file)["__all__"]


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("KeyLocator", "_locate"),
        ("KeyPath", "_locate"),
        ("format_key", "_parts"),
        ("import_reference", "_imports"),
    ],
)
def test_the_files_plumbing_is_no_longer_exported_but_still_found(name: str, module: str) -> None:
    import importlib

    import evalkit.experiment_file

    warned = f"experiment_file.{name} is no longer exported and will be removed$"
    with pytest.warns(DeprecationWarning, match=warned):
        found = getattr(evalkit.experiment_file, name)
    assert found is getattr(importlib.import_module(f"evalkit.experiment_file.{module}"), name)
    assert name not in vars(evalkit.experiment_file)["__all__"]
