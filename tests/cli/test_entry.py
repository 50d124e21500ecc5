"""The installed ``evalkit`` command and ``python -m evalkit`` show what ``evalkit.cli.main``
called in process shows: the entries only hand off to the command line, and the in-process
``cli`` fixture the other tests use stands for the real process (exit code, stdout, stderr,
encoding, usage errors)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import (
    Cli,
    Completed,
    _process_like,
    run_command,
    write_dataset,
    write_experiment,
)

CASES = {
    "help": (["--help"], {}),
    "usage error": (["run"], {}),
    "unknown command": (["nosuch"], {}),
    "scorers --json": (["scorers", "--json"], {}),
    "missing store": (["show", "latest", "--store", "missing.duckdb"], {}),
    "ascii stdout": (
        ["sql", "--write", "--store", "new.duckdb", "SELECT 'café ✓' AS x"],
        {"PYTHONIOENCODING": "ascii"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_real_entry_and_main_in_process_show_the_same(
    cli: Cli, cli_process: Cli, tmp_path: Path, case: str
) -> None:
    args, env = CASES[case]
    real_folder, in_folder = tmp_path / "real", tmp_path / "in"
    real_folder.mkdir()
    in_folder.mkdir()
    # A real process: this test is about ``python -m evalkit`` itself.
    real = cli_process(*args, cwd=real_folder, env_extra=env)
    in_process = cli(*args, cwd=in_folder, env_extra=env)
    assert real.code == in_process.code, (real, in_process)
    assert real.stdout == in_process.stdout
    assert real.stderr == in_process.stderr
    assert "Traceback" not in real.stderr


def test_a_failed_gate_exits_1_from_the_real_entry_as_in_process(
    cli: Cli, cli_process: Cli, tmp_path: Path
) -> None:
    codes: list[int] = []
    summaries: list[tuple[object, list[str]]] = []
    for run in (cli_process, cli):  # the real process: this test is about the entry itself
        folder = tmp_path / f"run{len(codes)}"
        folder.mkdir()
        write_dataset(folder / "data.parquet", wrong=60)
        write_experiment(folder)
        done = run("run", "nightly.toml", "--json", cwd=folder)
        assert "Traceback" not in done.stderr, done.stderr
        codes.append(done.code)
        summary = json.loads(done.stdout)
        summaries.append((summary["status"], sorted(summary)))
    assert codes == [1, 1]
    assert summaries[0] == summaries[1]


def _installed(*args: str, cwd: Path) -> Completed:
    # pyproject.toml's [project.scripts]: pip puts the command beside the interpreter.
    command = Path(sys.executable).with_name("evalkit")
    assert command.is_file(), f"{command}: the evalkit command is not installed"
    return run_command([str(command), *args], cwd=cwd)


@pytest.mark.parametrize("args", [["--help"], ["scorers"], ["nosuch"]])
def test_the_installed_evalkit_command_shows_what_python_m_evalkit_shows(
    cli_process: Cli, tmp_path: Path, args: list[str]
) -> None:
    installed, module = _installed(*args, cwd=tmp_path), cli_process(*args)
    assert installed.code == module.code
    assert (installed.stdout, installed.stderr) == (module.stdout, module.stderr)
    assert installed.stdout.startswith("usage: evalkit ") or args != ["--help"]


def test_the_installed_evalkit_command_fails_a_failed_gate(tmp_path: Path) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=60)
    write_experiment(tmp_path)
    done = _installed("run", "nightly.toml", "--no-progress", "--json", cwd=tmp_path)
    assert done.code == 1, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"


def test_the_in_process_cli_sees_the_environment_without_openai_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As a child started with the test's environment minus OPENAI*: not an empty environment.
    monkeypatch.setenv("EVALKIT_ENTRY_PROBE", "seen")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-cli")
    with _process_like(tmp_path, {"EXTRA": "1"}):
        assert os.environ.get("EVALKIT_ENTRY_PROBE") == "seen"
        assert "OPENAI_API_KEY" not in os.environ
        assert os.environ.get("EXTRA") == "1"
    assert os.environ["OPENAI_API_KEY"] == "sk-not-for-the-cli"
    assert "EXTRA" not in os.environ
