"""The exit codes of ``evalkit``, in a module of their own: `_main` maps errors to them and
each command returns one, and `_main` imports the commands, so neither can hold them without
an import cycle (docs/pages/design/import-layers.md)."""

from __future__ import annotations

EXIT_OK = 0
"""Every gate passed (a listing or a command that judges nothing: it ran)."""
EXIT_FAILED_GATE = 1
"""A threshold, error-rate, agreement or regression gate failed (``run``), or a scorer
regressed (``compare``)."""
EXIT_USAGE = 2
"""A usage, configuration, data or store error; for ``run``, also a passing run whose verdict
the store could not take."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C), or a run stored as cancelled."""
