"""The judge-agreement sample, end to end: the one command its experiment file gives, run as
written (the test server with scripted replies running ``evalkit run``), on a copy of the
sample files."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from tests.cli.conftest import Cli
from tests.doubles import STATISTICS_LIBRARIES, without_modules

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "experiments" / "judge-agreement.toml"
FILES = (
    "experiments/judge-agreement.toml",
    "datasets/judge_agreement.parquet",
    "datasets/judge_agreement_replies.json",
)


def documented_command() -> list[str]:
    """The command in the comment at the top of the experiment file, ``python`` made this
    interpreter and ``evalkit`` the command installed beside it."""
    lines = EXPERIMENT.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#   python -m"))
    text = ""
    for line in lines[start:]:
        text += line.removeprefix("#").strip().removesuffix("\\") + " "
        if not line.endswith("\\"):
            break
    words = shlex.split(text)
    installed = {
        "python": sys.executable,
        "evalkit": str(Path(sys.executable).with_name("evalkit")),
    }
    return [installed.get(word, word) for word in words]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A copy of the sample's files, laid out as in the repository (the store lands here)."""
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def run(
    command: list[str], cwd: Path, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = os.environ.copy() if environ is None else environ
    env = {k: v for k, v in environ.items() if not k.startswith(("OPENAI", "EVALKIT_TEST"))}
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_the_documented_command_runs_the_sample_and_shows_the_agreement(
    sample: Path, tmp_path: Path
) -> None:
    command = documented_command()
    assert command[:3] == [sys.executable, "-m", "evalkit.testing.server"]
    assert command[-3:] == [
        str(Path(sys.executable).with_name("evalkit")),
        "run",
        "experiments/judge-agreement.toml",
    ]
    # scikit-learn, scipy and krippendorff cannot be imported, as on the base install (issue
    # 31): the server and the evalkit command it starts find packages of those names that fail
    # to import first on the path.
    absent = without_modules(tmp_path / "absent", *STATISTICS_LIBRARIES)
    done = run([*command, "--no-progress"], sample, absent)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "judge-agreement" in done.stdout
    assert "297 items, 0 failed" in done.stdout
    assert "agreement with human labels:" in done.stdout
    assert "weighted_kappa" in done.stdout
    assert ">= 0.5 passed" in done.stdout
    assert "evalkit test server listening on http://127.0.0.1:" in done.stderr
    with duckdb.connect(str(sample / "evalkit.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT compared_with, metric, value FROM scorer_agreement WHERE scorer_id = 'helpful'"
        ).fetchall()
        [(judged,)] = con.execute(
            "SELECT count(*) FROM scores WHERE scorer_id = 'helpful'"
        ).fetchall()
    found = {(compared, metric): value for compared, metric, value in rows}
    assert {compared for compared, _ in found} == {"consensus", "human_a", "human_b", "raters"}
    assert 0.5 <= found["consensus", "weighted_kappa"] < 0.8
    assert 0.6 < found["raters", "alpha"] < 0.85
    assert judged == 297


def test_a_stricter_agreement_gate_fails_the_sample(sample: Path) -> None:
    experiment = sample / "experiments" / "judge-agreement.toml"
    text = experiment.read_text(encoding="utf-8")
    stricter = text.replace(
        "min_agreement = { weighted_kappa = 0.5 }", "min_agreement = { weighted_kappa = 0.9 }"
    )
    assert stricter != text
    experiment.write_text(stricter, encoding="utf-8")
    done = run([*documented_command(), "--no-progress"], sample)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ">= 0.9 FAILED" in done.stdout
    assert "below min_agreement 0.9" in done.stdout + done.stderr


def test_the_sample_run_without_the_server_says_which_variable_is_missing(
    sample: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if name.startswith("EVALKIT_TEST")]:
        monkeypatch.delenv(name)
    done = cli("run", "experiments/judge-agreement.toml", cwd=sample)
    assert done.code == 2
    assert "judge.base_url_env: EVALKIT_TEST_SERVER_URL is not set" in done.stderr
    assert "Traceback" not in done.stderr
