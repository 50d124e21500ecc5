"""A soak: thirteen nights in a row with faults, interrupts, kills, resumes and two writers.

Every night is a real ``evalkit run`` against the shipped test server answering 10 % of
requests with a 500. The night's fate (``FATES``) decides whether it finishes, gets a SIGINT or
a SIGKILL to its whole process group at a random moment partway; the night after an unfinished
one resumes it. Every other night a second experiment writes to the same store at the same time,
and every fourth night runs sharded on a process pool. A last night runs against a judge
reporting absurd usage counts (``1e20``, ``10**20``, a huge ``reasoning_tokens``: the test
server's rules file) on most of its replies. At the end every finished run holds exactly the
rows of a clean run, nothing is left ``running`` and no process started by a night outlives it.

There were twenty nights, their fates drawn from a seeded ``random.Random``: eight of the last
nine (nights 11 to 19) repeated a kind of night already run, a resumed night interrupted again
(two writers and a SIGINT, or one writer and a SIGKILL), each night one or two ``evalkit run``
processes of about 2 s of CPU. The thirteen
fates below cover every kind of night those twenty did (one or two writers, sharded or not,
fresh or resumed, finished, interrupted or killed; eleven kinds) and a twelfth they never
reached, a resumed night killed while the second writer runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evalkit.testing import server_process
from tests.cli.conftest import run_cli, start_cli, write_dataset

#: Each night's fate; the night after an interrupted or killed one resumes it (see the module's
#: docstring for the kinds of night they make).
FATES = (
    "finish", "finish", "finish", "finish", "sigkill", "sigint", "finish",
    "sigint", "finish", "sigkill", "sigint", "sigkill", "sigkill",
)  # fmt: skip
ROWS = 60
KEY_ENV = "EVALKIT_SOAK_KEY"
ROWS_SQL = """
    SELECT item_id, scorer_id, score FROM scores WHERE experiment_id = ? ORDER BY 1, 2
"""


def _experiment(folder: Path, name: str, base_url: str, store: str, *, file: str = "") -> Path:
    path = folder / f"{file or name}.toml"
    path.write_text(
        f"""
[experiment]
name = "{name}"
dataset = "data.parquet"
store = "{store}"
concurrency = 4

[judge]
model = "fake-judge"
base_url = "{base_url}"
api_key_env = "{KEY_ENV}"
max_concurrency = 4
max_retries = 8

[[scorers]]
use = "llm_rubric"
id = "correct"
params = {{ rubric = "The answer is a single number.", scale = 1.0 }}

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )
    return path


#: The absurd night's judge: counts no store column can hold on 80 % of the replies, the
#: reply itself as usual (the rules file's ``usage``; each rule draws on its own, in order).
ABSURD_RULES = [
    {"usage": {"completion_tokens": 1e20}, "probability": 0.3},
    {"usage": {"prompt_tokens": 10**20, "total_tokens": -1}, "probability": 0.45},
    {"usage": {"completion_tokens_details": {"reasoning_tokens": 1e300}}, "probability": 0.8},
]


#: Every night's process, so a failing night does not leave the others running (and warning
#: in whatever test comes next).
_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _end_every_night() -> Iterator[None]:
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def _start(folder: Path, *args: str) -> subprocess.Popen[str]:
    proc = start_cli("run", *args, cwd=folder, env_extra={KEY_ENV: "sk-soak"})
    _STARTED.append(proc)
    return proc


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=180)
    return proc.returncode, err


def _run(folder: Path, *args: str) -> tuple[int, str]:
    return _finish(_start(folder, *args))


def _survivors(folder: Path) -> list[int]:
    """Pids of live processes started in ``folder`` (by cwd or command line), zombies aside."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if state != "Z" and (cwd.startswith(str(folder)) or str(folder) in cmdline):
            found.append(int(entry.name))
    return found


def _no_survivors(folder: Path) -> None:
    deadline = time.monotonic() + 30
    while (alive := _survivors(folder)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive, f"processes outlived their night: {alive}"


def _preflights(base_url: str) -> int:
    """``GET /v1/models`` requests (a run's preflight check) the test server has received."""
    root = base_url.rstrip("/").removesuffix("/v1")
    with urllib.request.urlopen(f"{root}/_evalkit/stats", timeout=30) as response:
        count: int = json.load(response)["models"]
    return count


def _wait_for_preflights(proc: subprocess.Popen[str], base_url: str, count: int) -> None:
    """Wait until the server has received ``count`` preflight checks, or ``proc`` ended.

    A run checks its judge's endpoint once its command line is running, with its Ctrl-C
    handling in place; a signal sent earlier lands in the interpreter's start-up, which on a
    loaded machine took longer than the old fixed half second.
    """
    deadline = time.monotonic() + 120  # far above a run's start-up on a loaded machine
    while proc.poll() is None and _preflights(base_url) < count:
        assert time.monotonic() < deadline, "the night sent no preflight check in 120 s"
        time.sleep(0.01)


def _query(store: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def _night(
    folder: Path,
    name: str,
    rng: random.Random,
    unfinished: bool,
    sharded: bool,
    fate: str,
    *,
    url: str,
    preflights: int,
) -> bool:
    """One night of ``name``: True when it ended unfinished (interrupted or killed).

    ``preflights``: the server's count of preflight checks once this night's run has sent its.
    """
    args = [f"{name}.toml", *(["--resume"] if unfinished else [])]
    if sharded:
        args += ["--executor", "process", "--workers", "2"]
    proc = _start(folder, *args)
    if fate != "finish":
        _wait_for_preflights(proc, url, preflights)
        # Then a random moment of the run: the signal's point is the case, no assertion
        # depends on where it landed.
        time.sleep(rng.uniform(0.0, 3.0))
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT if fate == "sigint" else signal.SIGKILL)
    code, err = _finish(proc)
    if unfinished and code == 2 and "to resume" in err:
        # The signal came after the run had already finished: tonight runs afresh.
        return _night(
            folder, name, rng, False, sharded, fate, url=url, preflights=_preflights(url) + 1
        )
    if fate == "sigint" and code == 130:
        return True
    if code == -signal.SIGKILL:
        return True
    assert code == 0, f"night of {name} ({fate}, {args}) ended {code}: {err[-2000:]}"
    return False


@pytest.mark.long(seconds=60)
def test_nights_of_faults_kills_and_resumes_leave_a_clean_store(tmp_path: Path) -> None:
    clean, soak = tmp_path / "clean", tmp_path / "soak"
    clean.mkdir()
    soak.mkdir()
    rng = random.Random(20261203)
    with (
        server_process("--latency", "0.05") as good,
        server_process(
            "--latency", "0.1", "--fault", "500", "--fault-rate", "0.1", "--seed", "11"
        ) as faulty,
    ):
        for folder, url, store in ((clean, good, "clean.duckdb"), (soak, faulty, "evalkit.duckdb")):
            write_dataset(folder / "data.parquet", wrong=7, rows=ROWS)
            for name in ("nightly", "other"):
                _experiment(folder, name, url, store)
        for name in ("nightly", "other"):
            # The clean runs only give the rows to expect: in this process, no start-up.
            done = run_cli("run", f"{name}.toml", cwd=clean, env_extra={KEY_ENV: "sk-soak"})
            assert done.code == 0, done.stderr

        unfinished = {"nightly": False, "other": False}
        sharded = False
        for night, fate in enumerate(FATES):
            # An unfinished night is resumed the way it ran (sharded or not).
            sharded = sharded if unfinished["nightly"] else night % 4 == 3
            if night % 2:
                # Two writers on one store: the second experiment runs alongside, to the end.
                before = _preflights(faulty)
                other = _start(soak, "other.toml", *(["--resume"] if unfinished["other"] else []))
                unfinished["nightly"] = _night(
                    soak, "nightly", rng, unfinished["nightly"], sharded, fate,
                    url=faulty, preflights=before + 2,
                )  # fmt: skip
                code, err = _finish(other)
                assert code == 0, f"night {night}, other: {err[-2000:]}"
                unfinished["other"] = False
            else:
                unfinished["nightly"] = _night(
                    soak, "nightly", rng, unfinished["nightly"], sharded, fate,
                    url=faulty, preflights=_preflights(faulty) + 1,
                )  # fmt: skip
            _no_survivors(soak)
        if unfinished["nightly"]:
            pool = ["--executor", "process", "--workers", "2"] if sharded else []
            code, err = _run(soak, "nightly.toml", "--resume", *pool)
            # 2 "... to resume": the signal came after the last night had finished.
            assert code == 0 or (code == 2 and "to resume" in err), err

    # The absurd night (issue 30): its run completes with every result, like a clean one.
    rules = tmp_path / "absurd-rules.json"
    rules.write_text(json.dumps(ABSURD_RULES), encoding="utf-8")
    with server_process("--latency", "0.01", "--rules", str(rules), "--seed", "7") as absurd:
        _experiment(soak, "nightly", absurd, "evalkit.duckdb", file="absurd")
        code, err = _run(soak, "absurd.toml")
        assert code == 0, err
        assert "Traceback" not in err
    _no_survivors(soak)
    [(odd, total)] = _query(
        soak / "evalkit.duckdb",
        "SELECT count(*) FILTER (WHERE output_tokens IS NULL"
        " OR input_tokens IS NULL OR reasoning_tokens IS NULL), count(*) FROM judge_executions"
        " WHERE experiment_id = (SELECT id FROM experiments ORDER BY started_at DESC LIMIT 1)",
    )
    assert total == ROWS
    assert ROWS // 2 <= odd < ROWS  # about 80 %: the absurd counts are NULL, not a crash

    clean_store, soak_store = clean / "clean.duckdb", soak / "evalkit.duckdb"
    assert _query(soak_store, "SELECT count(*) FROM experiments WHERE status = 'running'") == [(0,)]
    for name in ("nightly", "other"):
        [(clean_id,)] = _query(clean_store, "SELECT id FROM experiments WHERE name = ?", [name])
        expected = _query(clean_store, ROWS_SQL, [clean_id])
        assert len(expected) == 2 * ROWS
        finished = _query(
            soak_store,
            "SELECT id FROM experiments WHERE name = ? AND status = 'completed'",
            [name],
        )
        assert finished
        for (experiment_id,) in finished:
            assert _query(soak_store, ROWS_SQL, [experiment_id]) == expected, experiment_id
