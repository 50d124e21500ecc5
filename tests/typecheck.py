"""mypy run on a snippet of user code, for tests of what a type checker sees of evalkit's
public names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def mypy_output(tmp_path: Path, source: str) -> list[str]:
    """The lines mypy prints for ``source`` (errors and notes, ``file:line: …``), with a
    cache of its own under ``tmp_path`` so the project's cache is never shared."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(snippet)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    return done.stdout.splitlines()
