"""A store locked by another process while a run writes (issue 15, item 4).

Real processes only: ``evalkit run`` in a subprocess, and another Python process holding the
store with its own DuckDB connection (a write lock). The run's target waits until the other
process holds the lock, so every write of the run meets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from tests.cli.conftest import Cli, write_dataset

ROWS = 40

APP = """
import os, pathlib, time

HERE = pathlib.Path(__file__).parent


def answer(input):
    if os.environ.get("EVALKIT_TEST_GATE"):
        (HERE / "started").touch()
        deadline = time.monotonic() + 60
        while not (HERE / "locked").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    n = int(input.split()[2])
    return str(2 * n)
"""

EXPERIMENT = """
[experiment]
name = "locked"
dataset = "data.parquet"
store = "evalkit.duckdb"
concurrency = 4

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"
"""

HOLDER = """
import pathlib, sys, time, duckdb

folder = pathlib.Path(sys.argv[1])
deadline = time.monotonic() + 60
while not (folder / "started").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
while True:  # the run may be writing at this moment: wait for it as any writer would
    try:
        con = duckdb.connect(str(folder / "evalkit.duckdb"))
        break
    except duckdb.IOException:
        time.sleep(0.02)
(folder / "locked").touch()
while not (folder / "release").exists() and time.monotonic() < deadline + 60:
    time.sleep(0.02)
con.close()
"""


def _setup(folder: Path) -> None:
    write_dataset(folder / "data.parquet", rows=ROWS)
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "locked.toml").write_text(EXPERIMENT, encoding="utf-8")


@contextmanager
def _locked_run(folder: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``evalkit run`` while another process takes the store's lock once the run started;
    yields the run and the lines of its stderr so far (the lock is held until ``release``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["EVALKIT_TEST_GATE"] = "1"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)])
    run = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "run", "locked.toml", "--no-progress", *extra],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    assert run.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(run.stderr or ()), daemon=True)
    reader.start()
    try:
        yield run, lines
    finally:
        (folder / "release").touch()
        holder.wait(timeout=120)
        if run.poll() is None:
            run.kill()
        run.wait(timeout=30)
        reader.join(timeout=10)
        for stream in (run.stdout, run.stderr):
            if stream is not None:
                stream.close()


def _wait_for(predicate: object, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _rows(store: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            "SELECT i.item_id, i.output, i.status, s.scorer_id, s.score FROM experiment_items i"
            " JOIN scores s USING (experiment_id, item_id) ORDER BY i.item_id"
        ).fetchall()


def _experiments(store: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            "SELECT status, succeeded_count, failed_count FROM experiments"
        ).fetchall()


def test_a_run_keeps_going_while_the_store_is_locked_and_writes_everything_after(
    tmp_path: Path,
) -> None:
    _setup(tmp_path)
    with _locked_run(tmp_path) as (run, lines):
        # The run met the lock, said so, and goes on: wait for its word, then release.
        def warned() -> bool:
            return any("is locked by another process" in line for line in lines)

        _wait_for(lambda: warned() or run.poll() is not None, "the run's warning")
        assert run.poll() is None, "".join(lines)
        assert warned()
        (tmp_path / "release").touch()
        run.wait(timeout=120)
    assert run.returncode == 0, "".join(lines)
    assert _experiments(tmp_path / "evalkit.duckdb") == [("completed", ROWS, 0)]
    assert len(_rows(tmp_path / "evalkit.duckdb")) == ROWS
    assert not (tmp_path / "evalkit.duckdb.recovery").exists()


def test_rows_of_a_store_locked_past_the_timeout_are_kept_and_loaded_by_resume(
    tmp_path: Path, cli: Cli
) -> None:
    _setup(tmp_path)
    with _locked_run(tmp_path, "--lock-timeout", "1") as (run, lines):
        run.wait(timeout=120)
        recovery = tmp_path / "evalkit.duckdb.recovery"
        assert run.returncode == 2, "".join(lines)
        text = "".join(lines)
        assert "stayed locked by another process for 1 s" in text, text
        assert str(recovery) in text
        assert "evalkit run --resume" in text
        assert "Traceback" not in text
        assert list(recovery.glob("*/*.batch/scores.arrow")), "no recovery files"
    # Nothing of the run is in the store; everything is in the recovery folder.
    assert _rows(tmp_path / "evalkit.duckdb") == []

    done = cli("run", "locked.toml", "--no-progress", "--resume")
    assert done.code == 0, done.stderr
    assert not (tmp_path / "evalkit.duckdb.recovery").exists()
    assert _experiments(tmp_path / "evalkit.duckdb") == [("completed", ROWS, 0)]

    clean = tmp_path / "clean"
    clean.mkdir()
    _setup(clean)
    assert cli("run", "locked.toml", "--no-progress", cwd=clean).code == 0
    assert _rows(tmp_path / "evalkit.duckdb") == _rows(clean / "evalkit.duckdb")
    assert len(_rows(clean / "evalkit.duckdb")) == ROWS


def test_the_next_writer_loads_rows_left_in_the_recovery_folder(tmp_path: Path, cli: Cli) -> None:
    from evalkit.store import recover
    from evalkit.store._recovery import recovery_dir

    _setup(tmp_path)
    with _locked_run(tmp_path, "--lock-timeout", "0") as (run, _lines):
        run.wait(timeout=120)
    store = tmp_path / "evalkit.duckdb"
    assert recovery_dir(store).exists()
    assert _rows(store) == []
    # A new run (not a resume) writing the store loads the first run's rows before its own.
    assert cli("run", "locked.toml", "--no-progress").code == 0
    assert not recovery_dir(store).exists()
    assert len(_rows(store)) == 2 * ROWS
    assert recover(store) == 0
