"""A DuckLake store whose PostgreSQL catalog goes down while a run writes (issue 30, item 2).

Real processes and a real outage: ``evalkit run`` in a subprocess, writing a lake whose catalog
is a PostgreSQL server of the test's own, which the test stops (``pg_ctl stop``: every
connection drops, new ones are refused) and starts again on the same port. The run's
target holds its items at two gates, so the outage is sure to meet a flush with finished rows:
the first items finish and the target waits until the server is stopped; the next ones then
finish (and are flushed into the outage) and the rest wait until the test lets them go.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing, has_extension
from evalkit.store import connection
from evalkit.store._lake import prepare_store
from evalkit.store._recovery import recovery_dir
from tests.cli.conftest import Cli, start_cli, write_dataset
from tests.postgres import PostgresServer

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None or not has_extension("postgres_scanner"),
    reason=f"DuckLake's postgres extension not installed: {ducklake_missing()}",
)

ROWS = 300

# Items below FIRST run at once; those below SECOND wait for the outage (``stopped``), the
# others for the test's ``go``. Once every item is answered (``answered``), the run is at its
# last flush, which waits for the store.
APP = """
import pathlib, threading, time

HERE = pathlib.Path(__file__).parent
FIRST, SECOND = 100, 200
ANSWERED = []
LOCK = threading.Lock()


def _wait(name):
    deadline = time.monotonic() + 120
    while not (HERE / name).exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def answer(input):
    n = int(input.split()[2])
    if n >= FIRST:
        (HERE / "waiting").touch()
        _wait("stopped")
    if n >= SECOND:
        _wait("go")
    with LOCK:
        ANSWERED.append(n)
        if len(ANSWERED) == {ROWS}:
            (HERE / "answered").touch()
    return str(2 * n)
"""


def outage_experiment(folder: Path, store: str) -> None:
    """The experiment and its data in ``folder``, the lake made (its data path in it)."""
    write_dataset(folder / "data.parquet", rows=ROWS)
    (folder / "app.py").write_text(APP.replace("{ROWS}", str(ROWS)), encoding="utf-8")
    (folder / "outage.toml").write_text(
        f"""
[experiment]
name = "outage"
dataset = "data.parquet"
store = "{store}"
concurrency = 4

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"
""",
        encoding="utf-8",
    )
    prepare_store(store, data_path=folder / "lake-data")


class Stderr:
    """A child's stderr, read as it comes (the test waits for a line while the run goes on)."""

    def __init__(self, child: subprocess.Popen[str]) -> None:
        assert child.stderr is not None
        self._stream = child.stderr
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._stream:
            self._lines.append(line)

    def text(self) -> str:
        return "".join(self._lines)

    def join(self) -> str:
        self._reader.join(timeout=120)
        return self.text()


def until(check: Callable[[], bool], what: str, child: subprocess.Popen[str]) -> None:
    """Wait until ``check()``, failing if ``child`` ends first or after 90 s (far above a
    loaded machine's need)."""
    deadline = time.monotonic() + 90
    while not check():
        if child.poll() is not None:
            pytest.fail(f"the run ended (exit {child.returncode}) before {what}")
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"no {what} within 90 s")
        time.sleep(0.05)


def stored(store: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The experiments (status, counts) and the scores (rows, items, pairs) of the lake."""
    with connection(store, read_only=True, private=True) as con:
        experiments = con.execute(
            "SELECT status, succeeded_count, failed_count FROM experiments"
        ).fetchall()
        scores = con.execute(
            "SELECT count(*), count(DISTINCT item_id), count(DISTINCT (item_id, scorer_id))"
            " FROM scores"
        ).fetchall()
    return experiments, scores


@pytest.mark.long(seconds=10)
def test_a_run_whose_postgres_catalog_stops_and_comes_back_completes_with_every_score_once(
    tmp_path: Path, postgres_own: PostgresServer
) -> None:
    store = f"ducklake:postgres:{postgres_own.dsn}"
    outage_experiment(tmp_path, store)
    run = start_cli("run", "outage.toml", "--no-progress", cwd=tmp_path)
    try:
        err = Stderr(run)
        until(lambda: (tmp_path / "waiting").exists(), "items at the first gate", run)
        postgres_own.stop()
        (tmp_path / "stopped").touch()
        # The run's warning: a flush met the outage (kept, to be retried).
        until(lambda: "evalkit: " in err.text(), "write meeting the outage", run)
        (tmp_path / "go").touch()
        until(lambda: (tmp_path / "answered").exists(), "last item", run)
        # The last flush retries a catalog that refuses connections (after 0.2, 0.6, 1.4 s):
        # it waits (a crash with "Connection refused" before, issue 30), until it is back.
        time.sleep(2)
        postgres_own.start()
        code = run.wait(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
    text = err.join()
    assert code == 0, text
    assert "Traceback" not in text
    assert "catalog of the DuckLake score store" in text  # the warning names the cause
    assert "could not be reached" in text
    assert "writable again" in text
    assert not recovery_dir(tmp_path / "x").exists()  # no spill anywhere near
    assert stored(store) == ([("completed", ROWS, 0)], [(ROWS, ROWS, ROWS)])


def test_rows_of_a_run_whose_catalog_stays_down_are_spilled_and_loaded_once_by_resume(
    tmp_path: Path, postgres_own: PostgresServer, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = f"ducklake:postgres:{postgres_own.dsn}"
    outage_experiment(tmp_path, store)
    monkeypatch.chdir(tmp_path)  # a PostgreSQL catalog's recovery folder is the run's cwd's
    recovery = recovery_dir(store)
    run = start_cli("run", "outage.toml", "--no-progress", "--lock-timeout", "1", cwd=tmp_path)
    try:
        err = Stderr(run)
        until(lambda: (tmp_path / "waiting").exists(), "items at the first gate", run)
        postgres_own.stop()
        (tmp_path / "stopped").touch()
        (tmp_path / "go").touch()
        code = run.wait(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate()
    text = err.join()
    assert code == 2, text
    assert "catalog stayed out of reach" in text, text
    assert str(recovery) in text
    assert "evalkit run --resume" in text
    assert "Traceback" not in text
    assert list(recovery.glob("*/*.batch/scores.arrow")), "no recovery files"

    postgres_own.start()
    (experiment,), (scores,) = stored(store)
    assert experiment[0] == "running"
    assert isinstance(scores[0], int)
    assert scores[0] < ROWS  # the rest is in the recovery folder
    done = cli("run", "outage.toml", "--no-progress", "--resume")
    assert done.code == 0, done.stderr
    assert not recovery.exists()
    assert stored(store) == ([("completed", ROWS, 0)], [(ROWS, ROWS, ROWS)])
