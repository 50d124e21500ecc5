"""Every numeric option has a documented range, checked before any work (issue 30 item 7).

One table of (option, range, where it is set) and absurd values (negative, zero, NaN, inf,
1e20, an integer past 64 bits); each value outside the range is refused through every way the
option is set: the Python API (``Judge``, ``OpenAITarget``, ``create_scorer``, ``run_evals``,
a prebuilt scorer), the experiment file (with its file, line and key) and the CLI's flag (exit
2, nothing stored), each error naming the option, the value and the range.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalkit import ConfigError, ExperimentFileError, create_scorer, load_experiment_file
from evalkit import _ceilings as ceilings
from evalkit.dataset import load_dataset
from evalkit.experiment_file._build import FileBuilder
from evalkit.judge import Judge, JudgeCache
from evalkit.run import run_evals_sync
from evalkit.scorers import faithfulness, summarization
from evalkit.target import OpenAITarget
from tests.cli.conftest import Cli, write_dataset, write_experiment

ABSURD: dict[str, Any] = {
    "negative": -1,
    "zero": 0,
    "nan": math.nan,
    "inf": math.inf,
    "1e20": 1e20,
    "int past 64 bits": 10**30,
}


@dataclass(frozen=True)
class Option:
    """Where one option is set: a Python call taking the value, an experiment-file key
    (``"table.key"``, or a scorer's) and a CLI flag (with the command before it)."""

    name: str
    allowed: ceilings.Allowed
    python: Callable[[Any], object] | None = None
    python_key: str = ""
    file_key: str | None = None
    cli: tuple[str, ...] | None = None


def _judge(name: str) -> Callable[[Any], object]:
    return lambda value: Judge("m", **{name: value})


def _target(name: str) -> Callable[[Any], object]:
    return lambda value: OpenAITarget("m", **{name: value})


_JUDGE_FIELDS = {
    "temperature": ceilings.TEMPERATURE,
    "max_tokens": ceilings.MAX_TOKENS,
    "timeout": ceilings.HTTP_TIMEOUT,
    "max_retries": ceilings.RETRIES,
    "rpm": ceilings.RPM,
    "tpm": ceilings.TPM,
    "rate_limit_retries": ceilings.RATE_LIMIT_RETRIES,
    "batch_max_requests": ceilings.BATCH_MAX_REQUESTS,
    "batch_flush_after": ceilings.BATCH_SECONDS,
    "batch_poll_interval": ceilings.BATCH_SECONDS,
}
_TARGET_FIELDS = ("temperature", "max_tokens", "timeout", "max_retries", "rpm", "tpm")


def _run_evals(option: str) -> Callable[[Any], object]:
    def run(value: Any) -> object:
        rows = [{"input": "q", "output": "a", "groundTruth": "a"}]
        scorer = create_scorer("S").generate_score(lambda run: 1.0)
        return run_evals_sync(rows, [scorer], store=None, progress=False, **{option: value})

    return run


OPTIONS = [
    *(
        Option(f"judge {name}", allowed, _judge(name), f"Judge {name}", f"judge.{name}")
        for name, allowed in _JUDGE_FIELDS.items()
    ),
    *(
        Option(
            f"target {name}",
            _JUDGE_FIELDS[name],
            _target(name),
            f"OpenAITarget {name}",
            f"target.{name}",
        )
        for name in _TARGET_FIELDS
    ),
    Option(
        "step_timeout",
        ceilings.STEP_TIMEOUT,
        lambda value: create_scorer("S", step_timeout=value),
        "scorer 'S': step_timeout",
        "scorers.step_timeout",
    ),
    Option(
        "limit",
        ceilings.ROWS,
        _run_evals("limit"),
        "limit",
        cli=("run", "nightly.toml", "--no-progress", "--limit"),
    ),
    Option(
        "flush_interval", ceilings.FLUSH_INTERVAL, _run_evals("flush_interval"), "flush_interval"
    ),
    Option(
        "lock_timeout",
        ceilings.LOCK_TIMEOUT,
        _run_evals("lock_timeout"),
        "lock_timeout",
        cli=("run", "nightly.toml", "--no-progress", "--lock-timeout"),
    ),
    Option("experiments --limit", ceilings.RUNS_LISTED, cli=("experiments", "--limit")),
    Option("diff --limit", ceilings.ROWS, cli=("diff", "latest", "latest", "--limit")),
    Option("diff --offset", ceilings.ROWS, cli=("diff", "latest", "latest", "--offset")),
    Option(
        "summarization max_questions",
        ceilings.MAX_QUESTIONS,
        lambda value: summarization(max_questions=value),
        "scorer 'summarization', parameter 'max_questions'",
        "scorers.params.max_questions",
    ),
    Option(
        "load_dataset batch_size",
        ceilings.DATASET_BATCH,
        lambda value: load_dataset([{"input": "q"}], batch_size=value),
        "batch_size",
    ),
    Option("JudgeCache ttl", ceilings.CACHE_TTL, lambda value: JudgeCache(ttl=value), "ttl"),
    Option(
        "JudgeCache batch_size",
        ceilings.CACHE_BATCH,
        lambda value: JudgeCache(batch_size=value),
        "JudgeCache batch_size",
    ),
    Option(
        "faithfulness scale",
        ceilings.SCALE,
        lambda value: faithfulness(scale=value),
        "scorer 'faithfulness', parameter 'scale'",
        "scorers.params.scale",
    ),
]


def _cases(surface: str) -> list[Any]:
    cases = []
    for option in OPTIONS:
        if getattr(option, {"python": "python", "file": "file_key", "cli": "cli"}[surface]) is None:
            continue
        for label, value in ABSURD.items():
            if option.allowed.holds(value):
                continue
            if surface == "cli" and option.allowed.integer and not isinstance(value, int):
                continue  # argparse's own "invalid int value" error
            cases.append(pytest.param(option, value, id=f"{option.name}={label}"))
    return cases


def _names_the_value(message: str, value: Any) -> None:
    """The value as given, or (an integer given for a number) as the float it became."""
    shown = {repr(value)} | ({repr(float(value))} if isinstance(value, int) else set())
    assert any(text in message for text in shown), message


def _says_the_range(message: str, option: ceilings.Allowed) -> None:
    """The range: its ceiling, as the message writes it."""
    assert ceilings._number(option.high) in message, message


@pytest.mark.parametrize(("option", "value"), _cases("python"))
def test_the_python_api_refuses_an_absurd_value(option: Option, value: Any) -> None:
    assert option.python is not None
    with pytest.raises(ConfigError) as info:
        option.python(value)
    message = str(info.value)
    assert option.python_key in message
    _names_the_value(message, value)
    if not (option.allowed.integer and isinstance(value, float) and "scorer '" in message):
        # (A prebuilt scorer's parameters are typed: a float for an integer is a type error.)
        _says_the_range(message, option.allowed)


def _toml(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _file(folder: Path, key: str, value: Any) -> tuple[Path, int]:
    """An experiment file setting ``key`` to ``value``; returns it and the key's line."""
    lines = ["[experiment]", 'name = "x"', 'dataset = "data.parquet"', "[[scorers]]"]
    table, _, field = key.partition(".")
    if table == "scorers":
        lines.append(
            'use = "summarization"'
            if "max_questions" in key
            else 'use = "faithfulness"'
            if field == "params.scale"
            else 'use = "exact_match"'
        )
        field = field.removeprefix("params.")
        lines.append(
            f"params = {{ {field} = {_toml(value)} }}"
            if "params" in key
            else f"{field} = {_toml(value)}"
        )
    else:
        lines.append('use = "exact_match"')
        lines += [f"[{table}]", 'model = "m"']
        if table == "target":
            lines.append('type = "openai"')
        lines.append(f"{field} = {_toml(value)}")
    (folder / "data.parquet").touch()
    path = folder / "experiment.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(lines)


@pytest.mark.parametrize(("option", "value"), _cases("file"))
def test_the_experiment_file_refuses_an_absurd_value(
    tmp_path: Path, option: Option, value: Any
) -> None:
    assert option.file_key is not None
    path, line = _file(tmp_path, option.file_key, value)
    with pytest.raises(ExperimentFileError) as info:
        load_experiment_file(path, check=FileBuilder())
    message = str(info.value)
    assert f"experiment.toml:{line}" in message
    key = option.file_key.replace("scorers.", "scorers[0].")
    if key.startswith("scorers[0].params"):
        # A prebuilt scorer's parameters are its factory's to check: the error is its own.
        assert "scorers[0].params" in message
        assert option.python_key in message
    else:
        assert key in message
    _names_the_value(message, value)
    wrong_type = isinstance(value, float) and (option.allowed.integer or not math.isfinite(value))
    if not wrong_type:  # else: "expected an integer" / "a finite number", named as such
        _says_the_range(message, option.allowed)


@pytest.mark.parametrize(("option", "value"), _cases("cli"))
def test_the_cli_refuses_an_absurd_value(
    cli: Cli, tmp_path: Path, option: Option, value: Any
) -> None:
    assert option.cli is not None
    if option.cli[0] == "run":
        write_dataset(tmp_path / "data.parquet", rows=3)
        write_experiment(tmp_path)
    done = cli(*option.cli, str(value))
    assert done.code == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"{option.cli[-1]} " in done.stderr
    _names_the_value(done.stderr, value)
    _says_the_range(done.stderr, option.allowed)
    assert not (tmp_path / "evalkit.duckdb").exists()
