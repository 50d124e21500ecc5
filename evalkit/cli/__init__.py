"""The ``evalkit`` command line: run experiment files, inspect and compare stored runs.

Exit codes: 0 passed, 1 a threshold or regression gate failed, 2 a usage, configuration or
data error, 130 interrupted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.cli._exit import EXIT_FAILED_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
    from evalkit.cli._file_run import run_experiment_file
    from evalkit.cli._judge_run import JudgedRun, judge_run
    from evalkit.cli._main import build_parser, main

# Lazy: a command that does not run an experiment file never imports the run's stack.
__getattr__, __dir__ = _exports(
    globals(),
    {
        "evalkit.cli._file_run": ("run_experiment_file",),
        "evalkit.cli._judge_run": ("JudgedRun", "judge_run"),
        "evalkit.cli._exit": (
            "EXIT_FAILED_GATE",
            "EXIT_INTERRUPTED",
            "EXIT_OK",
            "EXIT_USAGE",
        ),
        "evalkit.cli._main": ("build_parser", "main"),
    },
)

__all__ = [
    "EXIT_FAILED_GATE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "JudgedRun",
    "build_parser",
    "judge_run",
    "main",
    "run_experiment_file",
]
