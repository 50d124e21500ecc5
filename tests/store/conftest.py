from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "evalkit.duckdb"


@contextmanager
def held_by_another_process(store: Path, *, read_only: bool = False) -> Iterator[None]:
    """``store`` opened for writing by another process (so locked) inside the block; with
    ``read_only``, opened read-only: others may read it, nobody may write it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, duckdb\ncon = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == '1')"
            "\nprint('locked', flush=True)\nsys.stdin.readline()",
            str(store),
            "1" if read_only else "0",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.communicate("done\n", timeout=10)


def hold_gate_rows(store: Path, scorer_id: str) -> duckdb.DuckDBPyConnection:
    """A connection of this process (a notebook's, say) that deleted a ``scorer_gates`` row of
    the store's one run in a transaction it keeps open: the run's own writes go on through the
    database they share, every verdict write's delete of that row conflicts until the
    connection is rolled back. A verdict write that fails, deterministically."""
    deadline = time.monotonic() + 60
    while True:
        try:
            con = duckdb.connect(str(store))
            break
        except duckdb.Error as exc:
            # A flush of the run has the file open this moment: wait until it has closed it.
            if "already attached" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    row = con.execute("SELECT id FROM experiments").fetchone()
    assert row is not None
    con.execute(
        "INSERT INTO scorer_gates (experiment_id, scorer_id, passed, reasons, judged_at)"
        " VALUES (?, ?, true, '[]', now())",
        [row[0], scorer_id],
    )
    con.execute("BEGIN TRANSACTION")
    con.execute("DELETE FROM scorer_gates WHERE experiment_id = ?", [row[0]])
    return con
