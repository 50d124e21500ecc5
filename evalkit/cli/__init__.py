"""The ``evalkit`` command line: run experiment files, inspect and compare stored runs.

Exit codes: 0 passed, 1 a threshold or regression gate failed, 2 a usage, configuration or
data error, 130 interrupted.

Running a file and judging a run are library functions the command calls:
[`evalkit.experiment_file.run_experiment_file`][evalkit.experiment_file.run_experiment_file] and
[`evalkit.experiment_file.judge_run`][evalkit.experiment_file.judge_run].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import declared_exports as _declared_exports
from evalkit._lazy import with_old_names as _with_old_names

# The exports, each written once here (evalkit._lazy.declared_exports reads them).
if TYPE_CHECKING:
    from evalkit.cli._exit import EXIT_FAILED_GATE as EXIT_FAILED_GATE
    from evalkit.cli._exit import EXIT_INTERRUPTED as EXIT_INTERRUPTED
    from evalkit.cli._exit import EXIT_OK as EXIT_OK
    from evalkit.cli._exit import EXIT_USAGE as EXIT_USAGE
    from evalkit.cli._main import build_parser as build_parser
    from evalkit.cli._main import main as main

# Lazy: a command that does not run an experiment file never imports the run's stack.
# Type checkers read the imports above (a star import sees them too; the old names are the
# runtime's only).
if not TYPE_CHECKING:
    _getattr, __dir__, __all__ = _declared_exports(globals())

    #: Names that moved to `evalkit.experiment_file`, still found here for code written before.
    __getattr__ = _with_old_names(
        __name__,
        _getattr,
        {
            name: f"evalkit.experiment_file.{name}"
            for name in ("JudgedRun", "judge_run", "run_experiment_file")
        },
    )
