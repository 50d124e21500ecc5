from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
