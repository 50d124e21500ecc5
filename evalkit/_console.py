"""The ``evalkit`` command (and ``python -m evalkit``): hands off to the command line interface,
keeping a Ctrl-C's exit code 130 to the end."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys

from evalkit import _startup_gc as startup_gc

_EXIT_INTERRUPTED = 130
_interrupted = False


def _exit_interrupted() -> None:
    """The last thing an interrupted process does, once the threads are joined and every
    other exit function ran: exit 130 now. Python's own finalization that follows could still
    turn the exit into death by SIGINT (exit -2 instead of 130, seen about once in fifteen
    Ctrl-Cs during a run's start in tests/cli/test_soak.py; docs/pages/design/ctrl-c-once.md).
    Registered before anything else, so it runs after every other exit function."""
    if not _interrupted:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(_EXIT_INTERRUPTED)


def main() -> int:
    """Run the command line interface on ``sys.argv``; the exit code (130 when interrupted).

    The console script ``evalkit`` calls this, as ``python -m evalkit`` does.
    """
    global _interrupted
    atexit.register(_exit_interrupted)
    # No collection while the command loads; what it loaded is frozen once it has (the
    # handler calls loaded(): docs/pages/design/startup-objects-frozen.md).
    startup_gc.pause()
    try:
        from evalkit.cli import main as cli_main

        code = cli_main()
    except KeyboardInterrupt:  # a Ctrl-C before the command line could handle it
        code = _EXIT_INTERRUPTED
    finally:
        # From here on the process only exits: a Ctrl-C now must not turn its exit code into
        # death by signal (docs/pages/design/ctrl-c-once.md).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _interrupted = code == _EXIT_INTERRUPTED
    return code
