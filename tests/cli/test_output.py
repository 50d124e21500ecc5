"""A reader that stops reading (``evalkit ... | head``) ends the output quietly: no traceback,
and the exit code stays what the command found. Real pipes, closed early by the reader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.cli.conftest import run_cli, write_dataset, write_experiment

_ENV = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
_NOISE = ("Traceback", "BrokenPipeError", "Broken pipe", "Exception ignored")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a store holding two runs named nightly (the tests only read it)."""
    folder = tmp_path_factory.mktemp("pipes")
    write_dataset(folder / "data.parquet", wrong=6)
    write_experiment(folder)
    for _ in range(2):
        done = run_cli("run", "nightly.toml", "--no-progress", cwd=folder)
        assert done.code == 0, done.stderr
    return folder


def _into_a_closed_pipe(args: list[str], cwd: Path, *, stderr_too: bool = False) -> tuple[int, str]:
    """Run the CLI with stdout (and stderr) on a pipe whose reader is gone before it writes."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "evalkit", *args],
            cwd=cwd,
            env=_ENV,
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr or ""


@pytest.mark.parametrize(
    "args",
    [
        ["experiments"],
        ["experiments", "--json"],
        ["show", "latest"],
        ["show", "latest", "--json"],
        ["compare", "nightly", "nightly"],
        ["sql", "SELECT * FROM scores"],
        ["sql", "--format", "csv", "SELECT * FROM scores"],
        ["sql", "--format", "json", "SELECT * FROM scores"],
        ["scorers"],
        ["scorers", "--json"],
        ["cache", "stats"],
        ["run", "--help"],
        ["export", "latest", "--format", "csv", "--output", "/dev/stdout"],
        ["export", "latest", "--format", "jsonl", "--output", "/dev/stdout"],
        ["export", "latest", "--format", "parquet", "--output", "/dev/stdout"],
    ],
)
def test_a_reader_gone_before_the_output_ends_nothing(runs: Path, args: list[str]) -> None:
    code, stderr = _into_a_closed_pipe(args, runs)
    assert code == 0, stderr
    assert not [noise for noise in _NOISE if noise in stderr], stderr


def test_an_export_to_stdout_is_the_data_alone_and_says_what_it_wrote_on_stderr(
    runs: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalkit", "export", "latest", "--format", "csv", "--output",
         "/dev/stdout"],
        cwd=runs, env=_ENV, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("experiment_id,")
    assert len(lines) > 1
    assert not [line for line in lines if line.startswith("wrote ")], lines[-1]
    assert "wrote " in done.stderr


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_reader_that_stops_mid_output_ends_it_quietly(runs: Path, fmt: str) -> None:
    # About 10 MB of output: far more than a pipe holds, so the CLI is still writing when
    # the reader has read its first line and goes away, as `| head -1` does.
    query = "SELECT range AS n, repeat('x', 50) AS text FROM range(200000)"
    with subprocess.Popen(
        [sys.executable, "-m", "evalkit", "sql", "--format", fmt, query],
        cwd=runs,
        env=_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        _, stderr = proc.communicate(timeout=120)
    assert first.strip()
    assert proc.returncode == 0, stderr
    assert not [noise for noise in _NOISE if noise in stderr], stderr


def _statuses(store: Path) -> list[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("SELECT status FROM experiments ORDER BY started_at").fetchall()
    return [status for (status,) in rows]


@pytest.mark.parametrize(("wrong", "code"), [(0, 0), (60, 1)])
def test_a_run_into_a_closed_pipe_is_stored_and_exits_as_its_gates_say(
    tmp_path: Path, wrong: int, code: int
) -> None:
    write_dataset(tmp_path / "data.parquet", wrong=wrong)
    write_experiment(tmp_path)
    # The progress bar is on, and writes to the closed pipe too.
    done = _into_a_closed_pipe(["run", "nightly.toml"], tmp_path, stderr_too=True)
    assert done[0] == code
    assert _statuses(tmp_path / "evalkit.duckdb") == ["completed"]
    done = _into_a_closed_pipe(["run", "nightly.toml", "--json"], tmp_path)
    assert done[0] == code, done[1]
    assert not [noise for noise in _NOISE if noise in done[1]], done[1]
    assert _statuses(tmp_path / "evalkit.duckdb") == ["completed", "completed"]


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_text_an_ascii_terminal_cannot_show_is_escaped_not_a_traceback(
    runs: Path, fmt: str
) -> None:
    done = run_cli(
        "sql", "--format", fmt, "SELECT 'café ✓' AS x", cwd=runs,
        env_extra={"PYTHONIOENCODING": "ascii"},
    )  # fmt: skip
    assert done.code == 0, done.stderr
    assert "caf\\xe9 \\u2713" in done.stdout
