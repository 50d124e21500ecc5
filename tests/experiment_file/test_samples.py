from __future__ import annotations

from pathlib import Path

import pytest

from evalkit import load_experiment_file

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "experiments").glob("*.toml"))


def test_the_sample_experiments_are_there() -> None:
    assert {path.name for path in SAMPLES} >= {
        "quickstart.toml",
        "regression-demo.toml",
        "nightly-llm.toml",
    }


@pytest.mark.parametrize("path", SAMPLES, ids=lambda path: path.name)
def test_every_sample_experiment_is_valid(path: Path) -> None:
    config = load_experiment_file(path).config
    assert config.experiment.dataset is not None
    assert config.experiment.dataset.is_file()
    assert config.experiment.store == ROOT / "evalkit.duckdb"
    assert all(entry.threshold is not None for entry in config.scorers)


def test_the_regression_demo_pairs_with_quickstart() -> None:
    quickstart = load_experiment_file(ROOT / "experiments" / "quickstart.toml").config
    demo = load_experiment_file(ROOT / "experiments" / "regression-demo.toml").config
    assert demo.regression is not None
    assert demo.regression.baseline == quickstart.experiment.name
    assert [(s.use, s.id) for s in demo.scorers] == [(s.use, s.id) for s in quickstart.scorers]
    assert quickstart.target is None
    assert demo.experiment.dataset is not None
    assert demo.experiment.dataset.name == "qa_v2.parquet"
