"""The comparison's defaults are declared once (``evalkit/_defaults.py``); every way in to a
comparison states the same ones: ``compare_experiments``, ``judge_run``, the experiment file's
``[regression]`` table, ``evalkit compare``'s flags (issue 34, item 4:
docs/pages/design/one-statistics-module.md)."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import pytest

from evalkit import compare_experiments
from evalkit._defaults import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MAX_DROP,
    DEFAULT_MIN_PAIRED,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from evalkit.cli import build_parser
from evalkit.experiment_file import RegressionSection, judge_run

DEFAULTS: dict[str, Any] = {
    "max_drop": DEFAULT_MAX_DROP,
    "confidence": DEFAULT_CONFIDENCE,
    "resamples": DEFAULT_RESAMPLES,
    "seed": DEFAULT_SEED,
    "min_paired": DEFAULT_MIN_PAIRED,
}


def _compare_flags() -> dict[str, Any]:
    actions = build_parser()._actions
    commands = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    command: argparse.ArgumentParser = commands.choices["compare"]
    return {a.dest: a.default for a in command._actions if a.option_strings}


@pytest.mark.parametrize("name", ["max_drop", "confidence", "resamples", "seed"])
def test_compare_experiments_takes_the_declared_defaults(name: str) -> None:
    parameter = inspect.signature(compare_experiments).parameters[name]
    assert parameter.default == DEFAULTS[name]


@pytest.mark.parametrize("name", ["max_drop", "confidence", "resamples", "min_paired"])
def test_the_experiment_file_and_evalkit_compare_take_the_declared_defaults(name: str) -> None:
    assert RegressionSection().model_dump()[name] == DEFAULTS[name]
    assert _compare_flags()[name] == DEFAULTS[name]


def test_judge_run_takes_the_declared_max_drop() -> None:
    assert inspect.signature(judge_run).parameters["max_drop"].default == DEFAULT_MAX_DROP


def test_the_help_of_evalkit_compare_states_the_defaults() -> None:
    actions = build_parser()._actions
    commands = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    text = commands.choices["compare"].format_help()
    assert f"tolerated drop in mean ({DEFAULT_MAX_DROP:g})" in text
    assert f"({DEFAULT_RESAMPLES:,})" in text
