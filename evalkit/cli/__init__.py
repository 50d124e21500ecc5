"""The ``evalkit`` command line: run experiment files, inspect and compare stored runs.

Exit codes: 0 passed, 1 a threshold or regression gate failed, 2 a usage, configuration or
data error, 130 interrupted.

Running a file and judging a run are library functions the command calls:
[`evalkit.experiment_file.run_experiment_file`][evalkit.experiment_file.run_experiment_file] and
[`evalkit.experiment_file.judge_run`][evalkit.experiment_file.judge_run].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalkit._lazy import exports as _exports

if TYPE_CHECKING:
    from evalkit.cli._exit import EXIT_FAILED_GATE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
    from evalkit.cli._main import build_parser, main

# Lazy: a command that does not run an experiment file never imports the run's stack.
_getattr, __dir__ = _exports(
    globals(),
    {
        "evalkit.cli._exit": (
            "EXIT_FAILED_GATE",
            "EXIT_INTERRUPTED",
            "EXIT_OK",
            "EXIT_USAGE",
        ),
        "evalkit.cli._main": ("build_parser", "main"),
    },
)

#: Names that moved to `evalkit.experiment_file`, still found here for code written before.
_MOVED = ("JudgedRun", "judge_run", "run_experiment_file")


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import warnings

        import evalkit.experiment_file

        warnings.warn(
            f"evalkit.cli.{name} moved to evalkit.experiment_file.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(evalkit.experiment_file, name)
    return _getattr(name)


__all__ = [
    "EXIT_FAILED_GATE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "main",
]
