"""``--help`` of any subcommand imports neither openai nor pandas (2.3 s of CPU before)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from evalkit.cli._main import build_parser


def _subcommands() -> list[list[str]]:
    found: list[list[str]] = [[]]
    pending: list[tuple[list[str], argparse.ArgumentParser]] = [([], build_parser())]
    while pending:
        words, parser = pending.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append([*words, name])
                    pending.append(([*words, name], sub))
    return sorted(found)


CODE = """
import sys
from evalkit.cli._main import main
try:
    main(sys.argv[1:] + ["--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("imported:", [m for m in ("openai", "pandas") if m in sys.modules])
"""


@pytest.mark.parametrize("words", _subcommands(), ids=lambda w: " ".join(w) or "evalkit")
def test_help_imports_neither_openai_nor_pandas(words: list[str]) -> None:
    assert len(_subcommands()) > 10  # every command and the cache ones
    done = subprocess.run(
        [sys.executable, "-c", CODE, *words],
        capture_output=True, text=True, timeout=120, check=False, env=os.environ.copy(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
    assert done.stdout.splitlines()[-1] == "imported: []"
