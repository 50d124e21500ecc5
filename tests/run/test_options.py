"""Each option of ``run_evals`` is declared once, in `RunOptions` (``evalkit/run/_options.py``);
the signature, the docstring, ``run_evals_sync``, the experiment file's schema and ``evalkit
run``'s flags are checked against it here, so a default cannot drift
(docs/pages/design/run-options-table.md)."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from evalkit import run_evals, run_evals_sync
from evalkit._defaults import DEFAULT_LOCK_TIMEOUT, DEFAULT_STORE
from evalkit.cli import build_parser
from evalkit.experiment_file import (
    ExperimentConfig,
    ExperimentSection,
    RegressionSection,
    ScorerEntry,
)
from evalkit.run import RunOptions
from tests.typecheck import mypy_output

FIELDS = {field.name: field for field in dataclasses.fields(RunOptions)}
DEFAULTS = RunOptions()
#: run_evals' positional arguments: the data and the scorers, not options.
POSITIONAL = ("data", "scorers")


def _keywords(function: Any) -> dict[str, inspect.Parameter]:
    parameters = inspect.signature(function).parameters
    return {name: p for name, p in parameters.items() if name not in POSITIONAL}


def test_the_signature_of_run_evals_is_the_table() -> None:
    keywords = _keywords(run_evals)
    assert list(keywords) == list(FIELDS)
    for name, parameter in keywords.items():
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameter.default == getattr(DEFAULTS, name), name
        assert parameter.annotation == FIELDS[name].type, name


def test_the_defaults_the_store_states_are_the_tables() -> None:
    assert DEFAULTS.store == DEFAULT_STORE
    assert DEFAULTS.lock_timeout == DEFAULT_LOCK_TIMEOUT


def test_run_evals_sync_takes_the_arguments_of_run_evals() -> None:
    sync = inspect.signature(run_evals_sync)
    assert sync.parameters == inspect.signature(run_evals).parameters
    assert sync.return_annotation == "ExperimentResult"


def _documented(function: Any) -> list[str]:
    """The names the Args section of ``function``'s docstring documents, in order."""
    doc = inspect.getdoc(function) or ""
    section = doc.split("Args:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^    (\w+):", section, re.MULTILINE)


def test_the_docstring_of_run_evals_documents_every_option_in_order() -> None:
    assert _documented(run_evals) == [*POSITIONAL, *FIELDS]


def _key_owner(key: str) -> tuple[type[Any], str]:
    section, _, name = key.rpartition(".")
    owners = {"": ExperimentConfig, "experiment": ExperimentSection, "scorers": ScorerEntry}
    return owners[section], name


@pytest.mark.parametrize("name", [n for n, f in FIELDS.items() if f.metadata["toml"]])
def test_an_option_the_experiment_file_sets_is_in_its_schema_without_a_default_of_its_own(
    name: str,
) -> None:
    """A file that leaves a key out gets ``run_evals``' default: the schema's own default is
    "not set" (None or empty), never a second value."""
    model, key = _key_owner(FIELDS[name].metadata["toml"])
    field = model.model_fields[key]
    default = field.get_default(call_default_factory=True)
    assert default in (None, [], {}) or field.is_required(), (name, default)


def _command(name: str) -> argparse.ArgumentParser:
    """The parser of ``evalkit NAME``."""
    actions = build_parser()._actions
    commands = next(a for a in actions if isinstance(a, argparse._SubParsersAction))
    command: argparse.ArgumentParser = commands.choices[name]
    return command


@pytest.mark.parametrize("name", [n for n, f in FIELDS.items() if f.metadata["flag"]])
def test_an_option_evalkit_run_sets_has_its_flag_and_no_default_of_its_own(name: str) -> None:
    """A valued flag defaults to the table's value, or to None (the file's setting, else the
    table's); a ``--no-X`` switch turns off an option that is on by default."""
    flag = FIELDS[name].metadata["flag"]
    actions = {option: a for a in _command("run")._actions for option in a.option_strings}
    assert flag in actions, flag
    action = actions[flag]
    if flag.startswith("--no-"):
        assert action.nargs == 0
        assert action.default is False
        assert getattr(DEFAULTS, name) in (True, None), name  # None: cache's "the default"
    elif action.nargs == 0:  # --retry-errors, --regenerate, --force
        assert action.default is getattr(DEFAULTS, name) is False
    else:
        assert action.default in (None, getattr(DEFAULTS, name)), (flag, action.default)


def test_the_lock_timeout_flag_states_the_tables_default() -> None:
    actions = {option: a for a in _command("run")._actions for option in a.option_strings}
    assert actions["--lock-timeout"].default == DEFAULTS.lock_timeout
    assert f"default: {DEFAULTS.lock_timeout:g})" in (actions["--lock-timeout"].help or "")
    assert actions["--executor"].default == DEFAULTS.executor


def test_evalkit_compare_gates_as_the_regression_section_does() -> None:
    """``evalkit compare``'s gate options default to an experiment file's ``[regression]``."""
    compare = _command("compare")
    gate = RegressionSection()
    for name in ("max_drop", "confidence", "resamples", "min_paired"):
        assert compare.get_default(name) == getattr(gate, name), name


BAD_KEYWORD = """
from evalkit import run_evals_sync

run_evals_sync([{"input": "a", "output": "a"}], [], concurrency=2)
run_evals_sync([{"input": "a", "output": "a"}], [], concurrancy=2)
run_evals_sync([{"input": "a", "output": "a"}], [], lock_timeout="long")
"""


@pytest.mark.long(seconds=12)
def test_a_type_checker_refuses_a_wrong_keyword_of_run_evals_sync(tmp_path: Path) -> None:
    """``run_evals_sync`` took ``**options: Any``: a misspelt option was found at run time."""
    output = mypy_output(tmp_path, BAD_KEYWORD)
    errors = [line for line in output if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["5", "6"], output
    assert '"concurrancy"' in errors[0]
    assert '"lock_timeout"' in errors[1]
