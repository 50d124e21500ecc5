"""The exit codes of ``evalkit``, in a module of their own: `_main` maps errors to them and
each command returns one, and `_main` imports the commands, so neither can hold them without
an import cycle (docs/pages/design/import-layers.md)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED_GATE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
