from __future__ import annotations

import inspect
import pickle
import threading
from typing import Any

import pytest

import evalkit.errors as errors
from evalkit import create_scorer
from evalkit.errors import (
    BaselineError,
    ConfigError,
    DatasetError,
    EvalkitError,
    ExperimentFileError,
    ExperimentFileIssue,
    InvalidScoreError,
    JudgeError,
    PreflightError,
    PreflightIssue,
    ScorerInputError,
    ScorerRunError,
    StoreError,
    TargetError,
)

EXAMPLES: list[EvalkitError] = [
    EvalkitError("base"),
    ConfigError("bad option"),
    ExperimentFileError(
        "x.toml",
        3,
        "experiment.name",
        "expected a string",
        more=[ExperimentFileIssue("x.toml", 5, None, "p")],
    ),
    InvalidScoreError("high"),
    ScorerInputError("exact_match", "ground_truth", "missing"),
    ScorerRunError(
        scorer_id="q",
        scorer_name="Quality",
        failed_step="analyze",
        completed_steps=("preprocess",),
        cause=ValueError("boom"),
        result=None,
    ),
    JudgeError("judge failed", code="format"),
    PreflightError(
        [
            PreflightIssue("judge", "m", "http://h/v1", "K", "unreachable", "cannot connect"),
            PreflightIssue("target", "t", None, "K", "missing_key", "K is not set"),
        ]
    ),
    DatasetError("qa.parquet", "required column is missing", column="input"),
    TargetError("target failed"),
    StoreError("store locked"),
    BaselineError("latest", "run abc is cancelled, not complete"),
]


def test_every_error_class_has_an_example() -> None:
    classes = {
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, EvalkitError)
    }
    assert classes == {type(error) for error in EXAMPLES}


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda error: type(error).__name__)
def test_every_error_survives_a_pickle_round_trip(error: EvalkitError) -> None:
    error.add_note("a note")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    assert copy.to_dict() == error.to_dict()
    assert vars(copy) == vars(error)
    assert copy.__notes__ == ["a note"]


def test_invalid_score_error_keeps_its_message_once() -> None:
    copy = pickle.loads(pickle.dumps(InvalidScoreError(float("inf"))))
    assert str(copy) == "generate_score returned inf (float), not a finite number"
    assert copy.value == float("inf")


def test_an_unpicklable_score_value_is_dropped_but_the_message_kept() -> None:
    error = InvalidScoreError(threading.Lock())
    copy = pickle.loads(pickle.dumps(error))
    assert copy.value is None
    assert str(copy) == str(error)


async def failure(preprocess: Any) -> ScorerRunError:
    def analyze() -> None:
        raise ValueError("analysis broke")

    scorer = (
        create_scorer("Flaky").preprocess(preprocess).analyze(analyze).generate_score(lambda: 1)
    )
    with pytest.raises(ScorerRunError) as caught:
        await scorer.run(input="q", output="a", run_id="r-1")
    return caught.value


async def test_a_scorer_run_error_keeps_its_picklable_snapshot() -> None:
    error = await failure(lambda run: {"words": run.output.split()})
    copy = pickle.loads(pickle.dumps(error))
    assert copy.result == error.result
    assert copy.result is not None
    assert (copy.result.run_id, copy.result.preprocess_step_result) == ("r-1", {"words": ["a"]})
    assert (copy.failed_step, copy.completed_steps) == ("analyze", ("preprocess",))
    assert (copy.cause_name, copy.cause_message) == ("ValueError", "analysis broke")


async def test_an_unpicklable_snapshot_is_dropped_from_the_copy_only() -> None:
    error = await failure(lambda: {"lock": threading.Lock()})
    copy = pickle.loads(pickle.dumps(error))
    assert copy.result is None
    assert error.result is not None
    assert str(copy) == str(error)
