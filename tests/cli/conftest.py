from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest


@dataclass(frozen=True)
class Completed:
    code: int
    stdout: str
    stderr: str


Cli = Callable[..., Completed]


def run_cli(*args: str, cwd: Path, env_extra: dict[str, str] | None = None) -> Completed:
    """Run the real ``python -m evalkit`` in a subprocess, in ``cwd``, without OpenAI keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env.update(env_extra or {})
    done = subprocess.run(
        [sys.executable, "-m", "evalkit", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return Completed(done.returncode, done.stdout, done.stderr)


def start_cli(
    *args: str, cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start the real ``python -m evalkit`` without OpenAI keys, in a session of its own (so
    a signal can be sent to its whole process group), its output piped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env.update(env_extra or {})
    return subprocess.Popen(
        [sys.executable, "-m", "evalkit", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    """Run the real ``python -m evalkit`` in a subprocess, in ``tmp_path``."""

    def run(*args: str, cwd: Path = tmp_path, env_extra: dict[str, str] | None = None) -> Completed:
        return run_cli(*args, cwd=cwd, env_extra=env_extra)

    return run


def write_dataset(path: Path, *, wrong: int = 0, rows: int = 60, hostile: bool = False) -> Path:
    """``rows`` questions whose output equals the ground truth, except the first ``wrong``."""
    data = {
        "id": [f"q{i:03d}" for i in range(rows)],
        "input": [f"What is {i} + {i}?" for i in range(rows)],
        "groundTruth": [str(2 * i) for i in range(rows)],
        "output": [str(2 * i + 1) if i < wrong else str(2 * i) for i in range(rows)],
    }
    if hostile:
        data["output"][0] = "<script>alert('pwned')</script>"
    pd.DataFrame(data).to_parquet(path)
    return path


def write_experiment(
    folder: Path,
    *,
    name: str = "nightly",
    dataset: str = "data.parquet",
    threshold: float = 0.5,
    extra: str = "",
) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(
        f"""
[experiment]
name = "{name}"
dataset = "{dataset}"
store = "evalkit.duckdb"
concurrency = 4

[[scorers]]
use = "exact_match"
id = "exact"
threshold = {threshold}

[[scorers]]
use = "token_f1"

[regression]
baseline = "latest"
max_drop = 0.02
{extra}
""",
        encoding="utf-8",
    )
    return path
