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
def held_by_another_process(store: Path) -> Iterator[None]:
    """``store`` opened for writing by another process (so locked) inside the block."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, duckdb\ncon = duckdb.connect(sys.argv[1])\nprint('locked', flush=True)"
            "\nsys.stdin.readline()",
            str(store),
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
