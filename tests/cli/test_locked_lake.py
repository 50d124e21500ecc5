"""A DuckLake store kept busy by another process while a run writes: past ``--lock-timeout``
the run's finished rows are spilled to the recovery folder beside the catalog, with an error
naming it, and ``--resume`` loads them into the lake exactly once.

Real processes only: ``evalkit run`` in a subprocess, and another Python process holding the
lake's SQLite catalog, either by the commit lock beside it (``<catalog>.commit-lock``, which the
lake's writers take in turn) or by a write transaction on the catalog itself. The run's target
waits until the other process holds it, so every write of the run meets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from evalkit._extensions import ducklake_missing
from evalkit.store import connection
from evalkit.store._recovery import recovery_dir
from tests.cli.conftest import Cli, write_dataset
from tests.cli.test_locked_store import APP, ROWS, _wait_for

pytestmark = pytest.mark.skipif(
    ducklake_missing() is not None, reason=f"DuckLake not installed: {ducklake_missing()}"
)

LAKE = "ducklake:sqlite:team/catalog.sqlite"

EXPERIMENT = f"""
[experiment]
name = "locked"
dataset = "data.parquet"
store = "{LAKE}"
concurrency = 4

[target]
type = "python"
callable = "app:answer"

[[scorers]]
use = "exact_match"
"""

# Takes the catalog once the run has started, holds it until told to let go.
HOLDER = """
import fcntl, os, pathlib, sqlite3, sys, time

folder, how = pathlib.Path(sys.argv[1]), sys.argv[2]
catalog = folder / "team" / "catalog.sqlite"
deadline = time.monotonic() + 60
while not (folder / "started").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
if how == "commit lock":
    fd = os.open(f"{catalog}.commit-lock", os.O_RDWR | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)  # waits for a commit of the run under way
else:
    con = sqlite3.connect(catalog, timeout=60, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")  # SQLite's write lock on the catalog
(folder / "locked").touch()
while not (folder / "release").exists() and time.monotonic() < deadline + 120:
    time.sleep(0.02)
"""


@contextmanager
def busy_lake_run(folder: Path, how: str, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """``evalkit run`` while another process holds the lake (``how``) once the run started."""
    write_dataset(folder / "data.parquet", rows=ROWS)
    (folder / "app.py").write_text(APP, encoding="utf-8")
    (folder / "locked.toml").write_text(EXPERIMENT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["EVALKIT_TEST_GATE"] = "1"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), how])
    run = subprocess.Popen(
        [sys.executable, "-m", "evalkit", "run", "locked.toml", "--no-progress", *extra],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield run
    finally:
        (folder / "release").touch()
        holder.wait(timeout=180)
        if run.poll() is None:
            run.kill()
        run.communicate(timeout=30)


def stored(store: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with connection(store, read_only=True) as con:
        runs = con.execute("SELECT status, succeeded_count, failed_count FROM experiments")
        experiments = runs.fetchall()
        scores = con.execute(
            "SELECT count(*), count(DISTINCT item_id), count(DISTINCT (item_id, scorer_id)),"
            " sum(score) FROM scores"
        ).fetchall()
    return experiments, scores


@pytest.mark.long(seconds=10)
@pytest.mark.parametrize("how", ["commit lock", "catalog write transaction"])
def test_rows_of_a_lake_kept_busy_past_the_timeout_are_spilled_and_loaded_once_by_resume(
    tmp_path: Path, cli: Cli, how: str
) -> None:
    store = f"ducklake:sqlite:{tmp_path / 'team' / 'catalog.sqlite'}"
    recovery = recovery_dir(store)
    assert recovery == tmp_path / "team" / "catalog.sqlite.recovery"
    with busy_lake_run(tmp_path, how, "--lock-timeout", "1") as run:
        _wait_for(lambda: (tmp_path / "locked").exists() or run.poll() is not None, "the hold")
        try:
            _out, err = run.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run still waits for the lake {how} held by another process")
        assert run.returncode == 2, err
        assert "stayed locked by another process for 1 s" in err, err
        assert str(recovery) in err
        assert "evalkit run --resume" in err
        assert "Traceback" not in err
        spilled = list(recovery.glob("*/*.batch/scores.arrow"))
        assert spilled, "no recovery files"
    (experiment,), (scores,) = stored(store)
    assert experiment[0] == "running"
    assert isinstance(scores[0], int)  # count(*)
    assert scores[0] < ROWS  # the rows not written are in the recovery folder, not the lake

    done = cli("run", "locked.toml", "--no-progress", "--resume")
    assert done.code == 0, done.stderr
    assert not recovery.exists()
    assert stored(store) == ([("completed", ROWS, 0)], [(ROWS, ROWS, ROWS, float(ROWS))])
    # Loaded once: the next run finds nothing left to load, and writes only its own rows.
    again = cli("run", "locked.toml", "--no-progress")
    assert again.code == 0, again.stderr
    with connection(store, read_only=True) as con:
        per_run = con.execute(
            "SELECT count(*), count(DISTINCT item_id) FROM scores GROUP BY experiment_id"
        ).fetchall()
    assert per_run == [(ROWS, ROWS)] * 2
