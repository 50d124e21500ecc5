"""``python -m evalkit``: hands off to the command line interface."""

from __future__ import annotations

import signal


def _run() -> int:
    try:
        from evalkit.cli import main

        return main()
    except KeyboardInterrupt:  # a Ctrl-C before the command line could handle it
        return 130
    finally:
        # From here on the process only exits: a Ctrl-C now must not turn its exit code into
        # death by signal (docs/pages/design/ctrl-c-once.md).
        signal.signal(signal.SIGINT, signal.SIG_IGN)


raise SystemExit(_run())
