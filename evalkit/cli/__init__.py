"""The ``evalkit`` command line: run experiment files, inspect and compare stored runs.

Exit codes: 0 passed, 1 a threshold or regression gate failed, 2 a usage, configuration or
data error, 130 interrupted.
"""

from __future__ import annotations

from evalkit.cli._main import (
    EXIT_FAILED_GATE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    build_parser,
    main,
)

__all__ = ["EXIT_FAILED_GATE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "build_parser", "main"]
